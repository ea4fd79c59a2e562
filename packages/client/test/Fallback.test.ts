import { assert, describe, it } from "@effect/vitest"
import * as Relay from "@switchyard-ts/client/Relay"
import { DeadlineExceeded, InvalidResponse, TransportError, UpstreamStatus } from "@switchyard-ts/protocol/Errors"
import type { UpstreamFailure } from "@switchyard-ts/protocol/Errors"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as Option from "effect/Option"
import * as Random from "effect/Random"
import * as Ref from "effect/Ref"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import * as Fallback from "../src/Fallback.js"
import { PushSource } from "../src/internal/exchange.js"
import type { Target } from "../src/Target.js"
import { ofChat, UpstreamClient } from "../src/UpstreamClient.js"
import { chunk, completion, makeFake, request, sseData, Step, target } from "./support.js"

const noJitter = Effect.withRandom(Random.fixed([0.5]))

const a = target("a", { maxRetries: 0 })
const b = target("b", { maxRetries: 0 })

describe("Fallback over the real client", () => {
  it.effect("a 5xx-forever selected target falls back to the second candidate after its retries", () =>
    Effect.gen(function*() {
      const fake = yield* makeFake({ "a.test": [Step.status(503)], "b.test": [Step.ok(completion("b-served"))] })
      const fiber = yield* Effect.fork(
        Fallback.complete([target("a", { maxRetries: 2 }), b], request, {}).pipe(
          Effect.provideService(UpstreamClient, fake.client)
        )
      )
      yield* TestClock.adjust(750)
      const served = yield* Fiber.join(fiber)
      assert.strictEqual(served.candidate, 2)
      assert.strictEqual(served.target.name, "b")
      assert.strictEqual(served.completion.model, "b-served")
      assert.strictEqual((yield* fake.requestsTo("a.test")).length, 3)
      assert.strictEqual((yield* fake.requestsTo("b.test")).length, 1)
    }).pipe(noJitter))

  it.effect("a DeadlineExceeded on candidate 1 is terminal: candidate 2 receives no request", () =>
    Effect.gen(function*() {
      const fake = yield* makeFake({ "a.test": [Step.stall], "b.test": [Step.ok()] })
      const fiber = yield* Effect.fork(
        Fallback.complete([target("a", { timeoutMs: 1000 }), b], request, {}).pipe(
          Effect.provideService(UpstreamClient, fake.client),
          Effect.flip
        )
      )
      yield* TestClock.adjust(1000)
      const failure = yield* Fiber.join(fiber)
      assert.strictEqual(failure._tag, "DeadlineExceeded")
      assert.strictEqual((yield* fake.requestsTo("b.test")).length, 0)
    }))

  it.effect("a plain 400 does not fall back", () =>
    Effect.gen(function*() {
      const fake = yield* makeFake({ "a.test": [Step.status(400)], "b.test": [Step.ok()] })
      const failure = yield* Fallback.complete([a, b], request, {}).pipe(
        Effect.provideService(UpstreamClient, fake.client),
        Effect.flip
      )
      assert.strictEqual(failure._tag === "UpstreamStatus" ? failure.status : failure._tag, 400)
      assert.strictEqual((yield* fake.requestsTo("b.test")).length, 0)
    }))

  it.effect.each(
    [
      ["a context-window 400", Step.status(400, { error: { message: "maximum context length exceeded" } })],
      ["a 403", Step.status(403)],
      ["a 429", Step.status(429)],
      ["a transport failure", Step.transport()]
    ] as const
  )("%s falls back", ([, step]) =>
    Effect.gen(function*() {
      const fake = yield* makeFake({ "a.test": [step], "b.test": [Step.ok()] })
      const served = yield* Fallback.complete([a, b], request, {}).pipe(
        Effect.provideService(UpstreamClient, fake.client)
      )
      assert.strictEqual(served.candidate, 2)
      assert.strictEqual(served.target.name, "b")
    }))

  it.effect("when every candidate fails, the last candidate's error is returned", () =>
    Effect.gen(function*() {
      const c = target("c", { maxRetries: 0 })
      const fake = yield* makeFake({
        "a.test": [Step.status(503)],
        "b.test": [Step.transport()],
        "c.test": [Step.status(502)]
      })
      const failure = yield* Fallback.complete([a, b, c], request, {}).pipe(
        Effect.provideService(UpstreamClient, fake.client),
        Effect.flip
      )
      assert.strictEqual(failure._tag, "UpstreamStatus")
      assert.strictEqual("target" in failure ? failure.target : "", "c-model")
      assert.strictEqual(failure._tag === "UpstreamStatus" ? failure.status : 0, 502)
    }))

  it.effect("streams fall back until headers arrive; afterwards the stream is never failed over", () =>
    Effect.gen(function*() {
      const fake = yield* makeFake({
        "a.test": [Step.status(503)],
        "b.test": [Step.sse([sseData(chunk("x")), sseData({ error: { message: "mid-stream" } })])],
        "c.test": [Step.sse([sseData(chunk("never"))])]
      })
      const served = yield* Fallback.stream([a, b, target("c")], request, {}).pipe(
        Effect.provideService(UpstreamClient, fake.client)
      )
      assert.strictEqual(served.candidate, 2)
      const items = Chunk.toReadonlyArray(yield* Stream.runCollect(Stream.either(served.stream)))
      assert.strictEqual(items.length, 2)
      assert.strictEqual((yield* fake.requestsTo("c.test")).length, 0)
    }))

  it.effect("the served stream is the client's own: it unwraps to the client's push-fed relay and is pipeable", () =>
    Effect.gen(function*() {
      const fake = yield* makeFake({
        "a.test": [Step.status(503)],
        "b.test": [Step.sse([sseData(chunk("x")), sseData(chunk("y")), "data: [DONE]\n\n"])]
      })
      const served = yield* Fallback.stream([a, b], request, {}).pipe(
        Effect.provideService(UpstreamClient, fake.client)
      )
      assert.instanceOf(Relay.fromStream(served.stream), PushSource)
      const contents = yield* served.stream.pipe(
        Stream.mapConcat((piece) => piece.chunks),
        Stream.map((c) => c.choices[0]?.delta.content),
        Stream.runCollect
      )
      assert.deepStrictEqual(Chunk.toReadonlyArray(contents), ["x", "y"])
    }))
})

