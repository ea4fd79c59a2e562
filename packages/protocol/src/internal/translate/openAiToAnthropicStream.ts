/**
 * The stateful OpenAI Chat chunk stream → Anthropic Messages event translator
 * ({@link openAiToAnthropicStream}), one instance per stream.
 */
import type * as Anthropic from "../../AnthropicMessages.js"
import type * as OpenAi from "../../OpenAiChat.js"
import { isOpenAiRedactedThinking, isOpenAiThinkingText } from "./chatAssistant.js"
import { type PendingToolCall, pushToolCallFragment, startUnstartedToolCalls } from "./chatChunks.js"
import { anthropicMessageId, fromFinishReason, fromOpenAiUsage, toAnthropicUsage } from "./chatMeta.js"

/** Translates one OpenAI chunk stream into Anthropic events; see {@link openAiToAnthropicStream}. */
export interface OpenAiToAnthropicStream {
  readonly push: (chunk: OpenAi.ChatCompletionChunk) => ReadonlyArray<Anthropic.StreamEvent>
  readonly end: () => ReadonlyArray<Anthropic.StreamEvent>
}

/**
 * A stateful translator of one OpenAI Chat chunk stream into Anthropic Messages events (one
 * instance per stream). Only choice 0 is read.
 *
 * - The first chunk emits `message_start` (id `options.id`, else the chunk id with a `msg_`
 *   prefix; model `options.model`; zero usage).
 * - `reasoning_content` (extension) → a `thinking` block; a `thinking_blocks` (extension) thinking
 *   entry → its text as a `thinking_delta` and its signature as a `signature_delta` on the open
 *   thinking block (the next thinking then opens a new block); a `redacted_thinking` entry → a
 *   `redacted_thinking` block, started and stopped at once. A delta with known `thinking_blocks`
 *   entries ignores its `reasoning_content` (LiteLLM sends the same text in both);
 *   `content` / `refusal` → a `text` block;
 *   each tool call (fragments keyed by `index`) → a `tool_use` block opened once its name is known
 *   (earlier fragments are buffered), its argument fragments as `input_json_delta`s. A new kind
 *   of content closes the open block first, so blocks never overlap and indices count from 0.
 *   Argument fragments for a tool call whose block was already closed are dropped (no known
 *   provider interleaves tool calls).
 * - `finish_reason` closes the open block; `message_delta` (stop reason mapped by
 *   {@link fromFinishReason}, usage from the usage chunk) and `message_stop` follow as soon as a
 *   chunk with `usage` arrives with or after it (`include_usage` sends usage last), else in `end()`.
 *
 * `end()` closes whatever is open (emitting `message_start` first if nothing arrived, and
 * `end_turn` if no finish reason came) and is idempotent; chunks after the end are ignored.
 */
