/**
 * The `UpstreamClient` service: one logical call to one target — request preparation (model
 * rewrite, `extra_body`, auth, header forwarding, trace context), retries, the `timeout_ms`
 * deadline over the whole call, the LLM client's circuit breaker around it, and typed failures.
 * `make` builds it over an `UpstreamTransport` (the callback-level I/O seam): `layerTransport`
 * over the ambient one (the server provides undici's, `UpstreamTransport.layerDispatcher`), `layer`
 * over any platform `HttpClient` (`UpstreamTransport.layerHttpClient`; tests provide a scripted
 * one), so this module stays runtime-neutral. Each attempt is one `Effect.async` exchange with
 * one deadline timer on the fiber's `Clock` (`internal/exchange.ts`).
 */
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpTraceContext from "@effect/platform/HttpTraceContext"
import {
  DeadlineExceeded,
  InvalidResponse,
  type TranslationError,
  TransportError
} from "@switchyard-ts/protocol/Errors"
import type { ClientFailure, UpstreamFailure } from "@switchyard-ts/protocol/Errors"
import { ChatCompletion, ChatCompletionChunk, decodeOptions } from "@switchyard-ts/protocol/OpenAiChat"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import type * as Fiber from "effect/Fiber"
import * as FiberRef from "effect/FiberRef"
import * as Layer from "effect/Layer"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as Random from "effect/Random"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as Breaker from "./Breaker.js"
import * as Anthropic from "./internal/anthropic.js"
import * as Exchange from "./internal/exchange.js"
import * as Failure from "./internal/failure.js"
import * as Prepare from "./internal/prepare.js"
import * as Responses from "./internal/responses.js"
import * as Sse from "./internal/sse.js"
import * as Metrics from "./Metrics.js"
import * as Relay from "./Relay.js"
import * as Spans from "./Spans.js"
import type { LlmClient, NativeBody, Target } from "./Target.js"
import * as UpstreamTransport from "./UpstreamTransport.js"

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

/** An SSE item's `data` when it can be written back as one `data:` line (no line break in it). */
const oneLineData = (item: Sse.SseItem): string | undefined =>
  item._tag === "Data" && !item.data.includes("\n") && !item.data.includes("\r") ? item.data : undefined

const sseField = (sse: string | undefined): { readonly sse?: string } => (sse === undefined ? {} : { sse })
const textField = (text: string | undefined): { readonly text?: string } => (text === undefined ? {} : { text })

/** The chat chunks of a piece relay, in order. */
export const chunksOf = <E>(pieces: Relay.Relay<StreamPiece, E>): Relay.Relay<ChatCompletionChunk, E> =>
  Relay.map(pieces, (batch) => batch.flatMap((piece) => piece.chunks))

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
   * (retries and the deadline apply until then); afterwards a gap between events longer than
   * `timeout_ms` fails the stream with `DeadlineExceeded`. Interrupting the consumer aborts the
   * upstream socket. Pieces carry the upstream's own events on a native replay.
   */
  readonly answerStream: (
    options: CallOptions
  ) => Effect.Effect<Relay.Relay<StreamPiece, UpstreamFailure>, ClientFailure>
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
   * Creates the circuit breaker of `client` now, if it has a `breaker` table (it is otherwise
   * created by the first call), so that `/health` and the state gauge show it from the start.
   */
  readonly register: (client: LlmClient) => Effect.Effect<void>
  /** The state of every breaker created so far, sorted by LLM client name. */
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
        (chunks) =>
          Relay.fromStream(Stream.map(chunks, (chunk): StreamPiece => ({ chunks: [chunk], native: Option.none() })))
      )
  })

/** A buffered call opens no stream. */
const noStream = (): Option.Option<Exchange.OpenStream<never>> => Option.none()

/**
 * The trace context (`traceparent`, `b3`) of the span a request is made in (`libsy.client_call`),
 * unless tracing or `HttpClient.currentTracerPropagation` is off or the span is not one of ours:
 * then a caller's own `traceparent`, forwarded as a caller header, stays as it came.
 */
