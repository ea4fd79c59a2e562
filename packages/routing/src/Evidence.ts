/**
 * Evidence: the one record per routed request that says why its target was chosen. Returned by
 * `/v1/decision`, set on the `libsy.run` span, summarised in `x-switchyard-evidence-source`.
 */
import * as Schema from "effect/Schema"
import { Boundary } from "./judge/Verdict.js"

/**
 * Why a judged request was routed without a verdict (a bounded label set, also the
 * `reason` label of `switchyard_classifier_fail_open_total`); for an advisor, why its consultation
 * failed (`switchyard_advisor_gate_consult_failures_total`; never `parse_error`, which is the
 * `unparseable` verdict).
 */
export const Reason = Schema.Literal(
  "timeout",
  "transport",
  "upstream_5xx",
  "upstream_non_5xx",
  "invalid_response",
  "parse_error",
  "circuit_open"
)
export type Reason = typeof Reason.Type

/**
 * What decided a `stage_router` (or `auto`, or `composite`) turn (the `decision_source` label of
 * `switchyard_stage_router_routing_decisions_total`): a hard `override` (critical error, repeated
 * failure or a compacted context), a settled turn (`tests_passed`), the scorer past
 * `confidence_threshold` (`dimensions`), the capable hold after a signal-driven escalation
 * (`capable_hold`), the classifier's verdict (`llm-classifier`, a fresh one or the session's stored
 * one), or nothing — the picker's default tier, or a composite route's tier without a verdict
 * (`fall_open`).
 */
export const StageDecisionSource = Schema.Literal(
  "override",
  "tests_passed",
  "dimensions",
  "llm-classifier",
  "fall_open",
  "capable_hold"
)
export type StageDecisionSource = typeof StageDecisionSource.Type

/**
 * A `stage_router` turn's facts: what decided it, the tier it went to, the scorer's signed `score`
 * and `confidence` and its four inputs, the handoff note the answer call carries, if any, and when
 * the signals forced the capable tier, why (`override_reason`; also on a turn the capable hold
 * decided).
 */
export const StageFacts = Schema.Struct({
  decision_source: StageDecisionSource,
  override_reason: Schema.optional(Schema.Literal("repeated_failure", "critical_error", "compaction")),
  tier: Schema.Literal("capable", "efficient"),
  score: Schema.Number,
  confidence: Schema.Number,
  severity: Schema.Number,
  spinning: Schema.Number,
  exploring: Schema.Number,
  production_intensity: Schema.Number,
  handoff_note: Schema.optional(Schema.Literal("escalation", "deescalation"))
})
export type StageFacts = typeof StageFacts.Type

/** Set on a `stage_router` route's classifier evidence: the turn's stage facts. */
const stage = Schema.optional(StageFacts)

/** A `passthrough` route chose its only target. */
export const Passthrough = Schema.Struct({ source: Schema.Literal("passthrough") })
/** A `random` route made a weighted pick. */
export const Random = Schema.Struct({ source: Schema.Literal("random") })
/**
 * The request continued a Responses answer by id: it went back to the target that served that
 * answer, without running the route's algorithm (no judge call).
 */
export const Continuation = Schema.Struct({ source: Schema.Literal("continuation") })
/** A `noop` route answered by itself. */
export const Noop = Schema.Struct({ source: Schema.Literal("noop") })
/**
 * The model of the judge whose verdict was used, on a verdict's evidence: set only when it was not
 * the route's first judge (a `classifier_fallback` judge, or a hedge).
 */
const usedJudge = Schema.optionalWith(Schema.String, { exact: true })

/** A judge of a chain that failed before the one whose verdict (or failure) the evidence names. */
export const JudgeFallback = Schema.Struct({ model: Schema.String, reason: Reason })
export type JudgeFallback = typeof JudgeFallback.Type

