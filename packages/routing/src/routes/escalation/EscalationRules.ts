/**
 * The decision rules of an escalation route, pure (its live Effect shell and the policy replay both
 * run them): a session's state (`Unlatched` with its streak, `Latched`, or a de-escalating route's
 * `Strong` phase), where a request starts (`begin`: the hard limit's forced return), and what each
 * kind of turn decides — its tier, its evidence and the state to store.
 */
import type { Target } from "@switchyard-ts/client/Target"
import * as Option from "effect/Option"
import type * as Evidence from "../../Evidence.js"
import type * as RoutingRecord from "../../host/RoutingRecord.js"
import type * as Consultation from "../../judge/Consultation.js"
import type { SessionDecision } from "../../sessions/SessionStore.js"
import * as EscalationJudge from "./EscalationJudge.js"

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
    readonly category?: EscalationJudge.Category
    readonly cooldown?: number
  }
  | { readonly _tag: "Latched" }
  | { readonly _tag: "Strong"; readonly calls: number; readonly releaseStreak: number }

/** The settings the decision rules read (a route's options, or a deployment's route spec). */
export interface Settings {
  /** `escalation.confirmations` >= 1: the escalate streak that latches a session. */
  readonly confirmations: number
  /** `escalation.deescalation`; none (or absent): a latch is permanent. */
  readonly deescalation?: Option.Option<Deescalation>
}

export const deescalationOf = (settings: Settings): Option.Option<Deescalation> =>
  settings.deescalation ?? Option.none()

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

const unlatched = (streak: EscalationJudge.Streak, cooldown: number): State => ({
  _tag: "Unlatched",
  streak: streak.streak,
  ...(streak.category === undefined ? {} : { category: streak.category }),
  ...(cooldown > 0 ? { cooldown } : {})
})

/**
 * The state after a valid verdict on a weak turn ({@link EscalationJudge.nextStreak}): at
 * `confirmations` the session latches — for good, or into its first strong turn with a
 * `deescalation` table.
 */
export const afterVote = (
  previous: EscalationJudge.Streak,
  vote: Vote,
  settings: Settings
): State => {
  const after = EscalationJudge.nextStreak(previous, vote)
  if (after.streak < settings.confirmations) return unlatched(after, 0)
  return Option.isSome(deescalationOf(settings)) ? { _tag: "Strong", calls: 1, releaseStreak: 0 } : { _tag: "Latched" }
}

/** What the rules read of a verdict. */
export type Vote = Pick<EscalationJudge.EscalationVerdict, "escalate" | "category" | "new_evidence">

/**
 * Where a request starts from its stored `state`: a strong phase that reached `strong_max_calls`
 * returns to weak now (streak 0, `weak_cooldown_calls` unjudged weak turns ahead).
 */
export const startOf = (settings: Settings, state: State): State =>
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
export const latchedTurn = (settings: Settings): Decided => ({
  tier: "strong",
  evidence: escalationEvidence(settings, "latched", settings.confirmations),
  store: Option.none()
})

/** The weak call failed in a way that routes to strong (context overflow, transport): `weak_failed`, streak unchanged. */
export const weakFailedTurn = (settings: Settings, streak: number): Decided => ({
  tier: "strong",
  evidence: escalationEvidence(settings, "weak_failed", streak),
  store: Option.none()
})

