import { assert, describe, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import * as Deadline from "../src/internal/deadline.js"

class TimedOut {
  readonly _tag = "TimedOut"
}

describe("internal deadline", () => {
  it.live("live clock: a call that ends in time keeps its success or failure", () =>
    Effect.gen(function*() {
      assert.strictEqual(yield* Deadline.timeoutFail(Effect.succeed(1), 60_000, () => new TimedOut()), 1)
      const failed = yield* Effect.either(Deadline.timeoutFail(Effect.fail("boom"), 60_000, () => new TimedOut()))
      assert.deepStrictEqual(failed, Either.left("boom"))
    }))

  it.live("live clock: expiry fails with onTimeout at once and interrupts the call in the background", () =>
    Effect.gen(function*() {
      const release = yield* Deferred.make<void>()
      const finalized = yield* Deferred.make<void>()
      // A call whose interruption is slow (like aborting an in-flight HTTP request).
      const stalled = Effect.never.pipe(
        Effect.onInterrupt(() => Effect.zipRight(Deferred.await(release), Deferred.succeed(finalized, undefined)))
      )
      const result = yield* Effect.either(Deadline.timeoutFail(stalled, 5, () => new TimedOut()))
      assert.isTrue(Either.isLeft(result) && result.left instanceof TimedOut)
      assert.isFalse(yield* Deferred.isDone(finalized), "the timeout did not wait for the call's finalizers")
      yield* Deferred.succeed(release, undefined)
      yield* Deferred.await(finalized).pipe(Effect.timeout("5 seconds"))
    }))

  it.live("live clock: interrupting the caller interrupts the call", () =>
    Effect.gen(function*() {
      const started = yield* Deferred.make<void>()
      const finalized = yield* Deferred.make<void>()
      const stalled = Deferred.succeed(started, undefined).pipe(
        Effect.zipRight(Effect.never),
        Effect.onInterrupt(() => Deferred.succeed(finalized, undefined))
      )
      const caller = yield* Effect.fork(Deadline.timeoutFail(stalled, 60_000, () => new TimedOut()))
      yield* Deferred.await(started)
      assert.isTrue(Exit.isInterrupted(yield* Fiber.interrupt(caller)))
      assert.isTrue(yield* Deferred.isDone(finalized))
    }))

  it.effect("TestClock: fires exactly at the deadline", () =>
    Effect.gen(function*() {
      const fiber = yield* Effect.fork(Effect.either(Deadline.timeoutFail(Effect.never, 1000, () => new TimedOut())))
      yield* TestClock.adjust("999 millis")
      assert.isNull(fiber.unsafePoll())
      yield* TestClock.adjust("1 millis")
      const result = yield* Fiber.join(fiber)
      assert.isTrue(Either.isLeft(result) && result.left instanceof TimedOut)
    }))

  it.effect("TestClock: expiry fails with onTimeout at once and interrupts the call in the background", () =>
    Effect.gen(function*() {
      const release = yield* Deferred.make<void>()
      const finalized = yield* Deferred.make<void>()
      // A call whose interruption is slow (like aborting an in-flight HTTP request).
      const stalled = Effect.never.pipe(
        Effect.onInterrupt(() => Effect.zipRight(Deferred.await(release), Deferred.succeed(finalized, undefined)))
      )
      // The caller runs in this fiber: a forked caller would wait for its children when it ends.
      yield* Effect.fork(TestClock.adjust("1 second"))
      const result = yield* Effect.either(Deadline.timeoutFail(stalled, 1000, () => new TimedOut()))
      assert.isTrue(Either.isLeft(result) && result.left instanceof TimedOut)
      assert.strictEqual(yield* TestClock.currentTimeMillis, 1000)
      assert.isFalse(yield* Deferred.isDone(finalized), "the timeout did not wait for the call's finalizers")
      yield* Deferred.succeed(release, undefined)
      yield* Deferred.await(finalized)
    }))

  it.effect("TestClock: a call that ends in time keeps its result, and its timer never fires afterwards", () =>
    Effect.gen(function*() {
      let timeouts = 0
      const onTimeout = () => {
        timeouts++
        return new TimedOut()
      }
      const fiber = yield* Effect.fork(Effect.all([
        Deadline.timeoutFail(Effect.as(Effect.sleep("999 millis"), 1), 1000, onTimeout),
        Effect.either(
          Deadline.timeoutFail(Effect.zipRight(Effect.sleep("10 millis"), Effect.fail("boom")), 1000, onTimeout)
        )
      ], { concurrency: "unbounded" }))
      yield* TestClock.adjust("999 millis")
      const [value, failed] = yield* Fiber.join(fiber)
      assert.strictEqual(value, 1)
      assert.deepStrictEqual(failed, Either.left("boom"))
      yield* TestClock.adjust("1 hour")
      assert.strictEqual(timeouts, 0)
    }))

  it.effect("TestClock: interrupting the caller interrupts the call and waits for it", () =>
    Effect.gen(function*() {
      const started = yield* Deferred.make<void>()
      const finalized = yield* Deferred.make<void>()
      let timeouts = 0
      const stalled = Deferred.succeed(started, undefined).pipe(
        Effect.zipRight(Effect.never),
        Effect.onInterrupt(() => Effect.zipRight(Effect.sleep("5 millis"), Deferred.succeed(finalized, undefined)))
      )
      const caller = yield* Effect.fork(Deadline.timeoutFail(stalled, 1000, () => {
        timeouts++
        return new TimedOut()
      }))
      yield* Deferred.await(started)
      const interrupted = yield* Effect.fork(Fiber.interrupt(caller))
      yield* TestClock.adjust("5 millis")
      assert.isTrue(Exit.isInterrupted(yield* Fiber.join(interrupted)))
      assert.isTrue(yield* Deferred.isDone(finalized))
      yield* TestClock.adjust("1 hour")
      assert.strictEqual(timeouts, 0)
    }))

  it.effect("TestClock: a deadline of 0 or less fires at once", () =>
    Effect.gen(function*() {
      for (const millis of [0, -5]) {
        const result = yield* Effect.either(Deadline.timeoutFail(Effect.never, millis, () => new TimedOut()))
        assert.isTrue(Either.isLeft(result) && result.left instanceof TimedOut, String(millis))
      }
    }))

  it.live("stream, live clock: elements in time pass; a late element fails the stream with onTimeout", () =>
    Effect.gen(function*() {
      const inTime = yield* Stream.runCollect(
        Deadline.timeoutFailStream(Stream.make(1, 2, 3), 60_000, () => new TimedOut())
      )
      assert.deepStrictEqual(Array.from(inTime), [1, 2, 3])
      const late = Stream.concat(Stream.make(1), Stream.never)
      const result = yield* Effect.either(Stream.runCollect(Deadline.timeoutFailStream(late, 5, () => new TimedOut())))
      assert.isTrue(Either.isLeft(result) && result.left instanceof TimedOut)
    }))

  it.effect("stream, TestClock: a late element fails the stream with onTimeout exactly at the deadline", () =>
    Effect.gen(function*() {
      const late = Stream.concat(Stream.make(1), Stream.never)
      const fiber = yield* Effect.fork(
        Effect.either(Stream.runCollect(Deadline.timeoutFailStream(late, 1000, () => new TimedOut())))
      )
      yield* TestClock.adjust("999 millis")
      assert.isNull(fiber.unsafePoll())
      yield* TestClock.adjust("1 millis")
      const result = yield* Fiber.join(fiber)
      assert.isTrue(Either.isLeft(result) && result.left instanceof TimedOut)
    }))

  it.effect("stream, TestClock: each element gets the whole deadline", () =>
    Effect.gen(function*() {
      const slow = Stream.repeatEffect(Effect.as(Effect.sleep("900 millis"), 1)).pipe(Stream.take(3))
      const fiber = yield* Effect.fork(
        Effect.either(Stream.runCollect(Deadline.timeoutFailStream(slow, 1000, () => new TimedOut())))
      )
      yield* TestClock.adjust("3 seconds")
      const result = yield* Fiber.join(fiber)
      assert.isTrue(Either.isRight(result) && result.right.length === 3)
    }))
})
