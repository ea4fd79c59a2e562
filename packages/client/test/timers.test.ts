/**
 * The timer queue behind attempt deadlines, stream watchdogs and end graces: one sleeping fiber per
 * clock, tasks run at their due time in due-time order, cancelled tasks never run. Checked under
 * the TestClock (the queue sleeps on whatever clock it is given) and against a reference model.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as FastCheck from "effect/FastCheck"
import * as TestClock from "effect/TestClock"
import * as v8 from "node:v8"
import * as vm from "node:vm"
import * as Timers from "../src/internal/timers.js"

// A full collection on demand, for the test that the queue lets go of cancelled tasks.
v8.setFlagsFromString("--expose-gc")
const gc = vm.runInNewContext("gc") as () => void

describe("Timers", () => {
  it.effect("runs each task at its due time, in due-time order, ties in scheduling order", () =>
    Effect.gen(function*() {
      const clock = yield* Effect.clock
      const ran: Array<string> = []
      Timers.schedule(clock, 300, () => ran.push("c"))
      Timers.schedule(clock, 100, () => ran.push("a"))
      Timers.schedule(clock, 300, () => ran.push("d"))
      Timers.schedule(clock, 200, () => ran.push("b"))
      yield* TestClock.adjust(99)
      assert.deepStrictEqual(ran, [])
      yield* TestClock.adjust(1)
      assert.deepStrictEqual(ran, ["a"])
      yield* TestClock.adjust(100)
      assert.deepStrictEqual(ran, ["a", "b"])
      yield* TestClock.adjust(100)
      assert.deepStrictEqual(ran, ["a", "b", "c", "d"])
    }))

  it.effect("a cancelled task never runs; cancelling after it ran changes nothing", () =>
    Effect.gen(function*() {
      const clock = yield* Effect.clock
      const ran: Array<string> = []
      const first = Timers.schedule(clock, 100, () => ran.push("first"))
      const second = Timers.schedule(clock, 100, () => ran.push("second"))
      first.cancel()
      yield* TestClock.adjust(100)
      assert.deepStrictEqual(ran, ["second"])
      second.cancel()
      yield* TestClock.adjust(1000)
      assert.deepStrictEqual(ran, ["second"])
    }))

  it.effect("a cancelled task is let go of at once, not held by the queue until its due time", () =>
    Effect.gen(function*() {
      const clock = yield* Effect.clock
      // what a deadline's task closes over: the request and its body
      const held = (): { readonly cancel: () => void; readonly body: WeakRef<object> } => {
        const body = { messages: Array.from({ length: 1000 }, (_, i) => ({ role: "user", content: `m${i}` })) }
        const timer = Timers.schedule(clock, 60_000, () => void body.messages.length)
        return { cancel: timer.cancel, body: new WeakRef(body) }
      }
      const cancelled = held()
      const live = held()
      cancelled.cancel()
      // a WeakRef keeps its target for the rest of the job that made it: collect in a later one
      yield* Effect.promise(() => new Promise<void>((resolve) => setImmediate(resolve)))
      gc()
      assert.isUndefined(cancelled.body.deref())
      assert.isDefined(live.body.deref())
      live.cancel()
    }))

  it.effect("a task due before the one being slept for wakes the queue earlier; tasks scheduled by tasks run", () =>
    Effect.gen(function*() {
      const clock = yield* Effect.clock
      const ran: Array<number> = []
      Timers.schedule(clock, 1000, () => ran.push(1000))
      yield* TestClock.adjust(10)
      Timers.schedule(clock, 40, () => {
        ran.push(50)
        Timers.schedule(clock, 25, () => ran.push(75))
      })
      yield* TestClock.adjust(40)
      assert.deepStrictEqual(ran, [50])
      yield* TestClock.adjust(25)
      assert.deepStrictEqual(ran, [50, 75])
      yield* TestClock.adjust(925)
      assert.deepStrictEqual(ran, [50, 75, 1000])
    }))

  it.effect("matches a reference model over random schedules, cancellations and clock steps", () =>
    Effect.gen(function*() {
      const clock = yield* Effect.clock
      const ops = FastCheck.array(
        FastCheck.oneof(
          FastCheck.record({
            kind: FastCheck.constant("schedule" as const),
            ms: FastCheck.integer({ min: 0, max: 500 })
          }),
          FastCheck.record({ kind: FastCheck.constant("cancel" as const), index: FastCheck.nat(200) }),
          FastCheck.record({
            kind: FastCheck.constant("advance" as const),
            ms: FastCheck.integer({ min: 0, max: 300 })
          })
        ),
        { maxLength: 200 }
      )
      for (const run of FastCheck.sample(ops, { numRuns: 40, seed: 17 })) {
        const start = clock.unsafeCurrentTimeMillis()
        const ran: Array<number> = []
        const expected: Array<{ id: number; at: number; cancelled: boolean; ran: boolean }> = []
        const timers: Array<Timers.Timer> = []
        for (const op of run) {
          if (op.kind === "schedule") {
            const id = expected.length
            expected.push({ id, at: clock.unsafeCurrentTimeMillis() + op.ms, cancelled: false, ran: false })
            timers.push(Timers.schedule(clock, op.ms, () => ran.push(id)))
          } else if (op.kind === "cancel") {
            const target = expected[op.index % Math.max(1, expected.length)]
            if (target !== undefined) {
              timers[target.id]?.cancel()
              if (!target.ran) target.cancelled = true
            }
          } else {
            yield* TestClock.adjust(op.ms)
            const now = clock.unsafeCurrentTimeMillis()
            for (const e of expected) if (!e.cancelled && !e.ran && e.at <= now) e.ran = true
            const due = expected.filter((e) => e.ran).sort((a, b) => a.at - b.at || a.id - b.id).map((e) => e.id)
            // exactly the due, uncancelled tasks ran, in due-time order (ties in scheduling order)
            assert.deepStrictEqual(ran, due)
          }
        }
        // drain what is left before the next run
        yield* TestClock.adjust(1000)
        for (const timer of timers) timer.cancel()
        assert.isAtLeast(clock.unsafeCurrentTimeMillis(), start)
      }
    }))
})
