/**
 * A consultation (a judge's, an advisor's) run through a route's posture, as a value: the one place
 * where the posture acts.
 *
 * The `Posture` combinator decides which failures fail the request and turns every other one into
 * "no verdict" (`Option.none()`), which says nothing about *why*. A route also needs the why
 * (evidence, metrics, logs). {@link run} gives both as one {@link Outcome}:
 *
 * | consultation                                         | `error` posture           | `fail_open` posture       |
 * |------------------------------------------------------|---------------------------|---------------------------|
 * | succeeds with `a`                                    | `Verdict(a)`              | `Verdict(a)`              |
 * | `InvalidVerdict`                                     | `WithoutVerdict(reason)`  | `WithoutVerdict(reason)`  |
 * | `TransportError` / `DeadlineExceeded` / `UpstreamStatus` | fails with it         | `WithoutVerdict(reason)`  |
 * | `CircuitOpen` (the breaker refused the call)         | fails with it             | `WithoutVerdict(circuit_open)` |
 *
 * A route never looks at the posture again: it gets a verdict, or "routed without a verdict" with
 * its bounded reason, or the request fails with the typed failure. Policy replay folds a logged
 * failure through the same function ({@link failureOf} rebuilds a failure from its logged reason).
 */
import {
  CircuitOpen,
  DeadlineExceeded,
  type JudgeCallFailure,
  TransportError,
  UpstreamStatus
} from "@switchyard-ts/protocol/Errors"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import { dual } from "effect/Function"
import type * as Option from "effect/Option"
import type * as Evidence from "../Evidence.js"
import type * as JudgeChain from "./JudgeChain.js"
import type { Unconsulted } from "./Posture.js"
import { InvalidVerdict } from "./Verdict.js"

/**
 * Everything a consultation can fail with: the judge could not be consulted (a call failure, or its
 * client's open breaker refused the call: no request was made) or it answered unusably.
 */
export type JudgeError = JudgeCallFailure | InvalidVerdict | CircuitOpen

/**
 * What a consultation came to under its posture: a `Verdict` (the consultation's value), or a
 * failure the posture folded (`WithoutVerdict`, with its bounded evidence reason; `circuit_open`
 * when the breaker refused the call).
 */
export type Outcome<A> = Data.TaggedEnum<{
  Verdict: { readonly verdict: A; readonly trail?: JudgeChain.Trail }
  WithoutVerdict: { readonly reason: Evidence.Reason; readonly trail?: JudgeChain.Trail }
}>

interface OutcomeDefinition extends Data.TaggedEnum.WithGenerics<1> {
  readonly taggedEnum: Outcome<this["A"]>
}

const constructors = Data.taggedEnum<OutcomeDefinition>()

/** The consultation succeeded with `verdict`. */
export const Verdict = constructors.Verdict
/** The consultation failed and the posture routed on without a verdict; `reason` says why. */
export const WithoutVerdict = constructors.WithoutVerdict
/** `$is("Verdict")(outcome)` and so on. */
export const $is = constructors.$is
/** Exhaustive match over an {@link Outcome}. */
export const $match = constructors.$match

/**
 * A posture combinator (`Posture.error`, `Posture.failOpen`, `Posture.fromConfig(posture)`): it
 * fails with `E` or folds a failure into `Option.none()`.
 */
export type PostureCombinator<E> = <A, R>(
  self: Effect.Effect<A, Unconsulted | InvalidVerdict, R>
) => Effect.Effect<Option.Option<A>, E, R>

/**
 * What a consultation failing with `EC` fails with after a posture whose failure channel is `E`:
 * nothing under a posture that never fails, else exactly the consultation's own call failures
 * (its `CircuitOpen` too when it has a breaker).
 */
export type Folded<E, EC> = [E] extends [never] ? never : Exclude<EC, InvalidVerdict>

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
 * A failure whose {@link reasonOf} is `reason`, of a consultation of `target`: how policy replay
 * puts a logged failure back through {@link run}. Only the reason is faithful (a logged timeout
 * does not say after how long; a logged `upstream_5xx` does not say which status).
 */
export const failureOf = (reason: Evidence.Reason, target: string): JudgeError => {
  switch (reason) {
    case "timeout":
      return new DeadlineExceeded({ target, afterMs: 0 })
    case "transport":
      return new TransportError({ target, reason: "logged transport failure" })
    case "upstream_5xx":
      return new UpstreamStatus({ target, status: 500 })
    case "upstream_non_5xx":
      return new UpstreamStatus({ target, status: 400 })
    case "circuit_open":
      return new CircuitOpen({ target, client: "" })
    case "invalid_response":
    case "parse_error":
      return new InvalidVerdict({ reason, detail: "logged" })
  }
}

/**
 * Run a consultation through a posture combinator and return its {@link Outcome}. The consultation
 * runs once; a failure is taken out of it and handed to the posture on its own, so the posture
 * alone decides whether it fails the request (with that very failure) or becomes
 * `WithoutVerdict(reasonOf(failure))`. Defects and interruptions pass through untouched.
 *
 * @example
 * judge.consult(consultation).pipe(Consultation.run(Posture.fromConfig(options.judgeFailure)))
 */
export const run: {
  <E>(posture: PostureCombinator<E>): <A, EC extends JudgeError, R>(
    self: Effect.Effect<A, EC, R>
  ) => Effect.Effect<Outcome<A>, Folded<E, EC>, R>
  <A, EC extends JudgeError, R, E>(
    self: Effect.Effect<A, EC, R>,
    posture: PostureCombinator<E>
  ): Effect.Effect<Outcome<A>, Folded<E, EC>, R>
} = dual(
  2,
  <A, R, E>(self: Effect.Effect<A, JudgeError, R>, posture: PostureCombinator<E>): Effect.Effect<Outcome<A>, E, R> =>
    self.pipe(
      Effect.map((verdict): Outcome<A> => Verdict({ verdict })),
      Effect.catchAll((error): Effect.Effect<Outcome<A>, E> =>
        // The posture is given the failure alone: it either fails with it or answers "no verdict".
        Effect.as(posture(Effect.fail(error)), WithoutVerdict({ reason: reasonOf(error) }))
      )
    )
)

/**
 * Run a judge chain's consultation (`JudgeChain.run`, or `JudgeChain.one` of a single judge) through
 * a posture: {@link run} of the chain's last failure when it is exhausted, the chain's
 * `JudgeChain.Trail` kept on the {@link Outcome} either way.
 */
export const runChained: {
  <E>(posture: PostureCombinator<E>): <A, EC extends JudgeError, R>(
    self: Effect.Effect<JudgeChain.Chained<A>, JudgeChain.Unanswered<EC>, R>
  ) => Effect.Effect<Outcome<A>, Folded<E, EC>, R>
  <A, EC extends JudgeError, R, E>(
    self: Effect.Effect<JudgeChain.Chained<A>, JudgeChain.Unanswered<EC>, R>,
    posture: PostureCombinator<E>
  ): Effect.Effect<Outcome<A>, Folded<E, EC>, R>
} = dual(
  2,
  <A, R, E>(
    self: Effect.Effect<JudgeChain.Chained<A>, JudgeChain.Unanswered, R>,
    posture: PostureCombinator<E>
  ): Effect.Effect<Outcome<A>, E, R> =>
    Effect.matchEffect(self, {
      onSuccess: ({ answer, trail }) => Effect.succeed(Verdict({ verdict: answer, trail })),
      onFailure: ({ failure, trail }): Effect.Effect<Outcome<A>, E> =>
        Effect.as(posture(Effect.fail(failure)), WithoutVerdict({ reason: reasonOf(failure), trail }))
    })
)
