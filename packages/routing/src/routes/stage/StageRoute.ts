/**
 * The `stage_router` route: each turn goes to the capable or the efficient target by where the
 * coding agent is in its run, read from its tool history (`StageSignals`).
 *
 * Per request:
 *
 * 1. The signals decide when they can: a critical failure, a repeated failure or a compacted
 *    context → capable (`override`, with its `override_reason`); passing tests after a write →
 *    efficient (`tests_passed`); an open capable hold → capable (`capable_hold`, see below); a
 *    scorer confidence at or above `confidence_threshold` → the score's tier (`dimensions`).
 *    Evidence `stage_router`.
 * 2. Otherwise, with a `[classifier]` table, the capability judge decides (through the classifier
 *    cascade every classifier mode shares, so `classify_trigger`, sessions, `Posture`, breakers and
 *    the fail-open counter are exactly a capability route's): its verdict's weak tier is efficient,
 *    strong is capable (`llm-classifier`, or `affinity` for a session's stored verdict). Without a
 *    verdict — an invalid reply under both postures, a judge failure under `fail_open`, an open
 *    breaker under `fail_open` — the turn goes to the picker's default tier (`fail-open` /
 *    `circuit-open` evidence, stage decision source `fall_open`; a stored verdict is not reused);
 *    under `error` a judge failure fails the request (`JudgeUnavailable`: 502 / 504, 503 for the
 *    breaker).
 * 3. Otherwise the picker's default tier (`fall_open`, evidence `stage_router`).
 *
 * Every turn's evidence carries its `stage` facts (decision source, tier, score, confidence and the
 * four dimensions). The chosen tier's system prompt (`capable_system_prompt` /
 * `efficient_system_prompt`) is put first in the request, and a handoff note is appended to it:
 * the escalation note on a capable turn the signals drove (`override` / `dimensions`; on every
 * capable turn with `only_on_wrong_signal_escalation = false`), the de-escalation note on an
 * efficient turn the signals drove (`tests_passed` / `dimensions`). Both ride in the answer call
 * only; the caller's conversation is not changed.
 *
 * The capable hold (`capable_hold_turns`; 0 turns it off): after a turn the signals
 * escalated (capable by `override` or `dimensions`), the next turns of the same session id stay
 * capable (`capable_hold`) whatever the signals say, without the classifier; a clean test pass
 * (`tests_passed`) ends it early. Requests without a session id have no hold. The hold is kept in
 * this process, per route (bounded: the least recently escalated sessions go first).
 * `tool_semantics` adds the route's tool names to the signals' vocabulary (`StageSignals`).
 *
 * Session state is the classifier's: only a valid verdict writes the session's stored tier, and a
 * route with a classifier routes the requests of one session id one at a time, judge call included.
 *
 * `auto` routes are stage routers (the preset of `AutoRouteTable`); `composite` routes
 * (`CompositeRoute`) run the same turn ({@link decideTurn}) with a classifier that sets the tier
 * the turn falls open to.
 */
import * as TaggedMetric from "@switchyard-ts/client/TaggedMetric"
import type { Target } from "@switchyard-ts/client/Target"
import type { JudgeUnavailable } from "@switchyard-ts/protocol/Errors"
import type { ChatCompletionRequest, Message } from "@switchyard-ts/protocol/OpenAiChat"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as Decision from "../../Decision.js"
import type * as Evidence from "../../Evidence.js"
import * as LiveHost from "../../host/LiveHost.js"
import * as ReplayHost from "../../host/ReplayHost.js"
import * as RouteHost from "../../host/RouteHost.js"
import * as RoutingFacts from "../../host/RoutingFacts.js"
import * as RoutingRecord from "../../host/RoutingRecord.js"
import type { JudgeOptions } from "../../judge/Judge.js"
import type * as LateVerdict from "../../judge/LateVerdict.js"
import type * as Posture from "../../judge/Posture.js"
import * as Metrics from "../../Metrics.js"
import { distinctTargets, type Route, type RoutedRequest } from "../../Route.js"
import * as CapabilityRoute from "../capability/CapabilityRoute.js"
import type * as ThresholdPolicy from "../capability/ThresholdPolicy.js"
import type * as ClassifierCascade from "../classifier/ClassifierCascade.js"
import * as ClassifierProgram from "../classifier/ClassifierProgram.js"
import * as StageSignals from "./StageSignals.js"

