import { assert, describe, it } from "@effect/vitest"
import { CircuitOpen, DeadlineExceeded, TransportError, UpstreamStatus } from "@switchyard-ts/protocol/Errors"
import * as Consultation from "@switchyard-ts/routing/Consultation"
import type * as Evidence from "@switchyard-ts/routing/Evidence"
import type { JudgeError } from "@switchyard-ts/routing/Judge"
import * as Posture from "@switchyard-ts/routing/Posture"
import { InvalidVerdict, type Verdict } from "@switchyard-ts/routing/Verdict"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as TestClock from "effect/TestClock"

const verdict: Verdict = { crux: "a small fix", primary_rule: "SUP-1", capability_boundary: "supported", p_solve: 0.9 }
const circuitOpen = new CircuitOpen({ target: "judge", client: "judge-client" })

/** Every consultation failure, whether the `error` posture fails with it, and its evidence reason. */
const failures: ReadonlyArray<{
  readonly label: string
  readonly failure: JudgeError
  readonly failsUnderError: boolean
  readonly reason: Evidence.Reason
}> = [
  {
    label: "TransportError",
    failure: new TransportError({ target: "judge", reason: "refused" }),
    failsUnderError: true,
    reason: "transport"
  },
  {
    label: "DeadlineExceeded",
    failure: new DeadlineExceeded({ target: "judge", afterMs: 3000 }),
    failsUnderError: true,
    reason: "timeout"
  },
  {
    label: "UpstreamStatus 500",
    failure: new UpstreamStatus({ target: "judge", status: 500 }),
    failsUnderError: true,
    reason: "upstream_5xx"
  },
  {
    label: "UpstreamStatus 599",
    failure: new UpstreamStatus({ target: "judge", status: 599 }),
    failsUnderError: true,
    reason: "upstream_5xx"
  },
  {
    label: "UpstreamStatus 429",
    failure: new UpstreamStatus({ target: "judge", status: 429 }),
    failsUnderError: true,
    reason: "upstream_non_5xx"
  },
  {
    label: "UpstreamStatus 401",
    failure: new UpstreamStatus({ target: "judge", status: 401 }),
    failsUnderError: true,
    reason: "upstream_non_5xx"
  },
  {
    label: "CircuitOpen (the breaker refused the call)",
    failure: circuitOpen,
    failsUnderError: true,
    reason: "circuit_open"
  },
  {
    label: "InvalidVerdict parse_error",
    failure: new InvalidVerdict({ reason: "parse_error", detail: "x" }),
    failsUnderError: false,
    reason: "parse_error"
  },
  {
    label: "InvalidVerdict invalid_response",
    failure: new InvalidVerdict({ reason: "invalid_response", detail: "x" }),
    failsUnderError: false,
    reason: "invalid_response"
  }
]

type Run = (
  self: Effect.Effect<Verdict, JudgeError>
) => Effect.Effect<Consultation.Outcome<Verdict>, Posture.Unconsulted>

/** The helper over every way of naming each posture, data-first and data-last. */
const runs: ReadonlyArray<readonly [string, Posture.Posture, Run]> = [
  ["Posture.error", "error", Consultation.run(Posture.error)],
  ["Posture.failOpen", "fail_open", Consultation.run(Posture.failOpen)],
  ["Posture.fromConfig(error)", "error", Consultation.run(Posture.fromConfig("error"))],
  ["Posture.fromConfig(fail_open)", "fail_open", Consultation.run(Posture.fromConfig("fail_open"))],
  ["data-first Posture.error", "error", (self) => Consultation.run(self, Posture.error)],
  ["data-first Posture.failOpen", "fail_open", (self) => Consultation.run(self, Posture.failOpen)]
]

