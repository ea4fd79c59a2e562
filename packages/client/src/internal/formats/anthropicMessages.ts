/**
 * The `anthropic_messages` format (`POST …/v1/messages`, `x-api-key` and `anthropic-version`): the
 * Messages body sent for a call (the caller's own Messages body when it has one, else the chat
 * request translated through the neutral request type), token counting (`…/count_tokens`), the
 * translation of Messages answers — buffered and streamed — back into chat completions and chunks,
 * and the Anthropic error body (`error.type`; its context-window phrases; an in-band `error` event).
 *
 * @internal
 */
import * as AnthropicMessages from "@switchyard-ts/protocol/AnthropicMessages"
import type { InvalidResponse, TranslationError } from "@switchyard-ts/protocol/Errors"
import * as Nesting from "@switchyard-ts/protocol/Nesting"
import { type ChatCompletion, decodeOptions } from "@switchyard-ts/protocol/OpenAiChat"
import * as OpenAiResponses from "@switchyard-ts/protocol/OpenAiResponses"
import * as Plain from "@switchyard-ts/protocol/Plain"
import * as Translate from "@switchyard-ts/protocol/Translate"
import * as TranslateResponses from "@switchyard-ts/protocol/TranslateResponses"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"
import type { NativeBody, Target } from "../../Target.js"
import * as Failure from "../failure.js"
import {
  type EncodeBody,
  type StreamStep,
  type StreamTranslator,
  translatedAnswer,
  translatedSteps,
  translatedWire,
  type UpstreamFormat
} from "../format.js"
import * as Prepare from "../prepare.js"
import * as AnthropicBeta from "./anthropicBeta.js"

/**
 * The Messages URL of an `anthropic_messages` client: `base_url` trimmed, trailing `/` removed;
 * kept as-is when it ends with `/v1/messages`, `+/messages` when it ends with `/v1`, else
 * `+/v1/messages`.
 */
export const messagesUrl = (baseUrl: string): string => {
  let base = baseUrl.trim()
  while (base.endsWith("/")) base = base.slice(0, -1)
  if (base.endsWith("/v1/messages")) return base
  if (base.endsWith("/v1")) return `${base}/messages`
  return `${base}/v1/messages`
}

/** The token-counting URL of an `anthropic_messages` client: the Messages URL + `/count_tokens`. */
export const countTokensUrl = (baseUrl: string): string => `${messagesUrl(baseUrl)}/count_tokens`

/** The `anthropic-version` every `anthropic_messages` request carries. */
export const anthropicVersion = "2023-06-01"

/**
 * The target's `system_prompt`, when it has one, before the caller's system: `system` becomes the
 * prompt when absent, else a text block of the prompt followed by the caller's system (a string
 * becoming one text block, blocks kept as they are).
 */
const prependSystemPrompt = (body: Record<string, unknown>, target: Target): void => {
  const prompt = target.systemPrompt
  if (prompt === undefined) return
  const system = body["system"]
  const block = { type: "text", text: prompt }
  if (system === undefined || system === null) body["system"] = prompt
  else if (typeof system === "string") body["system"] = [block, { type: "text", text: system }]
  else if (Array.isArray(system)) body["system"] = [block, ...system]
}

/** Most `cache_control` markers a Messages body may carry; a body at the limit gets no extra one. */
const maxCacheMarkers = 4

/** The `cache_control` markers anywhere in a body (`Nesting.count`: no recursion over the caller's data). */
const countCacheMarkers = (value: unknown): number =>
  Nesting.count(value, (node) => Object.prototype.hasOwnProperty.call(node, "cache_control"))

const ephemeral = { type: "ephemeral" }

/**
 * The last message with its last content block marked `cache_control: {"type":"ephemeral"}`
 * (string content becomes one text block); `undefined` when there is nothing to mark.
 */
