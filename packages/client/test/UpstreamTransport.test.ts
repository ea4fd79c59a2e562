/**
 * The undici transport against a real loopback upstream (testkit's FakeUpstream): what the
 * scripted `HttpClient` cannot show — the deadline and interruption really close the upstream
 * request, keep-alive sockets are reused, a large error body is cut at 64 KiB, a consumer that
 * stops reading releases the socket, a pool per origin is kept when its origin refuses connections.
 * Deadlines run under the TestClock (the upstream's own log is awaited, never a timer); backpressure
 * is checked on the push-fed source with a recording control.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Relay from "@switchyard-ts/client/Relay"
import * as FakeUpstream from "@switchyard-ts/testkit/FakeUpstream"
import * as Chunk from "effect/Chunk"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as FiberRefs from "effect/FiberRefs"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import * as Http from "node:http"
import { Agent, Pool } from "undici"
import * as Exchange from "../src/internal/exchange.js"
import type { Target } from "../src/Target.js"
import * as UpstreamClient from "../src/UpstreamClient.js"
import * as UpstreamTransport from "../src/UpstreamTransport.js"

const streamChunk = (content: string) => ({
  id: "chatcmpl-1",
  object: "chat.completion.chunk",
  created: 1,
  model: "m",
  choices: [{ index: 0, delta: { content }, finish_reason: null }]
})

const targetOn = (
  url: string,
  model: string,
  options: { readonly timeoutMs?: number; readonly maxRetries?: number } = {}
): Target => ({
  name: model,
  id: model,
  client: {
    name: "loopback",
    format: "openai_chat",
    baseUrl: url,
    apiKey: Option.none(),
    extraHeaders: {},
    maxRetries: options.maxRetries ?? 0,
    timeoutMs: options.timeoutMs === undefined ? Option.none() : Option.some(options.timeoutMs)
  },
  extraBody: {}
})

const body = { model: "m", messages: [{ role: "user", content: "hi" }] }

const Live = UpstreamClient.layerTransport.pipe(
  Layer.provide(UpstreamTransport.layerDispatcher(() => new Agent({ connections: 4, keepAliveTimeout: 4_000 })))
)

const setup = Effect.gen(function*() {
  const upstream = yield* FakeUpstream.make()
  const client = yield* UpstreamClient.UpstreamClient
  return { upstream, client }
})

describe("UpstreamTransport over undici, against a loopback upstream", () => {
  it.scopedLive("answers buffered calls over kept-alive sockets: sequential calls do not open one each", () =>
    Effect.gen(function*() {
      const { client, upstream } = yield* setup
      yield* upstream.setBehaviour("m", FakeUpstream.ok("hello"))
      const target = targetOn(upstream.url, "m")
      const answers = yield* Effect.all(Array.from({ length: 6 }, () => client.complete({ target, body, headers: {} })))
      assert.deepStrictEqual(answers.map((a) => a.choices[0]?.message.content), Array(6).fill("hello"))
      const records = yield* upstream.requests
      assert.strictEqual(records.length, 6)
      // undici marks a socket free again on its next turn, so a call made at once after the
      // previous one may take a second socket; never more.
      assert.isAtMost(new Set(records.map((r) => r.connection)).size, 2)
      assert.strictEqual(records[0]?.headers["content-type"], "application/json")
    }).pipe(Effect.provide(Live)))

  it.scopedLive("a stream that ended at [DONE] lets its body finish: sequential streams share one kept-alive socket", () =>
    Effect.gen(function*() {
      const client = yield* UpstreamClient.UpstreamClient
      // [DONE] first, the end of the body 30 ms later: cutting the exchange at [DONE] would close
      // the socket and make every stream open a new one.
      const sockets = new Set<unknown>()
      const server = yield* Effect.acquireRelease(
        Effect.async<Http.Server>((resume) => {
          const s = Http.createServer((req, res) => {
            sockets.add(req.socket)
            req.resume()
            req.on("end", () => {
              res.writeHead(200, { "content-type": "text/event-stream" })
              res.write(`data: ${JSON.stringify(streamChunk("hello"))}\n\n`)
              res.write("data: [DONE]\n\n")
              setTimeout(() => res.end(), 30)
            })
          })
          s.listen(0, "127.0.0.1", () => resume(Effect.succeed(s)))
        }),
        (s) => Effect.sync(() => s.closeAllConnections()).pipe(Effect.zipRight(Effect.sync(() => s.close())))
      )
      const address = server.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      const target = targetOn(`http://127.0.0.1:${port}/v1`, "m")
      for (let i = 0; i < 4; i++) {
        const stream = yield* client.stream({ target, body, headers: {} })
        const text = Chunk.toReadonlyArray(yield* Stream.runCollect(stream))
          .map((c) => c.choices[0]?.delta.content ?? "")
          .join("")
        assert.strictEqual(text, "hello")
        yield* Effect.sleep("60 millis")
      }
      assert.strictEqual(sockets.size, 1)
    }).pipe(Effect.provide(Live)))

  it.scoped("the deadline fails the call with DeadlineExceeded and closes the upstream request", () =>
    Effect.gen(function*() {
      const { client, upstream } = yield* setup
      yield* upstream.setBehaviour("m", FakeUpstream.stall)
      const fiber = yield* Effect.fork(
        client.complete({ target: targetOn(upstream.url, "m", { timeoutMs: 1000 }), body, headers: {} })
      )
      yield* upstream.awaitRequest("m")
      yield* TestClock.adjust(999)
      assert.isTrue(Option.isNone(yield* Fiber.poll(fiber)))
      yield* TestClock.adjust(1)
      const failure = yield* Effect.flip(Fiber.join(fiber))
      assert.strictEqual(failure._tag, "DeadlineExceeded")
      const closed = yield* upstream.awaitClosed("m")
      assert.isTrue(closed.closedEarly)
    }).pipe(Effect.provide(Live)))

  it.scoped("interrupting the caller aborts the upstream request", () =>
    Effect.gen(function*() {
      const { client, upstream } = yield* setup
      yield* upstream.setBehaviour("m", FakeUpstream.stall)
      const fiber = yield* Effect.fork(client.complete({ target: targetOn(upstream.url, "m"), body, headers: {} }))
      yield* upstream.awaitRequest("m")
      yield* Fiber.interrupt(fiber)
      assert.isTrue((yield* upstream.awaitClosed("m")).closedEarly)
    }).pipe(Effect.provide(Live)))

  it.scopedLive("an endless error body is read up to 64 KiB, then the request is released", () =>
    Effect.gen(function*() {
      const client = yield* UpstreamClient.UpstreamClient
      // A 500 whose body never ends: the call can only return if the client stops reading.
      const closed = yield* Deferred.make<number>()
      const server = yield* Effect.acquireRelease(
        Effect.async<Http.Server>((resume) => {
          const s = Http.createServer((_req, res) => {
            let sent = 0
            res.writeHead(500, { "content-type": "application/json" })
            const pump = () => {
              while (!res.destroyed && res.write(`{"error":{"message":"${"x".repeat(4096)}"}}`)) sent += 4096
              if (!res.destroyed) res.once("drain", pump)
            }
            res.on("close", () => Deferred.unsafeDone(closed, Exit.succeed(sent)))
            pump()
          })
          s.listen(0, "127.0.0.1", () => resume(Effect.succeed(s)))
        }),
        (s) => Effect.sync(() => s.closeAllConnections()).pipe(Effect.zipRight(Effect.sync(() => s.close())))
      )
      const address = server.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      const failure = yield* Effect.flip(
        client.complete({ target: targetOn(`http://127.0.0.1:${port}/v1`, "m"), body, headers: {} })
      )
      assert.strictEqual(failure._tag, "UpstreamStatus")
      if (failure._tag === "UpstreamStatus") assert.strictEqual(failure.status, 500)
      yield* Deferred.await(closed)
    }).pipe(Effect.provide(Live)))

  it.scopedLive("a stream read to its end gives every chunk; a consumer that stops early releases the socket", () =>
    Effect.gen(function*() {
      const { client, upstream } = yield* setup
      const pieces = Array.from({ length: 400 }, (_, i) => `${i}:${"y".repeat(2048)} `)
      yield* upstream.setBehaviour("full", FakeUpstream.Chunks.make({ chunks: pieces.slice(0, 5) }))
      // Spread over seconds, so the upstream is still writing when the consumer lets go.
      yield* upstream.setBehaviour("m", FakeUpstream.Chunks.make({ chunks: pieces, gapMs: 10 }))
      const full = yield* client.stream({ target: targetOn(upstream.url, "full"), body, headers: {} })
      const text = Chunk.toReadonlyArray(yield* Stream.runCollect(full))
        .map((c) => c.choices[0]?.delta.content ?? "")
        .join("")
      assert.strictEqual(text, pieces.slice(0, 5).join(""))

      const stream = yield* client.stream({ target: targetOn(upstream.url, "m"), body, headers: {} })
      const first = yield* Stream.runCollect(Stream.take(stream, 1))
      assert.strictEqual(Chunk.size(first), 1)
      assert.isTrue((yield* upstream.awaitClosed("m")).closedEarly)
    }).pipe(Effect.provide(Live)))

  it.scopedLive("a connection refused is a TransportError with the system code", () =>
    Effect.gen(function*() {
      const client = yield* UpstreamClient.UpstreamClient
      const failure = yield* Effect.flip(
        client.complete({ target: targetOn("http://127.0.0.1:9/v1", "m"), body, headers: {} })
      )
      assert.strictEqual(failure._tag, "TransportError")
      if (failure._tag === "TransportError") assert.strictEqual(failure.reason, "connection failed (ECONNREFUSED)")
    }).pipe(Effect.provide(Live)))
})

describe("UpstreamTransport.perOrigin", () => {
  /** `perOrigin` over undici pools, with the origins it made a pool for. */
  const pools = () => {
    const made: Array<string> = []
    const layer = UpstreamClient.layerTransport.pipe(
      Layer.provide(UpstreamTransport.layerDispatcher(() =>
        UpstreamTransport.perOrigin((origin) => {
          made.push(origin)
          return new Pool(origin, { connections: 4, keepAliveTimeout: 4_000 })
        })
      ))
    )
    return { made, layer }
  }

  it.scopedLive("a refused origin keeps its one pool: each call is one connection attempt, a stack-free TransportError", () => {
    const { layer, made } = pools()
    return Effect.gen(function*() {
      const client = yield* UpstreamClient.UpstreamClient
      const target = targetOn("http://127.0.0.1:9/v1", "m")
      for (let i = 0; i < 3; i++) {
        const failure = yield* Effect.flip(client.complete({ target, body, headers: {} }))
        assert.strictEqual(failure._tag, "TransportError")
        if (failure._tag !== "TransportError") return
        assert.strictEqual(failure.reason, "connection failed (ECONNREFUSED)")
        assert.strictEqual(failure.stack, `TransportError: ${failure.message}`)
      }
      assert.deepStrictEqual(made, ["http://127.0.0.1:9"])
    }).pipe(Effect.provide(layer))
  })

  it.scopedLive("one pool per origin, kept-alive sockets reused", () => {
    const { layer, made } = pools()
    return Effect.gen(function*() {
      const { client, upstream } = yield* setup
      yield* upstream.setBehaviour("m", FakeUpstream.ok("hello"))
      const target = targetOn(upstream.url, "m")
      for (let i = 0; i < 4; i++) yield* client.complete({ target, body, headers: {} })
      yield* Effect.flip(client.complete({ target: targetOn("http://127.0.0.1:9/v1", "m"), body, headers: {} }))
      yield* client.complete({ target, body, headers: {} })
      const records = yield* upstream.requests
      assert.strictEqual(records.length, 5)
      assert.isAtMost(new Set(records.map((r) => r.connection)).size, 2)
      assert.deepStrictEqual(made, [new URL(upstream.url).origin, "http://127.0.0.1:9"])
    }).pipe(Effect.provide(layer))
  })

  it.effect("destroy destroys every origin's dispatcher; a dispatch after it is a connection failure", () =>
    Effect.gen(function*() {
      const destroyed: Array<string> = []
      const dispatched: Array<string> = []
      const dispatcher = UpstreamTransport.perOrigin((origin) => ({
        dispatch: (options) => {
          dispatched.push(`${origin}${options.path}`)
          return true
        },
        destroy: () => {
          destroyed.push(origin)
          return Promise.resolve()
        }
      }))
      const request = (origin: string) => ({ origin, path: "/v1", method: "POST" as const, headers: {}, body: "" })
      const handler: UpstreamTransport.DispatchHandler = {
        onRequestStart: () => {},
        onResponseStart: () => {},
        onResponseData: () => {},
        onResponseEnd: () => {},
        onResponseError: () => {}
      }
      dispatcher.dispatch(request("http://a.test"), handler)
      dispatcher.dispatch(request("http://b.test"), handler)
      dispatcher.dispatch(request("http://a.test"), handler)
      assert.deepStrictEqual(dispatched, ["http://a.test/v1", "http://b.test/v1", "http://a.test/v1"])
      yield* Effect.promise(() => dispatcher.destroy())
      assert.deepStrictEqual(destroyed, ["http://a.test", "http://b.test"])

      const errors: Array<string> = []
      UpstreamTransport.fromDispatcher(dispatcher).dispatch(
        { ...request("http://a.test"), fiberRefs: FiberRefs.empty() },
        { onHeaders: () => {}, onData: () => {}, onComplete: () => {}, onError: (reason) => errors.push(reason) }
      )
      assert.deepStrictEqual(errors, ["connection failed"])
      assert.deepStrictEqual(destroyed, ["http://a.test", "http://b.test"])
    }))
})

