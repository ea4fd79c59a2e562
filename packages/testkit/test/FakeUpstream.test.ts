import { assert, describe, it } from "@effect/vitest"
import type * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { ChatCompletion, ChatCompletionChunk, UpstreamErrorBody } from "@switchyard-ts/protocol/OpenAiChat"
import { Arbitraries, FakeUpstream } from "@switchyard-ts/testkit"

class FetchError extends Data.TaggedError("FetchError")<{ readonly cause: unknown }> {}

interface Reply {
  readonly status: number
  readonly headers: Headers
  readonly text: string
}

const chatBody = (model: string, extra: Record<string, unknown> = {}) => ({
  model,
  messages: [{ role: "user", content: "hi" }],
  ...extra
})

/** POST JSON and read the whole body; interruption aborts the request. */
const post = (
  url: string,
  body: unknown,
  headers: Record<string, string> = {}
): Effect.Effect<Reply, FetchError> =>
  Effect.tryPromise({
    try: async (signal) => {
      const response = await fetch(url, {
        method: "POST",
        headers: { "content-type": "application/json", ...headers },
        body: typeof body === "string" ? body : JSON.stringify(body),
        signal
      })
      return { status: response.status, headers: response.headers, text: await response.text() }
    },
    catch: (cause) => new FetchError({ cause })
  })

const get = (url: string): Effect.Effect<Reply, FetchError> =>
  Effect.tryPromise({
    try: async (signal) => {
      const response = await fetch(url, { signal })
      return { status: response.status, headers: response.headers, text: await response.text() }
    },
    catch: (cause) => new FetchError({ cause })
  })

const chat = (up: Context.Tag.Service<FakeUpstream.FakeUpstream>, model: string, extra: Record<string, unknown> = {}) =>
  post(`${up.url}/chat/completions`, chatBody(model, extra))

const decodeCompletion = Schema.decodeUnknownSync(Schema.parseJson(ChatCompletion))
const decodeChunk = Schema.decodeUnknownSync(Schema.parseJson(ChatCompletionChunk))
const decodeError = Schema.decodeUnknownSync(Schema.parseJson(UpstreamErrorBody))
const decodeModels = Schema.decodeUnknownSync(Schema.parseJson(Schema.Struct({
  object: Schema.Literal("list"),
  data: Schema.Array(Schema.Struct({ id: Schema.String }))
})))
const decodeEcho = Schema.decodeUnknownSync(Schema.parseJson(Schema.Struct({
  method: Schema.String,
  path: Schema.String,
  headers: Schema.Record({ key: Schema.String, value: Schema.String }),
  body: Schema.Unknown
})))

const contentOf = (reply: Reply): string => decodeCompletion(reply.text).choices[0]?.message.content ?? ""

/** The `data:` payloads of an SSE body, in order. */
const sseData = (text: string): ReadonlyArray<string> =>
  text.split("\n\n").filter((e) => e.startsWith("data: ")).map((e) => e.slice("data: ".length))

const upstream = FakeUpstream.make()

