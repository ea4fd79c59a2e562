import { assert, describe, it } from "@effect/vitest"
import { ChatCompletion, ChatCompletionChunk, UpstreamErrorBody } from "@switchyard-ts/protocol/OpenAiChat"
import * as OpenAiResponses from "@switchyard-ts/protocol/OpenAiResponses"
import { Arbitraries, FakeUpstream } from "@switchyard-ts/testkit"
import type * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Http from "node:http"

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

/**
 * POST JSON over `node:http` and read the body until it ends (`failed: false`) or the connection is
 * cut (`failed: true`). Not `fetch`: the Fetch standard turns a 407 answer into a network error, and
 * a fake upstream may answer any status from 400 to 599.
 */
const httpPost = (
  url: string,
  body: unknown,
  headers: Record<string, string>,
  signal: AbortSignal
): Promise<Reply & { readonly failed: boolean }> =>
  new Promise((resolve, reject) => {
    const request = Http.request(url, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      signal
    }, (response) => {
      const decoder = new TextDecoder()
      const received = new Headers()
      for (const [name, value] of Object.entries(response.headers)) {
        if (value !== undefined) received.set(name, Array.isArray(value) ? value.join(", ") : value)
      }
      let text = ""
      let ended = false
      response.on("data", (chunk: Buffer) => {
        text += decoder.decode(chunk, { stream: true })
      })
      response.on("end", () => {
        ended = true
      })
      response.on("error", () => undefined)
      response.on("close", () =>
        resolve({ status: response.statusCode ?? 0, headers: received, text: text + decoder.decode(), failed: !ended }))
    })
    request.on("error", reject)
    request.end(typeof body === "string" ? body : JSON.stringify(body))
  })

