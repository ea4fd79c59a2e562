/**
 * How each judge-using route re-decides its logged requests in a policy replay (see
 * `PolicyReplay`): the facts a line gives (the judge's verdict, or how its call failed; a stage
 * router turn's signal facts; an escalation verdict), and the route's decision procedure run over
 * them under other settings, with the session state the route keeps.
 *
 * Each replayer mirrors one route module and must agree with it exactly: replaying a log under the
 * settings that wrote it reproduces every logged outcome (the property tests in
 * `server/test/PolicyReplay.test.ts` run the real routes).
 *
 * @internal
 */
import { maxFailedConsults } from "@switchyard-ts/routing/AdvisorRoute"
import type * as Evidence from "@switchyard-ts/routing/Evidence"
import * as Policy from "@switchyard-ts/routing/Policy"
import * as StageSignals from "@switchyard-ts/routing/StageSignals"
import type { Boundary } from "@switchyard-ts/routing/Verdict"
import type * as RoutingLog from "../RoutingLog.js"

type Line = RoutingLog.ResponseLine

/** What one request came to: where it went and what decided it, the failure of its routing, or unknown. */
export type Outcome =
  | {
    readonly _tag: "Routed"
    /** A capability / escalation tier, a stage router tier, or a custom route's model id. */
    readonly destination: string
    /** The evidence source (a stage router: its decision source; an escalation route: its verdict). */
    readonly source: string
    /** Why it was routed without a verdict. */
    readonly reason?: string
  }
  | { readonly _tag: "Failed"; readonly reason: string }
  | { readonly _tag: "Unknown" }

/** A route's replay procedure. */
export interface Replayer {
  /** What kind of route it is (in the report). */
  readonly kind: "capability" | "custom" | "stage_router" | "escalation" | "advisor"
  /** The `algorithm` its lines carry; lines of another algorithm are not replayed. */
  readonly algorithm: string
  /** Its destinations, in the order a report lists them. */
  readonly destinations: ReadonlyArray<string>
  /** What the log says a line came to. */
  readonly logged: (line: Line) => Outcome
  /**
   * A fresh replay (its own session state): each call re-decides the route's next line, in file
   * order, under this replayer's settings.
   */
  readonly start: () => (line: Line) => Outcome
}

const routed = (destination: string, source: string, reason?: string): Outcome =>
  reason === undefined ? { _tag: "Routed", destination, source } : { _tag: "Routed", destination, source, reason }
const unknown: Outcome = { _tag: "Unknown" }

/** What the log says the judge did for a request. */
type JudgeFact<V> =
  | { readonly _tag: "Verdict"; readonly verdict: V }
  /** The judge could not be consulted (`timeout`, `transport`, `upstream_*`): the posture decides. */
  | { readonly _tag: "CallFailed"; readonly reason: string }
  /** It answered unusably (`invalid_response`, `parse_error`): no verdict under both postures. */
  | { readonly _tag: "Invalid"; readonly reason: string }
  /** The breaker refused the call. */
  | { readonly _tag: "Refused" }
  | { readonly _tag: "None" }

const invalidReasons: ReadonlyArray<string> = ["invalid_response", "parse_error"]

/** The fact of a consultation that gave no verdict, by its evidence reason. */
const failedFact = (reason: string): NoVerdict =>
  reason === "circuit_open"
    ? { _tag: "Refused" }
    : invalidReasons.includes(reason)
    ? { _tag: "Invalid", reason }
    : { _tag: "CallFailed", reason }

/** A judge fact without a verdict. */
type NoVerdict = Extract<JudgeFact<never>, { readonly _tag: "CallFailed" | "Invalid" | "Refused" }>

/**
 * What a posture makes of a consultation without a verdict (as `Consultation.run` folds it): `error`
 * fails the request on a call failure or a refusal by the breaker; anything else is routed
 * `without` a verdict (source `fail-open`, `circuit-open` for the breaker).
 */
