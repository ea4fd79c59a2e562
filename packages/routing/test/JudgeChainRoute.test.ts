/**
 * A capability route with `classifier_fallback`, over the live host: the fallback's verdict routes
 * the request and is named in its evidence; an exhausted chain meets the posture with the last
 * judge's failure; with the first judge answering, the evidence is exactly as without fallbacks.
 */
import { assert, describe, it } from "@effect/vitest"
import { TransportError, UpstreamStatus } from "@switchyard-ts/protocol/Errors"
import * as Decision from "@switchyard-ts/routing/Decision"
import * as Judge from "@switchyard-ts/routing/Judge"
import type { Route } from "@switchyard-ts/routing/Route"
import * as RoutingFacts from "@switchyard-ts/routing/RoutingFacts"
import type { Verdict } from "@switchyard-ts/routing/Verdict"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import { buildRoute, conversation, failOpenCounts, routed, uniqueJudgeModel } from "./capabilityModel.js"
import { routeOptions, target } from "./scriptedJudge.js"

const verdict = (p_solve: number): Verdict => ({
  crux: "x",
  primary_rule: "SUP-1",
  capability_boundary: "supported",
  p_solve
})

/** A judge service answering by judge model: a verdict, or a failure; every model asked, in order. */
const judges = (answers: Readonly<Record<string, number | "down" | "5xx">>) => {
  const asked: Array<string> = []
  const layer = Judge.layerTest((consultation) =>
    Effect.suspend((): Effect.Effect<Verdict, TransportError | UpstreamStatus> => {
      const model = consultation.options.judge.id
      asked.push(model)
      const answer = answers[model]
      if (answer === "down" || answer === undefined) {
        return Effect.fail(new TransportError({ target: model, reason: "connection refused" }))
      }
      if (answer === "5xx") return Effect.fail(new UpstreamStatus({ target: model, status: 503 }))
      return Effect.succeed(verdict(answer))
    })
  )
  return { asked, layer }
}

const request = routed(conversation("user_turn", "rename a variable"))

/** One decision of `route` for the request, to its exit. */
const decide = (route: Route) =>
  Effect.exit(RoutingFacts.observe(route.decide(request), RoutingFacts.ignored).pipe(Effect.withTracerEnabled(false)))

describe("a capability route with classifier_fallback", () => {
  it.effect("a dead first judge: the fallback's verdict routes, and the evidence names both", () =>
    Effect.gen(function*() {
      const primary = yield* uniqueJudgeModel
      const chain = judges({ [primary]: "down", "judge-b": 0.9 })
      const route = yield* buildRoute(
        routeOptions(target("judge", primary), { fallbacks: [target("judge_b", "judge-b")] }),
        chain.layer
      )
      const exit = yield* decide(route)
      assert.isTrue(Exit.isSuccess(exit))
      if (Exit.isSuccess(exit)) {
        assert.strictEqual(Option.getOrThrow(Decision.selected(exit.value)).name, "weak")
        assert.deepStrictEqual(exit.value.evidence, {
          source: "llm-classifier",
          score: 0.9,
          threshold: 0.5,
          boundary: "supported",
          judge_model: "judge-b",
          judge_fallbacks: [{ model: primary, reason: "transport" }]
        })
      }
      assert.deepStrictEqual(chain.asked, [primary, "judge-b"])
    }))

  it.effect("the first judge answering: evidence exactly as without fallbacks, no other judge asked", () =>
    Effect.gen(function*() {
      const primary = yield* uniqueJudgeModel
      const chain = judges({ [primary]: 0.2, "judge-b": 0.9 })
      const route = yield* buildRoute(
        routeOptions(target("judge", primary), { fallbacks: [target("judge_b", "judge-b")] }),
        chain.layer
      )
      const exit = yield* decide(route)
      assert.isTrue(Exit.isSuccess(exit))
      if (Exit.isSuccess(exit)) {
        assert.deepStrictEqual(exit.value.evidence, {
          source: "llm-classifier",
          score: 0.2,
          threshold: 0.5,
          boundary: "supported"
        })
      }
      assert.deepStrictEqual(chain.asked, [primary])
    }))

  it.effect("an exhausted chain under fail_open: one fail-open count, under the last judge and its reason", () =>
    Effect.gen(function*() {
      const primary = yield* uniqueJudgeModel
      const last = yield* uniqueJudgeModel
      const chain = judges({ [primary]: "down", [last]: "5xx" })
      const route = yield* buildRoute(
        routeOptions(target("judge", primary), { fallbacks: [target("judge_b", last)], judgeFailure: "fail_open" }),
        chain.layer
      )
      const before = Object.fromEntries(yield* failOpenCounts(last))
      const exit = yield* decide(route)
      assert.isTrue(Exit.isSuccess(exit))
      if (Exit.isSuccess(exit)) {
        assert.strictEqual(Option.getOrThrow(Decision.selected(exit.value)).name, "strong")
        assert.deepStrictEqual(exit.value.evidence, {
          source: "fail-open",
          reason: "upstream_5xx",
          judge_model: last,
          judge_fallbacks: [{ model: primary, reason: "transport" }]
        })
      }
      const after = Object.fromEntries(yield* failOpenCounts(last))
      assert.deepStrictEqual(after, { ...before, upstream_5xx: (before["upstream_5xx"] ?? 0) + 1 })
      assert.deepStrictEqual(Object.fromEntries(yield* failOpenCounts(primary))["transport"], 0)
    }))

  it.effect("an exhausted chain under error fails with the last judge's failure", () =>
    Effect.gen(function*() {
      const primary = yield* uniqueJudgeModel
      const chain = judges({ [primary]: "5xx", "judge-b": "down" })
      const route = yield* buildRoute(
        routeOptions(target("judge", primary), { fallbacks: [target("judge_b", "judge-b")] }),
        chain.layer
      )
      const exit = yield* decide(route)
      const failure = Exit.isFailure(exit) ? Option.getOrUndefined(Cause.failureOption(exit.cause)) : undefined
      assert.strictEqual(failure?._tag, "JudgeUnavailable")
      if (failure?._tag === "JudgeUnavailable") {
        assert.strictEqual(failure.failure._tag, "TransportError")
        assert.strictEqual(failure.failure.target, "judge-b")
      }
    }))
})
