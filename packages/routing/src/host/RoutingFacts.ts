/**
 * What routing tells an observer about one request, for a routing log: every judge call made while
 * routing it (model, outcome, latency, token usage) and, for a classifier route, the facts a policy
 * replay needs besides the evidence (trigger, posture, whether the judge was consulted, the session's
 * stored decision before and after, the tier chosen; an escalation route's too), a stage
 * router's signal facts, and an advisor gate's budget, trigger and consultation.
 *
 * The observer is a service of the request, {@link Reporter}: everything that reports requires it,
 * and the `Router` provides it per request — the host's observer (the server's routing log), joined
 * with the router's own collection of routing-time calls for the stats. Observers are synchronous
 * and must not block: they only enqueue.
 */
import type { ChatCompletion, Usage } from "@switchyard-ts/protocol/OpenAiChat"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import { dual } from "effect/Function"
import type * as Option from "effect/Option"
import type * as Evidence from "../Evidence.js"
import type * as LateVerdict from "../judge/LateVerdict.js"
import type * as Posture from "../judge/Posture.js"
import type * as ClassifierCascade from "../routes/classifier/ClassifierCascade.js"
import type { SessionDecision } from "../sessions/SessionStore.js"
import type * as RouteHost from "./RouteHost.js"

/**
 * How one judge call ended: `ok` (a usable verdict), the bounded reason of its failure (the
 * evidence's `Reason`: `timeout`, `transport`, `upstream_5xx`, `upstream_non_5xx`,
 * `invalid_response`, `parse_error`), or `interrupted` (the request was cut while it ran). A call
 * refused by an open circuit breaker made no request and is not reported.
 */
export type JudgeOutcome = "ok" | Evidence.Reason | "interrupted"

/** One judge call made while routing a request. */
export interface JudgeCall {
  /** The judge target's model id. */
  readonly judgeModel: string
  readonly outcome: JudgeOutcome
  /** From the call's start to its verdict (or failure), retries included. */
  readonly latencyMs: number
  /** When it ended, in epoch milliseconds of the `Clock`. */
  readonly endedAtMs: number
  /** The judge's reported token usage; none when it answered without one or did not answer. */
  readonly usage: Option.Option<Usage>
  /**
   * Late verdicts (`late_verdict_ms`) only, a call that missed its request's deadline: reported once
   * at the deadline as the request's own judge fact (`outcome` `timeout`, `latencyMs` the time waited)
   * marked `continues` (it goes on in the background) or `dropped` (the route already had
   * `max_late_verdicts` in the background: it was aborted); a continuing call is reported again when
   * it settles, marked with what it came to (`stored`, `superseded`, `invalid`, `failed`, `expired`).
   * Absent for every other call.
   */
  readonly late?: "continues" | LateVerdict.Outcome
  /** A late call's valid verdict (`stored`, `superseded`): the evidence it would have given its request. */
  readonly verdict?: Evidence.Evidence
}

/** What a classifier route decided besides its evidence. */
export interface Classified {
  readonly trigger: ClassifierCascade.ClassifyTrigger
  /** `judge_failure`. */
  readonly posture: Posture.Posture
  /** Whether the judge was consulted for this request (false: the stored decision was reused). */
  readonly consulted: boolean
  /** The session's stored decision before this request (none: no session identity or nothing stored). */
  readonly storedBefore: Option.Option<SessionDecision>
  /** The stored decision after it (a valid verdict replaces it; nothing else does). */
  readonly storedAfter: Option.Option<SessionDecision>
  /**
   * The capability tier the decision went to (`weak` / `strong`); none for a custom classifier. An
   * escalation route whose weak call failed the request (no decision) reports `weak`.
   */
  readonly tier: Option.Option<string>
}

/**
 * What an advisor route's gate did with a request, for a replay: the scope's budget before it, the
 * trigger that asked for a review (none: the scope was spent, or the turn did not trigger, or the
 * executor failed first), and how the consultation came out (none without one).
 */
