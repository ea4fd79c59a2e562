/**
 * Gemini parts ⇄ neutral blocks, shared by requests, buffered responses and streams
 * ({@link module:TranslateGemini}): derived function-call ids, function responses ⇄ tool results,
 * thought signatures, images, model turns both ways, and finish reasons and usage.
 */
import * as Either from "effect/Either"
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"
import * as Anthropic from "../../AnthropicMessages.js"
import type { TranslationError } from "../../Errors.js"
import { clip } from "../../Excerpt.js"
import * as G from "../../Gemini.js"
import * as Nesting from "../../Nesting.js"
import type * as N from "../../Neutral.js"
import { reasoningSummarySeparator, toolReferenceText } from "./constants.js"
import { fail, formatLabel, imageUrl, type JsonObject, parseDataUrl, present, typeOf } from "./shared.js"

/** The wire format name of Gemini (opaque blocks and tools). */
export const geminiFormat = "gemini_generate_content" satisfies N.WireFormat

const isToolReference = Schema.is(Anthropic.ToolReferenceBlock)
const isGeminiPart = Schema.is(G.Part)

/**
 * The id of a request's `functionCall` that carries none: `gemini_call_<content index>_<part index>`
 * (its position in `contents`, so every request of a conversation derives the same id for it).
 */
export const requestCallId = (content: number, part: number): string => `gemini_call_${content}_${part}`

/**
 * The id of the `n`-th function call (from 0) of a Gemini answer that carries none:
 * `gemini_call_<responseId>_<n>` (characters outside `[A-Za-z0-9_-]` of the response id replaced
 * by `_`), `gemini_call_<n>` when the answer has no `responseId`.
 */
export const responseCallId = (responseId: string | undefined, n: number): string =>
  responseId === undefined || responseId === ""
    ? `gemini_call_${n}`
    : `gemini_call_${responseId.replace(/[^A-Za-z0-9_-]/g, "_")}_${n}`

/**
 * The object a text is the JSON of; none for any other text — one that nests deeper than
 * `Nesting.maxDepth` included, which then stays text (a tool's output: kept as it is, not refused).
 */
const parseJsonObject = (text: string): JsonObject | undefined => {
  const parsed = Nesting.parse(text)
  return parsed._tag === "Json" && Predicate.isRecord(parsed.value) ? parsed.value : undefined
}

const soleString = (response: JsonObject, key: string): string | undefined => {
  const keys = Object.keys(response)
  const value = response[key]
  return keys.length === 1 && Predicate.isString(value) && parseJsonObject(value) === undefined ? value : undefined
}

/**
 * The content of a tool result read from a `functionResponse.response`: `{"output": s}` is the
 * text `s`, `{"error": s}` the text `s` with `isError` (each when it is the only key and `s` is not
 * itself a JSON object's text); any other object is its JSON text. No response is no content.
 */
export const toolResultContent = (
  response: JsonObject | undefined
): { readonly text: string; readonly isError: boolean } => {
  if (response === undefined) return { text: "", isError: false }
  const output = soleString(response, "output")
  if (output !== undefined) return { text: output, isError: false }
  const error = soleString(response, "error")
  if (error !== undefined) return { text: error, isError: true }
  return { text: JSON.stringify(response), isError: false }
}

/**
 * The `functionResponse.response` of a tool result's text, the inverse of
 * {@link toolResultContent}: a JSON object's text is that object, any other text is `{"output": t}`
 * (`{"error": t}` when `isError`).
 */
export const functionResponseBody = (text: string, isError: boolean): JsonObject =>
  parseJsonObject(text) ?? (isError ? { error: text } : { output: text })

/** The image of an `inlineData` part, when its mime type is an image type. */
export const inlineImage = (blob: G.Blob): N.Image | undefined =>
  blob.mimeType.startsWith("image/")
    ? { _tag: "Image", source: { kind: "base64", mediaType: blob.mimeType, data: blob.data } }
    : undefined

const urlMimeTypes: ReadonlyArray<readonly [string, string]> = [
  [".png", "image/png"],
  [".gif", "image/gif"],
  [".webp", "image/webp"],
  [".heic", "image/heic"],
  [".heif", "image/heif"]
]

/**
 * A neutral image as a Gemini part: base64 data (or a `data:` URL) as `inlineData`, any other URL as
 * `fileData` whose mime type is guessed from the URL's extension (`image/jpeg` when unknown).
 */
