/**
 * The `openai_chat` format (`POST …/chat/completions`, `Authorization: Bearer`): the chat request
 * itself, prepared for the target (model, `extra_body`, `reasoning_effort`, `system_prompt`, stream
 * flags); answers and `data:` chunks (ending at `[DONE]`) decoded as they are, an in-band
 * `{"error": …}` chunk failing the stream; the OpenAI error body (`error.code`, else
 * `error.type`; `context_length_exceeded` and the OpenAI phrases meaning the context window).
 *
 * @internal
 */
import type { UpstreamFailure } from "@switchyard-ts/protocol/Errors"
import { ChatCompletion, ChatCompletionChunk, decodeOptions } from "@switchyard-ts/protocol/OpenAiChat"
import * as Plain from "@switchyard-ts/protocol/Plain"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import type { Target } from "../../Target.js"
import type { CallContext } from "../call.js"
import * as Failure from "../failure.js"
import { isBlank, type ItemStep, type ItemSteps, oneLineData, skip, type UpstreamFormat } from "../format.js"
import * as Prepare from "../prepare.js"
import type * as Sse from "../sse.js"
import * as AnthropicBeta from "./anthropicBeta.js"

/** `base_url` trimmed, trailing `/` removed, a trailing `/chat/completions` or `/responses` stripped. */
export const openAiBase = (baseUrl: string): string => {
  let base = baseUrl.trim()
  while (base.endsWith("/")) base = base.slice(0, -1)
  for (const suffix of ["/chat/completions", "/responses"]) {
    if (base.endsWith(suffix)) {
      base = base.slice(0, -suffix.length)
      break
    }
  }
  while (base.endsWith("/")) base = base.slice(0, -1)
  return base
}

/**
 * The Chat Completions URL of an `openai_chat` client: `base_url` trimmed, trailing `/` removed,
 * a trailing `/chat/completions` or `/responses` stripped, then `/chat/completions` appended.
 */
export const chatCompletionsUrl = (baseUrl: string): string => `${openAiBase(baseUrl)}/chat/completions`

/**
 * The body sent upstream: a shallow copy of the caller's body with `model` = the target's id,
 * the target's `extra_body` keys added where the body lacks them, its `reasoning_effort` in place
 * of the caller's, its `system_prompt` as a first `system` message, and the stream flags set:
 * streamed calls get `stream: true` and `stream_options.include_usage = true` unless the caller
 * set `include_usage`; buffered calls drop `stream` and `stream_options`.
 */
export const prepareBody = (
  target: Target,
  body: Readonly<Record<string, unknown>>,
  streaming: boolean
): Record<string, unknown> => {
  const out: Record<string, unknown> = { ...body, model: target.id }
  Prepare.addExtraBody(out, target)
  if (target.reasoningEffort !== undefined) out["reasoning_effort"] = target.reasoningEffort
  const prompt = target.systemPrompt
  if (prompt !== undefined) {
    const messages = out["messages"]
    out["messages"] = [{ role: "system", content: prompt }, ...(Array.isArray(messages) ? messages : [])]
  }
  if (streaming) {
    out["stream"] = true
    const options = out["stream_options"]
    if (Predicate.isRecord(options)) {
      if (typeof options["include_usage"] !== "boolean") out["stream_options"] = { ...options, include_usage: true }
    } else {
      out["stream_options"] = { include_usage: true }
    }
  } else {
    delete out["stream"]
    delete out["stream_options"]
  }
  return out
}

/** The phrases of an OpenAI-compatible 400 that mean the prompt does not fit (docs/operations.md). */
const contextWindowPhrases: ReadonlyArray<string> = [
  "maximum context length",
  "context length exceeded",
  "context window",
  "context length is only",
  "please reduce the length of the input",
  "exceeds the maximum allowed input length",
  "exceeds the maximum allowed length",
  "is longer than the model's context length"
]

