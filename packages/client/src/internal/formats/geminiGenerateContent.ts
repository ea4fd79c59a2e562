/**
 * The `gemini_generate_content` format (`POST …/models/{model}:generateContent`,
 * `:streamGenerateContent?alt=sse`, `x-goog-api-key`): the URL of a call (the model and the method
 * are in the path), the `generateContent` body sent (the caller's own Gemini body when it has one,
 * else the chat request translated through the neutral request type), the translation of Gemini
 * answers — buffered and streamed — back into chat completions and chunks, what an in-band Gemini
 * `error` object becomes, and the Gemini error body (`error.status` is the upstream code, its
 * `RetryInfo` detail the retry delay).
 *
 * @internal
 */
import type { UpstreamFailure } from "@switchyard-ts/protocol/Errors"
import * as Gemini from "@switchyard-ts/protocol/Gemini"
import type { ChatCompletion } from "@switchyard-ts/protocol/OpenAiChat"
import * as Plain from "@switchyard-ts/protocol/Plain"
import * as Translate from "@switchyard-ts/protocol/Translate"
import * as TranslateGemini from "@switchyard-ts/protocol/TranslateGemini"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
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

/** The API version a `base_url` without a path is given (Google's own endpoint serves `v1beta`). */
export const defaultVersionPath = "/v1beta"

/**
 * The API root of a `gemini_generate_content` client: `base_url` trimmed, trailing `/` removed; a
 * base URL without a path (`https://generativelanguage.googleapis.com`) gets
 * {@link defaultVersionPath}; a trailing `/models` is stripped. Otherwise kept as it is, so
 * `https://generativelanguage.googleapis.com/v1beta` and a proxy's own root both work.
 */
export const apiRoot = (baseUrl: string): string => {
  let base = baseUrl.trim()
  while (base.endsWith("/")) base = base.slice(0, -1)
  if (base.endsWith("/models")) base = base.slice(0, -"/models".length)
  if (URL.canParse(base) && new URL(base).pathname === "/") return `${base}${defaultVersionPath}`
  return base
}

/** The method of a Gemini model call. */
export type Method = "generateContent" | "streamGenerateContent" | "countTokens"

/**
 * `{root}/models/{model}:{method}` (`?alt=sse` for `streamGenerateContent`, so the stream is SSE);
 * the target's id may carry the `models/` prefix Gemini's own names have. The model is
 * percent-encoded as one path segment. The API key never goes in the URL.
 */
export const modelUrl = (baseUrl: string, model: string, method: Method): string => {
  const id = model.startsWith("models/") ? model.slice("models/".length) : model
  const url = `${apiRoot(baseUrl)}/models/${encodeURIComponent(id)}:${method}`
  return method === "streamGenerateContent" ? `${url}?alt=sse` : url
}

/**
 * The target's `extra_body` added to a Gemini body: keys the body lacks are added; where both hold
 * an object (`generationConfig`, `toolConfig`), the extra object's keys the body's lacks are added
 * to a copy of it — a translated request nearly always has a `generationConfig` of its own, and
 * `extra_body = { generationConfig = { temperature = 0 } }` must still reach it.
 */
const addExtraBody = (out: Record<string, unknown>, target: Target): void => {
  for (const [key, value] of Object.entries(target.extraBody)) {
    const own = out[key]
    if (own === undefined) out[key] = value
    else if (Predicate.isRecord(own) && Predicate.isRecord(value)) {
      const merged: Record<string, unknown> = { ...own }
      for (const [inner, extra] of Object.entries(value)) if (merged[inner] === undefined) merged[inner] = extra
      out[key] = merged
    }
  }
}

/**
 * A Gemini body for `target`: a shallow copy with the target's `extra_body` added
 * ({@link addExtraBody}) and its `system_prompt` as the first text part of `systemInstruction`;
 * `model` and `stream` removed (the URL says both).
 */
export const prepareBody = (target: Target, body: Readonly<Record<string, unknown>>): Record<string, unknown> => {
  const out: Record<string, unknown> = { ...body }
  delete out["model"]
  delete out["stream"]
  addExtraBody(out, target)
  const prompt = target.systemPrompt
  if (prompt !== undefined) {
    const system = out["systemInstruction"]
    const parts = Predicate.isRecord(system) && Array.isArray(system["parts"]) ? system["parts"] : []
    out["systemInstruction"] = { ...(Predicate.isRecord(system) ? system : {}), parts: [{ text: prompt }, ...parts] }
  }
  return out
}

