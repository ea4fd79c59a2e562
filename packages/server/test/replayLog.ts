/**
 * The routing log of real routes, for the policy replay tests: a route built over the real `Judge`
 * (and, for escalation routes, the weak call) on a scripted `UpstreamClient` and a memory
 * `SessionStore`, driven through a schedule of requests; each request's lines are written with the
 * routing log's own line builder (`RoutingLine.start` / `tally.respond`), as the server's pipeline
 * writes them.
 */
import { assert } from "@effect/vitest"
import type { Target } from "@switchyard-ts/client/Target"
import { ofChat, UpstreamClient } from "@switchyard-ts/client/UpstreamClient"
import {
  CircuitOpen,
  type ClientFailure,
  DeadlineExceeded,
  InvalidResponse,
  toHttp,
  TransportError,
  UpstreamStatus
} from "@switchyard-ts/protocol/Errors"
import type { ChatCompletion, Message } from "@switchyard-ts/protocol/OpenAiChat"
import * as CapabilityRoute from "@switchyard-ts/routing/CapabilityRoute"
import * as Continuation from "@switchyard-ts/routing/Continuation"
import * as Conversation from "@switchyard-ts/routing/Conversation"
import * as Decision from "@switchyard-ts/routing/Decision"
import * as Judge from "@switchyard-ts/routing/Judge"
import * as ReplayHost from "@switchyard-ts/routing/ReplayHost"
import type { Route } from "@switchyard-ts/routing/Route"
import * as RoutingFacts from "@switchyard-ts/routing/RoutingFacts"
import * as SessionIdentity from "@switchyard-ts/routing/SessionIdentity"
import * as SessionStore from "@switchyard-ts/routing/SessionStore"
import * as PolicyReplay from "@switchyard-ts/server/PolicyReplay"
import type * as RoutingLog from "@switchyard-ts/server/RoutingLog"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FastCheck from "effect/FastCheck"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import * as TestClock from "effect/TestClock"
import * as RoutingLine from "../src/internal/routingLine.js"

const client = {
  name: "sim",
  format: "openai_chat",
  baseUrl: "http://127.0.0.1:9/v1",
  apiKey: Option.none(),
  extraHeaders: {},
  maxRetries: 0,
  timeoutMs: Option.none()
} as const

/** A target on the (never called) `sim` client. */
export const target = (name: string, id: string): Target => ({ name, id, client, extraBody: {} })

/** The judge of every route under test. */
export const judgeTarget = target("judge", "judge-model")

/** What the scripted upstream does for one call. */
export type Reply =
  /** A completion whose first choice says `text`. */
  | { readonly _tag: "text"; readonly text: string }
  | { readonly _tag: "transport" }
  | { readonly _tag: "status"; readonly status: number; readonly contextWindowExceeded?: boolean }
  /** The client's breaker refuses the call (no request made). */
  | { readonly _tag: "refused" }
  /** A 2xx body that is not a chat completion. */
  | { readonly _tag: "invalid" }

/**
 * An upstream answering each call as `reply` (by the called target's model id) says, after
 * `delayMs` of the clock when that is not 0; a delayed call honours the deadline it is given, as the
 * upstream client does (`DeadlineExceeded` when it passes first).
 */
const scriptedUpstream = (
  reply: (targetId: string) => Reply,
  delayMs: (targetId: string) => number
): Layer.Layer<UpstreamClient> =>
  Layer.succeed(
    UpstreamClient,
    ofChat({
      complete: ({ target: called, timeoutMs }) => {
        const answer = answerOf(called.id, reply(called.id))
        const delay = delayMs(called.id)
        if (delay === 0) return answer
        const delayed = Effect.zipRight(Effect.sleep(delay), answer)
        return Option.match(timeoutMs ?? Option.none(), {
          onNone: () => delayed,
          onSome: (ms) =>
            Effect.timeoutFail(delayed, {
              duration: ms,
              onTimeout: () => new DeadlineExceeded({ target: called.id, afterMs: ms })
            })
        })
      },
      stream: () => Effect.dieMessage("not used"),
      countTokens: () => Effect.dieMessage("not used"),
      responsesAuxiliary: () => Effect.dieMessage("not used"),
      register: () => Effect.void,
      breakers: Effect.succeed([])
    })
  )

