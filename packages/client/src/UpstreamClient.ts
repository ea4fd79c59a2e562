/**
 * The `UpstreamClient` service: one logical call to one target — request preparation (model
 * rewrite, `extra_body`, auth, header forwarding, trace context), retries, the `timeout_ms`
 * deadline over the whole call, the LLM client's circuit breaker around it, and typed failures.
 * `make` builds it over an `UpstreamTransport` (the callback-level I/O seam): `layerTransport`
 * over the ambient one (the server provides undici's, `UpstreamTransport.layerDispatcher`), `layer`
 * over any platform `HttpClient` (`UpstreamTransport.layerHttpClient`; tests provide a scripted
 * one), so this module stays runtime-neutral. This module is the public service and its wiring; the
 * implementation is internal: call preparation (`internal/wire.ts`, `internal/headers.ts`), the
 * logical call with its retries and deadline (`internal/call.ts`, each attempt one `Effect.async`
 * exchange with one deadline timer on the fiber's `Clock`, `internal/exchange.ts`), and the reading
 * of buffered and streamed replies (`internal/buffered.ts`, `internal/streamed.ts`); what differs by
 * wire format is one record per format (`internal/format.ts`, `internal/formats/`), looked up in
 * the table of `internal/formats.ts`.
 */
import type * as HttpClient from "@effect/platform/HttpClient"
import type { ClientFailure, UpstreamFailure } from "@switchyard-ts/protocol/Errors"
import type { ChatCompletion, ChatCompletionChunk } from "@switchyard-ts/protocol/OpenAiChat"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as Breaker from "./Breaker.js"
import * as Buffered from "./internal/buffered.js"
import * as Call from "./internal/call.js"
import * as Streamed from "./internal/streamed.js"
import * as Wire from "./internal/wire.js"
import * as Relay from "./Relay.js"
import type { LlmClient, NativeBody, Target } from "./Target.js"
import * as UpstreamTransport from "./UpstreamTransport.js"

export type { ResponsesAuxiliary } from "./internal/wire.js"

/** What to send to one target. */
export interface CallOptions {
  readonly target: Target
  /**
   * The caller's request body (a decoded chat request with its unknown fields preserved). The
   * client rewrites `model` to the target's id and merges the target's `extra_body`; it never
   * mutates this object.
   */
  readonly body: Readonly<Record<string, unknown>>
  /**
   * The caller's body in its own wire format, when it was not a chat request: sent (with the same
   * preparation) instead of translating `body` when the target speaks that format.
   */
  readonly native?: NativeBody | undefined
  /** The caller's headers (lower-case names); hop-by-hop and credential headers are dropped. */
  readonly headers: Readonly<Record<string, string>>
  /**
   * A deadline of this call in milliseconds (e.g. a route's `judge_timeout_ms`). The tighter of it
   * and the client's `timeout_ms` bounds the call, retries included; its expiry is the same
   * `DeadlineExceeded`, with `afterMs` = the deadline that applied.
   */
  readonly timeoutMs?: Option.Option<number>
  /**
   * The call answers (or may answer) the caller: an answer call, an escalation's weak call, an
   * advisor's executor call. Only such a call is given the target's `system_prompt`; absent or
   * false (judge, classifier and reviewer calls), the target's prompt is never sent.
   */
  readonly completion?: boolean
}

/**
 * A buffered answer: as a chat completion (translated when the target speaks another format), and
 * — when the call replayed the caller's own body to a target of the caller's format — the target's
 * answer body exactly as it sent it (`native`), which that caller can be given untouched.
 */
export interface Answer {
  readonly completion: ChatCompletion
  readonly native: Option.Option<NativeBody>
}

/**
 * One piece of a streamed answer: the chat chunks it means, and — on a native replay (see
 * {@link Answer}) — the upstream's own event it came from, exactly as sent (`event`: the SSE event
 * name, `data`: its JSON). Events of a type this version does not know carry no chunks.
 */
export interface StreamPiece {
  readonly chunks: ReadonlyArray<ChatCompletionChunk>
  readonly native: Option.Option<NativeEvent>
  /**
   * From an `openai_chat` target: the SSE `data` of the event this piece's one chunk was decoded
   * from, exactly as the upstream sent it (when it is one line), so that a Chat caller can be sent
   * the bytes instead of the chunk re-encoded.
   */
  readonly sse?: string
}

/** An upstream's own stream event, forwarded to a caller of the same format. */
export interface NativeEvent {
  readonly format: NativeBody["format"]
  /** The SSE `event:` name (the event's `type`). */
  readonly event: string
  readonly data: Readonly<Record<string, unknown>>
  /** `data` as the upstream sent it (the SSE `data` text), when it is one line. */
  readonly text?: string
}

