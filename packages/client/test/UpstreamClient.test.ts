import { assert, describe, it } from "@effect/vitest"
import * as Errors from "@switchyard-ts/protocol/Errors"
import type { ClientFailure } from "@switchyard-ts/protocol/Errors"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Fiber from "effect/Fiber"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import * as Random from "effect/Random"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import * as Exchange from "../src/internal/exchange.js"
import { chatCompletionsUrl } from "../src/internal/formats/openAiChat.js"
import * as Sse from "../src/internal/sse.js"
import * as Metrics from "../src/Metrics.js"
import * as Relay from "../src/Relay.js"
import type { Target } from "../src/Target.js"
import { chunksOf } from "../src/UpstreamClient.js"
import { apiKey, chunk, completion, makeFake, request, sseData, Step, target } from "./support.js"

/** Jitter factor exactly 1 (see `UpstreamClient.make`). */
const noJitter = Effect.withRandom(Random.fixed([0.5]))

const countOf = (metric: Metric.Metric.Counter<number>) => Effect.map(Metric.value(metric), (state) => state.count)
const attemptsCount = (status: Option.Option<number>) => countOf(Metrics.attemptsFor(status))

/** What the client's methods fail with (no breaker is configured here, so never `CircuitOpen`). */
type UpstreamFailure = ClientFailure

const assertNoSecret = (failure: UpstreamFailure) => {
  for (const text of [JSON.stringify(failure), String(failure), failure.message]) {
    assert.isFalse(text.includes(apiKey), `secret leaked in ${text}`)
  }
}

const hasTag = <T extends UpstreamFailure["_tag"]>(
  failure: UpstreamFailure,
  tag: T
): failure is Extract<UpstreamFailure, { _tag: T }> => failure._tag === tag

const expectTag = <T extends UpstreamFailure["_tag"]>(
  failure: UpstreamFailure,
  tag: T
): Extract<UpstreamFailure, { _tag: T }> =>
  hasTag(failure, tag) ? failure : assert.fail(`expected ${tag}, got ${failure._tag}: ${JSON.stringify(failure)}`)

const record = (value: unknown): Record<string, unknown> => (Predicate.isRecord(value) ? value : {})