describe("FakeUpstream", () => {
  it.scopedLive("Ok answers a buffered chat.completion", () =>
    Effect.gen(function*() {
      const up = yield* upstream
      yield* up.setBehaviour("m", FakeUpstream.ok("hello there", { usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 } }))
      const reply = yield* chat(up, "m")
      assert.strictEqual(reply.status, 200)
      const completion = decodeCompletion(reply.text)
      assert.strictEqual(completion.model, "m")
      assert.strictEqual(completion.choices[0]?.message.content, "hello there")
      assert.strictEqual(completion.choices[0]?.finish_reason, "stop")
      assert.strictEqual(completion.usage?.total_tokens, 5)
    }))

  it.scopedLive("Ok streams SSE chunks, a usage chunk and [DONE]", () =>
    Effect.gen(function*() {
      const up = yield* upstream
      yield* up.setBehaviour("m", FakeUpstream.ok("one two three four five"))
      const reply = yield* chat(up, "m", { stream: true, stream_options: { include_usage: true } })
      assert.strictEqual(reply.status, 200)
      assert.include(reply.headers.get("content-type") ?? "", "text/event-stream")
      const data = sseData(reply.text)
      assert.strictEqual(data[data.length - 1], "[DONE]")
      const chunks = data.slice(0, -1).map((d) => decodeChunk(d))
      assert.isAtLeast(chunks.length, 4)
      assert.strictEqual(chunks.map((c) => c.choices[0]?.delta.content ?? "").join(""), "one two three four five")
      assert.isTrue(chunks.some((c) => c.choices[0]?.finish_reason === "stop"))
      assert.strictEqual(chunks[chunks.length - 1]?.usage?.completion_tokens, 5)
    }))

  it.scopedLive("Ok without include_usage sends no usage chunk; delayMs delays the answer", () =>
    Effect.gen(function*() {
      const up = yield* upstream
      yield* up.setBehaviour("m", FakeUpstream.ok("x", { delayMs: 120 }))
      const started = Date.now()
      const reply = yield* chat(up, "m", { stream: true })
      assert.isAtLeast(Date.now() - started, 100)
      const chunks = sseData(reply.text).slice(0, -1).map((d) => decodeChunk(d))
      assert.isTrue(chunks.every((c) => c.usage === undefined))
    }))

  it.scopedLive("Status answers the error envelope and Retry-After", () =>
    Effect.gen(function*() {
      const up = yield* upstream
      yield* up.setBehaviour("m", FakeUpstream.status(503, { message: "overloaded", retryAfter: "1" }))
      const reply = yield* chat(up, "m")
      assert.strictEqual(reply.status, 503)
      assert.strictEqual(reply.headers.get("retry-after"), "1")
      const body = decodeError(reply.text)
      assert.strictEqual(body.error.message, "overloaded")
      assert.strictEqual(body.error.type, "server_error")

      yield* up.setBehaviour("m", FakeUpstream.contextLengthExceeded)
      const tooLong = yield* chat(up, "m")
      assert.strictEqual(tooLong.status, 400)
      assert.strictEqual(decodeError(tooLong.text).error.code, "context_length_exceeded")

      yield* up.setBehaviour("m", FakeUpstream.status(400, { body: "{\"object\":\"error\",\"code\":400}" }))
      const raw = yield* chat(up, "m")
      assert.strictEqual(raw.text, "{\"object\":\"error\",\"code\":400}")
    }))

  it.scopedLive("Garbage answers 200 with a body that is not JSON", () =>
    Effect.gen(function*() {
      const up = yield* upstream
      yield* up.setBehaviour("m", FakeUpstream.Garbage.make({ body: "<html>oops</html>" }))
      const reply = yield* chat(up, "m")
      assert.strictEqual(reply.status, 200)
      assert.strictEqual(reply.text, "<html>oops</html>")
      assert.isTrue(Either.isLeft(Schema.decodeUnknownEither(Schema.parseJson(ChatCompletion))(reply.text)))
    }))

  it.scopedLive("a script is consumed in order, then the model's default", () =>
    Effect.gen(function*() {
      const up = yield* upstream
      yield* up.setBehaviour("m", FakeUpstream.ok("default"))
      yield* up.script("m", [FakeUpstream.status(500), FakeUpstream.ok("first")])
      const first = yield* chat(up, "m")
      const second = yield* chat(up, "m")
      const third = yield* chat(up, "m")
      const fourth = yield* chat(up, "m")
      assert.strictEqual(first.status, 500)
      assert.strictEqual(contentOf(second), "first")
      assert.strictEqual(contentOf(third), "default")
      assert.strictEqual(contentOf(fourth), "default")
    }))

  it.scopedLive("behaviours are per model; unknown models get the server default", () =>
    Effect.gen(function*() {
      const up = yield* FakeUpstream.make({ models: { b: FakeUpstream.ok("from b") } })
      yield* up.script("a", [FakeUpstream.status(503)])
      const a = yield* chat(up, "a")
      const b = yield* chat(up, "b")
      const other = yield* chat(up, "unknown")
      const aAgain = yield* chat(up, "a")
      assert.strictEqual(a.status, 503)
      assert.strictEqual(contentOf(b), "from b")
      assert.strictEqual(contentOf(other), FakeUpstream.defaultContent)
      assert.strictEqual(contentOf(aAgain), FakeUpstream.defaultContent)
    }))

  it.scopedLive("the request log records model, path, method, headers and body; clear empties it", () =>
    Effect.gen(function*() {
      const up = yield* upstream
      yield* post(`${up.url}/chat/completions?x=1`, chatBody("m", { temperature: 0.5 }), {
        "X-Custom-Header": "v",
        Authorization: "Bearer k"
      })
      const [record] = yield* up.requests
      assert.isDefined(record)
      if (record === undefined) return
      assert.strictEqual(record.model, "m")
      assert.strictEqual(record.method, "POST")
      assert.strictEqual(record.path, "/v1/chat/completions")
      assert.strictEqual(record.headers["x-custom-header"], "v")
      assert.strictEqual(record.headers["authorization"], "Bearer k")
      assert.deepStrictEqual(record.body, chatBody("m", { temperature: 0.5 }))
      assert.strictEqual(record.behaviour?._tag, "Ok")
      assert.isFalse(record.closedEarly)
      yield* up.clear
      assert.strictEqual((yield* up.requests).length, 0)
    }))

  it.scopedLive("routes: /chat/completions without /v1, GET /v1/models, 404, non-JSON 400", () =>
    Effect.gen(function*() {
      const up = yield* FakeUpstream.make({ models: { alpha: FakeUpstream.ok("a") } })
      const base = `http://127.0.0.1:${up.port}`
      assert.strictEqual(contentOf(yield* post(`${base}/chat/completions`, chatBody("alpha"))), "a")
      const models = yield* get(`${up.url}/models`)
      assert.deepStrictEqual(decodeModels(models.text).data.map((m) => m.id), ["alpha"])
      assert.strictEqual((yield* get(`${base}/nope`)).status, 404)
      const bad = yield* post(`${up.url}/chat/completions`, "{not json")
      assert.strictEqual(bad.status, 400)
      assert.strictEqual(decodeError(bad.text).error.type, "invalid_request_error")
    }))

  it.scopedLive("Chunks streams the given chunks with gaps", () =>
    Effect.gen(function*() {
      const up = yield* upstream
      yield* up.setBehaviour("m", FakeUpstream.Chunks.make({ chunks: ["a", "b", "c"], gapMs: 40 }))
      const started = Date.now()
      const reply = yield* chat(up, "m")
      assert.isAtLeast(Date.now() - started, 70)
      const data = sseData(reply.text)
      assert.strictEqual(data[data.length - 1], "[DONE]")
      const content = data.slice(0, -1).map((d) => decodeChunk(d).choices[0]?.delta.content ?? "").join("")
      assert.strictEqual(content, "abc")
    }))

  it.scopedLive("CloseMidStream cuts the response after N chunks", () =>
    Effect.gen(function*() {
      const up = yield* upstream
      yield* up.setBehaviour("m", FakeUpstream.CloseMidStream.make({ chunksBeforeClose: 2 }))
      const result = yield* Effect.either(chat(up, "m", { stream: true }))
      // fetch reports the cut as an error; a truncated body without [DONE] would do as well.
      Either.match(result, {
        onLeft: () => assert.ok(true),
        onRight: (reply) => assert.notInclude(reply.text, "[DONE]")
      })
      const [record] = yield* up.requests
      assert.isFalse(record?.closedEarly)
    }))

  it.scopedLive("Reset destroys the connection without an answer", () =>
    Effect.gen(function*() {
      const up = yield* upstream
      yield* up.setBehaviour("m", FakeUpstream.reset)
      const result = yield* Effect.either(chat(up, "m"))
      assert.isTrue(Either.isLeft(result))
    }))

  it.scopedLive("a client aborting mid-stream sets closedEarly and wakes awaitClosed", () =>
    Effect.gen(function*() {
      const up = yield* upstream
      yield* up.setBehaviour(
        "m",
        FakeUpstream.Chunks.make({ chunks: Array.from({ length: 20 }, (_, i) => `c${i}`), gapMs: 50 })
      )
      const first = yield* Effect.tryPromise({
        try: async () => {
          const controller = new AbortController()
          const response = await fetch(`${up.url}/chat/completions`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify(chatBody("m", { stream: true })),
            signal: controller.signal
          })
          const reader = response.body?.getReader()
          const chunk = await reader?.read()
          controller.abort()
          return new TextDecoder().decode(chunk?.value)
        },
        catch: (cause) => new FetchError({ cause })
      })
      assert.include(first, "data: ")
      const closed = yield* up.awaitClosed("m").pipe(Effect.timeout("1 second"))
      assert.isTrue(closed.closedEarly)
      assert.strictEqual(closed.model, "m")
    }))

  it.scopedLive("Stall answers nothing; a client timeout shows as closedEarly", () =>
    Effect.gen(function*() {
      const up = yield* upstream
      yield* up.setBehaviour("m", FakeUpstream.stall)
      const result = yield* chat(up, "m").pipe(Effect.timeoutOption("150 millis"))
      assert.isTrue(Option.isNone(result))
      const closed = yield* up.awaitClosed("m").pipe(Effect.timeout("1 second"))
      assert.strictEqual(closed.behaviour?._tag, "Stall")
    }))

  it.live("closing the scope ends a stalled request", () =>
    Effect.gen(function*() {
      const fiber = yield* Effect.scoped(Effect.gen(function*() {
        const up = yield* FakeUpstream.make({ defaultBehaviour: FakeUpstream.stall })
        const pending = yield* Effect.fork(Effect.either(chat(up, "m")))
        yield* up.awaitRequest("m").pipe(Effect.timeout("1 second"))
        return pending
      }))
      const result = yield* Fiber.join(fiber).pipe(Effect.timeout("1 second"))
      assert.isTrue(Either.isLeft(result))
    }))

  it.scopedLive("Echo answers with the request it received", () =>
    Effect.gen(function*() {
      const up = yield* upstream
      yield* up.setBehaviour("m", FakeUpstream.echo)
      const reply = yield* post(`${up.url}/chat/completions`, chatBody("m", { seed: 7 }), { authorization: "Bearer k" })
      const echoed = decodeEcho(contentOf(reply))
      assert.deepStrictEqual(echoed.body, chatBody("m", { seed: 7 }))
      assert.strictEqual(echoed.headers["authorization"], "Bearer k")
      assert.strictEqual(echoed.path, "/v1/chat/completions")
    }))

  it.scopedLive("a fixed port fails with ListenError when taken", () =>
    Effect.gen(function*() {
      const up = yield* upstream
      const again = yield* Effect.either(FakeUpstream.make({ port: up.port }))
      assert.isTrue(Either.isLeft(again))
      if (Either.isLeft(again)) assert.strictEqual(again.left._tag, "ListenError")
    }))
})

