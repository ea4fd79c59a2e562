/**
 * The Anthropic Messages ingress pieces that need no HTTP: a Messages request translated into the
 * chat request routing works on, a chat answer translated back into a Messages answer or event
 * stream, the Anthropic error envelope, and the choice of a route's token-counting target.
 *
 * @internal
 */
import type { Target } from "@switchyard-ts/client/Target"
import type { NativeEvent } from "@switchyard-ts/client/UpstreamClient"
import * as AnthropicMessages from "@switchyard-ts/protocol/AnthropicMessages"
import {
  type RequestFailure,
  toHttp,
  type TranslationError,
  type UpstreamFailure
} from "@switchyard-ts/protocol/Errors"
import { type ChatCompletion, type ChatCompletionRequest, decodeOptions } from "@switchyard-ts/protocol/OpenAiChat"
import * as Plain from "@switchyard-ts/protocol/Plain"
import * as Translate from "@switchyard-ts/protocol/Translate"
import type { Route } from "@switchyard-ts/routing/Route"
import * as Either from "effect/Either"
import type * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"

/**
 * The chat request of a Messages request (Anthropic → neutral → OpenAI). A streamed request asks
 * for usage (`stream_options.include_usage`), which the Messages stream always reports.
 */
export const chatRequestOf = (
  request: AnthropicMessages.MessagesRequest
): Either.Either<ChatCompletionRequest, TranslationError> =>
  Either.map(Translate.fromAnthropicRequest(request), (neutral) => {
    const chat = Translate.toOpenAiRequest(neutral)
    return request.stream === true ? { ...chat, stream: true, stream_options: { include_usage: true } } : chat
  })

/** `tool_result` content items the chat shape can hold. */
const translatableResultItem = (item: unknown): boolean => {
  if (!Predicate.isRecord(item)) return false
  if (item["type"] === "text" || item["type"] === "tool_reference") return true
  const source = item["source"]
  return item["type"] === "image" && Predicate.isRecord(source) &&
    (source["type"] === "base64" || source["type"] === "url")
}

const withTranslatableResults = (block: unknown): unknown =>
  Predicate.isRecord(block) && block["type"] === "tool_result" && Array.isArray(block["content"])
    ? { ...block, content: block["content"].filter(translatableResultItem) }
    : block

const decodeRequest = Plain.decoder(AnthropicMessages.MessagesRequest, decodeOptions)

/**
 * What routing sees of a Messages request whose translation failed: its `tool_result` blocks
 * without the content items the chat shape cannot hold (documents, search results, images by
 * file). The caller's own body still goes to an `anthropic_messages` target.
 */
export const routingView = (
  request: AnthropicMessages.MessagesRequest
): Option.Option<AnthropicMessages.MessagesRequest> =>
  Either.getRight(decodeRequest({
    ...request,
    messages: request.messages.map((message) =>
      Array.isArray(message.content) ? { ...message, content: message.content.map(withTranslatableResults) } : message
    )
  }))

/** A chat answer as a Messages answer, with `model` = the model that served it. */
export const messageOf = (completion: ChatCompletion, model: string): AnthropicMessages.MessagesResponse => ({
  ...Translate.toAnthropicResponse(Translate.fromOpenAiResponse(completion)),
  model
})

/** One Messages SSE event: `event: <type>` then its JSON. */
export const sseEvent = (event: AnthropicMessages.StreamEvent): string =>
  `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`

/**
 * An upstream Messages event forwarded as it came: `event: <name>` then its JSON, with the model of
 * `message_start` restamped to `model` (the served target's id).
 */
export const nativeSseEvent = (event: NativeEvent, model: string): string => {
  const message = event.data["message"]
  if (!(event.event === "message_start" && Predicate.isRecord(message))) {
    return `event: ${event.event}\ndata: ${event.text ?? JSON.stringify(event.data)}\n\n`
  }
  return `event: ${event.event}\ndata: ${JSON.stringify({ ...event.data, message: { ...message, model } })}\n\n`
}

/**
 * The event that ends a Messages stream whose upstream failed after the headers (docs/http-api.md):
 * `event: error` with `{"type":"error","error":{"message":…,"type":"SwitchyardError"}}`.
 */
export const streamErrorEvent = (failure: UpstreamFailure): string =>
  `event: error\ndata: ${
    JSON.stringify({ type: "error", error: { type: "SwitchyardError", message: toHttp(failure).message } })
  }\n\n`

/** The status and Anthropic envelope of a failure (same status mapping as the chat endpoint). */
export const errorOf = (
  failure: RequestFailure
): { readonly status: number; readonly body: AnthropicMessages.ErrorBody } => {
  const mapping = toHttp(failure)
  return { status: mapping.status, body: AnthropicMessages.envelope(mapping.status, mapping.message) }
}

const tierRank = (target: Target): number => {
  const names = `${target.name} ${target.id}`.toLowerCase()
  if (names.includes("opus")) return 0
  if (names.includes("sonnet")) return 1
  if (names.includes("haiku")) return 2
  return 3
}

/**
 * The target that counts tokens for `route`: among its answer targets of format
 * `anthropic_messages`, the first whose name or model id contains `opus`, else `sonnet`, else
 * `haiku`, else the first in route order; none when the route has no Anthropic target (a judge is
 * never one of a route's answer targets).
 */
export const countTokensTarget = (route: Route): Target | undefined => {
  const anthropic = route.targets.filter((target) => target.client.format === "anthropic_messages")
  let best: Target | undefined
  for (const target of anthropic) {
    if (best === undefined || tierRank(target) < tierRank(best)) best = target
  }
  return best
}
