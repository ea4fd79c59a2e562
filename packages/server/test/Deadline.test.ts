/**
 * Deadlines through the real server, driven by the TestClock: the server runs in the test's
 * runtime, so its deadline timers wait for `TestClock.adjust` while sockets stay real.
 */
import type * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import { assert, describe, it } from "@effect/vitest"
import { ErrorEnvelope } from "@switchyard-ts/protocol/Errors"
import * as FakeUpstream from "@switchyard-ts/testkit/FakeUpstream"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import { basicDeployment, chat, startServer } from "./harness.js"

const post = (client: HttpClient.HttpClient, body: unknown) =>
  client.execute(HttpClientRequest.post("/v1/chat/completions").pipe(HttpClientRequest.bodyUnsafeJson(body)))

describe("deadlines through the server", () => {
  it.scoped("a stalled answer call is a 504 at exactly the deadline, and the fallback target receives nothing", () =>
    Effect.gen(function*() {
      const { client, upstream } = yield* startServer(basicDeployment({ timeoutMs: 3000, maxRetries: 2 }))
      yield* upstream.setBehaviour("weak-model", FakeUpstream.stall)
      const fiber = yield* Effect.fork(Effect.flatMap(post(client, chat("mix")), (response) =>
        Effect.map(
          Effect.flatMap(response.json, Schema.decodeUnknown(ErrorEnvelope)),
          (body) => ({ status: response.status, body })
        )))
      yield* upstream.awaitRequest("weak-model")
      yield* TestClock.adjust("2999 millis")
      assert.isTrue(Option.isNone(yield* Fiber.poll(fiber)))
      yield* TestClock.adjust("1 millis")
      const { body, status } = yield* Fiber.join(fiber)
      assert.strictEqual(status, 504)
      assert.strictEqual(body.error.type, "upstream_error")
      assert.strictEqual(body.error.code, "upstream_timeout")
      assert.include(body.error.message, "did not finish within 3000 ms, retries included")
      assert.deepStrictEqual((yield* upstream.requests).map((r) => r.model), ["weak-model"])
    }))

  it.scoped("a streamed call whose headers never come is a 504; no other candidate is tried", () =>
    Effect.gen(function*() {
      const { client, upstream } = yield* startServer(basicDeployment({ timeoutMs: 1500 }))
      yield* upstream.setBehaviour("weak-model", FakeUpstream.stall)
      const fiber = yield* Effect.fork(Effect.map(post(client, chat("mix", { stream: true })), (r) => r.status))
      yield* upstream.awaitRequest("weak-model")
      yield* TestClock.adjust("1500 millis")
      assert.strictEqual(yield* Fiber.join(fiber), 504)
      assert.deepStrictEqual((yield* upstream.requests).map((r) => r.model), ["weak-model"])
    }))

  it.scoped("a gap between streamed chunks longer than timeout_ms ends the stream with an error event", () =>
    Effect.gen(function*() {
      const { client, upstream } = yield* startServer(basicDeployment({ timeoutMs: 1000 }))
      const chunk = JSON.stringify({
        id: "c",
        model: "weak-model",
        choices: [{ index: 0, delta: { content: "first" } }]
      })
      // The second chunk comes a minute later in real time; the deadline passes first on the TestClock.
      yield* upstream.setBehaviour("weak-model", FakeUpstream.Chunks.make({ chunks: [chunk, chunk], gapMs: 60_000 }))
      const response = yield* post(client, chat("fast", { stream: true }))
      assert.strictEqual(response.status, 200)
      const firstEvent = yield* Deferred.make<void>()
      const body = yield* Effect.fork(response.stream.pipe(
        Stream.decodeText(),
        Stream.tap((text) => Effect.when(Deferred.succeed(firstEvent, undefined), () => text.includes("\n\n"))),
        Stream.mkString
      ))
      // The idle timer runs from the moment the first chunk was forwarded; then pass timeout_ms.
      yield* Deferred.await(firstEvent)
      yield* TestClock.adjust("1 second")
      const text = yield* Fiber.join(body)
      const events = text.split("\n\n").filter((e) => e.length > 0)
      assert.strictEqual(events.length, 2)
      assert.include(events[0] ?? "", "first")
      const error = Schema.decodeUnknownSync(Schema.parseJson(Schema.Struct({
        error: Schema.Struct({ message: Schema.String, type: Schema.String, code: Schema.String })
      })))((events[1] ?? "").slice("data: ".length))
      assert.strictEqual(error.error.code, "upstream_timeout")
      assert.notInclude(text, "[DONE]")
    }))
})
