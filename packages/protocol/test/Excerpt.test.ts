import { assert, describe, it } from "@effect/vitest"
import { ModelNotFound } from "@switchyard-ts/protocol/Errors"
import { clip, excerpt, maxQuotedChars } from "@switchyard-ts/protocol/Excerpt"
import * as FastCheck from "effect/FastCheck"

describe("Excerpt", () => {
  it("clip keeps short text and cuts long text to a prefix, an ellipsis and the length", () => {
    assert.strictEqual(clip("gpt-4o"), "gpt-4o")
    assert.strictEqual(clip("x".repeat(maxQuotedChars)), "x".repeat(maxQuotedChars))
    assert.strictEqual(clip("y".repeat(100_000)), `${"y".repeat(64)}… (100000 chars)`)
    assert.strictEqual(clip("abcdef", 3), "abc… (6 chars)")
  })

  it("excerpt quotes strings, names scalars and describes structures by size only", () => {
    assert.strictEqual(excerpt("user"), "\"user\"")
    assert.strictEqual(excerpt("r".repeat(1_000)), `"${"r".repeat(64)}"… (1000 chars)`)
    assert.strictEqual(excerpt(42), "42")
    assert.strictEqual(excerpt(null), "null")
    assert.strictEqual(excerpt(false), "false")
    assert.strictEqual(excerpt(undefined), "undefined")
    assert.strictEqual(excerpt([1, [2, [3]]]), "an array of 2 items")
    assert.strictEqual(excerpt([1]), "an array of 1 item")
    assert.strictEqual(excerpt({ a: { secret: "s".repeat(10) }, b: 1 }), "an object with 2 keys")
  })

  it("never quotes more than the bound of any value, whatever it is", () => {
    FastCheck.assert(
      FastCheck.property(
        FastCheck.jsonValue({ maxDepth: 4 }),
        FastCheck.string({ minLength: 65, maxLength: 5_000 }),
        (value, long) => {
          // 64 characters, each at most 6 when escaped as JSON, plus quotes, the ellipsis and the length.
          assert.isAtMost(excerpt(value).length, 64 * 6 + 40)
          assert.isAtMost(excerpt(long).length, 64 * 6 + 40)
          assert.isAtMost(clip(long).length, 64 + 30)
        }
      ),
      { seed: 12, numRuns: 300 }
    )
  })

  it("ModelNotFound names a long model by its prefix and length", () => {
    const message = new ModelNotFound({ model: `m${"z".repeat(50_000)}` }).message
    assert.isBelow(message.length, 200)
    assert.include(message, "(50001 chars)")
    assert.strictEqual(new ModelNotFound({ model: "gpt-4o" }).message, "No route registered for model gpt-4o")
  })
})
