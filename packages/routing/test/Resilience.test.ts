/**
 * Circuit breakers and deadlines at the routing layer, under the TestClock: a judge whose breaker
 * is open (both postures, sessions), `judge_timeout_ms` against the client's `timeout_ms`, and the
 * request deadline property — no routed request outlives its route's `request_timeout_ms`.
 */
import * as HttpClient from "@effect/platform/HttpClient"
import type * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as HttpClientResponse from "@effect/platform/HttpClientResponse"
import { assert, describe, it } from "@effect/vitest"
import type { Target } from "@switchyard-ts/client/Target"
import * as UpstreamClient from "@switchyard-ts/client/UpstreamClient"
import { toHttp } from "@switchyard-ts/protocol/Errors"
import type { Message } from "@switchyard-ts/protocol/OpenAiChat"
import * as CapabilityRoute from "@switchyard-ts/routing/CapabilityRoute"
import * as Decision from "@switchyard-ts/routing/Decision"
import * as Judge from "@switchyard-ts/routing/Judge"
import * as Passthrough from "@switchyard-ts/routing/Passthrough"
import type { Route, RouteFailure } from "@switchyard-ts/routing/Route"
import * as Router from "@switchyard-ts/routing/Router"
import * as RoutingFacts from "@switchyard-ts/routing/RoutingFacts"
import * as SessionStore from "@switchyard-ts/routing/SessionStore"
import * as Stats from "@switchyard-ts/routing/Stats"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FastCheck from "effect/FastCheck"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as Option from "effect/Option"
import * as TestClock from "effect/TestClock"
import { buildRoute, failOpenCounts, routed, uniqueJudgeModel } from "./capabilityModel.js"
import { judgeCompletion, makeScriptedJudge, Outcome, routeOptions, target } from "./scriptedJudge.js"

const user = (content: string): Message => ({ role: "user", content })
const assistant = (content: string): Message => ({ role: "assistant", content })
const weakVerdict = Outcome.verdict(0.9, "supported", "SUP-1")

/** A judge target whose client has a breaker. */
const withBreaker = (t: Target, failureThreshold: number, cooldownMs: number): Target => ({
  ...t,
  client: { ...t.client, breaker: Option.some({ failureThreshold, cooldownMs }) }
})

const countOf = (counts: ReadonlyArray<readonly [string, number]>, reason: string) =>
  counts.find(([r]) => r === reason)?.[1] ?? 0

/** A capability route over a fresh scripted judge whose client has a breaker (threshold 2, cooldown 60 s). */
const breakerHarness = (overrides: Partial<CapabilityRoute.Options>) =>
  Effect.gen(function*() {
    const judgeModel = yield* uniqueJudgeModel
    const judge = yield* makeScriptedJudge
    const judgeTarget = withBreaker(target("judge", judgeModel, { timeoutMs: Option.some(3000) }), 2, 60_000)
    const route = yield* buildRoute(routeOptions(judgeTarget, overrides), judge.layer)
    const decide = (
      messages: ReadonlyArray<Message>,
      outcomes: ReadonlyArray<Outcome>,
      session: Option.Option<string> = Option.none()
    ) =>
      Effect.zipRight(
        judge.script(outcomes),
        Effect.exit(RoutingFacts.observe(route.decide(routed(messages, session)), RoutingFacts.ignored))
      )
    return { judge, judgeModel, decide }
  })

const decisionOf = (exit: Exit.Exit<Decision.Decision, RouteFailure>): Decision.Decision =>
  Exit.isSuccess(exit) ? exit.value : assert.fail(`expected a decision, got ${String(exit)}`)

const failureOf = (exit: Exit.Exit<Decision.Decision, RouteFailure>): RouteFailure =>
  Exit.isFailure(exit)
    ? Option.getOrElse(Cause.failureOption(exit.cause), () => assert.fail(`expected a failure, got ${String(exit)}`))
    : assert.fail("expected a failure, got a decision")

