/**
 * Responses request → neutral ({@link fromResponsesRequest}) and the Responses-only fields kept for
 * a Responses upstream; the rules are in the module notes of {@link module:TranslateResponses}.
 */
import * as Either from "effect/Either"
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"
import type { TranslationError } from "../../Errors.js"
import { clip } from "../../Excerpt.js"
import type * as N from "../../Neutral.js"
import * as R from "../../OpenAiResponses.js"
import { callBlock, contentBlocks, isMessageItem, reasoningBlock } from "./responsesItems.js"
import { customToolParameters, flatToolName } from "./responsesToolNames.js"
import { emptyObjectSchema, fail, isToolResultMessage, ofType, present, requestArguments } from "./shared.js"

const isFunctionTool = Schema.is(R.FunctionTool)
const isCustomTool = Schema.is(R.CustomTool)
const isNamespaceTool = Schema.is(R.NamespaceTool)
const isAdditionalToolsItem = Schema.is(R.AdditionalToolsItem)

/**
 * Top-level Responses fields only a Responses upstream understands: kept in `responses.fields`
 * (never forwarded to Chat or Messages), written back by `toResponsesRequest`.
 */
export const responsesOnlyFields: ReadonlyArray<string> = [
  "include",
  "client_metadata",
  "previous_response_id",
  "conversation",
  "prompt",
  "background",
  "truncation",
  "max_tool_calls",
  "top_logprobs",
  "context_management",
  "prompt_cache_options",
  "moderation"
]

const mappedFields: ReadonlyArray<string> = [
  "model",
  "input",
  "instructions",
  "tools",
  "tool_choice",
  "parallel_tool_calls",
  "text",
  "max_output_tokens",
  "reasoning",
  "temperature",
  "top_p",
  "stream",
  "user"
]

const systemTexts = (item: R.MessageItem): Either.Either<ReadonlyArray<N.Text>, TranslationError> => {
  const blocks = contentBlocks(item.content)
  const texts: Array<N.Text> = []
  for (const block of blocks) {
    if (block._tag !== "Text") return fail(`a ${item.role} message with a non-text part cannot be translated`)
    texts.push(block)
  }
  return Either.right(texts)
}

const toolChoiceOf = (choice: R.ToolChoice): N.NeutralToolChoice => {
  if (choice === "auto") return { _tag: "Auto" }
  if (choice === "required") return { _tag: "Required" }
  if (choice === "none") return { _tag: "None" }
  if (ofType(choice, "function") || ofType(choice, "custom")) return { _tag: "Tool", name: choice.name }
  return { _tag: "Opaque", format: "openai_responses", value: choice }
}

const neutralFunctionTool = (tool: R.FunctionTool, name: string): N.NeutralTool => ({
  name,
  parameters: tool.parameters ?? emptyObjectSchema,
  ...(present(tool.description) ? { description: tool.description } : {}),
  ...(present(tool.strict) ? { strict: tool.strict } : {})
})

const neutralCustomTool = (tool: R.CustomTool, name: string): N.NeutralTool => ({
  name,
  parameters: customToolParameters,
  custom: tool.format !== undefined ? { format: tool.format } : {},
  ...(tool.description !== undefined ? { description: tool.description } : {})
})

const neutralTools = (
  tools: ReadonlyArray<R.Tool>
): { readonly tools: ReadonlyArray<N.NeutralTool>; readonly opaque: ReadonlyArray<N.OpaqueTool> } => {
  const out: Array<N.NeutralTool> = []
  const opaque: Array<N.OpaqueTool> = []
  for (const tool of tools) {
    if (isFunctionTool(tool)) out.push(neutralFunctionTool(tool, tool.name))
    else if (isCustomTool(tool)) out.push(neutralCustomTool(tool, tool.name))
    else if (isNamespaceTool(tool)) {
      for (const child of tool.tools) {
        const namespaced = {
          namespace: tool.name,
          name: child.name,
          ...(tool.description !== undefined ? { namespaceDescription: tool.description } : {})
        }
        const flat = flatToolName(tool.name, child.name)
        const base = isCustomTool(child) ? neutralCustomTool(child, flat) : neutralFunctionTool(child, flat)
        out.push({ ...base, namespaced })
      }
    } else opaque.push({ format: "openai_responses", value: tool })
  }
  return { tools: out, opaque }
}

const uniqueNames = (tools: ReadonlyArray<N.NeutralTool>): Either.Either<void, TranslationError> => {
  const seen = new Set<string>()
  for (const tool of tools) {
    if (seen.has(tool.name)) return fail(`two tools are named ${clip(tool.name)} once namespaces are flattened`)
    seen.add(tool.name)
  }
  return Either.void
}

const responseFormatOf = (format: R.TextFormat): N.NeutralResponseFormat =>
  ofType(format, "json_schema")
    ? {
      type: "json_schema",
      name: format.name,
      schema: format.schema,
      ...(format.description !== undefined ? { description: format.description } : {}),
      ...(present(format.strict) ? { strict: format.strict } : {})
    }
    : { type: format.type }

