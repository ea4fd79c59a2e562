/**
 * The `openai_responses` format (`POST …/responses`, `Authorization: Bearer`): the Responses body
 * sent for a call (the caller's own Responses body when it has one, else the chat request
 * translated through the neutral request type), the auxiliary operations (`…/responses/input_tokens`,
 * `…/responses/compact`), the translation of Responses answers — buffered and streamed — back into
 * chat completions and chunks (an in-band `error` or `response.failed` event failing the stream),
 * and the OpenAI error body (as `openai_chat`'s).
 *
 * @internal
 */
import type { InvalidResponse } from "@switchyard-ts/protocol/Errors"
import { type ChatCompletion, decodeOptions } from "@switchyard-ts/protocol/OpenAiChat"
import * as OpenAiResponses from "@switchyard-ts/protocol/OpenAiResponses"
import * as Plain from "@switchyard-ts/protocol/Plain"
import * as Translate from "@switchyard-ts/protocol/Translate"
import * as TranslateResponses from "@switchyard-ts/protocol/TranslateResponses"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import type { NativeBody, Target } from "../../Target.js"
import * as Failure from "../failure.js"
import {
  type EncodeBody,
  type ResponsesAuxiliary,
  type StreamStep,
  type StreamTranslator,
  translatedAnswer,
  translatedSteps,
  translatedWire,
  type UpstreamFormat
} from "../format.js"
import * as Prepare from "../prepare.js"
import * as AnthropicBeta from "./anthropicBeta.js"
import * as OpenAiChat from "./openAiChat.js"

/** The Responses URL of an `openai_responses` client: `base_url` stripped as for Chat, then `/responses`. */
export const responsesUrl = (baseUrl: string): string => `${OpenAiChat.openAiBase(baseUrl)}/responses`

/**
 * A Responses body for `target`: `model` = the target's id, the target's `extra_body` keys added
 * where missing, its `reasoning_effort` as `reasoning.effort` (the caller's other `reasoning`
 * fields kept), its `system_prompt` before the caller's `instructions` (a blank line between);
 * `stream: true` for a streamed call, no `stream` / `stream_options` otherwise.
 */
export const prepareBody = (
  target: Target,
  body: Readonly<Record<string, unknown>>,
  streaming: boolean
): Record<string, unknown> => {
  const out: Record<string, unknown> = { ...body, model: target.id }
  Prepare.addExtraBody(out, target)
  const effort = target.reasoningEffort
  if (effort !== undefined) {
    const reasoning = out["reasoning"]
    out["reasoning"] = Predicate.isRecord(reasoning) ? { ...reasoning, effort } : { effort }
  }
  const prompt = target.systemPrompt
  if (prompt !== undefined) {
    const instructions = out["instructions"]
    out["instructions"] = typeof instructions === "string" && instructions !== ""
      ? `${prompt}\n\n${instructions}`
      : prompt
  }
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
export const encodeBody: EncodeBody = (target, body, native, streaming) =>
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
}): StreamTranslator => {
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
              secrets: options.secrets,
              errors: OpenAiChat.errors
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

/** `POST …/responses/<operation>`. */
const auxiliaryUrl = (baseUrl: string, operation: ResponsesAuxiliary): string => `${responsesUrl(baseUrl)}/${operation}`

/** The `openai_responses` record. */
export const format: UpstreamFormat = {
  format: "openai_responses",
  chatWire: translatedWire("openai_responses", encodeBody, (target) => responsesUrl(target.client.baseUrl)),
  untranslatable: (_native: NativeBody, error) => error,
  auxiliaryUrl,
  authHeaders: OpenAiChat.bearerAuth,
  forwardedHeaders: OpenAiChat.openAiForwardedHeaders,
  carryHeaders: AnthropicBeta.onNativeReplay,
  readAnswer: translatedAnswer("openai_responses", decodeAnswer),
  streamSteps: translatedSteps("openai_responses", streamTranslator),
  errors: OpenAiChat.errors
}
