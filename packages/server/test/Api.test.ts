import type * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import type * as HttpClientResponse from "@effect/platform/HttpClientResponse"
import { assert, describe, it } from "@effect/vitest"
import { ErrorEnvelope } from "@switchyard-ts/protocol/Errors"
import { ChatCompletion, decodeOptions } from "@switchyard-ts/protocol/OpenAiChat"
import * as D from "@switchyard-ts/testkit/DeploymentBuilder"
import * as FakeUpstream from "@switchyard-ts/testkit/FakeUpstream"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { basicDeployment, chat, startServer } from "./harness.js"

const post = (client: HttpClient.HttpClient, path: string, body: unknown, headers: Record<string, string> = {}) =>
  client.execute(
    HttpClientRequest.post(path).pipe(HttpClientRequest.bodyUnsafeJson(body), HttpClientRequest.setHeaders(headers))
  )

const envelope = (response: HttpClientResponse.HttpClientResponse) =>
  Effect.flatMap(response.json, Schema.decodeUnknown(ErrorEnvelope))

const assertEnvelope = (
  response: HttpClientResponse.HttpClientResponse,
  status: number,
  type: string,
  code: string
) =>
  Effect.gen(function*() {
    assert.strictEqual(response.status, status)
    const body = yield* envelope(response)
    assert.strictEqual(body.error.type, type)
    assert.strictEqual(body.error.code, code)
    return body.error.message
  })

