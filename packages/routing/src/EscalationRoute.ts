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
import * as Escalation from "./Escalation.js"
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

/**
 * `[routes.X.escalation.deescalation]`: the strong phase of a session is judged and may end. Only
 * a session (`x-switchyard-session-id`) keeps its phase between requests.
 */
export interface Deescalation {
  /** >= 1: strong turns (the escalating turn is the first) before the judge may release the session. */
  readonly strongMinCalls: number
  /** >= 1: consecutive declines on strong turns that release the session (from its next request). */
  readonly confirmations: number
  /** >= `strongMinCalls` when set: after that many strong turns the next request returns to weak. */
  readonly strongMaxCalls: Option.Option<number>
  /** >= 0 (default 0): weak turns served without judging after a return forced by `strongMaxCalls`. */
  readonly weakCooldownCalls: number
}

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

/**
 * A session's escalation state: `Unlatched` (weak turns are judged; `category` of the vote that
 * last moved the streak; `cooldown` weak turns still served unjudged), `Latched` (strong for good:
 * no `deescalation` table) or `Strong` (the strong phase of a de-escalating route: `calls` strong
 * turns so far, `releaseStreak` consecutive declines on them).
 */
export type State =
  | {
    readonly _tag: "Unlatched"
    readonly streak: number
    readonly category?: Escalation.Category
    readonly cooldown?: number
  }
  | { readonly _tag: "Latched" }
  | { readonly _tag: "Strong"; readonly calls: number; readonly releaseStreak: number }

/** The settings the decision rules read (a route's options, or a deployment's route spec). */
export type Settings = Pick<Options, "confirmations" | "deescalation">

const deescalationOf = (settings: Settings): Option.Option<Deescalation> => settings.deescalation ?? Option.none()

/**
 * The state a stored decision holds; none stored is a fresh session (streak 0). A strong-phase
 * entry reads as `Latched` on a route without a `deescalation` table; a latch stored before the
 * table was added reads as the first strong turn.
 */
export const stateOf = (stored: Option.Option<SessionDecision>, strong: Target, settings?: Settings): State => {
  const deescalating = settings !== undefined && Option.isSome(deescalationOf(settings))
  return Option.match(stored, {
    onNone: () => ({ _tag: "Unlatched", streak: 0 }),
    onSome: (decision): State => {
      if (decision.strongCalls !== undefined || (decision.target === strong.name && decision.streak === undefined)) {
        return deescalating
          ? { _tag: "Strong", calls: decision.strongCalls ?? 1, releaseStreak: decision.releaseStreak ?? 0 }
          : { _tag: "Latched" }
      }
      return unlatched(
        { streak: decision.streak ?? 0, category: decision.category },
        decision.cooldown ?? 0
      )
    }
  })
}

const unlatched = (streak: Escalation.Streak, cooldown: number): State => ({
  _tag: "Unlatched",
  streak: streak.streak,
  ...(streak.category === undefined ? {} : { category: streak.category }),
  ...(cooldown > 0 ? { cooldown } : {})
})

/**
 * The state after a valid verdict on a weak turn ({@link Escalation.nextStreak}): at
 * `confirmations` the session latches — for good, or into its first strong turn with a
 * `deescalation` table.
 */
export const next = (
  previous: Escalation.Streak,
  vote: Vote,
  settings: Settings
): State => {
  const after = Escalation.nextStreak(previous, vote)
  if (after.streak < settings.confirmations) return unlatched(after, 0)
  return Option.isSome(deescalationOf(settings)) ? { _tag: "Strong", calls: 1, releaseStreak: 0 } : { _tag: "Latched" }
}

/** What the rules read of a verdict. */
export type Vote = Pick<Escalation.EscalationVerdict, "escalate" | "category" | "new_evidence">

/**
 * Where a request starts from its stored `state`: a strong phase that reached `strong_max_calls`
 * returns to weak now (streak 0, `weak_cooldown_calls` unjudged weak turns ahead).
 */
export const begin = (settings: Settings, state: State): State =>
  state._tag === "Strong" && Option.exists(
      deescalationOf(settings),
      (table) => Option.exists(table.strongMaxCalls, (max) => state.calls >= max)
    )
    ? unlatched(
      { streak: 0 },
      Option.match(deescalationOf(settings), { onNone: () => 0, onSome: (t) => t.weakCooldownCalls })
    )
    : state

/** Which target answers a request, why, and the state to store (none: keep what is stored). */
export interface Decided {
  /** `strong`: the strong target answers (or answered); `weak`: the weak target's reply is served. */
  readonly tier: "weak" | "strong"
  readonly evidence: Evidence.Evidence
  readonly store: Option.Option<State>
}

const escalationEvidence = (
  settings: Settings,
  verdict: EscalationEvidence["verdict"],
  streak: number,
  extra: Partial<EscalationEvidence> = {}
): EscalationEvidence => ({
  source: "escalation",
  verdict,
  streak,
  confirmations: settings.confirmations,
  ...extra
})

