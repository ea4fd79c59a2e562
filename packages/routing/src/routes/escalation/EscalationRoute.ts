/**
 * The `llm_classifier` route in `escalation` mode: serve the weak target, judge the finished weak
 * turn, and latch the session to the strong target after `confirmations` consecutive escalate
 * verdicts — for good, or, with a `deescalation` table, into a strong phase the judge may end.
 *
 * Per request (requests of one session are routed one at a time, judge call included):
 *
 * 1. A latched session routes to strong (fallback `[weak]`) with no judge call (evidence `latched`).
 * 2. Otherwise the weak target answers, buffered, one candidate. A context overflow (400) or a
 *    transport failure routes to strong instead (`weak_failed`, streak unchanged); any other weak
 *    failure fails the request as it is.
 * 3. The judge reads a condensed transcript of the conversation and the weak reply (`Escalation`)
 *    and answers `{"escalate", "category", "new_evidence", "reason"}`, through `Consultation.run`
 *    with the route's `Posture`:
 *    - escalate with fresh evidence → streak + 1 in the category of the previous vote, 1 in another
 *      (`EscalationJudge.nextStreak`); at `confirmations` the session latches, the weak reply is
 *      discarded and strong answers (fallback `[weak]`); below it the weak reply is served;
 *    - decline, or escalate without fresh evidence → streak 0, the weak reply is served;
 *    - no verdict (an invalid reply under both postures; a call failure under `fail_open`; an open
 *      breaker under `fail_open`) → the weak reply is served, the streak is unchanged, one
 *      fail-open count (evidence `retained` when the session has state, else `fail-open`;
 *      `circuit-open` for the breaker);
 *    - a call failure under `error` → `JudgeUnavailable` (502 / 504; 503 for an open breaker).
 *
 * With a `deescalation` table (judge input marked `EFFICIENT_EVALUATION` / `STRONG_EVALUATION`)
 * the latch starts a strong phase (the escalating turn is its first strong turn): strong turns
 * below `strong_min_calls` route to strong unjudged; from then on strong answers buffered
 * (candidates `[strong, weak]`) and the judge reads the strong turn (`reviewed`): declines release
 * the session from its next request once `deescalation.confirmations` are consecutive; a judge
 * failure never fails the request, whatever the posture (strong stays); a weak fallback answer is
 * not judged (`strongFallback`). After `strong_max_calls` strong turns the next request returns to
 * weak (`begin`), its first `weak_cooldown_calls` weak turns served unjudged (`cooledDown`).
 *
 * Only a valid verdict writes the session's escalate streak or latch (the strong phase's counts are
 * written by every strong turn). Without a session id the state lives for one request only (so
 * only `confirmations = 1` can escalate, and the de-escalation table is inert). A request whose
 * headers say `session_final` (`x-switchyard-session-final`, else `x-dynamo-session-final`) removes
 * the session's state once it is routed: the next request of that id starts unlatched, streak 0.
 * A reply the route holds (the weak reply, a judged strong turn's answer) travels in an `Answered`
 * decision: the `Router` replays it to streaming callers.
 */
import * as Fallback from "@switchyard-ts/client/Fallback"
import type { Target } from "@switchyard-ts/client/Target"
import { type ClientFailure, JudgeUnavailable } from "@switchyard-ts/protocol/Errors"
import type { ChatCompletion } from "@switchyard-ts/protocol/OpenAiChat"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Decision from "../../Decision.js"
import * as Evidence from "../../Evidence.js"
import * as LiveHost from "../../host/LiveHost.js"
import * as ReplayHost from "../../host/ReplayHost.js"
import * as RouteHost from "../../host/RouteHost.js"
import * as RoutingFacts from "../../host/RoutingFacts.js"
import type * as RoutingRecord from "../../host/RoutingRecord.js"
import * as Consultation from "../../judge/Consultation.js"
import type { EscalationJudgeOptions } from "../../judge/Judge.js"
import * as Posture from "../../judge/Posture.js"
import { distinctTargets, type Route, type RoutedRequest } from "../../Route.js"
import * as SessionIdentity from "../../sessions/SessionIdentity.js"
import type { SessionDecision } from "../../sessions/SessionStore.js"
import * as ClassifierProgram from "../classifier/ClassifierProgram.js"
import type * as EscalationJudge from "./EscalationJudge.js"
import * as EscalationRules from "./EscalationRules.js"

