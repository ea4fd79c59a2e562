import { assert, describe, it } from "@effect/vitest"
import { DeadlineExceeded, type JudgeCallFailure, TransportError, UpstreamStatus } from "@switchyard-ts/protocol/Errors"
import * as Posture from "@switchyard-ts/routing/Posture"
import { InvalidVerdict, type Verdict } from "@switchyard-ts/routing/Verdict"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"

const verdict: Verdict = { crux: "a small fix", primary_rule: "SUP-1", capability_boundary: "supported", p_solve: 0.9 }

const failures: ReadonlyArray<readonly [string, JudgeCallFailure | InvalidVerdict]> = [
  ["TransportError", new TransportError({ target: "judge", reason: "connection refused" })],
  ["DeadlineExceeded", new DeadlineExceeded({ target: "judge", afterMs: 3000 })],
  ["UpstreamStatus 503", new UpstreamStatus({ target: "judge", status: 503 })],
  ["UpstreamStatus 401", new UpstreamStatus({ target: "judge", status: 401 })],
  ["InvalidVerdict parse_error", new InvalidVerdict({ reason: "parse_error", detail: "x" })],
  ["InvalidVerdict invalid_response", new InvalidVerdict({ reason: "invalid_response", detail: "x" })]
]

type Combinator = (
  self: Effect.Effect<Verdict, JudgeCallFailure | InvalidVerdict>
) => Effect.Effect<Option.Option<Verdict>, JudgeCallFailure>

const combinators: ReadonlyArray<readonly [string, Posture.Posture, Combinator]> = [
  ["error", "error", Posture.error],
  ["failOpen", "fail_open", Posture.failOpen],
  ["fromConfig(error)", "error", Posture.fromConfig("error")],
  ["fromConfig(fail_open)", "fail_open", Posture.fromConfig("fail_open")],
  ["fromConfig(self, error)", "error", (self) => Posture.fromConfig(self, "error")],
  ["fromConfig(self, fail_open)", "fail_open", (self) => Posture.fromConfig(self, "fail_open")]
]

/** The posture table's: under `error`, exactly the three call failures fail; everything else is "no verdict". */
const expected = (
  posture: Posture.Posture,
  failure: JudgeCallFailure | InvalidVerdict
): Exit.Exit<Option.Option<Verdict>, JudgeCallFailure> =>
  posture === "error" && failure._tag !== "InvalidVerdict" ? Exit.fail(failure) : Exit.succeed(Option.none())

describe("Posture (posture table)", () => {
  for (const [name, posture, combinator] of combinators) {
    for (const [label, failure] of failures) {
      it.effect(`${name} × ${label}`, () =>
        Effect.gen(function*() {
          const exit = yield* Effect.exit(combinator(Effect.fail(failure)))
          assert.deepStrictEqual(exit, expected(posture, failure))
        }))
    }

    it.effect(`${name} × a valid verdict is Option.some`, () =>
      Effect.gen(function*() {
        const exit = yield* Effect.exit(combinator(Effect.succeed(verdict)))
        assert.deepStrictEqual(exit, Exit.succeed(Option.some(verdict)))
      }))

    it.effect(`${name} leaves defects alone`, () =>
      Effect.gen(function*() {
        const exit = yield* Effect.exit(combinator(Effect.die("boom")))
        assert.deepStrictEqual(exit, Exit.die("boom"))
      }))
  }

  it.effect("the judge effect runs exactly once per posture application", () =>
    Effect.gen(function*() {
      let runs = 0
      const judged = Effect.suspend(() => {
        runs++
        return Effect.fail(new UpstreamStatus({ target: "judge", status: 500 }))
      })
      yield* Effect.exit(Posture.failOpen(judged))
      yield* Effect.exit(Posture.error(judged))
      assert.strictEqual(runs, 2)
    }))
})
