/**
 * `openai_responses` targets through the `UpstreamClient` against a scripted HTTP client: the URL
 * rule, the Bearer key, chat requests translated into Responses bodies, the caller's native
 * Responses body replayed, answers and streams translated back into chat completions and chunks
 * (and kept as sent on a native replay), in-band stream failures.
 */
import { assert, describe, it } from "@effect/vitest"
import { TranslationError } from "@switchyard-ts/protocol/Errors"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import * as Stream from "effect/Stream"
import { responsesUrl } from "../src/internal/formats/openAiResponses.js"
import type { Target } from "../src/Target.js"
import { apiKey, makeFake, Step, target } from "./support.js"

/** A target of an `openai_responses` client on host `<name>.test`. */
const responsesTarget = (name: string): Target => {
  const base = target(name, { baseUrl: `https://${name}.test/v1/responses/` })
  return { ...base, client: { ...base.client, format: "openai_responses" } }
}

const record = (value: unknown): Record<string, unknown> => (Predicate.isRecord(value) ? value : {})

const response = (extra: Record<string, unknown> = {}) => ({
  id: "resp_1",
  object: "response",
  created_at: 1_700_000_000,
  status: "completed",
  model: "gpt-upstream",
  output: [
    { type: "reasoning", id: "rs_1", summary: [{ type: "summary_text", text: "think" }], encrypted_content: "ENC" },
    {
      type: "message",
      id: "msg_1",
      role: "assistant",
      status: "completed",
      content: [{ type: "output_text", text: "hello from responses", annotations: [] }]
    },
    {
      type: "function_call",
      id: "fc_1",
      call_id: "call_1",
      name: "read",
      arguments: "{\"path\":\"a\"}",
      status: "completed"
    }
  ],
  usage: { input_tokens: 12, output_tokens: 5, total_tokens: 17, input_tokens_details: { cached_tokens: 4 } },
  ...extra
})

const event = (value: Record<string, unknown>, n: number): string =>
  `event: ${String(value["type"])}\ndata: ${JSON.stringify({ ...value, sequence_number: n })}\n\n`

const streamEvents = (): ReadonlyArray<Record<string, unknown>> => {
  const base = { id: "resp_1", object: "response", created_at: 1, model: "gpt-upstream", output: [] }
  const message = {
    type: "message",
    id: "msg_1",
    role: "assistant",
    status: "completed",
    content: [{ type: "output_text", text: "hi there", annotations: [] }]
  }
  return [
    { type: "response.created", response: { ...base, status: "in_progress" } },
    { type: "response.output_item.added", output_index: 0, item: { ...message, status: "in_progress", content: [] } },
    { type: "response.output_text.delta", item_id: "msg_1", output_index: 0, content_index: 0, delta: "hi " },
    { type: "response.future_event", detail: "newer than us" },
    { type: "response.output_text.delta", item_id: "msg_1", output_index: 0, content_index: 0, delta: "there" },
    { type: "response.output_item.done", output_index: 0, item: message },
    {
      type: "response.completed",
      response: {
        ...base,
        status: "completed",
        output: [message],
        usage: { input_tokens: 3, output_tokens: 2, total_tokens: 5 }
      }
    }
  ]
}

