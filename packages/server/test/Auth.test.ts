/**
 * Inbound auth (`[server] api_keys_env`, `metrics_auth`) on the real server: every protected
 * endpoint × key present / missing / wrong / in the wrong header, in the caller's envelope (OpenAI
 * or Anthropic), the `switchyard_auth_requests_total` counts, `/health` always open, `/metrics`
 * open unless `metrics_auth`, and no inbound key upstream, in a log line, a span or a body.
 */
import type * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import { assert, describe, it } from "@effect/vitest"
import { InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base"
import * as Telemetry from "@switchyard-ts/server/Telemetry"
import * as D from "@switchyard-ts/testkit/DeploymentBuilder"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Logger from "effect/Logger"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import { chatAndClaude, spansText, startServer } from "./harness.js"

const keyA = "sk-router-A-SECRET-0123456789"
const keyB = "sk-router-B-SECRET-9876543210"
const wrongKey = "sk-router-WRONG-000000000000"

const withKeys = Effect.withConfigProvider(
  ConfigProvider.fromMap(new Map([["SWITCHYARD_AUTH_A", keyA], ["SWITCHYARD_AUTH_B", keyB]]))
)

const deployment = (server: D.Server) => (upstreamUrl: string): D.Deployment =>
  D.extend(chatAndClaude(upstreamUrl), { server })

const protectedDeployment = deployment({ api_keys_env: ["SWITCHYARD_AUTH_A", "SWITCHYARD_AUTH_B"] })

type Envelope = "openai" | "anthropic"

interface Endpoint {
  readonly method: "GET" | "POST"
  readonly path: string
  readonly body?: unknown
  readonly envelope: Envelope
}

const messages = [{ role: "user", content: "hello" }]

/** Every endpoint inbound auth protects, with a body it answers 200 to. */
const endpoints: ReadonlyArray<Endpoint> = [
  { method: "POST", path: "/v1/chat/completions", body: { model: "fast", messages }, envelope: "openai" },
  {
    method: "POST",
    path: "/v1/chat/completions",
    body: { model: "fast", messages, stream: true },
    envelope: "openai"
  },
  { method: "POST", path: "/v1/responses", body: { model: "fast", input: "hello" }, envelope: "openai" },
  {
    method: "POST",
    path: "/v1/messages",
    body: { model: "fast", max_tokens: 16, messages },
    envelope: "anthropic"
  },
  {
    method: "POST",
    path: "/v1/messages/count_tokens",
    body: { model: "claude", messages },
    envelope: "anthropic"
  },
  {
    method: "POST",
    path: "/v1/decision",
    body: { input_format: "openai_chat", request: { model: "fast", messages } },
    envelope: "openai"
  },
  { method: "GET", path: "/v1/models", envelope: "openai" },
  { method: "GET", path: "/v1/stats", envelope: "openai" },
  { method: "POST", path: "/v1/stats/reset", envelope: "openai" }
]

const send = (
  client: HttpClient.HttpClient,
  endpoint: Pick<Endpoint, "method" | "path" | "body">,
  headers: Readonly<Record<string, string>>
) => {
  const base = endpoint.method === "GET" ? HttpClientRequest.get(endpoint.path) : HttpClientRequest.post(endpoint.path)
  const request = endpoint.body === undefined ? base : HttpClientRequest.bodyUnsafeJson(base, endpoint.body)
  return Effect.flatMap(
    client.execute(HttpClientRequest.setHeaders(request, headers)),
    (response) => Effect.map(response.text, (text) => ({ status: response.status, text }))
  )
}

const parse = (text: string): unknown => JSON.parse(text)

/** Asserts a 401 in `envelope` whose message says `missing` or `invalid`. */
const assertRefused = (
  reply: { readonly status: number; readonly text: string },
  envelope: Envelope,
  reason: "missing" | "invalid",
  label: string
) => {
  assert.strictEqual(reply.status, 401, `${label}: ${reply.text}`)
  const body = parse(reply.text)
  const expected = reason === "missing"
    ? "missing API key: send it as Authorization: Bearer <key> or x-api-key: <key>"
    : "invalid API key"
  if (envelope === "openai") {
    assert.deepStrictEqual(body, {
      error: { message: expected, type: "invalid_request_error", code: "invalid_api_key" }
    })
  } else {
    assert.deepStrictEqual(body, { type: "error", error: { type: "authentication_error", message: expected } })
  }
}

/** The value of one series of the exposition (labels as a subset), 0 when absent. */
const sample = (text: string, name: string, labels: Readonly<Record<string, string>>): number => {
  for (const line of text.split("\n")) {
    if (!line.startsWith(`${name}{`)) continue
    if (Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) {
      return Number(line.slice(line.lastIndexOf(" ") + 1))
    }
  }
  return 0
}

const outcomes = (text: string) => ({
  ok: sample(text, "switchyard_auth_requests_total", { outcome: "ok" }),
  missing: sample(text, "switchyard_auth_requests_total", { outcome: "missing" }),
  invalid: sample(text, "switchyard_auth_requests_total", { outcome: "invalid" })
})

/** Credentials that do not authenticate, and the reason each is refused with. */
const refusedCredentials: ReadonlyArray<{
  readonly label: string
  readonly headers: Readonly<Record<string, string>>
  readonly reason: "missing" | "invalid"
}> = [
  { label: "no key", headers: {}, reason: "missing" },
  { label: "wrong bearer", headers: { authorization: `Bearer ${wrongKey}` }, reason: "invalid" },
  { label: "wrong x-api-key", headers: { "x-api-key": wrongKey }, reason: "invalid" },
  { label: "key without Bearer", headers: { authorization: keyA }, reason: "missing" },
  { label: "key as Basic", headers: { authorization: `Basic ${keyA}` }, reason: "missing" },
  { label: "key in api-key", headers: { "api-key": keyA }, reason: "missing" },
  { label: "key as x-api-key Bearer", headers: { "x-api-key": `Bearer ${keyA}` }, reason: "invalid" },
  { label: "key with a suffix", headers: { authorization: `Bearer ${keyA}x` }, reason: "invalid" },
  { label: "empty bearer", headers: { authorization: "Bearer " }, reason: "missing" }
]

/** Credentials that authenticate. */
const acceptedCredentials: ReadonlyArray<Readonly<Record<string, string>>> = [
  { authorization: `Bearer ${keyA}` },
  { authorization: `bearer ${keyB}` },
  { "x-api-key": keyA },
  { "x-api-key": keyB },
  // one valid credential is enough
  { authorization: `Bearer ${wrongKey}`, "x-api-key": keyA }
]

describe("inbound auth", () => {
  it.scopedLive("every protected endpoint × credential: 401 in the caller's envelope, or served", () =>
    Effect.gen(function*() {
      const { client, upstream } = yield* withKeys(startServer(protectedDeployment))
      for (const endpoint of endpoints) {
        const label = `${endpoint.method} ${endpoint.path}${
          Predicate.isRecord(endpoint.body) && endpoint.body["stream"] === true ? " (stream)" : ""
        }`
        for (const credential of refusedCredentials) {
          assertRefused(
            yield* send(client, endpoint, credential.headers),
            endpoint.envelope,
            credential.reason,
            `${label}, ${credential.label}`
          )
        }
        for (const headers of acceptedCredentials) {
          const reply = yield* send(client, endpoint, headers)
          assert.strictEqual(reply.status, 200, `${label} with ${Object.keys(headers).join("+")}: ${reply.text}`)
        }
      }
      // The upstream was called only for served requests, and never saw an inbound key.
      const seen = yield* upstream.requests
      const upstreamCalls = endpoints.filter((e) =>
        !["/v1/decision", "/v1/models", "/v1/stats", "/v1/stats/reset"].includes(e.path)
      ).length
      assert.strictEqual(seen.length, upstreamCalls * acceptedCredentials.length)
      const everything = JSON.stringify(seen)
      for (const key of [keyA, keyB, wrongKey]) assert.notInclude(everything, key)
      for (const record of seen) {
        assert.isUndefined(record.headers["authorization"])
        assert.isUndefined(record.headers["x-api-key"])
      }
    }))

  it.scopedLive("a refused request is answered before its body is decoded or routed", () =>
    Effect.gen(function*() {
      const { client, upstream } = yield* withKeys(startServer(protectedDeployment))
      const reply = yield* send(
        client,
        { method: "POST", path: "/v1/chat/completions", body: { model: "no-such-route" } },
        {}
      )
      // an authenticated caller would get 400 for this body; the caller without a key learns nothing
      assertRefused(reply, "openai", "missing", "invalid body without key")
      assert.strictEqual((yield* upstream.requests).length, 0)
    }))

  it.scopedLive("/health stays open; /metrics is open without metrics_auth", () =>
    Effect.gen(function*() {
      const { client } = yield* withKeys(startServer(protectedDeployment))
      const health = yield* send(client, { method: "GET", path: "/health" }, {})
      assert.strictEqual(health.status, 200)
      const metrics = yield* send(client, { method: "GET", path: "/metrics" }, {})
      assert.strictEqual(metrics.status, 200)
      assert.include(metrics.text, "switchyard_auth_requests_total")
      // an unknown path is the usual 404, key or not
      const unknown = yield* send(client, { method: "GET", path: "/v1/nope" }, {})
      assert.strictEqual(unknown.status, 404)
    }))

  it.scopedLive("metrics_auth = true protects /metrics with the same keys (OpenAI envelope)", () =>
    Effect.gen(function*() {
      const { client } = yield* withKeys(
        startServer(deployment({ api_keys_env: ["SWITCHYARD_AUTH_A", "SWITCHYARD_AUTH_B"], metrics_auth: true }))
      )
      const scrape = { method: "GET", path: "/metrics" } as const
      assertRefused(yield* send(client, scrape, {}), "openai", "missing", "/metrics without key")
      assertRefused(
        yield* send(client, scrape, { authorization: `Bearer ${wrongKey}` }),
        "openai",
        "invalid",
        "/metrics wrong key"
      )
      const ok = yield* send(client, scrape, { authorization: `Bearer ${keyB}` })
      assert.strictEqual(ok.status, 200)
      assert.include(ok.text, "switchyard_build_info")
      assert.strictEqual((yield* send(client, { method: "GET", path: "/health" }, {})).status, 200)
    }))

  it.scopedLive("switchyard_auth_requests_total counts each check by outcome", () =>
    Effect.gen(function*() {
      const { client } = yield* withKeys(startServer(protectedDeployment))
      const scrape = Effect.map(send(client, { method: "GET", path: "/metrics" }, {}), (reply) => reply.text)
      const before = outcomes(yield* scrape)
      const chat = endpoints[0]
      assert.isDefined(chat)
      if (chat === undefined) return
      for (let i = 0; i < 3; i++) yield* send(client, chat, { authorization: `Bearer ${keyA}` })
      for (let i = 0; i < 2; i++) yield* send(client, chat, {})
      yield* send(client, chat, { "x-api-key": wrongKey })
      yield* send(client, { method: "GET", path: "/v1/models" }, { "x-api-key": keyB })
      const after = outcomes(yield* scrape)
      assert.deepStrictEqual(
        { ok: after.ok - before.ok, missing: after.missing - before.missing, invalid: after.invalid - before.invalid },
        { ok: 4, missing: 2, invalid: 1 }
      )
    }))

  it.scopedLive("without [server] keys nothing changes: every endpoint is open", () =>
    Effect.gen(function*() {
      const { client } = yield* startServer(deployment({}))
      for (const endpoint of endpoints) {
        const reply = yield* send(client, endpoint, {})
        assert.strictEqual(reply.status, 200, `${endpoint.path}: ${reply.text}`)
      }
    }))

  it.scopedLive("no inbound key, valid or not, reaches a log line, a span or a response body", () =>
    Effect.gen(function*() {
      const exporter = new InMemorySpanExporter()
      const logs: Array<string> = []
      const capture = Logger.make(({ annotations, message }) => {
        logs.push(JSON.stringify({ message, annotations: [...annotations] }))
      })
      const { client } = yield* withKeys(
        startServer(
          protectedDeployment,
          { telemetry: Telemetry.layerWith({ spanProcessor: new SimpleSpanProcessor(exporter) }) },
          Option.some(capture)
        )
      )
      const bodies: Array<string> = []
      for (const endpoint of endpoints) {
        for (const headers of [...acceptedCredentials, ...refusedCredentials.map((c) => c.headers)]) {
          bodies.push((yield* send(client, endpoint, headers)).text)
        }
      }
      assert.isTrue(logs.some((line) => line.includes("request")), "request lines were logged")
      assert.isAbove(exporter.getFinishedSpans().length, 0)
      const spans = spansText(exporter)
      for (const haystack of [bodies.join("\n"), logs.join("\n"), spans]) {
        for (const key of [keyA, keyB, wrongKey]) assert.notInclude(haystack, key)
      }
    }))
})
