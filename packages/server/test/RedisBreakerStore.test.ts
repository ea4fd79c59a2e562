/**
 * The circuit breakers' shared store in Redis against a real `redis-server` (see
 * RedisSessionStore.test.ts for where it comes from and when these tests skip): the records (the
 * newest kept, whatever the order of writes), the probe leases, and an outage — every failed command
 * counted under `operation="breaker"`, one WARN when it starts and one INFO when Redis answers
 * again. Every key a test writes carries this run's unique suffix and is deleted afterwards.
 */
import { assert, describe, it } from "@effect/vitest"
import type * as Breaker from "@switchyard-ts/client/Breaker"
import * as RedisBreakerStore from "@switchyard-ts/server/RedisBreakerStore"
import * as RedisSessionStore from "@switchyard-ts/server/RedisSessionStore"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import * as path from "node:path"
import {
  capturingLogs,
  cleanUp,
  closedPort,
  errorCount,
  ownRedis,
  pingUntilUp,
  rawClient,
  redisUrl,
  skipWithoutRedis,
  unique
} from "./redis.js"

const prefix = RedisBreakerStore.defaultKeyPrefix

/** The store over a connection to `url`. */
const storeAt = (url: string, commandTimeoutMs?: number) =>
  Effect.flatMap(
    RedisSessionStore.connect({
      url: Redacted.make(url),
      ...(commandTimeoutMs === undefined ? {} : { commandTimeoutMs })
    }),
    (connection) => RedisBreakerStore.make(connection)
  )

describe.skipIf(skipWithoutRedis)("RedisBreakerStore against a real redis-server", () => {
  it.scopedLive("a record is kept only if newer, whatever the order of the writes; an unreadable one reads as absent", () =>
    Effect.gen(function*() {
      const raw = yield* rawClient
      const client = unique("breaker-records")
      const other = unique("breaker-none")
      yield* cleanUp(raw, () => [prefix + client, prefix + other])
      const store = yield* storeAt(yield* redisUrl)

      yield* store.write(client, { state: "open", opened_at: 1_000, until: 6_000 })
      assert.deepStrictEqual(
        JSON.parse((yield* Effect.promise(() => raw.get(prefix + client))) ?? "null"),
        { state: "open", opened_at: 1_000, until: 6_000 }
      )
      // a replica's close written after a newer opening (out of order) does not replace it
      yield* store.write(client, { state: "open", opened_at: 2_000, until: 7_000 })
      yield* store.write(client, { state: "closed", closed_at: 1_500 })
      yield* store.write(client, { state: "closed", closed_at: 2_000 })
      assert.deepStrictEqual(yield* store.read([client, other]), [
        Option.some<Breaker.SharedRecord>({ state: "open", opened_at: 2_000, until: 7_000 }),
        Option.none()
      ])
      yield* store.write(client, { state: "closed", closed_at: 2_001 })
      assert.deepStrictEqual(yield* store.read([client]), [
        Option.some<Breaker.SharedRecord>({ state: "closed", closed_at: 2_001 })
      ])

      // a value that is no record reads as absent, and the next write replaces it
      yield* Effect.promise(() => raw.set(prefix + client, "{\"state\":\"ajar\"}"))
      assert.deepStrictEqual(yield* store.read([client]), [Option.none()])
      yield* store.write(client, { state: "open", opened_at: 10, until: 20 })
      assert.deepStrictEqual(yield* store.read([client]), [
        Option.some<Breaker.SharedRecord>({ state: "open", opened_at: 10, until: 20 })
      ])
      assert.isTrue(yield* store.reachable)
    }))

  it.scopedLive("one probe lease per opening, taken with NX and expiring after its ttl", () =>
    Effect.gen(function*() {
      const raw = yield* rawClient
      const client = unique("breaker-lease")
      yield* cleanUp(
        raw,
        () => [RedisBreakerStore.leaseKey(prefix, client, 1_000), RedisBreakerStore.leaseKey(prefix, client, 2_000)]
      )
      const a = yield* storeAt(yield* redisUrl)
      const b = yield* storeAt(yield* redisUrl)
      assert.isTrue(yield* a.lease(client, 1_000, 300))
      assert.isFalse(yield* b.lease(client, 1_000, 300))
      assert.isFalse(yield* a.lease(client, 1_000, 300))
      // another opening has a lease of its own
      assert.isTrue(yield* b.lease(client, 2_000, 60_000))
      const ttl = yield* Effect.promise(() => raw.pttl(RedisBreakerStore.leaseKey(prefix, client, 1_000)))
      assert.isTrue(ttl > 0 && ttl <= 300, `pttl ${ttl}`)
      assert.match(
        (yield* Effect.promise(() => raw.get(RedisBreakerStore.leaseKey(prefix, client, 1_000)))) ?? "",
        new RegExp(`:${process.pid}$`)
      )
      yield* Effect.sleep("350 millis")
      assert.isTrue(yield* b.lease(client, 1_000, 300))
    }))

  it.scopedLive("an outage: each failed command counted under breaker, one WARN when it starts, one INFO when Redis answers again", () =>
    Effect.gen(function*() {
      yield* redisUrl // CI's redis-server is on PATH; this test runs its own on a free port
      const port = yield* closedPort
      const dir = mkdtempSync(path.join(tmpdir(), "switchyard-redis-own-"))
      const first = yield* ownRedis(port, dir)
      yield* pingUntilUp(port)
      const lines: Array<string> = []
      const store = yield* storeAt(`redis://127.0.0.1:${port}`, 60_000).pipe(capturingLogs(lines))
      const client = unique("breaker-outage")
      assert.deepStrictEqual(yield* store.read([client]).pipe(capturingLogs(lines)), [Option.none()])

      yield* first.stop
      const before = yield* errorCount("breaker")
      // At once (a one-minute command timeout could not end them): ioredis fails commands while disconnected.
      for (let i = 0; i < 5; i++) {
        const failed = yield* Effect.either(store.read([client])).pipe(capturingLogs(lines))
        assert.isTrue(Either.isLeft(failed))
      }
      assert.isTrue(Either.isLeft(yield* Effect.either(store.lease(client, 1, 1_000)).pipe(capturingLogs(lines))))
      assert.strictEqual((yield* errorCount("breaker")) - before, 6)
      assert.isFalse(yield* store.reachable)
      const warnings = () => lines.filter((line) => line.includes("circuit breakers: Redis unavailable"))
      const infos = () => lines.filter((line) => line.includes("circuit breakers: Redis answers again"))
      assert.lengthOf(warnings(), 1)
      assert.lengthOf(infos(), 0)
      assert.include(warnings()[0], `redis://127.0.0.1:${port}`)
      assert.include(warnings()[0], "\"operation\":\"breaker\"")

      // A fresh redis-server on the same port: the client reconnects by itself.
      yield* ownRedis(port, dir)
      yield* pingUntilUp(port)
      let recovered = false
      for (let i = 0; i < 100 && !recovered; i++) {
        recovered = Either.isRight(yield* Effect.either(store.read([client])).pipe(capturingLogs(lines)))
        if (!recovered) yield* Effect.sleep("50 millis")
      }
      assert.isTrue(recovered, "the store did not reconnect within 5 s")
      yield* store.read([client]).pipe(capturingLogs(lines))
      assert.isTrue(yield* store.reachable)
      assert.lengthOf(warnings(), 1)
      assert.lengthOf(infos(), 1)
      // nothing else was logged: no line per failed command
      assert.lengthOf(lines, 2)
    }))
})
