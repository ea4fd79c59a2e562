/**
 * Policy replay of custom classifier routes, stage routers and escalation routes: replaying a
 * routing log under the configuration that wrote it reproduces every logged decision (a property
 * per route type over judge-outcome schedules, sessions, turns and route settings; the log written
 * by the real route and judge through the routing log's own line builder, `replayLog.ts`), and a
 * worked example per route type under changed settings, its report computed by hand.
 */
import { assert, describe, it } from "@effect/vitest"
import * as PolicyReplay from "@switchyard-ts/server/PolicyReplay"
import * as Effect from "effect/Effect"
import * as FastCheck from "effect/FastCheck"
import * as ReplayLog from "./replayLog.js"
import type { CapabilityJudge } from "./replayLog.js"
import {
  compositeLogOf,
  compositeReplayer,
  type CompositeSettings,
  compositeSettingsArbitrary,
  type CustomLogged,
  customLogOf,
  customReplayer,
  customSettingsArbitrary,
  customStepArbitrary,
  customTarget,
  deescalationSettingsArbitrary,
  deescalationStepArbitrary,
  type EscalationJudge,
  escalationLogOf,
  escalationReplayer,
  type EscalationSettings,
  escalationSettingsArbitrary,
  type EscalationStep,
  escalationStepArbitrary,
  historyNames,
  runs,
  stageFactsOf,
  stageLogOf,
  stageReplayer,
  type StageSettings,
  stageSettingsArbitrary,
  type StageStep,
  stageStepArbitrary
} from "./replayScenarios.js"

// ---------------------------------------------------------------------------------------------

describe("policy replay of custom classifier routes", () => {
  it.effect.prop(
    "replaying a log under its own configuration reproduces every logged decision",
    { steps: FastCheck.array(customStepArbitrary, { maxLength: 12 }), settings: customSettingsArbitrary },
    ({ settings, steps }) =>
      Effect.flatMap(
        customLogOf(steps, settings),
        (lines) => ReplayLog.assertReproduced(lines, customReplayer(settings), steps.length)
      ),
    runs
  )

  it.effect("worked example: fail_open, and gamma removed from targets (its label goes to default_target)", () =>
    Effect.gen(function*() {
      const logged: CustomLogged = { defaultLabel: "beta", classifyTrigger: "user_turn", judgeFailure: "error" }
      const lines = yield* customLogOf([
        { session: "a", userTurn: true, judge: { _tag: "label", label: "gamma" }, tokens: 100 },
        { session: "a", userTurn: false, judge: { _tag: "garbage" }, tokens: 10 },
        { session: "a", userTurn: true, judge: { _tag: "transport" }, tokens: 1 },
        { session: "b", userTurn: true, judge: { _tag: "label", label: "alpha" }, tokens: 40 },
        { session: "b", userTurn: true, judge: { _tag: "label", label: "delta" }, tokens: 5 },
        { session: null, userTurn: true, judge: { _tag: "garbage" }, tokens: 1 }
      ], logged)
      const [report] = yield* PolicyReplay.replay(
        lines,
        new Map([[
          ReplayLog.routeId,
          customReplayer({ ...logged, judgeFailure: "fail_open" }, [customTarget("alpha"), customTarget("beta")])
        ]])
      )
      // Logged: 1 gamma (verdict, stores gamma); 2 gamma (a tool turn under user_turn: the stored
      // decision, no judge call); 3 failed (transport under error); 4 alpha; 5 beta (delta is no
      // label: abstained); 6 beta (parse_error, no session: the default).
      // Replayed: 1 beta (gamma is no target: abstained, stores beta); 2 beta (the stored beta);
      // 3 beta (retained, transport); 4-6 as logged. Tokens follow: the failed request has none.
      assert.deepStrictEqual(report, {
        route: ReplayLog.routeId,
        kind: "custom",
        requests: 6,
        other_algorithm: 0,
        logged: {
          routed: { "alpha-model": 1, "beta-model": 2, "gamma-model": 2 },
          failed: 1,
          failed_by_status: { "502": 1 },
          unknown: 0,
          without_verdict: { parse_error: 1 },
          without_verdict_routed: { "beta-model": 1 },
          tokens: { "alpha-model": 40, "beta-model": 6, "gamma-model": 110 }
        },
        replayed: {
          routed: { "alpha-model": 1, "beta-model": 5 },
          failed: 0,
          failed_by_status: {},
          unknown: 0,
          without_verdict: { transport: 1, parse_error: 1 },
          without_verdict_routed: { "beta-model": 2 },
          tokens: { "alpha-model": 40, "beta-model": 116 }
        },
        changed: 3,
        sessions_changed: 1
      })
    }))
})

