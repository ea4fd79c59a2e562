import { assert, describe, it } from "@effect/vitest"
import type { ChatCompletionChunk } from "@switchyard-ts/protocol/OpenAiChat"
import * as Effect from "effect/Effect"
import * as Predicate from "effect/Predicate"
import * as Stream from "effect/Stream"
import { mergeBetas, withoutOauthBetas } from "../src/internal/formats/anthropicBeta.js"
import { countTokensUrl, messagesUrl, prepareAnthropicBody } from "../src/internal/formats/anthropicMessages.js"
import { prepareHeaders } from "../src/internal/headers.js"
import type { Target } from "../src/Target.js"
import { apiKey, makeFake, request, Step, target } from "./support.js"

/** A target of an `anthropic_messages` client on host `<name>.test`. */
const anthropicTarget = (name: string, options: Parameters<typeof target>[1] = {}): Target => {
  const base = target(name, { baseUrl: `https://${name}.test`, ...options })
  return { ...base, client: { ...base.client, format: "anthropic_messages" } }
}

const message = (extra: Record<string, unknown> = {}) => ({
  id: "msg_01",
  type: "message",
  role: "assistant",
  model: "claude-upstream",
  content: [{ type: "text", text: "hello from claude" }],
  stop_reason: "end_turn",
  stop_sequence: null,
  usage: { input_tokens: 10, output_tokens: 4, cache_read_input_tokens: 30, cache_creation_input_tokens: 5 },
  ...extra
})

const event = (value: Record<string, unknown>): string =>
  `event: ${String(value["type"])}\ndata: ${JSON.stringify(value)}\n\n`

const streamEvents = (): ReadonlyArray<string> => [
  event({
    type: "message_start",
    message: message({ content: [], stop_reason: null, usage: { input_tokens: 10, output_tokens: 1 } })
  }),
  event({ type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }),
  event({ type: "ping" }),
  event({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "Let me " } }),
  event({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "check." } }),
  event({ type: "content_block_stop", index: 0 }),
  event({
    type: "content_block_start",
    index: 1,
    content_block: { type: "tool_use", id: "toolu_1", name: "read_file", input: {} }
  }),
  event({ type: "content_block_delta", index: 1, delta: { type: "input_json_delta", partial_json: "{\"path\":" } }),
  event({ type: "content_block_delta", index: 1, delta: { type: "input_json_delta", partial_json: "\"a.ts\"}" } }),
  event({ type: "content_block_stop", index: 1 }),
  event({
    type: "message_delta",
    delta: { stop_reason: "tool_use", stop_sequence: null },
    usage: { output_tokens: 12 }
  }),
  event({ type: "message_stop" })
]

const textOf = (chunks: ReadonlyArray<ChatCompletionChunk>): string =>
  chunks.flatMap((c) => c.choices.map((choice) => choice.delta.content ?? "")).join("")

const argumentsOf = (chunks: ReadonlyArray<ChatCompletionChunk>): string =>
  chunks.flatMap((c) =>
    c.choices.flatMap((choice) => (choice.delta.tool_calls ?? []).map((t) => t.function?.arguments ?? ""))
  ).join("")

const finishReasons = (chunks: ReadonlyArray<ChatCompletionChunk>): ReadonlyArray<string> =>
  chunks.flatMap((c) =>
    c.choices.flatMap((choice) => (typeof choice.finish_reason === "string" ? [choice.finish_reason] : []))
  )

const record = (value: unknown): Record<string, unknown> => (Predicate.isRecord(value) ? value : {})

