/**
 * Circuit breakers shared by replicas through Redis (`[sessions] store = "redis"`), with two
 * `switchyard` processes and a redis-server of the test's own (so that it can be killed mid-run),
 * in real time. The upstream is a plain HTTP server that counts its TCP connections and requests.
 * Skipped like the other Redis tests (see RedisSessionStore.test.ts) when there is no Redis and
 * none is required.
 */
import { assert, describe, it } from "@effect/vitest"
import * as D from "@switchyard-ts/testkit/DeploymentBuilder"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { mkdtempSync, writeFileSync } from "node:fs"
import { createServer } from "node:http"
import { tmpdir } from "node:os"
import * as path from "node:path"
import { listening, printed, type Run, run } from "./cliProcess.js"
import { closedPort, ownRedis, pingUntilUp, redisUrl, skipWithoutRedis, unique } from "./redis.js"

/** What the counting upstream does with a request: reset its connection, or answer after `delayMs`. */
type Mode = { readonly _tag: "dead" } | { readonly _tag: "ok"; readonly delayMs: number }

/** An upstream on 127.0.0.1 counting TCP connections and requests; its `mode` is set by the test. */
const countingUpstream = Effect.acquireRelease(
  Effect.async<{
    readonly url: string
    readonly counts: () => { readonly connections: number; readonly requests: number }
    readonly setMode: (mode: Mode) => void
    readonly close: () => void
  }>((resume) => {
    let connections = 0
    let requests = 0
    let mode: Mode = { _tag: "dead" }
    const server = createServer((req, res) => {
      requests++
      req.resume()
      if (mode._tag === "dead") {
        req.socket.destroy()
        return
      }
      const body = JSON.stringify({
        id: "chatcmpl-1",
        object: "chat.completion",
        created: 1,
        model: "flaky-model",
        choices: [{ index: 0, message: { role: "assistant", content: "recovered" }, finish_reason: "stop" }],
        usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 }
      })
      setTimeout(() => res.writeHead(200, { "content-type": "application/json" }).end(body), mode.delayMs)
    })
    server.on("connection", () => {
      connections++
    })
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      resume(Effect.succeed({
        url: `http://127.0.0.1:${port}/v1`,
        counts: () => ({ connections, requests }),
        setMode: (next) => {
          mode = next
        },
        close: () => {
          server.closeAllConnections()
          server.close()
        }
      }))
    })
  }),
  (upstream) => Effect.sync(upstream.close)
)

const cooldownMs = 3_000

const deployment = (client: string, upstreamUrl: string, redis: string): D.Deployment => ({
  llm_clients: {
    [client]: D.client("openai_chat", upstreamUrl, {
      max_retries: 0,
      timeout_ms: 2_000,
      breaker: { failure_threshold: 2, cooldown_ms: cooldownMs }
    })
  },
  targets: { flaky: D.target("flaky-model", client) },
  routes: D.byId(D.passthrough("only", "flaky")),
  sessions: { store: "redis", url: redis, ttl_ms: 60_000 }
})

const ErrorBody = Schema.Struct({ error: Schema.Struct({ code: Schema.String, message: Schema.String }) })
const Health = Schema.Struct({ breakers: Schema.Record({ key: Schema.String, value: Schema.String }) })

