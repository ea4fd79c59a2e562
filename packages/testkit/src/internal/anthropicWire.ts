/**
 * The Anthropic Messages API as the fake upstream speaks it: wire shapes of the buffered message,
 * the streamed events and the error envelope, plus their encoders. Pure: no I/O.
 */
import type { Usage as OpenAiUsage } from "@switchyard-ts/protocol/OpenAiChat"
import * as Schema from "effect/Schema"

/** `usage` of a message; the cache fields only when the usage sample had them. */
export const Usage = Schema.Struct({
  input_tokens: Schema.Number,
  output_tokens: Schema.Number,
  cache_read_input_tokens: Schema.optional(Schema.Number),
  cache_creation_input_tokens: Schema.optional(Schema.Number)
})
export type Usage = typeof Usage.Type

export const TextBlock = Schema.Struct({ type: Schema.Literal("text"), text: Schema.String })
export const ToolUseBlock = Schema.Struct({
  type: Schema.Literal("tool_use"),
  id: Schema.String,
  name: Schema.String,
  input: Schema.Unknown
})
export const ThinkingBlock = Schema.Struct({
  type: Schema.Literal("thinking"),
  thinking: Schema.String,
  signature: Schema.optional(Schema.String)
})
export const ContentBlock = Schema.Union(TextBlock, ToolUseBlock, ThinkingBlock)
export type ContentBlock = typeof ContentBlock.Type

export const StopReason = Schema.Literal("end_turn", "tool_use")
export type StopReason = typeof StopReason.Type

/** A buffered message; also the `message` of `message_start` (with empty content). */
export const Message = Schema.Struct({
  id: Schema.String,
  type: Schema.Literal("message"),
  role: Schema.Literal("assistant"),
  model: Schema.String,
  content: Schema.Array(ContentBlock),
  stop_reason: Schema.NullOr(StopReason),
  stop_sequence: Schema.Null,
  usage: Usage
})
export type Message = typeof Message.Type

const ErrorObject = Schema.Struct({ type: Schema.String, message: Schema.String })

/** `{"type":"error","error":{"type","message"}}`, as a response body and as the `error` event. */
export const ErrorEnvelope = Schema.Struct({ type: Schema.Literal("error"), error: ErrorObject })
export type ErrorEnvelope = typeof ErrorEnvelope.Type

/** One server-sent event of a streamed message; `type` is also the SSE `event:` name. */
export const StreamEvent = Schema.Union(
  Schema.Struct({ type: Schema.Literal("message_start"), message: Message }),
  Schema.Struct({ type: Schema.Literal("content_block_start"), index: Schema.Number, content_block: ContentBlock }),
  Schema.Struct({ type: Schema.Literal("ping") }),
  Schema.Struct({
    type: Schema.Literal("content_block_delta"),
    index: Schema.Number,
    delta: Schema.Union(
      Schema.Struct({ type: Schema.Literal("text_delta"), text: Schema.String }),
      Schema.Struct({ type: Schema.Literal("input_json_delta"), partial_json: Schema.String }),
      Schema.Struct({ type: Schema.Literal("thinking_delta"), thinking: Schema.String }),
      Schema.Struct({ type: Schema.Literal("signature_delta"), signature: Schema.String })
    )
  }),
  Schema.Struct({ type: Schema.Literal("content_block_stop"), index: Schema.Number }),
  Schema.Struct({
    type: Schema.Literal("message_delta"),
    delta: Schema.Struct({ stop_reason: StopReason, stop_sequence: Schema.Null }),
    usage: Schema.Struct({ output_tokens: Schema.Number })
  }),
  Schema.Struct({ type: Schema.Literal("message_stop") }),
  ErrorEnvelope
)
export type StreamEvent = typeof StreamEvent.Type

/** `event: <type>\ndata: <json>\n\n` */
export const sse = (event: StreamEvent): string => `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`

/** The error type Anthropic uses for an HTTP status (the protocol package's mapping). */
export { errorTypeForStatus } from "@switchyard-ts/protocol/AnthropicMessages"

export const errorEnvelope = (type: string, message: string): ErrorEnvelope => ({
  type: "error",
  error: { type, message }
})

/**
 * An OpenAI usage sample as Anthropic usage: cached and cache-creation prompt tokens move to
 * their own fields and out of `input_tokens` (Anthropic counts them separately).
 */
export const usageFromOpenAi = (usage: OpenAiUsage): Usage => {
  const cacheRead = usage.prompt_tokens_details?.cached_tokens ?? undefined
  const cacheCreation = usage.prompt_tokens_details?.cache_creation_tokens ?? undefined
  return {
    input_tokens: Math.max(0, usage.prompt_tokens - (cacheRead ?? 0) - (cacheCreation ?? 0)),
    output_tokens: usage.completion_tokens,
    ...(cacheRead === undefined ? {} : { cache_read_input_tokens: cacheRead }),
    ...(cacheCreation === undefined ? {} : { cache_creation_input_tokens: cacheCreation })
  }
}
