/**
 * `[routes.<n>]` with `type = "stage_router"` (docs/configuration.md): each turn goes to the capable
 * or the efficient target by its tool-result signals; undecided turns go to the optional
 * `[classifier]`, else the picker's default. Delegated sub-agent work goes per `subagents` instead.
 */
import type * as StageRoute from "@switchyard-ts/routing/StageRoute"
import type * as StageSignals from "@switchyard-ts/routing/StageSignals"
import * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import type * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { capabilityJudge, capabilityJudgeFields, type CapabilityJudgeSpec } from "./internal/judgeKeys.js"
import { type RouteContext, routeKeyFields, type RouteSpecOf, routeTable } from "./internal/routeKeys.js"
import { integerOr, lookupTarget, maxSafe, optionalText, unitInterval } from "./internal/rules.js"
import * as Table from "./internal/table.js"
import {
  failAt,
  keysOf,
  subtable,
  TomlBoolean,
  TomlInteger,
  TomlNumber,
  TomlString,
  TomlVariant
} from "./internal/toml.js"
import * as SubagentsTable from "./SubagentsTable.js"

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

const keys = keysOf({
  ...routeKeyFields("stage_router"),
  capable_target: TomlString,
  efficient_target: TomlString,
  picker: TomlVariant("efficient_first", "capable_first") satisfies Schema.Schema<StageSignals.Picker>,
  confidence_threshold: TomlNumber,
  recent_turn_window: Schema.optional(TomlInteger),
  capable_system_prompt: Schema.optional(TomlString),
  efficient_system_prompt: Schema.optional(TomlString),
  handoff_notes: Schema.optional(HandoffNotesKeys),
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

/** `[classifier]`: `target`, then a capability judge's rules. */
const classifier = (keys: typeof ClassifierKeys.Type, targets: RouteContext["targets"]) =>
  Effect.gen(function*() {
    const judge = yield* lookupTarget(targets, ["target"], keys.target)
    const settings = yield* capabilityJudge(keys)
    const spec: ClassifierSpec = { judge, ...settings }
    return spec
  })

/** An optional nested table's rules (issues under `key`). */
const optionalNested = <K, A>(
  key: string,
  value: K | undefined,
  rules: (value: K) => Effect.Effect<A, ParseResult.ParseIssue>
): Effect.Effect<Option.Option<A>, ParseResult.ParseIssue> =>
  value === undefined ? Effect.succeedNone : Effect.asSome(Table.nested([key], rules(value)))

/**
 * The stage router table, in order: the common keys → `capable_target` → `efficient_target` →
 * `confidence_threshold` ([0, 1]) → `recent_turn_window` (>= 0, default 3) → the system prompts
 * (non-blank) → `[handoff_notes]` → `[classifier]` → `subagents`.
 */
export const table = routeTable(
  keys,
  (keys, context, common): Effect.Effect<Spec, ParseResult.ParseIssue> =>
    Effect.gen(function*() {
      const capable = yield* lookupTarget(context.targets, ["capable_target"], keys.capable_target)
      const efficient = yield* lookupTarget(context.targets, ["efficient_target"], keys.efficient_target)
      const confidenceThreshold = yield* unitInterval(
        ["confidence_threshold"],
        keys.confidence_threshold,
        "confidence_threshold"
      )
      const recentTurnWindow = yield* integerOr(["recent_turn_window"], keys.recent_turn_window, {
        min: 0n,
        max: maxSafe
      }, 3)
      const capableSystemPrompt = yield* optionalText(keys, "capable_system_prompt")
      const efficientSystemPrompt = yield* optionalText(keys, "efficient_system_prompt")
      const notes = yield* optionalNested("handoff_notes", keys.handoff_notes, handoffNotes)
      const judge = yield* optionalNested("classifier", keys.classifier, (table) => classifier(table, context.targets))
      const subagents = yield* SubagentsTable.optional(keys.subagents, context.targets)
      return {
        ...common,
        type: "stage_router",
        capable,
        efficient,
        picker: keys.picker,
        confidenceThreshold,
        recentTurnWindow,
        capableSystemPrompt,
        efficientSystemPrompt,
        handoffNotes: notes,
        classifier: judge,
        subagents
      }
    })
)

/** Decodes the stage router table named `context.name`; fails at the key path of its first problem. */
export const schema = (context: RouteContext): Schema.Schema<Spec, typeof keys.Encoded> => Table.schema(table, context)
