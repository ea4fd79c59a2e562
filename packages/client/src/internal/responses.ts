/**
 * The `openai_responses` side of the upstream client: the Responses body sent for a call (the
 * caller's own Responses body when it has one, else the chat request translated through the
 * neutral request type), and the translation of Responses answers — buffered and streamed — back
 * into chat completions and chunks.
 *
 * @internal
 */
import type { InvalidResponse, TranslationError } from "@switchyard-ts/protocol/Errors"
import { type ChatCompletion, type ChatCompletionChunk, decodeOptions } from "@switchyard-ts/protocol/OpenAiChat"
import * as OpenAiResponses from "@switchyard-ts/protocol/OpenAiResponses"
import * as Plain from "@switchyard-ts/protocol/Plain"
import * as Translate from "@switchyard-ts/protocol/Translate"
import * as TranslateResponses from "@switchyard-ts/protocol/TranslateResponses"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"
import type { NativeBody, Target } from "../Target.js"
import type { StreamStep } from "./anthropic.js"
import * as Failure from "./failure.js"
import * as Prepare from "./prepare.js"

const decodeResponsesRequest = Schema.decodeUnknownEither(
  OpenAiResponses.ResponsesRequest,
  OpenAiResponses.decodeOptions
)

/**
 * Why a native body the server could not translate fails on a target of `format`: the server finds
 * a Responses body untranslatable while building the Chat request routing works on, so `error`
 * speaks of an `openai_chat` upstream; for an `anthropic_messages` target the Messages
 * translation's own error is given instead (`error` when that one does not fail).
 */
export const untranslatableFor = (
  format: Target["client"]["format"],
  native: NativeBody,
  error: TranslationError
): TranslationError => {
  if (format !== "anthropic_messages" || native.format !== "openai_responses") return error
  return decodeResponsesRequest(native.body).pipe(
    Either.mapLeft(() => error),
    Either.flatMap(TranslateResponses.fromResponsesRequest),
    Either.flatMap(TranslateResponses.toMessagesRequest),
    Either.match({ onLeft: (messagesError) => messagesError, onRight: () => error })
  )
}

/**
 * A Responses body for `target`: `model` = the target's id, the target's `extra_body` keys added
 * where missing; `stream: true` for a streamed call, no `stream` / `stream_options` otherwise.
 */
export const prepareBody = (
  target: Target,
  body: Readonly<Record<string, unknown>>,
  streaming: boolean
): Record<string, unknown> => {
  const out: Record<string, unknown> = { ...body, model: target.id }
  Prepare.addExtraBody(out, target)
  Prepare.forceReasoningEffort(out, target, "responses")
  Prepare.prependSystemPrompt(out, target, "responses")
  if (streaming) out["stream"] = true
  else {
    delete out["stream"]
    delete out["stream_options"]
  }
  return out
}

/**
 * The Responses body of a call to an `openai_responses` target: the caller's native Responses body
 * when it came in as one, else the chat request translated (OpenAI Chat → neutral → Responses);
 * then {@link prepareBody}. Fails with `TranslationError` when the chat request has something the
 * Responses API cannot express.
 */
export const encodeBody = (
  target: Target,
  body: Readonly<Record<string, unknown>>,
  native: NativeBody | undefined,
  streaming: boolean
): Either.Either<Record<string, unknown>, TranslationError> =>
  Prepare.nativeOrTranslated(
    "openai_responses",
    body,
    native,
    TranslateResponses.toResponsesRequest,
    (request) => prepareBody(target, request, streaming)
  )

const decodeResponse = Failure.decodeJsonText(OpenAiResponses.ResponseObject, "response body")

/**
 * A buffered Responses answer, decoded (`body`, unknown fields and items preserved) and as a
 * chat completion; `created` is the response's `created_at`, else `nowSeconds`.
 */
export const decodeAnswer = (
  target: string,
  text: string,
  nowSeconds: number
): Either.Either<
  { readonly completion: ChatCompletion; readonly body: OpenAiResponses.ResponseObject },
  InvalidResponse
> =>
  Either.map(decodeResponse(target, text), (response) => ({
    completion: {
      ...Translate.toOpenAiResponse(TranslateResponses.fromResponsesResponse(response)),
      created: typeof response.created_at === "number" ? response.created_at : nowSeconds
    },
    body: response
  }))

const decodeEvent = Plain.decoder(OpenAiResponses.StreamEvent, decodeOptions)

const failureMessage = (json: Readonly<Record<string, unknown>>): string => {
  const direct = json["message"]
  const nested = Predicate.isRecord(json["error"]) ? json["error"]["message"] : undefined
  const fromResponse = Predicate.isRecord(json["response"]) && Predicate.isRecord(json["response"]["error"])
    ? json["response"]["error"]["message"]
    : undefined
  const message = [direct, nested, fromResponse].find(Predicate.isString)
  return message ?? "the upstream stream failed"
}

/**
 * A per-stream translator of Responses SSE payloads into chat chunks. An in-band `error` or
 * `response.failed` event becomes an `UpstreamStatus` 502 built from its message (summarised and
 * redacted like any upstream error body); `response.completed` / `response.incomplete` is the last
 * event; events of other types translate to nothing but are kept for a native replay.
 */
export const streamTranslator = (options: {
  readonly target: string
  readonly secrets: ReadonlyArray<string>
}): {
  readonly push: (data: string) => StreamStep
  readonly end: () => ReadonlyArray<ChatCompletionChunk>
} => {
  const translator = TranslateResponses.responsesToChatStream()
  const push = (data: string): StreamStep =>
    Either.match(Failure.jsonOrInvalid(options.target, "stream event", data), {
      onLeft: (failure): StreamStep => ({ _tag: "Failed", failure }),
      onRight: (json): StreamStep => {
        if (Predicate.isRecord(json) && (json["type"] === "error" || json["type"] === "response.failed")) {
          return {
            _tag: "Failed",
            failure: Failure.upstreamStatus({
              target: options.target,
              status: 502,
              body: Option.some(JSON.stringify({ error: { message: failureMessage(json) } })),
              retryAfterMs: Option.none(),
              secrets: options.secrets
            })
          }
        }
        return Either.match(decodeEvent(json), {
          onLeft: (error): StreamStep => ({
            _tag: "Failed",
            failure: Failure.schemaMismatch(options.target, "stream event", error)
          }),
          onRight: (event): StreamStep => ({
            _tag: "Chunks",
            chunks: translator.push(event),
            last: event.type === "response.completed" || event.type === "response.incomplete",
            event: { type: event.type, data: event }
          })
        })
      }
    })
  return { push, end: () => translator.end() }
}
