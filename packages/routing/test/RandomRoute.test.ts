import { assert, describe, it } from "@effect/vitest"
import * as Decision from "@switchyard-ts/routing/Decision"
import * as RandomRoute from "@switchyard-ts/routing/RandomRoute"
import * as RoutingFacts from "@switchyard-ts/routing/RoutingFacts"
import * as Effect from "effect/Effect"
import * as FastCheck from "effect/FastCheck"
import * as Option from "effect/Option"
import { target } from "./fixtures.js"

const a = target("a", "model-a")
const b = target("b", "model-b")
const c = target("c", "model-c")
const request = { body: { model: "mix", messages: [] }, headers: {}, sessionId: Option.none() }

const picks = (route: ReturnType<typeof RandomRoute.make>, n: number) =>
  Effect.forEach(
    Array.from({ length: n }),
    () =>
      Effect.map(RoutingFacts.observe(route.decide(request), RoutingFacts.ignored), (d) =>
        Option.getOrThrow(Decision.selected(d)).name)
  )

describe("RandomRoute", () => {
  it.effect("the same seed gives the same pick sequence; another seed a different one", () =>
    Effect.gen(function*() {
      const make = (seed: bigint) =>
        RandomRoute.make({ id: "mix", name: "mix", targets: [a, b, c], seed: Option.some(seed) })
      const first = yield* picks(make(42n), 50)
      const second = yield* picks(make(42n), 50)
      const other = yield* picks(make(43n), 50)
      assert.deepStrictEqual(first, second)
      assert.notDeepEqual(first, other)
      assert.includeMembers(first, ["a", "b", "c"])
    }))

  it.effect("a zero weight is never picked and the fallbacks are the other targets in config order", () =>
    Effect.gen(function*() {
      const route = RandomRoute.make({
        id: "mix",
        name: "mix",
        targets: [a, b, c],
        weights: [0, 1, 0],
        seed: Option.some(1n)
      })
      for (let i = 0; i < 20; i++) {
        const decision = yield* RoutingFacts.observe(route.decide(request), RoutingFacts.ignored)
        assert.strictEqual(Option.getOrThrow(Decision.selected(decision)).name, "b")
        assert.deepStrictEqual(Decision.fallbacks(decision).map((t) => t.name), ["a", "c"])
        assert.strictEqual(decision.evidence.source, "random")
      }
    }))

  it("pick follows the cumulative weights", () => {
    assert.strictEqual(RandomRoute.pick([3, 1], 0), 0)
    assert.strictEqual(RandomRoute.pick([3, 1], 0.7499), 0)
    assert.strictEqual(RandomRoute.pick([3, 1], 0.75), 1)
    assert.strictEqual(RandomRoute.pick([0, 2, 0], 0.99), 1)
    FastCheck.assert(
      FastCheck.property(
        FastCheck.array(FastCheck.double({ min: 0, max: 10, noNaN: true }), { minLength: 1, maxLength: 6 }),
        FastCheck.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        (weights, u) => {
          if (!weights.some((w) => w > 0)) return true
          const index = RandomRoute.pick(weights, u)
          return (weights[index] ?? 0) > 0
        }
      )
    )
  })

  it.effect("weighted picks follow the weights over many draws", () =>
    Effect.gen(function*() {
      const route = RandomRoute.make({
        id: "mix",
        name: "mix",
        targets: [a, b],
        weights: [3, 1],
        seed: Option.some(7n)
      })
      const all = yield* picks(route, 4000)
      const share = all.filter((name) => name === "a").length / all.length
      assert.isAbove(share, 0.7)
      assert.isBelow(share, 0.8)
    }))
})