describe("isFallbackWorthy", () => {
  it("follows documented fallback rule", () => {
    const t = "m"
    const cases: ReadonlyArray<readonly [UpstreamFailure, boolean]> = [
      [new TransportError({ target: t, reason: "x" }), true],
      [new DeadlineExceeded({ target: t, afterMs: 1 }), false],
      [new InvalidResponse({ target: t, reason: "x" }), false],
      [new UpstreamStatus({ target: t, status: 400 }), false],
      [new UpstreamStatus({ target: t, status: 400, contextWindowExceeded: true }), true],
      [new UpstreamStatus({ target: t, status: 401 }), false],
      [new UpstreamStatus({ target: t, status: 403 }), true],
      [new UpstreamStatus({ target: t, status: 404 }), false],
      [new UpstreamStatus({ target: t, status: 408 }), true],
      [new UpstreamStatus({ target: t, status: 422 }), false],
      [new UpstreamStatus({ target: t, status: 429 }), true],
      [new UpstreamStatus({ target: t, status: 500 }), true],
      [new UpstreamStatus({ target: t, status: 599 }), true],
      [new UpstreamStatus({ target: t, status: 600 }), false]
    ]
    for (const [failure, worthy] of cases) {
      assert.strictEqual(Fallback.isFallbackWorthy(failure), worthy, JSON.stringify(failure))
    }
  })
})

const Outcome = Schema.Literal(
  "ok",
  "transport",
  "5xx",
  "403",
  "408",
  "429",
  "400",
  "400cw",
  "401",
  "invalid",
  "deadline"
)
type Outcome = typeof Outcome.Type

