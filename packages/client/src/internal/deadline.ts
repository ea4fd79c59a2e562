/**
 * The deadline of a logical call: `Effect.timeoutFail` without the join, and without waiting for
 * the interrupted call.
 *
 * `Effect.timeoutFail` races `self` against a sleeping fiber, joins the winner and waits for the
 * loser's interruption. This runs `self` in one child fiber and the deadline in a second one that
 * only sleeps on the fiber's `Clock` (`Effect.sleep`: a Node timer under the live clock, woken by
 * `TestClock.adjust` under a test clock; the same code runs under both, so tests exercise the
 * production path). The caller waits on the two fibers' observers, whichever ends first:
 * - the call ends in time: its exit is the result and the timer fiber is interrupted (its timer
 *   cleared) in the background;
 * - the timer fires: the call fails with `onTimeout()` at once while the child's interruption
 *   (aborting an in-flight HTTP request takes 1.5–7.5 ms) completes in the background: a judge past
 *   its deadline lets the request go on without waiting for the socket to be torn down.
 *
 * Interrupting the caller interrupts the timer and the child, and waits for the child. Unlike
 * `Effect.timeoutFail` it does not copy the child's `FiberRef` changes back to the caller: the
 * call's effects change none that the caller reads. Durations follow `Duration.millis` and the
 * clock's `sleep`, as for `Effect.timeoutFail`: 0 or less fires at once, and a delay longer than a
 * Node timer takes (2^31 - 1 ms) never fires under the live clock.
 *
 * @internal
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"

/** `self`, failing with `onTimeout()` when it has not ended within `millis` of the fiber's `Clock`. */
export const timeoutFail = <A, E, R, E2>(
  self: Effect.Effect<A, E, R>,
  millis: number,
  onTimeout: () => E2
): Effect.Effect<A, E | E2, R> =>
  Effect.fiberIdWith((caller) =>
    Effect.uninterruptibleMask((restore) =>
      Effect.flatMap(
        Effect.fork(restore(self)),
        (child) =>
          Effect.flatMap(Effect.fork(Effect.interruptible(Effect.sleep(Duration.millis(millis)))), (timer) =>
            Effect.onInterrupt(
              restore(Effect.async<A, E | E2>((resume) => {
                let settled = false
                const onChildExit = (exit: Exit.Exit<A, E>) => {
                  if (settled) {
                    return
                  }
                  settled = true
                  timer.removeObserver(onTimerExit)
                  timer.unsafeInterruptAsFork(caller)
                  resume(exit)
                }
                const onTimerExit = (exit: Exit.Exit<void>) => {
                  // The timer only ends otherwise when it is interrupted: then the call decides.
                  if (settled || Exit.isFailure(exit)) return
                  settled = true
                  child.removeObserver(onChildExit)
                  resume(Effect.zipRight(Fiber.interruptFork(child), Effect.fail(onTimeout())))
                }
                child.addObserver(onChildExit)
                if (!settled) timer.addObserver(onTimerExit)
                return Effect.sync(() => {
                  child.removeObserver(onChildExit)
                  timer.removeObserver(onTimerExit)
                  timer.unsafeInterruptAsFork(caller)
                })
              })),
              () =>
                Fiber.interrupt(child)
            ))
      )
    )
  )

/**
 * `Stream.timeoutFail` over {@link timeoutFail}: the stream fails with `onTimeout()` when one
 * element (pull) takes longer than `millis`. The same per-pull construction as `Stream.timeoutFail`
 * (which pays `Effect.timeoutFail`'s race, join and awaited interruption for every chunk).
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