describe("policy replay of stage routers", () => {
  it.effect.prop(
    "replaying a log under its own configuration reproduces every logged decision",
    { steps: FastCheck.array(stageStepArbitrary, { maxLength: 12 }), settings: stageSettingsArbitrary },
    ({ settings, steps }) =>
      Effect.flatMap(
        stageLogOf(steps, settings),
        (lines) => ReplayLog.assertReproduced(lines, stageReplayer(settings), steps.length)
      ),
    runs
  )

  it.effect("the histories reach every decision source, and the classifier's error posture fails requests", () =>
    Effect.gen(function*() {
      const settings: StageSettings = {
        picker: "capable_first",
        confidenceThreshold: 0.5,
        classifier: { baseThreshold: 0.5, thresholdStep: 0, classifyTrigger: "user_turn", judgeFailure: "error" }
      }
      const verdict: CapabilityJudge = { _tag: "verdict", p: 0.9, boundary: "supported" }
      const steps: ReadonlyArray<StageStep> = [
        // the classifier's verdicts (efficient) are stored for session a; its tool turns reuse them
        ...historyNames.map((history) => ({ session: "a", history, judge: verdict, tokens: 1 }) as const),
        // no verdict: the picker's default (capable), not a's stored efficient
        { session: "a", history: "quiet_turn", judge: { _tag: "garbage" }, tokens: 1 },
        { session: "b", history: "quiet_turn", judge: { _tag: "transport" }, tokens: 1 },
        { session: "b", history: "writing", judge: { _tag: "refused" }, tokens: 1 }
      ]
      const lines = yield* stageLogOf(steps, settings)
      const responses = lines.filter((line) => line.kind === "response")
      assert.deepStrictEqual(
        responses.map((line) => [
          stageFactsOf(line)?.decision_source,
          line.evidence === null ? line.error : line.evidence.source,
          line.tier
        ]),
        [
          ["override", "stage_router", "capable"], // critical
          ["tests_passed", "stage_router", "efficient"], // settled
          ["dimensions", "stage_router", "capable"], // spinning: 0.762 >= 0.5
          ["llm-classifier", "llm-classifier", "efficient"], // hard_error: 0.462 < 0.5; nothing stored yet: a verdict
          ["llm-classifier", "affinity", "efficient"], // writing: a tool turn, the stored verdict
          ["llm-classifier", "llm-classifier", "efficient"], // quiet_turn: a user turn, a verdict
          ["llm-classifier", "affinity", "efficient"], // quiet_continuation: the stored verdict
          ["llm-classifier", "llm-classifier", "efficient"], // user_after_read: a verdict
          ["fall_open", "fail-open", "capable"], // parse_error: no verdict under both postures
          ["fall_open", "upstream_error", null], // transport under error: failed, the line keeps its signal facts
          ["fall_open", "upstream_unavailable", null] // the breaker under error
        ]
      )
      assert.isTrue(yield* ReplayLog.assertReproduced(lines, stageReplayer(settings), steps.length))
    }))

  it.effect("worked example: a lower confidence_threshold decides by dimensions; no classifier: the picker's default", () =>
    Effect.gen(function*() {
      const logged: StageSettings = {
        picker: "efficient_first",
        confidenceThreshold: 0.5,
        classifier: { baseThreshold: 0.5, thresholdStep: 0, classifyTrigger: "every_request", judgeFailure: "error" }
      }
      const lines = yield* stageLogOf([
        { session: "a", history: "hard_error", judge: { _tag: "verdict", p: 0.9, boundary: "supported" }, tokens: 100 },
        { session: "a", history: "writing", judge: { _tag: "verdict", p: 0.1, boundary: "supported" }, tokens: 200 },
        { session: "a", history: "quiet_turn", judge: { _tag: "transport" }, tokens: 1 },
        { session: "b", history: "critical", judge: { _tag: "garbage" }, tokens: 10 },
        { session: "b", history: "settled", judge: { _tag: "garbage" }, tokens: 20 },
        { session: "b", history: "quiet_turn", judge: { _tag: "verdict", p: 0.9, boundary: "supported" }, tokens: 1 }
      ], logged)
      const [report] = yield* PolicyReplay.replay(
        lines,
        new Map([[
          ReplayLog.routeId,
          stageReplayer({ picker: "capable_first", confidenceThreshold: 0.4, classifier: undefined })
        ]])
      )
      // Logged (threshold 0.5, the classifier under error): 1 efficient (0.462 ambiguous; p 0.9 >=
      // 0.5 is weak); 2 capable (ambiguous; p 0.1 is strong); 3 failed (transport); 4 capable
      // (override); 5 efficient (tests_passed); 6 efficient (score 0; p 0.9).
      // Replayed (threshold 0.4, no classifier, capable_first): 1 capable (dimensions, +0.462);
      // 2 efficient (dimensions, −0.462); 3 capable (confidence 0: the picker's default); 4, 5 as
      // logged; 6 capable (the picker's default). The failed request has no tokens.
      assert.deepStrictEqual(report, {
        route: ReplayLog.routeId,
        kind: "stage_router",
        requests: 6,
        other_algorithm: 0,
        logged: {
          routed: { capable: 2, efficient: 3 },
          failed: 1,
          failed_by_status: { "502": 1 },
          unknown: 0,
          without_verdict: {},
          without_verdict_routed: {},
          tokens: { capable: 210, efficient: 121 }
        },
        replayed: {
          routed: { capable: 4, efficient: 2 },
          failed: 0,
          failed_by_status: {},
          unknown: 0,
          without_verdict: {},
          without_verdict_routed: {},
          tokens: { capable: 111, efficient: 220 }
        },
        changed: 4,
        sessions_changed: 2
      })
    }))
})

