/**
 * What an upstream wire format is to the client: one {@link UpstreamFormat} record per format
 * (`internal/formats/<format>.ts`), looked up by the target's `Format` in the one table of
 * `internal/formats.ts`. The generic modules (`wire.ts`, `headers.ts`, `call.ts`, `buffered.ts`,
 * `streamed.ts`, `failure.ts`) ask the record and know no format themselves. Also the pieces the
 * records of formats translated into chat share: the wire of a translated call, the reading of a
 * translated answer and the per-item step of a translated stream.
 *
 * @internal
 */
import type { TranslationError, UpstreamFailure } from "@switchyard-ts/protocol/Errors"
import type { ChatCompletion, ChatCompletionChunk } from "@switchyard-ts/protocol/OpenAiChat"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import type { Format, LlmClient, NativeBody, Target } from "../Target.js"
import type { Answer, CallOptions, StreamPiece } from "../UpstreamClient.js"
import type { CallContext } from "./call.js"
import * as Failure from "./failure.js"
import type * as Sse from "./sse.js"

/** The Responses auxiliary operations: `POST …/responses/input_tokens` and `POST …/responses/compact`. */
export type ResponsesAuxiliary = "input_tokens" | "compact"

/**
 * Where and what one logical call sends: the URL, the prepared body, the span's operation name,
 * and whether the body is the caller's own body sent to a client of its format (its
 * `anthropic-beta` header then goes along, and the answer is kept as the target sent it).
 */
export interface Wire {
  readonly url: string
  readonly body: Readonly<Record<string, unknown>>
  /**
   * The caller's body that `body` was prepared from, when it was (a chat caller's body to a chat
   * target, a caller's own body replayed to a target of its format): its bytes, when the server
   * kept them (`RawJson.of`), are what is sent, with only what `body` changed spliced in.
   */
  readonly source: Readonly<Record<string, unknown>> | undefined
  readonly operation: "chat" | "count_tokens" | ResponsesAuxiliary
  readonly nativeReplay: boolean
}

/** What one SSE item does to a piece stream. */
export type ItemStep =
  | { readonly _tag: "Piece"; readonly piece: StreamPiece; readonly last: boolean }
  | { readonly _tag: "Skip" }
  | { readonly _tag: "Done" }
  | { readonly _tag: "Fail"; readonly failure: UpstreamFailure }

/** How one stream's SSE items become pieces: `step` per item, `end` closes what is open. */
export interface ItemSteps {
  readonly step: (item: Sse.SseItem) => ItemStep
  readonly end: () => ReadonlyArray<ChatCompletionChunk>
}

/**
 * One upstream wire format: everything the client does differently for a target of it. Each
 * format's module builds one (`internal/formats/`); `internal/formats.ts` holds them in a table
 * the compiler checks is complete (`Record<Format, UpstreamFormat>`).
 */
export interface UpstreamFormat {
  readonly format: Format
  /**
   * The wire of a chat call to `target` (already with or without its `system_prompt`): the URL
   * (which may depend on the model and on `streaming`) and the body — a chat request prepared for
   * the format, or the caller's own body of this format (`options.native`), or the chat request
   * translated into the format; `TranslationError` when it cannot be expressed in it.
   */
  readonly chatWire: (
    target: Target,
    options: CallOptions,
    streaming: boolean
  ) => Either.Either<Wire, TranslationError>
  /**
   * Why the caller's native body, which the server could not translate for routing (`error`),
   * fails on a target of this format (the format's own translation error, when it has a better one).
   */
  readonly untranslatable: (native: NativeBody, error: TranslationError) => TranslationError
  /** The URL of the format's token counting (`POST …/count_tokens`), when it has one. */
  readonly countTokensUrl?: (baseUrl: string) => string
  /** The URL of a Responses auxiliary operation, when the format has them. */
  readonly auxiliaryUrl?: (baseUrl: string, operation: ResponsesAuxiliary) => string
  /** The headers carrying the client's key (`key`, when it has one) and any the format always sends. */
  readonly authHeaders: (key: Option.Option<string>) => Record<string, string>
  /** The caller's credential headers a `forward_auth` client of this format receives (lower-case names). */
  readonly forwardedHeaders: ReadonlyArray<string>
  /**
   * Adds to `out` (the caller's kept headers and the client's `extra_headers`) what this format
   * carries over of the caller's headers beyond the generic rules (`headers.ts`).
   */
  readonly carryHeaders: (
    out: Record<string, string>,
    client: LlmClient,
    callerHeaders: Readonly<Record<string, string>>,
    nativeReplay: boolean
  ) => void
  /** A buffered 2xx body read into an answer (a chat completion, and the format's own body on a native replay). */
  readonly readAnswer: (text: string, ctx: CallContext) => Effect.Effect<Answer, UpstreamFailure>
  /** The item steps of one 2xx SSE stream (made once per stream). */
  readonly streamSteps: (ctx: CallContext) => ItemSteps
  /** How the format's error bodies are read (`Failure.upstreamStatus`). */
  readonly errors: Failure.ErrorVocabulary
}

