import { assert, describe, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import type * as Clock from "effect/Clock"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as FastCheck from "effect/FastCheck"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import { PushSource } from "../src/internal/exchange.js"
import * as Relay from "../src/Relay.js"
import type { TransportControl } from "../src/UpstreamTransport.js"

/** A relay over scripted batches, ending with `end` (the end, or a failure), counting releases. */
const scripted = <A>(
  batches: ReadonlyArray<ReadonlyArray<A>>,
  end: Either.Either<null, string> = Either.right(null)
) => {
  let next = 0
  let pulls = 0
  let releases = 0
  const relay: Relay.Relay<A, string> = {
    pull: Effect.suspend(() => {
      pulls++
      if (next > batches.length) return Effect.dieMessage("pulled after its end")
      const batch = batches[next++]
      if (batch !== undefined) return Effect.succeed(batch)
      return Either.match(end, { onLeft: Effect.fail, onRight: Effect.succeed })
    }),
    release: Effect.sync(() => {
      releases++
    })
  }
  return { relay, pulls: () => pulls, releases: () => releases }
}

/** One stage of a generated chain (see "a chain of stages ..."). */
type StageSpec =
  | { readonly _tag: "map"; readonly k: number }
  | { readonly _tag: "concat"; readonly tail: ReadonlyArray<number> }
  | { readonly _tag: "concatFailing"; readonly error: string }
  | { readonly _tag: "tapError"; readonly tag: string }
  | { readonly _tag: "catchAll" }
  | { readonly _tag: "viaStream" }

const stageSpec: FastCheck.Arbitrary<StageSpec> = FastCheck.oneof(
  FastCheck.integer({ min: 2, max: 9 }).map((k): StageSpec => ({ _tag: "map", k })),
  FastCheck.array(FastCheck.integer({ min: 0, max: 99 }), { maxLength: 3 }).map((tail): StageSpec => ({
    _tag: "concat",
    tail
  })),
  FastCheck.constantFrom("tail broke", "x").map((error): StageSpec => ({ _tag: "concatFailing", error })),
  FastCheck.constantFrom("a", "b").map((tag): StageSpec => ({ _tag: "tapError", tag })),
  FastCheck.constant<StageSpec>({ _tag: "catchAll" }),
  FastCheck.constant<StageSpec>({ _tag: "viaStream" })
)

/** What a relay gives, as the list model reads it: its items in order, and how it ended. */
interface Outcome {
  readonly items: ReadonlyArray<number>
  readonly end: Either.Either<null, string>
  /** What each `tapError` saw and each tail that ran, in the order they did. */
  readonly effects: ReadonlyArray<string>
}

/** The model: each stage on the items and the end of the stage before it. */
const modelOf = (items: ReadonlyArray<number>, end: Either.Either<null, string>, chain: ReadonlyArray<StageSpec>) =>
  chain.reduce<Outcome>((before, spec, i) => {
    switch (spec._tag) {
      case "map":
        return { ...before, items: before.items.map((n) => n * spec.k) }
      case "concat":
        return Either.isRight(before.end)
          ? { ...before, items: [...before.items, ...spec.tail], effects: [...before.effects, `tail ${i}`] }
          : before
      case "concatFailing":
        return Either.isRight(before.end)
          ? { ...before, end: Either.left(spec.error), effects: [...before.effects, `tail ${i}`] }
          : before
      case "tapError":
        return Either.isLeft(before.end)
          ? { ...before, effects: [...before.effects, `${spec.tag} saw ${before.end.left}`] }
          : before
      case "catchAll":
        return Either.isLeft(before.end)
          ? { ...before, items: [...before.items, -before.end.left.length], end: Either.right(null) }
          : before
      case "viaStream":
        return before
    }
  }, { items, end, effects: [] })

/** The relay of `chain` over `source`, recording what its taps and tails do in `effects`. */
const chainOf = (
  source: Relay.Relay<number, string>,
  chain: ReadonlyArray<StageSpec>,
  effects: Array<string>
): Relay.Relay<number, string> =>
  chain.reduce((relay, spec, i) => {
    switch (spec._tag) {
      case "map":
        return Relay.map(relay, (batch) => batch.map((n) => n * spec.k))
      case "concat":
        return Relay.concat(relay, Effect.sync(() => (effects.push(`tail ${i}`), spec.tail)))
      case "concatFailing":
        return Relay.concat(relay, Effect.suspend(() => (effects.push(`tail ${i}`), Effect.fail(spec.error))))
      case "tapError":
        return Relay.tapError(relay, (error) => effects.push(`${spec.tag} saw ${error}`))
      case "catchAll":
        return Relay.catchAll(relay, (error) => [-error.length])
      case "viaStream":
        return Relay.fromStream(Relay.toStream(relay))
    }
  }, source)

/** A relay whose first pull never completes, counting releases. */
const stalled = () => {
  let releases = 0
  const relay: Relay.Relay<number, never> = {
    pull: Effect.never,
    release: Effect.sync(() => {
      releases++
    })
  }
  return { relay, releases: () => releases }
}

/** A push source over a control that records what the source asks of the exchange. */
const pushing = (clock: Clock.Clock, highWater = 64) => {
  const calls: Array<string> = []
  const control: TransportControl = {
    abort: () => calls.push("abort"),
    pause: () => calls.push("pause"),
    resume: () => calls.push("resume"),
    released: Effect.void
  }
  const source = new PushSource<number, string>(control, clock, Option.none(), () => "idle", highWater)
  return { source, calls }
}

/** Yields until `fiber` waits (suspended on its source), at most 100 times. */
const waiting = <A, E>(fiber: Fiber.RuntimeFiber<A, E>) =>
  Effect.gen(function*() {
    for (let i = 0; i < 100; i++) {
      const status = yield* Fiber.status(fiber)
      if (status._tag === "Suspended") return
      yield* Effect.yieldNow()
    }
    return yield* Effect.dieMessage("the consumer never waited")
  })

describe("Relay", () => {
  it.effect("map runs on every batch, concat adds its tail once after a normal end", () =>
    Effect.gen(function*() {
      const source = scripted([[1, 2], [], [3]])
      let tails = 0
      const relay = Relay.concat(
        Relay.map(source.relay, (batch) => batch.map((n) => n * 10)),
        Effect.sync(() => {
          tails++
          return [99]
        })
      )
      assert.deepStrictEqual(yield* Relay.collect(relay), [10, 20, 30, 99])
      assert.strictEqual(tails, 1)
      assert.strictEqual(source.releases(), 1)
    }))

  it.effect("a failure skips concat's tail, tapError sees it once, catchAll turns it into items and ends", () =>
    Effect.gen(function*() {
      const source = scripted([[1]], Either.left("cut"))
      const seen: Array<string> = []
      let tails = 0
      const relay = Relay.catchAll(
        Relay.tapError(
          Relay.concat(
            source.relay,
            Effect.sync(() => {
              tails++
              return [2]
            })
          ),
          (error) => seen.push(error)
        ),
        (error) => [-1, error.length]
      )
      assert.deepStrictEqual(yield* Relay.collect(relay), [1, -1, 3])
      assert.deepStrictEqual(seen, ["cut"])
      assert.strictEqual(tails, 0)
      // the end after the error items is the relay's own: the source is not pulled again
      assert.strictEqual(source.pulls(), 2)
      assert.strictEqual(source.releases(), 1)
    }))

  it.effect("a chain of stages gives what its list model gives, pulling the source once per batch at most and never after its end", () =>
    Effect.sync(() =>
      FastCheck.assert(
        FastCheck.property(
          FastCheck.array(FastCheck.array(FastCheck.integer({ min: 0, max: 99 }), { maxLength: 3 }), { maxLength: 4 }),
          FastCheck.option(FastCheck.constantFrom("cut", "broken"), { nil: undefined }),
          FastCheck.array(stageSpec, { maxLength: 7 }),
          (batches, failure, chain) => {
            const end = failure === undefined ? Either.right(null) : Either.left(failure)
            const source = scripted(batches, end)
            const effects: Array<string> = []
            const exit = Effect.runSyncExit(Relay.collect(chainOf(source.relay, chain, effects)))
            const model = modelOf(batches.flat(), end, chain)
            assert.deepStrictEqual(
              exit,
              Either.match(model.end, { onLeft: Exit.fail, onRight: () => Exit.succeed([...model.items]) })
            )
            assert.deepStrictEqual(effects, model.effects)
            assert.isAtMost(source.pulls(), batches.length + 1)
            assert.strictEqual(source.releases(), 1)
          }
        )
      )
    ))

  it.effect("stages over one source are one pull of it: the source sees one pull per batch the consumer takes", () =>
    Effect.gen(function*() {
      const source = scripted([[1], [2], [3]])
      const relay = Relay.catchAll(
        Relay.concat(
          Relay.map(Relay.tapError(Relay.map(source.relay, (b) => b.map((n) => n + 1)), () => {}), (b) => b),
          Effect.succeed([9])
        ),
        () => []
      )
      assert.deepStrictEqual(yield* relay.pull, [2])
      assert.strictEqual(source.pulls(), 1)
      assert.deepStrictEqual(yield* relay.pull, [3])
      assert.deepStrictEqual(yield* relay.pull, [4])
      // the source's end and the tail in the same pull; then the end, without pulling the source
      assert.deepStrictEqual(yield* relay.pull, [9])
      assert.strictEqual(yield* relay.pull, null)
      assert.strictEqual(yield* relay.pull, null)
      assert.strictEqual(source.pulls(), 4)
    }))

  it.effect("over a pushing source, runWrites writes each chunk's items at its flush, through the stages; the end and every false go to the fiber, as the list model says", () =>
    Effect.gen(function*() {
      const clock = yield* Effect.clock
      const prop = FastCheck.asyncProperty(
        FastCheck.array(FastCheck.array(FastCheck.integer({ min: 0, max: 99 }), { maxLength: 3 }), { maxLength: 5 }),
        FastCheck.option(FastCheck.constantFrom("cut", "broken"), { nil: undefined }),
        FastCheck.array(stageSpec, { maxLength: 7 }),
        FastCheck.array(FastCheck.boolean(), { minLength: 1, maxLength: 4 }),
        (chunks, failure, chain, accepts) =>
          Effect.runPromise(Effect.gen(function*() {
            const { source } = pushing(clock)
            const effects: Array<string> = []
            const written: Array<number> = []
            const log: Array<string> = []
            let writes = 0
            const fiber = yield* Effect.fork(Relay.runWrites(
              chainOf(source, chain, effects),
              (batch) => {
                written.push(...batch)
                const accepted = accepts[writes++ % accepts.length] ?? true
                log.push(accepted ? "write" : "write, false")
                return accepted
              },
              Effect.sync(() => log.push("paused"))
            ))
            const factor = chain.reduce((k, spec) => (spec._tag === "map" ? k * spec.k : k), 1)
            for (const chunk of chunks) {
              yield* waiting(fiber)
              const before = written.length
              for (const item of chunk) source.offer(item)
              source.flush()
              // written by the flush itself, before the consumer's fiber ran again
              assert.deepStrictEqual(written.slice(before), chunk.map((n) => n * factor))
            }
            yield* waiting(fiber)
            source.exchangeDone()
            if (failure === undefined) source.finish()
            else source.fail(failure)
            const exit = yield* Fiber.await(fiber)
            const model = modelOf(
              chunks.flat(),
              failure === undefined ? Either.right(null) : Either.left(failure),
              chain
            )
            assert.deepStrictEqual(
              exit,
              Either.match(model.end, { onLeft: Exit.fail, onRight: () => Exit.void })
            )
            assert.deepStrictEqual(written, model.items)
            assert.deepStrictEqual(effects, model.effects)
            // every false is followed by `paused`, before any other write
            log.forEach((entry, i) => {
              if (entry === "write, false") assert.strictEqual(log[i + 1], "paused", log.join(" | "))
              if (entry === "paused") assert.strictEqual(log[i - 1], "write, false", log.join(" | "))
            })
          }))
      )
      yield* Effect.promise(() => FastCheck.assert(prop, { numRuns: 200 }))
    }))

  it.effect("chunks that arrive while the consumer is in `paused` are queued (the exchange paused past the high-water mark), then pulled at once; pushing resumes after", () =>
    Effect.gen(function*() {
      const { calls, source } = pushing(yield* Effect.clock, 4)
      const gate = yield* Deferred.make<void>()
      const written: Array<ReadonlyArray<number>> = []
      const fiber = yield* Effect.fork(
        Relay.runWrites(source, (batch) => {
          written.push(batch)
          return batch[0] !== 1
        }, Deferred.await(gate))
      )
      yield* waiting(fiber)
      source.offer(1)
      source.flush()
      assert.deepStrictEqual(written, [[1]])
      yield* waiting(fiber)
      for (let i = 2; i <= 7; i++) source.offer(i)
      source.flush()
      assert.deepStrictEqual(written, [[1]], "nothing is written while the consumer is in `paused`")
      assert.deepStrictEqual(calls, ["pause"])
      yield* Deferred.succeed(gate, undefined)
      yield* waiting(fiber)
      assert.deepStrictEqual(written, [[1], [2, 3, 4, 5, 6, 7]])
      assert.deepStrictEqual(calls, ["pause", "resume"])
      source.offer(8)
      source.flush()
      assert.deepStrictEqual(written, [[1], [2, 3, 4, 5, 6, 7], [8]])
      source.exchangeDone()
      source.finish()
      assert.deepStrictEqual(yield* Fiber.await(fiber), Exit.void)
    }))

  it.effect("a writer that throws while the source pushes fails the consumer with that defect and aborts the exchange", () =>
    Effect.gen(function*() {
      const { calls, source } = pushing(yield* Effect.clock)
      const fiber = yield* Effect.fork(
        Relay.runWrites(Relay.map(source, (batch) => batch.map((n) => n + 1)), (batch) => {
          if (batch[0] === 3) throw new Error("writer broke")
          return true
        }, Effect.void)
      )
      yield* waiting(fiber)
      source.offer(1)
      source.flush()
      source.offer(2)
      source.flush()
      const exit = yield* Fiber.await(fiber)
      assert.isTrue(
        Exit.isFailure(exit) &&
          Exit.causeOption(exit).pipe(Option.exists((cause) => String(cause).includes("writer broke")))
      )
      assert.deepStrictEqual(calls, ["abort"])
    }))

  it.effect("runForEach fails with the relay's failure and releases it", () =>
    Effect.gen(function*() {
      const source = scripted([[1], [2]], Either.left("broken"))
      const got: Array<number> = []
      const exit = yield* Effect.exit(Relay.runForEach(source.relay, (batch) => Effect.sync(() => got.push(...batch))))
      assert.deepStrictEqual(exit, Exit.fail("broken"))
      assert.deepStrictEqual(got, [1, 2])
      assert.strictEqual(source.releases(), 1)
    }))

  it.effect("runForEach stops at a failing consumer and releases the relay without pulling further", () =>
    Effect.gen(function*() {
      const source = scripted([[1], [2], [3]])
      const exit = yield* Effect.exit(
        Relay.runForEach(source.relay, (batch) => (batch[0] === 2 ? Effect.fail("socket gone") : Effect.void))
      )
      assert.deepStrictEqual(exit, Exit.fail("socket gone"))
      assert.strictEqual(source.pulls(), 2)
      assert.strictEqual(source.releases(), 1)
    }))

  it.effect("an interrupted consumer waiting on a pull releases the relay", () =>
    Effect.gen(function*() {
      const source = stalled()
      const fiber = yield* Effect.fork(Relay.runForEach(source.relay, () => Effect.void))
      yield* Effect.yieldNow()
      assert.strictEqual(source.releases(), 0)
      yield* Fiber.interrupt(fiber)
      assert.strictEqual(source.releases(), 1)
    }))

  it.effect("make is one batch, then the end", () =>
    Effect.gen(function*() {
      const relay = Relay.make(["a", "b"])
      assert.deepStrictEqual(yield* relay.pull, ["a", "b"])
      assert.strictEqual(yield* relay.pull, null)
    }))

  it.effect("toStream has the relay's items and failure, and releases it when the stream ends", () =>
    Effect.gen(function*() {
      const ok = scripted([[1, 2], [3]])
      const items = yield* Stream.runCollect(Relay.toStream(ok.relay))
      assert.deepStrictEqual(Chunk.toReadonlyArray(items), [1, 2, 3])
      assert.strictEqual(ok.releases(), 1)
      const failing = scripted([[1]], Either.left("cut"))
      const either = yield* Stream.runCollect(Stream.either(Relay.toStream(failing.relay)))
      assert.deepStrictEqual(Chunk.toReadonlyArray(either), [Either.right(1), Either.left("cut")])
      assert.strictEqual(failing.releases(), 1)
    }))

  it.effect("a stream made by toStream remembers its relay: fromStream hands back that very relay, unopened", () =>
    Effect.gen(function*() {
      const source = scripted([[1, 2], [3]])
      const stream = Relay.toStream(source.relay)
      assert.strictEqual(Relay.fromStream(stream), source.relay)
      assert.strictEqual(Relay.fromStream(stream), Relay.fromStream(stream))
      assert.strictEqual(source.pulls(), 0)
      assert.deepStrictEqual(yield* Relay.collect(Relay.fromStream(stream)), [1, 2, 3])
      assert.strictEqual(source.releases(), 1)
    }))

  it.effect("a stream derived from a relay's stream is adapted: a relay of its own, with the derived items", () =>
    Effect.gen(function*() {
      const source = scripted([[1, 2], [3]])
      const derived = Relay.toStream(source.relay).pipe(Stream.map((n) => n * 10))
      const relay = Relay.fromStream(derived)
      assert.notStrictEqual(relay, source.relay)
      assert.notStrictEqual(Relay.fromStream(derived), relay)
      assert.deepStrictEqual(yield* Relay.collect(relay), [10, 20, 30])
      assert.strictEqual(source.releases(), 1)
    }))

  it.effect("a relay's stream is an ordinary Stream: pipeable, and Stream.take stops pulling and releases the relay", () =>
    Effect.gen(function*() {
      const source = scripted([[1, 2], [3], [4]])
      const taken = yield* Relay.toStream(source.relay).pipe(
        Stream.map((n) => n * 2),
        Stream.take(2),
        Stream.runCollect
      )
      assert.deepStrictEqual(Chunk.toReadonlyArray(taken), [2, 4])
      assert.strictEqual(source.pulls(), 1)
      assert.strictEqual(source.releases(), 1)
    }))

  it.effect("interrupting the consumer of a relay's stream releases the relay", () =>
    Effect.gen(function*() {
      const source = stalled()
      const fiber = yield* Effect.fork(Stream.runDrain(Relay.toStream(source.relay)))
      yield* Effect.yieldNow()
      assert.strictEqual(source.releases(), 0)
      yield* Fiber.interrupt(fiber)
      assert.strictEqual(source.releases(), 1)
    }))

  it.effect("fromStream opens the stream at the first pull and release closes it (its finalizers run)", () =>
    Effect.gen(function*() {
      let opened = 0
      let finalized = 0
      const stream = Stream.acquireRelease(
        Effect.sync(() => {
          opened++
        }),
        () =>
          Effect.sync(() => {
            finalized++
          })
      ).pipe(Stream.flatMap(() => Stream.fromIterable([1, 2, 3])))
      const relay = Relay.fromStream(stream)
      assert.strictEqual(opened, 0)
      const first = yield* relay.pull
      assert.strictEqual(opened, 1)
      assert.isNotNull(first)
      yield* relay.release
      assert.strictEqual(finalized, 1)
      yield* relay.release
      assert.strictEqual(finalized, 1, "release is idempotent")
    }))

  it.effect("fromStream relays every item and the stream's failure", () =>
    Effect.gen(function*() {
      const items = yield* Relay.collect(Relay.fromStream(Stream.fromIterable([1, 2, 3])))
      assert.deepStrictEqual(items, [1, 2, 3])
      const exit = yield* Effect.exit(
        Relay.collect(Relay.fromStream(Stream.concat(Stream.make(1), Stream.fail("cut"))))
      )
      assert.deepStrictEqual(exit, Exit.fail("cut"))
    }))
})
