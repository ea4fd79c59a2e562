/**
 * A `gemini_generate_content` upstream through the real server: a Gemini tier answering Chat,
 * Messages, Responses and Gemini clients, buffered and streamed (a Gemini client's own body and the
 * target's own answer replayed untouched); a tool-call round trip of a Chat
 * client (the call's id and Gemini's `thoughtSignature` sent back); and a Gemini judge for each row
 * of the judge drill under both postures — the posture table holds as for a Chat judge
 * (`Classifier.test.ts`): status, selected model, evidence and the fail-open counter.
 */
import type * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import { assert, describe, it } from "@effect/vitest"
import { type Content, GoogleGenAI } from "@google/genai"
import * as D from "@switchyard-ts/testkit/DeploymentBuilder"
import * as FakeUpstream from "@switchyard-ts/testkit/FakeUpstream"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"
import * as TestClock from "effect/TestClock"
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
      const signed = JSON.stringify({
        candidates: [{
          content: {
            role: "model",
            parts: [{ functionCall: { name: "get_weather", args: { city: "Paris" } }, thoughtSignature: "SIG-9" }]
          },
          finishReason: "STOP",
          index: 0
        }],
        responseId: "resp-9",
        modelVersion: tier
      })
      yield* upstream.script(tier, [
        FakeUpstream.Raw.make({ body: signed, events: [] }),
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
      const signed = JSON.stringify({
        candidates: [{
          content: {
            role: "model",
            parts: [{
              functionCall: { id: "fc-1", name: "get_weather", args: { city: "Oslo" } },
              thoughtSignature: "SIG-M"
            }]
          },
          finishReason: "STOP",
          index: 0
        }],
        responseId: "resp-m",
        modelVersion: tier
      })
      yield* upstream.script(tier, [
        FakeUpstream.Raw.make({ body: signed, events: [] }),
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

const DecisionBody = Schema.Struct({
  selected: Schema.Struct({ target: Schema.String, model: Schema.String }),
  evidence: Schema.Record({ key: Schema.String, value: Schema.Unknown })
})
const ErrorBody = Schema.Struct({
  error: Schema.Struct({ message: Schema.String, type: Schema.String, code: Schema.String })
})

const decision = (client: HttpClient.HttpClient, model: string) =>
  Effect.map(
    post(client, "/v1/decision", { input_format: "openai_chat", request: chat(model) }),
    (raw) => ({ status: raw.status, json: JSON.parse(raw.text) })
  )

const completion = (client: HttpClient.HttpClient, model: string) =>
  Effect.map(post(client, "/v1/chat/completions", chat(model)), (raw) => ({
    status: raw.status,
    json: JSON.parse(raw.text),
    selected: raw.headers["x-switchyard-selected-model"],
    source: raw.headers["x-switchyard-evidence-source"]
  }))

const failOpenCount = (client: HttpClient.HttpClient, judgeModel: string, reason: string) =>
  Effect.map(Effect.flatMap(client.execute(HttpClientRequest.get("/metrics")), (r) => r.text), (text) => {
    const line = text.split("\n").find((l) =>
      l.startsWith("switchyard_classifier_fail_open_total{") && l.includes(`judge_model="${judgeModel}"`) &&
      l.includes(`reason="${reason}"`)
    )
    return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(" ") + 1))
  })

describe("a gemini_generate_content judge under both postures", () => {
  it.scopedLive("a good verdict routes weak under both postures; the judge got a Gemini request with its schema", () =>
    Effect.gen(function*() {
      const judge = unique("gemini-judge")
      const tier = unique("gemini-tier")
      const { client, upstream } = yield* start(judge, tier)
      yield* upstream.setBehaviour(judge, verdict(0.9))
      for (const route of ["gauto-error", "gauto-fail_open"]) {
        const decided = yield* decision(client, route)
        assert.strictEqual(decided.status, 200)
        const body = Schema.decodeUnknownSync(DecisionBody)(decided.json)
        assert.strictEqual(body.selected.model, tier)
        assert.deepStrictEqual<unknown>(body.evidence, {
          source: "llm-classifier",
          score: 0.9,
          threshold: 0.5,
          boundary: "supported"
        })
        const answered = yield* completion(client, route)
        assert.strictEqual(answered.status, 200)
        assert.strictEqual(answered.selected, tier)
        assert.strictEqual(answered.source, "llm-classifier")
      }
      const judged = (yield* upstream.requests).filter((r) => r.model === judge)
      assert.strictEqual(judged.length, 4)
      assert.isTrue(judged.every((r) => r.path.endsWith(":generateContent")))
      assert.strictEqual(judged[0]?.headers["x-goog-api-key"], geminiKey)
      const body = JSON.stringify(judged[0]?.body)
      assert.notInclude(body, "SECRET SYSTEM PROMPT")
      assert.include(body, "fix the typo in README")
      assert.include(body, "responseJsonSchema")
      assert.include(body, "\"temperature\":0")
    }))

  it.scoped("a judge stalled past timeout_ms: error → 504; fail_open → strong, reason timeout, counted once", () =>
    Effect.gen(function*() {
      const judge = unique("gemini-judge")
      const { client, upstream } = yield* start(judge, unique("gemini-tier"))
      yield* upstream.setBehaviour(judge, FakeUpstream.stall)
      const run = <A>(effect: Effect.Effect<A, unknown>) =>
        Effect.gen(function*() {
          const before = (yield* upstream.requests).filter((r) => r.model === judge).length
          const fiber = yield* Effect.fork(effect)
          yield* upstream.awaitRequests((records) => records.filter((r) => r.model === judge).length > before)
          yield* TestClock.adjust("3 seconds")
          return yield* Fiber.join(fiber)
        })
      const failed = yield* run(completion(client, "gauto-error"))
      assert.strictEqual(failed.status, 504)
      const error = Schema.decodeUnknownSync(ErrorBody)(failed.json).error
      assert.strictEqual(error.code, "upstream_timeout")
      assert.include(error.message, `judge ${judge} did not finish within 3000 ms, retries included`)
      assert.strictEqual(yield* failOpenCount(client, judge, "timeout"), 0)

      const open = yield* run(completion(client, "gauto-fail_open"))
      assert.strictEqual(open.status, 200)
      assert.strictEqual(open.selected, "strong-model")
      assert.strictEqual(open.source, "fail-open")
      assert.strictEqual(yield* failOpenCount(client, judge, "timeout"), 1)

      const openDecision = yield* run(decision(client, "gauto-fail_open"))
      assert.deepStrictEqual<unknown>(Schema.decodeUnknownSync(DecisionBody)(openDecision.json).evidence, {
        source: "fail-open",
        reason: "timeout",
        judge_model: judge
      })
    }))

  it.scopedLive("a stopped judge (connection refused): error → 502; fail_open → strong, reason transport", () =>
    Effect.gen(function*() {
      const judge = unique("gemini-judge")
      const { client } = yield* start(judge, unique("gemini-tier"))
      const failed = yield* completion(client, "gauto-error-stopped")
      assert.strictEqual(failed.status, 502)
      const error = Schema.decodeUnknownSync(ErrorBody)(failed.json).error
      assert.strictEqual(error.code, "upstream_error")
      assert.include(error.message, `judge ${judge}`)
      const open = yield* completion(client, "gauto-fail_open-stopped")
      assert.strictEqual(open.status, 200)
      assert.strictEqual(open.selected, "strong-model")
      assert.strictEqual(open.source, "fail-open")
      assert.strictEqual(yield* failOpenCount(client, judge, "transport"), 1)
    }))

  it.scopedLive("a judge answering 500 in Gemini's envelope: error → 502 naming the judge and status, no body; fail_open → upstream_5xx", () =>
    Effect.gen(function*() {
      const judge = unique("gemini-judge")
      const { client, upstream } = yield* start(judge, unique("gemini-tier"))
      yield* upstream.setBehaviour(
        judge,
        FakeUpstream.status(500, { message: "the user asked: fix the typo in README" })
      )
      const failed = yield* completion(client, "gauto-error")
      assert.strictEqual(failed.status, 502)
      const error = Schema.decodeUnknownSync(ErrorBody)(failed.json).error
      assert.strictEqual(error.message, `judge ${judge} answered HTTP 500`)
      const decided = yield* decision(client, "gauto-error")
      assert.strictEqual(decided.status, 502)
      const open = yield* completion(client, "gauto-fail_open")
      assert.strictEqual(open.status, 200)
      assert.strictEqual(open.source, "fail-open")
      assert.strictEqual(yield* failOpenCount(client, judge, "upstream_5xx"), 1)
      assert.strictEqual(yield* failOpenCount(client, judge, "transport"), 0)
    }))

  it.scopedLive("a judge answering garbage routes strong under both postures: parse_error, invalid_response", () =>
    Effect.gen(function*() {
      const judge = unique("gemini-judge")
      const { client, upstream } = yield* start(judge, unique("gemini-tier"))
      yield* upstream.setBehaviour(judge, FakeUpstream.ok("I think the small model can do it."))
      for (const route of ["gauto-error", "gauto-fail_open"]) {
        const answered = yield* completion(client, route)
        assert.strictEqual(answered.status, 200)
        assert.strictEqual(answered.selected, "strong-model")
        assert.strictEqual(answered.source, "fail-open")
      }
      assert.strictEqual(yield* failOpenCount(client, judge, "parse_error"), 2)
      yield* upstream.setBehaviour(judge, FakeUpstream.Garbage.make({ body: "<html>proxy error</html>" }))
      for (const route of ["gauto-error", "gauto-fail_open"]) {
        const invalid = yield* decision(client, route)
        assert.strictEqual(invalid.status, 200)
        assert.deepStrictEqual<unknown>(Schema.decodeUnknownSync(DecisionBody)(invalid.json).evidence, {
          source: "fail-open",
          reason: "invalid_response",
          judge_model: judge
        })
      }
    }))
})
