/**
 * How a relay's source hands batches to a synchronous consumer while that consumer waits, so that
 * a relayed network chunk is written from the transport's callback without resuming a fiber (see
 * `Relay.runWrites`). A source that can (the exchange's `PushSource`) has a pull taking the
 * consumer's `deliver`; every other relay is pulled.
 *
 * @internal
 */
import type * as Effect from "effect/Effect"
import * as Predicate from "effect/Predicate"

/**
 * Takes a batch while the consumer waits; `false` when the consumer must run in its fiber before
 * the next batch (it is then woken with {@link delivered}).
 */
export type Deliver<A> = (batch: ReadonlyArray<A>) => boolean

/**
 * What a pull returns when `deliver` took the last batch and asked for the fiber: compared by
 * identity, never written.
 */
export const delivered: ReadonlyArray<never> = []

/** Where a source keeps its pull with `deliver` (a property of the source's own). */
export const PushKey: unique symbol = Symbol("@switchyard-ts/client/Relay/push")

/**
 * A source that pushes while its consumer waits: like `pull` (the queued batch, `null` at the
 * end, the failure), except that a batch arriving while it waits goes to `deliver`, and the wait
 * goes on while `deliver` returns `true`.
 */
export interface Pushing<A, E> {
  readonly [PushKey]: (deliver: Deliver<A>) => Effect.Effect<ReadonlyArray<A> | null, E>
}

// Only a source of `A` failing with `E` sets the key (PushSource), as the pull of the relay it is.
export const isPushing = <A, E>(source: object): source is Pushing<A, E> => Predicate.hasProperty(source, PushKey)