const traceHeaders = (fiber: Fiber.RuntimeFiber<unknown, unknown>): Readonly<Record<string, string>> => {
  if (!fiber.getFiberRef(FiberRef.currentTracerEnabled) || !fiber.getFiberRef(HttpClient.currentTracerPropagation)) {
    return {}
  }
  const span = fiber.currentSpan
  return span !== undefined && span._tag === "Span" ? HttpTraceContext.toHeaders(span) : {}
}

/** Facts about one logical call that its attempts share. */
interface CallContext {
  readonly target: Target
  /** Values redacted from any upstream text kept on an error (the API key). */
  readonly secrets: ReadonlyArray<string>
  /** The caller's own body was sent to a target of its format: keep the target's own answer. */
  readonly nativeReplay: boolean
}

const decodeCompletion = Failure.decodeJsonText(ChatCompletion, "response body")
const decodeChunkJson = Schema.decodeUnknownEither(ChatCompletionChunk, decodeOptions)

/**
 * One HTTP attempt (`Exchange.exchange`: one `Effect.async` with the deadline's timer), then
 * either the 2xx reply to `onOk` or the non-2xx answer mapped to `UpstreamStatus` (its body read
 * for `error.message`, up to 64 KiB).
 */
const attempt = <A, S>(
  transport: UpstreamTransport.UpstreamTransport["Type"],
  request: Option.Option<Omit<UpstreamTransport.TransportRequest, "fiberRefs">>,
  ctx: CallContext,
  deadline: Option.Option<Exchange.Deadline>,
  open: Option.Option<Exchange.OpenStream<S>>,
  onOk: (reply: Exchange.Reply<S>, ctx: CallContext) => Effect.Effect<A, UpstreamFailure>
): Effect.Effect<A, UpstreamFailure> =>
  Option.match(request, {
    onNone: () =>
      Effect.zipRight(
        Metrics.recordAttempt(Option.none()),
        Effect.fail(new TransportError({ target: ctx.target.id, reason: "invalid upstream URL" }))
      ),
    onSome: (req) =>
      Effect.flatMap(
        Exchange.exchange(transport, req, { target: ctx.target.id, deadline, open }),
        (reply): Effect.Effect<A, UpstreamFailure> =>
          reply._tag === "Stream" || isSuccess(reply.status)
            ? onOk(reply, ctx)
            : Effect.flatMap(Clock.currentTimeMillis, (now) =>
              Effect.fail(Failure.upstreamStatus({
                target: ctx.target.id,
                status: reply.status,
                body: Option.some(reply.body),
                retryAfterMs: Failure.parseRetryAfter(reply.headers["retry-after"], now),
                secrets: ctx.secrets,
                format: ctx.target.client.format
              })))
      )
  })

const isSuccess = (status: number): boolean => status >= 200 && status <= 299

/** The delay before retry `retry` (0-based): `Retry-After` when the failure had one, else jittered backoff. */
const retryDelay = (retry: number, failure: UpstreamFailure): Effect.Effect<number> =>
  failure._tag === "UpstreamStatus" && failure.retryAfterMs !== undefined
    ? Effect.succeed(failure.retryAfterMs)
    : Effect.map(Random.next, (r) => Math.round(Failure.backoffBaseMs(retry) * Failure.jitterFactor(r)))

/**
 * Where and what one logical call sends: the URL, the prepared body, the span's operation name,
 * and whether the body is the caller's own Messages body sent to an `anthropic_messages` client
 * (its `anthropic-beta` header then goes along).
 */
interface Wire {
  readonly url: string
  readonly body: Readonly<Record<string, unknown>>
  readonly operation: "chat" | "count_tokens"
  readonly nativeReplay: boolean
}

/**
 * The URL and body of a chat call to `options.target`, by the client's format: a chat request as
 * prepared by `Prepare.prepareBody`, or a Messages body (`internal/anthropic.ts`), which fails with
 * `TranslationError` when the request cannot be expressed in the Messages API.
 */