/** A fresh valid verdict decided. */
export const Classifier = Schema.Struct({
  source: Schema.Literal("llm-classifier"),
  judge_model: usedJudge,
  score: Schema.Number,
  threshold: Schema.Number,
  boundary: Boundary,
  stage
})
/** A custom classifier's fresh valid verdict named the configured label `label` at its selector. */
export const CustomClassifier = Schema.Struct({
  source: Schema.Literal("llm-classifier"),
  label: Schema.String,
  judge_model: usedJudge
})
/**
 * A custom classifier's fresh valid verdict named no configured label at its `selector` (missing,
 * not a string, or an unknown label): the route abstained and chose its `default_target`.
 */
export const Abstained = Schema.Struct({
  source: Schema.Literal("abstained"),
  selector: Schema.String,
  judge_model: Schema.String
})
/**
 * The trigger held the session's stored target; no judge call was made. `previous_source` says
 * which verdict stored it: one the request waited for (`llm-classifier`), or one that landed after
 * its request's deadline (`llm-classifier-late`, `late_verdict_ms`).
 */
export const Affinity = Schema.Struct({
  source: Schema.Literal("affinity"),
  previous_source: Schema.Literal("llm-classifier", "llm-classifier-late"),
  stage
})
/** The judge failed or its verdict was invalid; the session's stored target was kept. */
export const Retained = Schema.Struct({
  source: Schema.Literal("retained"),
  reason: Reason,
  judge_model: Schema.String,
  stage
})
/**
 * The judge failed or its verdict was invalid; the route's default was chosen (capability: the
 * strong target; custom: `default_target`).
 */
export const FailOpen = Schema.Struct({
  source: Schema.Literal("fail-open"),
  reason: Reason,
  judge_model: Schema.String,
  stage
})

/**
 * The judge was not consulted because its LLM client's circuit breaker is open (posture
 * `fail_open`); the session's stored target was kept, else the route's default (strong /
 * `default_target`) was chosen.
 */
export const CircuitOpen = Schema.Struct({
  source: Schema.Literal("circuit-open"),
  judge_model: Schema.String,
  stage
})

/**
 * A `stage_router` route decided from its tool-result signals alone (`override`, `tests_passed`,
 * `dimensions`), or fell to the picker's default tier with no classifier configured (`fall_open`).
 * Its classifier's decisions carry the classifier's evidence (`llm-classifier`, `affinity`,
 * `fail-open`, `circuit-open`) with the same `stage` facts.
 */
export const StageRouter = Schema.Struct({
  source: Schema.Literal("stage_router"),
  stage: StageFacts
})

/** The bounded trouble pattern an escalation verdict names (`none` when it names none). */
export const EscalationCategory = Schema.Literal(
  "none",
  "repetition",
  "false_progress",
  "drift",
  "desperation",
  "capability_gap"
)

/**
 * An escalation route: `escalate` / `decline` — the judge's verdict on the weak turn (`streak`:
 * consecutive escalate verdicts after it; at `confirmations` the session latched and strong
 * answered; `category` / `new_evidence` as the verdict gave them); `latched` — the session was
 * already latched, strong answered with no judge call; `weak_failed` — the weak target overflowed
 * its context or its transport failed, strong answered. With a `deescalation` table: `cooldown` —
 * a weak turn served unjudged after a forced return (`cooldown`: such turns left); `retain` /
 * `pending` / `release` — the judge's verdict on a strong turn (escalate; a decline below, or at,
 * `deescalation.confirmations`, `release_streak` counting them; `release` returns the next request
 * to weak); `strong_fallback` — the strong target failed and the weak one answered, unjudged.
 * Strong-phase evidence carries `strong_calls` (strong turns so far, this one included).
 */
