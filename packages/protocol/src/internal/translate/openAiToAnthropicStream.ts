/**
 * The stateful OpenAI Chat chunk stream → Anthropic Messages event translator
 * ({@link openAiToAnthropicStream}), one instance per stream.
 */
import type * as Anthropic from "../../AnthropicMessages.js"
import type * as OpenAi from "../../OpenAiChat.js"
import { isOpenAiRedactedThinking, isOpenAiThinkingText } from "./chatAssistant.js"
import { type ChunkDelta, type PendingToolCall, pushToolCallFragment, startUnstartedToolCalls } from "./chatChunks.js"
import { anthropicMessageId, fromFinishReason, fromOpenAiUsage, toAnthropicUsage } from "./chatMeta.js"

/** Translates one OpenAI chunk stream into Anthropic events; see {@link openAiToAnthropicStream}. */
export interface OpenAiToAnthropicStream {
  readonly push: (chunk: OpenAi.ChatCompletionChunk) => ReadonlyArray<Anthropic.StreamEvent>
  readonly end: () => ReadonlyArray<Anthropic.StreamEvent>
}

/** A choice of a chunk. */
type ChunkChoice = OpenAi.ChatCompletionChunk["choices"][number]

/** The choice the translation reads. */
const isFirst = (choice: ChunkChoice): boolean => choice.index === 0

/** The options of {@link openAiToAnthropicStream}. */
interface Options {
  readonly model: string
  readonly id?: string
}

/** The content block being written. */
interface OpenBlock {
  readonly kind: "text" | "thinking" | "tool"
  readonly index: number
  readonly toolKey?: number
  signed: boolean
}

/** One stream's translation state: a record per stream (never shared), read and written by the steps below. */
interface State {
  readonly options: Options
  messageId: string
  started: boolean
  finished: boolean
  nextIndex: number
  open: OpenBlock | undefined
  finishReason: string | null
  usage: OpenAi.Usage | undefined
  readonly tools: Map<number, PendingToolCall>
  /** Where the current `push` / `end` puts its events. */
  out: Array<Anthropic.StreamEvent>
}

