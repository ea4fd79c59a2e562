/**
 * The Redis session store against a real `redis-server` (docs/routes.md), in real time.
 *
 * The server's URL comes from `SWITCHYARD_TEST_REDIS_URL`: `.ci/run` sets it after starting a
 * throwaway redis-server, and the server project's global setup (vitest.redis.ts) starts one when
 * `redis-server` is on the PATH. On a machine with neither, these tests are skipped with one line
 * saying so, unless `SWITCHYARD_REQUIRE_REDIS=1` (`.ci/run` sets it): then they run and fail with
 * instructions, so CI never skips them. Every key a test writes carries this run's unique suffix
 * and is deleted afterwards; nothing global is flushed.
 */
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import { assert, describe, it } from "@effect/vitest"
import * as RedisSessionStore from "@switchyard-ts/server/RedisSessionStore"
import * as D from "@switchyard-ts/testkit/DeploymentBuilder"
import * as FakeUpstream from "@switchyard-ts/testkit/FakeUpstream"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import * as TestClock from "effect/TestClock"
import { mkdtempSync, writeFileSync } from "node:fs"
import { createServer, type Server, type Socket } from "node:net"
import { tmpdir } from "node:os"
import * as path from "node:path"
import { listening, run } from "./cliProcess.js"
import { capabilityRoute, startServer } from "./harness.js"
import {
  capturingLogs,
  cleanUp,
  closedPort,
  errorCount,
  handshakeThenHang,
  ownRedis,
  pingUntilUp,
  portOf,
  rawClient,
  redisUrl,
  skipWithoutRedis,
  unique
} from "./redis.js"

/** The store over the test Redis. */
const storeFor = (options: { readonly ttlMs: number; readonly keyPrefix?: string }) =>
  Effect.flatMap(redisUrl, (url) => RedisSessionStore.make({ url: Redacted.make(url), ...options }))

/** A TCP server that accepts connections and never answers (a hung Redis). */
const hungServer = Effect.acquireRelease(
  Effect.async<{ readonly server: Server; readonly sockets: Array<Socket> }>((resume) => {
    const sockets: Array<Socket> = []
    const server = createServer((socket) => {
      sockets.push(socket)
    })
    server.listen(0, "127.0.0.1", () => resume(Effect.succeed({ server, sockets })))
  }),
  ({ server, sockets }) =>
    Effect.async<void>((resume) => {
      for (const socket of sockets) socket.destroy()
      server.close(() => resume(Effect.void))
    })
)

const weak = { target: "weak", tier: "weak" } as const
const strong = { target: "strong", tier: "strong" } as const