export interface Advised {
  /** `posture` of the route's `fail_open`. */
  readonly posture: Posture.Posture
  /** Reviews the request's scope had used before it. */
  readonly reviewsBefore: number
  /** Failed consults of the scope before it. */
  readonly failedConsultsBefore: number
  readonly trigger: Option.Option<Evidence.AdvisorTrigger>
  /** `approve`, `redo`, or why the consultation gave no verdict (`parse_error`: unparseable). */
  readonly consult: Option.Option<"approve" | "redo" | Evidence.Reason>
}

/**
 * What a model call made while routing was for: a judge's consultation (`judge`), an advisor's
 * review (`advisor_review`), or a routing-time turn (`RouteHost.CallKind`: an escalation route's
 * `weak_turn`, `strong_turn`, `strong_fallback_turn`; an advisor route's `executor_turn`,
 * `redo_turn`).
 */
export type RoutingCallKind = "judge" | "advisor_review" | RouteHost.CallKind

/**
 * A model call made while routing, as one request's accounting needs it: its kind, model, outcome,
 * latency, usage and — when it answered — its reply, so that the call whose reply became the
 * request's answer is told from the ones that did not (`Stats.Recorder.settle`, the routing log's
 * lines). A call its client's breaker refused made no request and is not reported.
 */
export interface RoutingCall {
  readonly kind: RoutingCallKind
  readonly model: string
  readonly ok: boolean
  /** The error code of its failure (`Errors.toHttp`'s `code`); absent when it answered. */
  readonly error?: string
  readonly latencyMs: number
  /** When it ended, in epoch milliseconds of the `Clock`. */
  readonly endedAtMs: number
  readonly usage: Usage | null | undefined
  /** Its reply, when it answered with a completion. */
  readonly reply?: ChatCompletion
}

/** Whether `call` is the one whose reply is `answer` (the request's answer, when the route produced it). */
export const isAnswer = (call: RoutingCall, answer: ChatCompletion | undefined): boolean =>
  answer !== undefined && call.reply === answer

/**
 * What a route type tells of one request's routing besides its calls, by kind: a classifier's or
 * escalation route's session facts (`Classified`), a `stage_router` turn's signal facts (`Stage`,
 * told before its classifier — if any — is consulted: a request the classifier's `error` posture
 * then fails has no evidence, yet a replay needs them), an advisor gate's budget and consultation
 * (`Advised`). A route type with facts of its own adds a kind here, not a method to the observer.
 */
export type RouteFacts =
  | ({ readonly _tag: "Classified" } & Classified)
  | { readonly _tag: "Stage"; readonly facts: Evidence.StageFacts }
  | ({ readonly _tag: "Advised" } & Advised)

/** Receives the facts of one request's routing; each method only records (never blocks). */
export interface Observer {
  readonly judgeCall: (call: JudgeCall) => void
  /** A route type's facts of the request (see {@link RouteFacts}). */
  readonly routed: (facts: RouteFacts) => void
  /** A model call made while routing, with its usage (the `Router` settles them into the stats). */
  readonly routingCall: (call: RoutingCall) => void
}

/**
 * The observer of one request's routing: a requirement of everything that reports (`Route.decide`,
 * the `Judge`'s consultations), so a route's type says that it reports. The `Router` provides one
 * per request ({@link observe}); a caller that wants nothing provides {@link ignored}.
 */
export class Reporter extends Context.Tag("@switchyard-ts/routing/RoutingFacts/Reporter")<Reporter, Observer>() {}

/** An observer that records nothing. */
export const ignored: Observer = {
  judgeCall: () => {},
  routed: () => {},
  routingCall: () => {}
}

/** Run `self` (one request's routing) with `observer` receiving its facts. */
export const observe: {
  (observer: Observer): <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E, Exclude<R, Reporter>>
  <A, E, R>(self: Effect.Effect<A, E, R>, observer: Observer): Effect.Effect<A, E, Exclude<R, Reporter>>
} = dual(
  2,
  <A, E, R>(self: Effect.Effect<A, E, R>, observer: Observer): Effect.Effect<A, E, Exclude<R, Reporter>> =>
    Effect.provideService(self, Reporter, observer)
)

/** Hand the request's observer a fact. */
export const report = (tell: (observer: Observer) => void): Effect.Effect<void, never, Reporter> =>
  Effect.flatMap(Reporter, (observer) => Effect.sync(() => tell(observer)))
