/**
 * Wire schemas of the OpenAI Responses API (`POST /v1/responses`): the request (input items, tools,
 * tool choice, output format, reasoning), the buffered response object, every event of the
 * streamed SSE sequence and the usage record. Errors use OpenAI's envelope (`ErrorEnvelope` in
 * {@link module:Errors}).
 *
 * Like {@link module:OpenAiChat}, every schema is an identity schema (its `Type` equals its
 * `Encoded`). Decode with {@link decodeOptions} so unknown fields are kept and can be forwarded
 * untouched. Input items, content parts, tools, tool choices, output items and stream events of
 * types this version does not know are accepted as "other" members (any `type` string outside the
 * known ones), so a newer client or upstream still decodes; the translations decide what to do
 * with them (see {@link module:TranslateResponses}).
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

// ---------------------------------------------------------------------------------------------
// content parts

/** `{"type": "input_text", "text": "..."}` */
export const InputText = Schema.Struct({ type: Schema.Literal("input_text"), text: Schema.String })
export type InputText = typeof InputText.Type
/** `{"type": "input_image", "image_url": "https://…" | "data:…", "file_id"?, "detail"?}` */
export const InputImage = Schema.Struct({
  type: Schema.Literal("input_image"),
  image_url: opt(NullOr(Schema.String)),
  file_id: opt(NullOr(Schema.String)),
  detail: opt(Schema.String)
})
export type InputImage = typeof InputImage.Type
/** `{"type": "output_text", "text": "...", "annotations": [...]}` (assistant content). */
export const OutputText = Schema.Struct({
  type: Schema.Literal("output_text"),
  text: Schema.String,
  annotations: opt(Schema.Array(Schema.Unknown)),
  logprobs: opt(Schema.Array(Schema.Unknown))
})
export type OutputText = typeof OutputText.Type
/** `{"type": "refusal", "refusal": "..."}` (assistant content). */
export const Refusal = Schema.Struct({ type: Schema.Literal("refusal"), refusal: Schema.String })
export type Refusal = typeof Refusal.Type

const knownPartTypes: ReadonlyArray<string> = ["input_text", "input_image", "output_text", "refusal"]
/** A content part of another type (`input_file`, `input_audio`, newer kinds); kept untouched. */
export const OtherPart = otherOf(knownPartTypes, "content part")
/** Any content part of a message item or tool output. */
export const ContentPart = Schema.Union(InputText, InputImage, OutputText, Refusal, OtherPart)
export type ContentPart = typeof ContentPart.Type

// ---------------------------------------------------------------------------------------------
// items

/**
 * A message item: `{"type"?: "message", "role", "content": string | [parts], "id"?, "status"?,
 * "phase"?}`. `type` may be absent (the "easy" input message). Roles: `user`, `assistant`,
 * `system`, `developer`.
 */
export const MessageItem = Schema.Struct({
  type: opt(Schema.Literal("message")),
  role: Schema.Literal("user", "assistant", "system", "developer"),
  content: Schema.Union(Schema.String, Schema.Array(ContentPart)),
  id: opt(NullOr(Schema.String)),
  status: opt(NullOr(Schema.String)),
  phase: opt(NullOr(Schema.String))
})
export type MessageItem = typeof MessageItem.Type

/** `{"type": "function_call", "call_id", "name", "arguments", "namespace"?, "id"?, "status"?}` */
export const FunctionCallItem = Schema.Struct({
  type: Schema.Literal("function_call"),
  call_id: Schema.String,
  name: Schema.String,
  arguments: Schema.String,
  namespace: opt(Schema.String),
  id: opt(NullOr(Schema.String)),
  status: opt(NullOr(Schema.String))
})
export type FunctionCallItem = typeof FunctionCallItem.Type

/** A tool output: a string or content parts (`input_text`, `input_image`, `input_file`). */
export const ToolOutput = Schema.Union(Schema.String, Schema.Array(ContentPart))
export type ToolOutput = typeof ToolOutput.Type

