/**
 * An independent model of the posture table and the session rules for capability routes (stored decision per session, trigger
 * rules, "only a valid verdict writes", retained vs fail-open, the error posture failing exactly on
 * transport/deadline/status), the generators of failure schedules, and `runSchedule`, which drives
 * a schedule through the real route (real `Judge.layer` over the real `UpstreamClient.layer` over a
 * scripted `HttpClient`) and checks every request against the model.
 */
import { assert } from "@effect/vitest"
import type { Target } from "@switchyard-ts/client/Target"
import { toHttp } from "@switchyard-ts/protocol/Errors"
import { SessionId } from "@switchyard-ts/protocol/Ids"
import type { Message } from "@switchyard-ts/protocol/OpenAiChat"
import * as CapabilityRoute from "@switchyard-ts/routing/CapabilityRoute"
import type * as ClassifierCascade from "@switchyard-ts/routing/ClassifierCascade"
import * as Decision from "@switchyard-ts/routing/Decision"
import * as Evidence from "@switchyard-ts/routing/Evidence"
import type * as Judge from "@switchyard-ts/routing/Judge"
import * as Metrics from "@switchyard-ts/routing/Metrics"
import type * as Posture from "@switchyard-ts/routing/Posture"
import type { Route, RoutedRequest, RouteFailure } from "@switchyard-ts/routing/Route"
import * as RoutingFacts from "@switchyard-ts/routing/RoutingFacts"
import * as Verdict from "@switchyard-ts/routing/Verdict"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FastCheck from "effect/FastCheck"
import * as Fiber from "effect/Fiber"
import type * as Layer from "effect/Layer"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as TestClock from "effect/TestClock"
import { routeServices } from "./harness.js"
import { makeScriptedJudge, Outcome, routeOptions, target } from "./scriptedJudge.js"

// ---------------------------------------------------------------------------------------------
// Requests
// ---------------------------------------------------------------------------------------------

export type Kind = "user_turn" | "tool_continuation"

export const conversation = (kind: Kind, task: string): ReadonlyArray<Message> =>
  kind === "user_turn"
    ? [
      { role: "system", content: "CLIENT-SYSTEM-PROMPT" },
      { role: "user", content: task },
      { role: "assistant", content: "working on it" },
      { role: "user", content: "please continue" }
    ]
    : [
      { role: "system", content: "CLIENT-SYSTEM-PROMPT" },
      { role: "user", content: task },
      {
        role: "assistant",
        content: null,
        tool_calls: [{ id: "c1", type: "function", function: { name: "ls", arguments: "{}" } }]
      },
      { role: "tool", tool_call_id: "c1", content: "a.ts b.ts" }
    ]

export const routed = (
  messages: ReadonlyArray<Message>,
  session: Option.Option<string> = Option.none(),
  headers: Readonly<Record<string, string>> = {}
): RoutedRequest => ({
  body: { model: "auto", messages },
  headers,
  sessionId: Option.map(session, SessionId.make)
})

// ---------------------------------------------------------------------------------------------
// The model of the posture table (README.md)
// ---------------------------------------------------------------------------------------------

export type Tier = "weak" | "strong"
export type CallFailureTag = "TransportError" | "DeadlineExceeded" | "UpstreamStatus"

export interface Step {
  /** The session id header, or null when the request carries none. */
  readonly session: string | null
  readonly kind: Kind
  readonly outcome: Outcome
}

type Expected =
  | {
    readonly _tag: "Fails"
    readonly failure: CallFailureTag
    readonly status: Option.Option<number>
    readonly httpStatus: 502 | 504
  }
  | {
    readonly _tag: "Routes"
    readonly tier: Tier
    readonly evidence: Evidence.Evidence
    /** Set when the request is routed without a verdict (the fail-open metric's reason). */
    readonly withoutVerdict: Option.Option<Evidence.Reason>
  }

export interface ModelConfig {
  readonly trigger: ClassifierCascade.ClassifyTrigger
  readonly posture: Posture.Posture
  readonly maxRetries: number
  readonly judgeModel: string
}

