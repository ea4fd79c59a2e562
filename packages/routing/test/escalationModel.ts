/**
 * An independent model of escalation routes (weak `weak`, strong `strong`, `confirmations` N): the
 * weak target answers (a scripted upstream), the judge (real `Judge.layer` over a scripted judge
 * upstream) reads the finished turn. A valid escalate verdict with fresh evidence adds one to the
 * session's streak (restarts at 1 in another category), a decline or stale evidence resets it, N
 * latch the session to strong (no judge call after); "no verdict" serves the weak reply with the
 * streak unchanged; `error` fails exactly on transport / deadline / status. With a de-escalation
 * table the latch is a strong phase instead: unjudged strong turns below `strongMinCalls`, then
 * strong answers buffered and is judged (a failing strong target falls back to weak, unjudged),
 * consecutive declines release the session, `strongMaxCalls` forces it back with a cooldown of
 * unjudged weak turns; judge failures there keep strong under either posture.
 * `runEscalationSchedule` drives a schedule through the real route and checks every request.
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
import { memoryStore, routeServices } from "./harness.js"
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

export const strongReply = "the strong target's answer"

/**
 * An `UpstreamClient` over both tiers: the weak target answers `weakReply`, the strong target
 * `strongReply` — or 503 while `failStrong` is set; counts each tier's calls.
 */
