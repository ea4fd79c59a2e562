/**
 * A `gemini_generate_content` upstream through the real server: a Gemini tier answering Chat,
 * Messages, Responses and Gemini clients, buffered and streamed (a Gemini client's own body and the
 * target's own answer replayed untouched); the tool-call round trips of a Chat and a Messages
 * client (the call's id and Gemini's `thoughtSignature` sent back); and a Gemini judge, asked in its
 * own format (the judge drill's rows under both postures run with a Gemini judge in
 * `Classifier.test.ts`).
 */
import type * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import { assert, describe, it } from "@effect/vitest"
import { type Content, GoogleGenAI } from "@google/genai"
import * as D from "@switchyard-ts/testkit/DeploymentBuilder"
import * as FakeUpstream from "@switchyard-ts/testkit/FakeUpstream"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Predicate from "effect/Predicate"
import { capabilityRoute, postureRoutes, startServer } from "./harness.js"

const geminiKey = "AIza-configured-gemini-SECRET-42"

let counter = 0
/** A model id unique to one test, so the process-global metric registry does not mix tests. */
const unique = (prefix: string) => `${prefix}-${process.pid}-${++counter}`

/**
 * Clients `sim` (openai_chat) and `gem` (gemini_generate_content, key `GEMINI_TEST_KEY`), a stopped
 * Gemini client; targets `tier` (a Gemini model), `strong` (a Chat model), the Gemini `judge` and
 * `stopped_judge`; routes `gem` → tier and one capability route per posture (weak = the Gemini tier).
 */
const deployment = (judgeModel: string, tierModel: string) => (upstreamUrl: string): D.Deployment => ({
  llm_clients: {
    sim: D.client("openai_chat", upstreamUrl, { max_retries: 0 }),
    gem: D.client("gemini_generate_content", upstreamUrl, { max_retries: 0, api_key_env: "GEMINI_TEST_KEY" }),
    judge: D.client("gemini_generate_content", upstreamUrl, {
      max_retries: 0,
      timeout_ms: 3000,
      api_key_env: "GEMINI_TEST_KEY"
    }),
    stopped: D.client("gemini_generate_content", D.deadUrl, { max_retries: 0, timeout_ms: 3000 })
  },
  targets: {
    weak: D.target(tierModel, "gem"),
    strong: D.target("strong-model", "sim"),
    judge: D.target(judgeModel, "judge", { extra_body: { generationConfig: { temperature: 0 } } }),
    stopped_judge: D.target(judgeModel, "stopped")
  },
  routes: {
    ...D.byId(D.passthrough("gem", "weak")),
    ...postureRoutes("gauto", (id, judge_failure, judge) => capabilityRoute(id, judge, { judge_failure }))
  }
})

const withKey = Effect.withConfigProvider(ConfigProvider.fromMap(new Map([["GEMINI_TEST_KEY", geminiKey]])))

const start = (judgeModel: string, tierModel: string) => withKey(startServer(deployment(judgeModel, tierModel)))

interface Raw {
  readonly status: number
  readonly text: string
  readonly headers: Readonly<Record<string, string>>
}

const post = (client: HttpClient.HttpClient, path: string, body: unknown) =>
  Effect.flatMap(
    client.execute(HttpClientRequest.post(path).pipe(HttpClientRequest.bodyUnsafeJson(body))),
    (response) =>
      Effect.map(response.text, (text): Raw => ({ status: response.status, text, headers: response.headers }))
  )

const record = (value: unknown): Record<string, unknown> => (Predicate.isRecord(value) ? value : {})
const array = (value: unknown): ReadonlyArray<unknown> => (Array.isArray(value) ? value : [])

/** A buffered Gemini answer of one function call signed with `signature` (Gemini 3 signs calls). */
const signedCall = (model: string, call: Record<string, unknown>, signature: string, responseId: string) =>
  FakeUpstream.Raw.make({
    body: JSON.stringify({
      candidates: [{
        content: { role: "model", parts: [{ functionCall: call, thoughtSignature: signature }] },
        finishReason: "STOP",
        index: 0
      }],
      responseId,
      modelVersion: model
    }),
    events: []
  })

