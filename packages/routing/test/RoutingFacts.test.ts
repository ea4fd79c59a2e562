/**
 * What a capability route reports to a `RoutingFacts` observer: one judge call per consultation
 * (outcome, usage), and per decision the trigger, posture, whether the judge was consulted, the
 * stored decision before and after, and the tier; nothing without an observer.
 */
import { assert, describe, it } from "@effect/vitest"
import type { Route, RoutedRequest } from "@switchyard-ts/routing/Route"
import * as RoutingFacts from "@switchyard-ts/routing/RoutingFacts"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import { buildRoute, conversation, routed, uniqueJudgeModel } from "./capabilityModel.js"
import { makeScriptedJudge, Outcome, routeOptions, target } from "./scriptedJudge.js"

const collect = () => {
  const calls: Array<RoutingFacts.JudgeCall> = []
  const classified: Array<RoutingFacts.Classified> = []
  const observer: RoutingFacts.Observer = {
    judgeCall: (call) => calls.push(call),
    routed: (facts) => {
      if (facts._tag !== "Classified") return
      const { _tag, ...told } = facts
      classified.push(told)
    },
    routingCall: () => {}
  }
  return { calls, classified, observer }
}

const decide = (route: Route, request: RoutedRequest, observer: RoutingFacts.Observer) =>
  Effect.exit(RoutingFacts.observe(observer)(route.decide(request)))

describe("RoutingFacts from a capability route", () => {
  it.effect("user_turn: a verdict stores weak; a continuation reuses it without consulting", () =>
    Effect.gen(function*() {
      const judge = yield* makeScriptedJudge
      const judgeModel = yield* uniqueJudgeModel
      const route = yield* buildRoute(
        routeOptions(target("judge", judgeModel), { classifyTrigger: "user_turn", judgeFailure: "fail_open" }),
        judge.layer
      )
      const facts = collect()
      yield* judge.script([Outcome.verdict(0.9, "supported", "SUP-1")])
      assert.isTrue(
        Exit.isSuccess(yield* decide(route, routed(conversation("user_turn", "t"), Option.some("s1")), facts.observer))
      )
      assert.isTrue(
        Exit.isSuccess(
          yield* decide(route, routed(conversation("tool_continuation", "t"), Option.some("s1")), facts.observer)
        )
      )
      assert.deepStrictEqual(facts.calls.map((call) => [call.judgeModel, call.outcome]), [[judgeModel, "ok"]])
      const weak = { target: "weak", tier: "weak" as const }
      assert.deepStrictEqual(facts.classified, [
        {
          trigger: "user_turn",
          posture: "fail_open",
          consulted: true,
          storedBefore: Option.none(),
          storedAfter: Option.some(weak),
          tier: Option.some("weak")
        },
        {
          trigger: "user_turn",
          posture: "fail_open",
          consulted: false,
          storedBefore: Option.some(weak),
          storedAfter: Option.some(weak),
          tier: Option.some("weak")
        }
      ])
    }))

  it.effect("a failed judge: fail_open goes strong with the failure's reason; error reports before failing", () =>
    Effect.gen(function*() {
      const judge = yield* makeScriptedJudge
      const judgeModel = yield* uniqueJudgeModel
      for (const posture of ["fail_open", "error"] as const) {
        const route = yield* buildRoute(
          routeOptions(target("judge", judgeModel), { judgeFailure: posture }),
          judge.layer
        )
        const facts = collect()
        yield* judge.script([Outcome.status5xx])
        const exit = yield* decide(route, routed(conversation("user_turn", "t")), facts.observer)
        assert.strictEqual(Exit.isSuccess(exit), posture === "fail_open")
        assert.deepStrictEqual(facts.calls.map((call) => call.outcome), ["upstream_5xx"])
        assert.deepStrictEqual(facts.classified, [{
          trigger: "every_request",
          posture,
          consulted: true,
          storedBefore: Option.none(),
          storedAfter: Option.none(),
          tier: posture === "fail_open" ? Option.some("strong") : Option.none()
        }])
      }
    }))

  it.effect("with the observer that records nothing, routing is unchanged", () =>
    Effect.gen(function*() {
      const judge = yield* makeScriptedJudge
      const route = yield* buildRoute(routeOptions(target("judge", yield* uniqueJudgeModel)), judge.layer)
      yield* judge.script([Outcome.verdict(0.9, "supported", "SUP-1")])
      const decision = yield* RoutingFacts.observe(
        route.decide(routed(conversation("user_turn", "t"))),
        RoutingFacts.ignored
      )
      assert.strictEqual(decision.evidence.source, "llm-classifier")
    }))
})
