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

/** A started content block, by what it is translated as. */
type OpenBlock =
  | { readonly kind: "text" | "ignored" }
  | { readonly kind: "thinking"; readonly startSignature: string; sawSignature: boolean }
  | { readonly kind: "tool"; readonly toolIndex: number; readonly startInput: JsonObject; sawDelta: boolean }

/** One stream's translation state: a record per stream (never shared), read and written by the steps below. */
interface State {
  id: string
  model: string
  started: boolean
  finished: boolean
  toolCount: number
  stopReason: string | null
  /** Anthropic counters: `message_start` gives the input side, `message_delta` the (cumulative) rest. */
  usage: Anthropic.Usage
  readonly blocks: Map<number, OpenBlock>
}

/** The event of `type`. */
type EventOf<T extends Anthropic.StreamEvent["type"]> = Extract<Anthropic.StreamEvent, { readonly type: T }>

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
 *
 * The state is one {@link State} record; each event kind has a step of its own below.
 */
export const anthropicToOpenAiStream = (): AnthropicToOpenAiStream => {
  const s: State = {
    id: openAiCompletionId(""),
    model: "",
    started: false,
    finished: false,
    toolCount: 0,
    stopReason: null,
    usage: { input_tokens: 0, output_tokens: 0 },
    blocks: new Map()
  }
  return { push: (event) => push(s, event), end: () => end(s) }
}

/** A chunk of the stream's id and model carrying `delta`. */
const chunkOf = (s: State, delta: ChunkDelta, finishReason: string | null = null): OpenAi.ChatCompletionChunk =>
  chatChunk(s.id, s.model, delta, finishReason)

/** The role chunk, once per stream (nothing afterwards). */
const start = (s: State): ReadonlyArray<OpenAi.ChatCompletionChunk> => {
  if (s.started) return []
  s.started = true
  return [chunkOf(s, { role: "assistant", content: "" })]
}

/** The finish chunk and the usage chunk; the stream is then finished. */
const finish = (s: State): ReadonlyArray<OpenAi.ChatCompletionChunk> => {
  s.finished = true
  return [
    chunkOf(s, {}, toFinishReason(s.stopReason ?? "end_turn")),
    usageChunk(s.id, s.model, toOpenAiUsage(fromAnthropicUsage(s.usage)))
  ]
}

/** A delta of reasoning text. */
const reasoningDelta = (text: string): ChunkDelta => ({ reasoning_content: text })

/** A delta of a thinking signature. */
const signatureDelta = (signature: string): ChunkDelta => ({
  thinking_blocks: [{ type: "thinking", thinking: "", signature }]
})

/** `message_start`: the stream's id, model and input usage; the role chunk. */
const messageStart = (s: State, event: EventOf<"message_start">): ReadonlyArray<OpenAi.ChatCompletionChunk> => {
  s.id = openAiCompletionId(event.message.id)
  s.model = event.message.model
  s.usage = event.message.usage
  return start(s)
}

/** `content_block_start`: the block is remembered by its index; the content it starts with. */
const blockStart = (s: State, event: EventOf<"content_block_start">): ReadonlyArray<OpenAi.ChatCompletionChunk> => {
  const out = [...start(s)]
  const block = event.content_block
  if (ofType(block, "text")) {
    s.blocks.set(event.index, { kind: "text" })
    if (block.text !== "") out.push(chunkOf(s, { content: block.text }))
  } else if (ofType(block, "thinking")) {
    s.blocks.set(event.index, { kind: "thinking", startSignature: block.signature ?? "", sawSignature: false })
    if (block.thinking !== "") out.push(chunkOf(s, reasoningDelta(block.thinking)))
  } else if (ofType(block, "redacted_thinking")) {
    s.blocks.set(event.index, { kind: "ignored" })
    out.push(chunkOf(s, { thinking_blocks: [{ type: "redacted_thinking", data: block.data }] }))
  } else if (ofType(block, "tool_use")) {
    const toolIndex = s.toolCount++
    s.blocks.set(event.index, { kind: "tool", toolIndex, startInput: block.input, sawDelta: false })
    out.push(
      chunkOf(
        s,
        toolDelta({ index: toolIndex, id: block.id, type: "function", function: { name: block.name, arguments: "" } })
      )
    )
  } else s.blocks.set(event.index, { kind: "ignored" })
  return out
}