const unverdicted = (
  posture: "error" | "fail_open",
  fact: NoVerdict,
  without: (reason: string, source: "fail-open" | "circuit-open") => Outcome
): Outcome => {
  const reason = fact._tag === "Refused" ? "circuit_open" : fact.reason
  return posture === "error" && fact._tag !== "Invalid"
    ? { _tag: "Failed", reason }
    : without(reason, fact._tag === "Refused" ? "circuit-open" : "fail-open")
}

const judgeFactOf = <V>(line: Line, verdictOf: (evidence: Evidence.Evidence) => V | undefined): JudgeFact<V> => {
  const evidence = line.evidence
  const verdict = evidence === null ? undefined : verdictOf(evidence)
  if (verdict !== undefined) return { _tag: "Verdict", verdict }
  if (evidence !== null && evidence.source === "circuit-open") return { _tag: "Refused" }
  // The `error` posture failed the request on an open breaker (the route reported, no call was made).
  if (evidence === null && line.judge === null && line.posture !== null && line.error === "upstream_unavailable") {
    return { _tag: "Refused" }
  }
  if (line.judge !== null && line.judge.outcome !== "ok" && line.judge.outcome !== "interrupted") {
    return failedFact(line.judge.outcome)
  }
  return { _tag: "None" }
}

/** A line without evidence: the failure of its routing when the log says the judge caused it, else unknown. */
const failureOf = (line: Line): Outcome => {
  const fact = judgeFactOf(line, () => undefined)
  return fact._tag === "CallFailed"
    ? { _tag: "Failed", reason: fact.reason }
    : fact._tag === "Refused"
    ? { _tag: "Failed", reason: "circuit_open" }
    : unknown
}

/** Why a line with evidence was routed without a verdict, if it was. */
const reasonOf = (evidence: Evidence.Evidence): string | undefined =>
  "reason" in evidence && typeof evidence.reason === "string"
    ? evidence.reason
    : evidence.source === "circuit-open"
    ? "circuit_open"
    : undefined

/**
 * Drop a session's replayed state where the log says the route found none stored (it expired, was
 * evicted or ended by `session_final`): only verdicts the log holds store state, so a replay has
 * nothing the logged run did not have — except what the logged run had forgotten by then.
 */
const forget = (state: Map<string, unknown>, line: Line, storeRead: boolean) => {
  if (storeRead && line.session_id !== null && line.stored_before === null) state.delete(line.session_id)
}

/** The classifier cascade every classifier mode shares (`routing/src/internal/classifierCascade.ts`). */
interface Cascade<V> {
  readonly trigger: "every_request" | "user_turn" | "new_session"
  readonly posture: "error" | "fail_open"
  /** Keep a session's stored decision when routing without a verdict (a stage router does not). */
  readonly retain: boolean
  /** A verdict's destination, source and what the session stores. */
  readonly judged: (verdict: V) => { readonly destination: string; readonly source: string; readonly stored: string }
  /** The destination a stored value stands for under these settings; undefined: not one of them. */
  readonly fromStored: (stored: string) => string | undefined
  /** The destination without a verdict or a stored decision. */
  readonly fallback: string
}

/** One request through the cascade: `stored` is the replay's session state (value: what `judged` stores). */
const cascadeStep = <V>(cascade: Cascade<V>, stored: Map<string, string>, line: Line, fact: JudgeFact<V>): Outcome => {
  const key = cascade.trigger === "every_request" ? null : line.session_id
  const value = key === null ? undefined : stored.get(key)
  const previous = value === undefined ? undefined : cascade.fromStored(value)
  const reuse = cascade.trigger === "new_session" || (cascade.trigger === "user_turn" && !line.user_turn)
  if (reuse && previous !== undefined) return routed(previous, "affinity")
  const withoutVerdict = (reason: string, source: "fail-open" | "circuit-open"): Outcome =>
    cascade.retain && previous !== undefined
      ? routed(previous, source === "fail-open" ? "retained" : source, reason)
      : routed(cascade.fallback, source, reason)
  switch (fact._tag) {
    case "Verdict": {
      const judged = cascade.judged(fact.verdict)
      if (key !== null) stored.set(key, judged.stored)
      return routed(judged.destination, judged.source)
    }
    case "None":
      return unknown
    default:
      return unverdicted(cascade.posture, fact, withoutVerdict)
  }
}

