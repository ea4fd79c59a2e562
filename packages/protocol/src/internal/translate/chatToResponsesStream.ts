/**
 * The stateful OpenAI Chat chunk stream → Responses event translator
 * ({@link chatToResponsesStream}), one instance per stream, and the terminal events of a Responses
 * stream that failed after its headers ({@link streamErrorEvents}).
 */
import * as Predicate from "effect/Predicate"
import type * as OpenAi from "../../OpenAiChat.js"
import type * as R from "../../OpenAiResponses.js"
import * as Translate from "../../Translate.js"
import { type ChunkDelta, type PendingToolCall, pushToolCallFragment, startUnstartedToolCalls } from "./chatChunks.js"
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

/** A choice of a chunk. */
type ChunkChoice = OpenAi.ChatCompletionChunk["choices"][number]

/** The choice the translation reads. */
const isFirst = (choice: ChunkChoice): boolean => choice.index === 0

/** The options of {@link chatToResponsesStream}. */
interface Options {
  readonly model: string
  readonly id?: string
  readonly createdAt?: number
  readonly tools?: ToolMap
}

/** One stream's translation state: a record per stream (never shared), read and written by the steps below. */
interface State {
  readonly options: Options
  readonly tools: ToolMap
  id: string
  sequence: number
  started: boolean
  finished: boolean
  finishReason: string | null
  usage: OpenAi.Usage | undefined
  open: OpenItem | undefined
  readonly output: Array<R.OutputItem>
  readonly calls: Map<number, PendingToolCall>
  /** Where the current `push` / `end` / `fail` puts its events. */
  out: Array<R.StreamEvent>
}

/** The tool-call fragment callbacks of `pushToolCallFragment`, made once per stream. */
interface CallEvents {
  readonly start: (key: number, call: PendingToolCall) => void
  readonly append: (key: number, args: string) => void
}

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
 *
 * The state is one {@link State} record; each kind of chunk content has a step of its own below.
 */
export const chatToResponsesStream = (options: Options): ChatToResponsesStream => {
  const s: State = {
    options,
    tools: options.tools ?? emptyToolMap,
    id: options.id ?? "resp_switchyard",
    sequence: 0,
    started: false,
    finished: false,
    finishReason: null,
    usage: undefined,
    open: undefined,
    output: [],
    calls: new Map(),
    out: []
  }
  const on: CallEvents = {
    start: (key, call) => startCall(s, key, call),
    append: (key, args) => {
      if (s.open?.kind === "call" && s.open.key === key) callArgs(s, args)
    }
  }
  return { push: (chunk) => push(s, on, chunk), end: () => end(s), fail: (message) => fail(s, message) }
}

/** Emits `event` with the stream's next sequence number. */
const emit = (s: State, event: R.StreamEvent): void => {
  s.out.push({ ...event, sequence_number: s.sequence++ })
}

/** The response object as it stands: `status`, the output items closed so far, and `extra`. */
const responseOf = (s: State, status: string, extra: Partial<R.ResponseObject> = {}): R.ResponseObject => ({
  id: s.id,
  object: "response",
  created_at: s.options.createdAt ?? 0,
  status,
  model: s.options.model,
  output: [...s.output],
  ...extra
})

/** `response.created` and `response.in_progress`, once per stream. */
const start = (s: State): void => {
  if (s.started) return
  s.started = true
  emit(s, { type: "response.created", sequence_number: 0, response: responseOf(s, "in_progress") })
  emit(s, { type: "response.in_progress", sequence_number: 0, response: responseOf(s, "in_progress") })
}

/** The `item_id` / `output_index` pair of an open item's events. */
interface ItemRef {
  readonly item_id: string
  readonly output_index: number
}

/** Closes the open item, if any: its `…done` events, then `output_item.done`; the item joins the output. */
const close = (s: State): void => {
  const item = s.open
  if (item === undefined) return
  s.open = undefined
  const ref: ItemRef = { item_id: item.kind === "call" ? item.item.id ?? "" : item.id, output_index: item.index }
  const done = item.kind === "message"
    ? closeMessage(s, item, ref)
    : item.kind === "reasoning"
    ? closeReasoning(s, item, ref)
    : closeCall(s, item, ref)
  s.output.push(done)
  emit(s, { type: "response.output_item.done", sequence_number: 0, output_index: item.index, item: done })
}