/** The OpenAI error body: `error.code`, else `error.type`; `context_length_exceeded` or a phrase. */
export const errors: Failure.ErrorVocabulary = {
  codeOf: Failure.codeOrTypeOf,
  contextWindowCodes: ["context_length_exceeded"],
  contextWindowPhrases,
  retryAfterOf: Failure.noRetryAfter
}

/** The `Authorization: Bearer <key>` of OpenAI's formats. */
export const bearerAuth = (key: Option.Option<string>): Record<string, string> =>
  Option.match(key, { onNone: () => ({}), onSome: (value) => ({ authorization: `Bearer ${value}` }) })

/** The caller headers a `forward_auth` client of an OpenAI format receives (anchor §5.3). */
export const openAiForwardedHeaders: ReadonlyArray<string> = ["authorization", "chatgpt-account-id", "x-openai-fedramp"]

const decodeCompletion = Failure.decodeJsonText(ChatCompletion, "response body")

const decodeChunkJson = Plain.decoder(ChatCompletionChunk, decodeOptions)

/** Decodes one SSE `data` payload: a chunk, an in-band error (→ 502), or an `InvalidResponse`. */
const decodeSseItem =
  (ctx: CallContext) => (item: Sse.SseItem): Either.Either<ChatCompletionChunk, UpstreamFailure> => {
    const target = ctx.target.id
    if (item._tag === "Overflow") {
      return Either.left(Failure.invalidResponse(target, `stream event larger than ${item.maxEventSize} characters`))
    }
    // plain branches, not `Option.match`/`Either.match`: this runs for every chunk of every stream
    const json = Failure.jsonOrInvalid(target, "stream chunk", item.data)
    if (Either.isLeft(json)) return Either.left(json.left)
    if (Option.isSome(Failure.errorBodyOf(json.right))) {
      return Either.left(
        Failure.upstreamStatus({
          target,
          status: 502,
          body: Option.some(item.data),
          retryAfterMs: Option.none(),
          secrets: ctx.secrets,
          errors
        })
      )
    }
    const decoded = decodeChunkJson(json.right)
    return Either.isRight(decoded)
      ? Either.right(decoded.right)
      : Either.left(Failure.schemaMismatch(target, "stream chunk", decoded.left))
  }

const isDone = (item: Sse.SseItem): boolean => item._tag === "Data" && item.data.trim() === "[DONE]"

const done: ItemStep = { _tag: "Done" }

const noChunks = (): ReadonlyArray<ChatCompletionChunk> => []

/**
 * The item steps of a chat stream: `[DONE]` ends it, each `data` is a chunk (or an in-band error,
 * or `InvalidResponse`), kept with its one-line `data` so a chat caller can be sent the bytes.
 */
const streamSteps = (ctx: CallContext): ItemSteps => {
  const decode = decodeSseItem(ctx)
  return {
    step: (item) => {
      if (isDone(item)) return done
      if (isBlank(item)) return skip
      const decoded = decode(item)
      if (Either.isLeft(decoded)) return { _tag: "Fail", failure: decoded.left }
      const sse = oneLineData(item)
      const chunks = [decoded.right]
      return {
        _tag: "Piece",
        piece: sse === undefined ? { chunks, native: Option.none() } : { chunks, native: Option.none(), sse },
        last: false
      }
    },
    end: noChunks
  }
}

/** The `openai_chat` record. */
export const format: UpstreamFormat = {
  format: "openai_chat",
  chatWire: (target, options, streaming) =>
    Either.right({
      url: chatCompletionsUrl(target.client.baseUrl),
      body: prepareBody(target, options.body, streaming),
      source: options.body,
      operation: "chat",
      nativeReplay: false
    }),
  untranslatable: (_native, error) => error,
  authHeaders: bearerAuth,
  forwardedHeaders: openAiForwardedHeaders,
  carryHeaders: AnthropicBeta.onNativeReplay,
  readAnswer: (text, ctx) =>
    Effect.map(decodeCompletion(ctx.target.id, text), (completion) => ({ completion, native: Option.none() })),
  streamSteps,
  errors
}
