import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
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
})