export const Escalation = Schema.Struct({
  source: Schema.Literal("escalation"),
  verdict: Schema.Literal(
    "escalate",
    "decline",
    "latched",
    "weak_failed",
    "cooldown",
    "retain",
    "pending",
    "release",
    "strong_fallback"
  ),
  streak: Schema.Number,
  confirmations: Schema.Number,
  category: Schema.optionalWith(EscalationCategory, { exact: true }),
  new_evidence: Schema.optionalWith(Schema.Boolean, { exact: true }),
  strong_calls: Schema.optionalWith(Schema.Number, { exact: true }),
  release_streak: Schema.optionalWith(Schema.Number, { exact: true }),
  cooldown: Schema.optionalWith(Schema.Number, { exact: true }),
  judge_model: usedJudge
})

/** What made the advisor gate review a turn (also the `trigger` label of the review metric). */
export const AdvisorTrigger = Schema.Literal("no_tool_call", "pattern", "stall")
export type AdvisorTrigger = typeof AdvisorTrigger.Type

/**
 * Why the advisor gate did not consult: the turn did not trigger a review (`no_trigger`), the
 * scope's `max_reviews` are used up (`budget_exhausted`), or the scope had 3 failed consults
 * (`consult_failures`).
 */
export const AdvisorSkip = Schema.Literal("no_trigger", "budget_exhausted", "consult_failures")
export type AdvisorSkip = typeof AdvisorSkip.Type

/**
 * An `advisor` route: the advisor's verdict on the executor's turn (`approve`: released; `redo`:
 * discarded and answered again; `unparseable`: released), with the `trigger` that asked for the
 * review, or `skipped` with why no review happened.
 */
export const Advisor = Schema.Struct({
  source: Schema.Literal("advisor"),
  verdict: Schema.Literal("approve", "redo", "unparseable", "skipped"),
  trigger: Schema.optional(AdvisorTrigger),
  skipped: Schema.optional(AdvisorSkip),
  advisor_model: Schema.String
})

/**
 * An `advisor` route whose consultation failed (`reason`) and whose `fail_open` posture released
 * the executor's turn without the advisor's verdict.
 */
export const AdvisorFailOpen = Schema.Struct({
  source: Schema.Literal("advisor"),
  reason: Reason,
  trigger: AdvisorTrigger,
  advisor_model: Schema.String
})

/**
 * Every evidence record, discriminated by `source` (the two `llm-classifier` records by `label`,
 * the two `advisor` records by `reason`), each with an optional `subagent: true`: the route's
 * `subagents` table decided the request (delegated sub-agent work), not its parent algorithm —
 * e.g. `{"source": "passthrough", "subagent": true}` for a fixed sub-agent target, or a custom
 * classifier's records (`llm-classifier`, `abstained`, `affinity`, `retained`, `fail-open`,
 * `circuit-open`) marked so.
 */
export const Evidence = Schema.extend(
  Schema.Union(
    Passthrough,
    Random,
    Noop,
    Continuation,
    Classifier,
    CustomClassifier,
    Abstained,
    Affinity,
    Retained,
    FailOpen,
    CircuitOpen,
    StageRouter,
    Escalation,
    Advisor,
    AdvisorFailOpen
  ),
  Schema.Struct({
    subagent: Schema.optionalWith(Schema.Literal(true), { exact: true }),
    /** The judges of the route's chain that failed before the one named (`classifier_fallback`). */
    judge_fallbacks: Schema.optionalWith(Schema.Array(JudgeFallback), { exact: true }),
    /** The verdict came from a judge asked as a hedge (`classifier_hedge_ms`). */
    hedged: Schema.optionalWith(Schema.Literal(true), { exact: true })
  })
)
export type Evidence = typeof Evidence.Type

/**
 * A judge-using evidence with what its judge chain came to (`JudgeChain.Trail`): unchanged when the
 * route's first judge answered (or failed alone) without a hedge; else `judge_model` names the judge
 * whose verdict was used or whose failure ended the chain, `judge_fallbacks` the judges that failed
 * before it, and `hedged` a verdict from a hedge. Evidence of no judge is never changed.
 */
