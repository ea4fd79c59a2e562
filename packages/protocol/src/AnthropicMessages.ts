/**
 * Wire schemas of the Anthropic Messages API (`POST /v1/messages`): the request, the buffered
 * response, the streamed events, the token-counting request and the error body.
 *
 * Like {@link module:OpenAiChat}, every schema is an identity schema (its `Type` equals its
 * `Encoded`). Decode with `decodeOptions` from `OpenAiChat` (re-exported here) so unknown fields —
 * beta features, newer API fields — are kept and can be forwarded untouched. Content blocks,
 * tools and stream deltas of types this version does not know are accepted as "other" members.
 */
import * as Schema from "effect/Schema"
import { decodeOptions as openAiDecodeOptions } from "./OpenAiChat.js"

/** Parse options for every wire decode: unknown keys are preserved, all errors reported. */
export const decodeOptions = openAiDecodeOptions

const opt = <S extends Schema.Schema.All>(s: S) => Schema.optional(s)
const NullOr = <S extends Schema.Schema.Any>(s: S) => Schema.NullOr(s)
const JsonObject = Schema.Record({ key: Schema.String, value: Schema.Unknown })
const NonNegativeInt = Schema.Int.pipe(Schema.nonNegative())

/** A struct accepting any `type` outside `known`; every other key is preserved on decode. */
const otherOf = (known: ReadonlyArray<string>, what: string) =>
  Schema.Struct({
    type: Schema.String.pipe(Schema.filter((t) => !known.includes(t), { message: () => `unknown ${what} type` }))
  })

/** `{"type": "ephemeral", "ttl"?: "5m" | "1h"}` */
export const CacheControl = Schema.Struct({ type: Schema.String, ttl: opt(Schema.String) })
export type CacheControl = typeof CacheControl.Type

/** `{"type": "text", "text": "..."}` with optional prompt-cache marker and citations. */
export const TextBlock = Schema.Struct({
  type: Schema.Literal("text"),
  text: Schema.String,
  cache_control: opt(NullOr(CacheControl)),
  citations: opt(NullOr(Schema.Array(JsonObject)))
})
export type TextBlock = typeof TextBlock.Type

/** `{"type": "base64", "media_type": "image/png", "data": "..."}` */
export const Base64ImageSource = Schema.Struct({
  type: Schema.Literal("base64"),
  media_type: Schema.String,
  data: Schema.String
})
/** `{"type": "url", "url": "https://..."}` */
export const UrlImageSource = Schema.Struct({ type: Schema.Literal("url"), url: Schema.String })
/** Any other image source (`file`, newer kinds); kept untouched. */
export const OtherImageSource = otherOf(["base64", "url"], "image source")
export const ImageSource = Schema.Union(Base64ImageSource, UrlImageSource, OtherImageSource)
export type ImageSource = typeof ImageSource.Type

/** `{"type": "image", "source": {...}}` */
export const ImageBlock = Schema.Struct({
  type: Schema.Literal("image"),
  source: ImageSource,
  cache_control: opt(NullOr(CacheControl))
})
export type ImageBlock = typeof ImageBlock.Type

/** `{"type": "document", "source": {...}}` (PDF, plain text, content, file); fields beyond `source.type` are kept. */
export const DocumentBlock = Schema.Struct({
  type: Schema.Literal("document"),
  source: Schema.Struct({ type: Schema.String }),
  title: opt(NullOr(Schema.String)),
  context: opt(NullOr(Schema.String)),
  cache_control: opt(NullOr(CacheControl))
})

/** `{"type": "tool_use", "id": "toolu_...", "name": "...", "input": {...}}` */
export const ToolUseBlock = Schema.Struct({
  type: Schema.Literal("tool_use"),
  id: Schema.String,
  name: Schema.String,
  input: JsonObject,
  cache_control: opt(NullOr(CacheControl))
})
export type ToolUseBlock = typeof ToolUseBlock.Type

/**
 * `{"type": "tool_reference", "tool_name": "..."}`: a `tool_result` content item naming a deferred
 * tool (`defer_loading`) that a tool search just loaded (Claude Code's ToolSearch returns these).
 */
export const ToolReferenceBlock = Schema.Struct({
  type: Schema.Literal("tool_reference"),
  tool_name: Schema.String,
  cache_control: opt(NullOr(CacheControl))
})
export type ToolReferenceBlock = typeof ToolReferenceBlock.Type

