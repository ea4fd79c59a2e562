// The scripted upstream's answers in each wire format, buffered or streamed (OpenAI chunks and
// `[DONE]`; Anthropic `event:`/`data:` SSE; the Responses event sequence with sequence_number and
// usage). A Responses answer to a tool call starts with a reasoning item (summary +
// encrypted_content `e2e-opaque-<seq>`), as reasoning models answer, so a run can check it is replayed.
import type http from "node:http"
import { get } from "../json.js"
import type { Answer } from "./plan.js"

const usage = { input: 40, output: 12 }

const sse = (res: http.ServerResponse) =>
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" })

/** A JSON answer with its length. */
export const json = (res: http.ServerResponse, status: number, value: unknown): void => {
  const body = JSON.stringify(value)
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(body) })
  res.end(body)
}

const halves = (text: string): readonly [string, string] => {
  const half = Math.floor(text.length / 2)
  return [text.slice(0, half), text.slice(half)]
}

/** An OpenAI Chat Completions answer (tool call `call_e2e_<seq>`). */
export const answerOpenAi = (res: http.ServerResponse, body: unknown, answer: Answer, seq: number): void => {
  const id = `chatcmpl-e2e-${seq}`
  const created = Math.floor(Date.now() / 1000)
  const model = get(body, "model")
  const args = answer.kind === "tool" ? JSON.stringify(answer.input) : ""
  const toolCall = answer.kind === "tool"
    ? { id: `call_e2e_${seq}`, type: "function", function: { name: answer.name, arguments: args } }
    : undefined
  const finish = answer.kind === "tool" ? "tool_calls" : "stop"
  const u = { prompt_tokens: usage.input, completion_tokens: usage.output, total_tokens: usage.input + usage.output }
  if (get(body, "stream") !== true) {
    const message = answer.kind === "tool"
      ? { role: "assistant", content: null, tool_calls: [toolCall] }
      : { role: "assistant", content: answer.text }
    return json(res, 200, {
      id,
      object: "chat.completion",
      created,
      model,
      choices: [{ index: 0, message, finish_reason: finish }],
      usage: u
    })
  }
  sse(res)
  const chunk = (delta: unknown, finishReason: string | null) =>
    res.write(
      `data: ${
        JSON.stringify({
          id,
          object: "chat.completion.chunk",
          created,
          model,
          choices: [{ index: 0, delta, finish_reason: finishReason }]
        })
      }\n\n`
    )
  chunk({ role: "assistant", content: "" }, null)
  if (answer.kind === "tool") {
    chunk({
      tool_calls: [{
        index: 0,
        id: `call_e2e_${seq}`,
        type: "function",
        function: { name: answer.name, arguments: "" }
      }]
    }, null)
    const [first, second] = halves(args)
    chunk({ tool_calls: [{ index: 0, function: { arguments: first } }] }, null)
    chunk({ tool_calls: [{ index: 0, function: { arguments: second } }] }, null)
  } else {
    chunk({ content: answer.text }, null)
  }
  chunk({}, finish)
  if (get(get(body, "stream_options"), "include_usage") === true) {
    res.write(
      `data: ${JSON.stringify({ id, object: "chat.completion.chunk", created, model, choices: [], usage: u })}\n\n`
    )
  }
  res.end("data: [DONE]\n\n")
}

