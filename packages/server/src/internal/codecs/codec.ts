/**
 * What every inbound codec is (`Codec`: how a request body of one wire format becomes the routed
 * request routing works on, and how an answer — buffered or streamed —, a failure and a route's own
 * answer are written back in that format) and the pieces the codecs share. One module per format
 * beside this one; the table of them is `../codecs.ts`.
 *
 * @internal
 */
import * as Relay from "@switchyard-ts/client/Relay"
import type { Format, NativeBody, Target } from "@switchyard-ts/client/Target"
import * as UpstreamClient from "@switchyard-ts/client/UpstreamClient"
import type { RequestFailure, UpstreamFailure } from "@switchyard-ts/protocol/Errors"
import type { InvalidRequest, ResponseStateConflict, TranslationError } from "@switchyard-ts/protocol/Errors"
import type { WireFormat } from "@switchyard-ts/protocol/Neutral"
import type { ChatCompletion, ChatCompletionChunk } from "@switchyard-ts/protocol/OpenAiChat"
import * as RawJson from "@switchyard-ts/protocol/RawJson"
import type * as Decision from "@switchyard-ts/routing/Decision"
import type { RoutedRequest } from "@switchyard-ts/routing/Route"
import type { Completed, Streamed } from "@switchyard-ts/routing/Router"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import type { ParseError } from "effect/ParseResult"
import { validateValue } from "../body.js"

/**
 * How one request's answer is written back: bound to what the request said (e.g. the namespaces
 * of its tools), so the codec's decode chooses it.
 */
export interface Encoder {
  /** The JSON body of a buffered answer; `model` is the model that served it (or the route id). */
  readonly answer: (completed: Completed, model: string) => unknown
  /** The SSE writer of one streamed answer. */
  readonly stream: (streamed: Streamed, model: string) => StreamEncoding
  /** A route's own answer (noop, the advisor gate) as `/v1/decision` returns it in this format. */
  readonly decisionResponse: (answer: ChatCompletion, model: string) => unknown
  /**
   * Remember the answer {@link answer} or {@link decisionResponse} last wrote, for a later
   * continuation by id (Responses callers only; a streamed answer is remembered by its encoding
   * once it completed). Fails when another target holds its id.
   */
  readonly retain?: (
    decision: Decision.Decision,
    served: Option.Option<Target>
  ) => Effect.Effect<void, ResponseStateConflict>
}

/** The SSE text of one streamed answer. */
export interface StreamEncoding {
  /** Every event in order and the format's end marker; failures are left to {@link streamError}. */
  readonly events: Relay.Relay<string, UpstreamFailure>
  /** The last SSE events of this stream when it fails after its headers were sent. */
  readonly streamError: (failure: UpstreamFailure) => string
  /** The stream's `content-type` when it is not SSE (Gemini's JSON array). */
  readonly contentType?: string
}

/** What a codec reads from a request body. */
export interface Inbound {
  readonly routed: RoutedRequest
  /** The requested model (route id) as the caller wrote it. */
  readonly model: string
  readonly streaming: boolean
  readonly encoder: Encoder
}

/** An error response: its status and envelope body. */
export interface ErrorResponse {
  readonly status: number
  readonly body: unknown
}

/** The wire format of one inbound API. */
export interface Codec {
  /** The inbound wire format: the `wire_format` of the request's log line, its `inboundFormat`. */
  readonly format: WireFormat
  /**
   * The routed request of a parsed JSON body (an object), its `inboundFormat` this codec's
   * `format` (the router's forward-auth family check reads it); `headers` are the caller's
   * (lower-case names). `raw`: the bytes `json` was parsed from, when it came from a request body —
   * remembered for the body a target of the caller's format is sent (`RawJson.remember`). Fails
   * with `InvalidRequest` (schema, naming the field path), `TranslationError`, or
   * `ResponseStateConflict` (a Responses continuation naming state two models hold).
   */
  readonly decode: (
    json: unknown,
    headers: Readonly<Record<string, string>>,
    sessionId: RoutedRequest["sessionId"],
    raw?: RawJson.RawJson
  ) => Effect.Effect<Inbound, InvalidRequest | TranslationError | ResponseStateConflict>
  /** The status and envelope of a failure. */
  readonly error: (failure: RequestFailure) => ErrorResponse
  /** The status and envelope of a defect (a bug): 500 `internal error`. */
  readonly internalError: ErrorResponse
}