const failureOf = (outcome: Outcome, model: string): Option.Option<UpstreamFailure> => {
  switch (outcome) {
    case "ok":
      return Option.none()
    case "transport":
      return Option.some(new TransportError({ target: model, reason: "connection failed" }))
    case "deadline":
      return Option.some(new DeadlineExceeded({ target: model, afterMs: 1000 }))
    case "invalid":
      return Option.some(new InvalidResponse({ target: model, reason: "x" }))
    case "400cw":
      return Option.some(new UpstreamStatus({ target: model, status: 400, contextWindowExceeded: true }))
    case "5xx":
      return Option.some(new UpstreamStatus({ target: model, status: 503 }))
    default:
      return Option.some(new UpstreamStatus({ target: model, status: Number(outcome) }))
  }
}

/** A scripted client: candidate i answers with `outcomes[i]`; records which candidates were called. */
const scripted = (outcomes: ReadonlyArray<Outcome>, calls: Ref.Ref<ReadonlyArray<string>>) => {
  const answer = (t: Target) =>
    Effect.gen(function*() {
      yield* Ref.update(calls, (all) => [...all, t.name])
      const index = Number(t.name.slice(1))
      const failure = failureOf(outcomes[index] ?? "ok", t.id)
      if (Option.isSome(failure)) return yield* Effect.fail(failure.value)
    })
  return ofChat({
    complete: ({ target: t }) => Effect.as(answer(t), completion(t.id)),
    stream: ({ target: t }) => Effect.as(answer(t), Stream.make(chunk(t.id))),
    countTokens: () => Effect.dieMessage("not used"),
    responsesAuxiliary: () => Effect.dieMessage("not used"),
    register: () => Effect.void,
    breakers: Effect.succeed([])
  })
}

describe("Fallback properties", () => {
  it.effect.prop(
    "a DeadlineExceeded on any candidate means no later candidate is ever called",
    { outcomes: Schema.Array(Outcome).pipe(Schema.minItems(1), Schema.maxItems(6)), streaming: Schema.Boolean },
    ({ outcomes, streaming }) =>
      Effect.gen(function*() {
        const calls = yield* Ref.make<ReadonlyArray<string>>([])
        const candidates = outcomes.map((_, i) => target(`t${i}`))
        const [first, ...rest] = candidates
        if (first === undefined) return true
        const run = streaming
          ? Effect.map(Fallback.stream([first, ...rest], request, {}), (s) => s.candidate)
          : Effect.map(Fallback.complete([first, ...rest], request, {}), (s) => s.candidate)
        const result = yield* run.pipe(
          Effect.provideService(UpstreamClient, scripted(outcomes, calls)),
          Effect.either,
          Logger.withMinimumLogLevel(LogLevel.None)
        )
        const called = yield* Ref.get(calls)

        // The expected walk: stop at the first success or the first non-fallback-worthy failure.
        let stop = outcomes.length - 1
        for (let i = 0; i < outcomes.length; i++) {
          const failure = failureOf(outcomes[i] ?? "ok", `t${i}-model`)
          if (Option.isNone(failure) || !Fallback.isFallbackWorthy(failure.value)) {
            stop = i
            break
          }
        }
        assert.deepStrictEqual(called, candidates.slice(0, stop + 1).map((t) => t.name))
        const deadlineAt = outcomes.indexOf("deadline")
        if (deadlineAt !== -1) {
          assert.isTrue(called.length <= deadlineAt + 1, "no candidate after a deadline is called")
          if (called.length === deadlineAt + 1) {
            assert.isTrue(result._tag === "Left" && result.left._tag === "DeadlineExceeded")
          }
        }
        if (result._tag === "Right") assert.strictEqual(result.right, stop + 1)
        else assert.strictEqual("target" in result.left ? result.left.target : "", `t${stop}-model`)
        return true
      }),
    { fastCheck: { numRuns: 200 } }
  )
})
