import { assert, describe, it } from "@effect/vitest"
import * as Either from "effect/Either"
import type { Kind } from "../src/bench/agent/conversation.js"
import { type Shape, shapeOf } from "../src/bench/agent/shape.js"
import { agentBody, type Format } from "../src/bench/agent/wire.js"

/** The body decoded with the protocol package's schema of `format` (the test fails when it does not decode). */
const decoded = (format: Format, text: string): Shape =>
  Either.getOrThrowWith(shapeOf(format, text), (error) => new Error(`${format} body does not decode: ${error}`))

const formats: ReadonlyArray<Format> = ["chat", "messages", "responses"]
const kinds: ReadonlyArray<Kind> = ["user-turn", "continuation"]

describe("agent bodies", () => {
  for (const format of formats) {
    for (const kind of kinds) {
      for (const kb of [64, 256]) {
        it(`${format}, ${kind}, ${kb} KB: the size, the shape, and the protocol package decodes it`, () => {
          const targetBytes = kb * 1024
          const body = agentBody({ format, kind, targetBytes })
          const text = body.text({ model: "agent-chat", stream: false })
          const bytes = Buffer.byteLength(text)
          assert.strictEqual(bytes, body.bytes)
          assert.isAtMost(bytes, targetBytes)
          assert.isAtLeast(bytes, targetBytes * 0.99)
          const shape = decoded(format, text)
          assert.strictEqual(shape.tools, 20)
          assert.strictEqual(shape.calls, body.toolCalls)
          assert.strictEqual(shape.results, body.toolCalls)
          assert.strictEqual(shape.last, kind === "user-turn" ? "user" : "tool-result")
          assert.isAtLeast(body.toolCalls, kb === 64 ? 3 : 25)
          // The streamed body is the same conversation with the flag set.
          const streamed = body.text({ model: "agent-chat", stream: true })
          assert.deepStrictEqual(decoded(format, streamed), shape)
          assert.isTrue(streamed.includes("\"stream\":true"))
        })
      }
    }
  }

  it("is deterministic: the same seed gives the same bytes, another seed other bytes", () => {
    for (const format of formats) {
      const a = agentBody({ format, kind: "continuation", targetBytes: 64 * 1024 })
      const b = agentBody({ format, kind: "continuation", targetBytes: 64 * 1024 })
      const c = agentBody({ format, kind: "continuation", targetBytes: 64 * 1024, seed: 2 })
      const envelope = { model: "m", stream: false }
      assert.strictEqual(a.text(envelope), b.text(envelope))
      assert.notStrictEqual(a.text(envelope), c.text(envelope))
    }
  })

  it("a larger body extends the smaller one's conversation, as a session grows", () => {
    const small = agentBody({ format: "chat", kind: "continuation", targetBytes: 64 * 1024 })
    const large = agentBody({ format: "chat", kind: "continuation", targetBytes: 256 * 1024 })
    const turns = small.conversation.turns.length
    // Every turn but the last (whose tool result is cut to size) is the same in both.
    assert.deepStrictEqual(large.conversation.turns.slice(0, turns - 1), small.conversation.turns.slice(0, turns - 1))
    assert.strictEqual(large.conversation.system, small.conversation.system)
  })

  it("the system prompt is about 12 KB and each tool result about 5 KB", () => {
    const body = agentBody({ format: "chat", kind: "continuation", targetBytes: 256 * 1024 })
    assert.isAtLeast(body.conversation.system.length, 12_000)
    assert.isAtMost(body.conversation.system.length, 14_000)
    const results = body.conversation.turns.flatMap((t) => (t.kind === "tool" ? [t.round.result.length] : []))
    const mean = results.reduce((a, b) => a + b, 0) / results.length
    assert.isAtLeast(mean, 4000)
    assert.isAtMost(mean, 6500)
  })
})
