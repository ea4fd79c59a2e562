import { assert, describe, it } from "@effect/vitest"
import { CircuitOpen, toHttp, TransportError } from "@switchyard-ts/protocol/Errors"
import type * as CompositeRoute from "@switchyard-ts/routing/CompositeRoute"
import * as RoutingFacts from "@switchyard-ts/routing/RoutingFacts"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import { postures, routed, uniqueJudgeModel } from "./capabilityModel.js"
import { buildCompositeRoute, compositeOptions, compositeSchedule, runCompositeSchedule } from "./compositeModel.js"
import { target } from "./scriptedJudge.js"
import { conversationOf, countingJudge, decisionFacts as decide, verdict } from "./stageModel.js"

const triggers: ReadonlyArray<CompositeRoute.ClassifyTrigger> = ["user_turn", "new_session"]

describe.concurrent("CompositeRoute: failure schedules against the model", () => {
  for (const posture of postures) {
    for (const trigger of triggers) {
      for (const holdTurns of [0, 2]) {
        it.effect.prop(
          `${posture} × ${trigger} × capable_hold_turns ${holdTurns}`,
          { steps: compositeSchedule },
          ({ steps }) => runCompositeSchedule({ posture, trigger, holdTurns }, steps),
          { fastCheck: { numRuns: 40 }, timeout: 120_000 }
        )
      }
    }
  }
})

describe("CompositeRoute", () => {
  it.effect("user_turn: the judge once per user turn sets the tier; the signals run inside the turn", () =>
    Effect.gen(function*() {
      // p_solve 0.1: strong, i.e. capable; then 0.9: efficient
      const judge = yield* countingJudge([verdict(0.1), verdict(0.9)])
      const route = yield* buildCompositeRoute(
        compositeOptions(target("judge", yield* uniqueJudgeModel), { capableHoldTurns: 0 }),
        judge.layer
      )
      assert.deepStrictEqual(
        [
          yield* decide(route, "s1", "quiet_turn"),
          yield* decide(route, "s1", "quiet_continuation"),
          yield* decide(route, "s1", "settled"),
          yield* decide(route, "s1", "quiet_continuation"),
          yield* decide(route, "s1", "quiet_turn"),
          yield* decide(route, "s1", "critical")
        ],
        [
          ["capable", "llm-classifier", "llm-classifier"], // a quiet turn falls open to the verdict
          ["capable", "llm-classifier", "affinity"], // which holds across the tool steps after it
          ["efficient", "tests_passed", "affinity"], // the signals still decide inside the turn
          ["capable", "llm-classifier", "affinity"],
          ["efficient", "llm-classifier", "llm-classifier"], // a new user turn: the judge again
          ["capable", "override", "affinity"]
        ]
      )
      assert.strictEqual(yield* judge.calls, 2)
    }))

  it.effect("new_session: one verdict per session; requests without a session id are each judged", () =>
    Effect.gen(function*() {
      const judge = yield* countingJudge([verdict(0.1)])
      const route = yield* buildCompositeRoute(
        compositeOptions(target("judge", yield* uniqueJudgeModel), {}, { classifyTrigger: "new_session" }),
        judge.layer
      )
      yield* decide(route, "s1", "quiet_turn")
      yield* decide(route, "s1", "quiet_turn")
      yield* decide(route, "s1", "quiet_continuation")
      assert.strictEqual(yield* judge.calls, 1)
      yield* decide(route, null, "quiet_turn")
      yield* decide(route, null, "quiet_turn")
      assert.strictEqual(yield* judge.calls, 3)
    }))

  it.effect("fail_open without a verdict: the session's retained tier, else efficient; error fails 502 / 503", () =>
    Effect.gen(function*() {
      const judgeModel = yield* uniqueJudgeModel
      const down = Effect.fail(new TransportError({ target: judgeModel, reason: "connection refused" }))
      const judge = yield* countingJudge([verdict(0.1), down])
      const route = yield* buildCompositeRoute(
        compositeOptions(target("judge", judgeModel), {}, { judgeFailure: "fail_open" }),
        judge.layer
      )
      assert.deepStrictEqual(
        [
          yield* decide(route, "s1", "quiet_turn"),
          yield* decide(route, "s1", "quiet_turn"),
          yield* decide(route, "s2", "quiet_turn")
        ],
        [
          ["capable", "llm-classifier", "llm-classifier"],
          ["capable", "fall_open", "retained"],
          ["efficient", "fall_open", "fail-open"]
        ]
      )
      const refused = Effect.fail(new CircuitOpen({ target: judgeModel, client: "judge-client" }))
      const strictJudge = yield* countingJudge([refused])
      const strict = yield* buildCompositeRoute(compositeOptions(target("judge", judgeModel)), strictJudge.layer)
      // a decisive signal does not spare the request: the classifier runs first
      const exit = yield* Effect.exit(
        RoutingFacts.observe(strict.decide(routed(conversationOf("critical"))), RoutingFacts.ignored)
      )
      assert.isTrue(Exit.isFailure(exit))
      if (Exit.isFailure(exit)) {
        const error = Option.getOrThrow(Cause.failureOption(exit.cause))
        assert.strictEqual(error._tag, "JudgeUnavailable")
        if (error._tag === "JudgeUnavailable") assert.strictEqual(toHttp(error).status, 503)
      }
      const open = yield* buildCompositeRoute(
        compositeOptions(target("judge", judgeModel), {}, { judgeFailure: "fail_open" }),
        strictJudge.layer
      )
      assert.deepStrictEqual(yield* decide(open, "s3", "quiet_turn"), ["efficient", "fall_open", "circuit-open"])
    }))

  it.effect("the capable hold: an override holds the session's next turns capable, over the classifier's tier", () =>
    Effect.gen(function*() {
      const judge = yield* countingJudge([verdict(0.9)])
      const route = yield* buildCompositeRoute(
        compositeOptions(target("judge", yield* uniqueJudgeModel), { capableHoldTurns: 1 }),
        judge.layer
      )
      assert.deepStrictEqual(
        [
          yield* decide(route, "s1", "critical"),
          yield* decide(route, "s1", "quiet_turn"),
          yield* decide(route, "s1", "quiet_turn")
        ],
        [
          ["capable", "override", "llm-classifier"],
          ["capable", "capable_hold", "llm-classifier"],
          ["efficient", "llm-classifier", "llm-classifier"]
        ]
      )
    }))

  it.effect("the route's label and targets", () =>
    Effect.gen(function*() {
      const judge = yield* countingJudge([verdict(0.9)])
      const route = yield* buildCompositeRoute(
        compositeOptions(target("judge", yield* uniqueJudgeModel)),
        judge.layer
      )
      assert.strictEqual(route.algorithm, "composite")
      assert.deepStrictEqual(route.targets.map((t) => t.name), ["capable", "efficient"])
    }))
})
