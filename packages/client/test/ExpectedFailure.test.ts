/**
 * Failures made without a stack trace are the same failures: tag, fields, `message`, `String`,
 * `toJSON`, equality, the HTTP envelope, the judge wrapper's message. Only their `stack` differs
 * (its first line, no frames), and `Error.stackTraceLimit` is left as it was.
 */
import { assert, describe, it } from "@effect/vitest"
import * as ExpectedFailure from "@switchyard-ts/client/ExpectedFailure"
import {
  CircuitOpen,
  DeadlineExceeded,
  InvalidResponse,
  JudgeUnavailable,
  toEnvelope,
  toHttp,
  TransportError,
  UpstreamStatus
} from "@switchyard-ts/protocol/Errors"
import * as Equal from "effect/Equal"
import * as Option from "effect/Option"
import * as Failure from "../src/internal/failure.js"
import * as OpenAiChat from "../src/internal/formats/openAiChat.js"

/** Pairs of the same failure: made as usual, and without a stack trace. */
const pairs = [
  [
    new TransportError({ target: "judge", reason: "connection failed (ECONNREFUSED)" }),
    Failure.transport("judge", "connection failed (ECONNREFUSED)")
  ],
  [new DeadlineExceeded({ target: "judge", afterMs: 3000 }), Failure.deadline("judge", 3000)],
  [
    new InvalidResponse({ target: "judge", reason: "response body is not valid JSON" }),
    Failure.invalidResponse("judge", "response body is not valid JSON")
  ],
  [
    new UpstreamStatus({ target: "m", status: 429, upstreamMessage: "slow down", retryAfterMs: 2000 }),
    Failure.upstreamStatus({
      target: "m",
      status: 429,
      body: Option.some(JSON.stringify({ error: { message: "slow down" } })),
      retryAfterMs: Option.some(2000),
      secrets: [],
      errors: OpenAiChat.errors
    })
  ],
  [
    new CircuitOpen({ target: "judge", client: "judge-client" }),
    ExpectedFailure.make(() => new CircuitOpen({ target: "judge", client: "judge-client" }))
  ]
] as const

/** An error's own enumerable fields (its `_tag` included). */
const fields = (error: object): Readonly<Record<string, unknown>> => Object.fromEntries(Object.entries(error))

describe("ExpectedFailure", () => {
  for (const [usual, expected] of pairs) {
    it(`${usual._tag} renders as the usual one and captures no stack frame`, () => {
      assert.strictEqual(Object.getPrototypeOf(expected), Object.getPrototypeOf(usual))
      assert.instanceOf(expected, Error)
      assert.deepStrictEqual(fields(expected), fields(usual))
      assert.strictEqual(expected.message, usual.message)
      assert.strictEqual(String(expected), String(usual))
      assert.deepStrictEqual(expected.toJSON(), usual.toJSON())
      assert.isTrue(Equal.equals(expected, usual))
      assert.deepStrictEqual(toEnvelope(toHttp(expected)), toEnvelope(toHttp(usual)))
      // the usual one carries frames; the expected one its first line only
      assert.isAbove(usual.stack?.split("\n").length ?? 0, 1)
      assert.strictEqual(expected.stack, `${expected.name}: ${expected.message}`)
    })
  }

  it("a judge failure around an expected failure has the same message and envelope", () => {
    const [usual, expected] = pairs[0]
    const around = (failure: TransportError) => new JudgeUnavailable({ judgeModel: "judge", failure })
    assert.strictEqual(around(expected).message, around(usual).message)
    assert.deepStrictEqual(toEnvelope(toHttp(around(expected))), toEnvelope(toHttp(around(usual))))
  })

  it("restores Error.stackTraceLimit, also when the constructor throws", () => {
    const before = Error.stackTraceLimit
    ExpectedFailure.make(() => new TransportError({ target: "t", reason: "r" }))
    assert.strictEqual(Error.stackTraceLimit, before)
    assert.throws(() =>
      ExpectedFailure.make(() => {
        throw new Error("boom")
      })
    )
    assert.strictEqual(Error.stackTraceLimit, before)
    // a defect made afterwards still has its frames
    assert.isAbove(new Error("defect").stack?.split("\n").length ?? 0, 1)
  })
})
