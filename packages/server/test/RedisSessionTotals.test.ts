/**
 * The session totals kept in Redis (`store = "redis"`) against a real `redis-server`, in real
 * time (the test Redis of ./redis.ts; skipped with one line without one): the same JSON as the
 * in-memory totals for the same lines, exact beyond what one 64-bit femto-dollar field holds, the
 * store's TTL; two replicas on one Redis serving one session report the same totals, the sums of
 * both routing logs (and of their replay); a Redis stopped mid-run loses increments, counted, and
 * never a request.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Pricing from "@switchyard-ts/routing/Pricing"
import * as Cli from "@switchyard-ts/server/Cli"
import type * as PolicyReplay from "@switchyard-ts/server/PolicyReplay"
import * as RedisSessionStore from "@switchyard-ts/server/RedisSessionStore"
import * as RedisSessionTotals from "@switchyard-ts/server/RedisSessionTotals"
import * as RoutingLog from "@switchyard-ts/server/RoutingLog"
import * as SessionTotals from "@switchyard-ts/server/SessionTotals"
import * as D from "@switchyard-ts/testkit/DeploymentBuilder"
import * as FakeUpstream from "@switchyard-ts/testkit/FakeUpstream"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as FastCheck from "effect/FastCheck"
import * as Logger from "effect/Logger"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import * as path from "node:path"
import { vi } from "vitest"
import { capabilityRoute, startServer } from "./harness.js"
import { lineOf } from "./lines.js"
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

const statsKey = (session: string) => `switchyard:stats:${session}`

/** Femto-dollars of a USD amount (to the micro-dollar), and of a micro-dollar amount. */
const usd = (amount: number): Pricing.Femto => BigInt(Math.round(amount * 1e6)) * 10n ** 9n
const micro = (amount: number): Pricing.Femto => usd(amount) / 10n ** 6n

/** Poll `read` (every 20 ms, at most 5 s) until `done` holds of it; its last value either way. */
const until = <A, E>(read: Effect.Effect<A, E>, done: (a: A) => boolean) =>
  Effect.gen(function*() {
    let value = yield* read
    for (let i = 0; i < 250 && !done(value); i++) {
      yield* Effect.sleep("20 millis")
      value = yield* read
    }
    return value
  })

const totalCalls = (stats: Option.Option<SessionTotals.SessionStats>) =>
  Option.match(stats, { onNone: () => 0, onSome: (s) => s.total_calls })

/** The Redis totals and an in-memory one, fed the same lines. */
const bothStores = Effect.gen(function*() {
  const connection = yield* RedisSessionStore.connect({ url: Redacted.make(yield* redisUrl) })
  const redis = yield* RedisSessionTotals.make(connection, { ttlMs: 60_000 })
  const memory = SessionTotals.makeMemory()
  const add = (line: RoutingLog.Line, cost?: Pricing.Cost) => {
    redis.add(line, cost)
    memory.add(line, cost)
  }
  /** Both stores' totals of `session`, once Redis has every counted line (`calls`). */
  const read = (session: string, calls: number) =>
    Effect.all([until(redis.get(session), (s) => totalCalls(s) >= calls), memory.get(session)])
  return { add, read }
})

const SpecArb = FastCheck.record({
  kind: FastCheck.constantFrom("judge" as const, "response" as const),
  model: FastCheck.constantFrom("m-a", "m-b", "vendor:model/x", ""),
  cost: FastCheck.option(
    FastCheck.record({
      femto: FastCheck.bigInt({ min: 0n, max: 4n * 10n ** 15n - 1n }),
      source: FastCheck.constantFrom("estimated" as const, "provider_reported" as const)
    }),
    { nil: undefined }
  ),
  prompt: FastCheck.nat({ max: 100_000 }),
  cached: FastCheck.nat({ max: 1000 }),
  written: FastCheck.nat({ max: 1000 }),
  completion: FastCheck.nat({ max: 10_000 }),
  outcome: FastCheck.constantFrom("ok" as const, "ok" as const, "timeout" as const),
  handOver: FastCheck.boolean()
})

