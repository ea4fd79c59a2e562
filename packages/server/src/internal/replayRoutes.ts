/**
 * Policy replay's reading of each judge-using route type (see `PolicyReplay`): what a routing-log
 * line says the request came to, and the facts the route's decision rules need — the judge's
 * verdict or the reason it gave none, a stage router turn's signal reading, an escalation verdict,
 * an advisor consultation. It decides nothing itself: every step runs the route module's own
 * rules (`ClassifierCascade` through `CapabilityRoute.rules` / `CustomRoute.rules` /
 * `StageRoute.classifierRules` / `CompositeRoute.classifierRules`, `StageSignals.hold`,
 * `EscalationRoute`, `AdvisorRoute`) and folds
 * a logged judge failure through `Consultation.run` with the posture combinator, exactly as the live
 * route does. Replaying a log under the settings that wrote it therefore reproduces it whenever the
 * log holds the facts (the property tests in `server/test/PolicyReplay*.test.ts` check the log's
 * completeness).
 *
 * @internal
 */
import * as AdvisorRoute from "@switchyard-ts/routing/AdvisorRoute"
import * as CapabilityRoute from "@switchyard-ts/routing/CapabilityRoute"
import * as ClassifierCascade from "@switchyard-ts/routing/ClassifierCascade"
import * as CompositeRoute from "@switchyard-ts/routing/CompositeRoute"
import * as Consultation from "@switchyard-ts/routing/Consultation"
import * as CustomRoute from "@switchyard-ts/routing/CustomRoute"
import * as EscalationPhases from "@switchyard-ts/routing/EscalationPhases"
import type * as Evidence from "@switchyard-ts/routing/Evidence"
import * as Posture from "@switchyard-ts/routing/Posture"
import * as StageRoute from "@switchyard-ts/routing/StageRoute"
import * as StageSignals from "@switchyard-ts/routing/StageSignals"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
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

/**
 * The verdicts a log says arrived late and were stored for a session (`judge` lines with
 * `late: "stored"`), as a replay meets them in file order.
 */
export interface LateVerdicts {
  /** The evidence of the newest verdict stored late for `session` and not taken yet; taking it removes it. */
  readonly take: (session: string) => Option.Option<Evidence.Evidence>
}

/** No late verdicts. */
export const noLateVerdicts: LateVerdicts = { take: () => Option.none() }

/**
 * Late verdicts gathered from a route's `judge` lines in file order (`add`): the newest stored one
 * per session, until a replay step takes it.
 */
export const lateVerdicts = (): LateVerdicts & { readonly add: (line: RoutingLog.JudgeLine) => void } => {
  const stored = new Map<string, Evidence.Evidence>()
  return {
    add: (line) => {
      if (line.late === "stored" && line.evidence !== undefined && line.session_id !== null) {
        stored.set(line.session_id, line.evidence)
      }
    },
    take: (session) => {
      const evidence = Option.fromNullable(stored.get(session))
      stored.delete(session)
      return evidence
    }
  }
}

/** A route's replay procedure. */
export interface Replayer {
  /** What kind of route it is (in the report). */
  readonly kind: "capability" | "custom" | "stage_router" | "composite" | "escalation" | "advisor"
  /** The `algorithm` its lines carry; lines of another algorithm are not replayed. */
  readonly algorithm: string
  /** Its destinations, in the order a report lists them. */
  readonly destinations: ReadonlyArray<string>
  /** What the log says a line came to. */
  readonly logged: (line: Line) => Outcome
  /**
   * A fresh replay (its own session state): each call re-decides the route's next line, in file
   * order, under this replayer's settings; `late` holds the late verdicts of the route's `judge`
   * lines read so far.
   */
  readonly start: () => (line: Line, late: LateVerdicts) => Effect.Effect<Outcome>
}

/** A request the posture failed. */
type Failed = Extract<Outcome, { readonly _tag: "Failed" }>

const routed = (destination: string, source: string, reason?: string): Outcome =>
  reason === undefined ? { _tag: "Routed", destination, source } : { _tag: "Routed", destination, source, reason }