/**
 * The chat chunks of a piece stream, in order. On a stream made by the client (or by `Relay.toStream`)
 * this is a relay stage, nothing per chunk beyond the mapping, and the result is again unwrapped by
 * `Relay.fromStream` at no cost.
 */
export const chunksOf = <E>(pieces: Stream.Stream<StreamPiece, E>): Stream.Stream<ChatCompletionChunk, E> =>
  Relay.toStream(Relay.map(Relay.fromStream(pieces), (batch) => batch.flatMap((piece) => piece.chunks)))

/**
 * One logical upstream call. Both methods fail with the `UpstreamFailure` family —
 * `TransportError`, `DeadlineExceeded` (the client's `timeout_ms` passed, retries included),
 * `UpstreamStatus` (non-2xx after retries) and `InvalidResponse` (undecodable 2xx body) — or with
 * `CircuitOpen` when the target's LLM client has a breaker that refused the call (no HTTP request).
 */
export class UpstreamClient extends Context.Tag("@switchyard-ts/client/UpstreamClient")<UpstreamClient, {
  /**
   * A buffered call; the deadline covers every attempt until the whole body is read. The answer
   * carries the target's own body when the caller's native body was replayed (see {@link Answer}).
   */
  readonly answer: (options: CallOptions) => Effect.Effect<Answer, ClientFailure>
  /**
   * A streamed call (`stream: true` is set on the body). Succeeds once response headers arrive
   * (retries and the deadline apply until then) with the stream of pieces, to be run once;
   * afterwards a gap between events longer than `timeout_ms` fails the stream with
   * `DeadlineExceeded`. The stream ending early (`Stream.take`) or its consumer being interrupted
   * aborts the upstream exchange. Pieces carry the upstream's own events on a native replay.
   */
  readonly answerStream: (
    options: CallOptions
  ) => Effect.Effect<Stream.Stream<StreamPiece, UpstreamFailure>, ClientFailure>
  /** {@link answer}, as a chat completion only. */
  readonly complete: (options: CallOptions) => Effect.Effect<ChatCompletion, ClientFailure>
  /** {@link answerStream}, as chat chunks only. */
  readonly stream: (
    options: CallOptions
  ) => Effect.Effect<Stream.Stream<ChatCompletionChunk, UpstreamFailure>, ClientFailure>
  /**
   * `POST …/v1/messages/count_tokens` on an `anthropic_messages` target with `body` (a Messages
   * count request; `model` is set to the target's id), with the client's retries, deadline and
   * breaker; succeeds with the upstream's JSON answer as-is. Calling it on another format is a
   * defect.
   */
  readonly countTokens: (options: CallOptions) => Effect.Effect<unknown, ClientFailure>
  /**
   * `POST …/responses/input_tokens` or `POST …/responses/compact` on an `openai_responses` target
   * with `body` (the caller's request; `model` is set to the target's id), with the client's
   * retries, deadline and breaker; succeeds with the upstream's JSON answer as-is. Calling it on
   * another format is a defect.
   */
  readonly responsesAuxiliary: (
    options: CallOptions,
    operation: Wire.ResponsesAuxiliary
  ) => Effect.Effect<unknown, ClientFailure>
  /**
   * Creates the circuit breaker of `client` now, if it has a `breaker` table (it is otherwise
   * created by the first call), so that `/health` and the state gauge show it from the start; on
   * a reloaded deployment, keeps a breaker whose settings are unchanged (and its state), replaces
   * one whose settings changed, and drops one whose client has no `breaker` table any more.
   */
  readonly register: (client: LlmClient) => Effect.Effect<void>
  /**
   * The state of every breaker created so far, sorted by LLM client name: its state, when it opened
   * and whether it is shared right now (`Breaker.read` picks one client's).
   */
  readonly breakers: Effect.Effect<ReadonlyArray<Breaker.Status>>
}>() {}

/**
 * A client built from chat-only calls (`complete` and `stream`), whose answers never carry a native
 * body or event: for scripted clients in tests and for consumers who wrap another implementation.
 */
export const ofChat = (
  calls: Omit<UpstreamClient["Type"], "answer" | "answerStream">
): UpstreamClient["Type"] =>
  UpstreamClient.of({
    ...calls,
    answer: (options) => Effect.map(calls.complete(options), (completion) => ({ completion, native: Option.none() })),
    answerStream: (options) =>
      Effect.map(
        calls.stream(options),
        Stream.map((chunk): StreamPiece => ({ chunks: [chunk], native: Option.none() }))
      )
  })

