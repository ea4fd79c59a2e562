/**
 * Call preparation: what one logical call sends, by the target's format — the URL, the prepared
 * body, the span's operation name — and the headers of its requests (the caller's kept ones, the
 * client's auth, and the trace context of the call's span).
 *
 * @internal
 */
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpTraceContext from "@effect/platform/HttpTraceContext"
import type { TranslationError } from "@switchyard-ts/protocol/Errors"
import * as RawJson from "@switchyard-ts/protocol/RawJson"
import * as Either from "effect/Either"
import type * as Fiber from "effect/Fiber"
import * as FiberRef from "effect/FiberRef"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import type { LlmClient, Target } from "../Target.js"
import type { CallOptions } from "../UpstreamClient.js"
import * as Anthropic from "./anthropic.js"
import * as Gemini from "./gemini.js"
import * as Prepare from "./prepare.js"
import * as Responses from "./responses.js"

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

/** How a call's body is encoded for a target of a format other than chat, and where it goes. */
const otherFormats = {
  anthropic_messages: {
    encodeBody: Anthropic.encodeBody,
    url: (target: Target) => Prepare.messagesUrl(target.client.baseUrl)
  },
  openai_responses: {
    encodeBody: Responses.encodeBody,
    url: (target: Target) => Prepare.responsesUrl(target.client.baseUrl)
  },
  gemini_generate_content: {
    encodeBody: Gemini.encodeBody,
    url: (target: Target, streaming: boolean) =>
      Gemini.modelUrl(target.client.baseUrl, target.id, streaming ? "streamGenerateContent" : "generateContent")
  }
} as const

/** `target` without its `system_prompt`: what a routing-only call (judge, reviewer) is prepared for. */
const withoutSystemPrompt = (target: Target): Target => {
  if (target.systemPrompt === undefined) return target
  const { systemPrompt: _prompt, ...rest } = target
  return rest
}

/**
 * The URL and body of a chat call to `options.target` (its `system_prompt` applied only when
 * `options.completion` is set), by the client's format: a chat request as
 * prepared by `Prepare.prepareBody`, or a Messages, Responses or Gemini body (`anthropic.ts`,
 * `responses.ts`, `gemini.ts`), which fails with `TranslationError` when the request cannot be expressed in
 * that API (or when the caller's own body, of another format, cannot be sent to another format).
 */
export const chatWire = (options: CallOptions, streaming: boolean): Either.Either<Wire, TranslationError> => {
  const target = options.completion === true ? options.target : withoutSystemPrompt(options.target)
  const format = target.client.format
  const untranslatable = options.native?.untranslatable
  if (untranslatable !== undefined && options.native !== undefined && options.native.format !== format) {
    return Either.left(Responses.untranslatableFor(format, options.native, untranslatable))
  }
  if (format === "openai_chat") {
    return Either.right({
      url: Prepare.chatCompletionsUrl(target.client.baseUrl),
      body: Prepare.prepareBody(target, options.body, streaming),
      source: options.body,
      operation: "chat",
      nativeReplay: false
    })
  }
  const encoding = otherFormats[format]
  return Either.map(
    encoding.encodeBody(target, options.body, options.native, streaming),
    (body): Wire => ({
      url: encoding.url(target, streaming),
      body,
      source: options.native?.format === format ? options.native.body : undefined,
      operation: "chat",
      nativeReplay: options.native?.format === format
    })
  )
}

/**
 * The bytes a call sends: the caller's own bytes with what the prepared body changed spliced in
 * (`RawJson.encode`), when the server kept them for the body it was prepared from; else the
 * prepared body serialized.
 */
export const encodedBody = (wire: Wire): string | ReadonlyArray<Uint8Array> => {
  const raw = wire.source === undefined ? undefined : RawJson.of(wire.source)
  const spliced = raw === undefined || wire.source === undefined
    ? undefined
    : RawJson.encode(raw, wire.source, wire.body)
  return spliced ?? JSON.stringify(wire.body)
}

