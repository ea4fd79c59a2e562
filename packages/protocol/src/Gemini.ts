/**
 * Wire schemas of the Gemini API (`POST /v1beta/models/{model}:generateContent`,
 * `:streamGenerateContent`, `:countTokens`, `GET /v1beta/models`): the request, the response (one
 * per SSE event when streamed), the token-counting request and response, the models list and the
 * error body, with the mapping from an HTTP status to Gemini's error `status`.
 *
 * Like {@link module:OpenAiChat}, every schema is an identity schema (its `Type` equals its
 * `Encoded`). Decode with `decodeOptions` (re-exported here) so unknown fields — newer API fields,
 * part kinds this version does not know (`executableCode`, `codeExecutionResult`, …) — are kept and
 * can be forwarded untouched. A part is one struct whose data fields are all optional: Gemini tells
 * a part's kind by the one data field it carries, not by a `type`. The model is named by the URL
 * path, never by the body.
 */
import * as Schema from "effect/Schema"
import { decodeOptions as openAiDecodeOptions } from "./OpenAiChat.js"

/** Parse options for every wire decode: unknown keys are preserved, all errors reported. */
export const decodeOptions = openAiDecodeOptions

const opt = <S extends Schema.Schema.All>(s: S) => Schema.optional(s)
const JsonObject = Schema.Record({ key: Schema.String, value: Schema.Unknown })
const NonNegativeInt = Schema.Int.pipe(Schema.nonNegative())

/** `{"mimeType": "image/png", "data": "<base64>"}` */
export const Blob = Schema.Struct({ mimeType: Schema.String, data: Schema.String })
export type Blob = typeof Blob.Type

/** `{"mimeType": "application/pdf", "fileUri": "https://…/files/abc"}` (a Files API or Cloud Storage URI). */
export const FileData = Schema.Struct({ mimeType: opt(Schema.String), fileUri: Schema.String })
export type FileData = typeof FileData.Type

/** `{"id"?, "name", "args"?}`: a call the model makes; `args` is absent for a call without arguments. */
export const FunctionCall = Schema.Struct({
  id: opt(Schema.String),
  name: Schema.String,
  args: opt(JsonObject)
})
export type FunctionCall = typeof FunctionCall.Type

/**
 * `{"id"?, "name", "response"}`: a function's result. By convention `response` is `{"output": …}`
 * or `{"error": …}` (Gemini CLI sends `{"output": "<text>"}`), but any JSON object is allowed.
 */
export const FunctionResponse = Schema.Struct({
  id: opt(Schema.String),
  name: Schema.String,
  response: opt(JsonObject)
})
export type FunctionResponse = typeof FunctionResponse.Type

/**
 * One part of a content. `text` with `thought: true` is the model's reasoning; `thoughtSignature`
 * (an opaque token Gemini asks to get back with the part) may sit on a thought, a text or a
 * function call part.
 */
export const Part = Schema.Struct({
  text: opt(Schema.String),
  thought: opt(Schema.Boolean),
  thoughtSignature: opt(Schema.String),
  inlineData: opt(Blob),
  fileData: opt(FileData),
  functionCall: opt(FunctionCall),
  functionResponse: opt(FunctionResponse)
})
export type Part = typeof Part.Type

/** A conversation turn: `role` `user` (the default) or `model`; `function` is an older name of `user`. */
export const Content = Schema.Struct({
  role: opt(Schema.Literal("user", "model", "function")),
  parts: Schema.Array(Part)
})
export type Content = typeof Content.Type

/** `{"name", "description"?, "parameters"? (OpenAPI subset), "parametersJsonSchema"? (JSON Schema)}` */
export const FunctionDeclaration = Schema.Struct({
  name: Schema.String,
  description: opt(Schema.String),
  parameters: opt(JsonObject),
  parametersJsonSchema: opt(Schema.Unknown)
})
export type FunctionDeclaration = typeof FunctionDeclaration.Type

/** An entry of `tools`: function declarations, or a built-in tool (`googleSearch`, `codeExecution`, …) kept untouched. */
export const Tool = Schema.Struct({ functionDeclarations: opt(Schema.Array(FunctionDeclaration)) })
export type Tool = typeof Tool.Type

/** `AUTO` (the default), `ANY` (must call), `NONE`, `VALIDATED`, or a newer mode. */
export const FunctionCallingConfig = Schema.Struct({
  mode: opt(Schema.String),
  allowedFunctionNames: opt(Schema.Array(Schema.String))
})
export type FunctionCallingConfig = typeof FunctionCallingConfig.Type

