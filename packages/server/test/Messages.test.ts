/**
 * Anthropic Messages on both sides: the official `@anthropic-ai/sdk` against `/v1/messages` with an
 * OpenAI-format upstream, the official `openai` client against `/v1/chat/completions` with an
 * `anthropic_messages` upstream, native Messages bodies replayed to Anthropic upstreams, token
 * counting, the Anthropic error envelope, and a judge that speaks Messages.
 */
import Anthropic from "@anthropic-ai/sdk"
import { assert, describe, it } from "@effect/vitest"
import * as Arbitraries from "@switchyard-ts/testkit/Arbitraries"
import * as D from "@switchyard-ts/testkit/DeploymentBuilder"
import * as FakeUpstream from "@switchyard-ts/testkit/FakeUpstream"
import * as Effect from "effect/Effect"
import * as Predicate from "effect/Predicate"
import OpenAI from "openai"
import { capabilityRoute, chatAndClaude, startServer } from "./harness.js"

const deployment = (upstreamUrl: string): D.Deployment =>
  D.extend(chatAndClaude(upstreamUrl, { claudeSettings: { api_key_env: "SWITCHYARD_TEST_ANTHROPIC_KEY" } }), {
    targets: { haiku: D.target("claude-haiku", "claude"), judge: D.target("claude-judge", "claude") },
    routes: D.byId(
      D.random("both", ["haiku", "sonnet", "local"], { weights: [1, 0, 0] }),
      D.noop("ping"),
      capabilityRoute("auto", "judge", { weak_target: "local", strong_target: "sonnet", judge_failure: "error" })
    )
  })

const anthropicKey = "sk-ant-upstream-key-0123456789"
process.env["SWITCHYARD_TEST_ANTHROPIC_KEY"] = anthropicKey

const start = startServer(deployment)

const anthropicClient = (url: string) => new Anthropic({ baseURL: url, apiKey: "sk-caller-secret", maxRetries: 0 })

const record = (value: unknown): Record<string, unknown> => (Predicate.isRecord(value) ? value : {})
const list = (value: unknown): ReadonlyArray<unknown> => (Array.isArray(value) ? value : [])

const rejection = <A>(promise: () => Promise<A>) =>
  Effect.promise(() => promise().then(() => undefined, (error: unknown) => error))

