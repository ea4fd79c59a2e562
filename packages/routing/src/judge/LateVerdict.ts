/**
 * Late verdicts (`late_verdict_ms`, `max_late_verdicts` on a classifier route under
 * `judge_failure = "fail_open"`): a judge call that misses the route's deadline (`judge_timeout_ms`)
 * is not aborted but given `late_verdict_ms` more in the background, while the request is routed
 * at the deadline exactly as `fail_open` routes any timed-out consultation. What the background
 * call comes to is the classifier cascade's to settle (a valid verdict becomes the session's stored
 * decision) and is counted in `switchyard_classifier_late_verdicts_total{judge_model,outcome}`.
 *
 * The routing log hears of it through the request's observer (`Runner.run`): the request's own
 * judge fact at the deadline (`timeout`, marked `continues` or `dropped`), then the call's own record
 * when it settles, marked with its {@link Outcome}.
 *
 * Bounded: at most `max_late_verdicts` calls of one route wait in the background; a call past its
 * deadline while the route is at the bound is aborted as without late verdicts (`dropped`). The
 * background calls run in a `FiberSet` of the scope the route was built in (the router layer's), so
 * closing that scope — shutdown — interrupts them.
 */
import * as ExpectedFailure from "@switchyard-ts/client/ExpectedFailure"
import { DeadlineExceeded } from "@switchyard-ts/protocol/Errors"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as FiberSet from "effect/FiberSet"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import type * as Evidence from "../Evidence.js"
import * as RoutingFacts from "../host/RoutingFacts.js"
import * as Metrics from "../Metrics.js"
import { type JudgeError, reasonOf } from "./Consultation.js"
import type * as Posture from "./Posture.js"

/**
 * What became of a call that missed its deadline (the metric's `outcome` label):
 * - `stored`: a valid verdict arrived in time and became the session's stored decision;
 * - `superseded`: a valid verdict arrived, but a newer request's verdict was stored meanwhile;
 * - `invalid`: the judge answered, unusably (`InvalidVerdict`);
 * - `failed`: the call failed (transport, status, circuit breaker);
 * - `expired`: `late_verdict_ms` passed too (the call was aborted);
 * - `dropped`: the route already had `max_late_verdicts` calls in the background (aborted at the deadline).
 */
export type Outcome = "stored" | "superseded" | "invalid" | "failed" | "expired" | "dropped"

/** A route's late-verdict keys, as the route options carry them. */
export interface Options {
  /** `judge_timeout_ms`: the deadline the request waits for. */
  readonly judgeTimeoutMs?: Option.Option<number>
  /** `late_verdict_ms`: how much longer a call past its deadline may run in the background. */
  readonly lateVerdictMs?: Option.Option<number>
  /** `max_late_verdicts`: at most this many background calls per route (default {@link defaultMaxLateVerdicts}). */
  readonly maxLateVerdicts?: number
}

/** `max_late_verdicts` when unset. */
export const defaultMaxLateVerdicts = 16

/** Late verdicts of one route, enabled. */
export interface Settings {
  readonly deadlineMs: number
  readonly lateMs: number
  readonly maxInFlight: number
}

/**
 * The route's late-verdict settings: some only under `fail_open` with both `judge_timeout_ms` and
 * `late_verdict_ms` (the configuration rejects `late_verdict_ms` otherwise).
 */
export const settings = (options: Options, posture: Posture.Posture): Option.Option<Settings> =>
  posture === "fail_open"
    ? Option.zipWith(
      options.judgeTimeoutMs ?? Option.none(),
      options.lateVerdictMs ?? Option.none(),
      (deadlineMs, lateMs): Settings => ({
        deadlineMs,
        lateMs,
        maxInFlight: options.maxLateVerdicts ?? defaultMaxLateVerdicts
      })
    )
    : Option.none()