/** One request per client format, buffered or streamed, all asking the `gem` route. */
const clientRequests = (stream: boolean): ReadonlyArray<readonly [string, string, unknown]> => [
  ["chat", "/v1/chat/completions", { model: "gem", stream, messages: [{ role: "user", content: "hi" }] }],
  ["messages", "/v1/messages", { model: "gem", stream, max_tokens: 100, messages: [{ role: "user", content: "hi" }] }],
  ["responses", "/v1/responses", { model: "gem", stream, input: "hi" }],
  [
    "gemini",
    stream ? "/v1beta/models/gem:streamGenerateContent?alt=sse" : "/v1beta/models/gem:generateContent",
    { contents: [{ role: "user", parts: [{ text: "hi" }] }] }
  ]
]

describe("a gemini_generate_content tier through the server", () => {
  it.scopedLive("answers Chat, Messages, Responses and Gemini clients, buffered and streamed, with the configured key only", () =>
    Effect.gen(function*() {
      const tier = unique("gemini-tier")
      const { client, upstream } = yield* start(unique("judge"), tier)
      yield* upstream.setBehaviour(tier, FakeUpstream.ok("Paris is sunny today."))
      for (const stream of [false, true]) {
        for (const [name, path, body] of clientRequests(stream)) {
          const answered = yield* post(client, path, body)
          assert.strictEqual(answered.status, 200, `${name} ${stream}: ${answered.text}`)
          assert.strictEqual(answered.headers["x-switchyard-selected-model"], tier, name)
          // a streamed answer comes in three pieces (the next test reads them back whole)
          for (const piece of stream ? ["Paris i", "s sunny", " today."] : ["Paris is sunny today."]) {
            assert.include(answered.text, piece, `${name} ${stream}`)
          }
        }
      }
      const seen = (yield* upstream.requests).filter((r) => r.model === tier)
      assert.strictEqual(seen.length, 8)
      for (const request of seen) {
        assert.match(request.path, /^\/v1\/models\/[^/]+:(generateContent|streamGenerateContent)$/)
        assert.strictEqual(request.headers["x-goog-api-key"], geminiKey)
        assert.isUndefined(request.headers["authorization"])
        assert.deepStrictEqual(record(request.body)["contents"], [{ role: "user", parts: [{ text: "hi" }] }])
      }
      assert.deepStrictEqual(
        seen.map((r) => r.path.endsWith(":streamGenerateContent")),
        [false, false, false, false, true, true, true, true]
      )
    }))

  it.scopedLive("a streamed Chat answer carries every piece; a Gemini failure is the client's own error envelope", () =>
    Effect.gen(function*() {
      const tier = unique("gemini-tier")
      const { client, upstream } = yield* start(unique("judge"), tier)
      yield* upstream.setBehaviour(tier, FakeUpstream.Chunks.make({ chunks: ["Par", "is ", "is sunny."] }))
      const streamed = yield* post(client, "/v1/chat/completions", {
        model: "gem",
        stream: true,
        messages: [{ role: "user", content: "hi" }]
      })
      const content = streamed.text.split("\n").filter((line) => line.startsWith("data: {")).map((line) =>
        array(record(JSON.parse(line.slice(6)))["choices"]).map((c) => record(record(c)["delta"])["content"] ?? "")
          .join("")
      ).join("")
      assert.strictEqual(content, "Paris is sunny.")
      assert.include(streamed.text, "data: [DONE]")

      yield* upstream.setBehaviour(tier, FakeUpstream.status(429, { message: "quota exhausted" }))
      const limited = yield* post(client, "/v1/messages", {
        model: "gem",
        max_tokens: 10,
        messages: [{ role: "user", content: "hi" }]
      })
      assert.strictEqual(limited.status, 429)
      assert.strictEqual(record(JSON.parse(limited.text))["type"], "error")
      assert.notInclude(limited.text, geminiKey)
    }))

  it.scopedLive("a Gemini client's own body is replayed to the Gemini tier; its answer and events come back as sent", () =>
    Effect.gen(function*() {
      const tier = unique("gemini-tier")
      const { client, upstream } = yield* start(unique("judge"), tier)
      const answer = {
        candidates: [{
          content: {
            role: "model",
            parts: [
              { executableCode: { language: "PYTHON", code: "print(1)" } },
              { text: "1", thoughtSignature: "SIG-T" }
            ]
          },
          finishReason: "STOP",
          index: 0
        }],
        usageMetadata: { promptTokenCount: 3, candidatesTokenCount: 1, totalTokenCount: 4 },
        modelVersion: "gemini-upstream-version",
        responseId: "r-native"
      }
      const events = [
        { candidates: [{ content: { role: "model", parts: [{ text: "o" }] } }], responseId: "r-native" },
        { ...answer, candidates: [{ ...answer.candidates[0], content: { role: "model", parts: [{ text: "k" }] } }] }
      ]
      yield* upstream.script(tier, [
        FakeUpstream.Raw.make({ body: JSON.stringify(answer), events: [] }),
        FakeUpstream.Raw.make({ body: "{}", events: events.map((event) => ({ data: JSON.stringify(event) })) })
      ])
      const request = {
        contents: [
          { role: "user", parts: [{ text: "run it" }] },
          { role: "model", parts: [{ functionCall: { name: "run", args: {} }, thoughtSignature: "SIG-0" }] },
          { role: "user", parts: [{ functionResponse: { name: "run", response: { output: "ok" } } }] }
        ],
        safetySettings: [{ category: "HARM_CATEGORY_HATE_SPEECH", threshold: "BLOCK_NONE" }],
        generationConfig: { thinkingConfig: { thinkingBudget: 256, includeThoughts: true } },
        tools: [{ functionDeclarations: [{ name: "run" }] }, { codeExecution: {} }]
      }
      const buffered = yield* post(client, "/v1beta/models/gem:generateContent", request)
      assert.strictEqual(buffered.status, 200)
      assert.deepStrictEqual(JSON.parse(buffered.text), { ...answer, modelVersion: tier })
      const streamed = yield* post(client, "/v1beta/models/gem:streamGenerateContent?alt=sse", request)
      assert.strictEqual(streamed.status, 200)
      assert.deepStrictEqual(
        streamed.text.split("\n").filter((line) => line.startsWith("data: ")).map((line) => JSON.parse(line.slice(6))),
        [events[0], { ...events[1], modelVersion: tier }]
      )
      for (const seen of (yield* upstream.requests).filter((r) => r.model === tier)) {
        assert.deepStrictEqual(seen.body, request)
      }
    }))

  it.scopedLive("the @google/genai SDK on the Gemini tier: buffered, streamed and a function-calling round trip", () =>
    Effect.gen(function*() {
      const tier = unique("gemini-tier")
      const { upstream, url } = yield* start(unique("judge"), tier)
      yield* upstream.script(tier, [
        FakeUpstream.ok("answer from Gemini"),
        FakeUpstream.ok("streamed from Gemini"),
        FakeUpstream.toolUse("get_weather", `{"city":"Paris"}`),
        FakeUpstream.ok("It is sunny in Paris.")
      ])
      const ai = new GoogleGenAI({ apiKey: "caller-key-never-forwarded", httpOptions: { baseUrl: url } })
      const buffered = yield* Effect.promise(() => ai.models.generateContent({ model: "gem", contents: "hi" }))
      assert.strictEqual(buffered.text, "answer from Gemini")
      assert.strictEqual(buffered.modelVersion, tier)
      const streamed = yield* Effect.promise(async () => {
        let text = ""
        for await (const chunk of await ai.models.generateContentStream({ model: "gem", contents: "hi" })) {
          text += chunk.text ?? ""
        }
        return text
      })
      assert.strictEqual(streamed, "streamed from Gemini")
      const tools = [{
        functionDeclarations: [{
          name: "get_weather",
          parametersJsonSchema: { type: "object", properties: { city: { type: "string" } } }
        }]
      }]
      const history: Array<Content> = [{ role: "user", parts: [{ text: "weather in Paris?" }] }]
      const first = yield* Effect.promise(() =>
        ai.models.generateContent({ model: "gem", contents: history, config: { tools } })
      )
      const call = first.functionCalls?.[0]
      assert.strictEqual(call?.name, "get_weather")
      assert.deepStrictEqual(call?.args, { city: "Paris" })
      // Gemini sent no id, and the native answer adds none
      assert.isUndefined(call?.id)
      const modelTurn = first.candidates?.[0]?.content
      if (modelTurn !== undefined) history.push(modelTurn)
      history.push({
        role: "user",
        parts: [{ functionResponse: { name: "get_weather", response: { output: "sunny" } } }]
      })
      const second = yield* Effect.promise(() =>
        ai.models.generateContent({ model: "gem", contents: history, config: { tools } })
      )
      assert.strictEqual(second.text, "It is sunny in Paris.")
      const seen = (yield* upstream.requests).filter((r) => r.model === tier)
      assert.strictEqual(seen.length, 4)
      assert.deepStrictEqual(array(record(seen[3]?.body)["contents"]).slice(1), [
        { role: "model", parts: [{ functionCall: { name: "get_weather", args: { city: "Paris" } } }] },
        { role: "user", parts: [{ functionResponse: { name: "get_weather", response: { output: "sunny" } } }] }
      ])
      for (const request of seen) {
        assert.strictEqual(request.headers["x-goog-api-key"], geminiKey)
        assert.notInclude(JSON.stringify(request), "caller-key-never-forwarded")
      }
    }))

  it.scopedLive("a Chat client's tool loop: the call's id, its name and Gemini's thoughtSignature go back on the next turn", () =>
    Effect.gen(function*() {
      const tier = unique("gemini-tier")
      const { client, upstream } = yield* start(unique("judge"), tier)
      yield* upstream.script(tier, [
        signedCall(tier, { name: "get_weather", args: { city: "Paris" } }, "SIG-9", "resp-9"),
        FakeUpstream.ok("It is sunny in Paris.")
      ])
      const tools = [{
        type: "function",
        function: { name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" } } } }
      }]
      const ask = [{ role: "user", content: "weather in Paris?" }]
      const first = yield* post(client, "/v1/chat/completions", { model: "gem", tools, messages: ask })
      assert.strictEqual(first.status, 200)
      const message = record(record(array(record(JSON.parse(first.text))["choices"])[0])["message"])
      const call = record(array(message["tool_calls"])[0])
      assert.strictEqual(call["id"], "gemini_call_resp-9_0")
      assert.deepStrictEqual(record(call["function"])["name"], "get_weather")

      const second = yield* post(client, "/v1/chat/completions", {
        model: "gem",
        tools,
        messages: [...ask, message, { role: "tool", tool_call_id: call["id"], content: "sunny, 21C" }]
      })
      assert.strictEqual(second.status, 200)
      assert.include(second.text, "It is sunny in Paris.")
      const [, again] = (yield* upstream.requests).filter((r) => r.model === tier)
      assert.deepStrictEqual(array(record(again?.body)["contents"]).slice(1), [
        {
          role: "model",
          parts: [{
            functionCall: { id: "gemini_call_resp-9_0", name: "get_weather", args: { city: "Paris" } },
            thoughtSignature: "SIG-9"
          }]
        },
        {
          role: "user",
          parts: [{
            functionResponse: { id: "gemini_call_resp-9_0", name: "get_weather", response: { output: "sunny, 21C" } }
          }]
        }
      ])
    }))
})

describe("a Messages client's tool loop on a Gemini tier", () => {
  it.scopedLive("the signature comes as a signed thinking block before the tool_use and goes back onto the call", () =>
    Effect.gen(function*() {
      const tier = unique("gemini-tier")
      const { client, upstream } = yield* start(unique("judge"), tier)
      yield* upstream.script(tier, [
        signedCall(tier, { id: "fc-1", name: "get_weather", args: { city: "Oslo" } }, "SIG-M", "resp-m"),
        FakeUpstream.ok("Cold in Oslo.")
      ])
      const tools = [{
        name: "get_weather",
        input_schema: { type: "object", properties: { city: { type: "string" } } }
      }]
      const ask = [{ role: "user", content: "weather in Oslo?" }]
      const first = yield* post(client, "/v1/messages", { model: "gem", max_tokens: 100, tools, messages: ask })
      assert.strictEqual(first.status, 200)
      const answer = record(JSON.parse(first.text))
      assert.strictEqual(answer["stop_reason"], "tool_use")
      const content = array(answer["content"]).map(record)
      assert.deepStrictEqual(content.map((block) => block["type"]), ["thinking", "tool_use"])
      assert.strictEqual(content[0]?.["signature"], "SIG-M")
      assert.strictEqual(content[1]?.["id"], "fc-1")

      const second = yield* post(client, "/v1/messages", {
        model: "gem",
        max_tokens: 100,
        tools,
        messages: [
          ...ask,
          { role: "assistant", content },
          { role: "user", content: [{ type: "tool_result", tool_use_id: "fc-1", content: "-3C" }] }
        ]
      })
      assert.strictEqual(second.status, 200)
      assert.include(second.text, "Cold in Oslo.")
      const [, again] = (yield* upstream.requests).filter((r) => r.model === tier)
      assert.deepStrictEqual(array(record(again?.body)["contents"]).slice(1), [
        {
          role: "model",
          parts: [{
            functionCall: { id: "fc-1", name: "get_weather", args: { city: "Oslo" } },
            thoughtSignature: "SIG-M"
          }]
        },
        {
          role: "user",
          parts: [{ functionResponse: { id: "fc-1", name: "get_weather", response: { output: "-3C" } } }]
        }
      ])
    }))
})

const verdict = (p: number) =>
  FakeUpstream.ok(
    JSON.stringify({ crux: "a small local fix", primary_rule: "SUP-1", capability_boundary: "supported", p_solve: p })
  )

const chat = (model: string) => ({
  model,
  messages: [{ role: "system", content: "SECRET SYSTEM PROMPT" }, { role: "user", content: "fix the typo in README" }]
})

const completion = (client: HttpClient.HttpClient, model: string) =>
  Effect.map(post(client, "/v1/chat/completions", chat(model)), (raw) => ({
    status: raw.status,
    selected: raw.headers["x-switchyard-selected-model"],
    source: raw.headers["x-switchyard-evidence-source"]
  }))

// The judge drill's rows under both postures run with a Gemini judge in Classifier.test.ts.
describe("a gemini_generate_content judge", () => {
  it.scopedLive("is asked with generateContent and the configured key; its verdict routes the Gemini tier", () =>
    Effect.gen(function*() {
      const judge = unique("gemini-judge")
      const tier = unique("gemini-tier")
      const { client, upstream } = yield* start(judge, tier)
      yield* upstream.setBehaviour(judge, verdict(0.9))
      for (const route of ["gauto-error", "gauto-fail_open"]) {
        const answered = yield* completion(client, route)
        assert.strictEqual(answered.status, 200)
        assert.strictEqual(answered.selected, tier)
        assert.strictEqual(answered.source, "llm-classifier")
      }
      const judged = (yield* upstream.requests).filter((r) => r.model === judge)
      assert.strictEqual(judged.length, 2)
      for (const request of judged) {
        assert.match(request.path, /^\/v1\/models\/[^/]+:generateContent$/)
        assert.strictEqual(request.headers["x-goog-api-key"], geminiKey)
        const config = record(record(request.body)["generationConfig"])
        assert.strictEqual(config["responseMimeType"], "application/json")
        assert.strictEqual(config["temperature"], 0)
        assert.notInclude(JSON.stringify(request.body), "SECRET SYSTEM PROMPT")
      }
    }))
})
