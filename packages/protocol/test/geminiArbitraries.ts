/**
 * fast-check arbitraries of Gemini requests, answers and streams, and of the neutral requests that
 * survive a trip through Gemini (see the normalisations in TranslateGemini.ts).
 */
import type * as G from "@switchyard-ts/protocol/Gemini"
import type * as N from "@switchyard-ts/protocol/Neutral"
import * as FastCheck from "effect/FastCheck"
import * as Arb from "./arbitraries.js"

type A<T> = FastCheck.Arbitrary<T>

const opt = <T>(arb: A<T>): A<T | undefined> => FastCheck.option(arb, { nil: undefined })
const fraction: A<number> = FastCheck.integer({ min: 0, max: 100 }).map((n) => n / 100)
const base64: A<string> = FastCheck.base64String({ minLength: 4, maxLength: 16 })
const name: A<string> = Arb.identifier
const callId: A<string> = Arb.identifier.map((s) => `fc_${s}`)

/** A JSON Schema of an object with a few string properties. */
const jsonSchema: A<{ readonly [key: string]: unknown }> = FastCheck.uniqueArray(name, { maxLength: 3 }).map((
  keys
) => ({ type: "object", properties: Object.fromEntries(keys.map((k) => [k, { type: "string" }])) }))

/** The same in Gemini's OpenAPI subset (upper-case types), and its JSON Schema reading. */
export const openApiSchema = (keys: ReadonlyArray<string>) => ({
  gemini: { type: "OBJECT", properties: Object.fromEntries(keys.map((k) => [k, { type: "STRING" }])) },
  json: { type: "object", properties: Object.fromEntries(keys.map((k) => [k, { type: "string" }])) }
})

const functionResponseBody: A<{ readonly [key: string]: unknown }> = FastCheck.oneof(
  Arb.text.map((output) => ({ output })),
  Arb.text.map((error) => ({ error })),
  FastCheck.constant({ output: "" }),
  Arb.jsonObject
)

const userPart: A<G.Part> = FastCheck.oneof(
  Arb.text.map((text) => ({ text })),
  base64.map((data) => ({ inlineData: { mimeType: "image/png", data } })),
  base64.map((data) => ({ inlineData: { mimeType: "application/pdf", data } })),
  name.map((s) => ({ fileData: { mimeType: "application/pdf", fileUri: `https://files.example/${s}` } })),
  FastCheck.record({ id: opt(callId), name, response: functionResponseBody }).map(({ id, name, response }) => ({
    functionResponse: { ...(id !== undefined ? { id } : {}), name, response }
  }))
)

const signed = (signature: string | undefined) => signature !== undefined ? { thoughtSignature: signature } : {}

/** A model part: a thought, a text or a function call, each maybe signed. */
export const modelPart: A<G.Part> = FastCheck.oneof(
  FastCheck.record({ text: Arb.text, signature: opt(Arb.signature) }).map(({ signature, text }) => ({
    text,
    thought: true,
    ...signed(signature)
  })),
  FastCheck.record({ text: Arb.text, signature: opt(Arb.signature) }).map(({ signature, text }) => ({
    text,
    ...signed(signature)
  })),
  FastCheck.record({ id: opt(callId), name, args: Arb.jsonObject, signature: opt(Arb.signature) }).map((
    { args, id, name, signature }
  ) => ({ functionCall: { ...(id !== undefined ? { id } : {}), name, args }, ...signed(signature) }))
)

/** A model part of a request's history: also images and parts only Gemini knows, maybe signed. */
const requestModelPart: A<G.Part> = FastCheck.oneof(
  modelPart,
  FastCheck.record({ data: base64, signature: opt(Arb.signature) }).map(({ data, signature }) => ({
    inlineData: { mimeType: "image/png", data },
    ...signed(signature)
  })),
  FastCheck.record({ code: Arb.text, signature: opt(Arb.signature) }).map(({ code, signature }) => ({
    executableCode: { language: "PYTHON", code },
    ...signed(signature)
  }))
)

const content: A<G.Content> = FastCheck.oneof(
  FastCheck.array(userPart, { minLength: 1, maxLength: 3 }).map((parts) => ({ role: "user" as const, parts })),
  FastCheck.array(requestModelPart, { minLength: 1, maxLength: 3 }).map((parts) => ({ role: "model" as const, parts }))
)

const declaration: A<G.FunctionDeclaration> = FastCheck.oneof(
  FastCheck.record({ name, description: opt(Arb.text), schema: jsonSchema }).map(({ description, name, schema }) => ({
    name,
    ...(description !== undefined ? { description } : {}),
    parametersJsonSchema: schema
  })),
  FastCheck.record({ name, keys: FastCheck.uniqueArray(name, { maxLength: 2 }) }).map(({ keys, name }) => ({
    name,
    parameters: openApiSchema(keys).gemini
  }))
)

