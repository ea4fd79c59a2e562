/**
 * Requests shaped like stock Claude Code 2.1.x's (system messages inside `messages`, a billing
 * header block in `system`, ToolSearch `tool_reference` results, `anthropic-beta`, a long
 * `metadata.user_id`, beta body fields) through the real server, to an `openai_chat` upstream and
 * to an `anthropic_messages` upstream, and past a judge.
 */
import { assert, describe, it } from "@effect/vitest"
import * as D from "@switchyard-ts/testkit/DeploymentBuilder"
import * as FakeUpstream from "@switchyard-ts/testkit/FakeUpstream"
import * as Effect from "effect/Effect"
import * as Predicate from "effect/Predicate"
import { readFileSync } from "node:fs"
import * as path from "node:path"
import { capabilityRoute, chatAndClaude, startServer } from "./harness.js"

const deployment = (upstreamUrl: string): D.Deployment =>
  D.extend(
    chatAndClaude(upstreamUrl, {
      ids: { local: "cc-local", sonnet: "cc-sonnet" },
      claudeSettings: {
        api_key_env: "SWITCHYARD_TEST_CC_ANTHROPIC_KEY",
        extra_headers: { "anthropic-beta": "context-1m-2025-08-07, token-efficient-tools-2025-02-19" }
      }
    }),
    {
      targets: { judge: D.target("cc-judge", "oai") },
      routes: D.byId(
        capabilityRoute("auto", "judge", {
          weak_target: "local",
          strong_target: "sonnet",
          classify_trigger: "user_turn",
          judge_failure: "error"
        })
      )
    }
  )

process.env["SWITCHYARD_TEST_CC_ANTHROPIC_KEY"] = "sk-ant-cc-upstream-key"

const start = startServer(deployment)

const record = (value: unknown): Record<string, unknown> => (Predicate.isRecord(value) ? value : {})
const list = (value: unknown): ReadonlyArray<unknown> => (Array.isArray(value) ? value : [])

// ---------------------------------------------------------------------------------------------
// Claude Code's request shape

const systemPrompt = [
  {
    type: "text",
    text: "You are Claude Code, Anthropic's official CLI for Claude.",
    cache_control: { type: "ephemeral" }
  },
  { type: "text", text: "SECRET-PROJECT-PROMPT: use npm.", cache_control: { type: "ephemeral" } }
]
const billing = (session: string) => ({
  type: "text",
  text: `x-anthropic-billing-header: cc_version=2.1.3.${session}; cc_entrypoint=cli; cch=${session};`
})
const task = { role: "user", content: [{ type: "text", text: "Fix the failing test in src/sum.test.ts" }] }
const reminder = { role: "system", content: "<system-reminder>SECRET-REMINDER: today is 2026-01-15</system-reminder>" }
const bashCall = {
  role: "assistant",
  content: [
    { type: "text", text: "Running the tests." },
    { type: "tool_use", id: "toolu_01Bash", name: "Bash", input: { command: "npm test" } }
  ]
}
const bashResult = {
  role: "user",
  content: [{ type: "tool_result", tool_use_id: "toolu_01Bash", content: "1 failing" }]
}
const toolSearchCall = {
  role: "assistant",
  content: [{ type: "tool_use", id: "toolu_01Search", name: "ToolSearch", input: { query: "select:mcp__tests__run" } }]
}
const toolSearchResult = {
  role: "user",
  content: [{
    type: "tool_result",
    tool_use_id: "toolu_01Search",
    content: [{ type: "tool_reference", tool_name: "mcp__tests__run" }]
  }]
}
const tools = [
  {
    name: "Bash",
    description: "Runs a command",
    input_schema: { type: "object", properties: { command: { type: "string" } } }
  },
  {
    name: "mcp__tests__run",
    description: "Runs the tests",
    input_schema: { type: "object", properties: {} },
    defer_loading: true
  }
]
const userId = JSON.stringify({
  device_id: "5f0c3c7e2b9a4d1e8f6a0b3c7d9e1f2a4b6c8d0e2f4a6b8c0d2e4f6a8b0c2d4e",
  account_uuid: "",
  session_id: "9a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
})

