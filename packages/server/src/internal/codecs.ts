/**
 * One codec per inbound wire format: how a request body of that format becomes the routed request
 * routing works on, and how an answer (buffered or streamed), a failure, and a route's own answer
 * are written back in that format. The request pipeline (`pipeline.ts`) is the same for every
 * format; adding a format is adding a codec.
 *
 * @internal
 */
import * as AnthropicMessages from "@switchyard-ts/protocol/AnthropicMessages"
import { type RequestFailure, toEnvelope, toHttp, type UpstreamFailure } from "@switchyard-ts/protocol/Errors"
import { ChatCompletionRequest, type ChatCompletion } from "@switchyard-ts/protocol/OpenAiChat"
import * as Translate from "@switchyard-ts/protocol/Translate"
import type { Format } from "@switchyard-ts/client/Target"
import * as UpstreamClient from "@switchyard-ts/client/UpstreamClient"
import type { RoutedRequest } from "@switchyard-ts/routing/Route"
import type { Completed, Streamed } from "@switchyard-ts/routing/Router"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import type { InvalidRequest, TranslationError } from "@switchyard-ts/protocol/Errors"
import { decodeValue } from "./body.js"
import * as Messages from "./messages.js"

/** What a codec reads from a request body. */
export interface Inbound {
  readonly routed: RoutedRequest
  /** The requested model (route id) as the caller wrote it. */
  readonly model: string
  readonly streaming: boolean
}

/** An error response: its status and envelope body. */
export interface ErrorResponse {
  readonly status: number
  readonly body: unknown
}

/** The wire format of one inbound API. */
export interface Codec {
  readonly format: Format
  /**
   * The routed request of a parsed JSON body (an object); `headers` are the caller's (lower-case
   * names). Fails with `InvalidRequest` (schema, naming the field path) or `TranslationError`.
   */
  readonly decode: (
    json: unknown,
    headers: Readonly<Record<string, string>>,
    sessionId: RoutedRequest["sessionId"]
  ) => Effect.Effect<Inbound, InvalidRequest | TranslationError>
  /** The JSON body of a buffered answer; `model` is the model that served it (or the route id). */
  readonly answer: (completed: Completed, model: string) => unknown
  /**
   * The SSE text of a streamed answer, every event in order and the format's end marker; the
   * stream's failures are left to {@link streamError}.
   */
  readonly events: (streamed: Streamed, model: string) => Stream.Stream<string, UpstreamFailure>
  /** The last SSE event of a stream that fails after its headers were sent. */
  readonly streamError: (failure: UpstreamFailure) => string
  /** The status and envelope of a failure. */
  readonly error: (failure: RequestFailure) => ErrorResponse
  /** The status and envelope of a defect (a bug): 500 `internal error`. */
  readonly internalError: ErrorResponse
  /** A route's own answer (noop, the advisor gate) as `/v1/decision` returns it in this format. */
  readonly decisionResponse: (answer: ChatCompletion, model: string) => unknown
}

const sseData = (data: string) => `data: ${data}\n\n`

/** OpenAI Chat Completions: `/v1/chat/completions`, the OpenAI error envelope. */
export const openAiChat: Codec = {
  format: "openai_chat",
  decode: (json, headers, sessionId) =>
    Effect.map(decodeValue(ChatCompletionRequest, json), (body) => ({
      routed: { body, headers, sessionId },
      model: body.model,
      streaming: body.stream === true
    })),
  answer: (completed) => completed.completion,
  events: (streamed) =>
    UpstreamClient.chunksOf(streamed.pieces).pipe(
      Stream.map((chunk) => sseData(JSON.stringify(chunk))),
      Stream.concat(Stream.succeed(sseData("[DONE]")))
    ),
  streamError: (failure) => {
    const mapping = toHttp(failure)
    return sseData(JSON.stringify({ error: { message: mapping.message, type: "SwitchyardError", code: mapping.code } }))
  },
  error: (failure) => {
    const mapping = toHttp(failure)
    return { status: mapping.status, body: toEnvelope(mapping) }
  },
  internalError: { status: 500, body: { error: { message: "internal error", type: "server_error", code: "server_error" } } },
  decisionResponse: (answer) => answer
}

/**
 * Anthropic Messages: `/v1/messages`, the Anthropic error envelope. A Messages answer from an
 * `anthropic_messages` target (the caller's body was replayed there) is written as the upstream
 * sent it, only `model` restamped; any other answer is translated from the chat shape.
 */
export const anthropicMessages: Codec = {
  format: "anthropic_messages",
  decode: (json, headers, sessionId) =>
    Effect.flatMap(decodeValue(AnthropicMessages.MessagesRequest, json), (native) =>
      Effect.map(Messages.chatRequestOf(native), (body) => ({
        routed: { body, headers, sessionId, native: { format: "anthropic_messages", body: native } },
        model: native.model,
        streaming: native.stream === true
      }))),
  answer: (completed, model) =>
    Option.match(completed.native, {
      onNone: () => Messages.messageOf(completed.completion, model),
      onSome: (native) => ({ ...native.body, model })
    }),
  events: (streamed, model) =>
    Option.exists(streamed.served, (target) => target.client.format === "anthropic_messages")
      ? streamed.pieces.pipe(
        Stream.filterMap((piece) => piece.native),
        Stream.map((event) => Messages.nativeSseEvent(event, model))
      )
      : Stream.suspend(() => {
        const translator = Translate.openAiToAnthropicStream({ model })
        return UpstreamClient.chunksOf(streamed.pieces).pipe(
          Stream.mapConcat((chunk) => translator.push(chunk)),
          Stream.concat(Stream.suspend(() => Stream.fromIterable(translator.end()))),
          Stream.map(Messages.sseEvent)
        )
      }),
  streamError: Messages.streamErrorEvent,
  error: Messages.errorOf,
  internalError: { status: 500, body: AnthropicMessages.envelope(500, "internal error") },
  decisionResponse: (answer, model) => Messages.messageOf(answer, model)
}

/** The codec of each inbound format (`/v1/decision`'s `input_format`). */
export const byFormat: Readonly<Record<Format, Codec>> = {
  openai_chat: openAiChat,
  anthropic_messages: anthropicMessages
}
