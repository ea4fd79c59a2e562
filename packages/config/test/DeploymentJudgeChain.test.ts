/**
 * `classifier_fallback` and `classifier_hedge_ms` (a route's judge chain): what they load to on each
 * judge-using route, and every load error at its key path.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { classifier, expectInvalid, load, routeOf, target, targetNamed } from "./support.js"

const at = "routes.auto"

/** A capability route with two more judge targets, `judge_b` and `judge_c`, and `lines` on the route. */
const chained = (lines: string) =>
  classifier({
    route: lines,
    more: [target("judge_b", "judge-b-model", "local_judge"), target("judge_c", "judge-c-model", "local_judge")].join(
      "\n"
    )
  })

describe("DeploymentToml.parse classifier_fallback", () => {
  it.effect("a capability route's fallbacks load in order, with the hedge", () =>
    Effect.gen(function*() {
      const deployment = yield* load(
        chained("classifier_fallback = [\"judge_c\", \"judge_b\"]\nclassifier_hedge_ms = 400")
      )
      const route = routeOf(deployment, "auto", "capability")
      assert.deepStrictEqual(route.fallbacks.map((t) => t.name), ["judge_c", "judge_b"])
      assert.strictEqual(route.fallbacks[0], targetNamed(deployment, "judge_c"))
      assert.deepStrictEqual(route.hedgeMs, Option.some(400))
    }))

  it.effect("without the keys a route has no fallbacks and no hedge", () =>
    Effect.gen(function*() {
      const route = routeOf(yield* load(chained("")), "auto", "capability")
      assert.deepStrictEqual(route.fallbacks, [])
      assert.deepStrictEqual(route.hedgeMs, Option.none())
    }))

  it.effect("refuses an unknown target, a duplicate, the route's own judge, a destination and an empty list", () =>
    Effect.gen(function*() {
      const path = `${at}.classifier_fallback`
      yield* expectInvalid(chained("classifier_fallback = [\"nope\"]"), path, "references unknown target \"nope\"")
      yield* expectInvalid(
        chained("classifier_fallback = [\"judge_b\", \"judge_b\"]"),
        path,
        "names target \"judge_b\" twice"
      )
      yield* expectInvalid(chained("classifier_fallback = [\"judge\"]"), path, "the route's classifier_target")
      yield* expectInvalid(chained("classifier_fallback = [\"strong\"]"), path, "which the route routes to")
      yield* expectInvalid(chained("classifier_fallback = []"), path, "must name at least one target")
      yield* expectInvalid(chained("classifier_fallback = \"judge_b\""), path, "an array")
    }))

  it.effect("classifier_hedge_ms is positive and needs classifier_fallback; late verdicts keep one judge", () =>
    Effect.gen(function*() {
      const hedge = `${at}.classifier_hedge_ms`
      yield* expectInvalid(chained("classifier_hedge_ms = 400"), hedge, "requires classifier_fallback")
      yield* expectInvalid(chained("classifier_fallback = [\"judge_b\"]\nclassifier_hedge_ms = 0"), hedge, "positive")
      yield* expectInvalid(
        chained(
          "classifier_fallback = [\"judge_b\"]\njudge_failure = \"fail_open\"\njudge_timeout_ms = 500\nlate_verdict_ms = 100"
        ),
        `${at}.classifier_fallback`,
        "cannot be combined with late_verdict_ms"
      )
    }))
})
