/**
 * The OpenAI Chat Completions encoding of every behaviour (`POST /v1/chat/completions`): a
 * buffered `chat.completion`, or `chat.completion.chunk` SSE ending in `data: [DONE]`, and OpenAI's
 * error envelope.
 *
 * @internal
 */
import type { ChatCompletion, ChatCompletionChunk, Usage } from "@switchyard-ts/protocol/OpenAiChat"
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

const sseEvent = (chunk: ChatCompletionChunk): string => `data: ${JSON.stringify(chunk)}\n\n`

const completionId = (ex: Exchange): string => `chatcmpl-fake-${ex.id}`

const chunkOf = (
  ex: Exchange,
  delta: ChatCompletionChunk["choices"][number]["delta"],
  finishReason: string | null
): ChatCompletionChunk => ({
  id: completionId(ex),
  object: "chat.completion.chunk",
  created: Math.floor(ex.at / 1000),
  model: ex.model,
  choices: [{ index: 0, delta, finish_reason: finishReason }]
})

/** The SSE tail: stop chunk, optional usage chunk, `[DONE]`, end of response. */
const finishSse = (ex: Exchange, usage: Usage, finishReason: string = "stop"): Effect.Effect<void> =>
  Effect.gen(function*() {
    yield* write(ex.res, sseEvent(chunkOf(ex, {}, finishReason)))
    if (ex.includeUsage) {
      const usageChunk: ChatCompletionChunk = { ...chunkOf(ex, {}, null), choices: [], usage }
      yield* write(ex.res, sseEvent(usageChunk))
    }
    yield* Effect.sync(() => ex.res.end("data: [DONE]\n\n"))
  })

const answer = (ex: Exchange, content: string, usage: Usage | undefined, gapMs = 0): Effect.Effect<void> => {
  const used = usage ?? estimateUsage(ex, content)
  if (ex.stream) {
    return Effect.gen(function*() {
      yield* openSse(ex.res)
      yield* write(ex.res, sseEvent(chunkOf(ex, { role: "assistant", content: "" }, null)))
      let index = 0
      for (const piece of split(content, 3)) {
        if (index++ > 0) yield* sleep(gapMs)
        yield* write(ex.res, sseEvent(chunkOf(ex, { content: piece }, null)))
      }
      yield* finishSse(ex, used)
    })
  }
  const completion: ChatCompletion = {
    id: completionId(ex),
    object: "chat.completion",
    created: Math.floor(ex.at / 1000),
    model: ex.model,
    choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: "stop" }],
    usage: used
  }
  return sendJson(ex.res, 200, JSON.stringify(completion))
}

/** OpenAI: a buffered completion or a streamed one calling `b`'s tool. */
const openAiToolUse = (ex: Exchange, b: ToolUse): Effect.Effect<void> => {
  const usage = estimateUsage(ex, `${b.text ?? ""} ${b.input}`)
  const id = b.id ?? `call_fake_${ex.id}`
  if (ex.stream) {
    return Effect.gen(function*() {
      yield* openSse(ex.res)
      yield* write(ex.res, sseEvent(chunkOf(ex, { role: "assistant", content: null }, null)))
      if (b.text !== undefined && b.text.length > 0) {
        yield* write(ex.res, sseEvent(chunkOf(ex, { content: b.text }, null)))
      }
      yield* write(
        ex.res,
        sseEvent(chunkOf(ex, {
          tool_calls: [{ index: 0, id, type: "function", function: { name: b.name, arguments: "" } }]
        }, null))
      )
      for (const fragment of split(b.input, 3)) {
        yield* write(
          ex.res,
          sseEvent(chunkOf(ex, { tool_calls: [{ index: 0, function: { arguments: fragment } }] }, null))
        )
      }
      yield* finishSse(ex, usage, "tool_calls")
    })
  }
  const completion: ChatCompletion = {
    id: completionId(ex),
    object: "chat.completion",
    created: Math.floor(ex.at / 1000),
    model: ex.model,
    choices: [{
      index: 0,
      message: {
        role: "assistant",
        content: b.text ?? null,
        tool_calls: [{ id, type: "function", function: { name: b.name, arguments: b.input } }]
      },
      finish_reason: "tool_calls"
    }],
    usage
  }
  return sendJson(ex.res, 200, JSON.stringify(completion))
}