/** `{"type": "function_call_output", "call_id", "output", "id"?, "status"?}` */
export const FunctionCallOutputItem = Schema.Struct({
  type: Schema.Literal("function_call_output"),
  call_id: Schema.String,
  output: ToolOutput,
  id: opt(NullOr(Schema.String)),
  status: opt(NullOr(Schema.String))
})
export type FunctionCallOutputItem = typeof FunctionCallOutputItem.Type

/** `{"type": "custom_tool_call", "call_id", "name", "input", "namespace"?, "id"?}`: a free-form tool call. */
export const CustomToolCallItem = Schema.Struct({
  type: Schema.Literal("custom_tool_call"),
  call_id: Schema.String,
  name: Schema.String,
  input: Schema.String,
  namespace: opt(Schema.String),
  id: opt(NullOr(Schema.String)),
  status: opt(NullOr(Schema.String))
})
export type CustomToolCallItem = typeof CustomToolCallItem.Type

/** `{"type": "custom_tool_call_output", "call_id", "output", "id"?}` */
export const CustomToolCallOutputItem = Schema.Struct({
  type: Schema.Literal("custom_tool_call_output"),
  call_id: Schema.String,
  output: ToolOutput,
  id: opt(NullOr(Schema.String))
})
export type CustomToolCallOutputItem = typeof CustomToolCallOutputItem.Type

/** `{"type": "summary_text", "text": "..."}`: one part of a reasoning summary. */
export const SummaryText = Schema.Struct({ type: Schema.Literal("summary_text"), text: Schema.String })
export type SummaryText = typeof SummaryText.Type

/**
 * `{"type": "reasoning", "id", "summary": [summary_text…], "encrypted_content"?, "content"?}`. With
 * `store: false`, `encrypted_content` (asked for with `include: ["reasoning.encrypted_content"]`)
 * is what carries the reasoning to the next turn. `content` holds `reasoning_text` parts (open
 * models).
 */
export const ReasoningItem = Schema.Struct({
  type: Schema.Literal("reasoning"),
  id: opt(Schema.String),
  summary: Schema.Array(SummaryText),
  encrypted_content: opt(NullOr(Schema.String)),
  content: opt(NullOr(Schema.Array(Schema.Struct({ type: Schema.String, text: Schema.String })))),
  status: opt(NullOr(Schema.String))
})
export type ReasoningItem = typeof ReasoningItem.Type

/** The input item types this schema names (every other type is an {@link OtherItem}). */
export const knownItemTypes: ReadonlyArray<string> = [
  "message",
  "function_call",
  "function_call_output",
  "custom_tool_call",
  "custom_tool_call_output",
  "reasoning"
]
/**
 * An item of another type: hosted tool calls and their outputs (`web_search_call`,
 * `file_search_call`, `local_shell_call`, `mcp_call`, …), `item_reference`, `compaction`, newer
 * kinds; kept untouched.
 */
export const OtherItem = otherOf(knownItemTypes, "item")
export type OtherItem = typeof OtherItem.Type

/** Any item of a request's `input`. */
export const InputItem = Schema.Union(
  MessageItem,
  FunctionCallItem,
  FunctionCallOutputItem,
  CustomToolCallItem,
  CustomToolCallOutputItem,
  ReasoningItem,
  OtherItem
)
export type InputItem = typeof InputItem.Type

// ---------------------------------------------------------------------------------------------
// tools

/** `{"type": "function", "name", "description"?, "parameters"?, "strict"?}` */
export const FunctionTool = Schema.Struct({
  type: Schema.Literal("function"),
  name: Schema.String,
  description: opt(NullOr(Schema.String)),
  parameters: opt(NullOr(JsonObject)),
  strict: opt(NullOr(Schema.Boolean))
})
export type FunctionTool = typeof FunctionTool.Type

