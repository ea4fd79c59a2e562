/**
 * A fault-injecting upstream speaking both the OpenAI Chat Completions API and the Anthropic
 * Messages API, for integration tests, the demo and benchmarks.
 *
 * {@link make} starts a real `node:http` server on `127.0.0.1` (a free port unless one is given) that
 * serves two chat routes — `POST /v1/chat/completions` (also `/chat/completions`) in the OpenAI
 * format and `POST /v1/messages` (also `/messages`) in the Anthropic format — plus
 * `POST /v1/messages/count_tokens` (`{"input_tokens"}` estimated from the body size) and
 * `GET /v1/models`; anything else is a 404 with the OpenAI error envelope. What a chat request gets
 * is a {@link Behaviour}, chosen by the request body's `model` whichever the route: the model's
 * one-shot {@link FakeUpstream.script | script} first, then its default
 * ({@link FakeUpstream.setBehaviour | setBehaviour}), then the server-wide default (an {@link Ok}
 * with fixed content). Every behaviour is encoded in the format of the route it was requested on
 * (OpenAI chunks and `[DONE]`, or Anthropic `event:`/`data:` SSE and error envelopes). Every
 * received request is logged with its path, its TCP connection and that connection's fate, so a test
 * can assert "the upstream saw its connection closed before the response finished" or "the client
 * used two sockets", and can wait for such a state of the log (`awaitRequest`, `awaitClosed`,
 * `awaitRequests`) instead of sleeping and counting.
 *
 * Raw sockets are needed to stall and to cut streams, hence plain `node:http`: each request runs as a
 * fiber of a `FiberSet` runtime captured in {@link make}, and closing the scope interrupts those fibers
 * and destroys every socket. Delays (`Ok.delayMs`, `Chunks.gapMs`) use real timers (`setTimeout`),
 * not the Effect `Clock`: use it from `it.live` / `it.scopedLive` tests and real programs, not under
 * a frozen `TestClock`.
 */
import type * as Arr from "effect/Array"
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as FiberSet from "effect/FiberSet"
import * as HashMap from "effect/HashMap"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import * as Ref from "effect/Ref"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as SubscriptionRef from "effect/SubscriptionRef"
import * as Http from "node:http"
import { type ChatCompletion, type ChatCompletionChunk, Usage } from "@switchyard-ts/protocol/OpenAiChat"
import * as AnthropicWire from "./internal/anthropicWire.js"

// ---------------------------------------------------------------------------------------------
// Behaviours
// ---------------------------------------------------------------------------------------------

/** Milliseconds of real time, at most ten minutes; arbitraries stay at or under 10 ms. */
export const Millis = Schema.Int.pipe(Schema.between(0, 600_000)).annotations({
  identifier: "Millis",
  arbitrary: () => (fc) => fc.integer({ min: 0, max: 10 })
})

const decodeJson = Schema.decodeUnknownEither(Schema.parseJson())

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
 * 429 `rate_limit_error`, 529 `overloaded_error`, otherwise `api_error`.
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
 * (usage chunk when requested) and `data: [DONE]`.
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
 * `text_delta`s (no `message_stop`).
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
 * `event: error` with `{"type":"error","error":{"type":"overloaded_error","message"}}`.
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
 * content deltas.
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

/** What the fake upstream does with one chat request (either API), discriminated by `_tag`. */
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

// ---------------------------------------------------------------------------------------------
// Service
// ---------------------------------------------------------------------------------------------

/** One request the fake upstream received. */
export interface RequestRecord {
  /** Sequence number, starting at 1 for each server. */
  readonly id: number
  /** The body's `model`, `""` when absent (or for non-chat routes). */
  readonly model: string
  readonly method: string
  /** Path without the query string, e.g. `/v1/chat/completions` or `/v1/messages` (tells the API). */
  readonly path: string
  /** Request headers, names lower-case, repeated values joined with `", "`. */
  readonly headers: Readonly<Record<string, string>>
  /** The parsed JSON body; the raw text when it is not JSON; `undefined` when empty. */
  readonly body: unknown
  /** Epoch milliseconds (wall clock) when the body had been read. */
  readonly at: number
  /**
   * Sequence number, starting at 1 for each server, of the TCP connection the request came on:
   * requests with the same number shared one keep-alive socket (e.g. to count a client pool's sockets).
   */
  readonly connection: number
  /**
   * The behaviour served, absent for requests that are not chat requests of either API
   * (`/v1/messages/count_tokens`, `/v1/models`, unknown routes, bodies that are not JSON).
   */
  readonly behaviour?: Behaviour
  /**
   * `true` once the client side closed the connection before the response finished (a
   * disconnecting client, a cancelled call, a client-side timeout, or the server shutting down
   * under a stalled request). Cuts made by the behaviour itself (`CloseMidStream`, `Reset`) do not
   * count.
   */
  readonly closedEarly: boolean
}

/** Failed to bind the fake upstream's port (e.g. `EADDRINUSE` for a fixed port). */
export class ListenError extends Data.TaggedError("ListenError")<{
  readonly port: number
  readonly cause: unknown
}> {}