const voteFacts = (vote: Vote): Partial<EscalationEvidence> => ({
  ...(vote.category === undefined ? {} : { category: vote.category }),
  ...(vote.new_evidence === undefined ? {} : { new_evidence: vote.new_evidence })
})

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

/** A weak turn of the cooldown after a forced return: served unjudged (`cooldown`: unjudged turns left after it). */
export const cooledDown = (settings: Settings, state: Extract<State, { _tag: "Unlatched" }>): Decided => {
  const left = Math.max(0, (state.cooldown ?? 0) - 1)
  return {
    tier: "weak",
    evidence: escalationEvidence(settings, "cooldown", state.streak, { cooldown: left }),
    store: Option.some(unlatched(state, left))
  }
}

/** The strong phase's facts in its evidence. */
const strongFacts = (calls: number, releaseStreak: number): Partial<EscalationEvidence> => ({
  strong_calls: calls,
  release_streak: releaseStreak
})

/**
 * A strong turn before `strong_min_calls`: strong answers (fallback `[weak]`), no judge call
 * (evidence `latched` with the strong phase's facts).
 */
export const strongHeld = (settings: Settings, state: Extract<State, { _tag: "Strong" }>): Decided => {
  const calls = state.calls + 1
  return {
    tier: "strong",
    evidence: escalationEvidence(settings, "latched", settings.confirmations, strongFacts(calls, state.releaseStreak)),
    store: Option.some({ _tag: "Strong", calls, releaseStreak: state.releaseStreak })
  }
}

/** Whether a strong-phase request is judged (its strong turn reaches `strong_min_calls`). */
export const reviews = (settings: Settings, state: Extract<State, { _tag: "Strong" }>): boolean =>
  Option.exists(deescalationOf(settings), (table) => state.calls + 1 >= table.strongMinCalls)

/**
 * The strong target failed a judged strong turn and the weak target served it: not judged, the
 * release streak resets, the turn does not count as strong (`strong_fallback`).
 */
export const strongFallback = (settings: Settings, state: Extract<State, { _tag: "Strong" }>): Decided => ({
  tier: "weak",
  evidence: escalationEvidence(settings, "strong_fallback", settings.confirmations, strongFacts(state.calls, 0)),
  store: Option.some({ _tag: "Strong", calls: state.calls, releaseStreak: 0 })
})

/**
 * After the judge read a strong turn: `escalate` keeps strong (`retain`, release streak 0); a
 * decline adds one to the release streak (`pending`) and at `deescalation.confirmations` releases
 * the session from its next request (`release`: stored unlatched, streak 0). Without a verdict —
 * whatever the posture — strong stays, the release streak resets (`retained` / `circuit-open`).
 * The strong answer is served in every case.
 */
export const reviewed = (
  settings: Settings,
  judgeModel: string,
  state: Extract<State, { _tag: "Strong" }>,
  outcome: Consultation.Outcome<Vote>
): Decided => {
  const calls = state.calls + 1
  const held = (releaseStreak: number): State => ({ _tag: "Strong", calls, releaseStreak })
  if (outcome._tag === "WithoutVerdict") {
    return {
      tier: "strong",
      evidence: outcome.reason === "circuit_open"
        ? { source: "circuit-open", judge_model: judgeModel }
        : { source: "retained", reason: outcome.reason, judge_model: judgeModel },
      store: Option.some(held(0))
    }
  }
  const vote = outcome.verdict
  const facts = (releaseStreak: number) => ({ ...voteFacts(vote), ...strongFacts(calls, releaseStreak) })
  if (vote.escalate) {
    return {
      tier: "strong",
      evidence: escalationEvidence(settings, "retain", settings.confirmations, facts(0)),
      store: Option.some(held(0))
    }
  }
  const releaseStreak = state.releaseStreak + 1
  const needed = Option.match(deescalationOf(settings), { onNone: () => 1, onSome: (table) => table.confirmations })
  return releaseStreak >= needed
    ? {
      tier: "strong",
      evidence: escalationEvidence(settings, "release", settings.confirmations, facts(releaseStreak)),
      store: Option.some(unlatched({ streak: 0 }, 0))
    }
    : {
      tier: "strong",
      evidence: escalationEvidence(settings, "pending", settings.confirmations, facts(releaseStreak)),
      store: Option.some(held(releaseStreak))
    }
}

/**
 * After the judge read the weak turn of an unlatched session (`hasState`: the session had stored
 * state): a verdict moves the streak ({@link next}) and is stored — latched, strong answers; else
 * the weak reply is served. Without a verdict the weak reply is served and nothing is stored
 * (`retained` when the session had state, else `fail-open`; `circuit-open` for the breaker).
 */
