/**
 * Neutral → Responses request ({@link toResponsesRequest}): instructions and system messages as
 * `developer` items (or their original layout), turns as message, call, output and reasoning
 * items, tools with their namespaces; the rules are in the module notes of
 * {@link module:TranslateResponses}.
 */
import * as Either from "effect/Either"
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"
import type { TranslationError } from "../../Errors.js"
import { clip } from "../../Excerpt.js"
import type * as N from "../../Neutral.js"
import * as R from "../../OpenAiResponses.js"
import * as Translate from "../../Translate.js"
import { openAiUser } from "./constants.js"
import { callItem, reasoningItem, syntheticReasoningPrefix } from "./responsesItems.js"
import { type ToolMap, toolMap } from "./responsesToolNames.js"
import { extraFields, fail, formatLabel, imageUrl, singleChoice, typeOf } from "./shared.js"

const isNamespaceTool = Schema.is(R.NamespaceTool)
const isHostedTool = Schema.is(R.HostedTool)
const isResponsesContentPart = Schema.is(R.ContentPart)
const isResponsesInputItem = Schema.is(R.InputItem)
const isResponsesToolChoice = Schema.is(R.ToolChoice)

/** Chat Completions fields with no Responses meaning: `toResponsesRequest` drops them from `extra`. */
export const chatOnlyFields: ReadonlyArray<string> = [
  "n",
  "presence_penalty",
  "frequency_penalty",
  "logit_bias",
  "logprobs",
  "top_logprobs",
  "seed",
  "modalities",
  "audio",
  "prediction",
  "web_search_options",
  "functions",
  "function_call",
  "reasoning_effort",
  "verbosity"
]

const describeForeign = (format: N.WireFormat, value: unknown): string =>
  `${formatLabel(format)} ${clip(typeOf(value))} block`

const inputText = (text: string): R.InputText => ({ type: "input_text", text })

const systemItem = (role: "system" | "developer", texts: ReadonlyArray<N.Text>): R.InputItem => ({
  type: "message",
  role,
  content: texts.map((t) => inputText(t.text))
})

const responsesPart = (
  block: N.Text | N.Image | N.Opaque,
  to: string
): Either.Either<R.ContentPart, TranslationError> => {
  switch (block._tag) {
    case "Text":
      return Either.right(inputText(block.text))
    case "Image":
      return Either.right({
        type: "input_image",
        image_url: imageUrl(block.source),
        ...(block.detail !== undefined ? { detail: block.detail } : {})
      })
    case "Opaque":
      return block.format === "openai_responses" && isResponsesContentPart(block.value)
        ? Either.right(block.value)
        : fail(`${describeForeign(block.format, block.value)} cannot be sent to ${to}`)
  }
}

const responsesToolOutput = (
  content: ReadonlyArray<N.Text | N.Image | N.Opaque>
): Either.Either<R.ToolOutput, TranslationError> => Either.gen(() => responsesToolOutputSteps(content))

/** The steps of {@link responsesToolOutput}: a generator made once (docs/architecture.md). */
const responsesToolOutputSteps = function*(content: ReadonlyArray<N.Text | N.Image | N.Opaque>) {
  const only = content[0]
  if (content.length === 0) return ""
  if (content.length === 1 && only !== undefined && only._tag === "Text") return only.text
  const parts: Array<R.ContentPart> = []
  for (const item of content) {
    // An Anthropic tool_reference (a tool loaded by tool search) reads as text, as for Chat.
    if (item._tag === "Opaque" && item.format === "anthropic_messages" && typeOf(item.value) === "tool_reference") {
      parts.push(inputText(Translate.toolReferenceText(toolNameOf(item.value))))
    } else parts.push(yield* responsesPart(item, "an openai_responses upstream"))
  }
  return parts
}

const toolNameOf = (value: unknown): string => {
  const name = Predicate.isRecord(value) ? value["tool_name"] : undefined
  return Predicate.isString(name) ? name : ""
}

