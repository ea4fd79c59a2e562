/**
 * Breakers shared by replicas, under the TestClock: two registries (two replicas) over one
 * in-memory shared store. An opening reaches the other replica at its next read, one replica probes
 * after the cooldown and its outcome reaches the other, a lease that is never reported runs out, and
 * a store that cannot be reached leaves each replica with its own breaker (its transitions written
 * when the store answers again). The Redis store itself is tested against a real redis-server in the
 * server package.
 */
import { assert, describe, it } from "@effect/vitest"
import { CircuitOpen, type ClientFailure, TransportError } from "@switchyard-ts/protocol/Errors"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import * as TestClock from "effect/TestClock"
import * as Breaker from "../src/Breaker.js"
import * as Phases from "../src/internal/breakerPhase.js"
import type { LlmClient } from "../src/Target.js"

let counter = 0
/** A client name unique to one test: the breaker gauge's registry is process-global. */
const uniqueName = () => `shared-${process.pid}-${++counter}`

const interval = Breaker.defaultSyncIntervalMs

const llmClient = (name: string, settings: Breaker.Settings, timeoutMs: Option.Option<number>): LlmClient => ({
  name,
  format: "openai_chat",
  baseUrl: "http://upstream.test/v1",
  apiKey: Option.none(),
  extraHeaders: {},
  maxRetries: 0,
  timeoutMs,
  breaker: Option.some(settings)
})

/** One replica: a shared registry over `store` with `client` registered, and a counter of the calls it ran. */
const replica = (store: Breaker.MemoryStore, client: LlmClient) =>
  Effect.gen(function*() {
    const registry = yield* Breaker.makeSharedRegistry({ store })
    yield* registry.register(client)
    const breaker = yield* Effect.flatMap(registry.forClient(client), (found) =>
      Option.match(found, {
        onNone: () => Effect.dieMessage("the client has a breaker table"),
        onSome: Effect.succeed
      }))
    const ran = yield* Ref.make(0)
    /** A call that runs `body` (counted) under the breaker. */
    const call = (body: Effect.Effect<string, ClientFailure>) =>
      breaker.guard(Effect.zipRight(Ref.update(ran, (n) => n + 1), body), {
        target: "model",
        isFailure: Breaker.isCountedFailure
      })
    return { registry, breaker, ran: Ref.get(ran), call }
  })

type Replica = Effect.Effect.Success<ReturnType<typeof replica>>

const down: Effect.Effect<string, ClientFailure> = Effect.fail(
  new TransportError({ target: "model", reason: "connection refused" })
)
const up: Effect.Effect<string, ClientFailure> = Effect.succeed("answer")

/** Fail `times` calls on `r` (each one runs). */
const failTimes = (r: Replica, times: number) =>
  Effect.forEach(Array.from({ length: times }), () => Effect.either(r.call(down)), { discard: true })

const refusedBy = (client: string) => Either.left(new CircuitOpen({ target: "model", client }))

/** Two replicas of one client (threshold 2, cooldown 5 s, the lease its `timeout_ms` of 3 s) over one store. */
const twoReplicas = Effect.gen(function*() {
  const store = yield* Breaker.makeMemoryStore
  const name = uniqueName()
  const client = llmClient(name, { failureThreshold: 2, cooldownMs: 5_000 }, Option.some(3_000))
  const a = yield* replica(store, client)
  const b = yield* replica(store, client)
  return { store, name, client, a, b }
})

