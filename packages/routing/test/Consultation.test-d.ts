import type { CircuitOpen, DeadlineExceeded, TransportError, UpstreamStatus } from "@switchyard-ts/protocol/Errors"
import type * as AdvisorReview from "@switchyard-ts/routing/AdvisorReview"
import * as Consultation from "@switchyard-ts/routing/Consultation"
import type * as Escalation from "@switchyard-ts/routing/Escalation"
import type * as Evidence from "@switchyard-ts/routing/Evidence"
import type { Judge } from "@switchyard-ts/routing/Judge"
import * as Posture from "@switchyard-ts/routing/Posture"
import type { Route, RouteFailure } from "@switchyard-ts/routing/Route"
import type { SessionStore } from "@switchyard-ts/routing/SessionStore"
import type * as StageRoute from "@switchyard-ts/routing/StageRoute"
import type { InvalidVerdict, Verdict } from "@switchyard-ts/routing/Verdict"
import type * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import { describe, expectTypeOf, it } from "vitest"

/** A requirement the helper must carry through untouched. */
interface Deps {
  readonly _: unique symbol
}

type CallFailure = TransportError | DeadlineExceeded | UpstreamStatus

/** A judge consultation as `Judge.consult` returns it, with a requirement. */
declare const consult: Effect.Effect<Verdict, CallFailure | InvalidVerdict | CircuitOpen, Deps>
/** An advisor consultation: another success type, the same failures. */
declare const advise: Effect.Effect<AdvisorReview.Verdict, CallFailure | InvalidVerdict | CircuitOpen, Deps>
/** A consultation that cannot be refused (no breaker). */
declare const unguarded: Effect.Effect<Verdict, CallFailure | InvalidVerdict, Deps>
declare const posture: Posture.Posture
declare const judge: Judge["Type"]
declare const request: Parameters<Judge["Type"]["consult"]>[0]
declare const customRequest: Parameters<Judge["Type"]["classify"]>[0]
declare const escalationRequest: Parameters<Judge["Type"]["escalate"]>[0]
/** A stage router's `[classifier]` table, as the route holds it. */
declare const stageClassifier: StageRoute.ClassifierOptions

/** A failure that is not a consultation failure. */
interface OtherError {
  readonly _tag: "OtherError"
}
declare const other: Effect.Effect<Verdict, CallFailure | InvalidVerdict | OtherError, Deps>