describe.skipIf(skipWithoutRedis)("RedisSessionStore against a real redis-server", () => {
  it.scopedLive("put then get round-trips, stored as JSON under switchyard:session:<key> with a PX expiry", () =>
    Effect.gen(function*() {
      const raw = yield* rawClient
      const key = `route\u0000s:${unique("roundtrip")}`
      yield* cleanUp(raw, () => [`switchyard:session:${key}`])
      const store = yield* storeFor({ ttlMs: 60_000 })
      assert.isTrue(Option.isNone(yield* store.get(key)))
      yield* store.put(key, weak)
      assert.deepStrictEqual(yield* store.get(key), Option.some(weak))
      yield* store.put(key, strong)
      assert.deepStrictEqual(yield* store.get(key), Option.some(strong))
      const stored = yield* Effect.promise(() => raw.get(`switchyard:session:${key}`))
      assert.deepStrictEqual(JSON.parse(stored ?? "null"), { target: "strong", tier: "strong" })
      const pttl = yield* Effect.promise(() => raw.pttl(`switchyard:session:${key}`))
      assert.isTrue(pttl > 0 && pttl <= 60_000, `pttl ${pttl}`)
    }))

  it.scopedLive("ttl_ms forgets an idle session, and every get refreshes the expiry", () =>
    Effect.gen(function*() {
      const raw = yield* rawClient
      const key = `route\u0000s:${unique("ttl")}`
      const stored = `switchyard:session:${key}`
      yield* cleanUp(raw, () => [stored])
      // Redis keeps the time: each step reads the key's remaining TTL instead of sleeping. A key
      // "aged" to 1 s left is back at (1 s, ttl_ms] only if the store set the expiry again.
      const ttlMs = 60_000
      const pttl = Effect.promise(() => raw.pttl(stored))
      const age = Effect.promise(() => raw.pexpire(stored, 1_000))
      const store = yield* storeFor({ ttlMs })
      yield* store.put(key, weak)
      const afterPut = yield* pttl
      assert.isTrue(afterPut > 0 && afterPut <= ttlMs, `pttl ${afterPut} after the put`)
      yield* age
      assert.deepStrictEqual(yield* store.get(key), Option.some(weak))
      const afterGet = yield* pttl
      assert.isTrue(afterGet > 1_000 && afterGet <= ttlMs, `pttl ${afterGet} after the get`)
      yield* age
      assert.deepStrictEqual(yield* store.get(key), Option.some(weak))
      const afterSecondGet = yield* pttl
      assert.isTrue(afterSecondGet > 1_000 && afterSecondGet <= ttlMs, `pttl ${afterSecondGet} after the second get`)
      // Idle for longer than ttl_ms: Redis has dropped the key (its expiry passing is simulated by
      // PEXPIRE 0, which deletes it as expiry does), and the store reads the session as absent.
      yield* Effect.promise(() => raw.pexpire(stored, 0))
      assert.isTrue(Option.isNone(yield* store.get(key)))
      assert.strictEqual(yield* Effect.promise(() => raw.exists(stored)), 0)
    }))

  it.scopedLive("a value that is not a SessionDecision reads as absent, and a put replaces it", () =>
    Effect.gen(function*() {
      const raw = yield* rawClient
      const key = `route\u0000s:${unique("garbage")}`
      yield* cleanUp(raw, () => [`switchyard:session:${key}`])
      const store = yield* storeFor({ ttlMs: 60_000 })
      for (
        const garbage of [
          "not json",
          "{\"target\":\"weak\",\"tier\":\"medium\"}",
          "{\"target\":1,\"tier\":\"weak\"}",
          "null",
          "[]"
        ]
      ) {
        yield* Effect.promise(() => raw.set(`switchyard:session:${key}`, garbage))
        assert.isTrue(Option.isNone(yield* store.get(key)), garbage)
      }
      yield* store.put(key, strong)
      assert.deepStrictEqual(yield* store.get(key), Option.some(strong))
    }))

  it.scopedLive("an escalation streak round-trips; remove deletes the key (an absent key is no error)", () =>
    Effect.gen(function*() {
      const raw = yield* rawClient
      const key = `esc\u0000s:${unique("remove")}`
      yield* cleanUp(raw, () => [`switchyard:session:${key}`])
      const store = yield* storeFor({ ttlMs: 60_000 })
      const streak = { target: "weak", tier: "weak", streak: 2 } as const
      yield* store.put(key, streak)
      assert.deepStrictEqual(yield* store.get(key), Option.some(streak))
      const errorsBefore = yield* errorCount("remove")
      yield* store.remove(key)
      assert.isNull(yield* Effect.promise(() => raw.get(`switchyard:session:${key}`)))
      assert.isTrue(Option.isNone(yield* store.get(key)))
      yield* store.remove(key)
      assert.strictEqual(yield* errorCount("remove"), errorsBefore)
    }))

  it.scopedLive("de-escalation state round-trips (category, cooldown, strong phase); a value written before it still decodes", () =>
    Effect.gen(function*() {
      const raw = yield* rawClient
      const key = `esc\u0000s:${unique("deesc")}`
      yield* cleanUp(raw, () => [`switchyard:session:${key}`])
      const store = yield* storeFor({ ttlMs: 60_000 })
      const states = [
        { target: "weak", tier: "weak", streak: 1, category: "repetition", cooldown: 3 },
        { target: "strong", tier: "strong", strongCalls: 4, releaseStreak: 1 }
      ] as const
      for (const state of states) {
        yield* store.put(key, state)
        assert.deepStrictEqual(yield* store.get(key), Option.some(state))
      }
      yield* Effect.promise(() =>
        raw.set(`switchyard:session:${key}`, "{\"target\":\"weak\",\"tier\":\"weak\",\"streak\":1}")
      )
      assert.deepStrictEqual(yield* store.get(key), Option.some({ target: "weak", tier: "weak", streak: 1 }))
      yield* Effect.promise(() =>
        raw.set(`switchyard:session:${key}`, "{\"target\":\"weak\",\"streak\":1,\"category\":\"sideways\"}")
      )
      assert.isTrue(Option.isNone(yield* store.get(key)), "an unknown category reads as absent")
    }))

  it.scopedLive("size counts this store's live keys only (SCAN over its prefix)", () =>
    Effect.gen(function*() {
      const raw = yield* rawClient
      const prefix = `switchyard:test:${unique("size")}:`
      const other = `switchyard:test:${unique("size-other")}:`
      yield* cleanUp(raw, () => ["a", "b", "c", "x"].flatMap((k) => [prefix + k, other + k]))
      const store = yield* storeFor({ ttlMs: 60_000, keyPrefix: prefix })
      const neighbour = yield* storeFor({ ttlMs: 60_000, keyPrefix: other })
      assert.strictEqual(yield* store.size, 0)
      yield* store.put("a", weak)
      yield* store.put("b", weak)
      yield* store.put("b", strong)
      yield* store.put("c", strong)
      yield* neighbour.put("x", weak)
      assert.strictEqual(yield* store.size, 3)
      assert.strictEqual(yield* neighbour.size, 1)
    }))

  it.scoped("Redis down (closed port): the store starts, get reads none, put is dropped, fast; counted and logged without the password", () =>
    Effect.gen(function*() {
      const lines: Array<string> = []
      const port = yield* closedPort
      const getsBefore = yield* errorCount("get")
      const putsBefore = yield* errorCount("put")
      // Fast, on the TestClock: the clock never moves, so neither the store's connect bound nor its
      // command bound can end anything; the refused connection itself does. Both bounds are long, so
      // ioredis's own timers (real time) cannot fire during the test either.
      yield* Effect.gen(function*() {
        const store = yield* RedisSessionStore.make({
          url: Redacted.make(`redis://user:s3cret-pw@127.0.0.1:${port}/0`),
          ttlMs: 60_000,
          connectTimeoutMs: 60_000,
          commandTimeoutMs: 60_000
        })
        const key = `route\u0000s:${unique("down")}`
        yield* store.put(key, weak)
        assert.isTrue(Option.isNone(yield* store.get(key)))
        assert.strictEqual(yield* store.size, 0)
      }).pipe(capturingLogs(lines))
      assert.strictEqual(yield* TestClock.currentTimeMillis, 0)
      assert.notInclude(lines.join("\n"), "timed out")
      assert.strictEqual((yield* errorCount("get")) - getsBefore, 1)
      assert.strictEqual((yield* errorCount("put")) - putsBefore, 1)
      const all = lines.join("\n")
      assert.include(all, "Redis not reachable at start")
      assert.include(all, "session store unavailable; routing as if the session had no stored decision")
      assert.include(all, "session store unavailable; the session decision was not stored")
      assert.include(all, `redis://127.0.0.1:${port}/0`)
      assert.notInclude(all, "s3cret-pw")
      assert.notInclude(all, "user:")
    }))

  it.scopedLive("Redis going away mid-life: get reads none at once, and the store recovers when Redis is back", () =>
    Effect.gen(function*() {
      yield* redisUrl // CI's redis-server is on PATH; this test runs its own on a free port
      const port = yield* closedPort
      const dir = mkdtempSync(path.join(tmpdir(), "switchyard-redis-own-"))
      const first = yield* ownRedis(port, dir)
      yield* pingUntilUp(port)
      const store = yield* RedisSessionStore.make({
        url: Redacted.make(`redis://127.0.0.1:${port}`),
        ttlMs: 60_000,
        commandTimeoutMs: 60_000
      }).pipe(capturingLogs([]))
      yield* store.put("k", weak)
      assert.deepStrictEqual(yield* store.get("k"), Option.some(weak))

      // At once: with a one-minute command timeout, only the lost connection can end these
      // commands (ioredis fails them while disconnected instead of queueing them); a timeout would
      // outlast the test.
      yield* first.stop
      const lines: Array<string> = []
      const getsBefore = yield* errorCount("get")
      assert.isTrue(Option.isNone(yield* store.get("k").pipe(capturingLogs(lines))))
      yield* store.put("k", strong).pipe(capturingLogs(lines))
      assert.strictEqual((yield* errorCount("get")) - getsBefore, 1)
      assert.lengthOf(lines, 2)
      assert.notInclude(lines.join("\n"), "timed out")

      // A fresh (empty) redis-server on the same port: the client reconnects by itself.
      yield* ownRedis(port, dir)
      yield* pingUntilUp(port)
      let recovered = false
      for (let i = 0; i < 100 && !recovered; i++) {
        yield* store.put("k", strong).pipe(capturingLogs([]))
        recovered = Option.isSome(yield* store.get("k").pipe(capturingLogs([])))
        if (!recovered) yield* Effect.sleep("50 millis")
      }
      assert.isTrue(recovered, "the store did not reconnect within 5 s")
      assert.deepStrictEqual(yield* store.get("k"), Option.some(strong))
    }))

  it.scoped("a hung Redis (accepts, never answers) delays the start by connectTimeoutMs, then a get or put not at all", () =>
    Effect.gen(function*() {
      const hung = yield* hungServer
      const lines: Array<string> = []
      // The TestClock drives the store's connect bound. ioredis's own timers use real time: its
      // command timeout (which also bounds its INFO ready check) is long enough never to fire here.
      const starting = yield* Effect.fork(
        RedisSessionStore.make({
          url: Redacted.make(`redis://127.0.0.1:${portOf(hung.server)}`),
          ttlMs: 60_000,
          connectTimeoutMs: 300,
          commandTimeoutMs: 60_000
        }).pipe(capturingLogs(lines))
      )
      yield* TestClock.adjust("299 millis")
      assert.isTrue(Option.isNone(yield* Fiber.poll(starting)))
      yield* TestClock.adjust("1 millis")
      const store = yield* Fiber.join(starting)
      assert.include(lines.join("\n"), "Redis not reachable at start")
      assert.include(lines.join("\n"), "connect timed out")
      // The connection never became ready: commands fail at once (no clock time passes) rather
      // than waiting for an answer.
      const getsBefore = yield* errorCount("get")
      const putsBefore = yield* errorCount("put")
      const got = yield* store.get("route\u0000s:hung").pipe(capturingLogs(lines))
      yield* store.put("route\u0000s:hung", weak).pipe(capturingLogs(lines))
      assert.isTrue(Option.isNone(got))
      assert.strictEqual(yield* TestClock.currentTimeMillis, 300)
      assert.strictEqual((yield* errorCount("get")) - getsBefore, 1)
      assert.strictEqual((yield* errorCount("put")) - putsBefore, 1)
      assert.notInclude(lines.join("\n"), "Command timed out")
      // Hang up, so the store's QUIT at release fails at once instead of waiting for its bound.
      for (const socket of hung.sockets) socket.destroy()
    }))

  it.scoped("a Redis that hangs mid-life delays a get or put by the command timeout (+50 ms), on the Effect clock", () =>
    Effect.gen(function*() {
      const redis = yield* handshakeThenHang
      const lines: Array<string> = []
      const commandTimeoutMs = 60_000
      // ioredis bounds each command by commandTimeoutMs in real time (never reached here); the
      // store's own bound, commandTimeoutMs + 50 on the Effect clock, is what the TestClock drives.
      const store = yield* RedisSessionStore.make({
        url: Redacted.make(`redis://127.0.0.1:${portOf(redis.server)}`),
        ttlMs: 60_000,
        commandTimeoutMs
      }).pipe(capturingLogs(lines))
      assert.notInclude(lines.join("\n"), "Redis not reachable at start")
      const bounded = <A>(operation: RedisSessionStore.Operation, command: string, effect: Effect.Effect<A>) =>
        Effect.gen(function*() {
          const before = yield* errorCount(operation)
          const fiber = yield* Effect.fork(effect.pipe(capturingLogs(lines)))
          assert.match(yield* Queue.take(redis.unanswered), new RegExp(`^${command} `))
          yield* TestClock.adjust(commandTimeoutMs + 49)
          assert.isTrue(Option.isNone(yield* Fiber.poll(fiber)), `${operation} ended before its bound`)
          yield* TestClock.adjust(1)
          const result = yield* Fiber.join(fiber)
          assert.strictEqual((yield* errorCount(operation)) - before, 1)
          return result
        })
      assert.isTrue(Option.isNone(yield* bounded("get", "GETEX", store.get("route\u0000s:hung"))))
      yield* bounded("put", "SET", store.put("route\u0000s:hung", weak))
      const warnings = lines.filter((line) => line.includes("session store unavailable"))
      assert.lengthOf(warnings, 2)
      for (const warning of warnings) assert.include(warning, "Command timed out")
    }))
})

