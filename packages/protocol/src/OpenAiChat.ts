/**
 * Wire schemas of the OpenAI Chat Completions API: the request a client sends, the buffered
 * response, the streamed chunk and the usage record.
 *
 * Every schema is an identity schema (its `Type` equals its `Encoded`), so a decoded request can be
 * forwarded as-is. Decode with {@link decodeOptions} so unknown fields — provider extensions, newer
 * API fields — are kept and forwarded untouched.
 */
import * as Schema from "effect/Schema"
import type { ParseOptions } from "effect/SchemaAST"

/** Parse options for every wire decode: unknown keys are preserved, all errors reported. */
export const decodeOptions: ParseOptions = { onExcessProperty: "preserve", errors: "all" }

const NullOr = <S extends Schema.Schema.Any>(s: S) => Schema.NullOr(s)
const opt = <S extends Schema.Schema.All>(s: S) => Schema.optional(s)

/** `{"type": "text", "text": "..."}` */
export const TextPart = Schema.Struct({ type: Schema.Literal("text"), text: Schema.String })
/** `{"type": "image_url", "image_url": {"url": "...", "detail": "auto"}}` */
export const ImagePart = Schema.Struct({
  type: Schema.Literal("image_url"),
  image_url: Schema.Struct({ url: Schema.String, detail: opt(Schema.String) })
})
/** `{"type": "input_audio", "input_audio": {"data": "...", "format": "wav"}}` */
export const AudioPart = Schema.Struct({
  type: Schema.Literal("input_audio"),
  input_audio: Schema.Struct({ data: Schema.String, format: Schema.String })
})
/** `{"type": "file", "file": {...}}` */
export const FilePart = Schema.Struct({
  type: Schema.Literal("file"),
  file: Schema.Struct({ file_data: opt(Schema.String), file_id: opt(Schema.String), filename: opt(Schema.String) })
})
/** `{"type": "refusal", "refusal": "..."}` (assistant content only) */
export const RefusalPart = Schema.Struct({ type: Schema.Literal("refusal"), refusal: Schema.String })

const knownPartTypes: ReadonlyArray<string> = ["text", "image_url", "input_audio", "file", "refusal"]
/** A content part of a type this version does not know; forwarded untouched. */
export const OtherPart = Schema.Struct({
  type: Schema.String.pipe(Schema.filter((t) => !knownPartTypes.includes(t), {
    message: () => `unknown content part type`
  }))
})

/** Any user content part. */
export const ContentPart = Schema.Union(TextPart, ImagePart, AudioPart, FilePart, OtherPart)
export type ContentPart = typeof ContentPart.Type

/** A function tool call made by the assistant. */
export const FunctionToolCall = Schema.Struct({
  id: Schema.String,
  type: Schema.Literal("function"),
  function: Schema.Struct({ name: Schema.String, arguments: Schema.String })
})
/** A custom (free-form input) tool call made by the assistant. */
export const CustomToolCall = Schema.Struct({
  id: Schema.String,
  type: Schema.Literal("custom"),
  custom: Schema.Struct({ name: Schema.String, input: Schema.String })
})
export const ToolCall = Schema.Union(FunctionToolCall, CustomToolCall)
export type ToolCall = typeof ToolCall.Type

const TextContent = Schema.Union(Schema.String, Schema.Array(TextPart))

/**
 * An Anthropic thinking block in an OpenAI message or delta (LiteLLM's `thinking_blocks`
 * extension): `{"type": "thinking", "thinking": "...", "signature": "..."}`. In a stream delta,
 * `thinking` is `""` and `signature` completes the thinking block streamed so far as
 * `reasoning_content`; a delta whose `signature` is absent or `null` adds only `thinking`.
 */