const unknown: Outcome = { _tag: "Unknown" }

/** Why a line with evidence was routed without a verdict, if it was. */
const reasonOf = (evidence: Evidence.Evidence): string | undefined =>
  "reason" in evidence && typeof evidence.reason === "string"
    ? evidence.reason
    : evidence.source === "circuit-open"
    ? "circuit_open"
    : undefined

/** A decision's outcome: its destination, its evidence's source, and the reason it had no verdict. */
const decided = (destination: string, evidence: Evidence.Evidence, source: string = evidence.source): Outcome =>
  routed(destination, source, reasonOf(evidence))

// ---------------------------------------------------------------------------------------------
// Facts the log holds

/** What the log says the judge did for a request: its verdict, the reason it gave none, or nothing. */
type JudgeFact<V> =
  | { readonly _tag: "Verdict"; readonly verdict: V }
  | { readonly _tag: "Failed"; readonly reason: Evidence.Reason }
  | { readonly _tag: "None" }

const judgeFactOf = <V>(line: Line, verdictOf: (evidence: Evidence.Evidence) => V | undefined): JudgeFact<V> => {
  const evidence = line.evidence
  const verdict = evidence === null ? undefined : verdictOf(evidence)
  if (verdict !== undefined) return { _tag: "Verdict", verdict }
  if (evidence !== null && evidence.source === "circuit-open") return { _tag: "Failed", reason: "circuit_open" }
  // The `error` posture failed the request on an open breaker (the route reported, no call was made).
  if (evidence === null && line.judge === null && line.posture !== null && line.error === "upstream_unavailable") {
    return { _tag: "Failed", reason: "circuit_open" }
  }
  if (line.judge !== null && line.judge.outcome !== "ok" && line.judge.outcome !== "interrupted") {
    return { _tag: "Failed", reason: line.judge.outcome }
  }
  return { _tag: "None" }
}

/**
 * What a request comes to from what the log says the judge did under `posture`: the logged
 * verdict, or the logged failure put back through `Consultation.run` with the posture combinator,
 * decided by `decide`; `Failed` when the posture fails the request.
 */
const consulted = <V, A>(
  posture: Posture.Posture,
  fact: Exclude<JudgeFact<V>, { readonly _tag: "None" }>,
  decide: (outcome: Consultation.Outcome<V>) => A
): Effect.Effect<A | Failed> =>
  (fact._tag === "Verdict" ? Effect.succeed(fact.verdict) : Effect.fail(Consultation.failureOf(fact.reason, ""))).pipe(
    Consultation.run(Posture.fromConfig(posture)),
    Effect.mapError(Consultation.reasonOf),
    Effect.match({ onFailure: (reason): Failed => ({ _tag: "Failed", reason }), onSuccess: decide })
  )

/** A line without evidence: the failure of its routing when the log says the judge caused it, else unknown. */
const failureOf = (line: Line): Outcome => {
  const fact = judgeFactOf(line, () => undefined)
  return fact._tag === "Failed" && fact.reason !== "invalid_response" && fact.reason !== "parse_error"
    ? { _tag: "Failed", reason: fact.reason }
    : unknown
}

/**
 * Drop a session's replayed state where the log says the route found none stored (it expired, was
 * evicted or ended by `session_final`): only verdicts the log holds store state, so a replay has
 * nothing the logged run did not have — except what the logged run had forgotten by then.
 */
const forget = (state: Map<string, unknown>, line: Line, storeRead: boolean) => {
  if (storeRead && line.session_id !== null && line.stored_before === null) state.delete(line.session_id)
}

/** A delegated sub-agent request: its route's `subagents` table decided it, not the route's algorithm. */
const delegated = (line: Line) => line.evidence !== null && line.evidence.subagent === true

/** The destination delegated sub-agent requests are counted under; they replay as logged. */
export const subagentDestination = "sub-agent (as logged)"

/** `step` for the route's own lines; delegated lines keep their logged outcome. */
const stepping =
  (logged: (line: Line) => Outcome, step: (line: Line, late: LateVerdicts) => Effect.Effect<Outcome>) =>
  (line: Line, late: LateVerdicts): Effect.Effect<Outcome> =>
    delegated(line) ? Effect.succeed(logged(line)) : step(line, late)