// ---------------------------------------------------------------------------------------------
// Through the server: an outage does not fail requests; two processes share one session
// ---------------------------------------------------------------------------------------------

const verdict = (p: number) =>
  FakeUpstream.ok(
    JSON.stringify({ crux: "a small local fix", primary_rule: "SUP-1", capability_boundary: "supported", p_solve: p })
  )

const stickyDeployment = (judgeModel: string, redis: string) => (upstreamUrl: string): D.Deployment => ({
  llm_clients: { sim: D.client("openai_chat", upstreamUrl, { max_retries: 0, timeout_ms: 5000 }) },
  targets: {
    judge: D.target(judgeModel, "sim"),
    weak: D.target("weak-model", "sim"),
    strong: D.target("strong-model", "sim")
  },
  routes: D.byId(capabilityRoute("sticky", "judge", { classify_trigger: "new_session", judge_failure: "fail_open" })),
  sessions: { store: "redis", url: redis, ttl_ms: 60000 }
})

const chatBody = { model: "sticky", messages: [{ role: "user", content: "fix the typo in README" }] }

const Answer = Schema.Struct({ status: Schema.Number, selected: Schema.String, source: Schema.String })
const DecisionBody = Schema.Struct({
  selected: Schema.Struct({ model: Schema.String }),
  evidence: Schema.Record({ key: Schema.String, value: Schema.Unknown })
})