const chatWire = (options: CallOptions, streaming: boolean): Either.Either<Wire, TranslationError> => {
  const { target } = options
  const untranslatable = options.native?.untranslatable
  if (untranslatable !== undefined && options.native !== undefined && options.native.format !== target.client.format) {
    return Either.left(Responses.untranslatableFor(target.client.format, options.native, untranslatable))
  }
  if (target.client.format === "anthropic_messages") {
    return Either.map(
      Anthropic.encodeBody(target, options.body, options.native, streaming),
      (body): Wire => ({
        url: Prepare.messagesUrl(target.client.baseUrl),
        body,
        operation: "chat",
        nativeReplay: options.native?.format === "anthropic_messages"
      })
    )
  }
  if (target.client.format === "openai_responses") {
    return Either.map(
      Responses.encodeBody(target, options.body, options.native, streaming),
      (body): Wire => ({
        url: Prepare.responsesUrl(target.client.baseUrl),
        body,
        operation: "chat",
        nativeReplay: options.native?.format === "openai_responses"
      })
    )
  }
  return Either.right({
    url: Prepare.chatCompletionsUrl(target.client.baseUrl),
    body: Prepare.prepareBody(target, options.body, streaming),
    operation: "chat",
    nativeReplay: false
  })
}

/**
 * The logical call: attempts with retries under one deadline, inside the `libsy.client_call` span.
 */
const logicalCall = <A, S>(
  transport: UpstreamTransport.UpstreamTransport["Type"],
  options: CallOptions,
  wire: Wire,
  streaming: boolean,
  open: (ctx: CallContext, clock: Clock.Clock) => Option.Option<Exchange.OpenStream<S>>,
  onOk: (reply: Exchange.Reply<S>, ctx: CallContext) => Effect.Effect<A, UpstreamFailure>
): Effect.Effect<A, UpstreamFailure> => {
  const { target } = options
  const client = target.client
  const url = wire.url
  const ctx: CallContext = {
    target,
    secrets: Prepare.secretsOf(client, options.headers),
    nativeReplay: wire.nativeReplay
  }
  // The tighter of the client's timeout_ms and this call's own deadline applies.
  const timeoutMs = Option.match(options.timeoutMs ?? Option.none(), {
    onNone: () => client.timeoutMs,
    onSome: (ms) =>
      Option.some(Option.match(client.timeoutMs, { onNone: () => ms, onSome: (own) => Math.min(own, ms) }))
  })

  const run = Effect.clockWith((clock) =>
    Effect.withFiberRuntime<A, UpstreamFailure>((fiber) => {
      const headers: Record<string, string> = {
        ...Prepare.prepareHeaders(client, options.headers, { nativeReplay: wire.nativeReplay }),
        ...(client.format === "anthropic_messages"
          ? {
            "anthropic-version": Prepare.anthropicVersion,
            ...Option.match(client.apiKey, {
              onNone: () => ({}),
              onSome: (key) => ({ "x-api-key": Redacted.value(key) })
            })
          }
          : Option.match(client.apiKey, {
            onNone: () => ({}),
            onSome: (key) => ({ authorization: `Bearer ${Redacted.value(key)}` })
          })),
        accept: streaming ? "text/event-stream" : "application/json",
        "content-type": "application/json",
        ...traceHeaders(fiber)
      }
      const request = Option.map(
        Prepare.originAndPath(url),
        ({ origin, path }): Omit<UpstreamTransport.TransportRequest, "fiberRefs"> => ({
          origin,
          path,
          method: "POST",
          headers,
          // Bodies come from decoded JSON: a body that JSON cannot encode is a programmer error.
          body: JSON.stringify(wire.body)
        })
      )
      const deadline = Option.map(timeoutMs, (ms): Exchange.Deadline => ({
        at: clock.unsafeCurrentTimeMillis() + ms,
        afterMs: ms
      }))
      const opener = open(ctx, clock)

      const loop = (retry: number): Effect.Effect<A, UpstreamFailure> =>
        attempt(transport, request, ctx, deadline, opener, onOk).pipe(
          Effect.tap(() => (retry > 0 ? Metric.increment(Metrics.retryRecovered) : Effect.void)),
          Effect.catchAll((failure) =>
            Effect.gen(function*() {
              if (retry >= client.maxRetries || !Failure.isRetryable(failure)) return yield* Effect.fail(failure)
              const delayMs = yield* retryDelay(retry, failure)
              const now = yield* Clock.currentTimeMillis
              const annotations = {
                target: target.id,
                retry: retry + 1,
                delay_ms: delayMs,
                error: Failure.errorType(failure)
              }
              // Never sleep into the deadline: the caller gets the last real answer instead.
              if (Option.isSome(deadline) && now + delayMs >= deadline.value.at) {
                yield* Effect.logDebug("upstream retry would cross the deadline; giving up").pipe(
                  Effect.annotateLogs(annotations)
                )
                return yield* Effect.fail(failure)
              }
              yield* Effect.logDebug("retrying upstream call").pipe(Effect.annotateLogs(annotations))
              yield* Effect.sleep(Duration.millis(delayMs))
              return yield* loop(retry + 1)
            })
          )
        )
      return loop(0)
    })
  )

  return run.pipe(
    Effect.tap(() => Spans.annotateCurrentSpan(() => ({ outcome: "ok" }))),
    Effect.tapError((failure) =>
      Spans.annotateCurrentSpan(() => ({ outcome: "error", "error.type": Failure.errorType(failure) }))
    ),
    Spans.withSpan("libsy.client_call", () => ({
      captureStackTrace: false,
      kind: "client",
      attributes: {
        "gen_ai.operation.name": wire.operation,
        "gen_ai.request.model": target.id,
        "gen_ai.request.stream": streaming,
        ...requestAttributes(wire.body),
        ...Option.match(Prepare.serverOf(url), {
          onNone: () => ({}),
          onSome: (s) => ({ "server.address": s.address, "server.port": s.port })
        })
      }
    }))
  )
}

