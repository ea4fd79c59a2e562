/**
 * `[routes.<n>]` with `type = "llm_classifier"` and `mode = "escalation"` — or no `mode` and an
 * `escalation` table (docs/configuration.md): the weak target answers, the judge reads the finished
 * turn, and a session latches to strong after `confirmations` consecutive escalate verdicts; an
 * `escalation.deescalation` table makes the latch a strong phase that the judge may end.
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import {
  chain,
  chainFields,
  ClassifyTrigger,
  judgeCall,
  judgeCallFields,
  optionalPrompt,
  ResponseFormatType,
  weakStrong,
  weakStrongFields
} from "../../tables/JudgeKeys.js"
import { integer, integerOr, maxSafe, optionalInteger } from "../../tables/KeyRules.js"
import { type RouteContext, routeKeyFields, type RouteSpecOf, routeTable } from "../../tables/RouteKeys.js"
import * as Table from "../../tables/Table.js"
import { keysOf, subtable, TomlInteger, TomlNumber, TomlString, TomlVariant } from "../../tables/Toml.js"
import type * as EscalationRoute from "./EscalationRoute.js"

/** An escalation route, validated: `EscalationRoute.make` takes it as it is. */
export type Spec = RouteSpecOf<
  EscalationRoute.Options,
  { readonly type: "llm_classifier"; readonly mode: "escalation" }
>

/** `[routes.<n>.escalation.deescalation]`: the strong phase's release rules. */
const DeescalationKeys = subtable({
  strong_min_calls: TomlInteger,
  confirmations: TomlInteger,
  strong_max_calls: Schema.optional(TomlInteger),
  weak_cooldown_calls: Schema.optional(TomlInteger)
})

/** `[routes.<n>.escalation]` (or an inline table): the escalation mode's own keys. */
const EscalationKeys = subtable({
  confirmations: Schema.optional(TomlInteger),
  recent_turn_window: Schema.optional(TomlInteger),
  window_message_chars: Schema.optional(TomlInteger),
  deescalation: Schema.optional(DeescalationKeys)
})

const keys = keysOf({
  ...routeKeyFields("llm_classifier"),
  mode: Schema.optional(TomlVariant("escalation")),
  ...weakStrongFields,
  escalation: Schema.optional(EscalationKeys),
  /** Accepted and ignored when the mode is implicit (an explicit escalation route rejects it). */
  base_threshold: Schema.optional(TomlNumber),
  classify_trigger: Schema.optional(ClassifyTrigger),
  prompt: Schema.optional(TomlString),
  response_format_type: Schema.optional(ResponseFormatType),
  ...judgeCallFields,
  ...chainFields
}).pipe(
  Schema.filter((keys) =>
    keys.classify_trigger === undefined || keys.classify_trigger === "every_request" ||
    { path: ["classify_trigger"], message: "mode escalation cannot use classify_trigger" }
  )
)

/**
 * The escalation table's numbers: `confirmations` >= 1 (default 2), `recent_turn_window` >= 1
 * (default 28), `window_message_chars` >= 50 (default 500).
 */
const escalationSettings = (table: typeof EscalationKeys.Type) =>
  Effect.gen(function*() {
    const confirmations = yield* integerOr(["escalation", "confirmations"], table.confirmations, {
      min: 1n,
      max: maxSafe,
      belowMin: "confirmations must be at least 1"
    }, 2)
    const recentTurnWindow = yield* integerOr(["escalation", "recent_turn_window"], table.recent_turn_window, {
      min: 1n,
      max: maxSafe
    }, 28)
    const windowMessageChars = yield* integerOr(["escalation", "window_message_chars"], table.window_message_chars, {
      min: 50n,
      max: maxSafe
    }, 500)
    const deescalation = table.deescalation === undefined
      ? Option.none()
      : Option.some(yield* deescalationSettings(table.deescalation))
    return { confirmations, recentTurnWindow, windowMessageChars, deescalation }
  })

/**
 * The de-escalation table: `strong_min_calls` >= 1 and `confirmations` >= 1 (both required),
 * `strong_max_calls` >= `strong_min_calls` (unset by default), `weak_cooldown_calls` >= 0 (default 0).
 */
const deescalationSettings = (table: typeof DeescalationKeys.Type) =>
  Effect.gen(function*() {
    const at = (key: string) => ["escalation", "deescalation", key]
    const strongMinCalls = yield* integer(at("strong_min_calls"), table.strong_min_calls, {
      min: 1n,
      max: maxSafe,
      belowMin: "deescalation.strong_min_calls must be at least 1"
    })
    const confirmations = yield* integer(at("confirmations"), table.confirmations, {
      min: 1n,
      max: maxSafe,
      belowMin: "deescalation.confirmations must be at least 1"
    })
    const strongMaxCalls = yield* optionalInteger(at("strong_max_calls"), table.strong_max_calls, {
      min: BigInt(strongMinCalls),
      max: maxSafe,
      belowMin: "deescalation.strong_max_calls must be at least deescalation.strong_min_calls"
    })
    const weakCooldownCalls = yield* integerOr(at("weak_cooldown_calls"), table.weak_cooldown_calls, {
      min: 0n,
      max: maxSafe
    }, 0)
    return { strongMinCalls, confirmations, strongMaxCalls, weakCooldownCalls }
  })

/** The escalation route table: the common keys → the targets → the escalation table → `prompt` → the judge call. */
export const table = routeTable(
  keys,
  (keys, context, common): Effect.Effect<Spec, ParseResult.ParseIssue> =>
    Effect.gen(function*() {
      const targets = yield* weakStrong(keys, context.targets)
      const escalation = yield* escalationSettings(keys.escalation ?? {})
      const prompt = yield* optionalPrompt(keys.prompt)
      const call = yield* judgeCall(keys)
      const judges = yield* chain(keys, context.targets, {
        judge: targets.judge,
        destinations: [targets.weak, targets.strong],
        lateVerdictMs: Option.none()
      })
      return {
        ...common,
        type: "llm_classifier",
        mode: "escalation",
        ...targets,
        ...escalation,
        prompt,
        responseFormatType: keys.response_format_type ?? "json_schema",
        ...call,
        ...judges
      }
    })
)

/** Decodes the escalation route table named `context.name`; fails at the key path of its first problem. */
export const schema = (context: RouteContext): Schema.Schema<Spec, typeof keys.Encoded> => Table.schema(table, context)
