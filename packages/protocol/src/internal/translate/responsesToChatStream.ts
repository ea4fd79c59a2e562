/**
 * The stateful Responses event stream → OpenAI Chat chunk translator
 * ({@link responsesToChatStream}), one instance per stream.
 */
import * as Predicate from "effect/Predicate"
import type * as N from "../../Neutral.js"
import type * as OpenAi from "../../OpenAiChat.js"
import type * as R from "../../OpenAiResponses.js"
import * as Translate from "../../Translate.js"
import { chatChunk, type ChunkDelta, toolDelta, usageChunk } from "./chatChunks.js"
import { fromResponsesUsage, stopReasonOf } from "./responsesMeta.js"
import { flatToolName } from "./responsesToolNames.js"
import { ofType } from "./shared.js"

/** Translates one Responses event stream into Chat chunks; see {@link responsesToChatStream}. */
export interface ResponsesToChatStream {
  readonly push: (event: R.StreamEvent) => ReadonlyArray<OpenAi.ChatCompletionChunk>
  readonly end: () => ReadonlyArray<OpenAi.ChatCompletionChunk>
}

interface StreamCall {
  readonly toolIndex: number
  readonly custom: boolean
  sawDelta: boolean
  input: string
}

/**
 * A stateful translator of one Responses event stream (from a Responses upstream) into OpenAI Chat
 * chunks, one instance per stream (Anthropic clients: then `Translate.openAiToAnthropicStream`):
 *
 * - `response.created` → a role chunk (id {@link Translate.openAiCompletionId} of the response id,
 *   the response's model);
 * - `output_text` / `refusal` deltas → `content` / `refusal`; reasoning summary deltas →
 *   `reasoning_content`, a summary part after the first of an item preceded by
 *   `Translate.reasoningSummarySeparator` (as the buffered translation joins them);
 * - a `function_call` item → a `tool_calls` delta `{index: <n-th call>, id: call_id, type:
 *   "function", function: {name: flatToolName(namespace, name) or name, arguments: ""}}`, then
 *   its argument deltas (or, when none came, the item's arguments at `output_item.done`); a
 *   `custom_tool_call` item likewise, its input sent at `output_item.done` as the arguments
 *   `{"input": <text>}`;
 * - `response.completed` / `response.incomplete` → a finish chunk (`tool_calls` when a call was
 *   seen, else `stop`; `length` for `max_output_tokens`, `content_filter`), then a usage chunk
 *   (`choices: []`); nothing is emitted after it.
 *
 * `error` and `response.failed` events produce nothing: the caller must check an event's `type`
 * first and report the failure its own way (anchor §6.4). Other events (hosted tools, annotations,
 * `reasoning_text`) are skipped. `end()` closes a stream that stopped without a terminal event
 * (`stop`, usage so far); it is idempotent.
 */
export const responsesToChatStream = (): ResponsesToChatStream => {
  let id = Translate.openAiCompletionId("")
  let model = ""
  let started = false
  let finished = false
  let toolCount = 0
  let usage: N.NeutralUsage = { inputTokens: 0, outputTokens: 0 }
  const items = new Map<string, StreamCall>()
  const summaries = new Set<string>()

  const chunk = (delta: ChunkDelta, finishReason: string | null = null): OpenAi.ChatCompletionChunk =>
    chatChunk(id, model, delta, finishReason)
  const start = (out: Array<OpenAi.ChatCompletionChunk>) => {
    if (started) return
    started = true
    out.push(chunk({ role: "assistant", content: "" }))
  }
  const finish = (reason: string): ReadonlyArray<OpenAi.ChatCompletionChunk> => {
    finished = true
    return [
      chunk({}, reason),
      usageChunk(id, model, Translate.toOpenAiUsage(usage))
    ]
  }

  const push = (event: R.StreamEvent): ReadonlyArray<OpenAi.ChatCompletionChunk> => {
    if (finished) return []
    const out: Array<OpenAi.ChatCompletionChunk> = []
    if (ofType(event, "response.created") || ofType(event, "response.in_progress")) {
      if (!started) {
        id = Translate.openAiCompletionId(event.response.id)
        model = event.response.model
      }
      start(out)
      return out
    }
    if (ofType(event, "error") || ofType(event, "response.failed")) return []
    start(out)
    if (ofType(event, "response.output_text.delta")) {
      if (event.delta !== "") out.push(chunk({ content: event.delta }))
    } else if (ofType(event, "response.refusal.delta")) {
      if (event.delta !== "") out.push(chunk({ refusal: event.delta }))
    } else if (ofType(event, "response.reasoning_summary_part.added")) {
      if (event.summary_index > 0 && summaries.has(event.item_id)) {
        out.push(chunk({ reasoning_content: Translate.reasoningSummarySeparator }))
      }
      summaries.add(event.item_id)
    } else if (ofType(event, "response.reasoning_summary_text.delta")) {
      if (event.delta !== "") out.push(chunk({ reasoning_content: event.delta }))
    } else if (ofType(event, "response.output_item.added")) {
      const item = event.item
      if (ofType(item, "function_call") || ofType(item, "custom_tool_call")) {
        const toolIndex = toolCount++
        const state: StreamCall = { toolIndex, custom: item.type === "custom_tool_call", sawDelta: false, input: "" }
        items.set(item.id ?? `output_${event.output_index}`, state)
        const name = item.namespace !== undefined ? flatToolName(item.namespace, item.name) : item.name
        out.push(
          chunk(toolDelta({ index: toolIndex, id: item.call_id, type: "function", function: { name, arguments: "" } }))
        )
      }
    } else if (ofType(event, "response.function_call_arguments.delta")) {
      const state = items.get(event.item_id)
      if (state !== undefined && event.delta !== "") {
        state.sawDelta = true
        out.push(chunk(toolDelta({ index: state.toolIndex, function: { arguments: event.delta } })))
      }
    } else if (ofType(event, "response.custom_tool_call_input.delta")) {
      const state = items.get(event.item_id)
      if (state !== undefined) state.input += event.delta
    } else if (ofType(event, "response.output_item.done")) {
      const item = event.item
      const state = items.get(
        ("id" in item && Predicate.isString(item.id) ? item.id : undefined) ?? `output_${event.output_index}`
      )
      if (state !== undefined && ofType(item, "function_call") && !state.sawDelta && item.arguments !== "") {
        out.push(chunk(toolDelta({ index: state.toolIndex, function: { arguments: item.arguments } })))
      } else if (state !== undefined && ofType(item, "custom_tool_call")) {
        const input = item.input !== "" ? item.input : state.input
        out.push(chunk(toolDelta({ index: state.toolIndex, function: { arguments: JSON.stringify({ input }) } })))
      }
    } else if (ofType(event, "response.completed") || ofType(event, "response.incomplete")) {
      usage = fromResponsesUsage(event.response.usage)
      const stop = stopReasonOf(event.response, toolCount > 0)
      out.push(...finish(Translate.toFinishReason(stop) ?? "stop"))
    }
    return out
  }
  const end = (): ReadonlyArray<OpenAi.ChatCompletionChunk> =>
    finished || !started ? [] : finish(toolCount > 0 ? "tool_calls" : "stop")
  return { push, end }
}
