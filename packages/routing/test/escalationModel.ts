/**
 * An independent model of escalation routes (weak `weak`, strong `strong`, `confirmations` N): the
 * weak target answers (a scripted upstream), the judge (real `Judge.layer` over a scripted judge
 * upstream) reads the finished turn. A valid escalate verdict adds one to the session's streak, a
 * decline resets it, N in a row latch the session to strong (no judge call after); "no verdict"
 * serves the weak reply with the streak unchanged; `error` fails exactly on transport / deadline /
 * status. `runEscalationSchedule` drives a schedule through the real route and checks every request.
 */
import * as HttpClient from "@effect/platform/HttpClient"
import type * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import { assert } from "@effect/vitest"
import type { Target } from "@switchyard-ts/client/Target"
import * as UpstreamClient from "@switchyard-ts/client/UpstreamClient"
import * as Decision from "@switchyard-ts/routing/Decision"
import * as EscalationRoute from "@switchyard-ts/routing/EscalationRoute"
import type * as Evidence from "@switchyard-ts/routing/Evidence"
import type * as Judge from "@switchyard-ts/routing/Judge"
import type * as Posture from "@switchyard-ts/routing/Posture"
import type { Route, RoutedRequest } from "@switchyard-ts/routing/Route"
import * as RoutingFacts from "@switchyard-ts/routing/RoutingFacts"
import * as SessionStore from "@switchyard-ts/routing/SessionStore"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FastCheck from "effect/FastCheck"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import * as TestClock from "effect/TestClock"
import { assertJudgeUnavailable, conversation, failOpenCounts, routed, uniqueJudgeModel } from "./capabilityModel.js"
import { json, judgeCompletion, makeScriptedJudgeWith, type Outcome, respond, target } from "./scriptedJudge.js"

export const weak = target("weak", "weak-model")
export const strong = target("strong", "strong-model")
export const weakReply = "the weak target's answer"

/** The judge upstream answers `text`, or fails as a capability outcome does. */
export type EscalationOutcome =
  | { readonly _tag: "reply"; readonly text: string }
  | Exclude<Outcome, { _tag: "verdict" }>

const respondEscalation = (request: HttpClientRequest.HttpClientRequest, outcome: EscalationOutcome) =>
  outcome._tag === "reply"
    ? Effect.succeed(json(request, 200, judgeCompletion("judge", outcome.text)))
    : respond(request, outcome)

export const makeEscalationJudge = makeScriptedJudgeWith(respondEscalation)

/** An `UpstreamClient` whose weak and strong targets answer `weakReply`; counts the calls. */
export const makeWeakUpstream = Effect.gen(function*() {
  const calls = yield* Ref.make(0)
  const http = HttpClient.make((request) =>
    Effect.as(Ref.update(calls, (n) => n + 1), json(request, 200, judgeCompletion("weak-model", weakReply)))
  )
  const layer = Layer.fresh(UpstreamClient.layer).pipe(Layer.provide(Layer.succeed(HttpClient.HttpClient, http)))
  return { calls: Ref.get(calls), layer }
})

export const escalationOptions = (
  judge: Target,
  overrides: Partial<EscalationRoute.Options> = {}
): EscalationRoute.Options => ({
  id: "esc",
  name: "esc",
  judge,
  prompt: Option.none(),
  responseFormatType: "json_schema",
  maxOutputTokens: 256,
  recentTurnWindow: 28,
  windowMessageChars: 500,
  weak,
  strong,
  confirmations: 2,
  judgeFailure: "error",
  ...overrides
})

export const buildEscalationRoute = (
  options: EscalationRoute.Options,
  judgeLayer: Layer.Layer<Judge.Judge>,
  upstreamLayer: Layer.Layer<UpstreamClient.UpstreamClient>,
  storeLayer: Layer.Layer<SessionStore.SessionStore> = SessionStore.layerMemory({ maxEntries: 100, ttlMs: 3_600_000 })
) => EscalationRoute.make(options).pipe(Effect.provide(Layer.mergeAll(judgeLayer, upstreamLayer, storeLayer)))