describe("anthropic_messages URLs", () => {
  it("builds the Messages URL from base_url variants", () => {
    const cases: ReadonlyArray<readonly [string, string]> = [
      ["https://api.anthropic.com", "https://api.anthropic.com/v1/messages"],
      ["https://api.anthropic.com/", "https://api.anthropic.com/v1/messages"],
      ["https://api.anthropic.com/v1", "https://api.anthropic.com/v1/messages"],
      ["https://api.anthropic.com/v1/", "https://api.anthropic.com/v1/messages"],
      ["https://api.anthropic.com/v1/messages", "https://api.anthropic.com/v1/messages"],
      [" http://127.0.0.1:9000/proxy ", "http://127.0.0.1:9000/proxy/v1/messages"]
    ]
    for (const [base, expected] of cases) assert.strictEqual(messagesUrl(base), expected, base)
    assert.strictEqual(
      countTokensUrl("https://api.anthropic.com/v1"),
      "https://api.anthropic.com/v1/messages/count_tokens"
    )
  })
})

describe("anthropic_messages body preparation", () => {
  const t = anthropicTarget("a", { extraBody: { reasoning_effort: "high", top_k: 3, max_tokens: 1 } })

  it("rewrites model, strips OpenAI-only fields before extra_body, drops unsigned thinking, marks the last block", () => {
    const body = {
      model: "route",
      max_tokens: 100,
      reasoning_effort: "low",
      context_management: { edits: [] },
      messages: [
        { role: "user", content: "first" },
        {
          role: "assistant",
          content: [
            { type: "thinking", thinking: "unsigned", signature: "" },
            { type: "thinking", thinking: "signed", signature: "sig" }
          ]
        },
        { role: "assistant", content: [{ type: "thinking", thinking: "only unsigned" }] },
        { role: "user", content: "last question" }
      ]
    }
    const snapshot = structuredClone(body)
    const out = prepareAnthropicBody(t, body, false)
    assert.deepStrictEqual(out, {
      model: "a-model",
      max_tokens: 100,
      // stripped from the request, then re-added on purpose by the target's extra_body
      reasoning_effort: "high",
      top_k: 3,
      messages: [
        { role: "user", content: "first" },
        { role: "assistant", content: [{ type: "thinking", thinking: "signed", signature: "sig" }] },
        { role: "assistant", content: "" },
        { role: "user", content: [{ type: "text", text: "last question", cache_control: { type: "ephemeral" } }] }
      ]
    })
    assert.deepStrictEqual(body, snapshot)
  })

  it("adds no cache marker when the body already has four, and sets stream only when streaming", () => {
    const marked = { type: "text", text: "x", cache_control: { type: "ephemeral" } }
    const body = {
      model: "route",
      max_tokens: 10,
      stream: false,
      system: [marked, marked],
      messages: [{ role: "user", content: [marked, marked, { type: "text", text: "unmarked" }] }]
    }
    const buffered = prepareAnthropicBody(anthropicTarget("a"), body, false)
    assert.deepStrictEqual(buffered["messages"], body.messages)
    assert.isFalse("stream" in buffered)
    const streamed = prepareAnthropicBody(anthropicTarget("a"), { ...body, system: [marked] }, true)
    assert.strictEqual(streamed["stream"], true)
    assert.deepStrictEqual(streamed["messages"], [{
      role: "user",
      content: [marked, marked, { type: "text", text: "unmarked", cache_control: { type: "ephemeral" } }]
    }])
  })

  it("counts the markers of a body nesting 10^5 levels (a tool input) without recursion", () => {
    const marked = { type: "text", text: "x", cache_control: { type: "ephemeral" } }
    for (const depth of [511, 512, 513, 10_000, 100_000]) {
      // the markers lie below the deep input too: all four must be found for the count to hold the mark back
      const input: unknown = JSON.parse(`${"{\"k\":[".repeat(depth)}${JSON.stringify(marked)}${"]}".repeat(depth)}`)
      const body = {
        model: "route",
        max_tokens: 10,
        system: [marked, marked],
        messages: [
          { role: "assistant", content: [{ type: "tool_use", id: "t", name: "f", input }] },
          { role: "user", content: [marked, { type: "text", text: "unmarked" }] }
        ]
      }
      const out = prepareAnthropicBody(anthropicTarget("a"), body, false)
      assert.deepStrictEqual(out["messages"], body.messages, String(depth))
      const fewer = prepareAnthropicBody(anthropicTarget("a"), { ...body, system: [marked] }, false)
      assert.notDeepEqual(fewer["messages"], body.messages, String(depth))
    }
  })
})