/** A content item of a `tool_result` block of another type (search results, documents). */
export const OtherToolResultContent = otherOf(["text", "image", "tool_reference"], "tool result content")
/** A content item of a `tool_result` block. */
export const ToolResultContent = Schema.Union(TextBlock, ImageBlock, ToolReferenceBlock, OtherToolResultContent)
export type ToolResultContent = typeof ToolResultContent.Type

/** `{"type": "tool_result", "tool_use_id": "toolu_...", "content"?: string | [...], "is_error"?: bool}` */
export const ToolResultBlock = Schema.Struct({
  type: Schema.Literal("tool_result"),
  tool_use_id: Schema.String,
  content: opt(Schema.Union(Schema.String, Schema.Array(ToolResultContent))),
  is_error: opt(Schema.Boolean),
  cache_control: opt(NullOr(CacheControl))
})
export type ToolResultBlock = typeof ToolResultBlock.Type

/**
 * `{"type": "thinking", "thinking": "...", "signature": "..."}`. The API requires `signature` in
 * requests; it is optional here so an unsigned block (as a translated stream produces) decodes and
 * can be dropped on the way out instead of failing the request.
 */
export const ThinkingBlock = Schema.Struct({
  type: Schema.Literal("thinking"),
  thinking: Schema.String,
  signature: opt(Schema.String)
})
export type ThinkingBlock = typeof ThinkingBlock.Type

/** `{"type": "redacted_thinking", "data": "..."}` */
export const RedactedThinkingBlock = Schema.Struct({ type: Schema.Literal("redacted_thinking"), data: Schema.String })

const knownRequestBlockTypes: ReadonlyArray<string> = [
  "text",
  "image",
  "document",
  "tool_use",
  "tool_result",
  "thinking",
  "redacted_thinking"
]
/** A request content block of a type this version does not know (server tool use, search results…); kept untouched. */
export const OtherBlock = otherOf(knownRequestBlockTypes, "content block")

/** Any content block of a request message. */
export const ContentBlock = Schema.Union(
  TextBlock,
  ImageBlock,
  DocumentBlock,
  ToolUseBlock,
  ToolResultBlock,
  ThinkingBlock,
  RedactedThinkingBlock,
  OtherBlock
)
export type ContentBlock = typeof ContentBlock.Type

/** One conversation turn; consecutive turns of the same role are allowed (the API merges them). */
export const Message = Schema.Struct({
  role: Schema.Literal("user", "assistant"),
  content: Schema.Union(Schema.String, Schema.Array(ContentBlock))
})
export type Message = typeof Message.Type

/**
 * A system message inside `messages` (`{"role": "system", "content": "..." | [text blocks]}`). Not
 * part of Anthropic's published API, but Claude Code sends it for model ids it does not recognise
 * (e.g. a first request `[user, system]`), so a gateway must take it.
 */
export const SystemMessage = Schema.Struct({
  role: Schema.Literal("system"),
  content: Schema.Union(Schema.String, Schema.Array(TextBlock))
})
export type SystemMessage = typeof SystemMessage.Type

/** An entry of a request's `messages`: a turn or a system message. */
export const RequestMessage = Schema.Union(Message, SystemMessage)
export type RequestMessage = typeof RequestMessage.Type

/** A client tool: `{"name", "description"?, "input_schema"}` (`type` is `"custom"` or absent). */
export const CustomTool = Schema.Struct({
  type: opt(Schema.Literal("custom")),
  name: Schema.String,
  description: opt(Schema.String),
  input_schema: JsonObject,
  cache_control: opt(NullOr(CacheControl))
})
export type CustomTool = typeof CustomTool.Type
/** A server or versioned tool (`{"type": "web_search_20250305", "name": "web_search", ...}`); kept untouched. */
export const ServerTool = Schema.Struct({
  type: Schema.String.pipe(Schema.filter((t) => t !== "custom", { message: () => "a custom tool needs input_schema" })),
  name: Schema.String
})
export const Tool = Schema.Union(CustomTool, ServerTool)
export type Tool = typeof Tool.Type

/** `{"type": "auto" | "any" | "none"}` or `{"type": "tool", "name": "..."}`. */
export const ToolChoice = Schema.Union(
  Schema.Struct({
    type: Schema.Literal("auto", "any", "none"),
    disable_parallel_tool_use: opt(Schema.Boolean)
  }),
  Schema.Struct({
    type: Schema.Literal("tool"),
    name: Schema.String,
    disable_parallel_tool_use: opt(Schema.Boolean)
  })
)
export type ToolChoice = typeof ToolChoice.Type

