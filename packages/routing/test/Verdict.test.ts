import { assert, describe, it } from "@effect/vitest"
import type { ChatCompletion } from "@switchyard-ts/protocol/OpenAiChat"
import * as Judge from "@switchyard-ts/routing/Judge"
import * as ThresholdPolicy from "@switchyard-ts/routing/ThresholdPolicy"
import * as Verdict from "@switchyard-ts/routing/Verdict"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"

const verdict = (
  primary_rule: Verdict.Rule,
  capability_boundary: Verdict.Boundary,
  p_solve = 0.5,
  crux = "the crux"
): Verdict.Verdict => ({ crux, primary_rule, capability_boundary, p_solve })

const json = (value: unknown): string => JSON.stringify(value)

const assertParseError = (text: string) =>
  Effect.gen(function*() {
    const exit = yield* Effect.exit(Verdict.decode(text))
    assert.isTrue(Exit.isFailure(exit), `expected ${JSON.stringify(text)} to be rejected`)
    const error = yield* Effect.flip(Verdict.decode(text))
    assert.strictEqual(error._tag, "InvalidVerdict")
    assert.strictEqual(error.reason, "parse_error")
  })

describe("Verdict.decode", () => {
  const valid: ReadonlyArray<Verdict.Verdict> = [
    verdict("SUP-1", "supported", 0.9),
    verdict("SUP-2", "supported", 0),
    verdict("SUP-3", "supported", 1),
    verdict("SUP-4", "supported", 0.25),
    verdict("SUP-5", "supported", 0.75),
    verdict("UNC-1", "uncertain", 0.5),
    verdict("UNC-2", "uncertain", 0.4),
    verdict("none", "unmatched", 0.6),
    verdict("LIM-1", "unsupported", 0.1),
    verdict("LIM-2", "unsupported", 0.3)
  ]
  for (const v of valid) {
    it.effect(`accepts ${v.primary_rule} with ${v.capability_boundary}`, () =>
      Effect.gen(function*() {
        assert.deepStrictEqual(yield* Verdict.decode(json(v)), v)
      }))
  }

  it.effect("strips a ```json fence, a bare ``` fence and surrounding whitespace", () =>
    Effect.gen(function*() {
      const v = verdict("UNC-1", "uncertain", 0.45)
      assert.deepStrictEqual(yield* Verdict.decode("```json\n" + json(v) + "\n```"), v)
      assert.deepStrictEqual(yield* Verdict.decode("```\n" + json(v) + "\n```"), v)
      assert.deepStrictEqual(yield* Verdict.decode("  \n```json\r\n" + json(v) + "```  \n"), v)
      assert.deepStrictEqual(yield* Verdict.decode(`\n  ${json(v)}  \n`), v)
    }))

  it.effect("prose before a fence and an uppercase JSON tag are parse errors", () =>
    Effect.gen(function*() {
      const v = json(verdict("SUP-1", "supported"))
      yield* assertParseError("Here is my verdict:\n```json\n" + v + "\n```")
      yield* assertParseError("```JSON\n" + v + "\n```")
      yield* assertParseError(v + "\nThat is my verdict.")
    }))

  const rejected: ReadonlyArray<readonly [string, string]> = [
    ["an extra key", json({ ...verdict("SUP-1", "supported"), confidence: "high" })],
    ["a missing key", json({ crux: "c", primary_rule: "SUP-1", capability_boundary: "supported" })],
    ["p_solve as a string", json({ ...verdict("SUP-1", "supported"), p_solve: "0.5" })],
    ["crux as a number", json({ ...verdict("SUP-1", "supported"), crux: 3 })],
    ["an unknown rule", json({ ...verdict("SUP-1", "supported"), primary_rule: "SUP-6" })],
    ["an unknown boundary", json({ ...verdict("SUP-1", "supported"), capability_boundary: "maybe" })],
    ["p_solve 1.5", json(verdict("SUP-1", "supported", 1.5))],
    ["p_solve -0.1", json(verdict("SUP-1", "supported", -0.1))],
    ["a blank crux", json(verdict("SUP-1", "supported", 0.5, "  \t "))],
    ["an empty crux", json(verdict("SUP-1", "supported", 0.5, ""))],
    ["SUP-1 with uncertain", json(verdict("SUP-1", "uncertain"))],
    ["UNC-2 with supported", json(verdict("UNC-2", "supported"))],
    ["none with unsupported", json(verdict("none", "unsupported"))],
    ["LIM-1 with unmatched", json(verdict("LIM-1", "unmatched"))],
    ["an array", json([verdict("SUP-1", "supported")])],
    ["null", "null"],
    ["not JSON", "not a verdict"],
    ["truncated JSON", json(verdict("SUP-1", "supported")).slice(0, 30)],
    ["an empty text", ""],
    ["whitespace only", "  \n "],
    ["an empty fence", "```json\n```"]
  ]
  for (const [label, text] of rejected) {
    it.effect(`${label} is an InvalidVerdict parse_error`, () => assertParseError(text))
  }

  it("boundaryOfRule maps each rule family to its boundary", () => {
    const pairs = Verdict.Rule.literals.map((rule) => [rule, Verdict.boundaryOfRule(rule)])
    assert.deepStrictEqual(pairs, [
      ["SUP-1", "supported"],
      ["SUP-2", "supported"],
      ["SUP-3", "supported"],
      ["SUP-4", "supported"],
      ["SUP-5", "supported"],
      ["UNC-1", "uncertain"],
      ["UNC-2", "uncertain"],
      ["LIM-1", "unsupported"],
      ["LIM-2", "unsupported"],
      ["none", "unmatched"]
    ])
  })
})

