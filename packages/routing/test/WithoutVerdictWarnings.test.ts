/**
 * The "without a verdict" WARN lines under the `TestClock`: the first failure of a judge (or
 * advisor) and reason is logged at once; a burst inside the interval adds no line; the first
 * failure once the interval has passed is logged with the count of failures since the previous
 * line. The fail-open metric stays per request. Each route is driven through its real shell with
 * a scripted judge (capability, escalation) or a scripted upstream (advisor).
 */
import { assert, describe, it } from "@effect/vitest"
import { ofChat, UpstreamClient } from "@switchyard-ts/client/UpstreamClient"
import { DeadlineExceeded, type JudgeCallFailure, TransportError } from "@switchyard-ts/protocol/Errors"
import type { ChatCompletion } from "@switchyard-ts/protocol/OpenAiChat"
import * as AdvisorRoute from "@switchyard-ts/routing/AdvisorRoute"
import * as Judge from "@switchyard-ts/routing/Judge"
import type { Route } from "@switchyard-ts/routing/Route"
import * as RoutingFacts from "@switchyard-ts/routing/RoutingFacts"
import * as Effect from "effect/Effect"
import * as HashMap from "effect/HashMap"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import * as TestClock from "effect/TestClock"
import * as Warnings from "../src/internal/warnings.js"
import * as AdvisorModel from "./advisorModel.js"
import { buildRoute, failOpenCounts, routed, uniqueJudgeModel } from "./capabilityModel.js"
import { buildEscalationRoute, escalationOptions, makeWeakUpstream } from "./escalationModel.js"
import { memoryStore, routeServices, unusedJudge } from "./harness.js"
import { routeOptions, target } from "./scriptedJudge.js"

interface Line {
  readonly message: unknown
  readonly annotations: Readonly<Record<string, unknown>>
}

/** A logger that keeps the WARN lines it is given, and the lines kept so far. */
const warnLines = Effect.sync(() => {
  const lines: Array<Line> = []
  const logger = Logger.make(({ annotations, logLevel, message }) => {
    if (logLevel.label === "WARN") {
      lines.push({ message, annotations: Object.fromEntries(HashMap.toEntries(annotations)) })
    }
  })
  return { lines, layer: Logger.add(logger) }
})

const transport = new TransportError({ target: "judge", reason: "connection failed (ECONNREFUSED)" })
const deadline = new DeadlineExceeded({ target: "judge", afterMs: 3000 })

/** A judge whose every consultation fails with the failure in `next`. */
const failingJudge = (next: Ref.Ref<JudgeCallFailure>) =>
  Judge.layerTest(() => Effect.flatMap(Ref.get(next), Effect.fail))

/** One request of a route, at the test clock's current time; the line(s) it wrote are in `lines`. */
const decide = (route: Route, layer: Layer.Layer<never>) =>
  RoutingFacts.observe(route.decide(routed([{ role: "user", content: "task" }])), RoutingFacts.ignored).pipe(
    Effect.withTracerEnabled(false),
    Effect.provide(layer)
  )

