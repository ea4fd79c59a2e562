/**
 * The Gemini API encoding of every behaviour (`POST …/models/{model}:generateContent` and
 * `:streamGenerateContent`, the model named by the path): a buffered `GenerateContentResponse`, or
 * one such object per SSE `data:` event (no `event:` names, no end marker: the last event carries
 * `finishReason` and `usageMetadata`, then the response ends), and Gemini's error envelope
 * (`{"error":{"code","message","status"}}`).
 *
 * @internal
 */
import * as Gemini from "@switchyard-ts/protocol/Gemini"
import type { Usage } from "@switchyard-ts/protocol/OpenAiChat"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Predicate from "effect/Predicate"
import { type Behaviour, decodeJson, type Thinking, type ToolUse } from "./behaviour.js"
import {
  cut,
  echoContent,
  estimateUsage,
  type Exchange,
  openSse,
  performNeutral,
  retryAfterHeader,
  sendJson,
  sleep,
  split,
  write
} from "./exchange.js"

/** The model and method of a Gemini model path (`/v1beta/models/m:generateContent`, any version prefix). */
export const parseModelPath = (
  path: string
):
  | { readonly model: string; readonly method: "generateContent" | "streamGenerateContent" | "countTokens" }
  | undefined =>
{
  const match = /^(?:\/[^/]+)?\/models\/([^/:]+):(generateContent|streamGenerateContent|countTokens)$/.exec(path)
  if (match === null) return undefined
  const [, model, method] = match
  if (
    model === undefined ||
    (method !== "generateContent" && method !== "streamGenerateContent" && method !== "countTokens")
  ) {
    return undefined
  }
  try {
    return { model: decodeURIComponent(model), method }
  } catch {
    return undefined
  }
}

/** An OpenAI Chat usage sample as Gemini usage (`candidatesTokenCount` excludes thoughts). */
const usageOf = (usage: Usage): Gemini.UsageMetadata => {
  const cached = usage.prompt_tokens_details?.cached_tokens ?? undefined
  const thoughts = usage.completion_tokens_details?.reasoning_tokens ?? undefined
  return {
    promptTokenCount: usage.prompt_tokens,
    candidatesTokenCount: usage.completion_tokens - (thoughts ?? 0),
    totalTokenCount: usage.total_tokens,
    ...(cached === undefined ? {} : { cachedContentTokenCount: cached }),
    ...(thoughts === undefined ? {} : { thoughtsTokenCount: thoughts })
  }
}

const responseId = (ex: Exchange): string => `fake-gemini-${ex.id}`

/** One response object: `parts` of candidate 0, with `finishReason` and usage when given. */
const responseOf = (
  ex: Exchange,
  parts: ReadonlyArray<Gemini.Part>,
  finish: { readonly finishReason: string; readonly usage: Usage } | undefined
): Gemini.GenerateContentResponse => ({
  candidates: [{
    content: { role: "model", parts },
    ...(finish === undefined ? {} : { finishReason: finish.finishReason }),
    index: 0
  }],
  ...(finish === undefined ? {} : { usageMetadata: usageOf(finish.usage) }),
  modelVersion: ex.model,
  responseId: responseId(ex)
})

const emit = (ex: Exchange, response: Gemini.GenerateContentResponse | Gemini.ErrorBody): Effect.Effect<void> =>
  write(ex.res, `data: ${JSON.stringify(response)}\n\n`)

/**
 * The answer of `parts`: buffered, one response; streamed, one event per group of `groups` (`gapMs`
 * apart), the last with `finishReason: "STOP"` and the usage.
 */
const answerParts = (
  ex: Exchange,
  groups: ReadonlyArray<ReadonlyArray<Gemini.Part>>,
  usage: Usage,
  gapMs = 0
): Effect.Effect<void> => {
  const finish = { finishReason: "STOP", usage }
  if (!ex.stream) return sendJson(ex.res, 200, JSON.stringify(responseOf(ex, groups.flat(), finish)))
  return Effect.gen(function*() {
    yield* openSse(ex.res)
    for (const [index, parts] of groups.entries()) {
      if (index > 0) yield* sleep(gapMs)
      if (index < groups.length - 1) yield* emit(ex, responseOf(ex, parts, undefined))
    }
    yield* Effect.sync(() => ex.res.end(`data: ${JSON.stringify(responseOf(ex, groups.at(-1) ?? [], finish))}\n\n`))
  })
}

