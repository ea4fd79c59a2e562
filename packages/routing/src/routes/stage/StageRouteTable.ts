/**
 * `[routes.<n>]` with `type = "stage_router"` (docs/configuration.md): each turn goes to the capable
 * or the efficient target by its tool-result signals; undecided turns go to the optional
 * `[classifier]`, else the picker's default. Delegated sub-agent work goes per `subagents` instead.
 */
import type { Target } from "@switchyard-ts/client/Target"
import * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import type * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { capabilityJudge, capabilityJudgeFields, type CapabilityJudgeSpec, chain } from "../../tables/JudgeKeys.js"
import { integerOr, lookupTarget, maxSafe, maxU32, optionalText, unitInterval } from "../../tables/KeyRules.js"
import { type RouteContext, routeKeyFields, type RouteSpecOf, routeTable } from "../../tables/RouteKeys.js"
import * as Table from "../../tables/Table.js"
import {
  arrayOf,
  failAt,
  keysOf,
  subtable,
  TomlBoolean,
  TomlInteger,
  TomlNumber,
  TomlString,
  TomlVariant
} from "../../tables/Toml.js"
import * as SubagentsTable from "../subagents/SubagentsTable.js"
import type * as StageRoute from "./StageRoute.js"
import * as StageSignals from "./StageSignals.js"

/** A stage router's `[classifier]`, validated: a capability judge for the turns its signals leave undecided. */
export type ClassifierSpec = CapabilityJudgeSpec

/**
 * A stage router route, validated: `StageRoute.make` takes it as it is (the `subagents` table
 * aside).
 */
export type Spec = RouteSpecOf<
  Omit<StageRoute.Options, "classifier">,
  {
    readonly type: "stage_router"
    /** `[classifier]`, unset by default. */
    readonly classifier: Option.Option<ClassifierSpec>
    /** The `subagents` table, unset by default: how delegated sub-agent work is routed instead. */
    readonly subagents: Option.Option<SubagentsTable.Spec>
  }
>

const HandoffNotesKeys = subtable({
  escalation_note: TomlString,
  deescalation_note: Schema.optional(TomlString),
  only_on_wrong_signal_escalation: Schema.optional(TomlBoolean)
})

/** `[routes.<n>.classifier]`: a capability judge's keys, `target` naming the judge. */
const ClassifierKeys = subtable({ target: TomlString, ...capabilityJudgeFields })

const ToolNames = Schema.optional(arrayOf(TomlString))

/** `[tool_semantics]`: the four categories, each a list of tool names; no other key. */
const ToolSemanticsKeys = subtable({ observe: ToolNames, mutate: ToolNames, plan: ToolNames, new: ToolNames })

/**
 * The keys of a stage router's turn: a `stage_router` route's (beside `picker`, `[classifier]` and
 * `subagents`), and a `composite` route's `[stage]` table.
 */
export const turnFields = {
  capable_target: TomlString,
  efficient_target: TomlString,
  confidence_threshold: TomlNumber,
  recent_turn_window: Schema.optional(TomlInteger),
  capable_hold_turns: Schema.optional(TomlInteger),
  tool_semantics: Schema.optional(ToolSemanticsKeys),
  capable_system_prompt: Schema.optional(TomlString),
  efficient_system_prompt: Schema.optional(TomlString),
  handoff_notes: Schema.optional(HandoffNotesKeys)
}

const keys = keysOf({
  ...routeKeyFields("stage_router"),
  ...turnFields,
  picker: TomlVariant("efficient_first", "capable_first") satisfies Schema.Schema<StageSignals.Picker>,
  classifier: Schema.optional(ClassifierKeys),
  subagents: Schema.optional(SubagentsTable.table.keys)
})

/** `[handoff_notes]`: `escalation_note` required, both notes non-blank; `only_on_wrong_signal_escalation` (default true). */
const handoffNotes = (notes: typeof HandoffNotesKeys.Type) =>
  Effect.gen(function*() {
    if (notes.escalation_note.trim() === "") {
      return yield* failAt(["escalation_note"], "escalation_note must not be empty")
    }
    const deescalationNote = yield* optionalText(notes, "deescalation_note")
    const spec: StageRoute.HandoffNotes = {
      escalationNote: notes.escalation_note,
      deescalationNote,
      onlyOnWrongSignalEscalation: notes.only_on_wrong_signal_escalation ?? true
    }
    return spec
  })

/** An optional nested table's rules (issues under `key`). */
const optionalNested = <K, A>(
  key: string,
  value: K | undefined,
  rules: (value: K) => Effect.Effect<A, ParseResult.ParseIssue>
): Effect.Effect<Option.Option<A>, ParseResult.ParseIssue> =>
  value === undefined ? Effect.succeedNone : Effect.asSome(Table.nested([key], rules(value)))

const categories = ["observe", "mutate", "plan", "new"] as const

/**
 * `[tool_semantics]`, category by category in the order `observe`, `mutate`, `plan`, `new`: no
 * empty (or blank) name, no built-in tool name, no name (ASCII case-insensitive) in two categories.
 * `label` starts each message (a composite route's `composite route <name>: `).
 */
