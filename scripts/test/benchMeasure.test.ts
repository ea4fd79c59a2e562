import { assert, describe, it } from "@effect/vitest"
import { type LoadOptions, median, pairedRows, roundsNote, rowOf, type Run } from "../src/bench/measure.js"
import { healthByPhase } from "../src/bench/rows/manyStreams.js"

const run = (latencies: ReadonlyArray<number>, extra: Partial<Run> = {}): Run => ({
  latencies,
  non2xx: 0,
  errors: 0,
  durationS: 1,
  cpuS: 0.01,
  ...extra
})

describe("bench measure", () => {
  it("median: the middle value, the mean of the two middle ones, NaN for none", () => {
    assert.strictEqual(median([3, 1, 2]), 2)
    assert.strictEqual(median([4, 1, 3, 2]), 2.5)
    assert.strictEqual(median([-1]), -1)
    assert.isNaN(median([]))
  })

  it("a row of several runs: their samples, time, failures and CPU together", () => {
    const row = rowOf("r", { connections: 1, pid: 7 }, [
      run([1, 2, 3], { durationS: 1, cpuS: 0.003, non2xx: 1, errors: 2 }),
      run([5], { durationS: 0.5, cpuS: 0.002 })
    ])
    assert.strictEqual(row.count, 4)
    assert.strictEqual(row.mean, 11 / 4)
    assert.strictEqual(row.durationS, 1.5)
    assert.strictEqual(row.rps, 4 / 1.5)
    assert.strictEqual(row.non2xx, 1)
    assert.strictEqual(row.errors, 2)
    // 5 ms of CPU over 5 responses (a non-2xx one included)
    assert.closeTo(row.cpuUsPerReq, 1000, 1e-9)
    assert.strictEqual(row.pid, 7)
  })

  it("a row of request pairs counts each pair once, as the sum of its two latencies", () => {
    const row = rowOf("pairs", { connections: 1, pairs: true }, [run([1, 10, 2, 20, 3])])
    assert.strictEqual(row.count, 2)
    assert.strictEqual(row.mean, (11 + 22) / 2)
  })

  it("paired rows: warmed up, then measured A B, B A, A B; B's added is the median of the rounds", async () => {
    const a: LoadOptions = { url: "http://a", connections: 1, pid: 1 }
    const b: LoadOptions = { url: "http://b", connections: 1, pid: 1 }
    const calls: Array<{ readonly side: string; readonly durationS: number; readonly pid: number | undefined }> = []
    // each side's latency per measured run, in the order it is run: B − A per round is 1, 6, 2
    const script = { a: [10, 10, 30], b: [11, 16, 32] }
    const measured = { a: 0, b: 0 }
    const runner = (options: LoadOptions, durationS: number): Promise<Run> => {
      const side = options.url === "http://a" ? "a" : "b"
      calls.push({ side, durationS, pid: options.pid })
      if (options.pid === undefined) return Promise.resolve(run([999]))
      const latency = script[side][measured[side]++] ?? NaN
      return Promise.resolve(run([latency, latency]))
    }
    const paired = await pairedRows(
      { name: "A", options: a },
      { name: "B", options: b },
      { warmS: 2, rowS: 3 },
      "A",
      3,
      runner
    )
    assert.deepStrictEqual(calls.map((c) => c.side), ["a", "b", "a", "b", "b", "a", "a", "b"])
    assert.deepStrictEqual(calls.slice(0, 2).map((c) => [c.durationS, c.pid]), [[2, undefined], [2, undefined]])
    assert.deepStrictEqual(calls.slice(2).map((c) => c.durationS), [1, 1, 1, 1, 1, 1])
    assert.deepStrictEqual(paired.b.addedRounds, [1, 6, 2])
    assert.strictEqual(paired.b.added, 2)
    assert.strictEqual(paired.b.addedVs, "A")
    assert.strictEqual(paired.a.added, undefined)
    // the rows merge their three measured runs (the warm-ups are not in them)
    assert.strictEqual(paired.a.count, 6)
    assert.strictEqual(paired.a.mean, 50 / 3)
    assert.strictEqual(paired.b.mean, 59 / 3)
    assert.strictEqual(roundsNote(paired.b), "median of 3 alternating rounds: +1.00, +6.00, +2.00")
    assert.strictEqual(roundsNote(paired.a), "")
  })

  it("/health samples split by when they were sent: opening, steady (from its start), closing (from its end)", () => {
    const phases = healthByPhase([5, 40, 7, 8, 30, 2], [0, 9, 10, 15, 20, 25], 10, 20)
    assert.deepStrictEqual([phases.opening.n, phases.opening.max], [2, 40])
    assert.deepStrictEqual([phases.steady.n, phases.steady.max], [2, 8])
    assert.deepStrictEqual([phases.closing.n, phases.closing.max], [2, 30])
    // no steady part (the streams never were all open at once): every sample is the opening's
    const none = healthByPhase([1, 2], [0, 100], undefined, undefined)
    assert.deepStrictEqual([none.opening.n, none.steady.n, none.closing.n], [2, 0, 0])
  })
})
