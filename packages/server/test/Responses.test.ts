/**
 * `POST /v1/responses` (the OpenAI Responses API) on any route: the official `openai` SDK's
 * `responses.create` and `responses.stream` (buffered, streamed, a function-calling loop,
 * structured output) against Chat and Messages upstreams, Codex's captured request, what only a
 * Responses server understands, `/v1/decision` and `/v1/models`.
 */
import { readFileSync } from "node:fs"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Predicate from "effect/Predicate"
import OpenAI from "openai"
import * as FakeUpstream from "@switchyard-ts/testkit/FakeUpstream"
import { startServer } from "./harness.js"

const toml = (upstreamUrl: string) => `
schema_version = 1

[llm_clients.oai]
format = "openai_chat"
base_url = "${upstreamUrl}"
max_retries = 0

[llm_clients.claude]
format = "anthropic_messages"
base_url = "${upstreamUrl.replace(/\/v1$/, "")}"
max_retries = 0

[targets.local]
id = "local-coder"
llm_client = "oai"

[targets.sonnet]
id = "claude-sonnet"
llm_client = "claude"

[targets.judge]
id = "judge-model"
llm_client = "oai"

[routes.fast]
id = "fast"
type = "passthrough"
target = "local"

[routes.claude]
id = "claude"
type = "passthrough"
target = "sonnet"

[routes.ping]
id = "ping"
type = "noop"

[routes.auto]
id = "auto"
type = "llm_classifier"
classifier_target = "judge"
weak_target = "local"
strong_target = "sonnet"
base_threshold = 0.5
classify_trigger = "user_turn"
`

const start = startServer(toml)
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
      for (const [model, served, text] of [["fast", "local-coder", "answer via Responses"], ["claude", "claude-sonnet", "answer from Claude"]] as const) {
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
        yield* upstream.script(served, [FakeUpstream.toolUse("read_file", "{\"path\":\"README.md\"}"), FakeUpstream.ok("the readme says hi")])
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
      const anthropicResult = list(record(list(record(seen.filter((r) => r.path === "/v1/messages")[1]?.body)["messages"]).at(-1))["content"])[0]
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
          text: { format: { type: "json_schema", name: "answer", schema: { type: "object", properties: { answer: { type: "number" } } }, strict: true } }
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
      const judged = yield* Effect.promise(() => sdk.responses.create({ model: "auto", input: "fix the typo" }).withResponse())
      assert.strictEqual(judged.response.headers.get("x-switchyard-evidence-source"), "llm-classifier")
      assert.strictEqual(judged.data.model, "local-coder")
    }))
})

describe("Codex's request", () => {
  const codex = record(JSON.parse(readFileSync(path.join(import.meta.dirname, "../../protocol/test/fixtures/codex-request.json"), "utf8")))
  const post = (url: string, body: unknown, headers: Record<string, string> = {}) =>
    Effect.promise(() =>
      fetch(`${url}/v1/responses`, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "text/event-stream", "accept-encoding": "zstd,gzip", ...headers },
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
      assert.include(JSON.stringify(record(messages?.body)["system"]), "You are a coding agent running in the Codex CLI")
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

  it.scopedLive("an item only a Responses server understands (Codex's additional_tools): 400 naming the target's format, no upstream call", () =>
    Effect.gen(function*() {
      const { upstream, url } = yield* start
      // What Codex 0.171.0 sends for the models of its catalog after gpt-5.5: the tools in an item.
      const additionalTools = {
        type: "additional_tools",
        role: "developer",
        tools: [{ type: "function", name: "f", parameters: { type: "object", properties: {} } }]
      }
      for (const [model, format] of [["fast", "openai_chat"], ["claude", "anthropic_messages"]] as const) {
        const reply = yield* post(url, { model, input: [additionalTools, { role: "user", content: "hi" }] })
        assert.strictEqual(reply.status, 400)
        const error = record(record(JSON.parse(reply.text))["error"])
        assert.strictEqual(error["type"], "invalid_request_error")
        assert.strictEqual(error["message"], `a Responses additional_tools item cannot be sent to an ${format} upstream`)
      }
      assert.strictEqual((yield* upstream.requests).length, 0)
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
      assert.include(list(record(record(list(record(models)["data"])[0])["capabilities"])["supported_inbound_formats"]), "openai-responses")
    }))
})
