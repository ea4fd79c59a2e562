/**
 * Responses items and content parts ⇄ neutral blocks, shared by requests, buffered responses and
 * streams: content parts as Text / Image / Opaque, neutral tool uses and reasoning as call and
 * reasoning items, assistant message items, and the ids of the items switchyard makes.
 */
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"
import type * as Nesting from "../../Nesting.js"
import type * as N from "../../Neutral.js"
import * as R from "../../OpenAiResponses.js"
import { customInput, customToolUse, namespacedOf, type ToolMap } from "./responsesToolNames.js"
import { argumentsValue, ofType, parseDataUrl, present, readArguments, textBlocks } from "./shared.js"

/** A Responses message item (its `type` may be absent). */
export const isMessageItem = Schema.is(R.MessageItem)

/**
 * The id prefix of reasoning items switchyard makes from Chat / Anthropic thinking
 * (`rs_switchyard_…`): no OpenAI upstream issued them, so `toResponsesRequest` drops such items
 * when they carry no encrypted content.
 */
export const syntheticReasoningPrefix = "rs_switchyard_"

const partBlock = (part: R.ContentPart): N.Text | N.Image | N.Opaque => {
  if (ofType(part, "input_text") || ofType(part, "output_text")) return { _tag: "Text", text: part.text }
  if (ofType(part, "refusal")) return { _tag: "Text", text: part.refusal }
  if (ofType(part, "input_image") && present(part.image_url) && !present(part.file_id)) {
    const url = part.image_url
    return {
      _tag: "Image",
      source: parseDataUrl(url) ?? { kind: "url", url },
      ...(part.detail !== undefined ? { detail: part.detail } : {})
    }
  }
  return { _tag: "Opaque", format: "openai_responses", value: part }
}

/** Content given as a string (one text) or as parts, in neutral form. */
export const contentBlocks = (
  content: string | ReadonlyArray<R.ContentPart>
): ReadonlyArray<N.Text | N.Image | N.Opaque> =>
  Predicate.isString(content) ? textBlocks(content) : content.map(partBlock)

/** `{itemId}` when the item has an id. */
const itemIdOf = (id: string | null | undefined): { readonly itemId?: string } => present(id) ? { itemId: id } : {}

/**
 * A `function_call` or `custom_tool_call` item (input or output) as a neutral ToolUse: flattened
 * name and namespace origin, item id, custom input as `{"input": <text>}`; a function call's `input`
 * parsed from its arguments (`read`: as the caller read them already).
 */
export const callBlock = (item: R.FunctionCallItem | R.CustomToolCallItem, read?: Nesting.Parsed): N.ToolUse => {
  if (ofType(item, "function_call")) {
    return {
      _tag: "ToolUse",
      id: item.call_id,
      input: argumentsValue(read ?? readArguments(item.arguments)),
      arguments: item.arguments,
      ...namespacedOf(item.namespace, item.name),
      ...itemIdOf(item.id)
    }
  }
  const { name, ...namespaced } = namespacedOf(item.namespace, item.name)
  return customToolUse(item.call_id, name, item.input, { ...namespaced, ...itemIdOf(item.id) })
}

/** A reasoning item (input or output) as a neutral Reasoning block: summary texts, id, encrypted content. */
export const reasoningBlock = (item: R.ReasoningItem): N.Reasoning => ({
  _tag: "Reasoning",
  summary: item.summary.map((part) => part.text),
  ...(item.id !== undefined ? { id: item.id } : {}),
  ...(present(item.encrypted_content) ? { encryptedContent: item.encrypted_content } : {})
})

/** A neutral tool use as a `function_call` or `custom_tool_call` item, its namespace restored from the block or `tools`. */
export const callItem = (block: N.ToolUse, tools: ToolMap): R.FunctionCallItem | R.CustomToolCallItem => {
  const origin = block.namespaced ?? tools.namespaced.get(block.name)
  const name = origin?.name ?? block.name
  const namespace = origin !== undefined ? { namespace: origin.namespace } : {}
  const id = block.itemId !== undefined ? { id: block.itemId } : {}
  if (block.custom === true || tools.custom.has(block.name)) {
    return {
      type: "custom_tool_call",
      call_id: block.id,
      name,
      input: customInput(block.input, block.arguments),
      ...namespace,
      ...id
    }
  }
  return {
    type: "function_call",
    call_id: block.id,
    name,
    arguments: block.arguments ?? JSON.stringify(block.input ?? {}),
    ...namespace,
    ...id
  }
}

/** A neutral reasoning block as a reasoning item. */
export const reasoningItem = (block: N.Reasoning): R.ReasoningItem => ({
  type: "reasoning",
  ...(block.id !== undefined ? { id: block.id } : {}),
  summary: block.summary.map((text) => ({ type: "summary_text", text })),
  ...(block.encryptedContent !== undefined ? { encrypted_content: block.encryptedContent } : {})
})

/** An assistant message item of output texts. */
export const messageOutput = (id: string, texts: ReadonlyArray<string>, status: string): R.MessageItem => ({
  type: "message",
  id,
  role: "assistant",
  status,
  content: texts.map((text): R.OutputText => ({ type: "output_text", text, annotations: [] }))
})

/** Thinking text as a reasoning item whose summary is that text (no summary when empty). */
export const thinkingReasoning = (id: string, text: string): R.ReasoningItem => ({
  type: "reasoning",
  id,
  summary: text === "" ? [] : [{ type: "summary_text", text }]
})