describe("UpstreamClient with an openai_responses target", () => {
  it("the URL rule: a trailing /chat/completions or /responses is stripped, /responses appended", () => {
    assert.strictEqual(responsesUrl("https://api.example.com/v1"), "https://api.example.com/v1/responses")
    assert.strictEqual(responsesUrl(" https://api.example.com/v1/responses/ "), "https://api.example.com/v1/responses")
    assert.strictEqual(
      responsesUrl("https://api.example.com/v1/chat/completions"),
      "https://api.example.com/v1/responses"
    )
  })

  it.effect("a chat request is translated into a Responses body; the answer comes back as a chat completion", () =>
    Effect.gen(function*() {
      const fake = yield* makeFake({ "a.test": [Step.ok(response())] })
      const answer = yield* fake.client.answer({
        target: responsesTarget("a"),
        body: {
          model: "route",
          messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "hi" }],
          max_completion_tokens: 64,
          tools: [{ type: "function", function: { name: "read", parameters: { type: "object" } } }]
        },
        headers: { authorization: "Bearer caller" }
      })
      const [seen] = yield* fake.requests
      assert.strictEqual(seen?.url, "https://a.test/v1/responses")
      assert.strictEqual(seen?.headers["authorization"], `Bearer ${apiKey}`)
      const sent = record(seen?.body)
      assert.strictEqual(sent["model"], "a-model")
      assert.strictEqual(sent["max_output_tokens"], 64)
      assert.isFalse("stream" in sent)
      assert.isFalse("messages" in sent)
      assert.include(JSON.stringify(sent["input"]), "Be brief.")
      assert.include(JSON.stringify(sent["input"]), "hi")
      assert.strictEqual(record(Array.isArray(sent["tools"]) ? sent["tools"][0] : undefined)["name"], "read")

      const choice = answer.completion.choices[0]
      assert.strictEqual(choice?.message.content, "hello from responses")
      assert.strictEqual(choice?.message.tool_calls?.[0]?.id, "call_1")
      assert.strictEqual(choice?.finish_reason, "tool_calls")
      assert.strictEqual(answer.completion.usage?.prompt_tokens, 12)
      assert.strictEqual(answer.completion.usage?.completion_tokens, 5)
      assert.isTrue(Option.isNone(answer.native))
    }))

  it.effect("a target's reasoning_effort is the body's reasoning.effort, its other reasoning fields kept", () =>
    Effect.gen(function*() {
      const fake = yield* makeFake({ "a.test": [Step.ok(response()), Step.ok(response())] })
      const forced: Target = { ...responsesTarget("a"), reasoningEffort: "high" }
      yield* fake.client.answer({
        target: forced,
        body: { model: "route", messages: [{ role: "user", content: "hi" }], reasoning_effort: "low" },
        headers: {}
      })
      const native = {
        model: "route",
        input: [{ role: "user", content: "next" }],
        reasoning: { effort: "minimal", summary: "auto" }
      }
      yield* fake.client.answer({
        target: forced,
        body: { model: "route", messages: [{ role: "user", content: "next" }] },
        native: { format: "openai_responses", body: native },
        headers: {}
      })
      const [translated, replayed] = yield* fake.requests
      assert.strictEqual(record(record(translated?.body)["reasoning"])["effort"], "high")
      assert.deepStrictEqual(record(replayed?.body)["reasoning"], { effort: "high", summary: "auto" })
      assert.deepStrictEqual(native.reasoning, { effort: "minimal", summary: "auto" })
    }))

  it.effect("the caller's native Responses body is replayed (model rewritten) and its answer kept as sent", () =>
    Effect.gen(function*() {
      const fake = yield* makeFake({ "a.test": [Step.ok(response({ vendor_field: 1 }))] })
      const native = {
        model: "route",
        input: [{ type: "reasoning", id: "rs_0", summary: [], encrypted_content: "KEEP" }, {
          role: "user",
          content: "next"
        }],
        previous_response_id: "resp_0",
        tools: [{ type: "web_search" }],
        include: ["reasoning.encrypted_content"],
        stream: true
      }
      const answer = yield* fake.client.answer({
        target: responsesTarget("a"),
        body: { model: "route", messages: [{ role: "user", content: "routing view" }] },
        native: { format: "openai_responses", body: native },
        headers: {}
      })
      const [seen] = yield* fake.requests
      const { stream: _stream, ...buffered } = native
      assert.deepStrictEqual(seen?.body, { ...buffered, model: "a-model" })
      assert.strictEqual(answer.completion.choices[0]?.message.content, "hello from responses")
      assert.strictEqual(Option.getOrThrow(answer.native).body["vendor_field"], 1)
    }))

  it.effect("a body that only a Responses server understands fails a call to another format with its TranslationError, no HTTP request", () =>
    Effect.gen(function*() {
      const fake = yield* makeFake({ "b.test": [Step.ok()] })
      const untranslatable = yield* Effect.flip(fake.client.answer({
        target: target("b"),
        body: { model: "route", messages: [{ role: "user", content: "hi" }] },
        native: {
          format: "openai_responses",
          body: { model: "route", input: "hi", previous_response_id: "resp_0" },
          untranslatable: new TranslationError({ reason: "previous_response_id cannot be sent" })
        },
        headers: {}
      }))
      assert.strictEqual(untranslatable._tag, "TranslationError")
      assert.strictEqual((yield* fake.requests).length, 0)
    }))

  it.effect("a stream is translated into chat chunks; an unknown event is skipped; on a native replay every event is kept", () =>
    Effect.gen(function*() {
      const events = streamEvents()
      const fake = yield* makeFake({ "a.test": [Step.sse(events.map(event))] })
      const stream = yield* fake.client.stream({
        target: responsesTarget("a"),
        body: { model: "r", messages: [{ role: "user", content: "hi" }] },
        headers: {}
      })
      const chunks = Chunk.toReadonlyArray(yield* Stream.runCollect(stream))
      assert.strictEqual(chunks.map((c) => c.choices[0]?.delta.content ?? "").join(""), "hi there")
      assert.strictEqual(chunks.at(-1)?.usage?.completion_tokens, 2)
      const [seen] = yield* fake.requests
      assert.strictEqual(record(seen?.body)["stream"], true)

      const replay = yield* makeFake({ "a.test": [Step.sse(events.map(event))] })
      const pieces = yield* replay.client.answerStream({
        target: responsesTarget("a"),
        body: { model: "r", messages: [{ role: "user", content: "hi" }] },
        native: { format: "openai_responses", body: { model: "r", input: "hi", stream: true } },
        headers: {}
      })
      const kept = Chunk.toReadonlyArray(yield* Stream.runCollect(pieces)).flatMap((piece) =>
        Option.toArray(piece.native)
      )
      assert.deepStrictEqual(kept.map((e) => e.event), events.map((e) => String(e["type"])))
      assert.strictEqual(kept[3]?.data["detail"], "newer than us")
    }))

  it.effect("an in-band error or response.failed event fails the stream with a 502 UpstreamStatus, never quoting more than the message", () =>
    Effect.gen(function*() {
      for (
        const failure of [
          { type: "error", code: "server_error", message: "upstream overloaded" },
          {
            type: "response.failed",
            response: {
              id: "resp_1",
              status: "failed",
              error: { code: "server_error", message: "upstream overloaded" }
            }
          }
        ]
      ) {
        const fake = yield* makeFake({ "a.test": [Step.sse([event(streamEvents()[0] ?? {}, 0), event(failure, 1)])] })
        const stream = yield* fake.client.stream({
          target: responsesTarget("a"),
          body: { model: "r", messages: [{ role: "user", content: "hi" }] },
          headers: {}
        })
        const error = yield* Effect.flip(Stream.runDrain(stream))
        assert.strictEqual(error._tag, "UpstreamStatus")
        if (error._tag === "UpstreamStatus") {
          assert.strictEqual(error.status, 502)
          assert.strictEqual(error.upstreamMessage, "upstream overloaded")
        }
      }
    }))
})