/** Options of {@link make}. */
export interface Options {
  /** Port on 127.0.0.1; 0 (default) picks a free one. */
  readonly port?: number
  /** Behaviour for models with neither script nor default; {@link defaultBehaviour} by default. */
  readonly defaultBehaviour?: Behaviour
  /** Initial per-model defaults; these models are also listed by `GET /v1/models`. */
  readonly models?: Readonly<Record<string, Behaviour>>
}

/** A running fake upstream. */
export class FakeUpstream extends Context.Tag("@switchyard-ts/testkit/FakeUpstream")<FakeUpstream, {
  /** Base URL ending in `/v1`, e.g. `http://127.0.0.1:40123/v1`. */
  readonly url: string
  readonly port: number
  /** Set the default behaviour of `model` (its script, if any, is served first). */
  readonly setBehaviour: (model: string, behaviour: Behaviour) => Effect.Effect<void>
  /** Append one-shot behaviours to `model`'s script; each request consumes one, in order. */
  readonly script: (model: string, behaviours: ReadonlyArray<Behaviour>) => Effect.Effect<void>
  /**
   * Set the default of `model` to a rotation: the n-th request served from the default (n = 0, 1, …
   * counted from this call; its script, if any, is still served first) gets
   * `behaviours[n % behaviours.length]`. `setBehaviour(model, b)` is `cycle(model, [b])`. For a
   * fault rate, rotate through a shuffled list holding faults in that proportion.
   */
  readonly cycle: (model: string, behaviours: Arr.NonEmptyReadonlyArray<Behaviour>) => Effect.Effect<void>
  /** The received requests, oldest first. */
  readonly requests: Effect.Effect<ReadonlyArray<RequestRecord>>
  /** Forget the request log (behaviours and scripts stay). */
  readonly clear: Effect.Effect<void>
  /**
   * The received requests, oldest first, removed from the log in the same step (a request logged
   * between `requests` and `clear` would be lost): lets a long-running program tally the log
   * without it growing. A record drained before its connection closed stays `closedEarly: false`.
   */
  readonly drain: Effect.Effect<ReadonlyArray<RequestRecord>>
  /** Forget the request log, every per-model behaviour and every script. */
  readonly reset: Effect.Effect<void>
  /**
   * Wait until a logged request for `model` is there (already received, or the next one); returns
   * it. Unbounded: put a timeout around it.
   */
  readonly awaitRequest: (model: string) => Effect.Effect<RequestRecord>
  /**
   * Wait until a logged request for `model` has `closedEarly` (already, or later); returns it.
   * Unbounded: put a timeout around it.
   */
  readonly awaitClosed: (model: string) => Effect.Effect<RequestRecord>
  /**
   * Wait until the whole request log satisfies `done` (already, or after a later request or
   * `closedEarly` change); returns the log it held for. For conditions over several requests, e.g.
   * "all 50 streams were closed early" or "the second call has arrived". Woken by each change of the
   * log, never by a timer. Unbounded: put a timeout around it (or rely on the test's timeout).
   */
  readonly awaitRequests: (
    done: (records: ReadonlyArray<RequestRecord>) => boolean
  ) => Effect.Effect<ReadonlyArray<RequestRecord>>
}>() {}

interface ModelState {
  /** The model's default, rotated through (empty: the server default). */
  readonly fallback: ReadonlyArray<Behaviour>
  /** How many requests the rotation has served. */
  readonly turn: number
  readonly queue: ReadonlyArray<Behaviour>
}

const emptyModel: ModelState = { fallback: [], turn: 0, queue: [] }

/** The wire format a chat route speaks. */
type Api = "openai" | "anthropic"

/** What a request handler needs to answer. */
interface Exchange {
  readonly api: Api
  readonly req: Http.IncomingMessage
  readonly res: Http.ServerResponse
  readonly id: number
  readonly model: string
  readonly method: string
  readonly path: string
  readonly headers: Readonly<Record<string, string>>
  readonly body: unknown
  readonly bodyText: string
  readonly at: number
  /** The body's `stream: true`. */
  readonly stream: boolean
  /** The body's `stream_options.include_usage: true` (OpenAI only; Anthropic always sends usage). */
  readonly includeUsage: boolean
  /** Mark that the behaviour itself is about to cut the connection. */
  readonly cutting: () => void
}

const Peek = Schema.Struct({
  model: Schema.optional(Schema.String),
  stream: Schema.optional(Schema.NullOr(Schema.Boolean)),
  stream_options: Schema.optional(Schema.NullOr(Schema.Struct({
    include_usage: Schema.optional(Schema.NullOr(Schema.Boolean))
  })))
})
const decodePeek = Schema.decodeUnknownOption(Peek)

/** Real-time sleep; the timer is cleared on interruption. */
const sleep = (ms: number): Effect.Effect<void> =>
  ms <= 0 ? Effect.void : Effect.async<void>((resume) => {
    const timer = setTimeout(() => resume(Effect.void), ms)
    return Effect.sync(() => clearTimeout(timer))
  })

