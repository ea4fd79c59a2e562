/**
 * Circuit breakers and deadlines through the real server and the testkit upstream: an open judge
 * breaker under both postures, an open answer breaker skipped to the fallback, `/health` and the
 * state gauge, `request_timeout_ms` and `judge_timeout_ms` under the TestClock (fork, adjust, join),
 * and the request-deadline property.
 */
import type * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import { assert, describe, it } from "@effect/vitest"
import * as D from "@switchyard-ts/testkit/DeploymentBuilder"
import * as FakeUpstream from "@switchyard-ts/testkit/FakeUpstream"
import * as Effect from "effect/Effect"
import * as FastCheck from "effect/FastCheck"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as TestClock from "effect/TestClock"
import { capabilityRoute, routedAnswer, startServer } from "./harness.js"

let counter = 0
/** Names unique to one test: the metric registry is process-global. */
const uniqueNames = () => {
  const n = `${process.pid}-${++counter}`
  return { judgeModel: `judge-${n}`, judgeClient: `judge_${n}`, flaky: `flaky_${n}` }
}
type Names = ReturnType<typeof uniqueNames>

const classifier = (id: string, judge_failure: D.JudgeFailure, settings: Partial<D.CapabilityRoute> = {}) =>
  capabilityRoute(id, "judge", { judge_failure, ...settings })

const deployment = (names: Names) => (upstreamUrl: string): D.Deployment => {
  const breaker = { failure_threshold: 2, cooldown_ms: 60000 }
  return {
    llm_clients: {
      sim: D.client("openai_chat", upstreamUrl, { max_retries: 0 }),
      [names.flaky]: D.client("openai_chat", upstreamUrl, { max_retries: 0, breaker }),
      [names.judgeClient]: D.client("openai_chat", upstreamUrl, { max_retries: 1, timeout_ms: 3000, breaker })
    },
    targets: {
      judge: D.target(names.judgeModel, names.judgeClient),
      weak: D.target("weak-model", names.flaky),
      strong: D.target("strong-model", "sim")
    },
    routes: D.byId(
      classifier("auto-error", "error"),
      classifier("auto-open", "fail_open"),
      classifier("judge-tight-error", "error", { judge_timeout_ms: 500 }),
      classifier("judge-tight-open", "fail_open", { judge_timeout_ms: 800 }),
      classifier("judge-loose", "error", { judge_timeout_ms: 10000 }),
      classifier("auto-bounded", "fail_open", { request_timeout_ms: 1000 }),
      D.random("mix", ["weak", "strong"], { weights: [1, 0] }),
      D.passthrough("weak-only", "weak"),
      D.passthrough("bounded", "strong", { request_timeout_ms: 2000 })
    )
  }
}

const verdict = (p: number) =>
  FakeUpstream.ok(
    JSON.stringify({ crux: "a small fix", primary_rule: "SUP-1", capability_boundary: "supported", p_solve: p })
  )

const ErrorBody = Schema.Struct({
  error: Schema.Struct({ message: Schema.String, type: Schema.String, code: Schema.String })
})
const DecisionBody = Schema.Struct({ evidence: Schema.Record({ key: Schema.String, value: Schema.Unknown }) })

const chatBody = (model: string, extra: Record<string, unknown> = {}) => ({
  model,
  messages: [{ role: "user", content: "fix the typo" }],
  ...extra
})

const post = (client: HttpClient.HttpClient, path: string, body: unknown) =>
  client.execute(HttpClientRequest.post(path).pipe(HttpClientRequest.bodyUnsafeJson(body)))

const completion = (client: HttpClient.HttpClient, model: string, extra: Record<string, unknown> = {}) =>
  Effect.flatMap(
    post(client, "/v1/chat/completions", chatBody(model, extra)),
    routedAnswer
  )

const errorOf = (text: string) => Schema.decodeUnknownSync(Schema.parseJson(ErrorBody))(text).error

const decisionEvidence = (client: HttpClient.HttpClient, model: string) =>
  Effect.flatMap(
    post(client, "/v1/decision", { input_format: "openai_chat", request: chatBody(model) }),
    (response) =>
      Effect.map(
        response.json,
        (json) => ({ status: response.status, evidence: Schema.decodeUnknownSync(DecisionBody)(json).evidence })
      )
  )

const get = (client: HttpClient.HttpClient, path: string) =>
  Effect.flatMap(
    client.execute(HttpClientRequest.get(path)),
    (response) => Effect.map(response.text, (text) => ({ status: response.status, text }))
  )