const claudeCode = (
  model: string,
  messages: ReadonlyArray<unknown>,
  options: { readonly session?: string; readonly stream?: boolean } = {}
) => ({
  model,
  max_tokens: 32000,
  ...(options.stream === true ? { stream: true } : {}),
  system: [billing(options.session ?? "a1b2c"), ...systemPrompt],
  messages,
  tools,
  metadata: { user_id: userId },
  thinking: { type: "adaptive" },
  output_config: { effort: "high" },
  context_management: { edits: [{ type: "clear_thinking_20251015", keep: "all" }] }
})

const post = (url: string, body: unknown, headers: Readonly<Record<string, string>> = {}) =>
  Effect.promise(() =>
    fetch(`${url}/v1/messages?beta=true`, {
      method: "POST",
      headers: { "content-type": "application/json", "anthropic-version": "2023-06-01", ...headers },
      body: JSON.stringify(body)
    }).then(async (r) => ({ status: r.status, headers: r.headers, text: await r.text() }))
  )

const json = (text: string): Record<string, unknown> => {
  try {
    return record(JSON.parse(text))
  } catch {
    return {}
  }
}

const verdict = (p: number) =>
  FakeUpstream.ok(
    JSON.stringify({ crux: "a small local fix", primary_rule: "SUP-1", capability_boundary: "supported", p_solve: p })
  )

// ---------------------------------------------------------------------------------------------

describe("system messages inside messages", () => {
  it.scopedLive("to an openai_chat upstream: 200, each system message in place as a chat system message", () =>
    Effect.gen(function*() {
      const { upstream, url } = yield* start
      yield* upstream.setBehaviour("cc-local", FakeUpstream.ok("on it"))
      const first = yield* post(url, claudeCode("fast", [task, reminder]))
      assert.strictEqual(first.status, 200, first.text)
      assert.strictEqual(json(first.text)["model"], "cc-local")
      const streamed = yield* post(url, claudeCode("fast", [task, reminder, bashCall, bashResult], { stream: true }))
      assert.strictEqual(streamed.status, 200, streamed.text)
      assert.include(streamed.text, "event: message_stop")

      const [buffered, continued] = yield* upstream.requests
      assert.strictEqual(buffered?.path, "/v1/chat/completions")
      const roles = (body: unknown) => list(record(body)["messages"]).map((m) => record(m)["role"])
      assert.deepStrictEqual(roles(buffered?.body), ["system", "user", "system"])
      assert.deepStrictEqual(list(record(buffered?.body)["messages"])[2], { role: "system", content: reminder.content })
      assert.deepStrictEqual(roles(continued?.body), ["system", "user", "system", "assistant", "tool"])
      assert.deepStrictEqual(list(record(continued?.body)["messages"])[4], {
        role: "tool",
        tool_call_id: "toolu_01Bash",
        content: "1 failing"
      })
      // Anthropic-only fields stay behind.
      for (const field of ["thinking", "output_config", "context_management", "system", "metadata"]) {
        assert.notProperty(record(continued?.body), field)
      }
    }))

  it.scopedLive("to an anthropic_messages upstream: the caller's body is replayed, system messages where they were", () =>
    Effect.gen(function*() {
      const { upstream, url } = yield* start
      const body = claudeCode("claude", [task, reminder, bashCall, bashResult, reminder])
      const response = yield* post(url, body)
      assert.strictEqual(response.status, 200, response.text)
      const [seen] = yield* upstream.requests
      assert.strictEqual(seen?.path, "/v1/messages")
      const { context_management: _dropped, ...kept } = body
      assert.deepStrictEqual(seen?.body, {
        ...kept,
        model: "cc-sonnet",
        // the usual last-block cache marker (docs/http-api.md)
        messages: [task, reminder, bashCall, bashResult, {
          role: "system",
          content: [{ type: "text", text: reminder.content, cache_control: { type: "ephemeral" } }]
        }]
      })
    }))
})

