/**
 * The decision rules every classifier mode shares (capability and custom routes, a stage router's
 * `[classifier]`, a custom `subagents` classifier), as pure functions over data: when
 * `classify_trigger` reuses a session's stored selection instead of consulting the judge, what a
 * verdict selects, and where a request goes without a verdict. The route's Effect shell
 * (`internal/classifierRoute.ts`: sessions, locks, the judge call, late verdicts, metrics) and policy
 * replay (`@switchyard-ts/server/PolicyReplay`, over the routing log's facts) both decide through
 * these functions, so a replay under the settings that wrote a log reproduces it.
 *
 * A mode is described by {@link Rules}: a selection `S` (capability: a tier; custom: a target
 * label), what a verdict `V` selects, and the route's default. The consultation's outcome comes from
 * `Consultation.run`, the one place where the posture acts: the rules only ever see a verdict or
 * "without a verdict" with its reason.
 */
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type * as Evidence from "../../Evidence.js"
import type * as Consultation from "../../judge/Consultation.js"

/** When the judge is consulted (`classify_trigger`), as its TOML and routing-log value. */
export const ClassifyTrigger = Schema.Literal("every_request", "user_turn", "new_session")
export type ClassifyTrigger = typeof ClassifyTrigger.Type

/** One classifier mode's rules. */
export interface Rules<V, S> {
  readonly trigger: ClassifyTrigger
  /**
   * Whether a request judged without a verdict keeps the session's stored selection (`retained`;
   * capability and custom routes) or always goes to the default (a stage router's classifier, whose
   * no-verdict tier is the picker's default).
   */
  readonly retainWithoutVerdict: boolean
  /** The judge's model id (the evidence's `judge_model`). */
  readonly judgeModel: string
  /** A valid verdict's selection and evidence; the selection is also what the session stores. */
  readonly judged: (verdict: V) => Selected<S>
  /** The route's default (capability: strong; custom: `default_target`; stage: the picker's tier). */
  readonly fallback: S
}

/** A selection with the evidence of why. */
export interface Selected<S> {
  readonly selection: S
  readonly evidence: Evidence.Evidence
}

/** A session's stored selection, as the rules read it. */
export interface Stored<S> {
  readonly selection: S
  /** Stored by a verdict that landed after its request's deadline (`late_verdict_ms`). */
  readonly late: boolean
}

/** What one request came to: its selection and evidence, and the selection to store (none: keep what is stored). */
export interface Decided<S> extends Selected<S> {
  readonly store: Option.Option<S>
}

/**
 * Whether the trigger reuses a stored selection rather than consulting: always under `new_session`,
 * for a continuation (not a user turn) under `user_turn`, never under `every_request`.
 */
export const reuses = (trigger: ClassifyTrigger, userTurn: boolean): boolean =>
  trigger === "new_session" || (trigger === "user_turn" && !userTurn)

/** Whether the trigger keeps per-session state at all (`every_request` does not). */
export const keepsSessions = (trigger: ClassifyTrigger): boolean => trigger !== "every_request"

/**
 * Before consulting: the stored selection when the trigger reuses it (`affinity` evidence, no
 * judge call, nothing written); none when the judge must be consulted.
 */
export const reuse = <V, S>(
  rules: Rules<V, S>,
  stored: Option.Option<Stored<S>>,
  userTurn: boolean
): Option.Option<Decided<S>> =>
  reuses(rules.trigger, userTurn)
    ? Option.map(stored, (previous) => ({
      selection: previous.selection,
      evidence: { source: "affinity", previous_source: previous.late ? "llm-classifier-late" : "llm-classifier" },
      store: Option.none()
    }))
    : Option.none()

/**
 * After consulting: a verdict decides and is stored; without one the stored selection is kept
 * (`retained`, when the rules retain) or the default decides (`fail-open`; `circuit-open` when the
 * breaker refused the call), and nothing is written.
 */
export const settle = <V, S>(
  rules: Rules<V, S>,
  stored: Option.Option<Stored<S>>,
  outcome: Consultation.Outcome<V>
): Decided<S> => {
  if (outcome._tag === "Verdict") {
    const judged = rules.judged(outcome.verdict)
    return { ...judged, store: Option.some(judged.selection) }
  }
  const reason = outcome.reason
  const kept = rules.retainWithoutVerdict ? stored : Option.none()
  const evidence = (retained: boolean): Evidence.Evidence =>
    reason === "circuit_open"
      ? { source: "circuit-open", judge_model: rules.judgeModel }
      : retained
      ? { source: "retained", reason, judge_model: rules.judgeModel }
      : { source: "fail-open", reason, judge_model: rules.judgeModel }
  return Option.match(kept, {
    onNone: () => ({ selection: rules.fallback, evidence: evidence(false), store: Option.none() }),
    onSome: (previous) => ({ selection: previous.selection, evidence: evidence(true), store: Option.none() })
  })
}
