/**
 * OpenAI Chat request → neutral ({@link fromOpenAiRequest}); the rules are in the module notes
 * of {@link module:Translate}.
 */
import * as Either from "effect/Either"
import * as Predicate from "effect/Predicate"
import type { TranslationError } from "../../Errors.js"
import type * as N from "../../Neutral.js"
import type * as OpenAi from "../../OpenAiChat.js"
import { openAiThinking, openAiToolUse } from "./chatAssistant.js"
import {
  emptyObjectSchema,
  extraFields,
  fail,
  isToolResultMessage,
  ofType,
  parseDataUrl,
  requestArguments,
  stringField,
  textBlocks
} from "./shared.js"

const openAiMappedFields: ReadonlyArray<string> = [
  "model",
  "messages",
  "tools",
  "tool_choice",
  "parallel_tool_calls",
  "response_format",
  "max_tokens",
  "max_completion_tokens",
  "temperature",
  "top_p",
  "stop",
  "stream",
  "user"
]

const openAiTextContent = (content: string | ReadonlyArray<typeof OpenAi.TextPart.Type>): ReadonlyArray<N.Text> =>
  Predicate.isString(content) ? textBlocks(content) : content.map((part) => ({ _tag: "Text", text: part.text }))

const openAiImage = (part: typeof OpenAi.ImagePart.Type): N.Image => ({
  _tag: "Image",
  source: parseDataUrl(part.image_url.url) ?? { kind: "url", url: part.image_url.url },
  ...(part.image_url.detail !== undefined ? { detail: part.image_url.detail } : {})
})

const openAiUserBlocks = (content: string | ReadonlyArray<OpenAi.ContentPart>): ReadonlyArray<N.Block> =>
  Predicate.isString(content) ? textBlocks(content) : content.map((part): N.Block => {
    if (ofType(part, "text")) return { _tag: "Text", text: part.text }
    if (ofType(part, "image_url")) return openAiImage(part)
    return { _tag: "Opaque", format: "openai_chat", value: part }
  })

/** The blocks of the assistant message at `messages[index]`. */
const openAiAssistantBlocks = (
  message: typeof OpenAi.AssistantMessage.Type,
  index: number
): Either.Either<ReadonlyArray<N.Block>, TranslationError> => {
  if (message.function_call !== undefined && message.function_call !== null) {
    return fail("a deprecated assistant function_call cannot be translated; use tool_calls")
  }
  const blocks: Array<N.Block> = [...openAiThinking(message.thinking_blocks, stringField(message, "reasoning_content"))]
  const content = message.content
  if (Predicate.isString(content)) blocks.push(...textBlocks(content))
  else if (content !== undefined && content !== null) {
    for (const part of content) blocks.push({ _tag: "Text", text: part.type === "text" ? part.text : part.refusal })
  }
  if (message.refusal !== undefined && message.refusal !== null && message.refusal !== "") {
    blocks.push({ _tag: "Text", text: message.refusal })
  }
  const calls = message.tool_calls ?? []
  for (let j = 0; j < calls.length; j++) {
    const call = calls[j]
    if (call === undefined) continue
    if (call.type !== "function") {
      blocks.push({ _tag: "Opaque", format: "openai_chat", value: call })
      continue
    }
    const read = requestArguments(call.function.arguments, `messages[${index}].tool_calls[${j}].function.arguments`)
    if (Either.isLeft(read)) return Either.left(read.left)
    blocks.push(openAiToolUse(call, read.right))
  }
  return Either.right(blocks)
}

const openAiToolChoice = (choice: typeof OpenAi.ToolChoice.Type): N.NeutralToolChoice => {
  if (choice === "auto") return { _tag: "Auto" }
  if (choice === "required") return { _tag: "Required" }
  if (choice === "none") return { _tag: "None" }
  if (choice.type === "function") return { _tag: "Tool", name: choice.function.name }
  return { _tag: "Opaque", format: "openai_chat", value: choice }
}

