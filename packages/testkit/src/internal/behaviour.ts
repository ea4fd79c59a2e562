/**
 * The behaviours of the fake upstream: what it does with one request, as schemas (so tests and
 * arbitraries can generate them) and constructors. Which bytes each behaviour becomes is the wire
 * modules' business (`openAiChat.ts`, `anthropicMessages.ts`, `openAiResponses.ts`); re-exported by
 * the public `FakeUpstream` module.
 *
 * @internal
 */
import { Usage } from "@switchyard-ts/protocol/OpenAiChat"
import * as Either from "effect/Either"
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"

/** Milliseconds of real time, at most ten minutes; arbitraries stay at or under 10 ms. */
export const Millis = Schema.Int.pipe(Schema.between(0, 600_000)).annotations({
  identifier: "Millis",
  arbitrary: () => (fc) => fc.integer({ min: 0, max: 10 })
})

/** Parse JSON text into an unknown value, `Left` when it is not JSON. */
export const decodeJson = Schema.decodeUnknownEither(Schema.parseJson())

/** A string that is not a JSON document (what a broken proxy or an HTML error page sends). */
export const NotJson = Schema.String.pipe(
  Schema.filter((s) => Either.isLeft(decodeJson(s)), { message: () => "must not be valid JSON" })
).annotations({
  identifier: "NotJson",
  arbitrary: () => (fc) => fc.string({ maxLength: 40 }).map((s) => `<html>${s}`)
})

const UsageSample = Usage.annotations({
  arbitrary: () => (fc) =>
    fc.record({ prompt_tokens: fc.nat(10_000), completion_tokens: fc.nat(10_000) }).map((u) => ({
      ...u,
      total_tokens: u.prompt_tokens + u.completion_tokens
    }))
})

/**
 * Answer 200 with `content`, after `delayMs` (before any byte is sent). A request with
 * `stream: true` gets SSE: a role chunk, the content split into up to three chunks, a chunk with
 * `finish_reason: "stop"`, then — when `stream_options.include_usage` — a usage chunk with empty
 * `choices` (as OpenAI sends it), then `data: [DONE]`. Otherwise a buffered `chat.completion`.
 * `usage` defaults to a rough estimate from the request and content sizes. `gapMs` (streamed answers
 * only) waits that long between consecutive content pieces, as {@link Chunks} does.
 *
 * On `/v1/messages` (Anthropic): a buffered `message` with one text block and `stop_reason:
 * "end_turn"`, or — for `stream: true` — `message_start`, `content_block_start`, `ping`, one
 * `text_delta` per piece (the same pieces), `content_block_stop`, `message_delta` (with
 * `output_tokens`) and `message_stop`. `usage` maps `prompt_tokens` to `input_tokens` (minus
 * `cached_tokens` / `cache_creation_tokens`, which become `cache_read_input_tokens` /
 * `cache_creation_input_tokens`) and `completion_tokens` to `output_tokens`.
 *
 * On `/v1/responses` (OpenAI Responses): a buffered `response` (`status: "completed"`, one
 * `message` item with one `output_text` part), or — for `stream: true` — `response.created`,
 * `response.in_progress`, `response.output_item.added`, `response.content_part.added`, one
 * `response.output_text.delta` per piece, `response.output_text.done`,
 * `response.content_part.done`, `response.output_item.done` and `response.completed` (the whole
 * response with its usage), each `event: <type>` + `data:` with `sequence_number` counting from 0.
 * `usage` maps to `input_tokens` (cached tokens included, also in `input_tokens_details`),
 * `output_tokens` and `total_tokens`.
 *
 * On a Gemini path (`…/models/{model}:generateContent`, streamed by `:streamGenerateContent`):
 * a buffered `GenerateContentResponse` (one candidate, one text part, `finishReason: "STOP"`), or
 * one `data:` event per piece, the last carrying `finishReason` and `usageMetadata`. Every other
 * behaviour is encoded alike there: `Status` in Gemini's envelope (`{"error":{"code","message",
 * "status"}}`), `ToolUse` as a `functionCall` part (its `id` only when given), `Thinking` as a
 * signed thought part, `StreamError` as a `data: {"error": …}` event, `CloseMidStream` after that
 * many text events (see `gemini.ts`).
 */
export const Ok = Schema.TaggedStruct("Ok", {
  content: Schema.String,
  delayMs: Schema.optional(Millis),
  gapMs: Schema.optional(Millis),
  usage: Schema.optional(UsageSample)
})
/** @see {@link Ok} */
export type Ok = typeof Ok.Type