describe("Arbitraries", () => {
  it.prop(
    "arbitraries produce schema-valid behaviours and outcomes",
    [Arbitraries.behaviour, Arbitraries.failureBehaviour, Arbitraries.schedule(5), Arbitraries.judgeOutcome],
    ([b, failure, schedule, outcome]) => {
      assert.isTrue(Schema.is(FakeUpstream.Behaviour)(b))
      assert.isTrue(Schema.is(Arbitraries.FailureBehaviour)(failure))
      assert.isTrue(schedule.length <= 5 && schedule.every(Schema.is(FakeUpstream.Behaviour)))
      assert.isTrue(Schema.is(Arbitraries.JudgeOutcome)(outcome))
      assert.isTrue(Schema.is(FakeUpstream.Behaviour)(Arbitraries.judgeBehaviour(outcome)))
    },
    { fastCheck: { numRuns: 200 } }
  )

  it.scopedLive.prop(
    "a generated schedule is served in order",
    [Arbitraries.schedule(3, Arbitraries.answeringBehaviour)],
    ([schedule]) =>
      Effect.gen(function*() {
        const up = yield* upstream
        yield* up.script("m", schedule)
        for (const _ of schedule) yield* Effect.either(chat(up, "m"))
        const served = (yield* up.requests).map((r) => r.behaviour)
        assert.deepStrictEqual(served, [...schedule])
      }),
    { fastCheck: { numRuns: 8 } }
  )
})