/** A weak turn of the cooldown after a forced return: served unjudged (`cooldown`: unjudged turns left after it). */
export const cooldownTurn = (settings: Settings, state: Extract<State, { _tag: "Unlatched" }>): Decided => {
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
export const heldStrongTurn = (settings: Settings, state: Extract<State, { _tag: "Strong" }>): Decided => {
  const calls = state.calls + 1
  return {
    tier: "strong",
    evidence: escalationEvidence(settings, "latched", settings.confirmations, strongFacts(calls, state.releaseStreak)),
    store: Option.some({ _tag: "Strong", calls, releaseStreak: state.releaseStreak })
  }
}

/** Whether a strong-phase request is judged (its strong turn reaches `strong_min_calls`). */
export const judgesStrongTurn = (settings: Settings, state: Extract<State, { _tag: "Strong" }>): boolean =>
  Option.exists(deescalationOf(settings), (table) => state.calls + 1 >= table.strongMinCalls)

/**
 * The strong target failed a judged strong turn and the weak target served it: not judged, the
 * release streak resets, the turn does not count as strong (`strong_fallback`).
 */
export const strongFallbackTurn = (settings: Settings, state: Extract<State, { _tag: "Strong" }>): Decided => ({
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
export const reviewedStrongTurn = (
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
 * state): a verdict moves the streak ({@link afterVote}) and is stored — latched, strong answers; else
 * the weak reply is served. Without a verdict the weak reply is served and nothing is stored
 * (`retained` when the session had state, else `fail-open`; `circuit-open` for the breaker).
 */
export const judgedWeakTurn = (
  settings: Settings,
  judgeModel: string,
  state: EscalationJudge.Streak,
  hasState: boolean,
  outcome: Consultation.Outcome<Vote>
): Decided => {
  if (outcome._tag === "Verdict") {
    const vote = outcome.verdict
    const after = afterVote(state, vote, settings)
    const streak = after._tag === "Unlatched" ? after.streak : EscalationJudge.nextStreak(state, vote).streak
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

/** What the session store holds for a state. */
export const toStored = (
  options: { readonly weak: Target; readonly strong: Target },
  state: State
): SessionDecision => {
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

// ---------------------------------------------------------------------------------------------
// How its turns show in the routing log

/** The verdicts of a de-escalating route's strong phase (its turns make no weak call). */
const strongPhaseVerdicts: ReadonlySet<EscalationEvidence["verdict"]> = new Set([
  "latched",
  "retain",
  "pending",
  "release",
  "strong_fallback"
])

/** What these readers read of a logged record. */
type Logged = Pick<RoutingRecord.Decided, "evidence" | "tier" | "judge">

/** Whether a logged request was a strong-phase turn (no weak call was made; the judge, if any, read a strong turn). */
export const strongPhase = (record: Logged): boolean => {
  const evidence = record.evidence
  if (evidence === null) return record.tier === "strong" && record.judge === null
  if (evidence.source === "escalation") return strongPhaseVerdicts.has(evidence.verdict)
  return record.tier === "strong"
}

/**
 * A logged request the weak target's own failure failed (not one that routes to strong): no
 * evidence, the tier `weak`. Lines of older logs do not say so (no classifier facts at all).
 */
export const weakCallFailed = (record: Logged): boolean => record.evidence === null && record.tier === "weak"

/** The logged verdict's vote, on evidence whose escalation verdict is `among`. */
const voteIn =
  (among: ReadonlyArray<EscalationEvidence["verdict"]>) => (evidence: Evidence.Evidence): Vote | undefined =>
    evidence.source === "escalation" && among.includes(evidence.verdict)
      ? {
        escalate: evidence.verdict === "escalate" || evidence.verdict === "retain",
        ...(evidence.category === undefined ? {} : { category: evidence.category }),
        ...(evidence.new_evidence === undefined ? {} : { new_evidence: evidence.new_evidence })
      }
      : undefined

/** The vote a logged verdict on a weak turn cast. */
export const weakVoteOf = voteIn(["escalate", "decline"])
/** The vote a logged verdict on a strong turn cast. */
export const strongVoteOf = voteIn(["retain", "pending", "release"])

/** Where a logged escalation decision went: strong for a latch and the strong phase's judged turns. */
export const loggedTier = (record: Logged, evidence: EscalationEvidence): "weak" | "strong" => {
  switch (evidence.verdict) {
    case "decline":
    case "cooldown":
    case "strong_fallback":
      return "weak"
    case "escalate":
      return evidence.streak >= evidence.confirmations ? "strong" : "weak"
    default:
      return record.tier === "weak" ? "weak" : "strong"
  }
}
