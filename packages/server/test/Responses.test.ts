/**
 * `POST /v1/responses` (the OpenAI Responses API) on any route: the official `openai` SDK's
 * `responses.create` and `responses.stream` (buffered, streamed, a function-calling loop,
 * structured output) against Chat and Messages upstreams, Codex's captured request, what only a
 * Responses server understands, `/v1/decision` and `/v1/models`; and a real `openai_responses`
 * upstream (the fake upstream's `/v1/responses`): Chat callers translated both ways, Responses
 * callers replayed natively, a failure mid-stream, a Responses judge.
 */
import { assert, describe, it } from "@effect/vitest"
import * as D from "@switchyard-ts/testkit/DeploymentBuilder"
import * as FakeUpstream from "@switchyard-ts/testkit/FakeUpstream"
import * as Effect from "effect/Effect"
import * as Predicate from "effect/Predicate"
import { readFileSync } from "node:fs"
import * as path from "node:path"
import OpenAI from "openai"
import { capabilityRoute, chatAndClaude, startServer } from "./harness.js"

const deployment = (upstreamUrl: string): D.Deployment =>
  D.extend(chatAndClaude(upstreamUrl), {
    llm_clients: { resp: D.client("openai_responses", upstreamUrl, { max_retries: 0 }) },
    targets: {
      judge: D.target("judge-model", "oai"),
      gpt: D.target("gpt-resp", "resp"),
      rjudge: D.target("resp-judge", "resp")
    },
    routes: D.byId(
      D.noop("ping"),
      capabilityRoute("auto", "judge", {
        weak_target: "local",
        strong_target: "sonnet",
        classify_trigger: "user_turn"
      }),
      D.passthrough("native", "gpt"),
      capabilityRoute("rauto", "rjudge", { weak_target: "gpt", strong_target: "sonnet" })
    )
  })

const start = startServer(deployment)
const client = (url: string) => new OpenAI({ baseURL: `${url}/v1`, apiKey: "sk-caller-secret", maxRetries: 0 })
const record = (value: unknown): Record<string, unknown> => (Predicate.isRecord(value) ? value : {})
const list = (value: unknown): ReadonlyArray<unknown> => (Array.isArray(value) ? value : [])
const verdict = FakeUpstream.ok(
  JSON.stringify({ crux: "a small local fix", primary_rule: "SUP-1", capability_boundary: "supported", p_solve: 0.9 })
)