/** The `[classifier]` table: a capability judge for the turns the signals leave undecided. */
export interface ClassifierOptions extends JudgeOptions, LateVerdict.Options {
  readonly baseThreshold: number
  readonly thresholdStep: number
  readonly classifyTrigger: ClassifierCascade.ClassifyTrigger
  /** Under `new_session`, a request without a session id is identified by its first user message. */
  readonly messageHashFallback: boolean
  readonly judgeFailure: Posture.Posture
}

/** The `[handoff_notes]` table. */
export interface HandoffNotes {
  /** Appended on a capable turn the signals drove (every capable turn when not gated). */
  readonly escalationNote: string
  /** Appended on an efficient turn the signals drove. */
  readonly deescalationNote: Option.Option<string>
  /** `only_on_wrong_signal_escalation` (default true). */
  readonly onlyOnWrongSignalEscalation: boolean
}

/** Options of a stage router route (its TOML keys, validated). */
export interface Options {
  readonly id: string
  readonly name: string
  readonly capable: Target
  readonly efficient: Target
  readonly picker: StageSignals.Picker
  /** In [0, 1]. */
  readonly confidenceThreshold: number
  /** Trailing tool calls and results the signals read (default 3). */
  readonly recentTurnWindow: number
  readonly capableSystemPrompt: Option.Option<string>
  readonly efficientSystemPrompt: Option.Option<string>
  readonly handoffNotes: Option.Option<HandoffNotes>
  readonly classifier: Option.Option<ClassifierOptions>
  /**
   * `capable_hold_turns`: turns held capable after a signal-driven escalation (0: off). Unset here it
   * is 0; a deployment file's default is 2 (`StageSignals.defaultCapableHoldTurns`).
   */
  readonly capableHoldTurns?: number
  /** `tool_semantics`: tool names added to the signals' vocabulary (default none). */
  readonly toolSemantics?: StageSignals.ToolSemantics
  readonly contextWindow?: Option.Option<number>
  readonly toolCalling?: Option.Option<boolean>
}

type Tier = StageSignals.Tier
type Source = Evidence.StageDecisionSource

/** The handoff note a turn carries: which one, and its text; none when no note applies. */
export const noteFor = (
  notes: HandoffNotes,
  tier: Tier,
  source: Source
): Option.Option<{ readonly kind: "escalation" | "deescalation"; readonly text: string }> => {
  if (tier === "capable") {
    const signalDriven = source === "override" || source === "dimensions"
    return !notes.onlyOnWrongSignalEscalation || signalDriven
      ? Option.some({ kind: "escalation", text: notes.escalationNote })
      : Option.none()
  }
  return source === "tests_passed" || source === "dimensions"
    ? Option.map(notes.deescalationNote, (text) => ({ kind: "deescalation", text }))
    : Option.none()
}

/**
 * `body` with `systemPrompt` put first and `note` appended as user text: joined to a trailing user
 * message (after its content), else as a user message of its own. None when there is nothing to add.
 */
export const amend = (
  body: ChatCompletionRequest,
  systemPrompt: Option.Option<string>,
  note: Option.Option<string>
): Option.Option<ChatCompletionRequest> => {
  if (Option.isNone(systemPrompt) && Option.isNone(note)) return Option.none()
  let messages: ReadonlyArray<Message> = body.messages
  if (Option.isSome(note)) {
    const last = messages[messages.length - 1]
    messages = last?.role === "user"
      ? [
        ...messages.slice(0, -1),
        {
          ...last,
          content: [
            ...(typeof last.content === "string" ? [{ type: "text" as const, text: last.content }] : last.content),
            { type: "text" as const, text: note.value }
          ]
        }
      ]
      : [...messages, { role: "user", content: note.value }]
  }
  if (Option.isSome(systemPrompt)) messages = [{ role: "system", content: systemPrompt.value }, ...messages]
  return Option.some({ ...body, messages })
}

/** The evidence of a classifier decision with the turn's stage facts (a capability classifier's kinds only). */
export const withStage = (evidence: Evidence.Evidence, stage: Evidence.StageFacts): Evidence.Evidence => {
  switch (evidence.source) {
    case "llm-classifier":
      return "label" in evidence ? evidence : { ...evidence, stage }
    case "affinity":
      return { ...evidence, stage }
    case "fail-open":
      return { ...evidence, stage }
    case "retained":
      return { ...evidence, stage }
    case "circuit-open":
      return { ...evidence, stage }
    default:
      return evidence
  }
}

