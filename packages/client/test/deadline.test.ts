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

  it.live("stream, live clock: elements in time pass; a late element fails the stream with onTimeout", () =>
    Effect.gen(function*() {
      const inTime = yield* Stream.runCollect(Deadline.timeoutFailStream(Stream.make(1, 2, 3), 60_000, () => new TimedOut()))
      assert.deepStrictEqual(Array.from(inTime), [1, 2, 3])
      const late = Stream.concat(Stream.make(1), Stream.never)
      const result = yield* Effect.either(Stream.runCollect(Deadline.timeoutFailStream(late, 5, () => new TimedOut())))
      assert.isTrue(Either.isLeft(result) && result.left instanceof TimedOut)
    }))

  it.effect("stream, TestClock: each element gets the whole deadline", () =>
    Effect.gen(function*() {
      const slow = Stream.repeatEffect(Effect.as(Effect.sleep("900 millis"), 1)).pipe(Stream.take(3))
      const fiber = yield* Effect.fork(Effect.either(Stream.runCollect(Deadline.timeoutFailStream(slow, 1000, () => new TimedOut()))))
      yield* TestClock.adjust("3 seconds")
      const result = yield* Fiber.join(fiber)
      assert.isTrue(Either.isRight(result) && result.right.length === 3)
    }))
})
