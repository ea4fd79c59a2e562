/**
 * The host of a route program: everything a route's decision needs from outside its own rules.
 *
 * A judge-using route type writes its decision once, as a program — an Effect that requires
 * {@link RouteHost} — and never calls a model, reads a store or looks at the wall clock itself. It
 * asks the host to:
 *
 * - **consult** a judge ({@link Question}: a capability, custom, escalation or advisor question);
 *   the answer or the consultation's failure comes back, and the program puts it through its
 *   posture (`Consultation.run`);
 * - make a **routing-time model call** ({@link ModelCall}: an escalation route's weak or strong turn,
 *   an advisor route's executor turns);
 * - read and write its **state** ({@link Space}: the session store, or state of its own kept in the
 *   process), one key at a time, **exclusively** per key when it must;
 * - read the request's **signals** ({@link Signals}: whether it is a user turn, a stage router's
 *   reading of the tool history, an advisor's trigger);
 * - **record** live-only telemetry (metrics, rate-limited WARN lines).
 *
 * Three hosts serve the same programs: the live host (`LiveHost`: the `Judge`, the `UpstreamClient`
 * and the `SessionStore`), the replay host (`ReplayHost`: one routing-log record at a time, a logged
 * failure put back as a failure, a missing fact interrupting the program: "unknown"), and a shadow
 * judge's host. The program's facts (`RoutingFacts`) go to the request's `RoutingFacts.Reporter`.
 */
import type { Target } from "@switchyard-ts/client/Target"
import type { ClientFailure } from "@switchyard-ts/protocol/Errors"
import type { ChatCompletion, ChatCompletionRequest } from "@switchyard-ts/protocol/OpenAiChat"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as Decision from "../Decision.js"
import type * as Evidence from "../Evidence.js"
import type * as JsonPointer from "../judge/JsonPointer.js"
import type { CustomJudgeOptions, EscalationJudgeOptions, JudgeOptions } from "../judge/Judge.js"
import type * as JudgeChain from "../judge/JudgeChain.js"
import type * as Verdict from "../judge/Verdict.js"
import type { RoutedRequest, RouteFailure } from "../Route.js"
import type * as AdvisorReview from "../routes/advisor/AdvisorReview.js"
import type * as EscalationJudge from "../routes/escalation/EscalationJudge.js"
import type * as StageSignals from "../routes/stage/StageSignals.js"
import type { SessionDecision } from "../sessions/SessionStore.js"
import type * as RoutingFacts from "./RoutingFacts.js"
import type * as RoutingRecord from "./RoutingRecord.js"

// ---------------------------------------------------------------------------------------------
// Questions to a judge

/** What a capability verdict's rules read: its p_solve and capability boundary. */
export type Judgement = Pick<Verdict.Verdict, "p_solve" | "capability_boundary">

/** What an escalation verdict's rules read. */
export type Vote = Pick<EscalationJudge.EscalationVerdict, "escalate" | "category" | "new_evidence">

/**
 * A judge answer that arrives after its request's deadline (`late_verdict_ms`): stored for `key` as
 * `store(answer)` unless a newer decision was stored for it meanwhile (the live host's business; the
 * replay host finds such verdicts in the log).
 */
export interface LateStore<A> {
  readonly key: string
  readonly store: (answer: A) => SessionDecision
  /** The evidence the answer would have given its request (the late call's log line). */
  readonly evidence: (answer: A) => Evidence.Evidence
}