export const ThinkingTextBlock = Schema.Struct({
  type: Schema.Literal("thinking"),
  thinking: Schema.String,
  signature: opt(NullOr(Schema.String))
})
/** An Anthropic redacted thinking block in the `thinking_blocks` extension: `{"type": "redacted_thinking", "data": "..."}`. */
export const RedactedThinkingBlock = Schema.Struct({
  type: Schema.Literal("redacted_thinking"),
  data: Schema.String
})
/**
 * Any other `thinking_blocks` entry with a string `type` (a newer kind, or a thinking block of
 * another shape); accepted so the message still decodes, and ignored by the translations.
 */
export const OtherThinkingBlock = Schema.Struct({ type: Schema.String })
/** One entry of the `thinking_blocks` extension (LiteLLM convention). */
export const ThinkingBlock = Schema.Union(ThinkingTextBlock, RedactedThinkingBlock, OtherThinkingBlock)
export type ThinkingBlock = typeof ThinkingBlock.Type

export const SystemMessage = Schema.Struct({
  role: Schema.Literal("system"),
  content: TextContent,
  name: opt(Schema.String)
})
export const DeveloperMessage = Schema.Struct({
  role: Schema.Literal("developer"),
  content: TextContent,
  name: opt(Schema.String)
})
export const UserMessage = Schema.Struct({
  role: Schema.Literal("user"),
  content: Schema.Union(Schema.String, Schema.Array(ContentPart)),
  name: opt(Schema.String)
})
export const AssistantMessage = Schema.Struct({
  role: Schema.Literal("assistant"),
  content: opt(NullOr(Schema.Union(Schema.String, Schema.Array(Schema.Union(TextPart, RefusalPart))))),
  refusal: opt(NullOr(Schema.String)),
  name: opt(Schema.String),
  tool_calls: opt(Schema.Array(ToolCall)),
  function_call: opt(NullOr(Schema.Struct({ name: Schema.String, arguments: Schema.String }))),
  /** Anthropic thinking blocks, signatures included (extension); `reasoning_content` stays an unchecked extension here. */
  thinking_blocks: opt(NullOr(Schema.Array(ThinkingBlock)))
})
export const ToolMessage = Schema.Struct({
  role: Schema.Literal("tool"),
  content: TextContent,
  tool_call_id: Schema.String
})
/** Deprecated `function` role, still accepted by the API. */
export const FunctionMessage = Schema.Struct({
  role: Schema.Literal("function"),
  content: NullOr(Schema.String),
  name: Schema.String
})

/** One message of a conversation, discriminated by `role`. */
export const Message = Schema.Union(
  SystemMessage,
  DeveloperMessage,
  UserMessage,
  AssistantMessage,
  ToolMessage,
  FunctionMessage
)
export type Message = typeof Message.Type

export const FunctionTool = Schema.Struct({
  type: Schema.Literal("function"),
  function: Schema.Struct({
    name: Schema.String,
    description: opt(Schema.String),
    parameters: opt(Schema.Record({ key: Schema.String, value: Schema.Unknown })),
    strict: opt(NullOr(Schema.Boolean))
  })
})
export const CustomTool = Schema.Struct({
  type: Schema.Literal("custom"),
  custom: Schema.Struct({ name: Schema.String, description: opt(Schema.String) })
})
export const Tool = Schema.Union(FunctionTool, CustomTool)

export const ToolChoice = Schema.Union(
  Schema.Literal("none", "auto", "required"),
  Schema.Struct({ type: Schema.Literal("function"), function: Schema.Struct({ name: Schema.String }) }),
  Schema.Struct({ type: Schema.Literal("custom"), custom: Schema.Struct({ name: Schema.String }) }),
  Schema.Struct({
    type: Schema.Literal("allowed_tools"),
    allowed_tools: Schema.Struct({
      mode: Schema.Literal("auto", "required"),
      tools: Schema.Array(Schema.Record({ key: Schema.String, value: Schema.Unknown }))
    })
  })
)