/** What the scripted upstream answers a call to `targetId` with. */
const answerOf = (targetId: string, step: Reply): Effect.Effect<ChatCompletion, ClientFailure> => {
  switch (step._tag) {
    case "transport":
      return Effect.fail(new TransportError({ target: targetId, reason: "connection refused" }))
    case "status":
      return Effect.fail(
        new UpstreamStatus({
          target: targetId,
          status: step.status,
          ...(step.contextWindowExceeded === true ? { contextWindowExceeded: true } : {})
        })
      )
    case "refused":
      return Effect.fail(new CircuitOpen({ target: targetId, client: client.name }))
    case "invalid":
      return Effect.fail(new InvalidResponse({ target: targetId, reason: "not a chat completion" }))
    case "text":
      return Effect.succeed({
        id: "c",
        object: "chat.completion",
        created: 0,
        model: targetId,
        choices: [{ index: 0, message: { role: "assistant", content: step.text }, finish_reason: "stop" }],
        usage: { prompt_tokens: 10, completion_tokens: 2, total_tokens: 12 }
      })
  }
}

/** A routing log that keeps its lines in memory. */
const memoryLog = () => {
  const lines: Array<RoutingLog.Line> = []
  const log = {
    enabled: true,
    unsafeAppend: (line: RoutingLog.Line) => {
      lines.push(line)
    },
    costOf: () => undefined,
    baselineCostOf: () => undefined,
    sessionStats: () => Effect.succeedNone
  }
  return { lines, log }
}

/** One request of a schedule. */
export interface Request {
  /** Its `x-switchyard-session-id`; null: none. */
  readonly session: string | null
  readonly messages: ReadonlyArray<Message>
  /** Sent with `x-switchyard-session-final: 1`. */
  readonly final?: boolean
  /** The answer's usage (`prompt_tokens`) when routing succeeded; none (0 tokens) when absent. */
  readonly tokens?: number
  /** It continues a Responses answer of this target (as the `Router` decides: `Continuation.decide`). */
  readonly continuation?: string
}

/** The route id every schedule addresses. */
export const routeId = "auto"

/** When each step's calls answer, on the TestClock (`logOf`). */
export interface Timing<S> {
  /** How long the judge takes to answer the step's call (0: at once). */
  readonly judgeDelayMs: (step: S) => number
  /**
   * How far the clock is moved once the step's request is sent, before its answer is written (at
   * least the route's `judge_timeout_ms`, so that it is decided by then); background calls settle
   * meanwhile.
   */
  readonly gapMs: (step: S) => number
}

/** No step takes any time: each request is decided at once. */
const instant: Timing<unknown> = { judgeDelayMs: () => 0, gapMs: () => 0 }

/**
 * Route `steps` in order through the route `build` makes (over the real `Judge`, a memory session
 * store and an upstream whose calls `reply` scripts, given the step being routed, answering the
 * judge after `timing.judgeDelayMs`), writing the routing log's lines of each request as the server
 * does; the lines in order. With a `timing`, each request is routed while the clock moves
 * `timing.gapMs`, its response line written after that, and the clock is then moved on until every
 * background call (late verdicts) has settled.
 */
