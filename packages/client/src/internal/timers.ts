/**
 * Timers on an Effect `Clock` without a fiber per timer: the deadlines of upstream attempts, the
 * idle watchdogs of streams and the end grace of finished streams.
 *
 * Every timer of one `Clock` goes into one queue ordered by due time, and ONE fiber sleeps on that
 * clock until the earliest due time (`clock.sleep`: a Node timer under the live clock, woken by
 * `TestClock.adjust` under a test clock, so tests run this very code). When it wakes it runs every
 * task that is due, in due-time order (ties in scheduling order), and sleeps again until the next
 * one. Scheduling a timer is a queue insertion; a new sleeping fiber is started only when the new
 * timer is due before the one the fiber sleeps for (rare: a client's timers mostly share one
 * timeout, so each is due after those before it). Cancelling lets go of the timer's task at once
 * (what its closure holds — a request, its body — is not kept alive by the queue until the timer's
 * due time); the cancelled entry itself is dropped when it reaches the head of the queue, or with
 * every other cancelled one when they outnumber the live ones.
 *
 * @internal
 */
import type * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Fiber from "effect/Fiber"
import * as FiberId from "effect/FiberId"

/** A scheduled task; `cancel` keeps it from running (no effect once it ran). */
export interface Timer {
  readonly cancel: () => void
}

interface Entry {
  readonly at: number
  readonly seq: number
  /** Let go of when the timer is cancelled or runs: a cancelled entry waiting in the queue holds nothing. */
  task: (() => void) | undefined
}

const before = (a: Entry, b: Entry): boolean => a.at < b.at || (a.at === b.at && a.seq < b.seq)

/** The timers of one clock. */
class Queue {
  private readonly heap: Array<Entry> = []
  private cancelled = 0
  private seq = 0
  private sleeper: Fiber.RuntimeFiber<void> | undefined = undefined
  private sleeperAt = Number.POSITIVE_INFINITY

  constructor(private readonly clock: Clock.Clock) {}

  schedule(ms: number, task: () => void): Timer {
    const entry: Entry = {
      at: this.clock.unsafeCurrentTimeMillis() + Math.max(0, ms),
      seq: this.seq++,
      task
    }
    this.push(entry)
    if (this.sleeper === undefined || entry.at < this.sleeperAt) this.sleep()
    return {
      cancel: () => {
        if (entry.task === undefined) return
        entry.task = undefined
        this.cancelled++
        if (this.cancelled > 64 && this.cancelled * 2 > this.heap.length) this.compact()
      }
    }
  }

  /** (Re)starts the sleeping fiber for the earliest live timer, or stops it when there is none. */
  private sleep(): void {
    this.dropCancelledHead()
    const head = this.heap[0]
    const previous = this.sleeper
    this.sleeper = undefined
    this.sleeperAt = Number.POSITIVE_INFINITY
    previous?.unsafeInterruptAsFork(FiberId.none)
    if (head === undefined) return
    const fiber = Effect.runFork(
      this.clock.sleep(Duration.millis(Math.max(0, head.at - this.clock.unsafeCurrentTimeMillis())))
    )
    this.sleeper = fiber
    this.sleeperAt = head.at
    fiber.addObserver((exit) => {
      if (this.sleeper !== fiber) return
      this.sleeper = undefined
      this.sleeperAt = Number.POSITIVE_INFINITY
      if (Exit.isSuccess(exit)) this.fire()
    })
  }

  /** Runs every due task, then sleeps until the next one. */
  private fire(): void {
    const now = this.clock.unsafeCurrentTimeMillis()
    for (;;) {
      const head = this.heap[0]
      if (head === undefined || head.at > now) break
      this.pop()
      const task = head.task
      if (task === undefined) {
        this.cancelled--
        continue
      }
      head.task = undefined // ran: a later cancel is a no-op
      task()
    }
    if (this.sleeper === undefined) this.sleep()
  }

  private dropCancelledHead(): void {
    for (let head = this.heap[0]; head !== undefined && head.task === undefined; head = this.heap[0]) {
      this.pop()
      this.cancelled--
    }
  }

  private compact(): void {
    const live = this.heap.filter((entry) => entry.task !== undefined)
    this.heap.length = 0
    this.cancelled = 0
    for (const entry of live) this.push(entry)
  }

  private push(entry: Entry): void {
    const heap = this.heap
    let i = heap.length
    heap.push(entry)
    while (i > 0) {
      const parentIndex = (i - 1) >> 1
      const parent = heap[parentIndex]
      if (parent === undefined || !before(entry, parent)) break
      heap[i] = parent
      i = parentIndex
    }
    heap[i] = entry
  }

  private pop(): void {
    const heap = this.heap
    const last = heap.pop()
    if (last === undefined || heap.length === 0) return
    let i = 0
    for (;;) {
      const leftIndex = 2 * i + 1
      const left = heap[leftIndex]
      const right = heap[leftIndex + 1]
      if (left === undefined) break
      const [childIndex, child] = right !== undefined && before(right, left)
        ? [leftIndex + 1, right]
        : [leftIndex, left]
      if (!before(child, last)) break
      heap[i] = child
      i = childIndex
    }
    heap[i] = last
  }
}

const queues = new WeakMap<Clock.Clock, Queue>()

/** Runs `task` once `ms` have passed on `clock`, unless the returned timer is cancelled first. */
export const schedule = (clock: Clock.Clock, ms: number, task: () => void): Timer => {
  let queue = queues.get(clock)
  if (queue === undefined) {
    queue = new Queue(clock)
    queues.set(clock, queue)
  }
  return queue.schedule(ms, task)
}