const isSyntheticReasoning = (block: N.Reasoning): boolean =>
  block.encryptedContent === undefined && (block.id === undefined || block.id.startsWith(syntheticReasoningPrefix))

const assistantItems = (
  blocks: ReadonlyArray<N.Block>,
  tools: ToolMap
): Either.Either<ReadonlyArray<R.InputItem>, TranslationError> => Either.gen(() => assistantItemsSteps(blocks, tools))

/** The steps of {@link assistantItems}: a generator made once (docs/architecture.md). */
const assistantItemsSteps = function*(blocks: ReadonlyArray<N.Block>, tools: ToolMap) {
  const out: Array<R.InputItem> = []
  let texts: Array<R.OutputText> = []
  const flush = () => {
    if (texts.length > 0) out.push({ type: "message", role: "assistant", content: texts })
    texts = []
  }
  for (const block of blocks) {
    switch (block._tag) {
      case "Text":
        texts.push({ type: "output_text", text: block.text })
        continue
      case "ToolUse":
        flush()
        out.push(callItem(block, tools))
        continue
      case "Reasoning":
        flush()
        if (!isSyntheticReasoning(block)) out.push(reasoningItem(block))
        continue
      case "Opaque":
        flush()
        if (block.format === "openai_responses" && isResponsesInputItem(block.value)) out.push(block.value)
        else {return yield* fail(
            `${describeForeign(block.format, block.value)} cannot be sent to an openai_responses upstream`
          )}
        continue
      case "Thinking":
      case "RedactedThinking":
      case "Image":
      case "ToolResult":
        continue
    }
  }
  flush()
  return out
}

const userItems = (blocks: ReadonlyArray<N.Block>): Either.Either<ReadonlyArray<R.InputItem>, TranslationError> =>
  Either.gen(() => userItemsSteps(blocks))

/** The steps of {@link userItems}: a generator made once (docs/architecture.md). */
const userItemsSteps = function*(blocks: ReadonlyArray<N.Block>) {
  const out: Array<R.InputItem> = []
  let parts: Array<R.ContentPart> = []
  let wrote = false
  const flush = () => {
    if (parts.length > 0) out.push({ type: "message", role: "user", content: parts })
    if (parts.length > 0) wrote = true
    parts = []
  }
  for (const block of blocks) {
    switch (block._tag) {
      case "ToolResult": {
        flush()
        const output = yield* responsesToolOutput(block.content)
        out.push(
          block.custom === true
            ? { type: "custom_tool_call_output", call_id: block.toolUseId, output }
            : { type: "function_call_output", call_id: block.toolUseId, output }
        )
        wrote = true
        continue
      }
      case "Text":
      case "Image":
      case "Opaque":
        parts.push(yield* responsesPart(block, "an openai_responses upstream"))
        continue
      case "ToolUse":
      case "Thinking":
      case "RedactedThinking":
      case "Reasoning":
        continue
    }
  }
  flush()
  if (!wrote) out.push({ type: "message", role: "user", content: [] })
  return out
}

const toResponsesTools = (n: N.NeutralRequest): ReadonlyArray<R.Tool> => {
  const out: Array<R.Tool> = []
  const single = (tool: N.NeutralTool, name: string): R.FunctionTool | R.CustomTool =>
    tool.custom !== undefined
      ? {
        type: "custom",
        name,
        ...(tool.description !== undefined ? { description: tool.description } : {}),
        ...(tool.custom.format !== undefined ? { format: tool.custom.format } : {})
      }
      : {
        type: "function",
        name,
        ...(tool.description !== undefined ? { description: tool.description } : {}),
        parameters: tool.parameters,
        ...(tool.strict !== undefined ? { strict: tool.strict } : {})
      }
  for (const tool of n.tools) {
    const ns = tool.namespaced
    if (ns === undefined) {
      out.push(single(tool, tool.name))
      continue
    }
    const last = out[out.length - 1]
    const child = single(tool, ns.name)
    if (last !== undefined && isNamespaceTool(last) && last.name === ns.namespace) {
      out[out.length - 1] = { ...last, tools: [...last.tools, child] }
    } else {
      out.push({
        type: "namespace",
        name: ns.namespace,
        ...(ns.namespaceDescription !== undefined ? { description: ns.namespaceDescription } : {}),
        tools: [child]
      })
    }
  }
  for (const tool of n.opaqueTools) {
    if (tool.format === "openai_responses" && isHostedTool(tool.value)) out.push(tool.value)
    else if (tool.format === "openai_chat" && Predicate.isRecord(tool.value) && tool.value["type"] === "custom") {
      // A Chat custom tool is `{"type": "custom", "custom": {name, description?, format?}}`.
      const custom = tool.value["custom"]
      if (Predicate.isRecord(custom) && Predicate.isString(custom["name"])) {
        const description = custom["description"]
        out.push({
          type: "custom",
          name: custom["name"],
          ...(Predicate.isString(description) ? { description } : {}),
          ...(custom["format"] !== undefined ? { format: custom["format"] } : {})
        })
      }
    }
  }
  return out
}