describe("ToolSearch results (tool_reference blocks)", () => {
  it.scopedLive("reach an openai_chat upstream as \"Tool loaded\" text and an anthropic_messages upstream untouched", () =>
    Effect.gen(function*() {
      const { upstream, url } = yield* start
      const messages = [task, reminder, toolSearchCall, toolSearchResult]
      const chat = yield* post(url, claudeCode("fast", messages))
      assert.strictEqual(chat.status, 200, chat.text)
      const streamed = yield* post(url, claudeCode("fast", messages, { stream: true }))
      assert.strictEqual(streamed.status, 200, streamed.text)
      const native = yield* post(url, claudeCode("claude", messages))
      assert.strictEqual(native.status, 200, native.text)

      const [buffered, stream, anthropic] = yield* upstream.requests
      for (const seen of [buffered, stream]) {
        assert.deepStrictEqual(list(record(seen?.body)["messages"])[4], {
          role: "tool",
          tool_call_id: "toolu_01Search",
          content: "Tool loaded: mcp__tests__run"
        })
      }
      assert.strictEqual(anthropic?.path, "/v1/messages")
      const last = record(list(record(anthropic?.body)["messages"])[3])
      assert.deepStrictEqual(last["content"], [{
        type: "tool_result",
        tool_use_id: "toolu_01Search",
        content: [{ type: "tool_reference", tool_name: "mcp__tests__run" }],
        cache_control: { type: "ephemeral" }
      }])
    }))
})

describe("cache-friendly system prompt for a Chat upstream", () => {
  it.scopedLive("two sessions of one project send byte-identical system messages; the billing header stays behind", () =>
    Effect.gen(function*() {
      const { upstream, url } = yield* start
      const a = yield* post(url, claudeCode("fast", [task, reminder], { session: "a1b2c" }))
      const b = yield* post(url, claudeCode("fast", [task, reminder], { session: "z9y8x", stream: true }))
      assert.strictEqual(a.status, 200, a.text)
      assert.strictEqual(b.status, 200, b.text)
      const [first, second] = yield* upstream.requests
      const messagesOf = (body: unknown) => list(record(body)["messages"])
      assert.strictEqual(JSON.stringify(messagesOf(first?.body)[0]), JSON.stringify(messagesOf(second?.body)[0]))
      assert.strictEqual(JSON.stringify(messagesOf(first?.body)), JSON.stringify(messagesOf(second?.body)))
      assert.deepStrictEqual(messagesOf(first?.body)[0], {
        role: "system",
        content: "You are Claude Code, Anthropic's official CLI for Claude.\n\nSECRET-PROJECT-PROMPT: use npm."
      })
      assert.notInclude(JSON.stringify(first?.body), "x-anthropic-billing-header")
    }))

  it.scopedLive("an anthropic_messages upstream still gets the billing header (native replay)", () =>
    Effect.gen(function*() {
      const { upstream, url } = yield* start
      const response = yield* post(url, claudeCode("claude", [task, reminder], { session: "a1b2c" }))
      assert.strictEqual(response.status, 200, response.text)
      const [seen] = yield* upstream.requests
      assert.deepStrictEqual(list(record(seen?.body)["system"])[0], billing("a1b2c"))
    }))
})

describe("metadata.user_id", () => {
  it.scopedLive("Claude Code's long JSON user_id is not sent as a Chat user; a short one is; Anthropic upstreams get metadata as sent", () =>
    Effect.gen(function*() {
      const { upstream, url } = yield* start
      const long = yield* post(url, claudeCode("fast", [task]))
      const short = yield* post(url, { ...claudeCode("fast", [task]), metadata: { user_id: "user-42" } })
      const native = yield* post(url, claudeCode("claude", [task]))
      for (const response of [long, short, native]) assert.strictEqual(response.status, 200, response.text)
      const [a, b, c] = yield* upstream.requests
      assert.notProperty(record(a?.body), "user")
      assert.strictEqual(record(b?.body)["user"], "user-42")
      assert.deepStrictEqual(record(c?.body)["metadata"], { user_id: userId })
    }))
})

