/**
 * The posture over judge chains, as a model: for any chain of one to four judges and any schedule
 * of per-judge outcomes (a verdict or one of every failure, each after a delay), with or without a
 * hedge and a chain deadline, `JudgeChain.run` through `Consultation.runChained` gives what the
 * model says — the first usable verdict in the order the judges settle (asked in order; a hedge
 * asks the next one early), else the last judge's failure folded by the posture, and the trail.
 */
import { assert, describe, it } from "@effect/vitest"
import { CircuitOpen, DeadlineExceeded, TransportError, UpstreamStatus } from "@switchyard-ts/protocol/Errors"
import * as Consultation from "@switchyard-ts/routing/Consultation"
import * as JudgeChain from "@switchyard-ts/routing/JudgeChain"
import * as Posture from "@switchyard-ts/routing/Posture"
import { InvalidVerdict } from "@switchyard-ts/routing/Verdict"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as FastCheck from "effect/FastCheck"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as TestClock from "effect/TestClock"
import { target } from "./scriptedJudge.js"

type Kind = "verdict" | "transport" | "timeout" | "upstream_5xx" | "upstream_non_5xx" | "parse_error" | "circuit_open"

interface Step {
  readonly kind: Kind
  /** Distinct per judge (a multiple of 10 plus the judge's index), so no two judges settle at once. */
  readonly afterMs: number
}

const failureOf = (kind: Exclude<Kind, "verdict">, model: string) => {
  switch (kind) {
    case "transport":
      return new TransportError({ target: model, reason: "connection refused" })
    case "timeout":
      return new DeadlineExceeded({ target: model, afterMs: 1 })
    case "upstream_5xx":
      return new UpstreamStatus({ target: model, status: 503 })
    case "upstream_non_5xx":
      return new UpstreamStatus({ target: model, status: 400 })
    case "parse_error":
      return new InvalidVerdict({ reason: "parse_error", detail: "x" })
    case "circuit_open":
      return new CircuitOpen({ target: model, client: "c" })
  }
}

/** What the model says the chain comes to, without hedging or a deadline: asked one after the other. */
const sequential = (steps: ReadonlyArray<Step>) => {
  const fallbacks: Array<JudgeChain.Fallback> = []
  for (const [i, step] of steps.entries()) {
    const model = `judge-${i}`
    if (step.kind === "verdict") return { _tag: "Verdict" as const, model, fallbacks }
    if (i === steps.length - 1) return { _tag: "Failed" as const, model, kind: step.kind, fallbacks }
    fallbacks.push({ model, reason: step.kind })
  }
  throw new Error("a chain has a judge")
}

/** The posture's fold of the model's outcome: what `runChained` must give. */
type Folded = Either.Either<
  { readonly _tag: string; readonly verdict?: string; readonly reason?: string; readonly model: string | undefined },
  string
>

const folded = (posture: Posture.Posture, outcome: ReturnType<typeof sequential>): Folded => {
  if (outcome._tag === "Verdict") {
    return Either.right({ _tag: "Verdict", verdict: `verdict of ${outcome.model}`, model: outcome.model })
  }
  const keeps = posture === "error" && outcome.kind !== "parse_error"
  return keeps
    ? Either.left(outcome.kind)
    : Either.right({ _tag: "WithoutVerdict", reason: outcome.kind, model: outcome.model })
}

const kindOf = (failure: unknown): string => {
  if (failure instanceof UpstreamStatus) return failure.status >= 500 ? "upstream_5xx" : "upstream_non_5xx"
  if (failure instanceof TransportError) return "transport"
  if (failure instanceof DeadlineExceeded) return "timeout"
  if (failure instanceof CircuitOpen) return "circuit_open"
  return "parse_error"
}

const kinds: ReadonlyArray<Kind> = [
  "verdict",
  "transport",
  "timeout",
  "upstream_5xx",
  "upstream_non_5xx",
  "parse_error",
  "circuit_open"
]

const schedule = FastCheck.array(
  FastCheck.record({ kind: FastCheck.constantFrom(...kinds), tens: FastCheck.integer({ min: 1, max: 30 }) }),
  { minLength: 1, maxLength: 4 }
).map((raw) => raw.map((s, i): Step => ({ kind: s.kind, afterMs: s.tens * 10 + i })))