describe("UpstreamClient request preparation", () => {
  it.effect("rewrites model, merges extra_body where missing, forwards unknown fields, never mutates the input", () =>
    Effect.gen(function*() {
      const fake = yield* makeFake({ "a.test": [Step.ok()] })
      const body = {
        ...request,
        temperature: 0.5,
        provider_extension: { nested: [1, 2] },
        stream: true,
        stream_options: { include_usage: true }
      }
      const snapshot = structuredClone(body)
      const t = target("a", { extraBody: { temperature: 0, top_k: 5, model: "nope" } })
      yield* fake.client.complete({ target: t, body, headers: {} })
      const [seen] = yield* fake.requests
      assert.deepStrictEqual(seen?.body, {
        model: "a-model",
        messages: [{ role: "user", content: "hi" }],
        temperature: 0.5,
        top_k: 5,
        provider_extension: { nested: [1, 2] }
      })
      assert.deepStrictEqual(body, snapshot)
      assert.deepStrictEqual(t.extraBody, { temperature: 0, top_k: 5, model: "nope" })
    }))

  it.effect("a target's reasoning_effort replaces the caller's; without one the caller's is forwarded as it came", () =>
    Effect.gen(function*() {
      const fake = yield* makeFake({ "a.test": [Step.ok(), Step.ok(), Step.ok()] })
      const forced: Target = { ...target("a"), reasoningEffort: "high" }
      yield* fake.client.complete({ target: forced, body: { ...request, reasoning_effort: "low" }, headers: {} })
      yield* fake.client.complete({ target: forced, body: request, headers: {} })
      yield* fake.client.complete({ target: target("a"), body: { ...request, reasoning_effort: "low" }, headers: {} })
      const [replaced, added, kept] = yield* fake.requests
      assert.strictEqual(record(replaced?.body)["reasoning_effort"], "high")
      assert.strictEqual(record(added?.body)["reasoning_effort"], "high")
      assert.strictEqual(record(kept?.body)["reasoning_effort"], "low")
    }))

  it.effect("stream calls set stream and include_usage unless the caller set it", () =>
    Effect.gen(function*() {
      const done = Step.sse(["data: [DONE]\n\n"])
      const fake = yield* makeFake({ "a.test": [done] })
      const t = target("a")
      yield* Effect.flatMap(fake.client.stream({ target: t, body: request, headers: {} }), Stream.runDrain)
      const callerOff = { ...request, stream_options: { include_usage: false, include_obfuscation: true } }
      yield* Effect.flatMap(fake.client.stream({ target: t, body: callerOff, headers: {} }), Stream.runDrain)
      const partial = { ...request, stream: false, stream_options: { include_obfuscation: false } }
      yield* Effect.flatMap(fake.client.stream({ target: t, body: partial, headers: {} }), Stream.runDrain)
      const seen = yield* fake.requests
      assert.deepStrictEqual(seen.map((r) => r.body), [
        { ...request, model: "a-model", stream: true, stream_options: { include_usage: true } },
        {
          ...request,
          model: "a-model",
          stream: true,
          stream_options: { include_usage: false, include_obfuscation: true }
        },
        {
          ...request,
          model: "a-model",
          stream: true,
          stream_options: { include_obfuscation: false, include_usage: true }
        }
      ])
      assert.strictEqual(seen[0]?.headers["accept"], "text/event-stream")
    }))

  it.effect("drops credential, hop-by-hop and Connection-named caller headers and Expect, adds extra headers and bearer auth", () =>
    Effect.gen(function*() {
      const fake = yield* makeFake({ "a.test": [Step.ok()] })
      const headers = {
        authorization: "Bearer caller-token",
        cookie: "session=1",
        "x-api-key": "caller-key",
        "api-key": "caller-key",
        "openai-organization": "org",
        host: "proxy.local",
        "content-length": "123",
        "content-type": "text/plain",
        connection: "keep-alive, X-Hop-Note",
        "x-hop-note": "for the first hop only",
        "keep-alive": "timeout=5",
        expect: "100-continue",
        te: "trailers",
        upgrade: "h2c",
        "http2-settings": "AAMAAABkAARAAAAAAAIAAAAA",
        "proxy-connection": "keep-alive",
        "transfer-encoding": "chunked",
        "accept-encoding": "br",
        "x-switchyard-session-id": "s-1",
        "user-agent": "agent/1.0",
        "X-Custom-Thing": "v",
        "x-team": "caller-team"
      }
      const t = target("a", { extraHeaders: { "x-team": "infra", "X-Other": "o" } })
      yield* fake.client.complete({ target: t, body: request, headers })
      const [seen] = yield* fake.requests
      const sent = seen?.headers ?? {}
      const dropped = [
        "cookie",
        "x-api-key",
        "api-key",
        "openai-organization",
        "host",
        "connection",
        "x-hop-note",
        "keep-alive",
        "expect",
        "te",
        "upgrade",
        "http2-settings",
        "proxy-connection",
        "transfer-encoding",
        "accept-encoding"
      ]
      for (const name of dropped) {
        assert.isUndefined(sent[name], name)
      }
      assert.strictEqual(sent["authorization"], `Bearer ${apiKey}`)
      assert.strictEqual(sent["content-type"], "application/json")
      assert.strictEqual(sent["accept"], "application/json")
      assert.strictEqual(sent["x-switchyard-session-id"], "s-1")
      assert.strictEqual(sent["user-agent"], "agent/1.0")
      assert.strictEqual(sent["x-custom-thing"], "v")
      assert.strictEqual(sent["x-team"], "infra")
      assert.strictEqual(sent["x-other"], "o")
      assert.notStrictEqual(sent["content-length"], "123")
    }))

  it("builds the chat completions URL from base_url variants", () => {
    const cases: ReadonlyArray<readonly [string, string]> = [
      ["https://api.example.com/v1", "https://api.example.com/v1/chat/completions"],
      ["https://api.example.com/v1/", "https://api.example.com/v1/chat/completions"],
      ["  https://api.example.com/v1//  ", "https://api.example.com/v1/chat/completions"],
      ["https://api.example.com/v1/chat/completions", "https://api.example.com/v1/chat/completions"],
      ["https://api.example.com/v1/chat/completions/", "https://api.example.com/v1/chat/completions"],
      ["https://api.example.com/v1/responses", "https://api.example.com/v1/chat/completions"],
      ["http://127.0.0.1:8001", "http://127.0.0.1:8001/chat/completions"]
    ]
    for (const [base, expected] of cases) assert.strictEqual(chatCompletionsUrl(base), expected, base)
  })

  it.effect("sends to the URL built from base_url", () =>
    Effect.gen(function*() {
      const fake = yield* makeFake({ "a.test": [Step.ok()] })
      yield* fake.client.complete({
        target: target("a", { baseUrl: " https://a.test/v1/responses/ " }),
        body: request,
        headers: {}
      })
      const [seen] = yield* fake.requests
      assert.strictEqual(seen?.url, "https://a.test/v1/chat/completions")
    }))

  it.effect("omits auth when no key is configured", () =>
    Effect.gen(function*() {
      const fake = yield* makeFake({ "a.test": [Step.ok()] })
      const base = target("a")
      const t = { ...base, client: { ...base.client, apiKey: Option.none() } }
      yield* fake.client.complete({ target: t, body: request, headers: { authorization: "Bearer caller" } })
      const [seen] = yield* fake.requests
      assert.isUndefined(seen?.headers["authorization"])
    }))
})

