/**
 * The `noop` route: answers `OK` by itself, without any upstream call.
 */
import type { ChatCompletion, ChatCompletionChunk } from "@switchyard-ts/protocol/OpenAiChat"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as AnswerChunks from "../../AnswerChunks.js"
import * as Decision from "../../Decision.js"
import type { Route } from "../../Route.js"

/** Options of a noop route. */
export interface Options {
  readonly id: string
  readonly name: string
  readonly contextWindow?: Option.Option<number>
  readonly toolCalling?: Option.Option<boolean>
}

/** The fixed answer of a noop route. */
export const answerText = "OK"

/** Build a noop route: its decision is `Answered` with the answer, created now. */
export const make = (options: Options): Route => {
  const route: Route = {
    id: options.id,
    name: options.name,
    algorithm: "noop",
    targets: [],
    contextWindow: options.contextWindow ?? Option.none(),
    toolCalling: options.toolCalling ?? Option.none(),
    decide: () =>
      Effect.map(Clock.currentTimeMillis, (ms) =>
        Decision.answered({
          route: { id: options.id, name: options.name, algorithm: "noop" },
          answer: completion(options.id, Math.floor(ms / 1000)),
          servedBy: Option.none(),
          evidence: { source: "noop" }
        }))
  }
  return route
}

/** The buffered answer of a noop route (`model` = the route id). */
export const completion = (routeId: string, created: number): ChatCompletion => ({
  id: "switchyard-noop",
  object: "chat.completion",
  created,
  model: routeId,
  choices: [{ index: 0, message: { role: "assistant", content: answerText }, finish_reason: "stop" }],
  usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 }
})

/** The streamed answer of a noop route: its completion replayed (two chunks, the second with `stop`). */
export const chunks = (routeId: string, created: number): ReadonlyArray<ChatCompletionChunk> =>
  AnswerChunks.chunks(completion(routeId, created), { includeUsage: false })