/** The questions a program asks a judge, by kind. */
export interface Questions {
  /** A capability judge: may the weak target solve the task? */
  readonly Capability: {
    readonly options: JudgeOptions
    readonly request: RoutedRequest
    readonly late: Option.Option<LateStore<Judgement>>
  }
  /** A custom classifier judge: which label does the route's prompt pick (read at `selector`)? */
  readonly Custom: {
    readonly options: CustomJudgeOptions
    readonly selector: JsonPointer.JsonPointer
    readonly request: RoutedRequest
    readonly late: Option.Option<LateStore<Option.Option<string>>>
  }
  /** An escalation judge on a finished turn (the weak target's, or the strong one's in a strong phase). */
  readonly Escalation: {
    readonly options: EscalationJudgeOptions
    readonly request: RoutedRequest
    readonly reply: ChatCompletion
    readonly turn: "weak" | "strong"
    readonly phase: Option.Option<EscalationJudge.Phase>
  }
  /** An advisor on the executor's proposed turn. */
  readonly Advisor: {
    readonly options: AdvisorReview.ReviewOptions
    readonly request: RoutedRequest
    readonly turn: ChatCompletion
    readonly trigger: Evidence.AdvisorTrigger
  }
}

/** What each kind of question is answered with. */
export interface Answers {
  readonly Capability: Judgement
  /** The string the verdict names at the selector, if any (the rules abstain on anything else). */
  readonly Custom: Option.Option<string>
  readonly Escalation: Vote
  readonly Advisor: AdvisorReview.Verdict
}

/** The kinds of question. */
export type QuestionKind = keyof Questions

/** One question to a judge, of kind `K`. */
export type Question<K extends QuestionKind = QuestionKind> = {
  readonly [P in K]: Questions[P] & { readonly _tag: P }
}[K]

/** How a host answers each kind of question (its `consult`, one handler per kind). */
export type Consultants<R = RoutingFacts.Reporter> = {
  readonly [K in QuestionKind]: (
    question: Question<K>
  ) => Effect.Effect<JudgeChain.Chained<Answers[K]>, JudgeChain.Unanswered, R>
}

/** Ask `question` of the host's `consultants` (the handler of its kind). */
export const dispatch = <K extends QuestionKind, R>(
  consultants: Consultants<R>,
  question: Question<K>
): Effect.Effect<JudgeChain.Chained<Answers[K]>, JudgeChain.Unanswered, R> => {
  const handler: (
    question: Question<K>
  ) => Effect.Effect<JudgeChain.Chained<Answers[K]>, JudgeChain.Unanswered, R> = consultants[question._tag]
  return handler(question)
}

// ---------------------------------------------------------------------------------------------
// Routing-time model calls

/**
 * What a routing-time model call is for:
 * - `weak_turn`: an escalation route's weak target answers a turn its judge then reads;
 * - `strong_turn`: an escalation route's strong target answers a turn of a judged strong phase;
 * - `strong_fallback_turn`: the weak target answers that turn after the strong target failed;
 * - `executor_turn`: an advisor route's executor answers a turn the gate may review;
 * - `redo_turn`: the executor answers again after the advisor's REDO.
 */
export type CallKind = "weak_turn" | "strong_turn" | "strong_fallback_turn" | "executor_turn" | "redo_turn"

/** One routing-time model call: buffered, one candidate, no fallback (the program falls back itself). */
export interface ModelCall {
  readonly kind: CallKind
  readonly target: Target
  readonly body: ChatCompletionRequest
  readonly headers: Readonly<Record<string, string>>
}

// ---------------------------------------------------------------------------------------------
// State

/** A program's state of one kind, by key. Never fails. */
export interface Store<S> {
  readonly get: (key: string) => Effect.Effect<Option.Option<S>>
  readonly put: (key: string, value: S) => Effect.Effect<void>
  readonly remove: (key: string) => Effect.Effect<void>
  /**
   * Read and write a key in one step: `f` of what is stored gives a result and what to store (none:
   * remove the key). Atomic in a store of the process; over a shared store, a read then a write.
   */
  readonly modify: <A>(key: string, f: (stored: Option.Option<S>) => readonly [A, Option.Option<S>]) => Effect.Effect<A>
}