/** Accept the request and never answer. Closing the server (the scope) destroys the socket. */
export const Stall = Schema.TaggedStruct("Stall", {})
/** @see {@link Stall} */
export type Stall = typeof Stall.Type

/**
 * Answer `status` (400–599) with `{"error":{"message","type","code"}}`, or with `body` verbatim when
 * given (for provider-specific shapes). `type` defaults to `server_error` for 5xx and
 * `invalid_request_error` otherwise; `code` to `null`. `retryAfter` sets the `Retry-After` header.
 *
 * On `/v1/messages` the envelope is Anthropic's, `{"type":"error","error":{"type","message"}}`
 * (`code` unused), with `type` defaulting by status: 400 `invalid_request_error`, 401
 * `authentication_error`, 403 `permission_error`, 404 `not_found_error`, 413 `request_too_large`,
 * 429 `rate_limit_error`, 529 `overloaded_error`, otherwise `api_error`. On `/v1/responses` the
 * envelope is OpenAI's, as on `/v1/chat/completions`.
 */
export const Status = Schema.TaggedStruct("Status", {
  status: Schema.Int.pipe(Schema.between(400, 599)),
  message: Schema.optional(Schema.String),
  type: Schema.optional(Schema.String),
  code: Schema.optional(Schema.String),
  retryAfter: Schema.optional(
    Schema.String.annotations({ arbitrary: () => (fc) => fc.integer({ min: 0, max: 2 }).map(String) })
  ),
  body: Schema.optional(Schema.String)
})
/** @see {@link Status} */
export type Status = typeof Status.Type

/** Answer 200, `content-type: application/json`, with a body that is not JSON. */
export const Garbage = Schema.TaggedStruct("Garbage", { body: NotJson })
/** @see {@link Garbage} */
export type Garbage = typeof Garbage.Type

/**
 * Answer SSE (whatever the request's `stream` flag): headers at once, then one chunk per element of
 * `chunks` as a content delta, waiting `gapMs` between consecutive chunks, then the stop chunk
 * (usage chunk when requested) and `data: [DONE]`. On `/v1/messages` and `/v1/responses`: the
 * streamed {@link Ok} sequence with exactly these pieces.
 */
export const Chunks = Schema.TaggedStruct("Chunks", {
  chunks: Schema.Array(Schema.String).annotations({
    arbitrary: () => (fc) => fc.array(fc.string({ maxLength: 12 }), { maxLength: 5 })
  }),
  gapMs: Schema.optional(Millis)
})
/** @see {@link Chunks} */
export type Chunks = typeof Chunks.Type

/**
 * Send 200 SSE headers and `chunksBeforeClose` content chunks (each flushed to the socket), then
 * destroy the socket: the client sees a truncated stream without `[DONE]`. On `/v1/messages`: the
 * socket is destroyed after `message_start`, the text block's start, `ping` and that many
 * `text_delta`s (no `message_stop`). On `/v1/responses`: after `response.created`,
 * `response.in_progress`, the message's `output_item.added` and `content_part.added` and that many
 * `response.output_text.delta`s (no `response.completed`).
 */
export const CloseMidStream = Schema.TaggedStruct("CloseMidStream", {
  chunksBeforeClose: Schema.Int.pipe(Schema.between(0, 1_000)).annotations({
    arbitrary: () => (fc) => fc.integer({ min: 0, max: 5 })
  })
})
/** @see {@link CloseMidStream} */
export type CloseMidStream = typeof CloseMidStream.Type

/**
 * Answer like {@link Ok} (buffered or SSE) with the JSON of the request received as content:
 * `{"method","path","headers","body"}` — for asserting what reached the upstream.
 */
export const Echo = Schema.TaggedStruct("Echo", {})
/** @see {@link Echo} */
export type Echo = typeof Echo.Type

/** Destroy the socket as soon as the request is read, without a response (a connection reset). */
export const Reset = Schema.TaggedStruct("Reset", {})
/** @see {@link Reset} */
export type Reset = typeof Reset.Type

const isJsonObjectText = (s: string): boolean =>
  Either.match(decodeJson(s), { onLeft: () => false, onRight: Predicate.isRecord })

