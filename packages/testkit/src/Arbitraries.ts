/**
 * fast-check arbitraries (the `FastCheck` re-exported by `effect`) for fake-upstream behaviours,
 * failure schedules and judge outcomes. Arbitraries are derived from the schemas with
 * `Arbitrary.make`; the schemas' arbitrary annotations keep delays at or under 10 ms and chunk counts
 * small, so generated schedules can be replayed against a real {@link FakeUpstream} quickly.
 */
import * as Arbitrary from "effect/Arbitrary"
import * as FastCheck from "effect/FastCheck"
import * as Schema from "effect/Schema"
import {
  type Behaviour,
  Behaviour as BehaviourSchema,
  Chunks,
  CloseMidStream,
  Echo,
  Garbage,
  Ok,
  Reset,
  Stall,
  Status
} from "./FakeUpstream.js"

/** Any behaviour. */
export const behaviour: FastCheck.Arbitrary<Behaviour> = Arbitrary.make(BehaviourSchema)

/** The behaviours that do not produce a usable answer: stall, error status, garbage, cut, reset. */
export const FailureBehaviour = Schema.Union(Stall, Status, Garbage, CloseMidStream, Reset)
/** @see {@link FailureBehaviour} */
export type FailureBehaviour = typeof FailureBehaviour.Type

/** Any failure behaviour (see {@link FailureBehaviour}). */
export const failureBehaviour: FastCheck.Arbitrary<FailureBehaviour> = Arbitrary.make(FailureBehaviour)

/** The behaviours that answer a complete 200: `Ok`, `Chunks`, `Echo`. */
export const SuccessBehaviour = Schema.Union(Ok, Chunks, Echo)
/** @see {@link SuccessBehaviour} */
export type SuccessBehaviour = typeof SuccessBehaviour.Type

/** Any success behaviour (see {@link SuccessBehaviour}). */
export const successBehaviour: FastCheck.Arbitrary<SuccessBehaviour> = Arbitrary.make(SuccessBehaviour)

/** Every behaviour except `Stall`: each request gets an answer or a cut without a client timeout. */
export const answeringBehaviour: FastCheck.Arbitrary<Behaviour> = behaviour.filter((b) => b._tag !== "Stall")

/**
 * A failure schedule: up to `maxLength` behaviours (default: any behaviour), to be fed to
 * `FakeUpstream.script`.
 */
export const schedule = (
  maxLength: number,
  of: FastCheck.Arbitrary<Behaviour> = behaviour
): FastCheck.Arbitrary<ReadonlyArray<Behaviour>> => FastCheck.array(of, { maxLength })

/** Up to `maxLength` failure behaviours (see {@link FailureBehaviour}). */
export const failureSchedule = (maxLength: number): FastCheck.Arbitrary<ReadonlyArray<FailureBehaviour>> =>
  FastCheck.array(failureBehaviour, { maxLength })

/** What a judge consultation can run into. */
export const JudgeOutcome = Schema.Literal("verdict", "garbage", "stall", "refuse", "5xx", "4xx")
/** @see {@link JudgeOutcome} */
export type JudgeOutcome = typeof JudgeOutcome.Type

/** Any judge outcome. */
export const judgeOutcome: FastCheck.Arbitrary<JudgeOutcome> = Arbitrary.make(JudgeOutcome)

/** Up to `maxLength` judge outcomes, one per consultation. */
export const judgeOutcomes = (maxLength: number): FastCheck.Arbitrary<ReadonlyArray<JudgeOutcome>> =>
  FastCheck.array(judgeOutcome, { maxLength })

/** A valid capability verdict (README.md, the judge failure posture; docs/routes.md) used by {@link judgeBehaviour} for `"verdict"`. */
export const defaultVerdict = JSON.stringify({
  crux: "a small, well-specified edit",
  primary_rule: "SUP-1",
  capability_boundary: "supported",
  p_solve: 0.9
})

/**
 * The fake-upstream behaviour that makes a judge run into `outcome`: `verdict` → `Ok` with
 * `verdict` as content; `garbage` → a 200 whose body is not JSON; `stall` → `Stall`; `refuse` → `Ok`
 * with prose that is not a verdict; `5xx` → 503; `4xx` → 400.
 */
export const judgeBehaviour = (outcome: JudgeOutcome, verdict: string = defaultVerdict): Behaviour => {
  switch (outcome) {
    case "verdict":
      return Ok.make({ content: verdict })
    case "garbage":
      return Garbage.make({ body: "<html><body>502 Bad Gateway</body></html>" })
    case "stall":
      return Stall.make({})
    case "refuse":
      return Ok.make({ content: "I'm sorry, but I can't help with that request." })
    case "5xx":
      return Status.make({ status: 503, message: "judge overloaded" })
    case "4xx":
      return Status.make({ status: 400, message: "bad judge request" })
  }
}