/** Policy thresholds with base 0.5 and step 0.125. */
export const thresholdOf: Record<Verdict.Boundary, number> = {
  supported: 0.5,
  uncertain: 0.625,
  unmatched: 0.625,
  unsupported: 0.75
}

const ruleFamily: Record<Verdict.Boundary, (rule: Verdict.Rule) => boolean> = {
  supported: (rule) => ["SUP-1", "SUP-2", "SUP-3", "SUP-4", "SUP-5"].includes(rule),
  uncertain: (rule) => rule === "UNC-1" || rule === "UNC-2",
  unmatched: (rule) => rule === "none",
  unsupported: (rule) => rule === "LIM-1" || rule === "LIM-2"
}

export type Judged =
  | { readonly _tag: "Verdict"; readonly p_solve: number; readonly boundary: Verdict.Boundary }
  | { readonly _tag: "NoVerdict"; readonly reason: Evidence.Reason }
  | {
    readonly _tag: "CallFailed"
    readonly failure: CallFailureTag
    readonly status: Option.Option<number>
    readonly reason: Evidence.Reason
  }

/** What one judge consultation amounts to, from the scripted outcome alone. */
export const judgedOf = (outcome: Outcome): Judged => {
  switch (outcome._tag) {
    case "verdict": {
      const valid = outcome.p_solve >= 0 && outcome.p_solve <= 1 && outcome.crux.trim() !== "" &&
        ruleFamily[outcome.boundary](outcome.rule)
      return valid
        ? { _tag: "Verdict", p_solve: outcome.p_solve, boundary: outcome.boundary }
        : { _tag: "NoVerdict", reason: "parse_error" }
    }
    case "garbage":
      return { _tag: "NoVerdict", reason: "parse_error" }
    case "invalid_body":
      return { _tag: "NoVerdict", reason: "invalid_response" }
    case "stall":
      return { _tag: "CallFailed", failure: "DeadlineExceeded", status: Option.none(), reason: "timeout" }
    case "refuse":
      return { _tag: "CallFailed", failure: "TransportError", status: Option.none(), reason: "transport" }
    case "5xx":
      return { _tag: "CallFailed", failure: "UpstreamStatus", status: Option.some(503), reason: "upstream_5xx" }
    case "4xx":
      return {
        _tag: "CallFailed",
        failure: "UpstreamStatus",
        status: Option.some(outcome.status),
        reason: "upstream_non_5xx"
      }
  }
}

/** HTTP requests one consultation makes: retryable failures are retried, everything else is one attempt. */
const attemptsOf = (outcome: Outcome, maxRetries: number): number =>
  outcome._tag === "refuse" || outcome._tag === "5xx" ? 1 + maxRetries : 1

/** Whether the outcome makes a consultation wait on the clock (the deadline, or retry backoff). */
const needsTime = (outcome: Outcome, maxRetries: number): boolean =>
  outcome._tag === "stall" || (maxRetries > 0 && (outcome._tag === "refuse" || outcome._tag === "5xx"))

/**
 * The model: the stored decision per session, the trigger rules, "only a valid verdict writes",
 * retained vs fail-open, and the error posture failing exactly on transport/deadline/status.
 */
