/**
 * The OpenAI Responses encoding of every behaviour (`POST /v1/responses`): a buffered `response`
 * object (`message` items with `output_text` parts, `function_call` items, `reasoning` items with
 * `encrypted_content`, usage in `input_tokens` / `output_tokens` / `total_tokens`), or the
 * Responses event sequence — each event `event: <type>` + `data: <json>` with a `sequence_number`
 * counting from 0 — from `response.created` to `response.completed`, and OpenAI's error envelope.
 *
 * @internal
 */
import type { Usage as ChatUsage } from "@switchyard-ts/protocol/OpenAiChat"
import type {
  FunctionCallItem,
  MessageItem,
  OutputItem,
  ReasoningItem,
  ResponseObject,
  StreamEvent,
  Usage
} from "@switchyard-ts/protocol/OpenAiResponses"
import * as Effect from "effect/Effect"
import type { Behaviour, Thinking, ToolUse } from "./behaviour.js"
import {
  cut,
  echoContent,
  estimateUsage,
  type Exchange,
  openAiStatus,
  openSse,
  performNeutral,
  sendJson,
  sleep,
  split,
  write
} from "./exchange.js"

/** A stream event before the emitter numbers it. */
type Unnumbered = StreamEvent extends infer E ? E extends StreamEvent ? Omit<E, "sequence_number"> : never : never

/** An OpenAI Chat usage sample as Responses usage (`input_tokens` includes cached tokens). */
const usageOf = (usage: ChatUsage): Usage => {
  const cached = usage.prompt_tokens_details?.cached_tokens ?? undefined
  return {
    input_tokens: usage.prompt_tokens,
    output_tokens: usage.completion_tokens,
    total_tokens: usage.total_tokens,
    ...(cached === undefined ? {} : { input_tokens_details: { cached_tokens: cached } })
  }
}

const responseOf = (
  ex: Exchange,
  status: "in_progress" | "completed" | "failed",
  output: ReadonlyArray<OutputItem>,
  usage: Usage | null,
  error: { readonly code: string; readonly message: string } | null = null
): ResponseObject => ({
  id: `resp_fake_${ex.id}`,
  object: "response",
  created_at: Math.floor(ex.at / 1000),
  status,
  model: ex.model,
  output,
  usage,
  error,
  incomplete_details: null
})

const messageItem = (ex: Exchange, status: string, text: string | undefined): MessageItem => ({
  type: "message",
  id: `msg_fake_${ex.id}`,
  status,
  role: "assistant",
  content: text === undefined ? [] : [{ type: "output_text", text, annotations: [] }]
})

const functionCallItem = (ex: Exchange, b: ToolUse, status: string, args: string): FunctionCallItem => ({
  type: "function_call",
  id: `fc_fake_${ex.id}`,
  call_id: b.id ?? `call_fake_${ex.id}`,
  name: b.name,
  arguments: args,
  status
})

const reasoningItem = (ex: Exchange, b: Thinking): ReasoningItem => ({
  type: "reasoning",
  id: `rs_fake_${ex.id}`,
  summary: b.thinking.length === 0 ? [] : [{ type: "summary_text", text: b.thinking }],
  encrypted_content: b.signature
})

/** Writes numbered events of one stream. */
interface Emitter {
  readonly emit: (event: Unnumbered) => Effect.Effect<void>
  /** Write the last event and end the response. */
  readonly end: (event: Unnumbered) => Effect.Effect<void>
}

/** SSE headers, `response.created` and `response.in_progress`; the emitter of the rest. */
const start = (ex: Exchange): Effect.Effect<Emitter> =>
  Effect.gen(function*() {
    let next = 0
    const frame = ({ type, ...rest }: Unnumbered): string =>
      `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: next++, ...rest })}\n\n`
    const out: Emitter = {
      emit: (event) => Effect.suspend(() => write(ex.res, frame(event))),
      end: (event) => Effect.sync(() => ex.res.end(frame(event)))
    }
    yield* openSse(ex.res)
    const response = responseOf(ex, "in_progress", [], null)
    yield* out.emit({ type: "response.created", response })
    yield* out.emit({ type: "response.in_progress", response })
    return out
  })