/** An Anthropic Messages answer (tool use `toolu_e2e_<seq>`). */
export const answerAnthropic = (res: http.ServerResponse, body: unknown, answer: Answer, seq: number): void => {
  const id = `msg_e2e_${seq}`
  const model = get(body, "model")
  const block = answer.kind === "tool"
    ? { type: "tool_use", id: `toolu_e2e_${seq}`, name: answer.name, input: answer.input }
    : { type: "text", text: answer.text }
  const stopReason = answer.kind === "tool" ? "tool_use" : "end_turn"
  const u = {
    input_tokens: usage.input,
    output_tokens: usage.output,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: 0
  }
  if (get(body, "stream") !== true) {
    return json(res, 200, {
      id,
      type: "message",
      role: "assistant",
      model,
      content: [block],
      stop_reason: stopReason,
      stop_sequence: null,
      usage: u
    })
  }
  sse(res)
  const event = (type: string, data: Readonly<Record<string, unknown>>) =>
    res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`)
  event("message_start", {
    message: {
      id,
      type: "message",
      role: "assistant",
      model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { ...u, output_tokens: 1 }
    }
  })
  if (answer.kind === "tool") {
    event("content_block_start", { index: 0, content_block: { ...block, input: {} } })
    event("ping", {})
    const [first, second] = halves(JSON.stringify(answer.input))
    event("content_block_delta", { index: 0, delta: { type: "input_json_delta", partial_json: first } })
    event("content_block_delta", { index: 0, delta: { type: "input_json_delta", partial_json: second } })
  } else {
    event("content_block_start", { index: 0, content_block: { type: "text", text: "" } })
    event("ping", {})
    event("content_block_delta", { index: 0, delta: { type: "text_delta", text: answer.text } })
  }
  event("content_block_stop", { index: 0 })
  event("message_delta", {
    delta: { stop_reason: stopReason, stop_sequence: null },
    usage: { output_tokens: usage.output }
  })
  event("message_stop", {})
  res.end()
}

const SUMMARY = "Writing the file with one shell command."

/** One output item of a Responses answer. */
type OutputItem =
  | { readonly kind: "reasoning"; readonly item: Readonly<Record<string, unknown>>; readonly id: string }
  | {
    /** A function call (its `arguments`) or a custom tool call (its `input`), streamed in two deltas. */
    readonly kind: "call"
    readonly item: Readonly<Record<string, unknown>>
    readonly id: string
    readonly field: "arguments" | "input"
    readonly events: "response.function_call_arguments" | "response.custom_tool_call_input"
    readonly text: string
  }
  | {
    readonly kind: "message"
    readonly item: Readonly<Record<string, unknown>>
    readonly id: string
    readonly text: string
  }

const outputItems = (answer: Answer, seq: number): ReadonlyArray<OutputItem> => {
  const reasoning: OutputItem = {
    kind: "reasoning",
    id: `rs_e2e_${seq}`,
    item: {
      id: `rs_e2e_${seq}`,
      type: "reasoning",
      summary: [{ type: "summary_text", text: SUMMARY }],
      encrypted_content: `e2e-opaque-${seq}`
    }
  }
  if (answer.kind === "text") {
    const id = `msg_e2e_${seq}`
    const item = {
      id,
      type: "message",
      role: "assistant",
      status: "completed",
      content: [{ type: "output_text", text: answer.text, annotations: [] }]
    }
    return [{ kind: "message", id, item, text: answer.text }]
  }
  const call = answer.custom === true
    ? {
      prefix: "ctc",
      type: "custom_tool_call",
      field: "input",
      events: "response.custom_tool_call_input",
      text: typeof answer.input === "string" ? answer.input : JSON.stringify(answer.input)
    } as const
    : {
      prefix: "fc",
      type: "function_call",
      field: "arguments",
      events: "response.function_call_arguments",
      text: JSON.stringify(answer.input)
    } as const
  const id = `${call.prefix}_e2e_${seq}`
  const item = {
    id,
    type: call.type,
    status: "completed",
    call_id: `call_e2e_${seq}`,
    name: answer.name,
    ...(answer.namespace === undefined ? {} : { namespace: answer.namespace }),
    [call.field]: call.text
  }
  return [reasoning, { kind: "call", id, item, field: call.field, events: call.events, text: call.text }]
}

/** The streamed events of one output item, between its `added` and `done` events. */
const itemEvents = (
  event: (type: string, data: Readonly<Record<string, unknown>>) => void,
  it: OutputItem,
  index: number
): void => {
  const o = { output_index: index }
  switch (it.kind) {
    case "reasoning": {
      event("response.output_item.added", { ...o, item: { ...it.item, summary: [] } })
      const part = { item_id: it.id, ...o, summary_index: 0 }
      event("response.reasoning_summary_part.added", { ...part, part: { type: "summary_text", text: "" } })
      event("response.reasoning_summary_text.delta", { ...part, delta: SUMMARY })
      event("response.reasoning_summary_text.done", { ...part, text: SUMMARY })
      event("response.reasoning_summary_part.done", { ...part, part: { type: "summary_text", text: SUMMARY } })
      break
    }
    case "call": {
      event("response.output_item.added", { ...o, item: { ...it.item, status: "in_progress", [it.field]: "" } })
      const [first, second] = halves(it.text)
      event(`${it.events}.delta`, { item_id: it.id, ...o, delta: first })
      event(`${it.events}.delta`, { item_id: it.id, ...o, delta: second })
      event(`${it.events}.done`, { item_id: it.id, ...o, [it.field]: it.text })
      break
    }
    case "message": {
      const c = { item_id: it.id, ...o, content_index: 0 }
      const part = { type: "output_text", text: it.text, annotations: [] }
      event("response.output_item.added", { ...o, item: { ...it.item, status: "in_progress", content: [] } })
      event("response.content_part.added", { ...c, part: { type: "output_text", text: "", annotations: [] } })
      event("response.output_text.delta", { ...c, delta: it.text, logprobs: [] })
      event("response.output_text.done", { ...c, text: it.text, logprobs: [] })
      event("response.content_part.done", { ...c, part })
      break
    }
  }
  event("response.output_item.done", { ...o, item: it.item })
}

/** An OpenAI Responses answer (call id `call_e2e_<seq>`). */
export const answerResponses = (res: http.ServerResponse, body: unknown, answer: Answer, seq: number): void => {
  const base = {
    id: `resp_e2e_${seq}`,
    object: "response",
    created_at: Math.floor(Date.now() / 1000),
    model: get(body, "model"),
    output: [],
    parallel_tool_calls: get(body, "parallel_tool_calls") ?? true,
    tool_choice: get(body, "tool_choice") ?? "auto",
    tools: [],
    usage: null,
    error: null,
    incomplete_details: null
  }
  const items = outputItems(answer, seq)
  const output = items.map((it) => it.item)
  const u = {
    input_tokens: usage.input,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: usage.output,
    output_tokens_details: { reasoning_tokens: answer.kind === "tool" ? 5 : 0 },
    total_tokens: usage.input + usage.output
  }
  if (get(body, "stream") !== true) return json(res, 200, { ...base, status: "completed", output, usage: u })
  sse(res)
  let n = 0
  const event = (type: string, data: Readonly<Record<string, unknown>>) =>
    res.write(`event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: n++, ...data })}\n\n`)
  event("response.created", { response: { ...base, status: "in_progress" } })
  event("response.in_progress", { response: { ...base, status: "in_progress" } })
  for (const [index, it] of items.entries()) itemEvents(event, it, index)
  event("response.completed", { response: { ...base, status: "completed", output, usage: u } })
  res.end()
}