describe("Consultation.run", () => {
  for (const [name, posture, run] of runs) {
    describe(name, () => {
      it.effect("a verdict is Verdict(verdict)", () =>
        Effect.gen(function*() {
          const exit = yield* Effect.exit(run(Effect.succeed(verdict)))
          assert.deepStrictEqual(exit, Exit.succeed(Consultation.Verdict({ verdict })))
        }))

      for (const { failure, failsUnderError, label, reason } of failures) {
        const fails = posture === "error" && failsUnderError
        it.effect(`${label} ${fails ? "fails with the same error" : `is WithoutVerdict(${reason})`}`, () =>
          Effect.gen(function*() {
            const exit = yield* Effect.exit(run(Effect.fail(failure)))
            if (fails) {
              assert.deepStrictEqual<Exit.Exit<unknown, unknown>>(exit, Exit.fail(failure))
              // The very failure the consultation produced, not a copy.
              assert.isTrue(Exit.isFailure(exit) && exit.cause._tag === "Fail" && exit.cause.error === failure)
            } else {
              assert.deepStrictEqual(exit, Exit.succeed(Consultation.WithoutVerdict({ reason })))
            }
          }))
      }

      it.effect("a consultation past its deadline: fails under error, WithoutVerdict(timeout) under fail_open", () =>
        Effect.gen(function*() {
          const stalled = Effect.never.pipe(
            Effect.timeoutFail({
              duration: "3 seconds",
              onTimeout: () => new DeadlineExceeded({ target: "judge", afterMs: 3000 })
            })
          )
          const fiber = yield* Effect.fork(run(stalled))
          yield* TestClock.adjust("2999 millis")
          assert.isTrue((yield* Fiber.poll(fiber))._tag === "None")
          yield* TestClock.adjust("1 millis")
          const exit = yield* Fiber.await(fiber)
          assert.deepStrictEqual(
            exit,
            posture === "error"
              ? Exit.fail(new DeadlineExceeded({ target: "judge", afterMs: 3000 }))
              : Exit.succeed(Consultation.WithoutVerdict({ reason: "timeout" }))
          )
        }))

      it.effect("a verdict that takes time is still Verdict(verdict)", () =>
        Effect.gen(function*() {
          const fiber = yield* Effect.fork(run(Effect.as(Effect.sleep("2 seconds"), verdict)))
          yield* TestClock.adjust("2 seconds")
          assert.deepStrictEqual(yield* Fiber.join(fiber), Consultation.Verdict({ verdict }))
        }))

      it.effect("leaves defects alone", () =>
        Effect.gen(function*() {
          const exit = yield* Effect.exit(run(Effect.die("boom")))
          assert.deepStrictEqual(exit, Exit.die("boom"))
        }))

      it.effect("leaves interruption alone", () =>
        Effect.gen(function*() {
          const fiber = yield* Effect.fork(run(Effect.never))
          const exit = yield* Fiber.interrupt(fiber)
          assert.isTrue(Exit.isInterrupted(exit))
        }))

      it.effect("runs the consultation exactly once, whatever it does", () =>
        Effect.gen(function*() {
          const outcomes: ReadonlyArray<Effect.Effect<Verdict, JudgeError>> = [
            Effect.succeed(verdict),
            Effect.fail(circuitOpen),
            ...failures.map((f) => Effect.fail(f.failure))
          ]
          for (const outcome of outcomes) {
            let runs = 0
            yield* Effect.exit(run(Effect.suspend(() => {
              runs++
              return outcome
            })))
            assert.strictEqual(runs, 1)
          }
        }))
    })
  }

  it.effect("carries the consultation's requirements and success type through", () => {
    class Model extends Context.Tag("test/Model")<Model, string>() {}
    return Effect.gen(function*() {
      const outcome = yield* Effect.map(Model, (model) => ({ model })).pipe(
        Consultation.run(Posture.failOpen),
        Effect.provideService(Model, "gpt-x")
      )
      assert.deepStrictEqual(outcome, Consultation.Verdict({ verdict: { model: "gpt-x" } }))
    })
  })

  it("reasonOf maps every consultation failure to its bounded reason", () => {
    for (const { failure, reason } of failures) assert.strictEqual(Consultation.reasonOf(failure), reason)
    assert.strictEqual(Consultation.reasonOf(circuitOpen), "circuit_open")
  })

  it("failureOf rebuilds a failure of every reason (what policy replay puts back through the posture)", () => {
    for (const { reason } of failures) {
      assert.strictEqual(Consultation.reasonOf(Consultation.failureOf(reason, "j")), reason)
    }
  })

  it("$match and $is discriminate the outcomes", () => {
    const show = (outcome: Consultation.Outcome<Verdict>): string =>
      Consultation.$match(outcome, {
        Verdict: ({ verdict }) => `verdict ${verdict.p_solve}`,
        WithoutVerdict: ({ reason }) => `without ${reason}`
      })
    assert.strictEqual(show(Consultation.Verdict({ verdict })), "verdict 0.9")
    assert.strictEqual(show(Consultation.WithoutVerdict({ reason: "timeout" })), "without timeout")
    assert.isTrue(Consultation.$is("WithoutVerdict")(Consultation.WithoutVerdict({ reason: "circuit_open" })))
    assert.isFalse(Consultation.$is("WithoutVerdict")(Consultation.Verdict({ verdict })))
  })
})
