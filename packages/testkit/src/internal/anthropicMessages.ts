/**
 * The Anthropic Messages encoding of every behaviour (`POST /v1/messages`): a buffered `message`,
 * or the `event:`/`data:` event sequence from `message_start` to `message_stop`, and Anthropic's
 * error envelope. Wire shapes in `anthropicWire.ts`.
 *
 * @internal
 */
import type { Usage } from "@switchyard-ts/protocol/OpenAiChat"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as AnthropicWire from "./anthropicWire.js"
import { type Behaviour, decodeJson, type Thinking, type ToolUse } from "./behaviour.js"
import {
  cut,
  echoContent,
  estimateUsage,
  type Exchange,
  openSse,
  performNeutral,
  retryAfterHeader,
  sendJson,
  sleep,
  split,
  write
} from "./exchange.js"

const messageId = (ex: Exchange): string => `msg_fake_${ex.id}`

const emit = (ex: Exchange, event: AnthropicWire.StreamEvent): Effect.Effect<void> =>
  write(ex.res, AnthropicWire.sse(event))

/** SSE headers and `message_start` (empty content, `output_tokens: 1` as Anthropic sends it). */
const anthropicStart = (ex: Exchange, usage: AnthropicWire.Usage): Effect.Effect<void> =>
  Effect.zipRight(
    openSse(ex.res),
    emit(ex, {
      type: "message_start",
      message: {
        id: messageId(ex),
        type: "message",
        role: "assistant",
        model: ex.model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { ...usage, output_tokens: 1 }
      }
    })
  )

/** `content_block_start` of an empty text block at `index`, then `ping`. */
const anthropicTextStart = (ex: Exchange, index: number): Effect.Effect<void> =>
  Effect.zipRight(
    emit(ex, { type: "content_block_start", index, content_block: { type: "text", text: "" } }),
    emit(ex, { type: "ping" })
  )

const textDelta = (ex: Exchange, index: number, text: string): Effect.Effect<void> =>
  emit(ex, { type: "content_block_delta", index, delta: { type: "text_delta", text } })

/** `message_delta`, `message_stop`, end of response. */
const anthropicFinish = (
  ex: Exchange,
  stopReason: AnthropicWire.StopReason,
  usage: AnthropicWire.Usage
): Effect.Effect<void> =>
  Effect.gen(function*() {
    yield* emit(ex, {
      type: "message_delta",
      delta: { stop_reason: stopReason, stop_sequence: null },
      usage: { output_tokens: usage.output_tokens }
    })
    yield* Effect.sync(() => ex.res.end(AnthropicWire.sse({ type: "message_stop" })))
  })

/** A complete streamed text message: the pieces as deltas of block 0, `gapMs` apart. */
const anthropicTextStream = (
  ex: Exchange,
  pieces: ReadonlyArray<string>,
  gapMs: number,
  usage: AnthropicWire.Usage
): Effect.Effect<void> =>
  Effect.gen(function*() {
    yield* anthropicStart(ex, usage)
    yield* anthropicTextStart(ex, 0)
    let index = 0
    for (const piece of pieces) {
      if (index > 0) yield* sleep(gapMs)
      yield* textDelta(ex, 0, piece)
      index++
    }
    yield* emit(ex, { type: "content_block_stop", index: 0 })
    yield* anthropicFinish(ex, "end_turn", usage)
  })

const anthropicMessage = (
  ex: Exchange,
  content: ReadonlyArray<AnthropicWire.ContentBlock>,
  stopReason: AnthropicWire.StopReason,
  usage: AnthropicWire.Usage
): AnthropicWire.Message => ({
  id: messageId(ex),
  type: "message",
  role: "assistant",
  model: ex.model,
  content,
  stop_reason: stopReason,
  stop_sequence: null,
  usage
})

const anthropicAnswer = (
  ex: Exchange,
  content: string,
  usage: Usage | undefined,
  gapMs = 0
): Effect.Effect<void> => {
  const used = AnthropicWire.usageFromOpenAi(usage ?? estimateUsage(ex, content))
  if (ex.stream) return anthropicTextStream(ex, split(content, 3), gapMs, used)
  return sendJson(
    ex.res,
    200,
    JSON.stringify(anthropicMessage(ex, [{ type: "text", text: content }], "end_turn", used))
  )
}