describe("policy replay of stage routers with a capable hold", () => {
  it.effect.prop(
    "replaying a log under its own configuration reproduces every logged decision",
    {
      steps: FastCheck.array(stageStepArbitrary, { maxLength: 12 }),
      settings: stageSettingsArbitrary,
      holdTurns: FastCheck.constantFrom(1, 2)
    },
    ({ holdTurns, settings, steps }) =>
      Effect.flatMap(
        stageLogOf(steps, { ...settings, capableHoldTurns: holdTurns }),
        (lines) =>
          ReplayLog.assertReproduced(
            lines,
            stageReplayer({ ...settings, capableHoldTurns: holdTurns }),
            steps.length
          )
      ),
    runs
  )

  it.effect("worked example: the held turns of a log go back to the signals and the picker without the hold", () =>
    Effect.gen(function*() {
      const logged: StageSettings = {
        picker: "efficient_first",
        confidenceThreshold: 0.5,
        capableHoldTurns: 2,
        classifier: undefined
      }
      const none: CapabilityJudge = { _tag: "garbage" }
      const lines = yield* stageLogOf([
        { session: "a", history: "critical", judge: none, tokens: 1 },
        { session: "a", history: "writing", judge: none, tokens: 10 },
        { session: "a", history: "quiet_turn", judge: none, tokens: 100 },
        { session: "a", history: "quiet_turn", judge: none, tokens: 1000 }
      ], logged)
      assert.deepStrictEqual(
        lines.flatMap((line) => line.kind === "response" ? [[stageFactsOf(line)?.decision_source, line.tier]] : []),
        [["override", "capable"], ["capable_hold", "capable"], ["capable_hold", "capable"], ["fall_open", "efficient"]]
      )
      assert.isTrue(yield* ReplayLog.assertReproduced(lines, stageReplayer(logged), 4))
      const [report] = yield* PolicyReplay.replay(
        lines,
        new Map([[ReplayLog.routeId, stageReplayer({ ...logged, capableHoldTurns: 0 })]])
      )
      // Replayed without the hold: 2 efficient (writing: dimensions, -0.462 is below 0.5, so the picker's
      // default), 3 efficient (the picker's default).
      assert.deepStrictEqual(report?.replayed.routed, { capable: 1, efficient: 3 })
      assert.deepStrictEqual(report?.replayed.tokens, { capable: 1, efficient: 1110 })
      assert.strictEqual(report?.changed, 2)
    }))
})