/** `gen_ai.response.*` and `gen_ai.usage.*` span attributes of a completion (no content). */
export const responseAttributes: (
  completion: ChatCompletion
) => Record<string, string | number | ReadonlyArray<string>> = Buffered.responseAttributes

/**
 * Builds the service over the ambient `UpstreamTransport`. Interrupting a call aborts its exchange
 * (the socket, for undici); requests carry the trace context (`traceparent`, `b3`) of
 * `libsy.client_call` when tracing is on and `HttpClient.currentTracerPropagation` is not off.
 *
 * Per logical call:
 * - What differs by wire format (URL, body, auth, answers, streams, error bodies) is the target
 *   format's record (`internal/formats/<format>.ts`); for example:
 * - URL: `openai_chat` — `base_url` trimmed, trailing `/` and a trailing `/chat/completions` or
 *   `/responses` removed, `/chat/completions` appended; `anthropic_messages` — `…/v1/messages`
 *   (`messagesUrl`).
 * - Body (`openai_chat`): a shallow copy with `model` = the target's id and missing `extra_body`
 *   keys added; streamed calls get `stream: true` and `stream_options.include_usage = true`
 *   (unless the caller set `include_usage`), buffered calls drop `stream` / `stream_options`.
 * - Body (`anthropic_messages`): the caller's native Messages body when it has one, else the chat
 *   request translated through the neutral request type (`TranslationError`, before any HTTP
 *   request, when it cannot be); then `prepareAnthropicBody`. Answers and streamed events are
 *   translated back into chat completions and chunks; on a native replay the answer body and
 *   every event are also kept as the upstream sent them (`Answer.native`, `StreamPiece.native`).
 * - Headers: caller headers minus `reservedHeaders`, then `extra_headers` (when the caller's own
 *   Messages body is replayed to an `anthropic_messages` client — and for token counting — the
 *   caller's `anthropic-beta` is kept, merged with the `extra_headers` one, caller's items first), then
 *   `Authorization: Bearer <key>` (`openai_chat`) or `anthropic-version: 2023-06-01` and
 *   `x-api-key: <key>` (`anthropic_messages`), `accept` and `content-type: application/json`.
 * - Retries: up to `maxRetries` on `TransportError`, 408, 429 and 5xx. Delay before retry `n`
 *   (0-based): `Retry-After` when the failed response had one (seconds or HTTP-date, capped at
 *   60 s), else `min(250 ms × 2^n, 2 s)` times a jitter factor uniform in [0.8, 1.2] drawn from
 *   Effect's `Random` (`Random.fixed([0.5])` makes it exactly 1), rounded to whole ms.
 * - Deadline: `timeoutMs` bounds the whole call (buffered: until the body is decoded; streamed:
 *   until the headers) and fails with `DeadlineExceeded` exactly then. A retry whose delay would
 *   reach the deadline is not attempted: the call fails at once with the last attempt's error.
 * - Streams: after the headers, a gap longer than the client's `timeout_ms` without a network
 *   chunk while the consumer waits fails the stream with `DeadlineExceeded` (one watchdog per
 *   stream); `data: [DONE]` ends it; an in-band `{"error":…}` fails it with
 *   `UpstreamStatus` 502; an undecodable chunk with `InvalidResponse`; a broken connection with
 *   `TransportError`. A stream is never retried. It is a push-fed relay handed out as a `Stream`
 *   (`Relay.toStream`), which the server unwraps again (`Relay.fromStream`) to pull the relay with
 *   no `Stream` step per chunk.
 * - Telemetry: `libsy.client_call` span per logical call; `Metrics.upstreamAttempts` per attempt,
 *   `Metrics.retryRecovered` per call that succeeded after a retry.
 * - Circuit breakers: one per LLM client name with a `breaker` table, held by this service (so one
 *   per server), shared by every target of that client and by judge and answer calls alike. The
 *   breaker wraps the whole logical call (retries and deadline included; for a stream, until the
 *   headers), so it counts logical failures; an open breaker fails the call with `CircuitOpen`
 *   before any request is built. See `Breaker`; {@link makeShared} shares their state with other
 *   replicas.
 */
export const make: Effect.Effect<UpstreamClient["Type"], never, UpstreamTransport.UpstreamTransport> = Effect.flatMap(
  Breaker.makeRegistry,
  (registry) => over(registry)
)

/**
 * {@link make} with breakers shared by replicas through the provided `Breaker.SharedStore` (the
 * server's is Redis with `[sessions] store = "redis"`): the same calls, each decided by this
 * process's breaker, whose state the registry's sync keeps in step with the store in the background
 * for as long as the `Scope` lives (see `Breaker`).
 */