/** POST JSON and read the whole body (a body cut short fails); interruption aborts the request. */
const post = (
  url: string,
  body: unknown,
  headers: Record<string, string> = {}
): Effect.Effect<Reply, FetchError> =>
  Effect.tryPromise({
    try: async (signal) => {
      const reply = await httpPost(url, body, headers, signal)
      if (reply.failed) throw new Error("the response body was cut short")
      return { status: reply.status, headers: reply.headers, text: reply.text }
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

// --- Anthropic Messages ------------------------------------------------------------------------

const messagesBody = (model: string, extra: Record<string, unknown> = {}) => ({
  model,
  max_tokens: 64,
  messages: [{ role: "user", content: "hi" }],
  ...extra
})

const messages = (
  up: Context.Tag.Service<FakeUpstream.FakeUpstream>,
  model: string,
  extra: Record<string, unknown> = {}
) => post(`${up.url}/messages`, messagesBody(model, extra))

const AnthropicUsage = Schema.Struct({
  input_tokens: Schema.Number,
  output_tokens: Schema.Number,
  cache_read_input_tokens: Schema.optional(Schema.Number),
  cache_creation_input_tokens: Schema.optional(Schema.Number)
})
const TextBlock = Schema.Struct({ type: Schema.Literal("text"), text: Schema.String })
const ToolUseBlock = Schema.Struct({
  type: Schema.Literal("tool_use"),
  id: Schema.String,
  name: Schema.String,
  input: Schema.Unknown
})
const AnthropicMessage = Schema.Struct({
  id: Schema.String,
  type: Schema.Literal("message"),
  role: Schema.Literal("assistant"),
  model: Schema.String,
  content: Schema.Array(Schema.Union(TextBlock, ToolUseBlock)),
  stop_reason: Schema.NullOr(Schema.String),
  stop_sequence: Schema.Null,
  usage: AnthropicUsage
})
const AnthropicError = Schema.Struct({
  type: Schema.Literal("error"),
  error: Schema.Struct({ type: Schema.String, message: Schema.String })
})
const AnthropicEvent = Schema.Union(
  Schema.Struct({ type: Schema.Literal("message_start"), message: AnthropicMessage }),
  Schema.Struct({
    type: Schema.Literal("content_block_start"),
    index: Schema.Number,
    content_block: Schema.Union(TextBlock, ToolUseBlock)
  }),
  Schema.Struct({ type: Schema.Literal("ping") }),
  Schema.Struct({
    type: Schema.Literal("content_block_delta"),
    index: Schema.Number,
    delta: Schema.Union(
      Schema.Struct({ type: Schema.Literal("text_delta"), text: Schema.String }),
      Schema.Struct({ type: Schema.Literal("input_json_delta"), partial_json: Schema.String })
    )
  }),
  Schema.Struct({ type: Schema.Literal("content_block_stop"), index: Schema.Number }),
  Schema.Struct({
    type: Schema.Literal("message_delta"),
    delta: Schema.Struct({ stop_reason: Schema.String, stop_sequence: Schema.Null }),
    usage: Schema.Struct({ output_tokens: Schema.Number })
  }),
  Schema.Struct({ type: Schema.Literal("message_stop") }),
  AnthropicError
)
type AnthropicEvent = typeof AnthropicEvent.Type

const decodeMessage = Schema.decodeUnknownSync(Schema.parseJson(AnthropicMessage))
const decodeAnthropicError = Schema.decodeUnknownSync(Schema.parseJson(AnthropicError))
const decodeEvent = Schema.decodeUnknownSync(Schema.parseJson(AnthropicEvent))
const decodeCount = Schema.decodeUnknownSync(Schema.parseJson(Schema.Struct({ input_tokens: Schema.Number })))
const decodeOpenAiStreamError = Schema.decodeUnknownSync(Schema.parseJson(Schema.Struct({
  error: Schema.Struct({ message: Schema.String, type: Schema.Literal("server_error") })
})))

/**
 * The events of an Anthropic SSE body, in order: each block must be `event: <name>` then
 * `data: <json>` whose `type` is that name.
 */
const anthropicEvents = (text: string): ReadonlyArray<AnthropicEvent> =>
  text.split("\n\n").filter((block) => block.length > 0).map((block) => {
    const [eventLine, dataLine, ...rest] = block.split("\n")
    assert.strictEqual(rest.length, 0, `unexpected lines in ${block}`)
    assert.isTrue(eventLine?.startsWith("event: "), block)
    assert.isTrue(dataLine?.startsWith("data: "), block)
    const event = decodeEvent((dataLine ?? "").slice("data: ".length))
    assert.strictEqual(event.type, (eventLine ?? "").slice("event: ".length))
    return event
  })

const textDeltas = (events: ReadonlyArray<AnthropicEvent>): ReadonlyArray<string> =>
  events.flatMap((e) => e.type === "content_block_delta" && e.delta.type === "text_delta" ? [e.delta.text] : [])

const jsonDeltas = (events: ReadonlyArray<AnthropicEvent>): ReadonlyArray<string> =>
  events.flatMap((e) =>
    e.type === "content_block_delta" && e.delta.type === "input_json_delta" ? [e.delta.partial_json] : []
  )

/** POST and read the body until it ends or fails; `failed` tells whether the read broke off. */
const postUntilCut = (
  url: string,
  body: unknown
): Effect.Effect<{ readonly text: string; readonly failed: boolean }, FetchError> =>
  Effect.tryPromise({
    try: (signal) => httpPost(url, body, {}, signal),
    catch: (cause) => new FetchError({ cause })
  })

describe("FakeUpstream", () => {
  it.scopedLive("Ok answers a buffered chat.completion", () =>
    Effect.gen(function*() {
      const up = yield* upstream
      yield* up.setBehaviour(
        "m",
        FakeUpstream.ok("hello there", { usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 } })
      )
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

  it.scopedLive("cycle rotates the default after the script; setBehaviour replaces the rotation", () =>
    Effect.gen(function*() {
      const up = yield* upstream
      yield* up.cycle("m", [FakeUpstream.ok("a"), FakeUpstream.status(503), FakeUpstream.ok("c")])
      yield* up.script("m", [FakeUpstream.ok("scripted")])
      const replies: Array<Reply> = []
      for (let i = 0; i < 5; i++) replies.push(yield* chat(up, "m"))
      assert.deepStrictEqual(
        replies.map((r) => r.status === 200 ? contentOf(r) : r.status),
        ["scripted", "a", 503, "c", "a"]
      )
      yield* up.cycle("m", [FakeUpstream.ok("x"), FakeUpstream.ok("y")])
      assert.strictEqual(contentOf(yield* chat(up, "m")), "x")
      yield* up.setBehaviour("m", FakeUpstream.ok("only"))
      assert.strictEqual(contentOf(yield* chat(up, "m")), "only")
      assert.strictEqual(contentOf(yield* chat(up, "m")), "only")
      assert.strictEqual(contentOf(yield* chat(up, "other")), FakeUpstream.defaultContent)
    }))

  it.scopedLive("drain returns the log and empties it in one step", () =>
    Effect.gen(function*() {
      const up = yield* upstream
      yield* chat(up, "m1")
      yield* chat(up, "m2")
      const drained = yield* up.drain
      assert.deepStrictEqual(drained.map((r) => r.model), ["m1", "m2"])
      assert.strictEqual((yield* up.requests).length, 0)
      yield* chat(up, "m3")
      assert.deepStrictEqual((yield* up.drain).map((r) => [r.id, r.model]), [[3, "m3"]])
    }))

  it.scopedLive("Ok gapMs spaces the streamed content pieces (both APIs); buffered answers are not delayed", () =>
    Effect.gen(function*() {
      const up = yield* upstream
      yield* up.setBehaviour("m", FakeUpstream.ok("one two three", { gapMs: 80 }))
      let started = Date.now()
      const streamed = yield* chat(up, "m", { stream: true })
      assert.isAtLeast(Date.now() - started, 150)
      const chunks = sseData(streamed.text).slice(0, -1).map((d) => decodeChunk(d))
      assert.strictEqual(chunks.map((c) => c.choices[0]?.delta.content ?? "").join(""), "one two three")
      started = Date.now()
      const anthropic = yield* messages(up, "m", { stream: true })
      assert.isAtLeast(Date.now() - started, 150)
      assert.include(anthropic.text, "message_stop")
      started = Date.now()
      assert.strictEqual(contentOf(yield* chat(up, "m")), "one two three")
      assert.isBelow(Date.now() - started, 150)
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

  it.scopedLive("awaitRequests waits for a condition over the whole log, woken by requests and by closedEarly", () =>
    Effect.gen(function*() {
      const up = yield* upstream
      yield* up.setBehaviour("stalled", FakeUpstream.stall)
      assert.deepStrictEqual(yield* up.awaitRequests((records) => records.length === 0), [])
      const two = yield* Effect.fork(up.awaitRequests((records) => records.filter((r) => r.model === "m").length === 2))
      yield* chat(up, "m")
      yield* chat(up, "m")
      assert.deepStrictEqual((yield* Fiber.join(two)).map((r) => r.id), [1, 2])
      const closed = yield* Effect.fork(up.awaitRequests((records) => records.some((r) => r.closedEarly)))
      const stalled = yield* Effect.fork(chat(up, "stalled"))
      yield* up.awaitRequest("stalled")
      yield* Fiber.interrupt(stalled)
      const log = yield* Fiber.join(closed)
      assert.deepStrictEqual(log.map((r) => [r.model, r.closedEarly]), [["m", false], ["m", false], ["stalled", true]])
    }))

  it.scopedLive("connection numbers the TCP connection a request came on", () =>
    Effect.gen(function*() {
      const up = yield* upstream
      const body = JSON.stringify(chatBody("m"))
      const send = (agent: Http.Agent | false) =>
        Effect.async<number>((resume) => {
          const request = Http.request(`${up.url}/chat/completions`, {
            method: "POST",
            agent,
            headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) }
          }, (response) => {
            response.resume()
            response.on("end", () => resume(Effect.succeed(response.statusCode ?? 0)))
          })
          request.on("error", (cause) => resume(Effect.die(cause)))
          request.end(body)
        })
      const keepAlive = yield* Effect.acquireRelease(
        Effect.sync(() => new Http.Agent({ keepAlive: true, maxSockets: 1 })),
        (agent) => Effect.sync(() => agent.destroy())
      )
      for (const agent of [keepAlive, keepAlive, false, false] as const) assert.strictEqual(yield* send(agent), 200)
      assert.deepStrictEqual((yield* up.requests).map((r) => r.connection), [1, 1, 2, 3])
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

describe("FakeUpstream on /v1/messages (Anthropic)", () => {
  it.scopedLive("Ok answers a buffered message; usage maps cache tokens out of input_tokens", () =>
    Effect.gen(function*() {
      const up = yield* upstream
      yield* up.setBehaviour(
        "m",
        FakeUpstream.ok("hello there", {
          usage: {
            prompt_tokens: 100,
            completion_tokens: 7,
            total_tokens: 107,
            prompt_tokens_details: { cached_tokens: 60, cache_creation_tokens: 15 }
          }
        })
      )
      const reply = yield* messages(up, "m")
      assert.strictEqual(reply.status, 200)
      const message = decodeMessage(reply.text)
      assert.strictEqual(message.model, "m")
      assert.deepStrictEqual(message.content, [{ type: "text", text: "hello there" }])
      assert.strictEqual(message.stop_reason, "end_turn")
      assert.deepStrictEqual(message.usage, {
        input_tokens: 25,
        output_tokens: 7,
        cache_read_input_tokens: 60,
        cache_creation_input_tokens: 15
      })
      const [record] = yield* up.requests
      assert.strictEqual(record?.path, "/v1/messages")
      assert.strictEqual(record?.behaviour?._tag, "Ok")
      assert.strictEqual(message.id, `msg_fake_${record?.id}`)

      yield* up.setBehaviour(
        "m",
        FakeUpstream.ok("a b c", { usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 } })
      )
      const plain = decodeMessage((yield* post(`http://127.0.0.1:${up.port}/messages`, messagesBody("m"))).text)
      assert.deepStrictEqual(plain.usage, { input_tokens: 3, output_tokens: 2 })
    }))

  it.scopedLive("Ok with stream: true sends the Anthropic event sequence", () =>
    Effect.gen(function*() {
      const up = yield* upstream
      yield* up.setBehaviour(
        "m",
        FakeUpstream.ok("one two three four five", {
          usage: { prompt_tokens: 11, completion_tokens: 5, total_tokens: 16 }
        })
      )
      const reply = yield* messages(up, "m", { stream: true })
      assert.strictEqual(reply.status, 200)
      assert.include(reply.headers.get("content-type") ?? "", "text/event-stream")
      const events = anthropicEvents(reply.text)
      assert.deepStrictEqual(events.map((e) => e.type), [
        "message_start",
        "content_block_start",
        "ping",
        "content_block_delta",
        "content_block_delta",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop"
      ])
      assert.strictEqual(textDeltas(events).join(""), "one two three four five")
      const [start] = events
      assert.strictEqual(start?.type === "message_start" ? start.message.usage.input_tokens : -1, 11)
      assert.strictEqual(start?.type === "message_start" ? start.message.usage.output_tokens : -1, 1)
      assert.deepStrictEqual(start?.type === "message_start" ? start.message.content : undefined, [])
      const delta = events.find((e) => e.type === "message_delta")
      assert.deepStrictEqual(delta, {
        type: "message_delta",
        delta: { stop_reason: "end_turn", stop_sequence: null },
        usage: { output_tokens: 5 }
      })
      assert.notInclude(reply.text, "[DONE]")
    }))

  it.scopedLive("Chunks streams on /v1/messages whatever the stream flag; Echo answers the request", () =>
    Effect.gen(function*() {
      const up = yield* upstream
      yield* up.script("m", [FakeUpstream.Chunks.make({ chunks: ["a", "b", "c"], gapMs: 40 }), FakeUpstream.echo])
      const started = Date.now()
      const chunks = yield* messages(up, "m")
      assert.isAtLeast(Date.now() - started, 70)
      const events = anthropicEvents(chunks.text)
      assert.deepStrictEqual(textDeltas(events), ["a", "b", "c"])
      assert.strictEqual(events[events.length - 1]?.type, "message_stop")

      const echoed = decodeMessage((yield* messages(up, "m", { system: "be brief" })).text)
      const [block] = echoed.content
      const echo = decodeEcho(block?.type === "text" ? block.text : "")
      assert.strictEqual(echo.path, "/v1/messages")
      assert.deepStrictEqual(echo.body, messagesBody("m", { system: "be brief" }))
    }))

  it.scopedLive("Status answers the Anthropic error envelope, typed by status", () =>
    Effect.gen(function*() {
      const up = yield* upstream
      const cases: ReadonlyArray<readonly [number, string]> = [
        [400, "invalid_request_error"],
        [401, "authentication_error"],
        [403, "permission_error"],
        [404, "not_found_error"],
        [413, "request_too_large"],
        [429, "rate_limit_error"],
        [500, "api_error"],
        [529, "overloaded_error"]
      ]
      for (const [code, type] of cases) {
        yield* up.setBehaviour("m", FakeUpstream.status(code))
        const reply = yield* messages(up, "m")
        assert.strictEqual(reply.status, code)
        assert.strictEqual(decodeAnthropicError(reply.text).error.type, type)
      }

      yield* up.setBehaviour(
        "m",
        FakeUpstream.status(429, { message: "slow down", type: "custom_error", retryAfter: "2" })
      )
      const limited = yield* messages(up, "m")
      assert.strictEqual(limited.headers.get("retry-after"), "2")
      assert.deepStrictEqual(decodeAnthropicError(limited.text).error, { type: "custom_error", message: "slow down" })

      yield* up.setBehaviour("m", FakeUpstream.anthropicContextTooLong)
      const tooLong = yield* messages(up, "m")
      assert.strictEqual(tooLong.status, 400)
      assert.deepStrictEqual(decodeAnthropicError(tooLong.text).error, {
        type: "invalid_request_error",
        message: "prompt is too long: 210000 tokens > 200000 maximum"
      })

      yield* up.setBehaviour("m", FakeUpstream.status(400, { body: "raw" }))
      assert.strictEqual((yield* messages(up, "m")).text, "raw")

      const bad = yield* post(`${up.url}/messages`, "{not json")
      assert.strictEqual(bad.status, 400)
      assert.strictEqual(decodeAnthropicError(bad.text).error.type, "invalid_request_error")
    }))

  it.scopedLive("ToolUse buffered: tool_use block with the parsed input, stop_reason tool_use", () =>
    Effect.gen(function*() {
      const up = yield* upstream
      const input = "{\"city\":\"Paris\",\"days\":[1,2]}"
      yield* up.script("m", [
        FakeUpstream.toolUse("get_weather", input, { text: "Let me check." }),
        FakeUpstream.toolUse("get_weather", input, { id: "toolu_given" })
      ])
      const first = decodeMessage((yield* messages(up, "m")).text)
      const [record] = yield* up.requests
      assert.strictEqual(first.stop_reason, "tool_use")
      assert.deepStrictEqual(first.content, [
        { type: "text", text: "Let me check." },
        {
          type: "tool_use",
          id: `toolu_fake_${record?.id}`,
          name: "get_weather",
          input: { city: "Paris", days: [1, 2] }
        }
      ])
      const second = decodeMessage((yield* messages(up, "m")).text)
      assert.deepStrictEqual(second.content, [
        { type: "tool_use", id: "toolu_given", name: "get_weather", input: { city: "Paris", days: [1, 2] } }
      ])
    }))

  it.scopedLive("ToolUse streamed: text block, then tool_use block with input_json_delta fragments", () =>
    Effect.gen(function*() {
      const up = yield* upstream
      const input = "{\"query\":\"effect schema\",\"n\":3}"
      yield* up.script("m", [
        FakeUpstream.toolUse("search", input, { text: "Searching" }),
        FakeUpstream.toolUse("search", input)
      ])
      const events = anthropicEvents((yield* messages(up, "m", { stream: true })).text)
      assert.deepStrictEqual(events.map((e) => e.type).filter((t) => t !== "content_block_delta"), [
        "message_start",
        "content_block_start",
        "ping",
        "content_block_stop",
        "content_block_start",
        "content_block_stop",
        "message_delta",
        "message_stop"
      ])
      assert.strictEqual(textDeltas(events).join(""), "Searching")
      const fragments = jsonDeltas(events)
      assert.isAtLeast(fragments.length, 2)
      assert.isAtMost(fragments.length, 3)
      assert.strictEqual(fragments.join(""), input)
      const toolStart = events.filter((e) => e.type === "content_block_start")[1]
      const [record] = yield* up.requests
      assert.deepStrictEqual(toolStart, {
        type: "content_block_start",
        index: 1,
        content_block: { type: "tool_use", id: `toolu_fake_${record?.id}`, name: "search", input: {} }
      })
      const jsonIndexes = events.flatMap((e) =>
        e.type === "content_block_delta" && e.delta.type === "input_json_delta" ? [e.index] : []
      )
      assert.isTrue(jsonIndexes.every((i) => i === 1))
      const delta = events.find((e) => e.type === "message_delta")
      assert.strictEqual(delta?.type === "message_delta" ? delta.delta.stop_reason : "", "tool_use")

      const bare = anthropicEvents((yield* messages(up, "m", { stream: true })).text)
      assert.deepStrictEqual(bare.slice(0, 3).map((e) => e.type), ["message_start", "content_block_start", "ping"])
      const bareStart = bare[1]
      assert.strictEqual(bareStart?.type === "content_block_start" ? bareStart.index : -1, 0)
      assert.strictEqual(bareStart?.type === "content_block_start" ? bareStart.content_block.type : "", "tool_use")
      assert.strictEqual(textDeltas(bare).length, 0)
      assert.strictEqual(jsonDeltas(bare).join(""), input)
    }))

  it.scopedLive("count_tokens answers ceil(body length / 4), is logged, and consumes no behaviour", () =>
    Effect.gen(function*() {
      const up = yield* upstream
      yield* up.script("m", [FakeUpstream.status(503)])
      const body = messagesBody("m", { system: "x".repeat(41) })
      const reply = yield* post(`${up.url}/messages/count_tokens`, body)
      assert.strictEqual(reply.status, 200)
      assert.strictEqual(decodeCount(reply.text).input_tokens, Math.ceil(JSON.stringify(body).length / 4))
      const [record] = yield* up.requests
      assert.strictEqual(record?.path, "/v1/messages/count_tokens")
      assert.strictEqual(record?.model, "m")
      assert.isUndefined(record?.behaviour)
      assert.strictEqual((yield* messages(up, "m")).status, 503)
    }))

  it.scopedLive("CloseMidStream cuts after message_start and N text deltas", () =>
    Effect.gen(function*() {
      const up = yield* upstream
      yield* up.setBehaviour("m", FakeUpstream.CloseMidStream.make({ chunksBeforeClose: 2 }))
      const result = yield* postUntilCut(`${up.url}/messages`, messagesBody("m", { stream: true }))
      assert.isTrue(result.failed)
      const events = anthropicEvents(result.text)
      assert.strictEqual(events[0]?.type, "message_start")
      assert.deepStrictEqual(textDeltas(events), ["chunk 0 ", "chunk 1 "])
      assert.isFalse(events.some((e) => e.type === "message_stop" || e.type === "message_delta"))
      const [record] = yield* up.requests
      assert.isFalse(record?.closedEarly)
    }))

  it.scopedLive("StreamError ends the stream with an in-band error event, in both APIs", () =>
    Effect.gen(function*() {
      const up = yield* upstream
      yield* up.setBehaviour("m", FakeUpstream.streamError("upstream overloaded"))

      const anthropic = yield* postUntilCut(`${up.url}/messages`, messagesBody("m", { stream: true }))
      assert.isFalse(anthropic.failed)
      const events = anthropicEvents(anthropic.text)
      assert.deepStrictEqual(events.map((e) => e.type), [
        "message_start",
        "content_block_start",
        "ping",
        "content_block_delta",
        "error"
      ])
      assert.deepStrictEqual(events[events.length - 1], {
        type: "error",
        error: { type: "overloaded_error", message: "upstream overloaded" }
      })

      const openAi = yield* postUntilCut(`${up.url}/chat/completions`, chatBody("m"))
      assert.isFalse(openAi.failed)
      const data = sseData(openAi.text)
      assert.strictEqual(data.length, 2)
      assert.strictEqual(decodeChunk(data[0] ?? "").choices[0]?.delta.content, "chunk 0 ")
      assert.strictEqual(decodeOpenAiStreamError(data[1] ?? "").error.message, "upstream overloaded")
      assert.notInclude(openAi.text, "[DONE]")
    }))
})

describe("FakeUpstream ToolUse on /v1/chat/completions (OpenAI)", () => {
  it.scopedLive("buffered: tool_calls with the arguments verbatim, finish_reason tool_calls", () =>
    Effect.gen(function*() {
      const up = yield* upstream
      const input = "{\"city\":\"Paris\"}"
      yield* up.script("m", [
        FakeUpstream.toolUse("get_weather", input),
        FakeUpstream.toolUse("get_weather", input, { id: "call_given", text: "Checking." })
      ])
      const first = decodeCompletion((yield* chat(up, "m")).text)
      const [record] = yield* up.requests
      assert.strictEqual(first.choices[0]?.finish_reason, "tool_calls")
      assert.strictEqual(first.choices[0]?.message.content, null)
      assert.deepStrictEqual(first.choices[0]?.message.tool_calls, [
        { id: `call_fake_${record?.id}`, type: "function", function: { name: "get_weather", arguments: input } }
      ])
      const second = decodeCompletion((yield* chat(up, "m")).text)
      assert.strictEqual(second.choices[0]?.message.content, "Checking.")
      assert.strictEqual(second.choices[0]?.message.tool_calls?.[0]?.id, "call_given")
    }))

  it.scopedLive("streamed: a tool_calls header delta, 2–3 argument fragments, tool_calls finish, usage, [DONE]", () =>
    Effect.gen(function*() {
      const up = yield* upstream
      const input = "{\"query\":\"effect schema\",\"n\":3}"
      yield* up.setBehaviour("m", FakeUpstream.toolUse("search", input, { text: "Looking" }))
      const reply = yield* chat(up, "m", { stream: true, stream_options: { include_usage: true } })
      const data = sseData(reply.text)
      assert.strictEqual(data[data.length - 1], "[DONE]")
      const chunks = data.slice(0, -1).map((d) => decodeChunk(d))
      assert.strictEqual(chunks[0]?.choices[0]?.delta.role, "assistant")
      assert.strictEqual(chunks.map((c) => c.choices[0]?.delta.content ?? "").join(""), "Looking")
      const calls = chunks.flatMap((c) => c.choices[0]?.delta.tool_calls ?? [])
      const [header, ...fragments] = calls
      const [record] = yield* up.requests
      assert.deepStrictEqual(header, {
        index: 0,
        id: `call_fake_${record?.id}`,
        type: "function",
        function: { name: "search", arguments: "" }
      })
      assert.isAtLeast(fragments.length, 2)
      assert.isAtMost(fragments.length, 3)
      assert.isTrue(fragments.every((f) => f.index === 0 && f.id === undefined))
      assert.strictEqual(fragments.map((f) => f.function?.arguments ?? "").join(""), input)
      assert.strictEqual(chunks.filter((c) => c.choices[0]?.finish_reason === "tool_calls").length, 1)
      const last = chunks[chunks.length - 1]
      assert.strictEqual(last?.choices.length, 0)
      assert.isAbove(last?.usage?.completion_tokens ?? 0, 0)
    }))

  it("JsonObjectText accepts only the JSON text of an object", () => {
    const is = Schema.is(FakeUpstream.JsonObjectText)
    assert.isTrue(is("{}"))
    assert.isTrue(is("{\"a\":[1]}"))
    assert.isFalse(is("[1]"))
    assert.isFalse(is("3"))
    assert.isFalse(is("{oops"))
  })
})

describe("FakeUpstream on /v1/responses (OpenAI Responses)", () => {
  const responsesBody = (model: string, extra: Record<string, unknown> = {}) => ({ model, input: "hi", ...extra })
  const responses = (
    up: Context.Tag.Service<FakeUpstream.FakeUpstream>,
    model: string,
    extra: Record<string, unknown> = {}
  ) => post(`${up.url}/responses`, responsesBody(model, extra))
  const decodeResponse = Schema.decodeUnknownSync(Schema.parseJson(OpenAiResponses.ResponseObject))
  const decodeResponsesEvent = Schema.decodeUnknownSync(Schema.parseJson(OpenAiResponses.StreamEvent))
  const isMessage = Schema.is(OpenAiResponses.MessageItem)
  const isFunctionCall = Schema.is(OpenAiResponses.FunctionCallItem)
  const isReasoning = Schema.is(OpenAiResponses.ReasoningItem)
  const isCreated = Schema.is(OpenAiResponses.CreatedEvent)

  /**
   * The events of a Responses SSE body, in order: each block `event: <type>` then `data: <json>`
   * whose `type` is that name, decoded as a known event, `sequence_number` counting from 0.
   */
  const responsesEvents = (text: string): ReadonlyArray<OpenAiResponses.StreamEvent> =>
    text.split("\n\n").filter((block) => block.length > 0).map((block, index) => {
      const [eventLine, dataLine, ...rest] = block.split("\n")
      assert.strictEqual(rest.length, 0, `unexpected lines in ${block}`)
      assert.isTrue(eventLine?.startsWith("event: "), block)
      assert.isTrue(dataLine?.startsWith("data: "), block)
      const event = decodeResponsesEvent((dataLine ?? "").slice("data: ".length))
      assert.strictEqual(event.type, (eventLine ?? "").slice("event: ".length))
      assert.isTrue(OpenAiResponses.streamEventTypes.has(event.type), `not a known event: ${event.type}`)
      assert.strictEqual(event.sequence_number, index)
      return event
    })

  const outputTextDeltas = (events: ReadonlyArray<OpenAiResponses.StreamEvent>): ReadonlyArray<string> =>
    events.flatMap((e) => e.type === "response.output_text.delta" && "delta" in e ? [e.delta] : [])

  const completedOf = (
    events: ReadonlyArray<OpenAiResponses.StreamEvent>
  ): OpenAiResponses.ResponseObject | undefined => {
    const last = events[events.length - 1]
    return last?.type === "response.completed" && "response" in last ? last.response : undefined
  }

  const messageSequence = (deltas: number) => [
    "response.output_item.added",
    "response.content_part.added",
    ...Array.from({ length: deltas }, () => "response.output_text.delta"),
    "response.output_text.done",
    "response.content_part.done",
    "response.output_item.done"
  ]

  it.scopedLive("Ok answers a buffered response: a message with output_text, usage in input/output/total tokens", () =>
    Effect.gen(function*() {
      const up = yield* upstream
      yield* up.setBehaviour(
        "m",
        FakeUpstream.ok("hello there", {
          usage: {
            prompt_tokens: 100,
            completion_tokens: 7,
            total_tokens: 107,
            prompt_tokens_details: { cached_tokens: 60 }
          }
        })
      )
      const reply = yield* responses(up, "m")
      assert.strictEqual(reply.status, 200)
      assert.include(reply.headers.get("content-type") ?? "", "application/json")
      const response = decodeResponse(reply.text)
      const [record] = yield* up.requests
      assert.strictEqual(record?.path, "/v1/responses")
      assert.strictEqual(record?.behaviour?._tag, "Ok")
      assert.strictEqual(response.id, `resp_fake_${record?.id}`)
      assert.strictEqual(response.object, "response")
      assert.strictEqual(response.status, "completed")
      assert.strictEqual(response.model, "m")
      assert.deepStrictEqual(response.output, [{
        type: "message",
        id: `msg_fake_${record?.id}`,
        status: "completed",
        role: "assistant",
        content: [{ type: "output_text", text: "hello there", annotations: [] }]
      }])
      assert.deepStrictEqual(response.usage, {
        input_tokens: 100,
        output_tokens: 7,
        total_tokens: 107,
        input_tokens_details: { cached_tokens: 60 }
      })

      const plain = decodeResponse((yield* post(`http://127.0.0.1:${up.port}/responses`, responsesBody("other"))).text)
      assert.strictEqual(plain.output[0]?.type, "message")
      assert.deepStrictEqual(Object.keys(plain.usage ?? {}), ["input_tokens", "output_tokens", "total_tokens"])
    }))

  it.scopedLive("Ok with stream: true sends the Responses event sequence, numbered from 0, ending in response.completed", () =>
    Effect.gen(function*() {
      const up = yield* upstream
      yield* up.setBehaviour(
        "m",
        FakeUpstream.ok("one two three four five", {
          usage: { prompt_tokens: 11, completion_tokens: 5, total_tokens: 16 }
        })
      )
      const reply = yield* responses(up, "m", { stream: true })
      assert.strictEqual(reply.status, 200)
      assert.include(reply.headers.get("content-type") ?? "", "text/event-stream")
      const events = responsesEvents(reply.text)
      assert.deepStrictEqual(events.map((e) => e.type), [
        "response.created",
        "response.in_progress",
        ...messageSequence(3),
        "response.completed"
      ])
      const [created] = events
      if (isCreated(created)) {
        assert.strictEqual(created.response.status, "in_progress")
        assert.deepStrictEqual(created.response.output, [])
      } else assert.fail("no response.created first")
      assert.strictEqual(outputTextDeltas(events).join(""), "one two three four five")
      const done = events.find((e) => e.type === "response.output_text.done")
      assert.strictEqual(done !== undefined && "text" in done ? done.text : undefined, "one two three four five")
      const completed = completedOf(events)
      assert.strictEqual(completed?.status, "completed")
      assert.deepStrictEqual(completed?.usage, { input_tokens: 11, output_tokens: 5, total_tokens: 16 })
      const message = completed?.output[0]
      assert.deepStrictEqual(isMessage(message) ? message.content : [], [
        { type: "output_text", text: "one two three four five", annotations: [] }
      ])
    }))

  it.scopedLive("ToolUse: a function_call item with call_id and arguments, buffered and streamed", () =>
    Effect.gen(function*() {
      const up = yield* upstream
      const input = "{\"query\":\"effect schema\",\"n\":3}"
      yield* up.script("m", [
        FakeUpstream.toolUse("search", input),
        FakeUpstream.toolUse("search", input, { id: "call_given", text: "Looking" })
      ])
      const first = decodeResponse((yield* responses(up, "m")).text)
      const [record] = yield* up.requests
      assert.deepStrictEqual(first.output, [{
        type: "function_call",
        id: `fc_fake_${record?.id}`,
        call_id: `call_fake_${record?.id}`,
        name: "search",
        arguments: input,
        status: "completed"
      }])

      const events = responsesEvents((yield* responses(up, "m", { stream: true })).text)
      assert.deepStrictEqual(events.map((e) => e.type), [
        "response.created",
        "response.in_progress",
        ...messageSequence(3),
        "response.output_item.added",
        ...events.filter((e) => e.type === "response.function_call_arguments.delta").map(() =>
          "response.function_call_arguments.delta"
        ),
        "response.function_call_arguments.done",
        "response.output_item.done",
        "response.completed"
      ])
      const argumentDeltas = events.flatMap((e) =>
        e.type === "response.function_call_arguments.delta" && "delta" in e ? [e] : []
      )
      assert.isAtLeast(argumentDeltas.length, 2)
      assert.isAtMost(argumentDeltas.length, 3)
      assert.isTrue(argumentDeltas.every((e) => e.output_index === 1))
      assert.strictEqual(argumentDeltas.map((e) => e.delta).join(""), input)
      const argumentsDone = events.find((e) => e.type === "response.function_call_arguments.done")
      assert.strictEqual(
        argumentsDone !== undefined && "arguments" in argumentsDone ? argumentsDone.arguments : "",
        input
      )
      assert.strictEqual(outputTextDeltas(events).join(""), "Looking")
      const completed = completedOf(events)
      assert.deepStrictEqual(completed?.output.map((item) => item.type), ["message", "function_call"])
      const call = completed?.output[1]
      assert.strictEqual(isFunctionCall(call) ? call.call_id : undefined, "call_given")
      assert.strictEqual(isFunctionCall(call) ? call.arguments : undefined, input)
    }))

  it.scopedLive("Thinking: a reasoning item with encrypted_content before the message, buffered and streamed", () =>
    Effect.gen(function*() {
      const up = yield* upstream
      yield* up.setBehaviour("m", FakeUpstream.thinking("let me think", "sig_abc", "the answer"))
      const buffered = decodeResponse((yield* responses(up, "m")).text)
      const [record] = yield* up.requests
      assert.deepStrictEqual(buffered.output[0], {
        type: "reasoning",
        id: `rs_fake_${record?.id}`,
        summary: [{ type: "summary_text", text: "let me think" }],
        encrypted_content: "sig_abc"
      })
      const message = buffered.output[1]
      assert.deepStrictEqual(isMessage(message) ? message.content : [], [
        { type: "output_text", text: "the answer", annotations: [] }
      ])

      const events = responsesEvents((yield* responses(up, "m", { stream: true })).text)
      const summary = events.flatMap((e) =>
        e.type === "response.reasoning_summary_text.delta" && "delta" in e ? [e.delta] : []
      )
      assert.strictEqual(summary.join(""), "let me think")
      const itemsDone = events.flatMap((e) => e.type === "response.output_item.done" && "item" in e ? [e] : [])
      assert.deepStrictEqual(itemsDone.map((e) => [e.output_index, e.item.type]), [[0, "reasoning"], [1, "message"]])
      const reasoning = itemsDone[0]?.item
      assert.strictEqual(isReasoning(reasoning) ? reasoning.encrypted_content : undefined, "sig_abc")
      assert.strictEqual(outputTextDeltas(events).join(""), "the answer")
      assert.deepStrictEqual(completedOf(events)?.output.map((item) => item.type), ["reasoning", "message"])
    }))

  it.scopedLive("Status answers the OpenAI error envelope; a body that is not JSON is a 400 in it", () =>
    Effect.gen(function*() {
      const up = yield* upstream
      yield* up.setBehaviour("m", FakeUpstream.status(429, { message: "slow down", retryAfter: "2" }))
      const limited = yield* responses(up, "m")
      assert.strictEqual(limited.status, 429)
      assert.strictEqual(limited.headers.get("retry-after"), "2")
      assert.deepStrictEqual(decodeError(limited.text).error, {
        message: "slow down",
        type: "invalid_request_error",
        code: null
      })
      yield* up.setBehaviour("m", FakeUpstream.status(503))
      assert.strictEqual(decodeError((yield* responses(up, "m")).text).error.type, "server_error")
      const broken = yield* post(`${up.url}/responses`, "{oops")
      assert.strictEqual(broken.status, 400)
      assert.strictEqual(decodeError(broken.text).error.code, "invalid_json")
    }))

  it.scopedLive("Chunks streams whatever the stream flag; Echo answers the request; Garbage and Raw as on the other APIs", () =>
    Effect.gen(function*() {
      const up = yield* upstream
      yield* up.script("m", [
        FakeUpstream.Chunks.make({ chunks: ["a", "b", "c", "d"] }),
        FakeUpstream.echo,
        FakeUpstream.Garbage.make({ body: "<html>nope" }),
        FakeUpstream.Raw.make({
          body: "{}",
          events: [{
            event: "response.web_search_call.searching",
            data: "{\"type\":\"response.web_search_call.searching\"}"
          }]
        })
      ])
      const chunks = responsesEvents((yield* responses(up, "m")).text)
      assert.deepStrictEqual(outputTextDeltas(chunks), ["a", "b", "c", "d"])
      assert.strictEqual(completedOf(chunks)?.status, "completed")

      const echoed = decodeResponse((yield* responses(up, "m", { previous_response_id: "resp_1" })).text)
      const item = echoed.output[0]
      const part = isMessage(item) && Array.isArray(item.content) ? item.content[0] : undefined
      const echo = decodeEcho(part !== undefined && "text" in part && typeof part.text === "string" ? part.text : "")
      assert.strictEqual(echo.path, "/v1/responses")
      assert.deepStrictEqual(echo.body, { model: "m", input: "hi", previous_response_id: "resp_1" })

      const garbage = yield* responses(up, "m")
      assert.strictEqual(garbage.status, 200)
      assert.strictEqual(garbage.text, "<html>nope")

      const raw = yield* responses(up, "m", { stream: true })
      assert.strictEqual(
        raw.text,
        "event: response.web_search_call.searching\ndata: {\"type\":\"response.web_search_call.searching\"}\n\n"
      )
    }))

  it.scopedLive("CloseMidStream cuts after N deltas; StreamError sends error then response.failed, no response.completed", () =>
    Effect.gen(function*() {
      const up = yield* upstream
      yield* up.script("m", [
        FakeUpstream.CloseMidStream.make({ chunksBeforeClose: 2 }),
        FakeUpstream.streamError("upstream overloaded")
      ])
      const cutShort = yield* postUntilCut(`${up.url}/responses`, responsesBody("m", { stream: true }))
      assert.isTrue(cutShort.failed)
      const events = responsesEvents(cutShort.text)
      assert.deepStrictEqual(events.map((e) => e.type), [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.delta"
      ])
      assert.deepStrictEqual(outputTextDeltas(events), ["chunk 0 ", "chunk 1 "])

      const failed = yield* postUntilCut(`${up.url}/responses`, responsesBody("m"))
      assert.isFalse(failed.failed)
      const failure = responsesEvents(failed.text)
      assert.deepStrictEqual(failure.map((e) => e.type).slice(-3), [
        "response.output_text.delta",
        "error",
        "response.failed"
      ])
      const error = failure[failure.length - 2]
      assert.strictEqual(
        error?.type === "error" && "message" in error ? error.message : undefined,
        "upstream overloaded"
      )
      const last = failure[failure.length - 1]
      const response = last?.type === "response.failed" && "response" in last ? last.response : undefined
      assert.strictEqual(response?.status, "failed")
      assert.strictEqual(response?.error?.message, "upstream overloaded")
      assert.isFalse(failure.some((e) => e.type === "response.completed"))
    }))

  it.scopedLive.prop(
    "every answering behaviour decodes with the protocol's Responses schemas, buffered and streamed",
    [Arbitraries.behaviour.filter((b) =>
      b._tag !== "Stall" && b._tag !== "Reset" && b._tag !== "Garbage" && b._tag !== "Raw"
    )],
    ([behaviour]) =>
      Effect.gen(function*() {
        const up = yield* upstream
        for (const stream of [false, true]) {
          yield* up.setBehaviour("m", behaviour)
          const reply = yield* postUntilCut(`${up.url}/responses`, responsesBody("m", { stream }))
          const streamed = stream || behaviour._tag === "Chunks" || behaviour._tag === "CloseMidStream" ||
            behaviour._tag === "StreamError"
          if (behaviour._tag === "Status") {
            if (behaviour.body === undefined) assert.strictEqual(typeof decodeError(reply.text).error.message, "string")
            else assert.strictEqual(reply.text, behaviour.body)
          } else if (streamed) {
            const events = responsesEvents(reply.text)
            assert.strictEqual(events[0]?.type, "response.created")
          } else {
            assert.strictEqual(decodeResponse(reply.text).status, "completed")
          }
        }
      }),
    { fastCheck: { numRuns: 25 } }
  )
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
