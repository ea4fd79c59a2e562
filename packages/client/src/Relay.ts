/**
 * A relay: the items of a streamed answer, taken batch by batch by ONE consumer. It is what a
 * streamed call produces and what the server writes to its caller.
 *
 * Why not a `Stream` all the way: each pull of a composed `Stream` runs through the channel
 * executor of every stage, ~30 µs per network chunk with hundreds of streams open, while a pull
 * of a relay is one fiber resume and a few function calls (~2 µs). Every stage of a relay is a
 * synchronous function over a batch (`map`), an end (`concat`), or a failure (`tapError`,
 * `catchAll`), so the per-chunk concerns (usage, encoding, `[DONE]`, error events) are written once
 * and run the same whichever way the relay is consumed. Stages over one relay fuse: however many
 * there are, a pull is one pull of the relay underneath and the stages' functions around it.
 *
 * At the library boundary a streamed answer is a `Stream` (`UpstreamClient.answerStream`,
 * `Fallback.Streamed.stream`, `Router.Streamed.pieces`): {@link toStream} makes it, and the stream
 * remembers the relay it was made from, so that {@link fromStream} hands that very relay back at no
 * cost. The server unwraps the stream it gets from the router and writes the relay, so the request
 * path has one mechanism and no `Stream` step per chunk, while a library user holds an ordinary
 * `Stream` (pipeable, interruptible, releasing the upstream exchange when it ends). Only a stream
 * that did not come from {@link toStream} (a scripted client's, or one a user transformed) is
 * adapted by opening it.
 *
 * The server consumes a relay with {@link runWrites}: a synchronous writer. While it waits on a
 * streamed upstream answer, the exchange's source hands each network chunk's items through the
 * fused stages to that writer from the transport's callback, so a relayed chunk costs no fiber
 * resume; the fiber runs at the end, on a failure, at `concat`'s tail, and when the writer asks
 * (the caller's socket is full, or the request's record is due). Every other relay is pulled.
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
import * as Push from "./internal/push.js"

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

/** How a pull of a relay ended when it gave no batch: the end, or a failure. */
type Last<E> = { readonly _tag: "End" } | { readonly _tag: "Fail"; readonly error: E }

/** What a pull of a relay gave: a batch, the end, or a failure. */
type Pulled<A, E> = { readonly _tag: "Batch"; readonly batch: ReadonlyArray<A> } | Last<E>

/**
 * What a stage makes of its input's end or failure: a batch, the end, a failure, or — rarely — an
 * effect that decides (`concat`'s tail).
 */
type Step<A, E> = Pulled<A, E> | { readonly _tag: "Then"; readonly effect: Effect.Effect<ReadonlyArray<A> | null, E> }

const endStep: Last<never> = { _tag: "End" }

/**
 * A stage between an input relay of `S` (failing with `E0`) and its output of `A` (failing with
 * `E`): `early` answers a pull without pulling the input (a stage that is past its input's end);
 * `batch` makes the output of an input batch (always a batch: a stage ends or fails only at its
 * input's end or failure); `last` makes the output of the input's end or failure. All are
 * synchronous, so any number of stages over one input compose into ONE stage, and a pull through
 * all of them is one pull of the input and plain function calls (a stage as an `Effect` around the
 * input's pull would add a few runtime steps per stage and pull — per relayed chunk, on the
 * streaming path).
 */
interface Stage<S, E0, A, E> {
  readonly early: () => Step<A, E> | undefined
  readonly batch: (batch: ReadonlyArray<S>) => ReadonlyArray<A>
  readonly last: (input: Last<E0>) => Step<A, E>
}

const noEarly = (): undefined => undefined
const same = <A>(batch: ReadonlyArray<A>): ReadonlyArray<A> => batch

/** What `stage` makes of what a pull gave. */
const stepOf = <S, E0, A, E>(stage: Stage<S, E0, A, E>, input: Pulled<S, E0>): Step<A, E> =>
  input._tag === "Batch" ? { _tag: "Batch", batch: stage.batch(input.batch) } : stage.last(input)

/** Where a relay made by a stage keeps its input and stage (a non-enumerable property). */
const StagedKey: unique symbol = Symbol("@switchyard-ts/client/Relay/staged")

/** Gives the input and stage of a staged relay to `k` (their input types are not the output's). */
type Staged<A, E> = <R>(k: <S, E0>(input: Relay<S, E0>, stage: Stage<S, E0, A, E>) => R) => R