// ---------------------------------------------------------------------------------------------
// The model
// ---------------------------------------------------------------------------------------------

type CallFailureTag = "TransportError" | "DeadlineExceeded" | "UpstreamStatus"

export interface Step {
  readonly session: string | null
  readonly outcome: EscalationOutcome
}

type Judged =
  | { readonly _tag: "Verdict"; readonly escalate: boolean }
  | { readonly _tag: "NoVerdict"; readonly reason: Evidence.Reason }
  | {
    readonly _tag: "CallFailed"
    readonly failure: CallFailureTag
    readonly status: Option.Option<number>
    readonly reason: Evidence.Reason
  }

/** The model's own reading of a reply: exactly `escalate` (boolean) and `reason` (string). */
const readReply = (text: string): Judged => {
  let body = text.trim()
  if (body.startsWith("```json\n") && body.endsWith("```")) body = body.slice(8, -3).trim()
  let value: unknown
  try {
    value = JSON.parse(body)
  } catch {
    return { _tag: "NoVerdict", reason: "parse_error" }
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return { _tag: "NoVerdict", reason: "parse_error" }
  }
  const keys = Object.keys(value).sort()
  const escalate: unknown = "escalate" in value ? value.escalate : undefined
  const reason: unknown = "reason" in value ? value.reason : undefined
  if (keys.join(",") !== "escalate,reason" || typeof escalate !== "boolean" || typeof reason !== "string") {
    return { _tag: "NoVerdict", reason: "parse_error" }
  }
  return { _tag: "Verdict", escalate }
}