/**
 * `{"type": "custom", "name", "description"?, "format"?}`: a tool whose input is free-form text
 * (optionally constrained by a grammar `format`), called with `custom_tool_call` items.
 */
export const CustomTool = Schema.Struct({
  type: Schema.Literal("custom"),
  name: Schema.String,
  description: opt(Schema.String),
  format: opt(Schema.Unknown)
})
export type CustomTool = typeof CustomTool.Type

/**
 * `{"type": "namespace", "name", "description", "tools": [function | custom tools]}`: a group of
 * tools (Codex: MCP servers, `multi_agent_v1`); a call names its tool and its `namespace`.
 */
export const NamespaceTool = Schema.Struct({
  type: Schema.Literal("namespace"),
  name: Schema.String,
  description: opt(Schema.String),
  tools: Schema.Array(Schema.Union(FunctionTool, CustomTool))
})
export type NamespaceTool = typeof NamespaceTool.Type

/** A hosted tool (`web_search`, `file_search`, `code_interpreter`, `mcp`, …); kept untouched. */
export const HostedTool = otherOf(["function", "custom", "namespace"], "tool")
export type HostedTool = typeof HostedTool.Type

/** Any tool of a request. */
export const Tool = Schema.Union(FunctionTool, CustomTool, NamespaceTool, HostedTool)
export type Tool = typeof Tool.Type

/**
 * `{"type": "additional_tools", "role": "developer", "tools": [tools…]}`: tools declared by an
 * input item instead of `tools` (Codex 0.171.0 for the newer models of its bundled catalog: a
 * `functions` and a `collaboration` namespace). Not a member of {@link InputItem}, where it
 * decodes as an {@link OtherItem}; the translations read it with this schema.
 */
export const AdditionalToolsItem = Schema.Struct({
  type: Schema.Literal("additional_tools"),
  role: opt(Schema.String),
  tools: Schema.Array(Tool)
})
export type AdditionalToolsItem = typeof AdditionalToolsItem.Type

/**
 * `"none" | "auto" | "required"`, `{"type": "function" | "custom", "name"}`, `{"type":
 * "allowed_tools", …}`, or a hosted tool type (`{"type": "web_search"}`), kept untouched.
 */
export const ToolChoice = Schema.Union(
  Schema.Literal("none", "auto", "required"),
  Schema.Struct({ type: Schema.Literal("function"), name: Schema.String }),
  Schema.Struct({ type: Schema.Literal("custom"), name: Schema.String }),
  otherOf(["function", "custom"], "tool choice")
)
export type ToolChoice = typeof ToolChoice.Type

/** `text.format`: plain text, JSON mode, or a JSON Schema. */
export const TextFormat = Schema.Union(
  Schema.Struct({ type: Schema.Literal("text") }),
  Schema.Struct({ type: Schema.Literal("json_object") }),
  Schema.Struct({
    type: Schema.Literal("json_schema"),
    name: Schema.String,
    schema: JsonObject,
    description: opt(Schema.String),
    strict: opt(NullOr(Schema.Boolean))
  })
)
export type TextFormat = typeof TextFormat.Type

/** `text`: the output format and verbosity. */
export const TextConfig = Schema.Struct({
  format: opt(TextFormat),
  verbosity: opt(NullOr(Schema.String))
})

/** `reasoning`: effort and summary mode. */
export const ReasoningConfig = Schema.Struct({
  effort: opt(NullOr(Schema.String)),
  summary: opt(NullOr(Schema.String))
})

/**
 * A Responses request. `model` names a route. `input` is a string (one user message) or items.
 * Codex sends `model, stream, input, tools, tool_choice, parallel_tool_calls, reasoning, store,
 * include, prompt_cache_key, client_metadata` (see test/fixtures/codex-request.json).
 */
