import { assert, describe, it, vi } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as LineBatches from "../src/internal/lineBatches.js"
import * as Server from "../src/Server.js"

/** A schedule run by hand: `fire()` runs the pending tasks, as their timers would. */
const manual = () => {
  const pending = new Map<number, { readonly task: () => void; readonly ms: number }>()
  let next = 0
  const schedule: LineBatches.Schedule = (task, ms) => {
    const id = next++
    pending.set(id, { task, ms })
    return () => pending.delete(id)
  }
  const fire = () => {
    const tasks = [...pending.values()]
    pending.clear()
    for (const { task } of tasks) task()
  }
  return { schedule, pending, fire }
}

describe("LineBatches", () => {
  it("schedules nothing until a line is added, then one timer per batch however many lines", () => {
    const clock = manual()
    const writes: Array<string> = []
    const batches = LineBatches.make((text) => writes.push(text), 20, clock.schedule)
    assert.strictEqual(clock.pending.size, 0)
    batches.add("a")
    batches.add("b")
    batches.add("c")
    assert.deepStrictEqual([...clock.pending.values()].map((p) => p.ms), [20])
    assert.deepStrictEqual(writes, [])
    clock.fire()
    assert.deepStrictEqual(writes, ["a\nb\nc\n"])
    // idle again: no timer until the next line
    assert.strictEqual(clock.pending.size, 0)
    batches.add("d")
    assert.strictEqual(clock.pending.size, 1)
    clock.fire()
    assert.deepStrictEqual(writes, ["a\nb\nc\n", "d\n"])
  })

  it("close writes what is left, cancels the timer, and writes later lines at once", () => {
    const clock = manual()
    const writes: Array<string> = []
    const batches = LineBatches.make((text) => writes.push(text), 20, clock.schedule)
    batches.add("a")
    batches.close()
    assert.deepStrictEqual(writes, ["a\n"])
    assert.strictEqual(clock.pending.size, 0)
    batches.add("after")
    assert.deepStrictEqual(writes, ["a\n", "after\n"])
    assert.strictEqual(clock.pending.size, 0)
  })

  it("the server's logger: logfmt lines written to stdout in one write, by the scope's close at the latest", async () => {
    const writes: Array<string> = []
    const stdout = vi.spyOn(process.stdout, "write").mockImplementation((chunk: string | Uint8Array) => {
      writes.push(String(chunk))
      return true
    })
    try {
      await Effect.runPromise(
        Effect.zipRight(Effect.log("one"), Effect.logWarning("two")).pipe(Effect.provide(Server.batchedLogger))
      )
    } finally {
      stdout.mockRestore()
    }
    assert.strictEqual(writes.length, 1)
    const lines = (writes[0] ?? "").split("\n")
    assert.strictEqual(lines.length, 3)
    assert.match(lines[0] ?? "", /^timestamp=\S+ level=INFO fiber=#\d+ message=one$/)
    assert.match(lines[1] ?? "", /^timestamp=\S+ level=WARN fiber=#\d+ message=two$/)
    assert.strictEqual(lines[2], "")
  })
})
