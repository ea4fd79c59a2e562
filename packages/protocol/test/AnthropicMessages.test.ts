import { assert, describe, it } from "@effect/vitest"
import {
  CountTokensRequest,
  decodeOptions,
  envelope,
  ErrorBody,
  errorTypeForStatus,
  MessagesRequest,
  MessagesResponse,
  StreamEvent
} from "@switchyard-ts/protocol/AnthropicMessages"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"

const decodeRequest = Schema.decodeUnknownEither(MessagesRequest, decodeOptions)

const fullRequest = {
  model: "claude-sonnet-4-5",
  max_tokens: 1024,
  system: [{ type: "text", text: "be brief", cache_control: { type: "ephemeral", ttl: "1h" } }],
  messages: [
    {
      role: "user",
      content: [
        { type: "text", text: "look", citations: null },
        { type: "image", source: { type: "base64", media_type: "image/png", data: "iVBOR" } },
        { type: "image", source: { type: "url", url: "https://example.com/a.png" } },
        { type: "image", source: { type: "file", file_id: "file_1" } },
        {
          type: "document",
          source: { type: "text", media_type: "text/plain", data: "doc" },
          title: "t",
          citations: { enabled: true }
        },
        { type: "search_result", source: "https://x", title: "x", content: [{ type: "text", text: "r" }] }
      ]
    },
    {
      role: "assistant",
      content: [
        { type: "thinking", thinking: "hm", signature: "sig" },
        { type: "redacted_thinking", data: "abc" },
        { type: "tool_use", id: "toolu_1", name: "read", input: { path: "a" } },
        { type: "server_tool_use", id: "srvtoolu_1", name: "web_search", input: { query: "q" } }
      ]
    },
    {
      role: "user",
      content: [
        {
          type: "tool_result",
          tool_use_id: "toolu_1",
          content: [{ type: "text", text: "x" }, {
            type: "image",
            source: { type: "base64", media_type: "image/png", data: "AA" }
          }]
        },
        { type: "tool_result", tool_use_id: "toolu_2", content: "failed", is_error: true },
        { type: "tool_result", tool_use_id: "toolu_3" },
        {
          type: "tool_result",
          tool_use_id: "toolu_4",
          content: [{ type: "tool_reference", tool_name: "Grep", extra: true }]
        }
      ]
    },
    { role: "system", content: [{ type: "text", text: "reminder", cache_control: { type: "ephemeral" }, extra: 1 }] },
    { role: "assistant", content: "plain" },
    { role: "system", content: "string reminder" }
  ],
  tools: [
    { name: "read", description: "read", input_schema: { type: "object" }, cache_control: { type: "ephemeral" } },
    { type: "custom", name: "write", input_schema: { type: "object" } },
    { type: "web_search_20250305", name: "web_search", max_uses: 3 },
    { type: "bash_20250124", name: "bash" }
  ],
  tool_choice: { type: "tool", name: "read", disable_parallel_tool_use: true },
  metadata: { user_id: "u" },
  thinking: { type: "enabled", budget_tokens: 2048 },
  service_tier: "auto",
  temperature: 0.5,
  top_p: 0.9,
  top_k: 5,
  stop_sequences: ["END"],
  stream: true,
  output_config: { format: { type: "json_schema", schema: { type: "object" } }, effort: "low" },
  context_management: { edits: [] },
  mcp_servers: [{ type: "url", url: "https://mcp", name: "m" }]
}

describe("MessagesRequest", () => {
  it("round-trips every block, tool and field kind with unknown fields untouched", () => {
    const decoded = decodeRequest(fullRequest)
    assert.isTrue(Either.isRight(decoded))
    if (Either.isRight(decoded)) {
      assert.deepStrictEqual<unknown>(Schema.encodeSync(MessagesRequest, decodeOptions)(decoded.right), fullRequest)
    }
  })

  it("requires max_tokens, a non-empty model, known roles and well-formed known blocks", () => {
    const { max_tokens: _maxTokens, ...withoutMax } = fullRequest
    assert.isTrue(Either.isLeft(decodeRequest(withoutMax)))
    assert.isTrue(Either.isRight(Schema.decodeUnknownEither(CountTokensRequest, decodeOptions)(withoutMax)))
    assert.isTrue(Either.isLeft(decodeRequest({ model: " ", max_tokens: 1, messages: [] })))
    assert.isTrue(
      Either.isLeft(decodeRequest({ model: "m", max_tokens: 1, messages: [{ role: "tool", content: "x" }] }))
    )
    // a system message (Claude Code sends them) is text only: a string or text blocks
    const system = (content: unknown) =>
      decodeRequest({
        model: "m",
        max_tokens: 1,
        messages: [{ role: "user", content: "hi" }, { role: "system", content }]
      })
    assert.isTrue(Either.isRight(system("x")))
    assert.isTrue(Either.isRight(system([{ type: "text", text: "x", cache_control: { type: "ephemeral" } }])))
    assert.isTrue(Either.isLeft(system([{ type: "image", source: { type: "url", url: "https://example.com/a.png" } }])))
    // a known block type with a missing field is an error, not an "other" block
    assert.isTrue(
      Either.isLeft(
        decodeRequest({ model: "m", max_tokens: 1, messages: [{ role: "user", content: [{ type: "text" }] }] })
      )
    )
    assert.isTrue(
      Either.isLeft(
        decodeRequest({
          model: "m",
          max_tokens: 1,
          messages: [{ role: "user", content: [{ type: "tool_use", id: "t", name: "n", input: "x" }] }]
        })
      )
    )
    // a custom tool needs input_schema
    assert.isTrue(Either.isLeft(decodeRequest({ model: "m", max_tokens: 1, messages: [], tools: [{ name: "f" }] })))
    assert.isTrue(
      Either.isLeft(decodeRequest({ model: "m", max_tokens: 1, messages: [], tool_choice: { type: "tool" } }))
    )
  })
})