export const logOf = <S>(
  build: Effect.Effect<Route, never, Judge.Judge | SessionStore.SessionStore | UpstreamClient | Scope.Scope>,
  steps: ReadonlyArray<S>,
  requestOf: (step: S) => Request,
  reply: (step: S, targetId: string) => Reply,
  timing: Timing<S> = instant
): Effect.Effect<ReadonlyArray<RoutingLog.Line>> =>
  Effect.scoped(Effect.gen(function*() {
    let current: S | undefined
    const upstream = scriptedUpstream(
      (targetId) => current === undefined ? { _tag: "transport" } : reply(current, targetId),
      (targetId) => current === undefined || targetId !== judgeTarget.id ? 0 : timing.judgeDelayMs(current)
    )
    const route = yield* build.pipe(
      Effect.provide(
        Layer.mergeAll(
          Judge.layer.pipe(Layer.provide(upstream)),
          upstream,
          SessionStore.layerMemory({ maxEntries: 100, ttlMs: 3_600_000 })
        )
      )
    )
    const { lines, log } = memoryLog()
    for (const step of steps) {
      current = step
      const startedMs = yield* Clock.currentTimeMillis
      const request = requestOf(step)
      const headers: Record<string, string> = {
        ...(request.session === null ? {} : { [SessionIdentity.sessionHeader]: request.session }),
        ...(request.final === true ? { [SessionIdentity.sessionFinalHeader]: "1" } : {})
      }
      const tally = RoutingLine.start(log, headers, routeId, Conversation.isUserTurn(request.messages))
      const routed = {
        body: { model: routeId, messages: request.messages },
        headers,
        sessionId: SessionIdentity.sessionIdOf(headers),
        ...(request.continuation === undefined ? {} : { continuation: { target: request.continuation } })
      }
      const routing = yield* Effect.fork(
        RoutingFacts.observe(tally.observer)(
          Option.match(Continuation.decide(route, routed), {
            onNone: () => route.decide(routed),
            onSome: (decision) => Effect.succeed<Decision.Decision>(decision)
          })
        )
      )
      const gap = timing.gapMs(step)
      if (gap > 0) yield* TestClock.adjust(gap)
      const exit = yield* Fiber.await(routing)
      const decision = Exit.isSuccess(exit) ? Option.some(exit.value) : Option.none()
      const failure = Exit.isSuccess(exit) ? Option.none() : Option.map(Cause.failureOption(exit.cause), toHttp)
      const tokens = request.tokens
      if (Exit.isSuccess(exit) && tokens !== undefined) {
        tally.answered(() => ({ prompt_tokens: tokens, completion_tokens: 0, total_tokens: tokens }))
      }
      const model = Option.match(Option.flatMap(decision, Decision.selected), { onNone: () => "", onSome: (t) => t.id })
      tally.respond({
        decision,
        model,
        wireFormat: "openai_chat",
        streaming: false,
        status: Exit.isSuccess(exit) ? 200 : Option.match(failure, { onNone: () => 500, onSome: (e) => e.status }),
        error: Exit.isSuccess(exit)
          ? ""
          : Option.match(failure, { onNone: () => "internal_error", onSome: (e) => e.code }),
        latencyMs: (yield* Clock.currentTimeMillis) - startedMs,
        endedAtMs: yield* Clock.currentTimeMillis,
        baselineModel: Option.isNone(decision)
          ? null
          : Option.match(route.baseline ?? Option.none(), { onNone: () => model, onSome: (t) => t.id })
      })
    }
    if (timing !== instant) yield* TestClock.adjust("1 hour")
    return lines
  }))

/** A judge call that yields no verdict: a call failure, a refusal by the breaker, or an unusable reply. */
export type Failure =
  | { readonly _tag: "transport" }
  | { readonly _tag: "status"; readonly status: 500 | 400 }
  | { readonly _tag: "refused" }
  | { readonly _tag: "garbage" }

export const failureArbitrary: FastCheck.Arbitrary<Failure> = FastCheck.oneof(
  FastCheck.constant({ _tag: "transport" as const }),
  FastCheck.record({
    _tag: FastCheck.constant("status" as const),
    status: FastCheck.constantFrom(500 as const, 400 as const)
  }),
  FastCheck.constant({ _tag: "refused" as const }),
  FastCheck.constant({ _tag: "garbage" as const })
)

/** The upstream's reply to a judge call that fails as `failure` says. */
export const failureReply = (failure: Failure): Reply =>
  failure._tag === "garbage" ? { _tag: "text", text: "not json" } : failure

/** What a capability judge (a capability route's, a stage router's classifier) does for one request. */
export type CapabilityJudge =
  | { readonly _tag: "verdict"; readonly p: number; readonly boundary: "supported" | "uncertain" | "unsupported" }
  | Failure

export const capabilityJudgeArbitrary: FastCheck.Arbitrary<CapabilityJudge> = FastCheck.oneof(
  FastCheck.record({
    _tag: FastCheck.constant("verdict" as const),
    p: FastCheck.constantFrom(0.1, 0.4, 0.5, 0.6, 0.75, 0.9),
    boundary: FastCheck.constantFrom("supported" as const, "uncertain" as const, "unsupported" as const)
  }),
  failureArbitrary
)

/** The upstream's reply to a capability judge call. */
export const capabilityJudgeReply = (judge: CapabilityJudge): Reply =>
  judge._tag === "verdict"
    ? {
      _tag: "text",
      text: JSON.stringify({
        crux: "c",
        primary_rule: judge.boundary === "supported" ? "SUP-1" : "LIM-2",
        capability_boundary: judge.boundary,
        p_solve: judge.p
      })
    }
    : failureReply(judge)