/** Structured output: `{"format": {"type": "json_schema", "schema": {...}}}`. */
export const OutputConfig = Schema.Struct({
  format: opt(NullOr(Schema.Struct({ type: Schema.String, schema: opt(JsonObject) })))
})

const requestFields = {
  model: Schema.String.pipe(
    Schema.filter((m) => m.trim().length > 0, { message: () => "model must be a non-empty string" })
  ),
  messages: Schema.Array(RequestMessage),
  system: opt(Schema.Union(Schema.String, Schema.Array(TextBlock))),
  temperature: opt(Schema.Number),
  top_p: opt(Schema.Number),
  top_k: opt(NonNegativeInt),
  stop_sequences: opt(Schema.Array(Schema.String)),
  tools: opt(Schema.Array(Tool)),
  tool_choice: opt(ToolChoice),
  metadata: opt(Schema.Struct({ user_id: opt(NullOr(Schema.String)) })),
  thinking: opt(Schema.Struct({ type: Schema.String })),
  service_tier: opt(Schema.String),
  output_config: opt(OutputConfig)
}

/** A Messages request. `max_tokens` is required by the API and therefore here. */
export const MessagesRequest = Schema.Struct({
  ...requestFields,
  max_tokens: NonNegativeInt,
  stream: opt(Schema.Boolean)
})
export type MessagesRequest = typeof MessagesRequest.Type

/** A `POST /v1/messages/count_tokens` request: a Messages request without `max_tokens` and `stream`. */
export const CountTokensRequest = Schema.Struct(requestFields)
export type CountTokensRequest = typeof CountTokensRequest.Type

/** The cache writes of a usage by how long they are kept (`cache_creation`). */
export const CacheCreation = Schema.Struct({
  ephemeral_5m_input_tokens: opt(NullOr(Schema.Number)),
  ephemeral_1h_input_tokens: opt(NullOr(Schema.Number))
})

/**
 * Token usage of a message; `input_tokens` excludes the cached and cache-written prompt tokens;
 * `cache_creation` splits the writes by how long they are kept; `cost` is a provider's own charge
 * in USD when one reports it (a gateway in front of the API).
 */
export const Usage = Schema.Struct({
  input_tokens: Schema.Number,
  output_tokens: Schema.Number,
  cache_creation_input_tokens: opt(NullOr(Schema.Number)),
  cache_read_input_tokens: opt(NullOr(Schema.Number)),
  cache_creation: opt(NullOr(CacheCreation)),
  cost: opt(NullOr(Schema.Number))
})
export type Usage = typeof Usage.Type

/**
 * A response `thinking` block: signed in a buffered message; in a stream its `content_block_start`
 * has no signature yet (a `signature_delta` brings it).
 */
export const ResponseThinkingBlock = Schema.Struct({
  type: Schema.Literal("thinking"),
  thinking: Schema.String,
  // Absent from the `content_block_start` of a streamed thinking block (`signature_delta` follows).
  signature: opt(Schema.String)
})
/** A response content block of a type this version does not know (server tool use and results…). */
export const OtherResponseBlock = otherOf(["text", "tool_use", "thinking", "redacted_thinking"], "content block")
/** Any content block of a response. */
export const ResponseContentBlock = Schema.Union(
  TextBlock,
  ToolUseBlock,
  ResponseThinkingBlock,
  RedactedThinkingBlock,
  OtherResponseBlock
)
export type ResponseContentBlock = typeof ResponseContentBlock.Type

/** A buffered message (`type: "message"`). */
export const MessagesResponse = Schema.Struct({
  id: Schema.String,
  type: Schema.Literal("message"),
  role: Schema.Literal("assistant"),
  model: Schema.String,
  content: Schema.Array(ResponseContentBlock),
  stop_reason: NullOr(Schema.String),
  stop_sequence: opt(NullOr(Schema.String)),
  usage: Usage
})
export type MessagesResponse = typeof MessagesResponse.Type