/** A store's `modify` as a read then a write (a store that cannot do better). */
export const modifyByParts = <S>(
  parts: Pick<Store<S>, "get" | "put" | "remove">
): Store<S>["modify"] =>
<A>(key: string, f: (stored: Option.Option<S>) => readonly [A, Option.Option<S>]) =>
  Effect.flatMap(parts.get(key), (stored) => {
    const [result, next] = f(stored)
    return Effect.as(
      Option.match(next, { onNone: () => parts.remove(key), onSome: (value) => parts.put(key, value) }),
      result
    )
  })

/** What a host opens a {@link Space}'s store with. */
export interface StoreOpener {
  /** The session store (`SessionStore`: memory or shared), as the host keeps it. */
  readonly sessions: Store<SessionDecision>
  /** A store of the host's own, in this process: at most `bound` keys, the least recently used going first. */
  readonly local: <S>(bound: number) => Store<S>
  /**
   * The host's view of `store`: the replay host forgets a key when the record being replayed says the
   * logged run found nothing for it (`forgotten`), and stores a verdict the log says landed late
   * (`late`); the live host returns `store` as it is.
   */
  readonly view: <S>(store: Store<S>, rules: ReplayRules<S>) => Store<S>
}

/** How a space's state shows in the routing log (what the replay host reads back). */
export interface ReplayRules<S> {
  /** Whether the logged run found nothing stored for the request's key. */
  readonly forgotten: (record: RoutingRecord.RoutingRecord) => boolean
  /**
   * The state a verdict the log says was stored late leaves, from the late call's logged evidence;
   * none when the evidence holds no answer of the space's question. Absent: no late verdicts.
   */
  readonly late?: (evidence: Evidence.Evidence) => Option.Option<S>
}

/**
 * How the answer of each kind of classifier question shows in the evidence it gave its request (a
 * routing log's, a late call's): what a replay reads back as the judge's answer. Undefined: the
 * evidence holds no such answer.
 */
export const answerIn: {
  readonly [K in "Capability" | "Custom"]: (evidence: Evidence.Evidence) => Answers[K] | undefined
} = {
  Capability: (evidence) =>
    evidence.source === "llm-classifier" && "score" in evidence
      ? { p_solve: evidence.score, capability_boundary: evidence.boundary }
      : undefined,
  /** A custom verdict: the label it named (whatever the route then did with it), or none when it abstained. */
  Custom: (evidence) =>
    evidence.source === "llm-classifier" && "label" in evidence
      ? Option.some(evidence.label)
      : evidence.source === "abstained"
      ? Option.none()
      : undefined
}

/**
 * One kind of state a route program keeps: where a live host keeps it and how the routing log shows
 * it. Each host opens it once and keeps the store for as long as the host lives.
 */
export interface Space<S> {
  readonly open: (opener: StoreOpener) => Store<S>
}

/** A space opened by `open`, once per opener (a host's): the store is kept for as long as the opener lives. */
const memoized = <S>(open: (opener: StoreOpener) => Store<S>): Space<S> => {
  const stores = new WeakMap<StoreOpener, Store<S>>()
  return {
    open: (opener) => {
      const existing = stores.get(opener)
      if (existing !== undefined) return existing
      const store = open(opener)
      stores.set(opener, store)
      return store
    }
  }
}

/** A space in the session store (`SessionStore`), as `rules` say the log shows it. */
export const sessions = (rules: ReplayRules<SessionDecision>): Space<SessionDecision> =>
  memoized((opener) => opener.view(opener.sessions, rules))

/** A space of the program's own in the process (at most `bound` keys), as `rules` say the log shows it. */
export const local = <S>(bound: number, rules: ReplayRules<S>): Space<S> =>
  memoized((opener) => opener.view(opener.local<S>(bound), rules))

/** Never forgotten by the log (state the log does not show). */
export const neverForgotten = (): boolean => false

// ---------------------------------------------------------------------------------------------
// Signals

