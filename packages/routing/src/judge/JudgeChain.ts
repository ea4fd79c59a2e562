/**
 * A route's judges as a chain (`classifier_target`, then `classifier_fallback` in order): one
 * consultation asks the first judge, and on a call failure or an unusable verdict the next, until
 * one gives a usable verdict. Only an exhausted chain fails — with the **last** judge's failure,
 * which the route's posture then folds or keeps (`Consultation.runChained`).
 *
 * - `judge_timeout_ms` bounds the whole chain: each judge is asked with what is left of it (the
 *   client's own `timeout_ms` still applies per call), and once it is spent no further judge is
 *   asked — the chain fails with the failure it has.
 * - With `classifier_hedge_ms`, a judge that has not answered within that time has the rest of the
 *   chain asked **as well**: the first usable verdict wins and the other call is interrupted; a hedge
 *   that fails moves on down the chain as above. A judge that fails before its hedge time moves on
 *   at once, as without hedging.
 *
 * What came of it travels with the answer or the failure as a {@link Trail}: the judge whose verdict
 * was used (or whose failure ended the chain), the judges that failed before it with their reasons,
 * and whether the verdict came from a hedge. A chain of one judge is exactly one consultation.
 */
import * as TaggedMetric from "@switchyard-ts/client/TaggedMetric"
import type { Target } from "@switchyard-ts/client/Target"
import * as Array from "effect/Array"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import type * as Evidence from "../Evidence.js"
import * as Metrics from "../Metrics.js"
import { type JudgeError, reasonOf } from "./Consultation.js"
import type * as Posture from "./Posture.js"

/** A judge that failed and was followed by another: its model and the reason. */
export interface Fallback {
  readonly model: string
  readonly reason: Evidence.Reason
}

/** What a chain came to, beside its answer or failure (see the module doc). */
export interface Trail {
  /** The model of the judge whose verdict was used, or whose failure ended the chain. */
  readonly judgeModel: string
  /** The judges that failed before it, in the order they were asked. */
  readonly fallbacks: ReadonlyArray<Fallback>
  /** The verdict came from a judge asked as a hedge. */
  readonly hedged: boolean
}

/** A chain's usable verdict and its trail. */
export interface Chained<A> {
  readonly answer: A
  readonly trail: Trail
}

/** An exhausted chain: the last judge's failure and the trail. */
export interface Unanswered<E extends JudgeError = JudgeError> {
  readonly failure: E
  readonly trail: Trail
}

/** How a route's judges are chained. */
export interface Settings {
  /** The judges in order: `classifier_target`, then `classifier_fallback`. */
  readonly judges: Array.NonEmptyReadonlyArray<Target>
  /** `judge_timeout_ms`: the whole chain's deadline; none: each call its client's `timeout_ms`. */
  readonly deadlineMs: Option.Option<number>
  /** `classifier_hedge_ms` (only with fallbacks); none: no hedging. */
  readonly hedgeMs: Option.Option<number>
  /** The route: the label of the fallback and hedge counters. */
  readonly route: string
}

/** The chain keys of a route's judge options (`JudgeOptions` and the others). */
export interface ChainOptions {
  /** The first judge (`classifier_target`). */
  readonly judge: Target
  /** `judge_timeout_ms`. */
  readonly judgeTimeoutMs?: Option.Option<number>
  /** `classifier_fallback`: the judges asked after `judge`, in order. */
  readonly fallbacks?: ReadonlyArray<Target>
  /** `classifier_hedge_ms`. */
  readonly hedgeMs?: Option.Option<number>
}

/** A route's judges in the order its chain asks them: the first, then its fallbacks. */
export const judgesOf = (options: ChainOptions): Array.NonEmptyReadonlyArray<Target> => [
  options.judge,
  ...(options.fallbacks ?? [])
]

/** A route's judge chain as an operator sees it: its judges in order, and the route's posture. */
export interface Use {
  readonly judges: Array.NonEmptyReadonlyArray<Target>
  readonly posture: Posture.Posture
}