describe("UpstreamClient deadline and retries", () => {
  it.effect("a stall past the deadline fails with DeadlineExceeded at exactly the deadline and aborts the request", () =>
    Effect.gen(function*() {
      const fake = yield* makeFake({ "a.test": [Step.stall] })
      const fiber = yield* Effect.fork(
        fake.client.complete({ target: target("a", { timeoutMs: 1000 }), body: request, headers: {} })
      )
      yield* TestClock.adjust(999)
      assert.isTrue(Option.isNone(yield* Fiber.poll(fiber)))
      yield* TestClock.adjust(1)
      const failure = expectTag(yield* Effect.flip(Fiber.join(fiber)), "DeadlineExceeded")
      assert.deepStrictEqual({ target: failure.target, afterMs: failure.afterMs }, { target: "a-model", afterMs: 1000 })
      const seen = yield* fake.requests
      assert.strictEqual(seen.length, 1)
      assert.isTrue(seen[0]?.signal.aborted)
    }))

  it.effect("a 5xx then success recovers after the 250 ms backoff", () =>
    Effect.gen(function*() {
      const recovered = yield* countOf(Metrics.retryRecovered)
      const ok200 = yield* attemptsCount(Option.some(200))
      const err503 = yield* attemptsCount(Option.some(503))
      const fake = yield* makeFake({ "a.test": [Step.status(503), Step.ok()] })
      const fiber = yield* Effect.fork(
        fake.client.complete({ target: target("a", { timeoutMs: 5000 }), body: request, headers: {} })
      )
      yield* TestClock.adjust(249)
      assert.isTrue(Option.isNone(yield* Fiber.poll(fiber)))
      assert.strictEqual((yield* fake.requests).length, 1)
      yield* TestClock.adjust(1)
      const result = yield* Fiber.join(fiber)
      assert.strictEqual(result.id, "chatcmpl-1")
      const seen = yield* fake.requests
      assert.deepStrictEqual(seen.map((r) => r.at), [0, 250])
      assert.strictEqual((yield* countOf(Metrics.retryRecovered)) - recovered, 1)
      assert.strictEqual((yield* attemptsCount(Option.some(200))) - ok200, 1)
      assert.strictEqual((yield* attemptsCount(Option.some(503))) - err503, 1)
    }).pipe(noJitter))

  it.effect("backoff doubles from 250 ms, capped at 2 s, jittered by Random in [0.8, 1.2]", () =>
    Effect.gen(function*() {
      const fake = yield* makeFake({ "a.test": [Step.status(500)] })
      const fiber = yield* Effect.fork(
        fake.client.complete({ target: target("a", { maxRetries: 6 }), body: request, headers: {} }).pipe(Effect.flip)
      )
      yield* TestClock.adjust("30 seconds")
      const failure = expectTag(yield* Fiber.join(fiber), "UpstreamStatus")
      assert.strictEqual(failure.status, 500)
      const at = (yield* fake.requests).map((r) => r.at)
      // factors 0.8, 1.2, 1, 0.8, 1.2, 1 on bases 250, 500, 1000, 2000, 2000, 2000
      assert.deepStrictEqual(at, [0, 200, 800, 1800, 3400, 5800, 7800])
    }).pipe(Effect.withRandom(Random.fixed([0, 1, 0.5]))))

  it.effect("retries stop when the next backoff would cross the deadline; the last status is returned", () =>
    Effect.gen(function*() {
      const fake = yield* makeFake({ "a.test": [Step.status(500, { error: { message: "boom" } })] })
      const fiber = yield* Effect.fork(
        fake.client.complete({ target: target("a", { maxRetries: 5, timeoutMs: 1000 }), body: request, headers: {} })
          .pipe(
            Effect.flip
          )
      )
      // attempts at 0, 250, 750; the next backoff (1000 ms) would end at 1750 > 1000
      yield* TestClock.adjust(750)
      const failure = expectTag(yield* Fiber.join(fiber), "UpstreamStatus")
      assert.strictEqual(failure.status, 500)
      assert.strictEqual(failure.upstreamMessage, "boom")
      assert.strictEqual(yield* TestClock.currentTimeMillis, 750)
      assert.strictEqual((yield* fake.requests).length, 3)
    }).pipe(noJitter))

  it.effect("a Retry-After beyond the deadline is not waited: fails at once with the 429", () =>
    Effect.gen(function*() {
      const fake = yield* makeFake({
        "a.test": [Step.status(429, { error: { message: "slow down" } }, { "retry-after": "10" }), Step.ok()]
      })
      const failure = yield* fake.client.complete({
        target: target("a", { timeoutMs: 5000 }),
        body: request,
        headers: {}
      }).pipe(
        Effect.flip
      )
      const status = expectTag(failure, "UpstreamStatus")
      assert.strictEqual(status.status, 429)
      assert.strictEqual(status.retryAfterMs, 10_000)
      assert.strictEqual(yield* TestClock.currentTimeMillis, 0)
      assert.strictEqual((yield* fake.requests).length, 1)
    }))

  it.effect("a Retry-After that fits is honoured exactly (seconds)", () =>
    Effect.gen(function*() {
      const fake = yield* makeFake({ "a.test": [Step.status(429, {}, { "retry-after": "2" }), Step.ok()] })
      const fiber = yield* Effect.fork(
        fake.client.complete({ target: target("a", { timeoutMs: 5000 }), body: request, headers: {} })
      )
      yield* TestClock.adjust(1999)
      assert.isTrue(Option.isNone(yield* Fiber.poll(fiber)))
      yield* TestClock.adjust(1)
      yield* Fiber.join(fiber)
      assert.deepStrictEqual((yield* fake.requests).map((r) => r.at), [0, 2000])
    }))

  it.effect("a Retry-After HTTP-date is honoured, capped at 60 s", () =>
    Effect.gen(function*() {
      const date = new Date(3000).toUTCString()
      const fake = yield* makeFake({
        "a.test": [
          Step.status(503, {}, { "retry-after": date }),
          Step.status(503, {}, { "retry-after": "600" }),
          Step.ok()
        ]
      })
      const fiber = yield* Effect.fork(fake.client.complete({ target: target("a"), body: request, headers: {} }))
      yield* TestClock.adjust("2 minutes")
      yield* Fiber.join(fiber)
      assert.deepStrictEqual((yield* fake.requests).map((r) => r.at), [0, 3000, 63_000])
    }))

  it.effect("a 400 is not retried", () =>
    Effect.gen(function*() {
      const fake = yield* makeFake({ "a.test": [Step.status(400), Step.ok()] })
      const failure = yield* fake.client.complete({
        target: target("a", { maxRetries: 3 }),
        body: request,
        headers: {}
      }).pipe(
        Effect.flip
      )
      assert.strictEqual(expectTag(failure, "UpstreamStatus").status, 400)
      assert.strictEqual((yield* fake.requests).length, 1)
    }))

  it.effect.each([401, 403, 404, 409, 422])("a %s is not retried", (code) =>
    Effect.gen(function*() {
      const fake = yield* makeFake({ "a.test": [Step.status(code), Step.ok()] })
      const failure = yield* fake.client.complete({
        target: target("a", { maxRetries: 3 }),
        body: request,
        headers: {}
      }).pipe(
        Effect.flip
      )
      assert.strictEqual(expectTag(failure, "UpstreamStatus").status, code)
      assert.strictEqual((yield* fake.requests).length, 1)
    }))

  it.effect.each([408, 429, 500, 502, 503, 504])("a %s is retried", (code) =>
    Effect.gen(function*() {
      const fake = yield* makeFake({ "a.test": [Step.status(code), Step.ok()] })
      const fiber = yield* Effect.fork(
        fake.client.complete({ target: target("a", { maxRetries: 1 }), body: request, headers: {} })
      )
      yield* TestClock.adjust(250)
      yield* Fiber.join(fiber)
      assert.strictEqual((yield* fake.requests).length, 2)
    }).pipe(noJitter))

  it.effect("maxRetries = 0 means one attempt", () =>
    Effect.gen(function*() {
      const fake = yield* makeFake({ "a.test": [Step.status(503), Step.ok()] })
      const failure = yield* fake.client.complete({
        target: target("a", { maxRetries: 0 }),
        body: request,
        headers: {}
      }).pipe(
        Effect.flip
      )
      assert.strictEqual(expectTag(failure, "UpstreamStatus").status, 503)
      assert.strictEqual((yield* fake.requests).length, 1)
    }))

  it.effect("exhausted retries return the last error", () =>
    Effect.gen(function*() {
      const fake = yield* makeFake({ "a.test": [Step.status(503), Step.status(502)] })
      const fiber = yield* Effect.fork(
        fake.client.complete({ target: target("a", { maxRetries: 2 }), body: request, headers: {} }).pipe(Effect.flip)
      )
      yield* TestClock.adjust("10 seconds")
      const failure = yield* Fiber.join(fiber)
      assert.strictEqual(expectTag(failure, "UpstreamStatus").status, 502)
      assert.strictEqual((yield* fake.requests).length, 3)
    }).pipe(noJitter))

  it.effect("a transport failure is retried, then mapped to TransportError without secrets", () =>
    Effect.gen(function*() {
      const none = yield* attemptsCount(Option.none())
      const fake = yield* makeFake({ "a.test": [Step.transport()] })
      const fiber = yield* Effect.fork(
        fake.client.complete({ target: target("a", { maxRetries: 1 }), body: request, headers: {} }).pipe(Effect.flip)
      )
      yield* TestClock.adjust(250)
      const failure = expectTag(yield* Fiber.join(fiber), "TransportError")
      assert.strictEqual(failure.reason, "connection failed (ECONNREFUSED)")
      assert.strictEqual(failure.target, "a-model")
      assertNoSecret(failure)
      assert.strictEqual((yield* fake.requests).length, 2)
      assert.strictEqual((yield* attemptsCount(Option.none())) - none, 2)
    }).pipe(noJitter))

  it.effect("a failed read of a 2xx body is a retryable TransportError", () =>
    Effect.gen(function*() {
      const fake = yield* makeFake({ "a.test": [Step.bodyError, Step.ok()] })
      const fiber = yield* Effect.fork(fake.client.complete({ target: target("a"), body: request, headers: {} }))
      yield* TestClock.adjust(250)
      yield* Fiber.join(fiber)
      assert.strictEqual((yield* fake.requests).length, 2)

      const once = yield* makeFake({ "a.test": [Step.bodyError] })
      const failure = yield* once.client.complete({
        target: target("a", { maxRetries: 0 }),
        body: request,
        headers: {}
      }).pipe(
        Effect.flip
      )
      assert.strictEqual(expectTag(failure, "TransportError").reason, "response body could not be read")
      assertNoSecret(failure)
    }).pipe(noJitter))

  it.effect("a caller interrupting a buffered call aborts the upstream request", () =>
    Effect.gen(function*() {
      const fake = yield* makeFake({ "a.test": [Step.stall] })
      const fiber = yield* Effect.fork(fake.client.complete({ target: target("a"), body: request, headers: {} }))
      yield* TestClock.adjust(1)
      yield* Fiber.interrupt(fiber)
      const [seen] = yield* fake.requests
      assert.isTrue(seen?.signal.aborted)
    }))
})