/** A replay through `cascade`, verdicts read from the evidence by `verdictOf`; delegated lines as logged. */
const cascadeReplay = <V>(
  logged: (line: Line) => Outcome,
  cascade: Cascade<V>,
  verdictOf: (evidence: Evidence.Evidence) => V | undefined
) =>
() => {
  const stored = new Map<string, string>()
  return stepping(logged, (line) => {
    forget(stored, line, cascadeReadStore(line))
    return cascadeStep(cascade, stored, line, judgeFactOf(line, verdictOf))
  })
}

/** Whether the logged run read the session store for this line (a classifier route's trigger says). */
const cascadeReadStore = (line: Line) => line.trigger !== null && line.trigger !== "every_request"

/** A delegated sub-agent request: its route's `subagents` table decided it, not the route's algorithm. */
const delegated = (line: Line) => line.evidence !== null && line.evidence.subagent === true

/** The destination delegated sub-agent requests are counted under; they replay as logged. */
export const subagentDestination = "sub-agent (as logged)"

/** `step` for the route's own lines; delegated lines keep their logged outcome. */
const stepping = (logged: (line: Line) => Outcome, step: (line: Line) => Outcome) => (line: Line): Outcome =>
  delegated(line) ? logged(line) : step(line)

// ---------------------------------------------------------------------------------------------
// Capability classifier routes

/** The settings of a capability classifier route that a replay changes. */
export interface CapabilitySettings {
  readonly baseThreshold: number
  readonly thresholdStep: number
  readonly classifyTrigger: "every_request" | "user_turn" | "new_session"
  readonly judgeFailure: "error" | "fail_open"
}

interface CapabilityVerdict {
  readonly pSolve: number
  readonly boundary: Boundary
}

const capabilityVerdictOf = (evidence: Evidence.Evidence): CapabilityVerdict | undefined =>
  evidence.source === "llm-classifier" && "score" in evidence
    ? { pSolve: evidence.score, boundary: evidence.boundary }
    : undefined

/** What the log says a line with a tiered decision came to (`tier` of its decision). */
const tieredLogged = (line: Line, tierOf: (line: Line, evidence: Evidence.Evidence) => string | undefined) => {
  if (delegated(line)) return routed(subagentDestination, line.evidence?.source ?? "")
  const evidence = line.evidence
  if (evidence === null) return failureOf(line)
  const tier = tierOf(line, evidence)
  return tier === undefined ? unknown : routed(tier, evidence.source, reasonOf(evidence))
}

const policyCascade = (
  settings: CapabilitySettings,
  tierOf: (tier: Policy.Tier) => string,
  fallback: string,
  retain: boolean
): Cascade<CapabilityVerdict> => ({
  trigger: settings.classifyTrigger,
  posture: settings.judgeFailure,
  retain,
  judged: (verdict) => {
    const tier = tierOf(
      Policy.choose(
        { p_solve: verdict.pSolve, capability_boundary: verdict.boundary },
        settings.baseThreshold,
        settings.thresholdStep
      ).tier
    )
    return { destination: tier, source: "llm-classifier", stored: tier }
  },
  fromStored: (stored) => stored,
  fallback
})

/** A capability classifier route's replay: weak or strong by the logged p_solve under these thresholds. */
export const capability = (settings: CapabilitySettings): Replayer => {
  const logged = (line: Line) =>
    tieredLogged(line, (l) => (l.tier === "weak" || l.tier === "strong" ? l.tier : undefined))
  const cascade = policyCascade(settings, (tier) => tier, "strong", true)
  return {
    kind: "capability",
    algorithm: "llm_task_classifier",
    destinations: ["weak", "strong"],
    logged,
    start: cascadeReplay(logged, cascade, capabilityVerdictOf)
  }
}