/** OpenAI: a completion (buffered or streamed) with `b`'s signed thinking before its content. */
const openAiThinking = (ex: Exchange, b: Thinking): Effect.Effect<void> => {
  const usage = estimateUsage(ex, `${b.thinking} ${b.content}`)
  const block = { type: "thinking" as const, thinking: b.thinking, signature: b.signature }
  if (ex.stream) {
    return Effect.gen(function*() {
      yield* openSse(ex.res)
      yield* write(ex.res, sseEvent(chunkOf(ex, { role: "assistant", content: "" }, null)))
      for (const piece of split(b.thinking, 2)) {
        yield* write(ex.res, sseEvent(chunkOf(ex, { reasoning_content: piece }, null)))
      }
      yield* write(
        ex.res,
        sseEvent(chunkOf(ex, { thinking_blocks: [{ type: "thinking", thinking: "", signature: b.signature }] }, null))
      )
      for (const piece of split(b.content, 3)) yield* write(ex.res, sseEvent(chunkOf(ex, { content: piece }, null)))
      yield* finishSse(ex, usage)
    })
  }
  const completion: ChatCompletion = {
    id: completionId(ex),
    object: "chat.completion",
    created: Math.floor(ex.at / 1000),
    model: ex.model,
    choices: [{
      index: 0,
      message: { role: "assistant", content: b.content, reasoning_content: b.thinking, thinking_blocks: [block] },
      finish_reason: "stop"
    }],
    usage
  }
  return sendJson(ex.res, 200, JSON.stringify(completion))
}

/** Answer `behaviour` in the OpenAI Chat Completions format. */
export const perform = (behaviour: Behaviour, ex: Exchange): Effect.Effect<void> => {
  switch (behaviour._tag) {
    case "Ok":
      return Effect.zipRight(
        sleep(behaviour.delayMs ?? 0),
        answer(ex, behaviour.content, behaviour.usage, behaviour.gapMs)
      )
    case "Echo":
      return answer(ex, echoContent(ex), undefined)
    case "Status":
      return openAiStatus(ex, behaviour)
    case "Chunks":
      return Effect.gen(function*() {
        yield* openSse(ex.res)
        let index = 0
        for (const piece of behaviour.chunks) {
          if (index > 0) yield* sleep(behaviour.gapMs ?? 0)
          const delta = index === 0 ? { role: "assistant", content: piece } : { content: piece }
          yield* write(ex.res, sseEvent(chunkOf(ex, delta, null)))
          index++
        }
        yield* finishSse(ex, estimateUsage(ex, behaviour.chunks.join("")))
      })
    case "CloseMidStream":
      return Effect.gen(function*() {
        yield* openSse(ex.res)
        for (let i = 0; i < behaviour.chunksBeforeClose; i++) {
          const delta = i === 0 ? { role: "assistant", content: `chunk ${i} ` } : { content: `chunk ${i} ` }
          yield* write(ex.res, sseEvent(chunkOf(ex, delta, null)))
        }
        yield* cut(ex, () => ex.res.destroy())
      })
    case "ToolUse":
      return openAiToolUse(ex, behaviour)
    case "Thinking":
      return openAiThinking(ex, behaviour)
    case "StreamError":
      return Effect.gen(function*() {
        yield* openSse(ex.res)
        yield* write(ex.res, sseEvent(chunkOf(ex, { role: "assistant", content: "chunk 0 " }, null)))
        yield* Effect.sync(() =>
          ex.res.end(`data: ${JSON.stringify({ error: { message: behaviour.message, type: "server_error" } })}\n\n`)
        )
      })
    case "Stall":
    case "Garbage":
    case "Reset":
    case "Raw":
      return performNeutral(behaviour, ex)
  }
}