const markLastBlock = (message: unknown): Record<string, unknown> | undefined => {
  if (!Predicate.isRecord(message)) return undefined
  const content = message["content"]
  if (typeof content === "string") {
    if (content.length === 0) return undefined
    return { ...message, content: [{ type: "text", text: content, cache_control: ephemeral }] }
  }
  if (!Array.isArray(content) || content.length === 0) return undefined
  const last: unknown = content[content.length - 1]
  if (!Predicate.isRecord(last) || last["type"] === "thinking" || last["type"] === "redacted_thinking") return undefined
  if (Object.prototype.hasOwnProperty.call(last, "cache_control")) return undefined
  return { ...message, content: [...content.slice(0, -1), { ...last, cache_control: ephemeral }] }
}

/** A thinking block that can be replayed: it has a non-empty signature. */
const keepsBlock = (block: unknown): boolean =>
  !(Predicate.isRecord(block) && block["type"] === "thinking" &&
    !(typeof block["signature"] === "string" && block["signature"].length > 0))

/**
 * The body sent to an `anthropic_messages` target (docs/http-api.md), from a Messages request body:
 * a shallow copy with `model` = the target's id; `reasoning_effort` and `context_management`
 * removed; `thinking` blocks without a non-empty `signature` dropped (a message left empty gets
 * `content: ""`); missing `extra_body` keys added; the target's `system_prompt` before the caller's
 * `system`; the last content block of the last message
 * marked `cache_control: {"type":"ephemeral"}` unless the body already has 4 markers; `stream`
 * set for streamed calls and removed for buffered ones.
 */
export const prepareAnthropicBody = (
  target: Target,
  body: Readonly<Record<string, unknown>>,
  streaming: boolean
): Record<string, unknown> => {
  const out: Record<string, unknown> = { ...body, model: target.id }
  delete out["reasoning_effort"]
  delete out["context_management"]
  const messages = out["messages"]
  if (Array.isArray(messages)) {
    out["messages"] = messages.map((message: unknown) => {
      if (!Predicate.isRecord(message) || !Array.isArray(message["content"])) return message
      const content: ReadonlyArray<unknown> = message["content"]
      const kept = content.filter(keepsBlock)
      if (kept.length === content.length) return message
      return { ...message, content: kept.length === 0 ? "" : kept }
    })
  }
  Prepare.addExtraBody(out, target)
  prependSystemPrompt(out, target)
  const marked = out["messages"]
  if (Array.isArray(marked) && marked.length > 0 && countCacheMarkers(out) < maxCacheMarkers) {
    const last = markLastBlock(marked[marked.length - 1])
    if (last !== undefined) out["messages"] = [...marked.slice(0, -1), last]
  }
  if (streaming) out["stream"] = true
  else delete out["stream"]
  return out
}

/**
 * The Messages body of a call to an `anthropic_messages` target: the caller's native Messages body
 * when it came in as one, else the chat request translated (OpenAI → neutral → Anthropic); then the
 * Messages preparation of {@link prepareAnthropicBody}. Fails with `TranslationError` when the
 * chat request has something the Messages API cannot express.
 */
export const encodeBody: EncodeBody = (target, body, native, streaming) =>
  Prepare.nativeOrTranslated(
    "anthropic_messages",
    body,
    native,
    Translate.toAnthropicRequest,
    (request) => prepareAnthropicBody(target, request, streaming)
  )

const decodeMessage = Failure.decodeJsonText(AnthropicMessages.MessagesResponse, "response body")

/**
 * A buffered Messages answer, decoded (`body`, unknown fields and blocks preserved) and as a
 * chat completion; `created` (which Messages answers lack) is `nowSeconds`.
 */
export const decodeAnswer = (
  target: string,
  text: string,
  nowSeconds: number
): Either.Either<
  { readonly completion: ChatCompletion; readonly body: AnthropicMessages.MessagesResponse },
  InvalidResponse
> =>
  Either.map(decodeMessage(target, text), (message) => ({
    completion: { ...Translate.toOpenAiResponse(Translate.fromAnthropicResponse(message)), created: nowSeconds },
    body: message
  }))

const decodeEvent = Plain.decoder(AnthropicMessages.StreamEvent, decodeOptions)