describe("the openai SDK's responses API against /v1/responses", () => {
  it.scopedLive("buffered and streamed, on a Chat and on a Messages upstream", () =>
    Effect.gen(function*() {
      const { upstream, url } = yield* start
      yield* upstream.setBehaviour("local-coder", FakeUpstream.ok("answer via Responses"))
      yield* upstream.setBehaviour("claude-sonnet", FakeUpstream.ok("answer from Claude"))
      const sdk = client(url)
      for (
        const [model, served, text] of [["fast", "local-coder", "answer via Responses"], [
          "claude",
          "claude-sonnet",
          "answer from Claude"
        ]] as const
      ) {
        const { data: response, response: raw } = yield* Effect.promise(() =>
          sdk.responses.create({ model, instructions: "Be terse.", input: "hi" }).withResponse()
        )
        assert.strictEqual(response.object, "response")
        assert.strictEqual(response.status, "completed")
        assert.strictEqual(response.model, served)
        assert.strictEqual(response.output_text, text)
        assert.isAbove(response.usage?.output_tokens ?? 0, 0)
        assert.strictEqual(raw.headers.get("x-switchyard-selected-model"), served)

        const events: Array<string> = []
        const final = yield* Effect.promise(async () => {
          const stream = sdk.responses.stream({ model, input: [{ role: "user", content: "stream please" }] })
          for await (const event of stream) events.push(event.type)
          return stream.finalResponse()
        })
        assert.strictEqual(final.output_text, text)
        assert.strictEqual(events[0], "response.created")
        assert.strictEqual(events.at(-1), "response.completed")
        assert.include(events, "response.output_text.delta")
      }
      const seen = yield* upstream.requests
      const chat = seen.filter((r) => r.path === "/v1/chat/completions")
      assert.deepStrictEqual(list(record(chat[0]?.body)["messages"]).map((m) => record(m)["role"]), ["system", "user"])
      assert.notInclude(JSON.stringify(seen.map((r) => r.headers)), "sk-caller-secret")
      assert.isTrue(seen.some((r) => r.path === "/v1/messages"))
    }))

  it.scopedLive("a function-calling loop: the call comes back as a function_call item, its output goes upstream as a tool message", () =>
    Effect.gen(function*() {
      const { upstream, url } = yield* start
      const sdk = client(url)
      const tools = [{
        type: "function" as const,
        name: "read_file",
        description: "read a file",
        strict: false,
        parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] }
      }]
      for (const [model, served] of [["fast", "local-coder"], ["claude", "claude-sonnet"]] as const) {
        yield* upstream.script(served, [
          FakeUpstream.toolUse("read_file", "{\"path\":\"README.md\"}"),
          FakeUpstream.ok("the readme says hi")
        ])
        const first = yield* Effect.promise(() => sdk.responses.create({ model, input: "read the readme", tools }))
        const call = first.output.find((item) => item.type === "function_call")
        assert.isDefined(call)
        if (call?.type !== "function_call") return
        assert.strictEqual(call.name, "read_file")
        assert.deepStrictEqual(JSON.parse(call.arguments), { path: "README.md" })
        const second = yield* Effect.promise(() =>
          sdk.responses.create({
            model,
            tools,
            input: [
              { role: "user", content: "read the readme" },
              { type: "function_call", call_id: call.call_id, name: call.name, arguments: call.arguments },
              { type: "function_call_output", call_id: call.call_id, output: "hi from the readme" }
            ]
          })
        )
        assert.strictEqual(second.output_text, "the readme says hi")
      }
      const seen = yield* upstream.requests
      const chatResult = list(record(seen.filter((r) => r.path === "/v1/chat/completions")[1]?.body)["messages"]).at(-1)
      assert.strictEqual(record(chatResult)["role"], "tool")
      assert.strictEqual(record(chatResult)["content"], "hi from the readme")
      const anthropicResult = list(
        record(list(record(seen.filter((r) => r.path === "/v1/messages")[1]?.body)["messages"]).at(-1))["content"]
      )[0]
      assert.strictEqual(record(anthropicResult)["type"], "tool_result")
    }))

  it.scopedLive("structured output: text.format json_schema reaches a Chat upstream as response_format", () =>
    Effect.gen(function*() {
      const { upstream, url } = yield* start
      yield* upstream.setBehaviour("local-coder", FakeUpstream.ok("{\"answer\":42}"))
      const response = yield* Effect.promise(() =>
        client(url).responses.create({
          model: "fast",
          input: "the answer?",
          text: {
            format: {
              type: "json_schema",
              name: "answer",
              schema: { type: "object", properties: { answer: { type: "number" } } },
              strict: true
            }
          }
        })
      )
      assert.deepStrictEqual(JSON.parse(response.output_text), { answer: 42 })
      const [seen] = yield* upstream.requests
      assert.strictEqual(record(record(seen?.body)["response_format"])["type"], "json_schema")
    }))

  it.scopedLive("errors use the OpenAI envelope; a noop route answers; the classifier judges a Responses request", () =>
    Effect.gen(function*() {
      const { upstream, url } = yield* start
      yield* upstream.setBehaviour("judge-model", verdict)
      const sdk = client(url)
      const missing = yield* Effect.promise(() =>
        sdk.responses.create({ model: "nope", input: "hi" }).then(() => undefined, (error: unknown) => error)
      )
      assert.instanceOf(missing, OpenAI.NotFoundError)
      const noop = yield* Effect.promise(() => sdk.responses.create({ model: "ping", input: "hi" }))
      assert.strictEqual(noop.output_text, "OK")
      const judged = yield* Effect.promise(() =>
        sdk.responses.create({ model: "auto", input: "fix the typo" }).withResponse()
      )
      assert.strictEqual(judged.response.headers.get("x-switchyard-evidence-source"), "llm-classifier")
      assert.strictEqual(judged.data.model, "local-coder")
    }))
})

