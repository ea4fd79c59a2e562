/**
 * Neutral → OpenAI Chat request ({@link toOpenAiRequest}): system messages as single strings,
 * tool results as `tool` messages, thinking as `reasoning_content` / `thinking_blocks`; the rules
 * are in the module notes of {@link module:Translate}.
 */
import * as Schema from "effect/Schema"
import * as Anthropic from "../../AnthropicMessages.js"
import type * as N from "../../Neutral.js"
import * as OpenAi from "../../OpenAiChat.js"
import { assistantParts, toOpenAiThinking } from "./chatAssistant.js"
import {
  anthropicOnlyFields,
  billingHeaderPrefix,
  openAiUser,
  systemTextSeparator,
  toolReferenceText
} from "./constants.js"
import { extraFields, imageUrl, ofType } from "./shared.js"

const isToolReference = Schema.is(Anthropic.ToolReferenceBlock)

/**
 * The content of a system message written to OpenAI: its texts, minus the billing header ones,
 * joined with {@link systemTextSeparator}; `undefined` when every text was a billing header.
 */
const openAiSystemContent = (texts: ReadonlyArray<N.Text>): string | undefined => {
  const kept = texts.filter((t) => !t.text.startsWith(billingHeaderPrefix))
  return kept.length === 0 && texts.length > 0 ? undefined : kept.map((t) => t.text).join(systemTextSeparator)
}

type OpenAiTextPart = typeof OpenAi.TextPart.Type
const isOpenAiContentPart = Schema.is(OpenAi.ContentPart)
const isOpenAiTool = Schema.is(OpenAi.Tool)
const isOpenAiToolChoice = Schema.is(OpenAi.ToolChoice)

const textPart = (text: string): OpenAiTextPart => ({ type: "text", text })

/** One text → a string; no text → `""`; otherwise text parts. */
const openAiText = (texts: ReadonlyArray<string>): string | ReadonlyArray<OpenAiTextPart> =>
  texts.length === 0 ? "" : texts.length === 1 ? (texts[0] ?? "") : texts.map(textPart)

const openAiImagePart = (image: N.Image): OpenAi.ContentPart => ({
  type: "image_url",
  image_url: { url: imageUrl(image.source), ...(image.detail !== undefined ? { detail: image.detail } : {}) }
})

const openAiUserContent = (parts: ReadonlyArray<OpenAi.ContentPart>): string | ReadonlyArray<OpenAi.ContentPart> => {
  if (parts.length === 0) return ""
  const only = parts[0]
  return parts.length === 1 && only !== undefined && ofType(only, "text") ? only.text : parts
}

const openAiUserMessages = (blocks: ReadonlyArray<N.Block>): ReadonlyArray<OpenAi.Message> => {
  const out: Array<OpenAi.Message> = []
  const parts: Array<OpenAi.ContentPart> = []
  let results = 0
  for (const block of blocks) {
    switch (block._tag) {
      case "ToolResult": {
        results++
        const texts: Array<string> = []
        for (const item of block.content) {
          if (item._tag === "Text") texts.push(item.text)
          else if (item._tag === "Image") parts.push(openAiImagePart(item))
          else if (isToolReference(item.value)) texts.push(toolReferenceText(item.value.tool_name))
        }
        out.push({ role: "tool", tool_call_id: block.toolUseId, content: openAiText(texts) })
        break
      }
      case "Text":
        parts.push(textPart(block.text))
        break
      case "Image":
        parts.push(openAiImagePart(block))
        break
      case "Opaque":
        if (block.format === "openai_chat" && isOpenAiContentPart(block.value)) parts.push(block.value)
        break
      case "ToolUse":
      case "Thinking":
      case "RedactedThinking":
      case "Reasoning":
        break
    }
  }
  if (parts.length > 0 || results === 0) out.push({ role: "user", content: openAiUserContent(parts) })
  return out
}