describe("@anthropic-ai/sdk against /v1/messages (OpenAI-format upstream)", () => {
  it.scopedLive("buffered: text, served model, usage and the routing headers", () =>
    Effect.gen(function*() {
      const { upstream, url } = yield* start
      yield* upstream.setBehaviour(
        "local-coder",
        FakeUpstream.ok("answer via Messages", { usage: { prompt_tokens: 21, completion_tokens: 3, total_tokens: 24 } })
      )
      const client = anthropicClient(url)
      const { data: message, response } = yield* Effect.promise(() =>
        client.messages.create({
          model: "fast",
          max_tokens: 256,
          system: "You are terse.",
          messages: [{ role: "user", content: "hi" }]
        }).withResponse()
      )
      assert.strictEqual(message.type, "message")
      assert.strictEqual(message.role, "assistant")
      assert.strictEqual(message.model, "local-coder")
      assert.deepStrictEqual(message.content.map((block) => block.type === "text" ? block.text : block.type), [
        "answer via Messages"
      ])
      assert.strictEqual(message.stop_reason, "end_turn")
      assert.strictEqual(message.usage.input_tokens, 21)
      assert.strictEqual(message.usage.output_tokens, 3)
      assert.strictEqual(response.headers.get("x-switchyard-selected-model"), "local-coder")

      const [seen] = yield* upstream.requests
      assert.strictEqual(seen?.path, "/v1/chat/completions")
      const body = record(seen?.body)
      assert.strictEqual(body["model"], "local-coder")
      assert.strictEqual(body["max_completion_tokens"] ?? body["max_tokens"], 256)
      assert.deepStrictEqual(list(body["messages"]).map((m) => record(m)["role"]), ["system", "user"])
      assert.notInclude(JSON.stringify(seen?.headers), "sk-caller-secret")
    }))

  it.scopedLive("streaming: Anthropic's event sequence, text deltas and final usage", () =>
    Effect.gen(function*() {
      const { upstream, url } = yield* start
      yield* upstream.setBehaviour("local-coder", FakeUpstream.ok("streamed through Messages"))
      const client = anthropicClient(url)
      const { events, final } = yield* Effect.promise(async () => {
        const stream = client.messages.stream({
          model: "fast",
          max_tokens: 64,
          messages: [{ role: "user", content: "hi" }]
        })
        const events: Array<string> = []
        for await (const event of stream) events.push(event.type)
        return { events, final: await stream.finalMessage() }
      })
      assert.strictEqual(events[0], "message_start")
      assert.strictEqual(events[events.length - 1], "message_stop")
      assert.include(events, "content_block_delta")
      assert.include(events, "message_delta")
      assert.deepStrictEqual(final.content.map((block) => block.type === "text" ? block.text : block.type), [
        "streamed through Messages"
      ])
      assert.strictEqual(final.stop_reason, "end_turn")
      assert.isAbove(final.usage.output_tokens, 0)
      const [seen] = yield* upstream.requests
      assert.strictEqual(record(seen?.body)["stream"], true)
    }))

  it.scopedLive("tool use, buffered and streamed, and the tool result sent back as a tool message", () =>
    Effect.gen(function*() {
      const { upstream, url } = yield* start
      yield* upstream.setBehaviour(
        "local-coder",
        FakeUpstream.toolUse("read_file", "{\"path\":\"src/a.ts\",\"lines\":[1,20]}", {
          id: "call_42",
          text: "Reading."
        })
      )
      const client = anthropicClient(url)
      const tools: Array<Anthropic.Tool> = [{
        name: "read_file",
        description: "Read a file",
        input_schema: { type: "object", properties: { path: { type: "string" } }, required: ["path"] }
      }]
      const message = yield* Effect.promise(() =>
        client.messages.create({
          model: "fast",
          max_tokens: 64,
          tools,
          messages: [{ role: "user", content: "read a.ts" }]
        })
      )
      assert.strictEqual(message.stop_reason, "tool_use")
      const toolUse = message.content.find((block) => block.type === "tool_use")
      assert.strictEqual(toolUse?.type === "tool_use" ? toolUse.name : "", "read_file")
      assert.strictEqual(toolUse?.type === "tool_use" ? toolUse.id : "", "call_42")
      assert.deepStrictEqual(toolUse?.type === "tool_use" ? toolUse.input : undefined, {
        path: "src/a.ts",
        lines: [1, 20]
      })
      const [first] = yield* upstream.requests
      const sentTools = list(record(first?.body)["tools"]).map((t) => record(record(t)["function"])["name"])
      assert.deepStrictEqual(sentTools, ["read_file"])

      const streamed = yield* Effect.promise(() =>
        client.messages.stream({
          model: "fast",
          max_tokens: 64,
          tools,
          messages: [{ role: "user", content: "read a.ts" }]
        })
          .finalMessage()
      )
      const streamedUse = streamed.content.find((block) => block.type === "tool_use")
      assert.deepStrictEqual(streamedUse?.type === "tool_use" ? streamedUse.input : undefined, {
        path: "src/a.ts",
        lines: [1, 20]
      })
      assert.strictEqual(streamed.stop_reason, "tool_use")

      yield* upstream.clear
      yield* upstream.setBehaviour("local-coder", FakeUpstream.ok("the file has 20 lines"))
      const followUp = yield* Effect.promise(() =>
        client.messages.create({
          model: "fast",
          max_tokens: 64,
          tools,
          messages: [
            { role: "user", content: "read a.ts" },
            { role: "assistant", content: message.content },
            {
              role: "user",
              content: [{ type: "tool_result", tool_use_id: "call_42", content: "line 1\nline 2", is_error: false }]
            }
          ]
        })
      )
      assert.deepStrictEqual(followUp.content.map((block) => block.type === "text" ? block.text : block.type), [
        "the file has 20 lines"
      ])
      const [second] = yield* upstream.requests
      const messages = list(record(second?.body)["messages"]).map(record)
      assert.deepStrictEqual(messages.map((m) => m["role"]), ["user", "assistant", "tool"])
      const calls = list(messages[1]?.["tool_calls"]).map(record)
      assert.strictEqual(calls[0]?.["id"], "call_42")
      assert.deepStrictEqual(JSON.parse(String(record(calls[0]?.["function"])["arguments"])), {
        path: "src/a.ts",
        lines: [1, 20]
      })
      assert.strictEqual(messages[2]?.["tool_call_id"], "call_42")
      assert.include(JSON.stringify(messages[2]?.["content"]), "line 1\\nline 2")
    }))

  it.scopedLive("errors use the Anthropic envelope with the chat endpoint's statuses", () =>
    Effect.gen(function*() {
      const { upstream, url } = yield* start
      const client = anthropicClient(url)
      const notFound = yield* rejection(() =>
        client.messages.create({ model: "nope", max_tokens: 8, messages: [{ role: "user", content: "hi" }] })
      )
      assert.instanceOf(notFound, Anthropic.NotFoundError)
      if (notFound instanceof Anthropic.APIError) {
        assert.deepStrictEqual(notFound.error, {
          type: "error",
          error: { type: "not_found_error", message: "No route registered for model nope" }
        })
      }
      yield* upstream.setBehaviour("local-coder", FakeUpstream.status(429, { message: "slow down" }))
      const limited = yield* rejection(() =>
        client.messages.create({ model: "fast", max_tokens: 8, messages: [{ role: "user", content: "hi" }] })
      )
      assert.instanceOf(limited, Anthropic.RateLimitError)
      if (limited instanceof Anthropic.APIError) {
        assert.deepStrictEqual(limited.error, {
          type: "error",
          error: { type: "rate_limit_error", message: "slow down" }
        })
      }

      const raw = yield* Effect.promise(() =>
        fetch(`${url}/v1/messages`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: "{\"model\":\"fast\""
        })
          .then(async (response) => ({ status: response.status, body: record(await response.json()) }))
      )
      assert.strictEqual(raw.status, 400)
      assert.strictEqual(raw.body["type"], "error")
      assert.strictEqual(record(raw.body["error"])["type"], "invalid_request_error")

      const missingMaxTokens = yield* Effect.promise(() =>
        fetch(`${url}/v1/messages`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ model: "fast", messages: [{ role: "user", content: "hi" }] })
        }).then(async (response) => ({ status: response.status, body: record(await response.json()) }))
      )
      assert.strictEqual(missingMaxTokens.status, 400)
      assert.include(String(record(missingMaxTokens.body["error"])["message"]), "max_tokens")
    }))
})

