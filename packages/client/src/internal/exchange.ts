/**
 * One HTTP attempt over an `UpstreamTransport`, as ONE `Effect.async`: dispatch, collect the body
 * (or, for a streamed 2xx, resume at the headers with a push-fed source), the attempt's share of
 * the call deadline as one timer on the fiber's `Clock`, and abort on deadline or interruption.
 * Also the push-fed source of a streamed body, with one idle watchdog per stream.
 *
 * Timers run on the calling fiber's `Clock` through `internal/timers.ts` (one sleeping fiber per
 * clock, not one per timer): a Node timer under the live clock, woken by `TestClock.adjust` under a
 * test clock, so tests run the production timer.
 *
 * @internal
 */
import type { DeadlineExceeded, TransportError } from "@switchyard-ts/protocol/Errors"
import type * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Metrics from "../Metrics.js"
import type { Relay } from "../Relay.js"
import type { TransportControl, TransportHandler, TransportRequest, UpstreamTransport } from "../UpstreamTransport.js"
import * as Failure from "./failure.js"
import * as Push from "./push.js"
import * as Timers from "./timers.js"

/** The end of a logical call on the fiber's `Clock` (`at`, ms) and the `timeout_ms` it came from. */
export interface Deadline {
  readonly at: number
  readonly afterMs: number
}

/** What an attempt got: a buffered body, or a 2xx stream opened at the headers. */
export type Reply<S> =
  | {
    readonly _tag: "Body"
    readonly status: number
    readonly headers: Readonly<Record<string, string>>
    readonly body: string
  }
  | { readonly _tag: "Stream"; readonly status: number; readonly stream: S }

/** Receives the body of a streamed 2xx after its headers. */
export interface BodySink {
  readonly onData: (chunk: Uint8Array) => void
  readonly onComplete: () => void
  readonly onError: (reason: string) => void
}

/** Opens the stream of a 2xx answer at its headers; `control` releases or throttles the exchange. */
export type OpenStream<S> = (control: TransportControl) => { readonly sink: BodySink; readonly stream: S }

/** How much of a non-2xx body is read to find its `error.message`; the rest is never buffered. */
export const errorBodyLimit = 64 * 1024

/** A control whose exchange is bound after `dispatch` returns (callbacks may run inside it). */
class LateControl implements TransportControl {
  inner: TransportControl | undefined = undefined
  aborted = false
  paused = false
  bind(inner: TransportControl): void {
    this.inner = inner
    if (this.aborted) inner.abort()
    else if (this.paused) inner.pause()
  }
  readonly abort = (): void => {
    this.aborted = true
    this.inner?.abort()
  }
  readonly pause = (): void => {
    this.paused = true
    this.inner?.pause()
  }
  readonly resume = (): void => {
    this.paused = false
    this.inner?.resume()
  }
  readonly released: Effect.Effect<void> = Effect.suspend(() => this.inner?.released ?? Effect.void)
}

const isSuccess = (status: number): boolean => status >= 200 && status <= 299

/**
 * One attempt. Records `Metrics.recordAttempt` once (the status, or none when the attempt ended
 * before headers: transport failure, deadline, interruption). Fails with `TransportError` (no
 * answer, or a body cut), `DeadlineExceeded` (the deadline passed before the reply was complete;
 * the exchange is aborted); interruption aborts the exchange. A 2xx of a streamed call (`open`
 * given) resumes at the headers; any other answer is read whole (non-2xx bodies up to
 * {@link errorBodyLimit}, then the exchange is released).
 */
