/**
 * The judge failure posture as a combinator over a judge consultation (README.md, the judge failure
 * posture; docs/routes.md):
 *
 * | posture     | TransportError | DeadlineExceeded | UpstreamStatus | CircuitOpen | InvalidVerdict |
 * |-------------|----------------|------------------|----------------|-------------|----------------|
 * | `error`     | fails          | fails            | fails          | fails       | no verdict     |
 * | `fail_open` | no verdict     | no verdict       | no verdict     | no verdict  | no verdict     |
 *
 * "No verdict" is `Option.none()`. `InvalidVerdict` is folded first, under both postures. After
 * `error` the failure channel is exactly the consultation's call failures: `TransportError |
 * DeadlineExceeded | UpstreamStatus` for a judge call, plus `CircuitOpen` when the call goes through
 * a circuit breaker that may refuse it (an open breaker is one more way the judge cannot be
 * consulted). After `failOpen` it is `never`.
 */
import type { CircuitOpen, JudgeCallFailure } from "@switchyard-ts/protocol/Errors"
import * as Effect from "effect/Effect"
import { dual } from "effect/Function"
import type * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type { InvalidVerdict } from "./Verdict.js"

/** The configured posture (`judge_failure`; an advisor route's `fail_open`), as its TOML and routing-log value. */
export const Posture = Schema.Literal("error", "fail_open")
export type Posture = typeof Posture.Type

/** Every failure a posture decides on: the judge could not be consulted (a call failure, or its breaker is open). */
export type Unconsulted = JudgeCallFailure | CircuitOpen

/** An invalid verdict is never a failure: it is "no verdict" under every posture. */
const foldInvalid = <A, R, E extends Unconsulted>(
  self: Effect.Effect<A, E | InvalidVerdict, R>
): Effect.Effect<Option.Option<A>, E, R> =>
  Effect.catchIf(
    Effect.asSome(self),
    (error): error is InvalidVerdict => error._tag === "InvalidVerdict",
    () => Effect.succeedNone
  )

/** `judge_failure = "error"`: a judge that cannot be consulted fails the request; an invalid verdict is none. */
export const error = <A, R, E extends Unconsulted = JudgeCallFailure>(
  self: Effect.Effect<A, E | InvalidVerdict, R>
): Effect.Effect<Option.Option<A>, E, R> => foldInvalid(self)

/** `judge_failure = "fail_open"`: every judge failure is "no verdict". */
export const failOpen = <A, R>(
  self: Effect.Effect<A, Unconsulted | InvalidVerdict, R>
): Effect.Effect<Option.Option<A>, never, R> =>
  foldInvalid(self).pipe(Effect.catchTags({
    TransportError: () => Effect.succeedNone,
    DeadlineExceeded: () => Effect.succeedNone,
    UpstreamStatus: () => Effect.succeedNone,
    CircuitOpen: () => Effect.succeedNone
  }))

/** The combinator of a posture chosen by configuration: its failure channel is the consultation's call failures. */
export type Combinator = <A, R, E extends Unconsulted = JudgeCallFailure>(
  self: Effect.Effect<A, E | InvalidVerdict, R>
) => Effect.Effect<Option.Option<A>, E, R>

/**
 * The posture chosen by configuration. Its failure channel is the consultation's call failures (it
 * may be `error`); use {@link error} / {@link failOpen} when the posture is known statically.
 */
export const fromConfig: {
  (posture: Posture): Combinator
  <A, R, E extends Unconsulted = JudgeCallFailure>(
    self: Effect.Effect<A, E | InvalidVerdict, R>,
    posture: Posture
  ): Effect.Effect<Option.Option<A>, E, R>
} = dual(
  2,
  <A, R, E extends Unconsulted>(
    self: Effect.Effect<A, E | InvalidVerdict, R>,
    posture: Posture
  ): Effect.Effect<Option.Option<A>, E, R> => (posture === "error" ? error(self) : failOpen(self))
)