interface StagedRelay<A, E> extends Relay<A, E> {
  readonly [StagedKey]: Staged<A, E>
}

const isStaged = <A, E>(relay: Relay<A, E>): relay is StagedRelay<A, E> => Predicate.hasProperty(relay, StagedKey)

/** `stage` applied to what a pull (or `concat`'s tail) gives, once it ran: one runtime frame. */
const through = <S, E0, A, E>(
  effect: Effect.Effect<ReadonlyArray<S> | null, E0>,
  stage: Stage<S, E0, A, E>
): Effect.Effect<ReadonlyArray<A> | null, E> =>
  Effect.matchEffect(effect, {
    onFailure: (error) => effectOf(stage.last({ _tag: "Fail", error })),
    onSuccess: (batch) => batch === null ? effectOf(stage.last(endStep)) : Effect.succeed(stage.batch(batch))
  })

/** A step of `inner`, then `outer` on it (after its effect, for a `Then`). */
const andThen = <M, E1, A, E>(middle: Step<M, E1>, outer: Stage<M, E1, A, E>): Step<A, E> =>
  middle._tag === "Then" ? { _tag: "Then", effect: through(middle.effect, outer) } : stepOf(outer, middle)

const effectOf = <A, E>(step: Step<A, E>): Effect.Effect<ReadonlyArray<A> | null, E> => {
  switch (step._tag) {
    case "Batch":
      return Effect.succeed(step.batch)
    case "End":
      return ended
    case "Fail":
      return Effect.fail(step.error)
    case "Then":
      return step.effect
  }
}

/** `inner` then `outer`, as one stage. */
const compose = <S, E0, M, E1, A, E>(inner: Stage<S, E0, M, E1>, outer: Stage<M, E1, A, E>): Stage<S, E0, A, E> => ({
  early: () => {
    const outerEarly = outer.early()
    if (outerEarly !== undefined) return outerEarly
    const innerEarly = inner.early()
    return innerEarly === undefined ? undefined : andThen(innerEarly, outer)
  },
  batch: (batch) => outer.batch(inner.batch(batch)),
  last: (input) => andThen(inner.last(input), outer)
})

/** The relay of `stage` over `input`: one pull of the input per pull, the stage's functions around it. */
const build = <S, E0, A, E>(input: Relay<S, E0>, stage: Stage<S, E0, A, E>): Relay<A, E> => {
  const pulled = through(input.pull, stage)
  const relay: Relay<A, E> = {
    pull: Effect.suspend(() => {
      const early = stage.early()
      return early === undefined ? pulled : effectOf(early)
    }),
    release: input.release
  }
  const staged: Staged<A, E> = (k) => k(input, stage)
  return Object.defineProperty(relay, StagedKey, { value: staged })
}

/** `stage` after `self`: fused with the stages `self` was made of, if any. */
const staged = <M, E1, A, E>(self: Relay<M, E1>, stage: Stage<M, E1, A, E>): Relay<A, E> =>
  isStaged(self) ? self[StagedKey]((input, inner) => build(input, compose(inner, stage))) : build(self, stage)

/** Every batch through `f` (e.g. pieces into SSE text). */
export const map = <A, B, E>(self: Relay<A, E>, f: (batch: ReadonlyArray<A>) => ReadonlyArray<B>): Relay<B, E> =>
  staged(self, { early: noEarly, batch: f, last: (input) => input })

/** After the last batch of `self`, the items of `tail` (run once, when `self` ended normally). */
export const concat = <A, E, E2>(self: Relay<A, E>, tail: Effect.Effect<ReadonlyArray<A>, E2>): Relay<A, E | E2> => {
  let done = false
  return staged(self, {
    early: () => (done ? endStep : undefined),
    batch: same,
    last: (input): Step<A, E | E2> => {
      if (input._tag !== "End") return input
      done = true
      return { _tag: "Then", effect: tail }
    }
  })
}

/** `f` runs when `self` fails (the failure goes on). */
export const tapError = <A, E>(self: Relay<A, E>, f: (error: E) => void): Relay<A, E> =>
  staged(self, {
    early: noEarly,
    batch: same,
    last: (input) => {
      if (input._tag === "Fail") f(input.error)
      return input
    }
  })