export const ResponseFormat = Schema.Union(
  Schema.Struct({ type: Schema.Literal("text") }),
  Schema.Struct({ type: Schema.Literal("json_object") }),
  Schema.Struct({
    type: Schema.Literal("json_schema"),
    json_schema: Schema.Struct({
      name: Schema.String,
      description: opt(Schema.String),
      schema: opt(Schema.Record({ key: Schema.String, value: Schema.Unknown })),
      strict: opt(NullOr(Schema.Boolean))
    })
  })
)

export const StreamOptions = Schema.Struct({
  include_usage: opt(Schema.Boolean),
  include_obfuscation: opt(Schema.Boolean)
})

const NonNegativeInt = Schema.Int.pipe(Schema.nonNegative())

/**
 * A Chat Completions request. `model` names a route; every other field is forwarded to the
 * selected upstream (with `model` rewritten to the target's id).
 */
export const ChatCompletionRequest = Schema.Struct({
  model: Schema.String.pipe(
    Schema.filter((m) => m.trim().length > 0, { message: () => "model must be a non-empty string" })
  ),
  messages: Schema.Array(Message),
  stream: opt(NullOr(Schema.Boolean)),
  stream_options: opt(NullOr(StreamOptions)),
  tools: opt(Schema.Array(Tool)),
  tool_choice: opt(ToolChoice),
  parallel_tool_calls: opt(Schema.Boolean),
  response_format: opt(ResponseFormat),
  max_tokens: opt(NullOr(NonNegativeInt)),
  max_completion_tokens: opt(NullOr(NonNegativeInt)),
  temperature: opt(NullOr(Schema.Number)),
  top_p: opt(NullOr(Schema.Number)),
  n: opt(NullOr(NonNegativeInt)),
  stop: opt(NullOr(Schema.Union(Schema.String, Schema.Array(Schema.String)))),
  presence_penalty: opt(NullOr(Schema.Number)),
  frequency_penalty: opt(NullOr(Schema.Number)),
  logit_bias: opt(NullOr(Schema.Record({ key: Schema.String, value: Schema.Number }))),
  logprobs: opt(NullOr(Schema.Boolean)),
  top_logprobs: opt(NullOr(NonNegativeInt)),
  seed: opt(NullOr(Schema.Int)),
  user: opt(Schema.String),
  reasoning_effort: opt(NullOr(Schema.String)),
  metadata: opt(NullOr(Schema.Record({ key: Schema.String, value: Schema.String }))),
  store: opt(NullOr(Schema.Boolean)),
  service_tier: opt(NullOr(Schema.String))
})
export type ChatCompletionRequest = typeof ChatCompletionRequest.Type

/**
 * Token usage of one completion. Cache writes are `prompt_tokens_details.cache_creation_tokens`
 * (what switchyard writes) or `cache_write_tokens` (OpenRouter's name; read when the first is
 * absent); `cache_write_1h_tokens` are those of them kept for an hour (switchyard's name for
 * Anthropic's `cache_creation.ephemeral_1h_input_tokens`); `cost` is the provider's own charge for
 * the call in USD, when it reports one (OpenRouter's `usage.cost`).
 */
export const Usage = Schema.Struct({
  prompt_tokens: Schema.Number,
  completion_tokens: Schema.Number,
  total_tokens: Schema.Number,
  prompt_tokens_details: opt(NullOr(Schema.Struct({
    cached_tokens: opt(NullOr(Schema.Number)),
    cache_creation_tokens: opt(NullOr(Schema.Number)),
    cache_write_tokens: opt(NullOr(Schema.Number)),
    cache_write_1h_tokens: opt(NullOr(Schema.Number))
  }))),
  completion_tokens_details: opt(NullOr(Schema.Struct({ reasoning_tokens: opt(NullOr(Schema.Number)) }))),
  cost: opt(NullOr(Schema.Number))
})
export type Usage = typeof Usage.Type

/** A usage's token counts, the optional details counted as 0 when absent. */
export interface TokenCounts {
  readonly prompt: number
  readonly completion: number
  readonly cached: number
  /** Every cache write (those kept for an hour included). */
  readonly cacheCreation: number
  /** The cache writes kept for an hour. */
  readonly cacheCreation1h: number
  readonly reasoning: number
}