describe("Codex's request", () => {
  const codex = record(
    JSON.parse(readFileSync(path.join(import.meta.dirname, "../../protocol/test/fixtures/codex-request.json"), "utf8"))
  )
  const post = (url: string, body: unknown, headers: Record<string, string> = {}) =>
    Effect.promise(() =>
      fetch(`${url}/v1/responses`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: "text/event-stream",
          "accept-encoding": "zstd,gzip",
          ...headers
        },
        body: JSON.stringify(body)
      }).then(async (response) => ({ status: response.status, text: await response.text() }))
    )

  it.scopedLive("streams on a Chat and a Messages route: hosted tools dropped, namespaces flattened, developer text as system", () =>
    Effect.gen(function*() {
      const { upstream, url } = yield* start
      for (const model of ["fast", "claude"]) {
        const reply = yield* post(url, { ...codex, model }, { "session-id": "codex-session-1" })
        assert.strictEqual(reply.status, 200, reply.text.slice(0, 300))
        assert.include(reply.text, "event: response.created")
        assert.include(reply.text, "event: response.completed")
        assert.notInclude(reply.text, "event: error")
        const sequence = [...reply.text.matchAll(/"sequence_number":(\d+)/g)].map((m) => Number(m[1]))
        assert.deepStrictEqual(sequence, sequence.map((_, i) => i))
      }
      const [chat, messages] = yield* upstream.requests
      const chatBody = record(chat?.body)
      const toolNames = list(chatBody["tools"]).map((tool) => record(record(tool)["function"])["name"])
      assert.include(toolNames, "exec_command")
      assert.isTrue(toolNames.some((name) => typeof name === "string" && name.startsWith("multi_agent_v1__")))
      assert.notInclude(JSON.stringify(chatBody["tools"]), "web_search")
      const system = record(list(chatBody["messages"])[0])
      assert.strictEqual(system["role"], "system")
      assert.include(JSON.stringify(system["content"]), "You are a coding agent running in the Codex CLI")
      assert.strictEqual(record(messages?.body)["model"], "claude-sonnet")
      assert.include(
        JSON.stringify(record(messages?.body)["system"]),
        "You are a coding agent running in the Codex CLI"
      )
    }))

  it.scopedLive("previous_response_id: 400 in the OpenAI envelope on a route whose target is not a Responses server, no upstream call", () =>
    Effect.gen(function*() {
      const { upstream, url } = yield* start
      const reply = yield* post(url, { model: "fast", input: "continue", previous_response_id: "resp_123" })
      assert.strictEqual(reply.status, 400)
      const body = record(JSON.parse(reply.text))
      assert.strictEqual(record(body["error"])["type"], "invalid_request_error")
      assert.include(String(record(body["error"])["message"]), "previous_response_id")
      assert.strictEqual((yield* upstream.requests).length, 0)
    }))

  it.scopedLive("Codex's additional_tools item on a Chat and a Messages route: its tools offered flattened, a call comes back under its namespace", () =>
    Effect.gen(function*() {
      const { upstream, url } = yield* start
      // What Codex 0.171.0 sends for the models of its catalog after gpt-5.5: `tools: []`, the tools in an item.
      const additionalTools = {
        type: "additional_tools",
        role: "developer",
        tools: [
          {
            type: "namespace",
            name: "functions",
            description: "Tools",
            tools: [
              { type: "custom", name: "exec", description: "Run JavaScript" },
              { type: "function", name: "wait", parameters: { type: "object", properties: { ms: { type: "number" } } } }
            ]
          },
          {
            type: "namespace",
            name: "collaboration",
            tools: [{ type: "function", name: "spawn_agent", parameters: { type: "object", properties: {} } }]
          },
          { type: "web_search" }
        ]
      }
      const offered = ["functions__exec", "functions__wait", "collaboration__spawn_agent"]
      for (
        const [model, served, call, expected] of [
          ["fast", "local-coder", ["functions__exec", "{\"input\":\"1+1\"}"], {
            type: "custom_tool_call",
            name: "exec",
            namespace: "functions",
            input: "1+1"
          }],
          ["claude", "claude-sonnet", ["collaboration__spawn_agent", "{}"], {
            type: "function_call",
            name: "spawn_agent",
            namespace: "collaboration",
            arguments: "{}"
          }]
        ] as const
      ) {
        yield* upstream.script(served, [FakeUpstream.toolUse(call[0], call[1])])
        const reply = yield* post(url, {
          model,
          tools: [],
          input: [
            { type: "message", role: "developer", content: [{ type: "input_text", text: "Be careful." }] },
            additionalTools,
            { type: "message", role: "user", content: [{ type: "input_text", text: "add one and one" }] }
          ]
        })
        assert.strictEqual(reply.status, 200, reply.text.slice(0, 300))
        const output = list(record(JSON.parse(reply.text))["output"]).map(record)
        const item = output.find((i) => i["type"] === expected.type)
        assert.isDefined(item, reply.text.slice(0, 300))
        for (const [key, value] of Object.entries(expected)) assert.strictEqual(item?.[key], value)
      }
      const [chat, messages] = yield* upstream.requests
      assert.strictEqual(chat?.path, "/v1/chat/completions")
      const chatBody = record(chat?.body)
      assert.deepStrictEqual(
        list(chatBody["tools"]).map((tool) => record(record(tool)["function"])["name"]),
        offered
      )
      assert.deepStrictEqual(list(chatBody["messages"]).map((m) => record(m)["role"]), ["system", "user"])
      assert.notInclude(JSON.stringify(chatBody), "additional_tools")
      assert.strictEqual(messages?.path, "/v1/messages")
      assert.deepStrictEqual(list(record(messages?.body)["tools"]).map((tool) => record(tool)["name"]), offered)
      assert.notInclude(JSON.stringify(messages?.body), "web_search")
    }))

  it.scopedLive("/v1/decision takes input_format openai_responses; /v1/models lists it", () =>
    Effect.gen(function*() {
      const { upstream, url } = yield* start
      yield* upstream.setBehaviour("judge-model", verdict)
      const decision = yield* Effect.promise(() =>
        fetch(`${url}/v1/decision`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ input_format: "openai_responses", request: { ...codex, model: "auto" } })
        }).then((r) => r.json())
      )
      assert.strictEqual(record(record(decision)["selected"])["model"], "local-coder")
      assert.strictEqual(record(record(decision)["evidence"])["source"], "llm-classifier")
      const noop = yield* Effect.promise(() =>
        fetch(`${url}/v1/decision`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ input_format: "openai_responses", request: { model: "ping", input: "hi" } })
        }).then((r) => r.json())
      )
      assert.strictEqual(record(record(noop)["response"])["object"], "response")
      const models = yield* Effect.promise(() => fetch(`${url}/v1/models`).then((r) => r.json()))
      assert.include(
        list(record(record(list(record(models)["data"])[0])["capabilities"])["supported_inbound_formats"]),
        "openai-responses"
      )
    }))
})