describe("Breakers shared by replicas (TestClock)", () => {
  it.scoped("an opening on A reaches B at B's next read: B refuses without running the call", () =>
    Effect.gen(function*() {
      const { a, b, name } = yield* twoReplicas
      yield* failTimes(a, 2)
      assert.deepStrictEqual(yield* a.breaker.snapshot, { state: "open", opened_at: Option.some(0), shared: true })
      // B has not read yet: its own state decides its calls, nothing waits for the store
      assert.strictEqual(yield* b.breaker.state, "closed")

      yield* TestClock.adjust(interval)
      assert.deepStrictEqual(yield* b.breaker.snapshot, { state: "open", opened_at: Option.some(0), shared: true })
      assert.deepStrictEqual(yield* Effect.either(b.call(up)), refusedBy(name))
      assert.strictEqual(yield* b.ran, 0)
      // B keeps A's cooldown: still refused just before it ends
      yield* TestClock.adjust(5_000 - interval - 1)
      assert.deepStrictEqual(yield* Effect.either(b.call(up)), refusedBy(name))
      assert.strictEqual(yield* b.ran, 0)
      // read through Breaker.read, as an endpoint would
      assert.deepStrictEqual(
        yield* Breaker.read(b.registry.statuses, name),
        Option.some({ state: "open" as const, opened_at: Option.some(0), shared: true })
      )
      assert.deepStrictEqual(yield* Breaker.read(b.registry.statuses, "no-such-client"), Option.none())
    }))

  it.scoped("after the cooldown one replica probes for all; its success closes the breaker on both", () =>
    Effect.gen(function*() {
      const { a, b, name } = yield* twoReplicas
      yield* failTimes(a, 2)
      yield* TestClock.adjust(5_000)
      assert.strictEqual(yield* b.breaker.state, "open")

      // A's probe is in flight (the upstream has not answered) when B's first call after the cooldown comes
      const answer = yield* Deferred.make<string, ClientFailure>()
      const probe = yield* Effect.fork(a.call(Deferred.await(answer)))
      yield* Effect.yieldNow()
      assert.strictEqual(yield* a.breaker.state, "half_open")
      assert.deepStrictEqual(yield* Effect.either(b.call(up)), refusedBy(name))
      assert.strictEqual(yield* b.ran, 0)
      assert.deepStrictEqual(yield* b.breaker.snapshot, { state: "open", opened_at: Option.some(0), shared: true })

      yield* Deferred.succeed(answer, "recovered")
      assert.strictEqual(yield* Fiber.join(probe), "recovered")
      assert.strictEqual(yield* a.breaker.state, "closed")
      yield* TestClock.adjust(interval)
      assert.deepStrictEqual(yield* b.breaker.snapshot, { state: "closed", opened_at: Option.none(), shared: true })
      assert.strictEqual(yield* b.call(up), "answer")
      assert.strictEqual(yield* b.ran, 1)
      assert.strictEqual(yield* a.ran, 3)
    }))

  it.scoped("a failed probe re-opens the breaker on both, for a cooldown counted from the probe", () =>
    Effect.gen(function*() {
      const { a, b, name } = yield* twoReplicas
      yield* failTimes(a, 2)
      yield* TestClock.adjust(5_000 + interval)
      // B probes this time (its first call after the cooldown takes the lease), and fails
      assert.isTrue(Either.isLeft(yield* Effect.either(b.call(down))))
      assert.strictEqual(yield* b.ran, 1)
      const reopened = 5_000 + interval
      assert.deepStrictEqual(yield* b.breaker.snapshot, {
        state: "open",
        opened_at: Option.some(reopened),
        shared: true
      })

      yield* TestClock.adjust(interval)
      assert.deepStrictEqual(yield* a.breaker.snapshot, {
        state: "open",
        opened_at: Option.some(reopened),
        shared: true
      })
      // A's call now would have probed under the old cooldown; the new one refuses it
      assert.deepStrictEqual(yield* Effect.either(a.call(up)), refusedBy(name))
      assert.strictEqual(yield* a.ran, 2)
      // at the end of the new cooldown A probes (the new opening has a lease of its own) and closes it
      yield* TestClock.adjust(5_000 - interval)
      assert.strictEqual(yield* a.call(up), "answer")
      yield* TestClock.adjust(interval)
      assert.strictEqual(yield* b.breaker.state, "closed")
    }))

  it.scoped("a probe that never reports: once its lease has run out, another replica probes", () =>
    Effect.gen(function*() {
      const { a, b, name } = yield* twoReplicas
      yield* failTimes(a, 2)
      yield* TestClock.adjust(5_000)
      // A's probe hangs (its replica stuck or gone): it holds the lease for the client's timeout_ms, 3 s
      const stuck = yield* Effect.fork(a.call(Effect.never))
      yield* Effect.yieldNow()
      assert.deepStrictEqual(yield* Effect.either(b.call(up)), refusedBy(name))
      yield* TestClock.adjust(2_999)
      assert.deepStrictEqual(yield* Effect.either(b.call(up)), refusedBy(name))
      assert.strictEqual(yield* b.ran, 0)
      yield* TestClock.adjust(1)
      assert.strictEqual(yield* b.call(up), "answer")
      assert.strictEqual(yield* b.ran, 1)
      yield* TestClock.adjust(interval)
      // B's success, newer than A's opening, closes A too, its hung probe notwithstanding
      assert.strictEqual(yield* a.breaker.state, "closed")
      yield* Fiber.interrupt(stuck)
    }))

  it.scoped("an interrupted probe keeps its lease: the same replica's next call probes at once", () =>
    Effect.gen(function*() {
      const { a, b, name } = yield* twoReplicas
      yield* failTimes(a, 2)
      yield* TestClock.adjust(5_000)
      const interrupted = yield* Effect.fork(a.call(Effect.never))
      yield* Effect.yieldNow()
      yield* Fiber.interrupt(interrupted)
      assert.strictEqual(yield* a.breaker.state, "open")
      assert.strictEqual(yield* a.call(up), "answer")
      assert.strictEqual(yield* a.breaker.state, "closed")
      // B, whose lease request A's still holds, is refused until A's success reaches it
      assert.deepStrictEqual(yield* Effect.either(b.call(up)), refusedBy(name))
      yield* TestClock.adjust(interval)
      assert.strictEqual(yield* b.call(up), "answer")
    }))

  it.scoped("a store that cannot be reached: each replica's breaker decides alone; a transition made meanwhile is shared once it answers", () =>
    Effect.gen(function*() {
      const { a, b, store } = yield* twoReplicas
      yield* store.setReachable(false)
      yield* TestClock.adjust(interval)
      yield* failTimes(a, 2)
      assert.deepStrictEqual(yield* a.breaker.snapshot, {
        state: "open",
        opened_at: Option.some(interval),
        shared: false
      })
      yield* TestClock.adjust(interval * 4)
      // B never learnt of it: its calls go through its own closed breaker
      assert.deepStrictEqual(yield* b.breaker.snapshot, { state: "closed", opened_at: Option.none(), shared: false })
      assert.strictEqual(yield* b.call(up), "answer")

      // after A's cooldown, A probes on its own (no lease to take): a failure re-opens A only
      yield* TestClock.adjust(5_000)
      assert.isTrue(Either.isLeft(yield* Effect.either(a.call(down))))
      assert.strictEqual(yield* a.ran, 3)
      const reopened = interval * 5 + 5_000
      assert.deepStrictEqual(yield* a.breaker.snapshot, {
        state: "open",
        opened_at: Option.some(reopened),
        shared: false
      })

      // the store answers again: A's opening, written at A's next round, reaches B at its next read
      yield* store.setReachable(true)
      yield* TestClock.adjust(interval)
      yield* TestClock.adjust(interval)
      assert.deepStrictEqual(yield* b.breaker.snapshot, {
        state: "open",
        opened_at: Option.some(reopened),
        shared: true
      })
      assert.strictEqual(yield* b.ran, 1)
    }))

  it.scoped("the store keeps the newest record: an older transition written late does not replace it", () =>
    Effect.gen(function*() {
      const store = yield* Breaker.makeMemoryStore
      const name = uniqueName()
      yield* store.write(name, { state: "closed", closed_at: 200 })
      yield* store.write(name, { state: "open", opened_at: 100, until: 5_100 })
      assert.deepStrictEqual(yield* store.read([name, "other"]), [
        Option.some<Breaker.SharedRecord>({ state: "closed", closed_at: 200 }),
        Option.none()
      ])
      yield* store.write(name, { state: "open", opened_at: 300, until: 5_300 })
      assert.deepStrictEqual(yield* store.read([name]), [
        Option.some<Breaker.SharedRecord>({ state: "open", opened_at: 300, until: 5_300 })
      ])
      // one lease per opening, until it runs out
      assert.isTrue(yield* store.lease(name, 300, 1_000))
      assert.isFalse(yield* store.lease(name, 300, 1_000))
      assert.isTrue(yield* store.lease(name, 400, 1_000))
      yield* TestClock.adjust(1_000)
      assert.isTrue(yield* store.lease(name, 300, 1_000))
    }))

  it.scoped("a stale opening found in the store (its cooldown long over) is probed by the first call", () =>
    Effect.gen(function*() {
      const store = yield* Breaker.makeMemoryStore
      const name = uniqueName()
      yield* TestClock.adjust(60_000)
      yield* store.write(name, { state: "open", opened_at: 1_000, until: 6_000 })
      const r = yield* replica(store, llmClient(name, { failureThreshold: 2, cooldownMs: 5_000 }, Option.none()))
      yield* TestClock.adjust(interval)
      assert.deepStrictEqual(yield* r.breaker.snapshot, { state: "open", opened_at: Option.some(1_000), shared: true })
      assert.strictEqual(yield* r.call(up), "answer")
      assert.strictEqual(yield* r.breaker.state, "closed")
    }))

  it("a transition is later than the record it follows, even in the same millisecond, so it is written", () => {
    const settings = { failureThreshold: 1, cooldownMs: 100 }
    const adopted = Phases.adopt(Phases.initial, { state: "closed", closed_at: 1_000 })
    assert.deepStrictEqual(adopted, { _tag: "Closed", failures: 0, at: 1_000 })
    const opened = Phases.settle(adopted, false, "failure", 1_000, settings, 100)
    assert.deepStrictEqual(opened, { _tag: "Open", at: 1_001, until: 1_101 })
    assert.deepStrictEqual(Phases.recordOf(opened), { state: "open", opened_at: 1_001, until: 1_101 })
    // an older or equal record changes nothing
    assert.strictEqual(Phases.adopt(opened, { state: "closed", closed_at: 1_001 }), opened)
  })

  it.effect("without a shared store a breaker is the process's own: never shared", () =>
    Effect.gen(function*() {
      const registry = yield* Breaker.makeRegistry
      const name = uniqueName()
      yield* registry.register(llmClient(name, { failureThreshold: 1, cooldownMs: 1_000 }, Option.none()))
      assert.deepStrictEqual(
        yield* Breaker.read(registry.statuses, name),
        Option.some({ state: "closed" as const, opened_at: Option.none(), shared: false })
      )
    }))
})