/** Write and wait until the bytes were handed to the socket. */
const write = (res: Http.ServerResponse, data: string): Effect.Effect<void> =>
  Effect.async<void>((resume) => {
    res.write(data, () => resume(Effect.void))
  })

const readBody = (req: Http.IncomingMessage): Effect.Effect<Option.Option<string>> =>
  Effect.async<Option.Option<string>>((resume) => {
    const parts: Array<Buffer> = []
    req.on("data", (chunk: Buffer) => parts.push(chunk))
    req.on("end", () => resume(Effect.succeed(Option.some(Buffer.concat(parts).toString("utf8")))))
    req.on("error", () => resume(Effect.succeed(Option.none())))
  })

const lowerCaseHeaders = (req: Http.IncomingMessage): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const [name, value] of Object.entries(req.headers)) {
    if (value !== undefined) out[name.toLowerCase()] = Array.isArray(value) ? value.join(", ") : value
  }
  return out
}

const sendJson = (
  res: Http.ServerResponse,
  statusCode: number,
  body: string,
  headers: Readonly<Record<string, string>> = {}
): Effect.Effect<void> =>
  Effect.sync(() => {
    res.writeHead(statusCode, {
      "content-type": "application/json",
      "content-length": String(Buffer.byteLength(body)),
      ...headers
    })
    res.end(body)
  })

const errorEnvelope = (message: string, type: string, code: string | null): string =>
  JSON.stringify({ error: { message, type, code } })

const openSse = (res: Http.ServerResponse): Effect.Effect<void> =>
  Effect.sync(() => {
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" })
    res.flushHeaders()
  })

const sseEvent = (chunk: ChatCompletionChunk): string => `data: ${JSON.stringify(chunk)}\n\n`

const completionId = (ex: Exchange): string => `chatcmpl-fake-${ex.id}`

const chunkOf = (
  ex: Exchange,
  delta: ChatCompletionChunk["choices"][number]["delta"],
  finishReason: string | null
): ChatCompletionChunk => ({
  id: completionId(ex),
  object: "chat.completion.chunk",
  created: Math.floor(ex.at / 1000),
  model: ex.model,
  choices: [{ index: 0, delta, finish_reason: finishReason }]
})

const estimateUsage = (ex: Exchange, content: string): Usage => {
  const prompt = Math.ceil(ex.bodyText.length / 4)
  const completion = content.split(/\s+/).filter((w) => w.length > 0).length
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion }
}

/** Split into at most `parts` pieces on code-point boundaries; no pieces for "". */
const split = (content: string, parts: number): ReadonlyArray<string> => {
  const points = Array.from(content)
  const size = Math.max(1, Math.ceil(points.length / parts))
  const out: Array<string> = []
  for (let i = 0; i < points.length; i += size) out.push(points.slice(i, i + size).join(""))
  return out
}

/** The SSE tail: stop chunk, optional usage chunk, `[DONE]`, end of response. */
const finishSse = (ex: Exchange, usage: Usage, finishReason: string = "stop"): Effect.Effect<void> =>
  Effect.gen(function*() {
    yield* write(ex.res, sseEvent(chunkOf(ex, {}, finishReason)))
    if (ex.includeUsage) {
      const usageChunk: ChatCompletionChunk = { ...chunkOf(ex, {}, null), choices: [], usage }
      yield* write(ex.res, sseEvent(usageChunk))
    }
    yield* Effect.sync(() => ex.res.end("data: [DONE]\n\n"))
  })

/** What `Echo` answers as content: the request as received. */
const echoContent = (ex: Exchange): string =>
  JSON.stringify({ method: ex.method, path: ex.path, headers: ex.headers, body: ex.body })

const retryAfterHeader = (b: Status): Record<string, string> =>
  b.retryAfter === undefined ? {} : { "retry-after": b.retryAfter }

const answer = (ex: Exchange, content: string, usage: Usage | undefined, gapMs = 0): Effect.Effect<void> => {
  const used = usage ?? estimateUsage(ex, content)
  if (ex.stream) {
    return Effect.gen(function*() {
      yield* openSse(ex.res)
      yield* write(ex.res, sseEvent(chunkOf(ex, { role: "assistant", content: "" }, null)))
      let index = 0
      for (const piece of split(content, 3)) {
        if (index++ > 0) yield* sleep(gapMs)
        yield* write(ex.res, sseEvent(chunkOf(ex, { content: piece }, null)))
      }
      yield* finishSse(ex, used)
    })
  }
  const completion: ChatCompletion = {
    id: completionId(ex),
    object: "chat.completion",
    created: Math.floor(ex.at / 1000),
    model: ex.model,
    choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: "stop" }],
    usage: used
  }
  return sendJson(ex.res, 200, JSON.stringify(completion))
}

const cut = (ex: Exchange, destroy: () => void): Effect.Effect<void> =>
  Effect.sync(() => {
    ex.cutting()
    destroy()
  })

