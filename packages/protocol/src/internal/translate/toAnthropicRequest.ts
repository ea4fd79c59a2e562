/**
 * Neutral → Anthropic Messages request ({@link toAnthropicRequest}) and the JSON Schema
 * clean-up Anthropic structured output needs ({@link stripUnsupportedConstraints}); the rules
 * are in the module notes of {@link module:Translate}.
 */
import * as Either from "effect/Either"
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"
import * as Anthropic from "../../AnthropicMessages.js"
import type { TranslationError } from "../../Errors.js"
import { clip } from "../../Excerpt.js"
import * as Nesting from "../../Nesting.js"
import type * as N from "../../Neutral.js"
import { isSigned } from "./chatAssistant.js"
import { defaultAnthropicMaxTokens, openAiOnlyFields } from "./constants.js"
import { extraFields, fail, field, type JsonObject, ofType, singleChoice } from "./shared.js"

const isAnthropicContentBlock = Schema.is(Anthropic.ContentBlock)
const isAnthropicToolResultContent = Schema.is(Anthropic.ToolResultContent)
const isAnthropicTool = Schema.is(Anthropic.Tool)

const cacheControlOf = (cacheControl: unknown): { readonly cache_control?: Anthropic.CacheControl } =>
  Schema.is(Anthropic.CacheControl)(cacheControl) ? { cache_control: cacheControl } : {}

const toAnthropicText = (block: N.Text): Anthropic.TextBlock => ({
  type: "text",
  text: block.text,
  ...cacheControlOf(block.cacheControl)
})

const toAnthropicImage = (block: N.Image): Either.Either<Anthropic.ImageBlock, TranslationError> => {
  const source = block.source
  if (source.kind === "url" && source.url.startsWith("data:")) {
    return fail("an image data: URL that is not base64 cannot be sent to an anthropic_messages upstream")
  }
  return Either.right({
    type: "image",
    source: source.kind === "url"
      ? { type: "url", url: source.url }
      : { type: "base64", media_type: source.mediaType, data: source.data },
    ...cacheControlOf(block.cacheControl)
  })
}

const describeOpenAiValue = (value: unknown): string => {
  const type = Predicate.isObject(value) ? field(value, "type") : undefined
  switch (type) {
    case "input_audio":
      return "an audio content part"
    case "file":
      return "a file content part"
    case "custom":
      return "a custom tool call"
    default:
      return `a content part of type ${Predicate.isString(type) ? clip(type) : "unknown"}`
  }
}

/** A tool result as an Anthropic `tool_result` block. */
const toolResultSteps = function*(block: Extract<N.Block, { readonly _tag: "ToolResult" }>) {
  const content: Array<Anthropic.ToolResultContent> = []
  for (const item of block.content) {
    if (item._tag === "Text") content.push(toAnthropicText(item))
    else if (item._tag === "Image") content.push(yield* toAnthropicImage(item))
    else if (item.format === "anthropic_messages" && isAnthropicToolResultContent(item.value)) {
      content.push(item.value)
    } else return yield* fail("an opaque tool_result item is not Anthropic tool_result content")
  }
  const only = content[0]
  const body = content.length === 0
    ? {}
    : content.length === 1 && only !== undefined && ofType(only, "text") && only.cache_control === undefined
    ? { content: only.text }
    : { content }
  const result: Anthropic.ContentBlock = {
    type: "tool_result",
    tool_use_id: block.toolUseId,
    ...body,
    ...(block.isError ? { is_error: true } : {}),
    ...cacheControlOf(block.cacheControl)
  }
  return result
}