/** The decision source of a classifier decision: the verdict (fresh or stored), or the picker's default. */
export const classifierSource = (evidence: Evidence.Evidence): Source =>
  evidence.source === "llm-classifier" || evidence.source === "affinity" ? "llm-classifier" : "fall_open"

/** The settings the decision rules read (a route's options, or a deployment's route spec). */
export interface Settings {
  readonly picker: StageSignals.Picker
  readonly confidenceThreshold: number
  /** `capable_hold_turns` (unset: 0). */
  readonly capableHoldTurns?: number
  readonly classifier: Option.Option<CapabilityRoute.Settings & { readonly judge: Pick<Target, "id"> }>
}

/**
 * The rules of a stage router's classifier: a capability route's (`CapabilityRoute.rules`), its weak
 * tier efficient and strong capable, the picker's default tier without a verdict (a stored verdict
 * is not retained then).
 */
export const classifierRules = (
  classifier: CapabilityRoute.Settings,
  picker: StageSignals.Picker,
  judgeModel: string
): ClassifierCascade.Rules<CapabilityRoute.Judgement, Tier> => {
  const capability = CapabilityRoute.rules(classifier, judgeModel)
  return {
    ...capability,
    retainWithoutVerdict: false,
    fallback: StageSignals.defaultTier(picker),
    judged: (verdict) => {
      const judged = capability.judged(verdict)
      return { selection: tierOfPolicy(judged.selection), evidence: judged.evidence }
    }
  }
}

/** A capability tier as a stage tier: weak is efficient, strong capable. */
export const tierOfPolicy = (tier: ThresholdPolicy.Tier): Tier => (tier === "weak" ? "efficient" : "capable")

const observeSignals = (score: number, confidence: number, dimensions: StageSignals.Dimensions) =>
  Effect.sync(() => {
    TaggedMetric.unsafeUpdate(Metrics.stageRouterScore, {}, score)
    TaggedMetric.unsafeUpdate(Metrics.stageRouterConfidence, {}, confidence)
    TaggedMetric.unsafeUpdate(Metrics.stageRouterSeverity, {}, dimensions.severity)
    TaggedMetric.unsafeUpdate(Metrics.stageRouterSpinning, {}, dimensions.spinning)
    TaggedMetric.unsafeUpdate(Metrics.stageRouterExploring, {}, dimensions.exploring)
    TaggedMetric.unsafeUpdate(Metrics.stageRouterProductionIntensity, {}, dimensions.production_intensity)
  })

/** The program of a stage route's classifier (see `internal/classifierRoute.ts`). */
export type Classify = ClassifierProgram.Program<Tier>

/** The target of a tier. */
const targetOf = (options: Pick<Options, "capable" | "efficient">, tier: Tier): Target =>
  tier === "capable" ? options.capable : options.efficient

/**
 * A capability classifier over a stage route's two tiers (a stage router's `[classifier]`, a
 * composite route's): the classifier program every classifier mode shares, under `rules`.
 */
export const classifierOf = (
  options: Pick<Options, "id" | "capable" | "efficient">,
  classifier: ClassifierOptions,
  rules: ClassifierCascade.Rules<CapabilityRoute.Judgement, Tier>
): Classify =>
  ClassifierProgram.program<"Capability", Tier>({
    routeId: options.id,
    kind: "Capability",
    rules,
    messageHashFallback: classifier.messageHashFallback,
    posture: classifier.judgeFailure,
    question: (request, late) => ({ _tag: "Capability", options: classifier, request, late }),
    toStored: (tier) => ({ target: targetOf(options, tier).name, tier: tier === "efficient" ? "weak" : "strong" }),
    fromStored: (stored) =>
      Option.some(
        stored.tier === undefined
          ? (stored.target === options.efficient.name ? "efficient" : "capable")
          : tierOfPolicy(stored.tier)
      )
  })

/** The live host's late verdicts of a stage route's classifier, if it has one. */
export const lateOf = (classifier: Option.Option<ClassifierOptions>): LiveHost.Options["late"] =>
  Option.flatMap(classifier, (c) => LiveHost.lateOf(c, c.judgeFailure, c.judge.id))

/** The settings of one turn: a stage router's options without its classifier and picker. */
export type TurnOptions = Omit<Options, "classifier" | "picker"> & {
  /** The route's algorithm label (`stage_router`, or `composite`). */
  readonly algorithm: "stage_router" | "composite"
}