/** The JSON text of an object (not an array, not a scalar), e.g. tool-call arguments. */
export const JsonObjectText = Schema.String.pipe(
  Schema.filter(isJsonObjectText, { message: () => "must be the JSON text of an object" })
).annotations({
  identifier: "JsonObjectText",
  arbitrary: () => (fc) =>
    fc.array(
      fc.tuple(fc.constantFrom("city", "query", "n", "unit"), fc.oneof(fc.integer(), fc.string({ maxLength: 8 }))),
      { maxLength: 3 }
    ).map((entries) => JSON.stringify(Object.fromEntries(entries)))
})

/**
 * Answer 200 with the model calling one tool, `name`, with `input` (the JSON text of an object) as
 * its arguments, after optional `text`. `id` defaults to `call_fake_<n>` (OpenAI) or
 * `toolu_fake_<n>` (Anthropic), `<n>` being the request's sequence number; usage is estimated.
 *
 * OpenAI buffered: the message has `content: text ?? null` and one `function` entry in
 * `tool_calls`; `finish_reason: "tool_calls"`. OpenAI streaming: a role chunk, a text delta (when
 * `text` is not empty), a `tool_calls` delta with `id`, `type`, `name` and empty `arguments`, then
 * `arguments` in 2–3 fragments, a `finish_reason: "tool_calls"` chunk, the usage chunk when
 * requested, `[DONE]`.
 *
 * Anthropic buffered: a text block (when `text` is not empty) and a `tool_use` block whose `input`
 * is the parsed object; `stop_reason: "tool_use"`. Anthropic streaming: the text block's events
 * (when any), `content_block_start` of the `tool_use` block (`input: {}`), `input_json_delta`
 * fragments (2–3), `content_block_stop`, `message_delta` with `stop_reason: "tool_use"`,
 * `message_stop`.
 *
 * Responses (`id` is the item's `call_id`, default `call_fake_<n>`): buffered, a `message` item
 * (when `text` is not empty) and a `function_call` item (`id: "fc_fake_<n>"`, `call_id`, `name`,
 * `arguments` verbatim); streamed, the message's events (when any), then the call's
 * `output_item.added` (empty `arguments`), 2–3 `response.function_call_arguments.delta`,
 * `response.function_call_arguments.done`, `output_item.done`, `response.completed`.
 */
export const ToolUse = Schema.TaggedStruct("ToolUse", {
  name: Schema.String.annotations({ arbitrary: () => (fc) => fc.constantFrom("get_weather", "search", "lookup") }),
  input: JsonObjectText,
  id: Schema.optional(
    Schema.String.annotations({ arbitrary: () => (fc) => fc.string({ maxLength: 8 }).map((s) => `call_${s}`) })
  ),
  text: Schema.optional(Schema.String.annotations({ arbitrary: () => (fc) => fc.string({ maxLength: 12 }) }))
})
/** @see {@link ToolUse} */
export type ToolUse = typeof ToolUse.Type

/**
 * Fail in-band, as providers do once a stream has started: 200 SSE headers (whatever the request's
 * `stream` flag), one content delta (`"chunk 0 "`), then an error event, then the response ends
 * normally (no `[DONE]`, no `message_stop`). OpenAI: `data: {"error":{"message","type":"server_error"}}`;
 * Anthropic (after `message_start`, the text block's start and `ping`):
 * `event: error` with `{"type":"error","error":{"type":"overloaded_error","message"}}`. Responses
 * (after `response.created`, `response.in_progress`, the message's item and part and one
 * `output_text.delta`): `event: error` with `{"type":"error","code":"server_error","message",
 * "param":null}`, then `response.failed` (`status: "failed"`, `error: {"code","message"}`), no
 * `response.completed`.
 */
export const StreamError = Schema.TaggedStruct("StreamError", {
  message: Schema.String.annotations({ arbitrary: () => (fc) => fc.string({ maxLength: 20 }) })
})
/** @see {@link StreamError} */
export type StreamError = typeof StreamError.Type

/**
 * Answer with extended thinking: a signed thinking block, then `content`.
 *
 * Anthropic buffered: `[{"type":"thinking","thinking","signature"}, {"type":"text","text"}]`.
 * Anthropic streaming: block 0 `thinking` (`thinking_delta` pieces, then one `signature_delta`),
 * block 1 text. OpenAI (the convention of OpenAI-compatible gateways): buffered
 * `reasoning_content` plus `thinking_blocks: [{"type":"thinking","thinking","signature"}]`;
 * streamed `reasoning_content` deltas, one `thinking_blocks` delta with the signature, then the
 * content deltas. Responses: a `reasoning` item (`summary: [{"type":"summary_text","text":
 * thinking}]`, `encrypted_content: signature`; no summary when `thinking` is empty) before the
 * message item; streamed, its `output_item.added`, the `response.reasoning_summary_part.added`,
 * `reasoning_summary_text.delta` / `.done` and `reasoning_summary_part.done` events, its
 * `output_item.done` (with `encrypted_content`), then the message at `output_index` 1.
 */