const toAnthropicBlock = (block: N.Block): Either.Either<Anthropic.ContentBlock | undefined, TranslationError> => {
  switch (block._tag) {
    case "Text":
      return Either.right(toAnthropicText(block))
    case "Image":
      return toAnthropicImage(block)
    case "ToolUse":
      return Predicate.isRecord(block.input)
        ? Either.right({
          type: "tool_use",
          id: block.id,
          name: block.name,
          input: block.input,
          ...cacheControlOf(block.cacheControl)
        })
        : fail(`the arguments of tool call ${clip(block.id)} are not a JSON object`)
    case "ToolResult":
      return Either.gen(() => toolResultSteps(block))
    case "Thinking":
      // The API rejects thinking without its signature (docs/http-api.md): drop it.
      return Either.right(
        isSigned(block) ? { type: "thinking", thinking: block.text, signature: block.signature } : undefined
      )
    case "RedactedThinking":
      return Either.right({ type: "redacted_thinking", data: block.data })
    case "Reasoning":
      // OpenAI's encrypted reasoning means nothing to Anthropic (see TranslateResponses).
      return Either.right(undefined)
    case "Opaque":
      if (block.format !== "anthropic_messages") {
        return fail(`${describeOpenAiValue(block.value)} cannot be sent to an anthropic_messages upstream`)
      }
      return isAnthropicContentBlock(block.value)
        ? Either.right(block.value)
        : fail("an opaque block is not an Anthropic content block")
  }
}

const toAnthropicToolChoice = (
  n: N.NeutralRequest
): Either.Either<Anthropic.ToolChoice | undefined, TranslationError> => {
  const disable = n.parallelToolCalls === undefined ? {} : { disable_parallel_tool_use: !n.parallelToolCalls }
  const choice = n.toolChoice
  if (choice === undefined) {
    return Either.right(
      n.parallelToolCalls !== undefined && (n.tools.length > 0 || n.opaqueTools.length > 0)
        ? { type: "auto", ...disable }
        : undefined
    )
  }
  switch (choice._tag) {
    case "Auto":
      return Either.right({ type: "auto", ...disable })
    case "Required":
      return Either.right({ type: "any", ...disable })
    case "None":
      return Either.right({ type: "none" })
    case "Tool":
      return Either.right({ type: "tool", name: choice.name, ...disable })
    case "Opaque":
      return choice.format === "anthropic_messages" && Schema.is(Anthropic.ToolChoice)(choice.value)
        ? Either.right(choice.value)
        : fail("this tool_choice cannot be sent to an anthropic_messages upstream")
  }
}

const constraintKeywords: ReadonlyArray<string> = ["minimum", "maximum", "minLength", "maxLength"]
/** Keywords whose value maps names to schemas (the names are not keywords). */
const schemaMapKeywords: ReadonlyArray<string> = [
  "properties",
  "patternProperties",
  "$defs",
  "definitions",
  "dependentSchemas"
]
/** Keywords whose value is data, not a schema. */
const dataKeywords: ReadonlyArray<string> = ["enum", "const", "default", "examples"]

/** Where a member of a schema is: in a schema (keywords), or in a map of names to schemas. */
type SchemaPlace = "schema" | "names"

const stripMember = (key: string, value: unknown, place: SchemaPlace): Nesting.Member<SchemaPlace> => {
  if (place === "names") return { _tag: "Copy", value, mode: "schema" }
  if (constraintKeywords.includes(key)) return { _tag: "Drop" }
  if (schemaMapKeywords.includes(key) && Predicate.isRecord(value)) return { _tag: "Copy", value, mode: "names" }
  return dataKeywords.includes(key) ? { _tag: "Keep", value } : { _tag: "Copy", value, mode: "schema" }
}

/**
 * `schema` without the `minimum` / `maximum` / `minLength` / `maxLength` keywords, at any depth,
 * which Anthropic structured output rejects (docs/http-api.md). Property names and data values are
 * kept. A copy made without recursion (`Nesting.rebuild`): any depth is safe.
 */
export const stripUnsupportedConstraints = (schema: JsonObject): JsonObject => {
  const stripped = Nesting.rebuild<SchemaPlace>(schema, "schema", stripMember)
  return Predicate.isRecord(stripped) ? stripped : {}
}

