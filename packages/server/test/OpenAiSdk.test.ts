/**
 * The official `openai` npm client works unchanged against the server.
 */
import { assert, describe, it } from "@effect/vitest"
import * as FakeUpstream from "@switchyard-ts/testkit/FakeUpstream"
import * as Effect from "effect/Effect"
import OpenAI from "openai"
import { basicDeployment, startServer } from "./harness.js"

describe("openai SDK as a client", () => {
  it.scopedLive("buffered, streaming and models.list", () =>
    Effect.gen(function*() {
      const { upstream, url } = yield* startServer(basicDeployment())
      yield* upstream.setBehaviour("weak-model", FakeUpstream.ok("answer via the SDK"))
      const openai = new OpenAI({ baseURL: `${url}/v1`, apiKey: "sk-caller-secret", maxRetries: 0 })

      const completion = yield* Effect.promise(() =>
        openai.chat.completions.create({ model: "fast", messages: [{ role: "user", content: "hi" }] })
      )
      assert.strictEqual(completion.choices[0]?.message.content, "answer via the SDK")

      const text = yield* Effect.promise(async () => {
        const stream = await openai.chat.completions.create({
          model: "fast",
          messages: [{ role: "user", content: "hi" }],
          stream: true
        })
        let all = ""
        for await (const chunk of stream) all += chunk.choices[0]?.delta.content ?? ""
        return all
      })
      assert.strictEqual(text, "answer via the SDK")

      const models = yield* Effect.promise(async () => {
        const ids: Array<string> = []
        for await (const model of openai.models.list()) ids.push(model.id)
        return ids
      })
      assert.deepStrictEqual(models, ["fast", "mix", "ping", "unreachable"])

      const notFound = yield* Effect.promise(() =>
        openai.chat.completions.create({ model: "nope", messages: [{ role: "user", content: "hi" }] }).then(
          () => undefined,
          (error: unknown) => error
        )
      )
      assert.instanceOf(notFound, OpenAI.NotFoundError)
      // The caller's key never reaches the upstream.
      for (const request of yield* upstream.requests) {
        assert.notInclude(JSON.stringify(request.headers), "sk-caller-secret")
      }
    }))
})