describe("chat completions", () => {
  it.scopedLive("a buffered completion goes through the passthrough target with the routing headers", () =>
    Effect.gen(function*() {
      const { client, upstream } = yield* startServer(basicDeployment())
      yield* upstream.setBehaviour("weak-model", FakeUpstream.ok("hi from weak"))
      const response = yield* post(client, "/v1/chat/completions", chat("fast", { vendor_field: { keep: true } }), {
        "x-team": "infra",
        authorization: "Bearer caller-secret"
      })
      assert.strictEqual(response.status, 200)
      assert.strictEqual(response.headers["x-switchyard-selected-model"], "weak-model")
      assert.strictEqual(response.headers["x-model-router-selected-model"], "weak-model")
      assert.strictEqual(response.headers["x-switchyard-evidence-source"], "passthrough")
      const completion = yield* Effect.flatMap(response.json, Schema.decodeUnknown(ChatCompletion, decodeOptions))
      assert.strictEqual(completion.choices[0]?.message.content, "hi from weak")
      const [seen] = yield* upstream.requests
      assert.isDefined(seen)
      assert.strictEqual(seen?.model, "weak-model")
      assert.deepStrictEqual<unknown>(seen?.body, {
        model: "weak-model",
        messages: [{ role: "user", content: "hello" }],
        vendor_field: { keep: true },
        temperature: 0.5
      })
      assert.strictEqual(seen?.headers["x-team"], "infra")
      assert.isUndefined(seen?.headers["authorization"])
    }))

  it.scopedLive("a streamed completion relays SSE chunks and ends with [DONE]", () =>
    Effect.gen(function*() {
      const { client, upstream } = yield* startServer(basicDeployment())
      yield* upstream.setBehaviour("weak-model", FakeUpstream.ok("one two three"))
      const response = yield* post(client, "/v1/chat/completions", chat("fast", { stream: true }))
      assert.strictEqual(response.status, 200)
      assert.include(response.headers["content-type"] ?? "", "text/event-stream")
      assert.strictEqual(response.headers["x-switchyard-selected-model"], "weak-model")
      assert.strictEqual(response.headers["x-model-router-selected-model"], "weak-model")
      const text = yield* response.text
      const events = text.split("\n\n").filter((e) => e.length > 0)
      assert.strictEqual(events[events.length - 1], "data: [DONE]")
      const content = events
        .slice(0, -1)
        .map((e) =>
          Schema.decodeUnknownSync(Schema.parseJson(Schema.Struct({
            choices: Schema.Array(
              Schema.Struct({ delta: Schema.Struct({ content: Schema.optional(Schema.NullOr(Schema.String)) }) })
            )
          })))(e.slice("data: ".length))
        )
        .map((chunk) => chunk.choices[0]?.delta.content ?? "")
        .join("")
      assert.strictEqual(content, "one two three")
    }))

  it.scopedLive("a chat stream from a chat upstream reaches the caller as the upstream's own bytes", () =>
    Effect.gen(function*() {
      const { client, upstream } = yield* startServer(basicDeployment())
      // Spacing and key order no encoder would produce: only forwarded bytes keep them.
      const first = `{ "id":"c1",  "object":"chat.completion.chunk","created":1,"model":"weak-model",` +
        `"choices":[{"index":0,"delta":{"role":"assistant","content":"one"},"finish_reason":null}],"x_extra":{"k":[1, 2]} }`
      const last = `{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"model":"weak-model",` +
        `"object":"chat.completion.chunk","created":1,"id":"c1"}`
      yield* upstream.setBehaviour(
        "weak-model",
        FakeUpstream.Raw.make({ body: "{}", events: [{ data: first }, { data: last }] })
      )
      const response = yield* post(client, "/v1/chat/completions", chat("fast", { stream: true }))
      assert.strictEqual(response.status, 200)
      const text = yield* response.text
      assert.strictEqual(text, `data: ${first}\n\ndata: ${last}\n\ndata: [DONE]\n\n`)
    }))

  it.scopedLive("a noop route answers OK itself, buffered and streamed", () =>
    Effect.gen(function*() {
      const { client, upstream } = yield* startServer(basicDeployment())
      const buffered = yield* post(client, "/v1/chat/completions", chat("ping"))
      assert.strictEqual(buffered.status, 200)
      assert.strictEqual(buffered.headers["x-switchyard-evidence-source"], "noop")
      const completion = yield* Effect.flatMap(buffered.json, Schema.decodeUnknown(ChatCompletion, decodeOptions))
      assert.strictEqual(completion.choices[0]?.message.content, "OK")
      const streamed = yield* post(client, "/v1/chat/completions", chat("ping", { stream: true }))
      assert.isTrue((yield* streamed.text).endsWith("data: [DONE]\n\n"))
      assert.strictEqual((yield* upstream.requests).length, 0)
    }))

  it.scopedLive("a 5xx-forever target falls back to the next target", () =>
    Effect.gen(function*() {
      const { client, upstream } = yield* startServer(basicDeployment({ maxRetries: 1 }))
      yield* upstream.setBehaviour("weak-model", FakeUpstream.status(503, { message: "overloaded" }))
      yield* upstream.setBehaviour("strong-model", FakeUpstream.ok("strong answered"))
      const response = yield* post(client, "/v1/chat/completions", chat("mix"))
      assert.strictEqual(response.status, 200)
      assert.strictEqual(response.headers["x-switchyard-selected-model"], "strong-model")
      const models = (yield* upstream.requests).map((r) => r.model)
      assert.deepStrictEqual(models, ["weak-model", "weak-model", "strong-model"])
    }))

  it.scopedLive("an upstream 400 is relayed with the upstream's message and no fallback", () =>
    Effect.gen(function*() {
      const { client, upstream } = yield* startServer(basicDeployment({ maxRetries: 2 }))
      yield* upstream.setBehaviour("weak-model", FakeUpstream.status(400, { message: "temperature is out of range" }))
      const response = yield* post(client, "/v1/chat/completions", chat("mix"))
      const message = yield* assertEnvelope(response, 400, "upstream_error", "upstream_error")
      assert.strictEqual(message, "temperature is out of range")
      assert.deepStrictEqual((yield* upstream.requests).map((r) => r.model), ["weak-model"])
    }))

  it.scopedLive("a 400 context-window error falls back to the other target", () =>
    Effect.gen(function*() {
      const { client, upstream } = yield* startServer(basicDeployment())
      yield* upstream.setBehaviour("weak-model", FakeUpstream.contextLengthExceeded)
      const response = yield* post(client, "/v1/chat/completions", chat("mix"))
      assert.strictEqual(response.status, 200)
      assert.strictEqual(response.headers["x-switchyard-selected-model"], "strong-model")
    }))

  it.scopedLive("all candidates answering 503 gives 503 with the upstream's message", () =>
    Effect.gen(function*() {
      const { client, upstream } = yield* startServer(basicDeployment())
      yield* upstream.setBehaviour("weak-model", FakeUpstream.status(503, { message: "weak down" }))
      yield* upstream.setBehaviour("strong-model", FakeUpstream.status(503, { message: "strong down" }))
      const response = yield* post(client, "/v1/chat/completions", chat("mix"))
      assert.strictEqual(yield* assertEnvelope(response, 503, "upstream_error", "upstream_error"), "strong down")
    }))

  it.scopedLive("a caller that disconnects mid-stream makes the upstream see its connection closed", () =>
    Effect.gen(function*() {
      const { upstream, url } = yield* startServer(basicDeployment())
      yield* upstream.setBehaviour(
        "weak-model",
        FakeUpstream.Chunks.make({
          chunks: Array.from(
            { length: 50 },
            (_, i) =>
              JSON.stringify({ id: "c", model: "weak-model", choices: [{ index: 0, delta: { content: `${i} ` } }] })
          ),
          gapMs: 40
        })
      )
      const controller = new AbortController()
      const firstBytes = yield* Effect.promise(async () => {
        const response = await fetch(`${url}/v1/chat/completions`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify(chat("fast", { stream: true })),
          signal: controller.signal
        })
        const reader = response.body?.getReader()
        const first = await reader?.read()
        controller.abort()
        return first?.value?.length ?? 0
      })
      assert.isAbove(firstBytes, 0)
      const closed = yield* upstream.awaitClosed("weak-model").pipe(Effect.timeout("5 seconds"))
      assert.isTrue(closed.closedEarly)
    }))
})

