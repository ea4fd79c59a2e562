/**
 * Neutral → Gemini `generateContent` request ({@link toGeminiRequest}); the rules are in the module
 * notes of {@link module:TranslateGemini}.
 */
import * as Either from "effect/Either"
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"
import type { TranslationError } from "../../Errors.js"
import * as G from "../../Gemini.js"
import type * as N from "../../Neutral.js"
import { geminiFormat, imagePart, modelParts, opaqueToPart, toolResultParts } from "./geminiParts.js"
import { fail } from "./shared.js"

const isFunctionDeclaration = Schema.is(G.FunctionDeclaration)
const isFunctionCallingConfig = Schema.is(G.FunctionCallingConfig)
const isTool = Schema.is(G.Tool)

/** The name of every tool call of the conversation, by id (a functionResponse needs its call's name). */
const callNames = (messages: ReadonlyArray<N.ConversationEntry>): ReadonlyMap<string, string> => {
  const names = new Map<string, string>()
  for (const message of messages) {
    if (message.role !== "assistant") continue
    for (const block of message.blocks) if (block._tag === "ToolUse") names.set(block.id, block.name)
  }
  return names
}

const userParts = (
  blocks: ReadonlyArray<N.Block>,
  names: ReadonlyMap<string, string>
): Either.Either<ReadonlyArray<G.Part>, TranslationError> => Either.gen(() => userPartsSteps(blocks, names))

/** The steps of {@link userParts}: a generator made once (docs/architecture.md). */
const userPartsSteps = function*(blocks: ReadonlyArray<N.Block>, names: ReadonlyMap<string, string>) {
  const parts: Array<G.Part> = []
  for (const block of blocks) {
    switch (block._tag) {
      case "Text":
        parts.push({ text: block.text })
        break
      case "Image":
        parts.push(imagePart(block))
        break
      case "ToolResult": {
        const name = block.gemini?.name ?? names.get(block.toolUseId)
        if (name === undefined) {
          return yield* fail(
            "a tool result whose call is not in the conversation cannot be sent to a gemini_generate_content upstream"
          )
        }
        parts.push(...toolResultParts(block, name))
        break
      }
      case "Opaque":
        parts.push(yield* opaqueToPart(block))
        break
      case "ToolUse":
      case "Thinking":
      case "RedactedThinking":
      case "Reasoning":
        break
    }
  }
  return parts
}

const toTools = (n: N.NeutralRequest): ReadonlyArray<G.Tool> => {
  const declarations = n.tools.map((tool): G.FunctionDeclaration =>
    isFunctionDeclaration(tool.gemini) && tool.gemini.name === tool.name ? tool.gemini : {
      name: tool.name,
      ...(tool.description !== undefined ? { description: tool.description } : {}),
      parametersJsonSchema: tool.parameters
    }
  )
  const opaque = n.opaqueTools.flatMap((tool) => tool.format === geminiFormat && isTool(tool.value) ? [tool.value] : [])
  return [...(declarations.length > 0 ? [{ functionDeclarations: declarations }] : []), ...opaque]
}

const toCallingConfig = (choice: N.NeutralToolChoice): G.FunctionCallingConfig | undefined => {
  switch (choice._tag) {
    case "Auto":
      return { mode: "AUTO" }
    case "Required":
      return { mode: "ANY" }
    case "None":
      return { mode: "NONE" }
    case "Tool":
      return { mode: "ANY", allowedFunctionNames: [choice.name] }
    case "Opaque":
      return choice.format === geminiFormat && isFunctionCallingConfig(choice.value) ? choice.value : undefined
  }
}

const numberOf = (extra: { readonly [key: string]: unknown }, key: string): number | undefined => {
  const value = extra[key]
  return Predicate.isNumber(value) ? value : undefined
}

const toResponseFormat = (format: N.NeutralResponseFormat | undefined): G.GenerationConfig => {
  if (format === undefined) return {}
  switch (format.type) {
    case "text":
      return { responseMimeType: "text/plain" }
    case "json_object":
      return { responseMimeType: "application/json" }
    case "json_schema":
      return { responseMimeType: "application/json", responseJsonSchema: format.schema }
  }
}

