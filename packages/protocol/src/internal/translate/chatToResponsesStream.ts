/**
 * The stateful OpenAI Chat chunk stream → Responses event translator
 * ({@link chatToResponsesStream}), one instance per stream, and the terminal events of a Responses
 * stream that failed after its headers ({@link streamErrorEvents}).
 */
import * as Predicate from "effect/Predicate"
import type * as OpenAi from "../../OpenAiChat.js"
import type * as R from "../../OpenAiResponses.js"
import * as Translate from "../../Translate.js"
import { type PendingToolCall, pushToolCallFragment, startUnstartedToolCalls } from "./chatChunks.js"
import { messageOutput, syntheticReasoningPrefix, thinkingReasoning } from "./responsesItems.js"
import { responseId, responseStatus, toResponsesUsage } from "./responsesMeta.js"
import { customInput, emptyToolMap, type ToolMap } from "./responsesToolNames.js"
import { parseArguments, present } from "./shared.js"

/** Translates one Chat chunk stream into Responses events; see {@link chatToResponsesStream}. */
export interface ChatToResponsesStream {
  readonly push: (chunk: OpenAi.ChatCompletionChunk) => ReadonlyArray<R.StreamEvent>
  /** Completes the stream (idempotent; nothing after a clean end). */
  readonly end: () => ReadonlyArray<R.StreamEvent>
  /** The terminal error sequence of a stream that failed after its headers ({@link streamErrorEvents}). */
  readonly fail: (message: string) => ReadonlyArray<R.StreamEvent>
}

type OpenItem =
  | { readonly kind: "message"; readonly index: number; readonly id: string; text: string }
  | { readonly kind: "reasoning"; readonly index: number; readonly id: string; text: string }
  | {
    readonly kind: "call"
    readonly index: number
    readonly key: number
    readonly item: R.FunctionCallItem | R.CustomToolCallItem
    args: string
  }

/**
 * The terminal events of a Responses stream that failed after its headers (anchor §6.4): an
 * `error` event (OpenAI's `code` / `message` / `param`, plus the anchor's `error: {"message",
 * "type": "SwitchyardError"}`), then `response.failed` with `status: "failed"`, the same error and
 * the output completed so far. No `response.completed` follows.
 */
export const streamErrorEvents = (options: {
  readonly message: string
  readonly sequenceNumber: number
  readonly response: R.ResponseObject
}): ReadonlyArray<R.StreamEvent> => [
  {
    type: "error",
    sequence_number: options.sequenceNumber,
    code: "SwitchyardError",
    message: options.message,
    param: null,
    error: { message: options.message, type: "SwitchyardError" }
  },
  {
    type: "response.failed",
    sequence_number: options.sequenceNumber + 1,
    response: {
      ...options.response,
      status: "failed",
      error: { code: "server_error", message: options.message },
      incomplete_details: null
    }
  }
]

/**
 * A stateful translator of one OpenAI Chat chunk stream (from a Chat upstream, or an Anthropic
 * one through `Translate.anthropicToOpenAiStream`) into Responses events, one instance per stream;
 * only choice 0 is read. Every event has a `sequence_number` one above the previous, from 0.
 *
 * - The first chunk emits `response.created` and `response.in_progress` (id `options.id`, else
 *   {@link responseId} of the chunk id; model `options.model`; `created_at` `options.createdAt` or 0).
 * - `reasoning_content` (and the text of `thinking_blocks` entries) → a reasoning item
 *   (`rs_switchyard_<n>`) with one summary part, streamed as `reasoning_summary_text.delta`s; a
 *   thinking signature ends that item (the next thinking opens another); signatures and redacted
 *   thinking are not carried. `content` / `refusal` → a message item with one `output_text` part.
 *   Each tool call → a `function_call` item opened once its name is known (earlier fragments are
 *   buffered), its argument fragments as `function_call_arguments.delta`s; a call of a
 *   namespaced tool of `options.tools` gets its namespace and original name back, and a call of a
 *   custom tool becomes a `custom_tool_call` whose input (read from the `{"input"}` arguments) is
 *   sent whole when the call ends. A new kind of content closes the open item first (`…done`
 *   events, then `output_item.done`), so items never overlap; fragments of an already closed call
 *   are dropped.
 * - Completion (when a usage chunk arrives with or after the finish reason, else in `end()`):
 *   `response.completed`, or `response.incomplete` for `length` / `content_filter`, with every
 *   output item and the usage.
 *
 * `fail(message)` emits {@link streamErrorEvents} (nothing if the stream already ended); later
 * calls return nothing.
 */