export const openAiToAnthropicStream = (
  options: { readonly model: string; readonly id?: string }
): OpenAiToAnthropicStream => {
  let messageId = options.id ?? "msg_switchyard"
  let started = false
  let finished = false
  let nextIndex = 0
  let open:
    | {
      readonly kind: "text" | "thinking" | "tool"
      readonly index: number
      readonly toolKey?: number
      signed: boolean
    }
    | undefined
  let finishReason: string | null = null
  let usage: OpenAi.Usage | undefined
  const tools = new Map<number, PendingToolCall>()

  const startMessage = (out: Array<Anthropic.StreamEvent>) => {
    if (started) return
    started = true
    out.push({
      type: "message_start",
      message: {
        id: messageId,
        type: "message",
        role: "assistant",
        model: options.model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: 0, output_tokens: 0 }
      }
    })
  }
  const closeOpen = (out: Array<Anthropic.StreamEvent>) => {
    if (open === undefined) return
    out.push({ type: "content_block_stop", index: open.index })
    open = undefined
  }
  const openBlock = (
    out: Array<Anthropic.StreamEvent>,
    kind: "text" | "thinking",
    contentBlock: Anthropic.ResponseContentBlock
  ): number => {
    if (open !== undefined && open.kind === kind && !open.signed) return open.index
    closeOpen(out)
    const index = nextIndex++
    open = { kind, index, signed: false }
    out.push({ type: "content_block_start", index, content_block: contentBlock })
    return index
  }
  const startTool = (out: Array<Anthropic.StreamEvent>, key: number, state: PendingToolCall) => {
    closeOpen(out)
    const index = nextIndex++
    open = { kind: "tool", index, toolKey: key, signed: false }
    state.started = true
    out.push({
      type: "content_block_start",
      index,
      content_block: {
        type: "tool_use",
        id: state.id ?? `toolu_${messageId}_${key}`,
        name: state.name ?? "",
        input: {}
      }
    })
    if (state.pending !== "") {
      out.push({ type: "content_block_delta", index, delta: { type: "input_json_delta", partial_json: state.pending } })
      state.pending = ""
    }
  }
  /** Opens the tool calls that never got a name, so their id and arguments are not lost. */
  const flushTools = (out: Array<Anthropic.StreamEvent>) => {
    startUnstartedToolCalls(tools, (key, state) => {
      startTool(out, key, state)
      closeOpen(out)
    })
  }
  /** Thinking text, then its signature, on the open unsigned thinking block (opened when needed). */
  const thinking = (out: Array<Anthropic.StreamEvent>, text: string, signature: string | null | undefined) => {
    const signed = signature !== undefined && signature !== null && signature !== ""
    if (text === "" && !signed) return
    const index = openBlock(out, "thinking", { type: "thinking", thinking: "", signature: "" })
    if (text !== "") out.push({ type: "content_block_delta", index, delta: { type: "thinking_delta", thinking: text } })
    if (signed && open !== undefined) {
      out.push({ type: "content_block_delta", index, delta: { type: "signature_delta", signature } })
      open.signed = true
    }
  }
  const redacted = (out: Array<Anthropic.StreamEvent>, data: string) => {
    closeOpen(out)
    const index = nextIndex++
    out.push({ type: "content_block_start", index, content_block: { type: "redacted_thinking", data } })
    out.push({ type: "content_block_stop", index })
  }
  const complete = (out: Array<Anthropic.StreamEvent>) => {
    closeOpen(out)
    flushTools(out)
    const neutral = fromOpenAiUsage(usage)
    const { cache_creation, cost } = toAnthropicUsage(neutral)
    out.push({
      type: "message_delta",
      delta: { stop_reason: fromFinishReason(finishReason) ?? "end_turn", stop_sequence: null },
      usage: {
        output_tokens: neutral.outputTokens,
        input_tokens: toAnthropicUsage(neutral).input_tokens,
        ...(neutral.cacheReadTokens !== undefined ? { cache_read_input_tokens: neutral.cacheReadTokens } : {}),
        ...(neutral.cacheCreationTokens !== undefined
          ? { cache_creation_input_tokens: neutral.cacheCreationTokens }
          : {}),
        ...(cache_creation === undefined ? {} : { cache_creation }),
        ...(cost === undefined ? {} : { cost })
      }
    })
    out.push({ type: "message_stop" })
    finished = true
  }

  const push = (chunk: OpenAi.ChatCompletionChunk): ReadonlyArray<Anthropic.StreamEvent> => {
    if (finished) return []
    const out: Array<Anthropic.StreamEvent> = []
    if (!started) messageId = options.id ?? anthropicMessageId(chunk.id === "" ? "switchyard" : chunk.id)
    startMessage(out)
    const choice = chunk.choices.find((c) => c.index === 0)
    if (choice !== undefined) {
      const delta = choice.delta
      const entries = (delta.thinking_blocks ?? []).filter((b) =>
        isOpenAiThinkingText(b) || isOpenAiRedactedThinking(b)
      )
      for (const entry of entries) {
        if (isOpenAiThinkingText(entry)) thinking(out, entry.thinking, entry.signature)
        else if (isOpenAiRedactedThinking(entry)) redacted(out, entry.data)
      }
      if (entries.length === 0) thinking(out, delta.reasoning_content ?? "", undefined)
      for (const text of [delta.content, delta.refusal]) {
        if (text !== undefined && text !== null && text !== "") {
          const index = openBlock(out, "text", { type: "text", text: "" })
          out.push({ type: "content_block_delta", index, delta: { type: "text_delta", text } })
        }
      }
      for (const fragment of delta.tool_calls ?? []) {
        pushToolCallFragment(tools, fragment, {
          start: (key, state) => startTool(out, key, state),
          append: (key, args) => {
            if (open !== undefined && open.kind === "tool" && open.toolKey === key && args !== "") {
              out.push({
                type: "content_block_delta",
                index: open.index,
                delta: { type: "input_json_delta", partial_json: args }
              })
            }
          }
        })
      }
      if (choice.finish_reason !== undefined && choice.finish_reason !== null) {
        finishReason = choice.finish_reason
        closeOpen(out)
      }
    }
    if (chunk.usage !== undefined && chunk.usage !== null) {
      usage = chunk.usage
      if (finishReason !== null) complete(out)
    }
    return out
  }
  const end = (): ReadonlyArray<Anthropic.StreamEvent> => {
    if (finished) return []
    const out: Array<Anthropic.StreamEvent> = []
    startMessage(out)
    complete(out)
    return out
  }
  return { push, end }
}