/**
 * A neutral request as an Anthropic Messages request. Fails with a {@link TranslationError} when
 * the request holds what Anthropic cannot take: `n` > 1, an OpenAI audio / file / unknown content
 * part or custom tool (call), tool-call arguments that are not a JSON object, a non-base64 `data:`
 * image URL, or an OpenAI-only tool choice. `max_tokens` is `maxOutputTokens`, else
 * {@link defaultAnthropicMaxTokens}. Within a user message, tool results are moved first.
 * Positioned system messages, which the Messages API does not take inside `messages`, are moved to
 * the end of `system`, in order.
 */
export const toAnthropicRequest = (n: N.NeutralRequest): Either.Either<Anthropic.MessagesRequest, TranslationError> =>
  Either.gen(() => toAnthropicRequestSteps(n))

/** The steps of {@link toAnthropicRequest}: a generator made once (docs/architecture.md). */
const toAnthropicRequestSteps = function*(n: N.NeutralRequest) {
  yield* singleChoice(n, "anthropic_messages")
  const messages: Array<Anthropic.Message> = []
  const moved: Array<N.Text> = []
  for (const message of n.messages) {
    if (message.role === "system") {
      moved.push(...message.blocks)
      continue
    }
    const ordered = message.role === "user"
      ? [
        ...message.blocks.filter((b) => b._tag === "ToolResult"),
        ...message.blocks.filter((b) => b._tag !== "ToolResult")
      ]
      : message.blocks
    const content: Array<Anthropic.ContentBlock> = []
    for (const block of ordered) {
      const out = yield* toAnthropicBlock(block)
      if (out !== undefined) content.push(out)
    }
    messages.push({ role: message.role, content: content.length === 0 ? "" : content })
  }
  const tools: Array<Anthropic.Tool> = n.tools.map((tool) => ({
    name: tool.name,
    input_schema: tool.parameters,
    ...(tool.description !== undefined ? { description: tool.description } : {}),
    ...cacheControlOf(tool.cacheControl)
  }))
  for (const tool of n.opaqueTools) {
    if (tool.format === "openai_chat") {
      return yield* fail("a custom tool cannot be sent to an anthropic_messages upstream")
    }
    if (tool.format === "anthropic_messages" && isAnthropicTool(tool.value)) tools.push(tool.value)
  }
  const toolChoice = yield* toAnthropicToolChoice(n)
  const systemTexts = [...n.instructions, ...moved]
  const firstInstruction = systemTexts[0]
  const system = systemTexts.length === 0
    ? undefined
    : systemTexts.length === 1 && firstInstruction !== undefined &&
        !Schema.is(Anthropic.CacheControl)(firstInstruction.cacheControl)
    ? firstInstruction.text
    : systemTexts.map(toAnthropicText)
  const extraOutputConfig = n.extra["output_config"]
  const outputConfig = {
    ...(Predicate.isRecord(extraOutputConfig) ? extraOutputConfig : {}),
    ...(n.responseFormat?.type === "json_schema"
      ? { format: { type: "json_schema", schema: stripUnsupportedConstraints(n.responseFormat.schema) } }
      : {})
  }
  const request: Anthropic.MessagesRequest = {
    ...extraFields(n.extra, [...openAiOnlyFields, "output_config"]),
    model: n.model,
    messages,
    max_tokens: n.maxOutputTokens ?? defaultAnthropicMaxTokens,
    ...(system !== undefined ? { system } : {}),
    ...(tools.length > 0 ? { tools } : {}),
    ...(toolChoice !== undefined ? { tool_choice: toolChoice } : {}),
    ...(n.temperature !== undefined ? { temperature: n.temperature } : {}),
    ...(n.topP !== undefined ? { top_p: n.topP } : {}),
    ...(n.stop.length > 0 ? { stop_sequences: n.stop } : {}),
    ...(n.stream ? { stream: true } : {}),
    ...(n.user !== undefined ? { metadata: { user_id: n.user } } : {}),
    ...(Object.keys(outputConfig).length > 0 ? { output_config: outputConfig } : {})
  }
  return request
}