/** Options of an escalation route (its TOML keys, validated). */
export interface Options extends EscalationJudgeOptions {
  readonly id: string
  readonly name: string
  readonly weak: Target
  readonly strong: Target
  /** `escalation.confirmations` >= 1 (default 2): consecutive escalate verdicts that latch a session. */
  readonly confirmations: number
  /** `escalation.deescalation`; none (the default): a latch is permanent. */
  readonly deescalation?: Option.Option<EscalationRules.Deescalation>
  readonly judgeFailure: Posture.Posture
  readonly contextWindow?: Option.Option<number>
  readonly toolCalling?: Option.Option<boolean>
}

/** A weak failure that routes to strong instead of failing the request. */
const strongInstead = (error: ClientFailure): boolean =>
  error._tag === "TransportError" || (error._tag === "UpstreamStatus" && error.contextWindowExceeded === true)

/** What one escalation route's program routes requests with. */
interface Shell {
  readonly options: Options
  readonly posture: Posture.Combinator
  readonly info: Decision.RouteInfo
  readonly recordWithoutVerdict: ClassifierProgram.RecordWithoutVerdict
  /** The sessions' escalation state. */
  readonly sessions: RouteHost.Space<SessionDecision>
}

/** One buffered routing-time call to `target` (a turn of `kind`). */
const callTarget = (host: RouteHost.Host, kind: RouteHost.CallKind, target: Target, request: RoutedRequest) =>
  host.call({ kind, target, body: request.body, headers: request.headers })

/** The weak target's reply; none when its failure routes to strong instead. */
const callWeak = (host: RouteHost.Host, shell: Shell, request: RoutedRequest) =>
  callTarget(host, "weak_turn", shell.options.weak, request).pipe(
    Effect.map(Option.some),
    Effect.catchIf(strongInstead, () => Effect.succeedNone)
  )

/**
 * A judged strong turn's answer: the strong target, then the weak one when the strong target's
 * failure is fallback-worthy (as an answer call's candidates `[strong, weak]`).
 */
