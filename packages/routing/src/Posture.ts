/**
 * The judge failure posture as a combinator over a judge consultation (README.md, the judge failure posture; docs/routes.md):
 *
 * | posture     | TransportError | DeadlineExceeded | UpstreamStatus | InvalidVerdict |
 * |-------------|----------------|------------------|----------------|----------------|
 * | `error`     | fails          | fails            | fails          | no verdict     |
 * | `fail_open` | no verdict     | no verdict       | no verdict     | no verdict     |
 *
 * "No verdict" is `Option.none()`. `InvalidVerdict` is folded first, under both postures. After
 * `error` the failure channel is exactly `TransportError | DeadlineExceeded | UpstreamStatus`;
 * after `failOpen` it is `never`.
 */
import type { JudgeCallFailure } from "@switchyard-ts/protocol/Errors"
import * as Effect from "effect/Effect"
import { dual } from "effect/Function"
import type * as Option from "effect/Option"
import type { InvalidVerdict } from "./Verdict.js"

/** The configured posture (`judge_failure`). */
export type Posture = "error" | "fail_open"

/** An invalid verdict is never a failure: it is "no verdict" under every posture. */
const foldInvalid = <A, R>(
  self: Effect.Effect<A, JudgeCallFailure | InvalidVerdict, R>
): Effect.Effect<Option.Option<A>, JudgeCallFailure, R> =>
  Effect.asSome(self).pipe(Effect.catchTag("InvalidVerdict", () => Effect.succeedNone))

/** `judge_failure = "error"`: judge call failures fail the request; an invalid verdict is none. */
export const error = <A, R>(
  self: Effect.Effect<A, JudgeCallFailure | InvalidVerdict, R>
): Effect.Effect<Option.Option<A>, JudgeCallFailure, R> => foldInvalid(self)

/** `judge_failure = "fail_open"`: every judge failure is "no verdict". */
export const failOpen = <A, R>(
  self: Effect.Effect<A, JudgeCallFailure | InvalidVerdict, R>
): Effect.Effect<Option.Option<A>, never, R> =>
  foldInvalid(self).pipe(Effect.catchTags({
    TransportError: () => Effect.succeedNone,
    DeadlineExceeded: () => Effect.succeedNone,
    UpstreamStatus: () => Effect.succeedNone
  }))

/**
 * The posture chosen by configuration. Its failure channel is `JudgeCallFailure` (it may be
 * `error`); use {@link error} / {@link failOpen} when the posture is known statically.
 */
export const fromConfig: {
  (posture: Posture): <A, R>(
    self: Effect.Effect<A, JudgeCallFailure | InvalidVerdict, R>
  ) => Effect.Effect<Option.Option<A>, JudgeCallFailure, R>
  <A, R>(
    self: Effect.Effect<A, JudgeCallFailure | InvalidVerdict, R>,
    posture: Posture
  ): Effect.Effect<Option.Option<A>, JudgeCallFailure, R>
} = dual(
  2,
  <A, R>(
    self: Effect.Effect<A, JudgeCallFailure | InvalidVerdict, R>,
    posture: Posture
  ): Effect.Effect<Option.Option<A>, JudgeCallFailure, R> => (posture === "error" ? error(self) : failOpen(self))
)