const toResponsesToolChoice = (n: N.NeutralRequest): Either.Either<R.ToolChoice | undefined, TranslationError> => {
  const choice = n.toolChoice
  if (choice === undefined) return Either.right(undefined)
  switch (choice._tag) {
    case "Auto":
      return Either.right("auto")
    case "Required":
      return Either.right("required")
    case "None":
      return Either.right("none")
    case "Tool": {
      const tool = n.tools.find((t) => t.name === choice.name)
      return Either.right({ type: tool?.custom !== undefined ? "custom" : "function", name: choice.name })
    }
    case "Opaque":
      return choice.format === "openai_responses" && isResponsesToolChoice(choice.value)
        ? Either.right(choice.value)
        : fail("this tool_choice cannot be sent to an openai_responses upstream")
  }
}

const toTextFormat = (format: N.NeutralResponseFormat): R.TextFormat =>
  format.type === "json_schema"
    ? {
      type: "json_schema",
      name: format.name,
      schema: format.schema,
      ...(format.description !== undefined ? { description: format.description } : {}),
      ...(format.strict !== undefined ? { strict: format.strict } : {})
    }
    : { type: format.type }

const instructionItems = (
  n: N.NeutralRequest
): { readonly field?: string; readonly items: ReadonlyArray<R.InputItem>; readonly layout: boolean } => {
  const layout = n.responses?.instructionLayout
  const total = layout === undefined
    ? -1
    : (layout.field ? 1 : 0) + layout.items.reduce((sum, item) => sum + item.texts, 0)
  if (layout !== undefined && total === n.instructions.length) {
    let at = layout.field ? 1 : 0
    const items = layout.items.map((item) => {
      const texts = n.instructions.slice(at, at + item.texts)
      at += item.texts
      return systemItem(item.role, texts)
    })
    const first = n.instructions[0]
    return { ...(layout.field && first !== undefined ? { field: first.text } : {}), items, layout: true }
  }
  return { items: n.instructions.length > 0 ? [systemItem("developer", n.instructions)] : [], layout: false }
}

/**
 * The `additional_tools` items of a request that came from Responses, verbatim, by where they go:
 * at `leadingItems` among the leading system / developer items when no message came before, else
 * before message `messages` (at the end when there are not that many).
 */
const additionalItems = (
  n: N.NeutralRequest
): ReadonlyArray<{ readonly item: R.InputItem; readonly leadingItems: number; readonly messages: number }> =>
  (n.responses?.additionalTools?.items ?? []).flatMap((entry) => {
    const item = entry.item
    return isResponsesInputItem(item) ? [{ item, leadingItems: entry.leadingItems, messages: entry.messages }] : []
  })

/**
 * A neutral request as a Responses request (rules and failures in the module notes): `input` is
 * always a list of items, `stream: true` only when streaming.
 */
export const toResponsesRequest = (n: N.NeutralRequest): Either.Either<R.ResponsesRequest, TranslationError> =>
  Either.gen(() => toResponsesRequestSteps(n))

