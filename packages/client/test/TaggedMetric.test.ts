import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as FastCheck from "effect/FastCheck"
import * as Metric from "effect/Metric"
import * as MetricLabel from "effect/MetricLabel"
import * as TaggedMetric from "../src/TaggedMetric.js"

const counter = Metric.counter("tagged_metric_test_total", { incremental: true })
const countOf = (metric: Metric.Metric.Counter<number>) => Effect.map(Metric.value(metric), (state) => state.count)

describe("TaggedMetric", () => {
  it("returns the same handle for the same labels, another for other labels", () => {
    const a = TaggedMetric.tagged(counter, { outcome: "ok", code: "200" })
    assert.strictEqual(TaggedMetric.tagged(counter, { outcome: "ok", code: "200" }), a)
    assert.notStrictEqual(TaggedMetric.tagged(counter, { outcome: "ok", code: "500" }), a)
    assert.notStrictEqual(TaggedMetric.tagged(counter, { code: "200", outcome: "ok" }), a)
  })

  it.effect("updates the series Metric.tagged names", () =>
    Effect.gen(function*() {
      const plain = counter.pipe(Metric.tagged("outcome", "error"), Metric.tagged("code", "503"))
      const before = yield* countOf(plain)
      yield* Metric.update(TaggedMetric.tagged(counter, { outcome: "error", code: "503" }), 2)
      yield* Metric.update(TaggedMetric.tagged(counter, { outcome: "error", code: "503" }), 1)
      assert.strictEqual((yield* countOf(plain)) - before, 3)
      assert.strictEqual(yield* countOf(TaggedMetric.tagged(counter, { outcome: "error", code: "503" })), before + 3)
    }))

  it("over random label sets (names in any order and number, values shared between names), each handle updates the series of its own labels", () => {
    let run = 0
    FastCheck.assert(
      FastCheck.property(
        FastCheck.array(
          FastCheck.tuple(
            FastCheck.uniqueArray(FastCheck.constantFrom("a", "b", "c"), { maxLength: 3 }),
            FastCheck.array(FastCheck.constantFrom("x", "y"), { minLength: 3, maxLength: 3 }),
            FastCheck.integer({ min: 1, max: 5 })
          ),
          { maxLength: 20 }
        ),
        (updates) => {
          const metric = Metric.counter(`tagged_metric_property_${run++}_total`, { incremental: true })
          const model = new Map<string, { readonly pairs: ReadonlyArray<readonly [string, string]>; total: number }>()
          for (const [names, values, n] of updates) {
            const pairs = names.map((name, i) => [name, values[i] ?? "x"] as const)
            TaggedMetric.tagged(metric, Object.fromEntries(pairs)).unsafeUpdate(n, [])
            const key = JSON.stringify(pairs)
            const seen = model.get(key) ?? { pairs, total: 0 }
            seen.total += n
            model.set(key, seen)
          }
          for (const { pairs, total } of model.values()) {
            const plain = Metric.taggedWithLabels(metric, pairs.map(([name, value]) => MetricLabel.make(name, value)))
            assert.strictEqual(Effect.runSync(Metric.value(plain)).count, total, JSON.stringify(pairs))
          }
        }
      )
    )
  })

  it("past maxLabelSets label sets of one metric, handles are made per call and still update their own series", () => {
    const metric = Metric.counter("tagged_metric_overflow_total", { incremental: true })
    for (let i = 0; i < TaggedMetric.maxLabelSets; i++) TaggedMetric.tagged(metric, { id: String(i) })
    const past = { id: "past" }
    const first = TaggedMetric.tagged(metric, past)
    assert.notStrictEqual(TaggedMetric.tagged(metric, past), first, "not cached")
    first.unsafeUpdate(2, [])
    TaggedMetric.tagged(metric, past).unsafeUpdate(3, [])
    TaggedMetric.tagged(metric, { id: "7" }).unsafeUpdate(1, [])
    const value = (id: string) =>
      Effect.runSync(Metric.value(Metric.taggedWithLabels(metric, [MetricLabel.make("id", id)]))).count
    assert.strictEqual(value("past"), 5)
    assert.strictEqual(value("7"), 1)
    assert.strictEqual(
      TaggedMetric.tagged(metric, { id: "7" }),
      TaggedMetric.tagged(metric, { id: "7" }),
      "cached before the cap"
    )
  })
})