describe("UpstreamClient error mapping", () => {
  it.effect("keeps the upstream error.message and code", () =>
    Effect.gen(function*() {
      const fake = yield* makeFake({
        "a.test": [
          Step.status(401, {
            error: { message: "upstream authentication failed", type: "auth", code: "invalid_api_key" }
          }),
          Step.status(404, { error: { message: "no such model", type: "not_found_error" } }),
          Step.status(418, { error: { message: "x".repeat(5000), code: 42 } }),
          Step.text(500, "<html>oops</html>")
        ]
      })
      const call = fake.client.complete({ target: target("a", { maxRetries: 0 }), body: request, headers: {} }).pipe(
        Effect.flip,
        Effect.map((e) => expectTag(e, "UpstreamStatus"))
      )
      const first = yield* call
      assert.strictEqual(first.status, 401)
      assert.strictEqual(first.upstreamMessage, "upstream authentication failed")
      assert.strictEqual(first.upstreamCode, "invalid_api_key")
      // The error's own message (recorded by spans and logs) never carries upstream text; the HTTP
      // mapping relays upstreamMessage to the caller of an answer call.
      assert.strictEqual(first.message, "upstream a-model answered HTTP 401")
      assert.strictEqual(Errors.toHttp(first).message, "upstream authentication failed")
      const second = yield* call
      assert.strictEqual(second.upstreamCode, "not_found_error")
      const third = yield* call
      assert.strictEqual(third.upstreamMessage?.length, 2000)
      assert.strictEqual(third.upstreamCode, "42")
      const fourth = yield* call
      assert.strictEqual(fourth.status, 500)
      assert.isUndefined(fourth.upstreamMessage)
      assert.strictEqual(fourth.message, "upstream a-model answered HTTP 500")
    }))

  it.effect("detects a 400 that says the context window was exceeded", () =>
    Effect.gen(function*() {
      const fake = yield* makeFake({
        "a.test": [
          Step.status(400, { error: { message: "too long", code: "context_length_exceeded" } }),
          Step.status(400, { error: { message: "This model's Maximum Context Length is 8192 tokens" } }),
          Step.text(400, "Input exceeds the maximum allowed input length of the model"),
          Step.status(400, { error: { message: "messages must be an array" } }),
          Step.status(500, { error: { message: "context window exceeded" } })
        ]
      })
      const call = fake.client.complete({ target: target("a", { maxRetries: 0 }), body: request, headers: {} }).pipe(
        Effect.flip,
        Effect.map((e) => expectTag(e, "UpstreamStatus").contextWindowExceeded)
      )
      assert.deepStrictEqual(
        [yield* call, yield* call, yield* call, yield* call, yield* call],
        [true, true, true, undefined, undefined]
      )
    }))

  it.effect("a 2xx that is not JSON or not a chat completion is an InvalidResponse, not retried", () =>
    Effect.gen(function*() {
      const fake = yield* makeFake({
        "a.test": [Step.text(200, "<html>not json</html>"), Step.ok({ id: 1, choices: "nope" })]
      })
      const call = fake.client.complete({ target: target("a", { maxRetries: 3 }), body: request, headers: {} }).pipe(
        Effect.flip,
        Effect.map((e) => expectTag(e, "InvalidResponse"))
      )
      const garbage = yield* call
      assert.strictEqual(garbage.reason, "response body is not valid JSON")
      assert.strictEqual((yield* fake.requests).length, 1)
      const mismatch = yield* call
      assert.include(mismatch.reason, "does not match")
      assert.notInclude(mismatch.reason, "nope")
      assert.strictEqual((yield* fake.requests).length, 2)
    }))

  it.effect("keeps unknown fields of a completion", () =>
    Effect.gen(function*() {
      const fake = yield* makeFake({
        "a.test": [Step.ok(completion("m", { system_fingerprint: "fp", provider: { x: 1 } }))]
      })
      const result = yield* fake.client.complete({ target: target("a"), body: request, headers: {} })
      assert.deepStrictEqual(result, completion("m", { system_fingerprint: "fp", provider: { x: 1 } }))
    }))

  it.effect("the API key never appears in any error", () =>
    Effect.gen(function*() {
      const fake = yield* makeFake({
        "a.test": [
          Step.status(401, { error: { message: `Incorrect API key provided: ${apiKey}`, code: apiKey } }),
          Step.text(400, `bad key ${apiKey}`),
          Step.text(200, `not json ${apiKey}`),
          Step.transport(),
          Step.bodyError,
          Step.stall
        ]
      })
      const call = fake.client.complete({
        target: target("a", { maxRetries: 0, timeoutMs: 100 }),
        body: request,
        headers: {}
      }).pipe(
        Effect.flip
      )
      const failures: Array<UpstreamFailure> = []
      for (let i = 0; i < 5; i++) failures.push(yield* call)
      const stalled = yield* Effect.fork(call)
      yield* TestClock.adjust(100)
      failures.push(yield* Fiber.join(stalled))
      assert.deepStrictEqual(failures.map((f) => f._tag), [
        "UpstreamStatus",
        "UpstreamStatus",
        "InvalidResponse",
        "TransportError",
        "TransportError",
        "DeadlineExceeded"
      ])
      failures.forEach(assertNoSecret)
      assert.strictEqual(
        expectTag(failures[0] ?? assert.fail("missing"), "UpstreamStatus").upstreamMessage,
        "Incorrect API key provided: [REDACTED]"
      )
    }))

  it.effect("labels every attempt with outcome and code", () =>
    Effect.gen(function*() {
      const before = yield* Effect.all([
        attemptsCount(Option.some(418)),
        countOf(Metrics.upstreamAttempts.pipe(Metric.tagged("outcome", "other_error"), Metric.tagged("code", "4xx")))
      ])
      const fake = yield* makeFake({ "a.test": [Step.status(418)] })
      yield* fake.client.complete({ target: target("a", { maxRetries: 0 }), body: request, headers: {} }).pipe(
        Effect.flip
      )
      const after = yield* countOf(
        Metrics.upstreamAttempts.pipe(Metric.tagged("outcome", "other_error"), Metric.tagged("code", "4xx"))
      )
      assert.strictEqual(after - before[1], 1)
      assert.deepStrictEqual(Metrics.attemptLabels(Option.some(418)), { outcome: "other_error", code: "4xx" })
    }))

  it("maps attempt labels as the anchor does", () => {
    const cases: ReadonlyArray<readonly [Option.Option<number>, string, string]> = [
      [Option.some(200), "success", "200"],
      [Option.some(201), "success", "2xx"],
      [Option.some(301), "other_error", "3xx"],
      [Option.some(400), "other_error", "400"],
      [Option.some(408), "retryable_error", "408"],
      [Option.some(429), "retryable_error", "429"],
      [Option.some(499), "other_error", "4xx"],
      [Option.some(503), "retryable_error", "503"],
      [Option.some(507), "retryable_error", "5xx"],
      [Option.some(600), "other_error", "other"],
      [Option.some(102), "other_error", "1xx"],
      [Option.none(), "retryable_error", "none"]
    ]
    for (const [status, outcome, code] of cases) {
      assert.deepStrictEqual(Metrics.attemptLabels(status), { outcome, code })
    }
  })
})