const callStrong = (host: RouteHost.Host, shell: Shell, request: RoutedRequest) =>
  callTarget(host, "strong_turn", shell.options.strong, request).pipe(
    Effect.map((answer) => ({ tier: "strong" as const, answer })),
    Effect.catchIf(
      Fallback.isFallbackWorthy,
      () =>
        Effect.map(
          callTarget(host, "strong_fallback_turn", shell.options.weak, request),
          (answer) => ({ tier: "weak" as const, answer })
        )
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
    observer.routed({
      _tag: "Classified",
      trigger: "every_request",
      posture: options.judgeFailure,
      consulted,
      storedBefore,
      storedAfter,
      tier
    })
  )

/** The decision of what the rules decided: the reply the route holds is served, else strong answers. */
const decisionOf = (
  shell: Shell,
  decided: EscalationRules.Decided,
  reply: Option.Option<ChatCompletion>
): Decision.Decision =>
  Option.isSome(reply)
    ? Decision.answered({
      route: shell.info,
      answer: reply.value,
      servedBy: Option.some(decided.tier === "weak" ? shell.options.weak : shell.options.strong),
      evidence: decided.evidence
    })
    : Decision.routed({
      route: shell.info,
      selected: shell.options.strong,
      fallbacks: [shell.options.weak],
      evidence: decided.evidence
    })

/** The steps of one request, over the session's stored state. */
interface Step {
  readonly host: RouteHost.Host
  readonly stored: Option.Option<SessionDecision>
  /** Store what the rules decided (with a session), report it, and decide. */
  readonly apply: (
    decided: EscalationRules.Decided,
    consulted: boolean,
    reply: Option.Option<ChatCompletion>
  ) => Effect.Effect<Decision.Decision, never, RoutingFacts.Reporter>
}

/** {@link Step.apply} of one request of a session (`key`, its `stored` decision before). */
const applyStep = Effect.fnUntraced(function*(
  store: RouteHost.Store<SessionDecision>,
  shell: Shell,
  key: Option.Option<string>,
  stored: Option.Option<SessionDecision>,
  decided: EscalationRules.Decided,
  consulted: boolean,
  reply: Option.Option<ChatCompletion>
) {
  const { options } = shell
  const written = Option.flatMap(
    decided.store,
    (after) => Option.map(key, () => EscalationRules.toStored(options, after))
  )
  if (Option.isSome(key) && Option.isSome(written)) yield* store.put(key.value, written.value)
  yield* report(options, consulted, stored, Option.orElse(written, () => stored), Option.some(decided.tier))
  return decisionOf(shell, decided, reply)
})

/** The judge's vote on a finished turn (`reply`, the `turn` of that tier), its input marked with `phase` when set. */
const askJudge = (
  host: RouteHost.Host,
  shell: Shell,
  request: RoutedRequest,
  reply: ChatCompletion,
  turn: "weak" | "strong",
  phase: Option.Option<EscalationJudge.Phase>
) => host.consult({ _tag: "Escalation", options: shell.options, request, reply, turn, phase })

/** A judged turn's evidence with what its judge chain came to (`Evidence.withTrail`). */
const trailed = (decided: EscalationRules.Decided, outcome: Consultation.Outcome<EscalationRules.Vote>) => ({
  ...decided,
  evidence: Evidence.withTrail(decided.evidence, outcome.trail)
})

/** Count a consultation that came to no verdict; whether the judge was called (not an open breaker). */
const settle = (host: RouteHost.Host, shell: Shell, outcome: Consultation.Outcome<EscalationRules.Vote>) =>
  Effect.as(
    outcome._tag === "WithoutVerdict"
      ? host.record(shell.recordWithoutVerdict(outcome.trail?.judgeModel ?? shell.options.judge.id, outcome.reason))
      : Effect.void,
    outcome._tag === "Verdict" || outcome.reason !== "circuit_open"
  )

/**
 * A strong-phase request that reaches `strong_min_calls`: strong answers buffered (the weak target
 * on a fallback-worthy failure: not judged), and the judge reads the strong turn. Its failures never
 * fail the request, whatever the posture: strong stays (see {@link EscalationRules.reviewedStrongTurn}).
 */
const reviewStrong = Effect.fnUntraced(
  function*(
    shell: Shell,
    request: RoutedRequest,
    step: Step,
    state: Extract<EscalationRules.State, { _tag: "Strong" }>
  ) {
    const { options } = shell
    const served = yield* callStrong(step.host, shell, request).pipe(
      Effect.tapError(() => report(options, false, step.stored, step.stored, Option.some("strong")))
    )
    if (served.tier === "weak") {
      return yield* step.apply(EscalationRules.strongFallbackTurn(options, state), false, Option.some(served.answer))
    }
    const outcome = yield* askJudge(step.host, shell, request, served.answer, "strong", Option.some("strong")).pipe(
      Consultation.runChained(Posture.failOpen)
    )
    const consulted = yield* settle(step.host, shell, outcome)
    return yield* step.apply(
      trailed(EscalationRules.reviewedStrongTurn(options, options.judge.id, state, outcome), outcome),
      consulted,
      Option.some(served.answer)
    )
  }
)

/**
 * A weak-phase request: the weak call, then (outside a cooldown) the judge's verdict on it through
 * the route's posture.
 */
const judgeWeak = Effect.fnUntraced(
  function*(
    shell: Shell,
    request: RoutedRequest,
    step: Step,
    state: Extract<EscalationRules.State, { _tag: "Unlatched" }>
  ) {
    const { options } = shell
    const judgeModel = options.judge.id
    // A weak failure that fails the request is reported too: the routing log's line then says the
    // store was read (a replay learns that a `session_final` ended the session before it).
    const reply = yield* callWeak(step.host, shell, request).pipe(
      Effect.tapError(() => report(options, false, step.stored, step.stored, Option.some("weak")))
    )
    if (Option.isNone(reply)) {
      return yield* step.apply(EscalationRules.weakFailedTurn(options, state.streak), false, Option.none())
    }
    if ((state.cooldown ?? 0) > 0) return yield* step.apply(EscalationRules.cooldownTurn(options, state), false, reply)

    const phase = Option.isSome(EscalationRules.deescalationOf(options))
      ? Option.some("efficient" as const)
      : Option.none()
    const outcome = yield* askJudge(step.host, shell, request, reply.value, "weak", phase).pipe(
      Consultation.runChained(shell.posture),
      Effect.mapError((failure) => new JudgeUnavailable({ judgeModel, failure })),
      Effect.tapError(() => report(options, true, step.stored, step.stored, Option.none()))
    )
    const consulted = yield* settle(step.host, shell, outcome)
    const decided = trailed(
      EscalationRules.judgedWeakTurn(options, judgeModel, state, Option.isSome(step.stored), outcome),
      outcome
    )
    return yield* step.apply(decided, consulted, decided.tier === "weak" ? reply : Option.none())
  }
)

/**
 * One request of a session (`key`): its state (a strong phase past `strong_max_calls` returns to
 * weak first), then the rules of its phase, and what they decide stored, reported and decided.
 */
const decideFor = Effect.fnUntraced(
  function*(host: RouteHost.Host, shell: Shell, request: RoutedRequest, key: Option.Option<string>) {
    const { options } = shell
    const store = host.store(shell.sessions)
    const stored = Option.isSome(key) ? yield* store.get(key.value) : Option.none()
    const state = EscalationRules.startOf(options, EscalationRules.stateOf(stored, options.strong, options))
    const step: Step = {
      host,
      stored,
      apply: (decided, consulted, reply) => applyStep(store, shell, key, stored, decided, consulted, reply)
    }
    switch (state._tag) {
      case "Latched":
        return yield* step.apply(EscalationRules.latchedTurn(options), false, Option.none())
      case "Strong":
        return EscalationRules.judgesStrongTurn(options, state)
          ? yield* reviewStrong(shell, request, step, state)
          : yield* step.apply(EscalationRules.heldStrongTurn(options, state), false, Option.none())
      case "Unlatched":
        return yield* judgeWeak(shell, request, step, state)
    }
  }
)

/**
 * Once per route: a request without a session id on a route whose state spans requests
 * (`confirmations` > 1, or a `deescalation` table) is routed with a state that lasts one request.
 */
const withoutSessionWarning = (options: Options): Effect.Effect<void> => {
  const deescalating = Option.isSome(EscalationRules.deescalationOf(options))
  if (options.confirmations <= 1 && !deescalating) return Effect.void
  let warned = false
  return Effect.suspend(() => {
    if (warned) return Effect.void
    warned = true
    return Effect.logWarning("stateful escalation has no session ID; routing state will not persist").pipe(
      Effect.annotateLogs({
        route: options.id,
        confirmations: options.confirmations,
        deescalation: deescalating,
        required_header: SessionIdentity.sessionHeader
      })
    )
  })
}

/**
 * An escalation route's program (see the module doc): requests of one session routed one at a
 * time; a `session_final` request removes the session's state once routed.
 */
export const program = (options: Options): RouteHost.Program => {
  const shell: Shell = {
    options,
    posture: Posture.fromConfig(options.judgeFailure),
    info: { id: options.id, name: options.name, algorithm: "llm_task_classifier" },
    recordWithoutVerdict: ClassifierProgram.withoutVerdict(options.id),
    // The logged run read the store (it reported classifier facts) and found nothing there.
    sessions: RouteHost.sessions({ forgotten: (record) => record.stored_before === null && record.posture !== null })
  }
  const warnWithoutSession = withoutSessionWarning(options)
  return (request) =>
    Effect.flatMap(RouteHost.RouteHost, (host) => {
      const key = Option.map(request.sessionId, (id) => `${options.id}\u0000s:${id}`)
      const warned = Option.isNone(key) ? host.record(warnWithoutSession) : Effect.void
      const forget = Option.match(key, { onNone: () => Effect.void, onSome: host.store(shell.sessions).remove })
      return Effect.zipRight(
        warned,
        host.exclusive(key)(
          SessionIdentity.forgetOnFinal(decideFor(host, shell, request, key), request.headers, forget)
        )
      )
    })
}

/**
 * Build an escalation route: its {@link program} on a live host (`LiveHost`: the `Judge`, the
 * `SessionStore`, the `UpstreamClient` for its routing-time turns).
 */
export const make = (options: Options): Effect.Effect<Route, never, LiveHost.Services> =>
  LiveHost.route(
    { algorithm: "llm_task_classifier", late: Option.none() },
    {
      id: options.id,
      name: options.name,
      algorithm: "llm_task_classifier",
      targets: distinctTargets([options.weak, options.strong]),
      contextWindow: options.contextWindow ?? Option.none(),
      toolCalling: options.toolCalling ?? Option.none()
    },
    program(options)
  )

/**
 * What the log says an escalation route's record came to: the tier and its verdict (or the
 * evidence's source); a record without evidence is unknown when a weak or strong answer call failed
 * it (its judge never fails a strong turn), else its judge's failure.
 */
export const logged = (record: RoutingRecord.Decided): ReplayHost.Outcome => {
  const evidence = record.evidence
  if (evidence === null) {
    return EscalationRules.weakCallFailed(record) || EscalationRules.strongPhase(record)
      ? ReplayHost.unknown
      : ReplayHost.failureOf(record)
  }
  if (evidence.source === "escalation") {
    return ReplayHost.routed(EscalationRules.loggedTier(record, evidence), evidence.verdict)
  }
  return ReplayHost.decided(record.tier === "strong" ? "strong" : "weak", evidence)
}

/** An escalation route's replay: its {@link program} on the log's facts, read back as {@link logged}. */
export const replayable = (options: Options): ReplayHost.Replayable => ({
  kind: "escalation",
  algorithm: "llm_task_classifier",
  destinations: ["weak", "strong"],
  logged,
  program: () => program(options)
})