describe("a judge behind an open circuit breaker", () => {
  it.effect("fail_open: routes strong with circuit-open evidence, no judge request, counted as circuit_open; a probe after the cooldown", () =>
    Effect.gen(function*() {
      const { decide, judge, judgeModel } = yield* breakerHarness({ judgeFailure: "fail_open" })
      for (let i = 0; i < 2; i++) {
        assert.deepStrictEqual(decisionOf(yield* decide([user("task")], [Outcome.status5xx])).evidence, {
          source: "fail-open",
          reason: "upstream_5xx",
          judge_model: judgeModel
        })
      }
      assert.strictEqual(yield* judge.calls, 2)
      const skipped = decisionOf(yield* decide([user("task")], [weakVerdict]))
      assert.deepStrictEqual(skipped.evidence, { source: "circuit-open", judge_model: judgeModel })
      assert.strictEqual(Option.getOrThrow(Decision.selected(skipped)).name, "strong")
      assert.strictEqual(yield* judge.calls, 2)
      const counts = yield* failOpenCounts(judgeModel)
      assert.strictEqual(countOf(counts, "circuit_open"), 1)
      assert.strictEqual(countOf(counts, "upstream_5xx"), 2)

      yield* TestClock.adjust("60 seconds")
      const probed = decisionOf(yield* decide([user("task")], [weakVerdict]))
      assert.strictEqual(probed.evidence.source, "llm-classifier")
      assert.strictEqual(yield* judge.calls, 3)
    }))

  it.effect("fail_open with a stored session decision keeps the session's target, still circuit-open, and stores nothing", () =>
    Effect.gen(function*() {
      const { decide, judge, judgeModel } = yield* breakerHarness({
        judgeFailure: "fail_open",
        classifyTrigger: "user_turn"
      })
      const session = Option.some("s-1")
      assert.strictEqual(
        decisionOf(yield* decide([user("a")], [weakVerdict], session)).evidence.source,
        "llm-classifier"
      )
      for (const turn of ["b", "c"]) {
        const retained = decisionOf(yield* decide([user("a"), assistant("ok"), user(turn)], [Outcome.refuse], session))
        assert.strictEqual(retained.evidence.source, "retained")
      }
      const skipped = decisionOf(yield* decide([user("a"), assistant("ok"), user("d")], [weakVerdict], session))
      assert.deepStrictEqual(skipped.evidence, { source: "circuit-open", judge_model: judgeModel })
      assert.strictEqual(Option.getOrThrow(Decision.selected(skipped)).name, "weak")
      // another session with nothing stored goes strong
      const other = decisionOf(yield* decide([user("x")], [weakVerdict], Option.some("s-2")))
      assert.deepStrictEqual(
        { source: other.evidence.source, target: Option.getOrThrow(Decision.selected(other)).name },
        { source: "circuit-open", target: "strong" }
      )
      assert.strictEqual(yield* judge.calls, 3)
    }))

  it.effect("error: fails with JudgeUnavailable(CircuitOpen) → 503 upstream_unavailable, no judge request, not counted", () =>
    Effect.gen(function*() {
      const { decide, judge, judgeModel } = yield* breakerHarness({ judgeFailure: "error" })
      for (let i = 0; i < 2; i++) {
        assert.strictEqual(toHttp(failureOf(yield* decide([user("task")], [Outcome.status5xx]))).status, 502)
      }
      const failure = failureOf(yield* decide([user("task")], [weakVerdict]))
      assert.isTrue(failure._tag === "JudgeUnavailable" && failure.failure._tag === "CircuitOpen")
      assert.deepStrictEqual(toHttp(failure), {
        status: 503,
        type: "upstream_error",
        code: "upstream_unavailable",
        message: `judge ${judgeModel} is unavailable: the circuit breaker of llm client judge-client is open`
      })
      assert.strictEqual(yield* judge.calls, 2)
      assert.strictEqual(countOf(yield* failOpenCounts(judgeModel), "circuit_open"), 0)
    }))
})