export const ResponsesRequest = Schema.Struct({
  model: Schema.String.pipe(
    Schema.filter((m) => m.trim().length > 0, { message: () => "model must be a non-empty string" })
  ),
  input: opt(Schema.Union(Schema.String, Schema.Array(InputItem))),
  instructions: opt(NullOr(Schema.String)),
  tools: opt(Schema.Array(Tool)),
  tool_choice: opt(ToolChoice),
  parallel_tool_calls: opt(NullOr(Schema.Boolean)),
  text: opt(NullOr(TextConfig)),
  max_output_tokens: opt(NullOr(NonNegativeInt)),
  reasoning: opt(NullOr(ReasoningConfig)),
  include: opt(NullOr(Schema.Array(Schema.String))),
  store: opt(NullOr(Schema.Boolean)),
  prompt_cache_key: opt(NullOr(Schema.String)),
  metadata: opt(NullOr(Schema.Record({ key: Schema.String, value: Schema.String }))),
  stream: opt(NullOr(Schema.Boolean)),
  stream_options: opt(NullOr(Schema.Struct({ include_obfuscation: opt(Schema.Boolean) }))),
  previous_response_id: opt(NullOr(Schema.String)),
  client_metadata: opt(NullOr(JsonObject)),
  temperature: opt(NullOr(Schema.Number)),
  top_p: opt(NullOr(Schema.Number)),
  user: opt(Schema.String),
  service_tier: opt(NullOr(Schema.String)),
  truncation: opt(NullOr(Schema.String))
})
export type ResponsesRequest = typeof ResponsesRequest.Type

// ---------------------------------------------------------------------------------------------
// responses

/**
 * Token usage; `input_tokens` counts ALL prompt tokens, cached ones included;
 * `cache_write_1h_tokens` are the cache writes kept for an hour (switchyard's name, as in Chat);
 * `cost` is the provider's own charge in USD when it reports one.
 */
export const Usage = Schema.Struct({
  input_tokens: Schema.Number,
  output_tokens: Schema.Number,
  total_tokens: Schema.Number,
  input_tokens_details: opt(NullOr(Schema.Struct({
    cached_tokens: opt(NullOr(Schema.Number)),
    cache_write_tokens: opt(NullOr(Schema.Number)),
    cache_write_1h_tokens: opt(NullOr(Schema.Number))
  }))),
  output_tokens_details: opt(NullOr(Schema.Struct({ reasoning_tokens: opt(NullOr(Schema.Number)) }))),
  cost: opt(NullOr(Schema.Number))
})
export type Usage = typeof Usage.Type

/** An output item: a message, a function / custom tool call, reasoning, or another (hosted) item. */
export const OutputItem = Schema.Union(MessageItem, FunctionCallItem, CustomToolCallItem, ReasoningItem, OtherItem)
export type OutputItem = typeof OutputItem.Type

/** The error of a failed response. */
export const ResponseError = Schema.Struct({ code: opt(NullOr(Schema.String)), message: Schema.String })

/**
 * A response object (`object: "response"`): the buffered answer, and the `response` of the
 * lifecycle stream events. `status` is `completed`, `incomplete` (see `incomplete_details.reason`:
 * `max_output_tokens`, `content_filter`), `failed`, `in_progress`, `queued` or `cancelled`.
 */
export const ResponseObject = Schema.Struct({
  id: Schema.String,
  object: Schema.Literal("response"),
  created_at: Schema.Number,
  status: opt(Schema.String),
  model: Schema.String,
  output: Schema.Array(OutputItem),
  usage: opt(NullOr(Usage)),
  error: opt(NullOr(ResponseError)),
  incomplete_details: opt(NullOr(Schema.Struct({ reason: opt(NullOr(Schema.String)) })))
})
export type ResponseObject = typeof ResponseObject.Type

// ---------------------------------------------------------------------------------------------
// stream events

const seq = { sequence_number: Schema.Number }
const lifecycle = <T extends string>(type: T) =>
  Schema.Struct({ type: Schema.Literal(type), ...seq, response: ResponseObject })