describe("UpstreamTransport.fromDispatcher and a body in pieces", () => {
  const recording = () => {
    const whole: Array<Uint8Array> = []
    const pieces: Array<{ readonly count: number; readonly length: string | undefined }> = []
    const dispatcher: UpstreamTransport.PiecewiseDispatcher = {
      dispatch: (options) => {
        if (typeof options.body !== "string") whole.push(options.body)
        return true
      },
      dispatchPieces: (options) => {
        pieces.push({ count: options.body.length, length: options.headers["content-length"] })
        return true
      }
    }
    return { dispatcher, whole, pieces }
  }
  const send = (dispatcher: UpstreamTransport.Dispatcher, body: ReadonlyArray<Uint8Array>) =>
    UpstreamTransport.fromDispatcher(dispatcher).dispatch(
      { origin: "http://a.test", path: "/v1", method: "POST", headers: {}, body, fiberRefs: FiberRefs.empty() },
      { onHeaders: () => {}, onData: () => {}, onComplete: () => {}, onError: () => {} }
    )
  const bytes = (text: string) => new TextEncoder().encode(text)

  it("a body up to joinedUpTo is sent whole, its pieces joined in order; a larger one piece by piece with its length", () => {
    const small = recording()
    send(small.dispatcher, [bytes("{\"model\":"), bytes("\"m\""), bytes("}")])
    assert.deepStrictEqual(small.pieces, [])
    assert.deepStrictEqual(small.whole.map((body) => new TextDecoder().decode(body)), [`{"model":"m"}`])

    const edge = recording()
    const half = UpstreamTransport.joinedUpTo / 2
    send(edge.dispatcher, [new Uint8Array(half), new Uint8Array(half)])
    assert.deepStrictEqual(edge.whole.map((body) => body.length), [UpstreamTransport.joinedUpTo])

    const large = recording()
    send(large.dispatcher, [new Uint8Array(half), new Uint8Array(half + 1)])
    assert.deepStrictEqual(large.whole, [])
    assert.deepStrictEqual(large.pieces, [{ count: 2, length: String(UpstreamTransport.joinedUpTo + 1) }])
  })
})

