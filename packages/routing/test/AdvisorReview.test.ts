import { assert, describe, it } from "@effect/vitest"
import type { ChatCompletion } from "@switchyard-ts/protocol/OpenAiChat"
import * as AdvisorReview from "@switchyard-ts/routing/AdvisorReview"
import * as AdvisorRoute from "@switchyard-ts/routing/AdvisorRoute"
import * as AnswerChunks from "@switchyard-ts/routing/AnswerChunks"
import * as Evidence from "@switchyard-ts/routing/Evidence"
import * as Noop from "@switchyard-ts/routing/Noop"
import * as Effect from "effect/Effect"
import * as FastCheck from "effect/FastCheck"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"

const approve = Option.some<AdvisorReview.Verdict>({ _tag: "Approve" })
const redo = (plan: string) => Option.some<AdvisorReview.Verdict>({ _tag: "Redo", plan })

describe("AdvisorReview.parseVerdict", () => {
  const cases: ReadonlyArray<readonly [string, Option.Option<AdvisorReview.Verdict>]> = [
    ["APPROVE", approve],
    ["approve", approve],
    ["  Approve.\nLooks right.", approve],
    ["**APPROVE**", approve],
    ["# Verdict: APPROVE", approve],
    ["Final verdict - approve", approve],
    ["> `APPROVE`", approve],
    ["REDO: add a test for the empty case", redo("add a test for the empty case")],
    ["**REDO**\n\n1. Run the suite.\n2. Fix the failure.", redo("1. Run the suite.\n2. Fix the failure.")],
    ["Verdict: REDO -- check the error path --", redo("check the error path")],
    ["REDO", redo("REDO")],
    ["  redo  ", redo("redo")],
    ["APPROVED", Option.none()],
    ["REDONE", Option.none()],
    ["I approve of this.", Option.none()],
    ["The verdict is APPROVE", Option.none()],
    ["", Option.none()],
    ["{\"verdict\":\"APPROVE\"}", Option.none()]
  ]
  for (const [reply, expected] of cases) {
    it(`${JSON.stringify(reply)}`, () => {
      assert.deepStrictEqual(AdvisorReview.parseVerdict(reply), expected)
    })
  }
})

describe("AdvisorReview.truncateMiddle", () => {
  it("leaves a text that fits untouched", () => {
    assert.strictEqual(AdvisorReview.truncateMiddle("short", 256), "short")
  })

  it.effect.prop(
    "never exceeds the limit; keeps a quarter at the head and the rest at the tail",
    { text: FastCheck.string({ minLength: 0, maxLength: 3000 }), max: FastCheck.integer({ min: 256, max: 2000 }) },
    ({ max, text }) =>
      Effect.sync(() => {
        const out = AdvisorReview.truncateMiddle(text, max)
        if (text.length <= max) return out === text
        const [head = "", tail = ""] = out.split(/\n\[… \d+ characters omitted from the middle of the transcript …\]\n/)
        return out.length <= max && text.startsWith(head) && text.endsWith(tail) && tail.length >= 3 * head.length &&
          head.length >= 1 && head.length + tail.length + Number(/(\d+) characters/.exec(out)?.[1]) === text.length
      }),
    { fastCheck: { numRuns: 200 } }
  )
})

const turn = (message: Record<string, unknown>): ChatCompletion => ({
  id: "c",
  model: "m",
  choices: [{ index: 0, message: { role: "assistant", ...message }, finish_reason: "stop" }]
})

describe("AdvisorReview.turnText", () => {
  it("the visible text, else the reasoning (labelled), else a placeholder; tool calls listed after", () => {
    assert.strictEqual(AdvisorReview.turnText(turn({ content: "done" })), "done")
    assert.strictEqual(
      AdvisorReview.turnText(turn({ content: null, reasoning_content: "thinking" })),
      "(the turn has no visible text; its reasoning was:)\nthinking"
    )
    assert.strictEqual(AdvisorReview.turnText(turn({ content: "" })), "(the turn has no visible text)")
    assert.strictEqual(
      AdvisorReview.turnText(
        turn({ content: null, tool_calls: [{ id: "1", type: "function", function: { name: "ls", arguments: "{}" } }] })
      ),
      "(the turn has no visible text)\n[tool call ls] {}"
    )
  })
})

