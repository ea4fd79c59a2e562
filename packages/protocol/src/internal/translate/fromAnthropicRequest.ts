/**
 * Anthropic Messages request → neutral ({@link fromAnthropicRequest}); the rules are in the
 * module notes of {@link module:Translate}.
 */
import * as Either from "effect/Either"
import * as Predicate from "effect/Predicate"
import * as Anthropic from "../../AnthropicMessages.js"
import type { TranslationError } from "../../Errors.js"
import { clip } from "../../Excerpt.js"
import type * as N from "../../Neutral.js"
import { guardFor } from "../guard.js"
import { neutralThinking } from "./chatAssistant.js"
import { extraFields, fail, isToolResultMessage, ofType, textBlocks } from "./shared.js"

const withCache = (cacheControl: unknown): { readonly cacheControl?: unknown } =>
  cacheControl === undefined || cacheControl === null ? {} : { cacheControl }

const anthropicMappedFields: ReadonlyArray<string> = [
  "model",
  "messages",
  "system",
  "max_tokens",
  "stream",
  "temperature",
  "top_p",
  "stop_sequences",
  "tools",
  "tool_choice",
  "metadata",
  "output_config"
]

const anthropicText = (block: Anthropic.TextBlock): N.Text => ({
  _tag: "Text",
  text: block.text,
  ...withCache(block.cache_control)
})

/** An Anthropic image with a base64 or URL source; `undefined` for other sources (files). */
const anthropicImage = (block: Anthropic.ImageBlock): N.Image | undefined => {
  const source = block.source
  const cache = withCache(block.cache_control)
  if (ofType(source, "base64")) {
    return { _tag: "Image", source: { kind: "base64", mediaType: source.media_type, data: source.data }, ...cache }
  }
  if (ofType(source, "url")) return { _tag: "Image", source: { kind: "url", url: source.url }, ...cache }
  return undefined
}

const anthropicToolResult = (block: Anthropic.ToolResultBlock): Either.Either<N.ToolResult, TranslationError> => {
  const content: Array<N.Text | N.Image | N.Opaque> = []
  const raw = block.content
  if (Predicate.isString(raw)) content.push(...textBlocks(raw))
  else {
    for (const item of raw ?? []) {
      if (ofType(item, "text")) content.push(anthropicText(item))
      else if (ofType(item, "image")) {
        const image = anthropicImage(item)
        if (image === undefined) {
          return fail(`a tool_result image with a ${clip(item.source.type)} source cannot be translated`)
        }
        content.push(image)
      } else if (ofType(item, "tool_reference")) {
        content.push({ _tag: "Opaque", format: "anthropic_messages", value: item })
      } else return fail(`a tool_result with ${clip(item.type)} content cannot be translated`)
    }
  }
  return Either.right({
    _tag: "ToolResult",
    toolUseId: block.tool_use_id,
    content,
    isError: block.is_error === true,
    ...withCache(block.cache_control)
  })
}

const anthropicBlocks = (
  content: string | ReadonlyArray<Anthropic.ContentBlock>
): Either.Either<ReadonlyArray<N.Block>, TranslationError> => {
  // plain loops, not `Either.gen`: this runs for every message of a conversation
  if (Predicate.isString(content)) return Either.right(textBlocks(content))
  const blocks: Array<N.Block> = []
  for (const block of content) {
    if (ofType(block, "text")) blocks.push(anthropicText(block))
    else if (ofType(block, "image")) {
      blocks.push(anthropicImage(block) ?? { _tag: "Opaque", format: "anthropic_messages", value: block })
    } else if (ofType(block, "tool_use")) {
      blocks.push({
        _tag: "ToolUse",
        id: block.id,
        name: block.name,
        input: block.input,
        ...withCache(block.cache_control)
      })
    } else if (ofType(block, "tool_result")) {
      const result = anthropicToolResult(block)
      if (Either.isLeft(result)) return Either.left(result.left)
      blocks.push(result.right)
    } else if (ofType(block, "thinking")) blocks.push(neutralThinking(block.thinking, block.signature))
    else if (ofType(block, "redacted_thinking")) blocks.push({ _tag: "RedactedThinking", data: block.data })
    else blocks.push({ _tag: "Opaque", format: "anthropic_messages", value: block })
  }
  return Either.right(blocks)
}

