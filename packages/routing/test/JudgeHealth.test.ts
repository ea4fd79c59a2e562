/**
 * The judge health recorder behind `GET /v1/judges`: last success and failure, and the 5-minute
 * window of calls (ranks as in `/v1/stats`: p50 at `floor(n / 2)`, p99 at `min(n - 1, floor(n * 0.99))`).
 */
import { assert, describe, it } from "@effect/vitest"
import * as JudgeHealth from "@switchyard-ts/routing/JudgeHealth"

describe("JudgeHealth", () => {
  it("keeps the last success and failure, and the last 5 minutes' calls with their latency ranks", () => {
    const health = JudgeHealth.make()
    const t0 = 1_000_000
    health.record({ model: "j", outcome: "transport", latencyMs: 5, endedAtMs: t0 })
    for (let i = 1; i <= 100; i++) health.record({ model: "j", outcome: "ok", latencyMs: i, endedAtMs: t0 + 1_000 })
    health.record({ model: "j", outcome: "timeout", latencyMs: 900, endedAtMs: t0 + 2_000 })
    health.record({ model: "j", outcome: "interrupted", latencyMs: 1, endedAtMs: t0 + 3_000 })
    const now = health.health("j", t0 + 3_000)
    assert.strictEqual(now.lastSuccessAtMs, t0 + 1_000)
    assert.deepStrictEqual(now.lastFailure, { atMs: t0 + 2_000, reason: "timeout" })
    assert.deepStrictEqual(now.window, { calls: 102, failures: 2, p50_ms: 51, p99_ms: 100 })
    // five minutes after the first call it has left the window; the others stay until theirs pass
    const later = health.health("j", t0 + JudgeHealth.windowMs)
    assert.deepStrictEqual([later.window.calls, later.window.failures], [101, 1])
    const gone = health.health("j", t0 + 2_000 + JudgeHealth.windowMs)
    assert.deepStrictEqual(gone.window, { calls: 0, failures: 0, p50_ms: null, p99_ms: null })
    assert.deepStrictEqual(gone.lastFailure, { atMs: t0 + 2_000, reason: "timeout" })
  })

  it("a model never called has nothing to show", () => {
    const health = JudgeHealth.make().health("unknown", 0)
    assert.deepStrictEqual(health, {
      lastSuccessAtMs: undefined,
      lastFailure: undefined,
      window: { calls: 0, failures: 0, p50_ms: null, p99_ms: null }
    })
  })
})