describe("openai SDK against /v1/chat/completions (anthropic_messages upstream)", () => {
  it.scopedLive("buffered, streaming and tool calls are translated both ways", () =>
    Effect.gen(function*() {
      const { upstream, url } = yield* start
      yield* upstream.setBehaviour("claude-sonnet", FakeUpstream.ok("hello from the Messages upstream"))
      const openai = new OpenAI({ baseURL: `${url}/v1`, apiKey: "sk-caller-secret", maxRetries: 0 })

      const completion = yield* Effect.promise(() =>
        openai.chat.completions.create({
          model: "claude",
          messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "hi" }]
        })
      )
      assert.strictEqual(completion.choices[0]?.message.content, "hello from the Messages upstream")
      assert.strictEqual(completion.choices[0]?.finish_reason, "stop")
      const [seen] = yield* upstream.requests
      assert.strictEqual(seen?.path, "/v1/messages")
      assert.strictEqual(seen?.headers["x-api-key"], anthropicKey)
      assert.strictEqual(seen?.headers["anthropic-version"], "2023-06-01")
      assert.isUndefined(seen?.headers["authorization"])
      const sent = record(seen?.body)
      assert.strictEqual(sent["model"], "claude-sonnet")
      assert.strictEqual(sent["system"], "Be brief.")
      assert.isNumber(sent["max_tokens"])

      const text = yield* Effect.promise(async () => {
        const stream = await openai.chat.completions.create({
          model: "claude",
          messages: [{ role: "user", content: "hi" }],
          stream: true,
          stream_options: { include_usage: true }
        })
        let all = ""
        let usage = 0
        for await (const chunk of stream) {
          all += chunk.choices[0]?.delta.content ?? ""
          usage += chunk.usage?.completion_tokens ?? 0
        }
        return { all, usage }
      })
      assert.strictEqual(text.all, "hello from the Messages upstream")
      assert.isAbove(text.usage, 0)

      yield* upstream.setBehaviour(
        "claude-sonnet",
        FakeUpstream.toolUse("grep", "{\"pattern\":\"TODO\"}", { id: "toolu_7" })
      )
      const tools: Array<OpenAI.Chat.ChatCompletionTool> = [{
        type: "function",
        function: { name: "grep", parameters: { type: "object", properties: { pattern: { type: "string" } } } }
      }]
      const called = yield* Effect.promise(() =>
        openai.chat.completions.create({ model: "claude", tools, messages: [{ role: "user", content: "find todos" }] })
      )
      const call = called.choices[0]?.message.tool_calls?.[0]
      assert.strictEqual(called.choices[0]?.finish_reason, "tool_calls")
      assert.strictEqual(call?.id, "toolu_7")
      assert.strictEqual(call?.type === "function" ? call.function.name : "", "grep")
      assert.deepStrictEqual(JSON.parse(call?.type === "function" ? call.function.arguments : "null"), {
        pattern: "TODO"
      })

      const streamedCall = yield* Effect.promise(async () => {
        const stream = await openai.chat.completions.create({
          model: "claude",
          tools,
          messages: [{ role: "user", content: "find todos" }],
          stream: true
        })
        let name = ""
        let args = ""
        let finish = ""
        for await (const chunk of stream) {
          for (const delta of chunk.choices[0]?.delta.tool_calls ?? []) {
            name += delta.function?.name ?? ""
            args += delta.function?.arguments ?? ""
          }
          finish = chunk.choices[0]?.finish_reason ?? finish
        }
        return { name, args, finish }
      })
      assert.deepStrictEqual(streamedCall, { name: "grep", args: "{\"pattern\":\"TODO\"}", finish: "tool_calls" })

      // The tool result goes back to the Messages upstream as a tool_result block.
      yield* upstream.clear
      yield* upstream.setBehaviour("claude-sonnet", FakeUpstream.ok("3 todos"))
      yield* Effect.promise(() =>
        openai.chat.completions.create({
          model: "claude",
          tools,
          messages: [
            { role: "user", content: "find todos" },
            {
              role: "assistant",
              content: null,
              tool_calls: [{
                id: "toolu_7",
                type: "function",
                function: { name: "grep", arguments: "{\"pattern\":\"TODO\"}" }
              }]
            },
            { role: "tool", tool_call_id: "toolu_7", content: "a.ts:1 TODO\nb.ts:9 TODO" }
          ]
        })
      )
      const [followUp] = yield* upstream.requests
      const messages = list(record(followUp?.body)["messages"]).map(record)
      assert.deepStrictEqual(messages.map((m) => m["role"]), ["user", "assistant", "user"])
      const toolUse = list(messages[1]?.["content"]).map(record).find((b) => b["type"] === "tool_use")
      assert.deepStrictEqual(toolUse?.["input"], { pattern: "TODO" })
      const toolResult = list(messages[2]?.["content"]).map(record).find((b) => b["type"] === "tool_result")
      assert.strictEqual(toolResult?.["tool_use_id"], "toolu_7")
      assert.include(JSON.stringify(toolResult?.["content"]), "a.ts:1 TODO")

      // An Anthropic error body keeps its status and message on the chat endpoint.
      yield* upstream.setBehaviour("claude-sonnet", FakeUpstream.status(529, { message: "Overloaded" }))
      const overloaded = yield* rejection(() =>
        openai.chat.completions.create({ model: "claude", messages: [{ role: "user", content: "hi" }] })
      )
      assert.instanceOf(overloaded, OpenAI.APIError)
      if (overloaded instanceof OpenAI.APIError) {
        assert.strictEqual(overloaded.status, 529)
        assert.strictEqual(overloaded.message.includes("Overloaded"), true)
      }
    }))
})