export const Thinking = Schema.TaggedStruct("Thinking", {
  thinking: Schema.String.annotations({ arbitrary: () => (fc) => fc.string({ maxLength: 12 }) }),
  signature: Schema.NonEmptyString.annotations({
    arbitrary: () => (fc) => fc.string({ minLength: 1, maxLength: 8 }).map((s) => `sig_${s}`)
  }),
  content: Schema.String.annotations({ arbitrary: () => (fc) => fc.string({ maxLength: 12 }) })
})
/** @see {@link Thinking} */
export type Thinking = typeof Thinking.Type

/**
 * Answer 200 with exactly these bytes, whatever the API: `body` (the JSON text of an object) for a
 * buffered request; for `stream: true`, SSE of `events` in order — `event: <event>` (when set) then
 * `data: <data>` — and the stream ends. For answers the other behaviours do not model (server-tool
 * blocks, citations, event types newer than ours), to assert they reach the caller untouched.
 */
export const Raw = Schema.TaggedStruct("Raw", {
  body: JsonObjectText,
  events: Schema.Array(Schema.Struct({ event: Schema.optional(Schema.String), data: JsonObjectText }))
})
/** @see {@link Raw} */
export type Raw = typeof Raw.Type

/** What the fake upstream does with one chat request (any of its APIs), discriminated by `_tag`. */
export const Behaviour = Schema.Union(
  Ok,
  Stall,
  Status,
  Garbage,
  Chunks,
  CloseMidStream,
  Echo,
  Reset,
  ToolUse,
  StreamError,
  Thinking,
  Raw
)
/** @see {@link Behaviour} */
export type Behaviour = typeof Behaviour.Type

/** `Stall` as a value. */
export const stall: Behaviour = Stall.make({})
/** `Echo` as a value. */
export const echo: Behaviour = Echo.make({})
/** `Reset` as a value. */
export const reset: Behaviour = Reset.make({})

/** An `Ok` answering `content`. */
export const ok = (
  content: string,
  options: { readonly delayMs?: number; readonly gapMs?: number; readonly usage?: Usage } = {}
): Behaviour => Ok.make({ content, ...options })

/** A `Status` with the standard envelope; `options` as in {@link Status}. */
export const status = (
  code: number,
  options: Omit<Status, "_tag" | "status"> = {}
): Behaviour => Status.make({ status: code, ...options })

/** The 400 an OpenAI upstream answers when the prompt exceeds the context window. */
export const contextLengthExceeded: Behaviour = Status.make({
  status: 400,
  type: "invalid_request_error",
  code: "context_length_exceeded",
  message: "This model's maximum context length is 8192 tokens. However, your messages resulted in 9001 tokens."
})

/**
 * The 400 an Anthropic upstream answers when the prompt exceeds the context window
 * (`invalid_request_error`, "prompt is too long: …").
 */
export const anthropicContextTooLong: Behaviour = Status.make({
  status: 400,
  type: "invalid_request_error",
  message: "prompt is too long: 210000 tokens > 200000 maximum"
})

/**
 * A `ToolUse` calling `name` with `input`, the JSON text of an object. Throws a `ParseError` (a
 * programmer error) when `input` is not one.
 */
export const toolUse = (
  name: string,
  input: string,
  options: { readonly id?: string; readonly text?: string } = {}
): Behaviour => ToolUse.make({ name, input, ...options })

/** A `Thinking` answer: a thinking block signed with `signature`, then `content`. */
export const thinking = (text: string, signature: string, content: string): Behaviour =>
  Thinking.make({ thinking: text, signature, content })

/** A `StreamError` ending the stream with `message`. */
export const streamError = (message: string): Behaviour => StreamError.make({ message })

/** The content of the server-wide default behaviour. */
export const defaultContent = "Hello from the fake upstream."

/** The server-wide default: `Ok` with {@link defaultContent}. */
export const defaultBehaviour: Behaviour = Ok.make({ content: defaultContent })
