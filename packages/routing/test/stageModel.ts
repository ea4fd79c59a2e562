/**
 * An independent model of stage router routes with a classifier (capable `capable`, efficient
 * `efficient`, confidence threshold 0.5, handoff notes gated to signal-driven turns): a turn the
 * signals decide never reaches the judge; an undecided turn goes through the capability judge with
 * the route's `classify_trigger` (a stored verdict tier reused as `affinity`); a valid verdict
 * writes the session's tier; without a verdict the turn goes to the picker's default tier
 * (`fail-open`, stage `fall_open`, a stored tier never reused); under `error` a judge call failure
 * fails the request (502 / 504). `runStageSchedule` drives a schedule through the real route (real
 * `Judge.layer` over the real `UpstreamClient.layer` over a scripted `HttpClient`) and checks every
 * request: decision, evidence, judge calls, session writes, the fail-open counter and the stage
 * decisions counter.
 */
import { assert } from "@effect/vitest"
import type { Message } from "@switchyard-ts/protocol/OpenAiChat"
import type * as ClassifierCascade from "@switchyard-ts/routing/ClassifierCascade"
import * as Decision from "@switchyard-ts/routing/Decision"
import type * as Evidence from "@switchyard-ts/routing/Evidence"
import * as Judge from "@switchyard-ts/routing/Judge"
import * as Metrics from "@switchyard-ts/routing/Metrics"
import type * as Posture from "@switchyard-ts/routing/Posture"
import type { Route } from "@switchyard-ts/routing/Route"
import * as RoutingFacts from "@switchyard-ts/routing/RoutingFacts"
import type * as SessionStore from "@switchyard-ts/routing/SessionStore"
import * as StageRoute from "@switchyard-ts/routing/StageRoute"
import type * as StageSignals from "@switchyard-ts/routing/StageSignals"
import type { Verdict } from "@switchyard-ts/routing/Verdict"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FastCheck from "effect/FastCheck"
import type * as Layer from "effect/Layer"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import {
  assertJudgeUnavailable,
  type CallFailureTag,
  decideOnce,
  failOpenCounts,
  judgedOf,
  outcomeArb,
  routed,
  thresholdOf,
  uniqueJudgeModel
} from "./capabilityModel.js"
import { countingStore } from "./escalationModel.js"
import { memoryStore, routeServices } from "./harness.js"
import { makeScriptedJudge, type Outcome, target } from "./scriptedJudge.js"

export const escalationNote = "ESCALATION-NOTE: re-examine the failing step"
export const deescalationNote = "DEESCALATION-NOTE: the plan is settled"

// ---------------------------------------------------------------------------------------------
// Conversations
// ---------------------------------------------------------------------------------------------

/**
 * `quiet_turn`: a user turn with no tool history (score 0: undecided). `quiet_continuation`: a tool
 * continuation whose one call and result say nothing (undecided). `critical`: a tool result
 * reporting out-of-memory (capable, `override`). `settled`: a file write then passing tests
 * (efficient, `tests_passed`).
 */
export type Scenario = "quiet_turn" | "quiet_continuation" | "critical" | "settled"

const toolTurn = (name: string, args: string, result: string): ReadonlyArray<Message> => [
  { role: "user", content: "fix the build" },
  {
    role: "assistant",
    content: null,
    tool_calls: [{ id: "c1", type: "function", function: { name, arguments: args } }]
  },
  { role: "tool", tool_call_id: "c1", content: result }
]

export const conversationOf = (scenario: Scenario): ReadonlyArray<Message> => {
  switch (scenario) {
    case "quiet_turn":
      return [{ role: "system", content: "CLIENT" }, { role: "user", content: "fix the build" }]
    case "quiet_continuation":
      return toolTurn("lookup", "{}", "nothing to report")
    case "critical":
      return toolTurn("Bash", "{\"command\":\"cargo test\"}", "fatal runtime error: out of memory")
    case "settled":
      return [
        ...toolTurn("Write", "{\"file_path\":\"a.rs\"}", "written"),
        {
          role: "assistant",
          content: null,
          tool_calls: [{
            id: "c2",
            type: "function",
            function: { name: "Bash", arguments: "{\"command\":\"pytest\"}" }
          }]
        },
        { role: "tool", tool_call_id: "c2", content: "12 passed in 0.4s" }
      ]
  }
}

const decidedBySignals: Partial<
  Record<Scenario, { readonly tier: StageSignals.Tier; readonly source: Evidence.StageDecisionSource }>
> = {
  critical: { tier: "capable", source: "override" },
  settled: { tier: "efficient", source: "tests_passed" }
}