/** A failure of `self` becomes the items `f` makes of it, then the end. */
export const catchAll = <A, E>(self: Relay<A, E>, f: (error: E) => ReadonlyArray<A>): Relay<A, never> => {
  let failed = false
  return staged(self, {
    early: () => (failed ? endStep : undefined),
    batch: same,
    last: (input): Step<A, never> => {
      if (input._tag !== "Fail") return input
      failed = true
      return { _tag: "Batch", batch: f(input.error) }
    }
  })
}

/**
 * The pull of `self` for a consumer that writes with `deliver`: a relay over a source that pushes
 * (the exchange's) hands it the batches that arrive while the consumer waits, through the fused
 * stages; any other relay is pulled. Returns a batch for the consumer to write, the end, the
 * failure — or `Push.delivered`, when `deliver` took the last batch and asked for the fiber.
 */
const pushPull = <A, E>(
  self: Relay<A, E>,
  deliver: Push.Deliver<A>
): Effect.Effect<ReadonlyArray<A> | null, E> => {
  if (isStaged(self)) return self[StagedKey]((input, stage) => stagedPushPull(input, stage, deliver))
  return Push.isPushing<A, E>(self) ? self[Push.PushKey](deliver) : self.pull
}

/** `pushPull` through a stage: a pushed batch goes through the stage's `batch`, then to `deliver`. */
const stagedPushPull = <S, E0, A, E>(
  input: Relay<S, E0>,
  stage: Stage<S, E0, A, E>,
  deliver: Push.Deliver<A>
): Effect.Effect<ReadonlyArray<A> | null, E> => {
  const after = Effect.matchEffect(pushPull(input, (batch) => deliver(stage.batch(batch))), {
    onFailure: (error) => effectOf(stage.last({ _tag: "Fail", error })),
    onSuccess: (batch) => {
      if (batch === null) return effectOf(stage.last(endStep))
      return Effect.succeed(batch === Push.delivered ? Push.delivered : stage.batch(batch))
    }
  })
  return Effect.suspend(() => {
    const early = stage.early()
    return early === undefined ? after : effectOf(early)
  })
}

/**
 * Writes every batch of `self` with `write` until its end, then releases it (also when the relay
 * or `paused` fails, or the fiber is interrupted). `write` is synchronous and returns whether it
 * can take the next batch at once; after a `false`, `paused` runs (in the fiber) before the next
 * batch. While the consumer waits on a source that pushes (a streamed upstream answer), each
 * network chunk's batch is written from the transport's callback, through the relay's stages,
 * without resuming the fiber; the fiber runs at the end, on a failure, at `concat`'s tail and after
 * a `false`. Empty batches are not written.
 */
export const runWrites = <A, E, E2>(
  self: Relay<A, E>,
  write: (batch: ReadonlyArray<A>) => boolean,
  paused: Effect.Effect<void, E2>
): Effect.Effect<void, E | E2> =>
  Effect.suspend(() => {
    let pause = false
    const deliver = (batch: ReadonlyArray<A>): boolean => {
      if (batch.length === 0 || write(batch)) return true
      pause = true
      return false
    }
    const pull = pushPull(self, deliver)
    const loop: Effect.Effect<void, E | E2> = Effect.flatMap(pull, (batch) => {
      if (batch === null) return Effect.void
      if (batch !== Push.delivered) deliver(batch)
      if (!pause) return loop
      pause = false
      return Effect.zipRight(paused, loop)
    })
    return Effect.ensuring(loop, self.release)
  })

/**
 * Runs `each` on every batch of `self` until its end, then releases it (also when `each` or the
 * relay fails, or the fiber is interrupted). {@link runWrites} with every batch handed to the fiber.
 */
export const runForEach = <A, E, E2>(
  self: Relay<A, E>,
  each: (batch: ReadonlyArray<A>) => Effect.Effect<void, E2>
): Effect.Effect<void, E | E2> =>
  Effect.suspend(() => {
    let last: ReadonlyArray<A> = []
    return runWrites(self, (batch) => {
      last = batch
      return false
    }, Effect.suspend(() => each(last)))
  })

/** Every item of `self`, in order. */
export const collect = <A, E>(self: Relay<A, E>): Effect.Effect<Array<A>, E> =>
  Effect.suspend(() => {
    const all: Array<A> = []
    return Effect.as(
      runWrites(self, (batch) => {
        for (const item of batch) all.push(item)
        return true
      }, Effect.void),
      all
    )
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