const completion = (content: string | null, finish_reason: string | null): ChatCompletion => ({
  id: "chatcmpl-judge",
  object: "chat.completion",
  created: 0,
  model: "judge",
  choices: [{ index: 0, message: { role: "assistant", content }, finish_reason }]
})

describe("Judge.verdictOf", () => {
  const v = verdict("SUP-2", "supported", 0.8)

  it.effect("reads the first choice's text", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* Judge.verdictOf(completion(json(v), "stop")), v)
      assert.deepStrictEqual(yield* Judge.verdictOf(completion(json(v), null)), v)
    }))

  it.effect("finish_reason length is a parse_error even when the text happens to be a verdict", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(Judge.verdictOf(completion(json(v), "length")))
      assert.strictEqual(error.reason, "parse_error")
    }))

  it.effect("no choice, or a null content, is a parse_error", () =>
    Effect.gen(function*() {
      const none = yield* Effect.flip(Judge.verdictOf({ ...completion(null, "stop"), choices: [] }))
      assert.strictEqual(none.reason, "parse_error")
      const empty = yield* Effect.flip(Judge.verdictOf(completion(null, "stop")))
      assert.strictEqual(empty.reason, "parse_error")
    }))
})

describe("ThresholdPolicy.choose", () => {
  const at = (boundary: Verdict.Boundary, p_solve: number) =>
    ThresholdPolicy.choose(
      verdict(
        boundary === "supported"
          ? "SUP-1"
          : boundary === "uncertain"
          ? "UNC-1"
          : boundary === "unmatched"
          ? "none"
          : "LIM-1",
        boundary,
        p_solve
      ),
      0.5,
      0.1
    )

  it("threshold steps: supported 0, uncertain and unmatched 1, unsupported 2", () => {
    assert.deepStrictEqual(
      Verdict.Boundary.literals.map((boundary) => [boundary, ThresholdPolicy.steps(boundary)]),
      [["supported", 0], ["uncertain", 1], ["unmatched", 1], ["unsupported", 2]]
    )
    assert.strictEqual(ThresholdPolicy.threshold("supported", 0.4, 0.125), 0.4)
    assert.strictEqual(ThresholdPolicy.threshold("uncertain", 0.5, 0.125), 0.625)
    assert.strictEqual(ThresholdPolicy.threshold("unmatched", 0.5, 0.125), 0.625)
    assert.strictEqual(ThresholdPolicy.threshold("unsupported", 0.5, 0.125), 0.75)
  })

  it("a tie goes weak, just below goes strong", () => {
    assert.deepStrictEqual(at("supported", 0.5), { tier: "weak", threshold: 0.5 })
    assert.deepStrictEqual(at("supported", 0.49), { tier: "strong", threshold: 0.5 })
    assert.deepStrictEqual(at("supported", 1), { tier: "weak", threshold: 0.5 })
    assert.deepStrictEqual(at("supported", 0), { tier: "strong", threshold: 0.5 })
  })

  it("uncertain and unmatched need base + step, unsupported base + 2 steps (float ties go weak)", () => {
    for (const boundary of ["uncertain", "unmatched"] as const) {
      assert.strictEqual(at(boundary, 0.6).tier, "weak", boundary)
      assert.strictEqual(at(boundary, 0.59).tier, "strong", boundary)
      assert.strictEqual(at(boundary, 0.5).tier, "strong", boundary)
      assert.closeTo(at(boundary, 0.6).threshold, 0.6, 1e-12)
    }
    assert.strictEqual(at("unsupported", 0.7).tier, "weak")
    assert.strictEqual(at("unsupported", 0.69).tier, "strong")
    assert.strictEqual(at("unsupported", 0.6).tier, "strong")
    assert.closeTo(at("unsupported", 0.7).threshold, 0.7, 1e-12)
  })
})
