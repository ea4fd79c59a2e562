/**
 * Gemini `generateContent` request → neutral ({@link fromGeminiRequest}); the rules are in the
 * module notes of {@link module:TranslateGemini}.
 */
import * as Predicate from "effect/Predicate"
import type * as G from "../../Gemini.js"
import * as Nesting from "../../Nesting.js"
import type * as N from "../../Neutral.js"
import {
  geminiFormat,
  inlineImage,
  modelPartBlocks,
  opaquePart,
  requestCallId,
  toolResultContent
} from "./geminiParts.js"
import { emptyObjectSchema, extraFields, type JsonObject, textBlocks } from "./shared.js"

/** The `name` of the JSON schema a Gemini `responseJsonSchema` becomes (Gemini's has none). */
export const geminiSchemaName = "response"

/**
 * An OpenAPI-subset schema (Gemini `parameters`, whose `type` values may be upper case: `OBJECT`,
 * `STRING`) as JSON Schema: every string `type` in lower case; nothing else changes.
 */
export const openApiToJsonSchema = (schema: unknown): unknown => Nesting.rebuild(schema, "schema", lowerCaseType)

/** One member of {@link openApiToJsonSchema}'s copy (made without recursion: any depth is safe). */
const lowerCaseType = (key: string, value: unknown): Nesting.Member<"schema"> =>
  key === "type" && Predicate.isString(value)
    ? { _tag: "Keep", value: value.toLowerCase() }
    : { _tag: "Copy", value, mode: "schema" }

const toolParameters = (declaration: G.FunctionDeclaration): JsonObject => {
  if (Predicate.isRecord(declaration.parametersJsonSchema)) return declaration.parametersJsonSchema
  const converted = declaration.parameters !== undefined ? openApiToJsonSchema(declaration.parameters) : undefined
  return Predicate.isRecord(converted) ? converted : emptyObjectSchema
}

const fromTools = (tools: ReadonlyArray<G.Tool>) => {
  const out: Array<N.NeutralTool> = []
  const opaque: Array<N.OpaqueTool> = []
  for (const tool of tools) {
    for (const declaration of tool.functionDeclarations ?? []) {
      out.push({
        name: declaration.name,
        parameters: toolParameters(declaration),
        gemini: declaration,
        ...(declaration.description !== undefined ? { description: declaration.description } : {})
      })
    }
    const rest = extraFields(tool, ["functionDeclarations"])
    if (Object.keys(rest).length > 0) opaque.push({ format: geminiFormat, value: rest })
  }
  return { tools: out, opaqueTools: opaque }
}

const fromToolChoice = (config: G.FunctionCallingConfig): N.NeutralToolChoice => {
  const names = config.allowedFunctionNames
  const extra = Object.keys(extraFields(config, ["mode", "allowedFunctionNames"])).length > 0
  if (!extra && names === undefined) {
    if (config.mode === "AUTO") return { _tag: "Auto" }
    if (config.mode === "ANY") return { _tag: "Required" }
    if (config.mode === "NONE") return { _tag: "None" }
  }
  const only = names?.[0]
  if (!extra && config.mode === "ANY" && names?.length === 1 && only !== undefined) return { _tag: "Tool", name: only }
  return { _tag: "Opaque", format: geminiFormat, value: config }
}

/** Generation config keys with a neutral slot or a slot in `extra` (under the other formats' names). */
const generationExtraNames: ReadonlyArray<readonly [keyof G.GenerationConfig, string]> = [
  ["topK", "top_k"],
  ["seed", "seed"],
  ["presencePenalty", "presence_penalty"],
  ["frequencyPenalty", "frequency_penalty"],
  ["candidateCount", "n"]
]

const fromResponseFormat = (config: G.GenerationConfig): N.NeutralResponseFormat | undefined => {
  if (config.responseMimeType === "text/plain" && config.responseJsonSchema === undefined) return { type: "text" }
  if (config.responseMimeType !== "application/json") return undefined
  if (Predicate.isRecord(config.responseJsonSchema)) {
    return { type: "json_schema", name: geminiSchemaName, schema: config.responseJsonSchema }
  }
  return config.responseJsonSchema === undefined ? { type: "json_object" } : undefined
}

const fromGenerationConfig = (config: G.GenerationConfig) => {
  const extra: Record<string, unknown> = {}
  for (const [key, name] of generationExtraNames) {
    if (config[key] !== undefined) extra[name] = config[key]
  }
  const responseFormat = fromResponseFormat(config)
  const mapped: Array<string> = [
    "temperature",
    "topP",
    "maxOutputTokens",
    "stopSequences",
    ...generationExtraNames.map(([key]) => key),
    // a responseSchema stays Gemini's; json_object is all the other formats get of it
    ...(responseFormat !== undefined ? ["responseMimeType", "responseJsonSchema"] : [])
  ]
  return { extra, responseFormat, rest: extraFields(config, mapped) }
}