/** The `…done` events of a message item; its completed form. */
const closeMessage = (s: State, item: OpenItem & { kind: "message" }, ref: ItemRef): R.OutputItem => {
  const part: R.OutputText = { type: "output_text", text: item.text, annotations: [] }
  emit(s, {
    type: "response.output_text.done",
    sequence_number: 0,
    ...ref,
    content_index: 0,
    text: item.text,
    logprobs: []
  })
  emit(s, { type: "response.content_part.done", sequence_number: 0, ...ref, content_index: 0, part })
  return messageOutput(item.id, [item.text], "completed")
}

/** The `…done` events of a reasoning item; its completed form. */
const closeReasoning = (s: State, item: OpenItem & { kind: "reasoning" }, ref: ItemRef): R.OutputItem => {
  const part: R.SummaryText = { type: "summary_text", text: item.text }
  emit(s, {
    type: "response.reasoning_summary_text.done",
    sequence_number: 0,
    ...ref,
    summary_index: 0,
    text: item.text
  })
  emit(s, { type: "response.reasoning_summary_part.done", sequence_number: 0, ...ref, summary_index: 0, part })
  return thinkingReasoning(item.id, item.text)
}

/** The `…done` events of a call item (a custom call's whole input first); its completed form. */
const closeCall = (s: State, item: OpenItem & { kind: "call" }, ref: ItemRef): R.OutputItem => {
  if (item.item.type === "custom_tool_call") {
    const input = customInput(parseArguments(item.args), item.args)
    if (input !== "") {
      emit(s, { type: "response.custom_tool_call_input.delta", sequence_number: 0, ...ref, delta: input })
    }
    emit(s, { type: "response.custom_tool_call_input.done", sequence_number: 0, ...ref, input })
    return { ...item.item, input }
  }
  emit(s, {
    type: "response.function_call_arguments.done",
    sequence_number: 0,
    ...ref,
    arguments: item.args,
    name: item.item.name
  })
  return { ...item.item, arguments: item.args, status: "completed" }
}

/** The open message item, opened (after closing any other) when another kind is open. */
const openMessage = (s: State): OpenItem & { kind: "message" } => {
  if (s.open !== undefined && s.open.kind === "message") return s.open
  close(s)
  const index = s.output.length
  const next = { kind: "message" as const, index, id: `msg_switchyard_${index}`, text: "" }
  s.open = next
  emit(s, {
    type: "response.output_item.added",
    sequence_number: 0,
    output_index: index,
    item: messageOutput(next.id, [], "in_progress")
  })
  emit(s, {
    type: "response.content_part.added",
    sequence_number: 0,
    item_id: next.id,
    output_index: index,
    content_index: 0,
    part: { type: "output_text", text: "", annotations: [] }
  })
  return next
}

/** The open reasoning item, opened (after closing any other) when another kind is open. */
const openReasoning = (s: State): OpenItem & { kind: "reasoning" } => {
  if (s.open !== undefined && s.open.kind === "reasoning") return s.open
  close(s)
  const index = s.output.length
  const next = { kind: "reasoning" as const, index, id: `${syntheticReasoningPrefix}${index}`, text: "" }
  s.open = next
  emit(s, {
    type: "response.output_item.added",
    sequence_number: 0,
    output_index: index,
    item: thinkingReasoning(next.id, "")
  })
  emit(s, {
    type: "response.reasoning_summary_part.added",
    sequence_number: 0,
    item_id: next.id,
    output_index: index,
    summary_index: 0,
    part: { type: "summary_text", text: "" }
  })
  return next
}

/** Reasoning text on the open reasoning item; a signature (`signed`) then closes that item. */
const reasoning = (s: State, text: string, signed: boolean): void => {
  if (text !== "") {
    const item = openReasoning(s)
    item.text += text
    emit(s, {
      type: "response.reasoning_summary_text.delta",
      sequence_number: 0,
      item_id: item.id,
      output_index: item.index,
      summary_index: 0,
      delta: text
    })
  }
  if (signed && s.open?.kind === "reasoning") close(s)
}

/** A delta's thinking: its known `thinking_blocks` entries, else its `reasoning_content`. */
const deltaThinking = (s: State, delta: ChunkDelta): void => {
  let known = false
  for (const entry of delta.thinking_blocks ?? []) {
    if (entry.type === "thinking" && "thinking" in entry && Predicate.isString(entry.thinking)) {
      known = true
      const signature = "signature" in entry ? entry.signature : undefined
      reasoning(s, entry.thinking, Predicate.isString(signature) && signature !== "")
    } else if (entry.type === "redacted_thinking") known = true
  }
  if (!known) reasoning(s, delta.reasoning_content ?? "", false)
}