/** `{"functionCallingConfig"?: {...}}`; other keys (`retrievalConfig`) are kept. */
export const ToolConfig = Schema.Struct({ functionCallingConfig: opt(FunctionCallingConfig) })
export type ToolConfig = typeof ToolConfig.Type

/** `{"includeThoughts"?, "thinkingBudget"?, "thinkingLevel"?}` */
export const ThinkingConfig = Schema.Struct({
  includeThoughts: opt(Schema.Boolean),
  thinkingBudget: opt(Schema.Int),
  thinkingLevel: opt(Schema.String)
})

/** Sampling and output options; unknown keys (`responseModalities`, `speechConfig`, …) are kept. */
export const GenerationConfig = Schema.Struct({
  temperature: opt(Schema.Number),
  topP: opt(Schema.Number),
  topK: opt(Schema.Number),
  maxOutputTokens: opt(NonNegativeInt),
  stopSequences: opt(Schema.Array(Schema.String)),
  candidateCount: opt(NonNegativeInt),
  seed: opt(Schema.Int),
  presencePenalty: opt(Schema.Number),
  frequencyPenalty: opt(Schema.Number),
  responseMimeType: opt(Schema.String),
  responseSchema: opt(JsonObject),
  responseJsonSchema: opt(Schema.Unknown),
  thinkingConfig: opt(ThinkingConfig)
})
export type GenerationConfig = typeof GenerationConfig.Type

/** `{"category": "HARM_CATEGORY_…", "threshold": "BLOCK_…"}` */
export const SafetySetting = Schema.Struct({ category: Schema.String, threshold: Schema.String })

/** A `generateContent` / `streamGenerateContent` request body. */
export const GenerateContentRequest = Schema.Struct({
  contents: Schema.Array(Content),
  systemInstruction: opt(Content),
  tools: opt(Schema.Array(Tool)),
  toolConfig: opt(ToolConfig),
  generationConfig: opt(GenerationConfig),
  safetySettings: opt(Schema.Array(SafetySetting)),
  cachedContent: opt(Schema.String)
})
export type GenerateContentRequest = typeof GenerateContentRequest.Type

/** A safety rating of a candidate or of the prompt. */
export const SafetyRating = Schema.Struct({ category: Schema.String, probability: opt(Schema.String) })

/** One candidate answer. `content` is absent when the candidate was blocked before any output. */
export const Candidate = Schema.Struct({
  content: opt(Schema.Struct({ role: opt(Schema.String), parts: opt(Schema.Array(Part)) })),
  finishReason: opt(Schema.String),
  index: opt(NonNegativeInt),
  safetyRatings: opt(Schema.Array(SafetyRating))
})
export type Candidate = typeof Candidate.Type

/** Why the prompt was blocked (`SAFETY`, `BLOCKLIST`, `PROHIBITED_CONTENT`, `OTHER`, …): no candidate then. */
export const PromptFeedback = Schema.Struct({
  blockReason: opt(Schema.String),
  safetyRatings: opt(Schema.Array(SafetyRating))
})

/**
 * Token counts. `promptTokenCount` includes `cachedContentTokenCount`; `candidatesTokenCount`
 * excludes `thoughtsTokenCount`; `totalTokenCount` is their sum (plus tool-use prompt tokens).
 */
export const UsageMetadata = Schema.Struct({
  promptTokenCount: opt(NonNegativeInt),
  candidatesTokenCount: opt(NonNegativeInt),
  totalTokenCount: opt(NonNegativeInt),
  cachedContentTokenCount: opt(NonNegativeInt),
  thoughtsTokenCount: opt(NonNegativeInt),
  toolUsePromptTokenCount: opt(NonNegativeInt)
})
export type UsageMetadata = typeof UsageMetadata.Type

/**
 * A `generateContent` response, and one event of a `streamGenerateContent` stream (each SSE
 * `data` is one such object holding the new parts; the last carries `finishReason` and the usage).
 */
export const GenerateContentResponse = Schema.Struct({
  candidates: opt(Schema.Array(Candidate)),
  promptFeedback: opt(PromptFeedback),
  usageMetadata: opt(UsageMetadata),
  modelVersion: opt(Schema.String),
  responseId: opt(Schema.String)
})
export type GenerateContentResponse = typeof GenerateContentResponse.Type