const openAiAssistantMessage = (blocks: ReadonlyArray<N.Block>): OpenAi.Message => {
  const { calls, texts, thinking } = assistantParts(blocks)
  return {
    role: "assistant",
    content: texts.length === 0 && calls.length > 0 ? null : openAiText(texts),
    ...(calls.length > 0 ? { tool_calls: calls } : {}),
    ...toOpenAiThinking(thinking)
  }
}

const toOpenAiToolChoice = (choice: N.NeutralToolChoice): typeof OpenAi.ToolChoice.Type | undefined => {
  switch (choice._tag) {
    case "Auto":
      return "auto"
    case "Required":
      return "required"
    case "None":
      return "none"
    case "Tool":
      return { type: "function", function: { name: choice.name } }
    case "Opaque":
      return choice.format === "openai_chat" && isOpenAiToolChoice(choice.value) ? choice.value : undefined
  }
}

const toOpenAiResponseFormat = (format: N.NeutralResponseFormat): typeof OpenAi.ResponseFormat.Type =>
  format.type === "json_schema"
    ? {
      type: "json_schema",
      json_schema: {
        name: format.name,
        schema: format.schema,
        ...(format.description !== undefined ? { description: format.description } : {}),
        ...(format.strict !== undefined ? { strict: format.strict } : {})
      }
    }
    : { type: format.type }

/**
 * A neutral request as an OpenAI Chat request. Total: what OpenAI cannot express is dropped (see
 * the module notes). Instructions become one leading `system` message and each positioned system
 * message a `system` message at its place, each a single string (texts joined with
 * {@link systemTextSeparator}, billing header texts left out, a message of billing header texts
 * only left out); `user` is written only up to `maxOpenAiUserLength` characters; tool results become
 * `role: "tool"` messages, one per block, in order; thinking becomes `reasoning_content` and, when
 * signed or redacted, `thinking_blocks`.
 * The output limit is written as `max_completion_tokens`.
 */
export const toOpenAiRequest = (n: N.NeutralRequest): OpenAi.ChatCompletionRequest => {
  const messages: Array<OpenAi.Message> = []
  const instructions = openAiSystemContent(n.instructions)
  if (n.instructions.length > 0 && instructions !== undefined) messages.push({ role: "system", content: instructions })
  for (const message of n.messages) {
    switch (message.role) {
      case "system": {
        const content = openAiSystemContent(message.blocks)
        if (content !== undefined) messages.push({ role: "system", content })
        break
      }
      case "user":
        messages.push(...openAiUserMessages(message.blocks))
        break
      case "assistant":
        messages.push(openAiAssistantMessage(message.blocks))
        break
    }
  }
  const tools: Array<typeof OpenAi.Tool.Type> = n.tools.map((tool) => ({
    type: "function",
    function: {
      name: tool.name,
      parameters: tool.parameters,
      ...(tool.description !== undefined ? { description: tool.description } : {}),
      ...(tool.strict !== undefined ? { strict: tool.strict } : {})
    }
  }))
  for (const tool of n.opaqueTools) {
    if (tool.format === "openai_chat" && isOpenAiTool(tool.value)) tools.push(tool.value)
  }
  const toolChoice = n.toolChoice === undefined ? undefined : toOpenAiToolChoice(n.toolChoice)
  return {
    ...extraFields(n.extra, anthropicOnlyFields),
    model: n.model,
    messages,
    ...(tools.length > 0 ? { tools } : {}),
    ...(toolChoice !== undefined ? { tool_choice: toolChoice } : {}),
    ...(n.parallelToolCalls !== undefined ? { parallel_tool_calls: n.parallelToolCalls } : {}),
    ...(n.responseFormat !== undefined ? { response_format: toOpenAiResponseFormat(n.responseFormat) } : {}),
    ...(n.maxOutputTokens !== undefined ? { max_completion_tokens: n.maxOutputTokens } : {}),
    ...(n.temperature !== undefined ? { temperature: n.temperature } : {}),
    ...(n.topP !== undefined ? { top_p: n.topP } : {}),
    ...(n.stop.length > 0 ? { stop: n.stop } : {}),
    ...(n.stream ? { stream: true } : {}),
    ...openAiUser(n.user)
  }
}
