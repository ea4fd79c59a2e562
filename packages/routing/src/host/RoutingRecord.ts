/**
 * What a routing log records of one request's routing, as data: the fields of a response line that
 * say what the route decided and from which facts (its evidence, tier, the session's stored
 * decision before and after, the judge's last call, a stage router's signal facts, an advisor
 * gate's budget and consultation). The server's routing log writes them in every response line
 * (`@switchyard-ts/server/RoutingLog`), and the replay host (`ReplayHost`) reads them back: what a
 * route type logs, it can be replayed from.
 */
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Decision from "../Decision.js"
import * as Evidence from "../Evidence.js"
import * as Posture from "../judge/Posture.js"
import * as ClassifierCascade from "../routes/classifier/ClassifierCascade.js"
import type { SessionDecision } from "../sessions/SessionStore.js"
import type * as RoutingFacts from "./RoutingFacts.js"

/** A session's stored decision on a classifier route. */
export const StoredDecision = Schema.Struct({
  target: Schema.String,
  tier: Schema.NullOr(Schema.String),
  streak: Schema.NullOr(Schema.Number),
  /** `true`: a late verdict stored it (`late_verdict_ms`); absent otherwise. */
  late: Schema.optionalWith(Schema.Literal(true), { exact: true })
})
export type StoredDecision = typeof StoredDecision.Type

/** An advisor gate's facts of one request (see {@link fields}`.advisor`). */
export const AdvisorFacts = Schema.Struct({
  reviews_before: Schema.Number,
  failed_consults_before: Schema.Number,
  trigger: Schema.NullOr(Evidence.AdvisorTrigger),
  consult: Schema.NullOr(Schema.Union(Schema.Literal("approve", "redo"), Evidence.Reason))
})
export type AdvisorFacts = typeof AdvisorFacts.Type

/** How a judge call ended: `ok`, an evidence reason, or `interrupted`. */
export const JudgeOutcome = Schema.Union(Schema.Literal("ok", "interrupted"), Evidence.Reason)

/** The last judge call made while routing a request. */
export const JudgeSummary = Schema.Struct({
  model: Schema.String,
  outcome: JudgeOutcome,
  latency_ms: Schema.Number,
  /**
   * Late verdicts only, a call that missed the deadline (`outcome` `timeout`, `latency_ms` the time
   * waited): `continues` — it goes on in the background, and its `judge` line, written when it
   * settles, says what it came to; `dropped` — the route had `max_late_verdicts` in the background,
   * so it was aborted. Absent otherwise.
   */
  late: Schema.optionalWith(Schema.Literal("continues", "dropped"), { exact: true })
})
export type JudgeSummary = typeof JudgeSummary.Type

/** The decision fields of a response line. */
export const fields = {
  /** The route's algorithm; null when routing failed before deciding. */
  algorithm: Schema.NullOr(Schema.String),
  /** The model routing selected (the served one unless a fallback answered); null without a decision. */
  selected_model: Schema.NullOr(Schema.String),
  /**
   * The capability tier the decision went to (`weak` / `strong`; a stage router's tier); else null.
   * An escalation route's request its weak target's failure failed (no evidence) says `weak`.
   */
  tier: Schema.NullOr(Schema.String),
  /** The request's last non-instruction message is the user's (`classify_trigger = "user_turn"` consults then). */
  user_turn: Schema.Boolean,
  /** The error code of an error answer. */
  error: Schema.NullOr(Schema.String),
  evidence: Schema.NullOr(Evidence.Evidence),
  /** A classifier route's `judge_failure`; an advisor route's `fail_open` as a posture. */
  posture: Schema.NullOr(Posture.Posture),
  /** A classifier route's `classify_trigger`. */
  trigger: Schema.NullOr(ClassifierCascade.ClassifyTrigger),
  judge: Schema.NullOr(JudgeSummary),
  stored_before: Schema.NullOr(StoredDecision),
  stored_after: Schema.NullOr(StoredDecision),
  /**
   * A `stage_router` turn's signal facts when its evidence has none: the signals left the turn
   * undecided and the classifier's `error` posture failed the request (`decision_source` is then
   * `fall_open`: the facts as they stood before the classifier).
   */
  stage: Schema.optionalWith(Evidence.StageFacts, { exact: true }),
  /**
   * An advisor route's gate: the scope's budget before the request (`reviews_before`,
   * `failed_consults_before`), the `trigger` that asked for a review (null: none did — the scope was
   * spent, the turn did not trigger, or the executor failed first), and the `consult`'s outcome
   * (`approve`, `redo`, or the evidence reason of a consultation without a verdict; null without
   * one). Absent on other routes.
   */
  advisor: Schema.optionalWith(AdvisorFacts, { exact: true })
}

/** The decision fields of a response line, decoded. */
export type Decided = Schema.Struct.Type<typeof fields>

/** One request's routing as the log records it: its decision fields and its session. */
export interface RoutingRecord extends Decided {
  /** The normalized session id (the log's `session_id`). */
  readonly session_id: string | null
  /** When the response line was written and how long the request took (when the record has them): when it started. */
  readonly ts?: string | undefined
  readonly latency_ms?: number | undefined
}

