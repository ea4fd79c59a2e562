/**
 * Buffered OpenAI Chat completions ⇄ neutral responses ({@link fromOpenAiResponse},
 * {@link toOpenAiResponse}).
 */
import type * as N from "../../Neutral.js"
import type * as OpenAi from "../../OpenAiChat.js"
import { assistantParts, openAiThinking, openAiToolUse, toOpenAiThinking } from "./chatAssistant.js"
import { fromFinishReason, fromOpenAiUsage, openAiCompletionId, toFinishReason, toOpenAiUsage } from "./chatMeta.js"
import { textBlocks } from "./shared.js"

/**
 * A chat completion in neutral form, from its choice 0: `thinking_blocks` (else
 * `reasoning_content`) → Thinking / RedactedThinking, content and refusal → Text, function tool
 * calls → ToolUse (custom tool calls are dropped). No usage gives zeros.
 */
export const fromOpenAiResponse = (c: OpenAi.ChatCompletion): N.NeutralResponse => {
  const choice = c.choices.find((ch) => ch.index === 0) ?? c.choices[0]
  const content: Array<N.ResponseBlock> = []
  if (choice !== undefined) {
    const message = choice.message
    content.push(...openAiThinking(message.thinking_blocks, message.reasoning_content))
    if (message.content !== undefined && message.content !== null) content.push(...textBlocks(message.content))
    if (message.refusal !== undefined && message.refusal !== null) content.push(...textBlocks(message.refusal))
    for (const call of message.tool_calls ?? []) {
      if (call.type === "function") content.push(openAiToolUse(call))
    }
  }
  return {
    id: c.id,
    model: c.model,
    content,
    stopReason: fromFinishReason(choice?.finish_reason),
    usage: fromOpenAiUsage(c.usage),
    ...(c.created !== undefined ? { created: c.created } : {})
  }
}

/**
 * A neutral response as a chat completion with one choice: text blocks joined, thinking as the
 * `reasoning_content` extension plus, when signed or redacted, `thinking_blocks`, tool uses as
 * function tool calls (`content: null` when there is only tool use). The id is re-prefixed by
 * {@link openAiCompletionId}; `created` defaults to 0.
 */
export const toOpenAiResponse = (n: N.NeutralResponse): OpenAi.ChatCompletion => {
  const { calls, texts, thinking } = assistantParts(n.content)
  return {
    id: openAiCompletionId(n.id),
    object: "chat.completion",
    created: n.created ?? 0,
    model: n.model,
    choices: [{
      index: 0,
      message: {
        role: "assistant",
        content: texts.length === 0 && calls.length > 0 ? null : texts.join(""),
        ...(calls.length > 0 ? { tool_calls: calls } : {}),
        ...toOpenAiThinking(thinking)
      },
      finish_reason: toFinishReason(n.stopReason)
    }],
    usage: toOpenAiUsage(n.usage)
  }
}
