/**
 * An independent model of composite routes (capable `capable`, efficient `efficient`, confidence
 * threshold 0.5, no handoff notes): the classifier runs first on every request the trigger makes
 * due (`user_turn`: a user turn, or a continuation with nothing stored; `new_session`: a session
 * with nothing stored, or no session), else the session's stored tier is reused (`affinity`); a
 * valid verdict is stored; without one the stored tier is kept (`retained`), else efficient
 * (`fail-open`), counted once; under `error` a judge call failure fails the request (502 / 504).
 * Then the turn: a clean test pass goes efficient and ends the capable hold, an open hold keeps the
 * session capable (`capable_hold`), an override goes capable and opens a hold of `holdTurns`, and a
 * quiet turn takes the classifier's tier. `runCompositeSchedule` drives a schedule through the real
 * route (real `Judge.layer` over the real `UpstreamClient.layer` over a scripted `HttpClient`) and
 * checks every request: decision, evidence with its stage facts, judge calls, session writes, the
 * fail-open counter and the stage decisions counter.
 */
import { assert } from "@effect/vitest"
import * as CompositeRoute from "@switchyard-ts/routing/CompositeRoute"
import * as Decision from "@switchyard-ts/routing/Decision"
import type * as Evidence from "@switchyard-ts/routing/Evidence"
import type * as Judge from "@switchyard-ts/routing/Judge"
import type * as Posture from "@switchyard-ts/routing/Posture"
import type * as SessionStore from "@switchyard-ts/routing/SessionStore"
import type * as StageSignals from "@switchyard-ts/routing/StageSignals"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FastCheck from "effect/FastCheck"
import type * as Layer from "effect/Layer"
import * as Option from "effect/Option"
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
import { conversationOf, type Scenario, stageDecisions } from "./stageModel.js"

type Tier = StageSignals.Tier

export interface Step {
  readonly session: string | null
  readonly scenario: Scenario
  readonly outcome: Outcome
}

export interface ModelConfig {
  readonly posture: Posture.Posture
  readonly trigger: CompositeRoute.ClassifyTrigger
  readonly holdTurns: number
  readonly judgeModel: string
}

type Expected =
  | { readonly _tag: "Fails"; readonly failure: CallFailureTag; readonly status: Option.Option<number> }
  | {
    readonly _tag: "Routes"
    readonly tier: Tier
    readonly evidence: Evidence.Evidence
    readonly withoutVerdict: boolean
    readonly decisionSource: Evidence.StageDecisionSource
  }

/** The model's session state: stored tiers and open holds, by session. */
export interface State {
  readonly stored: Map<string, Tier>
  readonly holds: Map<string, number>
}

const quiet = { score: 0, confidence: 0, severity: 0, spinning: 0, exploring: 0, production_intensity: 0 }

/** The classifier's part: its tier and evidence (no `stage` yet), or the request's failure. */
const classify = (config: ModelConfig, state: State, step: Step) => {
  const key = step.session
  const previous = key === null ? undefined : state.stored.get(key)
  const continuation = step.scenario !== "quiet_turn"
  const due = config.trigger === "new_session" ? previous === undefined : !continuation || previous === undefined
  if (!due && previous !== undefined) {
    return {
      _tag: "Selected" as const,
      tier: previous,
      evidence: { source: "affinity", previous_source: "llm-classifier" } as const,
      judgeCalls: 0,
      writes: false,
      withoutVerdict: false
    }
  }
  const judged = judgedOf(step.outcome)
  if (judged._tag === "Verdict") {
    const threshold = thresholdOf[judged.boundary]
    const tier: Tier = judged.p_solve >= threshold || threshold - judged.p_solve <= Number.EPSILON
      ? "efficient"
      : "capable"
    if (key !== null) state.stored.set(key, tier)
    return {
      _tag: "Selected" as const,
      tier,
      evidence: { source: "llm-classifier", score: judged.p_solve, threshold, boundary: judged.boundary } as const,
      judgeCalls: 1,
      writes: key !== null,
      withoutVerdict: false
    }
  }
  if (judged._tag === "CallFailed" && config.posture === "error") {
    return { _tag: "Fails" as const, failure: judged.failure, status: judged.status }
  }
  return {
    _tag: "Selected" as const,
    tier: previous ?? "efficient",
    evidence: previous !== undefined
      ? { source: "retained", reason: judged.reason, judge_model: config.judgeModel } as const
      : { source: "fail-open", reason: judged.reason, judge_model: config.judgeModel } as const,
    judgeCalls: 1,
    writes: false,
    withoutVerdict: true
  }
}

const modelStep = (
  config: ModelConfig,
  state: State,
  step: Step
): { readonly expected: Expected; readonly judgeCalls: number; readonly writes: boolean } => {
  const selected = classify(config, state, step)
  if (selected._tag === "Fails") {
    return {
      expected: { _tag: "Fails", failure: selected.failure, status: selected.status },
      judgeCalls: 1,
      writes: false
    }
  }
  const key = step.session
  const remaining = key === null ? 0 : state.holds.get(key) ?? 0
  const scored: Omit<Evidence.StageFacts, "decision_source" | "tier" | "handoff_note"> = step.scenario === "critical"
    ? { ...quiet, override_reason: "critical_error" as const, confidence: 1, severity: 1 }
    : step.scenario === "settled"
    ? { ...quiet, production_intensity: 1 }
    : quiet
  const [tier, source, left]: readonly [Tier, Evidence.StageDecisionSource, number] = step.scenario === "settled"
    ? ["efficient", "tests_passed", 0]
    : remaining > 0
    ? ["capable", "capable_hold", remaining - 1]
    : step.scenario === "critical"
    ? ["capable", "override", key === null ? 0 : config.holdTurns]
    : [
      selected.tier,
      selected.evidence.source === "llm-classifier" || selected.evidence.source === "affinity"
        ? "llm-classifier"
        : "fall_open",
      0
    ]
  if (key !== null) state.holds.set(key, left)
  const stage: Evidence.StageFacts = { decision_source: source, tier, ...scored }
  return {
    expected: {
      _tag: "Routes",
      tier,
      evidence: { ...selected.evidence, stage },
      withoutVerdict: selected.withoutVerdict,
      decisionSource: source
    },
    judgeCalls: selected.judgeCalls,
    writes: selected.writes
  }
}

