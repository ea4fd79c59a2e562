/**
 * Buffered Anthropic messages ⇄ neutral responses ({@link fromAnthropicResponse},
 * {@link toAnthropicResponse}).
 */
import * as Predicate from "effect/Predicate"
import type * as Anthropic from "../../AnthropicMessages.js"
import type * as N from "../../Neutral.js"
import { neutralThinking } from "./chatAssistant.js"
import { anthropicMessageId, fromAnthropicUsage, toAnthropicUsage } from "./chatMeta.js"
import { reasoningSummarySeparator } from "./constants.js"
import { ofType } from "./shared.js"

/**
 * A message in neutral form; server tool blocks are dropped, an empty thinking signature counts
 * as none.
 */
export const fromAnthropicResponse = (m: Anthropic.MessagesResponse): N.NeutralResponse => {
  const content: Array<N.ResponseBlock> = []
  for (const block of m.content) {
    if (ofType(block, "text")) content.push({ _tag: "Text", text: block.text })
    else if (ofType(block, "tool_use")) {
      content.push({ _tag: "ToolUse", id: block.id, name: block.name, input: block.input })
    } else if (ofType(block, "thinking")) content.push(neutralThinking(block.thinking, block.signature))
    else if (ofType(block, "redacted_thinking")) content.push({ _tag: "RedactedThinking", data: block.data })
  }
  return {
    id: m.id,
    model: m.model,
    content,
    stopReason: m.stop_reason,
    usage: fromAnthropicUsage(m.usage),
    ...(m.stop_sequence !== undefined && m.stop_sequence !== null ? { stopSequence: m.stop_sequence } : {})
  }
}

/**
 * A neutral response as an Anthropic message. The id keeps a `msg_` prefix or gets one; tool
 * input that is not a JSON object becomes `{}`; unsigned thinking gets `signature: ""`.
 */
export const toAnthropicResponse = (n: N.NeutralResponse): Anthropic.MessagesResponse => ({
  id: anthropicMessageId(n.id),
  type: "message",
  role: "assistant",
  model: n.model,
  content: n.content.flatMap((block): ReadonlyArray<Anthropic.ResponseContentBlock> => {
    switch (block._tag) {
      case "Text":
        return [{ type: "text", text: block.text }]
      case "ToolUse":
        return [{
          type: "tool_use",
          id: block.id,
          name: block.name,
          input: Predicate.isRecord(block.input) ? block.input : {}
        }]
      case "Thinking":
        return [{ type: "thinking", thinking: block.text, signature: block.signature ?? "" }]
      case "RedactedThinking":
        return [{ type: "redacted_thinking", data: block.data }]
      case "Reasoning": {
        const text = block.summary.join(reasoningSummarySeparator)
        return text === "" ? [] : [{ type: "thinking", thinking: text, signature: "" }]
      }
    }
  }),
  stop_reason: n.stopReason,
  stop_sequence: n.stopSequence ?? null,
  usage: toAnthropicUsage(n.usage)
})
