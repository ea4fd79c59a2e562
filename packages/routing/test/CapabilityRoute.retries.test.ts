/**
 * The Posture-table failure-schedule properties with a retrying judge client (`max_retries = 2`): the
 * script answers the same outcome on every attempt, so retryable failures (transport, 5xx) are
 * tried three times inside the 3 s deadline and then fold exactly like a single failure. Kept in
 * its own file so vitest runs it in parallel with `CapabilityRoute.test.ts`.
 */
import { describe, it } from "@effect/vitest"
import { postures, runSchedule, schedule, triggers } from "./capabilityModel.js"

describe.concurrent("CapabilityRoute: failure schedules with a retrying judge client", () => {
  for (const trigger of triggers) {
    for (const posture of postures) {
      it.effect.prop(
        `${trigger} × ${posture} × maxRetries 2`,
        { steps: schedule },
        ({ steps }) => runSchedule({ trigger, posture, maxRetries: 2 }, steps),
        { fastCheck: { numRuns: 100 }, timeout: 120_000 }
      )
    }
  }
})