describe.skipIf(skipWithoutRedis)("RedisSessionTotals against a real redis-server", () => {
  it.scopedLive("random lines: Redis gives the in-memory totals' JSON exactly, per session", () =>
    Effect.gen(function*() {
      const raw = yield* rawClient
      const sessions = Array.from({ length: 12 }, () => unique("random"))
      yield* cleanUp(raw, () => sessions.map(statsKey))
      const { add, read } = yield* bothStores
      const samples = FastCheck.sample(FastCheck.array(SpecArb, { minLength: 1, maxLength: 30 }), {
        numRuns: sessions.length,
        seed: 27
      })
      samples.forEach((specs, i) =>
        specs.forEach(({ handOver, ...spec }) => {
          const line = lineOf({ ...spec, session: sessions[i] ?? null })
          // half handed over with their exact cost, half read back from the line
          if (handOver) add(line, spec.cost)
          else add(line)
        })
      )
      for (const [i, session] of sessions.entries()) {
        const counted = (samples[i] ?? []).filter((s) => s.kind === "response" || s.outcome === "ok").length
        const [fromRedis, fromMemory] = yield* read(session, counted)
        assert.deepStrictEqual(fromRedis, fromMemory)
        assert.strictEqual(totalCalls(fromMemory), counted)
      }
    }))

  it.scopedLive(
    "beyond 9,223 USD (a signed 64-bit femto-dollar count) the totals stay exact; the hash expires after ttl_ms",
    () =>
      Effect.gen(function*() {
        const raw = yield* rawClient
        const session = unique("big")
        yield* cleanUp(raw, () => [statsKey(session)])
        const { add, read } = yield* bothStores
        const big: Pricing.Cost = { femto: usd(5_000) + 123n, source: "provider_reported" }
        for (let i = 0; i < 3; i++) add(lineOf({ kind: "response", session, model: "opus:big", cost: big }), big)
        add(lineOf({ kind: "judge", session, model: "judge", cost: { femto: 17n, source: "estimated" } }))
        add(lineOf({ kind: "judge", session, model: "judge", cost: undefined, outcome: "timeout" }))
        add(lineOf({ kind: "response", session, model: "", cost: undefined }))
        add(lineOf({ kind: "response", session: null, model: "m", cost: big }), big)
        const [fromRedis, fromMemory] = yield* read(session, 5)
        assert.deepStrictEqual(fromRedis, fromMemory)
        const stats = Option.getOrThrow(fromRedis)
        assert.deepStrictEqual(Object.keys(stats.models), ["judge", "opus:big", "unknown"])
        assert.strictEqual(stats.answer_cost.known_usd, Pricing.usd(3n * big.femto))
        assert.strictEqual(stats.answer_cost.total_usd, null)
        assert.strictEqual(stats.routing_cost.total_usd, Pricing.usd(17n))
        const hash = yield* Effect.promise(() => raw.hgetall(statsKey(session)))
        const femto = BigInt(hash["b:answer:femto_hi"] ?? "0") * 10n ** 9n + BigInt(hash["b:answer:femto_lo"] ?? "0")
        assert.strictEqual(femto, 3n * big.femto)
        assert.isTrue(femto > 2n ** 63n - 1n, `${femto} fits in a signed 64-bit field`)
        assert.strictEqual(hash["m:opus:big:calls"], "3")
        const pttl = yield* Effect.promise(() => raw.pttl(statsKey(session)))
        assert.isTrue(pttl > 0 && pttl <= 60_000, `pttl ${pttl}`)
        // Idle past ttl_ms the hash is gone (expiry simulated by PEXPIRE 0): the session is unknown.
        yield* Effect.promise(() => raw.pexpire(statsKey(session), 0))
        const [expired] = yield* read(session, 0)
        assert.isTrue(Option.isNone(expired))
      })
  )
})

describe.skipIf(skipWithoutRedis)("RedisSessionTotals against a hung Redis", () => {
  it.scopedLive("add never waits; past maxInFlight a line is lost at once (counted, one warning), the rest after the timeout", () =>
    Effect.gen(function*() {
      const hung = yield* handshakeThenHang
      const warnings: Array<string> = []
      const totals = yield* Effect.gen(function*() {
        const url = Redacted.make(`redis://127.0.0.1:${portOf(hung.server)}`)
        const connection = yield* RedisSessionStore.connect({ url, commandTimeoutMs: 300 })
        return yield* RedisSessionTotals.make(connection, { ttlMs: 60_000, maxInFlight: 2 })
      }).pipe(capturingLogs(warnings))
      const line = lineOf({ kind: "response", session: "hung", model: "m", cost: undefined })
      const before = yield* errorCount("totals_add")
      const started = Date.now()
      for (let i = 0; i < 5; i++) totals.add(line)
      assert.isBelow(Date.now() - started, 200)
      // 2 in flight, 3 lost at once
      assert.strictEqual(yield* errorCount("totals_add"), before + 3)
      // the 2 in flight fail after the command timeout
      assert.strictEqual(yield* until(errorCount("totals_add"), (n) => n >= before + 5), before + 5)
      const tooMany = warnings.filter((w) => w.includes("too many session totals updates in flight"))
      assert.lengthOf(tooMany, 1)
      assert.include(tooMany[0], "\"max_in_flight\":2")
      assert.lengthOf(warnings.filter((w) => w.includes("a line was not added") && w.includes("Command timed out")), 2)
      // nothing in flight any more: the next line is sent, not lost at once
      totals.add(line)
      assert.strictEqual(yield* errorCount("totals_add"), before + 5)
    }))
})