/** One streamed event: a {@link GenerateContentResponse} holding only what is new. */
export const StreamEvent = GenerateContentResponse
export type StreamEvent = GenerateContentResponse

/**
 * A `countTokens` request: `contents` alone, or a whole `generateContentRequest` (which may name
 * its `model` as `models/<id>`).
 */
export const CountTokensRequest = Schema.Struct({
  contents: opt(Schema.Array(Content)),
  generateContentRequest: opt(Schema.extend(GenerateContentRequest, Schema.Struct({ model: opt(Schema.String) })))
})
export type CountTokensRequest = typeof CountTokensRequest.Type

/** A `countTokens` response. */
export const CountTokensResponse = Schema.Struct({
  totalTokens: NonNegativeInt,
  cachedContentTokenCount: opt(NonNegativeInt)
})
export type CountTokensResponse = typeof CountTokensResponse.Type

/** An entry of `GET /v1beta/models`: `name` is `models/<id>`. */
export const Model = Schema.Struct({
  name: Schema.String,
  baseModelId: opt(Schema.String),
  version: opt(Schema.String),
  displayName: opt(Schema.String),
  description: opt(Schema.String),
  inputTokenLimit: opt(NonNegativeInt),
  outputTokenLimit: opt(NonNegativeInt),
  supportedGenerationMethods: opt(Schema.Array(Schema.String))
})
export type Model = typeof Model.Type

/** The `GET /v1beta/models` body. */
export const ListModelsResponse = Schema.Struct({
  models: Schema.Array(Model),
  nextPageToken: opt(Schema.String)
})
export type ListModelsResponse = typeof ListModelsResponse.Type

/** The methods a served model supports, as `supportedGenerationMethods` lists them. */
export const generationMethods: ReadonlyArray<string> = ["generateContent", "streamGenerateContent", "countTokens"]

/** A models list entry for the model (route) `id`. */
export const modelEntry = (id: string): Model => ({
  name: `models/${id}`,
  baseModelId: id,
  displayName: id,
  supportedGenerationMethods: generationMethods
})

/** The Gemini error body: `{"error": {"code": <HTTP status>, "message", "status": "INVALID_ARGUMENT" | …}}`. */
export const ErrorBody = Schema.Struct({
  error: Schema.Struct({ code: Schema.Int, message: Schema.String, status: Schema.String })
})
export type ErrorBody = typeof ErrorBody.Type

/**
 * The error body an upstream Gemini may answer with; every field optional (a proxy in front of
 * Gemini may answer with less).
 */
export const UpstreamErrorBody = Schema.Struct({
  error: Schema.Struct({
    code: opt(Schema.Number),
    message: opt(Schema.String),
    status: opt(Schema.String)
  })
})
export type UpstreamErrorBody = typeof UpstreamErrorBody.Type

/**
 * Gemini's error `status` (a google.rpc code name) for an HTTP status: 400 `INVALID_ARGUMENT`, 401
 * `UNAUTHENTICATED`, 403 `PERMISSION_DENIED`, 404 `NOT_FOUND`, 409 `ABORTED`, 413
 * `INVALID_ARGUMENT`, 429 `RESOURCE_EXHAUSTED`, 499 `CANCELLED`, 501 `UNIMPLEMENTED`, 502 and 503
 * `UNAVAILABLE`, 504 `DEADLINE_EXCEEDED`; any other 4xx `FAILED_PRECONDITION`, anything else
 * `INTERNAL`.
 */
export const errorStatusForHttp = (status: number): string => {
  switch (status) {
    case 400:
    case 413:
      return "INVALID_ARGUMENT"
    case 401:
      return "UNAUTHENTICATED"
    case 403:
      return "PERMISSION_DENIED"
    case 404:
      return "NOT_FOUND"
    case 409:
      return "ABORTED"
    case 429:
      return "RESOURCE_EXHAUSTED"
    case 499:
      return "CANCELLED"
    case 501:
      return "UNIMPLEMENTED"
    case 502:
    case 503:
      return "UNAVAILABLE"
    case 504:
      return "DEADLINE_EXCEEDED"
    default:
      return status >= 400 && status < 500 ? "FAILED_PRECONDITION" : "INTERNAL"
  }
}

/** The error body for `status` with `message`, its `error.status` chosen by {@link errorStatusForHttp}. */
export const envelope = (status: number, message: string): ErrorBody => ({
  error: { code: status, message, status: errorStatusForHttp(status) }
})