const modelStep = (
  config: ModelConfig,
  stored: Map<string, Tier>,
  step: Step
): { readonly expected: Expected; readonly calls: number } => {
  const key = config.trigger === "every_request" ? Option.none<string>() : Option.fromNullable(step.session)
  const previous = Option.flatMap(key, (k) => Option.fromNullable(stored.get(k)))
  const reuse = Option.isSome(previous) &&
    (config.trigger === "new_session" || (config.trigger === "user_turn" && step.kind === "tool_continuation"))
  if (reuse && Option.isSome(previous)) {
    return {
      expected: {
        _tag: "Routes",
        tier: previous.value,
        evidence: { source: "affinity", previous_source: "llm-classifier" },
        withoutVerdict: Option.none()
      },
      calls: 0
    }
  }
  const calls = attemptsOf(step.outcome, config.maxRetries)
  const judged = judgedOf(step.outcome)
  if (judged._tag === "Verdict") {
    const threshold = thresholdOf[judged.boundary]
    const tier: Tier = judged.p_solve >= threshold || threshold - judged.p_solve <= Number.EPSILON ? "weak" : "strong"
    if (Option.isSome(key)) stored.set(key.value, tier)
    return {
      expected: {
        _tag: "Routes",
        tier,
        evidence: { source: "llm-classifier", score: judged.p_solve, threshold, boundary: judged.boundary },
        withoutVerdict: Option.none()
      },
      calls
    }
  }
  if (judged._tag === "CallFailed" && config.posture === "error") {
    return {
      expected: {
        _tag: "Fails",
        failure: judged.failure,
        status: judged.status,
        httpStatus: judged.failure === "DeadlineExceeded" ? 504 : 502
      },
      calls
    }
  }
  const reason = judged.reason
  return {
    expected: Option.match(previous, {
      onNone: () => ({
        _tag: "Routes",
        tier: "strong",
        evidence: { source: "fail-open", reason, judge_model: config.judgeModel },
        withoutVerdict: Option.some(reason)
      }),
      onSome: (tier) => ({
        _tag: "Routes",
        tier,
        evidence: { source: "retained", reason, judge_model: config.judgeModel },
        withoutVerdict: Option.some(reason)
      })
    }),
    calls
  }
}

// ---------------------------------------------------------------------------------------------
// Running a schedule against the real route
// ---------------------------------------------------------------------------------------------

export const failOpenCounts = (judgeModel: string) =>
  Effect.forEach(Evidence.Reason.literals, (reason) =>
    Effect.map(
      Metric.value(
        Metrics.classifierFailOpenTotal.pipe(Metric.tagged("judge_model", judgeModel), Metric.tagged("reason", reason))
      ),
      (state): readonly [Evidence.Reason, number] => [reason, state.count]
    ))

/**
 * Assert that `exit` failed with `JudgeUnavailable` around the judge call failure `failure` (an
 * `UpstreamStatus` with `status`), answered `httpStatus` (by default 504 for a deadline, else 502); with
 * `judgeModel`, that it names that judge.
 */
export const assertJudgeUnavailable = <A>(
  exit: Exit.Exit<A, RouteFailure>,
  expected: {
    readonly failure: CallFailureTag
    readonly status: Option.Option<number>
    readonly httpStatus?: 502 | 504
  },
  where: string,
  judgeModel?: string
): void => {
  const error = Exit.isFailure(exit) ? Cause.failureOption(exit.cause) : Option.none()
  assert.isTrue(Option.isSome(error), `expected a failure, ${where}`)
  if (Option.isNone(error)) return
  assert.strictEqual(error.value._tag, "JudgeUnavailable", where)
  if (error.value._tag !== "JudgeUnavailable") return
  if (judgeModel !== undefined) assert.strictEqual(error.value.judgeModel, judgeModel, where)
  assert.strictEqual(error.value.failure._tag, expected.failure, where)
  assert.deepStrictEqual(
    error.value.failure._tag === "UpstreamStatus" ? Option.some(error.value.failure.status) : Option.none(),
    expected.status,
    where
  )
  const status = expected.httpStatus ?? (expected.failure === "DeadlineExceeded" ? 504 : 502)
  assert.strictEqual(toHttp(error.value).status, status, where)
}

/** A judge model id unique to one sample (the metric registry is process-global). */
export const uniqueJudgeModel = Effect.sync(() => `judge-${globalThis.crypto.randomUUID()}`)

/**
 * Routes built here configure no late verdicts: the scope their background judge calls would run in
 * is closed at once (LateVerdict.test.ts builds its routes in a scope of its own).
 */
export const buildRoute = (options: CapabilityRoute.Options, judgeLayer: Layer.Layer<Judge.Judge>) =>
  CapabilityRoute.make(options).pipe(
    Effect.provide(routeServices(judgeLayer)),
    Effect.scoped
  )