/** The routed decision of a tier with `evidence`: its target, the other one as the fallback. */
export const routedTo = (options: TurnOptions, tier: Tier, evidence: Evidence.Evidence): Decision.Routed => {
  const selected = targetOf(options, tier)
  return Decision.routed({
    route: { id: options.id, name: options.name, algorithm: options.algorithm },
    selected,
    fallbacks: [options.capable, options.efficient].filter((target) => target.name !== selected.name),
    evidence
  })
}

/** Sessions a route keeps a capable hold for at most. */
const maxHolds = 100_000

/**
 * Sessions' capable holds: turns left by session id, in the process, bounded (the least recently
 * used go first). The log does not show them: a replay keeps its own from the turns it replays.
 */
export const holds = (): RouteHost.Space<number> =>
  RouteHost.local<number>(maxHolds, { forgotten: RouteHost.neverForgotten })

/** A turn the signals (or the hold) left to the route: how it goes, given its stage facts. */
export type Undecided = (
  request: RoutedRequest,
  facts: (source: Source, tier: Tier) => Evidence.StageFacts
) => Effect.Effect<
  { readonly decision: Decision.Routed; readonly source: Source },
  JudgeUnavailable,
  RouteHost.RouteHost | RoutingFacts.Reporter
>

/** How a stage route's turn is completed by its kind (stage router, or composite). */
export interface TurnMode {
  /** The evidence of a turn the signals or the hold decided (a stage router: `stage_router` with its facts). */
  readonly decided: (stage: Evidence.StageFacts) => Evidence.Evidence
  /** A turn the signals left undecided. */
  readonly undecided: Undecided
  /** The tier an undecided turn goes to when nothing else decides (the facts told before it is decided). */
  readonly fallOpenTier: Tier
}

const stageOnly = (stage: Evidence.StageFacts): Evidence.Evidence => ({ source: "stage_router", stage })

/**
 * One turn of a stage route (`stage_router`, `auto`, `composite`): the host's reading of the
 * request's signals under the route's `tool_semantics`, the capable hold of the request's session
 * (`holds`), then the signals' or the hold's decision, else `mode.undecided`; the decision counted by
 * source and target (live telemetry), and the tier's system prompt and handoff note put into the
 * answer call's body. The session's hold is written only when the turn is decided (a request the
 * classifier's `error` posture fails leaves it as it was).
 */
export const decideTurn: (
  options: TurnOptions,
  mode: TurnMode,
  holds: RouteHost.Space<number>,
  request: RoutedRequest
) => Effect.Effect<Decision.Routed, JudgeUnavailable, RouteHost.RouteHost | RoutingFacts.Reporter> = Effect
  .fnUntraced(function*(
    options: TurnOptions,
    mode: TurnMode,
    holds: RouteHost.Space<number>,
    request: RoutedRequest
  ) {
    const host = yield* RouteHost.RouteHost
    const { dimensions, reading } = yield* host.signals.stage(
      request,
      options.recentTurnWindow,
      options.toolSemantics ?? StageSignals.emptyToolSemantics
    )
    const session = Option.getOrUndefined(request.sessionId)
    const store = host.store(holds)
    const remaining = session === undefined ? 0 : Option.getOrElse(yield* store.get(session), () => 0)
    const held = StageSignals.hold(
      reading,
      options.confidenceThreshold,
      remaining,
      session === undefined ? 0 : options.capableHoldTurns ?? 0
    )
    const picked = held.pick
    yield* host.record(observeSignals(picked.score, picked.confidence, dimensions))
    const note = (source: Source, tier: Tier) =>
      Option.flatMap(options.handoffNotes, (notes) => noteFor(notes, tier, source))
    const facts = (source: Source, tier: Tier): Evidence.StageFacts => ({
      decision_source: source,
      ...(reading._tag === "Override" ? { override_reason: reading.reason } : {}),
      tier,
      score: picked.score,
      confidence: picked.confidence,
      ...dimensions,
      ...Option.match(note(source, tier), { onNone: () => ({}), onSome: ({ kind }) => ({ handoff_note: kind }) })
    })

    if (picked._tag === "Ambiguous") {
      // Told before the classifier runs: its `error` posture may fail the request (no evidence).
      yield* RoutingFacts.report((observer) =>
        observer.routed({ _tag: "Stage", facts: facts("fall_open", mode.fallOpenTier) })
      )
    }
    const { decision, source } = picked._tag === "Decided"
      ? {
        decision: routedTo(options, picked.tier, mode.decided(facts(picked.source, picked.tier))),
        source: picked.source
      }
      : picked._tag === "Held"
      ? {
        decision: routedTo(options, "capable", mode.decided(facts("capable_hold", "capable"))),
        source: "capable_hold" as const
      }
      : yield* mode.undecided(request, facts)
    if (session !== undefined) {
      yield* held.remaining > 0 ? store.put(session, held.remaining) : store.remove(session)
    }
    const tier: Tier = decision.selected.name === options.capable.name ? "capable" : "efficient"
    yield* host.record(
      Metric.update(
        TaggedMetric.tagged(Metrics.stageRouterRoutingDecisionsTotal, {
          decision_source: source,
          target_name: decision.selected.id
        }),
        1
      )
    )
    const body = amend(
      request.body,
      tier === "capable" ? options.capableSystemPrompt : options.efficientSystemPrompt,
      Option.map(note(source, tier), ({ text }) => text)
    )
    return Option.match(body, { onNone: () => decision, onSome: (amended) => ({ ...decision, body: amended }) })
  })