export const imagePart = (image: N.Image): G.Part => {
  const source = image.source.kind === "url" ? parseDataUrl(image.source.url) ?? image.source : image.source
  if (source.kind === "base64") return { inlineData: { mimeType: source.mediaType, data: source.data } }
  const path = source.url.split(/[?#]/)[0]?.toLowerCase() ?? ""
  const mimeType = urlMimeTypes.find(([ext]) => path.endsWith(ext))?.[1] ?? "image/jpeg"
  return { fileData: { mimeType, fileUri: imageUrl(source) } }
}

/** A part only Gemini understands, as an opaque block. */
export const opaquePart = (part: G.Part): N.Opaque => ({ _tag: "Opaque", format: geminiFormat, value: part })

/** A signature-only thinking block: how a thought signature on a text or call part is carried. */
const signatureBlock = (signature: string | undefined): ReadonlyArray<N.Thinking> =>
  signature !== undefined && signature !== "" ? [{ _tag: "Thinking", text: "", signature }] : []

/**
 * The blocks of a model part: a thought → Thinking (its signature kept); a text, function call or
 * other part carrying a `thoughtSignature` → a signature-only Thinking followed by the part's block;
 * text → Text (`""` → none); a function call → ToolUse (`callId` gives the id when the call has
 * none; absent `args` are `{}`); an image `inlineData` → Image; anything else → opaque.
 */
export const modelPartBlocks = (part: G.Part, callId: () => string): ReadonlyArray<N.Block> => {
  if (part.thought === true && part.text !== undefined) {
    return [{
      _tag: "Thinking",
      text: part.text,
      ...(part.thoughtSignature !== undefined && part.thoughtSignature !== "" ?
        { signature: part.thoughtSignature } :
        {})
    }]
  }
  const signed = signatureBlock(part.thoughtSignature)
  if (part.functionCall !== undefined) {
    const call = part.functionCall
    const toolUse: N.ToolUse = {
      _tag: "ToolUse",
      id: call.id ?? callId(),
      name: call.name,
      input: call.args ?? {},
      gemini: call.id !== undefined ? { id: call.id } : {}
    }
    return [...signed, toolUse]
  }
  if (part.text !== undefined) {
    return [...signed, ...(part.text === "" ? [] : [{ _tag: "Text" as const, text: part.text }])]
  }
  const image = part.inlineData !== undefined ? inlineImage(part.inlineData) : undefined
  // an opaque part keeps its own signature
  return image !== undefined ? [...signed, image] : [opaquePart(part)]
}

/** A block whose Gemini part takes the signature of a signature-only Thinking right before it. */
const carriesSignature = (block: N.Block | undefined): boolean =>
  block?._tag === "Text" || block?._tag === "ToolUse" || block?._tag === "Image"

/** A thought part. */
const thoughtPart = (text: string, signature: string | undefined): G.Part => ({
  text,
  thought: true,
  ...(signature !== undefined ? { thoughtSignature: signature } : {})
})

const describeForeign = (block: N.Opaque): string => `${formatLabel(block.format)} ${clip(typeOf(block.value))} block`

/** An opaque block as a Gemini part: a Gemini part as is; another format's block fails. */
export const opaqueToPart = (block: N.Opaque): Either.Either<G.Part, TranslationError> =>
  block.format === geminiFormat && isGeminiPart(block.value)
    ? Either.right(block.value)
    : fail(`${describeForeign(block)} cannot be sent to a gemini_generate_content upstream`)

/**
 * How a ToolUse is written as a `functionCall`: its Gemini id as it came (none when Gemini sent
 * none), else its neutral id; when `alwaysId`, the neutral id in every case (answers to a client).
 */
const callOf = (block: N.ToolUse, alwaysId: boolean): Either.Either<G.FunctionCall, TranslationError> => {
  if (!Predicate.isRecord(block.input)) {
    return fail(`the arguments of tool call ${clip(block.id)} are not a JSON object`)
  }
  const id = alwaysId || block.gemini === undefined ? block.id : block.gemini.id
  return Either.right({ ...(id !== undefined ? { id } : {}), name: block.name, args: block.input })
}

/**
 * The parts of a model turn (a request's assistant message, or an answer): thinking as thought
 * parts, except that a signature-only Thinking right before a Text, ToolUse or Image becomes that part's
 * `thoughtSignature`; RedactedThinking is dropped; Reasoning is a thought part of its summary texts
 * (none when empty); tool calls are `functionCall` parts (ids as {@link callOf} says); images are
 * `inlineData` / `fileData`; Gemini opaque parts are written as they are; other formats' opaque
 * blocks and tool calls whose arguments are not an object fail.
 */
export const modelParts = (
  blocks: ReadonlyArray<N.Block>,
  options: { readonly alwaysId: boolean }
): Either.Either<ReadonlyArray<G.Part>, TranslationError> => Either.gen(() => modelPartsSteps(blocks, options))

/** The steps of {@link modelParts}: a generator made once (docs/architecture.md). */
const modelPartsSteps = function*(blocks: ReadonlyArray<N.Block>, options: { readonly alwaysId: boolean }) {
  const parts: Array<G.Part> = []
  let carried: string | undefined
  for (let i = 0; i < blocks.length; i++) {
    const block = blocks[i]
    if (block === undefined) continue
    const signature = carried
    carried = undefined
    const signed = signature !== undefined ? { thoughtSignature: signature } : {}
    switch (block._tag) {
      case "Thinking": {
        const next = blocks[i + 1]
        if (block.text === "" && block.signature !== undefined && carriesSignature(next)) {
          carried = block.signature
        } else parts.push(thoughtPart(block.text, block.signature))
        break
      }
      case "Reasoning": {
        const text = block.summary.join(reasoningSummarySeparator)
        if (text !== "") parts.push(thoughtPart(text, undefined))
        break
      }
      case "Text":
        parts.push({ text: block.text, ...signed })
        break
      case "ToolUse":
        parts.push({ functionCall: yield* callOf(block, options.alwaysId), ...signed })
        break
      case "Image":
        parts.push({ ...imagePart(block), ...signed })
        break
      case "Opaque":
        parts.push(yield* opaqueToPart(block))
        break
      case "RedactedThinking":
      case "ToolResult":
        break
    }
  }
  return parts
}

/**
 * The parts of a tool result: a `functionResponse` (named `name`; `id` as it came from Gemini, else
 * the neutral `toolUseId`) whose body is its texts joined with `"\n"` (an Anthropic tool reference
 * as `Translate.toolReferenceText`) by {@link functionResponseBody}, followed by its images.
 */
export const toolResultParts = (block: N.ToolResult, name: string): ReadonlyArray<G.Part> => {
  const texts: Array<string> = []
  const images: Array<G.Part> = []
  for (const item of block.content) {
    if (item._tag === "Text") texts.push(item.text)
    else if (item._tag === "Image") images.push(imagePart(item))
    else if (isToolReference(item.value)) texts.push(toolReferenceText(item.value.tool_name))
  }
  const id = block.gemini !== undefined ? block.gemini.id : block.toolUseId
  return [
    {
      functionResponse: {
        ...(id !== undefined ? { id } : {}),
        name,
        response: functionResponseBody(texts.join("\n"), block.isError)
      }
    },
    ...images
  ]
}

/** Gemini finish reasons that mean the answer was withheld for its content: a refusal. */
export const refusalFinishReasons: ReadonlyArray<string> = [
  "SAFETY",
  "RECITATION",
  "BLOCKLIST",
  "PROHIBITED_CONTENT",
  "SPII",
  "IMAGE_SAFETY",
  "IMAGE_PROHIBITED_CONTENT"
]

/**
 * The neutral stop reason of a Gemini `finishReason`: `STOP` → `tool_use` when the answer calls a
 * function, else `end_turn`; `MAX_TOKENS` → `max_tokens`; the {@link refusalFinishReasons} →
 * `refusal`; any other value is kept; none → `null`.
 */
export const fromGeminiFinishReason = (reason: string | undefined, hasCalls: boolean): N.StopReason | null => {
  if (reason === undefined) return null
  if (reason === "STOP") return hasCalls ? "tool_use" : "end_turn"
  if (reason === "MAX_TOKENS") return "max_tokens"
  return refusalFinishReasons.includes(reason) ? "refusal" : reason
}

/**
 * The Gemini `finishReason` of a neutral stop reason: `max_tokens` /
 * `model_context_window_exceeded` → `MAX_TOKENS`, `refusal` → `SAFETY`, an upper-case value (a
 * Gemini reason kept as is) → itself, anything else (`end_turn`, `tool_use`, `stop_sequence`, …) →
 * `STOP` (Gemini ends a function-calling turn with `STOP`).
 */
export const toGeminiFinishReason = (reason: N.StopReason | null): string | undefined => {
  switch (reason) {
    case null:
      return undefined
    case "max_tokens":
    case "model_context_window_exceeded":
      return "MAX_TOKENS"
    case "refusal":
      return "SAFETY"
    default:
      return /^[A-Z_]+$/.test(reason) ? reason : "STOP"
  }
}

/**
 * Neutral usage of Gemini usage metadata: input = `promptTokenCount` (cached tokens included),
 * output = `candidatesTokenCount` + `thoughtsTokenCount`, cache reads = `cachedContentTokenCount`,
 * reasoning = `thoughtsTokenCount`.
 */
export const fromGeminiUsage = (usage: G.UsageMetadata | undefined): N.NeutralUsage => {
  const thoughts = usage?.thoughtsTokenCount
  const cached = usage?.cachedContentTokenCount
  return {
    inputTokens: usage?.promptTokenCount ?? 0,
    outputTokens: (usage?.candidatesTokenCount ?? 0) + (thoughts ?? 0),
    ...(present(cached) ? { cacheReadTokens: cached } : {}),
    ...(present(thoughts) ? { reasoningTokens: thoughts } : {})
  }
}

/**
 * Gemini usage metadata of neutral usage, the inverse of {@link fromGeminiUsage}:
 * `candidatesTokenCount` = output − reasoning (floored at 0), `totalTokenCount` = input + output;
 * cache writes have no Gemini slot.
 */
export const toGeminiUsage = (usage: N.NeutralUsage): G.UsageMetadata => ({
  promptTokenCount: usage.inputTokens,
  candidatesTokenCount: Math.max(0, usage.outputTokens - (usage.reasoningTokens ?? 0)),
  totalTokenCount: usage.inputTokens + usage.outputTokens,
  ...(usage.cacheReadTokens !== undefined ? { cachedContentTokenCount: usage.cacheReadTokens } : {}),
  ...(usage.reasoningTokens !== undefined ? { thoughtsTokenCount: usage.reasoningTokens } : {})
})