describe("Messages to a Messages upstream", () => {
  it.scopedLive("the caller's native body is replayed: thinking blocks and cache_control survive", () =>
    Effect.gen(function*() {
      const { upstream, url } = yield* start
      const body = {
        model: "claude",
        max_tokens: 2048,
        thinking: { type: "enabled", budget_tokens: 1024 },
        system: [{ type: "text", text: "You are a coding agent.", cache_control: { type: "ephemeral" } }],
        messages: [
          { role: "user", content: "plan it" },
          {
            role: "assistant",
            content: [{ type: "thinking", thinking: "Let me think.", signature: "sig-abc" }, {
              type: "text",
              text: "Plan: …"
            }]
          },
          { role: "user", content: [{ type: "text", text: "go" }] }
        ]
      }
      const response = yield* Effect.promise(() =>
        fetch(`${url}/v1/messages`, {
          method: "POST",
          headers: {
            "content-type": "application/json",
            "x-api-key": "sk-caller-secret",
            "anthropic-version": "2023-06-01"
          },
          body: JSON.stringify(body)
        }).then(async (r) => ({ status: r.status, body: record(await r.json()) }))
      )
      assert.strictEqual(response.status, 200)
      assert.strictEqual(response.body["model"], "claude-sonnet")
      const [seen] = yield* upstream.requests
      // Claude Code calls `/v1/messages?beta=true`: the query does not change the endpoint.
      const beta = yield* Effect.promise(() =>
        fetch(`${url}/v1/messages?beta=true`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify(body)
        }).then((r) => r.status)
      )
      assert.strictEqual(beta, 200)
      assert.strictEqual(seen?.path, "/v1/messages")
      assert.deepStrictEqual(seen?.body, {
        ...body,
        model: "claude-sonnet",
        messages: [
          body.messages[0],
          body.messages[1],
          { role: "user", content: [{ type: "text", text: "go", cache_control: { type: "ephemeral" } }] }
        ]
      })
      assert.strictEqual(seen?.headers["x-api-key"], anthropicKey)
    }))
})