const itemRef = { item_id: Schema.String, output_index: NonNegativeInt }
const partRef = { ...itemRef, content_index: NonNegativeInt }
const summaryRef = { ...itemRef, summary_index: NonNegativeInt }

/** `response.created`: the first event, the response `in_progress` with no output yet. */
export const CreatedEvent = lifecycle("response.created")
/** `response.in_progress`: sent right after `response.created`. */
export const InProgressEvent = lifecycle("response.in_progress")
/** `response.completed`: the last event of a successful stream, with every output item and the usage. */
export const CompletedEvent = lifecycle("response.completed")
/** `response.failed`: the last event of a failed stream (`status: "failed"`, `error`). */
export const FailedEvent = lifecycle("response.failed")
/** `response.incomplete`: the last event of a stream cut short (`incomplete_details.reason`). */
export const IncompleteEvent = lifecycle("response.incomplete")
/** `response.output_item.added`: an item starts at `output_index` (0, 1, 2…). */
export const OutputItemAddedEvent = Schema.Struct({
  type: Schema.Literal("response.output_item.added"),
  ...seq,
  output_index: NonNegativeInt,
  item: OutputItem
})
/** `response.output_item.done`: an item is complete (after all its deltas). */
export const OutputItemDoneEvent = Schema.Struct({
  type: Schema.Literal("response.output_item.done"),
  ...seq,
  output_index: NonNegativeInt,
  item: OutputItem
})
/** A message content part: `output_text`, `refusal`, or another kind. */
export const OutputPart = Schema.Union(OutputText, Refusal, otherOf(["output_text", "refusal"], "content part"))
/** `response.content_part.added`: a part of a message item starts. */
export const ContentPartAddedEvent = Schema.Struct({
  type: Schema.Literal("response.content_part.added"),
  ...seq,
  ...partRef,
  part: OutputPart
})
/** `response.content_part.done`: a part of a message item is complete. */
export const ContentPartDoneEvent = Schema.Struct({
  type: Schema.Literal("response.content_part.done"),
  ...seq,
  ...partRef,
  part: OutputPart
})
/** `response.output_text.delta`: a fragment of an `output_text` part. */
export const OutputTextDeltaEvent = Schema.Struct({
  type: Schema.Literal("response.output_text.delta"),
  ...seq,
  ...partRef,
  delta: Schema.String,
  logprobs: opt(Schema.Array(Schema.Unknown))
})
/** `response.output_text.done`: the whole text of an `output_text` part. */
export const OutputTextDoneEvent = Schema.Struct({
  type: Schema.Literal("response.output_text.done"),
  ...seq,
  ...partRef,
  text: Schema.String,
  logprobs: opt(Schema.Array(Schema.Unknown))
})
/** `response.refusal.delta`: a fragment of a `refusal` part. */
export const RefusalDeltaEvent = Schema.Struct({
  type: Schema.Literal("response.refusal.delta"),
  ...seq,
  ...partRef,
  delta: Schema.String
})
/** `response.refusal.done`: the whole refusal. */
export const RefusalDoneEvent = Schema.Struct({
  type: Schema.Literal("response.refusal.done"),
  ...seq,
  ...partRef,
  refusal: Schema.String
})
/** `response.function_call_arguments.delta`: a fragment of a function call's arguments. */
export const FunctionCallArgumentsDeltaEvent = Schema.Struct({
  type: Schema.Literal("response.function_call_arguments.delta"),
  ...seq,
  ...itemRef,
  delta: Schema.String
})
/** `response.function_call_arguments.done`: the whole arguments of a function call. */
export const FunctionCallArgumentsDoneEvent = Schema.Struct({
  type: Schema.Literal("response.function_call_arguments.done"),
  ...seq,
  ...itemRef,
  arguments: Schema.String,
  name: opt(Schema.String)
})
/** `response.custom_tool_call_input.delta`: a fragment of a custom tool call's input. */
export const CustomToolCallInputDeltaEvent = Schema.Struct({
  type: Schema.Literal("response.custom_tool_call_input.delta"),
  ...seq,
  ...itemRef,
  delta: Schema.String
})
/** `response.custom_tool_call_input.done`: the whole input of a custom tool call. */
export const CustomToolCallInputDoneEvent = Schema.Struct({
  type: Schema.Literal("response.custom_tool_call_input.done"),
  ...seq,
  ...itemRef,
  input: Schema.String
})
/** `response.reasoning_summary_part.added`: a summary part of a reasoning item starts. */
export const ReasoningSummaryPartAddedEvent = Schema.Struct({
  type: Schema.Literal("response.reasoning_summary_part.added"),
  ...seq,
  ...summaryRef,
  part: SummaryText
})
/** `response.reasoning_summary_part.done`: a summary part is complete. */
export const ReasoningSummaryPartDoneEvent = Schema.Struct({
  type: Schema.Literal("response.reasoning_summary_part.done"),
  ...seq,
  ...summaryRef,
  part: SummaryText
})
/** `response.reasoning_summary_text.delta`: a fragment of a summary part. */
export const ReasoningSummaryTextDeltaEvent = Schema.Struct({
  type: Schema.Literal("response.reasoning_summary_text.delta"),
  ...seq,
  ...summaryRef,
  delta: Schema.String
})
/** `response.reasoning_summary_text.done`: the whole text of a summary part. */
export const ReasoningSummaryTextDoneEvent = Schema.Struct({
  type: Schema.Literal("response.reasoning_summary_text.done"),
  ...seq,
  ...summaryRef,
  text: Schema.String
})
/**
 * `{"type": "error", "sequence_number", "code", "message", "param"}` (OpenAI). The terminal error
 * event switchyard writes also carries the anchor's `error: {"message", "type"}` object (see
 * `TranslateResponses.streamErrorEvents`); every field but `type` is optional so both decode.
 */