/** Count one late call's outcome. */
export const record = (judgeModel: string, outcome: Outcome): Effect.Effect<void> =>
  Metric.update(
    Metrics.classifierLateVerdictsTotal.pipe(
      Metric.tagged("judge_model", judgeModel),
      Metric.tagged("outcome", outcome)
    ),
    1
  )

/** What a call that came back after its deadline settled to, for the metric and the routing log. */
export interface Settled {
  readonly outcome: Outcome
  /** A valid verdict's evidence, as it would have decided its request (`stored`, `superseded`); else none. */
  readonly verdict: Option.Option<Evidence.Evidence>
}

/** The bounded background of one route. */
export interface Runner {
  readonly settings: Settings
  /**
   * Run a judge call whose own deadline is `deadlineMs + lateMs`: the caller waits for it at most
   * `deadlineMs`. On time, its result is the caller's. Past the deadline the caller fails with
   * `DeadlineExceeded` (`afterMs = deadlineMs`) at once, and the call either goes on in the
   * background — `settle` receives its exit and answers what it came to; an exit that is a
   * `DeadlineExceeded` is `expired` without asking `settle` — or, at the bound, is interrupted
   * (`dropped`). A caller interrupted while waiting interrupts the call. `track` runs when the call
   * starts; the effect it returns runs once when the call is over (on time, dropped, settled or
   * interrupted).
   *
   * What the request's observer hears of the call: on time (or cut by the caller), the call's own
   * report. Past the deadline, at once a judge call that ended in `timeout` after the time waited,
   * marked `late: "continues"` (or `"dropped"`); then, when a continuing call settles, the call's own
   * report (one made of its exit when the judge made none) marked with its {@link Outcome} and the
   * verdict's evidence when valid. A call cut by shutdown is reported as the judge reports it
   * (`interrupted`), unmarked.
   */
  readonly run: <A, R>(
    call: Effect.Effect<A, JudgeError, R>,
    settle: (exit: Exit.Exit<A, JudgeError>) => Effect.Effect<Settled>,
    track: Effect.Effect<Effect.Effect<void>>
  ) => Effect.Effect<A, JudgeError, Exclude<R, RoutingFacts.Reporter> | RoutingFacts.Reporter>
  /** Calls waiting in the background now. */
  readonly inFlight: Effect.Effect<number>
}

const expired = (exit: Exit.Exit<unknown, JudgeError>): boolean =>
  Exit.isFailure(exit) &&
  Option.exists(Cause.failureOption(exit.cause), (error) => error._tag === "DeadlineExceeded")

/** How a call's exit is reported when its judge reported nothing (a judge of the host's own). */
const outcomeOf = (exit: Exit.Exit<unknown, JudgeError>): RoutingFacts.JudgeOutcome =>
  Exit.isSuccess(exit)
    ? "ok"
    : Option.match(Cause.failureOption(exit.cause), { onNone: () => "interrupted", onSome: reasonOf })

/**
 * The observer a call runs with: the request's, except that the judge's report of the call is held,
 * for the runner to pass on as it is (`tell`) or marked with what the late call came to (`settled`).
 */
const holding = (observer: RoutingFacts.Observer, judgeModel: string, startMs: number) => {
  let call: RoutingFacts.JudgeCall | undefined
  const tell = Effect.sync(() => {
    if (call !== undefined) observer.judgeCall(call)
  })
  const settled = (exit: Exit.Exit<unknown, JudgeError>, { outcome, verdict }: Settled) =>
    Effect.flatMap(Clock.currentTimeMillis, (now) =>
      Effect.sync(() => {
        const own: RoutingFacts.JudgeCall = call ?? {
          judgeModel,
          outcome: outcomeOf(exit),
          latencyMs: now - startMs,
          endedAtMs: now,
          usage: Option.none()
        }
        observer.judgeCall({ ...own, late: outcome, ...(Option.isSome(verdict) ? { verdict: verdict.value } : {}) })
      }))
  return {
    observer: {
      ...observer,
      judgeCall: (c: RoutingFacts.JudgeCall) => {
        call = c
      }
    },
    tell,
    settled
  }
}