describe("Messages answers from a Messages upstream reach the caller as the upstream sent them", () => {
  // Blocks and events the chat shape cannot carry: server tools, citations, a block and an event
  // type newer than ours, unknown fields.
  const message = {
    id: "msg_native_1",
    type: "message",
    role: "assistant",
    model: "upstream-model-name",
    content: [
      { type: "server_tool_use", id: "srvtoolu_1", name: "web_search", input: { query: "effect ts" } },
      {
        type: "web_search_tool_result",
        tool_use_id: "srvtoolu_1",
        content: [{
          type: "web_search_result",
          url: "https://effect.website",
          title: "Effect",
          encrypted_content: "enc"
        }]
      },
      {
        type: "text",
        text: "Effect is a TypeScript library.",
        citations: [{
          type: "web_search_result_location",
          url: "https://effect.website",
          cited_text: "Effect",
          encrypted_index: "ix"
        }]
      },
      { type: "future_block", payload: { a: 1 } }
    ],
    stop_reason: "end_turn",
    stop_sequence: null,
    usage: { input_tokens: 12, output_tokens: 7, server_tool_use: { web_search_requests: 1 } },
    container: null
  }
  const events = [
    {
      event: "message_start",
      data: {
        type: "message_start",
        message: { ...message, content: [], stop_reason: null, usage: { input_tokens: 12, output_tokens: 1 } }
      }
    },
    {
      event: "content_block_start",
      data: { type: "content_block_start", index: 0, content_block: message.content[0] }
    },
    { event: "content_block_stop", data: { type: "content_block_stop", index: 0 } },
    {
      event: "content_block_start",
      data: { type: "content_block_start", index: 1, content_block: message.content[1] }
    },
    { event: "content_block_stop", data: { type: "content_block_stop", index: 1 } },
    {
      event: "content_block_start",
      data: { type: "content_block_start", index: 2, content_block: { type: "text", text: "", citations: [] } }
    },
    {
      event: "content_block_delta",
      data: {
        type: "content_block_delta",
        index: 2,
        delta: {
          type: "citations_delta",
          citation: {
            type: "web_search_result_location",
            url: "https://effect.website",
            cited_text: "Effect",
            encrypted_index: "ix"
          }
        }
      }
    },
    {
      event: "content_block_delta",
      data: {
        type: "content_block_delta",
        index: 2,
        delta: { type: "text_delta", text: "Effect is a TypeScript library." }
      }
    },
    { event: "content_block_stop", data: { type: "content_block_stop", index: 2 } },
    { event: "future_event", data: { type: "future_event", detail: "newer than this version" } },
    {
      event: "message_delta",
      data: {
        type: "message_delta",
        delta: { stop_reason: "end_turn", stop_sequence: null },
        usage: { output_tokens: 7 }
      }
    },
    { event: "message_stop", data: { type: "message_stop" } }
  ]
  const raw = FakeUpstream.Raw.make({
    body: JSON.stringify(message),
    events: events.map(({ data, event }) => ({ event, data: JSON.stringify(data) }))
  })
  const post = (url: string, stream: boolean) =>
    Effect.promise(() =>
      fetch(`${url}/v1/messages`, {
        method: "POST",
        headers: { "content-type": "application/json", "accept-encoding": "gzip, deflate, br, zstd" },
        body: JSON.stringify({
          model: "claude",
          max_tokens: 64,
          stream,
          messages: [{ role: "user", content: "what is effect?" }]
        })
      }).then(async (response) => ({ response, text: await response.text() }))
    )
  const sseEvents = (text: string) =>
    text.trim().split("\n\n").map((block) => {
      const [eventLine, dataLine] = block.split("\n")
      return { event: eventLine?.replace(/^event: /, ""), data: JSON.parse(dataLine?.replace(/^data: /, "") ?? "null") }
    })

  it.scopedLive("buffered and streamed: every block, citation and unknown event kept, only model restamped", () =>
    Effect.gen(function*() {
      const { upstream, url } = yield* start
      yield* upstream.setBehaviour("claude-sonnet", raw)
      const buffered = yield* post(url, false)
      assert.strictEqual(buffered.response.status, 200)
      // Valid whatever the caller accepts: never compressed.
      assert.isNull(buffered.response.headers.get("content-encoding"))
      assert.strictEqual(buffered.response.headers.get("x-switchyard-selected-model"), "claude-sonnet")
      assert.deepStrictEqual(JSON.parse(buffered.text), { ...message, model: "claude-sonnet" })

      const streamed = yield* post(url, true)
      assert.strictEqual(streamed.response.status, 200)
      assert.isNull(streamed.response.headers.get("content-encoding"))
      assert.deepStrictEqual(
        sseEvents(streamed.text),
        events.map(({ data, event }) =>
          event === "message_start"
            ? { event, data: { ...data, message: { ...record(record(data)["message"]), model: "claude-sonnet" } } }
            : { event, data }
        )
      )
      // The answer's usage still counts.
      const metrics = yield* Effect.promise(() => fetch(`${url}/metrics`).then((r) => r.text()))
      assert.match(metrics, /switchyard_completion_tokens_total\{model="claude-sonnet"[^}]*\} (\d+)/)
    }))

  it.scopedLive("streamed: every event but message_start reaches the caller as the upstream's own bytes", () =>
    Effect.gen(function*() {
      const { upstream, url } = yield* start
      // A spacing no encoder produces: only forwarded bytes keep it.
      const spaced = events.map(({ data, event }) => ({ event, data: JSON.stringify(data).replace(/":/g, "\": ") }))
      yield* upstream.setBehaviour(
        "claude-sonnet",
        FakeUpstream.Raw.make({ body: JSON.stringify(message), events: spaced })
      )
      const streamed = yield* post(url, true)
      assert.strictEqual(streamed.response.status, 200)
      const blocks = streamed.text.split("\n\n").filter((block) => block.length > 0)
      assert.strictEqual(blocks.length, spaced.length)
      spaced.forEach(({ data, event }, i) => {
        if (event === "message_start") assert.include(blocks[i], "\"model\":\"claude-sonnet\"")
        else assert.strictEqual(blocks[i], `event: ${event}\ndata: ${data}`)
      })
    }))

  it.scopedLive("a chat caller on the same upstream still gets the chat translation", () =>
    Effect.gen(function*() {
      const { upstream, url } = yield* start
      yield* upstream.setBehaviour("claude-sonnet", raw)
      const response = yield* Effect.promise(() =>
        fetch(`${url}/v1/chat/completions`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ model: "claude", messages: [{ role: "user", content: "what is effect?" }] })
        }).then((r) => r.json())
      )
      const choice = list(record(response)["choices"])[0]
      assert.strictEqual(record(record(choice)["message"])["content"], "Effect is a TypeScript library.")
      assert.strictEqual(record(response)["object"], "chat.completion")
    }))
})