const anthropicToolUse = (ex: Exchange, b: ToolUse): Effect.Effect<void> => {
  const usage = AnthropicWire.usageFromOpenAi(estimateUsage(ex, `${b.text ?? ""} ${b.input}`))
  const id = b.id ?? `toolu_fake_${ex.id}`
  const text = b.text ?? ""
  if (ex.stream) {
    return Effect.gen(function*() {
      yield* anthropicStart(ex, usage)
      let index = 0
      if (text.length > 0) {
        yield* anthropicTextStart(ex, index)
        for (const piece of split(text, 3)) yield* textDelta(ex, index, piece)
        yield* emit(ex, { type: "content_block_stop", index })
        index++
      }
      yield* emit(ex, {
        type: "content_block_start",
        index,
        content_block: { type: "tool_use", id, name: b.name, input: {} }
      })
      if (index === 0) yield* emit(ex, { type: "ping" })
      for (const fragment of split(b.input, 3)) {
        yield* emit(ex, {
          type: "content_block_delta",
          index,
          delta: { type: "input_json_delta", partial_json: fragment }
        })
      }
      yield* emit(ex, { type: "content_block_stop", index })
      yield* anthropicFinish(ex, "tool_use", usage)
    })
  }
  const input: unknown = Either.getOrElse(decodeJson(b.input), () => ({}))
  const blocks: ReadonlyArray<AnthropicWire.ContentBlock> = [
    ...(text.length > 0 ? [{ type: "text" as const, text }] : []),
    { type: "tool_use", id, name: b.name, input }
  ]
  return sendJson(ex.res, 200, JSON.stringify(anthropicMessage(ex, blocks, "tool_use", usage)))
}

/** Anthropic: a message (buffered or streamed) with `b`'s signed thinking block before its text. */
const anthropicThinking = (ex: Exchange, b: Thinking): Effect.Effect<void> => {
  const usage = AnthropicWire.usageFromOpenAi(estimateUsage(ex, `${b.thinking} ${b.content}`))
  if (ex.stream) {
    return Effect.gen(function*() {
      yield* anthropicStart(ex, usage)
      yield* emit(ex, { type: "content_block_start", index: 0, content_block: { type: "thinking", thinking: "" } })
      for (const piece of split(b.thinking, 2)) {
        yield* emit(ex, { type: "content_block_delta", index: 0, delta: { type: "thinking_delta", thinking: piece } })
      }
      yield* emit(ex, {
        type: "content_block_delta",
        index: 0,
        delta: { type: "signature_delta", signature: b.signature }
      })
      yield* emit(ex, { type: "content_block_stop", index: 0 })
      yield* anthropicTextStart(ex, 1)
      for (const piece of split(b.content, 3)) yield* textDelta(ex, 1, piece)
      yield* emit(ex, { type: "content_block_stop", index: 1 })
      yield* anthropicFinish(ex, "end_turn", usage)
    })
  }
  const blocks: ReadonlyArray<AnthropicWire.ContentBlock> = [
    { type: "thinking", thinking: b.thinking, signature: b.signature },
    { type: "text", text: b.content }
  ]
  return sendJson(ex.res, 200, JSON.stringify(anthropicMessage(ex, blocks, "end_turn", usage)))
}

/** Answer `behaviour` in the Anthropic Messages format. */
export const perform = (behaviour: Behaviour, ex: Exchange): Effect.Effect<void> => {
  switch (behaviour._tag) {
    case "Ok":
      return Effect.zipRight(
        sleep(behaviour.delayMs ?? 0),
        anthropicAnswer(ex, behaviour.content, behaviour.usage, behaviour.gapMs)
      )
    case "Echo":
      return anthropicAnswer(ex, echoContent(ex), undefined)
    case "Status": {
      const body = behaviour.body ?? JSON.stringify(AnthropicWire.errorEnvelope(
        behaviour.type ?? AnthropicWire.errorTypeForStatus(behaviour.status),
        behaviour.message ?? `fake upstream answered ${behaviour.status}`
      ))
      return sendJson(ex.res, behaviour.status, body, retryAfterHeader(behaviour))
    }
    case "Chunks":
      return anthropicTextStream(
        ex,
        behaviour.chunks,
        behaviour.gapMs ?? 0,
        AnthropicWire.usageFromOpenAi(estimateUsage(ex, behaviour.chunks.join("")))
      )
    case "CloseMidStream":
      return Effect.gen(function*() {
        yield* anthropicStart(ex, AnthropicWire.usageFromOpenAi(estimateUsage(ex, "")))
        yield* anthropicTextStart(ex, 0)
        for (let i = 0; i < behaviour.chunksBeforeClose; i++) yield* textDelta(ex, 0, `chunk ${i} `)
        yield* cut(ex, () => ex.res.destroy())
      })
    case "ToolUse":
      return anthropicToolUse(ex, behaviour)
    case "Thinking":
      return anthropicThinking(ex, behaviour)
    case "StreamError":
      return Effect.gen(function*() {
        yield* anthropicStart(ex, AnthropicWire.usageFromOpenAi(estimateUsage(ex, "")))
        yield* anthropicTextStart(ex, 0)
        yield* textDelta(ex, 0, "chunk 0 ")
        yield* Effect.sync(() =>
          ex.res.end(AnthropicWire.sse(AnthropicWire.errorEnvelope("overloaded_error", behaviour.message)))
        )
      })
    case "Stall":
    case "Garbage":
    case "Reset":
    case "Raw":
      return performNeutral(behaviour, ex)
  }
}