/** The tool-call fragment callbacks of `pushToolCallFragment`, made once per stream. */
interface CallEvents {
  readonly start: (key: number, call: PendingToolCall) => void
  readonly append: (key: number, args: string) => void
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
 *
 * The state is one {@link State} record; each kind of chunk content has a step of its own below.
 */
export const openAiToAnthropicStream = (options: Options): OpenAiToAnthropicStream => {
  const s: State = {
    options,
    messageId: options.id ?? "msg_switchyard",
    started: false,
    finished: false,
    nextIndex: 0,
    open: undefined,
    finishReason: null,
    usage: undefined,
    tools: new Map(),
    out: []
  }
  const on: CallEvents = {
    start: (key, call) => startTool(s, key, call),
    append: (key, args) => toolArgs(s, key, args)
  }
  return { push: (chunk) => push(s, on, chunk), end: () => end(s) }
}

/** `message_start`, once per stream. */
const startMessage = (s: State): void => {
  if (s.started) return
  s.started = true
  s.out.push({
    type: "message_start",
    message: {
      id: s.messageId,
      type: "message",
      role: "assistant",
      model: s.options.model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { input_tokens: 0, output_tokens: 0 }
    }
  })
}

/** Stops the open block, if any. */
const closeOpen = (s: State): void => {
  if (s.open === undefined) return
  s.out.push({ type: "content_block_stop", index: s.open.index })
  s.open = undefined
}

/** The index of the open unsigned block of `kind`, opened (after closing any other) when needed. */
const openBlock = (s: State, kind: "text" | "thinking", contentBlock: Anthropic.ResponseContentBlock): number => {
  if (s.open !== undefined && s.open.kind === kind && !s.open.signed) return s.open.index
  closeOpen(s)
  const index = s.nextIndex++
  s.open = { kind, index, signed: false }
  s.out.push({ type: "content_block_start", index, content_block: contentBlock })
  return index
}

/** Opens the `tool_use` block of tool call `key` (after closing the open block), with its buffered arguments. */
const startTool = (s: State, key: number, call: PendingToolCall): void => {
  closeOpen(s)
  const index = s.nextIndex++
  s.open = { kind: "tool", index, toolKey: key, signed: false }
  call.started = true
  s.out.push({
    type: "content_block_start",
    index,
    content_block: {
      type: "tool_use",
      id: call.id ?? `toolu_${s.messageId}_${key}`,
      name: call.name ?? "",
      input: {}
    }
  })
  if (call.pending !== "") {
    s.out.push({ type: "content_block_delta", index, delta: { type: "input_json_delta", partial_json: call.pending } })
    call.pending = ""
  }
}

/** Argument text of tool call `key`: an `input_json_delta` while its block is the open one, else dropped. */
const toolArgs = (s: State, key: number, args: string): void => {
  const open = s.open
  if (open !== undefined && open.kind === "tool" && open.toolKey === key && args !== "") {
    s.out.push({
      type: "content_block_delta",
      index: open.index,
      delta: { type: "input_json_delta", partial_json: args }
    })
  }
}

/** Thinking text, then its signature, on the open unsigned thinking block (opened when needed). */
const thinking = (s: State, text: string, signature: string | null | undefined): void => {
  const signed = signature !== undefined && signature !== null && signature !== ""
  if (text === "" && !signed) return
  const index = openBlock(s, "thinking", { type: "thinking", thinking: "", signature: "" })
  if (text !== "") s.out.push({ type: "content_block_delta", index, delta: { type: "thinking_delta", thinking: text } })
  if (signed && s.open !== undefined) {
    s.out.push({ type: "content_block_delta", index, delta: { type: "signature_delta", signature } })
    s.open.signed = true
  }
}

/** A `redacted_thinking` block, started and stopped at once (after closing the open block). */
const redacted = (s: State, data: string): void => {
  closeOpen(s)
  const index = s.nextIndex++
  s.out.push({ type: "content_block_start", index, content_block: { type: "redacted_thinking", data } })
  s.out.push({ type: "content_block_stop", index })
}

/** A delta's thinking: its known `thinking_blocks` entries in order, else its `reasoning_content`. */
const deltaThinking = (s: State, delta: ChunkDelta): void => {
  let known = false
  for (const entry of delta.thinking_blocks ?? []) {
    if (isOpenAiThinkingText(entry)) {
      known = true
      thinking(s, entry.thinking, entry.signature)
    } else if (isOpenAiRedactedThinking(entry)) {
      known = true
      redacted(s, entry.data)
    }
  }
  if (!known) thinking(s, delta.reasoning_content ?? "", undefined)
}

/** Text (`content` or `refusal`) on the open text block; nothing for none or `""`. */
const text = (s: State, value: string | null | undefined): void => {
  if (value === undefined || value === null || value === "") return
  const index = openBlock(s, "text", { type: "text", text: "" })
  s.out.push({ type: "content_block_delta", index, delta: { type: "text_delta", text: value } })
}

/** Closes what is open (calls that never got a name included), then `message_delta` and `message_stop`. */
const complete = (s: State): void => {
  closeOpen(s)
  startUnstartedToolCalls(s.tools, (key, call) => {
    startTool(s, key, call)
    closeOpen(s)
  })
  const neutral = fromOpenAiUsage(s.usage)
  const { cache_creation, cost } = toAnthropicUsage(neutral)
  s.out.push({
    type: "message_delta",
    delta: { stop_reason: fromFinishReason(s.finishReason) ?? "end_turn", stop_sequence: null },
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
  s.out.push({ type: "message_stop" })
  s.finished = true
}

/** What choice 0 of a chunk carries: thinking, text, tool-call fragments, the finish reason. */
const pushChoice = (s: State, on: CallEvents, choice: ChunkChoice): void => {
  const delta = choice.delta
  deltaThinking(s, delta)
  text(s, delta.content)
  text(s, delta.refusal)
  for (const fragment of delta.tool_calls ?? []) pushToolCallFragment(s.tools, fragment, on)
  if (choice.finish_reason !== undefined && choice.finish_reason !== null) {
    s.finishReason = choice.finish_reason
    closeOpen(s)
  }
}

/** `push` of {@link openAiToAnthropicStream}: the events of one chunk. */
const push = (s: State, on: CallEvents, chunk: OpenAi.ChatCompletionChunk): ReadonlyArray<Anthropic.StreamEvent> => {
  if (s.finished) return []
  const out: Array<Anthropic.StreamEvent> = []
  s.out = out
  if (!s.started) s.messageId = s.options.id ?? anthropicMessageId(chunk.id === "" ? "switchyard" : chunk.id)
  startMessage(s)
  const choice = chunk.choices.find(isFirst)
  if (choice !== undefined) pushChoice(s, on, choice)
  if (chunk.usage !== undefined && chunk.usage !== null) {
    s.usage = chunk.usage
    if (s.finishReason !== null) complete(s)
  }
  return out
}

/** `end` of {@link openAiToAnthropicStream}: completes a stream not completed yet. */
const end = (s: State): ReadonlyArray<Anthropic.StreamEvent> => {
  if (s.finished) return []
  const out: Array<Anthropic.StreamEvent> = []
  s.out = out
  startMessage(s)
  complete(s)
  return out
}
