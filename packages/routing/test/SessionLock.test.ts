import { assert, describe, it } from "@effect/vitest"
import { SessionId } from "@switchyard-ts/protocol/Ids"
import * as CapabilityRoute from "@switchyard-ts/routing/CapabilityRoute"
import * as Judge from "@switchyard-ts/routing/Judge"
import * as RoutingFacts from "@switchyard-ts/routing/RoutingFacts"
import * as SessionStore from "@switchyard-ts/routing/SessionStore"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import * as TestClock from "effect/TestClock"
import { target } from "./fixtures.js"
import { routeServices } from "./harness.js"

const options: CapabilityRoute.Options = {
  id: "auto",
  name: "auto",
  judge: target("judge", "lock-test-judge"),
  weak: target("weak", "weak-model"),
  strong: target("strong", "strong-model"),
  baseThreshold: 0.5,
  thresholdStep: 0,
  classifyTrigger: "new_session",
  messageHashFallback: false,
  recentTurnWindow: Option.none(),
  prompt: Option.none(),
  responseFormatType: "json_schema",
  maxOutputTokens: 64,
  judgeFailure: "fail_open"
}

const request = (session: string) => ({
  body: { model: "auto", messages: [{ role: "user" as const, content: "task" }] },
  headers: {},
  sessionId: Option.some(SessionId.make(session))
})

describe("session serialization", () => {
  it.effect("concurrent requests of one session are routed one at a time: one judge call, then affinity", () =>
    Effect.gen(function*() {
      const calls = yield* Ref.make(0)
      const slowJudge = Judge.layerTest(() =>
        Effect.zipRight(
          Ref.update(calls, (n) => n + 1),
          Effect.as(Effect.sleep("1 second"), {
            crux: "routine",
            primary_rule: "SUP-1" as const,
            capability_boundary: "supported" as const,
            p_solve: 0.9
          })
        )
      )
      const route = yield* CapabilityRoute.make(options).pipe(
        Effect.provide(routeServices(slowJudge, SessionStore.layerTest)),
        Effect.scoped
      )
      const first = yield* Effect.fork(RoutingFacts.observe(route.decide(request("s-1")), RoutingFacts.ignored))
      const second = yield* Effect.fork(RoutingFacts.observe(route.decide(request("s-1")), RoutingFacts.ignored))
      const other = yield* Effect.fork(RoutingFacts.observe(route.decide(request("s-2")), RoutingFacts.ignored))
      yield* TestClock.adjust("1 second")
      const [a, b, c] = yield* Fiber.join(Fiber.zip(Fiber.zip(first, second), other)).pipe(
        Effect.map(([[a, b], c]) => [a, b, c] as const)
      )
      assert.strictEqual(a.evidence.source, "llm-classifier")
      assert.strictEqual(b.evidence.source, "affinity")
      assert.strictEqual(c.evidence.source, "llm-classifier")
      assert.strictEqual(yield* Ref.get(calls), 2)
    }))
})