const metricValue = (client: HttpClient.HttpClient, name: string, labels: ReadonlyArray<string>) =>
  Effect.map(get(client, "/metrics"), ({ text }) => {
    const line = text.split("\n").find((l) => l.startsWith(`${name}{`) && labels.every((label) => l.includes(label)))
    return line === undefined ? Option.none() : Option.some(Number(line.slice(line.lastIndexOf(" ") + 1)))
  })

const requestsFor = (upstream: FakeUpstream.FakeUpstream["Type"], model: string) =>
  Effect.map(upstream.requests, (all) => all.filter((r) => r.model === model).length)

describe("circuit breakers through the server", () => {
  it.scopedLive("a judge failing twice opens its breaker: fail_open → circuit-open without a judge request; error → 503", () =>
    Effect.gen(function*() {
      const names = uniqueNames()
      const { client, upstream } = yield* startServer(deployment(names))
      yield* upstream.setBehaviour(names.judgeModel, FakeUpstream.status(503))
      for (let i = 0; i < 2; i++) {
        const answered = yield* completion(client, "auto-open")
        assert.deepStrictEqual({ status: answered.status, source: answered.source }, {
          status: 200,
          source: "fail-open"
        })
      }
      // max_retries = 1: two logical failures are four HTTP requests
      assert.strictEqual(yield* requestsFor(upstream, names.judgeModel), 4)
      yield* upstream.setBehaviour(names.judgeModel, verdict(0.9))

      const skipped = yield* completion(client, "auto-open")
      assert.deepStrictEqual(
        { status: skipped.status, source: skipped.source, selected: skipped.selected },
        { status: 200, source: "circuit-open", selected: "strong-model" }
      )
      const decided = yield* decisionEvidence(client, "auto-open")
      assert.deepStrictEqual<unknown>(decided.evidence, { source: "circuit-open", judge_model: names.judgeModel })
      assert.deepStrictEqual(
        yield* metricValue(client, "switchyard_classifier_fail_open_total", [
          `judge_model="${names.judgeModel}"`,
          `reason="circuit_open"`
        ]),
        Option.some(2)
      )

      const failed = yield* completion(client, "auto-error")
      assert.strictEqual(failed.status, 503)
      const error = errorOf(failed.text)
      assert.deepStrictEqual({ type: error.type, code: error.code }, {
        type: "upstream_error",
        code: "upstream_unavailable"
      })
      assert.include(error.message, `judge ${names.judgeModel}`)
      assert.strictEqual(
        (yield* post(client, "/v1/decision", { input_format: "openai_chat", request: chatBody("auto-error") })).status,
        503
      )

      // No judge request was made while the breaker was open.
      assert.strictEqual(yield* requestsFor(upstream, names.judgeModel), 4)
      assert.deepStrictEqual(
        yield* metricValue(client, "switchyard_circuit_breaker_state", [`llm_client="${names.judgeClient}"`]),
        Option.some(1)
      )
      const health = yield* get(client, "/health")
      assert.strictEqual(health.status, 200)
      assert.deepStrictEqual<unknown>(JSON.parse(health.text), {
        status: "ok",
        breakers: { [names.flaky]: "closed", [names.judgeClient]: "open" }
      })
    }))

  it.scopedLive("an answer target whose breaker is open is skipped to the fallback; with none left the request is a 503", () =>
    Effect.gen(function*() {
      const names = uniqueNames()
      const { client, upstream } = yield* startServer(deployment(names))
      const health = yield* get(client, "/health")
      assert.deepStrictEqual<unknown>(JSON.parse(health.text), {
        status: "ok",
        breakers: { [names.flaky]: "closed", [names.judgeClient]: "closed" }
      })
      assert.deepStrictEqual(
        yield* metricValue(client, "switchyard_circuit_breaker_state", [`llm_client="${names.flaky}"`]),
        Option.some(0)
      )

      yield* upstream.setBehaviour("weak-model", FakeUpstream.status(500))
      for (let i = 0; i < 2; i++) {
        const answered = yield* completion(client, "mix")
        assert.deepStrictEqual({ status: answered.status, selected: answered.selected }, {
          status: 200,
          selected: "strong-model"
        })
      }
      assert.strictEqual(yield* requestsFor(upstream, "weak-model"), 2)
      yield* upstream.setBehaviour("weak-model", FakeUpstream.ok("weak is back"))

      const skipped = yield* completion(client, "mix")
      assert.deepStrictEqual({ status: skipped.status, selected: skipped.selected }, {
        status: 200,
        selected: "strong-model"
      })
      const streamed = yield* completion(client, "mix", { stream: true })
      assert.deepStrictEqual({ status: streamed.status, selected: streamed.selected }, {
        status: 200,
        selected: "strong-model"
      })
      assert.include(streamed.text, "data: [DONE]")

      const none = yield* completion(client, "weak-only")
      assert.strictEqual(none.status, 503)
      assert.deepStrictEqual(
        { type: errorOf(none.text).type, code: errorOf(none.text).code },
        { type: "upstream_error", code: "upstream_unavailable" }
      )
      assert.strictEqual(yield* requestsFor(upstream, "weak-model"), 2)
      assert.deepStrictEqual<unknown>(JSON.parse((yield* get(client, "/health")).text), {
        status: "ok",
        breakers: { [names.flaky]: "open", [names.judgeClient]: "closed" }
      })
      assert.deepStrictEqual(
        yield* metricValue(client, "switchyard_circuit_breaker_state", [`llm_client="${names.flaky}"`]),
        Option.some(1)
      )
    }))

  it.scoped("after the cooldown one probe goes out and its success closes the breaker (TestClock)", () =>
    Effect.gen(function*() {
      const names = uniqueNames()
      const { client, upstream } = yield* startServer(deployment(names))
      yield* upstream.setBehaviour("weak-model", FakeUpstream.status(500))
      yield* completion(client, "mix")
      yield* completion(client, "mix")
      yield* upstream.setBehaviour("weak-model", FakeUpstream.ok("weak is back"))
      yield* TestClock.adjust("59999 millis")
      assert.strictEqual((yield* completion(client, "mix")).selected, "strong-model")
      yield* TestClock.adjust("1 millis")
      assert.strictEqual((yield* completion(client, "mix")).selected, "weak-model")
      assert.strictEqual(yield* requestsFor(upstream, "weak-model"), 3)
      assert.deepStrictEqual<unknown>(JSON.parse((yield* get(client, "/health")).text).breakers[names.flaky], "closed")
    }))
})