const recordOf = (value: unknown): { readonly [key: string]: unknown } => Predicate.isRecord(value) ? value : {}

const toGenerationConfig = (n: N.NeutralRequest, rest: { readonly [key: string]: unknown }): G.GenerationConfig => {
  const topK = numberOf(n.extra, "top_k")
  const seed = numberOf(n.extra, "seed")
  const presencePenalty = numberOf(n.extra, "presence_penalty")
  const frequencyPenalty = numberOf(n.extra, "frequency_penalty")
  const candidateCount = numberOf(n.extra, "n")
  return {
    ...rest,
    ...(n.temperature !== undefined ? { temperature: n.temperature } : {}),
    ...(n.topP !== undefined ? { topP: n.topP } : {}),
    ...(topK !== undefined ? { topK } : {}),
    ...(n.maxOutputTokens !== undefined ? { maxOutputTokens: n.maxOutputTokens } : {}),
    ...(n.stop.length > 0 ? { stopSequences: n.stop } : {}),
    ...(candidateCount !== undefined ? { candidateCount } : {}),
    ...(seed !== undefined ? { seed } : {}),
    ...(presencePenalty !== undefined ? { presencePenalty } : {}),
    ...(frequencyPenalty !== undefined ? { frequencyPenalty } : {}),
    ...toResponseFormat(n.responseFormat)
  }
}

/**
 * A neutral request as a Gemini request body (the model goes in the URL, streaming is the
 * method). Fails (TranslationError, 400) for another format's opaque block, tool-call arguments
 * that are not a JSON object, and a tool result whose call is not in the conversation (its
 * `functionResponse` needs the call's name); what Gemini cannot express is dropped (see the module
 * notes).
 */
export const toGeminiRequest = (n: N.NeutralRequest): Either.Either<G.GenerateContentRequest, TranslationError> =>
  Either.gen(() => toGeminiRequestSteps(n))

/** The steps of {@link toGeminiRequest}: a generator made once (docs/architecture.md). */
const toGeminiRequestSteps = function*(n: N.NeutralRequest) {
  const names = callNames(n.messages)
  const system: Array<G.Part> = n.instructions.map((t) => ({ text: t.text }))
  const contents: Array<G.Content> = []
  for (const message of n.messages) {
    if (message.role === "system") {
      system.push(...message.blocks.map((t) => ({ text: t.text })))
      continue
    }
    const parts = message.role === "assistant"
      ? yield* modelParts(message.blocks, { alwaysId: false })
      : yield* userParts(message.blocks, names)
    if (parts.length > 0) contents.push({ role: message.role === "assistant" ? "model" : "user", parts })
  }
  const { generationConfig: generationRest, toolConfig: toolConfigRest, ...fields } = n.gemini?.fields ?? {}
  const tools = toTools(n)
  const callingConfig = n.toolChoice !== undefined ? toCallingConfig(n.toolChoice) : undefined
  const toolConfig = {
    ...recordOf(toolConfigRest),
    ...(callingConfig !== undefined ? { functionCallingConfig: callingConfig } : {})
  }
  const generationConfig = toGenerationConfig(n, recordOf(generationRest))
  return {
    ...fields,
    contents,
    ...(system.length > 0 ? { systemInstruction: { parts: system } } : {}),
    ...(tools.length > 0 ? { tools } : {}),
    ...(Object.keys(toolConfig).length > 0 ? { toolConfig } : {}),
    ...(Object.keys(generationConfig).length > 0 ? { generationConfig } : {})
  }
}

/**
 * A neutral request as a Gemini `countTokens` body for the model `n.model`:
 * `{"generateContentRequest": {"model": "models/<model>", …the generate request}}`; fails as
 * {@link toGeminiRequest} does.
 */
export const toCountTokensRequest = (n: N.NeutralRequest): Either.Either<G.CountTokensRequest, TranslationError> =>
  Either.map(toGeminiRequest(n), (body) => ({ generateContentRequest: { model: `models/${n.model}`, ...body } }))