export const makeTieredUpstream = Effect.gen(function*() {
  const weakCalls = yield* Ref.make(0)
  const strongCalls = yield* Ref.make(0)
  const failStrong = yield* Ref.make(false)
  const http = HttpClient.make((request) =>
    request.url.includes("strong.test")
      ? Effect.zipRight(
        Ref.update(strongCalls, (n) => n + 1),
        Effect.map(Ref.get(failStrong), (fails) =>
          fails
            ? json(request, 503, { error: { message: "down", type: "server_error" } })
            : json(request, 200, judgeCompletion("strong-model", strongReply)))
      )
      : Effect.as(Ref.update(weakCalls, (n) => n + 1), json(request, 200, judgeCompletion("weak-model", weakReply)))
  )
  const layer = Layer.fresh(UpstreamClient.layer).pipe(Layer.provide(Layer.succeed(HttpClient.HttpClient, http)))
  return {
    weakCalls: Ref.get(weakCalls),
    strongCalls: Ref.get(strongCalls),
    failStrong: (fails: boolean) => Ref.set(failStrong, fails),
    layer
  }
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
  storeLayer: Layer.Layer<SessionStore.SessionStore> = memoryStore()
) =>
  EscalationRoute.make(options).pipe(
    Effect.provide(routeServices(judgeLayer, storeLayer, upstreamLayer)),
    Effect.scoped
  )

// ---------------------------------------------------------------------------------------------
// The model
// ---------------------------------------------------------------------------------------------

type CallFailureTag = "TransportError" | "DeadlineExceeded" | "UpstreamStatus"

export interface Step {
  readonly session: string | null
  readonly outcome: EscalationOutcome
  /** The strong target answers 503 on this request (a judged strong turn falls back to weak). */
  readonly strongFails?: boolean
}

const categories = ["none", "repetition", "false_progress", "drift", "desperation", "capability_gap"]

interface ModelVote {
  readonly escalate: boolean
  readonly category: string | undefined
  readonly newEvidence: boolean | undefined
}

type Judged =
  | { readonly _tag: "Verdict"; readonly vote: ModelVote }
  | { readonly _tag: "NoVerdict"; readonly reason: Evidence.Reason }
  | {
    readonly _tag: "CallFailed"
    readonly failure: CallFailureTag
    readonly status: Option.Option<number>
    readonly reason: Evidence.Reason
  }

/**
 * The model's own reading of a reply: `escalate` (boolean) and `reason` (string), optionally
 * `category` (one of six) and `new_evidence` (boolean), nothing else.
 */
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
  const allowed = ["escalate", "reason", "category", "new_evidence"]
  const escalate: unknown = "escalate" in value ? value.escalate : undefined
  const reason: unknown = "reason" in value ? value.reason : undefined
  const category: unknown = "category" in value ? value.category : undefined
  const newEvidence: unknown = "new_evidence" in value ? value.new_evidence : undefined
  if (
    Object.keys(value).some((key) => !allowed.includes(key)) || typeof escalate !== "boolean" ||
    typeof reason !== "string" || ("category" in value && !categories.includes(String(category))) ||
    ("category" in value && typeof category !== "string") ||
    ("new_evidence" in value && typeof newEvidence !== "boolean")
  ) {
    return { _tag: "NoVerdict", reason: "parse_error" }
  }
  return {
    _tag: "Verdict",
    vote: {
      escalate,
      category: typeof category === "string" ? category : undefined,
      newEvidence: typeof newEvidence === "boolean" ? newEvidence : undefined
    }
  }
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

/** A session in the model: its streak (and cooldown), latched, or in its strong phase. */
type ModelState =
  | {
    readonly _tag: "weak"
    readonly streak: number
    readonly category: string | undefined
    readonly cooldown: number
  }
  | { readonly _tag: "latched" }
  | { readonly _tag: "strong"; readonly calls: number; readonly release: number }

const fresh: ModelState = { _tag: "weak", streak: 0, category: undefined, cooldown: 0 }

type Expected =
  | { readonly _tag: "Fails"; readonly failure: CallFailureTag; readonly status: Option.Option<number> }
  | {
    readonly _tag: "Serves"
    /**
     * `weak`: the buffered weak reply (Answered); `strong`: routed to strong, fallback weak;
     * `strong-answer`: the buffered strong answer (Answered).
     */
    readonly by: "weak" | "strong" | "strong-answer"
    readonly evidence: Evidence.Evidence
    readonly withoutVerdict: Option.Option<Evidence.Reason>
  }

/** A de-escalation table in the model. */
export interface ModelDeescalation {
  readonly strongMinCalls: number
  readonly confirmations: number
  readonly strongMaxCalls: number | undefined
  readonly weakCooldownCalls: number
}

export interface ModelConfig {
  readonly posture: Posture.Posture
  readonly confirmations: number
  readonly judgeModel: string
  readonly deescalation?: ModelDeescalation | undefined
}

interface Calls {
  readonly judge: number
  readonly weak: number
  readonly strong: number
}

interface Modelled {
  readonly expected: Expected
  readonly calls: Calls
  readonly writes: boolean
}

const escEvidence = (
  config: ModelConfig,
  verdict: typeof Evidence.Escalation.Type["verdict"],
  streak: number,
  extra: Record<string, string | number | boolean> = {}
): Evidence.Evidence => ({ source: "escalation", verdict, streak, confirmations: config.confirmations, ...extra })

const voteExtra = (vote: ModelVote): Record<string, string | boolean> => ({
  ...(vote.category === undefined ? {} : { category: vote.category }),
  ...(vote.newEvidence === undefined ? {} : { new_evidence: vote.newEvidence })
})

const serves = (
  by: "weak" | "strong" | "strong-answer",
  evidence: Evidence.Evidence,
  calls: Calls,
  writes: boolean
) => ({
  expected: { _tag: "Serves" as const, by, evidence, withoutVerdict: Option.none() },
  calls,
  writes
})

/** A strong-phase request of the model (`table` set). */
const strongStep = (
  config: ModelConfig,
  table: ModelDeescalation,
  state: Extract<ModelState, { _tag: "strong" }>,
  step: Step,
  set: (state: ModelState) => void
): Modelled => {
  const writes = step.session !== null
  const calls = state.calls + 1
  const facts = (c: number, r: number) => ({ strong_calls: c, release_streak: r })
  if (calls < table.strongMinCalls) {
    set({ _tag: "strong", calls, release: state.release })
    return serves(
      "strong",
      escEvidence(config, "latched", config.confirmations, facts(calls, state.release)),
      { judge: 0, weak: 0, strong: 0 },
      writes
    )
  }
  if (step.strongFails === true) {
    set({ _tag: "strong", calls: state.calls, release: 0 })
    return serves(
      "weak",
      escEvidence(config, "strong_fallback", config.confirmations, facts(state.calls, 0)),
      { judge: 0, weak: 1, strong: 1 },
      writes
    )
  }
  const judged = judgedOf(step.outcome)
  const made = { judge: 1, weak: 0, strong: 1 }
  if (judged._tag !== "Verdict") {
    set({ _tag: "strong", calls, release: 0 })
    return {
      expected: {
        _tag: "Serves",
        by: "strong-answer",
        evidence: { source: "retained", reason: judged.reason, judge_model: config.judgeModel },
        withoutVerdict: Option.some(judged.reason)
      },
      calls: made,
      writes
    }
  }
  const vote = judged.vote
  if (vote.escalate) {
    set({ _tag: "strong", calls, release: 0 })
    return serves(
      "strong-answer",
      escEvidence(config, "retain", config.confirmations, { ...voteExtra(vote), ...facts(calls, 0) }),
      made,
      writes
    )
  }
  const release = state.release + 1
  const released = release >= table.confirmations
  set(released ? fresh : { _tag: "strong", calls, release })
  return serves(
    "strong-answer",
    escEvidence(config, released ? "release" : "pending", config.confirmations, {
      ...voteExtra(vote),
      ...facts(calls, release)
    }),
    made,
    writes
  )
}

/** A weak-phase request of the model. */
const weakStep = (
  config: ModelConfig,
  state: Extract<ModelState, { _tag: "weak" }>,
  known: boolean,
  step: Step,
  set: (state: ModelState) => void
): Modelled => {
  const writes = step.session !== null
  if (state.cooldown > 0) {
    const left = state.cooldown - 1
    set({ ...state, cooldown: left })
    return serves(
      "weak",
      escEvidence(config, "cooldown", state.streak, { cooldown: left }),
      { judge: 0, weak: 1, strong: 0 },
      writes
    )
  }
  const made = { judge: 1, weak: 1, strong: 0 }
  const judged = judgedOf(step.outcome)
  if (judged._tag === "Verdict") {
    const vote = judged.vote
    const stale = !vote.escalate || vote.newEvidence === false
    const other = state.streak > 0 && vote.category !== undefined && state.category !== undefined &&
      vote.category !== state.category
    const streak = stale ? 0 : other ? 1 : state.streak + 1
    const category = stale ? undefined : vote.category ?? state.category
    const latches = streak >= config.confirmations
    set(
      !latches
        ? { _tag: "weak", streak, category, cooldown: 0 }
        : config.deescalation === undefined
        ? { _tag: "latched" }
        : { _tag: "strong", calls: 1, release: 0 }
    )
    return serves(
      latches ? "strong" : "weak",
      escEvidence(config, vote.escalate ? "escalate" : "decline", streak, {
        ...voteExtra(vote),
        ...(latches && config.deescalation !== undefined ? { strong_calls: 1, release_streak: 0 } : {})
      }),
      made,
      writes
    )
  }
  if (judged._tag === "CallFailed" && config.posture === "error") {
    return { expected: { _tag: "Fails", failure: judged.failure, status: judged.status }, calls: made, writes: false }
  }
  return {
    expected: {
      _tag: "Serves",
      by: "weak",
      evidence: known
        ? { source: "retained", reason: judged.reason, judge_model: config.judgeModel }
        : { source: "fail-open", reason: judged.reason, judge_model: config.judgeModel },
      withoutVerdict: Option.some(judged.reason)
    },
    calls: made,
    writes: false
  }
}

const modelStep = (config: ModelConfig, sessions: Map<string, ModelState>, step: Step): Modelled => {
  const known = step.session === null ? undefined : sessions.get(step.session)
  const set = (state: ModelState) => {
    if (step.session !== null) sessions.set(step.session, state)
  }
  const table = config.deescalation
  let state: ModelState = known ?? fresh
  if (
    table !== undefined && state._tag === "strong" && table.strongMaxCalls !== undefined &&
    state.calls >= table.strongMaxCalls
  ) {
    state = { _tag: "weak", streak: 0, category: undefined, cooldown: table.weakCooldownCalls }
  }
  switch (state._tag) {
    case "latched":
      return serves(
        "strong",
        escEvidence(config, "latched", config.confirmations),
        { judge: 0, weak: 0, strong: 0 },
        false
      )
    case "strong":
      return table === undefined
        ? serves(
          "strong",
          escEvidence(config, "latched", config.confirmations),
          { judge: 0, weak: 0, strong: 0 },
          false
        )
        : strongStep(config, table, state, step, set)
    case "weak":
      return weakStep(config, state, known !== undefined, step, set)
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
    const upstream = yield* makeTieredUpstream
    const store = yield* countingStore
    const judgeTarget = target("judge", judgeModel, { timeoutMs: Option.some(3000) })
    const table = config.deescalation
    const route = yield* buildEscalationRoute(
      escalationOptions(judgeTarget, {
        confirmations: config.confirmations,
        judgeFailure: config.posture,
        deescalation: table === undefined ? Option.none() : Option.some({
          strongMinCalls: table.strongMinCalls,
          confirmations: table.confirmations,
          strongMaxCalls: Option.fromNullable(table.strongMaxCalls),
          weakCooldownCalls: table.weakCooldownCalls
        })
      }),
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
      const { calls, expected, writes } = modelStep(model, sessions, step)
      yield* judge.script([step.outcome])
      yield* upstream.failStrong(step.strongFails === true)
      const judgeBefore = yield* judge.calls
      const weakBefore = yield* upstream.weakCalls
      const strongBefore = yield* upstream.strongCalls
      const writesBefore = yield* store.writes
      const countsBefore = total(yield* failOpenCounts(judgeModel))

      const exit = yield* decideEscalation(
        route,
        routed(conversation("user_turn", "task"), Option.fromNullable(step.session)),
        calls.judge > 0 && step.outcome._tag === "stall",
        judge.calls
      )

      assert.strictEqual((yield* judge.calls) - judgeBefore, calls.judge, `judge calls, ${where}`)
      assert.strictEqual((yield* upstream.weakCalls) - weakBefore, calls.weak, `weak calls, ${where}`)
      assert.strictEqual((yield* upstream.strongCalls) - strongBefore, calls.strong, `strong calls, ${where}`)
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
        if (Exit.isSuccess(exit)) assertServed(exit.value, expected, where)
        if (Option.isSome(expected.withoutVerdict)) withoutVerdict++
      }
    }
    assert.strictEqual(total(yield* failOpenCounts(judgeModel)) - countsAtStart, withoutVerdict, "fail-open total")
    return true
  })

