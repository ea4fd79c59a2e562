/**
 * The `composite` route: a capability classifier sets the tier a stage router falls open to, and
 * the stage router (`StageRoute.decideTurn`, the same turn as `stage_router` and `auto` routes)
 * serves each turn.
 *
 * Per request, first the classifier, through the classifier shell every classifier mode shares
 * (`classify_trigger`, sessions, `message_hash_fallback`, late verdicts, `Posture` through
 * `Consultation.run`, breakers and the fail-open counter are exactly a capability route's):
 *
 * - `user_turn` consults the judge on each new user turn and reuses the session's tier on its tool
 *   continuations (`affinity`); `new_session` consults once per session (`every_request` is refused
 *   when the deployment loads). A continuation with nothing stored is judged.
 * - A valid verdict's weak tier is efficient, strong is capable; it is stored for the session.
 * - Without a verdict — an invalid reply under both postures, a judge failure or an open breaker
 *   under `fail_open` — the session's stored tier is kept (`retained`), else the tier is efficient
 *   (`fail-open`; `circuit-open` for the breaker); each such request counts once in
 *   `switchyard_classifier_fail_open_total`. Under `error` a judge failure fails the request
 *   (`JudgeUnavailable`: 502 / 504, 503 for the breaker) before any signal is read.
 *
 * Then the turn: the signals decide when they can (`override`, `tests_passed`, `dimensions`), an
 * open capable hold keeps the session capable (`capable_hold`), and otherwise the turn goes to the
 * classifier's tier (decision source `llm-classifier` for a verdict, fresh or stored; `fall_open`
 * without one). The evidence is always the classifier's (with its verdict, so a policy replay can
 * re-decide it) carrying the turn's stage facts, whose `decision_source` says what decided the tier.
 * Requests of one session id are routed one at a time, judge call included.
 */
import type { JudgeUnavailable } from "@switchyard-ts/protocol/Errors"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as Decision from "../../Decision.js"
import * as LiveHost from "../../host/LiveHost.js"
import type * as ReplayHost from "../../host/ReplayHost.js"
import * as RouteHost from "../../host/RouteHost.js"
import type * as RoutingFacts from "../../host/RoutingFacts.js"
import { distinctTargets, type Route, type RoutedRequest } from "../../Route.js"
import type * as CapabilityRoute from "../capability/CapabilityRoute.js"
import type * as ClassifierCascade from "../classifier/ClassifierCascade.js"
import * as StageRoute from "../stage/StageRoute.js"
import type * as StageSignals from "../stage/StageSignals.js"

/** The classify triggers a composite route takes. */
export type ClassifyTrigger = "user_turn" | "new_session"

/** The `[classifier]` table: a capability judge whose verdict sets the turn's fall-open tier. */
export interface ClassifierOptions extends Omit<StageRoute.ClassifierOptions, "classifyTrigger"> {
  readonly classifyTrigger: ClassifyTrigger
}

/** Options of a composite route: its `[stage]` table's keys (no `picker`, no nested classifier), and its `[classifier]`. */
export interface Options extends Omit<StageRoute.Options, "picker" | "classifier"> {
  readonly classifier: ClassifierOptions
}

/** The tier of a composite route's turn when the classifier has none to give. */
export const defaultTier: StageSignals.Tier = "efficient"

/**
 * The rules of a composite route's classifier: a capability route's (`CapabilityRoute.rules`), its
 * weak tier efficient and strong capable; without a verdict the session's stored tier is kept
 * (`retained`), else {@link defaultTier}.
 */
export const classifierRules = (
  classifier: CapabilityRoute.Settings,
  judgeModel: string
): ClassifierCascade.Rules<CapabilityRoute.Judgement, StageSignals.Tier> => ({
  ...StageRoute.classifierRules(classifier, "efficient_first", judgeModel),
  retainWithoutVerdict: true,
  fallback: defaultTier
})

/**
 * The turn mode of a request whose classifier chose `selected`: a turn the signals or the hold
 * decide carries the classifier's evidence with its stage facts; an undecided one goes to the
 * classifier's tier.
 */
export const modeOf = (
  turn: StageRoute.TurnOptions,
  selected: ClassifierCascade.Selected<StageSignals.Tier>
): StageRoute.TurnMode => ({
  decided: (stage) => StageRoute.withStage(selected.evidence, stage),
  fallOpenTier: selected.selection,
  undecided: (_request, facts) => {
    const source = StageRoute.classifierSource(selected.evidence)
    return Effect.succeed({
      decision: StageRoute.routedTo(
        turn,
        selected.selection,
        StageRoute.withStage(selected.evidence, facts(source, selected.selection))
      ),
      source
    })
  }
})

/**
 * A composite route's program: its classifier, then the turn ({@link StageRoute.decideTurn}) falling
 * open to the classifier's tier; requests of one session id routed one at a time, judge call
 * included.
 */
export const program = (options: Options): RouteHost.Program => {
  const classifier = options.classifier
  const classify = StageRoute.classifierOf(options, classifier, classifierRules(classifier, classifier.judge.id))
  const holds = StageRoute.holds()
  const turn: StageRoute.TurnOptions = { ...options, algorithm: "composite" }
  const decide = (
    request: RoutedRequest
  ): Effect.Effect<Decision.Routed, JudgeUnavailable, RouteHost.RouteHost | RoutingFacts.Reporter> =>
    Effect.flatMap(
      classify(request),
      (selected) => StageRoute.decideTurn(turn, modeOf(turn, selected), holds, request)
    )
  return (request) =>
    Effect.flatMap(
      RouteHost.RouteHost,
      (host) => host.exclusive(StageRoute.sessionLockKey(request))(decide(request))
    )
}

/**
 * Build a composite route: its {@link program} on a live host (`LiveHost`); late classifier calls
 * run in `Scope`. Its decisions are `JudgeUnavailable` when the classifier's `error` posture fails
 * the request.
 */
export const make = (options: Options): Effect.Effect<Route, never, LiveHost.Services> =>
  LiveHost.route(
    { algorithm: "composite", late: StageRoute.lateOf(Option.some(options.classifier)) },
    {
      id: options.id,
      name: options.name,
      algorithm: "composite",
      targets: distinctTargets([options.capable, options.efficient]),
      contextWindow: options.contextWindow ?? Option.none(),
      toolCalling: options.toolCalling ?? Option.none()
    },
    program(options)
  )

/** A composite route's replay: its {@link program} on the log's facts, read back as a stage route's. */
export const replayable = (options: Options): ReplayHost.Replayable => ({
  kind: "composite",
  algorithm: "composite",
  destinations: ["capable", "efficient"],
  logged: StageRoute.logged,
  program: () => program(options)
})