/** OpenAI: a buffered completion or a streamed one calling `b`'s tool. */
const openAiToolUse = (ex: Exchange, b: ToolUse): Effect.Effect<void> => {
  const usage = estimateUsage(ex, `${b.text ?? ""} ${b.input}`)
  const id = b.id ?? `call_fake_${ex.id}`
  if (ex.stream) {
    return Effect.gen(function*() {
      yield* openSse(ex.res)
      yield* write(ex.res, sseEvent(chunkOf(ex, { role: "assistant", content: null }, null)))
      if (b.text !== undefined && b.text.length > 0) {
        yield* write(ex.res, sseEvent(chunkOf(ex, { content: b.text }, null)))
      }
      yield* write(
        ex.res,
        sseEvent(chunkOf(ex, {
          tool_calls: [{ index: 0, id, type: "function", function: { name: b.name, arguments: "" } }]
        }, null))
      )
      for (const fragment of split(b.input, 3)) {
        yield* write(ex.res, sseEvent(chunkOf(ex, { tool_calls: [{ index: 0, function: { arguments: fragment } }] }, null)))
      }
      yield* finishSse(ex, usage, "tool_calls")
    })
  }
  const completion: ChatCompletion = {
    id: completionId(ex),
    object: "chat.completion",
    created: Math.floor(ex.at / 1000),
    model: ex.model,
    choices: [{
      index: 0,
      message: {
        role: "assistant",
        content: b.text ?? null,
        tool_calls: [{ id, type: "function", function: { name: b.name, arguments: b.input } }]
      },
      finish_reason: "tool_calls"
    }],
    usage
  }
  return sendJson(ex.res, 200, JSON.stringify(completion))
}

/** OpenAI: a completion (buffered or streamed) with `b`'s signed thinking before its content. */
const openAiThinking = (ex: Exchange, b: Thinking): Effect.Effect<void> => {
  const usage = estimateUsage(ex, `${b.thinking} ${b.content}`)
  const block = { type: "thinking" as const, thinking: b.thinking, signature: b.signature }
  if (ex.stream) {
    return Effect.gen(function*() {
      yield* openSse(ex.res)
      yield* write(ex.res, sseEvent(chunkOf(ex, { role: "assistant", content: "" }, null)))
      for (const piece of split(b.thinking, 2)) {
        yield* write(ex.res, sseEvent(chunkOf(ex, { reasoning_content: piece }, null)))
      }
      yield* write(
        ex.res,
        sseEvent(chunkOf(ex, { thinking_blocks: [{ type: "thinking", thinking: "", signature: b.signature }] }, null))
      )
      for (const piece of split(b.content, 3)) yield* write(ex.res, sseEvent(chunkOf(ex, { content: piece }, null)))
      yield* finishSse(ex, usage)
    })
  }
  const completion: ChatCompletion = {
    id: completionId(ex),
    object: "chat.completion",
    created: Math.floor(ex.at / 1000),
    model: ex.model,
    choices: [{
      index: 0,
      message: { role: "assistant", content: b.content, reasoning_content: b.thinking, thinking_blocks: [block] },
      finish_reason: "stop"
    }],
    usage
  }
  return sendJson(ex.res, 200, JSON.stringify(completion))
}

const performRaw = (behaviour: Raw, ex: Exchange): Effect.Effect<void> =>
  ex.stream
    ? Effect.gen(function*() {
      yield* openSse(ex.res)
      for (const { data, event } of behaviour.events) {
        yield* write(ex.res, `${event === undefined ? "" : `event: ${event}\n`}data: ${data}\n\n`)
      }
      yield* Effect.sync(() => ex.res.end())
    })
    : sendJson(ex.res, 200, behaviour.body)

const performOpenAi = (behaviour: Behaviour, ex: Exchange): Effect.Effect<void> => {
  switch (behaviour._tag) {
    case "Raw":
      return performRaw(behaviour, ex)
    case "Ok":
      return Effect.zipRight(
        sleep(behaviour.delayMs ?? 0),
        answer(ex, behaviour.content, behaviour.usage, behaviour.gapMs)
      )
    case "Echo":
      return answer(ex, echoContent(ex), undefined)
    case "Stall":
      return Effect.never
    case "Status": {
      const body = behaviour.body ?? errorEnvelope(
        behaviour.message ?? `fake upstream answered ${behaviour.status}`,
        behaviour.type ?? (behaviour.status >= 500 ? "server_error" : "invalid_request_error"),
        behaviour.code ?? null
      )
      return sendJson(ex.res, behaviour.status, body, retryAfterHeader(behaviour))
    }
    case "Garbage":
      return sendJson(ex.res, 200, behaviour.body)
    case "Chunks":
      return Effect.gen(function*() {
        yield* openSse(ex.res)
        let index = 0
        for (const piece of behaviour.chunks) {
          if (index > 0) yield* sleep(behaviour.gapMs ?? 0)
          const delta = index === 0 ? { role: "assistant", content: piece } : { content: piece }
          yield* write(ex.res, sseEvent(chunkOf(ex, delta, null)))
          index++
        }
        yield* finishSse(ex, estimateUsage(ex, behaviour.chunks.join("")))
      })
    case "CloseMidStream":
      return Effect.gen(function*() {
        yield* openSse(ex.res)
        for (let i = 0; i < behaviour.chunksBeforeClose; i++) {
          const delta = i === 0 ? { role: "assistant", content: `chunk ${i} ` } : { content: `chunk ${i} ` }
          yield* write(ex.res, sseEvent(chunkOf(ex, delta, null)))
        }
        yield* cut(ex, () => ex.res.destroy())
      })
    case "Reset":
      return cut(ex, () => ex.req.socket.destroy())
    case "ToolUse":
      return openAiToolUse(ex, behaviour)
    case "Thinking":
      return openAiThinking(ex, behaviour)
    case "StreamError":
      return Effect.gen(function*() {
        yield* openSse(ex.res)
        yield* write(ex.res, sseEvent(chunkOf(ex, { role: "assistant", content: "chunk 0 " }, null)))
        yield* Effect.sync(() =>
          ex.res.end(`data: ${JSON.stringify({ error: { message: behaviour.message, type: "server_error" } })}\n\n`)
        )
      })
  }
}