describe("Consultation.run types", () => {
  it("under Posture.error the failure channel is exactly the judge call failures", () => {
    const dataFirst = Consultation.run(consult, Posture.error)
    const dataLast = consult.pipe(Consultation.run(Posture.error))
    expectTypeOf(dataFirst).toEqualTypeOf<Effect.Effect<Consultation.Outcome<Verdict>, CallFailure, Deps>>()
    expectTypeOf(dataLast).toEqualTypeOf<Effect.Effect<Consultation.Outcome<Verdict>, CallFailure, Deps>>()
    expectTypeOf<Effect.Effect.Error<typeof dataFirst>>().not.toEqualTypeOf<CallFailure | CircuitOpen>()
  })

  it("under Posture.failOpen the failure channel is never", () => {
    const dataFirst = Consultation.run(consult, Posture.failOpen)
    const dataLast = consult.pipe(Consultation.run(Posture.failOpen))
    expectTypeOf(dataFirst).toEqualTypeOf<Effect.Effect<Consultation.Outcome<Verdict>, never, Deps>>()
    expectTypeOf(dataLast).toEqualTypeOf<Effect.Effect<Consultation.Outcome<Verdict>, never, Deps>>()
    expectTypeOf<Effect.Effect.Error<typeof dataLast>>().toBeNever()
  })

  it("under Posture.fromConfig (data-first and data-last) it is the judge call failures", () => {
    const viaDataLast = consult.pipe(Consultation.run(Posture.fromConfig(posture)))
    const viaDataFirst = Consultation.run(consult, (self) => Posture.fromConfig(self, posture))
    expectTypeOf(viaDataLast).toEqualTypeOf<Effect.Effect<Consultation.Outcome<Verdict>, CallFailure, Deps>>()
    expectTypeOf(viaDataFirst).toEqualTypeOf<Effect.Effect<Consultation.Outcome<Verdict>, CallFailure, Deps>>()
  })

  it("is generic over the consultation's success type", () => {
    expectTypeOf(Consultation.run(advise, Posture.failOpen)).toEqualTypeOf<
      Effect.Effect<Consultation.Outcome<AdvisorReview.Verdict>, never, Deps>
    >()
    expectTypeOf(Consultation.run(unguarded, Posture.error)).toEqualTypeOf<
      Effect.Effect<Consultation.Outcome<Verdict>, CallFailure, Deps>
    >()
  })

  it("accepts Judge.consult as it is", () => {
    expectTypeOf(Consultation.run(judge.consult(request), Posture.failOpen)).toEqualTypeOf<
      Effect.Effect<Consultation.Outcome<Verdict>, never, never>
    >()
    expectTypeOf(Consultation.run(judge.consult(request), Posture.fromConfig(posture))).toEqualTypeOf<
      Effect.Effect<Consultation.Outcome<Verdict>, CallFailure, never>
    >()
  })

  it("custom mode: Judge.classify goes through Posture with the same failure channels as capability", () => {
    // the same consultation failures as Judge.consult; only the verdict type differs
    expectTypeOf<Effect.Effect.Error<ReturnType<Judge["Type"]["classify"]>>>().toEqualTypeOf<
      Effect.Effect.Error<ReturnType<Judge["Type"]["consult"]>>
    >()
    expectTypeOf(Consultation.run(judge.classify(customRequest), Posture.failOpen)).toEqualTypeOf<
      Effect.Effect<Consultation.Outcome<unknown>, never, never>
    >()
    expectTypeOf(Consultation.run(judge.classify(customRequest), Posture.error)).toEqualTypeOf<
      Effect.Effect<Consultation.Outcome<unknown>, CallFailure, never>
    >()
    expectTypeOf(judge.classify(customRequest).pipe(Consultation.run(Posture.fromConfig(posture)))).toEqualTypeOf<
      Effect.Effect<Consultation.Outcome<unknown>, CallFailure, never>
    >()
  })

  it("an escalation consultation goes through the posture with the capability failure channels", () => {
    expectTypeOf<Effect.Effect.Error<ReturnType<Judge["Type"]["escalate"]>>>().toEqualTypeOf<
      Effect.Effect.Error<ReturnType<Judge["Type"]["consult"]>>
    >()
    expectTypeOf(Consultation.run(judge.escalate(escalationRequest), Posture.failOpen)).toEqualTypeOf<
      Effect.Effect<Consultation.Outcome<Escalation.EscalationVerdict>, never, never>
    >()
    expectTypeOf(Consultation.run(judge.escalate(escalationRequest), Posture.error)).toEqualTypeOf<
      Effect.Effect<Consultation.Outcome<Escalation.EscalationVerdict>, CallFailure, never>
    >()
    expectTypeOf(judge.escalate(escalationRequest).pipe(Consultation.run(Posture.fromConfig(posture))))
      .toEqualTypeOf<Effect.Effect<Consultation.Outcome<Escalation.EscalationVerdict>, CallFailure, never>>()
  })

  it("stage_router: its classifier is a capability judge consulted through Posture with the same failure channels", () => {
    // the classifier table is a capability judge's options: Judge.consult takes it as it is
    expectTypeOf<StageRoute.ClassifierOptions>().toMatchTypeOf<Parameters<Judge["Type"]["consult"]>[0]["options"]>()
    expectTypeOf<StageRoute.ClassifierOptions["judgeFailure"]>().toEqualTypeOf<Posture.Posture>()
    const consultation = judge.consult({ options: stageClassifier, messages: [], headers: {} })
    expectTypeOf(consultation.pipe(Consultation.run(Posture.fromConfig(stageClassifier.judgeFailure))))
      .toEqualTypeOf<Effect.Effect<Consultation.Outcome<Verdict>, CallFailure, never>>()
    expectTypeOf(Consultation.run(consultation, Posture.failOpen)).toEqualTypeOf<
      Effect.Effect<Consultation.Outcome<Verdict>, never, never>
    >()
    // what reaches the caller is a route failure (JudgeUnavailable wraps the posture's failures)
    // (late classifier calls run in the Scope the route is built in)
    expectTypeOf<ReturnType<typeof StageRoute.make>>().toEqualTypeOf<
      Effect.Effect<Route, never, Judge | SessionStore | Scope.Scope>
    >()
    expectTypeOf<Effect.Effect.Error<ReturnType<Route["decide"]>>>().toEqualTypeOf<RouteFailure>()
  })

  it("the outcome is a tagged union: Verdict(a) | WithoutVerdict(reason) | Refused(circuitOpen)", () => {
    expectTypeOf<Consultation.Outcome<Verdict>["_tag"]>().toEqualTypeOf<"Verdict" | "WithoutVerdict" | "Refused">()
    expectTypeOf<Extract<Consultation.Outcome<Verdict>, { _tag: "Verdict" }>["verdict"]>().toEqualTypeOf<Verdict>()
    expectTypeOf<Extract<Consultation.Outcome<Verdict>, { _tag: "WithoutVerdict" }>["reason"]>()
      .toEqualTypeOf<Evidence.Reason>()
    expectTypeOf<Extract<Consultation.Outcome<Verdict>, { _tag: "Refused" }>["circuitOpen"]>().toEqualTypeOf<
      CircuitOpen
    >()
  })

  it("the error posture's result is not assignable to a never-failing effect", () => {
    // @ts-expect-error — under error, TransportError | DeadlineExceeded | UpstreamStatus stay failures
    const bad: Effect.Effect<Consultation.Outcome<Verdict>, never, Deps> = Consultation.run(consult, Posture.error)
    expectTypeOf(bad).toEqualTypeOf<Effect.Effect<Consultation.Outcome<Verdict>, never, Deps>>()
  })

  it("a consultation that can fail with something else is rejected", () => {
    // @ts-expect-error — only consultation failures can be settled
    Consultation.run(other, Posture.failOpen)
    // @ts-expect-error — only consultation failures can be settled
    other.pipe(Consultation.run(Posture.error))
  })
})
