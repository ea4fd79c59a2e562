/**
 * How the server reads requests at its edge, alike on every endpoint: `HEAD /health`, absolute-form
 * request targets, bodies over the limit (a complete 413 in the endpoint's envelope while the
 * caller is still sending, never a reset), and the `[server]` connection timeouts.
 *
 * Real sockets (a real server on loopback in front of the fake upstream), so `it.scopedLive`.
 */
import { assert, describe, it } from "@effect/vitest"
import * as ServerTable from "@switchyard-ts/config/ServerTable"
import * as Server from "@switchyard-ts/server/Server"
import type * as D from "@switchyard-ts/testkit/DeploymentBuilder"
import * as Effect from "effect/Effect"
import * as Http from "node:http"
import * as Net from "node:net"
import { basicDeployment, chat, type RawReply, readReply, startServer } from "./harness.js"

type Reply = RawReply

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
    }, (response) => readReply(response).then(resolve, reject))
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

/** A response read off a raw socket: complete once its head and `content-length` bytes arrived. */
const completeResponse = (bytes: Buffer): Reply | undefined => {
  const end = bytes.indexOf("\r\n\r\n")
  if (end === -1) return undefined
  const [statusLine = "", ...lines] = bytes.subarray(0, end).toString("latin1").split("\r\n")
  const headers: Record<string, string> = {}
  for (const line of lines) {
    const colon = line.indexOf(":")
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim()
  }
  const length = Number(headers["content-length"] ?? Number.NaN)
  const body = bytes.subarray(end + 4)
  if (!Number.isInteger(length) || body.length < length) return undefined
  return { status: Number(statusLine.split(" ")[1]), headers, body: body.subarray(0, length).toString("utf8") }
}

/**
 * POSTs `declared` body bytes to `path` on a raw socket with `connection: close` (`chunked`: as
 * chunks, with no `content-length`), sending them as fast as the socket takes them whatever it
 * reads meanwhile, then half-closes. Resolves with the response once the server closed the
 * connection; rejects on any socket error (a reset, or a write into a reset connection) or when
 * the connection closed without a complete response.
 */
const sendOversized = (url: string, path: string, declared: number, chunked: boolean): Promise<Reply> =>
  new Promise((resolve, reject) => {
    const { hostname, port } = new URL(url)
    const socket = Net.connect(Number(port), hostname)
    const data = Buffer.alloc(64 * 1024, "x")
    const chunk = chunked
      ? Buffer.concat([Buffer.from(`${data.length.toString(16)}\r\n`), data, Buffer.from("\r\n")])
      : data
    let received = Buffer.alloc(0)
    let sent = 0
    let failed = false
    const pump = () => {
      while (sent < declared) {
        sent += data.length
        if (!socket.write(chunk)) {
          socket.once("drain", pump)
          return
        }
      }
      if (chunked) socket.end("0\r\n\r\n")
      else socket.end()
    }
    socket.on("data", (bytes: Buffer) => {
      received = Buffer.concat([received, bytes])
    })
    socket.on("error", (error) => {
      failed = true
      reject(new Error(`${error.message} after ${sent} bytes sent, ${received.length} received`))
    })
    socket.on("close", () => {
      const reply = completeResponse(received)
      if (failed) return
      if (reply === undefined) reject(new Error(`closed before a complete response (${received.length} bytes)`))
      else resolve(reply)
    })
    socket.on("connect", () => {
      socket.write(
        `POST ${path} HTTP/1.1\r\nhost: ${hostname}:${port}\r\nconnection: close\r\n` +
          `content-type: application/json\r\n` +
          (chunked ? "transfer-encoding: chunked\r\n\r\n" : `content-length: ${declared}\r\n\r\n`)
      )
      pump()
    })
  })

describe("bodies over the limit", () => {
  const limit = 64 * 1024
  const cases = [
    ["/v1/decision", false],
    ["/v1/chat/completions", false],
    ["/v1/decision", true],
    ["/v1/chat/completions", true]
  ] as const
  for (const [path, chunked] of cases) {
    const how = chunked ? "chunked" : "with content-length"
    it.scopedLive(
      `${path} (${how}): a caller still sending reads a complete 413, never a reset, 20 times in a row`,
      () =>
        Effect.gen(function*() {
          const { url } = yield* startServer(basicDeployment(), { bodyLimit: limit })
          for (let i = 0; i < 20; i++) {
            const reply = yield* Effect.promise(() => sendOversized(url, path, 64 * limit, chunked))
            assert.strictEqual(reply.status, 413)
            assert.deepStrictEqual(JSON.parse(reply.body), {
              error: {
                message: `request body exceeds the limit of ${limit} bytes`,
                type: "invalid_request_error",
                code: "request_too_large"
              }
            })
          }
          const health = yield* Effect.promise(() => request(url, "GET", "/health"))
          assert.strictEqual(health.status, 200)
        }),
      { timeout: 60_000 }
    )
  }
})

describe("connection timeouts", () => {
  it("the [server] timeouts are the Node server's, Node's own by default", () => {
    const server = Server.createNodeServer(undefined, {
      keepAliveTimeoutMs: 1_234,
      headersTimeoutMs: 2_345,
      requestTimeoutMs: 3_456
    })
    assert.deepStrictEqual(
      [server.keepAliveTimeout, server.headersTimeout, server.requestTimeout],
      [1_234, 2_345, 3_456]
    )
    const byDefault = Server.createNodeServer()
    assert.deepStrictEqual(
      [byDefault.keepAliveTimeout, byDefault.headersTimeout, byDefault.requestTimeout],
      [5_000, 60_000, 300_000]
    )
    assert.strictEqual(byDefault.keepAliveTimeout, ServerTable.defaultTimeouts.keepAliveTimeoutMs)
  })

  it.scopedLive(
    "an idle keep-alive connection is closed after keep_alive_timeout_ms (plus Node's 1 s margin)",
    () =>
      Effect.gen(function*() {
        const { url } = yield* startServer((upstreamUrl) => ({
          ...basicDeployment()(upstreamUrl),
          server: { keep_alive_timeout_ms: 100 } satisfies D.Server
        }))
        const { hostname, port } = new URL(url)
        const outcome = yield* Effect.promise(() =>
          new Promise<{ readonly reply: string; readonly idleMs: number }>((resolve) => {
            const socket = Net.connect(Number(port), hostname)
            let reply = ""
            let answeredAt = 0
            socket.on("data", (bytes: Buffer) => {
              reply += bytes.toString("latin1")
              answeredAt = Date.now()
            })
            socket.on("close", () => resolve({ reply, idleMs: Date.now() - answeredAt }))
            socket.on("connect", () => socket.write(`GET /health HTTP/1.1\r\nhost: ${hostname}:${port}\r\n\r\n`))
          })
        )
        assert.isTrue(outcome.reply.startsWith("HTTP/1.1 200"), outcome.reply.slice(0, 100))
        assert.include(outcome.reply.toLowerCase(), "keep-alive")
        // closed by the server, well before Node's default 5 s
        assert.isAtLeast(outcome.idleMs, 100)
        assert.isBelow(outcome.idleMs, 4_000)
      }),
    { timeout: 20_000 }
  )
})