/** `gen_ai.request.*` sampling attributes present in the caller's body (numbers only, no content). */
const requestAttributes = (body: Readonly<Record<string, unknown>>): Record<string, number> => {
  const attributes: Record<string, number> = {}
  const copy = (field: string, attribute: string) => {
    const value = body[field]
    if (typeof value === "number") attributes[attribute] = value
  }
  copy("temperature", "gen_ai.request.temperature")
  copy("top_p", "gen_ai.request.top_p")
  copy("max_tokens", "gen_ai.request.max_tokens")
  copy("max_completion_tokens", "gen_ai.request.max_tokens")
  return attributes
}

/** The body of a buffered reply (a streamed one never reaches a buffered call). */
const bodyOf = <S>(reply: Exchange.Reply<S>): string => (reply._tag === "Body" ? reply.body : "")

/** Decodes a buffered 2xx body. */
const readAnswer = <S>(reply: Exchange.Reply<S>, ctx: CallContext): Effect.Effect<Answer, UpstreamFailure> => {
  const text = bodyOf(reply)
  const format = ctx.target.client.format
  const answered: Effect.Effect<Answer, UpstreamFailure> = format === "anthropic_messages"
    ? Effect.flatMap(Clock.currentTimeMillis, (now) =>
      Effect.map(
        Anthropic.decodeAnswer(ctx.target.id, text, Math.floor(now / 1000)),
        ({ completion, message }) => ({
          completion,
          native: ctx.nativeReplay ? Option.some({ format: "anthropic_messages", body: message }) : Option.none()
        })
      ))
    : format === "openai_responses"
    ? Effect.flatMap(Clock.currentTimeMillis, (now) =>
      Effect.map(
        Responses.decodeAnswer(ctx.target.id, text, Math.floor(now / 1000)),
        ({ completion, response }) => ({
          completion,
          native: ctx.nativeReplay ? Option.some({ format: "openai_responses", body: response }) : Option.none()
        })
      ))
    : Effect.map(decodeCompletion(ctx.target.id, text), (completion) => ({ completion, native: Option.none() }))
  return Effect.tap(answered, ({ completion }) => Spans.annotateCurrentSpan(() => responseAttributes(completion)))
}

/** Reads a buffered 2xx body as any JSON value. */
const readJson = <S>(reply: Exchange.Reply<S>, ctx: CallContext): Effect.Effect<unknown, UpstreamFailure> =>
  Option.match(Failure.jsonOf(bodyOf(reply)), {
    onNone: () =>
      Effect.fail(new InvalidResponse({ target: ctx.target.id, reason: "response body is not valid JSON" })),
    onSome: Effect.succeed
  })

