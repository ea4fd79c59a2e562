/**
 * The `anthropic_messages` side of the upstream client: the Messages body sent for a call (the
 * caller's own Messages body when it has one, else the chat request translated through the
 * neutral request type), and the translation of Messages answers — buffered and streamed — back
 * into chat completions and chunks.
 *
 * @internal
 */
import * as AnthropicMessages from "@switchyard-ts/protocol/AnthropicMessages"
import type { InvalidResponse, TranslationError, UpstreamFailure } from "@switchyard-ts/protocol/Errors"
import { type ChatCompletion, type ChatCompletionChunk, decodeOptions } from "@switchyard-ts/protocol/OpenAiChat"
import * as Plain from "@switchyard-ts/protocol/Plain"
import * as Translate from "@switchyard-ts/protocol/Translate"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import type { NativeBody, Target } from "../Target.js"
import * as Failure from "./failure.js"
import * as Prepare from "./prepare.js"

/**
 * The Messages body of a call to an `anthropic_messages` target: the caller's native Messages body
 * when it came in as one, else the chat request translated (OpenAI → neutral → Anthropic); then the
 * Messages preparation of `Prepare.prepareAnthropicBody`. Fails with `TranslationError` when the
 * chat request has something the Messages API cannot express.
 */
export const encodeBody = (
  target: Target,
  body: Readonly<Record<string, unknown>>,
  native: NativeBody | undefined,
  streaming: boolean
): Either.Either<Record<string, unknown>, TranslationError> =>
  Prepare.nativeOrTranslated(
    "anthropic_messages",
    body,
    native,
    Translate.toAnthropicRequest,
    (request) => Prepare.prepareAnthropicBody(target, request, streaming)
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
 * What one streamed Messages event means for the chunk stream: its chunks, and the event itself
 * (`type` and decoded JSON, unknown fields kept; also for an event type this version skips).
 */
export type StreamStep =
  | {
    readonly _tag: "Chunks"
    readonly chunks: ReadonlyArray<ChatCompletionChunk>
    readonly last: boolean
    readonly event?: { readonly type: string; readonly data: Readonly<Record<string, unknown>> }
  }
  | { readonly _tag: "Failed"; readonly failure: UpstreamFailure }

/**
 * A per-stream translator of Messages SSE payloads into chat chunks. An in-band `error` event
 * becomes an `UpstreamStatus` 502 built from its `error.message` (summarised and redacted like any
 * upstream error body); `message_stop` is the last event; an event of an unknown type is skipped
 * (a known one that does not decode is an `InvalidResponse`).
 */
export const streamTranslator = (options: {
  readonly target: string
  readonly secrets: ReadonlyArray<string>
}): {
  readonly push: (data: string) => StreamStep
  readonly end: () => ReadonlyArray<ChatCompletionChunk>
} => {
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
              format: "anthropic_messages"
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