/** Message text (`content` or `refusal`) on the open message item; nothing for none or `""`. */
const messageText = (s: State, text: string | null | undefined): void => {
  if (!present(text) || text === "") return
  const item = openMessage(s)
  item.text += text
  emit(s, {
    type: "response.output_text.delta",
    sequence_number: 0,
    item_id: item.id,
    output_index: item.index,
    content_index: 0,
    delta: text,
    logprobs: []
  })
}

/** The item of a call about to open at output `index`: a custom or a function call, its namespace restored. */
const callItem = (s: State, call: PendingToolCall, index: number): R.FunctionCallItem | R.CustomToolCallItem => {
  const flat = call.name ?? ""
  const origin = s.tools.namespaced.get(flat)
  const name = origin?.name ?? flat
  const namespace = origin !== undefined ? { namespace: origin.namespace } : {}
  const callId = call.id ?? `call_switchyard_${index}`
  return s.tools.custom.has(flat)
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
}

/** Opens the call item of tool call `key` (after closing the open item), with its buffered arguments. */
const startCall = (s: State, key: number, call: PendingToolCall): void => {
  close(s)
  call.started = true
  const index = s.output.length
  const item = callItem(s, call, index)
  s.open = { kind: "call", index, key, item, args: "" }
  emit(s, { type: "response.output_item.added", sequence_number: 0, output_index: index, item })
  if (call.pending !== "") callArgs(s, call.pending)
  call.pending = ""
}

/** Argument text of the open call: kept, and streamed as a delta for a function call. */
const callArgs = (s: State, args: string): void => {
  const open = s.open
  if (open?.kind !== "call" || args === "") return
  open.args += args
  if (open.item.type === "function_call") {
    emit(s, {
      type: "response.function_call_arguments.delta",
      sequence_number: 0,
      item_id: open.item.id ?? "",
      output_index: open.index,
      delta: args
    })
  }
}

/** Closes every item (calls that never got a name included) and emits the terminal response event. */
const complete = (s: State): void => {
  close(s)
  startUnstartedToolCalls(s.calls, (key, call) => {
    startCall(s, key, call)
    close(s)
  })
  const { reason, status } = responseStatus(Translate.fromFinishReason(s.finishReason))
  const final = responseOf(s, status, {
    usage: toResponsesUsage(Translate.fromOpenAiUsage(s.usage)),
    error: null,
    incomplete_details: reason !== undefined ? { reason } : null
  })
  emit(s, {
    type: status === "completed" ? "response.completed" : "response.incomplete",
    sequence_number: 0,
    response: final
  })
  s.finished = true
}

/** What choice 0 of a chunk carries: thinking, text, tool-call fragments, the finish reason. */
const pushChoice = (s: State, on: CallEvents, choice: ChunkChoice): void => {
  const delta = choice.delta
  deltaThinking(s, delta)
  messageText(s, delta.content)
  messageText(s, delta.refusal)
  for (const fragment of delta.tool_calls ?? []) pushToolCallFragment(s.calls, fragment, on)
  if (present(choice.finish_reason)) {
    s.finishReason = choice.finish_reason
    close(s)
  }
}

/** `push` of {@link chatToResponsesStream}: the events of one chunk. */
const push = (s: State, on: CallEvents, chunk: OpenAi.ChatCompletionChunk): ReadonlyArray<R.StreamEvent> => {
  if (s.finished) return []
  const out: Array<R.StreamEvent> = []
  s.out = out
  if (!s.started) s.id = s.options.id ?? responseId(chunk.id)
  start(s)
  const choice = chunk.choices.find(isFirst)
  if (choice !== undefined) pushChoice(s, on, choice)
  if (present(chunk.usage)) {
    s.usage = chunk.usage
    if (s.finishReason !== null) complete(s)
  }
  return out
}

/** `end` of {@link chatToResponsesStream}: completes a stream not completed yet. */
const end = (s: State): ReadonlyArray<R.StreamEvent> => {
  if (s.finished) return []
  const out: Array<R.StreamEvent> = []
  s.out = out
  start(s)
  complete(s)
  return out
}

/** `fail` of {@link chatToResponsesStream}: {@link streamErrorEvents} of a stream not ended yet. */
const fail = (s: State, message: string): ReadonlyArray<R.StreamEvent> => {
  if (s.finished) return []
  const out: Array<R.StreamEvent> = []
  s.out = out
  start(s)
  s.finished = true
  out.push(...streamErrorEvents({ message, sequenceNumber: s.sequence, response: responseOf(s, "failed") }))
  s.sequence += 2
  return out
}
