/**
 * The `llm_classifier` route in `escalation` mode: serve the weak target, judge the finished weak
 * turn, and latch the session to the strong target after `confirmations` consecutive escalate
 * verdicts.
 *
 * Per request (requests of one session are routed one at a time, judge call included):
 *
 * 1. A latched session routes to strong (fallback `[weak]`) with no judge call (evidence `latched`).
 * 2. Otherwise the weak target answers, buffered, one candidate. A context overflow (400) or a
 *    transport failure routes to strong instead (`weak_failed`, streak unchanged); any other weak
 *    failure fails the request as it is.
 * 3. The judge reads a condensed transcript of the conversation and the weak reply (`Escalation`)
 *    and answers `{"escalate", "reason"}`, through `Consultation.run` with the route's `Posture`:
 *    - escalate → streak + 1; at `confirmations` the session latches, the weak reply is discarded
 *      and strong answers (fallback `[weak]`); below it the weak reply is served;
 *    - decline → streak 0, the weak reply is served;
 *    - no verdict (an invalid reply under both postures; a call failure under `fail_open`; an open
 *      breaker under `fail_open`) → the weak reply is served, the streak is unchanged, one
 *      fail-open count (evidence `retained` when the session has state, else `fail-open`;
 *      `circuit-open` for the breaker);
 *    - a call failure under `error` → `JudgeUnavailable` (502 / 504; 503 for an open breaker).
 *
 * Only a valid verdict writes the session's state (its streak, or the latch). Without a session id
 * the state lives for one request only (so only `confirmations = 1` can escalate). A request whose
 * headers say `session_final` (`x-switchyard-session-final`, else `x-dynamo-session-final`) removes
 * the session's state once it is routed: the next request of that id starts unlatched, streak 0. The weak reply
 * travels in an `Answered` decision: the `Router` replays it to streaming callers.
 */
import type { Target } from "@switchyard-ts/client/Target"
import { UpstreamClient } from "@switchyard-ts/client/UpstreamClient"
import { type ClientFailure, JudgeUnavailable } from "@switchyard-ts/protocol/Errors"
import type { ChatCompletion } from "@switchyard-ts/protocol/OpenAiChat"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Consultation from "./Consultation.js"
import * as Decision from "./Decision.js"
import type * as Evidence from "./Evidence.js"
import * as ClassifierRoute from "./internal/classifierRoute.js"
import { type EscalationJudgeOptions, Judge } from "./Judge.js"
import * as Metrics from "./Metrics.js"
import * as Posture from "./Posture.js"
import { distinctTargets, type Route, type RoutedRequest } from "./Route.js"
import * as RoutingFacts from "./RoutingFacts.js"
import * as SessionIdentity from "./SessionIdentity.js"
import { type SessionDecision, SessionStore } from "./SessionStore.js"

type EscalationEvidence = typeof Evidence.Escalation.Type

/** Options of an escalation route (its TOML keys, validated). */
export interface Options extends EscalationJudgeOptions {
  readonly id: string
  readonly name: string
  readonly weak: Target
  readonly strong: Target
  /** `escalation.confirmations` >= 1 (default 2): consecutive escalate verdicts that latch a session. */
  readonly confirmations: number
  readonly judgeFailure: Posture.Posture
  readonly contextWindow?: Option.Option<number>
  readonly toolCalling?: Option.Option<boolean>
}

/** A session's escalation state. */
export type State =
  | { readonly _tag: "Unlatched"; readonly streak: number }
  | { readonly _tag: "Latched" }

/** The state a stored decision holds; none stored is a fresh session (streak 0). */
export const stateOf = (stored: Option.Option<SessionDecision>, strong: Target): State =>
  Option.match(stored, {
    onNone: () => ({ _tag: "Unlatched", streak: 0 }),
    onSome: (decision) =>
      decision.target === strong.name && decision.streak === undefined
        ? { _tag: "Latched" }
        : { _tag: "Unlatched", streak: decision.streak ?? 0 }
  })

/** The state after a valid verdict. */
export const next = (streak: number, escalate: boolean, confirmations: number): State => {
  if (!escalate) return { _tag: "Unlatched", streak: 0 }
  return streak + 1 >= confirmations ? { _tag: "Latched" } : { _tag: "Unlatched", streak: streak + 1 }
}

/** The settings the decision rules read (a route's options, or a deployment's route spec). */
export type Settings = Pick<Options, "confirmations">