// ---------------------------------------------------------------------------------------------
// Custom classifier routes

/** The settings of a custom classifier route that a replay changes. */
export interface CustomSettings {
  /** `targets`: label (target table name) → model id. */
  readonly targets: ReadonlyArray<{ readonly name: string; readonly id: string }>
  readonly defaultTarget: { readonly name: string; readonly id: string }
  readonly classifyTrigger: "every_request" | "user_turn" | "new_session"
  readonly judgeFailure: "error" | "fail_open"
}

/** A custom verdict: the configured label it named, or none (the route abstained). */
interface CustomVerdict {
  readonly label: string | null
}

const customVerdictOf = (evidence: Evidence.Evidence): CustomVerdict | undefined =>
  evidence.source === "llm-classifier" && "label" in evidence
    ? { label: evidence.label }
    : evidence.source === "abstained"
    ? { label: null }
    : undefined

/**
 * A custom classifier route's replay: the logged label goes to the target of that name under these
 * settings (`default_target` when it has none; a logged abstention stays one).
 */
export const custom = (settings: CustomSettings): Replayer => {
  const byName = (name: string) => settings.targets.find((target) => target.name === name)
  const logged = (line: Line) => tieredLogged(line, (l) => l.selected_model ?? undefined)
  const cascade: Cascade<CustomVerdict> = {
    trigger: settings.classifyTrigger,
    posture: settings.judgeFailure,
    retain: true,
    judged: (verdict) => {
      const target = verdict.label === null ? undefined : byName(verdict.label)
      return target === undefined
        ? { destination: settings.defaultTarget.id, source: "abstained", stored: settings.defaultTarget.name }
        : { destination: target.id, source: "llm-classifier", stored: target.name }
    },
    fromStored: (stored) => byName(stored)?.id,
    fallback: settings.defaultTarget.id
  }
  return {
    kind: "custom",
    algorithm: "llm_task_classifier",
    destinations: [...new Set(settings.targets.map((target) => target.id))],
    logged,
    start: cascadeReplay(logged, cascade, customVerdictOf)
  }
}

// ---------------------------------------------------------------------------------------------
// Stage routers

/** The settings of a stage router that a replay changes. */
export interface StageSettings {
  readonly picker: "efficient_first" | "capable_first"
  readonly confidenceThreshold: number
  /** The `[classifier]` table's settings; none: undecided turns go to the picker's default. */
  readonly classifier: CapabilitySettings | undefined
}

const stageFactsOf = (line: Line): Evidence.StageFacts | undefined =>
  (line.evidence !== null && "stage" in line.evidence ? line.evidence.stage : undefined) ?? line.stage

/**
 * A stage router's replay from each turn's logged signal facts: an `override` or `tests_passed`
 * turn stays as it was; the scorer's confidence against this `confidence_threshold` decides the
 * rest (`dimensions`), else this classifier (with the logged verdict), else the picker's default.
 */