describe("judge_timeout_ms", () => {
  const stalled = (judgeTimeoutMs: number, judgeFailure: "error" | "fail_open") =>
    Effect.gen(function*() {
      const judgeModel = yield* uniqueJudgeModel
      const judge = yield* makeScriptedJudge
      const judgeTarget = target("judge", judgeModel, { timeoutMs: Option.some(3000), maxRetries: 2 })
      const route = yield* buildRoute(
        routeOptions(judgeTarget, { judgeFailure, judgeTimeoutMs: Option.some(judgeTimeoutMs) }),
        judge.layer
      )
      yield* judge.script([Outcome.stall])
      const fiber = yield* Effect.fork(
        Effect.exit(RoutingFacts.observe(route.decide(routed([user("task")])), RoutingFacts.ignored))
      )
      return { fiber, judgeModel }
    })

  it.effect("tighter than the client's timeout_ms: decides at exactly judge_timeout_ms (error → 504 naming it)", () =>
    Effect.gen(function*() {
      const { fiber, judgeModel } = yield* stalled(500, "error")
      yield* TestClock.adjust(499)
      assert.isTrue(Option.isNone(yield* Fiber.poll(fiber)))
      yield* TestClock.adjust(1)
      const failure = failureOf(yield* Fiber.join(fiber))
      assert.isTrue(
        failure._tag === "JudgeUnavailable" && failure.failure._tag === "DeadlineExceeded" &&
          failure.failure.afterMs === 500
      )
      const mapped = toHttp(failure)
      assert.strictEqual(mapped.status, 504)
      assert.strictEqual(mapped.code, "upstream_timeout")
      assert.strictEqual(mapped.message, `judge ${judgeModel} did not finish within 500 ms, retries included`)
    }))

  it.effect("tighter than the client's timeout_ms under fail_open: strong at judge_timeout_ms, reason timeout", () =>
    Effect.gen(function*() {
      const { fiber, judgeModel } = yield* stalled(800, "fail_open")
      yield* TestClock.adjust(800)
      assert.deepStrictEqual(decisionOf(yield* Fiber.join(fiber)).evidence, {
        source: "fail-open",
        reason: "timeout",
        judge_model: judgeModel
      })
    }))

  it.effect("looser than the client's timeout_ms: the client's 3000 ms decides", () =>
    Effect.gen(function*() {
      const { fiber } = yield* stalled(10_000, "error")
      yield* TestClock.adjust(2999)
      assert.isTrue(Option.isNone(yield* Fiber.poll(fiber)))
      yield* TestClock.adjust(1)
      const failure = failureOf(yield* Fiber.join(fiber))
      assert.isTrue(
        failure._tag === "JudgeUnavailable" && failure.failure._tag === "DeadlineExceeded" &&
          failure.failure.afterMs === 3000
      )
    }))
})

// ---------------------------------------------------------------------------------------------
// The request deadline property
// ---------------------------------------------------------------------------------------------

/** What the fake upstream does for one model: wait `delayMs` on the (test) clock, then answer. */
interface Behaviour {
  readonly delayMs: number
  readonly result: "ok" | "5xx" | "stall"
}

const decoder = new TextDecoder()
const modelOf = (request: HttpClientRequest.HttpClientRequest): string => {
  if (request.body._tag !== "Uint8Array") return ""
  const parsed: unknown = JSON.parse(decoder.decode(request.body.body))
  return typeof parsed === "object" && parsed !== null && "model" in parsed && typeof parsed.model === "string"
    ? parsed.model
    : ""
}

const respondJson = (request: HttpClientRequest.HttpClientRequest, status: number, body: unknown) =>
  HttpClientResponse.fromWeb(
    request,
    new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } })
  )