describe("error table", () => {
  it.scopedLive("a body that is not JSON is a 400", () =>
    Effect.gen(function*() {
      const { client } = yield* startServer(basicDeployment())
      const response = yield* client.execute(
        HttpClientRequest.post("/v1/chat/completions").pipe(HttpClientRequest.bodyText("{not json", "application/json"))
      )
      const message = yield* assertEnvelope(response, 400, "invalid_request_error", "invalid_request_error")
      assert.include(message, "valid JSON")
    }))

  it.scopedLive("a schema violation is a 400 naming the field path", () =>
    Effect.gen(function*() {
      const { client } = yield* startServer(basicDeployment())
      const response = yield* post(client, "/v1/chat/completions", {
        model: "fast",
        messages: [{ role: "user", content: 7 }]
      })
      const message = yield* assertEnvelope(response, 400, "invalid_request_error", "invalid_request_error")
      assert.include(message, "messages[0]")
      const missing = yield* post(client, "/v1/chat/completions", { messages: [] })
      assert.include(yield* assertEnvelope(missing, 400, "invalid_request_error", "invalid_request_error"), "model")
    }))

  it.scopedLive("a model that names no route is a 404", () =>
    Effect.gen(function*() {
      const { client } = yield* startServer(basicDeployment())
      const response = yield* post(client, "/v1/chat/completions", chat("nope"))
      const message = yield* assertEnvelope(response, 404, "invalid_request_error", "model_not_found")
      assert.strictEqual(message, "No route registered for model nope")
    }))

  it.scopedLive("a body over 16 MiB is a 413", () =>
    Effect.gen(function*() {
      const { client } = yield* startServer(basicDeployment())
      const big = chat("fast", { padding: "x".repeat(16 * 1024 * 1024) })
      const response = yield* post(client, "/v1/chat/completions", big)
      yield* assertEnvelope(response, 413, "invalid_request_error", "request_too_large")
    }))

  it.scopedLive("a body over the limit without content-length (chunked) is a 413", () =>
    Effect.gen(function*() {
      const { url } = yield* startServer(basicDeployment(), { bodyLimit: 1024 })
      const status = yield* Effect.promise(async () => {
        const body = new ReadableStream<Uint8Array>({
          start(controller) {
            controller.enqueue(new TextEncoder().encode(JSON.stringify(chat("fast", { padding: "x".repeat(4096) }))))
            controller.close()
          }
        })
        // A streamed request body (no content-length) needs `duplex: "half"`, which RequestInit lacks.
        const init: RequestInit & { readonly duplex: "half" } = {
          method: "POST",
          headers: { "content-type": "application/json" },
          body,
          duplex: "half"
        }
        const response = await fetch(`${url}/v1/chat/completions`, init)
        return response.status
      })
      assert.strictEqual(status, 413)
    }))

  it.scopedLive("an unreachable upstream is a 502", () =>
    Effect.gen(function*() {
      const { client } = yield* startServer(basicDeployment())
      const response = yield* post(client, "/v1/chat/completions", chat("unreachable"))
      const message = yield* assertEnvelope(response, 502, "upstream_error", "upstream_error")
      assert.include(message, "gone-model")
    }))

  it.scopedLive("an undecodable 2xx body from the answer call is a 502", () =>
    Effect.gen(function*() {
      const { client, upstream } = yield* startServer(basicDeployment())
      yield* upstream.setBehaviour("weak-model", FakeUpstream.Garbage.make({ body: "<html>oops</html>" }))
      const response = yield* post(client, "/v1/chat/completions", chat("fast"))
      yield* assertEnvelope(response, 502, "upstream_error", "upstream_error")
    }))

  it.scopedLive("an unknown path is an enveloped 404", () =>
    Effect.gen(function*() {
      const { client } = yield* startServer(basicDeployment())
      const response = yield* client.execute(HttpClientRequest.get("/v2/nothing"))
      yield* assertEnvelope(response, 404, "not_found", "endpoint_not_found")
    }))
})

