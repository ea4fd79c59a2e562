/**
 * Anthropic Messages ingress (`/v1/messages`): a Messages request translated into the chat request
 * routing works on (its own body kept for an `anthropic_messages` target), answers and streams
 * written as Messages (an Anthropic target's own, only `model` restamped), the Anthropic error
 * envelope (`../messages.ts` holds the translations and shapes).
 *
 * @internal
 */
import * as AnthropicMessages from "@switchyard-ts/protocol/AnthropicMessages"
import { decodeOptions } from "@switchyard-ts/protocol/OpenAiChat"
import * as Plain from "@switchyard-ts/protocol/Plain"
import * as Translate from "@switchyard-ts/protocol/Translate"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Messages from "../messages.js"
import {
  type Codec,
  type Encoder,
  type Inbound,
  nativeBody,
  nativeEvents,
  servedIn,
  translatedEvents,
  translatedOrViewed,
  validated
} from "./codec.js"

const decodeMessagesRequest = Plain.decoder(AnthropicMessages.MessagesRequest, decodeOptions)

const messagesEncoder: Encoder = {
  answer: (completed, model) =>
    Option.match(completed.native, {
      onNone: () => Messages.messageOf(completed.completion, model),
      onSome: (native) => ({ ...native.body, model })
    }),
  stream: (streamed, model) => ({
    events: servedIn(streamed, "anthropic_messages")
      ? nativeEvents(streamed, (event) => Messages.nativeSseEvent(event, model))
      : translatedEvents(streamed, Translate.openAiToAnthropicStream({ model }), Messages.sseEvent),
    streamError: Messages.streamErrorEvent
  }),
  decisionResponse: (answer, model) => Messages.messageOf(answer, model)
}

/**
 * Anthropic Messages: `/v1/messages`, the Anthropic error envelope. A Messages answer from an
 * `anthropic_messages` target (the caller's body was replayed there) is written as the upstream
 * sent it, only `model` restamped; any other answer is translated from the chat shape. A request
 * whose content the chat shape cannot hold (a document inside a `tool_result`, …) is routed on
 * what can be translated and fails 400 on a target of another format.
 */
export const anthropicMessages: Codec = {
  format: "anthropic_messages",
  decode: (json, headers, sessionId, raw) =>
    Effect.flatMap(validated(decodeMessagesRequest, json, raw), (native) =>
      Effect.map(
        translatedOrViewed(native, Messages.chatRequestOf, Messages.routingView),
        ({ translated, untranslatable }): Inbound => ({
          routed: {
            body: translated,
            headers,
            sessionId,
            native: nativeBody("anthropic_messages", native, untranslatable),
            inboundFormat: "anthropic_messages"
          },
          model: native.model,
          streaming: native.stream === true,
          encoder: messagesEncoder
        })
      )),
  error: Messages.errorOf,
  internalError: { status: 500, body: AnthropicMessages.envelope(500, "internal error") }
}