/**
 * A Responses request in neutral form (rules in the module notes). Fails with a
 * {@link TranslationError} when a system / developer message holds a non-text part, when two
 * tools have the same name once namespaces are flattened, or when a `function_call` item's
 * arguments nest deeper than `Nesting.maxDepth` (naming `input[i].arguments`). Never fails for what only some targets
 * cannot take (`previous_response_id`, hosted tools…): `portable` decides that per target.
 */
export const fromResponsesRequest = (req: R.ResponsesRequest): Either.Either<N.NeutralRequest, TranslationError> =>
  Either.gen(() => fromResponsesRequestSteps(req))

/** The steps of {@link fromResponsesRequest}: a generator made once (docs/architecture.md). */
const fromResponsesRequestSteps = function*(req: R.ResponsesRequest) {
  const field = present(req.instructions) && req.instructions !== ""
  const conversation: Conversation = {
    instructions: field && present(req.instructions) ? [{ _tag: "Text", text: req.instructions }] : [],
    layoutItems: [],
    additionalItems: [],
    additionalTools: [],
    messages: []
  }
  yield* readItems(conversation, inputItemsOf(req))
  const { opaque, tools: declared } = neutralTools(req.tools ?? [])
  const added = additionalToolsOf(conversation.additionalTools)
  const tools = [...declared, ...added]
  yield* uniqueNames(tools)
  return requestOf(req, conversation, field, { tools, opaque, added })
}

/** The input items of a request: a string input is one user message. */
const inputItemsOf = (req: R.ResponsesRequest): ReadonlyArray<R.InputItem> =>
  req.input === undefined
    ? []
    : Predicate.isString(req.input)
    ? [{ role: "user", content: req.input }]
    : req.input

/** What the input items become, filled item by item by {@link readItems}. */
interface Conversation {
  /** The `instructions` field's text, then the texts of the system / developer messages before any other. */
  readonly instructions: Array<N.Text>
  /** Those leading system / developer messages: their role and how many texts each gave. */
  readonly layoutItems: Array<{ readonly role: "system" | "developer"; readonly texts: number }>
  /** The `additional_tools` items, and where they stood. */
  readonly additionalItems: Array<{ readonly item: unknown; readonly leadingItems: number; readonly messages: number }>
  /** The tools those items declare, in order. */
  readonly additionalTools: Array<R.Tool>
  /** The conversation after the leading instructions. */
  readonly messages: Array<N.ConversationEntry>
}

/** Adds `block` to the conversation's last message when it is the assistant's, else as a new assistant message. */
const toAssistant = (messages: Array<N.ConversationEntry>, block: N.Block): void => {
  const last = messages[messages.length - 1]
  if (last !== undefined && last.role === "assistant") {
    messages[messages.length - 1] = { role: "assistant", blocks: [...last.blocks, block] }
  } else messages.push({ role: "assistant", blocks: [block] })
}

/** Adds `result` to the conversation's last message when it holds tool results only, else as a new user message. */
const toResults = (messages: Array<N.ConversationEntry>, result: N.ToolResult): void => {
  const last = messages[messages.length - 1]
  if (isToolResultMessage(last)) messages[messages.length - 1] = { role: "user", blocks: [...last.blocks, result] }
  else messages.push({ role: "user", blocks: [result] })
}

/** Reads every input item into `conversation`; the first item that cannot be translated fails it. */
const readItems = (
  conversation: Conversation,
  items: ReadonlyArray<R.InputItem>
): Either.Either<void, TranslationError> => {
  for (let index = 0; index < items.length; index++) {
    const item = items[index]
    if (item === undefined) continue
    const read = isMessageItem(item) ? readMessage(conversation, item) : readOtherItem(conversation, item, index)
    if (Either.isLeft(read)) return read
  }
  return Either.void
}

/** A message item: leading system / developer texts go to the instructions, others to the conversation. */
const readMessage = (conversation: Conversation, item: R.MessageItem): Either.Either<void, TranslationError> => {
  const messages = conversation.messages
  switch (item.role) {
    case "system":
    case "developer": {
      const texts = systemTexts(item)
      if (Either.isLeft(texts)) return Either.left(texts.left)
      if (messages.length === 0) {
        conversation.instructions.push(...texts.right)
        conversation.layoutItems.push({ role: item.role, texts: texts.right.length })
      } else messages.push({ role: "system", blocks: texts.right })
      break
    }
    case "user":
      messages.push({ role: "user", blocks: contentBlocks(item.content) })
      break
    case "assistant":
      for (const block of contentBlocks(item.content)) toAssistant(messages, block)
      break
  }
  return Either.void
}