/** POST a chat completion with a session id to a server at `base`; status and routing headers. */
const chatAt = (base: string, session: string) =>
  Effect.flatMap(
    Effect.promise(() =>
      fetch(`${base}/v1/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-switchyard-session-id": session },
        body: JSON.stringify(chatBody)
      }).then(async (response) => {
        await response.text()
        return {
          status: response.status,
          selected: response.headers.get("x-switchyard-selected-model") ?? "",
          source: response.headers.get("x-switchyard-evidence-source") ?? ""
        }
      })
    ),
    Schema.decodeUnknown(Answer)
  )

const decisionAt = (base: string, session: string) =>
  Effect.flatMap(
    Effect.promise(() =>
      fetch(`${base}/v1/decision`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-switchyard-session-id": session },
        body: JSON.stringify({ input_format: "openai_chat", request: chatBody })
      }).then((response) => response.json())
    ),
    Schema.decodeUnknown(DecisionBody)
  )

const metricsAt = (base: string) => Effect.promise(() => fetch(`${base}/metrics`).then((response) => response.text()))

const judgeCalls = (upstream: FakeUpstream.FakeUpstream["Type"], judgeModel: string) =>
  Effect.map(upstream.requests, (requests) => requests.filter((r) => r.model === judgeModel).length)

describe.skipIf(skipWithoutRedis)("Redis session store through the server", () => {
  it.scopedLive(
    "two server processes sharing one Redis keep one session on one tier (affinity on B, no judge call)",
    () =>
      Effect.gen(function*() {
        const redis = yield* redisUrl
        const raw = yield* rawClient
        const judgeModel = unique("judge")
        const sessionWeak = unique("session-weak")
        const sessionStrong = unique("session-strong")
        yield* cleanUp(raw, () => [sessionWeak, sessionStrong].map((s) => `switchyard:session:sticky\u0000s:${s}`))
        const upstream = yield* FakeUpstream.make()
        const dir = mkdtempSync(path.join(tmpdir(), "switchyard-redis-"))
        const file = path.join(dir, "routes.toml")
        writeFileSync(file, D.toToml(stickyDeployment(judgeModel, redis)(upstream.url)))
        const a = yield* run(["--config", file, "--port", "0"])
        const b = yield* run(["--config", file, "--port", "0"])
        const urlA = yield* listening(a)
        const urlB = yield* listening(b)
        assert.notStrictEqual(urlA, urlB)

        // Judged on A: p_solve 0.9 → weak, stored in Redis.
        yield* upstream.setBehaviour(judgeModel, verdict(0.9))
        assert.deepStrictEqual(yield* chatAt(urlA, sessionWeak), {
          status: 200,
          selected: "weak-model",
          source: "llm-classifier"
        })
        assert.strictEqual(yield* judgeCalls(upstream, judgeModel), 1)

        // The judge now says strong for everything; B still serves the session on the weak tier, unjudged.
        yield* upstream.setBehaviour(judgeModel, verdict(0))
        assert.deepStrictEqual(yield* chatAt(urlB, sessionWeak), {
          status: 200,
          selected: "weak-model",
          source: "affinity"
        })
        const onB = yield* decisionAt(urlB, sessionWeak)
        assert.strictEqual(onB.selected.model, "weak-model")
        assert.deepStrictEqual<unknown>(onB.evidence, { source: "affinity", previous_source: "llm-classifier" })
        assert.deepStrictEqual(yield* chatAt(urlA, sessionWeak), {
          status: 200,
          selected: "weak-model",
          source: "affinity"
        })
        assert.strictEqual(yield* judgeCalls(upstream, judgeModel), 1)

        // The other way round: a new session judged on B (strong) is served strong by A with affinity.
        assert.deepStrictEqual(yield* chatAt(urlB, sessionStrong), {
          status: 200,
          selected: "strong-model",
          source: "llm-classifier"
        })
        yield* upstream.setBehaviour(judgeModel, verdict(0.9))
        assert.deepStrictEqual(yield* chatAt(urlA, sessionStrong), {
          status: 200,
          selected: "strong-model",
          source: "affinity"
        })
        assert.strictEqual(yield* judgeCalls(upstream, judgeModel), 2)

        const stored = yield* Effect.promise(() => raw.get(`switchyard:session:sticky\u0000s:${sessionWeak}`))
        assert.deepStrictEqual(JSON.parse(stored ?? "null"), { target: "weak", tier: "weak" })
        const seeded = (yield* metricsAt(urlB)).split("\n").find((l) =>
          l.startsWith("switchyard_session_store_errors_total{operation=\"get\"")
        )
        assert.isTrue(seeded?.endsWith(" 0"), seeded)

        // Both stop cleanly (the store's QUIT is bounded).
        a.child.kill("SIGTERM")
        b.child.kill("SIGTERM")
        assert.strictEqual(yield* a.exited.pipe(Effect.timeout("10 seconds")), 0)
        assert.strictEqual(yield* b.exited.pipe(Effect.timeout("10 seconds")), 0)
      }),
    60_000
  )

  it.scopedLive("with Redis down, requests still succeed: judged every time (no affinity), errors counted on /metrics", () =>
    Effect.gen(function*() {
      const port = yield* closedPort
      const judgeModel = unique("judge-down")
      const session = unique("session-down")
      const { client, upstream, url } = yield* startServer(stickyDeployment(judgeModel, `redis://127.0.0.1:${port}`))
        .pipe(
          capturingLogs([])
        )
      yield* upstream.setBehaviour(judgeModel, verdict(0.9))
      for (let i = 0; i < 2; i++) {
        const response = yield* client.execute(
          HttpClientRequest.post("/v1/chat/completions").pipe(
            HttpClientRequest.setHeader("x-switchyard-session-id", session),
            HttpClientRequest.bodyUnsafeJson(chatBody)
          )
        ).pipe(capturingLogs([]))
        assert.strictEqual(response.status, 200)
        assert.strictEqual(response.headers["x-switchyard-evidence-source"], "llm-classifier")
        assert.strictEqual(response.headers["x-switchyard-selected-model"], "weak-model")
      }
      assert.strictEqual(yield* judgeCalls(upstream, judgeModel), 2)
      const metrics = yield* metricsAt(url)
      const line = metrics.split("\n").find((l) =>
        l.startsWith("switchyard_session_store_errors_total{operation=\"get\"")
      )
      assert.isDefined(line)
      assert.isAtLeast(Number(line?.slice(line.lastIndexOf(" ") + 1)), 2)
    }))
})