describe("UpstreamClient streaming", () => {
  const collect = (stream: Stream.Stream<unknown, UpstreamFailure>) =>
    Effect.map(Stream.runCollect(Stream.either(stream)), Chunk.toReadonlyArray)

  it.effect("decodes chunks in order, keeps unknown fields, and [DONE] ends the stream", () =>
    Effect.gen(function*() {
      const probe = { cancelled: false }
      const fake = yield* makeFake({
        "a.test": [
          Step.sse(
            [
              ": keep-alive comment\n\n",
              sseData(chunk("Hel")),
              `data: ${JSON.stringify(chunk("lo", { system_fingerprint: "fp" }))}\r\n\r\n`,
              "data: [DONE]\n\n",
              "data: this would be garbage\n\n"
            ],
            { probe, stall: true }
          )
        ]
      })
      const stream = yield* fake.client.stream({ target: target("a", { timeoutMs: 1000 }), body: request, headers: {} })
      const chunks = Chunk.toReadonlyArray(yield* Stream.runCollect(stream))
      assert.deepStrictEqual(chunks, [chunk("Hel"), chunk("lo", { system_fingerprint: "fp" })])
      const [seen] = yield* fake.requests
      // The body never ends after [DONE] here: the request is left to finish for endGraceMs, then aborted.
      assert.isFalse(seen?.signal.aborted, "not cut at once: a body that completes keeps its connection")
      yield* TestClock.adjust(Exchange.endGraceMs)
      assert.isTrue(seen?.signal.aborted, "the upstream request is released after [DONE]")
    }))

  it.effect("a chunk split across network reads still parses (incl. CRLF and UTF-8 splits)", () =>
    Effect.gen(function*() {
      const text = sseData(chunk("héllo wörld")).replace("\n\n", "\r\n\r\n")
      const bytes = new TextEncoder().encode(text)
      const e = bytes.indexOf(0xc3)
      const cr = bytes.indexOf(13)
      const parts = [
        bytes.slice(0, 7),
        bytes.slice(7, e + 1),
        bytes.slice(e + 1, cr + 1),
        bytes.slice(cr + 1),
        "data: [DO",
        "NE]\n\n"
      ]
      const fake = yield* makeFake({ "a.test": [Step.sse(parts)] })
      const stream = yield* fake.client.stream({ target: target("a"), body: request, headers: {} })
      assert.deepStrictEqual(Chunk.toReadonlyArray(yield* Stream.runCollect(stream)), [chunk("héllo wörld")])
    }))

  it.effect("a stream that ends without [DONE] just ends", () =>
    Effect.gen(function*() {
      const fake = yield* makeFake({ "a.test": [Step.sse([sseData(chunk("a")), sseData(chunk("b"))])] })
      const stream = yield* fake.client.stream({ target: target("a"), body: request, headers: {} })
      assert.deepStrictEqual(Chunk.toReadonlyArray(yield* Stream.runCollect(stream)), [chunk("a"), chunk("b")])
    }))

  it.effect("an in-band error fails the stream with UpstreamStatus 502", () =>
    Effect.gen(function*() {
      const fake = yield* makeFake({
        "a.test": [Step.sse([sseData(chunk("a")), sseData({ error: { message: "overloaded", type: "server_error" } })])]
      })
      const stream = yield* fake.client.stream({ target: target("a"), body: request, headers: {} })
      const items = yield* collect(stream)
      assert.strictEqual(items.length, 2)
      assert.deepStrictEqual(items[0], Either.right(chunk("a")))
      const last = items[1]
      if (last === undefined || Either.isRight(last)) return assert.fail("expected a failure")
      const failure = expectTag(last.left, "UpstreamStatus")
      assert.strictEqual(failure.status, 502)
      assert.strictEqual(failure.upstreamMessage, "overloaded")
    }))

  it.effect("an undecodable chunk fails the stream with InvalidResponse", () =>
    Effect.gen(function*() {
      const fake = yield* makeFake({ "a.test": [Step.sse(["data: {not json\n\n"]), Step.sse([sseData({ id: "x" })])] })
      const t = target("a")
      const first = yield* Effect.flatMap(
        fake.client.stream({ target: t, body: request, headers: {} }),
        Stream.runDrain
      ).pipe(
        Effect.flip
      )
      assert.strictEqual(expectTag(first, "InvalidResponse").reason, "stream chunk is not valid JSON")
      const second = yield* Effect.flatMap(
        fake.client.stream({ target: t, body: request, headers: {} }),
        Stream.runDrain
      ).pipe(
        Effect.flip
      )
      assert.include(expectTag(second, "InvalidResponse").reason, "stream chunk does not match")
    }))

  it.effect("a gap between chunks longer than timeout_ms fails with DeadlineExceeded and releases the body", () =>
    Effect.gen(function*() {
      const probe = { cancelled: false }
      const fake = yield* makeFake({ "a.test": [Step.sse([sseData(chunk("a"))], { stall: true, probe })] })
      const stream = yield* fake.client.stream({ target: target("a", { timeoutMs: 1000 }), body: request, headers: {} })
      const fiber = yield* Effect.fork(collect(stream))
      yield* TestClock.adjust(999)
      assert.isTrue(Option.isNone(yield* Fiber.poll(fiber)))
      yield* TestClock.adjust(1)
      const items = yield* Fiber.join(fiber)
      assert.deepStrictEqual(items[0], Either.right(chunk("a")))
      const last = items[1]
      if (last === undefined || Either.isRight(last)) return assert.fail("expected a failure")
      assert.strictEqual(expectTag(last.left, "DeadlineExceeded").afterMs, 1000)
      assert.isTrue(probe.cancelled)
    }))

  it.effect("retries and the deadline apply until headers; a stall before headers is DeadlineExceeded", () =>
    Effect.gen(function*() {
      const fake = yield* makeFake({
        "a.test": [Step.status(503), Step.sse([sseData(chunk("a"))])],
        "b.test": [Step.stall]
      })
      const fiber = yield* Effect.fork(fake.client.stream({ target: target("a"), body: request, headers: {} }))
      yield* TestClock.adjust(250)
      const stream = yield* Fiber.join(fiber)
      assert.deepStrictEqual(Chunk.toReadonlyArray(yield* Stream.runCollect(stream)), [chunk("a")])

      const stalled = yield* Effect.fork(
        fake.client.stream({ target: target("b", { timeoutMs: 500 }), body: request, headers: {} }).pipe(Effect.flip)
      )
      yield* TestClock.adjust(500)
      assert.strictEqual(expectTag(yield* Fiber.join(stalled), "DeadlineExceeded").afterMs, 500)
    }).pipe(noJitter))

  it.effect("interrupting the stream consumer aborts the upstream request (chunks and pieces alike)", () =>
    Effect.gen(function*() {
      for (const method of ["stream", "answerStream"] as const) {
        const probe = { cancelled: false }
        const fake = yield* makeFake({ "a.test": [Step.sse([sseData(chunk("a"))], { stall: true, probe })] })
        const stream: Stream.Stream<unknown, UpstreamFailure> = yield* fake.client[method]({
          target: target("a"),
          body: request,
          headers: {}
        })
        const fiber = yield* Effect.fork(Stream.runCollect(stream))
        yield* TestClock.adjust(10)
        yield* Fiber.interrupt(fiber)
        const [seen] = yield* fake.requests
        assert.isTrue(seen?.signal.aborted, method)
        assert.isTrue(probe.cancelled, method)
      }
    }))
})