/** Which target answers a request, why, and the state to store (none: keep what is stored). */
export interface Decided {
  /** `strong`: the strong target answers; `weak`: the weak target's reply is served. */
  readonly tier: "weak" | "strong"
  readonly evidence: Evidence.Evidence
  readonly store: Option.Option<State>
}

const escalationEvidence = (
  settings: Settings,
  verdict: EscalationEvidence["verdict"],
  streak: number
): EscalationEvidence => ({ source: "escalation", verdict, streak, confirmations: settings.confirmations })

/** A latched session: strong, no weak call, no judge call (evidence `latched`). */
export const latched = (settings: Settings): Decided => ({
  tier: "strong",
  evidence: escalationEvidence(settings, "latched", settings.confirmations),
  store: Option.none()
})

/** The weak call failed in a way that routes to strong (context overflow, transport): `weak_failed`, streak unchanged. */
export const weakFailed = (settings: Settings, streak: number): Decided => ({
  tier: "strong",
  evidence: escalationEvidence(settings, "weak_failed", streak),
  store: Option.none()
})

/**
 * After the judge read the weak turn of an unlatched session with `streak` (`hasState`: the session
 * had stored state): a verdict moves the streak ({@link next}) and is stored — latched, strong
 * answers; else the weak reply is served. Without a verdict the weak reply is served and nothing
 * is stored (`retained` when the session had state, else `fail-open`; `circuit-open` for the breaker).
 */
export const judged = (
  settings: Settings,
  judgeModel: string,
  streak: number,
  hasState: boolean,
  outcome: Consultation.Outcome<boolean>
): Decided => {
  if (outcome._tag === "Verdict") {
    const escalate = outcome.verdict
    const after = next(streak, escalate, settings.confirmations)
    return after._tag === "Latched"
      ? { tier: "strong", evidence: escalationEvidence(settings, "escalate", streak + 1), store: Option.some(after) }
      : {
        tier: "weak",
        evidence: escalationEvidence(settings, escalate ? "escalate" : "decline", after.streak),
        store: Option.some(after)
      }
  }
  const reason = outcome.reason
  return {
    tier: "weak",
    evidence: reason === "circuit_open"
      ? { source: "circuit-open", judge_model: judgeModel }
      : hasState
      ? { source: "retained", reason, judge_model: judgeModel }
      : { source: "fail-open", reason, judge_model: judgeModel },
    store: Option.none()
  }
}

const refusedByBreaker = (exit: Exit.Exit<unknown, ClientFailure>): boolean =>
  Exit.isFailure(exit) && Option.exists(Cause.failureOption(exit.cause), (error) => error._tag === "CircuitOpen")

/** A weak failure that routes to strong instead of failing the request. */
const strongInstead = (error: ClientFailure): boolean =>
  error._tag === "TransportError" || (error._tag === "UpstreamStatus" && error.contextWindowExceeded === true)

/** What the session store holds for a state. */
const toStored = (options: Options, state: State): SessionDecision =>
  state._tag === "Latched"
    ? { target: options.strong.name, tier: "strong" }
    : { target: options.weak.name, tier: "weak", streak: state.streak }

/** What one escalation route routes requests with. */
interface Shell {
  readonly options: Options
  readonly judge: Judge["Type"]
  readonly store: SessionStore["Type"]
  readonly upstream: UpstreamClient["Type"]
  readonly posture: Posture.Combinator
  readonly info: Decision.RouteInfo
  readonly recordWithoutVerdict: ClassifierRoute.RecordWithoutVerdict
}

/** The weak target's reply; none when its failure routes to strong instead. */
const callWeak = (shell: Shell, request: RoutedRequest) =>
  Effect.flatMap(
    Clock.currentTimeMillis,
    (start) =>
      shell.upstream.complete({
        target: shell.options.weak,
        body: request.body,
        headers: request.headers,
        completion: true
      }).pipe(
        Effect.onExit((exit) =>
          refusedByBreaker(exit) ?
            Effect.void :
            Effect.flatMap(Clock.currentTimeMillis, (end) =>
              Metrics.recordLlmCall(
                "llm_task_classifier",
                shell.options.weak.id,
                Exit.isSuccess(exit) ? "ok" : "error",
                end - start,
                Exit.isSuccess(exit) ? exit.value.usage : undefined
              ))
        ),
        Effect.map(Option.some),
        Effect.catchIf(strongInstead, () => Effect.succeedNone)
      )
  )