describe("Messages streams through a Messages upstream", () => {
  it.scopedLive("text and tool use survive both translations; an upstream failure mid-stream ends with an error event", () =>
    Effect.gen(function*() {
      const { upstream, url } = yield* start
      const client = anthropicClient(url)
      yield* upstream.setBehaviour("claude-sonnet", FakeUpstream.ok("native stream text"))
      const final = yield* Effect.promise(() =>
        client.messages.stream({ model: "claude", max_tokens: 64, messages: [{ role: "user", content: "hi" }] })
          .finalMessage()
      )
      assert.deepStrictEqual(final.content.map((block) => block.type === "text" ? block.text : block.type), [
        "native stream text"
      ])
      assert.strictEqual(final.model, "claude-sonnet")

      yield* upstream.setBehaviour(
        "claude-sonnet",
        FakeUpstream.toolUse("ls", "{\"dir\":\"src\"}", { id: "toolu_9", text: "Listing." })
      )
      const tool = yield* Effect.promise(() =>
        client.messages.stream({ model: "claude", max_tokens: 64, messages: [{ role: "user", content: "ls" }] })
          .finalMessage()
      )
      assert.deepStrictEqual(tool.content.map((block) => block.type), ["text", "tool_use"])
      const use = tool.content[1]
      assert.deepStrictEqual(use?.type === "tool_use" ? [use.id, use.name, use.input] : [], ["toolu_9", "ls", {
        dir: "src"
      }])
      assert.strictEqual(tool.stop_reason, "tool_use")

      yield* upstream.setBehaviour("claude-sonnet", FakeUpstream.streamError("upstream fell over"))
      const raw = yield* Effect.promise(() =>
        fetch(`${url}/v1/messages`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({
            model: "claude",
            max_tokens: 64,
            stream: true,
            messages: [{ role: "user", content: "hi" }]
          })
        }).then(async (r) => ({ status: r.status, text: await r.text() }))
      )
      assert.strictEqual(raw.status, 200)
      const events = raw.text.split("\n").filter((line) => line.startsWith("event: ")).map((line) => line.slice(7))
      assert.strictEqual(events[0], "message_start")
      assert.strictEqual(events[events.length - 1], "error")
      assert.notInclude(events, "message_stop")
      assert.include(raw.text, "\"type\":\"SwitchyardError\"")
    }))
})

