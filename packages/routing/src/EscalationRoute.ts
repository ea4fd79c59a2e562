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
 *      (`Escalation.nextStreak`); at `confirmations` the session latches, the weak reply is
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
import type * as Escalation from "./Escalation.js"
import {
  begin,
  cooledDown,
  type Decided,
  type Deescalation,
  deescalationOf,
  judged,
  latched,
  next,
  reviewed,
  reviews,
  type Settings,
  type State,
  stateOf,
  strongFallback,
  strongHeld,
  toStored,
  type Vote,
  weakFailed
} from "./EscalationPhases.js"
import * as ClassifierRoute from "./internal/classifierRoute.js"
import { type EscalationJudgeOptions, Judge } from "./Judge.js"
import * as Metrics from "./Metrics.js"
import * as Posture from "./Posture.js"
import { distinctTargets, type Route, type RoutedRequest } from "./Route.js"
import * as RoutingFacts from "./RoutingFacts.js"
import * as SessionIdentity from "./SessionIdentity.js"
import { type SessionDecision, SessionStore } from "./SessionStore.js"

/** Options of an escalation route (its TOML keys, validated). */
export interface Options extends EscalationJudgeOptions {
  readonly id: string
  readonly name: string
  readonly weak: Target
  readonly strong: Target
  /** `escalation.confirmations` >= 1 (default 2): consecutive escalate verdicts that latch a session. */
  readonly confirmations: number
  /** `escalation.deescalation`; none (the default): a latch is permanent. */
  readonly deescalation?: Option.Option<Deescalation>
  readonly judgeFailure: Posture.Posture
  readonly contextWindow?: Option.Option<number>
  readonly toolCalling?: Option.Option<boolean>
}

/** The decision rules, with the route (see `EscalationPhases`). */
export {
  begin,
  cooledDown,
  judged,
  latched,
  next,
  reviewed,
  reviews,
  stateOf,
  strongFallback,
  strongHeld,
  toStored,
  weakFailed
}
export type { Decided, Deescalation, Settings, State, Vote }

const refusedByBreaker = (exit: Exit.Exit<unknown, ClientFailure>): boolean =>
  Exit.isFailure(exit) && Option.exists(Cause.failureOption(exit.cause), (error) => error._tag === "CircuitOpen")

/** A weak failure that routes to strong instead of failing the request. */
const strongInstead = (error: ClientFailure): boolean =>
  error._tag === "TransportError" || (error._tag === "UpstreamStatus" && error.contextWindowExceeded === true)

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

/** One buffered call to `target` while routing, counted as an LLM call of the route (a breaker's refusal is not). */
const callTarget = (shell: Shell, target: Target, request: RoutedRequest) =>
  Effect.flatMap(
    Clock.currentTimeMillis,
    (start) =>
      shell.upstream.complete({ target, body: request.body, headers: request.headers, completion: true }).pipe(
        Effect.onExit((exit) =>
          refusedByBreaker(exit) ?
            Effect.void :
            Effect.flatMap(Clock.currentTimeMillis, (end) =>
              Metrics.recordLlmCall(
                "llm_task_classifier",
                target.id,
                Exit.isSuccess(exit) ? "ok" : "error",
                end - start,
                Exit.isSuccess(exit) ? exit.value.usage : undefined
              ))
        )
      )
  )

/** The weak target's reply; none when its failure routes to strong instead. */
const callWeak = (shell: Shell, request: RoutedRequest) =>
  callTarget(shell, shell.options.weak, request).pipe(
    Effect.map(Option.some),
    Effect.catchIf(strongInstead, () => Effect.succeedNone)
  )

/**
 * A judged strong turn's answer: the strong target, then the weak one when the strong target's
 * failure is fallback-worthy (as an answer call's candidates `[strong, weak]`).
 */