/** The {@link Use} of judge options with their route's `judge_failure`. */
export const useOf = (options: ChainOptions & { readonly judgeFailure: Posture.Posture }): Use => ({
  judges: judgesOf(options),
  posture: options.judgeFailure
})

/** The chain of a route's judge options. */
export const settingsOf = (options: ChainOptions, route: string): Settings => ({
  judges: judgesOf(options),
  deadlineMs: options.judgeTimeoutMs ?? Option.none(),
  hedgeMs: options.hedgeMs ?? Option.none(),
  route
})

/** One judge of a chain asked, with the deadline left for it (none: its client's own). */
export type Ask<A, E extends JudgeError, R> = (
  judge: Target,
  timeoutMs: Option.Option<number>
) => Effect.Effect<A, E, R>

/** A trail of one judge, nothing before it. */
export const single = (judgeModel: string): Trail => ({ judgeModel, fallbacks: [], hedged: false })

/** `self` (one consultation) as a chain of one judge. */
export const one = <A, E extends JudgeError, R>(
  judgeModel: string,
  self: Effect.Effect<A, E, R>
): Effect.Effect<Chained<A>, Unanswered<E>, R> =>
  Effect.mapBoth(self, {
    onSuccess: (answer) => ({ answer, trail: single(judgeModel) }),
    onFailure: (failure) => ({ failure, trail: single(judgeModel) })
  })

const countFallback = (route: string, fallback: Fallback) =>
  Effect.sync(() =>
    TaggedMetric.unsafeUpdate(
      Metrics.classifierJudgeFallbacksTotal,
      { route, judge_model: fallback.model, reason: fallback.reason },
      1
    )
  )

const countHedge = (route: string, judge: Target) =>
  Effect.sync(() => TaggedMetric.unsafeUpdate(Metrics.classifierJudgeHedgesTotal, { route, judge_model: judge.id }, 1))

/** A failure after `before`: its judge counted as a fallback of the one after it. */
const prepend = <E extends JudgeError>(before: Fallback, rest: Unanswered<E>): Unanswered<E> => ({
  failure: rest.failure,
  trail: { ...rest.trail, fallbacks: [before, ...rest.trail.fallbacks] }
})

const prependAnswer = <A>(before: Fallback, rest: Chained<A>): Chained<A> => ({
  answer: rest.answer,
  trail: { ...rest.trail, fallbacks: [before, ...rest.trail.fallbacks] }
})

/**
 * Ask the chain (see the module doc). Each judge that failed and was followed by another is counted
 * in `switchyard_classifier_judge_fallbacks_total`, each hedge started in
 * `switchyard_classifier_judge_hedges_total`.
 */
export const run = <A, E extends JudgeError, R>(
  settings: Settings,
  ask: Ask<A, E, R>
): Effect.Effect<Chained<A>, Unanswered<E>, R> => {
  const { judges } = settings
  if (judges.length === 1) {
    return one(judges[0].id, ask(judges[0], settings.deadlineMs))
  }
  return Effect.flatMap(Clock.currentTimeMillis, (start) => {
    /** What is left of the chain's deadline now (none: no deadline). */
    const left = Effect.map(
      Clock.currentTimeMillis,
      (now) => Option.map(settings.deadlineMs, (deadline) => Math.max(0, start + deadline - now))
    )

    /** The chain from judge `i` on; `i` is always a judge of the chain. */
    const from = (i: number): Effect.Effect<Chained<A>, Unanswered<E>, R> => {
      const judge = judges[i] ?? judges[0]
      const last = i === judges.length - 1
      return Effect.flatMap(left, (timeout): Effect.Effect<Chained<A>, Unanswered<E>, R> => {
        const asked = ask(judge, timeout)
        const onward = (failure: E) => {
          const fallback: Fallback = { model: judge.id, reason: reasonOf(failure) }
          return Effect.flatMap(left, (remaining) =>
            Option.exists(remaining, (ms) => ms <= 0)
              ? Effect.fail<Unanswered<E>>({ failure, trail: single(judge.id) })
              : Effect.zipRight(
                countFallback(settings.route, fallback),
                Effect.mapBoth(from(i + 1), {
                  onFailure: (rest) => prepend(fallback, rest),
                  onSuccess: (rest) => prependAnswer(fallback, rest)
                })
              ))
        }
        const settled = (answer: A): Chained<A> => ({ answer, trail: single(judge.id) })
        if (last) return one(judge.id, asked)
        if (Option.isNone(settings.hedgeMs)) {
          return Effect.matchEffect(asked, { onSuccess: (a) => Effect.succeed(settled(a)), onFailure: onward })
        }
        return hedged(
          asked,
          settings.hedgeMs.value,
          settled,
          onward,
          () => Effect.zipRight(countHedge(settings.route, judges[i + 1] ?? judge), from(i + 1)),
          judge,
          settings.route
        )
      })
    }
    return from(0)
  })
}

