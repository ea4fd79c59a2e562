import { it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as FastCheck from "effect/FastCheck"
import { runSchedule, type Step } from "./capabilityModel.js"
import { Outcome } from "./scriptedJudge.js"

const v: Step = { session: "s1", kind: "user_turn", outcome: Outcome.verdict(0.9, "supported", "SUP-1") }
for (const n of [1, 8]) {
  let t0 = 0
  it.effect.prop(`len ${n}`, { x: FastCheck.constant(0) }, () => {
    if (t0 === 0) t0 = performance.now()
    return runSchedule({ trigger: "every_request", posture: "error", maxRetries: 0 }, Array.from({ length: n }, () => v))
  }, { fastCheck: { numRuns: 200, endOnFailure: true } })
  it(`report ${n}`, () => { console.log(`len ${n}:`, ((performance.now() - t0) / 200).toFixed(2), "ms/sample") })
}
