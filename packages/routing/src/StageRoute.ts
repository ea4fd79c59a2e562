/**
 * The `stage_router` route: each turn goes to the capable or the efficient target by where the
 * coding agent is in its run, read from its tool history (`StageSignals`).
 *
 * Per request:
 *
 * 1. The signals decide when they can: a critical failure or a compacted context → capable
 *    (`override`); passing tests after a write → efficient (`tests_passed`); a scorer confidence at
 *    or above `confidence_threshold` → the score's tier (`dimensions`). Evidence `stage_router`.
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
 * Session state is the classifier's: only a valid verdict writes the session's stored tier, and a
 * route with a classifier routes the requests of one session id one at a time, judge call included.
 */
import * as TaggedMetric from "@switchyard-ts/client/TaggedMetric"
import type { Target } from "@switchyard-ts/client/Target"
import type { JudgeUnavailable } from "@switchyard-ts/protocol/Errors"
import type { ChatCompletionRequest, Message } from "@switchyard-ts/protocol/OpenAiChat"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import * as CapabilityRoute from "./CapabilityRoute.js"
import type * as ClassifierCascade from "./ClassifierCascade.js"
import * as Decision from "./Decision.js"
import type * as Evidence from "./Evidence.js"
import * as ClassifierRoute from "./internal/classifierRoute.js"
import { Judge, type JudgeOptions } from "./Judge.js"
import type * as LateVerdict from "./LateVerdict.js"
import * as Metrics from "./Metrics.js"
import type * as Policy from "./Policy.js"
import type * as Posture from "./Posture.js"
import { distinctTargets, type Route, type RoutedRequest } from "./Route.js"
import * as RoutingFacts from "./RoutingFacts.js"
import type { SessionStore } from "./SessionStore.js"
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