/** POST a chat completion to route `only`; the status and, for an error, its code. */
const chat = (base: string) =>
  Effect.promise(() =>
    fetch(`${base}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "only", messages: [{ role: "user", content: "hi" }] })
    }).then(async (response) => {
      const text = await response.text()
      const code = response.status === 200 ? "" : Schema.decodeUnknownSync(Schema.parseJson(ErrorBody))(text).error.code
      return { status: response.status, code }
    })
  )

/** The breaker state of `client` in `/health` at `base`. */
const breakerAt = (base: string, client: string) =>
  Effect.promise(() => fetch(`${base}/health`).then((response) => response.json())).pipe(
    Effect.flatMap(Schema.decodeUnknown(Health)),
    Effect.map((health) => health.breakers[client] ?? "none"),
    Effect.orDie
  )

/** Poll `/health` at `base` until `client`'s breaker is `state` (bounded by 5 s); the wait in ms. */
const untilState = (base: string, client: string, state: string) =>
  Effect.gen(function*() {
    const start = Date.now()
    for (;;) {
      if ((yield* breakerAt(base, client)) === state) return Date.now() - start
      if (Date.now() - start > 5_000) return yield* Effect.dieMessage(`${client} on ${base} never became ${state}`)
      yield* Effect.sleep("20 millis")
    }
  })

/** `switchyard_session_store_errors_total{operation="breaker"}` on the `/metrics` of `base`. */
const breakerErrors = (base: string) =>
  Effect.map(Effect.promise(() => fetch(`${base}/metrics`).then((response) => response.text())), (text) => {
    const line = text.split("\n").find((l) =>
      l.startsWith("switchyard_session_store_errors_total{operation=\"breaker\"")
    )
    return line === undefined ? -1 : Number(line.slice(line.lastIndexOf(" ") + 1))
  })

const linesOf = (cli: Run, marker: string) => cli.stdout().split("\n").filter((line) => line.includes(marker))

const outageStarts = "circuit breakers: Redis unavailable"
const outageEnds = "circuit breakers: Redis answers again"

describe.skipIf(skipWithoutRedis)("circuit breakers shared by two server processes through Redis", () => {
  it.scopedLive(
    "an opening on A refuses B's calls within 1 s without a connection; one probe closes it for both; with Redis gone each replica's breaker is its own",
    () =>
      Effect.gen(function*() {
        yield* redisUrl // CI's redis-server is on PATH; this test runs its own, to kill it mid-run
        const port = yield* closedPort
        const dir = mkdtempSync(path.join(tmpdir(), "switchyard-redis-own-"))
        const redis = yield* ownRedis(port, dir)
        yield* pingUntilUp(port)
        const upstream = yield* countingUpstream
        const client = unique("flaky").replace(/-/g, "_")
        const file = path.join(mkdtempSync(path.join(tmpdir(), "switchyard-breakers-")), "routes.toml")
        writeFileSync(file, D.toToml(deployment(client, upstream.url, `redis://127.0.0.1:${port}`)))
        const a = yield* run(["--config", file, "--port", "0"])
        const b = yield* run(["--config", file, "--port", "0"])
        const urlA = yield* listening(a)
        const urlB = yield* listening(b)
        // the series exists from the start (a command timed out on a loaded machine may already count)
        assert.isAtLeast(yield* breakerErrors(urlA), 0)

        // A: two failed calls to the dead upstream open A's breaker; A's next call is refused.
        assert.deepStrictEqual(yield* chat(urlA), { status: 502, code: "upstream_error" })
        assert.deepStrictEqual(yield* chat(urlA), { status: 502, code: "upstream_error" })
        const openedAt = Date.now()
        assert.deepStrictEqual(upstream.counts(), { connections: 2, requests: 2 })
        assert.deepStrictEqual(yield* chat(urlA), { status: 503, code: "upstream_unavailable" })

        // B learns of it within 1 s, and refuses its next call without contacting the upstream.
        yield* untilState(urlB, client, "open")
        const propagated = Date.now() - openedAt
        assert.isBelow(propagated, 1_000, `B saw the opening after ${propagated} ms`)
        assert.deepStrictEqual(yield* chat(urlB), { status: 503, code: "upstream_unavailable" })
        assert.deepStrictEqual(upstream.counts(), { connections: 2, requests: 2 })

        // After the cooldown the upstream is back (slow: 500 ms). A call on each replica at once:
        // one of them is the probe, the other is refused (the lease is taken); nothing else goes out.
        yield* Effect.sleep(Math.max(0, openedAt + cooldownMs + 100 - Date.now()))
        upstream.setMode({ _tag: "ok", delayMs: 500 })
        const both = yield* Effect.all([chat(urlA), chat(urlB)], { concurrency: "unbounded" })
        assert.deepStrictEqual(both.map((r) => r.status).sort(), [200, 503])
        assert.strictEqual(upstream.counts().requests, 3)
        const closedAt = Date.now()
        yield* untilState(urlA, client, "closed")
        yield* untilState(urlB, client, "closed")
        assert.isBelow(Date.now() - closedAt, 1_000)
        upstream.setMode({ _tag: "ok", delayMs: 0 })
        assert.deepStrictEqual(yield* chat(urlA), { status: 200, code: "" })
        assert.deepStrictEqual(yield* chat(urlB), { status: 200, code: "" })
        assert.strictEqual(upstream.counts().requests, 5)

        // Redis killed: calls are not held up, and each replica's breaker is its own.
        const errorsBefore = yield* breakerErrors(urlA)
        const startsBefore = { a: linesOf(a, outageStarts).length, b: linesOf(b, outageStarts).length }
        const endsBefore = { a: linesOf(a, outageEnds).length, b: linesOf(b, outageEnds).length }
        yield* redis.stop
        upstream.setMode({ _tag: "dead" })
        const started = Date.now()
        assert.deepStrictEqual(yield* chat(urlB), { status: 502, code: "upstream_error" })
        assert.isBelow(Date.now() - started, 1_000)
        assert.deepStrictEqual(yield* chat(urlB), { status: 502, code: "upstream_error" })
        assert.deepStrictEqual(yield* chat(urlB), { status: 503, code: "upstream_unavailable" })
        assert.strictEqual(upstream.counts().requests, 7)
        // A's breaker never heard of B's opening: A's call goes out (and counts one failure of A's own)
        assert.deepStrictEqual(yield* chat(urlA), { status: 502, code: "upstream_error" })
        assert.strictEqual(upstream.counts().requests, 8)
        assert.strictEqual(yield* breakerAt(urlA, client), "closed")
        // Each round of A's sync fails (four a second), each counted; the outage is logged once.
        for (let i = 0; i < 100 && (yield* breakerErrors(urlA)) < errorsBefore + 6; i++) {
          yield* Effect.sleep("50 millis")
        }
        assert.isAtLeast(yield* breakerErrors(urlA), errorsBefore + 6)
        assert.lengthOf(linesOf(a, outageStarts), startsBefore.a + 1)
        assert.lengthOf(linesOf(b, outageStarts), startsBefore.b + 1)
        assert.include(linesOf(a, outageStarts)[startsBefore.a], "level=WARN")

        // Redis back (a fresh, empty one): one INFO each; B's opening, made meanwhile, reaches A.
        yield* ownRedis(port, dir)
        yield* pingUntilUp(port)
        yield* printed(a, outageEnds, endsBefore.a + 1)
        yield* printed(b, outageEnds, endsBefore.b + 1)
        yield* untilState(urlA, client, "open")
        assert.lengthOf(linesOf(a, outageEnds), endsBefore.a + 1)
        assert.include(linesOf(a, outageEnds)[endsBefore.a], "level=INFO")
        assert.lengthOf(linesOf(a, outageStarts), startsBefore.a + 1)
        assert.lengthOf(linesOf(b, outageStarts), startsBefore.b + 1)
        assert.strictEqual(upstream.counts().requests, 8)

        // Both stop cleanly (the sync stops, then the connection's QUIT, bounded).
        a.child.kill("SIGTERM")
        b.child.kill("SIGTERM")
        assert.strictEqual(yield* a.exited.pipe(Effect.timeout("10 seconds")), 0)
        assert.strictEqual(yield* b.exited.pipe(Effect.timeout("10 seconds")), 0)
      }),
    60_000
  )
})