/** Fork a request, wait (in real time) until the upstream has received `model`'s request. */
const forkWhenSent = <A, E>(upstream: FakeUpstream.FakeUpstream["Type"], model: string, request: Effect.Effect<A, E>) =>
  Effect.gen(function*() {
    const fiber = yield* Effect.fork(request)
    yield* upstream.awaitRequest(model)
    return fiber
  })

describe("deadlines through the server (TestClock)", () => {
  it.scoped("request_timeout_ms: a stalled answer is a 504 at exactly the bound", () =>
    Effect.gen(function*() {
      const names = uniqueNames()
      const { client, upstream } = yield* startServer(deployment(names))
      yield* upstream.setBehaviour("strong-model", FakeUpstream.stall)
      const fiber = yield* forkWhenSent(upstream, "strong-model", completion(client, "bounded"))
      yield* TestClock.adjust("1999 millis")
      assert.isTrue(Option.isNone(yield* Fiber.poll(fiber)))
      yield* TestClock.adjust("1 millis")
      const failed = yield* Fiber.join(fiber)
      assert.strictEqual(failed.status, 504)
      assert.deepStrictEqual(errorOf(failed.text), {
        message: "request did not finish within 2000 ms, retries included",
        type: "upstream_error",
        code: "upstream_timeout"
      })
    }))

  it.scoped("request_timeout_ms bounds a stream until its headers, not after", () =>
    Effect.gen(function*() {
      const names = uniqueNames()
      const { client, upstream } = yield* startServer(deployment(names))
      yield* upstream.setBehaviour("strong-model", FakeUpstream.stall)
      const stalled = yield* forkWhenSent(upstream, "strong-model", completion(client, "bounded", { stream: true }))
      yield* TestClock.adjust("2000 millis")
      assert.strictEqual((yield* Fiber.join(stalled)).status, 504)

      yield* upstream.setBehaviour("strong-model", FakeUpstream.Chunks.make({ chunks: ["a", "b", "c"], gapMs: 100 }))
      const response = yield* post(client, "/v1/chat/completions", chatBody("bounded", { stream: true }))
      assert.strictEqual(response.status, 200)
      // Past the bound once the headers are in: the stream still runs to its end.
      yield* TestClock.adjust("10 seconds")
      const text = yield* response.text
      assert.include(text, "data: [DONE]")
      assert.notInclude(text, "upstream_timeout")
    }))

  it.scoped("request_timeout_ms covers the judge: a judge slower than the bound is a 504 even under fail_open", () =>
    Effect.gen(function*() {
      const names = uniqueNames()
      const { client, upstream } = yield* startServer(deployment(names))
      yield* upstream.setBehaviour(names.judgeModel, FakeUpstream.stall)
      const fiber = yield* forkWhenSent(upstream, names.judgeModel, completion(client, "auto-bounded"))
      yield* TestClock.adjust("1000 millis")
      const failed = yield* Fiber.join(fiber)
      assert.strictEqual(failed.status, 504)
      assert.strictEqual(errorOf(failed.text).message, "request did not finish within 1000 ms, retries included")
      assert.strictEqual(yield* requestsFor(upstream, "strong-model"), 0)
    }))

  it.scoped("judge_timeout_ms tighter than the client's timeout_ms decides: error → 504 at 500 ms", () =>
    Effect.gen(function*() {
      const names = uniqueNames()
      const { client, upstream } = yield* startServer(deployment(names))
      yield* upstream.setBehaviour(names.judgeModel, FakeUpstream.stall)
      const fiber = yield* forkWhenSent(upstream, names.judgeModel, completion(client, "judge-tight-error"))
      yield* TestClock.adjust("499 millis")
      assert.isTrue(Option.isNone(yield* Fiber.poll(fiber)))
      yield* TestClock.adjust("1 millis")
      const failed = yield* Fiber.join(fiber)
      assert.strictEqual(failed.status, 504)
      assert.deepStrictEqual(errorOf(failed.text), {
        message: `judge ${names.judgeModel} did not finish within 500 ms, retries included`,
        type: "upstream_error",
        code: "upstream_timeout"
      })
    }))

  it.scoped("judge_timeout_ms under fail_open: strong at 800 ms with reason timeout; a looser one leaves the client's 3000 ms", () =>
    Effect.gen(function*() {
      const names = uniqueNames()
      const { client, upstream } = yield* startServer(deployment(names))
      yield* upstream.setBehaviour(names.judgeModel, FakeUpstream.stall)
      const open = yield* forkWhenSent(upstream, names.judgeModel, completion(client, "judge-tight-open"))
      yield* TestClock.adjust("800 millis")
      const answered = yield* Fiber.join(open)
      assert.deepStrictEqual(
        { status: answered.status, source: answered.source, selected: answered.selected },
        { status: 200, source: "fail-open", selected: "strong-model" }
      )
      assert.deepStrictEqual(
        yield* metricValue(client, "switchyard_classifier_fail_open_total", [
          `judge_model="${names.judgeModel}"`,
          `reason="timeout"`
        ]),
        Option.some(1)
      )

      yield* upstream.clear
      const loose = yield* forkWhenSent(upstream, names.judgeModel, completion(client, "judge-loose"))
      yield* TestClock.adjust("2999 millis")
      assert.isTrue(Option.isNone(yield* Fiber.poll(loose)))
      yield* TestClock.adjust("1 millis")
      const failed = yield* Fiber.join(loose)
      assert.strictEqual(failed.status, 504)
      assert.include(errorOf(failed.text).message, "did not finish within 3000 ms")
    }))

  it.scoped.prop(
    "no request outlives request_timeout_ms",
    {
      boundMs: FastCheck.integer({ min: 100, max: 5000 }),
      stream: FastCheck.boolean(),
      classified: FastCheck.boolean(),
      judge: FastCheck.constantFrom("stall", "verdict", "503"),
      answer: FastCheck.constantFrom("stall", "ok")
    },
    ({ answer, boundMs, classified, judge, stream }) =>
      Effect.gen(function*() {
        const names = uniqueNames()
        const { client, upstream } = yield* startServer((url) =>
          D.extend(deployment(names)(url), {
            routes: D.byId(
              classified
                ? classifier("prop", "fail_open", { request_timeout_ms: boundMs })
                : D.passthrough("prop", "strong", { request_timeout_ms: boundMs })
            )
          })
        )
        yield* upstream.setBehaviour(
          names.judgeModel,
          judge === "stall" ? FakeUpstream.stall : judge === "503" ? FakeUpstream.status(503) : verdict(0.1)
        )
        yield* upstream.setBehaviour("strong-model", answer === "stall" ? FakeUpstream.stall : FakeUpstream.ok("done"))
        // The request reached the router (its deadline runs) once the upstream saw its first call.
        const fiber = yield* forkWhenSent(
          upstream,
          classified ? names.judgeModel : "strong-model",
          completion(client, "prop", { stream })
        )
        yield* TestClock.adjust(boundMs - 1)
        const early = yield* Fiber.poll(fiber)
        if (Option.isSome(early) && early.value._tag === "Success" && early.value.value.status === 504) return false
        yield* TestClock.adjust(1)
        // At the bound the request is over, whatever its upstreams do (bounded in real time).
        const done = yield* Effect.raceFirst(
          Effect.map(Fiber.join(fiber), Option.some),
          Effect.as(Effect.promise(() => new Promise<void>((resolve) => setTimeout(resolve, 3000))), Option.none())
        )
        if (Option.isNone(done)) return false
        const { status, text } = done.value
        if (status === 504) {
          return errorOf(text).message === `request did not finish within ${boundMs} ms, retries included`
        }
        return status === 200
      }),
    { fastCheck: { numRuns: 15 }, timeout: 120_000 }
  )
})