/** `POST …/v1/messages/count_tokens` with the caller's body, `model` set to the target's id. */
export const countTokensWire = (options: CallOptions): Wire => ({
  url: Prepare.countTokensUrl(options.target.client.baseUrl),
  body: { ...options.body, model: options.target.id },
  source: options.body,
  operation: "count_tokens",
  nativeReplay: true
})

/** The Responses auxiliary operations: `POST …/responses/input_tokens` and `POST …/responses/compact`. */
export type ResponsesAuxiliary = "input_tokens" | "compact"

/** `POST …/responses/<operation>` with the caller's body, `model` set to the target's id. */
export const responsesAuxiliaryWire = (options: CallOptions, operation: ResponsesAuxiliary): Wire => ({
  url: `${Prepare.responsesUrl(options.target.client.baseUrl)}/${operation}`,
  body: { ...options.body, model: options.target.id },
  source: options.body,
  operation,
  nativeReplay: true
})

/**
 * The trace context (`traceparent`, `b3`) of the span a request is made in (`libsy.client_call`),
 * unless tracing or `HttpClient.currentTracerPropagation` is off or the span is not one of ours:
 * then a caller's own `traceparent`, forwarded as a caller header, stays as it came.
 */
const traceHeaders = (fiber: Fiber.RuntimeFiber<unknown, unknown>): Readonly<Record<string, string>> => {
  if (!fiber.getFiberRef(FiberRef.currentTracerEnabled) || !fiber.getFiberRef(HttpClient.currentTracerPropagation)) {
    return {}
  }
  const span = fiber.currentSpan
  return span !== undefined && span._tag === "Span" ? HttpTraceContext.toHeaders(span) : {}
}

/**
 * The client's auth headers: `Authorization: Bearer <key>`; `anthropic-version` and `x-api-key`
 * for `anthropic_messages`; `x-goog-api-key` for `gemini_generate_content` (never `?key=` in the
 * URL, which ends up in logs and spans).
 */
const authHeaders = (client: LlmClient): Record<string, string> => {
  const key = Option.map(client.apiKey, Redacted.value)
  switch (client.format) {
    case "anthropic_messages":
      return {
        "anthropic-version": Prepare.anthropicVersion,
        ...Option.match(key, { onNone: () => ({}), onSome: (value) => ({ "x-api-key": value }) })
      }
    case "gemini_generate_content":
      return Option.match(key, { onNone: () => ({}), onSome: (value) => ({ "x-goog-api-key": value }) })
    case "openai_chat":
    case "openai_responses":
      return Option.match(key, { onNone: () => ({}), onSome: (value) => ({ authorization: `Bearer ${value}` }) })
  }
}

/**
 * The headers of every request of a call: the caller's minus the reserved ones, then the client's
 * `extra_headers` (`Prepare.prepareHeaders`), then its auth ({@link authHeaders}), `accept`,
 * `content-type`, and the trace context of the calling `fiber`'s span.
 */
export const requestHeaders = (
  client: LlmClient,
  callerHeaders: Readonly<Record<string, string>>,
  wire: Wire,
  streaming: boolean,
  fiber: Fiber.RuntimeFiber<unknown, unknown>
): Record<string, string> => ({
  ...Prepare.prepareHeaders(client, callerHeaders, { nativeReplay: wire.nativeReplay }),
  ...authHeaders(client),
  accept: streaming ? "text/event-stream" : "application/json",
  "content-type": "application/json",
  ...traceHeaders(fiber)
})

/** `gen_ai.request.*` sampling attributes present in a request body (numbers only, no content). */
export const requestAttributes = (body: Readonly<Record<string, unknown>>): Record<string, number> => {
  const attributes: Record<string, number> = {}
  const copy = (field: string, attribute: string) => {
    const value = body[field]
    if (typeof value === "number") attributes[attribute] = value
  }
  copy("temperature", "gen_ai.request.temperature")
  copy("top_p", "gen_ai.request.top_p")
  copy("max_tokens", "gen_ai.request.max_tokens")
  copy("max_completion_tokens", "gen_ai.request.max_tokens")
  return attributes
}