const tools: A<ReadonlyArray<G.Tool>> = FastCheck.record({
  declarations: FastCheck.array(declaration, { minLength: 1, maxLength: 3 }),
  search: FastCheck.boolean()
}).map(({ declarations, search }) => [
  { functionDeclarations: declarations },
  ...(search ? [{ googleSearch: {} }] : [])
])

const callingConfig: A<G.FunctionCallingConfig> = FastCheck.oneof(
  FastCheck.constantFrom("AUTO", "ANY", "NONE").map((mode) => ({ mode })),
  name.map((n) => ({ mode: "ANY", allowedFunctionNames: [n] })),
  FastCheck.tuple(name, name).map(([a, b]) => ({ mode: "ANY", allowedFunctionNames: [a, b] })),
  FastCheck.constant({ mode: "VALIDATED" })
)

const responseFormat: A<G.GenerationConfig> = FastCheck.oneof(
  FastCheck.constant({}),
  FastCheck.constant({ responseMimeType: "application/json" }),
  jsonSchema.map((schema) => ({ responseMimeType: "application/json", responseJsonSchema: schema })),
  FastCheck.constant({ responseMimeType: "text/plain" }),
  FastCheck.constant({ responseMimeType: "text/x.enum", responseSchema: { type: "STRING", enum: ["a", "b"] } }),
  FastCheck.constant({ responseMimeType: "application/json", responseSchema: { type: "OBJECT" } })
)

const generationConfig: A<G.GenerationConfig | undefined> = FastCheck.record({
  temperature: opt(fraction),
  topP: opt(fraction),
  topK: opt(FastCheck.integer({ min: 1, max: 64 })),
  maxOutputTokens: opt(FastCheck.integer({ min: 1, max: 9000 })),
  stopSequences: opt(FastCheck.array(Arb.text, { minLength: 1, maxLength: 2 })),
  candidateCount: opt(FastCheck.constant(1)),
  seed: opt(FastCheck.integer({ min: 0, max: 1000 })),
  thinkingConfig: opt(FastCheck.record({ includeThoughts: FastCheck.boolean(), thinkingBudget: FastCheck.integer() })),
  format: responseFormat
}).map(({ format, ...rest }) => {
  const config: Record<string, unknown> = { ...format }
  for (const [key, value] of Object.entries(rest)) if (value !== undefined) config[key] = value
  return Object.keys(config).length > 0 ? config : undefined
})

/**
 * A Gemini request in the normalised form a Gemini → neutral → Gemini trip keeps exactly: explicit
 * roles, no empty parts, every declaration in the first `tools` entry, `systemInstruction` without
 * a role, no empty thought text.
 */
export const geminiRequest: A<G.GenerateContentRequest> = FastCheck.record({
  contents: FastCheck.array(content, { minLength: 1, maxLength: 5 }),
  system: opt(FastCheck.array(Arb.text, { minLength: 1, maxLength: 2 })),
  tools: opt(tools),
  calling: opt(callingConfig),
  retrieval: FastCheck.boolean(),
  generationConfig,
  safety: FastCheck.boolean(),
  cachedContent: opt(name.map((s) => `cachedContents/${s}`))
}).map(({ cachedContent, calling, contents, generationConfig, retrieval, safety, system, tools }) => {
  const toolConfig = {
    ...(calling !== undefined ? { functionCallingConfig: calling } : {}),
    ...(retrieval ? { retrievalConfig: { languageCode: "en" } } : {})
  }
  return {
    contents,
    ...(system !== undefined ? { systemInstruction: { parts: system.map((text) => ({ text })) } } : {}),
    ...(tools !== undefined ? { tools } : {}),
    ...(Object.keys(toolConfig).length > 0 ? { toolConfig } : {}),
    ...(generationConfig !== undefined ? { generationConfig } : {}),
    ...(safety ? { safetySettings: [{ category: "HARM_CATEGORY_HATE_SPEECH", threshold: "BLOCK_NONE" }] } : {}),
    ...(cachedContent !== undefined ? { cachedContent } : {})
  }
})

// ---------------------------------------------------------------------------------------------
// the portable neutral subset

const portableTool: A<N.NeutralTool> = FastCheck.record({ name, description: opt(Arb.text), parameters: jsonSchema })
  .map(({ description, name, parameters }) => ({
    name,
    parameters,
    ...(description !== undefined ? { description } : {})
  }))

