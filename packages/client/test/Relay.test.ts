import { assert, describe, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as FastCheck from "effect/FastCheck"
import * as Fiber from "effect/Fiber"
import * as Stream from "effect/Stream"
import * as Relay from "../src/Relay.js"

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