describe("UpstreamClient with an anthropic_messages target", () => {
  it.effect("translates a chat request, sends x-api-key and anthropic-version, answers a chat completion", () =>
    Effect.gen(function*() {
      const fake = yield* makeFake({ "a.test": [Step.ok(message())] })
      const body = {
        model: "route",
        messages: [
          { role: "system", content: "Be brief." },
          { role: "user", content: "hi" }
        ],
        max_completion_tokens: 64,
        temperature: 0.2
      }
      const completion = yield* fake.client.complete({
        target: anthropicTarget("a"),
        body,
        headers: {
          authorization: "Bearer caller",
          "x-api-key": "caller-key",
          "anthropic-version": "1999-01-01",
          "x-trace": "t"
        }
      })
      const [seen] = yield* fake.requests
      assert.strictEqual(seen?.url, "https://a.test/v1/messages")
      assert.strictEqual(seen?.headers["x-api-key"], apiKey)
      assert.strictEqual(seen?.headers["anthropic-version"], "2023-06-01")
      assert.isUndefined(seen?.headers["authorization"])
      assert.strictEqual(seen?.headers["x-trace"], "t")
      const sent = record(seen?.body)
      assert.strictEqual(sent["model"], "a-model")
      assert.strictEqual(sent["max_tokens"], 64)
      assert.strictEqual(sent["temperature"], 0.2)
      assert.strictEqual(sent["system"], "Be brief.")
      assert.isFalse("max_completion_tokens" in sent)
      assert.isFalse("stream" in sent)
      assert.deepStrictEqual(sent["messages"], [
        { role: "user", content: [{ type: "text", text: "hi", cache_control: { type: "ephemeral" } }] }
      ])

      assert.strictEqual(completion.choices[0]?.message.content, "hello from claude")
      assert.strictEqual(completion.choices[0]?.finish_reason, "stop")
      assert.strictEqual(completion.usage?.prompt_tokens, 45)
      assert.strictEqual(completion.usage?.completion_tokens, 4)
      assert.strictEqual(completion.usage?.prompt_tokens_details?.cached_tokens, 30)
      assert.strictEqual(completion.usage?.prompt_tokens_details?.cache_creation_tokens, 5)
    }))

  it.effect("sends the caller's native Messages body untranslated when it has one", () =>
    Effect.gen(function*() {
      const fake = yield* makeFake({ "a.test": [Step.ok(message())] })
      const native = {
        model: "route",
        max_tokens: 50,
        thinking: { type: "enabled", budget_tokens: 1024 },
        messages: [
          { role: "user", content: [{ type: "text", text: "q", cache_control: { type: "ephemeral" } }] },
          {
            role: "assistant",
            content: [{ type: "thinking", thinking: "hmm", signature: "s1" }, { type: "text", text: "a" }]
          },
          { role: "user", content: "next" }
        ]
      }
      yield* fake.client.complete({
        target: anthropicTarget("a"),
        body: { model: "route", messages: [{ role: "user", content: "translated, not sent" }] },
        native: { format: "anthropic_messages", body: native },
        headers: {}
      })
      const [seen] = yield* fake.requests
      assert.deepStrictEqual(seen?.body, {
        ...native,
        model: "a-model",
        messages: [
          native.messages[0],
          native.messages[1],
          { role: "user", content: [{ type: "text", text: "next", cache_control: { type: "ephemeral" } }] }
        ]
      })
    }))

  it("the caller's oauth-* betas are dropped on native replay (its OAuth credential never is forwarded)", () => {
    assert.strictEqual(withoutOauthBetas("oauth-2025-04-20, claude-code-20250219,OAuth-x"), " claude-code-20250219")
    assert.isUndefined(withoutOauthBetas(undefined))
    const client = anthropicTarget("a").client
    const headers = prepareHeaders(client, { "anthropic-beta": "oauth-2025-04-20,effort-2025-11-24" }, {
      nativeReplay: true
    })
    assert.strictEqual(headers["anthropic-beta"], "effort-2025-11-24")
    const onlyOauth = prepareHeaders(client, { "anthropic-beta": "oauth-2025-04-20" }, { nativeReplay: true })
    assert.isUndefined(onlyOauth["anthropic-beta"])
  })

  it("mergeBetas: comma lists trimmed, empty items dropped, first occurrence kept in order", () => {
    assert.strictEqual(mergeBetas([" a , b,,", "c, a ,d "]), "a,b,c,d")
    assert.strictEqual(mergeBetas([undefined, "x"]), "x")
    assert.strictEqual(mergeBetas(["a", undefined]), "a")
    assert.isUndefined(mergeBetas([undefined, " , "]))
  })

  describe("anthropic-beta", () => {
    const betaTarget = anthropicTarget("a", {
      extraHeaders: { "Anthropic-Beta": "context-1m-2025-08-07, fine-grained-tool-streaming-2025-05-14" }
    })
    const callerHeaders = {
      "anthropic-beta": "claude-code-20250219, context-1m-2025-08-07,interleaved-thinking-2025-05-14",
      "x-trace": "t"
    }
    const native = { model: "route", max_tokens: 5, messages: [{ role: "user", content: "hi" }] }

    it.effect("a replayed native body keeps the caller's betas merged with extra_headers' (buffered, streamed, token counting)", () =>
      Effect.gen(function*() {
        const fake = yield* makeFake({
          "a.test": [Step.ok(message()), Step.sse(streamEvents()), Step.ok({ input_tokens: 3 })]
        })
        const options = {
          target: betaTarget,
          body: { model: "route", messages: [{ role: "user", content: "hi" }] },
          native: { format: "anthropic_messages" as const, body: native },
          headers: callerHeaders
        }
        yield* fake.client.complete(options)
        yield* Stream.runDrain(yield* fake.client.stream(options))
        yield* fake.client.countTokens({ ...options, body: { model: "route", messages: native.messages } })
        const seen = yield* fake.requests
        assert.lengthOf(seen, 3)
        for (const request of seen) {
          assert.strictEqual(
            request.headers["anthropic-beta"],
            "claude-code-20250219,context-1m-2025-08-07,interleaved-thinking-2025-05-14,fine-grained-tool-streaming-2025-05-14"
          )
          assert.strictEqual(request.headers["x-trace"], "t")
        }
      }))

    it.effect("a translated body (chat caller) drops the caller's betas: extra_headers alone set the header", () =>
      Effect.gen(function*() {
        const fake = yield* makeFake({ "a.test": [Step.ok(message()), Step.ok(message())] })
        const body = { model: "route", messages: [{ role: "user", content: "hi" }] }
        yield* fake.client.complete({ target: betaTarget, body, headers: callerHeaders })
        yield* fake.client.complete({ target: anthropicTarget("a"), body, headers: callerHeaders })
        const [withExtra, without] = yield* fake.requests
        assert.strictEqual(
          withExtra?.headers["anthropic-beta"],
          "context-1m-2025-08-07, fine-grained-tool-streaming-2025-05-14"
        )
        assert.isUndefined(without?.headers["anthropic-beta"])
      }))

    it.effect("an OpenAI target never gets the caller's betas, native body or not", () =>
      Effect.gen(function*() {
        const fake = yield* makeFake({ "a.test": [Step.ok()] })
        yield* fake.client.complete({
          target: target("a"),
          body: request,
          native: { format: "anthropic_messages", body: native },
          headers: callerHeaders
        })
        const [seen] = yield* fake.requests
        assert.isUndefined(seen?.headers["anthropic-beta"])
      }))
  })

  it.effect("an OpenAI target ignores the native body and gets the chat request", () =>
    Effect.gen(function*() {
      const fake = yield* makeFake({ "a.test": [Step.ok()] })
      yield* fake.client.complete({
        target: target("a"),
        body: request,
        native: { format: "anthropic_messages", body: { model: "route", max_tokens: 1, messages: [] } },
        headers: {}
      })
      const [seen] = yield* fake.requests
      assert.deepStrictEqual(seen?.body, { ...request, model: "a-model" })
      assert.strictEqual(seen?.headers["authorization"], `Bearer ${apiKey}`)
      assert.isUndefined(seen?.headers["anthropic-version"])
    }))

  it.effect("a request the Messages API cannot express fails with TranslationError before any HTTP request", () =>
    Effect.gen(function*() {
      const fake = yield* makeFake({ "a.test": [Step.ok(message())] })
      const body = {
        model: "route",
        messages: [{ role: "user", content: [{ type: "input_audio", input_audio: { data: "AAAA", format: "wav" } }] }]
      }
      const error = yield* Effect.flip(fake.client.complete({ target: anthropicTarget("a"), body, headers: {} }))
      assert.strictEqual(error._tag, "TranslationError")
      assert.lengthOf(yield* fake.requests, 0)
    }))

  it.effect("Anthropic error envelopes become UpstreamStatus with their message; prompt too long is a context-window 400", () =>
    Effect.gen(function*() {
      const tooLong = {
        type: "error",
        error: { type: "invalid_request_error", message: "prompt is too long: 210000 tokens > 200000 maximum" }
      }
      const fake = yield* makeFake({
        "a.test": [Step.status(400, tooLong)],
        "b.test": [Step.status(529, { type: "error", error: { type: "overloaded_error", message: "Overloaded" } })]
      })
      const first = yield* Effect.flip(
        fake.client.complete({ target: anthropicTarget("a"), body: request, headers: {} })
      )
      assert.strictEqual(first._tag, "UpstreamStatus")
      if (first._tag === "UpstreamStatus") {
        assert.strictEqual(first.status, 400)
        assert.isTrue(first.contextWindowExceeded)
        assert.strictEqual(first.upstreamCode, "invalid_request_error")
      }
      const second = yield* Effect.flip(
        fake.client.complete({ target: anthropicTarget("b", { maxRetries: 0 }), body: request, headers: {} })
      )
      assert.strictEqual(second._tag, "UpstreamStatus")
      if (second._tag === "UpstreamStatus") {
        assert.strictEqual(second.status, 529)
        assert.strictEqual(second.upstreamMessage, "Overloaded")
        assert.isUndefined(second.contextWindowExceeded)
      }
    }))

  it.effect("the same 400 phrase from an OpenAI target is not a context-window failure", () =>
    Effect.gen(function*() {
      const fake = yield* makeFake({ "a.test": [Step.status(400, { error: { message: "prompt is too long" } })] })
      const error = yield* Effect.flip(fake.client.complete({ target: target("a"), body: request, headers: {} }))
      assert.strictEqual(error._tag, "UpstreamStatus")
      if (error._tag === "UpstreamStatus") assert.isUndefined(error.contextWindowExceeded)
    }))

  it.effect("streams Messages events as chat chunks: text, tool call arguments, finish reason and usage", () =>
    Effect.gen(function*() {
      const fake = yield* makeFake({ "a.test": [Step.sse(streamEvents())] })
      const stream = yield* fake.client.stream({ target: anthropicTarget("a"), body: request, headers: {} })
      const chunks = Array.from(yield* Stream.runCollect(stream))
      const [seen] = yield* fake.requests
      assert.strictEqual(record(seen?.body)["stream"], true)
      assert.isFalse("stream_options" in record(seen?.body))
      assert.strictEqual(seen?.headers["accept"], "text/event-stream")
      assert.strictEqual(textOf(chunks), "Let me check.")
      assert.strictEqual(argumentsOf(chunks), "{\"path\":\"a.ts\"}")
      const call = chunks.flatMap((c) => c.choices.flatMap((choice) => choice.delta.tool_calls ?? [])).find((t) =>
        t.id !== undefined
      )
      assert.strictEqual(call?.id, "toolu_1")
      assert.strictEqual(call?.function?.name, "read_file")
      assert.deepStrictEqual(finishReasons(chunks), ["tool_calls"])
      const usage = chunks.find((c) => c.usage !== undefined && c.usage !== null)?.usage
      assert.strictEqual(usage?.prompt_tokens, 10)
      assert.strictEqual(usage?.completion_tokens, 12)
    }))

  it.effect("stops reading at message_stop", () =>
    Effect.gen(function*() {
      const probe = { cancelled: false }
      const fake = yield* makeFake({ "a.test": [Step.sse(streamEvents(), { stall: true, probe })] })
      const stream = yield* fake.client.stream({ target: anthropicTarget("a"), body: request, headers: {} })
      const chunks = Array.from(yield* Stream.runCollect(stream))
      assert.deepStrictEqual(finishReasons(chunks), ["tool_calls"])
    }))

  it.effect("an in-band error event fails the stream with UpstreamStatus 502 carrying its message", () =>
    Effect.gen(function*() {
      const events = [
        ...streamEvents().slice(0, 4),
        event({ type: "error", error: { type: "overloaded_error", message: "Overloaded" } })
      ]
      const fake = yield* makeFake({ "a.test": [Step.sse(events)] })
      const stream = yield* fake.client.stream({ target: anthropicTarget("a"), body: request, headers: {} })
      const error = yield* Effect.flip(Stream.runDrain(stream))
      assert.strictEqual(error._tag, "UpstreamStatus")
      if (error._tag === "UpstreamStatus") {
        assert.strictEqual(error.status, 502)
        assert.strictEqual(error.upstreamMessage, "Overloaded")
      }
    }))

  it.effect("an event of a type newer than this version is skipped", () =>
    Effect.gen(function*() {
      const events = [...streamEvents()]
      events.splice(3, 0, event({ type: "content_block_annotation", index: 0, note: { kind: "future" } }))
      const fake = yield* makeFake({ "a.test": [Step.sse(events)] })
      const stream = yield* fake.client.stream({ target: anthropicTarget("a"), body: request, headers: {} })
      const chunks = Array.from(yield* Stream.runCollect(stream))
      assert.strictEqual(textOf(chunks), "Let me check.")
      assert.deepStrictEqual(finishReasons(chunks), ["tool_calls"])
    }))

  it.effect("an undecodable event fails the stream with InvalidResponse", () =>
    Effect.gen(function*() {
      const fake = yield* makeFake({ "a.test": [Step.sse([...streamEvents().slice(0, 2), "data: {not json\n\n"])] })
      const stream = yield* fake.client.stream({ target: anthropicTarget("a"), body: request, headers: {} })
      const error = yield* Effect.flip(Stream.runDrain(stream))
      assert.strictEqual(error._tag, "InvalidResponse")
    }))

  it.effect("countTokens posts to …/messages/count_tokens with the target's model and returns the JSON as-is", () =>
    Effect.gen(function*() {
      const fake = yield* makeFake({ "a.test": [Step.ok({ input_tokens: 1234, extra: true })] })
      const counted = yield* fake.client.countTokens({
        target: anthropicTarget("a"),
        body: { model: "route", messages: [{ role: "user", content: "count me" }] },
        headers: {}
      })
      assert.deepStrictEqual(counted, { input_tokens: 1234, extra: true })
      const [seen] = yield* fake.requests
      assert.strictEqual(seen?.url, "https://a.test/v1/messages/count_tokens")
      assert.deepStrictEqual(seen?.body, { model: "a-model", messages: [{ role: "user", content: "count me" }] })
      assert.strictEqual(seen?.headers["x-api-key"], apiKey)
    }))
})
