import { assert, describe, it } from "@effect/vitest"
import * as SessionIdentity from "@switchyard-ts/routing/SessionIdentity"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"

const codex = (fields: Record<string, unknown>) => ({ "x-codex-turn-metadata": JSON.stringify(fields) })

/** The sub-agent classification rules, one row each: headers → (isSubagent, isDelegatedWork). */
const classification: ReadonlyArray<{
  readonly name: string
  readonly headers: Readonly<Record<string, string>>
  readonly isSubagent: boolean
  readonly isDelegatedWork: boolean
}> = [
  { name: "no agent headers: a root request", headers: {}, isSubagent: false, isDelegatedWork: false },
  {
    name: "a Claude root agent (session only)",
    headers: { "x-claude-code-session-id": "c-session" },
    isSubagent: false,
    isDelegatedWork: false
  },
  {
    name: "a Claude child (agent id)",
    headers: { "x-claude-code-session-id": "c-session", "x-claude-code-agent-id": "c-agent" },
    isSubagent: true,
    isDelegatedWork: true
  },
  {
    name: "a blank Claude agent id is absent",
    headers: { "x-claude-code-session-id": "c-session", "x-claude-code-agent-id": "  " },
    isSubagent: false,
    isDelegatedWork: false
  },
  {
    name: "a Codex child: parent_thread_id + thread_source subagent",
    headers: codex({ session_id: "s", thread_id: "child", parent_thread_id: "root", thread_source: "subagent" }),
    isSubagent: true,
    isDelegatedWork: true
  },
  {
    name: "a Codex child whose parent comes from x-codex-parent-thread-id",
    headers: { ...codex({ thread_id: "child", thread_source: "subagent" }), "x-codex-parent-thread-id": "root" },
    isSubagent: true,
    isDelegatedWork: true
  },
  {
    name: "Codex parent_thread_id without thread_source subagent is correlation only",
    headers: codex({ session_id: "s", thread_id: "child", parent_thread_id: "root" }),
    isSubagent: false,
    isDelegatedWork: false
  },
  {
    name: "Codex thread_source subagent without a parent is not a child",
    headers: codex({ session_id: "s", thread_id: "t", thread_source: "subagent" }),
    isSubagent: false,
    isDelegatedWork: false
  },
  {
    name: "a Codex root thread",
    headers: codex({ session_id: "s", thread_id: "root", turn_id: "1" }),
    isSubagent: false,
    isDelegatedWork: false
  },
  {
    name: "codex subagent_kind collab_spawn",
    headers: codex({ session_id: "s", subagent_kind: "collab_spawn" }),
    isSubagent: true,
    isDelegatedWork: true
  },
  {
    name: "codex subagent_kind review",
    headers: codex({ session_id: "s", subagent_kind: "review" }),
    isSubagent: true,
    isDelegatedWork: true
  },
  {
    name: "codex subagent_kind compact: a sub-agent, harness maintenance, not delegated",
    headers: codex({ session_id: "s", subagent_kind: "compact" }),
    isSubagent: true,
    isDelegatedWork: false
  },
  {
    name: "x-openai-subagent review",
    headers: { "x-openai-subagent": "review" },
    isSubagent: true,
    isDelegatedWork: true
  },
  {
    name: "x-openai-subagent memory_consolidation",
    headers: { "x-openai-subagent": "memory_consolidation" },
    isSubagent: true,
    isDelegatedWork: false
  },
  {
    name: "codex subagent_kind wins over x-openai-subagent",
    headers: { ...codex({ subagent_kind: "compact" }), "x-openai-subagent": "review" },
    isSubagent: true,
    isDelegatedWork: false
  },
  {
    name: "x-switchyard-agent-kind is an operator label, not a harness kind",
    headers: { "x-switchyard-agent-kind": "review" },
    isSubagent: false,
    isDelegatedWork: false
  },
  {
    name: "a Codex child with a maintenance kind: lineage decides when nothing is explicit",
    headers: codex({
      thread_id: "child",
      parent_thread_id: "root",
      thread_source: "subagent",
      subagent_kind: "compact"
    }),
    isSubagent: true,
    isDelegatedWork: true
  },
  {
    name: "explicit true, no kind",
    headers: { "x-switchyard-is-subagent": "true" },
    isSubagent: true,
    isDelegatedWork: true
  },
  {
    name: "explicit YES (case-insensitive) with kind review",
    headers: { "x-switchyard-is-subagent": " YES ", "x-openai-subagent": "review" },
    isSubagent: true,
    isDelegatedWork: true
  },
  {
    name: "explicit true with a maintenance kind",
    headers: { "x-switchyard-is-subagent": "1", ...codex({ subagent_kind: "compact" }) },
    isSubagent: true,
    isDelegatedWork: false
  },
  {
    name: "explicit false overrides a Claude child",
    headers: { "x-switchyard-is-subagent": "off", "x-claude-code-agent-id": "c-agent" },
    isSubagent: false,
    isDelegatedWork: false
  },
  {
    name: "explicit false overrides collab_spawn",
    headers: { "x-switchyard-is-subagent": "0", "x-openai-subagent": "collab_spawn" },
    isSubagent: false,
    isDelegatedWork: false
  },
  {
    name: "an unparseable explicit value is absent (the Claude child decides)",
    headers: { "x-switchyard-is-subagent": "maybe", "x-claude-code-agent-id": "c-agent" },
    isSubagent: true,
    isDelegatedWork: true
  },
  {
    name: "malformed Codex metadata reads as absent",
    headers: { "x-codex-turn-metadata": "{not json", "x-codex-parent-thread-id": "root" },
    isSubagent: false,
    isDelegatedWork: false
  },
  {
    name: "a parent-agent header alone is lineage, not delegation",
    headers: { "x-switchyard-parent-agent-id": "p", "x-dynamo-parent-session-id": "q" },
    isSubagent: false,
    isDelegatedWork: false
  }
]