interface PendingCall {
  readonly id: string
  readonly name: string
}

/**
 * The messages of `contents`, function calls given ids and function responses paired with their
 * calls (see the module notes of {@link module:TranslateGemini}).
 */
const fromContents = (contents: ReadonlyArray<G.Content>): ReadonlyArray<N.NeutralMessage> => {
  let pending: Array<PendingCall> = []
  return contents.map((content, i): N.NeutralMessage => {
    if (content.role === "model") {
      pending = []
      const blocks = content.parts.flatMap((part, j) =>
        modelPartBlocks(part, () => requestCallId(i, j)).map((block) => {
          if (block._tag === "ToolUse") pending.push({ id: block.id, name: block.name })
          return block
        })
      )
      return { role: "assistant", blocks }
    }
    const blocks = content.parts.flatMap((part, j): ReadonlyArray<N.Block> => {
      const response = part.functionResponse
      if (response !== undefined) {
        const byId = response.id !== undefined ? pending.findIndex((call) => call.id === response.id) : -1
        const at = byId >= 0 ? byId : pending.findIndex((call) => call.name === response.name)
        const call = pending[at]
        if (call !== undefined) pending.splice(at, 1)
        const { isError, text } = toolResultContent(response.response)
        return [{
          _tag: "ToolResult",
          toolUseId: call?.id ?? response.id ?? requestCallId(i, j),
          content: textBlocks(text),
          isError,
          gemini: { name: response.name, ...(response.id !== undefined ? { id: response.id } : {}) }
        }]
      }
      if (part.text !== undefined && part.thought !== true) return textBlocks(part.text)
      const image = part.inlineData !== undefined ? inlineImage(part.inlineData) : undefined
      return [image ?? opaquePart(part)]
    })
    return { role: "user", blocks }
  })
}

const requestMappedFields: ReadonlyArray<string> = [
  "contents",
  "systemInstruction",
  "tools",
  "toolConfig",
  "generationConfig"
]

/**
 * A Gemini request in neutral form. `model` and `stream` come from the URL (the path's model and
 * whether the method was `streamGenerateContent`); the body names neither. Total: what has no
 * neutral slot is kept in `gemini.fields` for a Gemini upstream (see the module notes).
 */
export const fromGeminiRequest = (
  req: G.GenerateContentRequest,
  options: { readonly model: string; readonly stream: boolean }
): N.NeutralRequest => {
  const { opaqueTools, tools } = fromTools(req.tools ?? [])
  const generation = fromGenerationConfig(req.generationConfig ?? {})
  const config = req.generationConfig ?? {}
  const callingConfig = req.toolConfig?.functionCallingConfig
  const fields: Record<string, unknown> = extraFields(req, requestMappedFields)
  const toolConfigRest = req.toolConfig !== undefined ? extraFields(req.toolConfig, ["functionCallingConfig"]) : {}
  if (Object.keys(toolConfigRest).length > 0) fields["toolConfig"] = toolConfigRest
  if (Object.keys(generation.rest).length > 0) fields["generationConfig"] = generation.rest
  return {
    model: options.model,
    instructions: (req.systemInstruction?.parts ?? []).flatMap((part) =>
      part.text !== undefined ? [{ _tag: "Text" as const, text: part.text }] : []
    ),
    messages: fromContents(req.contents),
    tools,
    opaqueTools,
    stop: config.stopSequences ?? [],
    stream: options.stream,
    extra: generation.extra,
    gemini: { fields },
    ...(callingConfig !== undefined ? { toolChoice: fromToolChoice(callingConfig) } : {}),
    ...(config.maxOutputTokens !== undefined ? { maxOutputTokens: config.maxOutputTokens } : {}),
    ...(config.temperature !== undefined ? { temperature: config.temperature } : {}),
    ...(config.topP !== undefined ? { topP: config.topP } : {}),
    ...(generation.responseFormat !== undefined ? { responseFormat: generation.responseFormat } : {})
  }
}

/**
 * The request a `countTokens` body counts: its `generateContentRequest` (without `model`), else its
 * `contents` alone. Read it with {@link fromGeminiRequest} like a generate request.
 */
export const countTokensBody = (req: G.CountTokensRequest): G.GenerateContentRequest => {
  if (req.generateContentRequest === undefined) return { contents: req.contents ?? [] }
  const { model: _model, ...body } = req.generateContentRequest
  return body
}