/**
 * The Gemini body of a call to a `gemini_generate_content` target: the caller's native Gemini body
 * when it came in as one, else the chat request translated (OpenAI Chat → neutral → Gemini); then
 * {@link prepareBody}. Fails with `TranslationError` when the chat request has something the
 * Gemini API cannot express (`TranslateGemini.toGeminiRequest`).
 */
export const encodeBody: EncodeBody = (target, body, native) =>
  Prepare.nativeOrTranslated(
    "gemini_generate_content",
    body,
    native,
    TranslateGemini.toGeminiRequest,
    (request) => prepareBody(target, request)
  )

/** The JSON text of an in-band `error` object, as an `UpstreamStatus` 502 reads it (never the whole body). */
const errorText = (error: unknown): string => {
  const fields = Predicate.isRecord(error) ? error : {}
  const message = fields["message"]
  const status = fields["status"]
  return JSON.stringify({
    error: {
      ...(Predicate.isString(message) ? { message } : {}),
      ...(Predicate.isString(status) ? { status } : {})
    }
  })
}

/** An in-band Gemini `error` object (a 200 body or a stream event carrying one): `UpstreamStatus` 502. */
const inBandError = (target: string, secrets: ReadonlyArray<string>, error: unknown): UpstreamFailure =>
  Failure.upstreamStatus({
    target,
    status: 502,
    body: Option.some(errorText(error)),
    retryAfterMs: Option.none(),
    secrets,
    errors
  })

const decodeResponse = Plain.decoder(Gemini.GenerateContentResponse, Gemini.decodeOptions)

/**
 * A Gemini answer object (a buffered body or one stream event): an in-band `error` fails as
 * {@link inBandError}; an object with neither `candidates`, `promptFeedback` nor `usageMetadata`
 * is not an answer (`InvalidResponse`), since every field of the schema is optional.
 */
const decodeAnswerJson = (
  target: string,
  secrets: ReadonlyArray<string>,
  json: unknown,
  what: string
): Either.Either<Gemini.GenerateContentResponse, UpstreamFailure> => {
  if (Predicate.hasProperty(json, "error")) return Either.left(inBandError(target, secrets, json.error))
  if (
    !Predicate.isRecord(json) ||
    (json["candidates"] === undefined && json["promptFeedback"] === undefined && json["usageMetadata"] === undefined)
  ) {
    return Either.left(Failure.invalidResponse(target, `${what} is not a Gemini answer`))
  }
  return Either.mapLeft(decodeResponse(json), (error) => Failure.schemaMismatch(target, what, error))
}

/**
 * A buffered Gemini answer, decoded (`body`, unknown fields and parts preserved) and as a chat
 * completion (`TranslateGemini.fromGeminiResponse`); `created` (which Gemini answers lack) is
 * `nowSeconds`, `model` the answer's `modelVersion`, else the target's id. A 200 body holding an
 * `error` object fails as an `UpstreamStatus` 502.
 */
export const decodeAnswer = (
  target: string,
  text: string,
  nowSeconds: number,
  secrets: ReadonlyArray<string>
): Either.Either<
  { readonly completion: ChatCompletion; readonly body: Gemini.GenerateContentResponse },
  UpstreamFailure
> =>
  Either.flatMap(
    Failure.jsonOrInvalid(target, "response body", text),
    (json) =>
      Either.map(decodeAnswerJson(target, secrets, json, "response body"), (response) => {
        const completion = Translate.toOpenAiResponse(TranslateGemini.fromGeminiResponse(response))
        return {
          completion: {
            ...completion,
            created: nowSeconds,
            model: completion.model === "" ? target : completion.model
          },
          body: response
        }
      })
  )

/**
 * A per-stream translator of Gemini SSE payloads (each one `GenerateContentResponse` holding what is
 * new) into chat chunks (`TranslateGemini.geminiToChatStream`). An in-band `error` object becomes
 * an `UpstreamStatus` 502 built from its `message` and `status` (summarised and redacted like any
 * upstream error body). Gemini names no last event: the stream ends with the response body, and
 * `end` closes what the translation had open.
 */