export const exchange = <S>(
  transport: UpstreamTransport["Type"],
  request: Omit<TransportRequest, "fiberRefs">,
  options: {
    readonly target: string
    readonly deadline: Option.Option<Deadline>
    readonly open: Option.Option<OpenStream<S>>
  }
): Effect.Effect<Reply<S>, TransportError | DeadlineExceeded> =>
  Effect.clockWith((clock) =>
    Effect.withFiberRuntime<Reply<S>, TransportError | DeadlineExceeded>((fiber) => {
      const remaining = Option.map(options.deadline, (d) => d.at - clock.unsafeCurrentTimeMillis())
      if (Option.isSome(remaining) && Option.isSome(options.deadline) && remaining.value <= 0) {
        return Effect.fail(Failure.deadline(options.target, options.deadline.value.afterMs))
      }
      let status = -1
      return Effect.async<Reply<S>, TransportError | DeadlineExceeded>((resume) => {
        let settled = false
        let timer: Timers.Timer | undefined = undefined
        const control = new LateControl()
        // An attempt cut by the deadline or by the caller still went out on the wire: recorded
        // once, when it settles or is interrupted.
        const record = () => Metrics.attemptsFor(status < 0 ? Option.none() : Option.some(status)).unsafeUpdate(1, [])
        const settle = (effect: Effect.Effect<Reply<S>, TransportError | DeadlineExceeded>) => {
          if (settled) return
          settled = true
          timer?.cancel()
          record()
          resume(effect)
        }
        let sink: BodySink | undefined = undefined
        let headers: Readonly<Record<string, string>> = {}
        const decoder = new TextDecoder()
        let text = ""
        let size = 0
        let limit = Number.POSITIVE_INFINITY
        const complete = () => {
          text += decoder.decode()
          settle(Effect.succeed({ _tag: "Body", status, headers, body: text }))
        }
        const handler: TransportHandler = {
          onHeaders: (s, h) => {
            status = s
            headers = h
            if (isSuccess(s) && Option.isSome(options.open)) {
              const opened = options.open.value(control)
              sink = opened.sink
              settle(Effect.succeed({ _tag: "Stream", status: s, stream: opened.stream }))
            } else if (!isSuccess(s)) {
              limit = errorBodyLimit
            }
          },
          onData: (chunk) => {
            if (sink !== undefined) return sink.onData(chunk)
            if (settled) return
            const room = limit - size
            const part = chunk.length > room ? chunk.subarray(0, room) : chunk
            size += part.length
            text += decoder.decode(part, { stream: true })
            if (size >= limit) {
              control.abort()
              complete()
            }
          },
          onComplete: () => {
            if (sink !== undefined) return sink.onComplete()
            complete()
          },
          onError: (reason) => {
            if (sink !== undefined) return sink.onError(reason)
            settle(Effect.fail(Failure.transport(options.target, reason)))
          }
        }
        // The fiber's refs are copied only for a transport that reads them (the undici one does not).
        const sent: TransportRequest = {
          ...request,
          get fiberRefs() {
            return fiber.getFiberRefs()
          }
        }
        control.bind(transport.dispatch(sent, handler))
        if (!settled && Option.isSome(remaining) && Option.isSome(options.deadline)) {
          const afterMs = options.deadline.value.afterMs
          timer = Timers.schedule(clock, remaining.value, () => {
            if (settled) return
            control.abort()
            settle(Effect.fail(Failure.deadline(options.target, afterMs)))
          })
        }
        return Effect.suspend(() => {
          if (!settled) record()
          settled = true
          timer?.cancel()
          control.abort()
          return control.released
        })
      })
    })
  )

/**
 * How long an exchange whose stream ended normally (`[DONE]`, the last event) may take to finish
 * its body (the chunked terminator) once the consumer let go, before it is aborted. A finished
 * exchange keeps its connection in the pool; an aborted one closes it.
 */
export const endGraceMs = 1_000

/**
 * A push-fed source of stream items, consumed as a `Relay`: the transport's body callbacks `offer` items (already
 * decoded), `flush` them at the end of each network chunk, `finish` or `fail` it; the consumer pulls
 * every queued item at once — or, waiting with a `deliver` (`Relay.runWrites`), is handed each
 * chunk's items at its `flush`, from the transport's callback, and woken only when `deliver` asks
 * (or at the end, on a failure). Backpressure: beyond `highWater` queued items the exchange is
 * paused until the consumer drains the queue.
 *
 * Idle watchdog (when `idleMs` is set): at most one timer per stream, armed when the consumer
 * waits on an empty queue. The stream fails with `onIdle()` when the consumer has been waiting for
 * `idleMs` without a network chunk arriving; the timer sleeps the remaining gap and re-arms while
 * the consumer waits (a consumer that is not waiting is never the upstream's fault). Failing or
 * releasing the source early aborts the exchange; a normal end lets it finish (see `finish`).
 */
export class PushSource<A, E> implements Relay<A, E>, Push.Pushing<A, E> {
  private queue: Array<A> = []
  private closed = false
  private failure: Option.Option<E> = Option.none()
  private waiter: ((effect: Effect.Effect<ReadonlyArray<A> | null, E>) => void) | undefined = undefined
  /** The waiting consumer's writer, when it waits with one: each `flush` goes to it. */
  private deliver: Push.Deliver<A> | undefined = undefined
  private paused = false
  private idleSince: number
  private watchdog: Timers.Timer | undefined = undefined
  /** The items ended normally (`[DONE]`, the last event): the exchange may finish by itself. */
  private ended = false
  /** The transport reported the exchange over. */
  private done = false
  private grace: Timers.Timer | undefined = undefined

  constructor(
    private readonly control: TransportControl,
    private readonly clock: Clock.Clock,
    private readonly idleMs: Option.Option<number>,
    private readonly onIdle: () => E,
    private readonly highWater = 64
  ) {
    this.idleSince = clock.unsafeCurrentTimeMillis()
  }

  private arm(ms: number): void {
    this.watchdog = Timers.schedule(this.clock, ms, this.onWake)
  }

