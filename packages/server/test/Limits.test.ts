/**
 * Limits under load through a real server on loopback: callers that disconnect mid-stream by the
 * dozen cancel every upstream call and leave the server healthy, and the upstream connection pool
 * is bounded per origin. Real sockets and timers, so these tests use `it.scopedLive`.
 */
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import { assert, describe, it } from "@effect/vitest"
import type * as Target from "@switchyard-ts/client/Target"
import * as UpstreamClient from "@switchyard-ts/client/UpstreamClient"
import * as Server from "@switchyard-ts/server/Server"
import * as FakeUpstream from "@switchyard-ts/testkit/FakeUpstream"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Http from "node:http"
import { basicDeployment, chat, startServer } from "./harness.js"

describe("limits under load", () => {
  it.scopedLive("50 concurrent streams aborted mid-stream close all 50 upstream connections; /health still answers", () =>
    Effect.gen(function*() {
      const callers = 50
      const { client, upstream, url } = yield* startServer(basicDeployment())
      yield* upstream.setBehaviour(
        "weak-model",
        FakeUpstream.Chunks.make({ chunks: Array.from({ length: 100 }, (_, i) => `piece-${i} `), gapMs: 50 })
      )
      const firstBytes = yield* Effect.forEach(
        Array.from({ length: callers }, (_, i) => i),
        (i) =>
          Effect.promise(async () => {
            const controller = new AbortController()
            const response = await fetch(`${url}/v1/chat/completions`, {
              method: "POST",
              headers: { "content-type": "application/json", "x-switchyard-session-id": `load-${i}` },
              body: JSON.stringify(chat("fast", { stream: true })),
              signal: controller.signal
            })
            const reader = response.body?.getReader()
            const first = await reader?.read()
            // Read a little more of some streams so the aborts land at different points.
            if (i % 3 === 0) await reader?.read()
            controller.abort()
            return { status: response.status, bytes: first?.value?.length ?? 0 }
          }),
        { concurrency: "unbounded" }
      )
      assert.strictEqual(firstBytes.filter((r) => r.status === 200 && r.bytes > 0).length, callers)
      // Woken by each change of the upstream's log; never satisfied if one upstream call stays open.
      const records = (yield* upstream.awaitRequests((records) => {
        const streams = records.filter((r) => r.model === "weak-model")
        return streams.length === callers && streams.every((r) => r.closedEarly)
      })).filter((r) => r.model === "weak-model")
      assert.strictEqual(records.filter((r) => r.closedEarly).length, callers)
      const health = yield* client.execute(HttpClientRequest.get("/health"))
      assert.strictEqual(health.status, 200)
      yield* upstream.setBehaviour("weak-model", FakeUpstream.ok("still serving"))
      const after = yield* client.execute(
        HttpClientRequest.post("/v1/chat/completions").pipe(HttpClientRequest.bodyUnsafeJson(chat("fast")))
      )
      assert.strictEqual(after.status, 200)
      assert.include(yield* after.text, "still serving")
    }))

  it.scopedLive("the upstream pool opens at most `connections` sockets per origin; further calls wait in its queue", () =>
    Effect.gen(function*() {
      const upstream = yield* FakeUpstream.make()
      yield* upstream.setBehaviour("slow-model", FakeUpstream.ok("done", { delayMs: 200 }))
      const client = yield* UpstreamClient.UpstreamClient
      const target: Target.Target = {
        name: "slow",
        id: "slow-model",
        client: {
          name: "sim",
          format: "openai_chat",
          baseUrl: upstream.url,
          apiKey: Option.none(),
          extraHeaders: {},
          maxRetries: 0,
          timeoutMs: Option.none()
        },
        extraBody: {}
      }
      const call = client.complete({ target, body: { model: "slow", messages: [] }, headers: {} })
      const answers = yield* Effect.all(Array.from({ length: 5 }, () => call), { concurrency: "unbounded" })
      assert.deepStrictEqual(answers.map((a) => a.choices[0]?.message.content), [
        "done",
        "done",
        "done",
        "done",
        "done"
      ])
      // Five concurrent calls over two sockets: the other three waited in the pool's queue for a
      // free socket (HTTP/1.1, one request at a time on each) instead of opening their own.
      const records = yield* upstream.requests
      assert.strictEqual(records.length, 5)
      assert.deepStrictEqual(new Set(records.map((r) => r.connection)), new Set([1, 2]))
    }).pipe(
      Effect.provide(UpstreamClient.layerTransport.pipe(Layer.provide(Server.upstreamTransport({ connections: 2 }))))
    ))

  it.scopedLive(
    "a caller that stops reading a fast stream gets every event in order once it reads again (the writes wait for the socket)",
    () =>
      Effect.gen(function*() {
        const { upstream, url } = yield* startServer(basicDeployment())
        // 16 MB of content, sent by the upstream as fast as it is read: far more than the sockets buffer
        const pieces = Array.from({ length: 1_000 }, (_, i) => `${String(i).padStart(4, "0")}${"x".repeat(16_000)}`)
        yield* upstream.setBehaviour("weak-model", FakeUpstream.Chunks.make({ chunks: pieces }))
        const response = yield* Effect.promise(() =>
          new Promise<Http.IncomingMessage>((resolve, reject) => {
            const request = Http.request(`${url}/v1/chat/completions`, {
              method: "POST",
              headers: { "content-type": "application/json" }
            }, resolve)
            request.on("error", reject)
            request.end(JSON.stringify(chat("fast", { stream: true })))
          })
        )
        response.pause()
        assert.strictEqual(response.statusCode, 200)
        // the caller reads nothing for a while: the server's writes fill the socket and wait for it
        yield* Effect.sleep("300 millis")
        const text = yield* Effect.promise(() =>
          new Promise<string>((resolve, reject) => {
            let all = ""
            response.setEncoding("utf8")
            response.on("data", (part: string) => {
              all += part
            })
            response.on("end", () => resolve(all))
            response.on("error", reject)
            response.resume()
          })
        )
        const events = text.split("\n\n").filter((event) => event.startsWith("data: "))
        assert.strictEqual(events.at(-1), "data: [DONE]")
        const content = events.slice(0, -1).map((event) => {
          const chunk: { readonly choices: ReadonlyArray<{ readonly delta: { readonly content?: string } }> } = JSON
            .parse(event.slice("data: ".length))
          return chunk.choices[0]?.delta.content ?? ""
        })
        assert.strictEqual(content.join(""), pieces.join(""))
      }),
    { timeout: 60_000 }
  )
})