describe("extended thinking through either upstream format", () => {
  it.scopedLive("signed thinking blocks reach the Anthropic client, buffered and streamed, and go back upstream", () =>
    Effect.gen(function*() {
      const { upstream, url } = yield* start
      const client = anthropicClient(url)
      const answer = FakeUpstream.thinking("First, look at the failing test.", "sig-EqQBCgIYAhIM", "Fixed it.")
      yield* upstream.setBehaviour("claude-sonnet", answer)
      yield* upstream.setBehaviour("local-coder", answer)
      const expected = [
        { type: "thinking", thinking: "First, look at the failing test.", signature: "sig-EqQBCgIYAhIM" },
        { type: "text", text: "Fixed it." }
      ]
      const shape = (blocks: ReadonlyArray<Anthropic.ContentBlock>) =>
        blocks.map((block) =>
          block.type === "thinking"
            ? { type: block.type, thinking: block.thinking, signature: block.signature }
            : block.type === "text"
            ? { type: block.type, text: block.text }
            : { type: block.type }
        )
      for (const model of ["claude", "fast"]) {
        const request = { model, max_tokens: 2048, messages: [{ role: "user" as const, content: "fix the test" }] }
        const buffered = yield* Effect.promise(() => client.messages.create(request))
        assert.deepStrictEqual(shape(buffered.content), expected, `${model} buffered`)
        const streamed = yield* Effect.promise(() => client.messages.stream(request).finalMessage())
        assert.deepStrictEqual(shape(streamed.content), expected, `${model} streamed`)
      }

      // The next turn hands the signed block back; an OpenAI-format upstream receives it as thinking_blocks.
      yield* upstream.clear
      yield* upstream.setBehaviour("local-coder", FakeUpstream.ok("done"))
      yield* Effect.promise(() =>
        client.messages.create({
          model: "fast",
          max_tokens: 2048,
          messages: [
            { role: "user", content: "fix the test" },
            {
              role: "assistant",
              content: [
                { type: "thinking", thinking: "First, look at the failing test.", signature: "sig-EqQBCgIYAhIM" },
                { type: "text", text: "Fixed it." }
              ]
            },
            { role: "user", content: "thanks, now commit" }
          ]
        })
      )
      const [seen] = yield* upstream.requests
      const assistant = list(record(seen?.body)["messages"]).map(record).find((m) => m["role"] === "assistant")
      assert.deepStrictEqual(assistant?.["thinking_blocks"], [expected[0]])
      assert.strictEqual(assistant?.["reasoning_content"], "First, look at the failing test.")
    }))
})

describe("POST /v1/messages/count_tokens", () => {
  it.scopedLive("goes to the route's Anthropic target (haiku < sonnet < opus preference) and answers its JSON", () =>
    Effect.gen(function*() {
      const { upstream, url } = yield* start
      const client = anthropicClient(url)
      const counted = yield* Effect.promise(() =>
        client.messages.countTokens({
          model: "both",
          messages: [{ role: "user", content: "count these words please" }]
        })
      )
      assert.isAbove(counted.input_tokens, 0)
      const [seen] = yield* upstream.requests
      assert.strictEqual(seen?.path, "/v1/messages/count_tokens")
      assert.strictEqual(record(seen?.body)["model"], "claude-sonnet")

      const refused = yield* rejection(() =>
        client.messages.countTokens({ model: "fast", messages: [{ role: "user", content: "x" }] })
      )
      assert.instanceOf(refused, Anthropic.BadRequestError)
      if (refused instanceof Anthropic.APIError) {
        assert.deepStrictEqual(refused.error, {
          type: "error",
          error: { type: "invalid_request_error", message: "route has no Anthropic target for token counting" }
        })
      }
    }))
})

describe("an Anthropic-format judge", () => {
  it.scopedLive("judges a Messages request through /v1/messages and through /v1/decision", () =>
    Effect.gen(function*() {
      const { upstream, url } = yield* start
      yield* upstream.setBehaviour("claude-judge", Arbitraries.judgeBehaviour("verdict"))
      yield* upstream.setBehaviour("local-coder", FakeUpstream.ok("weak answer"))
      const client = anthropicClient(url)
      const { data: message, response } = yield* Effect.promise(() =>
        client.messages.create({ model: "auto", max_tokens: 64, messages: [{ role: "user", content: "fix the typo" }] })
          .withResponse()
      )
      assert.strictEqual(message.model, "local-coder")
      assert.strictEqual(response.headers.get("x-switchyard-evidence-source"), "llm-classifier")
      const judged = (yield* upstream.requests).find((r) => r.model === "claude-judge")
      assert.strictEqual(judged?.path, "/v1/messages")
      assert.isDefined(record(judged?.body)["system"])

      const decision = yield* Effect.promise(() =>
        fetch(`${url}/v1/decision`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({
            input_format: "anthropic_messages",
            request: { model: "auto", max_tokens: 64, messages: [{ role: "user", content: "fix the typo" }] }
          })
        }).then(async (r) => ({ status: r.status, body: record(await r.json()) }))
      )
      assert.strictEqual(decision.status, 200)
      assert.strictEqual(record(decision.body["selected"])["model"], "local-coder")

      yield* upstream.setBehaviour("claude-judge", FakeUpstream.status(503, { message: "judge overloaded" }))
      const failed = yield* rejection(() =>
        client.messages.create({ model: "auto", max_tokens: 64, messages: [{ role: "user", content: "fix the typo" }] })
      )
      assert.instanceOf(failed, Anthropic.APIError)
      if (failed instanceof Anthropic.APIError) {
        assert.strictEqual(failed.status, 502)
        assert.strictEqual(record(record(failed.error)["error"])["type"], "api_error")
        assert.notInclude(JSON.stringify(failed.error), "judge overloaded")
      }
    }))
})

