/**
 * The judge keys several route tables share, each group with its rules: the triggers
 * (`classify_trigger`, `message_hash_fallback`, `recent_turn_window`; capability and custom
 * classifiers), the judge call (`max_output_tokens`, `judge_failure`, `judge_timeout_ms`; every
 * classifier), late verdicts (`late_verdict_ms`, `max_late_verdicts`; capability and custom), the
 * classifier `prompt`, the judge, weak and strong targets of capability and escalation routes, and
 * a capability judge's whole table (a capability route's keys, a stage
 * router's `[classifier]`).
 */
import type { Target } from "@switchyard-ts/client/Target"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import * as LateVerdict from "../judge/LateVerdict.js"
import type * as Posture from "../judge/Posture.js"
import type * as ClassifierCascade from "../routes/classifier/ClassifierCascade.js"
import type * as StageRoute from "../routes/stage/StageRoute.js"
import { integerOr, lookupTarget, maxSafe, maxU32, optionalInteger, positive, unitInterval } from "./KeyRules.js"
import { arrayOf, failAt, TomlBoolean, TomlInteger, TomlNumber, TomlString, TomlVariant } from "./Toml.js"

type Rule<A> = Effect.Effect<A, ParseResult.ParseIssue>

/** `classifier_target`, `weak_target`, `strong_target`: a capability or escalation route's targets. */
export const weakStrongFields = {
  classifier_target: TomlString,
  weak_target: TomlString,
  strong_target: TomlString
}

/** The judge, weak and strong targets, looked up in that order. */
export const weakStrong = (
  keys: Schema.Struct.Type<typeof weakStrongFields>,
  targets: ReadonlyMap<string, Target>
) =>
  Effect.gen(function*() {
    const judge = yield* lookupTarget(targets, ["classifier_target"], keys.classifier_target)
    const weak = yield* lookupTarget(targets, ["weak_target"], keys.weak_target)
    const strong = yield* lookupTarget(targets, ["strong_target"], keys.strong_target)
    return { judge, weak, strong }
  })

/** `classify_trigger`: when a classifier consults its judge. */
export const ClassifyTrigger = TomlVariant("every_request", "user_turn", "new_session") satisfies Schema.Schema<
  ClassifierCascade.ClassifyTrigger
>

/** `judge_failure`: the posture of a failed consultation. */
const JudgeFailure = TomlVariant("error", "fail_open") satisfies Schema.Schema<Posture.Posture>

/** `classify_trigger`, `message_hash_fallback`, `recent_turn_window`. */
export const triggerFields = {
  classify_trigger: Schema.optional(ClassifyTrigger),
  message_hash_fallback: Schema.optional(TomlBoolean),
  recent_turn_window: Schema.optional(TomlInteger)
}

/**
 * The triggers: `classify_trigger` (default `every_request`), `message_hash_fallback` (default
 * false; only with `new_session` or `user_turn`, whose sessions it keys), `recent_turn_window` (non-negative, unset by default).
 */
export const triggers = (keys: Schema.Struct.Type<typeof triggerFields>) =>
  Effect.gen(function*() {
    const classifyTrigger = keys.classify_trigger ?? "every_request"
    const messageHashFallback = keys.message_hash_fallback ?? false
    if (messageHashFallback && classifyTrigger === "every_request") {
      return yield* failAt(
        ["message_hash_fallback"],
        "message_hash_fallback requires classify_trigger = new_session or user_turn"
      )
    }
    const recentTurnWindow = yield* optionalInteger(["recent_turn_window"], keys.recent_turn_window, {
      min: 0n,
      max: maxSafe
    })
    return { classifyTrigger, messageHashFallback, recentTurnWindow }
  })

/** `max_output_tokens`, `judge_failure`, `judge_timeout_ms`. */
export const judgeCallFields = {
  max_output_tokens: Schema.optional(TomlInteger),
  judge_failure: Schema.optional(JudgeFailure),
  judge_timeout_ms: Schema.optional(TomlInteger)
}

/** How every classifier calls its judge: `max_output_tokens` (default 4096), `judge_failure` (default `error`), `judge_timeout_ms`. */
export const judgeCall = (keys: Schema.Struct.Type<typeof judgeCallFields>) =>
  Effect.gen(function*() {
    const maxOutputTokens = yield* integerOr(
      ["max_output_tokens"],
      keys.max_output_tokens,
      { min: 1n, max: maxU32 },
      4096
    )
    const judgeTimeoutMs = yield* optionalInteger(["judge_timeout_ms"], keys.judge_timeout_ms, positive)
    const judgeFailure: Posture.Posture = keys.judge_failure ?? "error"
    return { maxOutputTokens, judgeFailure, judgeTimeoutMs }
  })

