import { assert, describe, it } from "@effect/vitest"
import type { ChatCompletionChunk } from "@switchyard-ts/protocol/OpenAiChat"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import { apiRoot, modelUrl, prepareBody } from "../src/internal/formats/geminiGenerateContent.js"
import type { Target } from "../src/Target.js"
import { apiKey, makeFake, sseData, Step, target } from "./support.js"

/** A target of a `gemini_generate_content` client on host `<name>.test` (model `<name>-model`). */
const geminiTarget = (name: string, options: Parameters<typeof target>[1] = {}): Target => {
  const base = target(name, { baseUrl: `https://${name}.test/v1beta`, ...options })
  return { ...base, client: { ...base.client, format: "gemini_generate_content" } }
}

const record = (value: unknown): Record<string, unknown> => (Predicate.isRecord(value) ? value : {})
const array = (value: unknown): ReadonlyArray<unknown> => (Array.isArray(value) ? value : [])

const answer = (parts: ReadonlyArray<Record<string, unknown>>, extra: Record<string, unknown> = {}) => ({
  candidates: [{ content: { role: "model", parts }, finishReason: "STOP", index: 0 }],
  usageMetadata: {
    promptTokenCount: 40,
    candidatesTokenCount: 5,
    thoughtsTokenCount: 7,
    cachedContentTokenCount: 30,
    totalTokenCount: 52
  },
  modelVersion: "gemini-2.5-flash",
  responseId: "resp-g1",
  ...extra
})

const chatBody = {
  model: "route",
  max_tokens: 64,
  temperature: 0.5,
  messages: [
    { role: "system", content: "be brief" },
    { role: "user", content: "weather in Paris?" }
  ],
  tools: [{
    type: "function",
    function: {
      name: "get_weather",
      description: "current weather",
      parameters: { type: "object", properties: { city: { type: "string" } } }
    }
  }]
}

const textOf = (chunks: ReadonlyArray<ChatCompletionChunk>): string =>
  chunks.flatMap((c) => c.choices.map((choice) => choice.delta.content ?? "")).join("")

const finishReasons = (chunks: ReadonlyArray<ChatCompletionChunk>): ReadonlyArray<string> =>
  chunks.flatMap((c) =>
    c.choices.flatMap((choice) => (typeof choice.finish_reason === "string" ? [choice.finish_reason] : []))
  )

describe("gemini_generate_content URLs and bodies", () => {
  it("puts the model and the method in the path; base_url is the API root", () => {
    const cases: ReadonlyArray<readonly [string, string]> = [
      ["https://generativelanguage.googleapis.com/v1beta", "https://generativelanguage.googleapis.com/v1beta"],
      ["https://generativelanguage.googleapis.com/v1beta/", "https://generativelanguage.googleapis.com/v1beta"],
      ["https://generativelanguage.googleapis.com", "https://generativelanguage.googleapis.com/v1beta"],
      ["https://generativelanguage.googleapis.com/v1beta/models", "https://generativelanguage.googleapis.com/v1beta"],
      [" http://127.0.0.1:9000/gemini/v1 ", "http://127.0.0.1:9000/gemini/v1"]
    ]
    for (const [base, expected] of cases) assert.strictEqual(apiRoot(base), expected, base)
    const root = "https://generativelanguage.googleapis.com/v1beta"
    assert.strictEqual(
      modelUrl(root, "gemini-2.5-flash", "generateContent"),
      `${root}/models/gemini-2.5-flash:generateContent`
    )
    assert.strictEqual(
      modelUrl(root, "models/gemini-2.5-flash", "streamGenerateContent"),
      `${root}/models/gemini-2.5-flash:streamGenerateContent?alt=sse`
    )
    assert.strictEqual(modelUrl(root, "a/b c", "countTokens"), `${root}/models/a%2Fb%20c:countTokens`)
  })

  it("adds extra_body keys the body lacks (one level into objects), puts system_prompt first in systemInstruction, drops model and stream", () => {
    const t: Target = {
      ...geminiTarget("g", { extraBody: { safetySettings: [], contents: ["ignored"] } }),
      systemPrompt: "P"
    }
    const body = { model: "m", stream: true, contents: [], systemInstruction: { parts: [{ text: "caller" }] } }
    const snapshot = structuredClone(body)
    assert.deepStrictEqual(prepareBody(t, body), {
      contents: [],
      safetySettings: [],
      systemInstruction: { parts: [{ text: "P" }, { text: "caller" }] }
    })
    assert.deepStrictEqual(prepareBody(t, { contents: [] })["systemInstruction"], { parts: [{ text: "P" }] })
    const tuned = geminiTarget("g", { extraBody: { generationConfig: { temperature: 0, maxOutputTokens: 9 } } })
    assert.deepStrictEqual(
      prepareBody(tuned, {
        contents: [],
        generationConfig: { maxOutputTokens: 100, responseMimeType: "application/json" }
      })[
        "generationConfig"
      ],
      { maxOutputTokens: 100, responseMimeType: "application/json", temperature: 0 }
    )
    assert.deepStrictEqual(body, snapshot)
  })
})