export const stage = (settings: StageSettings): Replayer => {
  const fallback = StageSignals.defaultTier(settings.picker)
  const logged = (line: Line): Outcome => {
    if (delegated(line)) return routed(subagentDestination, line.evidence?.source ?? "")
    const facts = stageFactsOf(line)
    if (line.evidence === null || facts === undefined) return line.evidence === null ? failureOf(line) : unknown
    return routed(facts.tier, facts.decision_source, reasonOf(line.evidence))
  }
  const cascade = settings.classifier === undefined
    ? undefined
    : policyCascade(settings.classifier, (tier) => (tier === "weak" ? "efficient" : "capable"), fallback, false)
  return {
    kind: "stage_router",
    algorithm: "stage_router",
    destinations: ["capable", "efficient"],
    logged,
    start: () => {
      const stored = new Map<string, string>()
      return stepping(logged, (line) => {
        const facts = stageFactsOf(line)
        if (facts === undefined) return unknown
        if (facts.decision_source === "override" || facts.decision_source === "tests_passed") {
          return routed(facts.tier, facts.decision_source)
        }
        if (facts.confidence >= settings.confidenceThreshold) {
          return routed(facts.score > 0 ? "capable" : "efficient", "dimensions")
        }
        if (cascade === undefined) return routed(fallback, "fall_open")
        forget(stored, line, cascadeReadStore(line))
        const outcome = cascadeStep(cascade, stored, line, judgeFactOf(line, capabilityVerdictOf))
        return outcome._tag !== "Routed"
          ? outcome
          : outcome.source === "llm-classifier" || outcome.source === "affinity"
          ? routed(outcome.destination, "llm-classifier")
          : routed(outcome.destination, "fall_open", outcome.reason)
      })
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Escalation routes

/** The settings of an escalation route that a replay changes. */
export interface EscalationSettings {
  readonly confirmations: number
  readonly judgeFailure: "error" | "fail_open"
}

type EscalationVerdict = "escalate" | "decline"

const escalationVerdictOf = (evidence: Evidence.Evidence): EscalationVerdict | undefined =>
  evidence.source === "escalation" && (evidence.verdict === "escalate" || evidence.verdict === "decline")
    ? evidence.verdict
    : undefined

/** A session's escalation state in a replay. */
type EscalationState = { readonly latched: true } | { readonly latched: false; readonly streak: number }

/**
 * A request the weak target's own failure failed (not one that routes to strong): no evidence, the
 * tier `weak`. Lines of older logs do not say so (no classifier facts at all): their judge fact is none.
 */
const weakCallFailed = (line: Line) => line.evidence === null && line.tier === "weak"

/**
 * An escalation route's replay: the logged escalate / decline verdicts on the weak turns drive each
 * session's streak to these `confirmations`; a judge failure goes by this posture. A turn a latched
 * session answered with strong (no weak turn, no verdict logged) is unknown when the replay has the
 * session unlatched; so is a request the weak target's failure failed, unless the replay has the
 * session latched (then no weak call is made).
 */
export const escalation = (settings: EscalationSettings): Replayer => {
  const logged = (line: Line): Outcome => {
    const evidence = line.evidence
    if (evidence === null) return weakCallFailed(line) ? unknown : failureOf(line)
    if (evidence.source === "escalation") {
      const strong = evidence.verdict === "latched" || evidence.verdict === "weak_failed" ||
        (evidence.verdict === "escalate" && evidence.streak >= evidence.confirmations)
      return routed(strong ? "strong" : "weak", evidence.verdict)
    }
    return routed("weak", evidence.source, reasonOf(evidence))
  }
  return {
    kind: "escalation",
    algorithm: "llm_task_classifier",
    destinations: ["weak", "strong"],
    logged,
    start: () => {
      const state = new Map<string, EscalationState>()
      return (line) => {
        const key = line.session_id
        if (key !== null) forget(state, line, line.posture !== null)
        const current = key === null ? undefined : state.get(key)
        if (current?.latched === true) return routed("strong", "latched")
        if (weakCallFailed(line)) return unknown
        const streak = current === undefined ? 0 : current.streak
        const evidence = line.evidence
        if (evidence !== null && evidence.source === "escalation") {
          if (evidence.verdict === "latched") return unknown
          if (evidence.verdict === "weak_failed") return routed("strong", "weak_failed")
        }
        const fact = judgeFactOf(line, escalationVerdictOf)
        switch (fact._tag) {
          case "Verdict": {
            const escalate = fact.verdict === "escalate"
            const next: EscalationState = !escalate
              ? { latched: false, streak: 0 }
              : streak + 1 >= settings.confirmations
              ? { latched: true }
              : { latched: false, streak: streak + 1 }
            if (key !== null) state.set(key, next)
            return next.latched ? routed("strong", "escalate") : routed("weak", fact.verdict)
          }
          case "None":
            return unknown
          default:
            // The weak turn is served; `retained` when the session has state.
            return unverdicted(settings.judgeFailure, fact, (reason, source) =>
              routed(
                "weak",
                source === "fail-open" && current !== undefined ? "retained" : source,
                reason
              ))
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Advisor routes

/** The settings of an advisor route that a replay changes. */
export interface AdvisorSettings {
  /** `fail_open`: a failed consultation releases the turn (else the request fails). */
  readonly failOpen: boolean
  /** `max_reviews`: reviews per scope. */
  readonly maxReviews: number
}

/** Where an advisor route's request went: the executor's turn released, or answered again after a REDO. */
const released = "released"
const redone = "redone"

/**
 * An advisor route's replay: each scope's (session's, else the instance's) review budget is re-run
 * under these `max_reviews` with the logged consultations; a failed consultation goes by this
 * `fail_open`. A request the replay would review but whose logged run skipped it before the
 * executor answered (its scope was spent) is unknown: the log cannot say whether the turn triggered.
 */
export const advisor = (settings: AdvisorSettings): Replayer => {
  const logged = (line: Line): Outcome => {
    const evidence = line.evidence
    if (evidence === null) {
      const consult = line.advisor?.consult
      return consult === undefined || consult === null || consult === "approve" || consult === "redo"
        ? unknown
        : { _tag: "Failed", reason: consult }
    }
    if (evidence.source !== "advisor") return unknown
    if ("reason" in evidence) return routed(released, "fail-open", evidence.reason)
    switch (evidence.verdict) {
      case "approve":
        return routed(released, "approve")
      case "redo":
        return routed(redone, "redo")
      case "unparseable":
        return routed(released, "unparseable")
      case "skipped":
        return routed(released, `skipped: ${evidence.skipped ?? "no_trigger"}`)
    }
  }
  return {
    kind: "advisor",
    algorithm: "advisor_gate",
    destinations: [released, redone],
    logged,
    start: () => {
      const scopes = new Map<string, { reviews: number; failedConsults: number }>()
      return (line) => {
        const facts = line.advisor
        if (facts === undefined) return unknown
        const key = line.session_id ?? "\u0000instance"
        // The logged scope was fresh (new, evicted, or dropped by `session_final`): so is the replay's.
        if (facts.reviews_before === 0 && facts.failed_consults_before === 0) scopes.delete(key)
        const scope = scopes.get(key) ?? { reviews: 0, failedConsults: 0 }
        scopes.set(key, scope)
        if (scope.failedConsults >= maxFailedConsults) return routed(released, "skipped: consult_failures")
        if (scope.reviews >= settings.maxReviews) return routed(released, "skipped: budget_exhausted")
        const evidence = line.evidence
        if (facts.trigger === null) {
          // No trigger logged: the scope was spent before the executor answered, the executor failed,
          // or the turn did not trigger.
          return evidence !== null && evidence.source === "advisor" && "verdict" in evidence &&
              evidence.verdict === "skipped" && evidence.skipped === "no_trigger"
            ? routed(released, "skipped: no_trigger")
            : unknown
        }
        if (facts.consult === null) return unknown
        scope.reviews++
        switch (facts.consult) {
          case "approve":
          case "redo":
            // Without evidence the request failed after the review (the REDO's second executor call).
            return evidence === null
              ? unknown
              : facts.consult === "approve"
              ? routed(released, "approve")
              : routed(redone, "redo")
          default: {
            scope.reviews = Math.max(0, scope.reviews - 1)
            scope.failedConsults = Math.min(maxFailedConsults, scope.failedConsults + 1)
            // Released without a verdict (an unparseable reply: `unparseable`), or failed by `fail_open = false`.
            return unverdicted(
              settings.failOpen ? "fail_open" : "error",
              failedFact(facts.consult),
              (reason) =>
                reason === "parse_error" ? routed(released, "unparseable") : routed(released, "fail-open", reason)
            )
          }
        }
      }
    }
  }
}