describe("UpstreamClient.answerStream at the library boundary", () => {
  it.effect("is a Stream: pipeable, and Stream.take ends it early and aborts the upstream exchange", () =>
    Effect.gen(function*() {
      const probe = { cancelled: false }
      const fake = yield* makeFake({
        "a.test": [Step.sse([sseData(chunk("a")), sseData(chunk("b"))], { stall: true, probe })]
      })
      const pieces = yield* fake.client.answerStream({ target: target("a"), body: request, headers: {} })
      const first = yield* pieces.pipe(
        Stream.mapConcat((piece) => piece.chunks),
        Stream.take(1),
        Stream.runCollect
      )
      assert.deepStrictEqual(Chunk.toReadonlyArray(first), [chunk("a")])
      const [seen] = yield* fake.requests
      assert.isTrue(seen?.signal.aborted)
      assert.isTrue(probe.cancelled)
    }))

  it.effect("the server's unwrap (Relay.fromStream) is the client's push-fed relay itself, also through chunksOf", () =>
    Effect.gen(function*() {
      const fake = yield* makeFake({
        "a.test": [Step.sse([sseData(chunk("a")), sseData(chunk("b")), "data: [DONE]\n\n"])]
      })
      const pieces = yield* fake.client.answerStream({ target: target("a"), body: request, headers: {} })
      const relay = Relay.fromStream(pieces)
      assert.instanceOf(relay, Exchange.PushSource)
      assert.strictEqual(Relay.fromStream(pieces), relay)
      const chunks = chunksOf(pieces)
      assert.strictEqual(Relay.fromStream(chunks), Relay.fromStream(chunks))
      assert.deepStrictEqual(yield* Relay.collect(Relay.fromStream(chunks)), [chunk("a"), chunk("b")])
    }))
})