// ---------------------------------------------------------------------------------------------
// Classifier routes (capability, custom, a stage router's classifier)

/** Where one request's classifier got: its selection, the failure of the request, or unknown. */
type Cascaded<S> =
  | { readonly _tag: "Selected"; readonly selected: ClassifierCascade.Selected<S> }
  | Failed
  | { readonly _tag: "Unknown" }

/**
 * Where the logged request found a verdict stored late (`stored_before.late`), the replay stores the
 * newest late verdict the log holds for the session (its `judge` line came first), as its own rules
 * judge it: what the logged request saw. Taken once; later requests see the replay's state.
 */
const storeLate = <V, S>(
  rules: ClassifierCascade.Rules<V, S>,
  state: Map<string, ClassifierCascade.Stored<S>>,
  key: string,
  line: Line,
  late: LateVerdicts,
  verdictOf: (evidence: Evidence.Evidence) => V | undefined
) => {
  if (line.stored_before?.late !== true) return
  const verdict = Option.flatMap(late.take(key), (evidence) => Option.fromNullable(verdictOf(evidence)))
  if (Option.isSome(verdict)) state.set(key, { selection: rules.judged(verdict.value).selection, late: true })
}

/**
 * One request through the classifier cascade's rules: `state` is the replay's session state (the
 * stored selections), `verdictOf` reads a verdict from its evidence (the line's, a late verdict's).
 */
const cascade = <V, S>(
  rules: ClassifierCascade.Rules<V, S>,
  posture: Posture.Posture,
  state: Map<string, ClassifierCascade.Stored<S>>,
  line: Line,
  late: LateVerdicts,
  verdictOf: (evidence: Evidence.Evidence) => V | undefined
): Effect.Effect<Cascaded<S>> => {
  // Whether the logged run read the session store: its logged trigger says.
  forget(state, line, line.trigger !== null && ClassifierCascade.keepsSessions(line.trigger))
  const key = ClassifierCascade.keepsSessions(rules.trigger) ? line.session_id : null
  if (key !== null) storeLate(rules, state, key, line, late, verdictOf)
  const stored = Option.fromNullable(key === null ? undefined : state.get(key))
  const reused = ClassifierCascade.reuse(rules, stored, line.user_turn)
  if (Option.isSome(reused)) return Effect.succeed({ _tag: "Selected", selected: reused.value })
  const fact = judgeFactOf(line, verdictOf)
  if (fact._tag === "None") return Effect.succeed({ _tag: "Unknown" })
  return consulted(posture, fact, (consultation): Cascaded<S> => {
    const next = ClassifierCascade.settle(rules, stored, consultation)
    if (key !== null && Option.isSome(next.store)) state.set(key, { selection: next.store.value, late: false })
    return { _tag: "Selected", selected: next }
  })
}

/** What a request comes to from where its classifier got: `selectedOutcome` of its selection. */
const cascaded = <S>(result: Cascaded<S>, selectedOutcome: (selected: ClassifierCascade.Selected<S>) => Outcome) =>
  result._tag === "Selected" ? selectedOutcome(result.selected) : result

/**
 * One request through the classifier cascade's rules (see {@link cascade}), `destinationOf` naming
 * a selection in the report.
 */
const cascadeStep = <V, S>(
  rules: ClassifierCascade.Rules<V, S>,
  posture: Posture.Posture,
  destinationOf: (selection: S) => string,
  state: Map<string, ClassifierCascade.Stored<S>>,
  line: Line,
  late: LateVerdicts,
  verdictOf: (evidence: Evidence.Evidence) => V | undefined,
  source: (evidence: Evidence.Evidence) => string = (evidence) => evidence.source
): Effect.Effect<Outcome> =>
  Effect.map(
    cascade(rules, posture, state, line, late, verdictOf),
    (result) =>
      cascaded(
        result,
        ({ evidence, selection }) => decided(destinationOf(selection), evidence, source(evidence))
      )
  )