/** An `HttpClient` whose every answer waits on the TestClock. */
const timedHttp = (behaviours: Readonly<Record<string, Behaviour>>, judgeModel: string) =>
  HttpClient.make((request) =>
    Effect.gen(function*() {
      const model = modelOf(request)
      const behaviour = behaviours[model] ?? { delayMs: 0, result: "ok" }
      yield* Effect.sleep(behaviour.delayMs)
      if (behaviour.result === "stall") return yield* Effect.never
      if (behaviour.result === "5xx") return respondJson(request, 503, { error: { message: "overloaded" } })
      if (model === judgeModel) {
        return respondJson(
          request,
          200,
          judgeCompletion(
            model,
            JSON.stringify({ crux: "c", primary_rule: "SUP-1", capability_boundary: "supported", p_solve: 0.9 })
          )
        )
      }
      if (request.headers["accept"] === "text/event-stream") {
        const chunk = { id: "c", model, choices: [{ index: 0, delta: { content: "hi" }, finish_reason: "stop" }] }
        return HttpClientResponse.fromWeb(
          request,
          new Response(`data: ${JSON.stringify(chunk)}\n\ndata: [DONE]\n\n`, {
            status: 200,
            headers: { "content-type": "text/event-stream" }
          })
        )
      }
      return respondJson(request, 200, {
        id: "c",
        object: "chat.completion",
        created: 0,
        model,
        choices: [{ index: 0, message: { role: "assistant", content: "hi" }, finish_reason: "stop" }]
      })
    })
  )

const behaviour = FastCheck.record({
  delayMs: FastCheck.integer({ min: 0, max: 8000 }),
  result: FastCheck.constantFrom<Behaviour["result"]>("ok", "ok", "5xx", "stall")
})
const maybeTimeout = FastCheck.option(FastCheck.integer({ min: 1, max: 6000 }), { nil: undefined })

/** A real wall-clock bound, so a request that would need more test time fails the sample instead of hanging. */
const wallClock = (ms: number) => Effect.promise(() => new Promise<void>((resolve) => setTimeout(resolve, ms)))