/** `content_block_delta`: a delta of the kind its block takes, as content, reasoning, signature or arguments. */
const blockDelta = (s: State, event: EventOf<"content_block_delta">): ReadonlyArray<OpenAi.ChatCompletionChunk> => {
  const block = s.blocks.get(event.index)
  const delta = event.delta
  if (block === undefined) return []
  const out = [...start(s)]
  if (block.kind === "text" && ofType(delta, "text_delta")) {
    if (delta.text !== "") out.push(chunkOf(s, { content: delta.text }))
  } else if (block.kind === "thinking" && ofType(delta, "thinking_delta")) {
    if (delta.thinking !== "") out.push(chunkOf(s, reasoningDelta(delta.thinking)))
  } else if (block.kind === "thinking" && ofType(delta, "signature_delta")) {
    block.sawSignature = true
    if (delta.signature !== "") out.push(chunkOf(s, signatureDelta(delta.signature)))
  } else if (block.kind === "tool" && ofType(delta, "input_json_delta")) {
    block.sawDelta = true
    if (delta.partial_json !== "") {
      out.push(chunkOf(s, toolDelta({ index: block.toolIndex, function: { arguments: delta.partial_json } })))
    }
  }
  return out
}

/** `content_block_stop`: what a block gave only at its start (a tool's whole input, a thinking signature). */
const blockStop = (s: State, event: EventOf<"content_block_stop">): ReadonlyArray<OpenAi.ChatCompletionChunk> => {
  const block = s.blocks.get(event.index)
  // A provider that sends the whole input in content_block_start and no deltas.
  if (block?.kind === "tool" && !block.sawDelta && Object.keys(block.startInput).length > 0) {
    return [
      chunkOf(s, toolDelta({ index: block.toolIndex, function: { arguments: JSON.stringify(block.startInput) } }))
    ]
  }
  // A provider that sends the signature in content_block_start and no signature_delta.
  if (block?.kind === "thinking" && !block.sawSignature && block.startSignature !== "") {
    return [chunkOf(s, signatureDelta(block.startSignature))]
  }
  return []
}

/** `message_delta`: the stop reason and the usage so far; the finish and usage chunks. */
const messageDelta = (s: State, event: EventOf<"message_delta">): ReadonlyArray<OpenAi.ChatCompletionChunk> => {
  s.stopReason = event.delta.stop_reason
  const u = event.usage
  const usage = s.usage
  s.usage = {
    input_tokens: u.input_tokens ?? usage.input_tokens,
    output_tokens: u.output_tokens,
    cache_read_input_tokens: u.cache_read_input_tokens ?? usage.cache_read_input_tokens,
    cache_creation_input_tokens: u.cache_creation_input_tokens ?? usage.cache_creation_input_tokens,
    cache_creation: u.cache_creation ?? usage.cache_creation,
    cost: u.cost ?? usage.cost
  }
  return [...start(s), ...finish(s)]
}

/** `push` of {@link anthropicToOpenAiStream}: the chunks of one event, by its kind. */
const push = (s: State, event: Anthropic.StreamEvent): ReadonlyArray<OpenAi.ChatCompletionChunk> => {
  if (s.finished) return []
  switch (event.type) {
    case "message_start":
      return messageStart(s, event)
    case "content_block_start":
      return blockStart(s, event)
    case "content_block_delta":
      return blockDelta(s, event)
    case "content_block_stop":
      return blockStop(s, event)
    case "message_delta":
      return messageDelta(s, event)
    case "message_stop":
      return s.started ? finish(s) : []
    case "ping":
    case "error":
      return []
  }
}

/** `end` of {@link anthropicToOpenAiStream}: closes a started stream not finished yet. */
const end = (s: State): ReadonlyArray<OpenAi.ChatCompletionChunk> => s.finished || !s.started ? [] : finish(s)
