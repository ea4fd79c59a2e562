/**
 * Buffered Responses response objects ⇄ neutral responses ({@link fromResponsesResponse},
 * {@link toResponsesResponse}).
 */
import type * as N from "../../Neutral.js"
import type * as R from "../../OpenAiResponses.js"
import {
  callBlock,
  callItem,
  contentBlocks,
  isMessageItem,
  messageOutput,
  reasoningBlock,
  reasoningItem,
  syntheticReasoningPrefix,
  thinkingReasoning
} from "./responsesItems.js"
import { fromResponsesUsage, responseId, responseStatus, stopReasonOf, toResponsesUsage } from "./responsesMeta.js"
import { emptyToolMap, type ToolMap } from "./responsesToolNames.js"
import { ofType } from "./shared.js"

const outputBlocks = (item: R.OutputItem): ReadonlyArray<N.ResponseBlock> => {
  if (isMessageItem(item)) {
    return contentBlocks(item.content).flatMap((block) => block._tag === "Text" ? [block] : [])
  }
  if (ofType(item, "function_call") || ofType(item, "custom_tool_call")) return [callBlock(item)]
  if (ofType(item, "reasoning")) return [reasoningBlock(item)]
  return []
}

/** A Responses response object in neutral form (module notes); no usage gives zeros. */
export const fromResponsesResponse = (r: R.ResponseObject): N.NeutralResponse => {
  const content = r.output.flatMap(outputBlocks)
  return {
    id: r.id,
    model: r.model,
    created: r.created_at,
    content,
    stopReason: stopReasonOf(r, content.some((b) => b._tag === "ToolUse")),
    usage: fromResponsesUsage(r.usage)
  }
}

/** Options of the neutral → Responses translations. */
export interface ToResponsesOptions {
  /** The request's tools (see `toolMap`), to restore namespaces and custom calls. */
  readonly tools?: ToolMap
}

const withStatus = (item: R.FunctionCallItem | R.CustomToolCallItem): R.OutputItem =>
  ofType(item, "function_call") ? { ...item, status: "completed" } : item

/** The output items of neutral response content (item ids `<prefix>_switchyard_<output index>` when new). */
const outputItems = (content: ReadonlyArray<N.ResponseBlock>, tools: ToolMap): ReadonlyArray<R.OutputItem> => {
  const out: Array<R.OutputItem> = []
  let texts: Array<string> = []
  const flush = () => {
    if (texts.length > 0) out.push(messageOutput(`msg_switchyard_${out.length}`, texts, "completed"))
    texts = []
  }
  for (const block of content) {
    switch (block._tag) {
      case "Text":
        texts.push(block.text)
        break
      case "Thinking":
        if (block.text === "") break
        flush()
        out.push(thinkingReasoning(`${syntheticReasoningPrefix}${out.length}`, block.text))
        break
      case "RedactedThinking":
        break
      case "Reasoning":
        flush()
        out.push(reasoningItem(block))
        break
      case "ToolUse": {
        flush()
        const item = callItem(block, tools)
        const prefix = item.type === "custom_tool_call" ? "ctc" : "fc"
        out.push(withStatus({ ...item, id: item.id ?? `${prefix}_switchyard_${out.length}` }))
        break
      }
    }
  }
  flush()
  return out
}

/** A neutral response as a Responses response object (module notes); `created_at` defaults to 0. */
export const toResponsesResponse = (n: N.NeutralResponse, options: ToResponsesOptions = {}): R.ResponseObject => {
  const { reason, status } = responseStatus(n.stopReason)
  return {
    id: responseId(n.id),
    object: "response",
    created_at: n.created ?? 0,
    status,
    model: n.model,
    output: outputItems(n.content, options.tools ?? emptyToolMap),
    usage: toResponsesUsage(n.usage),
    error: null,
    incomplete_details: reason !== undefined ? { reason } : null
  }
}
