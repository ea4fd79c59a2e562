/**
 * The stateful Anthropic Messages event stream → OpenAI Chat chunk translator
 * ({@link anthropicToOpenAiStream}), one instance per stream.
 */
import type * as Anthropic from "../../AnthropicMessages.js"
import type * as OpenAi from "../../OpenAiChat.js"
import { chatChunk, type ChunkDelta, toolDelta, usageChunk } from "./chatChunks.js"
import { fromAnthropicUsage, openAiCompletionId, toFinishReason, toOpenAiUsage } from "./chatMeta.js"
import { type JsonObject, ofType } from "./shared.js"

/** Translates one Anthropic event stream into OpenAI chunks; see {@link anthropicToOpenAiStream}. */
export interface AnthropicToOpenAiStream {
  readonly push: (event: Anthropic.StreamEvent) => ReadonlyArray<OpenAi.ChatCompletionChunk>
  readonly end: () => ReadonlyArray<OpenAi.ChatCompletionChunk>
}

type OpenBlock =
  | { readonly kind: "text" | "ignored" }
  | { readonly kind: "thinking"; readonly startSignature: string; sawSignature: boolean }
  | { readonly kind: "tool"; readonly toolIndex: number; readonly startInput: JsonObject; sawDelta: boolean }

/**
 * A stateful translator of one Anthropic Messages event stream into OpenAI Chat chunks (one
 * instance per stream):
 *
 * - `message_start` → a role chunk (`delta: {role: "assistant", content: ""}`) whose id is the
 *   message id re-prefixed by {@link openAiCompletionId} and whose model is the message's;
 * - text → `content` deltas; thinking → `reasoning_content` deltas, then its signature (a
 *   `signature_delta`, else a non-empty signature given at block start, sent at block stop) as
 *   `{thinking_blocks: [{type: "thinking", thinking: "", signature}]}`; a `redacted_thinking` block
 *   → `{thinking_blocks: [{type: "redacted_thinking", data}]}` (LiteLLM convention);
 * - a `tool_use` block → a `tool_calls` delta `{index: <n-th tool call>, id, type: "function",
 *   function: {name, arguments: ""}}`, then its `input_json_delta`s as argument fragments;
 * - other blocks (server tools, citations) → nothing;
 * - `message_delta` → a `finish_reason` chunk, then a usage chunk (`choices: []`, `usage` as with
 *   `stream_options.include_usage`); nothing is emitted after it.
 *
 * `error` events produce nothing: the caller must check an event's `type` first and report the
 * error its own way. `end()` closes a stream that stopped without `message_delta` (a `stop`
 * finish and the usage seen so far); it is idempotent and returns nothing after a clean end or
 * when no event arrived.
 */