// ---------------------------------------------------------------------------------------------
// Anthropic Messages encoding
// ---------------------------------------------------------------------------------------------

const messageId = (ex: Exchange): string => `msg_fake_${ex.id}`

const emit = (ex: Exchange, event: AnthropicWire.StreamEvent): Effect.Effect<void> =>
  write(ex.res, AnthropicWire.sse(event))

/** SSE headers and `message_start` (empty content, `output_tokens: 1` as Anthropic sends it). */
const anthropicStart = (ex: Exchange, usage: AnthropicWire.Usage): Effect.Effect<void> =>
  Effect.zipRight(
    openSse(ex.res),
    emit(ex, {
      type: "message_start",
      message: {
        id: messageId(ex),
        type: "message",
        role: "assistant",
        model: ex.model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { ...usage, output_tokens: 1 }
      }
    })
  )

/** `content_block_start` of an empty text block at `index`, then `ping`. */
const anthropicTextStart = (ex: Exchange, index: number): Effect.Effect<void> =>
  Effect.zipRight(
    emit(ex, { type: "content_block_start", index, content_block: { type: "text", text: "" } }),
    emit(ex, { type: "ping" })
  )

const textDelta = (ex: Exchange, index: number, text: string): Effect.Effect<void> =>
  emit(ex, { type: "content_block_delta", index, delta: { type: "text_delta", text } })

/** `message_delta`, `message_stop`, end of response. */
const anthropicFinish = (
  ex: Exchange,
  stopReason: AnthropicWire.StopReason,
  usage: AnthropicWire.Usage
): Effect.Effect<void> =>
  Effect.gen(function*() {
    yield* emit(ex, {
      type: "message_delta",
      delta: { stop_reason: stopReason, stop_sequence: null },
      usage: { output_tokens: usage.output_tokens }
    })
    yield* Effect.sync(() => ex.res.end(AnthropicWire.sse({ type: "message_stop" })))
  })

/** A complete streamed text message: the pieces as deltas of block 0, `gapMs` apart. */
const anthropicTextStream = (
  ex: Exchange,
  pieces: ReadonlyArray<string>,
  gapMs: number,
  usage: AnthropicWire.Usage
): Effect.Effect<void> =>
  Effect.gen(function*() {
    yield* anthropicStart(ex, usage)
    yield* anthropicTextStart(ex, 0)
    let index = 0
    for (const piece of pieces) {
      if (index > 0) yield* sleep(gapMs)
      yield* textDelta(ex, 0, piece)
      index++
    }
    yield* emit(ex, { type: "content_block_stop", index: 0 })
    yield* anthropicFinish(ex, "end_turn", usage)
  })

const anthropicMessage = (
  ex: Exchange,
  content: ReadonlyArray<AnthropicWire.ContentBlock>,
  stopReason: AnthropicWire.StopReason,
  usage: AnthropicWire.Usage
): AnthropicWire.Message => ({
  id: messageId(ex),
  type: "message",
  role: "assistant",
  model: ex.model,
  content,
  stop_reason: stopReason,
  stop_sequence: null,
  usage
})

const anthropicAnswer = (
  ex: Exchange,
  content: string,
  usage: Usage | undefined,
  gapMs = 0
): Effect.Effect<void> => {
  const used = AnthropicWire.usageFromOpenAi(usage ?? estimateUsage(ex, content))
  if (ex.stream) return anthropicTextStream(ex, split(content, 3), gapMs, used)
  return sendJson(
    ex.res,
    200,
    JSON.stringify(anthropicMessage(ex, [{ type: "text", text: content }], "end_turn", used))
  )
}

