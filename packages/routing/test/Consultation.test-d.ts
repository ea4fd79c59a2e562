import type { UpstreamClient } from "@switchyard-ts/client/UpstreamClient"
import type { CircuitOpen, DeadlineExceeded, TransportError, UpstreamStatus } from "@switchyard-ts/protocol/Errors"
import type * as AdvisorReview from "@switchyard-ts/routing/AdvisorReview"
import * as Consultation from "@switchyard-ts/routing/Consultation"
import type * as EscalationJudge from "@switchyard-ts/routing/EscalationJudge"
import type * as Evidence from "@switchyard-ts/routing/Evidence"
import type { Judge } from "@switchyard-ts/routing/Judge"
import * as Posture from "@switchyard-ts/routing/Posture"
import type { Route, RouteFailure } from "@switchyard-ts/routing/Route"
import type * as RoutingFacts from "@switchyard-ts/routing/RoutingFacts"
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
  it("under Posture.error a judge call fails with exactly the judge call failures", () => {
    const dataFirst = Consultation.run(unguarded, Posture.error)
    const dataLast = unguarded.pipe(Consultation.run(Posture.error))
    expectTypeOf(dataFirst).toEqualTypeOf<Effect.Effect<Consultation.Outcome<Verdict>, CallFailure, Deps>>()
    expectTypeOf(dataLast).toEqualTypeOf<Effect.Effect<Consultation.Outcome<Verdict>, CallFailure, Deps>>()
  })

  it("under Posture.error a consultation behind a breaker also fails with CircuitOpen (the posture's input)", () => {
    const dataFirst = Consultation.run(consult, Posture.error)
    const dataLast = consult.pipe(Consultation.run(Posture.error))
    expectTypeOf(dataFirst).toEqualTypeOf<
      Effect.Effect<Consultation.Outcome<Verdict>, CallFailure | CircuitOpen, Deps>
    >()
    expectTypeOf(dataLast).toEqualTypeOf<
      Effect.Effect<Consultation.Outcome<Verdict>, CallFailure | CircuitOpen, Deps>
    >()
    // never InvalidVerdict: an unusable answer is "without a verdict" under every posture
    expectTypeOf<InvalidVerdict>().not.toMatchTypeOf<Effect.Effect.Error<typeof dataFirst>>()
  })

  it("under Posture.failOpen the failure channel is never", () => {
    const dataFirst = Consultation.run(consult, Posture.failOpen)
    const dataLast = consult.pipe(Consultation.run(Posture.failOpen))
    expectTypeOf(dataFirst).toEqualTypeOf<Effect.Effect<Consultation.Outcome<Verdict>, never, Deps>>()
    expectTypeOf(dataLast).toEqualTypeOf<Effect.Effect<Consultation.Outcome<Verdict>, never, Deps>>()
    expectTypeOf<Effect.Effect.Error<typeof dataLast>>().toBeNever()
  })

  it("under Posture.fromConfig (data-first and data-last) it is the consultation's own call failures", () => {
    const viaDataLast = consult.pipe(Consultation.run(Posture.fromConfig(posture)))
    const viaDataFirst = Consultation.run(consult, (self) => Posture.fromConfig(self, posture))
    expectTypeOf(viaDataLast).toEqualTypeOf<
      Effect.Effect<Consultation.Outcome<Verdict>, CallFailure | CircuitOpen, Deps>
    >()
    expectTypeOf(viaDataFirst).toEqualTypeOf<
      Effect.Effect<Consultation.Outcome<Verdict>, CallFailure | CircuitOpen, Deps>
    >()
    expectTypeOf(unguarded.pipe(Consultation.run(Posture.fromConfig(posture)))).toEqualTypeOf<
      Effect.Effect<Consultation.Outcome<Verdict>, CallFailure, Deps>
    >()
  })

  it("is generic over the consultation's success type", () => {
    expectTypeOf(Consultation.run(advise, Posture.failOpen)).toEqualTypeOf<
      Effect.Effect<Consultation.Outcome<AdvisorReview.Verdict>, never, Deps>
    >()
    expectTypeOf(Consultation.run(advise, Posture.error)).toEqualTypeOf<
      Effect.Effect<Consultation.Outcome<AdvisorReview.Verdict>, CallFailure | CircuitOpen, Deps>
    >()
  })

  it("accepts Judge.consult as it is (its requirement: the request's RoutingFacts.Reporter)", () => {
    expectTypeOf(Consultation.run(judge.consult(request), Posture.failOpen)).toEqualTypeOf<
      Effect.Effect<Consultation.Outcome<Verdict>, never, RoutingFacts.Reporter>
    >()
    expectTypeOf(Consultation.run(judge.consult(request), Posture.fromConfig(posture))).toEqualTypeOf<
      Effect.Effect<Consultation.Outcome<Verdict>, CallFailure | CircuitOpen, RoutingFacts.Reporter>
    >()
  })

  it("custom mode: Judge.classify goes through Posture with the same failure channels as capability", () => {
    // the same consultation failures as Judge.consult; only the verdict type differs
    expectTypeOf<Effect.Effect.Error<ReturnType<Judge["Type"]["classify"]>>>().toEqualTypeOf<
      Effect.Effect.Error<ReturnType<Judge["Type"]["consult"]>>
    >()
    expectTypeOf(Consultation.run(judge.classify(customRequest), Posture.failOpen)).toEqualTypeOf<
      Effect.Effect<Consultation.Outcome<unknown>, never, RoutingFacts.Reporter>
    >()
    expectTypeOf(Consultation.run(judge.classify(customRequest), Posture.error)).toEqualTypeOf<
      Effect.Effect<Consultation.Outcome<unknown>, CallFailure | CircuitOpen, RoutingFacts.Reporter>
    >()
    expectTypeOf(judge.classify(customRequest).pipe(Consultation.run(Posture.fromConfig(posture)))).toEqualTypeOf<
      Effect.Effect<Consultation.Outcome<unknown>, CallFailure | CircuitOpen, RoutingFacts.Reporter>
    >()
  })

  it("an escalation consultation goes through the posture with the capability failure channels", () => {
    expectTypeOf<Effect.Effect.Error<ReturnType<Judge["Type"]["escalate"]>>>().toEqualTypeOf<
      Effect.Effect.Error<ReturnType<Judge["Type"]["consult"]>>
    >()
    expectTypeOf(Consultation.run(judge.escalate(escalationRequest), Posture.failOpen)).toEqualTypeOf<
      Effect.Effect<Consultation.Outcome<EscalationJudge.EscalationVerdict>, never, RoutingFacts.Reporter>
    >()
    expectTypeOf(Consultation.run(judge.escalate(escalationRequest), Posture.error)).toEqualTypeOf<
      Effect.Effect<
        Consultation.Outcome<EscalationJudge.EscalationVerdict>,
        CallFailure | CircuitOpen,
        RoutingFacts.Reporter
      >
    >()
    expectTypeOf(judge.escalate(escalationRequest).pipe(Consultation.run(Posture.fromConfig(posture))))
      .toEqualTypeOf<
        Effect.Effect<
          Consultation.Outcome<EscalationJudge.EscalationVerdict>,
          CallFailure | CircuitOpen,
          RoutingFacts.Reporter
        >
      >()
  })

  it("stage_router: its classifier is a capability judge consulted through Posture with the same failure channels", () => {
    // the classifier table is a capability judge's options: Judge.consult takes it as it is
    expectTypeOf<StageRoute.ClassifierOptions>().toMatchTypeOf<Parameters<Judge["Type"]["consult"]>[0]["options"]>()
    expectTypeOf<StageRoute.ClassifierOptions["judgeFailure"]>().toEqualTypeOf<Posture.Posture>()
    const consultation = judge.consult({ options: stageClassifier, messages: [], headers: {} })
    expectTypeOf(consultation.pipe(Consultation.run(Posture.fromConfig(stageClassifier.judgeFailure))))
      .toEqualTypeOf<Effect.Effect<Consultation.Outcome<Verdict>, CallFailure | CircuitOpen, RoutingFacts.Reporter>>()
    expectTypeOf(Consultation.run(consultation, Posture.failOpen)).toEqualTypeOf<
      Effect.Effect<Consultation.Outcome<Verdict>, never, RoutingFacts.Reporter>
    >()
    // what reaches the caller is a route failure (JudgeUnavailable wraps the posture's failures)
    // (it is built on a live host: the judge, the session store and the upstream client; late
    // classifier calls run in the Scope the route is built in)
    expectTypeOf<ReturnType<typeof StageRoute.make>>().toEqualTypeOf<
      Effect.Effect<Route, never, Judge | SessionStore | UpstreamClient | Scope.Scope>
    >()
    expectTypeOf<Effect.Effect.Error<ReturnType<Route["decide"]>>>().toEqualTypeOf<RouteFailure>()
    // a route says that it reports: its decision requires the request's observer
    expectTypeOf<Effect.Effect.Context<ReturnType<Route["decide"]>>>().toEqualTypeOf<RoutingFacts.Reporter>()
  })

  it("the outcome is a tagged union: Verdict(a) | WithoutVerdict(reason); a route reads no posture after it", () => {
    expectTypeOf<Consultation.Outcome<Verdict>["_tag"]>().toEqualTypeOf<"Verdict" | "WithoutVerdict">()
    expectTypeOf<Extract<Consultation.Outcome<Verdict>, { _tag: "Verdict" }>["verdict"]>().toEqualTypeOf<Verdict>()
    expectTypeOf<Extract<Consultation.Outcome<Verdict>, { _tag: "WithoutVerdict" }>["reason"]>()
      .toEqualTypeOf<Evidence.Reason>()
  })

  it("the error posture's result is not assignable to a never-failing effect", () => {
    // @ts-expect-error — under error, TransportError | DeadlineExceeded | UpstreamStatus | CircuitOpen stay failures
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
