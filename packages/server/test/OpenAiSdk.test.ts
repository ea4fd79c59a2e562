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

  it.scopedLive("responses.create continued by previous_response_id on a Chat target, buffered and streamed", () =>
    Effect.gen(function*() {
      const { upstream, url } = yield* startServer(basicDeployment())
      yield* upstream.script("weak-model", [
        FakeUpstream.ok("noted: 42"),
        FakeUpstream.ok("the code is 42"),
        FakeUpstream.ok("bye")
      ])
      const openai = new OpenAI({ baseURL: `${url}/v1`, apiKey: "sk-caller-secret", maxRetries: 0 })
      const first = yield* Effect.promise(() =>
        openai.responses.create({ model: "fast", input: "remember the code 42" })
      )
      assert.strictEqual(first.output_text, "noted: 42")
      const second = yield* Effect.promise(() =>
        openai.responses.create({ model: "fast", previous_response_id: first.id, input: "what is the code?" })
      )
      assert.strictEqual(second.output_text, "the code is 42")
      const streamed = yield* Effect.promise(async () => {
        const stream = await openai.responses.create({
          model: "fast",
          previous_response_id: second.id,
          input: "thanks",
          stream: true
        })
        let text = ""
        for await (const event of stream) if (event.type === "response.output_text.delta") text += event.delta
        return text
      })
      assert.strictEqual(streamed, "bye")
      // each turn reached the Chat target with the stored transcript before it
      const transcripts = (yield* upstream.requests).map((request) => JSON.stringify(request.body))
      assert.strictEqual(transcripts.length, 3)
      assert.include(transcripts[1] ?? "", "noted: 42")
      assert.include(transcripts[2] ?? "", "remember the code 42")
      assert.include(transcripts[2] ?? "", "the code is 42")
      assert.include(transcripts[2] ?? "", "thanks")
      // the id is the server's: a Chat target never sees it
      for (const transcript of transcripts) assert.notInclude(transcript, "previous_response_id")
    }))
})