describe("other endpoints", () => {
  it.scopedLive("/v1/decision returns selected, fallbacks and evidence without an answer call", () =>
    Effect.gen(function*() {
      const { client, upstream } = yield* startServer(basicDeployment())
      const response = yield* post(client, "/v1/decision", { input_format: "openai_chat", request: chat("mix") })
      assert.strictEqual(response.status, 200)
      assert.deepStrictEqual<unknown>(yield* response.json, {
        selected: {
          target: "weak",
          model: "weak-model",
          llm_client: { format: "openai_chat", base_url: upstream.url },
          extra_body: { temperature: 0.5 }
        },
        fallbacks: [{
          target: "strong",
          model: "strong-model",
          llm_client: { format: "openai_chat", base_url: upstream.url },
          extra_body: {}
        }],
        evidence: { source: "random" }
      })
      assert.strictEqual((yield* upstream.requests).length, 0)
      const unknownKey = yield* post(client, "/v1/decision", {
        input_format: "openai_chat",
        request: chat("mix"),
        extra: 1
      })
      yield* assertEnvelope(unknownKey, 400, "invalid_request_error", "invalid_request_error")
    }))

  it.scopedLive("/v1/models lists the routes in id order; /health answers ok", () =>
    Effect.gen(function*() {
      const { client } = yield* startServer((url) => {
        const deployment = basicDeployment()(url)
        return {
          ...deployment,
          routes: { ...deployment.routes, ...D.byId(D.passthrough("wide", "strong", { context_window: 200_000 })) }
        }
      })
      const models = yield* Effect.flatMap(client.execute(HttpClientRequest.get("/v1/models")), (r) => r.json)
      const decoded = Schema.decodeUnknownSync(Schema.Struct({
        object: Schema.Literal("list"),
        data: Schema.Array(Schema.Struct({
          id: Schema.String,
          object: Schema.Literal("model"),
          route_type: Schema.String,
          context_length: Schema.NullOr(Schema.Number)
        }))
      }))(models)
      assert.deepStrictEqual(decoded.data.map((m) => m.id), ["fast", "mix", "ping", "unreachable", "wide"])
      assert.deepStrictEqual(decoded.data.map((m) => m.route_type), [
        "passthrough",
        "random",
        "noop",
        "passthrough",
        "passthrough"
      ])
      assert.deepStrictEqual(decoded.data.map((m) => m.context_length), [null, null, null, null, 200_000])
      const health = yield* client.execute(HttpClientRequest.get("/health"))
      assert.strictEqual(health.status, 200)
      assert.deepStrictEqual<unknown>(yield* health.json, { status: "ok", breakers: {} })
    }))

  it.scopedLive("/metrics has the request and upstream attempt series before the first request", () =>
    Effect.gen(function*() {
      const { client } = yield* startServer(basicDeployment())
      const text = yield* Effect.flatMap(client.execute(HttpClientRequest.get("/metrics")), (r) => r.text)
      assert.match(text, /switchyard_requests_total\{[^}]*model="strong-model"[^}]*\} \d/)
      assert.match(text, /switchyard_errors_total\{[^}]*model="ping"[^}]*\} \d/)
      assert.match(text, /switchyard_upstream_attempts_total\{[^}]*code="none"[^}]*\} \d/)
      assert.match(text, /switchyard_router_retry_recovered_total\{[^}]*\} \d/)
    }))

  it.scopedLive("/metrics exposes request, error and upstream attempt counters as Prometheus text", () =>
    Effect.gen(function*() {
      const { client, upstream } = yield* startServer(basicDeployment())
      yield* upstream.setBehaviour("weak-model", FakeUpstream.ok("fine"))
      yield* post(client, "/v1/chat/completions", chat("fast"))
      yield* post(client, "/v1/chat/completions", chat("unreachable"))
      const response = yield* client.execute(HttpClientRequest.get("/metrics"))
      assert.strictEqual(response.status, 200)
      assert.include(response.headers["content-type"] ?? "", "text/plain")
      const text = yield* response.text
      assert.include(text, "# TYPE switchyard_requests_total counter")
      assert.match(text, /switchyard_requests_total\{[^}]*model="weak-model"[^}]*\} [1-9]/)
      assert.match(text, /switchyard_errors_total\{[^}]*model="gone-model"[^}]*\} [1-9]/)
      assert.include(text, "# TYPE switchyard_upstream_attempts_total counter")
      assert.match(text, /switchyard_upstream_attempts_total\{[^}]*code="200"[^}]*\} [1-9]/)
    }))
})