// ---------------------------------------------------------------------------------------------
// Through the server: two replicas share a session's totals; a stopped Redis loses only totals
// ---------------------------------------------------------------------------------------------

const prices = Either.getOrThrow(Pricing.parse(
  JSON.stringify({
    "tot-weak": { input: 1, output: 5, cache_read: 0.1, cache_write: 2 },
    "tot-strong": { input: 3, output: 15, cache_read: 0.3, cache_write: 3.75 },
    "tot-judge": { input: 0.5, output: 1.5, cache_read: 0, cache_write: 0 }
  }),
  "prices.json"
))

const deployment = (redis: string) => (upstreamUrl: string): D.Deployment => ({
  llm_clients: { sim: D.client("openai_chat", upstreamUrl, { max_retries: 0, timeout_ms: 5000 }) },
  targets: {
    judge: D.target("tot-judge", "sim"),
    weak: D.target("tot-weak", "sim"),
    strong: D.target("tot-strong", "sim")
  },
  routes: D.byId(capabilityRoute("judged", "judge", { classify_trigger: "user_turn" })),
  sessions: { store: "redis", url: redis, ttl_ms: 60000 }
})

const usage = (prompt: number, completion: number) => ({
  prompt_tokens: prompt,
  completion_tokens: completion,
  total_tokens: prompt + completion
})

const verdict = (p: number) =>
  FakeUpstream.ok(
    JSON.stringify({ crux: "a small local fix", primary_rule: "SUP-1", capability_boundary: "supported", p_solve: p }),
    { usage: usage(40, 9) }
  )

/** Script `upstream`: the judge says `p`, the answers report their usage. */
const script = (upstream: FakeUpstream.FakeUpstream["Type"], p: number) =>
  Effect.all([
    upstream.setBehaviour("tot-judge", verdict(p)),
    upstream.setBehaviour("tot-weak", FakeUpstream.ok("weak answer", { usage: usage(120, 30) })),
    upstream.setBehaviour("tot-strong", FakeUpstream.ok("strong answer", { usage: usage(120, 45) }))
  ], { discard: true })

