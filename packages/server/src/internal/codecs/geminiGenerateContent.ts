/**
 * Gemini API ingress (`/v1beta/models/{model}:generateContent`, `:streamGenerateContent`): a
 * `GenerateContentRequest` translated (`TranslateGemini`) into the chat request routing works on
 * (its own body kept for a `gemini_generate_content` target), the route and streaming named by the
 * URL; answers and streams written as Gemini answers (SSE with `alt=sse`, else one JSON array
 * streamed; a Gemini target's own, only `modelVersion` restamped); the Gemini error envelope for
 * every failure. The endpoint around it (paths, inbound auth, `:countTokens`, the models list) is
 * `../gemini.ts`.
 *
 * @internal
 */
import * as Relay from "@switchyard-ts/client/Relay"
import { type RequestFailure, toHttp, type UpstreamFailure } from "@switchyard-ts/protocol/Errors"
import * as Gemini from "@switchyard-ts/protocol/Gemini"
import type * as Neutral from "@switchyard-ts/protocol/Neutral"
import type { ChatCompletion, ChatCompletionRequest } from "@switchyard-ts/protocol/OpenAiChat"
import * as Plain from "@switchyard-ts/protocol/Plain"
import * as Translate from "@switchyard-ts/protocol/Translate"
import * as TranslateGemini from "@switchyard-ts/protocol/TranslateGemini"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { validateValue } from "../body.js"
import {
  type Codec,
  type Encoder,
  type ErrorResponse,
  nativeEvents,
  servedIn,
  sseData,
  translatedEvents
} from "./codec.js"

/** The status and Gemini envelope of a failure (the status mapping of every other endpoint). */
export const errorOf = (failure: RequestFailure): ErrorResponse => {
  const mapping = toHttp(failure)
  return { status: mapping.status, body: Gemini.envelope(mapping.status, mapping.message) }
}

/** A chat answer as a Gemini answer, its `modelVersion` the model that served it. */
const responseOf = (completion: ChatCompletion, model: string): Gemini.GenerateContentResponse => ({
  ...TranslateGemini.toGeminiResponse(Translate.fromOpenAiResponse(completion)),
  modelVersion: model
})

/** The JSON text of the error a stream that failed after its headers ends with. */
const streamErrorText = (failure: UpstreamFailure): string => {
  const mapping = toHttp(failure)
  return JSON.stringify(Gemini.envelope(mapping.status, mapping.message))
}

/** A Gemini answer object of a Gemini target, as sent, its `modelVersion` (when it has one) restamped. */
const restamped = (body: Readonly<Record<string, unknown>>, model: string): Readonly<Record<string, unknown>> =>
  body["modelVersion"] === undefined ? body : { ...body, modelVersion: model }

/**
 * The encoder of one request. A stream is `data: <GenerateContentResponse>` events (`sse`) or one
 * JSON array of them written as they come (`[`, events joined by `,`, `]`); a stream failing after
 * its headers ends with the error envelope as its last event (or array element, the array closed).
 * An answer of a `gemini_generate_content` target (the caller's body was replayed there) is written
 * as the upstream sent it — every event of a stream — only `modelVersion` restamped; any other is
 * translated from the chat shape.
 */
const encoder = (sse: boolean): Encoder => ({
  answer: (completed, model) =>
    Option.match(completed.native, {
      onNone: () => responseOf(completed.completion, model),
      onSome: (native) => restamped(native.body, model)
    }),
  decisionResponse: responseOf,
  stream: (streamed, model) => {
    const native = servedIn(streamed, "gemini_generate_content")
    const encoded = (encode: (text: string) => string) =>
      native
        ? nativeEvents(streamed, (event) => encode(JSON.stringify(restamped(event.data, model))))
        : translatedEvents(streamed, TranslateGemini.chatToGeminiStream({ model }), (event) =>
          encode(JSON.stringify(event)))
    if (sse) {
      return {
        events: encoded(sseData),
        streamError: (failure) => sseData(streamErrorText(failure))
      }
    }
    let opened = false
    const element = (text: string) => {
      const separator = opened ? "," : "["
      opened = true
      return separator + text
    }
    return {
      events: Relay.concat(
        encoded(element),
        Effect.sync(() => [opened ? "]" : "[]"])
      ),
      streamError: (failure) => `${element(streamErrorText(failure))}]`,
      contentType: "application/json"
    }
  }
})

const decodeGenerateContentRequest = Plain.decoder(Gemini.GenerateContentRequest, Gemini.decodeOptions)

/** The chat request of a neutral one, streamed with usage when the caller streams. */
const chatOf = (neutral: Neutral.NeutralRequest, stream: boolean): ChatCompletionRequest => {
  const chat = Translate.toOpenAiRequest(neutral)
  return stream ? { ...chat, stream: true, stream_options: { include_usage: true } } : chat
}

/**
 * The codec of one Gemini request: `model` (the route id) and streaming come from the URL, `sse`
 * from its `alt=sse`. The body is a `GenerateContentRequest`, kept as the native body: a
 * `gemini_generate_content` target receives it as it came (its Gemini-only fields included), any
 * other target the chat request translated from it.
 */
export const codec = (model: string, stream: boolean, sse: boolean): Codec => ({
  format: "gemini_generate_content",
  decode: (json, headers, sessionId) =>
    Effect.map(validateValue(decodeGenerateContentRequest, json), (body) => ({
      routed: {
        body: chatOf(TranslateGemini.fromGeminiRequest(body, { model, stream }), stream),
        headers,
        sessionId,
        native: { format: "gemini_generate_content", body },
        inboundFormat: "gemini_generate_content"
      },
      model,
      streaming: stream,
      encoder: encoder(sse)
    })),
  error: errorOf,
  internalError: { status: 500, body: Gemini.envelope(500, "internal error") }
})

/** The codec of Gemini endpoints that route nothing (token counting, refusals, the models list). */
export const plain: Codec = codec("", false, false)