export const makeShared: Effect.Effect<
  UpstreamClient["Type"],
  never,
  UpstreamTransport.UpstreamTransport | Breaker.SharedStore | Scope.Scope
> = Effect.flatMap(
  Effect.flatMap(Breaker.SharedStore, (store) => Breaker.makeSharedRegistry({ store })),
  (registry) => over(registry)
)

/** The service over `registry`'s breakers and the ambient transport. */
const over = (
  registry: Breaker.Registry
): Effect.Effect<UpstreamClient["Type"], never, UpstreamTransport.UpstreamTransport> =>
  Effect.gen(function*() {
    const transport = yield* UpstreamTransport.UpstreamTransport
    const guarded = <A>(
      options: CallOptions,
      call: Effect.Effect<A, UpstreamFailure>
    ): Effect.Effect<A, ClientFailure> =>
      Effect.flatMap(registry.forClient(options.target.client), (breaker) =>
        Option.match(breaker, {
          onNone: () => call,
          onSome: (b) => b.guard(call, { target: options.target.id, isFailure: Breaker.isCountedFailure })
        }))
    // A request that cannot be translated for the target fails before its breaker is consulted.
    const withWire = <A>(
      options: CallOptions,
      streaming: boolean,
      call: (wire: Wire.Wire) => Effect.Effect<A, UpstreamFailure>
    ): Effect.Effect<A, ClientFailure> =>
      Either.match(Wire.chatWire(options, streaming), {
        onLeft: (error) => Effect.fail(error),
        onRight: (wire) => guarded(options, call(wire))
      })
    const answer = (options: CallOptions) =>
      withWire(
        options,
        false,
        (wire) => Call.logicalCall(transport, options, wire, false, Call.noStream, Buffered.readAnswer)
      )
    const answerStream = (options: CallOptions) =>
      withWire(options, true, (wire) =>
        Call.logicalCall(
          transport,
          options,
          wire,
          true,
          (ctx, clock) => Option.some(Streamed.openPieces(ctx, clock)),
          (reply): Effect.Effect<Stream.Stream<StreamPiece, UpstreamFailure>, UpstreamFailure> =>
            Effect.succeed(Relay.toStream(reply._tag === "Stream" ? reply.stream : Relay.make([])))
        ))
    return UpstreamClient.of({
      answer,
      answerStream,
      complete: (options) => Effect.map(answer(options), (answered) => answered.completion),
      stream: (options) => Effect.map(answerStream(options), chunksOf),
      countTokens: (options) => {
        const wire = Wire.countTokensWire(options)
        return wire === undefined
          ? Effect.dieMessage(`countTokens needs an anthropic_messages target, got ${options.target.client.format}`)
          : guarded(options, Call.logicalCall(transport, options, wire, false, Call.noStream, Buffered.readJson))
      },
      responsesAuxiliary: (options, operation) => {
        const wire = Wire.responsesAuxiliaryWire(options, operation)
        return wire === undefined
          ? Effect.dieMessage(`${operation} needs an openai_responses target, got ${options.target.client.format}`)
          : guarded(options, Call.logicalCall(transport, options, wire, false, Call.noStream, Buffered.readJson))
      },
      register: registry.register,
      breakers: registry.statuses
    })
  })

/**
 * {@link make} over the ambient `UpstreamTransport`: the server provides the undici one
 * (`UpstreamTransport.layerDispatcher` over an `Agent`).
 */
export const layerTransport: Layer.Layer<UpstreamClient, never, UpstreamTransport.UpstreamTransport> = Layer.effect(
  UpstreamClient,
  make
)

/**
 * {@link makeShared} as a layer: {@link layerTransport} with breakers shared through the provided
 * `Breaker.SharedStore`; the sync stops when the layer is released.
 */
export const layerTransportShared: Layer.Layer<
  UpstreamClient,
  never,
  UpstreamTransport.UpstreamTransport | Breaker.SharedStore
> = Layer.scoped(UpstreamClient, makeShared)

/**
 * {@link make} over any platform `HttpClient` (e.g. `NodeHttpClient.layerUndici` or
 * `FetchHttpClient.layer`), through `UpstreamTransport.layerHttpClient`: the same deadlines,
 * retries, breakers and failures as {@link layerTransport}.
 */
export const layer: Layer.Layer<UpstreamClient, never, HttpClient.HttpClient> = layerTransport.pipe(
  Layer.provide(UpstreamTransport.layerHttpClient)
)