/** `gen_ai.response.*` and `gen_ai.usage.*` span attributes of a completion (no content). */
export const responseAttributes = (
  completion: ChatCompletion
): Record<string, string | number | ReadonlyArray<string>> => {
  const usage = completion.usage
  const details = usage?.prompt_tokens_details
  const reasoning = usage?.completion_tokens_details?.reasoning_tokens
  return {
    "gen_ai.response.id": completion.id,
    "gen_ai.response.model": completion.model,
    "gen_ai.response.finish_reasons": completion.choices.map((choice) => choice.finish_reason ?? "null"),
    ...(usage === null || usage === undefined ? {} : {
      "gen_ai.usage.input_tokens": usage.prompt_tokens,
      "gen_ai.usage.output_tokens": usage.completion_tokens,
      ...(typeof details?.cached_tokens === "number"
        ? { "gen_ai.usage.cache_read.input_tokens": details.cached_tokens }
        : {}),
      ...(typeof details?.cache_creation_tokens === "number"
        ? { "gen_ai.usage.cache_creation.input_tokens": details.cache_creation_tokens }
        : {}),
      ...(typeof reasoning === "number" ? { "gen_ai.usage.reasoning.output_tokens": reasoning } : {})
    })
  }
}

/** Decodes one SSE `data` payload: a chunk, an in-band error (→ 502), or an `InvalidResponse`. */
const decodeSseItem =
  (ctx: CallContext) => (item: Sse.SseItem): Either.Either<ChatCompletionChunk, UpstreamFailure> => {
    const target = ctx.target.id
    if (item._tag === "Overflow") {
      return Either.left(
        new InvalidResponse({ target, reason: `stream event larger than ${item.maxEventSize} characters` })
      )
    }
    return Option.match(Failure.jsonOf(item.data), {
      onNone: () => Either.left(new InvalidResponse({ target, reason: "stream chunk is not valid JSON" })),
      onSome: (json) =>
        Option.match(Failure.errorBodyOf(json), {
          onSome: () =>
            Either.left(
              Failure.upstreamStatus({
                target,
                status: 502,
                body: Option.some(item.data),
                retryAfterMs: Option.none(),
                secrets: ctx.secrets
              })
            ),
          onNone: () =>
            Either.mapLeft(decodeChunkJson(json), (error) => Failure.schemaMismatch(target, "stream chunk", error))
        })
    })
  }

const isDone = (item: Sse.SseItem): boolean => item._tag === "Data" && item.data.trim() === "[DONE]"
const isBlank = (item: Sse.SseItem): boolean => item._tag === "Data" && item.data.trim().length === 0

/** What one SSE item does to a piece stream. */
type ItemStep =
  | { readonly _tag: "Piece"; readonly piece: StreamPiece; readonly last: boolean }
  | { readonly _tag: "Skip" }
  | { readonly _tag: "Done" }
  | { readonly _tag: "Fail"; readonly failure: UpstreamFailure }

const skip: ItemStep = { _tag: "Skip" }
const done: ItemStep = { _tag: "Done" }

const overflow = (target: string, item: { readonly maxEventSize: number }): ItemStep => ({
  _tag: "Fail",
  failure: new InvalidResponse({ target, reason: `stream event larger than ${item.maxEventSize} characters` })
})

/**
 * The per-item step of a format: `openai_chat` — `[DONE]` ends, each `data` is a chunk (or an
 * in-band error, or `InvalidResponse`); Messages and Responses — each event translated into chat
 * chunks (`internal/anthropic.ts`, `internal/responses.ts`) and, on a native replay, kept as it was
 * sent; the stream ends after its last event; `end` closes what the translation had open.
 */