describe("MessagesResponse and StreamEvent", () => {
  it("round-trips a response with cache usage and unknown blocks, and every event kind", () => {
    const response = {
      id: "msg_1",
      type: "message",
      role: "assistant",
      model: "claude",
      content: [
        { type: "text", text: "hi", citations: [{ type: "char_location", cited_text: "x" }] },
        { type: "thinking", thinking: "t", signature: "s" },
        { type: "redacted_thinking", data: "d" },
        { type: "tool_use", id: "toolu_1", name: "f", input: {} },
        { type: "web_search_tool_result", tool_use_id: "srvtoolu_1", content: [] }
      ],
      stop_reason: "pause_turn",
      stop_sequence: null,
      usage: {
        input_tokens: 1,
        output_tokens: 2,
        cache_creation_input_tokens: 3,
        cache_read_input_tokens: 4,
        service_tier: "standard"
      },
      container: null
    }
    const decoded = Schema.decodeUnknownSync(MessagesResponse, decodeOptions)(response)
    assert.deepStrictEqual<unknown>(Schema.encodeSync(MessagesResponse, decodeOptions)(decoded), response)

    const events = [
      { type: "message_start", message: { ...response, content: [], stop_reason: null } },
      { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } },
      { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "a" } },
      {
        type: "content_block_delta",
        index: 0,
        delta: { type: "citations_delta", citation: { type: "char_location" } }
      },
      { type: "content_block_delta", index: 1, delta: { type: "input_json_delta", partial_json: "{" } },
      { type: "content_block_delta", index: 2, delta: { type: "thinking_delta", thinking: "t" } },
      { type: "content_block_delta", index: 2, delta: { type: "signature_delta", signature: "s" } },
      { type: "content_block_delta", index: 3, delta: { type: "future_delta", blob: 1 } },
      { type: "content_block_stop", index: 0 },
      {
        type: "message_delta",
        delta: { stop_reason: "end_turn", stop_sequence: null },
        usage: { output_tokens: 9, input_tokens: 1 }
      },
      { type: "message_stop" },
      { type: "ping" },
      { type: "error", error: { type: "overloaded_error", message: "Overloaded" } }
    ]
    for (const event of events) {
      const decodedEvent = Schema.decodeUnknownSync(StreamEvent, decodeOptions)(event)
      assert.deepStrictEqual<unknown>(Schema.encodeSync(StreamEvent, decodeOptions)(decodedEvent), event)
    }
    assert.isTrue(
      Either.isLeft(
        Schema.decodeUnknownEither(StreamEvent, decodeOptions)({
          type: "content_block_delta",
          index: 0,
          delta: { type: "text_delta" }
        })
      )
    )
    assert.isTrue(Either.isLeft(Schema.decodeUnknownEither(StreamEvent, decodeOptions)({ type: "nonsense" })))
  })
})

describe("streamed thinking", () => {
  it("accepts a thinking block start without a signature, as Anthropic streams it", () => {
    const start = { type: "content_block_start", index: 0, content_block: { type: "thinking", thinking: "" } }
    const decoded = Schema.decodeUnknownEither(StreamEvent, decodeOptions)(start)
    assert.isTrue(Either.isRight(decoded))
    const signature = { type: "content_block_delta", index: 0, delta: { type: "signature_delta", signature: "EqQB" } }
    assert.isTrue(Either.isRight(Schema.decodeUnknownEither(StreamEvent, decodeOptions)(signature)))
  })
})

describe("errors", () => {
  it("chooses the Anthropic error type by status and builds the envelope", () => {
    assert.deepStrictEqual(
      [400, 401, 403, 404, 413, 429, 529, 415, 422, 500, 502, 504].map(errorTypeForStatus),
      [
        "invalid_request_error",
        "authentication_error",
        "permission_error",
        "not_found_error",
        "request_too_large",
        "rate_limit_error",
        "overloaded_error",
        "api_error",
        "api_error",
        "api_error",
        "api_error",
        "api_error"
      ]
    )
    const body = envelope(401, "upstream authentication failed")
    assert.deepStrictEqual(body, {
      type: "error",
      error: { type: "authentication_error", message: "upstream authentication failed" }
    })
    assert.isTrue(Schema.is(ErrorBody)(body))
  })
})