// ---------------------------------------------------------------------------------------------
// Running a schedule against the real route
// ---------------------------------------------------------------------------------------------

export const compositeOptions = (
  judge: ReturnType<typeof target>,
  overrides: Partial<CompositeRoute.Options> = {},
  classifier: Partial<CompositeRoute.ClassifierOptions> = {}
): CompositeRoute.Options => ({
  id: "composite",
  name: "composite",
  capable: target("capable", "capable-model"),
  efficient: target("efficient", "efficient-model"),
  confidenceThreshold: 0.5,
  recentTurnWindow: 3,
  capableHoldTurns: 2,
  capableSystemPrompt: Option.none(),
  efficientSystemPrompt: Option.none(),
  handoffNotes: Option.none(),
  classifier: {
    judge,
    prompt: Option.none(),
    responseFormatType: "json_schema",
    maxOutputTokens: 256,
    recentTurnWindow: Option.none(),
    baseThreshold: 0.5,
    thresholdStep: 0.125,
    classifyTrigger: "user_turn",
    messageHashFallback: false,
    judgeFailure: "error",
    ...classifier
  },
  ...overrides
})

/** A composite route over `judgeLayer` and a memory session store; no late verdicts (the scope closes at once). */
export const buildCompositeRoute = (
  options: CompositeRoute.Options,
  judgeLayer: Layer.Layer<Judge.Judge>,
  storeLayer: Layer.Layer<SessionStore.SessionStore> = memoryStore()
) => CompositeRoute.make(options).pipe(Effect.provide(routeServices(judgeLayer, storeLayer)), Effect.scoped)

export const runCompositeSchedule = (config: Omit<ModelConfig, "judgeModel">, steps: ReadonlyArray<Step>) =>
  Effect.gen(function*() {
    const judgeModel = yield* uniqueJudgeModel
    const model: ModelConfig = { ...config, judgeModel }
    const judge = yield* makeScriptedJudge
    const store = yield* countingStore
    // model ids unique to the sample: the metric registry is process-global
    const capable = target("capable", `capable-${judgeModel}`)
    const efficient = target("efficient", `efficient-${judgeModel}`)
    const judgeTarget = target("judge", judgeModel, { maxRetries: 0, timeoutMs: Option.some(3000) })
    const route = yield* buildCompositeRoute(
      compositeOptions(judgeTarget, { capable, efficient, capableHoldTurns: config.holdTurns }, {
        classifyTrigger: config.trigger,
        judgeFailure: config.posture
      }),
      judge.layer,
      store.layer
    )
    const total = (counts: ReadonlyArray<readonly [Evidence.Reason, number]>) =>
      counts.reduce((sum, [, count]) => sum + count, 0)
    const state: State = { stored: new Map(), holds: new Map() }

    for (const [i, step] of steps.entries()) {
      const where = `request ${i} (${JSON.stringify(step)})`
      const { expected, judgeCalls, writes } = modelStep(model, state, step)
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
      assert.strictEqual(
        total(yield* failOpenCounts(judgeModel)) - countsBefore,
        expected._tag === "Routes" && expected.withoutVerdict ? 1 : 0,
        `fail-open count, ${where}`
      )
      if (config.posture === "fail_open") assert.isTrue(Exit.isSuccess(exit), `fail_open never fails, ${where}`)
      if (expected._tag === "Fails") {
        assertJudgeUnavailable(exit, expected, where, judgeModel)
        continue
      }
      assert.isTrue(Exit.isSuccess(exit), `expected a decision, ${where}`)
      if (Exit.isFailure(exit)) continue
      const decision = exit.value
      assert.strictEqual(decision._tag, "Routed", where)
      const selected = Option.getOrThrow(Decision.selected(decision))
      assert.strictEqual(selected.name, expected.tier, `tier, ${where}`)
      assert.deepStrictEqual(decision.evidence, expected.evidence, `evidence, ${where}`)
      assert.deepStrictEqual(decision.route, { id: "composite", name: "composite", algorithm: "composite" }, where)
      assert.deepStrictEqual(
        Decision.fallbacks(decision).map((t) => t.name),
        [expected.tier === "capable" ? "efficient" : "capable"],
        where
      )
      const decisionsAfter = yield* stageDecisions(expected.decisionSource, selected.id)
      assert.strictEqual(decisionsAfter - decisionsBefore, 1, `stage decisions counter, ${where}`)
    }
    return true
  })

// ---------------------------------------------------------------------------------------------
// Generators
// ---------------------------------------------------------------------------------------------

export const compositeSchedule = FastCheck.array(
  FastCheck.record({
    session: FastCheck.option(FastCheck.constantFrom("s1", "s2"), { freq: 4 }),
    scenario: FastCheck.oneof(
      { arbitrary: FastCheck.constantFrom<Scenario>("quiet_turn", "quiet_continuation"), weight: 4 },
      { arbitrary: FastCheck.constantFrom<Scenario>("critical", "settled"), weight: 2 }
    ),
    outcome: outcomeArb
  }),
  { minLength: 1, maxLength: 10 }
)
