/**
 * The one table of upstream wire formats: each `Format` to its record (`internal/format.ts`), one
 * module per format in `internal/formats/`. Typed `Record<Format, UpstreamFormat>`, so a format
 * added to `Target.Format` without its record does not compile.
 *
 * @internal
 */
import type { Format } from "../Target.js"
import type { UpstreamFormat } from "./format.js"
import * as AnthropicMessages from "./formats/anthropicMessages.js"
import * as GeminiGenerateContent from "./formats/geminiGenerateContent.js"
import * as OpenAiChat from "./formats/openAiChat.js"
import * as OpenAiResponses from "./formats/openAiResponses.js"

/** Every format's record. */
export const formats: Readonly<Record<Format, UpstreamFormat>> = {
  openai_chat: OpenAiChat.format,
  openai_responses: OpenAiResponses.format,
  anthropic_messages: AnthropicMessages.format,
  gemini_generate_content: GeminiGenerateContent.format
}

/** The record of `format`. */
export const of = (format: Format): UpstreamFormat => formats[format]