describe("SessionIdentity: sub-agent classification", () => {
  for (const row of classification) {
    it(row.name, () => {
      const identity = SessionIdentity.identityOf(row.headers)
      assert.strictEqual(identity.isSubagent, row.isSubagent, "isSubagent")
      assert.strictEqual(identity.isDelegatedWork, row.isDelegatedWork, "isDelegatedWork")
      assert.strictEqual(SessionIdentity.isDelegatedWork(row.headers), row.isDelegatedWork)
    })
  }
})

describe("SessionIdentity: fields in precedence order", () => {
  /** Drop sources one at a time from the front: each step exposes the next one. */
  const precedence = (
    all: Record<string, string>,
    expected: ReadonlyArray<string>,
    read: (h: Record<string, string>) => Option.Option<string>
  ) => {
    const keys = Object.keys(all)
    expected.forEach((value, index) => {
      const headers = Object.fromEntries(Object.entries(all).filter(([key]) => keys.indexOf(key) >= index))
      assert.deepStrictEqual(read(headers), Option.some(value), value)
    })
  }

  it("agent id", () =>
    precedence(
      {
        "x-switchyard-agent-id": "ours",
        "x-claude-code-agent-id": "claude",
        "x-nemo-relay-subagent-id": "relay",
        "x-dynamo-session-id": "dynamo",
        "x-codex-turn-metadata": JSON.stringify({ thread_id: "codex" }),
        "thread-id": "plain"
      },
      ["ours", "claude", "relay", "dynamo", "codex", "plain"],
      SessionIdentity.agentIdOf
    ))

  it("parent agent id, with a Claude child's fallbacks last", () => {
    precedence(
      {
        "x-switchyard-parent-agent-id": "ours",
        "x-dynamo-parent-session-id": "dynamo",
        "x-codex-turn-metadata": JSON.stringify({ parent_thread_id: "codex" }),
        "x-codex-parent-thread-id": "codex-header",
        "x-claude-code-parent-agent-id": "claude-parent",
        "x-claude-code-agent-id": "claude-agent",
        "x-claude-code-session-id": "claude-session"
      },
      ["ours", "dynamo", "codex", "codex-header", "claude-parent"],
      (headers) => SessionIdentity.identityOf(headers).parentAgentId
    )
    assert.deepStrictEqual(
      SessionIdentity.identityOf({ "x-claude-code-agent-id": "a", "x-claude-code-session-id": "s" }).parentAgentId,
      Option.some("s")
    )
    // not a Claude child: its parent header means nothing
    assert.deepStrictEqual(
      SessionIdentity.identityOf({ "x-claude-code-parent-agent-id": "p", "x-claude-code-session-id": "s" })
        .parentAgentId,
      Option.none()
    )
  })

  it("harness kind: codex subagent_kind, then x-openai-subagent; non-string members as JSON", () => {
    assert.deepStrictEqual(
      SessionIdentity.identityOf({ ...codex({ subagent_kind: 7 }), "x-openai-subagent": "review" }).harnessKind,
      Option.some("7")
    )
    assert.deepStrictEqual(
      SessionIdentity.identityOf({ ...codex({ subagent_kind: null }), "x-openai-subagent": "review" }).harnessKind,
      Option.some("review")
    )
  })

  it("session id is the same parser the server uses", () => {
    assert.deepStrictEqual(
      SessionIdentity.identityOf({ "x-session-id": " g ", "session-id": "p" }).sessionId,
      Option.some("g")
    )
    assert.deepStrictEqual(SessionIdentity.sessionIdOf(codex({ session_id: "cx" })), Option.some("cx"))
  })
})

