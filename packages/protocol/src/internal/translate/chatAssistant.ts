/**
 * Thinking and assistant turns in the OpenAI Chat shape: neutral thinking blocks (from any
 * format's signature rules), thinking read from and written to `reasoning_content` /
 * `thinking_blocks` (LiteLLM convention), and the split of a neutral assistant turn into texts,
 * thinking and tool calls. Shared by requests, buffered responses and the Chat → Messages stream.
 */
import * as Schema from "effect/Schema"
import type * as Nesting from "../../Nesting.js"
import type * as N from "../../Neutral.js"
import * as OpenAi from "../../OpenAiChat.js"
import { reasoningSummarySeparator } from "./constants.js"
import { argumentsValue, readArguments } from "./shared.js"

/** A neutral thinking block; an absent, `null` or empty signature is no signature. */
export const neutralThinking = (text: string, signature: string | null | undefined): N.Thinking => ({
  _tag: "Thinking",
  text,
  ...(signature !== undefined && signature !== null && signature !== "" ? { signature } : {})
})

/** A thinking block with a non-empty signature. */
export const isSigned = (block: N.Thinking): block is N.Thinking & { readonly signature: string } =>
  block.signature !== undefined && block.signature !== ""

/** An OpenAI `thinking_blocks` entry of type `thinking`. */
export const isOpenAiThinkingText = Schema.is(OpenAi.ThinkingTextBlock)
/** An OpenAI `thinking_blocks` entry of type `redacted_thinking`. */
export const isOpenAiRedactedThinking = Schema.is(OpenAi.RedactedThinkingBlock)

const isOpenAiToolCall = Schema.is(OpenAi.ToolCall)

/**
 * A function tool call as a neutral ToolUse: `arguments` as sent, `input` parsed from them (`read`:
 * as the caller read them already).
 */
export const openAiToolUse = (call: typeof OpenAi.FunctionToolCall.Type, read?: Nesting.Parsed): N.ToolUse => ({
  _tag: "ToolUse",
  id: call.id,
  name: call.function.name,
  input: argumentsValue(read ?? readArguments(call.function.arguments)),
  arguments: call.function.arguments
})

/**
 * Neutral thinking of an OpenAI assistant message or delta: its `thinking_blocks` when they hold
 * a thinking (with text or a signature) or redacted_thinking entry, else `reasoning_content` as one
 * unsigned block (none when empty).
 */
export const openAiThinking = (
  blocks: ReadonlyArray<OpenAi.ThinkingBlock> | null | undefined,
  reasoning: string | null | undefined
): ReadonlyArray<N.Thinking | N.RedactedThinking> => {
  const out: Array<N.Thinking | N.RedactedThinking> = []
  for (const block of blocks ?? []) {
    if (isOpenAiThinkingText(block)) {
      const thinking = neutralThinking(block.thinking, block.signature)
      if (thinking.text !== "" || isSigned(thinking)) out.push(thinking)
    } else if (isOpenAiRedactedThinking(block)) out.push({ _tag: "RedactedThinking", data: block.data })
  }
  if (out.length > 0) return out
  return reasoning !== undefined && reasoning !== null && reasoning !== ""
    ? [{ _tag: "Thinking", text: reasoning }]
    : []
}

/**
 * The OpenAI fields of neutral thinking: `reasoning_content` (the thinking text joined, when not
 * empty) and, when a block is signed or redacted, `thinking_blocks` with every block in order.
 */
export const toOpenAiThinking = (blocks: ReadonlyArray<N.Thinking | N.RedactedThinking>): {
  readonly reasoning_content?: string
  readonly thinking_blocks?: ReadonlyArray<OpenAi.ThinkingBlock>
} => {
  const text = blocks.flatMap((b) => b._tag === "Thinking" ? [b.text] : []).join("")
  const lossless = blocks.some((b) => b._tag === "RedactedThinking" || isSigned(b))
  return {
    ...(text !== "" ? { reasoning_content: text } : {}),
    ...(lossless
      ? {
        thinking_blocks: blocks.map((b): OpenAi.ThinkingBlock =>
          b._tag === "RedactedThinking"
            ? { type: "redacted_thinking", data: b.data }
            : { type: "thinking", thinking: b.text, ...(isSigned(b) ? { signature: b.signature } : {}) }
        )
      }
      : {})
  }
}

/**
 * The parts of an assistant turn as the chat shape holds them: its texts, its thinking blocks (for
 * `reasoning_content` / `thinking_blocks`) and its tool uses as function tool calls (plus OpenAI
 * tool calls kept opaque); images and tool results have no place there.
 */
export const assistantParts = (blocks: ReadonlyArray<N.Block>) => {
  const texts: Array<string> = []
  const thinking: Array<N.Thinking | N.RedactedThinking> = []
  const calls: Array<OpenAi.ToolCall> = []
  for (const block of blocks) {
    switch (block._tag) {
      case "Text":
        texts.push(block.text)
        break
      case "Thinking":
      case "RedactedThinking":
        thinking.push(block)
        break
      case "Reasoning":
        thinking.push({ _tag: "Thinking", text: block.summary.join(reasoningSummarySeparator) })
        break
      case "ToolUse":
        calls.push({
          id: block.id,
          type: "function",
          function: { name: block.name, arguments: block.arguments ?? JSON.stringify(block.input ?? {}) }
        })
        break
      case "Opaque":
        if (block.format === "openai_chat" && isOpenAiToolCall(block.value)) calls.push(block.value)
        break
      case "Image":
      case "ToolResult":
        break
    }
  }
  return { texts, thinking, calls }
}
