import type { Target } from "@switchyard-ts/client/Target"
import { ofChat, UpstreamClient } from "@switchyard-ts/client/UpstreamClient"
import type { UpstreamFailure } from "@switchyard-ts/protocol/Errors"
import type { ChatCompletion } from "@switchyard-ts/protocol/OpenAiChat"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import * as Stream from "effect/Stream"

export const client = {
  name: "sim",
  format: "openai_chat",
  baseUrl: "http://127.0.0.1:9/v1",
  apiKey: Option.none(),
  extraHeaders: {},
  maxRetries: 0,
  timeoutMs: Option.none()
} as const

export const target = (name: string, id: string): Target => ({ name, id, client, extraBody: {} })

export const completion = (model: string): ChatCompletion => ({
  id: "chatcmpl-test",
  object: "chat.completion",
  created: 0,
  model,
  choices: [{ index: 0, message: { role: "assistant", content: `answer from ${model}` }, finish_reason: "stop" }]
})

/** A complete scripted UpstreamClient: per-model failure or success, with a log of called models. */
export const scriptedUpstream = (failures: ReadonlyMap<string, UpstreamFailure>) =>
  Effect.gen(function*() {
    const calls = yield* Ref.make<ReadonlyArray<string>>([])
    const answer = (model: string) =>
      Effect.zipRight(
        Ref.update(calls, (all) => [...all, model]),
        Option.match(Option.fromNullable(failures.get(model)), {
          onNone: () => Effect.succeed(completion(model)),
          onSome: Effect.fail
        })
      )
    const layer = Layer.succeed(
      UpstreamClient,
      ofChat({
        complete: ({ target }) => answer(target.id),
        stream: ({ target }) =>
          Effect.map(answer(target.id), (c) =>
            Stream.make({
              id: c.id,
              model: c.model,
              choices: [{ index: 0, delta: { content: c.choices[0]?.message.content ?? "" }, finish_reason: "stop" }]
            })),
        countTokens: () => Effect.dieMessage("not used"),
        responsesAuxiliary: () => Effect.dieMessage("not used"),
        register: () => Effect.void,
        breakers: Effect.succeed([])
      })
    )
    return { calls: Ref.get(calls), layer }
  })
