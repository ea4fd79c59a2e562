import { assert, describe, it } from "@effect/vitest"
import * as SessionStore from "@switchyard-ts/routing/SessionStore"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as TestClock from "effect/TestClock"

const weak: SessionStore.SessionDecision = { target: "weak", tier: "weak" }
const strong: SessionStore.SessionDecision = { target: "strong", tier: "strong" }

const withStore = <A, E>(
  options: SessionStore.MemoryOptions,
  body: (store: SessionStore.SessionStore["Type"]) => Effect.Effect<A, E>
) => Effect.flatMap(SessionStore.SessionStore, body).pipe(Effect.provide(SessionStore.layerMemory(options)))

describe("SessionStore (memory)", () => {
  it.effect("get of an unknown key is none; put then get returns the decision; put overwrites", () =>
    withStore({ maxEntries: 10, ttlMs: 60_000 }, (store) =>
      Effect.gen(function*() {
        assert.deepStrictEqual(yield* store.get("a"), Option.none())
        yield* store.put("a", weak)
        yield* store.put("b", strong)
        assert.deepStrictEqual(yield* store.get("a"), Option.some(weak))
        assert.deepStrictEqual(yield* store.get("b"), Option.some(strong))
        yield* store.put("a", strong)
        assert.deepStrictEqual(yield* store.get("a"), Option.some(strong))
        assert.strictEqual(yield* store.size, 2)
      })))

  it.effect("each layer build is a fresh store", () =>
    Effect.gen(function*() {
      yield* withStore({ maxEntries: 10, ttlMs: 60_000 }, (store) => store.put("a", weak))
      const again = yield* withStore({ maxEntries: 10, ttlMs: 60_000 }, (store) => store.get("a"))
      assert.deepStrictEqual(again, Option.none())
    }))

  it.effect("beyond maxEntries the least recently put entry is evicted", () =>
    withStore({ maxEntries: 3, ttlMs: 60_000 }, (store) =>
      Effect.gen(function*() {
        yield* store.put("a", weak)
        yield* store.put("b", weak)
        yield* store.put("c", weak)
        assert.strictEqual(yield* store.size, 3)
        yield* store.put("d", strong)
        assert.strictEqual(yield* store.size, 3)
        assert.deepStrictEqual(yield* store.get("a"), Option.none())
        assert.deepStrictEqual(yield* store.get("b"), Option.some(weak))
        assert.deepStrictEqual(yield* store.get("d"), Option.some(strong))
      })))

  it.effect("a get refreshes recency: the least recently used entry goes, not the oldest put", () =>
    withStore({ maxEntries: 3, ttlMs: 60_000 }, (store) =>
      Effect.gen(function*() {
        yield* store.put("a", weak)
        yield* store.put("b", weak)
        yield* store.put("c", weak)
        assert.deepStrictEqual(yield* store.get("a"), Option.some(weak))
        yield* store.put("d", strong)
        assert.deepStrictEqual(yield* store.get("b"), Option.none())
        assert.deepStrictEqual(yield* store.get("a"), Option.some(weak))
        assert.deepStrictEqual(yield* store.get("c"), Option.some(weak))
        assert.deepStrictEqual(yield* store.get("d"), Option.some(strong))
      })))

  it.effect("re-putting an existing key refreshes it and does not grow the store", () =>
    withStore({ maxEntries: 2, ttlMs: 60_000 }, (store) =>
      Effect.gen(function*() {
        yield* store.put("a", weak)
        yield* store.put("b", weak)
        yield* store.put("a", strong)
        assert.strictEqual(yield* store.size, 2)
        yield* store.put("c", weak)
        assert.deepStrictEqual(yield* store.get("b"), Option.none())
        assert.deepStrictEqual(yield* store.get("a"), Option.some(strong))
      })))

  it.effect("an entry idle for longer than ttlMs is gone; exactly ttlMs is still alive", () =>
    withStore({ maxEntries: 10, ttlMs: 1_000 }, (store) =>
      Effect.gen(function*() {
        yield* store.put("a", weak)
        yield* store.put("b", strong)
        yield* TestClock.adjust("1000 millis")
        assert.deepStrictEqual(yield* store.get("a"), Option.some(weak))
        // `a` was touched at 1000 ms, `b` at 0: at 1001 ms only `b` is past its TTL.
        yield* TestClock.adjust("1 millis")
        assert.deepStrictEqual(yield* store.get("b"), Option.none())
        assert.strictEqual(yield* store.size, 1)
        yield* TestClock.adjust("1001 millis")
        assert.deepStrictEqual(yield* store.get("a"), Option.none())
        assert.strictEqual(yield* store.size, 0)
      })))

  it.effect("a touch before expiry keeps a session alive past its first TTL", () =>
    withStore({ maxEntries: 10, ttlMs: 1_000 }, (store) =>
      Effect.gen(function*() {
        yield* store.put("a", weak)
        yield* store.put("b", weak)
        for (let i = 0; i < 5; i++) {
          yield* TestClock.adjust("900 millis")
          assert.deepStrictEqual(yield* store.get("a"), Option.some(weak), `touch ${i}`)
        }
        assert.deepStrictEqual(yield* store.get("b"), Option.none())
        yield* TestClock.adjust("2 seconds")
        assert.deepStrictEqual(yield* store.get("a"), Option.none())
      })))

  it.effect("expiry is by idle time, also for entries touched out of put order", () =>
    withStore({ maxEntries: 10, ttlMs: 1_000 }, (store) =>
      Effect.gen(function*() {
        yield* store.put("a", weak)
        yield* TestClock.adjust("500 millis")
        yield* store.put("b", weak)
        yield* TestClock.adjust("400 millis")
        assert.deepStrictEqual(yield* store.get("a"), Option.some(weak))
        // a touched at 900, b at 500: at 1600 b has expired and a has not.
        yield* TestClock.adjust("700 millis")
        assert.strictEqual(yield* store.size, 1)
        assert.deepStrictEqual(yield* store.get("a"), Option.some(weak))
        assert.deepStrictEqual(yield* store.get("b"), Option.none())
      })))
})