/** `response.output_item.added` of an empty message at `index`, then its `output_text` part. */
const openMessage = (out: Emitter, ex: Exchange, index: number): Effect.Effect<void> =>
  Effect.zipRight(
    out.emit({
      type: "response.output_item.added",
      output_index: index,
      item: messageItem(ex, "in_progress", undefined)
    }),
    out.emit({
      type: "response.content_part.added",
      item_id: `msg_fake_${ex.id}`,
      output_index: index,
      content_index: 0,
      part: { type: "output_text", text: "", annotations: [] }
    })
  )

const textDelta = (out: Emitter, ex: Exchange, index: number, delta: string): Effect.Effect<void> =>
  out.emit({
    type: "response.output_text.delta",
    item_id: `msg_fake_${ex.id}`,
    output_index: index,
    content_index: 0,
    delta
  })

/** A whole message item at `index`: its pieces as deltas, `gapMs` apart, then its `.done` events. */
const streamMessage = (
  out: Emitter,
  ex: Exchange,
  index: number,
  pieces: ReadonlyArray<string>,
  gapMs: number
): Effect.Effect<MessageItem> =>
  Effect.gen(function*() {
    yield* openMessage(out, ex, index)
    let n = 0
    for (const piece of pieces) {
      if (n++ > 0) yield* sleep(gapMs)
      yield* textDelta(out, ex, index, piece)
    }
    const text = pieces.join("")
    const ref = { item_id: `msg_fake_${ex.id}`, output_index: index, content_index: 0 }
    yield* out.emit({ type: "response.output_text.done", ...ref, text })
    yield* out.emit({
      type: "response.content_part.done",
      ...ref,
      part: { type: "output_text", text, annotations: [] }
    })
    const item = messageItem(ex, "completed", text)
    yield* out.emit({ type: "response.output_item.done", output_index: index, item })
    return item
  })

/** `response.completed` with every item and the usage; end of response. */
const complete = (out: Emitter, ex: Exchange, output: ReadonlyArray<OutputItem>, usage: Usage): Effect.Effect<void> =>
  out.end({ type: "response.completed", response: responseOf(ex, "completed", output, usage) })

const sendResponse = (ex: Exchange, output: ReadonlyArray<OutputItem>, usage: Usage): Effect.Effect<void> =>
  sendJson(ex.res, 200, JSON.stringify(responseOf(ex, "completed", output, usage)))

const answer = (
  ex: Exchange,
  pieces: ReadonlyArray<string>,
  usage: ChatUsage | undefined,
  gapMs: number,
  stream: boolean
) => {
  const content = pieces.join("")
  const used = usageOf(usage ?? estimateUsage(ex, content))
  if (!stream) return sendResponse(ex, [messageItem(ex, "completed", content)], used)
  return Effect.gen(function*() {
    const out = yield* start(ex)
    const item = yield* streamMessage(out, ex, 0, pieces, gapMs)
    yield* complete(out, ex, [item], used)
  })
}

/** Optional text in a message item, then a `function_call` item calling `b`'s tool. */
const toolUse = (ex: Exchange, b: ToolUse): Effect.Effect<void> => {
  const usage = usageOf(estimateUsage(ex, `${b.text ?? ""} ${b.input}`))
  const text = b.text ?? ""
  if (!ex.stream) {
    const call = functionCallItem(ex, b, "completed", b.input)
    return sendResponse(ex, text.length > 0 ? [messageItem(ex, "completed", text), call] : [call], usage)
  }
  return Effect.gen(function*() {
    const out = yield* start(ex)
    const output: Array<OutputItem> = []
    if (text.length > 0) output.push(yield* streamMessage(out, ex, 0, split(text, 3), 0))
    const index = output.length
    const ref = { item_id: `fc_fake_${ex.id}`, output_index: index }
    yield* out.emit({
      type: "response.output_item.added",
      output_index: index,
      item: functionCallItem(ex, b, "in_progress", "")
    })
    for (const delta of split(b.input, 3)) {
      yield* out.emit({ type: "response.function_call_arguments.delta", ...ref, delta })
    }
    yield* out.emit({ type: "response.function_call_arguments.done", ...ref, arguments: b.input, name: b.name })
    const call = functionCallItem(ex, b, "completed", b.input)
    yield* out.emit({ type: "response.output_item.done", output_index: index, item: call })
    output.push(call)
    yield* complete(out, ex, output, usage)
  })
}