/** What the log says a line with a tiered decision came to (`tier` of its decision). */
const tieredLogged = (line: Line, tierOf: (line: Line) => string | undefined): Outcome => {
  if (delegated(line)) return routed(subagentDestination, line.evidence?.source ?? "")
  const evidence = line.evidence
  if (evidence === null) return failureOf(line)
  const tier = tierOf(line)
  return tier === undefined ? unknown : routed(tier, evidence.source, reasonOf(evidence))
}

const capabilityVerdictOf = (evidence: Evidence.Evidence): CapabilityRoute.Judgement | undefined =>
  evidence.source === "llm-classifier" && "score" in evidence
    ? { p_solve: evidence.score, capability_boundary: evidence.boundary }
    : undefined

/** The settings of a capability classifier route that a replay changes: its rules' settings and its posture. */
export interface CapabilitySettings extends CapabilityRoute.Settings {
  readonly judgeFailure: Posture.Posture
}

/** A capability classifier route's replay: weak or strong by the logged p_solve under these settings. */
export const capability = (settings: CapabilitySettings): Replayer => {
  const logged = (line: Line) =>
    tieredLogged(line, (l) => (l.tier === "weak" || l.tier === "strong" ? l.tier : undefined))
  const rules = CapabilityRoute.rules(settings, "")
  return {
    kind: "capability",
    algorithm: "llm_task_classifier",
    destinations: ["weak", "strong"],
    logged,
    start: () => {
      const state = new Map<string, ClassifierCascade.Stored<"weak" | "strong">>()
      return stepping(
        logged,
        (line, late) =>
          cascadeStep(rules, settings.judgeFailure, (tier) => tier, state, line, late, capabilityVerdictOf)
      )
    }
  }
}

/** The settings of a custom classifier route that a replay changes; targets by label with their model ids. */
export interface CustomSettings
  extends
    Omit<CustomRoute.Settings, "targets" | "defaultTarget" | "groups" | "selector">,
    CustomRoute.Candidates<{ readonly name: string; readonly id: string }>
{
  readonly judgeFailure: Posture.Posture
}

/** A logged custom verdict: the label it named (whatever the logged configuration then did with it), or none. */
const customVerdictOf = (evidence: Evidence.Evidence): Option.Option<string> | undefined =>
  evidence.source === "llm-classifier" && "label" in evidence
    ? Option.some(evidence.label)
    : evidence.source === "abstained"
    ? Option.none()
    : undefined

/**
 * A custom classifier route's replay: the logged label goes to the target of that name under these
 * settings (`default_target` when it has none; a logged abstention stays one).
 */