const chatAt = (base: string, session: string) =>
  Effect.promise(() =>
    fetch(`${base}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-switchyard-session-id": session },
      body: JSON.stringify({ model: "judged", messages: [{ role: "user", content: "rename the variable" }] })
    }).then(async (response) => {
      await response.text()
      return response.status
    })
  )

const statsAt = (base: string, session: string) =>
  Effect.promise(() =>
    fetch(`${base}/v1/session-stats?session_id=${encodeURIComponent(session)}`).then(async (response) => ({
      status: response.status,
      body: await response.text()
    }))
  )

const decodeStats = Schema.decodeUnknownSync(Schema.parseJson(SessionTotals.SessionStats))
const decodeLine = Schema.decodeUnknownSync(Schema.parseJson(RoutingLog.Line))

/** The session-stats of `session` on `base`, once it counts `calls` calls (bounded wait). */
const statsOnceCounted = (base: string, session: string, calls: number) =>
  Effect.map(
    until(statsAt(base, session), (r) => r.status === 200 && decodeStats(r.body).total_calls >= calls),
    (r) => decodeStats(r.body)
  )

/** The lines of a routing log file, once it holds `count` (the writer appends in the background). */
const logLines = (file: string, count: number) =>
  Effect.map(
    until(
      Effect.sync(() => existsSync(file) ? readFileSync(file, "utf8").split("\n").filter((l) => l !== "") : []),
      (lines) => lines.length >= count
    ),
    (lines) => lines.map((line) => decodeLine(line))
  )

describe.skipIf(skipWithoutRedis)("session totals in Redis, through the server", () => {
  it.scopedLive(
    "two replicas serving one session in turn report the same totals: the sums of both routing logs and of their replay",
    () =>
      Effect.gen(function*() {
        const redis = yield* redisUrl
        const raw = yield* rawClient
        const session = unique("shared")
        yield* cleanUp(raw, () => [statsKey(session), `switchyard:session:judged\u0000s:${session}`])
        const dir = mkdtempSync(path.join(tmpdir(), "switchyard-totals-"))
        const logA = path.join(dir, "a.jsonl")
        const logB = path.join(dir, "b.jsonl")
        const a = yield* startServer(deployment(redis), { routingLog: { path: logA }, prices })
        const b = yield* startServer(deployment(redis), { routingLog: { path: logB }, prices })
        // A, B, A, B; the judge says weak, strong, weak, strong
        for (const [i, replica] of [a, b, a, b].entries()) {
          yield* script(replica.upstream, i % 2 === 0 ? 0.9 : 0)
          assert.strictEqual(yield* chatAt(replica.url, session), 200)
        }

        // 4 answers and 4 judge calls, whichever replica is asked
        const onA = yield* statsOnceCounted(a.url, session, 8)
        const onB = yield* statsOnceCounted(b.url, session, 8)
        assert.deepStrictEqual(onA, onB)
        assert.strictEqual(onA.total_calls, 8)
        assert.deepStrictEqual(Object.keys(onA.models), ["tot-judge", "tot-strong", "tot-weak"])
        assert.strictEqual(onA.answer_cost.estimated_calls, 4)
        assert.strictEqual(onA.routing_cost.estimated_calls, 4)
        // 2 × (120·1 + 30·5) + 2 × (120·3 + 45·15) µ$ answers, 4 × (40·0.5 + 9·1.5) µ$ judge calls
        assert.strictEqual(onA.answer_cost.total_usd, Pricing.usd(micro(2 * 270 + 2 * 1035)))
        assert.strictEqual(onA.routing_cost.total_usd, Pricing.usd(micro(4 * 33.5)))

        // exactly the sums of both replicas' routing logs
        const lines = [...yield* logLines(logA, 4), ...yield* logLines(logB, 4)]
        assert.lengthOf(lines, 8)
        const fromLogs = SessionTotals.makeMemory()
        for (const line of lines) fromLogs.add(line)
        assert.deepStrictEqual(Option.some(onA), yield* fromLogs.get(session))

        // and `switchyard replay --log A --log B` replays all of the session's requests
        const config = path.join(dir, "same.toml")
        writeFileSync(config, D.toToml(deployment(redis)(a.upstream.url)))
        const printed = vi.spyOn(console, "log").mockImplementation(() => {})
        const report = yield* Effect.orDie(Cli.replayProgram({ log: [logA, logB], config, json: true })).pipe(
          Effect.map((): ReadonlyArray<PolicyReplay.RouteReport> =>
            JSON.parse(printed.mock.calls.map((call) => call.join(" ")).join(""))
          ),
          Effect.ensuring(Effect.sync(() => printed.mockRestore()))
        )
        const [route] = report
        assert.strictEqual(route?.requests, 4)
        const answered = Object.values(route?.logged.tokens ?? {}).reduce((sum, n) => sum + n, 0)
        const answerModels = [onA.models["tot-weak"], onA.models["tot-strong"]]
        assert.strictEqual(
          answered,
          answerModels.reduce((sum, m) => sum + (m?.prompt_tokens ?? 0) + (m?.completion_tokens ?? 0), 0)
        )

        const pttl = yield* Effect.promise(() => raw.pttl(statsKey(session)))
        assert.isTrue(pttl > 0 && pttl <= 60_000, `pttl ${pttl}`)
      }),
    60_000
  )

  it.scopedLive(
    "a Redis stopped mid-run: requests are still served, the lost increments counted and logged, session-stats 503",
    () =>
      Effect.gen(function*() {
        const port = yield* closedPort
        const dir = mkdtempSync(path.join(tmpdir(), "switchyard-totals-down-"))
        const own = yield* ownRedis(port, dir)
        yield* pingUntilUp(port)
        const session = unique("down")
        const warnings: Array<string> = []
        const logger = Logger.make(({ annotations, message }) => {
          warnings.push(JSON.stringify({ message, annotations: Object.fromEntries(annotations) }))
        })
        const server = yield* startServer(
          deployment(`redis://127.0.0.1:${port}`),
          { routingLog: { path: path.join(dir, "routing.jsonl") }, prices },
          Option.some(logger)
        )
        yield* script(server.upstream, 0.9)
        assert.strictEqual(yield* chatAt(server.url, session), 200)
        assert.strictEqual((yield* statsOnceCounted(server.url, session, 2)).total_calls, 2)

        yield* own.stop
        const lostBefore = yield* errorCount("totals_add")
        for (let i = 0; i < 2; i++) assert.strictEqual(yield* chatAt(server.url, session), 200)
        // two lines a request (the judge call and the answer), each lost and counted
        const lost = yield* until(errorCount("totals_add"), (n) => n >= lostBefore + 4)
        assert.strictEqual(lost - lostBefore, 4)
        const notAdded = warnings.filter((w) => w.includes("a line was not added to its session's totals"))
        assert.lengthOf(notAdded, 4)
        for (const warning of notAdded) assert.include(warning, `"redis":"redis://127.0.0.1:${port}"`)

        const readsBefore = yield* errorCount("totals_get")
        const unreadable = yield* statsAt(server.url, session)
        assert.strictEqual(unreadable.status, 503)
        assert.deepStrictEqual(JSON.parse(unreadable.body), {
          error: {
            message: "Session totals unavailable: the session store cannot be read",
            type: "server_error",
            code: "session_totals_unavailable"
          }
        })
        assert.strictEqual(yield* errorCount("totals_get"), readsBefore + 1)
      }),
    30_000
  )
})