/** Tell the request's observer the session's state before and after, and the tier that answers. */
const report = (
  options: Options,
  consulted: boolean,
  storedBefore: Option.Option<SessionDecision>,
  storedAfter: Option.Option<SessionDecision>,
  tier: Option.Option<"weak" | "strong">
) =>
  RoutingFacts.report((observer) =>
    observer.classified({
      trigger: "every_request",
      posture: options.judgeFailure,
      consulted,
      storedBefore,
      storedAfter,
      tier
    })
  )

/** The decision of what the rules decided: strong answers, or the weak reply is served. */
const decisionOf = (shell: Shell, decided: Decided, reply: Option.Option<ChatCompletion>): Decision.Decision =>
  decided.tier === "weak" && Option.isSome(reply)
    ? Decision.answered({
      route: shell.info,
      answer: reply.value,
      servedBy: Option.some(shell.options.weak),
      evidence: decided.evidence
    })
    : Decision.routed({
      route: shell.info,
      selected: shell.options.strong,
      fallbacks: [shell.options.weak],
      evidence: decided.evidence
    })

/**
 * One request of a session (`key`): its state, then the rules — latched, or the weak call and the
 * judge's verdict on it through the posture — and what they decide stored, reported and decided.
 */
const decideFor = (shell: Shell, request: RoutedRequest, key: Option.Option<string>) =>
  Effect.gen(function*() {
    const { options, store } = shell
    const judgeModel = options.judge.id
    const stored = Option.isSome(key) ? yield* store.get(key.value) : Option.none()
    const state = stateOf(stored, options.strong)
    /** Apply what the rules decided: store its state (with a session), report, decide. */
    const apply = (decided: Decided, consulted: boolean, reply: Option.Option<ChatCompletion>) =>
      Effect.gen(function*() {
        const written = Option.flatMap(decided.store, (after) => Option.map(key, () => toStored(options, after)))
        if (Option.isSome(key) && Option.isSome(written)) yield* store.put(key.value, written.value)
        yield* report(options, consulted, stored, Option.orElse(written, () => stored), Option.some(decided.tier))
        return decisionOf(shell, decided, reply)
      })
    if (state._tag === "Latched") return yield* apply(latched(options), false, Option.none())
    const streak = state.streak

    // A weak failure that fails the request is reported too: the routing log's line then says the
    // store was read (a replay learns that a `session_final` ended the session before it).
    const reply = yield* callWeak(shell, request).pipe(
      Effect.tapError(() => report(options, false, stored, stored, Option.some("weak")))
    )
    if (Option.isNone(reply)) return yield* apply(weakFailed(options, streak), false, Option.none())

    const outcome = yield* shell.judge.escalate({
      options,
      messages: request.body.messages,
      reply: reply.value,
      headers: request.headers
    }).pipe(
      Effect.map((verdict) => verdict.escalate),
      Consultation.run(shell.posture),
      Effect.mapError((failure) => new JudgeUnavailable({ judgeModel, failure })),
      Effect.tapError(() => report(options, true, stored, stored, Option.none()))
    )
    if (outcome._tag === "WithoutVerdict") {
      yield* shell.recordWithoutVerdict(judgeModel, outcome.reason)
    }
    const consulted = outcome._tag === "Verdict" || outcome.reason !== "circuit_open"
    return yield* apply(judged(options, judgeModel, streak, Option.isSome(stored), outcome), consulted, reply)
  })

/** Build an escalation route over the `Judge`, the `SessionStore` and the `UpstreamClient` (the weak call). */
export const make = (options: Options): Effect.Effect<Route, never, Judge | SessionStore | UpstreamClient> =>
  Effect.gen(function*() {
    const shell: Shell = {
      options,
      judge: yield* Judge,
      store: yield* SessionStore,
      upstream: yield* UpstreamClient,
      posture: Posture.fromConfig(options.judgeFailure),
      info: { id: options.id, name: options.name, algorithm: "llm_task_classifier" },
      recordWithoutVerdict: ClassifierRoute.withoutVerdict(options.id)
    }
    const withSessionLock = ClassifierRoute.sessionLocks()
    const route: Route = {
      id: options.id,
      name: options.name,
      algorithm: "llm_task_classifier",
      targets: distinctTargets([options.weak, options.strong]),
      contextWindow: options.contextWindow ?? Option.none(),
      toolCalling: options.toolCalling ?? Option.none(),
      decide: (request) => {
        const key = Option.map(request.sessionId, (id) => `${options.id}\u0000s:${id}`)
        const forget = Option.match(key, { onNone: () => Effect.void, onSome: shell.store.remove })
        return withSessionLock(
          key,
          SessionIdentity.forgetOnFinal(decideFor(shell, request, key), request.headers, forget)
        )
      }
    }
    return route
  })