/** The scorer's values for each scenario (none of them is deep enough for spinning / exploring). */
const scoredOf = (scenario: Scenario): Omit<Evidence.StageFacts, "decision_source" | "tier" | "handoff_note"> => {
  const quiet = { score: 0, confidence: 0, severity: 0, spinning: 0, exploring: 0, production_intensity: 0 }
  switch (scenario) {
    case "critical":
      return { ...quiet, override_reason: "critical_error", confidence: 1, severity: 1 }
    case "settled":
      // the Write and the pytest (other) calls: one categorised call, a write
      return { ...quiet, production_intensity: 1 }
    default:
      return quiet
  }
}

// ---------------------------------------------------------------------------------------------
// The model
// ---------------------------------------------------------------------------------------------

export interface Step {
  readonly session: string | null
  readonly scenario: Scenario
  readonly outcome: Outcome
}

export interface ModelConfig {
  readonly posture: Posture.Posture
  readonly trigger: ClassifierCascade.ClassifyTrigger
  readonly picker: StageSignals.Picker
  readonly judgeModel: string
}

type Expected =
  | { readonly _tag: "Fails"; readonly failure: CallFailureTag; readonly status: Option.Option<number> }
  | {
    readonly _tag: "Routes"
    readonly tier: StageSignals.Tier
    readonly evidence: Evidence.Evidence
    readonly withoutVerdict: Option.Option<Evidence.Reason>
    readonly decisionSource: Evidence.StageDecisionSource
  }

const noteOf = (tier: StageSignals.Tier, source: Evidence.StageDecisionSource) =>
  tier === "capable" && (source === "override" || source === "dimensions")
    ? { handoff_note: "escalation" as const }
    : tier === "efficient" && (source === "tests_passed" || source === "dimensions")
    ? { handoff_note: "deescalation" as const }
    : {}

const modelStep = (
  config: ModelConfig,
  stored: Map<string, StageSignals.Tier>,
  step: Step
): { readonly expected: Expected; readonly judgeCalls: number; readonly writes: boolean } => {
  const facts = (source: Evidence.StageDecisionSource, tier: StageSignals.Tier): Evidence.StageFacts => ({
    decision_source: source,
    tier,
    ...scoredOf(step.scenario),
    ...noteOf(tier, source)
  })
  const signals = decidedBySignals[step.scenario]
  if (signals !== undefined) {
    return {
      expected: {
        _tag: "Routes",
        tier: signals.tier,
        evidence: { source: "stage_router", stage: facts(signals.source, signals.tier) },
        withoutVerdict: Option.none(),
        decisionSource: signals.source
      },
      judgeCalls: 0,
      writes: false
    }
  }
  const key = config.trigger === "every_request" ? Option.none<string>() : Option.fromNullable(step.session)
  const previous = Option.flatMap(key, (k) => Option.fromNullable(stored.get(k)))
  const reuse = config.trigger === "new_session" ||
    (config.trigger === "user_turn" && step.scenario !== "quiet_turn")
  if (reuse && Option.isSome(previous)) {
    return {
      expected: {
        _tag: "Routes",
        tier: previous.value,
        evidence: {
          source: "affinity",
          previous_source: "llm-classifier",
          stage: facts("llm-classifier", previous.value)
        },
        withoutVerdict: Option.none(),
        decisionSource: "llm-classifier"
      },
      judgeCalls: 0,
      writes: false
    }
  }
  const judged = judgedOf(step.outcome)
  if (judged._tag === "Verdict") {
    const threshold = thresholdOf[judged.boundary]
    const tier: StageSignals.Tier = judged.p_solve >= threshold || threshold - judged.p_solve <= Number.EPSILON
      ? "efficient"
      : "capable"
    if (Option.isSome(key)) stored.set(key.value, tier)
    return {
      expected: {
        _tag: "Routes",
        tier,
        evidence: {
          source: "llm-classifier",
          score: judged.p_solve,
          threshold,
          boundary: judged.boundary,
          stage: facts("llm-classifier", tier)
        },
        withoutVerdict: Option.none(),
        decisionSource: "llm-classifier"
      },
      judgeCalls: 1,
      writes: Option.isSome(key)
    }
  }
  if (judged._tag === "CallFailed" && config.posture === "error") {
    return { expected: { _tag: "Fails", failure: judged.failure, status: judged.status }, judgeCalls: 1, writes: false }
  }
  const tier: StageSignals.Tier = config.picker === "capable_first" ? "capable" : "efficient"
  return {
    expected: {
      _tag: "Routes",
      tier,
      evidence: {
        source: "fail-open",
        reason: judged.reason,
        judge_model: config.judgeModel,
        stage: facts("fall_open", tier)
      },
      withoutVerdict: Option.some(judged.reason),
      decisionSource: "fall_open"
    },
    judgeCalls: 1,
    writes: false
  }
}

