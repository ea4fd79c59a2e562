import { assert, describe, it } from "@effect/vitest"
import { sessionIdOf } from "@switchyard-ts/server/Api"
import * as Option from "effect/Option"

describe("sessionIdOf", () => {
  it("takes the first non-blank source in precedence order", () => {
    const all = {
      "x-switchyard-session-id": "ours",
      "x-claude-code-session-id": "claude",
      "x-nemo-relay-session-id": "nemo",
      "x-session-id": "generic",
      "x-codex-turn-metadata": JSON.stringify({ session_id: "codex" }),
      "session-id": "plain",
      "session_id": "underscore"
    }
    const order = ["ours", "claude", "nemo", "generic", "codex", "plain", "underscore"]
    const keys = Object.keys(all)
    order.forEach((expected, index) => {
      const headers = Object.fromEntries(Object.entries(all).filter(([key]) => keys.indexOf(key) >= index))
      assert.deepStrictEqual(sessionIdOf(headers), Option.some(expected), expected)
    })
  })

  it("skips blank values, malformed or non-object Codex metadata, and renders non-string leaves as JSON", () => {
    assert.deepStrictEqual(
      sessionIdOf({ "x-switchyard-session-id": "  ", "x-claude-code-session-id": " c-1 " }),
      Option.some("c-1")
    )
    assert.deepStrictEqual(sessionIdOf({ "x-codex-turn-metadata": "{not json", "session-id": "s" }), Option.some("s"))
    assert.deepStrictEqual(sessionIdOf({ "x-codex-turn-metadata": "[1]" }), Option.none())
    assert.deepStrictEqual(sessionIdOf({ "x-codex-turn-metadata": "{\"session_id\":42}" }), Option.some("42"))
    assert.deepStrictEqual(sessionIdOf({ "x-codex-turn-metadata": "{\"session_id\":null}" }), Option.none())
    assert.deepStrictEqual(sessionIdOf({}), Option.none())
  })
})