const run = (steps: ReadonlyArray<Step>, posture: Posture.Posture, hedgeMs: Option.Option<number>) =>
  Effect.gen(function*() {
    const judges = steps.map((_, i) => target(`t${i}`, `judge-${i}`))
    const [first, ...rest] = judges
    if (first === undefined) return yield* Effect.dieMessage("no judge")
    const asked: Array<string> = []
    const chain = JudgeChain.run(
      { judges: [first, ...rest], deadlineMs: Option.none(), hedgeMs, route: "property" },
      (judge) => {
        const i = judges.indexOf(judge)
        const step = steps[i] ?? { kind: "transport", afterMs: 0 }
        asked.push(judge.id)
        return Effect.zipRight(
          Effect.sleep(step.afterMs),
          step.kind === "verdict"
            ? Effect.succeed(`verdict of ${judge.id}`)
            : Effect.fail(failureOf(step.kind, judge.id))
        )
      }
    )
    const fiber = yield* Effect.fork(Effect.either(Consultation.runChained(chain, Posture.fromConfig(posture))))
    yield* TestClock.adjust(10_000)
    const result = yield* Fiber.join(fiber)
    return { result, asked }
  })

describe("the posture over judge chains (model)", () => {
  it.effect.prop(
    "without a hedge: the first usable verdict in order, else the last failure, folded; every judge asked once, in order, until then",
    { steps: schedule, posture: FastCheck.constantFrom<Posture.Posture>("error", "fail_open") },
    ({ posture, steps }) =>
      Effect.gen(function*() {
        const { asked, result } = yield* run(steps, posture, Option.none())
        const model = sequential(steps)
        const expected = folded(posture, model)
        const got: Folded = Either.match(result, {
          onLeft: (failure) => Either.left(kindOf(failure)),
          onRight: (outcome) =>
            Either.right(
              outcome._tag === "Verdict"
                ? { _tag: "Verdict", verdict: outcome.verdict, model: outcome.trail?.judgeModel }
                : { _tag: "WithoutVerdict", reason: outcome.reason, model: outcome.trail?.judgeModel }
            )
        })
        assert.deepStrictEqual(got, expected)
        if (Either.isRight(result)) assert.deepStrictEqual(result.right.trail?.fallbacks, model.fallbacks)
        const settledAt = model._tag === "Verdict" ? Number(model.model.slice(6)) : steps.length - 1
        assert.deepStrictEqual(asked, steps.slice(0, settledAt + 1).map((_, i) => `judge-${i}`))
      }),
    { fastCheck: { numRuns: 300 } }
  )

  it.effect.prop(
    "with a hedge: a verdict comes from a judge whose step is a verdict, the hedged flag says whether it was asked early, and an exhausted chain still ends at the last judge",
    {
      steps: schedule,
      posture: FastCheck.constantFrom<Posture.Posture>("error", "fail_open"),
      // never a judge's settling time (those end in 0..3): no ties between a settle and a hedge
      hedge: FastCheck.integer({ min: 0, max: 20 }).map((tens) => tens * 10 + 5)
    },
    ({ hedge, posture, steps }) =>
      Effect.gen(function*() {
        const { asked, result } = yield* run(steps, posture, Option.some(hedge))
        const anyVerdict = steps.some((s) => s.kind === "verdict")
        // every judge is asked at most once
        assert.strictEqual(new Set(asked).size, asked.length)
        if (!anyVerdict) {
          const model = sequential(steps)
          const expected = folded(posture, model)
          const got: Either.Either<string, string> = Either.match(result, {
            onLeft: (failure) => Either.left(kindOf(failure)),
            onRight: (o) => Either.right(o._tag === "WithoutVerdict" ? o.reason : "verdict")
          })
          const want: Either.Either<string, string> = Either.isLeft(expected)
            ? Either.left(expected.left)
            : Either.right(model._tag === "Failed" ? model.kind : "verdict")
          assert.deepStrictEqual(got, want)
          if (Either.isRight(result)) {
            assert.strictEqual(result.right.trail?.judgeModel, `judge-${steps.length - 1}`)
            assert.deepStrictEqual(
              result.right.trail?.fallbacks.map((f) => f.model),
              steps.slice(0, -1).map((_, i) => `judge-${i}`)
            )
          }
          return
        }
        assert.isTrue(Either.isRight(result))
        if (Either.isRight(result) && result.right._tag === "Verdict") {
          const from = Number((result.right.trail?.judgeModel ?? "judge-x").slice(6))
          assert.strictEqual(steps[from]?.kind, "verdict")
          assert.strictEqual(result.right.verdict, `verdict of judge-${from}`)
          assert.strictEqual(result.right.trail?.hedged, hedgedAsk(steps, hedge, from))
        } else {
          assert.fail("a chain with a verdict in it answers with a verdict")
        }
      }),
    { fastCheck: { numRuns: 300 } }
  )
})

/**
 * Whether the verdict of judge `i` came through a hedge: some judge before it was still running
 * `hedge` ms after it was asked, so the rest of the chain (judge `i` among it) ran beside it.
 */
const hedgedAsk = (steps: ReadonlyArray<Step>, hedge: number, i: number): boolean =>
  steps.slice(0, i).some((step) => step.afterMs > hedge)