const itemSteps = (ctx: CallContext): {
  readonly step: (item: Sse.SseItem) => ItemStep
  readonly end: () => ReadonlyArray<ChatCompletionChunk>
} => {
  const target = ctx.target.id
  const format = ctx.target.client.format
  if (format === "openai_chat") {
    const decode = decodeSseItem(ctx)
    return {
      step: (item) => {
        if (isDone(item)) return done
        if (isBlank(item)) return skip
        return Either.match(decode(item), {
          onLeft: (failure): ItemStep => ({ _tag: "Fail", failure }),
          onRight: (chunk): ItemStep => ({
            _tag: "Piece",
            piece: { chunks: [chunk], native: Option.none(), ...sseField(oneLineData(item)) },
            last: false
          })
        })
      },
      end: () => []
    }
  }
  const translator = (format === "anthropic_messages" ? Anthropic.streamTranslator : Responses.streamTranslator)({
    target,
    secrets: ctx.secrets
  })
  return {
    step: (item) => {
      if (item._tag === "Overflow") return overflow(target, item)
      if (isBlank(item)) return skip
      const step = translator.push(item.data)
      if (step._tag === "Failed") return { _tag: "Fail", failure: step.failure }
      return {
        _tag: "Piece",
        piece: {
          chunks: step.chunks,
          native: ctx.nativeReplay && step.event !== undefined
            ? Option.some({
              format,
              event: step.event.type,
              data: step.event.data,
              ...textField(oneLineData(item))
            })
            : Option.none()
        },
        last: step.last
      }
    },
    end: translator.end
  }
}

/**
 * Opens the piece stream of a 2xx SSE answer at its headers: one push-fed source (no Stream stage
 * per concern); each network chunk is decoded, split into SSE events, parsed and translated in one
 * step. A gap longer than the client's `timeout_ms` while the consumer waits fails the stream with
 * `DeadlineExceeded` (one watchdog per stream). Ending at `[DONE]` or the last event lets the
 * exchange finish its body (its connection stays pooled; aborted if that takes longer than
 * `Exchange.endGraceMs`); failing, timing out and the consumer stopping early abort it. A stream cut before its last event still closes what the translation had open.
 */
const openPieces = (
  ctx: CallContext,
  clock: Clock.Clock
): Exchange.OpenStream<Relay.Relay<StreamPiece, UpstreamFailure>> =>
(control) => {
  const target = ctx.target.id
  const idleMs = ctx.target.client.timeoutMs
  const source = new Exchange.PushSource<StreamPiece, UpstreamFailure>(
    control,
    clock,
    idleMs,
    () => new DeadlineExceeded({ target, afterMs: Option.getOrElse(idleMs, () => 0) })
  )
  const steps = itemSteps(ctx)
  const decoder = new TextDecoder()
  let sse = Sse.initial
  let over = false
  const finish = () => {
    over = true
    const chunks = steps.end()
    if (chunks.length > 0) source.offer({ chunks, native: Option.none() })
    source.finish()
  }
  const sink: Exchange.BodySink = {
    onData: (bytes) => {
      if (over) return
      source.touch()
      const [next, items] = Sse.feed(sse, decoder.decode(bytes, { stream: true }))
      sse = next
      for (const item of items) {
        const step = steps.step(item)
        switch (step._tag) {
          case "Skip":
            continue
          case "Done":
            return finish()
          case "Fail":
            over = true
            return source.fail(step.failure)
          case "Piece":
            source.offer(step.piece)
            if (step.last) return finish()
        }
      }
    },
    onComplete: () => {
      source.exchangeDone()
      if (!over) finish()
    },
    onError: (reason) => {
      source.exchangeDone()
      if (over) return
      over = true
      source.fail(new TransportError({ target, reason }))
    }
  }
  return { sink, stream: source }
}

