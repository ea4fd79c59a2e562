import { assert, describe, it } from "@effect/vitest"
import {
  ChatCompletion,
  ChatCompletionChunk,
  ChatCompletionRequest,
  decodeOptions
} from "@switchyard-ts/protocol/OpenAiChat"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"

const decodeRequest = Schema.decodeUnknownEither(ChatCompletionRequest, decodeOptions)
const encodeRequest = Schema.encodeEither(ChatCompletionRequest, decodeOptions)

const fullRequest = {
  model: "auto",
  messages: [
    { role: "system", content: "be brief" },
    { role: "developer", content: [{ type: "text", text: "dev note" }] },
    {
      role: "user",
      content: [
        { type: "text", text: "what is in this image?" },
        { type: "image_url", image_url: { url: "data:image/png;base64,AAAA", detail: "low" } },
        { type: "input_audio", input_audio: { data: "UklGR", format: "wav" } },
        { type: "future_part", payload: { x: 1 } }
      ]
    },
    {
      role: "assistant",
      content: null,
      tool_calls: [{
        id: "call_1",
        type: "function",
        function: { name: "read_file", arguments: "{\"path\":\"a.ts\"}" }
      }]
    },
    { role: "tool", tool_call_id: "call_1", content: "export const a = 1" },
    { role: "user", content: "thanks", name: "alice" }
  ],
  tools: [{
    type: "function",
    function: { name: "read_file", description: "read", parameters: { type: "object" }, strict: true }
  }],
  tool_choice: { type: "function", function: { name: "read_file" } },
  parallel_tool_calls: false,
  response_format: { type: "json_schema", json_schema: { name: "x", schema: { type: "object" }, strict: true } },
  stream: true,
  stream_options: { include_usage: true },
  max_tokens: 100,
  max_completion_tokens: 200,
  temperature: 0.2,
  top_p: 0.9,
  n: 1,
  stop: ["\n\n"],
  presence_penalty: 0,
  frequency_penalty: 0.5,
  logit_bias: { "50256": -100 },
  seed: 7,
  user: "u-1",
  reasoning_effort: "low",
  chat_template_kwargs: { enable_thinking: false },
  vendor_extension: [1, 2, 3]
}

describe("ChatCompletionRequest", () => {
  it("round-trips a request with every role, tool calls, parts and unknown fields untouched", () => {
    const decoded = decodeRequest(fullRequest)
    assert.isTrue(Either.isRight(decoded))
    if (Either.isRight(decoded)) {
      const encoded = encodeRequest(decoded.right)
      assert.deepStrictEqual<unknown>(Either.getOrThrow(encoded), fullRequest)
    }
  })

  it("names the field path of a violation", () => {
    const decoded = decodeRequest({ model: "auto", messages: [{ role: "user", content: 42 }] })
    assert.isTrue(Either.isLeft(decoded))
    if (Either.isLeft(decoded)) {
      assert.include(String(decoded.left.message), "messages")
      assert.include(String(decoded.left.message), "content")
    }
  })

  it("rejects a blank model and a tool message without tool_call_id", () => {
    assert.isTrue(Either.isLeft(decodeRequest({ model: "  ", messages: [] })))
    assert.isTrue(Either.isLeft(decodeRequest({ model: "m", messages: [{ role: "tool", content: "x" }] })))
    assert.isTrue(Either.isLeft(decodeRequest({ model: "m", messages: [{ role: "wizard", content: "x" }] })))
  })
})