  private readonly onWake = (): void => {
    this.watchdog = undefined
    if (this.closed || Option.isNone(this.idleMs)) return
    const idleMs = this.idleMs.value
    // not waiting: the next wait arms the watchdog again
    if (this.waiter === undefined) return
    const idle = this.clock.unsafeCurrentTimeMillis() - this.idleSince
    if (idle >= idleMs) this.fail(this.onIdle())
    else this.arm(idleMs - idle)
  }

  /** A network chunk arrived (whether or not it completed an item). */
  touch(): void {
    if (Option.isSome(this.idleMs)) this.idleSince = this.clock.unsafeCurrentTimeMillis()
  }

  offer(item: A): void {
    if (this.closed) return
    this.queue.push(item)
    if (this.waiter !== undefined) {
      if (this.deliver === undefined) this.wake()
    } else if (!this.paused && this.queue.length >= this.highWater) {
      this.paused = true
      this.control.pause()
    }
  }

  /**
   * The end of a network chunk: a consumer waiting with a writer is handed the items queued since
   * the last one, and woken when it asks (or with the defect its writer threw).
   */
  flush(): void {
    const deliver = this.deliver
    if (deliver === undefined || this.queue.length === 0) return
    const items = this.queue
    this.queue = []
    let more: boolean
    try {
      more = deliver(items)
    } catch (defect) {
      return this.wakeWith(Effect.die(defect))
    }
    if (!more) this.wakeWith(Effect.succeed(Push.delivered))
  }

  /**
   * No more items: the consumer gets what is queued, then the end. The exchange is left to finish
   * by itself (so its connection goes back to the pool), within {@link endGraceMs} of the consumer
   * letting go; past that it is aborted.
   */
  finish(): void {
    if (this.closed) return
    this.ended = true
    this.closed = true
    this.watchdog?.cancel()
    this.wake()
  }

  /** The transport is done with the exchange (its body completed or failed). */
  exchangeDone(): void {
    this.done = true
    this.grace?.cancel()
  }

  /** The consumer gets what is queued, then `error`. The exchange is aborted. */
  fail(error: E): void {
    if (this.closed) return
    this.failure = Option.some(error)
    this.close()
    this.wake()
  }

  /**
   * The consumer is gone (ended, failed or interrupted): abort the exchange, stop the watchdog,
   * and wait until the transport let go of it.
   */
  readonly release: Effect.Effect<void> = Effect.suspend(() => {
    this.waiter = undefined
    this.deliver = undefined
    if (this.done) return this.control.released
    if (this.ended) {
      if (this.grace === undefined) this.grace = Timers.schedule(this.clock, endGraceMs, () => this.control.abort())
      return Effect.void
    }
    if (!this.closed) this.close()
    return this.control.released
  })

  private close(): void {
    this.closed = true
    this.watchdog?.cancel()
    this.control.abort()
  }

  private wake(): void {
    this.wakeWith(this.pull)
  }

  private wakeWith(effect: Effect.Effect<ReadonlyArray<A> | null, E>): void {
    const waiter = this.waiter
    if (waiter === undefined) return
    this.waiter = undefined
    this.deliver = undefined
    waiter(effect)
  }

  /**
   * The queued items, waiting for some when none are; `null` once finished; fails once failed.
   * With `deliver`, the wait hands each chunk's items to it (see {@link flush}).
   */
  private pulling(deliver: Push.Deliver<A> | undefined): Effect.Effect<ReadonlyArray<A> | null, E> {
    return Effect.suspend(() => {
      if (this.queue.length > 0) {
        const items = this.queue
        this.queue = []
        if (this.paused) {
          this.paused = false
          this.control.resume()
        }
        return Effect.succeed(items)
      }
      if (this.closed) return Option.match(this.failure, { onNone: () => Effect.succeed(null), onSome: Effect.fail })
      // No canceler: Effect wraps an `async` that has one in `onInterrupt` (five more runtime steps
      // on every wait). A consumer interrupted while waiting has its resume called at most once
      // more, which the fiber ignores, and `release` (which always runs after the consumer, see
      // `Relay`) drops it and its writer.
      return Effect.async<ReadonlyArray<A> | null, E>((resume) => {
        this.waiter = resume
        this.deliver = deliver
        if (Option.isSome(this.idleMs)) {
          this.idleSince = this.clock.unsafeCurrentTimeMillis()
          // armed on the first wait, not when the stream opens: a first chunk that came with the
          // headers is relayed before any timer exists
          if (this.watchdog === undefined) this.arm(this.idleMs.value)
        }
      })
    })
  }

  readonly pull: Effect.Effect<ReadonlyArray<A> | null, E> = this.pulling(undefined)

  readonly [Push.PushKey] = (deliver: Push.Deliver<A>): Effect.Effect<ReadonlyArray<A> | null, E> =>
    this.pulling(deliver)
}