/** `stickyDeployment`'s deployment plus an escalation route (confirmations 2) on the same targets and Redis. */
const escalationDeployment = (judgeModel: string, redis: string) => (upstreamUrl: string): D.Deployment =>
  D.extend(stickyDeployment(judgeModel, redis)(upstreamUrl), {
    routes: D.byId(
      D.escalation("esc", {
        classifier_target: "judge",
        weak_target: "weak",
        strong_target: "strong",
        escalation: { confirmations: 2 }
      })
    )
  })

describe.skipIf(skipWithoutRedis)("session_final with the Redis store, through the server", () => {
  it.scopedLive("a session latched in Redis is reset by its final request; other sessions keep their state", () =>
    Effect.gen(function*() {
      const raw = yield* rawClient
      const judgeModel = unique("judge-final")
      const session = unique("session-final")
      const other = unique("session-other")
      const keyOf = (id: string) => `switchyard:session:esc\u0000s:${id}`
      yield* cleanUp(raw, () => [keyOf(session), keyOf(other)])
      const { client, upstream } = yield* startServer(escalationDeployment(judgeModel, yield* redisUrl))
      yield* upstream.setBehaviour("weak-model", FakeUpstream.ok("weak answer"))
      yield* upstream.setBehaviour("strong-model", FakeUpstream.ok("strong answer"))
      yield* upstream.setBehaviour(judgeModel, FakeUpstream.ok("{\"escalate\": true, \"reason\": \"hard\"}"))
      const selected = (id: string, headers: Readonly<Record<string, string>> = {}) =>
        Effect.map(
          client.execute(
            HttpClientRequest.post("/v1/chat/completions").pipe(
              HttpClientRequest.setHeaders(headers),
              HttpClientRequest.setHeader("x-switchyard-session-id", id),
              HttpClientRequest.bodyUnsafeJson({ model: "esc", messages: [{ role: "user", content: "prove it" }] })
            )
          ),
          (response) => response.headers["x-switchyard-selected-model"]
        )
      const stored = (id: string) =>
        Effect.map(Effect.promise(() => raw.get(keyOf(id))), (text) => JSON.parse(text ?? "null"))

      // the streak survives the round trip through Redis: escalate, escalate → latched
      assert.strictEqual(yield* selected(session), "weak-model")
      assert.deepStrictEqual(yield* stored(session), { target: "weak", tier: "weak", streak: 1 })
      assert.strictEqual(yield* selected(session), "strong-model")
      assert.deepStrictEqual(yield* stored(session), { target: "strong", tier: "strong" })
      assert.strictEqual(yield* selected(other), "weak-model")

      // the final request (the Dynamo spelling) is served latched, then the key is gone
      assert.strictEqual(yield* selected(session, { "x-dynamo-session-final": "1" }), "strong-model")
      assert.isNull(yield* stored(session))
      assert.deepStrictEqual(yield* stored(other), { target: "weak", tier: "weak", streak: 1 })
      assert.strictEqual(yield* judgeCalls(upstream, judgeModel), 3)

      // the session starts over on weak, judged again
      assert.strictEqual(yield* selected(session), "weak-model")
      assert.strictEqual(yield* judgeCalls(upstream, judgeModel), 4)
    }))
})