const anthropicToolUse = (ex: Exchange, b: ToolUse): Effect.Effect<void> => {
  const usage = AnthropicWire.usageFromOpenAi(estimateUsage(ex, `${b.text ?? ""} ${b.input}`))
  const id = b.id ?? `toolu_fake_${ex.id}`
  const text = b.text ?? ""
  if (ex.stream) {
    return Effect.gen(function*() {
      yield* anthropicStart(ex, usage)
      let index = 0
      if (text.length > 0) {
        yield* anthropicTextStart(ex, index)
        for (const piece of split(text, 3)) yield* textDelta(ex, index, piece)
        yield* emit(ex, { type: "content_block_stop", index })
        index++
      }
      yield* emit(ex, { type: "content_block_start", index, content_block: { type: "tool_use", id, name: b.name, input: {} } })
      if (index === 0) yield* emit(ex, { type: "ping" })
      for (const fragment of split(b.input, 3)) {
        yield* emit(ex, { type: "content_block_delta", index, delta: { type: "input_json_delta", partial_json: fragment } })
      }
      yield* emit(ex, { type: "content_block_stop", index })
      yield* anthropicFinish(ex, "tool_use", usage)
    })
  }
  const input: unknown = Either.getOrElse(decodeJson(b.input), () => ({}))
  const blocks: ReadonlyArray<AnthropicWire.ContentBlock> = [
    ...(text.length > 0 ? [{ type: "text" as const, text }] : []),
    { type: "tool_use", id, name: b.name, input }
  ]
  return sendJson(ex.res, 200, JSON.stringify(anthropicMessage(ex, blocks, "tool_use", usage)))
}

/** Anthropic: a message (buffered or streamed) with `b`'s signed thinking block before its text. */
const anthropicThinking = (ex: Exchange, b: Thinking): Effect.Effect<void> => {
  const usage = AnthropicWire.usageFromOpenAi(estimateUsage(ex, `${b.thinking} ${b.content}`))
  if (ex.stream) {
    return Effect.gen(function*() {
      yield* anthropicStart(ex, usage)
      yield* emit(ex, { type: "content_block_start", index: 0, content_block: { type: "thinking", thinking: "" } })
      for (const piece of split(b.thinking, 2)) {
        yield* emit(ex, { type: "content_block_delta", index: 0, delta: { type: "thinking_delta", thinking: piece } })
      }
      yield* emit(ex, { type: "content_block_delta", index: 0, delta: { type: "signature_delta", signature: b.signature } })
      yield* emit(ex, { type: "content_block_stop", index: 0 })
      yield* anthropicTextStart(ex, 1)
      for (const piece of split(b.content, 3)) yield* textDelta(ex, 1, piece)
      yield* emit(ex, { type: "content_block_stop", index: 1 })
      yield* anthropicFinish(ex, "end_turn", usage)
    })
  }
  const blocks: ReadonlyArray<AnthropicWire.ContentBlock> = [
    { type: "thinking", thinking: b.thinking, signature: b.signature },
    { type: "text", text: b.content }
  ]
  return sendJson(ex.res, 200, JSON.stringify(anthropicMessage(ex, blocks, "end_turn", usage)))
}

const performAnthropic = (behaviour: Behaviour, ex: Exchange): Effect.Effect<void> => {
  switch (behaviour._tag) {
    case "Ok":
      return Effect.zipRight(
        sleep(behaviour.delayMs ?? 0),
        anthropicAnswer(ex, behaviour.content, behaviour.usage, behaviour.gapMs)
      )
    case "Echo":
      return anthropicAnswer(ex, echoContent(ex), undefined)
    case "Status": {
      const body = behaviour.body ?? JSON.stringify(AnthropicWire.errorEnvelope(
        behaviour.type ?? AnthropicWire.errorTypeForStatus(behaviour.status),
        behaviour.message ?? `fake upstream answered ${behaviour.status}`
      ))
      return sendJson(ex.res, behaviour.status, body, retryAfterHeader(behaviour))
    }
    case "Chunks":
      return anthropicTextStream(
        ex,
        behaviour.chunks,
        behaviour.gapMs ?? 0,
        AnthropicWire.usageFromOpenAi(estimateUsage(ex, behaviour.chunks.join("")))
      )
    case "CloseMidStream":
      return Effect.gen(function*() {
        yield* anthropicStart(ex, AnthropicWire.usageFromOpenAi(estimateUsage(ex, "")))
        yield* anthropicTextStart(ex, 0)
        for (let i = 0; i < behaviour.chunksBeforeClose; i++) yield* textDelta(ex, 0, `chunk ${i} `)
        yield* cut(ex, () => ex.res.destroy())
      })
    case "ToolUse":
      return anthropicToolUse(ex, behaviour)
    case "Thinking":
      return anthropicThinking(ex, behaviour)
    case "StreamError":
      return Effect.gen(function*() {
        yield* anthropicStart(ex, AnthropicWire.usageFromOpenAi(estimateUsage(ex, "")))
        yield* anthropicTextStart(ex, 0)
        yield* textDelta(ex, 0, "chunk 0 ")
        yield* Effect.sync(() =>
          ex.res.end(AnthropicWire.sse(AnthropicWire.errorEnvelope("overloaded_error", behaviour.message)))
        )
      })
    case "Stall":
    case "Garbage":
    case "Reset":
    case "Raw":
      // Not a matter of wire format: same as on the OpenAI route.
      return performOpenAi(behaviour, ex)
  }
}