/** The settings of a capability route that a replay changes: its rules' settings and its posture. */
export interface CapabilitySettings extends CapabilityRoute.Settings {
  readonly judgeFailure: "error" | "fail_open"
}

export const capabilitySettingsArbitrary: FastCheck.Arbitrary<CapabilitySettings> = FastCheck.record({
  baseThreshold: FastCheck.constantFrom(0.3, 0.5, 0.7),
  thresholdStep: FastCheck.constantFrom(0, 0.1),
  classifyTrigger: FastCheck.constantFrom("every_request" as const, "user_turn" as const, "new_session" as const),
  judgeFailure: FastCheck.constantFrom("error" as const, "fail_open" as const)
})

/**
 * Assert that replaying `lines` with `replayer` (the settings that wrote them) reproduces every
 * logged outcome: `requests` requests, none changed, both sides equal. No lines: no report.
 */
export const assertReproduced = (
  lines: ReadonlyArray<RoutingLog.Line>,
  replayer: PolicyReplay.Replayer,
  requests: number
): Effect.Effect<boolean> =>
  Effect.gen(function*() {
    const [report] = yield* PolicyReplay.replay(lines, new Map([[routeId, replayer]]))
    if (requests === 0) return report === undefined
    // Line by line first (reasons included), for a readable failure.
    const responses = lines.filter((line): line is RoutingLog.ResponseLine => line.kind === "response")
    const step = replayer.start()
    const late = ReplayHost.lateVerdicts()
    const replayed = yield* Effect.forEach(lines, (line) => {
      if (line.kind === "response") return Effect.asSome(step(line, late))
      late.add(line)
      return Effect.succeedNone
    })
    assert.deepStrictEqual(replayed.flatMap(Option.toArray), responses.map(replayer.logged))
    assert.isDefined(report)
    assert.strictEqual(report?.requests, requests)
    assert.strictEqual(report?.other_algorithm, 0)
    assert.deepStrictEqual(report?.replayed, report?.logged)
    assert.strictEqual(report?.changed, 0)
    return true
  })

/** The other deployment of the command tests: the capability route `auto` with `judgeFailure` (and `more` keys). */
export const otherToml = (judgeFailure: "error" | "fail_open", more = "") =>
  `schema_version = 1
[llm_clients.sim]
format = "openai_chat"
base_url = "http://127.0.0.1:9/v1"
[targets.judge]
id = "judge-model"
llm_client = "sim"
[targets.weak]
id = "weak-model"
llm_client = "sim"
[targets.strong]
id = "strong-model"
llm_client = "sim"
[routes.auto]
id = "auto"
type = "llm_classifier"
classifier_target = "judge"
weak_target = "weak"
strong_target = "strong"
base_threshold = 0.7
judge_failure = "${judgeFailure}"
${more}`

/**
 * The capability route `auto` of the replay tests (judge `judge-model`, weak `weak-model`, strong
 * `strong-model`) under `settings`; `judgeTimeoutMs` and late verdicts when given.
 */
export const capabilityRoute = (
  settings: CapabilitySettings,
  timing:
    & Pick<CapabilityRoute.Options, "judgeTimeoutMs">
    & Partial<Pick<CapabilityRoute.Options, "lateVerdictMs" | "maxLateVerdicts">> = {
      judgeTimeoutMs: Option.none()
    }
) => CapabilityRoute.make(capabilityOptions(settings, timing))

/** The options of {@link capabilityRoute}. */
export const capabilityOptions = (
  settings: CapabilitySettings,
  timing:
    & Pick<CapabilityRoute.Options, "judgeTimeoutMs">
    & Partial<Pick<CapabilityRoute.Options, "lateVerdictMs" | "maxLateVerdicts">> = {
      judgeTimeoutMs: Option.none()
    }
): CapabilityRoute.Options => ({
  id: routeId,
  name: routeId,
  judge: judgeTarget,
  prompt: Option.none(),
  responseFormatType: "json_schema",
  maxOutputTokens: 64,
  recentTurnWindow: Option.none(),
  weak: target("weak", "weak-model"),
  strong: target("strong", "strong-model"),
  messageHashFallback: false,
  ...timing,
  ...settings
})

/** The replayer of a capability route under `settings` (the route {@link capabilityRoute} builds). */
export const capabilityReplayer = (settings: CapabilitySettings): PolicyReplay.Replayer =>
  PolicyReplay.replayerOf(CapabilityRoute.replayable(capabilityOptions(settings)))
