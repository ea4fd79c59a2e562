/**
 * The fake upstream on Gemini's paths (`…/models/{model}:generateContent`, `:streamGenerateContent`,
 * `:countTokens`): the model named by the path, streaming by the method, every behaviour in
 * Gemini's shapes.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Gemini from "@switchyard-ts/protocol/Gemini"
import { FakeUpstream } from "@switchyard-ts/testkit"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"

class FetchError extends Data.TaggedError("FetchError")<{ readonly cause: unknown }> {}

interface Reply {
  readonly status: number
  readonly contentType: string
  readonly text: string
  /** The connection was cut before the body ended. */
  readonly cut: boolean
}

const post = (url: string, body: unknown) =>
  Effect.tryPromise({
    try: async (signal): Promise<Reply> => {
      const response = await fetch(url, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: typeof body === "string" ? body : JSON.stringify(body),
        signal
      })
      // read until the body ends or the connection is cut, keeping what came
      let text = ""
      let cut = false
      const decoder = new TextDecoder()
      const reader = response.body?.getReader()
      try {
        for (let read = await reader?.read(); read !== undefined && !read.done; read = await reader?.read()) {
          text += decoder.decode(read.value, { stream: true })
        }
      } catch {
        cut = true
      }
      return { status: response.status, contentType: response.headers.get("content-type") ?? "", text, cut }
    },
    catch: (cause) => new FetchError({ cause })
  })

const request = { contents: [{ role: "user", parts: [{ text: "hi" }] }] }

const decodeResponse = Schema.decodeUnknownSync(Schema.parseJson(Gemini.GenerateContentResponse))
const decodeError = Schema.decodeUnknownSync(Schema.parseJson(Gemini.ErrorBody))

/** The `data:` payloads of an SSE body. */
const events = (text: string): ReadonlyArray<string> =>
  text.split("\n\n").filter((e) => e.startsWith("data: ")).map((e) => e.slice("data: ".length))

const partsOf = (response: Gemini.GenerateContentResponse) => response.candidates?.[0]?.content?.parts ?? []

describe("FakeUpstream on Gemini paths", () => {
  it.scopedLive("Ok: one buffered response, or one event per piece with the finish and usage last; the path names the model", () =>
    Effect.gen(function*() {
      const up = yield* FakeUpstream.make()
      yield* up.setBehaviour("gemini-x", FakeUpstream.ok("Paris is sunny today."))
      const buffered = yield* post(`${up.url}beta/models/gemini-x:generateContent`, request)
      assert.strictEqual(buffered.status, 200)
      const answer = decodeResponse(buffered.text)
      assert.deepStrictEqual(partsOf(answer), [{ text: "Paris is sunny today." }])
      assert.strictEqual(answer.candidates?.[0]?.finishReason, "STOP")
      assert.strictEqual(answer.modelVersion, "gemini-x")
      assert.isAbove(answer.usageMetadata?.totalTokenCount ?? 0, 0)

      const streamed = yield* post(`${up.url}/models/gemini-x:streamGenerateContent`, request)
      assert.strictEqual(streamed.contentType, "text/event-stream")
      const sent = events(streamed.text).map((text) => decodeResponse(text))
      assert.strictEqual(sent.map((e) => partsOf(e).map((p) => p.text).join("")).join(""), "Paris is sunny today.")
      assert.deepStrictEqual(sent.map((e) => e.candidates?.[0]?.finishReason), [undefined, undefined, "STOP"])
      assert.isDefined(sent.at(-1)?.usageMetadata)
      const log = yield* up.requests
      assert.deepStrictEqual(log.map((r) => [r.model, r.path, r.behaviour?._tag]), [
        ["gemini-x", "/v1beta/models/gemini-x:generateContent", "Ok"],
        ["gemini-x", "/v1/models/gemini-x:streamGenerateContent", "Ok"]
      ])
    }))

  it.scopedLive("Status answers Gemini's envelope; ToolUse a functionCall part; Thinking a signed thought", () =>
    Effect.gen(function*() {
      const up = yield* FakeUpstream.make()
      yield* up.script("g", [
        FakeUpstream.status(429, { message: "slow down", retryAfter: "2" }),
        FakeUpstream.toolUse("get_weather", `{"city":"Paris"}`),
        FakeUpstream.toolUse("get_weather", `{"city":"Lyon"}`, { id: "own" }),
        FakeUpstream.thinking("hmm", "SIG", "done")
      ])
      const url = `${up.url}/models/g:generateContent`
      const limited = yield* post(url, request)
      assert.strictEqual(limited.status, 429)
      assert.deepStrictEqual(decodeError(limited.text), {
        error: { code: 429, message: "slow down", status: "RESOURCE_EXHAUSTED" }
      })
      assert.deepStrictEqual(partsOf(decodeResponse((yield* post(url, request)).text)), [
        { functionCall: { name: "get_weather", args: { city: "Paris" } } }
      ])
      assert.deepStrictEqual(partsOf(decodeResponse((yield* post(url, request)).text)), [
        { functionCall: { id: "own", name: "get_weather", args: { city: "Lyon" } } }
      ])
      assert.deepStrictEqual(partsOf(decodeResponse((yield* post(url, request)).text)), [
        { text: "hmm", thought: true, thoughtSignature: "SIG" },
        { text: "done" }
      ])
    }))

  it.scopedLive("StreamError ends with an error event; CloseMidStream cuts after N events; countTokens; a body that is not JSON", () =>
    Effect.gen(function*() {
      const up = yield* FakeUpstream.make()
      yield* up.script("g", [
        FakeUpstream.streamError("overloaded"),
        FakeUpstream.CloseMidStream.make({ chunksBeforeClose: 2 })
      ])
      const failed = yield* post(`${up.url}/models/g:streamGenerateContent`, request)
      const sent = events(failed.text)
      assert.isFalse(failed.cut)
      assert.strictEqual(sent.length, 2)
      assert.deepStrictEqual(decodeError(sent[1] ?? ""), {
        error: { code: 500, message: "overloaded", status: "INTERNAL" }
      })
      const cut = yield* post(`${up.url}/models/g:streamGenerateContent`, request)
      assert.isTrue(cut.cut)
      assert.strictEqual(events(cut.text).length, 2)
      assert.isUndefined(decodeResponse(events(cut.text)[1] ?? "").candidates?.[0]?.finishReason)

      const counted = yield* post(`${up.url}/models/g:countTokens`, request)
      assert.strictEqual(counted.status, 200)
      assert.isAbove(
        Schema.decodeUnknownSync(Schema.parseJson(Gemini.CountTokensResponse))(counted.text).totalTokens,
        0
      )
      const bad = yield* post(`${up.url}/models/g:generateContent`, "{not json")
      assert.strictEqual(bad.status, 400)
      assert.strictEqual(decodeError(bad.text).error.status, "INVALID_ARGUMENT")
    }))
})