describe("AnswerChunks.chunks", () => {
  it("one message chunk per choice, then finish chunks, then usage when asked", () => {
    const completion: ChatCompletion = {
      id: "x",
      object: "chat.completion",
      created: 7,
      model: "m",
      choices: [{
        index: 0,
        message: {
          role: "assistant",
          content: null,
          tool_calls: [{ id: "t1", type: "function", function: { name: "run", arguments: "{\"a\":1}" } }]
        },
        finish_reason: "tool_calls"
      }],
      usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 }
    }
    assert.deepStrictEqual(AnswerChunks.chunks(completion, { includeUsage: true }), [
      {
        id: "x",
        object: "chat.completion.chunk",
        created: 7,
        model: "m",
        choices: [{
          index: 0,
          delta: {
            role: "assistant",
            tool_calls: [{ index: 0, id: "t1", type: "function", function: { name: "run", arguments: "{\"a\":1}" } }]
          },
          finish_reason: null
        }]
      },
      {
        id: "x",
        object: "chat.completion.chunk",
        created: 7,
        model: "m",
        choices: [{ index: 0, delta: {}, finish_reason: "tool_calls" }]
      },
      {
        id: "x",
        object: "chat.completion.chunk",
        created: 7,
        model: "m",
        choices: [],
        usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 }
      }
    ])
    assert.strictEqual(AnswerChunks.chunks(completion, { includeUsage: false }).length, 2)
  })

  it("noop's stream is its completion replayed, as before", () => {
    assert.deepStrictEqual(Noop.chunks("ping", 5), [
      {
        id: "switchyard-noop",
        object: "chat.completion.chunk",
        created: 5,
        model: "ping",
        choices: [{ index: 0, delta: { role: "assistant", content: "OK" }, finish_reason: null }]
      },
      {
        id: "switchyard-noop",
        object: "chat.completion.chunk",
        created: 5,
        model: "ping",
        choices: [{ index: 0, delta: {}, finish_reason: "stop" }]
      }
    ])
  })
})

describe("advisor evidence", () => {
  it("both advisor records decode and give span attributes", () => {
    const reviewed = Schema.decodeUnknownSync(Evidence.Evidence)({
      source: "advisor",
      verdict: "redo",
      trigger: "pattern",
      advisor_model: "big"
    })
    assert.deepStrictEqual(Evidence.spanAttributes(reviewed), {
      "evidence.source": "advisor",
      "evidence.verdict": "redo",
      "evidence.trigger": "pattern",
      "evidence.advisor_model": "big"
    })
    const failed = Schema.decodeUnknownSync(Evidence.Evidence)({
      source: "advisor",
      reason: "timeout",
      trigger: "no_tool_call",
      advisor_model: "big"
    })
    assert.deepStrictEqual(Evidence.spanAttributes(failed), {
      "evidence.source": "advisor",
      "evidence.reason": "timeout",
      "evidence.trigger": "no_tool_call",
      "evidence.advisor_model": "big"
    })
    const skipped = Schema.decodeUnknownSync(Evidence.Evidence)({
      source: "advisor",
      verdict: "skipped",
      skipped: "budget_exhausted",
      advisor_model: "big"
    })
    assert.strictEqual(Evidence.spanAttributes(skipped)["evidence.skipped"], "budget_exhausted")
  })

  it("fail_open selects the judge's fail_open posture; false selects error", () => {
    assert.strictEqual(AdvisorRoute.postureOf(true), "fail_open")
    assert.strictEqual(AdvisorRoute.postureOf(false), "error")
  })
})