/** `classifier_fallback`, `classifier_hedge_ms`: a judge chain (`JudgeChain`). */
export const chainFields = {
  classifier_fallback: Schema.optional(arrayOf(TomlString)),
  classifier_hedge_ms: Schema.optional(TomlInteger)
}

/** A judge chain, validated: the judges after the first, and the hedge time. */
export interface Chain {
  readonly fallbacks: ReadonlyArray<Target>
  readonly hedgeMs: Option.Option<number>
}

/**
 * The judge chain: `classifier_fallback` names targets, each at most once, none of them the
 * route's `classifier_target` or a target the route routes to, and not empty;
 * `classifier_hedge_ms` is positive and only with `classifier_fallback`. A route with late verdicts
 * (`late_verdict_ms`) has one judge.
 */
export const chain = (
  keys: Schema.Struct.Type<typeof chainFields>,
  targets: ReadonlyMap<string, Target>,
  route: {
    readonly judge: Target
    readonly destinations: ReadonlyArray<Target>
    readonly lateVerdictMs: Option.Option<number>
  },
  path: ReadonlyArray<string> = ["classifier_fallback"]
): Rule<Chain> =>
  Effect.gen(function*() {
    const hedgeMs = yield* optionalInteger(["classifier_hedge_ms"], keys.classifier_hedge_ms, positive)
    const names = keys.classifier_fallback
    if (names === undefined) {
      if (Option.isSome(hedgeMs)) {
        return yield* failAt(["classifier_hedge_ms"], "classifier_hedge_ms requires classifier_fallback")
      }
      return { fallbacks: [], hedgeMs }
    }
    if (names.length === 0) return yield* failAt(path, "must name at least one target")
    if (Option.isSome(route.lateVerdictMs)) {
      return yield* failAt(
        path,
        "classifier_fallback cannot be combined with late_verdict_ms (a route with late verdicts has one judge)"
      )
    }
    const fallbacks: Array<Target> = []
    for (const name of names) {
      const target = yield* lookupTarget(targets, path, name)
      if (fallbacks.some((t) => t.name === name)) {
        return yield* failAt(path, `names target ${JSON.stringify(name)} twice`)
      }
      if (target.name === route.judge.name) {
        return yield* failAt(path, `names the route's classifier_target ${JSON.stringify(name)}`)
      }
      if (route.destinations.some((t) => t.name === name)) {
        return yield* failAt(
          path,
          `names target ${JSON.stringify(name)}, which the route routes to; a judge must not be a destination`
        )
      }
      fallbacks.push(target)
    }
    return { fallbacks, hedgeMs }
  })

/** `late_verdict_ms`, `max_late_verdicts`. */
export const lateVerdictFields = {
  late_verdict_ms: Schema.optional(TomlInteger),
  max_late_verdicts: Schema.optional(TomlInteger)
}

/**
 * Late verdicts, checked after the judge call: `late_verdict_ms` (positive; only with
 * `judge_failure = "fail_open"` and `judge_timeout_ms`), `max_late_verdicts` (positive, default 16;
 * only with `late_verdict_ms`).
 */
export const lateVerdicts = (
  keys: Schema.Struct.Type<typeof lateVerdictFields>,
  judge: { readonly judgeFailure: Posture.Posture; readonly judgeTimeoutMs: Option.Option<number> }
) =>
  Effect.gen(function*() {
    if (keys.late_verdict_ms === undefined) {
      if (keys.max_late_verdicts !== undefined) {
        return yield* failAt(["max_late_verdicts"], "max_late_verdicts requires late_verdict_ms")
      }
      return { lateVerdictMs: Option.none<number>(), maxLateVerdicts: LateVerdict.defaultMaxLateVerdicts }
    }
    const lateVerdictMs = yield* optionalInteger(["late_verdict_ms"], keys.late_verdict_ms, positive)
    if (judge.judgeFailure !== "fail_open") {
      return yield* failAt(["late_verdict_ms"], "late_verdict_ms requires judge_failure = \"fail_open\"")
    }
    if (Option.isNone(judge.judgeTimeoutMs)) {
      return yield* failAt(
        ["late_verdict_ms"],
        "late_verdict_ms requires judge_timeout_ms (the deadline the request waits for)"
      )
    }
    const maxLateVerdicts = yield* integerOr(
      ["max_late_verdicts"],
      keys.max_late_verdicts,
      positive,
      LateVerdict.defaultMaxLateVerdicts
    )
    return { lateVerdictMs, maxLateVerdicts }
  })

