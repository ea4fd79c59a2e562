/**
 * OpenAI Chat chunk pieces shared by the stream translators: building the chunks of choice 0 and
 * the closing usage chunk (Anthropic → Chat, Responses → Chat), and assembling streamed tool calls
 * from their fragments (Chat → Anthropic, Chat → Responses).
 */
import type * as OpenAi from "../../OpenAiChat.js"

/** The `delta` of a chunk's choice. */
export type ChunkDelta = OpenAi.ChatCompletionChunk["choices"][number]["delta"]

/** A chunk whose only choice (index 0) carries `delta` and `finishReason`; `created` is 0. */
export const chatChunk = (
  id: string,
  model: string,
  delta: ChunkDelta,
  finishReason: string | null = null
): OpenAi.ChatCompletionChunk => ({
  id,
  object: "chat.completion.chunk",
  created: 0,
  model,
  choices: [{ index: 0, delta, finish_reason: finishReason }]
})

/** The last chunk of a stream: no choices and the usage (as with `stream_options.include_usage`). */
export const usageChunk = (id: string, model: string, usage: OpenAi.Usage): OpenAi.ChatCompletionChunk => ({
  id,
  object: "chat.completion.chunk",
  created: 0,
  model,
  choices: [],
  usage
})

/** A delta made of one tool-call fragment. */
export const toolDelta = (fragment: typeof OpenAi.ToolCallDelta.Type): ChunkDelta => ({ tool_calls: [fragment] })

/** A streamed tool call being assembled from its fragments (which share an `index`). */
export interface PendingToolCall {
  id: string | undefined
  name: string | undefined
  /** Argument text that arrived before the call was started. */
  pending: string
  started: boolean
}

/**
 * Feeds one tool-call fragment of a delta into `calls` (keyed by the fragment's `index`): the first
 * id and the first name stay. Until the call has started, its argument text is added to `pending`
 * and `start` is called as soon as its name is known (`start` sets `started` and takes `pending`);
 * afterwards `append` gets the fragment's argument text (possibly `""`).
 */
export const pushToolCallFragment = (
  calls: Map<number, PendingToolCall>,
  fragment: typeof OpenAi.ToolCallDelta.Type,
  on: {
    readonly start: (key: number, call: PendingToolCall) => void
    readonly append: (key: number, args: string) => void
  }
): void => {
  const key = fragment.index
  const state = calls.get(key) ?? { id: undefined, name: undefined, pending: "", started: false }
  calls.set(key, state)
  if (fragment.id !== undefined && state.id === undefined) state.id = fragment.id
  if (fragment.function?.name !== undefined && state.name === undefined) state.name = fragment.function.name
  const args = fragment.function?.arguments ?? ""
  if (!state.started) {
    state.pending += args
    if (state.name !== undefined) on.start(key, state)
  } else on.append(key, args)
}

/**
 * Calls `start` for each call of `calls` that never started (it never got a name), in `index`
 * order, so that its id and arguments are not lost.
 */
export const startUnstartedToolCalls = (
  calls: ReadonlyMap<number, PendingToolCall>,
  start: (key: number, call: PendingToolCall) => void
): void => {
  for (const [key, state] of [...calls.entries()].sort(([a], [b]) => a - b)) {
    if (!state.started) start(key, state)
  }
}