/** The body of a call to a target of a format other than chat, or why it cannot be sent. */
export type EncodeBody = (
  target: Target,
  body: Readonly<Record<string, unknown>>,
  native: NativeBody | undefined,
  streaming: boolean
) => Either.Either<Record<string, unknown>, TranslationError>

/**
 * The chat wire of a format the chat request is translated into: `encodeBody`'s body sent to
 * `url`; the caller's own body (of this format) is the source of its bytes and a native replay.
 */
export const translatedWire = (
  format: Format,
  encodeBody: EncodeBody,
  url: (target: Target, streaming: boolean) => string
): UpstreamFormat["chatWire"] =>
(target, options, streaming) =>
  Either.map(
    encodeBody(target, options.body, options.native, streaming),
    (body): Wire => ({
      url: url(target, streaming),
      body,
      source: options.native?.format === format ? options.native.body : undefined,
      operation: "chat",
      nativeReplay: options.native?.format === format
    })
  )

/** Decodes a buffered answer of a format other than chat: the completion, and the body as sent. */
export type NativeDecoder = (
  target: string,
  text: string,
  nowSeconds: number,
  secrets: ReadonlyArray<string>
) => Either.Either<{ readonly completion: ChatCompletion; readonly body: NativeBody["body"] }, UpstreamFailure>

/**
 * The buffered reading of a format translated into chat: `decode` (`created`, when the answer
 * has none, the time now), its own body kept on a native replay.
 */
export const translatedAnswer = (format: Format, decode: NativeDecoder): UpstreamFormat["readAnswer"] => (text, ctx) =>
  Effect.flatMap(
    Clock.currentTimeMillis,
    (now) =>
      Effect.map(
        decode(ctx.target.id, text, Math.floor(now / 1000), ctx.secrets),
        ({ body, completion }): Answer => ({
          completion,
          native: ctx.nativeReplay ? Option.some<NativeBody>({ format, body }) : Option.none()
        })
      )
  )

/**
 * What one streamed event of a format translated into chat means: its chunks, and the event itself
 * (`type` and decoded JSON, unknown fields kept; also for an event type this version skips).
 */
export type StreamStep =
  | {
    readonly _tag: "Chunks"
    readonly chunks: ReadonlyArray<ChatCompletionChunk>
    readonly last: boolean
    readonly event?: { readonly type: string; readonly data: Readonly<Record<string, unknown>> }
  }
  | { readonly _tag: "Failed"; readonly failure: UpstreamFailure }

/** A per-stream translator of a format's SSE payloads into chat chunks. */
export interface StreamTranslator {
  readonly push: (data: string) => StreamStep
  readonly end: () => ReadonlyArray<ChatCompletionChunk>
}

/** An SSE item's `data` when it can be written back as one `data:` line (no line break in it). */
export const oneLineData = (item: Sse.SseItem): string | undefined =>
  item._tag === "Data" && !item.data.includes("\n") && !item.data.includes("\r") ? item.data : undefined

/** Whether an SSE item is a blank `data` payload (skipped). */
export const isBlank = (item: Sse.SseItem): boolean => item._tag === "Data" && item.data.trim().length === 0

/** The step that skips an item. */
export const skip: ItemStep = { _tag: "Skip" }

/** The failure of an event larger than the SSE parser holds. */
export const overflow = (target: string, item: { readonly maxEventSize: number }): ItemStep => ({
  _tag: "Fail",
  failure: Failure.invalidResponse(target, `stream event larger than ${item.maxEventSize} characters`)
})

const textField = (text: string | undefined): { readonly text?: string } => (text === undefined ? {} : { text })

/**
 * The item steps of a format translated into chat: each event through the stream's translator
 * (`translator`, one per stream) into chat chunks and, on a native replay, kept as it was sent;
 * the stream ends after the translator's last event; `end` closes what the translation had open.
 */
export const translatedSteps = (
  format: Format,
  translator: (options: { readonly target: string; readonly secrets: ReadonlyArray<string> }) => StreamTranslator
): UpstreamFormat["streamSteps"] =>
(ctx) => {
  const target = ctx.target.id
  const translating = translator({ target, secrets: ctx.secrets })
  return {
    step: (item) => {
      if (item._tag === "Overflow") return overflow(target, item)
      if (isBlank(item)) return skip
      const step = translating.push(item.data)
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
    end: translating.end
  }
}
