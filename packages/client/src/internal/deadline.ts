/**
 * The deadline of a logical call: `Effect.timeoutFail` with fewer fibers under the live clock.
 *
 * `Effect.timeoutFail` races `self` against a sleeping fiber (two forked fibers, a join and an
 * interruption per call): about a tenth of the CPU of a proxied request. Under the live clock this
 * runs `self` in one child fiber and times it with a plain timer; on expiry the call fails with
 * `onTimeout()` at once while the child's interruption (aborting an in-flight HTTP request takes
 * 1.5–7.5 ms) completes in the background: a judge past its deadline lets the request go on
 * without waiting for the socket to be torn down. Interrupting the caller interrupts the child. Under any other clock
 * (a `TestClock`) it is `Effect.timeoutFail` itself, so tests drive it with `TestClock.adjust`.
 * Unlike `Effect.timeoutFail` it does not copy the child's `FiberRef` changes back to the caller:
 * the call's effects change none that the caller reads.
 *
 * @internal
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"

/** The default services' clock: the one every fiber has unless a test replaced it. */
const liveClock = Effect.runSync(Effect.clock)

/** Longest delay a Node timer takes as given (longer ones would fire after 1 ms). */
const maxTimerMillis = 2 ** 31 - 1

/** `self`, failing with `onTimeout()` when it has not ended within `millis`. */
export const timeoutFail = <A, E, R, E2>(
  self: Effect.Effect<A, E, R>,
  millis: number,
  onTimeout: () => E2
): Effect.Effect<A, E | E2, R> =>
  Effect.clockWith((clock) =>
    clock !== liveClock || !(millis >= 0 && millis <= maxTimerMillis)
      ? Effect.timeoutFail(self, { duration: Duration.millis(millis), onTimeout })
      : Effect.uninterruptibleMask((restore) =>
        Effect.flatMap(Effect.fork(restore(self)), (child) =>
          Effect.onInterrupt(
            restore(Effect.async<A, E | E2>((resume) => {
              const onExit = (exit: Exit.Exit<A, E>) => {
                clearTimeout(timer)
                resume(exit)
              }
              const timer = setTimeout(() => {
                child.removeObserver(onExit)
                resume(Effect.zipRight(Fiber.interruptFork(child), Effect.fail(onTimeout())))
              }, millis)
              child.addObserver(onExit)
              return Effect.sync(() => {
                clearTimeout(timer)
                child.removeObserver(onExit)
              })
            })),
            () => Fiber.interrupt(child)
          ))
      )
  )

/**
 * `Stream.timeoutFail` over {@link timeoutFail}: the stream fails with `onTimeout()` when one
 * element (pull) takes longer than `millis`. The same per-pull construction as `Stream.timeoutFail`
 * (which pays `Effect.timeoutFail`'s two fibers for every chunk).
 */
export const timeoutFailStream = <A, E, R, E2>(
  self: Stream.Stream<A, E, R>,
  millis: number,
  onTimeout: () => E2
): Stream.Stream<A, E | E2, R> =>
  Stream.unwrapScoped(Effect.map(Stream.toPull(self), (pull) =>
    Stream.repeatEffectChunkOption(
      timeoutFail(pull, millis, (): Option.Option<E | E2> => Option.some(onTimeout()))
    )))