describe("requests one format cannot express", () => {
  it.scopedLive("fail with 400 in the caller's envelope before any upstream call", () =>
    Effect.gen(function*() {
      const { upstream, url } = yield* start
      const post = (path: string, body: unknown) =>
        Effect.promise(() =>
          fetch(`${url}${path}`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify(body)
          })
            .then(async (r) => ({ status: r.status, body: record(await r.json()) }))
        )
      const audio = yield* post("/v1/chat/completions", {
        model: "claude",
        messages: [{ role: "user", content: [{ type: "input_audio", input_audio: { data: "AAAA", format: "wav" } }] }]
      })
      assert.strictEqual(audio.status, 400)
      assert.strictEqual(record(audio.body["error"])["code"], "invalid_request_error")
      assert.include(String(record(audio.body["error"])["message"]), "anthropic_messages")

      const document = yield* post("/v1/messages", {
        model: "fast",
        max_tokens: 16,
        messages: [
          { role: "assistant", content: [{ type: "tool_use", id: "t1", name: "fetch", input: {} }] },
          {
            role: "user",
            content: [{
              type: "tool_result",
              tool_use_id: "t1",
              content: [{ type: "document", source: { type: "text", media_type: "text/plain", data: "x" } }]
            }]
          }
        ]
      })
      assert.strictEqual(document.status, 400)
      assert.strictEqual(document.body["type"], "error")
      assert.strictEqual(record(document.body["error"])["type"], "invalid_request_error")
      assert.include(String(record(document.body["error"])["message"]), "document")
      assert.lengthOf(yield* upstream.requests, 0)
    }))

  it.scopedLive("a Messages request the chat shape cannot hold is still served by an Anthropic target, its body replayed", () =>
    Effect.gen(function*() {
      const { upstream, url } = yield* start
      const body = {
        model: "claude",
        max_tokens: 16,
        messages: [
          { role: "user", content: "fetch the spec" },
          { role: "assistant", content: [{ type: "tool_use", id: "t1", name: "fetch", input: {} }] },
          {
            role: "user",
            content: [{
              type: "tool_result",
              tool_use_id: "t1",
              content: [
                { type: "text", text: "here it is" },
                { type: "document", source: { type: "text", media_type: "text/plain", data: "THE SPEC" } }
              ]
            }]
          }
        ]
      }
      const reply = yield* Effect.promise(() =>
        fetch(`${url}/v1/messages`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify(body)
        }).then(async (r) => ({ status: r.status, body: record(await r.json()) }))
      )
      assert.strictEqual(reply.status, 200)
      assert.strictEqual(reply.body["type"], "message")
      const [seen] = yield* upstream.requests
      assert.strictEqual(seen?.path, "/v1/messages")
      assert.include(JSON.stringify(record(seen?.body)["messages"]), "THE SPEC")
    }))
})

describe("a route that answers while routing", () => {
  it.scopedLive("noop answers a Messages client, buffered and streamed", () =>
    Effect.gen(function*() {
      const { upstream, url } = yield* start
      const client = anthropicClient(url)
      const request = { model: "ping", max_tokens: 16, messages: [{ role: "user" as const, content: "hi" }] }
      const buffered = yield* Effect.promise(() => client.messages.create(request))
      assert.deepStrictEqual(buffered.content.map((block) => block.type === "text" ? block.text : block.type), ["OK"])
      assert.strictEqual(buffered.stop_reason, "end_turn")
      const streamed = yield* Effect.promise(() => client.messages.stream(request).finalMessage())
      assert.deepStrictEqual(streamed.content.map((block) => block.type === "text" ? block.text : block.type), ["OK"])
      assert.strictEqual(streamed.stop_reason, "end_turn")
      assert.lengthOf(yield* upstream.requests, 0)
    }))
})

describe("GET /v1/models", () => {
  it.scopedLive("advertises the three inbound formats", () =>
    Effect.gen(function*() {
      const { url } = yield* start
      const body = yield* Effect.promise(() => fetch(`${url}/v1/models`).then(async (r) => record(await r.json())))
      for (const model of list(body["data"])) {
        assert.deepStrictEqual(record(record(model)["capabilities"])["supported_inbound_formats"], [
          "openai-chat-completions",
          "openai-responses",
          "anthropic-messages"
        ])
      }
    }))
})