/** The steps of {@link toResponsesRequest}: a generator made once (docs/architecture.md). */
const toResponsesRequestSteps = function*(n: N.NeutralRequest) {
  yield* singleChoice(n, "openai_responses")
  const tools = toolMap(n)
  const { field, items, layout } = instructionItems(n)
  const additional = additionalItems(n)
  const input: Array<R.InputItem> = [...items]
  // Before the first message, an item goes back among the leading items it stood between.
  for (const entry of additional.filter((e) => e.messages <= 0).reverse()) {
    input.splice(layout ? Math.min(entry.leadingItems, items.length) : items.length, 0, entry.item)
  }
  for (const [index, message] of n.messages.entries()) {
    for (const entry of additional) {
      if (index > 0 && entry.messages === index) input.push(entry.item)
    }
    switch (message.role) {
      case "system":
        input.push(systemItem("developer", message.blocks))
        break
      case "user":
        input.push(...yield* userItems(message.blocks))
        break
      case "assistant":
        input.push(...yield* assistantItems(message.blocks, tools))
        break
    }
  }
  for (const entry of additional) {
    if (entry.messages > 0 && entry.messages >= n.messages.length) input.push(entry.item)
  }
  const additionalNames = new Set(n.responses?.additionalTools?.toolNames ?? [])
  const toolList = toResponsesTools({ ...n, tools: n.tools.filter((tool) => !additionalNames.has(tool.name)) })
  const toolChoice = yield* toResponsesToolChoice(n)
  const responsesFields = n.responses?.fields ?? {}
  const reasoningRest = responsesFields["reasoning"]
  const effort = n.extra["reasoning_effort"]
  const reasoning = reasoningRest === null && effort === undefined
    ? { reasoning: null }
    : Predicate.isRecord(reasoningRest) || effort !== undefined
    ? {
      reasoning: {
        ...(Predicate.isRecord(reasoningRest) ? reasoningRest : {}),
        ...(Predicate.isString(effort) ? { effort } : {})
      }
    }
    : {}
  const textRest = responsesFields["text"]
  const verbosity = n.extra["verbosity"]
  const text = textRest === null && verbosity === undefined && n.responseFormat === undefined
    ? { text: null }
    : Predicate.isRecord(textRest) || verbosity !== undefined || n.responseFormat !== undefined
    ? {
      text: {
        ...(Predicate.isRecord(textRest) ? textRest : {}),
        ...(n.responseFormat !== undefined ? { format: toTextFormat(n.responseFormat) } : {}),
        ...(Predicate.isString(verbosity) ? { verbosity } : {})
      }
    }
    : {}
  const extra = extraFields(n.extra, [...chatOnlyFields, ...Translate.anthropicOnlyFields])
  const streamOptions = extra["stream_options"]
  if (streamOptions !== undefined) {
    const obfuscation = Predicate.isRecord(streamOptions) ? streamOptions["include_obfuscation"] : undefined
    if (Predicate.isBoolean(obfuscation)) extra["stream_options"] = { include_obfuscation: obfuscation }
    else delete extra["stream_options"]
  }
  const request: R.ResponsesRequest = {
    ...extra,
    ...extraFields(responsesFields, ["reasoning", "text"]),
    model: n.model,
    ...(field !== undefined ? { instructions: field } : {}),
    input,
    ...(toolList.length > 0 ? { tools: toolList } : {}),
    ...(toolChoice !== undefined ? { tool_choice: toolChoice } : {}),
    ...(n.parallelToolCalls !== undefined ? { parallel_tool_calls: n.parallelToolCalls } : {}),
    ...text,
    ...(n.maxOutputTokens !== undefined ? { max_output_tokens: n.maxOutputTokens } : {}),
    ...reasoning,
    ...(n.temperature !== undefined ? { temperature: n.temperature } : {}),
    ...(n.topP !== undefined ? { top_p: n.topP } : {}),
    ...(n.stream ? { stream: true } : {}),
    ...openAiUser(n.user)
  }
  return request
}