export const judged = (
  settings: Settings,
  judgeModel: string,
  state: Escalation.Streak,
  hasState: boolean,
  outcome: Consultation.Outcome<Vote>
): Decided => {
  if (outcome._tag === "Verdict") {
    const vote = outcome.verdict
    const after = next(state, vote, settings)
    const streak = after._tag === "Unlatched" ? after.streak : Escalation.nextStreak(state, vote).streak
    return {
      tier: after._tag === "Unlatched" ? "weak" : "strong",
      evidence: escalationEvidence(settings, vote.escalate ? "escalate" : "decline", streak, {
        ...voteFacts(vote),
        ...(after._tag === "Strong" ? strongFacts(1, 0) : {})
      }),
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
export const toStored = (options: Pick<Options, "weak" | "strong">, state: State): SessionDecision => {
  switch (state._tag) {
    case "Latched":
      return { target: options.strong.name, tier: "strong" }
    case "Strong":
      return {
        target: options.strong.name,
        tier: "strong",
        strongCalls: state.calls,
        releaseStreak: state.releaseStreak
      }
    case "Unlatched":
      return {
        target: options.weak.name,
        tier: "weak",
        streak: state.streak,
        ...(state.category === undefined ? {} : { category: state.category }),
        ...(state.cooldown === undefined ? {} : { cooldown: state.cooldown })
      }
  }
}

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

/**
 * A strong-phase request that reaches `strong_min_calls`: strong answers buffered (the weak target
 * on a fallback-worthy failure: not judged), and the judge reads the strong turn. Its failures never
 * fail the request, whatever the posture: strong stays (see {@link reviewed}).
 */
const reviewStrong = (
  shell: Shell,
  request: RoutedRequest,
  step: Step,
  state: Extract<State, { _tag: "Strong" }>
) =>
  Effect.gen(function*() {
    const { options } = shell
    const served = yield* callStrong(shell, request).pipe(
      Effect.tapError(() => report(options, false, step.stored, step.stored, Option.some("strong")))
    )
    if (served.tier === "weak") {
      return yield* step.apply(strongFallback(options, state), false, Option.some(served.answer))
    }
    const outcome = yield* shell.judge.escalate({
      options,
      messages: request.body.messages,
      reply: served.answer,
      headers: request.headers,
      phase: "strong"
    }).pipe(Effect.map(voteOf), Consultation.run(Posture.failOpen))
    if (outcome._tag === "WithoutVerdict") yield* shell.recordWithoutVerdict(options.judge.id, outcome.reason)
    const consulted = outcome._tag === "Verdict" || outcome.reason !== "circuit_open"
    return yield* step.apply(reviewed(options, options.judge.id, state, outcome), consulted, Option.some(served.answer))
  })

/**
 * A weak-phase request: the weak call, then (outside a cooldown) the judge's verdict on it through
 * the route's posture.
 */
const judgeWeak = (
  shell: Shell,
  request: RoutedRequest,
  step: Step,
  state: Extract<State, { _tag: "Unlatched" }>
) =>
  Effect.gen(function*() {
    const { options } = shell
    const judgeModel = options.judge.id
    // A weak failure that fails the request is reported too: the routing log's line then says the
    // store was read (a replay learns that a `session_final` ended the session before it).
    const reply = yield* callWeak(shell, request).pipe(
      Effect.tapError(() => report(options, false, step.stored, step.stored, Option.some("weak")))
    )
    if (Option.isNone(reply)) return yield* step.apply(weakFailed(options, state.streak), false, Option.none())
    if ((state.cooldown ?? 0) > 0) return yield* step.apply(cooledDown(options, state), false, reply)

    const outcome = yield* shell.judge.escalate({
      options,
      messages: request.body.messages,
      reply: reply.value,
      headers: request.headers,
      ...(Option.isSome(deescalationOf(options)) ? { phase: "efficient" as const } : {})
    }).pipe(
      Effect.map(voteOf),
      Consultation.run(shell.posture),
      Effect.mapError((failure) => new JudgeUnavailable({ judgeModel, failure })),
      Effect.tapError(() => report(options, true, step.stored, step.stored, Option.none()))
    )
    if (outcome._tag === "WithoutVerdict") {
      yield* shell.recordWithoutVerdict(judgeModel, outcome.reason)
    }
    const consulted = outcome._tag === "Verdict" || outcome.reason !== "circuit_open"
    const decided = judged(options, judgeModel, state, Option.isSome(step.stored), outcome)
    return yield* step.apply(decided, consulted, decided.tier === "weak" ? reply : Option.none())
  })

/**
 * One request of a session (`key`): its state (a strong phase past `strong_max_calls` returns to
 * weak first), then the rules of its phase, and what they decide stored, reported and decided.
 */
const decideFor = (shell: Shell, request: RoutedRequest, key: Option.Option<string>) =>
  Effect.gen(function*() {
    const { options, store } = shell
    const stored = Option.isSome(key) ? yield* store.get(key.value) : Option.none()
    const state = begin(options, stateOf(stored, options.strong, options))
    const step: Step = {
      stored,
      apply: (decided, consulted, reply) =>
        Effect.gen(function*() {
          const written = Option.flatMap(decided.store, (after) => Option.map(key, () => toStored(options, after)))
          if (Option.isSome(key) && Option.isSome(written)) yield* store.put(key.value, written.value)
          yield* report(options, consulted, stored, Option.orElse(written, () => stored), Option.some(decided.tier))
          return decisionOf(shell, decided, reply)
        })
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
