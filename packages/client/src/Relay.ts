/**
 * A relay: the items of a streamed answer, pulled batch by batch by ONE consumer in a plain Effect
 * loop. It is what a streamed call produces and what the server writes to its caller.
 *
 * Why not a `Stream` all the way: each pull of a composed `Stream` runs through the channel
 * executor of every stage, ~30 µs per network chunk with hundreds of streams open, while a pull
 * of a relay is one fiber resume and a few function calls (~2 µs). Every stage of a relay is a
 * synchronous function over a batch (`map`), an end (`concat`), or a failure (`tapError`,
 * `catchAll`), so the per-chunk concerns (usage, encoding, `[DONE]`, error events) are written once
 * and run the same whichever way the relay is consumed.
 *
 * At the library boundary a streamed answer is a `Stream` (`UpstreamClient.answerStream`,
 * `Fallback.Streamed.stream`, `Router.Streamed.pieces`): {@link toStream} makes it, and the stream
 * remembers the relay it was made from, so that {@link fromStream} hands that very relay back at no
 * cost. The server unwraps the stream it gets from the router and pulls the relay, so the request
 * path has one mechanism and no `Stream` step per chunk, while a library user holds an ordinary
 * `Stream` (pipeable, interruptible, releasing the upstream exchange when it ends). Only a stream
 * that did not come from {@link toStream} (a scripted client's, or one a user transformed) is
 * adapted by opening it.
 *
 * Contract: `pull` is never run concurrently, nor again after it failed or returned `null` (the
 * end); `release` is run once the consumer is done, however it ends (it is idempotent). A relay, and
 * a stream made of one, has one consumer: run the stream or unwrap it, once.
 */
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"

export interface Relay<A, E> {
  /** The next batch (possibly empty), or `null` once the relay ended. */
  readonly pull: Effect.Effect<ReadonlyArray<A> | null, E>
  /** The consumer is done: let go of the source (abort or finish the upstream exchange). */
  readonly release: Effect.Effect<void>
}

const ended = Effect.succeed(null)

/** A relay of `items`, in one batch. */
export const make = <A>(items: ReadonlyArray<A>): Relay<A, never> => {
  let sent = false
  return {
    pull: Effect.sync(() => {
      if (sent) return null
      sent = true
      return items
    }),
    release: Effect.void
  }
}

/** Every batch through `f` (e.g. pieces into SSE text). */
export const map = <A, B, E>(self: Relay<A, E>, f: (batch: ReadonlyArray<A>) => ReadonlyArray<B>): Relay<B, E> => ({
  pull: Effect.map(self.pull, (batch) => (batch === null ? null : f(batch))),
  release: self.release
})

/** After the last batch of `self`, the items of `tail` (run once, when `self` ended normally). */
export const concat = <A, E, E2>(self: Relay<A, E>, tail: Effect.Effect<ReadonlyArray<A>, E2>): Relay<A, E | E2> => {
  let state: "head" | "tail" | "done" = "head"
  return {
    pull: Effect.suspend((): Effect.Effect<ReadonlyArray<A> | null, E | E2> => {
      if (state === "done") return ended
      if (state === "tail") {
        state = "done"
        return tail
      }
      return Effect.map(self.pull, (batch) => {
        if (batch !== null) return batch
        state = "tail"
        return []
      })
    }),
    release: self.release
  }
}

/** `f` runs when `self` fails (the failure goes on). */
export const tapError = <A, E>(self: Relay<A, E>, f: (error: E) => void): Relay<A, E> => ({
  pull: Effect.tapError(self.pull, (error) => Effect.sync(() => f(error))),
  release: self.release
})

/** A failure of `self` becomes the items `f` makes of it, then the end. */
export const catchAll = <A, E>(self: Relay<A, E>, f: (error: E) => ReadonlyArray<A>): Relay<A, never> => {
  let failed = false
  return {
    pull: Effect.suspend(() =>
      failed ? ended : Effect.catchAll(self.pull, (error) => {
        failed = true
        return Effect.succeed(f(error))
      })
    ),
    release: self.release
  }
}