const anthropicToolChoice = (choice: Anthropic.ToolChoice): N.NeutralToolChoice => {
  switch (choice.type) {
    case "auto":
      return { _tag: "Auto" }
    case "any":
      return { _tag: "Required" }
    case "none":
      return { _tag: "None" }
    case "tool":
      return { _tag: "Tool", name: choice.name }
  }
}

const isAnthropicCustomTool = guardFor(Anthropic.CustomTool)

/**
 * An Anthropic Messages request in neutral form; consecutive user messages made only of tool
 * results are merged into one, and a `{"role": "system"}` entry of `messages` is a positioned
 * system message. A `tool_reference` in a `tool_result` is kept as an opaque item. Fails when a
 * `tool_result` holds other content than text, images and tool references (documents, search
 * results) or an image from a file source, which no neutral block can carry. Other unknown
 * blocks, server tools and unknown fields are kept opaque.
 */
export const fromAnthropicRequest = (
  req: Anthropic.MessagesRequest
): Either.Either<N.NeutralRequest, TranslationError> => {
  const instructions = req.system === undefined
    ? []
    : Predicate.isString(req.system)
    ? textBlocks(req.system)
    : req.system.map(anthropicText)
  const messages: Array<N.ConversationEntry> = []
  for (const message of req.messages) {
    if (message.role === "system") {
      const content = message.content
      messages.push({
        role: "system",
        blocks: Predicate.isString(content) ? textBlocks(content) : content.map(anthropicText)
      })
      continue
    }
    const blocks = anthropicBlocks(message.content)
    if (Either.isLeft(blocks)) return Either.left(blocks.left)
    const next: N.NeutralMessage = { role: message.role, blocks: blocks.right }
    const last = messages[messages.length - 1]
    // Consecutive tool-result-only user messages are one message, as consecutive OpenAI tool messages are.
    if (isToolResultMessage(next) && isToolResultMessage(last)) {
      messages[messages.length - 1] = { role: "user", blocks: [...last.blocks, ...next.blocks] }
    } else messages.push(next)
  }
  const tools: Array<N.NeutralTool> = []
  const opaqueTools: Array<N.OpaqueTool> = []
  for (const tool of req.tools ?? []) {
    if (isAnthropicCustomTool(tool)) {
      tools.push({
        name: tool.name,
        parameters: tool.input_schema,
        ...(tool.description !== undefined ? { description: tool.description } : {}),
        ...withCache(tool.cache_control)
      })
    } else opaqueTools.push({ format: "anthropic_messages", value: tool })
  }
  const extra: Record<string, unknown> = { ...extraFields(req, anthropicMappedFields) }
  let responseFormat: N.NeutralResponseFormat | undefined
  if (req.output_config !== undefined) {
    const { format, ...rest } = req.output_config
    if (format !== undefined && format !== null && format.type === "json_schema") {
      responseFormat = { type: "json_schema", name: "output", schema: format.schema ?? {} }
    }
    if (Object.keys(rest).length > 0) extra["output_config"] = rest
  }
  const disableParallel = req.tool_choice?.disable_parallel_tool_use
  const user = req.metadata?.user_id
  const request: N.NeutralRequest = {
    model: req.model,
    instructions,
    messages,
    tools,
    opaqueTools,
    stop: req.stop_sequences ?? [],
    stream: req.stream === true,
    maxOutputTokens: req.max_tokens,
    extra,
    ...(req.tool_choice !== undefined ? { toolChoice: anthropicToolChoice(req.tool_choice) } : {}),
    ...(disableParallel !== undefined ? { parallelToolCalls: !disableParallel } : {}),
    ...(req.temperature !== undefined ? { temperature: req.temperature } : {}),
    ...(req.top_p !== undefined ? { topP: req.top_p } : {}),
    ...(responseFormat !== undefined ? { responseFormat } : {}),
    ...(user !== undefined && user !== null ? { user } : {})
  }
  return Either.right(request)
}