describe("anthropic-beta", () => {
  const callerBeta = "claude-code-20250219, context-1m-2025-08-07,interleaved-thinking-2025-05-14,"

  it.scopedLive("Messages replayed to an anthropic_messages upstream keep the caller's betas, merged with extra_headers'", () =>
    Effect.gen(function*() {
      const { upstream, url } = yield* start
      const buffered = yield* post(url, claudeCode("claude", [task, reminder]), { "anthropic-beta": callerBeta })
      assert.strictEqual(buffered.status, 200, buffered.text)
      const streamed = yield* post(url, claudeCode("claude", [task, reminder], { stream: true }), {
        "anthropic-beta": callerBeta
      })
      assert.strictEqual(streamed.status, 200, streamed.text)
      const none = yield* post(url, claudeCode("claude", [task, reminder]))
      assert.strictEqual(none.status, 200, none.text)
      const [first, second, third] = yield* upstream.requests
      const merged =
        "claude-code-20250219,context-1m-2025-08-07,interleaved-thinking-2025-05-14,token-efficient-tools-2025-02-19"
      assert.strictEqual(first?.headers["anthropic-beta"], merged)
      assert.strictEqual(second?.headers["anthropic-beta"], merged)
      assert.strictEqual(third?.headers["anthropic-beta"], "context-1m-2025-08-07,token-efficient-tools-2025-02-19")
    }))

  it.scopedLive("translated requests drop the caller's betas: Messages to a Chat upstream, Chat to an Anthropic upstream", () =>
    Effect.gen(function*() {
      const { upstream, url } = yield* start
      const toChat = yield* post(url, claudeCode("fast", [task, reminder]), { "anthropic-beta": callerBeta })
      assert.strictEqual(toChat.status, 200, toChat.text)
      const chatCaller = yield* Effect.promise(() =>
        fetch(`${url}/v1/chat/completions`, {
          method: "POST",
          headers: { "content-type": "application/json", "anthropic-beta": callerBeta },
          body: JSON.stringify({ model: "claude", messages: [{ role: "user", content: "hi" }] })
        }).then((r) => r.status)
      )
      assert.strictEqual(chatCaller, 200)
      const [chat, anthropic] = yield* upstream.requests
      assert.strictEqual(chat?.path, "/v1/chat/completions")
      assert.isUndefined(chat?.headers["anthropic-beta"])
      assert.strictEqual(anthropic?.path, "/v1/messages")
      // extra_headers alone, as configured
      assert.strictEqual(
        anthropic?.headers["anthropic-beta"],
        "context-1m-2025-08-07, token-efficient-tools-2025-02-19"
      )
    }))
})

describe("user turn vs continuation with system messages, and the judge's view", () => {
  it.scopedLive("[user, system] is judged; [..., tool_result, system] reuses the session's decision; no system text reaches the judge", () =>
    Effect.gen(function*() {
      const { upstream, url } = yield* start
      yield* upstream.setBehaviour("cc-judge", verdict(0.9))
      yield* upstream.setBehaviour("cc-local", FakeUpstream.ok("weak answer"))
      const session = { "x-claude-code-session-id": "cc-session-turns" }

      const first = yield* post(url, claudeCode("auto", [task, reminder]), session)
      assert.strictEqual(first.status, 200, first.text)
      assert.strictEqual(first.headers.get("x-switchyard-evidence-source"), "llm-classifier")

      const continuation = yield* post(
        url,
        claudeCode("auto", [task, reminder, bashCall, bashResult, reminder]),
        session
      )
      assert.strictEqual(continuation.status, 200, continuation.text)
      assert.strictEqual(continuation.headers.get("x-switchyard-evidence-source"), "affinity")
      assert.strictEqual(continuation.headers.get("x-switchyard-selected-model"), "cc-local")

      const followUp = { role: "user", content: "now run the linter" }
      const next = yield* post(
        url,
        claudeCode("auto", [task, reminder, bashCall, bashResult, reminder, followUp, reminder]),
        session
      )
      assert.strictEqual(next.status, 200, next.text)
      assert.strictEqual(next.headers.get("x-switchyard-evidence-source"), "llm-classifier")

      const judged = (yield* upstream.requests).filter((r) => r.model === "cc-judge")
      assert.lengthOf(judged, 2)
      for (const request of judged) {
        const text = JSON.stringify(request.body)
        assert.notInclude(text, "SECRET-REMINDER")
        assert.notInclude(text, "SECRET-PROJECT-PROMPT")
        assert.notInclude(text, "x-anthropic-billing-header")
      }
      assert.include(JSON.stringify(judged[1]?.body), "now run the linter")
    }))
})