const perform = (behaviour: Behaviour, ex: Exchange): Effect.Effect<void> =>
  ex.api === "anthropic" ? performAnthropic(behaviour, ex) : performOpenAi(behaviour, ex)

const listen = (
  port: number,
  handler: Http.RequestListener
): Effect.Effect<Http.Server, ListenError> =>
  Effect.async<Http.Server, ListenError>((resume) => {
    const server = Http.createServer(handler)
    const onError = (cause: unknown) => resume(Effect.fail(new ListenError({ port, cause })))
    server.once("error", onError)
    server.listen(port, "127.0.0.1", () => {
      server.off("error", onError)
      resume(Effect.succeed(server))
    })
    return Effect.sync(() => {
      server.close()
    })
  })

const shutdown = (server: Http.Server): Effect.Effect<void> =>
  Effect.async<void>((resume) => {
    server.close(() => resume(Effect.void))
    server.closeAllConnections()
  }).pipe(Effect.timeoutOption("2 seconds"), Effect.asVoid)

const firstMatching = <A>(
  log: SubscriptionRef.SubscriptionRef<ReadonlyArray<RequestRecord>>,
  find: (records: ReadonlyArray<RequestRecord>) => A | undefined
): Effect.Effect<A> =>
  log.changes.pipe(
    Stream.filterMap((records) => Option.fromNullable(find(records))),
    Stream.runHead,
    // `changes` never ends, so `None` cannot happen; wait rather than invent an error.
    Effect.flatMap(Option.match({ onNone: () => Effect.never, onSome: Effect.succeed }))
  )

/**
 * Start a fake upstream on 127.0.0.1 (`options.port`, default 0 = a free port). The scope owns it:
 * closing the scope interrupts every in-flight request and destroys all sockets (stalled ones
 * included), so nothing keeps the process alive. Fails with {@link ListenError} when the port
 * cannot be bound. Delays use real timers.
 */
