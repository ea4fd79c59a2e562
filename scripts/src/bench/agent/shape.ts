/**
 * What the protocol package reads in an agent request body: its tools, tool calls and tool
 * results, and who speaks last. The sanity check reads the upstream request the mock received
 * with it; the generator's test reads the generated bodies.
 */
import * as AnthropicMessages from "@switchyard-ts/protocol/AnthropicMessages"
import * as OpenAiChat from "@switchyard-ts/protocol/OpenAiChat"
import * as OpenAiResponses from "@switchyard-ts/protocol/OpenAiResponses"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import type { Format } from "./wire.js"

/** A decoded body's tools, tool calls, tool results, and its last entry. */
export interface Shape {
  readonly tools: number
  readonly calls: number
  readonly results: number
  readonly last: "user" | "tool-result" | "other"
}

const decodeChat = Schema.decodeUnknownEither(
  Schema.parseJson(OpenAiChat.ChatCompletionRequest),
  OpenAiChat.decodeOptions
)
const decodeMessages = Schema.decodeUnknownEither(
  Schema.parseJson(AnthropicMessages.MessagesRequest),
  AnthropicMessages.decodeOptions
)
const decodeResponses = Schema.decodeUnknownEither(
  Schema.parseJson(OpenAiResponses.ResponsesRequest),
  OpenAiResponses.decodeOptions
)

const chatShape = (body: OpenAiChat.ChatCompletionRequest): Shape => {
  const last = body.messages[body.messages.length - 1]
  return {
    tools: body.tools?.length ?? 0,
    calls: body.messages.reduce((n, m) => n + (m.role === "assistant" ? m.tool_calls?.length ?? 0 : 0), 0),
    results: body.messages.filter((m) => m.role === "tool").length,
    last: last?.role === "user" ? "user" : last?.role === "tool" ? "tool-result" : "other"
  }
}

const messagesShape = (body: AnthropicMessages.MessagesRequest): Shape => {
  const blocks = body.messages.flatMap((m) => (typeof m.content === "string" ? [] : m.content))
  const last = body.messages[body.messages.length - 1]
  const lastBlocks = last === undefined || typeof last.content === "string" ? [] : last.content
  return {
    tools: body.tools?.length ?? 0,
    calls: blocks.filter((b) => b.type === "tool_use").length,
    results: blocks.filter((b) => b.type === "tool_result").length,
    last: last?.role !== "user" ? "other" : lastBlocks.some((b) => b.type === "tool_result") ? "tool-result" : "user"
  }
}

const responsesShape = (body: OpenAiResponses.ResponsesRequest): Shape => {
  const items = typeof body.input === "string" || body.input === undefined ? [] : body.input
  const last = items[items.length - 1]
  return {
    tools: body.tools?.length ?? 0,
    calls: items.filter((i) => i.type === "function_call").length,
    results: items.filter((i) => i.type === "function_call_output").length,
    last: last === undefined
      ? "other"
      : last.type === "function_call_output"
      ? "tool-result"
      : "role" in last && last.role === "user"
      ? "user"
      : "other"
  }
}

/** The shape of `text` decoded as a `format` request, or the decode error's message. */
export const shapeOf = (format: Format, text: string): Either.Either<Shape, string> =>
  format === "chat"
    ? Either.map(Either.mapLeft(decodeChat(text), String), chatShape)
    : format === "messages"
    ? Either.map(Either.mapLeft(decodeMessages(text), String), messagesShape)
    : Either.map(Either.mapLeft(decodeResponses(text), String), responsesShape)