const toolSemantics = (table: typeof ToolSemanticsKeys.Type, label: string) =>
  Effect.gen(function*() {
    const seen = new Map<string, string>()
    for (const category of categories) {
      for (const [index, name] of (table[category] ?? []).entries()) {
        const path = ["tool_semantics", category, index]
        if (name.trim() === "") {
          return yield* failAt(path, `${label}tool_semantics.${category} names must not be empty`)
        }
        const key = name.replace(/[A-Z]/g, (c) => c.toLowerCase())
        if (StageSignals.builtInToolNames.has(key)) {
          return yield* failAt(
            path,
            `${label}tool_semantics.${category} names the built-in tool ${JSON.stringify(name)}, ` +
              "which cannot be reclassified"
          )
        }
        const other = seen.get(key)
        if (other !== undefined && other !== category) {
          return yield* failAt(
            path,
            `${label}tool_semantics lists ${JSON.stringify(name)} in both ${other} and ${category}`
          )
        }
        seen.set(key, category)
      }
    }
    const spec: StageSignals.ToolSemantics = {
      observe: table.observe ?? [],
      mutate: table.mutate ?? [],
      plan: table.plan ?? [],
      new: table.new ?? []
    }
    return spec
  })

/** A stage router's turn, validated (a `stage_router` route's, a `composite` route's `[stage]`). */
export interface TurnSpec {
  readonly capable: Target
  readonly efficient: Target
  readonly confidenceThreshold: number
  readonly recentTurnWindow: number
  readonly capableHoldTurns: number
  readonly toolSemantics: StageSignals.ToolSemantics
  readonly capableSystemPrompt: Option.Option<string>
  readonly efficientSystemPrompt: Option.Option<string>
  readonly handoffNotes: Option.Option<StageRoute.HandoffNotes>
}

/**
 * A stage router's turn keys, in order: `capable_target` → `efficient_target` →
 * `confidence_threshold` ([0, 1]) → `recent_turn_window` (>= 0, default 3) → `capable_hold_turns`
 * (0..2^32-1, default 2) → `[tool_semantics]` → the system prompts (non-blank) →
 * `[handoff_notes]`. `label` starts the messages of the threshold and tool semantics rules.
 */
export const turn = (
  keys: Schema.Struct.Type<typeof turnFields>,
  targets: RouteContext["targets"],
  label = ""
): Effect.Effect<TurnSpec, ParseResult.ParseIssue> =>
  Effect.gen(function*() {
    const capable = yield* lookupTarget(targets, ["capable_target"], keys.capable_target)
    const efficient = yield* lookupTarget(targets, ["efficient_target"], keys.efficient_target)
    const confidenceThreshold = yield* unitInterval(
      ["confidence_threshold"],
      keys.confidence_threshold,
      `${label}confidence_threshold`
    )
    const recentTurnWindow = yield* integerOr(["recent_turn_window"], keys.recent_turn_window, {
      min: 0n,
      max: maxSafe
    }, StageSignals.defaultRecentTurnWindow)
    const capableHoldTurns = yield* integerOr(
      ["capable_hold_turns"],
      keys.capable_hold_turns,
      { min: 0n, max: maxU32 },
      StageSignals.defaultCapableHoldTurns
    )
    const semantics = keys.tool_semantics === undefined
      ? StageSignals.emptyToolSemantics
      : yield* toolSemantics(keys.tool_semantics, label)
    const capableSystemPrompt = yield* optionalText(keys, "capable_system_prompt")
    const efficientSystemPrompt = yield* optionalText(keys, "efficient_system_prompt")
    const notes = yield* optionalNested("handoff_notes", keys.handoff_notes, handoffNotes)
    return {
      capable,
      efficient,
      confidenceThreshold,
      recentTurnWindow,
      capableHoldTurns,
      toolSemantics: semantics,
      capableSystemPrompt,
      efficientSystemPrompt,
      handoffNotes: notes
    }
  })

/** `[classifier]`: `target`, then a capability judge's rules. */
const classifier = (
  keys: typeof ClassifierKeys.Type,
  targets: RouteContext["targets"],
  destinations: ReadonlyArray<Target>
) =>
  Effect.gen(function*() {
    const judge = yield* lookupTarget(targets, ["target"], keys.target)
    const settings = yield* capabilityJudge(keys)
    const judges = yield* chain(keys, targets, { judge, destinations, lateVerdictMs: settings.lateVerdictMs })
    const spec: ClassifierSpec = { judge, ...settings, ...judges }
    return spec
  })

/**
 * The stage router table, in order: the common keys → the turn's keys ({@link turn}) →
 * `[classifier]` → `subagents`.
 */
export const table = routeTable(
  keys,
  (keys, context, common): Effect.Effect<Spec, ParseResult.ParseIssue> =>
    Effect.gen(function*() {
      const turnSpec = yield* turn(keys, context.targets)
      const judge = yield* optionalNested("classifier", keys.classifier, (table) =>
        classifier(table, context.targets, [turnSpec.capable, turnSpec.efficient]))
      const subagents = yield* SubagentsTable.optional(keys.subagents, context.targets)
      return {
        ...common,
        type: "stage_router",
        ...turnSpec,
        picker: keys.picker,
        classifier: judge,
        subagents
      }
    })
)

/** Decodes the stage router table named `context.name`; fails at the key path of its first problem. */
export const schema = (context: RouteContext): Schema.Schema<Spec, typeof keys.Encoded> => Table.schema(table, context)
