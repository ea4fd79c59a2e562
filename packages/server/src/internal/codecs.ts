/**
 * One codec per inbound wire format: how a request body of that format becomes the routed request
 * routing works on, and how an answer (buffered or streamed), a failure, and a route's own answer
 * are written back in that format. The request pipeline (`pipeline.ts`) is the same for every
 * format; adding a format is adding a codec — a module in `codecs/` (the `Codec` interface and what
 * the codecs share are in `codecs/codec.ts`) — and its paths in `Api.ts`.
 *
 * @internal
 */
import type { Format } from "@switchyard-ts/client/Target"
import { anthropicMessages } from "./codecs/anthropicMessages.js"
import type { Codec } from "./codecs/codec.js"
import { openAiChat } from "./codecs/openAiChat.js"
import { openAiResponsesWith } from "./codecs/openAiResponses.js"
import type * as Continuations from "./continuations.js"

export { anthropicMessages } from "./codecs/anthropicMessages.js"
export type { Codec, Encoder, ErrorResponse, Inbound, StreamEncoding } from "./codecs/codec.js"
export { codec as gemini, plain as geminiPlain } from "./codecs/geminiGenerateContent.js"
export { openAiChat } from "./codecs/openAiChat.js"
export { openAiResponses, openAiResponsesWith } from "./codecs/openAiResponses.js"

/** The formats `/v1/decision`'s `input_format` names (a Gemini request names its model in the URL). */
export type DecisionFormat = Exclude<Format, "gemini_generate_content">

/** The codec of each inbound format, Responses with `continuations` (`/v1/decision`'s `input_format`). */
export const byFormatWith = (
  continuations: Continuations.Continuations | undefined
): Readonly<Record<DecisionFormat, Codec>> => ({
  openai_chat: openAiChat,
  openai_responses: openAiResponsesWith(continuations),
  anthropic_messages: anthropicMessages
})