describe("PushSource", () => {
  const recording = () => {
    const calls: Array<string> = []
    const control: UpstreamTransport.TransportControl = {
      abort: () => calls.push("abort"),
      pause: () => calls.push("pause"),
      resume: () => calls.push("resume"),
      released: Effect.void
    }
    return { calls, control }
  }

  it.effect("pauses the exchange past the high-water mark and resumes it once the consumer drains", () =>
    Effect.gen(function*() {
      const { calls, control } = recording()
      const clock = yield* Effect.clock
      const source = new Exchange.PushSource<number, string>(control, clock, Option.none(), () => "idle", 4)
      for (let i = 0; i < 6; i++) source.offer(i)
      assert.deepStrictEqual(calls, ["pause"])
      const drained = yield* source.pull
      assert.deepStrictEqual(drained, [0, 1, 2, 3, 4, 5])
      assert.deepStrictEqual(calls, ["pause", "resume"])
      source.finish()
      assert.deepStrictEqual(calls, ["pause", "resume"], "a normal end leaves the exchange to finish its body")
      yield* source.release
      yield* TestClock.adjust(Exchange.endGraceMs - 1)
      assert.deepStrictEqual(calls, ["pause", "resume"])
      yield* TestClock.adjust(1)
      assert.deepStrictEqual(calls, ["pause", "resume", "abort"], "aborted once the grace passed without its end")
    }))

  it.effect("a stream that ended normally and whose exchange completed is never aborted (its connection stays pooled)", () =>
    Effect.gen(function*() {
      const { calls, control } = recording()
      const clock = yield* Effect.clock
      const source = new Exchange.PushSource<number, string>(control, clock, Option.some(1000), () => "idle")
      source.offer(1)
      source.finish()
      source.exchangeDone()
      const items = Chunk.toReadonlyArray(yield* Stream.runCollect(Relay.toStream(source)))
      assert.deepStrictEqual(items, [1])
      yield* source.release
      yield* TestClock.adjust(Exchange.endGraceMs * 2)
      assert.deepStrictEqual(calls, [])
    }))

  it.effect("a consumer that stops before the end aborts the exchange at once", () =>
    Effect.gen(function*() {
      const { calls, control } = recording()
      const clock = yield* Effect.clock
      const source = new Exchange.PushSource<number, string>(control, clock, Option.none(), () => "idle")
      source.offer(1)
      yield* source.release
      assert.deepStrictEqual(calls, ["abort"])
    }))

  it.effect("the idle watchdog fails a waiting consumer after timeout ms without a chunk, re-armed by chunks", () =>
    Effect.gen(function*() {
      const { calls, control } = recording()
      const clock = yield* Effect.clock
      const source = new Exchange.PushSource<number, string>(control, clock, Option.some(1000), () => "idle")
      const stream = Relay.toStream(source)
      const fiber = yield* Effect.fork(Stream.runCollect(Stream.either(stream)))
      yield* TestClock.adjust(600)
      source.touch()
      source.offer(1)
      yield* TestClock.adjust(999)
      assert.isTrue(Option.isNone(yield* Fiber.poll(fiber)))
      yield* TestClock.adjust(1)
      const items = Chunk.toReadonlyArray(yield* Fiber.join(fiber))
      assert.strictEqual(items.length, 2)
      assert.deepStrictEqual(calls, ["abort"])
    }))
})