/** A stage router's turn mode: its classifier's decision, else the picker's default tier. */
const stageMode = (options: Options, classify: Option.Option<Classify>): TurnMode => {
  const fallOpenTier = StageSignals.defaultTier(options.picker)
  const turn = { ...options, algorithm: "stage_router" as const }
  return {
    decided: stageOnly,
    fallOpenTier,
    undecided: (request, facts) =>
      Option.match(classify, {
        onNone: () =>
          Effect.succeed({
            decision: routedTo(turn, fallOpenTier, stageOnly(facts("fall_open", fallOpenTier))),
            source: "fall_open" as const
          }),
        onSome: (decide) =>
          Effect.map(decide(request), ({ evidence, selection }) => {
            const source = classifierSource(evidence)
            return { decision: routedTo(turn, selection, withStage(evidence, facts(source, selection))), source }
          })
      })
  }
}

/** The lock key of a stage route's request: its session id (requests of a session routed one at a time). */
export const sessionLockKey = (request: RoutedRequest): Option.Option<string> =>
  Option.map(request.sessionId, (id) => `s:${id}`)

/**
 * A stage router's program: the turn ({@link decideTurn}) with its classifier when it has one,
 * requests of a session routed one at a time then (judge call included).
 */
export const program = (options: Options): RouteHost.Program => {
  const classify = Option.map(
    options.classifier,
    (classifier) => classifierOf(options, classifier, classifierRules(classifier, options.picker, classifier.judge.id))
  )
  const mode = stageMode(options, classify)
  const space = holds()
  const turn: TurnOptions = { ...options, algorithm: "stage_router" }
  return (request) =>
    Option.isSome(classify)
      ? Effect.flatMap(
        RouteHost.RouteHost,
        (host) => host.exclusive(sessionLockKey(request))(decideTurn(turn, mode, space, request))
      )
      : decideTurn(turn, mode, space, request)
}

/**
 * Build a stage router route: its {@link program} on a live host (`LiveHost`); late classifier calls
 * run in `Scope`.
 */
export const make = (options: Options): Effect.Effect<Route, never, LiveHost.Services> =>
  LiveHost.route(
    { algorithm: "stage_router", late: lateOf(options.classifier) },
    {
      id: options.id,
      name: options.name,
      algorithm: "stage_router",
      targets: distinctTargets([options.capable, options.efficient]),
      contextWindow: options.contextWindow ?? Option.none(),
      toolCalling: options.toolCalling ?? Option.none()
    },
    program(options)
  )

/** What the log says a stage route's record came to: its stage facts' tier and decision source. */
export const logged = (record: RoutingRecord.Decided): ReplayHost.Outcome => {
  if (RoutingRecord.isDelegated(record)) {
    return ReplayHost.routed(ReplayHost.subagentDestination, record.evidence?.source ?? "")
  }
  const facts = RoutingRecord.stageFactsOf(record)
  if (record.evidence === null) return ReplayHost.failureOf(record)
  if (facts === undefined) return ReplayHost.unknown
  return ReplayHost.decided(facts.tier, record.evidence, facts.decision_source)
}

/** A stage router's replay: its {@link program} on the log's facts, read back as {@link logged}. */
export const replayable = (options: Options): ReplayHost.Replayable => ({
  kind: "stage_router",
  algorithm: "stage_router",
  destinations: ["capable", "efficient"],
  logged,
  program: () => program(options)
})