// ---------------------------------------------------------------------------------------------
// Running a schedule against the real route
// ---------------------------------------------------------------------------------------------

export const stageOptions = (
  judge: ReturnType<typeof target>,
  overrides: Partial<StageRoute.Options> = {},
  classifier: Partial<StageRoute.ClassifierOptions> = {}
): StageRoute.Options => ({
  id: "stage",
  name: "stage",
  capable: target("capable", "capable-model"),
  efficient: target("efficient", "efficient-model"),
  picker: "efficient_first",
  confidenceThreshold: 0.5,
  recentTurnWindow: 3,
  capableSystemPrompt: Option.none(),
  efficientSystemPrompt: Option.none(),
  handoffNotes: Option.some({
    escalationNote,
    deescalationNote: Option.some(deescalationNote),
    onlyOnWrongSignalEscalation: true
  }),
  classifier: Option.some({
    judge,
    prompt: Option.none(),
    responseFormatType: "json_schema",
    maxOutputTokens: 256,
    recentTurnWindow: Option.none(),
    baseThreshold: 0.5,
    thresholdStep: 0.125,
    classifyTrigger: "every_request",
    messageHashFallback: false,
    judgeFailure: "error",
    ...classifier
  }),
  ...overrides
})

/**
 * Routes built here configure no late verdicts: the scope their background judge calls would run in
 * is closed at once (LateVerdict.test.ts builds its routes in a scope of its own).
 */
export const buildStageRoute = (
  options: StageRoute.Options,
  judgeLayer: Layer.Layer<Judge.Judge>,
  storeLayer: Layer.Layer<SessionStore.SessionStore> = memoryStore()
) => StageRoute.make(options).pipe(Effect.provide(routeServices(judgeLayer, storeLayer)), Effect.scoped)

/** The stage decisions counter of one label set. */
export const stageDecisions = (source: Evidence.StageDecisionSource, model: string) =>
  Effect.map(
    Metric.value(
      Metrics.stageRouterRoutingDecisionsTotal.pipe(
        Metric.tagged("decision_source", source),
        Metric.tagged("target_name", model)
      )
    ),
    (state) => state.count
  )

const lastText = (messages: ReadonlyArray<Message>): string => {
  const last = messages[messages.length - 1]
  if (last === undefined || last.content === undefined || last.content === null) return ""
  return typeof last.content === "string"
    ? last.content
    : last.content.map((part) => (part.type === "text" && "text" in part ? part.text : "")).join("|")
}