describe("SessionIdentity: session_final", () => {
  const finals: ReadonlyArray<readonly [Record<string, string>, Option.Option<boolean>]> = [
    [{}, Option.none()],
    [{ "x-switchyard-session-final": "true" }, Option.some(true)],
    [{ "x-switchyard-session-final": "ON" }, Option.some(true)],
    [{ "x-switchyard-session-final": "Yes" }, Option.some(true)],
    [{ "x-switchyard-session-final": "1" }, Option.some(true)],
    [{ "x-switchyard-session-final": "0" }, Option.some(false)],
    [{ "x-switchyard-session-final": "No" }, Option.some(false)],
    [{ "x-switchyard-session-final": "OFF" }, Option.some(false)],
    [{ "x-switchyard-session-final": "FALSE" }, Option.some(false)],
    [{ "x-switchyard-session-final": "done" }, Option.none()],
    [{ "x-dynamo-session-final": "true" }, Option.some(true)],
    [{ "x-switchyard-session-final": "false", "x-dynamo-session-final": "true" }, Option.some(false)],
    [{ "x-switchyard-session-final": " ", "x-dynamo-session-final": "yes" }, Option.some(true)]
  ]
  for (const [headers, expected] of finals) {
    it(`${JSON.stringify(headers)} → ${JSON.stringify(Option.getOrNull(expected))}`, () => {
      assert.deepStrictEqual(SessionIdentity.identityOf(headers).sessionFinal, expected)
      assert.strictEqual(SessionIdentity.isSessionFinal(headers), Option.getOrElse(expected, () => false))
    })
  }

  it.effect("forgetOnFinal runs the cleanup after the effect, on success and on failure, only when final", () =>
    Effect.gen(function*() {
      const log = yield* Ref.make<ReadonlyArray<string>>([])
      const note = (entry: string) => Ref.update(log, (all) => [...all, entry])
      const final = { "x-switchyard-session-final": "true" }
      yield* SessionIdentity.forgetOnFinal(note("routed"), final, note("forgot"))
      yield* SessionIdentity.forgetOnFinal(note("routed"), {}, note("never"))
      yield* Effect.flip(SessionIdentity.forgetOnFinal(Effect.fail("boom"), final, note("forgot after failure")))
      assert.deepStrictEqual(yield* Ref.get(log), ["routed", "forgot", "routed", "forgot after failure"])
    }))
})

describe("SessionIdentity: a Codex turn-metadata header nested deeper than the request bound", () => {
  const nested = (depth: number) => `${"[".repeat(depth)}${"]".repeat(depth)}`
  it("reads as an invalid header (no identity from it) at 10^4 and 10^5 levels; within the bound it is read", () => {
    for (const depth of [10_000, 100_000]) {
      const headers = { [SessionIdentity.codexTurnMetadataHeader]: `{"session_id":${nested(depth)},"thread_id":"t"}` }
      assert.isTrue(Option.isNone(SessionIdentity.sessionIdOf(headers)))
      assert.isFalse(SessionIdentity.isDelegatedWork(headers))
    }
    // the object and 511 arrays: within the bound, the header's members are read
    const within = { [SessionIdentity.codexTurnMetadataHeader]: `{"session_id":"s","extra":${nested(511)}}` }
    assert.deepStrictEqual(Option.map(SessionIdentity.sessionIdOf(within), String), Option.some("s"))
  })
})