/**
 * A per-stream translator of Messages SSE payloads into chat chunks. An in-band `error` event
 * becomes an `UpstreamStatus` 502 built from its `error.message` (summarised and redacted like any
 * upstream error body); `message_stop` is the last event; an event of an unknown type is skipped
 * (a known one that does not decode is an `InvalidResponse`).
 */
export const streamTranslator = (options: {
  readonly target: string
  readonly secrets: ReadonlyArray<string>
}): StreamTranslator => {
  const translator = Translate.anthropicToOpenAiStream()
  const push = (data: string): StreamStep =>
    Either.match(Failure.jsonOrInvalid(options.target, "stream event", data), {
      onLeft: (failure): StreamStep => ({ _tag: "Failed", failure }),
      onRight: (json): StreamStep => {
        if (Predicate.hasProperty(json, "type") && json.type === "error") {
          return {
            _tag: "Failed",
            failure: Failure.upstreamStatus({
              target: options.target,
              status: 502,
              body: Option.some(data),
              retryAfterMs: Option.none(),
              secrets: options.secrets,
              errors
            })
          }
        }
        return Either.match(decodeEvent(json), {
          onLeft: (error): StreamStep =>
            // An event type newer than this version is skipped, as Anthropic asks clients to do
            // (a native replay still forwards it).
            Predicate.isRecord(json) && typeof json["type"] === "string" &&
              !AnthropicMessages.streamEventTypes.has(json["type"])
              ? { _tag: "Chunks", chunks: [], last: false, event: { type: json["type"], data: json } }
              : { _tag: "Failed", failure: Failure.schemaMismatch(options.target, "stream event", error) },
          onRight: (event) => ({
            _tag: "Chunks",
            chunks: translator.push(event),
            last: event.type === "message_stop",
            event: { type: event.type, data: event }
          })
        })
      }
    })
  return { push, end: () => translator.end() }
}

/** The phrases of an Anthropic 400 that mean the prompt does not fit (docs/operations.md). */
const contextWindowPhrases: ReadonlyArray<string> = [
  "prompt is too long",
  "maximum number of tokens",
  "context window",
  "context length"
]

/** The Anthropic error body: `error.type` (or a `code`), its context-window phrases. */
export const errors: Failure.ErrorVocabulary = {
  codeOf: Failure.codeOrTypeOf,
  contextWindowCodes: [],
  contextWindowPhrases,
  retryAfterOf: Failure.noRetryAfter
}

const decodeResponsesRequest = Schema.decodeUnknownEither(
  OpenAiResponses.ResponsesRequest,
  OpenAiResponses.decodeOptions
)

/**
 * Why a native body the server could not translate fails here: the server finds a Responses body
 * untranslatable while building the Chat request routing works on, so `error` speaks of an
 * `openai_chat` upstream; for a Responses body the Messages translation's own error is given
 * instead (`error` when that one does not fail).
 */
const untranslatable = (native: NativeBody, error: TranslationError): TranslationError => {
  if (native.format !== "openai_responses") return error
  return decodeResponsesRequest(native.body).pipe(
    Either.mapLeft(() => error),
    Either.flatMap(TranslateResponses.fromResponsesRequest),
    Either.flatMap(TranslateResponses.toMessagesRequest),
    Either.match({ onLeft: (messagesError) => messagesError, onRight: () => error })
  )
}

/** `anthropic-version` and `x-api-key: <key>`. */
const authHeaders = (key: Option.Option<string>): Record<string, string> => ({
  "anthropic-version": anthropicVersion,
  ...Option.match(key, { onNone: () => ({}), onSome: (value) => ({ "x-api-key": value }) })
})

/** The `anthropic_messages` record. */
export const format: UpstreamFormat = {
  format: "anthropic_messages",
  chatWire: translatedWire("anthropic_messages", encodeBody, (target) => messagesUrl(target.client.baseUrl)),
  untranslatable,
  countTokensUrl,
  authHeaders,
  forwardedHeaders: ["authorization", "x-api-key"],
  carryHeaders: AnthropicBeta.withForwardedCredential,
  readAnswer: translatedAnswer("anthropic_messages", decodeAnswer),
  streamSteps: translatedSteps("anthropic_messages", streamTranslator),
  errors
}