/** A `reasoning` item (the thinking as its summary, the signature as `encrypted_content`), then the content. */
const thinking = (ex: Exchange, b: Thinking): Effect.Effect<void> => {
  const usage = usageOf(estimateUsage(ex, `${b.thinking} ${b.content}`))
  const reasoning = reasoningItem(ex, b)
  if (!ex.stream) return sendResponse(ex, [reasoning, messageItem(ex, "completed", b.content)], usage)
  return Effect.gen(function*() {
    const out = yield* start(ex)
    yield* out.emit({
      type: "response.output_item.added",
      output_index: 0,
      item: { type: "reasoning", id: reasoning.id, summary: [] }
    })
    if (b.thinking.length > 0) {
      const ref = { item_id: `rs_fake_${ex.id}`, output_index: 0, summary_index: 0 }
      yield* out.emit({
        type: "response.reasoning_summary_part.added",
        ...ref,
        part: { type: "summary_text", text: "" }
      })
      for (const delta of split(b.thinking, 2)) {
        yield* out.emit({ type: "response.reasoning_summary_text.delta", ...ref, delta })
      }
      yield* out.emit({ type: "response.reasoning_summary_text.done", ...ref, text: b.thinking })
      yield* out.emit({
        type: "response.reasoning_summary_part.done",
        ...ref,
        part: { type: "summary_text", text: b.thinking }
      })
    }
    yield* out.emit({ type: "response.output_item.done", output_index: 0, item: reasoning })
    const message = yield* streamMessage(out, ex, 1, split(b.content, 3), 0)
    yield* complete(out, ex, [reasoning, message], usage)
  })
}

/** Answer `behaviour` in the OpenAI Responses format. */
export const perform = (behaviour: Behaviour, ex: Exchange): Effect.Effect<void> => {
  switch (behaviour._tag) {
    case "Ok":
      return Effect.zipRight(
        sleep(behaviour.delayMs ?? 0),
        answer(ex, split(behaviour.content, 3), behaviour.usage, behaviour.gapMs ?? 0, ex.stream)
      )
    case "Echo":
      return answer(ex, split(echoContent(ex), 3), undefined, 0, ex.stream)
    case "Chunks":
      return answer(ex, behaviour.chunks, undefined, behaviour.gapMs ?? 0, true)
    case "Status":
      return openAiStatus(ex, behaviour)
    case "ToolUse":
      return toolUse(ex, behaviour)
    case "Thinking":
      return thinking(ex, behaviour)
    case "CloseMidStream":
      return Effect.gen(function*() {
        const out = yield* start(ex)
        yield* openMessage(out, ex, 0)
        for (let i = 0; i < behaviour.chunksBeforeClose; i++) yield* textDelta(out, ex, 0, `chunk ${i} `)
        yield* cut(ex, () => ex.res.destroy())
      })
    case "StreamError":
      return Effect.gen(function*() {
        const out = yield* start(ex)
        yield* openMessage(out, ex, 0)
        yield* textDelta(out, ex, 0, "chunk 0 ")
        yield* out.emit({ type: "error", code: "server_error", message: behaviour.message, param: null })
        const error = { code: "server_error", message: behaviour.message }
        yield* out.end({ type: "response.failed", response: responseOf(ex, "failed", [], null, error) })
      })
    case "Stall":
    case "Garbage":
    case "Reset":
    case "Raw":
      return performNeutral(behaviour, ex)
  }
}