const thinking: A<N.Thinking> = FastCheck.record({ text: Arb.text, signature: opt(Arb.signature) }).map((
  { signature, text }
) => ({ _tag: "Thinking", text, ...(signature !== undefined ? { signature } : {}) }))

/** Tool-result text that no JSON parser reads as an object. */
const resultText: A<string> = Arb.identifier

/**
 * A neutral conversation Gemini can carry exactly: user turns of texts, base64 images and results
 * of the calls of the turn before; assistant turns of thinking (non-empty text), texts and calls.
 */
const conversation: A<ReadonlyArray<N.NeutralMessage>> = FastCheck.array(
  FastCheck.record({
    user: FastCheck.array(
      FastCheck.oneof(
        Arb.text.map((text): N.Block => ({ _tag: "Text", text })),
        base64.map((data): N.Block => ({ _tag: "Image", source: { kind: "base64", mediaType: "image/png", data } }))
      ),
      { minLength: 1, maxLength: 2 }
    ),
    thinking: FastCheck.array(thinking, { maxLength: 2 }),
    text: opt(Arb.text),
    calls: FastCheck.array(FastCheck.record({ name, input: Arb.jsonObject }), { maxLength: 2 }),
    results: FastCheck.array(FastCheck.record({ text: opt(resultText), isError: FastCheck.boolean() }), {
      minLength: 2,
      maxLength: 2
    })
  }),
  { minLength: 1, maxLength: 3 }
).map((turns) =>
  turns.flatMap(({ calls, results, text, thinking, user }, turn): ReadonlyArray<N.NeutralMessage> => {
    const uses = calls.map((call, i): N.ToolUse => ({ _tag: "ToolUse", id: `call_${turn}_${i}`, ...call }))
    const assistant: ReadonlyArray<N.Block> = [
      ...thinking,
      ...(text !== undefined ? [{ _tag: "Text" as const, text }] : []),
      ...uses
    ]
    const answers = uses.map((use, i): N.ToolResult => {
      const result = results[i]
      return {
        _tag: "ToolResult",
        toolUseId: use.id,
        content: result?.text !== undefined ? [{ _tag: "Text", text: result.text }] : [],
        isError: result?.isError ?? false
      }
    })
    return [
      { role: "user", blocks: user },
      ...(assistant.length > 0 ? [{ role: "assistant" as const, blocks: assistant }] : []),
      ...(answers.length > 0 ? [{ role: "user" as const, blocks: answers }] : [])
    ]
  })
)

/** A neutral request of what Gemini can carry exactly (see {@link conversation}). */
export const portableRequest: A<N.NeutralRequest> = FastCheck.record({
  instructions: FastCheck.array(Arb.text, { maxLength: 2 }),
  messages: conversation,
  tools: FastCheck.array(portableTool, { maxLength: 2 }),
  toolChoice: opt(FastCheck.oneof(
    FastCheck.constantFrom<N.NeutralToolChoice>({ _tag: "Auto" }, { _tag: "Required" }, { _tag: "None" }),
    name.map((n): N.NeutralToolChoice => ({ _tag: "Tool", name: n }))
  )),
  maxOutputTokens: opt(FastCheck.integer({ min: 1, max: 9000 })),
  temperature: opt(fraction),
  topP: opt(fraction),
  stop: FastCheck.array(Arb.text, { maxLength: 2 }),
  stream: FastCheck.boolean(),
  responseFormat: opt(FastCheck.oneof(
    FastCheck.constantFrom<N.NeutralResponseFormat>({ type: "text" }, { type: "json_object" }),
    jsonSchema.map((schema): N.NeutralResponseFormat => ({ type: "json_schema", name: "response", schema }))
  )),
  topK: opt(FastCheck.integer({ min: 1, max: 40 })),
  seed: opt(FastCheck.integer({ min: 0, max: 100 }))
}).map(({ instructions, maxOutputTokens, responseFormat, seed, temperature, toolChoice, topK, topP, ...rest }) => ({
  ...rest,
  model: "gemini-route",
  instructions: instructions.map((text) => ({ _tag: "Text" as const, text })),
  opaqueTools: [],
  extra: { ...(topK !== undefined ? { top_k: topK } : {}), ...(seed !== undefined ? { seed } : {}) },
  ...(toolChoice !== undefined ? { toolChoice } : {}),
  ...(maxOutputTokens !== undefined ? { maxOutputTokens } : {}),
  ...(temperature !== undefined ? { temperature } : {}),
  ...(topP !== undefined ? { topP } : {}),
  ...(responseFormat !== undefined ? { responseFormat } : {})
}))