/** What a stage router reads of a request's tool history. */
export interface StageReading {
  readonly reading: StageSignals.Reading
  readonly dimensions: StageSignals.Dimensions
}

/** Which trigger asks for a review of a turn, and the conversation the stall trigger keys on. */
export interface Triggered {
  readonly trigger: Option.Option<Evidence.AdvisorTrigger>
  /** The conversation's identity, when the stall trigger is on (it reviews a conversation once). */
  readonly conversation: Option.Option<string>
}

/** The facts a program reads off the request. */
export interface Signals {
  /** Its last non-instruction message is the user's. */
  readonly userTurn: (request: RoutedRequest) => boolean
  /** A hash of its first user message (a session identity without a session id); none without one. */
  readonly messageHash: (request: RoutedRequest) => Effect.Effect<Option.Option<string>>
  /** A stage router's reading of its tool history (`recent_turn_window`, `tool_semantics`). */
  readonly stage: (
    request: RoutedRequest,
    window: number,
    semantics: StageSignals.ToolSemantics
  ) => Effect.Effect<StageReading>
  /**
   * An advisor gate's trigger for the executor's `turn` (`unreviewed`: whether the stall trigger
   * has not yet reviewed a conversation).
   */
  readonly trigger: (
    request: RoutedRequest,
    turn: ChatCompletion,
    rules: AdvisorReview.TriggerRules,
    unreviewed: (conversation: string) => Effect.Effect<boolean>
  ) => Effect.Effect<Triggered>
}

// ---------------------------------------------------------------------------------------------
// The host

/** The host of a route program (see the module doc). */
export interface Host {
  /**
   * Ask a question of the route's judges (its chain: `JudgeChain`); the answer or the last judge's
   * failure comes back with the chain's trail, and the failure is the posture's input
   * (`Consultation.runChained`). Each call made is reported.
   */
  readonly consult: <K extends QuestionKind>(
    question: Question<K>
  ) => Effect.Effect<JudgeChain.Chained<Answers[K]>, JudgeChain.Unanswered, RoutingFacts.Reporter>
  /** Make a routing-time model call (reported when it made a request). */
  readonly call: (call: ModelCall) => Effect.Effect<ChatCompletion, ClientFailure, RoutingFacts.Reporter>
  /** The store of a space (opened once per host). */
  readonly store: <S>(space: Space<S>) => Store<S>
  /** Run `self` alone among the requests of `key` (none: no lock). */
  readonly exclusive: (key: Option.Option<string>) => <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  readonly signals: Signals
  /** Run live-only telemetry (metrics, WARN lines); other hosts do nothing. */
  readonly record: (telemetry: Effect.Effect<void>) => Effect.Effect<void>
}

/** A route program: one request's decision, asking the host for everything outside its rules. */
export type Program = (
  request: RoutedRequest
) => Effect.Effect<Decision.Decision, RouteFailure, RouteHost | RoutingFacts.Reporter>

/** The host service of a route program. */
export class RouteHost extends Context.Tag("@switchyard-ts/routing/RouteHost")<RouteHost, Host>() {}

/** Ask the host's judge `question`. */
export const consult = <K extends QuestionKind>(
  question: Question<K>
): Effect.Effect<JudgeChain.Chained<Answers[K]>, JudgeChain.Unanswered, RouteHost | RoutingFacts.Reporter> =>
  Effect.flatMap(RouteHost, (host) => host.consult(question))

/** Make a routing-time model call through the host. */
export const call = (
  modelCall: ModelCall
): Effect.Effect<ChatCompletion, ClientFailure, RouteHost | RoutingFacts.Reporter> =>
  Effect.flatMap(RouteHost, (host) => host.call(modelCall))

/** Run live-only telemetry through the host. */
export const record = (telemetry: Effect.Effect<void>): Effect.Effect<void, never, RouteHost> =>
  Effect.flatMap(RouteHost, (host) => host.record(telemetry))