/** The evidence of a classifier decision with the turn's stage facts. */
const withStage = (evidence: Evidence.Evidence, stage: Evidence.StageFacts): Evidence.Evidence => {
  switch (evidence.source) {
    case "llm-classifier":
      return "label" in evidence ? evidence : { ...evidence, stage }
    case "affinity":
      return { ...evidence, stage }
    case "fail-open":
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
export const tierOfPolicy = (tier: Policy.Tier): Tier => (tier === "weak" ? "efficient" : "capable")

const observeSignals = (score: number, confidence: number, dimensions: StageSignals.Dimensions) =>
  Effect.sync(() => {
    TaggedMetric.unsafeUpdate(Metrics.stageRouterScore, {}, score)
    TaggedMetric.unsafeUpdate(Metrics.stageRouterConfidence, {}, confidence)
    TaggedMetric.unsafeUpdate(Metrics.stageRouterSeverity, {}, dimensions.severity)
    TaggedMetric.unsafeUpdate(Metrics.stageRouterSpinning, {}, dimensions.spinning)
    TaggedMetric.unsafeUpdate(Metrics.stageRouterExploring, {}, dimensions.exploring)
    TaggedMetric.unsafeUpdate(Metrics.stageRouterProductionIntensity, {}, dimensions.production_intensity)
  })

/** The classifier shell's decide of a stage router (see `internal/classifierRoute.ts`). */
type Classify = (
  request: RoutedRequest
) => Effect.Effect<ClassifierCascade.Selected<Tier>, JudgeUnavailable, RoutingFacts.Reporter>

/** The target of a tier. */
const targetOf = (options: Options, tier: Tier): Target => (tier === "capable" ? options.capable : options.efficient)

/** The stage router's `[classifier]`, through the classifier shell every classifier mode shares. */
const classifierOf = (
  options: Options,
  classifier: ClassifierOptions
): Effect.Effect<Classify, never, Judge | SessionStore | Scope.Scope> =>
  Effect.flatMap(Judge, (judge) =>
    ClassifierRoute.make<CapabilityRoute.Judgement, Tier>({
      routeId: options.id,
      rules: classifierRules(classifier, options.picker, classifier.judge.id),
      messageHashFallback: classifier.messageHashFallback,
      posture: classifier.judgeFailure,
      late: classifier,
      consult: (request, judgeTimeoutMs) =>
        judge.consult({
          options: { ...classifier, judgeTimeoutMs },
          messages: request.body.messages,
          headers: request.headers
        }),
      toStored: (tier) => ({ target: targetOf(options, tier).name, tier: tier === "efficient" ? "weak" : "strong" }),
      fromStored: (stored) =>
        Option.some(
          stored.tier === undefined
            ? (stored.target === options.efficient.name ? "efficient" : "capable")
            : tierOfPolicy(stored.tier)
        )
    }))

/** The routed decision of a tier with `evidence`: its target, the other one as the fallback. */
const routedTo = (options: Options, tier: Tier, evidence: Evidence.Evidence): Decision.Routed => {
  const selected = targetOf(options, tier)
  return Decision.routed({
    route: { id: options.id, name: options.name, algorithm: "stage_router" },
    selected,
    fallbacks: [options.capable, options.efficient].filter((target) => target.name !== selected.name),
    evidence
  })
}

/** The tier and evidence of a turn the signals left undecided: the classifier's, else the picker's default. */
const undecided = (
  options: Options,
  classify: Option.Option<Classify>,
  request: RoutedRequest,
  facts: (source: Source, tier: Tier) => Evidence.StageFacts
): Effect.Effect<
  { readonly decision: Decision.Routed; readonly source: Source },
  JudgeUnavailable,
  RoutingFacts.Reporter
> =>
  Option.match(classify, {
    onNone: () => {
      const fallbackTier = StageSignals.defaultTier(options.picker)
      return Effect.succeed({
        decision: routedTo(options, fallbackTier, { source: "stage_router", stage: facts("fall_open", fallbackTier) }),
        source: "fall_open"
      })
    },
    onSome: (decide) =>
      Effect.map(decide(request), ({ evidence, selection }) => {
        const source = classifierSource(evidence)
        return { decision: routedTo(options, selection, withStage(evidence, facts(source, selection))), source }
      })
  })

/**
 * One turn: the signals decide when they can, else the classifier or the picker's default; the
 * decision counted by source and target, and the tier's system prompt and handoff note put into the
 * answer call's body.
 */
const decideFor = (
  options: Options,
  classify: Option.Option<Classify>,
  request: RoutedRequest
): Effect.Effect<Decision.Routed, JudgeUnavailable, RoutingFacts.Reporter> =>
  Effect.gen(function*() {
    const signals = StageSignals.signalsOf(request.body.messages, options.recentTurnWindow)
    const dimensions = StageSignals.dimensionsOf(signals)
    const picked = StageSignals.pick(signals, options.confidenceThreshold)
    yield* observeSignals(picked.score, picked.confidence, dimensions)
    const note = (source: Source, tier: Tier) =>
      Option.flatMap(options.handoffNotes, (notes) => noteFor(notes, tier, source))
    const facts = (source: Source, tier: Tier): Evidence.StageFacts => ({
      decision_source: source,
      tier,
      score: picked.score,
      confidence: picked.confidence,
      ...dimensions,
      ...Option.match(note(source, tier), { onNone: () => ({}), onSome: ({ kind }) => ({ handoff_note: kind }) })
    })

    if (picked._tag === "Ambiguous") {
      // Told before the classifier runs: its `error` posture may fail the request (no evidence).
      yield* RoutingFacts.report((observer) =>
        observer.stage(facts("fall_open", StageSignals.defaultTier(options.picker)))
      )
    }
    const { decision, source } = picked._tag === "Decided"
      ? {
        decision: routedTo(options, picked.tier, { source: "stage_router", stage: facts(picked.source, picked.tier) }),
        source: picked.source
      }
      : yield* undecided(options, classify, request, facts)
    const tier: Tier = decision.selected.name === options.capable.name ? "capable" : "efficient"
    yield* Metric.update(
      TaggedMetric.tagged(Metrics.stageRouterRoutingDecisionsTotal, {
        decision_source: source,
        target_name: decision.selected.id
      }),
      1
    )
    const body = amend(
      request.body,
      tier === "capable" ? options.capableSystemPrompt : options.efficientSystemPrompt,
      Option.map(note(source, tier), ({ text }) => text)
    )
    return Option.match(body, { onNone: () => decision, onSome: (amended) => ({ ...decision, body: amended }) })
  })

/** Build a stage router route over the `Judge` and `SessionStore` services (used only with a classifier); late classifier calls run in `Scope`. */
export const make = (options: Options): Effect.Effect<Route, never, Judge | SessionStore | Scope.Scope> =>
  Effect.gen(function*() {
    const classify = yield* Option.match(options.classifier, {
      onNone: () => Effect.succeedNone,
      onSome: (classifier) => Effect.map(classifierOf(options, classifier), Option.some)
    })
    const withSessionLock = ClassifierRoute.sessionLocks()
    const route: Route = {
      id: options.id,
      name: options.name,
      algorithm: "stage_router",
      targets: distinctTargets([options.capable, options.efficient]),
      contextWindow: options.contextWindow ?? Option.none(),
      toolCalling: options.toolCalling ?? Option.none(),
      decide: (request) =>
        Option.isSome(classify)
          ? withSessionLock(Option.map(request.sessionId, (id) => `s:${id}`), decideFor(options, classify, request))
          : decideFor(options, classify, request)
    }
    return route
  })