/**
 * Judge `asked` with a hedge after `hedgeMs`: settled before then, it goes on as without hedging
 * (`onward` on a failure); else the rest of the chain (`hedge`) runs beside it and the first usable
 * verdict wins, the other call interrupted. Both failing: the rest's failure (the last judge's),
 * with this judge's failure before its fallbacks.
 */
const hedged = <A, E extends JudgeError, R>(
  asked: Effect.Effect<A, E, R>,
  hedgeMs: number,
  settled: (answer: A) => Chained<A>,
  onward: (failure: E) => Effect.Effect<Chained<A>, Unanswered<E>, R>,
  hedge: () => Effect.Effect<Chained<A>, Unanswered<E>, R>,
  judge: Target,
  route: string
): Effect.Effect<Chained<A>, Unanswered<E>, R> =>
  Effect.flatMap(Effect.fork(Effect.either(asked)), (first) =>
    Effect.flatMap(
      Effect.timeoutOption(Fiber.join(first), Duration.millis(hedgeMs)),
      (early): Effect.Effect<Chained<A>, Unanswered<E>, R> => {
        if (Option.isSome(early)) {
          return Either.match(early.value, { onLeft: onward, onRight: (a) => Effect.succeed(settled(a)) })
        }
        type Branch = { readonly _tag: "First"; readonly failure: E } | {
          readonly _tag: "Rest"
          readonly unanswered: Unanswered<E>
        }
        const mine = Effect.flatMap(
          Fiber.join(first),
          Either.match({
            onLeft: (failure) => Effect.fail<Branch>({ _tag: "First", failure }),
            onRight: (a) => Effect.succeed(settled(a))
          })
        )
        const theirs = Effect.mapBoth(hedge(), {
          onFailure: (unanswered): Branch => ({ _tag: "Rest", unanswered }),
          onSuccess: (chained): Chained<A> => ({ ...chained, trail: { ...chained.trail, hedged: true } })
        })
        // A hedge's verdict after this judge failed: the failure is a fallback before it.
        const withFirst = (chained: Chained<A>) =>
          Effect.map(Fiber.poll(first), (exit) => {
            const failed = Option.flatMap(exit, (e) => Exit.isSuccess(e) ? Either.getLeft(e.value) : Option.none())
            return Option.isSome(failed) && chained.trail.hedged
              ? prependAnswer({ model: judge.id, reason: reasonOf(failed.value) }, chained)
              : chained
          })
        return Effect.race(mine, theirs).pipe(
          Effect.flatMap(withFirst),
          Effect.catchAllCause((cause) => {
            const failures = Array.fromIterable(Cause.failures(cause))
            const rest = failures.find((b) => b._tag === "Rest")
            const firstFailure = failures.find((b) => b._tag === "First")
            if (rest?._tag === "Rest" && firstFailure?._tag === "First") {
              const fallback: Fallback = { model: judge.id, reason: reasonOf(firstFailure.failure) }
              return Effect.zipRight(countFallback(route, fallback), Effect.fail(prepend(fallback, rest.unanswered)))
            }
            return Effect.failCause(Cause.map(cause, (b): Unanswered<E> =>
              b._tag === "Rest" ? b.unanswered : { failure: b.failure, trail: single(judge.id) }))
          }),
          Effect.ensuring(Fiber.interrupt(first))
        )
      }
    ))