/**
 * Run one decide: fork, advance the clock when the outcome needs it, await. Spans are not under
 * test here; the tracer is off to keep thousands of samples fast.
 */
export const decideOnce = (route: Route, request: RoutedRequest, outcome: Outcome, maxRetries: number) =>
  Effect.gen(function*() {
    const fiber = yield* Effect.fork(
      RoutingFacts.observe(route.decide(request), RoutingFacts.ignored).pipe(Effect.withTracerEnabled(false))
    )
    if (needsTime(outcome, maxRetries)) yield* TestClock.adjust("3 seconds")
    return yield* Fiber.await(fiber)
  })

const tierOf = (target: Target): Tier => (target.name === "weak" ? "weak" : "strong")

export const runSchedule = (
  config: Omit<ModelConfig, "judgeModel">,
  steps: ReadonlyArray<Step>
) =>
  Effect.gen(function*() {
    const judgeModel = yield* uniqueJudgeModel
    const model: ModelConfig = { ...config, judgeModel }
    const judge = yield* makeScriptedJudge
    const judgeTarget = target("judge", judgeModel, { maxRetries: config.maxRetries, timeoutMs: Option.some(3000) })
    const route = yield* buildRoute(
      routeOptions(judgeTarget, { classifyTrigger: config.trigger, judgeFailure: config.posture }),
      judge.layer
    )
    const stored = new Map<string, Tier>()
    const expectedCounts = new Map<Evidence.Reason, number>()
    let countsBefore = yield* failOpenCounts(judgeModel)

    for (const [i, step] of steps.entries()) {
      const where = `request ${i} (${JSON.stringify(step)})`
      const { calls: expectedCalls, expected } = modelStep(model, stored, step)
      yield* judge.script([step.outcome])
      const callsBefore = yield* judge.calls

      const request = routed(conversation(step.kind, "task"), Option.fromNullable(step.session))
      const exit = yield* decideOnce(route, request, step.outcome, config.maxRetries)

      assert.strictEqual((yield* judge.calls) - callsBefore, expectedCalls, `judge HTTP calls, ${where}`)
      const countsAfter = yield* failOpenCounts(judgeModel)
      const deltas = countsAfter.map(([reason, count], j) => [reason, count - (countsBefore[j]?.[1] ?? 0)] as const)
      const expectedDeltas = Evidence.Reason.literals.map((reason) =>
        [
          reason,
          expected._tag === "Routes" && Option.contains(expected.withoutVerdict, reason) ? 1 : 0
        ] as const
      )
      assert.deepStrictEqual(deltas, expectedDeltas, `fail-open metric, ${where}`)
      countsBefore = countsAfter

      if (expected._tag === "Fails") {
        assert.isTrue(Exit.isFailure(exit), `expected a failure, ${where}`)
        if (Exit.isFailure(exit)) {
          const error = Option.getOrThrow(Cause.failureOption(exit.cause))
          assert.strictEqual(error._tag, "JudgeUnavailable", where)
          if (error._tag === "JudgeUnavailable") {
            assert.strictEqual(error.judgeModel, judgeModel, where)
            assert.strictEqual(error.failure._tag, expected.failure, where)
            assert.deepStrictEqual(
              error.failure._tag === "UpstreamStatus" ? Option.some(error.failure.status) : Option.none(),
              expected.status,
              where
            )
            assert.strictEqual(toHttp(error).status, expected.httpStatus, where)
          }
        }
      } else {
        assert.isTrue(Exit.isSuccess(exit), `expected a decision, ${where}`)
        if (Exit.isSuccess(exit)) {
          const decision = exit.value
          const selected = Option.getOrThrow(Decision.selected(decision))
          assert.strictEqual(tierOf(selected), expected.tier, `tier, ${where}`)
          assert.strictEqual(selected.name, expected.tier, `target, ${where}`)
          assert.deepStrictEqual(Decision.fallbacks(decision).map((t) => t.name), [
            expected.tier === "weak" ? "strong" : "weak"
          ], where)
          assert.deepStrictEqual(decision.evidence, expected.evidence, `evidence, ${where}`)
          assert.deepStrictEqual(decision.route, { id: "auto", name: "auto", algorithm: "llm_task_classifier" }, where)
        }
      }
      for (const [reason, delta] of expectedDeltas) {
        if (delta > 0) expectedCounts.set(reason, (expectedCounts.get(reason) ?? 0) + delta)
      }
    }

    // Over the whole schedule: the counter equals the number of requests routed without a verdict.
    const totals = yield* failOpenCounts(judgeModel)
    assert.deepStrictEqual(
      totals,
      Evidence.Reason.literals.map((reason) => [reason, expectedCounts.get(reason) ?? 0] as const),
      "fail-open metric totals"
    )
    return true
  })

