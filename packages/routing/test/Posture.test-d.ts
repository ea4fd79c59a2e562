import type { CircuitOpen, DeadlineExceeded, TransportError, UpstreamStatus } from "@switchyard-ts/protocol/Errors"
import type { Judge } from "@switchyard-ts/routing/Judge"
import * as Posture from "@switchyard-ts/routing/Posture"
import type * as RoutingFacts from "@switchyard-ts/routing/RoutingFacts"
import type { InvalidVerdict, Verdict } from "@switchyard-ts/routing/Verdict"
import type * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import { describe, expectTypeOf, it } from "vitest"

/** A requirement the combinators must carry through untouched. */
interface Deps {
  readonly _: unique symbol
}

type CallFailure = TransportError | DeadlineExceeded | UpstreamStatus

declare const self: Effect.Effect<Verdict, CallFailure | InvalidVerdict, Deps>
declare const posture: Posture.Posture

/** A failure that is not a judge failure. */
interface OtherError {
  readonly _tag: "OtherError"
}
declare const other: Effect.Effect<Verdict, CallFailure | InvalidVerdict | OtherError, Deps>
/** A consultation refused by an open circuit breaker. */
declare const refused: Effect.Effect<Verdict, CallFailure | InvalidVerdict | CircuitOpen, Deps>

describe("Posture types (README.md, the judge failure posture; docs/routes.md)", () => {
  it("error keeps exactly the judge call failures and the requirements", () => {
    expectTypeOf(Posture.error(self)).toEqualTypeOf<Effect.Effect<Option.Option<Verdict>, CallFailure, Deps>>()
    expectTypeOf<Effect.Effect.Error<ReturnType<typeof Posture.error<Verdict, Deps>>>>().toEqualTypeOf<CallFailure>()
    expectTypeOf<Effect.Effect.Error<ReturnType<typeof Posture.error<Verdict, Deps>>>>().not.toEqualTypeOf<
      CallFailure | InvalidVerdict
    >()
  })

  it("failOpen has no failure channel", () => {
    expectTypeOf(Posture.failOpen(self)).toEqualTypeOf<Effect.Effect<Option.Option<Verdict>, never, Deps>>()
    expectTypeOf<Effect.Effect.Error<ReturnType<typeof Posture.failOpen<Verdict, Deps>>>>().toBeNever()
  })

  it("fromConfig, data-first and data-last, fails with the judge call failures", () => {
    const dataFirst = Posture.fromConfig(self, posture)
    const dataLast = self.pipe(Posture.fromConfig(posture))
    expectTypeOf(dataFirst).toEqualTypeOf<Effect.Effect<Option.Option<Verdict>, CallFailure, Deps>>()
    expectTypeOf(dataLast).toEqualTypeOf<Effect.Effect<Option.Option<Verdict>, CallFailure, Deps>>()
    expectTypeOf<Effect.Effect.Error<typeof dataFirst>>().toEqualTypeOf<CallFailure>()
    expectTypeOf<Effect.Effect.Error<typeof dataLast>>().toEqualTypeOf<CallFailure>()
  })

  it("a judge consultation fails with the four-member union plus CircuitOpen, one more input of the posture", () => {
    type Consult = Judge["Type"]["consult"]
    expectTypeOf<Effect.Effect.Error<ReturnType<Consult>>>().toEqualTypeOf<CallFailure | InvalidVerdict | CircuitOpen>()
    // An open breaker is one more way the judge cannot be consulted: failOpen folds it, error keeps it.
    expectTypeOf(Posture.failOpen(refused)).toEqualTypeOf<Effect.Effect<Option.Option<Verdict>, never, Deps>>()
    expectTypeOf(Posture.error(refused)).toEqualTypeOf<
      Effect.Effect<Option.Option<Verdict>, CallFailure | CircuitOpen, Deps>
    >()
    expectTypeOf(Posture.fromConfig(refused, posture)).toEqualTypeOf<
      Effect.Effect<Option.Option<Verdict>, CallFailure | CircuitOpen, Deps>
    >()
    expectTypeOf<Effect.Effect.Success<ReturnType<Consult>>>().toEqualTypeOf<Verdict>()
    // the request's observer: a consultation reports the call it made
    expectTypeOf<Effect.Effect.Context<ReturnType<Consult>>>().toEqualTypeOf<RoutingFacts.Reporter>()
  })

  it("the error posture's result is not assignable to a never-failing effect", () => {
    // @ts-expect-error — the error posture keeps TransportError | DeadlineExceeded | UpstreamStatus
    const bad: Effect.Effect<Option.Option<Verdict>, never, Deps> = Posture.error(self)
    expectTypeOf(bad).toEqualTypeOf<Effect.Effect<Option.Option<Verdict>, never, Deps>>()
    // ...while failOpen's is.
    const ok: Effect.Effect<Option.Option<Verdict>, never, Deps> = Posture.failOpen(self)
    expectTypeOf(ok).toEqualTypeOf<Effect.Effect<Option.Option<Verdict>, never, Deps>>()
  })

  it("a judge that can fail with something else is rejected by every posture", () => {
    // @ts-expect-error — only judge failures can be folded
    Posture.failOpen(other)
    // @ts-expect-error — only judge failures can be folded
    Posture.error(other)
  })
})