const callStrong = (shell: Shell, request: RoutedRequest) =>
  callTarget(shell, shell.options.strong, request).pipe(
    Effect.map((answer) => ({ tier: "strong" as const, answer })),
    Effect.catchIf(
      Fallback.isFallbackWorthy,
      () => Effect.map(callTarget(shell, shell.options.weak, request), (answer) => ({ tier: "weak" as const, answer }))
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

/** The decision of what the rules decided: the reply the route holds is served, else strong answers. */
const decisionOf = (shell: Shell, decided: Decided, reply: Option.Option<ChatCompletion>): Decision.Decision =>
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

/** A judge consultation's verdict as the rules read it. */
const voteOf = (verdict: Escalation.EscalationVerdict): Vote => ({
  escalate: verdict.escalate,
  ...(verdict.category === undefined ? {} : { category: verdict.category }),
  ...(verdict.new_evidence === undefined ? {} : { new_evidence: verdict.new_evidence })
})

/** The steps of one request, over the session's stored state. */
interface Step {
  readonly stored: Option.Option<SessionDecision>
  /** Store what the rules decided (with a session), report it, and decide. */
  readonly apply: (
    decided: Decided,
    consulted: boolean,
    reply: Option.Option<ChatCompletion>
  ) => Effect.Effect<Decision.Decision, never, RoutingFacts.Reporter>
}

/** {@link Step.apply} of one request of a session (`key`, its `stored` decision before). */
const applyStep = Effect.fnUntraced(function*(
  shell: Shell,
  key: Option.Option<string>,
  stored: Option.Option<SessionDecision>,
  decided: Decided,
  consulted: boolean,
  reply: Option.Option<ChatCompletion>
) {
  const { options, store } = shell
  const written = Option.flatMap(decided.store, (after) => Option.map(key, () => toStored(options, after)))
  if (Option.isSome(key) && Option.isSome(written)) yield* store.put(key.value, written.value)
  yield* report(options, consulted, stored, Option.orElse(written, () => stored), Option.some(decided.tier))
  return decisionOf(shell, decided, reply)
})

/** The judge's vote on a finished turn (`reply`), its input marked with `phase` when set. */
const askJudge = (shell: Shell, request: RoutedRequest, reply: ChatCompletion, phase: Escalation.Phase | undefined) =>
  shell.judge.escalate({
    options: shell.options,
    messages: request.body.messages,
    reply,
    headers: request.headers,
    ...(phase === undefined ? {} : { phase })
  }).pipe(Effect.map(voteOf))

/** Count a consultation that came to no verdict; whether the judge was called (not an open breaker). */
const settle = (shell: Shell, outcome: Consultation.Outcome<Vote>) =>
  Effect.as(
    outcome._tag === "WithoutVerdict"
      ? shell.recordWithoutVerdict(shell.options.judge.id, outcome.reason)
      : Effect.void,
    outcome._tag === "Verdict" || outcome.reason !== "circuit_open"
  )

/**
 * A strong-phase request that reaches `strong_min_calls`: strong answers buffered (the weak target
 * on a fallback-worthy failure: not judged), and the judge reads the strong turn. Its failures never
 * fail the request, whatever the posture: strong stays (see {@link reviewed}).
 */
const reviewStrong = Effect.fnUntraced(
  function*(shell: Shell, request: RoutedRequest, step: Step, state: Extract<State, { _tag: "Strong" }>) {
    const { options } = shell
    const served = yield* callStrong(shell, request).pipe(
      Effect.tapError(() => report(options, false, step.stored, step.stored, Option.some("strong")))
    )
    if (served.tier === "weak") {
      return yield* step.apply(strongFallback(options, state), false, Option.some(served.answer))
    }
    const outcome = yield* askJudge(shell, request, served.answer, "strong").pipe(Consultation.run(Posture.failOpen))
    const consulted = yield* settle(shell, outcome)
    return yield* step.apply(reviewed(options, options.judge.id, state, outcome), consulted, Option.some(served.answer))
  }
)

/**
 * A weak-phase request: the weak call, then (outside a cooldown) the judge's verdict on it through
 * the route's posture.
 */
const judgeWeak = Effect.fnUntraced(
  function*(shell: Shell, request: RoutedRequest, step: Step, state: Extract<State, { _tag: "Unlatched" }>) {
    const { options } = shell
    const judgeModel = options.judge.id
    // A weak failure that fails the request is reported too: the routing log's line then says the
    // store was read (a replay learns that a `session_final` ended the session before it).
    const reply = yield* callWeak(shell, request).pipe(
      Effect.tapError(() => report(options, false, step.stored, step.stored, Option.some("weak")))
    )
    if (Option.isNone(reply)) return yield* step.apply(weakFailed(options, state.streak), false, Option.none())
    if ((state.cooldown ?? 0) > 0) return yield* step.apply(cooledDown(options, state), false, reply)

    const phase = Option.isSome(deescalationOf(options)) ? "efficient" as const : undefined
    const outcome = yield* askJudge(shell, request, reply.value, phase).pipe(
      Consultation.run(shell.posture),
      Effect.mapError((failure) => new JudgeUnavailable({ judgeModel, failure })),
      Effect.tapError(() => report(options, true, step.stored, step.stored, Option.none()))
    )
    const consulted = yield* settle(shell, outcome)
    const decided = judged(options, judgeModel, state, Option.isSome(step.stored), outcome)
    return yield* step.apply(decided, consulted, decided.tier === "weak" ? reply : Option.none())
  }
)

/**
 * One request of a session (`key`): its state (a strong phase past `strong_max_calls` returns to
 * weak first), then the rules of its phase, and what they decide stored, reported and decided.
 */
const decideFor = Effect.fnUntraced(function*(shell: Shell, request: RoutedRequest, key: Option.Option<string>) {
  const { options, store } = shell
  const stored = Option.isSome(key) ? yield* store.get(key.value) : Option.none()
  const state = begin(options, stateOf(stored, options.strong, options))
  const step: Step = {
    stored,
    apply: (decided, consulted, reply) => applyStep(shell, key, stored, decided, consulted, reply)
  }
  switch (state._tag) {
    case "Latched":
      return yield* step.apply(latched(options), false, Option.none())
    case "Strong":
      return reviews(options, state)
        ? yield* reviewStrong(shell, request, step, state)
        : yield* step.apply(strongHeld(options, state), false, Option.none())
    case "Unlatched":
      return yield* judgeWeak(shell, request, step, state)
  }
})

/**
 * Once per route: a request without a session id on a route whose state spans requests
 * (`confirmations` > 1, or a `deescalation` table) is routed with a state that lasts one request.
 */
const withoutSessionWarning = (options: Options): Effect.Effect<void> => {
  const deescalating = Option.isSome(deescalationOf(options))
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
    const warnWithoutSession = withoutSessionWarning(options)
    const route: Route = {
      id: options.id,
      name: options.name,
      algorithm: "llm_task_classifier",
      targets: distinctTargets([options.weak, options.strong]),
      contextWindow: options.contextWindow ?? Option.none(),
      toolCalling: options.toolCalling ?? Option.none(),
      decide: (request) => {
        const key = Option.map(request.sessionId, (id) => `${options.id}\u0000s:${id}`)
        const warned = Option.isNone(key) ? warnWithoutSession : Effect.void
        const forget = Option.match(key, { onNone: () => Effect.void, onSome: shell.store.remove })
        return Effect.zipRight(
          warned,
          withSessionLock(key, SessionIdentity.forgetOnFinal(decideFor(shell, request, key), request.headers, forget))
        )
      }
    }
    return route
  })