/** `request` without the markers a trip through Gemini adds (`gemini` on blocks, tools and the request). */
export const withoutGeminiMarkers = (request: N.NeutralRequest): N.NeutralRequest => {
  const { gemini: _request, ...rest } = request
  return {
    ...rest,
    tools: request.tools.map(({ gemini: _tool, ...tool }) => tool),
    messages: request.messages.map((message): N.ConversationEntry =>
      message.role === "system" ? message : {
        role: message.role,
        blocks: message.blocks.map((block): N.Block => {
          if (block._tag === "ToolUse" || block._tag === "ToolResult") {
            const { gemini: _block, ...plain } = block
            return plain
          }
          return block
        })
      }
    )
  }
}

// ---------------------------------------------------------------------------------------------
// answers and streams

/** What a Gemini answer holds, and how its stream is cut into events. */
export interface GeminiAnswer {
  readonly parts: ReadonlyArray<G.Part>
  readonly finishReason: string
  readonly usage: G.UsageMetadata
  readonly responseId: string | undefined
  /** `cuts[i]`: whether part i starts a new event. */
  readonly cuts: ReadonlyArray<boolean>
}

export const geminiAnswer: A<GeminiAnswer> = FastCheck.record({
  parts: FastCheck.array(modelPart, { maxLength: 6 }),
  finishReason: FastCheck.constantFrom("STOP", "MAX_TOKENS", "SAFETY", "RECITATION", "MALFORMED_FUNCTION_CALL"),
  usage: FastCheck.record({
    prompt: FastCheck.nat(5000),
    candidates: FastCheck.nat(5000),
    cached: opt(FastCheck.nat(5000)),
    thoughts: opt(FastCheck.nat(5000))
  }).map(({ cached, candidates, prompt, thoughts }): G.UsageMetadata => ({
    promptTokenCount: prompt + (cached ?? 0),
    candidatesTokenCount: candidates,
    totalTokenCount: prompt + (cached ?? 0) + candidates + (thoughts ?? 0),
    ...(cached !== undefined ? { cachedContentTokenCount: cached } : {}),
    ...(thoughts !== undefined ? { thoughtsTokenCount: thoughts } : {})
  })),
  responseId: opt(FastCheck.stringMatching(/^[A-Za-z0-9+/]{4,12}$/)),
  cuts: FastCheck.array(FastCheck.boolean(), { minLength: 6, maxLength: 6 })
})

/** The buffered response of an answer. */
export const geminiResponse = (a: GeminiAnswer): G.GenerateContentResponse => ({
  candidates: [{ content: { role: "model", parts: a.parts }, finishReason: a.finishReason, index: 0 }],
  usageMetadata: a.usage,
  modelVersion: "gemini-up",
  ...(a.responseId !== undefined ? { responseId: a.responseId } : {})
})

/** The stream of an answer: the parts cut into events, the last event with the finish reason and usage. */
export const geminiEvents = (a: GeminiAnswer): ReadonlyArray<G.StreamEvent> => {
  const groups: Array<Array<G.Part>> = []
  a.parts.forEach((part, i) => {
    const current = groups[groups.length - 1]
    if (current === undefined || a.cuts[i] === true) groups.push([part])
    else current.push(part)
  })
  const base = { modelVersion: "gemini-up", ...(a.responseId !== undefined ? { responseId: a.responseId } : {}) }
  const events: Array<G.StreamEvent> = groups.map((parts) => ({
    ...base,
    candidates: [{ content: { role: "model", parts }, index: 0 }]
  }))
  events.push({
    ...base,
    candidates: [{ content: { role: "model", parts: [] }, finishReason: a.finishReason, index: 0 }],
    usageMetadata: a.usage
  })
  return events
}

/**
 * The parts of a stream's events joined as a Gemini client reads them: adjacent text parts of the
 * same kind are one, a thought's signature ending it (a later thought starts a new part); a
 * signature-only thought after a thought signs it.
 */
export const joinParts = (parts: ReadonlyArray<G.Part>): ReadonlyArray<G.Part> => {
  const out: Array<G.Part> = []
  for (const part of parts) {
    const last = out[out.length - 1]
    const joinable = last !== undefined && last.text !== undefined && part.text !== undefined &&
      last.functionCall === undefined && (last.thought === true) === (part.thought === true) &&
      (part.thought === true ? last.thoughtSignature === undefined : part.thoughtSignature === undefined)
    if (joinable) {
      const signature = last.thoughtSignature ?? part.thoughtSignature
      out[out.length - 1] = {
        ...last,
        text: `${last.text}${part.text}`,
        ...(signature !== undefined ? { thoughtSignature: signature } : {})
      }
    } else out.push(part)
  }
  return out
}