// ---------------------------------------------------------------------------------------------
// Generators
// ---------------------------------------------------------------------------------------------

const rulesOf: Record<Verdict.Boundary, ReadonlyArray<Verdict.Rule>> = {
  supported: ["SUP-1", "SUP-2", "SUP-3", "SUP-4", "SUP-5"],
  uncertain: ["UNC-1", "UNC-2"],
  unmatched: ["none"],
  unsupported: ["LIM-1", "LIM-2"]
}

const pSolve = FastCheck.oneof(
  { arbitrary: FastCheck.integer({ min: 0, max: 8 }).map((k) => k / 8), weight: 4 },
  { arbitrary: FastCheck.double({ min: 0, max: 1, noNaN: true }).map((x) => (x === 0 ? 0 : x)), weight: 3 },
  { arbitrary: FastCheck.constantFrom(1.5, -0.1, 1.0000001), weight: 1 }
)

const verdictOutcome: FastCheck.Arbitrary<Outcome> = FastCheck.constantFrom(...Verdict.Boundary.literals).chain((
  boundary
) =>
  FastCheck.record({
    p_solve: pSolve,
    rule: FastCheck.oneof(
      { arbitrary: FastCheck.constantFrom(...rulesOf[boundary]), weight: 6 },
      { arbitrary: FastCheck.constantFrom(...Verdict.Rule.literals), weight: 1 }
    ),
    crux: FastCheck.oneof(
      { arbitrary: FastCheck.constant("needs one edit"), weight: 10 },
      { arbitrary: FastCheck.constantFrom("", "   "), weight: 1 }
    )
  }).map(({ crux, p_solve, rule }) => Outcome.verdict(p_solve, boundary, rule, crux))
)

export const outcomeArb: FastCheck.Arbitrary<Outcome> = FastCheck.oneof(
  { arbitrary: verdictOutcome, weight: 6 },
  { arbitrary: FastCheck.constant(Outcome.garbage), weight: 1 },
  { arbitrary: FastCheck.constant(Outcome.invalidBody), weight: 1 },
  { arbitrary: FastCheck.constant(Outcome.stall), weight: 1 },
  { arbitrary: FastCheck.constant(Outcome.refuse), weight: 1 },
  { arbitrary: FastCheck.constant(Outcome.status5xx), weight: 1 },
  { arbitrary: FastCheck.constantFrom<400 | 401 | 404>(400, 401, 404).map(Outcome.status4xx), weight: 1 }
)

const stepArb: FastCheck.Arbitrary<Step> = FastCheck.record({
  session: FastCheck.option(FastCheck.constantFrom("s1", "s2", "s3"), { freq: 4 }),
  kind: FastCheck.constantFrom<Kind>("user_turn", "tool_continuation"),
  outcome: outcomeArb
})

export const schedule = FastCheck.array(stepArb, { minLength: 1, maxLength: 8 })

export const triggers: ReadonlyArray<ClassifierCascade.ClassifyTrigger> = ["every_request", "user_turn", "new_session"]
export const postures: ReadonlyArray<Posture.Posture> = ["error", "fail_open"]