export const TextDelta = Schema.Struct({ type: Schema.Literal("text_delta"), text: Schema.String })
export const InputJsonDelta = Schema.Struct({ type: Schema.Literal("input_json_delta"), partial_json: Schema.String })
export const ThinkingDelta = Schema.Struct({ type: Schema.Literal("thinking_delta"), thinking: Schema.String })
export const SignatureDelta = Schema.Struct({ type: Schema.Literal("signature_delta"), signature: Schema.String })
export const CitationsDelta = Schema.Struct({ type: Schema.Literal("citations_delta"), citation: JsonObject })
/** A delta of a type this version does not know; kept untouched. */
export const OtherDelta = otherOf(
  ["text_delta", "input_json_delta", "thinking_delta", "signature_delta", "citations_delta"],
  "delta"
)
export const ContentBlockDelta = Schema.Union(
  TextDelta,
  InputJsonDelta,
  ThinkingDelta,
  SignatureDelta,
  CitationsDelta,
  OtherDelta
)
export type ContentBlockDelta = typeof ContentBlockDelta.Type

export const MessageStartEvent = Schema.Struct({ type: Schema.Literal("message_start"), message: MessagesResponse })
export const ContentBlockStartEvent = Schema.Struct({
  type: Schema.Literal("content_block_start"),
  index: NonNegativeInt,
  content_block: ResponseContentBlock
})
export const ContentBlockDeltaEvent = Schema.Struct({
  type: Schema.Literal("content_block_delta"),
  index: NonNegativeInt,
  delta: ContentBlockDelta
})
export const ContentBlockStopEvent = Schema.Struct({
  type: Schema.Literal("content_block_stop"),
  index: NonNegativeInt
})
/** Usage of a `message_delta` event: cumulative; only `output_tokens` is always present. */
export const DeltaUsage = Schema.Struct({
  output_tokens: Schema.Number,
  input_tokens: opt(NullOr(Schema.Number)),
  cache_creation_input_tokens: opt(NullOr(Schema.Number)),
  cache_read_input_tokens: opt(NullOr(Schema.Number)),
  cache_creation: opt(NullOr(CacheCreation)),
  cost: opt(NullOr(Schema.Number))
})
export const MessageDeltaEvent = Schema.Struct({
  type: Schema.Literal("message_delta"),
  delta: Schema.Struct({ stop_reason: NullOr(Schema.String), stop_sequence: opt(NullOr(Schema.String)) }),
  usage: DeltaUsage
})
export const MessageStopEvent = Schema.Struct({ type: Schema.Literal("message_stop") })
export const PingEvent = Schema.Struct({ type: Schema.Literal("ping") })
export const ErrorEvent = Schema.Struct({
  type: Schema.Literal("error"),
  error: Schema.Struct({ type: Schema.String, message: Schema.String })
})

/** One server-sent event of a streamed message (the SSE `data` payload; its `event:` name equals `type`). */
export const StreamEvent = Schema.Union(
  MessageStartEvent,
  ContentBlockStartEvent,
  ContentBlockDeltaEvent,
  ContentBlockStopEvent,
  MessageDeltaEvent,
  MessageStopEvent,
  PingEvent,
  ErrorEvent
)
export type StreamEvent = typeof StreamEvent.Type

/** The `type` of every stream event this version knows (a client skips the others). */
export const streamEventTypes: ReadonlySet<string> = new Set(
  StreamEvent.members.flatMap((member) => member.fields.type.literals)
)

/** The Anthropic error body: `{"type": "error", "error": {"type": "...", "message": "..."}}`. */
export const ErrorBody = Schema.Struct({
  type: Schema.Literal("error"),
  error: Schema.Struct({ type: Schema.String, message: Schema.String })
})
export type ErrorBody = typeof ErrorBody.Type

/**
 * The Anthropic error `type` for an HTTP status (docs/http-api.md): 400 `invalid_request_error`, 401
 * `authentication_error`, 403 `permission_error`, 404 `not_found_error`, 413 `request_too_large`,
 * 429 `rate_limit_error`, 529 `overloaded_error`, anything else `api_error`.
 */
export const errorTypeForStatus = (status: number): string => {
  switch (status) {
    case 400:
      return "invalid_request_error"
    case 401:
      return "authentication_error"
    case 403:
      return "permission_error"
    case 404:
      return "not_found_error"
    case 413:
      return "request_too_large"
    case 429:
      return "rate_limit_error"
    case 529:
      return "overloaded_error"
    default:
      return "api_error"
  }
}

/** The error body for `status` with `message`, its `error.type` chosen by {@link errorTypeForStatus}. */
export const envelope = (status: number, message: string): ErrorBody => ({
  type: "error",
  error: { type: errorTypeForStatus(status), message }
})