/**
 * Runs `each` on every batch of `self` until its end, then releases it (also when `each` or the
 * relay fails, or the fiber is interrupted).
 */
export const runForEach = <A, E, E2>(
  self: Relay<A, E>,
  each: (batch: ReadonlyArray<A>) => Effect.Effect<void, E2>
): Effect.Effect<void, E | E2> => {
  const loop: Effect.Effect<void, E | E2> = Effect.flatMap(
    self.pull,
    (batch) => (batch === null ? Effect.void : Effect.zipRight(each(batch), loop))
  )
  return Effect.ensuring(loop, self.release)
}

/** Every item of `self`, in order. */
export const collect = <A, E>(self: Relay<A, E>): Effect.Effect<Array<A>, E> =>
  Effect.suspend(() => {
    const all: Array<A> = []
    return Effect.as(runForEach(self, (batch) => Effect.sync(() => all.push(...batch))), all)
  })

/** Where a stream made by {@link toStream} keeps its relay (a non-enumerable property). */
const RelayKey: unique symbol = Symbol("@switchyard-ts/client/Relay/relay")

/** A stream made by {@link toStream}: it carries its relay. */
interface RelayStream<A, E> extends Stream.Stream<A, E> {
  readonly [RelayKey]: Relay<A, E>
}

// Only `toStream` sets the key, always to the relay of that very stream (same `A` and `E`, and both
// types are covariant in them), so finding the key is finding a `Relay<A, E>`.
const isRelayStream = <A, E>(stream: Stream.Stream<A, E>): stream is RelayStream<A, E> =>
  Predicate.hasProperty(stream, RelayKey)

/**
 * The relay as a `Stream` (one batch per chunk), releasing the relay when the stream ends, fails or
 * is interrupted (e.g. by `Stream.take`). The stream remembers `self`: {@link fromStream} returns
 * it. Built lazily: a stream that is only unwrapped costs two small objects. Run it at most once: a
 * relay has one consumer.
 */
export const toStream = <A, E>(self: Relay<A, E>): Stream.Stream<A, E> =>
  Object.defineProperty(
    Stream.suspend(() =>
      Stream.repeatEffectChunkOption(
        Effect.matchEffect(self.pull, {
          onFailure: (error) => Effect.fail(Option.some(error)),
          onSuccess: (batch) =>
            batch === null ? Effect.fail(Option.none()) : Effect.succeed(Chunk.unsafeFromArray(batch))
        })
      ).pipe(Stream.ensuring(self.release))
    ),
    RelayKey,
    { value: self }
  )

/**
 * The relay of `stream`: the very relay it was made from when {@link toStream} made it (no second
 * path, nothing per item); otherwise a relay over the stream (scripted clients, a stream a user
 * transformed), which opens it at the first pull, in a scope that `release` closes.
 */
export const fromStream = <A, E>(stream: Stream.Stream<A, E>): Relay<A, E> =>
  isRelayStream(stream) ? stream[RelayKey] : adapt(stream)

const adapt = <A, E>(stream: Stream.Stream<A, E>): Relay<A, E> => {
  let scope: Scope.CloseableScope | undefined = undefined
  let pullChunk: Effect.Effect<Chunk.Chunk<A>, Option.Option<E>> | undefined = undefined
  const open = Effect.suspend(() => {
    if (pullChunk !== undefined) return Effect.succeed(pullChunk)
    return Effect.flatMap(Scope.make(), (made) => {
      scope = made
      return Effect.map(Scope.extend(Stream.toPull(stream), made), (pull) => (pullChunk = pull))
    })
  })
  return {
    pull: Effect.flatMap(open, (pull) =>
      Effect.matchEffect(pull, {
        onFailure: (error) => Option.match(error, { onNone: () => ended, onSome: Effect.fail }),
        onSuccess: (chunk) => Effect.succeed(Chunk.toReadonlyArray(chunk))
      })),
    release: Effect.suspend(() => {
      const opened = scope
      scope = undefined
      return opened === undefined ? Effect.void : Scope.close(opened, Exit.void)
    })
  }
}
