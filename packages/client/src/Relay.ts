/**
 * A relay: the items of a streamed answer, pulled batch by batch by ONE consumer in a plain Effect
 * loop. It is what a streamed call produces and what the server writes to its caller.
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

/**
 * What one pull gave, as a stage reads and writes it: a batch, the end, a failure, or — rarely —
 * an effect that decides (`concat`'s tail).
 */
type Step<A, E> = Pulled<A, E> | { readonly _tag: "Then"; readonly effect: Effect.Effect<ReadonlyArray<A> | null, E> }

/** What a pull of a relay gave: a batch, the end, or a failure. */
type Pulled<A, E> =
  | { readonly _tag: "Batch"; readonly batch: ReadonlyArray<A> }
  | { readonly _tag: "End" }
  | { readonly _tag: "Fail"; readonly error: E }

const endStep: Pulled<never, never> = { _tag: "End" }

/**
 * A stage between an input relay of `S` (failing with `E0`) and its output of `A` (failing with
 * `E`): `early` answers a pull without pulling the input (a stage that is past its input's end);
 * `step` makes the output of one input pull. Both are synchronous, so any number of stages over
 * one input compose into ONE pair of functions, and a pull through all of them is one pull of the
 * input and plain function calls (a stage as an `Effect` around the input's pull would add a few
 * runtime steps per stage and pull — per relayed chunk, on the streaming path).
 */
interface Stage<S, E0, A, E> {
  readonly early: () => Step<A, E> | undefined
  readonly step: (input: Pulled<S, E0>) => Step<A, E>
}

const noEarly = (): undefined => undefined

/** Where a relay made by a stage keeps its input and stage (a non-enumerable property). */
const StagedKey: unique symbol = Symbol("@switchyard-ts/client/Relay/staged")

/** Gives the input and stage of a staged relay to `k` (their input types are not the output's). */
type Staged<A, E> = <R>(k: <S, E0>(input: Relay<S, E0>, stage: Stage<S, E0, A, E>) => R) => R

interface StagedRelay<A, E> extends Relay<A, E> {
  readonly [StagedKey]: Staged<A, E>
}

const isStaged = <A, E>(relay: Relay<A, E>): relay is StagedRelay<A, E> => Predicate.hasProperty(relay, StagedKey)

/** `step` applied to what a pull (or `concat`'s tail) gives, once it ran: one runtime frame. */
const through = <S, E0, A, E>(
  effect: Effect.Effect<ReadonlyArray<S> | null, E0>,
  step: (input: Pulled<S, E0>) => Step<A, E>
): Effect.Effect<ReadonlyArray<A> | null, E> =>
  Effect.matchEffect(effect, {
    onFailure: (error) => effectOf(step({ _tag: "Fail", error })),
    onSuccess: (batch) => effectOf(step(batch === null ? endStep : { _tag: "Batch", batch }))
  })

/** The step of a `Then`: `step` applied to what its effect gives, once it ran. */
const afterThen = <S, E0, A, E>(
  effect: Effect.Effect<ReadonlyArray<S> | null, E0>,
  step: (input: Pulled<S, E0>) => Step<A, E>
): Step<A, E> => ({ _tag: "Then", effect: through(effect, step) })

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
const compose = <S, E0, M, E1, A, E>(inner: Stage<S, E0, M, E1>, outer: Stage<M, E1, A, E>): Stage<S, E0, A, E> => {
  const step = (input: Pulled<S, E0>): Step<A, E> => {
    const middle = inner.step(input)
    return middle._tag === "Then" ? afterThen(middle.effect, outer.step) : outer.step(middle)
  }
  return {
    early: () => {
      const outerEarly = outer.early()
      if (outerEarly !== undefined) return outerEarly
      const innerEarly = inner.early()
      if (innerEarly === undefined) return undefined
      return innerEarly._tag === "Then" ? afterThen(innerEarly.effect, outer.step) : outer.step(innerEarly)
    },
    step
  }
}

/** The relay of `stage` over `input`: one pull of the input per pull, the stage's functions around it. */
const build = <S, E0, A, E>(input: Relay<S, E0>, stage: Stage<S, E0, A, E>): Relay<A, E> => {
  const pulled = through(input.pull, stage.step)
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
  staged(self, {
    early: noEarly,
    step: (input): Step<B, E> => (input._tag === "Batch" ? { _tag: "Batch", batch: f(input.batch) } : input)
  })

/** After the last batch of `self`, the items of `tail` (run once, when `self` ended normally). */
export const concat = <A, E, E2>(self: Relay<A, E>, tail: Effect.Effect<ReadonlyArray<A>, E2>): Relay<A, E | E2> => {
  let done = false
  return staged(self, {
    early: () => (done ? endStep : undefined),
    step: (input): Step<A, E | E2> => {
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
    step: (input) => {
      if (input._tag === "Fail") f(input.error)
      return input
    }
  })

/** A failure of `self` becomes the items `f` makes of it, then the end. */
export const catchAll = <A, E>(self: Relay<A, E>, f: (error: E) => ReadonlyArray<A>): Relay<A, never> => {
  let failed = false
  return staged(self, {
    early: () => (failed ? endStep : undefined),
    step: (input): Step<A, never> => {
      if (input._tag !== "Fail") return input
      failed = true
      return { _tag: "Batch", batch: f(input.error) }
    }
  })
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