describe("UpstreamClient span", () => {
  const attributesOf = (
    seen: { readonly clientCallSpan: Option.Option<{ readonly attributes: ReadonlyMap<string, unknown> }> } | undefined
  ) =>
    Option.match(Option.fromNullable(seen).pipe(Option.flatMap((s) => s.clientCallSpan)), {
      onNone: () => assert.fail("no libsy.client_call span around the request"),
      onSome: (span) => Object.fromEntries(span.attributes)
    })

  it.effect("wraps a call in libsy.client_call with gen_ai attributes and the outcome", () =>
    Effect.gen(function*() {
      const fake = yield* makeFake({ "a.test:8443": [Step.ok()] })
      yield* fake.client.complete({
        target: target("a", { baseUrl: "https://a.test:8443/v1" }),
        body: request,
        headers: {}
      })
      const attributes = attributesOf((yield* fake.requests)[0])
      assert.deepStrictEqual(attributes, {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "a-model",
        "gen_ai.request.stream": false,
        "server.address": "a.test",
        "server.port": 8443,
        "gen_ai.response.id": "chatcmpl-1",
        "gen_ai.response.model": "served-model",
        "gen_ai.response.finish_reasons": ["stop"],
        outcome: "ok"
      })
    }))

  it.effect("annotates error.type and carries no secrets", () =>
    Effect.gen(function*() {
      const fake = yield* makeFake({ "a.test": [Step.status(503, { error: { message: apiKey } }), Step.stall] })
      const t = target("a", { maxRetries: 0, timeoutMs: 100 })
      yield* fake.client.stream({ target: t, body: request, headers: { "x-trace": "1" } }).pipe(Effect.flip)
      const fiber = yield* Effect.fork(
        fake.client.complete({ target: t, body: request, headers: {} }).pipe(Effect.flip)
      )
      yield* TestClock.adjust(100)
      yield* Fiber.join(fiber)
      const [first, second] = yield* fake.requests
      const streamed = attributesOf(first)
      assert.strictEqual(streamed["outcome"], "error")
      assert.strictEqual(streamed["error.type"], "503")
      assert.strictEqual(streamed["gen_ai.request.stream"], true)
      assert.strictEqual(streamed["server.port"], 443)
      assert.strictEqual(attributesOf(second)["error.type"], "timeout")
      assert.isFalse(JSON.stringify([streamed, attributesOf(second)]).includes(apiKey))
    }))
})

describe("SSE parser", () => {
  const run = (pieces: ReadonlyArray<string>, max?: number) => {
    let state = Sse.initial
    const out: Array<Sse.SseItem> = []
    for (const piece of pieces) {
      const [next, items] = Sse.feed(state, piece, max)
      state = next
      out.push(...items)
    }
    return out
  }

  it("joins multi-line data, ignores comments and other fields, accepts CR, LF and CRLF", () => {
    assert.deepStrictEqual(
      run([
        ": comment\r",
        "\revent: message\nid: 7\nretry: 10\ndata: one\ndata:two\r\n",
        "data\r\n\r\n",
        "event: empty\n\n",
        "data: last\r",
        "\n\r",
        "\n"
      ]),
      [
        { _tag: "Data", data: "one\ntwo\n" },
        { _tag: "Data", data: "last" }
      ]
    )
  })

  it("reports an event larger than the limit", () => {
    assert.deepStrictEqual(run(["data: 0123456789", "0123456789"], 16), [{ _tag: "Overflow", maxEventSize: 16 }])
  })
})