export const streamTranslator = (options: {
  readonly target: string
  readonly secrets: ReadonlyArray<string>
}): StreamTranslator => {
  const translator = TranslateGemini.geminiToChatStream()
  const push = (data: string): StreamStep =>
    Either.match(Failure.jsonOrInvalid(options.target, "stream event", data), {
      onLeft: (failure): StreamStep => ({ _tag: "Failed", failure }),
      onRight: (json): StreamStep =>
        Either.match(decodeAnswerJson(options.target, options.secrets, json, "stream event"), {
          onLeft: (failure): StreamStep => ({ _tag: "Failed", failure }),
          onRight: (event): StreamStep => ({
            _tag: "Chunks",
            chunks: translator.push(event),
            last: false,
            event: { type: "", data: event }
          })
        })
    })
  return { push, end: () => translator.end() }
}

/**
 * The phrases of a Gemini 400 that mean the prompt does not fit ("The input token count (…)
 * exceeds the maximum number of tokens allowed (…)").
 */
const contextWindowPhrases: ReadonlyArray<string> = [
  "exceeds the maximum number of tokens",
  "input token count",
  "context window"
]

/**
 * The `error.status` of a Gemini error body (`{"error": {"code", "message", "status"}}`): its
 * `error.code` is the HTTP status again, so `RESOURCE_EXHAUSTED`, `INVALID_ARGUMENT`, … is the code.
 */
const statusOf = (json: Option.Option<unknown>): Option.Option<string> =>
  Option.flatMap(
    json,
    (value) =>
      Predicate.hasProperty(value, "error") && Predicate.hasProperty(value.error, "status") &&
        Predicate.isString(value.error.status)
        ? Option.some(value.error.status)
        : Option.none()
  )

/**
 * The `retryDelay` of a Gemini error body's `google.rpc.RetryInfo` detail (`"30s"`, `"1.5s"`) in
 * milliseconds, capped like `Retry-After`: Gemini's 429 says when to come back there, not in a header.
 */
const retryDelayOf = (json: unknown): Option.Option<number> => {
  const details = Predicate.hasProperty(json, "error") && Predicate.hasProperty(json.error, "details") &&
      Array.isArray(json.error.details)
    ? json.error.details
    : []
  for (const detail of details) {
    const delay = Predicate.hasProperty(detail, "retryDelay") ? detail.retryDelay : undefined
    const seconds = Predicate.isString(delay) ? /^(\d+(?:\.\d+)?)s$/.exec(delay.trim())?.[1] : undefined
    if (seconds !== undefined) {
      return Option.some(Math.min(Math.round(Number(seconds) * 1000), Failure.maxRetryAfterMs))
    }
  }
  return Option.none()
}

/** The Gemini error body: `error.status`, its context-window phrases, its `RetryInfo` delay. */
export const errors: Failure.ErrorVocabulary = {
  codeOf: statusOf,
  contextWindowCodes: [],
  contextWindowPhrases,
  retryAfterOf: retryDelayOf
}

/** `x-goog-api-key: <key>` (never `?key=` in the URL, which ends up in logs and spans). */
const authHeaders = (key: Option.Option<string>): Record<string, string> =>
  Option.match(key, { onNone: () => ({}), onSome: (value) => ({ "x-goog-api-key": value }) })

/** The `gemini_generate_content` record. */
export const format: UpstreamFormat = {
  format: "gemini_generate_content",
  chatWire: translatedWire(
    "gemini_generate_content",
    encodeBody,
    (target, streaming) =>
      modelUrl(target.client.baseUrl, target.id, streaming ? "streamGenerateContent" : "generateContent")
  ),
  untranslatable: (_native: NativeBody, error) => error,
  authHeaders,
  forwardedHeaders: [],
  carryHeaders: AnthropicBeta.onNativeReplay,
  readAnswer: translatedAnswer("gemini_generate_content", decodeAnswer),
  streamSteps: translatedSteps("gemini_generate_content", streamTranslator),
  errors
}