// ---------------------------------------------------------------------------------------------
// The real requests of Claude Code 2.1.332 (fixtures/README.md), as captured

const fixture = (name: string): Record<string, unknown> =>
  record(JSON.parse(readFileSync(path.join(import.meta.dirname, "fixtures", name), "utf8")))

describe("captured Claude Code 2.1.332 requests", () => {
  const first = fixture("claude-code-first-request.json")
  const continuation = fixture("claude-code-tool-continuation.json")
  const headers = { "content-type": "application/json", "anthropic-beta": "claude-code-20250219,effort-2025-11-24" }
  const send = (url: string, body: Record<string, unknown>, model: string, extra: Record<string, string> = {}) =>
    Effect.promise(() =>
      fetch(`${url}/v1/messages?beta=true`, {
        method: "POST",
        headers: { ...headers, ...extra },
        body: JSON.stringify({ ...body, model })
      }).then(async (response) => ({ status: response.status, text: await response.text() }))
    )
  // Another session of the same project: its billing header differs, nothing else.
  const otherSession = (body: Record<string, unknown>): Record<string, unknown> => ({
    ...body,
    system: list(body["system"]).map((block) => {
      const text = record(block)["text"]
      return typeof text === "string" && text.startsWith("x-anthropic-billing-header:")
        ? { ...record(block), text: text.replace(/cc_version=[^;]*;/, "cc_version=2.1.332.fff;") }
        : block
    })
  })

  it.scopedLive("both bodies are answered on a Chat and on a Messages target; the Chat system prefix is the same across sessions", () =>
    Effect.gen(function*() {
      const { upstream, url } = yield* start
      assert.notDeepEqual(otherSession(first)["system"], first["system"])
      for (const body of [first, continuation, otherSession(first)]) {
        for (const model of ["fast", "claude"]) {
          const reply = yield* send(url, body, model)
          assert.strictEqual(reply.status, 200, `${model}: ${reply.text.slice(0, 300)}`)
          assert.include(reply.text, "event: message_stop")
        }
      }
      const seen = yield* upstream.requests
      const chat = seen.filter((r) => r.path === "/v1/chat/completions")
      const messages = seen.filter((r) => r.path === "/v1/messages")
      assert.strictEqual(chat.length, 3)
      assert.strictEqual(messages.length, 3)
      // The Messages target got the caller's own body (system messages inside `messages` included).
      assert.deepStrictEqual(list(record(messages[0]?.body)["messages"]).map((m) => record(m)["role"]), [
        "user",
        "system"
      ])
      assert.deepStrictEqual(record(messages[0]?.body)["system"], first["system"])
      // The Chat target: the system prompt as one string, without the billing block, byte-identical
      // across the two sessions; the environment block in place as a system message.
      const systemOf = (index: number) => JSON.stringify(list(record(chat[index]?.body)["messages"])[0])
      assert.strictEqual(systemOf(0), systemOf(2))
      assert.notInclude(systemOf(0), "x-anthropic-billing-header")
      assert.deepStrictEqual(list(record(chat[0]?.body)["messages"]).map((m) => record(m)["role"]), [
        "system",
        "user",
        "system"
      ])
      assert.deepStrictEqual(
        list(record(chat[1]?.body)["messages"]).map((m) => record(m)["role"]),
        ["system", "user", "system", "assistant", "tool"]
      )
    }))
})