/** `content` as one text part (buffered), or up to three pieces of it, one event each (streamed). */
const textGroups = (ex: Exchange, content: string): ReadonlyArray<ReadonlyArray<Gemini.Part>> => {
  if (!ex.stream) return [[{ text: content }]]
  const pieces = split(content, 3)
  return pieces.length === 0 ? [[]] : pieces.map((text) => [{ text }])
}

const answer = (ex: Exchange, content: string, usage: Usage | undefined, gapMs = 0): Effect.Effect<void> =>
  answerParts(ex, textGroups(ex, content), usage ?? estimateUsage(ex, content), gapMs)

/** A function call part (with `id` only when the behaviour names one, as Gemini often sends none). */
const toolUse = (ex: Exchange, b: ToolUse): Effect.Effect<void> => {
  const args = Either.getOrElse(decodeJson(b.input), () => ({}))
  const call: Gemini.Part = {
    functionCall: {
      ...(b.id === undefined ? {} : { id: b.id }),
      name: b.name,
      args: Predicate.isRecord(args) ? args : {}
    }
  }
  const text = b.text ?? ""
  const groups = [...(text.length > 0 ? [[{ text }]] : []), [call]]
  return answerParts(ex, groups, estimateUsage(ex, `${text} ${b.input}`))
}

/** A signed thought part, then the content. */
const thinking = (ex: Exchange, b: Thinking): Effect.Effect<void> =>
  answerParts(
    ex,
    [[{ text: b.thinking, thought: true, thoughtSignature: b.signature }], ...textGroups(ex, b.content)],
    estimateUsage(ex, `${b.thinking} ${b.content}`)
  )

/** Answer `behaviour` in the Gemini format. */
export const perform = (behaviour: Behaviour, ex: Exchange): Effect.Effect<void> => {
  switch (behaviour._tag) {
    case "Ok":
      return Effect.zipRight(
        sleep(behaviour.delayMs ?? 0),
        answer(ex, behaviour.content, behaviour.usage, behaviour.gapMs)
      )
    case "Echo":
      return answer(ex, echoContent(ex), undefined)
    case "Status": {
      const body = behaviour.body ??
        JSON.stringify(
          Gemini.envelope(behaviour.status, behaviour.message ?? `fake upstream answered ${behaviour.status}`)
        )
      return sendJson(ex.res, behaviour.status, body, retryAfterHeader(behaviour))
    }
    case "Chunks":
      return answerParts(
        { ...ex, stream: true },
        behaviour.chunks.length === 0 ? [[]] : behaviour.chunks.map((text) => [{ text }]),
        estimateUsage(ex, behaviour.chunks.join("")),
        behaviour.gapMs ?? 0
      )
    case "CloseMidStream":
      return Effect.gen(function*() {
        yield* openSse(ex.res)
        for (let i = 0; i < behaviour.chunksBeforeClose; i++) {
          yield* emit(ex, responseOf(ex, [{ text: `chunk ${i} ` }], undefined))
        }
        yield* cut(ex, () => ex.res.destroy())
      })
    case "ToolUse":
      return toolUse(ex, behaviour)
    case "Thinking":
      return thinking(ex, behaviour)
    case "StreamError":
      return Effect.gen(function*() {
        yield* openSse(ex.res)
        yield* emit(ex, responseOf(ex, [{ text: "chunk 0 " }], undefined))
        yield* Effect.sync(() => ex.res.end(`data: ${JSON.stringify(Gemini.envelope(500, behaviour.message))}\n\n`))
      })
    case "Stall":
    case "Garbage":
    case "Reset":
    case "Raw":
      return performNeutral(behaviour, ex)
  }
}

/** The fake's `countTokens` answer: `{"totalTokens"}` estimated from the body size. */
export const countTokensBody = (bodyText: string): string =>
  JSON.stringify({ totalTokens: Math.ceil(bodyText.length / 4) })

/** Gemini's error envelope for a request the fake cannot read, as text. */
export const errorBody = (status: number, message: string): string => JSON.stringify(Gemini.envelope(status, message))