/** An input item other than a message (`index`: its place in `input`): a call, an output, reasoning, tools or opaque. */
const readOtherItem = (
  conversation: Conversation,
  item: R.InputItem,
  index: number
): Either.Either<void, TranslationError> => {
  const messages = conversation.messages
  if (ofType(item, "function_call")) {
    const args = requestArguments(item.arguments, `input[${index}].arguments`)
    if (Either.isLeft(args)) return Either.left(args.left)
    toAssistant(messages, callBlock(item, args.right))
  } else if (ofType(item, "custom_tool_call")) toAssistant(messages, callBlock(item))
  else if (ofType(item, "reasoning")) toAssistant(messages, reasoningBlock(item))
  else if (ofType(item, "function_call_output") || ofType(item, "custom_tool_call_output")) {
    toResults(messages, {
      _tag: "ToolResult",
      toolUseId: item.call_id,
      content: contentBlocks(item.output),
      isError: false,
      ...(item.type === "custom_tool_call_output" ? { custom: true } : {})
    })
  } else if (isAdditionalToolsItem(item)) {
    conversation.additionalItems.push({
      item,
      leadingItems: conversation.layoutItems.length,
      messages: messages.length
    })
    conversation.additionalTools.push(...item.tools)
  } else toAssistant(messages, { _tag: "Opaque", format: "openai_responses", value: item })
  return Either.void
}

/**
 * The function and custom tools of the additional_tools items, one per name. Hosted tools of an
 * additional_tools item stay in the item only (a Responses upstream); a tool declared again by a
 * later item (a conversation's history) is that later declaration.
 */
const additionalToolsOf = (additionalTools: ReadonlyArray<R.Tool>): ReadonlyArray<N.NeutralTool> => {
  const byName = new Map<string, N.NeutralTool>()
  for (const tool of neutralTools(additionalTools).tools) byName.set(tool.name, tool)
  return [...byName.values()]
}

/** The request's other top-level fields: the Responses-only ones, the unmapped (`extra`) and the text format. */
const fieldsOf = (req: R.ResponsesRequest): {
  readonly extra: Record<string, unknown>
  readonly fields: Record<string, unknown>
  readonly responseFormat: N.NeutralResponseFormat | undefined
} => {
  const extra: Record<string, unknown> = {}
  const fields: Record<string, unknown> = {}
  const entries: ReadonlyArray<readonly [string, unknown]> = Object.entries(req)
  for (const [key, value] of entries) {
    if (mappedFields.includes(key)) continue
    if (responsesOnlyFields.includes(key)) fields[key] = value
    else extra[key] = value
  }
  if (req.reasoning === null) fields["reasoning"] = null
  else if (req.reasoning !== undefined) {
    const { effort, ...rest } = req.reasoning
    if (present(effort)) extra["reasoning_effort"] = effort
    const kept = effort === null ? { ...rest, effort: null } : rest
    if (Object.keys(kept).length > 0 || effort === undefined) fields["reasoning"] = kept
  }
  let responseFormat: N.NeutralResponseFormat | undefined
  if (req.text === null) fields["text"] = null
  else if (req.text !== undefined) {
    const { format, verbosity, ...rest } = req.text
    if (format !== undefined) responseFormat = responseFormatOf(format)
    if (present(verbosity)) extra["verbosity"] = verbosity
    const kept = verbosity === null ? { ...rest, verbosity: null } : rest
    if (Object.keys(kept).length > 0 || (format === undefined && verbosity === undefined)) fields["text"] = kept
  }
  return { extra, fields, responseFormat }
}

/** The neutral request of `req`, its conversation read and its tools checked (`field`: it had non-empty `instructions`). */
const requestOf = (
  req: R.ResponsesRequest,
  conversation: Conversation,
  field: boolean,
  declared: {
    readonly tools: ReadonlyArray<N.NeutralTool>
    readonly opaque: ReadonlyArray<N.OpaqueTool>
    readonly added: ReadonlyArray<N.NeutralTool>
  }
): N.NeutralRequest => {
  const { extra, fields, responseFormat } = fieldsOf(req)
  const additionalItems = conversation.additionalItems
  return {
    model: req.model,
    instructions: conversation.instructions,
    messages: conversation.messages,
    tools: declared.tools,
    opaqueTools: declared.opaque,
    stop: [],
    stream: req.stream === true,
    extra,
    responses: {
      fields,
      instructionLayout: { field, items: conversation.layoutItems },
      ...(additionalItems.length > 0
        ? { additionalTools: { items: additionalItems, toolNames: declared.added.map((tool) => tool.name) } }
        : {})
    },
    ...(req.tool_choice !== undefined ? { toolChoice: toolChoiceOf(req.tool_choice) } : {}),
    ...(present(req.parallel_tool_calls) ? { parallelToolCalls: req.parallel_tool_calls } : {}),
    ...(present(req.max_output_tokens) ? { maxOutputTokens: req.max_output_tokens } : {}),
    ...(present(req.temperature) ? { temperature: req.temperature } : {}),
    ...(present(req.top_p) ? { topP: req.top_p } : {}),
    ...(responseFormat !== undefined ? { responseFormat } : {}),
    ...(req.user !== undefined ? { user: req.user } : {})
  }
}