/** A route's runner; its background calls live in `Scope`. */
export const make = (settings: Settings, judgeModel: string): Effect.Effect<Runner, never, Scope.Scope> =>
  Effect.map(FiberSet.make<unknown, unknown>(), (background) => {
    let inFlight = 0
    /** The request's own judge fact at the deadline: a timeout after the time waited, marked. */
    const atDeadline = (observer: RoutingFacts.Observer, startMs: number, late: "continues" | "dropped") =>
      Effect.flatMap(Clock.currentTimeMillis, (now) =>
        Effect.sync(() =>
          observer.judgeCall({
            judgeModel,
            outcome: "timeout",
            latencyMs: now - startMs,
            endedAtMs: now,
            usage: Option.none(),
            late
          })
        ))
    // One generator for the route, not one per request (docs/architecture.md, "Generators on the request path").
    const runMasked = Effect.fnUntraced(function*<A, R>(
      restore: <X, EX, RX>(effect: Effect.Effect<X, EX, RX>) => Effect.Effect<X, EX, RX>,
      call: Effect.Effect<A, JudgeError, R>,
      settle: (exit: Exit.Exit<A, JudgeError>) => Effect.Effect<Settled>,
      track: Effect.Effect<Effect.Effect<void>>
    ) {
      const observer = yield* RoutingFacts.Reporter
      const startMs = yield* Clock.currentTimeMillis
      const held = holding(observer, judgeModel, startMs)
      const over = yield* track
      // Forked from an uninterruptible region: both background fibers are made interruptible again.
      const fiber = yield* FiberSet.run(
        background,
        Effect.interruptible(Effect.provideService(call, RoutingFacts.Reporter, held.observer))
      )
      const onTime = yield* restore(Fiber.await(fiber).pipe(Effect.timeoutOption(settings.deadlineMs))).pipe(
        Effect.onInterrupt(() => Effect.zipRight(Fiber.interrupt(fiber), Effect.zipRight(held.tell, over)))
      )
      if (Option.isSome(onTime)) {
        yield* held.tell
        yield* over
        return yield* onTime.value
      }
      if (inFlight >= settings.maxInFlight) {
        yield* Fiber.interrupt(fiber)
        yield* over
        yield* atDeadline(observer, startMs, "dropped")
        yield* record(judgeModel, "dropped")
      } else {
        inFlight++
        yield* atDeadline(observer, startMs, "continues")
        yield* FiberSet.run(
          background,
          Fiber.await(fiber).pipe(
            Effect.flatMap((exit) =>
              Effect.tap(
                expired(exit)
                  ? Effect.succeed<Settled>({ outcome: "expired", verdict: Option.none() })
                  : settle(exit),
                (outcome) => held.settled(exit, outcome)
              )
            ),
            Effect.flatMap(({ outcome }) => record(judgeModel, outcome)),
            // Shutdown: the call and this fiber are interrupted; the waiting call is no longer counted.
            Effect.onExit(() => Effect.zipRight(Effect.sync(() => inFlight--), over)),
            Effect.onInterrupt(() => Effect.zipRight(Fiber.interrupt(fiber), held.tell)),
            Effect.interruptible
          )
        )
      }
      return yield* ExpectedFailure.make(() =>
        new DeadlineExceeded({ target: judgeModel, afterMs: settings.deadlineMs })
      )
    })
    const run = <A, R>(
      call: Effect.Effect<A, JudgeError, R>,
      settle: (exit: Exit.Exit<A, JudgeError>) => Effect.Effect<Settled>,
      track: Effect.Effect<Effect.Effect<void>>
    ): Effect.Effect<A, JudgeError, Exclude<R, RoutingFacts.Reporter> | RoutingFacts.Reporter> =>
      Effect.uninterruptibleMask((restore) => runMasked(restore, call, settle, track))
    return { settings, run, inFlight: Effect.sync(() => inFlight) }
  })
