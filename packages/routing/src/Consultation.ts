/**
 * A consultation (a judge's, an advisor's) run through a route's posture, as a value.
 *
 * The `Posture` combinator decides which failures fail the request and turns every other
 * one into "no verdict" (`Option.none()`), which says nothing about *why*. A route also needs the
 * why (evidence, metrics, logs) and must settle a consultation refused by an open circuit breaker,
 * which no posture accepts. {@link run} gives all three as one {@link Outcome}:
 *
 * | consultation                           | `error` posture            | `fail_open` posture        |
 * |----------------------------------------|----------------------------|----------------------------|
 * | succeeds with `a`                      | `Verdict(a)`               | `Verdict(a)`               |
 * | `InvalidVerdict`                       | `WithoutVerdict(reason)`   | `WithoutVerdict(reason)`   |
 * | `TransportError` / `DeadlineExceeded` / `UpstreamStatus` | fails with it | `WithoutVerdict(reason)` |
 * | `CircuitOpen`                          | `Refused(circuitOpen)`     | `Refused(circuitOpen)`     |
 *
 * `Refused` is a value under both postures: what it means (`circuit-open` evidence, a 503) is the
 * route's to decide. The failure channel is the posture's own: `JudgeCallFailure` after
 * `Posture.error` / `Posture.fromConfig`, `never` after `Posture.failOpen`.
 */
import type { CircuitOpen, JudgeCallFailure } from "@switchyard-ts/protocol/Errors"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import { dual } from "effect/Function"
import type * as Option from "effect/Option"
import type * as Evidence from "./Evidence.js"
import type { JudgeError } from "./Judge.js"
import type { InvalidVerdict } from "./Verdict.js"

/**
 * What a consultation came to under its posture: a `Verdict` (the consultation's value), a
 * failure the posture folded (`WithoutVerdict`, with its bounded evidence reason), or a
 * consultation `Refused` by an open circuit breaker (no request was made).
 */
export type Outcome<A> = Data.TaggedEnum<{
  Verdict: { readonly verdict: A }
  WithoutVerdict: { readonly reason: Evidence.Reason }
  Refused: { readonly circuitOpen: CircuitOpen }
}>

interface OutcomeDefinition extends Data.TaggedEnum.WithGenerics<1> {
  readonly taggedEnum: Outcome<this["A"]>
}

const constructors = Data.taggedEnum<OutcomeDefinition>()

/** The consultation succeeded with `verdict`. */
export const Verdict = constructors.Verdict
/** The consultation failed and the posture routed on without a verdict; `reason` says why. */
export const WithoutVerdict = constructors.WithoutVerdict
/** The consultation was refused by its client's open circuit breaker. */
export const Refused = constructors.Refused
/** `$is("Verdict")(outcome)` and so on. */
export const $is = constructors.$is
/** Exhaustive match over an {@link Outcome}. */
export const $match = constructors.$match

/**
 * A posture combinator (`Posture.error`, `Posture.failOpen`, `Posture.fromConfig(posture)`): it
 * fails with `E` or folds a judge failure into `Option.none()`.
 */
export type PostureCombinator<E> = <A, R>(
  self: Effect.Effect<A, JudgeCallFailure | InvalidVerdict, R>
) => Effect.Effect<Option.Option<A>, E, R>

/** The bounded evidence reason of a consultation failure (also the metrics' `reason` label). */
export const reasonOf = (error: JudgeError): Evidence.Reason => {
  switch (error._tag) {
    case "DeadlineExceeded":
      return "timeout"
    case "TransportError":
      return "transport"
    case "UpstreamStatus":
      return error.status >= 500 && error.status <= 599 ? "upstream_5xx" : "upstream_non_5xx"
    case "InvalidVerdict":
      return error.reason
    case "CircuitOpen":
      return "circuit_open"
  }
}

/**
 * Run a consultation through a posture combinator and return its {@link Outcome}. The consultation
 * runs once; a failure is first taken out of it, then handed to the posture on its own, so the
 * posture alone decides whether it fails the request (its failure channel `E` is the result's) or
 * becomes `WithoutVerdict(reasonOf(failure))`. `CircuitOpen` never reaches the posture: it is
 * `Refused`. Defects and interruptions pass through untouched.
 *
 * @example
 * judge.consult(consultation).pipe(Consultation.run(Posture.fromConfig(options.judgeFailure)))
 */
export const run: {
  <E>(posture: PostureCombinator<E>): <A, R>(
    self: Effect.Effect<A, JudgeError, R>
  ) => Effect.Effect<Outcome<A>, E, R>
  <A, R, E>(self: Effect.Effect<A, JudgeError, R>, posture: PostureCombinator<E>): Effect.Effect<Outcome<A>, E, R>
} = dual(
  2,
  <A, R, E>(self: Effect.Effect<A, JudgeError, R>, posture: PostureCombinator<E>): Effect.Effect<Outcome<A>, E, R> =>
    self.pipe(
      Effect.map((verdict): Outcome<A> => Verdict({ verdict })),
      Effect.catchAll((error): Effect.Effect<Outcome<A>, E> =>
        error._tag === "CircuitOpen"
          ? Effect.succeed(Refused({ circuitOpen: error }))
          // The posture is given the failure alone: it either fails with it or answers "no verdict".
          : Effect.as(posture(Effect.fail(error)), WithoutVerdict({ reason: reasonOf(error) }))
      )
    )
)