describe("the judge's WARN line is rate-limited per judge model and reason", () => {
  /** A fail_open capability route whose judge fails with `failure`; the WARN lines it writes. */
  const failingCapabilityRoute = Effect.gen(function*() {
    const judgeModel = yield* uniqueJudgeModel
    const failure = yield* Ref.make<JudgeCallFailure>(transport)
    const route = yield* buildRoute(
      routeOptions(target("judge", judgeModel), { judgeFailure: "fail_open" }),
      failingJudge(failure)
    )
    return { judgeModel, failure, route, ...(yield* warnLines) }
  })

  const judgeLine = (judgeModel: string, reason: string, count: number): Line => ({
    message: ["routing without a judge verdict"],
    annotations: { route: "auto", judge_model: judgeModel, reason, count }
  })

  it.effect("at once, then one line per interval with the count of failures it stands for", () =>
    Effect.gen(function*() {
      const { judgeModel, layer, lines, route } = yield* failingCapabilityRoute

      // The first failure is logged at once, standing for itself.
      yield* decide(route, layer)
      assert.deepStrictEqual(lines, [judgeLine(judgeModel, "transport", 1)])

      // A burst inside the interval adds no line; every request is still counted.
      for (let i = 0; i < 5; i++) {
        yield* TestClock.adjust("1 second")
        yield* decide(route, layer)
      }
      assert.strictEqual(lines.length, 1)
      assert.deepStrictEqual(yield* failOpenCounts(judgeModel).pipe(Effect.map((c) => c.filter(([, n]) => n > 0))), [
        ["transport", 6]
      ])

      // The interval runs from the last line (t = 0): at 9.999 s still held, at 10 s logged with
      // the six held failures and itself.
      yield* TestClock.adjust(Warnings.intervalMs - 5_000 - 1)
      yield* decide(route, layer)
      assert.strictEqual(lines.length, 1)
      yield* TestClock.adjust(1)
      yield* decide(route, layer)
      assert.deepStrictEqual(lines, [judgeLine(judgeModel, "transport", 1), judgeLine(judgeModel, "transport", 7)])

      // The next interval runs from that line: one more failure in it, then one after it.
      yield* TestClock.adjust("3 seconds")
      yield* decide(route, layer)
      yield* TestClock.adjust("30 seconds")
      yield* decide(route, layer)
      assert.deepStrictEqual(lines.slice(2), [judgeLine(judgeModel, "transport", 2)])
      assert.deepStrictEqual(yield* failOpenCounts(judgeModel).pipe(Effect.map((c) => c.filter(([, n]) => n > 0))), [
        ["transport", 10]
      ])
    }))

  it.effect("another reason of the same judge has a line of its own", () =>
    Effect.gen(function*() {
      const { failure, judgeModel, layer, lines, route } = yield* failingCapabilityRoute
      yield* decide(route, layer)
      yield* decide(route, layer)
      yield* Ref.set(failure, deadline)
      yield* decide(route, layer)
      yield* decide(route, layer)
      assert.deepStrictEqual(lines, [judgeLine(judgeModel, "transport", 1), judgeLine(judgeModel, "timeout", 1)])
    }))

  it.effect("an escalation route's line is rate-limited the same way", () =>
    Effect.gen(function*() {
      const judgeModel = yield* uniqueJudgeModel
      const failure = yield* Ref.make<JudgeCallFailure>(transport)
      const weak = yield* makeWeakUpstream
      const route = yield* buildEscalationRoute(
        // One confirmation: a route whose state lasts one request, so no session-id warning joins these lines.
        escalationOptions(target("judge", judgeModel), { judgeFailure: "fail_open", confirmations: 1 }),
        Judge.layerTest(() => Effect.dieMessage("not used"), undefined, () =>
          Effect.flatMap(Ref.get(failure), Effect.fail)),
        weak.layer
      )
      const { layer, lines } = yield* warnLines
      for (let i = 0; i < 4; i++) {
        yield* decide(route, layer)
      }
      yield* TestClock.adjust(Warnings.intervalMs)
      yield* decide(route, layer)
      const escalationLine = (count: number): Line => ({
        message: ["routing without a judge verdict"],
        annotations: { route: "esc", judge_model: judgeModel, reason: "transport", count }
      })
      assert.deepStrictEqual(lines, [escalationLine(1), escalationLine(4)])
    }))
})

describe("the advisor gate's WARN line is rate-limited per reason and trigger", () => {
  const completion = (model: string, content: string): ChatCompletion => ({
    id: "c",
    object: "chat.completion",
    created: 0,
    model,
    choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: "stop" }]
  })

  it.effect("at once, then one line per interval with the count of releases it stands for", () =>
    Effect.gen(function*() {
      const upstream = Layer.succeed(
        UpstreamClient,
        ofChat({
          complete: ({ target }) =>
            target.id === AdvisorModel.advisor.id
              ? Effect.fail(transport)
              : Effect.succeed(completion(target.id, "All done.")),
          stream: () => Effect.dieMessage("not used"),
          countTokens: () => Effect.dieMessage("not used"),
          responsesAuxiliary: () => Effect.dieMessage("not used"),
          register: () => Effect.void,
          breakers: Effect.succeed([])
        })
      )
      const route = yield* AdvisorRoute.make(AdvisorModel.routeOptions()).pipe(
        Effect.provide(routeServices(unusedJudge, memoryStore(), upstream)),
        Effect.scoped
      )
      const { layer, lines } = yield* warnLines
      // One session per request: a session whose consults failed 3 times is no longer reviewed.
      const release = (session: number) =>
        RoutingFacts.observe(
          route.decide(AdvisorModel.routed(AdvisorModel.task, Option.some(`s${session}`))),
          RoutingFacts.ignored
        )
          .pipe(Effect.withTracerEnabled(false), Effect.provide(layer))
      const released = (count: number): Line => ({
        message: ["releasing the executor's turn without the advisor's verdict"],
        annotations: {
          route: "gate",
          advisor_model: "advisor-model",
          reason: "transport",
          trigger: "no_tool_call",
          count
        }
      })
      for (let session = 0; session < 3; session++) yield* release(session)
      assert.deepStrictEqual(lines, [released(1)])
      yield* TestClock.adjust(Warnings.intervalMs)
      yield* release(3)
      assert.deepStrictEqual(lines, [released(1), released(3)])
    }))
})

describe("Warnings.make", () => {
  it("keys are limited independently; a clock set back restarts the interval", () => {
    const warnings = Warnings.make(100)
    assert.deepStrictEqual(warnings.occur("a", 1_000), Option.some(1))
    assert.deepStrictEqual(warnings.occur("b", 1_010), Option.some(1))
    assert.deepStrictEqual(warnings.occur("a", 1_050), Option.none())
    assert.deepStrictEqual(warnings.occur("a", 1_099), Option.none())
    assert.deepStrictEqual(warnings.occur("a", 1_100), Option.some(3))
    assert.deepStrictEqual(warnings.occur("a", 500), Option.some(1))
    assert.deepStrictEqual(warnings.occur("a", 550), Option.none())
  })
})