describe("an openai_responses upstream (the fake upstream's /v1/responses)", () => {
  const post = (url: string, body: unknown) =>
    Effect.promise(() =>
      fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) })
        .then(async (response) => ({ status: response.status, text: await response.text() }))
    )
  /** The `data:` objects of a Responses SSE body, each checked against its `event:` line. */
  const events = (text: string): ReadonlyArray<Record<string, unknown>> =>
    text.split("\n\n").filter((block) => block.length > 0).map((block) => {
      const [eventLine, dataLine] = block.split("\n")
      const data = record(JSON.parse((dataLine ?? "").slice("data: ".length)))
      assert.strictEqual(data["type"], (eventLine ?? "").slice("event: ".length))
      return data
    })
  /** Ids and timestamps differ between two answers of the fake upstream; everything else must not. */
  const normalise = (text: string): string =>
    text.replace(/_fake_\d+/g, "_fake_N").replace(/"created_at":\d+/g, "\"created_at\":0")
  const tools = [{
    type: "function" as const,
    function: {
      name: "get_weather",
      description: "the weather",
      parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] }
    }
  }]

  it.scopedLive("a Chat caller: buffered, streamed and a tool call, translated to Responses and back", () =>
    Effect.gen(function*() {
      const { upstream, url } = yield* start
      const sdk = client(url)
      yield* upstream.setBehaviour("gpt-resp", FakeUpstream.ok("answer from a Responses upstream"))
      const { data: completion, response: raw } = yield* Effect.promise(() =>
        sdk.chat.completions.create({
          model: "native",
          messages: [{ role: "system", content: "Be terse." }, { role: "user", content: "hi" }]
        }).withResponse()
      )
      assert.strictEqual(completion.choices[0]?.message.content, "answer from a Responses upstream")
      assert.strictEqual(completion.model, "gpt-resp")
      assert.isAbove(completion.usage?.completion_tokens ?? 0, 0)
      assert.strictEqual(raw.headers.get("x-switchyard-selected-model"), "gpt-resp")
      const [first] = yield* upstream.requests
      assert.strictEqual(first?.path, "/v1/responses")
      const body = record(first?.body)
      assert.strictEqual(body["model"], "gpt-resp")
      assert.isUndefined(body["messages"])
      assert.include(JSON.stringify(body), "Be terse.")
      assert.include(JSON.stringify(body["input"]), "hi")
      assert.notInclude(JSON.stringify(first?.headers), "sk-caller-secret")

      const streamed = yield* Effect.promise(async () => {
        const stream = await sdk.chat.completions.create({
          model: "native",
          messages: [{ role: "user", content: "hi" }],
          stream: true
        })
        let all = ""
        for await (const chunk of stream) all += chunk.choices[0]?.delta.content ?? ""
        return all
      })
      assert.strictEqual(streamed, "answer from a Responses upstream")
      assert.strictEqual(record((yield* upstream.requests)[1]?.body)["stream"], true)

      yield* upstream.script("gpt-resp", [
        FakeUpstream.toolUse("get_weather", "{\"city\":\"Paris\"}", { id: "call_paris" }),
        FakeUpstream.toolUse("get_weather", "{\"city\":\"Oslo\"}", { id: "call_oslo" })
      ])
      const called = yield* Effect.promise(() =>
        sdk.chat.completions.create({
          model: "native",
          messages: [{ role: "user", content: "weather in Paris?" }],
          tools
        })
      )
      const call = called.choices[0]?.message.tool_calls?.[0]
      assert.strictEqual(called.choices[0]?.finish_reason, "tool_calls")
      assert.strictEqual(call?.id, "call_paris")
      assert.strictEqual(call?.type === "function" ? call.function.name : undefined, "get_weather")
      assert.deepStrictEqual(JSON.parse(call?.type === "function" ? call.function.arguments : "null"), {
        city: "Paris"
      })
      const streamedCall = yield* Effect.promise(async () => {
        const stream = await sdk.chat.completions.create({
          model: "native",
          messages: [{ role: "user", content: "weather in Oslo?" }],
          tools,
          stream: true
        })
        let id = ""
        let args = ""
        for await (const chunk of stream) {
          for (const delta of chunk.choices[0]?.delta.tool_calls ?? []) {
            id += delta.id ?? ""
            args += delta.function?.arguments ?? ""
          }
        }
        return { id, args }
      })
      assert.deepStrictEqual(streamedCall, { id: "call_oslo", args: "{\"city\":\"Oslo\"}" })

      yield* upstream.setBehaviour("gpt-resp", FakeUpstream.ok("sunny"))
      const answered = yield* Effect.promise(() =>
        sdk.chat.completions.create({
          model: "native",
          tools,
          messages: [
            { role: "user", content: "weather in Paris?" },
            {
              role: "assistant",
              content: null,
              tool_calls: [{
                id: "call_paris",
                type: "function",
                function: { name: "get_weather", arguments: "{\"city\":\"Paris\"}" }
              }]
            },
            { role: "tool", tool_call_id: "call_paris", content: "sunny, 24°C" }
          ]
        })
      )
      assert.strictEqual(answered.choices[0]?.message.content, "sunny")
      const input = list(record((yield* upstream.requests).at(-1)?.body)["input"]).map(record)
      const functionCall = input.find((item) => item["type"] === "function_call")
      const output = input.find((item) => item["type"] === "function_call_output")
      assert.strictEqual(functionCall?.["call_id"], "call_paris")
      assert.strictEqual(functionCall?.["name"], "get_weather")
      assert.strictEqual(output?.["call_id"], "call_paris")
      assert.include(JSON.stringify(output?.["output"]), "sunny, 24°C")
      const sentTools = list(record((yield* upstream.requests).at(-1)?.body)["tools"]).map(record)
      assert.deepStrictEqual(sentTools.map((tool) => [tool["type"], tool["name"]]), [["function", "get_weather"]])
    }))

  it.scopedLive("a Responses caller is replayed natively: its body reaches the upstream, the answer comes back as sent", () =>
    Effect.gen(function*() {
      const { upstream, url } = yield* start
      const sdk = client(url)
      yield* upstream.setBehaviour("gpt-resp", FakeUpstream.thinking("pondering", "enc_next_turn", "the answer"))
      const request = {
        model: "native",
        previous_response_id: "resp_previous",
        store: false,
        include: ["reasoning.encrypted_content" as const],
        tools: [{ type: "web_search" as const }],
        input: [
          { type: "reasoning" as const, id: "rs_earlier", summary: [], encrypted_content: "enc_earlier_turn" },
          { role: "user" as const, content: "and now?" }
        ]
      }
      const { data: response, response: raw } = yield* Effect.promise(() =>
        sdk.responses.create(request).withResponse()
      )
      assert.strictEqual(raw.headers.get("x-switchyard-selected-model"), "gpt-resp")
      assert.strictEqual(response.output_text, "the answer")
      const reasoning = response.output.find((item) => item.type === "reasoning")
      assert.strictEqual(reasoning?.type === "reasoning" ? reasoning.encrypted_content : undefined, "enc_next_turn")
      const [seen] = yield* upstream.requests
      assert.strictEqual(seen?.path, "/v1/responses")
      assert.deepStrictEqual(seen?.body, { ...request, model: "gpt-resp" })

      // As sent: the fake's own answer to the same body, asked directly, equals what the caller got.
      const direct = yield* post(`${upstream.url}/responses`, { ...request, model: "gpt-resp" })
      const proxied = yield* post(`${url}/v1/responses`, request)
      assert.strictEqual(proxied.status, 200)
      assert.deepStrictEqual(JSON.parse(normalise(proxied.text)), JSON.parse(normalise(direct.text)))

      // Only `model` restamped: a dated snapshot name and fields and items we do not model pass through.
      const upstreamAnswer = {
        id: "resp_raw",
        object: "response",
        created_at: 1_700_000_000,
        status: "completed",
        model: "gpt-resp-2025-08-07",
        output: [
          { type: "web_search_call", id: "ws_1", status: "completed", action: { type: "search", query: "news" } },
          {
            type: "message",
            id: "msg_raw",
            status: "completed",
            role: "assistant",
            content: [{
              type: "output_text",
              text: "news",
              annotations: [{ type: "url_citation", url: "https://example.com" }]
            }]
          }
        ],
        usage: { input_tokens: 3, output_tokens: 1, total_tokens: 4 },
        vendor_field: { kept: true }
      }
      yield* upstream.script("gpt-resp", [FakeUpstream.Raw.make({ body: JSON.stringify(upstreamAnswer), events: [] })])
      const rawReply = yield* post(`${url}/v1/responses`, request)
      assert.deepStrictEqual(JSON.parse(rawReply.text), { ...upstreamAnswer, model: "gpt-resp" })

      // Streamed: every event as the upstream sent it (sequence numbers included), `model` restamped.
      const eventTypes: Array<string> = []
      const final = yield* Effect.promise(async () => {
        const stream = sdk.responses.stream(request)
        for await (const event of stream) eventTypes.push(event.type)
        return stream.finalResponse()
      })
      assert.strictEqual(final.output_text, "the answer")
      assert.strictEqual(final.model, "gpt-resp")
      assert.include(eventTypes, "response.reasoning_summary_text.delta")
      assert.strictEqual(eventTypes.at(-1), "response.completed")
      assert.strictEqual(record((yield* upstream.requests).at(-1)?.body)["stream"], true)
      const directStream = yield* post(`${upstream.url}/responses`, { ...request, model: "gpt-resp", stream: true })
      const proxiedStream = yield* post(`${url}/v1/responses`, { ...request, stream: true })
      assert.deepStrictEqual(events(normalise(proxiedStream.text)), events(normalise(directStream.text)))
      assert.deepStrictEqual(
        events(proxiedStream.text).map((event) => event["sequence_number"]),
        events(directStream.text).map((_, i) => i)
      )
    }))

  it.scopedLive("an upstream failure mid-stream ends with an error event and no response.completed (a Chat caller: no [DONE])", () =>
    Effect.gen(function*() {
      const { upstream, url } = yield* start
      yield* upstream.setBehaviour("gpt-resp", FakeUpstream.streamError("upstream overloaded"))
      const reply = yield* post(`${url}/v1/responses`, { model: "native", input: "hi", stream: true })
      assert.strictEqual(reply.status, 200)
      const received = events(reply.text)
      assert.strictEqual(received[0]?.["type"], "response.created")
      assert.include(received.map((event) => event["type"]), "response.output_text.delta")
      assert.strictEqual(received.at(-1)?.["type"], "error")
      assert.isFalse(received.some((event) => event["type"] === "response.completed"))
      assert.include(JSON.stringify(received.at(-1)), "upstream overloaded")

      const chat = yield* post(`${url}/v1/chat/completions`, {
        model: "native",
        messages: [{ role: "user", content: "hi" }],
        stream: true
      })
      assert.strictEqual(chat.status, 200)
      assert.include(chat.text, "chunk 0 ")
      assert.include(chat.text, "upstream overloaded")
      assert.notInclude(chat.text, "[DONE]")

      yield* upstream.setBehaviour("gpt-resp", FakeUpstream.CloseMidStream.make({ chunksBeforeClose: 2 }))
      const cut = yield* post(`${url}/v1/responses`, { model: "native", input: "hi", stream: true })
      const cutEvents = events(cut.text)
      assert.strictEqual(cutEvents.at(-1)?.["type"], "error")
      assert.isFalse(cutEvents.some((event) => event["type"] === "response.completed"))
    }))

  it.scopedLive("a judge that is an openai_responses target routes a classifier route", () =>
    Effect.gen(function*() {
      const { upstream, url } = yield* start
      yield* upstream.setBehaviour("resp-judge", verdict)
      yield* upstream.setBehaviour("gpt-resp", FakeUpstream.ok("judged and answered"))
      const sdk = client(url)
      const { data, response } = yield* Effect.promise(() =>
        sdk.chat.completions.create({ model: "rauto", messages: [{ role: "user", content: "fix the typo" }] })
          .withResponse()
      )
      assert.strictEqual(response.headers.get("x-switchyard-evidence-source"), "llm-classifier")
      assert.strictEqual(data.model, "gpt-resp")
      assert.strictEqual(data.choices[0]?.message.content, "judged and answered")
      const judged = yield* Effect.promise(() =>
        sdk.responses.create({ model: "rauto", input: "fix the typo" }).withResponse()
      )
      assert.strictEqual(judged.response.headers.get("x-switchyard-evidence-source"), "llm-classifier")
      assert.strictEqual(judged.data.output_text, "judged and answered")
      const seen = yield* upstream.requests
      const judge = seen.filter((r) => r.model === "resp-judge")
      assert.isAtLeast(judge.length, 1)
      assert.isTrue(judge.every((r) => r.path === "/v1/responses"))
    }))
})