const openAiResponseFormat = (format: typeof OpenAi.ResponseFormat.Type): N.NeutralResponseFormat => {
  switch (format.type) {
    case "text":
    case "json_object":
      return { type: format.type }
    case "json_schema": {
      const js = format.json_schema
      return {
        type: "json_schema",
        name: js.name,
        schema: js.schema ?? {},
        ...(js.description !== undefined ? { description: js.description } : {}),
        ...(js.strict !== undefined && js.strict !== null ? { strict: js.strict } : {})
      }
    }
  }
}

/**
 * An OpenAI Chat request in neutral form. System / developer messages before the first other
 * message are `instructions`; later ones stay in place as positioned system messages. Fails for
 * the deprecated `function_call` / `role: "function"` messages (no tool-call id to pair them by),
 * and for tool-call arguments nesting deeper than `Nesting.maxDepth` (the message names their
 * path, `messages[i].tool_calls[j].function.arguments`). Other tool-call arguments that are not a
 * JSON object are kept (`input` is then not an object) and fail later, in `toAnthropicRequest`.
 */
export const fromOpenAiRequest = (
  req: OpenAi.ChatCompletionRequest
): Either.Either<N.NeutralRequest, TranslationError> => Either.gen(() => fromOpenAiRequestSteps(req))

/** The steps of {@link fromOpenAiRequest}: a generator made once (docs/architecture.md). */
const fromOpenAiRequestSteps = function*(req: OpenAi.ChatCompletionRequest) {
  const instructions: Array<N.Text> = []
  const messages: Array<N.ConversationEntry> = []
  for (let index = 0; index < req.messages.length; index++) {
    const message = req.messages[index]
    if (message === undefined) continue
    switch (message.role) {
      case "system":
      case "developer":
        if (messages.length === 0) instructions.push(...openAiTextContent(message.content))
        else messages.push({ role: "system", blocks: openAiTextContent(message.content) })
        break
      case "user":
        messages.push({ role: "user", blocks: openAiUserBlocks(message.content) })
        break
      case "assistant":
        messages.push({ role: "assistant", blocks: yield* openAiAssistantBlocks(message, index) })
        break
      case "tool": {
        const result: N.ToolResult = {
          _tag: "ToolResult",
          toolUseId: message.tool_call_id,
          content: openAiTextContent(message.content),
          isError: false
        }
        const last = messages[messages.length - 1]
        if (isToolResultMessage(last)) {
          messages[messages.length - 1] = { role: "user", blocks: [...last.blocks, result] }
        } else messages.push({ role: "user", blocks: [result] })
        break
      }
      case "function":
        return yield* fail("a deprecated role \"function\" message cannot be translated; use role \"tool\"")
    }
  }
  const tools: Array<N.NeutralTool> = []
  const opaqueTools: Array<N.OpaqueTool> = []
  for (const tool of req.tools ?? []) {
    if (tool.type === "function") {
      const f = tool.function
      tools.push({
        name: f.name,
        parameters: f.parameters ?? emptyObjectSchema,
        ...(f.description !== undefined ? { description: f.description } : {}),
        ...(f.strict !== undefined && f.strict !== null ? { strict: f.strict } : {})
      })
    } else {
      opaqueTools.push({ format: "openai_chat", value: tool })
    }
  }
  const maxOutputTokens = req.max_completion_tokens ?? req.max_tokens
  const stop = req.stop === undefined || req.stop === null ? [] : Predicate.isString(req.stop) ? [req.stop] : req.stop
  const request: N.NeutralRequest = {
    model: req.model,
    instructions,
    messages,
    tools,
    opaqueTools,
    stop,
    stream: req.stream === true,
    extra: extraFields(req, openAiMappedFields),
    ...(req.tool_choice !== undefined ? { toolChoice: openAiToolChoice(req.tool_choice) } : {}),
    ...(req.parallel_tool_calls !== undefined ? { parallelToolCalls: req.parallel_tool_calls } : {}),
    ...(maxOutputTokens !== undefined && maxOutputTokens !== null ? { maxOutputTokens } : {}),
    ...(req.temperature !== undefined && req.temperature !== null ? { temperature: req.temperature } : {}),
    ...(req.top_p !== undefined && req.top_p !== null ? { topP: req.top_p } : {}),
    ...(req.response_format !== undefined ? { responseFormat: openAiResponseFormat(req.response_format) } : {}),
    ...(req.user !== undefined ? { user: req.user } : {})
  }
  return request
}
