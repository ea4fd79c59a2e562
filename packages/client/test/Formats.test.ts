/**
 * The table of upstream wire formats (`internal/formats.ts`): each `Format` names the record of
 * that format, and the operations only one format offers are offered by that format alone.
 */
import { assert, describe, it } from "@effect/vitest"
import { formats } from "../src/internal/formats.js"
import type { Format } from "../src/Target.js"

const entries = Object.entries(formats).flatMap(([key, record]) =>
  key === record.format ? [[key, record] as const] : assert.fail(`formats.${key} is the record of ${record.format}`)
)

describe("formats", () => {
  it("every key is the format of its record", () => {
    const keys: ReadonlyArray<Format> = [
      "openai_chat",
      "openai_responses",
      "anthropic_messages",
      "gemini_generate_content"
    ]
    assert.deepStrictEqual(entries.map(([key]) => key).sort(), [...keys].sort())
  })

  it("token counting is Anthropic's, the auxiliary operations are Responses'", () => {
    const counting = entries.flatMap(([key, record]) => (record.countTokensUrl === undefined ? [] : [key]))
    const auxiliary = entries.flatMap(([key, record]) => (record.auxiliaryUrl === undefined ? [] : [key]))
    assert.deepStrictEqual(counting, ["anthropic_messages"])
    assert.deepStrictEqual(auxiliary, ["openai_responses"])
  })

  it("only Gemini forwards no caller credential", () => {
    const none = entries.flatMap(([key, record]) => (record.forwardedHeaders.length === 0 ? [key] : []))
    assert.deepStrictEqual(none, ["gemini_generate_content"])
  })
})