export const anthropicToOpenAiStream = (): AnthropicToOpenAiStream => {
  let id = openAiCompletionId("")
  let model = ""
  let started = false
  let finished = false
  let toolCount = 0
  let stopReason: string | null = null
  // Anthropic counters: message_start gives the input side, message_delta the (cumulative) rest.
  let usage: Anthropic.Usage = { input_tokens: 0, output_tokens: 0 }
  const blocks = new Map<number, OpenBlock>()

  const chunk = (delta: ChunkDelta, finishReason: string | null = null): OpenAi.ChatCompletionChunk =>
    chatChunk(id, model, delta, finishReason)
  const start = (): ReadonlyArray<OpenAi.ChatCompletionChunk> => {
    if (started) return []
    started = true
    return [chunk({ role: "assistant", content: "" })]
  }
  const finish = (): ReadonlyArray<OpenAi.ChatCompletionChunk> => {
    finished = true
    return [
      chunk({}, toFinishReason(stopReason ?? "end_turn")),
      usageChunk(id, model, toOpenAiUsage(fromAnthropicUsage(usage)))
    ]
  }
  const reasoningDelta = (text: string): ChunkDelta => ({ reasoning_content: text })
  const signatureDelta = (signature: string): ChunkDelta => ({
    thinking_blocks: [{ type: "thinking", thinking: "", signature }]
  })

  const push = (event: Anthropic.StreamEvent): ReadonlyArray<OpenAi.ChatCompletionChunk> => {
    if (finished) return []
    switch (event.type) {
      case "message_start": {
        id = openAiCompletionId(event.message.id)
        model = event.message.model
        usage = event.message.usage
        return start()
      }
      case "content_block_start": {
        const out = [...start()]
        const block = event.content_block
        if (ofType(block, "text")) {
          blocks.set(event.index, { kind: "text" })
          if (block.text !== "") out.push(chunk({ content: block.text }))
        } else if (ofType(block, "thinking")) {
          blocks.set(event.index, { kind: "thinking", startSignature: block.signature ?? "", sawSignature: false })
          if (block.thinking !== "") out.push(chunk(reasoningDelta(block.thinking)))
        } else if (ofType(block, "redacted_thinking")) {
          blocks.set(event.index, { kind: "ignored" })
          out.push(chunk({ thinking_blocks: [{ type: "redacted_thinking", data: block.data }] }))
        } else if (ofType(block, "tool_use")) {
          const toolIndex = toolCount++
          blocks.set(event.index, { kind: "tool", toolIndex, startInput: block.input, sawDelta: false })
          out.push(
            chunk(
              toolDelta({
                index: toolIndex,
                id: block.id,
                type: "function",
                function: { name: block.name, arguments: "" }
              })
            )
          )
        } else blocks.set(event.index, { kind: "ignored" })
        return out
      }
      case "content_block_delta": {
        const block = blocks.get(event.index)
        const delta = event.delta
        if (block === undefined) return []
        const out = [...start()]
        if (block.kind === "text" && ofType(delta, "text_delta")) {
          if (delta.text !== "") out.push(chunk({ content: delta.text }))
        } else if (block.kind === "thinking" && ofType(delta, "thinking_delta")) {
          if (delta.thinking !== "") out.push(chunk(reasoningDelta(delta.thinking)))
        } else if (block.kind === "thinking" && ofType(delta, "signature_delta")) {
          block.sawSignature = true
          if (delta.signature !== "") out.push(chunk(signatureDelta(delta.signature)))
        } else if (block.kind === "tool" && ofType(delta, "input_json_delta")) {
          block.sawDelta = true
          if (delta.partial_json !== "") {
            out.push(chunk(toolDelta({ index: block.toolIndex, function: { arguments: delta.partial_json } })))
          }
        }
        return out
      }
      case "content_block_stop": {
        const block = blocks.get(event.index)
        // A provider that sends the whole input in content_block_start and no deltas.
        if (block?.kind === "tool" && !block.sawDelta && Object.keys(block.startInput).length > 0) {
          return [
            chunk(toolDelta({ index: block.toolIndex, function: { arguments: JSON.stringify(block.startInput) } }))
          ]
        }
        // A provider that sends the signature in content_block_start and no signature_delta.
        if (block?.kind === "thinking" && !block.sawSignature && block.startSignature !== "") {
          return [chunk(signatureDelta(block.startSignature))]
        }
        return []
      }
      case "message_delta": {
        stopReason = event.delta.stop_reason
        const u = event.usage
        usage = {
          input_tokens: u.input_tokens ?? usage.input_tokens,
          output_tokens: u.output_tokens,
          cache_read_input_tokens: u.cache_read_input_tokens ?? usage.cache_read_input_tokens,
          cache_creation_input_tokens: u.cache_creation_input_tokens ?? usage.cache_creation_input_tokens,
          cache_creation: u.cache_creation ?? usage.cache_creation,
          cost: u.cost ?? usage.cost
        }
        return [...start(), ...finish()]
      }
      case "message_stop":
        return started ? finish() : []
      case "ping":
      case "error":
        return []
    }
  }
  const end = (): ReadonlyArray<OpenAi.ChatCompletionChunk> => finished || !started ? [] : finish()
  return { push, end }
}