const responseSchemaPlaceholder = "{{RESPONSE_SCHEMA}}"

/** A classifier `prompt`: non-blank, without the `{{RESPONSE_SCHEMA}}` placeholder. */
export const checkPrompt = (prompt: string): Rule<string> =>
  prompt.trim() === ""
    ? failAt(["prompt"], "classifier prompt must not be empty")
    : prompt.includes(responseSchemaPlaceholder)
    ? failAt(
      ["prompt"],
      `classifier prompt must not contain ${responseSchemaPlaceholder}; the response schema is supplied automatically`
    )
    : Effect.succeed(prompt)

/** An optional classifier `prompt` (capability and escalation judges replace their packaged one with it). */
export const optionalPrompt = (prompt: string | undefined): Rule<Option.Option<string>> =>
  prompt === undefined ? Effect.succeedNone : Effect.asSome(checkPrompt(prompt))

/** `response_format_type` of capability and escalation judges. */
export const ResponseFormatType = TomlVariant("json_schema", "json_object")

/** A capability judge's keys: a capability route's, and a stage router's `[classifier]` table's. */
export const capabilityJudgeFields = {
  base_threshold: TomlNumber,
  threshold_step: Schema.optional(TomlNumber),
  ...triggerFields,
  prompt: Schema.optional(TomlString),
  response_format_type: Schema.optional(ResponseFormatType),
  ...judgeCallFields,
  ...lateVerdictFields,
  ...chainFields
}

/** A capability judge, validated: every key of the stage router's classifier options, the judge included. */
export type CapabilityJudgeSpec = Required<StageRoute.ClassifierOptions>

/**
 * A capability judge's settings, checked in order: thresholds (`base_threshold` in [0, 1],
 * `threshold_step` >= 0, `base_threshold + 2 * threshold_step <= 1` within one epsilon) →
 * triggers → `prompt` → the judge call → late verdicts.
 */
export const capabilityJudge = (keys: Schema.Struct.Type<typeof capabilityJudgeFields>) =>
  Effect.gen(function*() {
    const baseThreshold = yield* unitInterval(["base_threshold"], keys.base_threshold)
    const step = keys.threshold_step ?? 0
    if (!Number.isFinite(step) || step < 0) {
      return yield* failAt(["threshold_step"], `must be finite and at least 0, got ${step}`)
    }
    const thresholdStep = step === 0 ? 0 : step // -0.0 reads as 0
    const highest = baseThreshold + 2 * thresholdStep
    if (highest > 1 + Number.EPSILON) {
      return yield* failAt(["threshold_step"], `base_threshold + 2 * threshold_step must be at most 1, got ${highest}`)
    }
    const trigger = yield* triggers(keys)
    const prompt = yield* optionalPrompt(keys.prompt)
    const call = yield* judgeCall(keys)
    const late = yield* lateVerdicts(keys, call)
    return {
      baseThreshold,
      thresholdStep,
      ...trigger,
      prompt,
      responseFormatType: keys.response_format_type ?? "json_schema",
      ...call,
      ...late
    }
  })

/**
 * The startup warning of a judge bounded neither by its client's `timeout_ms`, the route's
 * `judge_timeout_ms` nor its `request_timeout_ms` (`route <n>: <where>judge client <c> has no
 * timeout_ms; ...`); none when something bounds it.
 */
export const unboundedJudge = (
  route: { readonly name: string; readonly requestTimeoutMs: Option.Option<number> },
  judged: { readonly judge: Target; readonly judgeTimeoutMs: Option.Option<number> },
  where = ""
): ReadonlyArray<string> =>
  Option.isNone(judged.judge.client.timeoutMs) && Option.isNone(judged.judgeTimeoutMs) &&
    Option.isNone(route.requestTimeoutMs)
    ? [
      `route ${route.name}: ${where}judge client ${judged.judge.client.name} has no timeout_ms; ` +
      "a stalled judge holds requests until the peer closes the connection"
    ]
    : []