describe("gemini_generate_content buffered calls", () => {
  it.effect("a chat request goes out as generateContent with x-goog-api-key; the answer comes back as a completion", () =>
    Effect.gen(function*() {
      const fake = yield* makeFake({
        "g.test": [Step.ok(answer([{ text: "Sunny." }]))]
      })
      const completion = yield* fake.client.complete({
        target: geminiTarget("g"),
        body: chatBody,
        headers: { authorization: "Bearer caller", "x-goog-api-key": "caller-key", "x-trace": "t" }
      })
      const [seen] = yield* fake.requests
      assert.strictEqual(seen?.url, "https://g.test/v1beta/models/g-model:generateContent")
      assert.strictEqual(seen?.headers["x-goog-api-key"], apiKey)
      assert.isUndefined(seen?.headers["authorization"])
      assert.strictEqual(seen?.headers["x-trace"], "t")
      assert.notInclude(seen?.url ?? "", "key=")
      const body = record(seen?.body)
      assert.isUndefined(body["model"])
      assert.deepStrictEqual(body["systemInstruction"], { parts: [{ text: "be brief" }] })
      assert.deepStrictEqual(body["contents"], [{ role: "user", parts: [{ text: "weather in Paris?" }] }])
      assert.deepStrictEqual(body["generationConfig"], { temperature: 0.5, maxOutputTokens: 64 })
      const declarations = array(record(array(body["tools"])[0])["functionDeclarations"])
      assert.strictEqual(record(declarations[0])["name"], "get_weather")

      assert.strictEqual(completion.choices[0]?.message.content, "Sunny.")
      assert.strictEqual(completion.choices[0]?.finish_reason, "stop")
      assert.strictEqual(completion.model, "gemini-2.5-flash")
      assert.strictEqual(completion.usage?.prompt_tokens, 40)
      assert.strictEqual(completion.usage?.prompt_tokens_details?.cached_tokens, 30)
      assert.strictEqual(completion.usage?.completion_tokens_details?.reasoning_tokens, 7)
    }))

  it.effect("function calls come back with ids; a signed call's thoughtSignature survives a Chat round trip", () =>
    Effect.gen(function*() {
      const fake = yield* makeFake({
        "g.test": [
          Step.ok(answer([
            { functionCall: { name: "get_weather", args: { city: "Paris" } }, thoughtSignature: "SIG-1" },
            { functionCall: { id: "own-id", name: "get_weather", args: { city: "Lyon" } } }
          ])),
          Step.ok(answer([{ text: "Sunny in both." }]))
        ]
      })
      const first = yield* fake.client.complete({ target: geminiTarget("g"), body: chatBody, headers: {} })
      const message = first.choices[0]?.message
      assert.strictEqual(first.choices[0]?.finish_reason, "tool_calls")
      const calls = message?.tool_calls ?? []
      assert.deepStrictEqual(calls.map((c) => c.id), ["gemini_call_resp-g1_0", "own-id"])
      assert.deepStrictEqual(
        calls.map((c) => (c.type === "function" ? c.function.arguments : "")),
        ["{\"city\":\"Paris\"}", "{\"city\":\"Lyon\"}"]
      )

      // the Chat client sends the assistant turn back as it got it, with the tools' results
      yield* fake.client.complete({
        target: geminiTarget("g"),
        body: {
          ...chatBody,
          messages: [
            ...chatBody.messages,
            message,
            { role: "tool", tool_call_id: "gemini_call_resp-g1_0", content: "18C" },
            { role: "tool", tool_call_id: "own-id", content: "20C" }
          ]
        },
        headers: {}
      })
      const [, second] = yield* fake.requests
      const contents = array(record(second?.body)["contents"])
      assert.deepStrictEqual(contents.slice(1), [
        {
          role: "model",
          parts: [
            {
              functionCall: { id: "gemini_call_resp-g1_0", name: "get_weather", args: { city: "Paris" } },
              thoughtSignature: "SIG-1"
            },
            { functionCall: { id: "own-id", name: "get_weather", args: { city: "Lyon" } } }
          ]
        },
        {
          role: "user",
          parts: [
            { functionResponse: { id: "gemini_call_resp-g1_0", name: "get_weather", response: { output: "18C" } } },
            { functionResponse: { id: "own-id", name: "get_weather", response: { output: "20C" } } }
          ]
        }
      ])
    }))

  it.effect("a blocked prompt or a SAFETY finish is the documented refusal (content_filter)", () =>
    Effect.gen(function*() {
      const fake = yield* makeFake({
        "g.test": [
          Step.ok({ promptFeedback: { blockReason: "SAFETY" }, usageMetadata: { promptTokenCount: 3 } }),
          Step.ok({ candidates: [{ finishReason: "SAFETY", index: 0 }] })
        ]
      })
      for (let i = 0; i < 2; i++) {
        const completion = yield* fake.client.complete({ target: geminiTarget("g"), body: chatBody, headers: {} })
        assert.strictEqual(completion.choices[0]?.finish_reason, "content_filter")
        assert.strictEqual(completion.choices[0]?.message.content ?? "", "")
      }
    }))

  it.effect("Gemini's error envelope becomes UpstreamStatus with its status name and message, redacted; 429 and 503 are retried", () =>
    Effect.gen(function*() {
      const envelope = (code: number, status: string, message: string) => ({ error: { code, message, status } })
      const fake = yield* makeFake({
        "g.test": [
          Step.status(503, envelope(503, "UNAVAILABLE", "overloaded")),
          Step.status(429, envelope(429, "RESOURCE_EXHAUSTED", `quota for key ${apiKey} exhausted`))
        ]
      })
      const fiber = yield* Effect.fork(Effect.flip(
        fake.client.complete({ target: geminiTarget("g", { maxRetries: 1 }), body: chatBody, headers: {} })
      ))
      yield* TestClock.adjust("5 seconds")
      const failure = yield* Fiber.join(fiber)
      assert.strictEqual((yield* fake.requests).length, 2)
      assert.strictEqual(failure._tag, "UpstreamStatus")
      if (failure._tag !== "UpstreamStatus") return
      assert.strictEqual(failure.status, 429)
      assert.strictEqual(failure.upstreamCode, "RESOURCE_EXHAUSTED")
      assert.strictEqual(failure.upstreamMessage, "quota for key [REDACTED] exhausted")
      assert.notInclude(JSON.stringify(failure), apiKey)
    }))

  it.effect("a 429's RetryInfo retryDelay is honoured as Retry-After is (capped at 60 s)", () =>
    Effect.gen(function*() {
      const limited = (delay: string) =>
        Step.status(429, {
          error: {
            code: 429,
            message: "quota",
            status: "RESOURCE_EXHAUSTED",
            details: [{ "@type": "type.googleapis.com/google.rpc.QuotaFailure" }, {
              "@type": "type.googleapis.com/google.rpc.RetryInfo",
              retryDelay: delay
            }]
          }
        })
      const fake = yield* makeFake({ "g.test": [limited("7s"), limited("900s")] })
      const fiber = yield* Effect.fork(Effect.flip(
        fake.client.complete({ target: geminiTarget("g", { maxRetries: 1 }), body: chatBody, headers: {} })
      ))
      yield* TestClock.adjust("6999 millis")
      assert.strictEqual((yield* fake.requests).length, 1)
      yield* TestClock.adjust("1 millis")
      const failure = yield* Fiber.join(fiber)
      const [first, second] = yield* fake.requests
      assert.strictEqual((second?.at ?? 0) - (first?.at ?? 0), 7000)
      assert.strictEqual(failure._tag === "UpstreamStatus" ? failure.retryAfterMs : undefined, 60_000)
    }))

  it.effect("a prompt over the context window is flagged; a 400 is not retried", () =>
    Effect.gen(function*() {
      const fake = yield* makeFake({
        "g.test": [
          Step.status(400, {
            error: {
              code: 400,
              message: "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).",
              status: "INVALID_ARGUMENT"
            }
          })
        ]
      })
      const failure = yield* Effect.flip(
        fake.client.complete({ target: geminiTarget("g"), body: chatBody, headers: {} })
      )
      assert.strictEqual((yield* fake.requests).length, 1)
      assert.strictEqual(failure._tag, "UpstreamStatus")
      if (failure._tag === "UpstreamStatus") {
        assert.isTrue(failure.contextWindowExceeded)
        assert.strictEqual(failure.upstreamCode, "INVALID_ARGUMENT")
      }
    }))

  it.effect("an in-band error object is a 502 UpstreamStatus; a body that is not a Gemini answer is InvalidResponse", () =>
    Effect.gen(function*() {
      const fake = yield* makeFake({
        "g.test": [
          Step.ok({ error: { code: 500, message: "internal", status: "INTERNAL", details: [{ secret: apiKey }] } }),
          Step.ok({ unrelated: true }),
          Step.text(200, "<html>gateway</html>")
        ]
      })
      const t = geminiTarget("g", { maxRetries: 0 })
      const inBand = yield* Effect.flip(fake.client.complete({ target: t, body: chatBody, headers: {} }))
      assert.strictEqual(inBand._tag, "UpstreamStatus")
      if (inBand._tag === "UpstreamStatus") {
        assert.strictEqual(inBand.status, 502)
        assert.strictEqual(inBand.upstreamMessage, "internal")
        assert.strictEqual(inBand.upstreamCode, "INTERNAL")
      }
      assert.notInclude(JSON.stringify(inBand), apiKey)
      for (let i = 0; i < 2; i++) {
        const invalid = yield* Effect.flip(fake.client.complete({ target: t, body: chatBody, headers: {} }))
        assert.strictEqual(invalid._tag, "InvalidResponse")
      }
    }))

  it.effect("the caller's native Gemini body is sent as it came (extra_body added) and the answer kept as sent", () =>
    Effect.gen(function*() {
      const fake = yield* makeFake({ "g.test": [Step.ok(answer([{ text: "hi" }], { vendorField: 1 }))] })
      const native = {
        contents: [{ role: "user", parts: [{ text: "hi" }] }],
        generationConfig: { thinkingConfig: { thinkingBudget: 128 } },
        safetySettings: [{ category: "HARM_CATEGORY_HATE_SPEECH", threshold: "BLOCK_NONE" }]
      }
      const answered = yield* fake.client.answer({
        target: geminiTarget("g"),
        body: { model: "route", messages: [{ role: "user", content: "routing view" }] },
        native: { format: "gemini_generate_content", body: native },
        headers: {}
      })
      const [seen] = yield* fake.requests
      assert.deepStrictEqual(seen?.body, native)
      assert.strictEqual(answered.completion.choices[0]?.message.content, "hi")
      assert.strictEqual(Option.getOrThrow(answered.native).body["vendorField"], 1)
    }))

  it.effect("a chat request Gemini cannot express fails with TranslationError before any HTTP request", () =>
    Effect.gen(function*() {
      const fake = yield* makeFake({ "g.test": [Step.ok(answer([{ text: "x" }]))] })
      const failure = yield* Effect.flip(fake.client.complete({
        target: geminiTarget("g"),
        body: { model: "r", messages: [{ role: "tool", tool_call_id: "nowhere", content: "orphan" }] },
        headers: {}
      }))
      assert.strictEqual(failure._tag, "TranslationError")
      assert.strictEqual((yield* fake.requests).length, 0)
    }))
})