describe("policy replay of composite routes", () => {
  it.effect.prop(
    "replaying a log under its own configuration reproduces every logged decision",
    { steps: FastCheck.array(stageStepArbitrary, { maxLength: 12 }), settings: compositeSettingsArbitrary },
    ({ settings, steps }) =>
      Effect.flatMap(
        compositeLogOf(steps, settings),
        (lines) => ReplayLog.assertReproduced(lines, compositeReplayer(settings), steps.length)
      ),
    runs
  )

  it.effect("worked example: another base_threshold moves the fall-open tier, not the turns the signals decide", () =>
    Effect.gen(function*() {
      const logged: CompositeSettings = {
        confidenceThreshold: 0.5,
        capableHoldTurns: 0,
        classifier: { baseThreshold: 0.5, thresholdStep: 0, classifyTrigger: "user_turn", judgeFailure: "fail_open" }
      }
      const p = (value: number): CapabilityJudge => ({ _tag: "verdict", p: value, boundary: "supported" })
      const lines = yield* compositeLogOf([
        { session: "a", history: "quiet_turn", judge: p(0.6), tokens: 1 },
        { session: "a", history: "quiet_continuation", judge: p(0.6), tokens: 10 },
        { session: "a", history: "critical", judge: p(0.6), tokens: 100 },
        { session: "b", history: "quiet_turn", judge: { _tag: "transport" }, tokens: 1000 }
      ], logged)
      assert.deepStrictEqual(
        lines.flatMap((line) =>
          line.kind === "response"
            ? [[stageFactsOf(line)?.decision_source, line.evidence?.source ?? line.error, line.tier]]
            : []
        ),
        [
          ["llm-classifier", "llm-classifier", "efficient"], // p 0.6 >= 0.5
          ["llm-classifier", "affinity", "efficient"], // a continuation: the stored tier
          ["override", "affinity", "capable"], // the signals decide inside the turn
          ["fall_open", "fail-open", "efficient"] // no verdict, nothing stored: efficient
        ]
      )
      assert.isTrue(yield* ReplayLog.assertReproduced(lines, compositeReplayer(logged), 4))
      const [report] = yield* PolicyReplay.replay(
        lines,
        new Map([[
          ReplayLog.routeId,
          compositeReplayer({ ...logged, classifier: { ...logged.classifier, baseThreshold: 0.7 } })
        ]])
      )
      // p 0.6 < 0.7: the verdict is strong, so requests 1 and 2 go capable; 3 and 4 as logged
      assert.strictEqual(report?.kind, "composite")
      assert.deepStrictEqual(report?.replayed.routed, { capable: 3, efficient: 1 })
      assert.deepStrictEqual(report?.replayed.without_verdict, { transport: 1 })
      assert.strictEqual(report?.changed, 2)
    }))
})