export const ErrorEvent = Schema.Struct({
  type: Schema.Literal("error"),
  sequence_number: opt(Schema.Number),
  code: opt(NullOr(Schema.String)),
  message: opt(Schema.String),
  param: opt(NullOr(Schema.String)),
  error: opt(Schema.Struct({ message: Schema.String, type: opt(Schema.String) }))
})

const knownEvents = [
  CreatedEvent,
  InProgressEvent,
  CompletedEvent,
  FailedEvent,
  IncompleteEvent,
  OutputItemAddedEvent,
  OutputItemDoneEvent,
  ContentPartAddedEvent,
  ContentPartDoneEvent,
  OutputTextDeltaEvent,
  OutputTextDoneEvent,
  RefusalDeltaEvent,
  RefusalDoneEvent,
  FunctionCallArgumentsDeltaEvent,
  FunctionCallArgumentsDoneEvent,
  CustomToolCallInputDeltaEvent,
  CustomToolCallInputDoneEvent,
  ReasoningSummaryPartAddedEvent,
  ReasoningSummaryPartDoneEvent,
  ReasoningSummaryTextDeltaEvent,
  ReasoningSummaryTextDoneEvent,
  ErrorEvent
] as const

/** The `type` of every stream event this version knows. */
export const streamEventTypes: ReadonlySet<string> = new Set(knownEvents.flatMap((event) => event.fields.type.literals))

/**
 * An event of another type (`response.queued`, `response.output_text.annotation.added`, hosted
 * tool progress, `response.reasoning_text.delta`, newer kinds); decoders skip it.
 */
export const OtherEvent = Schema.Struct({
  type: Schema.String.pipe(
    Schema.filter((t) => !streamEventTypes.has(t), { message: () => "unknown stream event type" })
  ),
  sequence_number: opt(Schema.Number)
})

/** One server-sent event of a streamed response (the SSE `data` payload; its `event:` name equals `type`). */
export const StreamEvent = Schema.Union(...knownEvents, OtherEvent)
export type StreamEvent = typeof StreamEvent.Type
