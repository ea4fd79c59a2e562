/**
 * OpenAI Chat Completions ingress (`/v1/chat/completions`): the request is the chat request routing
 * works on as it came (its bytes kept for a chat target); answers and chunks are written as they
 * are (a chat target's own `data:` bytes when it sent them); the OpenAI error envelope, which the
 * Responses codec and the endpoints that route nothing share.
 *
 * @internal
 */
import * as Relay from "@switchyard-ts/client/Relay"
import { type RequestFailure, toEnvelope, toHttp, type UpstreamFailure } from "@switchyard-ts/protocol/Errors"
import { ChatCompletionRequest, decodeOptions } from "@switchyard-ts/protocol/OpenAiChat"
import * as Plain from "@switchyard-ts/protocol/Plain"
import * as Effect from "effect/Effect"
import { type Codec, type Encoder, type ErrorResponse, piecesOf, sseData, validated } from "./codec.js"

const chatStreamError = (failure: UpstreamFailure) => {
  const mapping = toHttp(failure)
  return sseData(JSON.stringify({ error: { message: mapping.message, type: "SwitchyardError", code: mapping.code } }))
}

/** The status and OpenAI envelope of a failure. */
export const openAiError = (failure: RequestFailure): ErrorResponse => {
  const mapping = toHttp(failure)
  return { status: mapping.status, body: toEnvelope(mapping) }
}

/** The OpenAI envelope of a defect: 500 `internal error`. */
export const openAiInternalError: ErrorResponse = {
  status: 500,
  body: { error: { message: "internal error", type: "server_error", code: "server_error" } }
}

const chatEncoder: Encoder = {
  answer: (completed) => completed.completion,
  stream: (streamed) => ({
    events: Relay.concat(
      Relay.map(piecesOf(streamed), (pieces) => {
        const events: Array<string> = []
        for (const piece of pieces) {
          // same format: the upstream's own bytes; otherwise the chunks encoded
          if (piece.sse !== undefined) events.push(sseData(piece.sse))
          else for (const chunk of piece.chunks) events.push(sseData(JSON.stringify(chunk)))
        }
        return events
      }),
      Effect.succeed([sseData("[DONE]")])
    ),
    streamError: chatStreamError
  }),
  decisionResponse: (answer) => answer
}

const decodeChatRequest = Plain.decoder(ChatCompletionRequest, decodeOptions)

/** OpenAI Chat Completions: `/v1/chat/completions`, the OpenAI error envelope. */
export const openAiChat: Codec = {
  format: "openai_chat",
  decode: (json, headers, sessionId, raw) =>
    Effect.map(validated(decodeChatRequest, json, raw), (body) => ({
      routed: { body, headers, sessionId, inboundFormat: "openai_chat" },
      model: body.model,
      streaming: body.stream === true,
      encoder: chatEncoder
    })),
  error: openAiError,
  internalError: openAiInternalError
}