export const make = (options: Options = {}): Effect.Effect<Context.Tag.Service<FakeUpstream>, ListenError, Scope.Scope> =>
  Effect.gen(function*() {
    const serverDefault = options.defaultBehaviour ?? defaultBehaviour
    const initial = HashMap.fromIterable(
      Object.entries(options.models ?? {}).map(([model, b]): [string, ModelState] => [model, {
        ...emptyModel,
        fallback: [b]
      }])
    )
    const models = yield* Ref.make(initial)
    const log = yield* SubscriptionRef.make<ReadonlyArray<RequestRecord>>([])
    const sequence = yield* Ref.make(0)
    // Each socket's number, given when its first request is logged (see RequestRecord.connection).
    const connections = new WeakMap<object, number>()
    const connectionCount = yield* Ref.make(0)
    const connectionOf = (socket: object): Effect.Effect<number> =>
      Effect.suspend(() => {
        const known = connections.get(socket)
        if (known !== undefined) return Effect.succeed(known)
        return Effect.tap(Ref.updateAndGet(connectionCount, (n) => n + 1), (n) => Effect.sync(() => connections.set(socket, n)))
      })
    const run = yield* FiberSet.makeRuntime<never, void, never>()

    const take = (model: string): Effect.Effect<Behaviour> =>
      Ref.modify(models, (state): [Behaviour, HashMap.HashMap<string, ModelState>] => {
        const entry = Option.getOrElse(HashMap.get(state, model), () => emptyModel)
        const [next, ...rest] = entry.queue
        if (next !== undefined) return [next, HashMap.set(state, model, { ...entry, queue: rest })]
        const b = entry.fallback[entry.turn % entry.fallback.length]
        if (b === undefined) return [serverDefault, state]
        if (entry.fallback.length === 1) return [b, state]
        return [b, HashMap.set(state, model, { ...entry, turn: entry.turn + 1 })]
      })

    const setFallback = (model: string, fallback: ReadonlyArray<Behaviour>) =>
      Ref.update(models, (state) =>
        HashMap.set(state, model, {
          ...Option.getOrElse(HashMap.get(state, model), () => emptyModel),
          fallback,
          turn: 0
        }))

    const markClosedEarly = (id: number) =>
      SubscriptionRef.update(log, (records) => records.map((r) => r.id === id ? { ...r, closedEarly: true } : r))

    const handle = (req: Http.IncomingMessage, res: Http.ServerResponse): Effect.Effect<void> =>
      Effect.gen(function*() {
        // Resolved by the response's "close": true when it finished or we cut it ourselves.
        const settled = yield* Deferred.make<boolean>()
        let cutByUs = false
        res.on("error", () => {})
        res.on("close", () => {
          Deferred.unsafeDone(settled, Exit.succeed(res.writableFinished || cutByUs))
        })
        const text = yield* Effect.raceFirst(readBody(req), Effect.as(Deferred.await(settled), Option.none()))
        if (Option.isNone(text)) return
        const method = req.method ?? "GET"
        const path = new URL(req.url ?? "/", "http://127.0.0.1").pathname
        const headers = lowerCaseHeaders(req)
        const parsed = text.value.length === 0 ? Either.right(undefined) : decodeJson(text.value)
        const body: unknown = Either.getOrElse(parsed, () => text.value)
        const peek = Option.getOrUndefined(decodePeek(body))
        const model = peek?.model ?? ""
        const api: Api | undefined = method !== "POST"
          ? undefined
          : path === "/v1/chat/completions" || path === "/chat/completions"
          ? "openai"
          : path === "/v1/messages" || path === "/messages"
          ? "anthropic"
          : undefined
        const isChat = api !== undefined
        const behaviour = isChat && Either.isRight(parsed) ? Option.some(yield* take(model)) : Option.none()
        const id = yield* Ref.updateAndGet(sequence, (n) => n + 1)
        const connection = yield* connectionOf(req.socket)
        const at = Date.now()
        const record: RequestRecord = Option.match(behaviour, {
          onNone: () => ({ id, model, method, path, headers, body, at, connection, closedEarly: false }),
          onSome: (b) => ({ id, model, method, path, headers, body, at, connection, behaviour: b, closedEarly: false })
        })
        yield* SubscriptionRef.update(log, (records) => [...records, record])

        const exchange: Exchange = {
          api: api ?? "openai",
          req,
          res,
          id,
          model,
          method,
          path,
          headers,
          body,
          bodyText: text.value,
          at,
          stream: peek?.stream === true,
          includeUsage: peek?.stream_options?.include_usage === true,
          cutting: () => {
            cutByUs = true
          }
        }
        const respond = Option.match(behaviour, {
          onSome: (b) => perform(b, exchange),
          onNone: () => {
            const isCountTokens = method === "POST" &&
              (path === "/v1/messages/count_tokens" || path === "/messages/count_tokens")
            if (api === "anthropic" || (isCountTokens && Either.isLeft(parsed))) {
              return sendJson(
                res,
                400,
                JSON.stringify(AnthropicWire.errorEnvelope("invalid_request_error", "request body is not JSON"))
              )
            }
            if (isChat) {
              return sendJson(res, 400, errorEnvelope("request body is not JSON", "invalid_request_error", "invalid_json"))
            }
            if (isCountTokens) {
              return sendJson(res, 200, JSON.stringify({ input_tokens: Math.ceil(text.value.length / 4) }))
            }
            if (method === "GET" && (path === "/v1/models" || path === "/models")) {
              return Effect.flatMap(Ref.get(models), (state) =>
                sendJson(res, 200, JSON.stringify({
                  object: "list",
                  data: Array.from(HashMap.keys(state)).map((m) => ({
                    id: m,
                    object: "model",
                    created: 0,
                    owned_by: "fake-upstream"
                  }))
                })))
            }
            return sendJson(res, 404, errorEnvelope(`no route for ${method} ${path}`, "invalid_request_error", "not_found"))
          }
        })
        yield* Effect.raceFirst(respond, Deferred.await(settled))
        const finished = yield* Deferred.await(settled)
        if (!finished) yield* markClosedEarly(id)
      }).pipe(
        Effect.ensuring(Effect.sync(() => {
          if (!res.writableFinished) res.destroy()
        }))
      )

    const server = yield* Effect.acquireRelease(
      listen(options.port ?? 0, (req, res) => {
        run(handle(req, res))
      }),
      shutdown
    )
    const address = server.address()
    const port = typeof address === "object" && address !== null
      ? address.port
      : yield* Effect.dieMessage("fake upstream: server has no TCP address")

    return FakeUpstream.of({
      url: `http://127.0.0.1:${port}/v1`,
      port,
      setBehaviour: (model, b) => setFallback(model, [b]),
      script: (model, bs) =>
        Ref.update(models, (state) => {
          const entry = Option.getOrElse(HashMap.get(state, model), () => emptyModel)
          return HashMap.set(state, model, { ...entry, queue: [...entry.queue, ...bs] })
        }),
      cycle: setFallback,
      requests: SubscriptionRef.get(log),
      clear: SubscriptionRef.set(log, []),
      drain: SubscriptionRef.getAndSet(log, []),
      reset: Effect.zipRight(Ref.set(models, HashMap.empty()), SubscriptionRef.set(log, [])),
      awaitRequest: (model) => firstMatching(log, (records) => records.find((r) => r.model === model)),
      awaitClosed: (model) => firstMatching(log, (records) => records.find((r) => r.model === model && r.closedEarly)),
      awaitRequests: (done) => firstMatching(log, (records) => (done(records) ? records : undefined))
    })
  })

/**
 * The fake upstream as a scoped Layer (see {@link make}). For a fixed port — e.g. the demo serving
 * simulated models at a known address — pass `{ port }`; it fails with {@link ListenError} if taken.
 * Each call builds a new server: bind the result to a constant to share one.
 */
export const layer = (options: Options = {}): Layer.Layer<FakeUpstream, ListenError> =>
  Layer.scoped(FakeUpstream, make(options))