const judgedOf = (outcome: EscalationOutcome): Judged => {
  switch (outcome._tag) {
    case "reply":
      return readReply(outcome.text)
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

/** A session in the model: its streak, or latched. */
type ModelState = number | "latched"

type Expected =
  | { readonly _tag: "Fails"; readonly failure: CallFailureTag; readonly status: Option.Option<number> }
  | {
    readonly _tag: "Serves"
    /** `weak`: the buffered weak reply (Answered); `strong`: routed to strong, fallback weak. */
    readonly by: "weak" | "strong"
    readonly evidence: Evidence.Evidence
    readonly withoutVerdict: Option.Option<Evidence.Reason>
  }

export interface ModelConfig {
  readonly posture: Posture.Posture
  readonly confirmations: number
  readonly judgeModel: string
}

const modelStep = (
  config: ModelConfig,
  sessions: Map<string, ModelState>,
  step: Step
): {
  readonly expected: Expected
  readonly judgeCalls: number
  readonly weakCalls: number
  readonly writes: boolean
} => {
  const known = step.session === null ? undefined : sessions.get(step.session)
  const state: ModelState = known ?? 0
  const esc = (verdict: "escalate" | "decline" | "latched", streak: number): Evidence.Evidence => ({
    source: "escalation",
    verdict,
    streak,
    confirmations: config.confirmations
  })
  if (state === "latched") {
    return {
      expected: {
        _tag: "Serves",
        by: "strong",
        evidence: esc("latched", config.confirmations),
        withoutVerdict: Option.none()
      },
      judgeCalls: 0,
      weakCalls: 0,
      writes: false
    }
  }
  const judged = judgedOf(step.outcome)
  if (judged._tag === "Verdict") {
    const streak = judged.escalate ? state + 1 : 0
    const latched = streak >= config.confirmations
    if (step.session !== null) sessions.set(step.session, latched ? "latched" : streak)
    return {
      expected: {
        _tag: "Serves",
        by: latched ? "strong" : "weak",
        evidence: esc(judged.escalate ? "escalate" : "decline", streak),
        withoutVerdict: Option.none()
      },
      judgeCalls: 1,
      weakCalls: 1,
      writes: step.session !== null
    }
  }
  if (judged._tag === "CallFailed" && config.posture === "error") {
    return {
      expected: { _tag: "Fails", failure: judged.failure, status: judged.status },
      judgeCalls: 1,
      weakCalls: 1,
      writes: false
    }
  }
  return {
    expected: {
      _tag: "Serves",
      by: "weak",
      evidence: known === undefined
        ? { source: "fail-open", reason: judged.reason, judge_model: config.judgeModel }
        : { source: "retained", reason: judged.reason, judge_model: config.judgeModel },
      withoutVerdict: Option.some(judged.reason)
    },
    judgeCalls: 1,
    weakCalls: 1,
    writes: false
  }
}

/** The memory store, counting writes. */
export const countingStore = Effect.gen(function*() {
  const writes = yield* Ref.make(0)
  const memory = SessionStore.makeMemory({ maxEntries: 100, ttlMs: 3_600_000 })
  const layer = Layer.succeed(
    SessionStore.SessionStore,
    SessionStore.SessionStore.of({
      ...memory,
      put: (key, decision) => Effect.zipRight(Ref.update(writes, (n) => n + 1), memory.put(key, decision))
    })
  )
  return { writes: Ref.get(writes), layer }
})

/**
 * Fork one decide; when the judge will stall, wait until it was called (the weak call comes first),
 * then move the clock past its 3 s timeout; await.
 */
export const decideEscalation = (
  route: Route,
  request: RoutedRequest,
  stalls: boolean,
  judgeCalls: Effect.Effect<number>
) =>
  Effect.gen(function*() {
    const before = yield* judgeCalls
    const fiber = yield* Effect.fork(
      RoutingFacts.observe(route.decide(request), RoutingFacts.ignored).pipe(Effect.withTracerEnabled(false))
    )
    if (stalls) {
      while ((yield* judgeCalls) === before) yield* Effect.yieldNow()
      yield* TestClock.adjust("3 seconds")
    }
    return yield* Fiber.await(fiber)
  })

export const runEscalationSchedule = (config: Omit<ModelConfig, "judgeModel">, steps: ReadonlyArray<Step>) =>
  Effect.gen(function*() {
    const judgeModel = yield* uniqueJudgeModel
    const model: ModelConfig = { ...config, judgeModel }
    const judge = yield* makeEscalationJudge
    const upstream = yield* makeWeakUpstream
    const store = yield* countingStore
    const judgeTarget = target("judge", judgeModel, { timeoutMs: Option.some(3000) })
    const route = yield* buildEscalationRoute(
      escalationOptions(judgeTarget, { confirmations: config.confirmations, judgeFailure: config.posture }),
      judge.layer,
      upstream.layer,
      store.layer
    )
    const sessions = new Map<string, ModelState>()
    let withoutVerdict = 0
    const total = (counts: ReadonlyArray<readonly [Evidence.Reason, number]>) =>
      counts.reduce((sum, [, count]) => sum + count, 0)
    const countsAtStart = total(yield* failOpenCounts(judgeModel))

    for (const [i, step] of steps.entries()) {
      const where = `request ${i} (${JSON.stringify(step)})`
      const { expected, judgeCalls, weakCalls, writes } = modelStep(model, sessions, step)
      yield* judge.script([step.outcome])
      const judgeBefore = yield* judge.calls
      const weakBefore = yield* upstream.calls
      const writesBefore = yield* store.writes
      const countsBefore = total(yield* failOpenCounts(judgeModel))

      const exit = yield* decideEscalation(
        route,
        routed(conversation("user_turn", "task"), Option.fromNullable(step.session)),
        judgeCalls > 0 && step.outcome._tag === "stall",
        judge.calls
      )

      assert.strictEqual((yield* judge.calls) - judgeBefore, judgeCalls, `judge calls, ${where}`)
      assert.strictEqual((yield* upstream.calls) - weakBefore, weakCalls, `weak calls, ${where}`)
      assert.strictEqual((yield* store.writes) - writesBefore, writes ? 1 : 0, `session writes, ${where}`)
      const counted = total(yield* failOpenCounts(judgeModel)) - countsBefore
      assert.strictEqual(
        counted,
        expected._tag === "Serves" && Option.isSome(expected.withoutVerdict) ? 1 : 0,
        `fail-open count, ${where}`
      )
      if (config.posture === "fail_open") assert.isTrue(Exit.isSuccess(exit), `fail_open never fails, ${where}`)

      if (expected._tag === "Fails") {
        assertJudgeUnavailable(exit, expected, where)
      } else {
        assert.isTrue(Exit.isSuccess(exit), `expected a decision, ${where}`)
        if (Exit.isSuccess(exit)) {
          const decision = exit.value
          assert.deepStrictEqual(decision.evidence, expected.evidence, `evidence, ${where}`)
          if (expected.by === "weak") {
            assert.strictEqual(decision._tag, "Answered", where)
            assert.deepStrictEqual(
              Option.map(Decision.answerOf(decision), (a) => a.choices[0]?.message.content),
              Option.some(weakReply),
              where
            )
            assert.strictEqual(Option.getOrThrow(Decision.selected(decision)).name, "weak", where)
          } else {
            assert.strictEqual(decision._tag, "Routed", where)
            assert.strictEqual(Option.getOrThrow(Decision.selected(decision)).name, "strong", where)
            assert.deepStrictEqual(Decision.fallbacks(decision).map((t) => t.name), ["weak"], where)
          }
        }
        if (Option.isSome(expected.withoutVerdict)) withoutVerdict++
      }
    }
    assert.strictEqual(total(yield* failOpenCounts(judgeModel)) - countsAtStart, withoutVerdict, "fail-open total")
    return true
  })

// ---------------------------------------------------------------------------------------------
// Generators
// ---------------------------------------------------------------------------------------------

const replyText: FastCheck.Arbitrary<string> = FastCheck.record({
  escalate: FastCheck.oneof(
    { arbitrary: FastCheck.boolean().map((b): unknown => b), weight: 8 },
    { arbitrary: FastCheck.constantFrom<unknown>("yes", 1, null), weight: 1 }
  ),
  reason: FastCheck.option(FastCheck.constantFrom("too hard", ""), { freq: 8 }),
  extra: FastCheck.integer({ min: 0, max: 6 }).map((n) => n === 0),
  fenced: FastCheck.boolean()
}).map(({ escalate, extra, fenced, reason }) => {
  const value: Record<string, unknown> = { escalate }
  if (reason !== null) value.reason = reason
  if (extra) value.confidence = 0.5
  const text = JSON.stringify(value)
  return fenced ? "```json\n" + text + "\n```" : text
})

const outcomeArb: FastCheck.Arbitrary<EscalationOutcome> = FastCheck.oneof(
  { arbitrary: replyText.map((text): EscalationOutcome => ({ _tag: "reply", text })), weight: 10 },
  { arbitrary: FastCheck.constant<EscalationOutcome>({ _tag: "garbage" }), weight: 1 },
  { arbitrary: FastCheck.constant<EscalationOutcome>({ _tag: "invalid_body" }), weight: 1 },
  { arbitrary: FastCheck.constant<EscalationOutcome>({ _tag: "stall" }), weight: 1 },
  { arbitrary: FastCheck.constant<EscalationOutcome>({ _tag: "refuse" }), weight: 1 },
  { arbitrary: FastCheck.constant<EscalationOutcome>({ _tag: "5xx" }), weight: 1 },
  {
    arbitrary: FastCheck.constantFrom<400 | 401 | 404>(400, 401, 404).map((status): EscalationOutcome => ({
      _tag: "4xx",
      status
    })),
    weight: 1
  }
)

export const escalationSchedule = FastCheck.array(
  FastCheck.record({
    session: FastCheck.option(FastCheck.constantFrom("s1", "s2"), { freq: 5 }),
    outcome: outcomeArb
  }),
  { minLength: 1, maxLength: 10 }
)