describe("request_timeout_ms (TestClock)", () => {
  it.effect.prop(
    "no routed request outlives request_timeout_ms, and its deadline never fires early",
    {
      requestTimeoutMs: FastCheck.integer({ min: 1, max: 8000 }),
      classifier: FastCheck.boolean(),
      streaming: FastCheck.boolean(),
      posture: FastCheck.constantFrom<"error" | "fail_open">("error", "fail_open"),
      judge: behaviour,
      weak: behaviour,
      strong: behaviour,
      judgeTimeoutMs: maybeTimeout,
      judgeClientTimeoutMs: maybeTimeout,
      answerTimeoutMs: maybeTimeout,
      maxRetries: FastCheck.integer({ min: 0, max: 2 })
    },
    (sample) =>
      Effect.gen(function*() {
        const judgeModel = yield* uniqueJudgeModel
        const client = (name: string, timeoutMs: number | undefined) => ({
          ...target(name, `${name}-model`).client,
          maxRetries: sample.maxRetries,
          timeoutMs: Option.fromNullable(timeoutMs)
        })
        const judgeTarget: Target = {
          ...target("judge", judgeModel),
          client: client("judge", sample.judgeClientTimeoutMs)
        }
        const weak: Target = { ...target("weak", "weak-model"), client: client("answers", sample.answerTimeoutMs) }
        const strong: Target = {
          ...target("strong", "strong-model"),
          client: client("answers", sample.answerTimeoutMs)
        }
        const http = timedHttp(
          { [judgeModel]: sample.judge, "weak-model": sample.weak, "strong-model": sample.strong },
          judgeModel
        )
        const bound = Option.some(sample.requestTimeoutMs)
        const router = yield* Effect.gen(function*() {
          const route: Route = sample.classifier
            ? yield* CapabilityRoute.make(routeOptions(judgeTarget, {
              weak,
              strong,
              judgeFailure: sample.posture,
              judgeTimeoutMs: Option.fromNullable(sample.judgeTimeoutMs)
            }))
            : Passthrough.make({ id: "auto", name: "auto", target: weak })
          return yield* Effect.provideService(
            Router.make([{ ...route, requestTimeoutMs: bound }]),
            Stats.Stats,
            Stats.disabled
          )
        }).pipe(
          Effect.provide(
            Layer.mergeAll(Judge.layer, SessionStore.layerTest).pipe(
              Layer.provideMerge(UpstreamClient.layer),
              Layer.provide(Layer.succeed(HttpClient.HttpClient, http))
            )
          ),
          Effect.scoped
        )
        const request = routed([user("task")])
        const call = sample.streaming ? Effect.asVoid(router.stream(request)) : Effect.asVoid(router.complete(request))
        const fiber = yield* Effect.fork(
          Effect.exit(call.pipe(Effect.withTracerEnabled(false), Logger.withMinimumLogLevel(LogLevel.None)))
        )
        const isRequestDeadline = (exit: Exit.Exit<void, Router.RouterFailure>) =>
          Exit.isFailure(exit) &&
          Option.exists(Cause.failureOption(exit.cause), (e) => e._tag === "RequestDeadlineExceeded")

        if (sample.requestTimeoutMs > 1) {
          yield* TestClock.adjust(sample.requestTimeoutMs - 1)
          const early = yield* Fiber.poll(fiber)
          if (Option.isSome(early) && Exit.isSuccess(early.value) && isRequestDeadline(early.value.value)) return false
          yield* TestClock.adjust(1)
        } else {
          yield* TestClock.adjust(1)
        }
        // At the deadline the request is over: no further test time may be needed.
        const exit = yield* Effect.raceFirst(
          Effect.map(Fiber.join(fiber), Option.some),
          Effect.as(wallClock(2000), Option.none())
        )
        if (Option.isNone(exit)) return false
        if (isRequestDeadline(exit.value)) {
          const failure = Cause.failureOption(Exit.isFailure(exit.value) ? exit.value.cause : Cause.empty)
          return Option.exists(
            failure,
            (e) =>
              e._tag === "RequestDeadlineExceeded" && e.afterMs === sample.requestTimeoutMs && toHttp(e).status === 504
          )
        }
        return true
      }),
    { fastCheck: { numRuns: 150 }, timeout: 120_000 }
  )

  it.effect("the deadline covers judge and answer together: each alone fits, both do not", () =>
    Effect.gen(function*() {
      const judgeModel = yield* uniqueJudgeModel
      const http = timedHttp({
        [judgeModel]: { delayMs: 600, result: "ok" },
        "weak-model": { delayMs: 600, result: "ok" }
      }, judgeModel)
      const judgeTarget = target("judge", judgeModel)
      const router = yield* Effect.flatMap(
        CapabilityRoute.make(routeOptions(judgeTarget, { judgeFailure: "error" })),
        (route) =>
          Effect.provideService(
            Router.make([{ ...route, requestTimeoutMs: Option.some(1000) }]),
            Stats.Stats,
            Stats.disabled
          )
      ).pipe(
        Effect.provide(
          Layer.mergeAll(Judge.layer, SessionStore.layerTest).pipe(
            Layer.provideMerge(UpstreamClient.layer),
            Layer.provide(Layer.succeed(HttpClient.HttpClient, http))
          )
        ),
        Effect.scoped
      )
      const fiber = yield* Effect.fork(Effect.flip(router.complete(routed([user("task")]))))
      yield* TestClock.adjust(999)
      assert.isTrue(Option.isNone(yield* Fiber.poll(fiber)))
      yield* TestClock.adjust(1)
      const failure = yield* Fiber.join(fiber)
      assert.strictEqual(failure._tag, "RequestDeadlineExceeded")
      assert.deepStrictEqual(toHttp(failure), {
        status: 504,
        type: "upstream_error",
        code: "upstream_timeout",
        message: "request did not finish within 1000 ms, retries included"
      })
    }))
})
