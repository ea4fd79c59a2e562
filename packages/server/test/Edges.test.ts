/**
 * How the server reads requests at its edge, alike on every endpoint: `HEAD /health`, absolute-form
 * request targets, and bodies over the limit (a complete 413 in the endpoint's envelope while the
 * caller is still sending, never a reset).
 *
 * Real sockets (a real server on loopback in front of the fake upstream), so `it.scopedLive`.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Http from "node:http"
import { basicDeployment, chat, startServer } from "./harness.js"

interface Reply {
  readonly status: number
  readonly headers: Http.IncomingHttpHeaders
  readonly body: string
}

/** One request with a raw request target (`path` may be absolute-form) on a fresh connection. */
const request = (url: string, method: string, path: string, body?: unknown): Promise<Reply> =>
  new Promise((resolve, reject) => {
    const { hostname, port } = new URL(url)
    const text = body === undefined ? undefined : JSON.stringify(body)
    const outgoing = Http.request({
      hostname,
      port,
      method,
      path,
      agent: false,
      headers: text === undefined ? {} : { "content-type": "application/json" }
    }, (response) => {
      const chunks: Array<Buffer> = []
      response.on("data", (chunk: Buffer) => chunks.push(chunk))
      response.on("end", () =>
        resolve({
          status: response.statusCode ?? 0,
          headers: response.headers,
          body: Buffer.concat(chunks).toString("utf8")
        }))
      response.on("error", reject)
    })
    outgoing.on("error", reject)
    outgoing.end(text)
  })

describe("request targets", () => {
  it.scopedLive("HEAD /health answers as GET /health does, without a body", () =>
    Effect.gen(function*() {
      const { url } = yield* startServer(basicDeployment())
      const get = yield* Effect.promise(() => request(url, "GET", "/health"))
      const head = yield* Effect.promise(() => request(url, "HEAD", "/health"))
      assert.strictEqual(get.status, 200)
      assert.deepStrictEqual(JSON.parse(get.body), { status: "ok", breakers: {} })
      assert.strictEqual(head.status, 200)
      assert.strictEqual(head.body, "")
      assert.strictEqual(head.headers["content-type"], get.headers["content-type"])
    }))

  it.scopedLive("an absolute-form target is served at its path on every endpoint", () =>
    Effect.gen(function*() {
      const { url } = yield* startServer(basicDeployment())
      const chatReply = yield* Effect.promise(() =>
        request(url, "POST", `${url}/v1/chat/completions?beta=true`, chat("fast"))
      )
      assert.strictEqual(chatReply.status, 200)
      assert.strictEqual(JSON.parse(chatReply.body).object, "chat.completion")
      const decision = yield* Effect.promise(() =>
        request(url, "POST", "http://elsewhere.example/v1/decision", {
          input_format: "openai_chat",
          request: chat("fast")
        })
      )
      assert.strictEqual(decision.status, 200)
      assert.strictEqual(JSON.parse(decision.body).selected.target, "weak")
      const health = yield* Effect.promise(() => request(url, "GET", `${url}/health`))
      assert.strictEqual(health.status, 200)
      const unknown = yield* Effect.promise(() => request(url, "POST", `${url}/v2/chat/completions`, chat("fast")))
      assert.strictEqual(unknown.status, 404)
      assert.strictEqual(JSON.parse(unknown.body).error.code, "endpoint_not_found")
    }))
})