/** What routing reported of one request besides its calls (`RoutingFacts.RouteFacts`), the last of each kind. */
export interface Reported {
  readonly classified?: RoutingFacts.Classified | undefined
  /** A stage router turn's signal facts, told before its classifier ran. */
  readonly stage?: Evidence.StageFacts | undefined
  readonly advised?: RoutingFacts.Advised | undefined
}

/** What a request reported so far, with `facts` told: the last of each kind kept. */
export const withFacts = (reported: Reported, facts: RoutingFacts.RouteFacts): Reported => {
  switch (facts._tag) {
    case "Classified":
      return { ...reported, classified: facts }
    case "Stage":
      return { ...reported, stage: facts.facts }
    case "Advised":
      return { ...reported, advised: facts }
  }
}

const storedOf = (stored: Option.Option<SessionDecision>): StoredDecision | null =>
  Option.match(stored, {
    onNone: () => null,
    onSome: (decision) => ({
      target: decision.target,
      tier: decision.tier ?? null,
      streak: decision.streak ?? null,
      ...(decision.late === true ? { late: true as const } : {})
    })
  })

/**
 * The decision fields of a request's routing, from its decision (none: routing failed) and what
 * routing reported: how the routing log writes them, and how a replay reads its own run back (the
 * request's `user_turn`, `error` and `judge` summary are the writer's).
 */
export const decidedOf = (
  decision: Option.Option<Decision.Decision>,
  reported: Reported
): Omit<Decided, "user_turn" | "error" | "judge"> => {
  const decided = Option.getOrUndefined(decision)
  const evidence = decided?.evidence ?? null
  const { advised, classified, stage } = reported
  const stageTier = evidence !== null && "stage" in evidence && evidence.stage !== undefined
    ? evidence.stage.tier
    : null
  return {
    algorithm: decided?.route.algorithm ?? null,
    selected_model: decided === undefined
      ? null
      : Option.match(Decision.selected(decided), { onNone: () => decided.route.id, onSome: (t) => t.id }),
    tier: classified === undefined ? stageTier : Option.getOrElse(classified.tier, () => stageTier),
    evidence,
    posture: classified?.posture ?? advised?.posture ?? null,
    trigger: classified?.trigger ?? null,
    stored_before: classified === undefined ? null : storedOf(classified.storedBefore),
    stored_after: classified === undefined ? null : storedOf(classified.storedAfter),
    ...(stage === undefined || stageTier !== null ? {} : { stage }),
    ...(advised === undefined ? {} : {
      advisor: {
        reviews_before: advised.reviewsBefore,
        failed_consults_before: advised.failedConsultsBefore,
        trigger: Option.getOrNull(advised.trigger),
        consult: Option.getOrNull(advised.consult)
      }
    })
  }
}

/**
 * What the log says the judge did for a request, read with `answerOf` from its evidence: its
 * answer, the reason it gave none (its last call's failure; `circuit_open` when the breaker refused
 * the call), or nothing the log holds.
 */
export type JudgeFact<A> =
  | { readonly _tag: "Answered"; readonly answer: A }
  | { readonly _tag: "Failed"; readonly reason: Evidence.Reason }
  | { readonly _tag: "None" }

/** The {@link JudgeFact} of a record. */
export const judgeFact = <A>(
  record: Decided,
  answerOf: (evidence: Evidence.Evidence) => A | undefined
): JudgeFact<A> => {
  const evidence = record.evidence
  const answer = evidence === null ? undefined : answerOf(evidence)
  if (answer !== undefined) return { _tag: "Answered", answer }
  if (evidence !== null && evidence.source === "circuit-open") return { _tag: "Failed", reason: "circuit_open" }
  // The `error` posture failed the request on an open breaker (the route reported, no call was made).
  if (
    evidence === null && record.judge === null && record.posture !== null && record.error === "upstream_unavailable"
  ) {
    return { _tag: "Failed", reason: "circuit_open" }
  }
  if (record.judge !== null && record.judge.outcome !== "ok" && record.judge.outcome !== "interrupted") {
    return { _tag: "Failed", reason: record.judge.outcome }
  }
  return { _tag: "None" }
}

/** Why a decision with this evidence was routed without a verdict, if it was. */
export const withoutVerdictReason = (evidence: Evidence.Evidence): string | undefined =>
  "reason" in evidence && typeof evidence.reason === "string"
    ? evidence.reason
    : evidence.source === "circuit-open"
    ? "circuit_open"
    : undefined

/** The stage facts of a record: its evidence's, else those told before its classifier failed it. */
export const stageFactsOf = (record: Decided): Evidence.StageFacts | undefined =>
  (record.evidence !== null && "stage" in record.evidence ? record.evidence.stage : undefined) ?? record.stage

/** A delegated sub-agent request: its route's `subagents` table decided it, not the route's algorithm. */
export const isDelegated = (record: Decided): boolean => record.evidence !== null && record.evidence.subagent === true
