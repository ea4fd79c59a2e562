/**
 * `[routes.<n>]` with `type = "advisor"` (docs/configuration.md): the executor answers every turn;
 * a turn that would end the work is reviewed by the advisor (APPROVE releases it, REDO has the
 * executor answer again with the advisor's plan).
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { integerOr, lookupTarget, maxSafe, maxU32, optionalText } from "../../tables/KeyRules.js"
import { type RouteContext, routeKeyFields, type RouteSpecOf, routeTable } from "../../tables/RouteKeys.js"
import * as Table from "../../tables/Table.js"
import {
  failAt,
  keysOf,
  type Path,
  TomlBoolean,
  TomlInteger,
  TomlNumber,
  TomlString,
  TomlVariant
} from "../../tables/Toml.js"
import type * as AdvisorRoute from "./AdvisorRoute.js"

/** An advisor route, validated: `AdvisorRoute.make` takes it as it is. */
export type Spec = RouteSpecOf<AdvisorRoute.Options, { readonly type: "advisor" }>

const keys = keysOf({
  ...routeKeyFields("advisor"),
  executor_target: TomlString,
  advisor_target: TomlString,
  gate_trigger: Schema.optional(
    TomlVariant("no_tool_call", "pattern") satisfies Schema.Schema<AdvisorRoute.GateTrigger>
  ),
  gate_trigger_pattern: Schema.optional(TomlString),
  max_reviews: Schema.optional(TomlInteger),
  gate_stall_turns: Schema.optional(TomlInteger),
  gate_min_tool_results: Schema.optional(TomlInteger),
  advisor_max_tokens: Schema.optional(TomlInteger),
  advisor_temperature: Schema.optional(TomlNumber),
  transcript_max_chars: Schema.optional(TomlInteger),
  fail_open: Schema.optional(TomlBoolean),
  reviewer_system_prompt: Schema.optional(TomlString),
  redo_feedback_prefix: Schema.optional(TomlString)
})
type Keys = typeof keys.Type

/**
 * A `gate_trigger_pattern` as a JavaScript regular expression with the `u` flag (searched, not
 * anchored); the message carries the engine's own complaint.
 */
const compilePattern = (path: Path, pattern: string): Effect.Effect<RegExp, ParseResult.ParseIssue> =>
  Effect.try(() => new RegExp(pattern, "u")).pipe(
    Effect.catchAll(({ error }) =>
      failAt(
        path,
        `gate_trigger_pattern is not a valid regular expression: ${
          error instanceof Error ? error.message : String(error)
        }`
      )
    )
  )

/** `gate_trigger` (default `no_tool_call`) and `gate_trigger_pattern`: required with, and only with, `pattern`; non-blank; valid. */
const gate = (keys: Keys) =>
  Effect.gen(function*() {
    const gateTrigger = keys.gate_trigger ?? "no_tool_call"
    const path = ["gate_trigger_pattern"]
    const pattern = keys.gate_trigger_pattern
    if (gateTrigger === "pattern" && pattern === undefined) {
      return yield* failAt(path, "gate_trigger_pattern is required when gate_trigger = \"pattern\"")
    }
    if (gateTrigger !== "pattern" && pattern !== undefined) {
      return yield* failAt(path, "gate_trigger_pattern requires gate_trigger = \"pattern\"")
    }
    const gateTriggerPattern = pattern === undefined ? Option.none() : Option.some(
      yield* pattern.trim() === ""
        ? failAt(path, "gate_trigger_pattern must not be empty")
        : compilePattern(path, pattern)
    )
    return { gateTrigger, gateTriggerPattern }
  })

/**
 * Budgets and limits: `max_reviews` >= 1 (default 1), `gate_stall_turns` and
 * `gate_min_tool_results` >= 0 (default 0), `advisor_max_tokens` >= 1 (default 2048),
 * `advisor_temperature` finite and >= 0 (unset by default), `transcript_max_chars` >= 256
 * (default 200000).
 */
const limits = (keys: Keys) =>
  Effect.gen(function*() {
    const maxReviews = yield* integerOr(["max_reviews"], keys.max_reviews, { min: 1n, max: maxU32 }, 1)
    const gateStallTurns = yield* integerOr(["gate_stall_turns"], keys.gate_stall_turns, { min: 0n, max: maxU32 }, 0)
    const gateMinToolResults = yield* integerOr(
      ["gate_min_tool_results"],
      keys.gate_min_tool_results,
      { min: 0n, max: maxU32 },
      0
    )
    const advisorMaxTokens = yield* integerOr(["advisor_max_tokens"], keys.advisor_max_tokens, {
      min: 1n,
      max: maxU32
    }, 2048)
    const temperature = keys.advisor_temperature
    if (temperature !== undefined && !(Number.isFinite(temperature) && temperature >= 0)) {
      return yield* failAt(["advisor_temperature"], `must be finite and at least 0, got ${temperature}`)
    }
    const transcriptMaxChars = yield* integerOr(["transcript_max_chars"], keys.transcript_max_chars, {
      min: 256n,
      max: maxSafe
    }, 200_000)
    return {
      maxReviews,
      gateStallTurns,
      gateMinToolResults,
      advisorMaxTokens,
      // -0.0 reads as 0
      advisorTemperature: Option.map(Option.fromNullable(temperature), (t) => (t === 0 ? 0 : t)),
      transcriptMaxChars
    }
  })

/**
 * The advisor route table, in order: the common keys → `executor_target` → `advisor_target` → the
 * gate → budgets and limits → `reviewer_system_prompt` → `redo_feedback_prefix` (non-blank).
 */
export const table = routeTable(
  keys,
  (keys, context, common): Effect.Effect<Spec, ParseResult.ParseIssue> =>
    Effect.gen(function*() {
      const executor = yield* lookupTarget(context.targets, ["executor_target"], keys.executor_target)
      const advisor = yield* lookupTarget(context.targets, ["advisor_target"], keys.advisor_target)
      const trigger = yield* gate(keys)
      const limited = yield* limits(keys)
      const reviewerSystemPrompt = yield* optionalText(keys, "reviewer_system_prompt")
      const redoFeedbackPrefix = yield* optionalText(keys, "redo_feedback_prefix")
      return {
        ...common,
        type: "advisor",
        executor,
        advisor,
        ...trigger,
        ...limited,
        failOpen: keys.fail_open ?? true,
        reviewerSystemPrompt,
        redoFeedbackPrefix
      }
    })
)

/** Decodes the advisor route table named `context.name`; fails at the key path of its first problem. */
export const schema = (context: RouteContext): Schema.Schema<Spec, typeof keys.Encoded> => Table.schema(table, context)