/**
 * Builds the service over the ambient `UpstreamTransport`. Interrupting a call aborts its exchange
 * (the socket, for undici); requests carry the trace context (`traceparent`, `b3`) of
 * `libsy.client_call` when tracing is on and `HttpClient.currentTracerPropagation` is not off.
 *
 * Per logical call:
 * - URL: `openai_chat` — `base_url` trimmed, trailing `/` and a trailing `/chat/completions` or
 *   `/responses` removed, `/chat/completions` appended; `anthropic_messages` — see
 *   `Prepare.messagesUrl` (`…/v1/messages`).
 * - Body (`openai_chat`): a shallow copy with `model` = the target's id and missing `extra_body`
 *   keys added; streamed calls get `stream: true` and `stream_options.include_usage = true`
 *   (unless the caller set `include_usage`), buffered calls drop `stream` / `stream_options`.
 * - Body (`anthropic_messages`): the caller's native Messages body when it has one, else the chat
 *   request translated through the neutral request type (`TranslationError`, before any HTTP
 *   request, when it cannot be); then `Prepare.prepareAnthropicBody`. Answers and streamed events
 *   are translated back into chat completions and chunks; on a native replay the answer body and
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
 *   `TransportError`. A stream is never retried.
 * - Telemetry: `libsy.client_call` span per logical call; `Metrics.upstreamAttempts` per attempt,
 *   `Metrics.retryRecovered` per call that succeeded after a retry.
 * - Circuit breakers: one per LLM client name with a `breaker` table, held by this service (so one
 *   per server), shared by every target of that client and by judge and answer calls alike. The
 *   breaker wraps the whole logical call (retries and deadline included; for a stream, until the
 *   headers), so it counts logical failures; an open breaker fails the call with `CircuitOpen`
 *   before any request is built. See `Breaker`.
 */
export const make: Effect.Effect<UpstreamClient["Type"], never, UpstreamTransport.UpstreamTransport> = Effect.gen(
  function*() {
    const transport = yield* UpstreamTransport.UpstreamTransport
    const registry = yield* Breaker.makeRegistry
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
      call: (wire: Wire) => Effect.Effect<A, UpstreamFailure>
    ): Effect.Effect<A, ClientFailure> =>
      Either.match(chatWire(options, streaming), {
        onLeft: (error) => Effect.fail(error),
        onRight: (wire) => guarded(options, call(wire))
      })
    const answer = (options: CallOptions) =>
      withWire(options, false, (wire) => logicalCall(transport, options, wire, false, noStream, readAnswer))
    const answerStream = (options: CallOptions) =>
      withWire(
        options,
        true,
        (wire) =>
          logicalCall(
            transport,
            options,
            wire,
            true,
            (ctx, clock) => Option.some(openPieces(ctx, clock)),
            (reply): Effect.Effect<Relay.Relay<StreamPiece, UpstreamFailure>, UpstreamFailure> =>
              Effect.succeed(reply._tag === "Stream" ? reply.stream : Relay.make([]))
          )
      )
    return UpstreamClient.of({
      answer,
      answerStream,
      complete: (options) => Effect.map(answer(options), (answered) => answered.completion),
      stream: (options) => Effect.map(answerStream(options), (pieces) => Relay.toStream(chunksOf(pieces))),
      countTokens: (options) =>
        options.target.client.format === "anthropic_messages"
          ? guarded(
            options,
            logicalCall(
              transport,
              options,
              {
                url: Prepare.countTokensUrl(options.target.client.baseUrl),
                body: { ...options.body, model: options.target.id },
                operation: "count_tokens",
                nativeReplay: true
              },
              false,
              noStream,
              readJson
            )
          )
          : Effect.dieMessage(`countTokens needs an anthropic_messages target, got ${options.target.client.format}`),
      register: (client) => Effect.asVoid(registry.forClient(client)),
      breakers: registry.statuses
    })
  }
)

/**
 * {@link make} over the ambient `UpstreamTransport`: the server provides the undici one
 * (`UpstreamTransport.layerDispatcher` over an `Agent`).
 */
export const layerTransport: Layer.Layer<UpstreamClient, never, UpstreamTransport.UpstreamTransport> = Layer.effect(
  UpstreamClient,
  make
)

/**
 * {@link make} over any platform `HttpClient` (e.g. `NodeHttpClient.layerUndici` or
 * `FetchHttpClient.layer`), through `UpstreamTransport.layerHttpClient`: the same deadlines,
 * retries, breakers and failures as {@link layerTransport}.
 */
export const layer: Layer.Layer<UpstreamClient, never, HttpClient.HttpClient> = layerTransport.pipe(
  Layer.provide(UpstreamTransport.layerHttpClient)
)