describe("responses", () => {
  it("round-trips a buffered completion and a stream chunk, keeping provider fields", () => {
    const completion = {
      id: "chatcmpl-1",
      object: "chat.completion",
      created: 1,
      model: "small-coder",
      system_fingerprint: "fp",
      choices: [{
        index: 0,
        message: { role: "assistant", content: "hi", reasoning_content: "hmm" },
        finish_reason: "stop",
        logprobs: null
      }],
      usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4, prompt_tokens_details: { cached_tokens: 1 } }
    }
    const decoded = Schema.decodeUnknownSync(ChatCompletion, decodeOptions)(completion)
    assert.deepStrictEqual<unknown>(Schema.encodeSync(ChatCompletion, decodeOptions)(decoded), completion)

    const chunk = {
      id: "chatcmpl-1",
      object: "chat.completion.chunk",
      created: 1,
      model: "small-coder",
      choices: [{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: "{" } }] }, finish_reason: null }]
    }
    const decodedChunk = Schema.decodeUnknownSync(ChatCompletionChunk, decodeOptions)(chunk)
    assert.deepStrictEqual<unknown>(Schema.encodeSync(ChatCompletionChunk, decodeOptions)(decodedChunk), chunk)
  })
})

describe("thinking extensions (reasoning_content, thinking_blocks)", () => {
  const decodeCompletion = Schema.decodeUnknownEither(ChatCompletion, decodeOptions)
  const decodeChunk = Schema.decodeUnknownEither(ChatCompletionChunk, decodeOptions)
  const completionWith = (message: object) => ({
    id: "c",
    model: "m",
    choices: [{ index: 0, message: { role: "assistant", content: "x", ...message }, finish_reason: "stop" }]
  })
  const chunkWith = (delta: object) => ({ id: "c", model: "m", choices: [{ index: 0, delta, finish_reason: null }] })

  it("decodes and re-encodes signed, unsigned, redacted, unknown and null entries untouched", () => {
    const thinking = {
      reasoning_content: "a",
      thinking_blocks: [
        { type: "thinking", thinking: "a", signature: "EqQB" },
        { type: "thinking", thinking: "b" },
        { type: "thinking", thinking: "", signature: null, cache_control: { type: "ephemeral" } },
        { type: "redacted_thinking", data: "EmwK" },
        { type: "future_thinking", payload: 1 },
        // a thinking entry of another shape still decodes (as an "other" entry)
        { type: "thinking", signature: "only" }
      ]
    }
    for (
      const value of [completionWith(thinking), completionWith({ reasoning_content: null, thinking_blocks: null })]
    ) {
      const decoded = decodeCompletion(value)
      assert.isTrue(Either.isRight(decoded))
      if (Either.isRight(decoded)) {
        assert.deepStrictEqual<unknown>(
          Schema.encodeSync(ChatCompletion, decodeOptions)(decoded.right),
          value
        )
      }
    }
    for (
      const value of [chunkWith(thinking), chunkWith({ content: "x", reasoning_content: null, thinking_blocks: null })]
    ) {
      const decoded = decodeChunk(value)
      assert.isTrue(Either.isRight(decoded))
      if (Either.isRight(decoded)) {
        assert.deepStrictEqual<unknown>(Schema.encodeSync(ChatCompletionChunk, decodeOptions)(decoded.right), value)
      }
    }
    const request = { model: "m", messages: [{ role: "assistant", content: "x", ...thinking }] }
    const decoded = decodeRequest(request)
    assert.isTrue(Either.isRight(decoded))
    if (Either.isRight(decoded)) {
      assert.deepStrictEqual<unknown>(Either.getOrThrow(encodeRequest(decoded.right)), request)
    }
  })

  it("rejects thinking_blocks that are not a list of typed objects, and a non-string reasoning_content in a response", () => {
    assert.isTrue(Either.isLeft(decodeCompletion(completionWith({ thinking_blocks: "EqQB" }))))
    assert.isTrue(Either.isLeft(decodeCompletion(completionWith({ thinking_blocks: [{ thinking: "no type" }] }))))
    assert.isTrue(Either.isLeft(decodeChunk(chunkWith({ thinking_blocks: [42] }))))
    assert.isTrue(Either.isLeft(decodeChunk(chunkWith({ reasoning_content: 42 }))))
  })
})