export const chatToResponsesStream = (options: {
  readonly model: string
  readonly id?: string
  readonly createdAt?: number
  readonly tools?: ToolMap
}): ChatToResponsesStream => {
  const tools = options.tools ?? emptyToolMap
  let id = options.id ?? "resp_switchyard"
  let sequence = 0
  let started = false
  let finished = false
  let finishReason: string | null = null
  let usage: OpenAi.Usage | undefined
  let open: OpenItem | undefined
  const output: Array<R.OutputItem> = []
  const calls = new Map<number, PendingToolCall>()

  const emit = (out: Array<R.StreamEvent>, event: R.StreamEvent) => {
    out.push({ ...event, sequence_number: sequence++ })
  }
  const response = (status: string, extra: Partial<R.ResponseObject> = {}): R.ResponseObject => ({
    id,
    object: "response",
    created_at: options.createdAt ?? 0,
    status,
    model: options.model,
    output: [...output],
    ...extra
  })
  const start = (out: Array<R.StreamEvent>) => {
    if (started) return
    started = true
    emit(out, { type: "response.created", sequence_number: 0, response: response("in_progress") })
    emit(out, { type: "response.in_progress", sequence_number: 0, response: response("in_progress") })
  }
  const close = (out: Array<R.StreamEvent>) => {
    const item = open
    if (item === undefined) return
    open = undefined
    const ref = { item_id: item.kind === "call" ? item.item.id ?? "" : item.id, output_index: item.index }
    let done: R.OutputItem
    switch (item.kind) {
      case "message": {
        const part: R.OutputText = { type: "output_text", text: item.text, annotations: [] }
        emit(out, {
          type: "response.output_text.done",
          sequence_number: 0,
          ...ref,
          content_index: 0,
          text: item.text,
          logprobs: []
        })
        emit(out, { type: "response.content_part.done", sequence_number: 0, ...ref, content_index: 0, part })
        done = messageOutput(item.id, [item.text], "completed")
        break
      }
      case "reasoning": {
        const part: R.SummaryText = { type: "summary_text", text: item.text }
        emit(out, {
          type: "response.reasoning_summary_text.done",
          sequence_number: 0,
          ...ref,
          summary_index: 0,
          text: item.text
        })
        emit(out, { type: "response.reasoning_summary_part.done", sequence_number: 0, ...ref, summary_index: 0, part })
        done = thinkingReasoning(item.id, item.text)
        break
      }
      case "call": {
        if (item.item.type === "custom_tool_call") {
          const input = customInput(parseArguments(item.args), item.args)
          if (input !== "") {
            emit(out, { type: "response.custom_tool_call_input.delta", sequence_number: 0, ...ref, delta: input })
          }
          emit(out, { type: "response.custom_tool_call_input.done", sequence_number: 0, ...ref, input })
          done = { ...item.item, input }
        } else {
          emit(out, {
            type: "response.function_call_arguments.done",
            sequence_number: 0,
            ...ref,
            arguments: item.args,
            name: item.item.name
          })
          done = { ...item.item, arguments: item.args, status: "completed" }
        }
        break
      }
    }
    output.push(done)
    emit(out, { type: "response.output_item.done", sequence_number: 0, output_index: item.index, item: done })
  }
  const openText = (
    out: Array<R.StreamEvent>,
    kind: "message" | "reasoning"
  ): OpenItem & { kind: "message" | "reasoning" } => {
    if (open !== undefined && open.kind === kind) return open
    close(out)
    const index = output.length
    if (kind === "message") {
      const next = { kind, index, id: `msg_switchyard_${index}`, text: "" }
      open = next
      emit(out, {
        type: "response.output_item.added",
        sequence_number: 0,
        output_index: index,
        item: messageOutput(next.id, [], "in_progress")
      })
      emit(out, {
        type: "response.content_part.added",
        sequence_number: 0,
        item_id: next.id,
        output_index: index,
        content_index: 0,
        part: { type: "output_text", text: "", annotations: [] }
      })
      return next
    }
    const next = { kind, index, id: `${syntheticReasoningPrefix}${index}`, text: "" }
    open = next
    emit(out, {
      type: "response.output_item.added",
      sequence_number: 0,
      output_index: index,
      item: thinkingReasoning(next.id, "")
    })
    emit(out, {
      type: "response.reasoning_summary_part.added",
      sequence_number: 0,
      item_id: next.id,
      output_index: index,
      summary_index: 0,
      part: { type: "summary_text", text: "" }
    })
    return next
  }
  const reasoning = (out: Array<R.StreamEvent>, text: string, signed: boolean) => {
    if (text !== "") {
      const item = openText(out, "reasoning")
      item.text += text
      emit(out, {
        type: "response.reasoning_summary_text.delta",
        sequence_number: 0,
        item_id: item.id,
        output_index: item.index,
        summary_index: 0,
        delta: text
      })
    }
    if (signed && open?.kind === "reasoning") close(out)
  }
  const startCall = (out: Array<R.StreamEvent>, key: number, state: PendingToolCall) => {
    close(out)
    state.started = true
    const index = output.length
    const flat = state.name ?? ""
    const origin = tools.namespaced.get(flat)
    const name = origin?.name ?? flat
    const namespace = origin !== undefined ? { namespace: origin.namespace } : {}
    const callId = state.id ?? `call_switchyard_${index}`
    const item: R.FunctionCallItem | R.CustomToolCallItem = tools.custom.has(flat)
      ? { type: "custom_tool_call", id: `ctc_switchyard_${index}`, call_id: callId, name, input: "", ...namespace }
      : {
        type: "function_call",
        id: `fc_switchyard_${index}`,
        call_id: callId,
        name,
        arguments: "",
        status: "in_progress",
        ...namespace
      }
    open = { kind: "call", index, key, item, args: "" }
    emit(out, { type: "response.output_item.added", sequence_number: 0, output_index: index, item })
    if (state.pending !== "") callArgs(out, state.pending)
    state.pending = ""
  }
  const callArgs = (out: Array<R.StreamEvent>, args: string) => {
    if (open?.kind !== "call" || args === "") return
    open.args += args
    if (open.item.type === "function_call") {
      emit(out, {
        type: "response.function_call_arguments.delta",
        sequence_number: 0,
        item_id: open.item.id ?? "",
        output_index: open.index,
        delta: args
      })
    }
  }
  const complete = (out: Array<R.StreamEvent>) => {
    close(out)
    startUnstartedToolCalls(calls, (key, state) => {
      startCall(out, key, state)
      close(out)
    })
    const { reason, status } = responseStatus(Translate.fromFinishReason(finishReason))
    const final = response(status, {
      usage: toResponsesUsage(Translate.fromOpenAiUsage(usage)),
      error: null,
      incomplete_details: reason !== undefined ? { reason } : null
    })
    emit(out, {
      type: status === "completed" ? "response.completed" : "response.incomplete",
      sequence_number: 0,
      response: final
    })
    finished = true
  }

  const push = (chunk: OpenAi.ChatCompletionChunk): ReadonlyArray<R.StreamEvent> => {
    if (finished) return []
    const out: Array<R.StreamEvent> = []
    if (!started) id = options.id ?? responseId(chunk.id)
    start(out)
    const choice = chunk.choices.find((c) => c.index === 0)
    if (choice !== undefined) {
      const delta = choice.delta
      const entries = delta.thinking_blocks ?? []
      let known = false
      for (const entry of entries) {
        if (entry.type === "thinking" && "thinking" in entry && Predicate.isString(entry.thinking)) {
          known = true
          const signature = "signature" in entry ? entry.signature : undefined
          reasoning(out, entry.thinking, Predicate.isString(signature) && signature !== "")
        } else if (entry.type === "redacted_thinking") known = true
      }
      if (!known) reasoning(out, delta.reasoning_content ?? "", false)
      for (const text of [delta.content, delta.refusal]) {
        if (present(text) && text !== "") {
          const item = openText(out, "message")
          item.text += text
          emit(out, {
            type: "response.output_text.delta",
            sequence_number: 0,
            item_id: item.id,
            output_index: item.index,
            content_index: 0,
            delta: text,
            logprobs: []
          })
        }
      }
      for (const fragment of delta.tool_calls ?? []) {
        pushToolCallFragment(calls, fragment, {
          start: (key, state) => startCall(out, key, state),
          append: (key, args) => {
            if (open?.kind === "call" && open.key === key) callArgs(out, args)
          }
        })
      }
      if (present(choice.finish_reason)) {
        finishReason = choice.finish_reason
        close(out)
      }
    }
    if (present(chunk.usage)) {
      usage = chunk.usage
      if (finishReason !== null) complete(out)
    }
    return out
  }
  const end = (): ReadonlyArray<R.StreamEvent> => {
    if (finished) return []
    const out: Array<R.StreamEvent> = []
    start(out)
    complete(out)
    return out
  }
  const failStream = (message: string): ReadonlyArray<R.StreamEvent> => {
    if (finished) return []
    const out: Array<R.StreamEvent> = []
    start(out)
    finished = true
    out.push(...streamErrorEvents({ message, sequenceNumber: sequence, response: response("failed") }))
    sequence += 2
    return out
  }
  return { push, end, fail: failStream }
}