/** One SSE event of `data` alone (`data: <data>` and the blank line). */
export const sseData = (data: string) => `data: ${data}\n\n`

/**
 * The relay behind a streamed answer's pieces: the router's own (`Relay.fromStream` hands it back
 * at no cost), so the SSE writer pulls it with no `Stream` step per chunk.
 */
export const piecesOf = (streamed: Streamed) => Relay.fromStream(streamed.pieces)

/**
 * The translation routing works on of a caller's native body: `translate(native)`, or — when that
 * fails — the translation of its routing view (`view`: without what only a server of its own
 * format understands), the failure kept so that a target of another format refuses the request
 * before any call. Fails when even the view cannot be translated.
 */
export const translatedOrViewed = <N, T>(
  native: N,
  translate: (body: N) => Either.Either<T, TranslationError>,
  view: (body: N) => Option.Option<N>
): Effect.Effect<
  { readonly translated: T; readonly untranslatable: Option.Option<TranslationError> },
  TranslationError
> =>
  Either.match(translate(native), {
    onRight: (translated) => Effect.succeed({ translated, untranslatable: Option.none() }),
    onLeft: (error) =>
      Option.match(Option.flatMap(view(native), (body) => Either.getRight(translate(body))), {
        onSome: (translated) => Effect.succeed({ translated, untranslatable: Option.some(error) }),
        onNone: () => Effect.fail(error)
      })
  })

/** The caller's own body, with why it cannot go to another format when it cannot. */
export const nativeBody = (
  format: Format,
  body: Readonly<Record<string, unknown>>,
  untranslatable: Option.Option<TranslationError>
): NativeBody =>
  Option.match(untranslatable, {
    onNone: () => ({ format, body }),
    onSome: (error) => ({ format, body, untranslatable: error })
  })

/**
 * The request body itself, checked against its identity schema without a copy; the bytes it was
 * parsed from remembered for it (the upstream client sends a same-format target those bytes with
 * what changes spliced in).
 */
export const validated = <A extends object>(
  decode: (value: unknown) => Either.Either<A, ParseError>,
  json: unknown,
  raw: RawJson.RawJson | undefined
): Effect.Effect<A, InvalidRequest> =>
  Effect.tap(validateValue(decode, json), (body) => {
    if (raw !== undefined && body === json) RawJson.remember(body, raw)
  })

/** The SSE text of a stream's native events (an upstream of the caller's format), one per event. */
export const nativeEvents = (
  streamed: Streamed,
  encode: (event: UpstreamClient.NativeEvent) => string
): Relay.Relay<string, UpstreamFailure> =>
  Relay.map(piecesOf(streamed), (pieces) => {
    const events: Array<string> = []
    for (const piece of pieces) if (Option.isSome(piece.native)) events.push(encode(piece.native.value))
    return events
  })

/** The SSE text of a stream's chat chunks through a stateful translator, its closing events last. */
export const translatedEvents = <Event>(
  streamed: Streamed,
  translator: {
    readonly push: (chunk: ChatCompletionChunk) => ReadonlyArray<Event>
    readonly end: () => ReadonlyArray<Event>
  },
  encode: (event: Event) => string
): Relay.Relay<string, UpstreamFailure> =>
  Relay.concat(
    Relay.map(Relay.fromStream(UpstreamClient.chunksOf(streamed.pieces)), (chunks) => {
      const events: Array<string> = []
      for (const chunk of chunks) for (const event of translator.push(chunk)) events.push(encode(event))
      return events
    }),
    Effect.sync(() => translator.end().map(encode))
  )

/** Whether a streamed answer comes from a target speaking `format` (its events can be replayed). */
export const servedIn = (streamed: Streamed, format: Format): boolean =>
  Option.exists(streamed.served, (target) => target.client.format === format)