/** The cache writes of `usage`: `cache_creation_tokens`, else `cache_write_tokens`. */
export const cacheWrites = (usage: Usage): number | null | undefined =>
  usage.prompt_tokens_details?.cache_creation_tokens ?? usage.prompt_tokens_details?.cache_write_tokens

/** The token counts of `usage` (see {@link TokenCounts}). */
export const tokenCounts = (usage: Usage): TokenCounts => ({
  prompt: usage.prompt_tokens,
  completion: usage.completion_tokens,
  cached: usage.prompt_tokens_details?.cached_tokens ?? 0,
  cacheCreation: cacheWrites(usage) ?? 0,
  cacheCreation1h: usage.prompt_tokens_details?.cache_write_1h_tokens ?? 0,
  reasoning: usage.completion_tokens_details?.reasoning_tokens ?? 0
})

/** The assistant message of a buffered completion choice. */
export const ResponseMessage = Schema.Struct({
  role: Schema.Literal("assistant"),
  content: opt(NullOr(Schema.String)),
  refusal: opt(NullOr(Schema.String)),
  tool_calls: opt(NullOr(Schema.Array(ToolCall))),
  /** The reasoning text (extension: DeepSeek, vLLM, LiteLLM). */
  reasoning_content: opt(NullOr(Schema.String)),
  /** Anthropic thinking blocks, signatures included (extension, LiteLLM convention). */
  thinking_blocks: opt(NullOr(Schema.Array(ThinkingBlock)))
})

/** A buffered chat completion (`object: "chat.completion"`). */
export const ChatCompletion = Schema.Struct({
  id: Schema.String,
  object: opt(Schema.Literal("chat.completion")),
  created: opt(Schema.Number),
  model: Schema.String,
  choices: Schema.Array(Schema.Struct({
    index: Schema.Number,
    message: ResponseMessage,
    finish_reason: opt(NullOr(Schema.String))
  })),
  usage: opt(NullOr(Usage))
})
export type ChatCompletion = typeof ChatCompletion.Type

/** A tool call fragment inside a streamed delta. */
export const ToolCallDelta = Schema.Struct({
  index: Schema.Number,
  id: opt(Schema.String),
  type: opt(Schema.String),
  function: opt(Schema.Struct({ name: opt(Schema.String), arguments: opt(Schema.String) }))
})

/** One streamed chunk (`object: "chat.completion.chunk"`). */
export const ChatCompletionChunk = Schema.Struct({
  id: Schema.String,
  object: opt(Schema.Literal("chat.completion.chunk")),
  created: opt(Schema.Number),
  model: Schema.String,
  choices: Schema.Array(Schema.Struct({
    index: Schema.Number,
    delta: Schema.Struct({
      role: opt(Schema.String),
      content: opt(NullOr(Schema.String)),
      refusal: opt(NullOr(Schema.String)),
      tool_calls: opt(Schema.Array(ToolCallDelta)),
      /** A fragment of the reasoning text (extension). */
      reasoning_content: opt(NullOr(Schema.String)),
      /** Thinking signatures and redacted thinking blocks (extension; see {@link ThinkingTextBlock}). */
      thinking_blocks: opt(NullOr(Schema.Array(ThinkingBlock)))
    }),
    finish_reason: opt(NullOr(Schema.String))
  })),
  usage: opt(NullOr(Usage))
})
export type ChatCompletionChunk = typeof ChatCompletionChunk.Type

/** The error object an OpenAI-compatible upstream may answer with; every field optional. */
export const UpstreamErrorBody = Schema.Struct({
  error: Schema.Struct({
    message: opt(NullOr(Schema.String)),
    type: opt(NullOr(Schema.String)),
    code: opt(NullOr(Schema.Union(Schema.String, Schema.Number)))
  })
})
export type UpstreamErrorBody = typeof UpstreamErrorBody.Type