export const withTrail = (
  evidence: Evidence,
  trail: {
    readonly judgeModel: string
    readonly fallbacks: ReadonlyArray<JudgeFallback>
    readonly hedged: boolean
  } | undefined
): Evidence => {
  if (trail === undefined || (trail.fallbacks.length === 0 && !trail.hedged)) return evidence
  const chain = {
    judge_model: trail.judgeModel,
    ...(trail.fallbacks.length === 0 ? {} : { judge_fallbacks: trail.fallbacks }),
    ...(trail.hedged ? { hedged: true as const } : {})
  }
  switch (evidence.source) {
    case "llm-classifier":
    case "abstained":
    case "retained":
    case "fail-open":
    case "circuit-open":
    case "escalation":
      return { ...evidence, ...chain }
    default:
      return evidence
  }
}

/** The `source` values. */
export type Source = Evidence["source"]

/** Span attributes of a stage router turn's facts (`evidence.stage.*`). */
const stageAttributes = (facts: StageFacts | undefined): Record<string, string | number> =>
  facts === undefined ? {} : {
    "evidence.stage.decision_source": facts.decision_source,
    "evidence.stage.tier": facts.tier,
    "evidence.stage.score": facts.score,
    "evidence.stage.confidence": facts.confidence,
    ...(facts.handoff_note === undefined ? {} : { "evidence.stage.handoff_note": facts.handoff_note }),
    ...(facts.override_reason === undefined ? {} : { "evidence.stage.override_reason": facts.override_reason })
  }

/**
 * Span attributes of an evidence record (`evidence.*`, `evidence.stage.*` on a stage router's,
 * `evidence.subagent` only when true).
 */
export const spanAttributes = (evidence: Evidence): Record<string, string | number | boolean> => {
  const attributes = "stage" in evidence
    ? { ...sourceAttributes(evidence), ...stageAttributes(evidence.stage) }
    : sourceAttributes(evidence)
  return evidence.subagent === true ? { ...attributes, "evidence.subagent": true } : attributes
}

/** Mark a record as decided by a route's `subagents` table. */
export const asSubagent = (evidence: Evidence): Evidence => ({ ...evidence, subagent: true })

const sourceAttributes = (evidence: Evidence): Record<string, string | number> => {
  switch (evidence.source) {
    case "llm-classifier":
      return "label" in evidence ? { "evidence.source": evidence.source, "evidence.label": evidence.label } : {
        "evidence.source": evidence.source,
        "evidence.score": evidence.score,
        "evidence.threshold": evidence.threshold,
        "evidence.boundary": evidence.boundary
      }
    case "abstained":
      return {
        "evidence.source": evidence.source,
        "evidence.selector": evidence.selector,
        "evidence.judge_model": evidence.judge_model
      }
    case "retained":
    case "fail-open":
      return {
        "evidence.source": evidence.source,
        "evidence.reason": evidence.reason,
        "evidence.judge_model": evidence.judge_model
      }
    case "circuit-open":
      return {
        "evidence.source": evidence.source,
        "evidence.reason": "circuit_open",
        "evidence.judge_model": evidence.judge_model
      }
    case "escalation":
      return {
        "evidence.source": evidence.source,
        "evidence.verdict": evidence.verdict,
        "evidence.streak": evidence.streak,
        "evidence.confirmations": evidence.confirmations
      }
    case "affinity":
      return { "evidence.source": evidence.source, "evidence.previous_source": evidence.previous_source }
    case "advisor":
      return "reason" in evidence
        ? {
          "evidence.source": evidence.source,
          "evidence.reason": evidence.reason,
          "evidence.trigger": evidence.trigger,
          "evidence.advisor_model": evidence.advisor_model
        }
        : {
          "evidence.source": evidence.source,
          "evidence.verdict": evidence.verdict,
          ...(evidence.trigger === undefined ? {} : { "evidence.trigger": evidence.trigger }),
          ...(evidence.skipped === undefined ? {} : { "evidence.skipped": evidence.skipped }),
          "evidence.advisor_model": evidence.advisor_model
        }
    default:
      return { "evidence.source": evidence.source }
  }
}