export const runStageSchedule = (config: Omit<ModelConfig, "judgeModel">, steps: ReadonlyArray<Step>) =>
  Effect.gen(function*() {
    const judgeModel = yield* uniqueJudgeModel
    const model: ModelConfig = { ...config, judgeModel }
    const judge = yield* makeScriptedJudge
    const store = yield* countingStore
    // model ids unique to the sample: the metric registry is process-global
    const capable = target("capable", `capable-${judgeModel}`)
    const efficient = target("efficient", `efficient-${judgeModel}`)
    const judgeTarget = target("judge", judgeModel, { maxRetries: 0, timeoutMs: Option.some(3000) })
    const route = yield* buildStageRoute(
      stageOptions(judgeTarget, { capable, efficient, picker: config.picker }, {
        classifyTrigger: config.trigger,
        judgeFailure: config.posture
      }),
      judge.layer,
      store.layer
    )
    const total = (counts: ReadonlyArray<readonly [Evidence.Reason, number]>) =>
      counts.reduce((sum, [, count]) => sum + count, 0)
    const countsAtStart = total(yield* failOpenCounts(judgeModel))
    const stored = new Map<string, StageSignals.Tier>()
    let withoutVerdict = 0

    for (const [i, step] of steps.entries()) {
      const where = `request ${i} (${JSON.stringify(step)})`
      const { expected, judgeCalls, writes } = modelStep(model, stored, step)
      yield* judge.script([step.outcome])
      const judgeBefore = yield* judge.calls
      const writesBefore = yield* store.writes
      const countsBefore = total(yield* failOpenCounts(judgeModel))
      const decisionsBefore = expected._tag === "Routes"
        ? yield* stageDecisions(expected.decisionSource, expected.tier === "capable" ? capable.id : efficient.id)
        : 0

      const request = routed(conversationOf(step.scenario), Option.fromNullable(step.session))
      const exit = yield* decideOnce(route, request, judgeCalls > 0 ? step.outcome : { _tag: "garbage" }, 0)

      assert.strictEqual((yield* judge.calls) - judgeBefore, judgeCalls, `judge calls, ${where}`)
      assert.strictEqual((yield* store.writes) - writesBefore, writes ? 1 : 0, `session writes, ${where}`)
      const counted = total(yield* failOpenCounts(judgeModel)) - countsBefore
      assert.strictEqual(
        counted,
        expected._tag === "Routes" && Option.isSome(expected.withoutVerdict) ? 1 : 0,
        `fail-open count, ${where}`
      )
      if (config.posture === "fail_open") assert.isTrue(Exit.isSuccess(exit), `fail_open never fails, ${where}`)

      if (expected._tag === "Fails") {
        assertJudgeUnavailable(exit, expected, where, judgeModel)
      } else {
        assert.isTrue(Exit.isSuccess(exit), `expected a decision, ${where}`)
        if (Exit.isSuccess(exit)) {
          const decision = exit.value
          assert.strictEqual(decision._tag, "Routed", where)
          const selected = Option.getOrThrow(Decision.selected(decision))
          assert.strictEqual(selected.name, expected.tier, `tier, ${where}`)
          assert.deepStrictEqual(
            Decision.fallbacks(decision).map((t) => t.name),
            [expected.tier === "capable" ? "efficient" : "capable"],
            where
          )
          assert.deepStrictEqual(decision.evidence, expected.evidence, `evidence, ${where}`)
          assert.deepStrictEqual(decision.route, { id: "stage", name: "stage", algorithm: "stage_router" }, where)
          const note = "stage" in expected.evidence ? expected.evidence.stage?.handoff_note : undefined
          if (decision._tag === "Routed") {
            if (note === undefined) {
              assert.isUndefined(decision.body, `no amended body, ${where}`)
            } else {
              assert.include(
                lastText(decision.body?.messages ?? []),
                note === "escalation" ? escalationNote : deescalationNote,
                `handoff note, ${where}`
              )
            }
          }
          const decisionsAfter = yield* stageDecisions(expected.decisionSource, selected.id)
          assert.strictEqual(decisionsAfter - decisionsBefore, 1, `stage decisions counter, ${where}`)
        }
        if (Option.isSome(expected.withoutVerdict)) withoutVerdict++
      }
    }
    assert.strictEqual(total(yield* failOpenCounts(judgeModel)) - countsAtStart, withoutVerdict, "fail-open total")
    return true
  })

/** A valid capability verdict with this `p_solve`. */
export const verdict = (p_solve: number): Effect.Effect<Verdict, Judge.JudgeError> =>
  Effect.succeed({ crux: "c", primary_rule: "SUP-1" as const, capability_boundary: "supported" as const, p_solve })

/** A judge that answers `answers` in order (the last one from then on) and counts its consultations. */
export const countingJudge = (answers: ReadonlyArray<Effect.Effect<Verdict, Judge.JudgeError>>) =>
  Effect.map(Ref.make(0), (calls) => ({
    calls: Ref.get(calls),
    layer: Judge.layerTest(() =>
      Effect.flatMap(
        Ref.getAndUpdate(calls, (n) => n + 1),
        (n) => answers[Math.min(n, answers.length - 1)] ?? verdict(1)
      )
    )
  }))

/** Tier, stage decision source and evidence source of one request of `scenario` through `route`. */
export const decisionFacts = (route: Route, session: string | null, scenario: Scenario) =>
  Effect.map(
    RoutingFacts.observe(
      route.decide(routed(conversationOf(scenario), Option.fromNullable(session))),
      RoutingFacts.ignored
    ),
    (decision) =>
      decision._tag === "Routed" && "stage" in decision.evidence && decision.evidence.stage !== undefined
        ? [decision.selected.name, decision.evidence.stage.decision_source, decision.evidence.source]
        : ["answered"]
  )

// ---------------------------------------------------------------------------------------------
// Generators
// ---------------------------------------------------------------------------------------------

export const stageSchedule = FastCheck.array(
  FastCheck.record({
    session: FastCheck.option(FastCheck.constantFrom("s1", "s2"), { freq: 4 }),
    scenario: FastCheck.oneof(
      { arbitrary: FastCheck.constantFrom<Scenario>("quiet_turn", "quiet_continuation"), weight: 4 },
      { arbitrary: FastCheck.constantFrom<Scenario>("critical", "settled"), weight: 1 }
    ),
    outcome: outcomeArb
  }),
  { minLength: 1, maxLength: 8 }
)