export const custom = (settings: CustomSettings): Replayer => {
  const logged = (line: Line) => tieredLogged(line, (l) => l.selected_model ?? undefined)
  const groups = settings.groups
  const rules = CustomRoute.rules({
    targets: settings.targets,
    defaultTarget: settings.defaultTarget,
    classifyTrigger: settings.classifyTrigger,
    ...(groups === undefined ? {} : { groups }),
    selector: { text: "" }
  }, "")
  const idOf = (label: string) => CustomRoute.candidatesOf(settings, label)[0].id
  return {
    kind: "custom",
    algorithm: "llm_task_classifier",
    destinations: [...new Set(settings.targets.map((target) => target.id))],
    logged,
    start: () => {
      const state = new Map<string, ClassifierCascade.Stored<string>>()
      return stepping(
        logged,
        (line, late) => cascadeStep(rules, settings.judgeFailure, idOf, state, line, late, customVerdictOf)
      )
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Stage routers

/** The settings of a stage router that a replay changes. */
export interface StageSettings extends Omit<StageRoute.Settings, "classifier"> {
  /** The `[classifier]` table's settings; none: undecided turns go to the picker's default. */
  readonly classifier: CapabilitySettings | undefined
}

const stageFactsOf = (line: Line): Evidence.StageFacts | undefined =>
  (line.evidence !== null && "stage" in line.evidence ? line.evidence.stage : undefined) ?? line.stage

/**
 * The signal reading a turn's logged stage facts hold: an override (its reason is logged on the
 * turns the capable hold decided too), a settled turn, else the logged score.
 */
const readingOf = (facts: Evidence.StageFacts): StageSignals.Reading =>
  facts.override_reason !== undefined
    ? { _tag: "Override", reason: facts.override_reason }
    : facts.decision_source === "override"
    ? { _tag: "Override", reason: "critical_error" }
    : facts.decision_source === "tests_passed"
    ? { _tag: "TestsPassed" }
    : { _tag: "Scored", score: facts.score, confidence: facts.confidence }

/** What the log says a stage route's line came to: its stage facts' tier and decision source. */
const stageLogged = (line: Line): Outcome => {
  if (delegated(line)) return routed(subagentDestination, line.evidence?.source ?? "")
  const facts = stageFactsOf(line)
  if (line.evidence === null || facts === undefined) return line.evidence === null ? failureOf(line) : unknown
  return routed(facts.tier, facts.decision_source, reasonOf(line.evidence))
}

/**
 * The capable holds of a replay: one turn of a session (`line.session_id`; none: no hold) under
 * `holdTurns` and `confidenceThreshold`, from its logged stage facts. `commit` records the hold the
 * turn leaves once it is routed (a request that failed leaves it as it was, as on the route).
 */
const replayHolds = (holdTurns: number, confidenceThreshold: number) => {
  const holds = new Map<string, number>()
  return (line: Line, facts: Evidence.StageFacts) => {
    const key = line.session_id
    const held = StageSignals.hold(
      readingOf(facts),
      confidenceThreshold,
      key === null ? 0 : holds.get(key) ?? 0,
      key === null ? 0 : holdTurns
    )
    const commit = (outcome: Outcome): Outcome => {
      if (key !== null && outcome._tag === "Routed") holds.set(key, held.remaining)
      return outcome
    }
    return { pick: held.pick, commit }
  }
}

/**
 * A stage router's replay from each turn's logged signal facts: the capable hold of the session
 * under this `capable_hold_turns`, then the reading under this `confidence_threshold` when it can
 * decide; else this classifier (with the logged verdict), else the picker's default.
 */
export const stage = (settings: StageSettings): Replayer => {
  const fallback = StageSignals.defaultTier(settings.picker)
  const classifier = settings.classifier
  const rules = classifier === undefined ? undefined : StageRoute.classifierRules(classifier, settings.picker, "")
  return {
    kind: "stage_router",
    algorithm: "stage_router",
    destinations: ["capable", "efficient"],
    logged: stageLogged,
    start: () => {
      const state = new Map<string, ClassifierCascade.Stored<StageSignals.Tier>>()
      const turn = replayHolds(settings.capableHoldTurns ?? 0, settings.confidenceThreshold)
      return stepping(stageLogged, (line, late) => {
        const facts = stageFactsOf(line)
        if (facts === undefined) return Effect.succeed(unknown)
        const { commit, pick } = turn(line, facts)
        if (pick._tag === "Decided") return Effect.succeed(commit(routed(pick.tier, pick.source)))
        if (pick._tag === "Held") return Effect.succeed(commit(routed("capable", "capable_hold")))
        if (classifier === undefined || rules === undefined) {
          return Effect.succeed(commit(routed(fallback, "fall_open")))
        }
        return Effect.map(
          cascadeStep(
            rules,
            classifier.judgeFailure,
            (tier) => tier,
            state,
            line,
            late,
            capabilityVerdictOf,
            StageRoute.classifierSource
          ),
          commit
        )
      })
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Composite routes

/** The settings of a composite route that a replay changes: its `[stage]` thresholds and its `[classifier]`. */
export interface CompositeSettings {
  readonly confidenceThreshold: number
  /** `capable_hold_turns` (unset: 0). */
  readonly capableHoldTurns?: number
  readonly classifier: CapabilitySettings
}

/**
 * A composite route's replay: first its classifier, as a capability classifier's replay (the
 * logged verdict, the session's stored tier under this `classify_trigger`, this `judge_failure`),
 * whose tier is the turn's fall-open tier; then the turn from its logged stage facts, as a stage
 * router's (the capable hold, then the reading under this `confidence_threshold`), the classifier's
 * tier when the signals leave it undecided.
 */
export const composite = (settings: CompositeSettings): Replayer => {
  const rules = CompositeRoute.classifierRules(settings.classifier, "")
  return {
    kind: "composite",
    algorithm: "composite",
    destinations: ["capable", "efficient"],
    logged: stageLogged,
    start: () => {
      const state = new Map<string, ClassifierCascade.Stored<StageSignals.Tier>>()
      const turn = replayHolds(settings.capableHoldTurns ?? 0, settings.confidenceThreshold)
      return stepping(stageLogged, (line, late) =>
        Effect.map(
          cascade(rules, settings.classifier.judgeFailure, state, line, late, capabilityVerdictOf),
          (result) =>
            cascaded(result, ({ evidence, selection }) => {
              const facts = stageFactsOf(line)
              if (facts === undefined) return unknown
              const { commit, pick } = turn(line, facts)
              const reason = reasonOf(evidence)
              return commit(
                pick._tag === "Decided"
                  ? routed(pick.tier, pick.source, reason)
                  : pick._tag === "Held"
                  ? routed("capable", "capable_hold", reason)
                  : routed(selection, StageRoute.classifierSource(evidence), reason)
              )
            })
        ))
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Escalation routes

/** The settings of an escalation route that a replay changes. */
export interface EscalationSettings extends EscalationPhases.Settings {
  readonly judgeFailure: Posture.Posture
}

type EscalationEvidence = typeof Evidence.Escalation.Type

/** The verdicts of a de-escalating route's strong phase (its turns make no weak call). */
const strongPhaseVerdicts: ReadonlySet<EscalationEvidence["verdict"]> = new Set([
  "latched",
  "retain",
  "pending",
  "release",
  "strong_fallback"
])

/** The logged verdict's vote, on a line whose evidence is an escalation verdict `among`. */
const voteOf = (among: ReadonlyArray<EscalationEvidence["verdict"]>) =>
(
  evidence: Evidence.Evidence
): EscalationPhases.Vote | undefined =>
  evidence.source === "escalation" && among.includes(evidence.verdict)
    ? {
      escalate: evidence.verdict === "escalate" || evidence.verdict === "retain",
      ...(evidence.category === undefined ? {} : { category: evidence.category }),
      ...(evidence.new_evidence === undefined ? {} : { new_evidence: evidence.new_evidence })
    }
    : undefined

const weakVoteOf = voteOf(["escalate", "decline"])
const strongVoteOf = voteOf(["retain", "pending", "release"])

/** Whether the logged line is a strong-phase turn (no weak call was made; the judge, if any, read a strong turn). */
const strongPhase = (line: Line): boolean => {
  const evidence = line.evidence
  if (evidence === null) return line.tier === "strong" && line.judge === null
  if (evidence.source === "escalation") return strongPhaseVerdicts.has(evidence.verdict)
  return line.tier === "strong"
}

/** An escalation decision's outcome: the tier, and its verdict as the source (else its evidence source). */
const escalated = (decision: EscalationPhases.Decided): Outcome =>
  decided(
    decision.tier,
    decision.evidence,
    decision.evidence.source === "escalation" ? decision.evidence.verdict : decision.evidence.source
  )

/**
 * A request the weak target's own failure failed (not one that routes to strong): no evidence, the
 * tier `weak`. Lines of older logs do not say so (no classifier facts at all): their judge fact is none.
 */
const weakCallFailed = (line: Line) => line.evidence === null && line.tier === "weak"

/** Where a logged escalation decision went: strong for a latch and the strong phase's judged turns. */
const loggedTier = (line: Line, evidence: EscalationEvidence): "weak" | "strong" => {
  switch (evidence.verdict) {
    case "decline":
    case "cooldown":
    case "strong_fallback":
      return "weak"
    case "escalate":
      return evidence.streak >= evidence.confirmations ? "strong" : "weak"
    default:
      return line.tier === "weak" ? "weak" : "strong"
  }
}

type StrongState = Extract<EscalationPhases.State, { _tag: "Strong" }>
type WeakState = Extract<EscalationPhases.State, { _tag: "Unlatched" }>

/**
 * A replayed strong-phase request that the new settings judge: what the logged strong-phase turn
 * says — its fallback, its verdict, or the judge's failure (strong stays whatever the posture) —
 * else unknown (the logged run judged a weak turn, or none).
 */
const replayStrongReview = (settings: EscalationSettings, line: Line, state: StrongState) => {
  const evidence = line.evidence
  if (!strongPhase(line) || evidence === null) return undefined
  if (evidence.source === "escalation" && evidence.verdict === "strong_fallback") {
    return EscalationPhases.strongFallback(settings, state)
  }
  const vote = strongVoteOf(evidence)
  if (vote !== undefined) return EscalationPhases.reviewed(settings, "", state, Consultation.Verdict({ verdict: vote }))
  const without = (reason: Evidence.Reason) =>
    EscalationPhases.reviewed(settings, "", state, Consultation.WithoutVerdict({ reason }))
  return evidence.source === "retained"
    ? without(evidence.reason)
    : evidence.source === "circuit-open"
    ? without("circuit_open")
    : undefined
}

/**
 * A replayed weak-phase request: the weak call's logged failure, the cooldown (the logged run's weak
 * call answered), or the logged verdict on the weak turn through the posture.
 */
const replayWeakTurn = (
  settings: EscalationSettings,
  line: Line,
  state: WeakState,
  hasState: boolean,
  store: (next: EscalationPhases.State) => void
): Effect.Effect<Outcome> => {
  if (strongPhase(line) || weakCallFailed(line)) return Effect.succeed(unknown)
  const evidence = line.evidence
  if (evidence !== null && evidence.source === "escalation" && evidence.verdict === "weak_failed") {
    return Effect.succeed(escalated(EscalationPhases.weakFailed(settings, state.streak)))
  }
  if ((state.cooldown ?? 0) > 0) {
    const cooled = EscalationPhases.cooledDown(settings, state)
    if (Option.isSome(cooled.store)) store(cooled.store.value)
    return Effect.succeed(escalated(cooled))
  }
  const fact = judgeFactOf(line, weakVoteOf)
  if (fact._tag === "None") return Effect.succeed(unknown)
  return consulted(settings.judgeFailure, fact, (consultation) => {
    const next = EscalationPhases.judged(settings, "", state, hasState, consultation)
    if (Option.isSome(next.store)) store(next.store.value)
    return escalated(next)
  })
}

/**
 * An escalation route's replay: the logged verdicts on the weak turns drive each session's streak
 * (by category and fresh evidence) to these `confirmations`; a judge failure on a weak turn goes by
 * this posture. With a `deescalation` table the strong phase is replayed too: unjudged strong turns
 * below `strong_min_calls`, the logged verdicts on strong turns against these release
 * `confirmations`, `strong_max_calls` and the cooldown after it. A turn the replay has in another
 * phase than the logged run (a latched or strong turn logged where the replay judges a weak one, a
 * weak turn logged where the replay judges a strong one) is unknown; so is a request the weak
 * target's failure failed, unless the replay makes no weak call for it.
 */
export const escalation = (settings: EscalationSettings): Replayer => {
  const logged = (line: Line): Outcome => {
    const evidence = line.evidence
    // A strong turn's answer calls failed it (its judge never fails a request): not the judge's doing.
    if (evidence === null) return weakCallFailed(line) || strongPhase(line) ? unknown : failureOf(line)
    if (evidence.source === "escalation") return routed(loggedTier(line, evidence), evidence.verdict)
    return routed(line.tier === "strong" ? "strong" : "weak", evidence.source, reasonOf(evidence))
  }
  return {
    kind: "escalation",
    algorithm: "llm_task_classifier",
    destinations: ["weak", "strong"],
    logged,
    start: () => {
      const sessions = new Map<string, EscalationPhases.State>()
      return (line) => {
        const key = line.session_id
        if (key !== null) forget(sessions, line, line.posture !== null)
        const stored = key === null ? undefined : sessions.get(key)
        const store = (next: EscalationPhases.State) => {
          if (key !== null) sessions.set(key, next)
        }
        const state = EscalationPhases.begin(settings, stored ?? { _tag: "Unlatched", streak: 0 })
        switch (state._tag) {
          case "Latched":
            return Effect.succeed(escalated(EscalationPhases.latched(settings)))
          case "Strong": {
            const next = EscalationPhases.reviews(settings, state)
              ? replayStrongReview(settings, line, state)
              : EscalationPhases.strongHeld(settings, state)
            if (next === undefined) return Effect.succeed(unknown)
            if (Option.isSome(next.store)) store(next.store.value)
            return Effect.succeed(escalated(next))
          }
          case "Unlatched":
            return replayWeakTurn(settings, line, state, stored !== undefined, store)
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Advisor routes

/** The settings of an advisor route that a replay changes. */
export interface AdvisorSettings extends AdvisorRoute.Settings {
  /** `fail_open`: a failed consultation releases the turn (else the request fails). */
  readonly failOpen: boolean
}

/** Where an advisor route's request went: the executor's turn released, or answered again after a REDO. */
const released = "released"
const redone = "redone"

/** A reviewed turn's outcome: redone after a REDO verdict, else released, with its verdict (or `fail-open`) as the source. */
const reviewedOutcome = (outcome: Consultation.Outcome<"approve" | "redo">): Outcome => {
  const evidence = AdvisorRoute.reviewed(outcome, "no_tool_call", "")
  return "verdict" in evidence
    ? routed(evidence.verdict === "redo" ? redone : released, evidence.verdict)
    : decided(released, evidence, "fail-open")
}

/**
 * An advisor route's replay: each scope's (session's, else the instance's) review budget is re-run
 * under these `max_reviews` with the logged consultations; a failed consultation goes by this
 * `fail_open`. A request the replay would review but whose logged run skipped it before the
 * executor answered (its scope was spent) is unknown: the log cannot say whether the turn triggered.
 */
export const advisor = (settings: AdvisorSettings): Replayer => {
  const posture = AdvisorRoute.postureOf(settings.failOpen)
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
      const scopes = new Map<string, AdvisorRoute.Budget>()
      return (line) => {
        const facts = line.advisor
        if (facts === undefined) return Effect.succeed(unknown)
        const key = line.session_id ?? "\u0000instance"
        // The logged scope was fresh (new, evicted, or dropped by `session_final`): so is the replay's.
        if (facts.reviews_before === 0 && facts.failed_consults_before === 0) scopes.delete(key)
        const budget = scopes.get(key) ?? AdvisorRoute.freshBudget
        scopes.set(key, budget)
        const skip = AdvisorRoute.spent(settings, budget)
        if (Option.isSome(skip)) return Effect.succeed(routed(released, `skipped: ${skip.value}`))
        const evidence = line.evidence
        if (facts.trigger === null) {
          // No trigger logged: the scope was spent before the executor answered, the executor failed,
          // or the turn did not trigger.
          return Effect.succeed(
            evidence !== null && evidence.source === "advisor" && "verdict" in evidence &&
              evidence.verdict === "skipped" && evidence.skipped === "no_trigger"
              ? routed(released, "skipped: no_trigger")
              : unknown
          )
        }
        const consult = facts.consult
        if (consult === null) return Effect.succeed(unknown)
        scopes.set(key, AdvisorRoute.afterConsult({ ...budget, reviews: budget.reviews + 1 }, consult))
        // A verdict without evidence: the request failed after the review (the REDO's second executor call).
        if ((consult === "approve" || consult === "redo") && evidence === null) return Effect.succeed(unknown)
        const fact: Exclude<JudgeFact<"approve" | "redo">, { readonly _tag: "None" }> =
          consult === "approve" || consult === "redo"
            ? { _tag: "Verdict", verdict: consult }
            : { _tag: "Failed", reason: consult }
        return consulted(posture, fact, reviewedOutcome)
      }
    }
  }
}