const assertServed = (
  decision: Decision.Decision,
  expected: Extract<Expected, { _tag: "Serves" }>,
  where: string
) => {
  assert.deepStrictEqual(decision.evidence, expected.evidence, `evidence, ${where}`)
  if (expected.by === "strong") {
    assert.strictEqual(decision._tag, "Routed", where)
    assert.strictEqual(Option.getOrThrow(Decision.selected(decision)).name, "strong", where)
    assert.deepStrictEqual(Decision.fallbacks(decision).map((t) => t.name), ["weak"], where)
    return
  }
  assert.strictEqual(decision._tag, "Answered", where)
  assert.deepStrictEqual(
    Option.map(Decision.answerOf(decision), (a) => a.choices[0]?.message.content),
    Option.some(expected.by === "weak" ? weakReply : strongReply),
    where
  )
  assert.strictEqual(
    Option.getOrThrow(Decision.selected(decision)).name,
    expected.by === "weak" ? "weak" : "strong",
    where
  )
}

// ---------------------------------------------------------------------------------------------
// Generators
// ---------------------------------------------------------------------------------------------

const replyText: FastCheck.Arbitrary<string> = FastCheck.record({
  escalate: FastCheck.oneof(
    { arbitrary: FastCheck.boolean().map((b): unknown => b), weight: 8 },
    { arbitrary: FastCheck.constantFrom<unknown>("yes", 1, null), weight: 1 }
  ),
  reason: FastCheck.option(FastCheck.constantFrom("too hard", ""), { freq: 8 }),
  category: FastCheck.option(
    FastCheck.oneof(
      { arbitrary: FastCheck.constantFrom<unknown>("repetition", "drift", "capability_gap"), weight: 8 },
      { arbitrary: FastCheck.constantFrom<unknown>("sideways", 3), weight: 1 }
    ),
    { freq: 3 }
  ),
  newEvidence: FastCheck.option(
    FastCheck.oneof(
      { arbitrary: FastCheck.boolean().map((b): unknown => b), weight: 8 },
      { arbitrary: FastCheck.constant<unknown>("yes"), weight: 1 }
    ),
    { freq: 3 }
  ),
  extra: FastCheck.integer({ min: 0, max: 6 }).map((n) => n === 0),
  fenced: FastCheck.boolean()
}).map(({ category, escalate, extra, fenced, newEvidence, reason }) => {
  const value: Record<string, unknown> = { escalate }
  if (reason !== null) value.reason = reason
  if (category !== null) value.category = category
  if (newEvidence !== null) value.new_evidence = newEvidence
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

/** Well-formed verdicts, mostly with fresh evidence in one of two categories. */
const wellFormed: FastCheck.Arbitrary<EscalationOutcome> = FastCheck.record({
  escalate: FastCheck.boolean(),
  category: FastCheck.constantFrom("drift", "drift", "repetition"),
  new_evidence: FastCheck.integer({ min: 0, max: 5 }).map((n) => n !== 0)
}).map((verdict): EscalationOutcome => ({ _tag: "reply", text: JSON.stringify({ ...verdict, reason: "r" }) }))

/**
 * Longer schedules with strong-target outages, for de-escalating routes (mostly one session, half
 * the outcomes well-formed verdicts so that sessions reach and leave the strong phase).
 */
export const deescalationSchedule = FastCheck.array(
  FastCheck.record({
    session: FastCheck.option(FastCheck.constantFrom("s1", "s2"), { freq: 8 }),
    outcome: FastCheck.oneof(wellFormed, outcomeArb),
    strongFails: FastCheck.integer({ min: 0, max: 7 }).map((n) => n === 0)
  }),
  { minLength: 1, maxLength: 24, size: "max" }
)

/** De-escalation tables (`strongMaxCalls` unset or >= `strongMinCalls`). */
export const deescalationTable: FastCheck.Arbitrary<ModelDeescalation> = FastCheck.record({
  strongMinCalls: FastCheck.integer({ min: 1, max: 3 }),
  confirmations: FastCheck.integer({ min: 1, max: 3 }),
  extra: FastCheck.option(FastCheck.integer({ min: 0, max: 3 }), { freq: 2 }),
  weakCooldownCalls: FastCheck.integer({ min: 0, max: 2 })
}).map(({ confirmations, extra, strongMinCalls, weakCooldownCalls }) => ({
  strongMinCalls,
  confirmations,
  strongMaxCalls: extra === null ? undefined : strongMinCalls + extra,
  weakCooldownCalls
}))