describe("gemini_generate_content streamed calls", () => {
  const events = [
    { candidates: [{ content: { role: "model", parts: [{ text: "thinking…", thought: true }] } }], responseId: "r1" },
    { candidates: [{ content: { role: "model", parts: [{ text: "Sun" }] } }], responseId: "r1" },
    { candidates: [{ content: { role: "model", parts: [{ text: "ny." }] } }], responseId: "r1" },
    {
      candidates: [{
        content: {
          role: "model",
          parts: [{ functionCall: { name: "get_weather", args: { city: "Paris" } }, thoughtSignature: "SIG" }]
        },
        finishReason: "STOP"
      }],
      usageMetadata: { promptTokenCount: 9, candidatesTokenCount: 4, thoughtsTokenCount: 2, totalTokenCount: 15 },
      modelVersion: "gemini-2.5-flash",
      responseId: "r1"
    }
  ]

  it.effect("asks streamGenerateContent?alt=sse and translates each event into chat chunks", () =>
    Effect.gen(function*() {
      const fake = yield* makeFake({ "g.test": [Step.sse(events.map(sseData))] })
      const stream = yield* fake.client.stream({ target: geminiTarget("g"), body: chatBody, headers: {} })
      const chunks = Chunk.toReadonlyArray(yield* Stream.runCollect(stream))
      const [seen] = yield* fake.requests
      assert.strictEqual(seen?.url, "https://g.test/v1beta/models/g-model:streamGenerateContent?alt=sse")
      assert.strictEqual(seen?.headers["accept"], "text/event-stream")
      assert.isUndefined(record(seen?.body)["stream"])
      assert.strictEqual(textOf(chunks), "Sunny.")
      assert.strictEqual(
        chunks.flatMap((c) => c.choices.map((choice) => choice.delta.reasoning_content ?? "")).join(""),
        "thinking…"
      )
      const calls = chunks.flatMap((c) => c.choices.flatMap((choice) => choice.delta.tool_calls ?? []))
      assert.deepStrictEqual(calls.map((call) => [call.id, call.function?.name, call.function?.arguments]), [
        ["gemini_call_r1_0", "get_weather", "{\"city\":\"Paris\"}"]
      ])
      assert.deepStrictEqual(finishReasons(chunks), ["tool_calls"])
      const usage = chunks.at(-1)?.usage
      assert.strictEqual(usage?.prompt_tokens, 9)
      assert.strictEqual(usage?.completion_tokens_details?.reasoning_tokens, 2)
    }))

  it.effect("a native replay keeps every Gemini event as sent", () =>
    Effect.gen(function*() {
      const fake = yield* makeFake({ "g.test": [Step.sse(events.map(sseData))] })
      const pieces = yield* fake.client.answerStream({
        target: geminiTarget("g"),
        body: { model: "r", messages: [{ role: "user", content: "hi" }] },
        native: { format: "gemini_generate_content", body: { contents: [{ parts: [{ text: "hi" }] }] } },
        headers: {}
      })
      const kept = Chunk.toReadonlyArray(yield* Stream.runCollect(pieces)).flatMap((piece) =>
        Option.toArray(piece.native)
      )
      assert.deepStrictEqual(kept.map((e) => e.data), events)
      assert.deepStrictEqual(kept.map((e) => e.text), events.map((e) => JSON.stringify(e)))
    }))

  it.effect("a stream cut before its finish is closed; an in-band error fails it with a 502; garbage is InvalidResponse", () =>
    Effect.gen(function*() {
      const cut = yield* makeFake({ "g.test": [Step.sse(events.slice(0, 2).map(sseData))] })
      const closed = Chunk.toReadonlyArray(
        yield* Stream.runCollect(yield* cut.client.stream({ target: geminiTarget("g"), body: chatBody, headers: {} }))
      )
      assert.deepStrictEqual(finishReasons(closed), ["stop"])

      const failing = yield* makeFake({
        "g.test": [
          Step.sse([
            sseData(events[1]),
            sseData({ error: { code: 503, message: `overloaded ${apiKey}`, status: "UNAVAILABLE" } })
          ]),
          Step.sse([sseData(events[1]), "data: {not json\n\n"])
        ]
      })
      const inBand = yield* Effect.flip(
        Stream.runDrain(yield* failing.client.stream({ target: geminiTarget("g"), body: chatBody, headers: {} }))
      )
      assert.strictEqual(inBand._tag, "UpstreamStatus")
      if (inBand._tag === "UpstreamStatus") {
        assert.strictEqual(inBand.status, 502)
        assert.strictEqual(inBand.upstreamMessage, "overloaded [REDACTED]")
        assert.strictEqual(inBand.upstreamCode, "UNAVAILABLE")
      }
      const garbled = yield* Effect.flip(
        Stream.runDrain(yield* failing.client.stream({ target: geminiTarget("g"), body: chatBody, headers: {} }))
      )
      assert.strictEqual(garbled._tag, "InvalidResponse")
    }))
})