/** A capability route `route` between a Responses target and a Chat target on two clients, sessions in Redis. */
const continuationDeployment = (route: string, judgeModel: string, redis: string) => (upstreamUrl: string) =>
  D.extend(stickyDeployment(judgeModel, redis)(upstreamUrl), {
    llm_clients: { resp: D.client("openai_responses", upstreamUrl, { max_retries: 0 }) },
    targets: { gpt: D.target("gpt-resp", "resp") },
    routes: D.byId(capabilityRoute(route, "judge", { weak_target: "gpt", strong_target: "strong" }))
  })

const responsesAt = (base: string, body: unknown) =>
  Effect.promise(() =>
    fetch(`${base}/v1/responses`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body)
    }).then(async (response) => ({
      status: response.status,
      selected: response.headers.get("x-switchyard-selected-model"),
      source: response.headers.get("x-switchyard-evidence-source"),
      body: await response.text()
    }))
  )

describe.skipIf(skipWithoutRedis)("Responses continuation records in the shared Redis store", () => {
  it.scopedLive(
    "an id served on one replica goes back to its target on another, unjudged; transcripts stay with their replica",
    () =>
      Effect.gen(function*() {
        const redis = yield* redisUrl
        const raw = yield* rawClient
        const route = unique("continued")
        const judgeModel = unique("judge")
        const ids: Array<string> = []
        yield* cleanUp(raw, () => ids.map((id) => `switchyard:session:responses\u0000${route}\u0000${id}`))
        const a = yield* startServer(continuationDeployment(route, judgeModel, redis))
        const b = yield* startServer(continuationDeployment(route, judgeModel, redis))
        yield* a.upstream.script(judgeModel, [verdict(0.9), verdict(0)])
        const native = yield* responsesAt(a.url, { model: route, input: "hello" })
        assert.strictEqual(native.selected, "gpt-resp")
        const nativeId = String(JSON.parse(native.body).id)
        ids.push(nativeId)
        const translated = yield* responsesAt(a.url, { model: route, input: "something hard" })
        assert.strictEqual(translated.selected, "strong-model")
        const translatedId = String(JSON.parse(translated.body).id)
        ids.push(translatedId)
        const stored = yield* Effect.promise(() =>
          raw.get(`switchyard:session:responses\u0000${route}\u0000${nativeId}`)
        )
        assert.deepStrictEqual(JSON.parse(stored ?? "null"), { target: "gpt" })

        yield* b.upstream.setBehaviour(judgeModel, verdict(0))
        const onB = yield* responsesAt(b.url, { model: route, previous_response_id: nativeId, input: "more" })
        assert.deepStrictEqual([onB.status, onB.selected, onB.source], [200, "gpt-resp", "continuation"])
        assert.strictEqual(yield* judgeCalls(b.upstream, judgeModel), 0)
        // B knows where the translated answer went, but not its transcript: refused as on a Chat target.
        const transcriptOnB = yield* responsesAt(b.url, {
          model: route,
          previous_response_id: translatedId,
          input: "?"
        })
        assert.strictEqual(transcriptOnB.status, 400)
        assert.strictEqual(yield* judgeCalls(b.upstream, judgeModel), 0)
        const onA = yield* responsesAt(a.url, { model: route, previous_response_id: translatedId, input: "?" })
        assert.deepStrictEqual([onA.status, onA.selected, onA.source], [200, "strong-model", "continuation"])
      }),
    30_000
  )
})