describe("policy replay of escalation routes", () => {
  it.effect.prop(
    "replaying a log under its own configuration reproduces every logged decision",
    { steps: FastCheck.array(escalationStepArbitrary, { maxLength: 12 }), settings: escalationSettingsArbitrary },
    ({ settings, steps }) =>
      Effect.flatMap(
        escalationLogOf(steps, settings),
        (lines) => ReplayLog.assertReproduced(lines, escalationReplayer(settings), steps.length)
      ),
    runs
  )

  it.effect.prop(
    "with a deescalation table, replaying a log under its own configuration reproduces every logged decision",
    {
      steps: FastCheck.array(deescalationStepArbitrary, { maxLength: 24, size: "max" }),
      settings: deescalationSettingsArbitrary
    },
    ({ settings, steps }) =>
      Effect.flatMap(
        escalationLogOf(steps, settings),
        (lines) => ReplayLog.assertReproduced(lines, escalationReplayer(settings), steps.length)
      ),
    runs
  )

  it.effect("a session ended latched, then its weak target fails a request: the replay starts it afresh", () =>
    Effect.gen(function*() {
      const settings: EscalationSettings = { confirmations: 1, judgeFailure: "error" }
      const lines = yield* escalationLogOf([
        { session: "b", final: false, weak: "answer", judge: { _tag: "escalate" }, tokens: 1 },
        { session: "b", final: true, weak: "answer", judge: { _tag: "garbage" }, tokens: 1 },
        { session: "b", final: false, weak: "status_500", judge: { _tag: "refused" }, tokens: 1 }
      ], settings)
      const last = lines[lines.length - 1]
      assert.strictEqual(last?.kind, "response")
      if (last?.kind === "response") {
        // the route read the store (nothing: the session ended) before its weak call failed
        assert.deepStrictEqual(
          [last.evidence, last.error, last.tier, last.posture, last.stored_before],
          [null, "upstream_error", "weak", "error", null]
        )
      }
      assert.isTrue(yield* ReplayLog.assertReproduced(lines, escalationReplayer(settings), 3))
    }))

  it.effect("worked example: confirmations 2 → 1 latches earlier, 2 → 3 leaves latched turns unknown", () =>
    Effect.gen(function*() {
      const answer = (session: "a" | "b", judge: EscalationJudge, tokens: number, final = false): EscalationStep => ({
        session,
        final,
        weak: "answer",
        judge,
        tokens
      })
      const escalate = { _tag: "escalate" } as const
      const lines = yield* escalationLogOf([
        answer("a", { _tag: "decline" }, 10),
        answer("a", escalate, 20),
        answer("a", escalate, 30),
        answer("a", escalate, 40),
        answer("a", escalate, 50, true),
        answer("a", escalate, 60),
        { session: "b", final: false, weak: "overflow", judge: escalate, tokens: 70 },
        answer("b", { _tag: "transport" }, 80)
      ], { confirmations: 2, judgeFailure: "error" })
      const replayed = (settings: EscalationSettings) =>
        Effect.map(
          PolicyReplay.replay(lines, new Map([[ReplayLog.routeId, escalationReplayer(settings)]])),
          (reports) => reports[0]
        )
      // Logged (2 confirmations, error): 1 weak (decline); 2 weak (escalate, streak 1); 3 strong
      // (escalate, latches); 4 strong (latched); 5 strong (latched; the session ends); 6 weak
      // (escalate, streak 1 afresh); 7 strong (weak_failed); 8 failed (transport).
      const logged = {
        routed: { weak: 3, strong: 4 },
        failed: 1,
        failed_by_status: { "502": 1 },
        unknown: 0,
        without_verdict: {},
        without_verdict_routed: {},
        tokens: { weak: 90, strong: 190 }
      }
      // 1 confirmation, fail_open: 2 latches (strong), 3 strong (latched, not escalate), 4-5 as
      // logged, 6 latches afresh (strong), 7 as logged, 8 weak (fail-open, transport; no tokens).
      assert.deepStrictEqual(yield* replayed({ confirmations: 1, judgeFailure: "fail_open" }), {
        route: ReplayLog.routeId,
        kind: "escalation",
        requests: 8,
        other_algorithm: 0,
        logged,
        replayed: {
          routed: { weak: 2, strong: 6 },
          failed: 0,
          failed_by_status: {},
          unknown: 0,
          without_verdict: { transport: 1 },
          without_verdict_routed: { weak: 1 },
          tokens: { weak: 10, strong: 270 }
        },
        changed: 4,
        sessions_changed: 2
      })
      // 3 confirmations: 3 weak (escalate, streak 2); 4 and 5 were answered latched, with no weak
      // turn and no verdict: unknown; 6 weak (streak 1 afresh); the rest as logged.
      assert.deepStrictEqual(yield* replayed({ confirmations: 3, judgeFailure: "error" }), {
        route: ReplayLog.routeId,
        kind: "escalation",
        requests: 8,
        other_algorithm: 0,
        logged,
        replayed: {
          routed: { weak: 4, strong: 1 },
          failed: 1,
          failed_by_status: { "502": 1 },
          unknown: 2,
          without_verdict: {},
          without_verdict_routed: {},
          tokens: { weak: 120, strong: 70 }
        },
        changed: 3,
        sessions_changed: 1
      })
    }))
})
