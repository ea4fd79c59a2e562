/**
 * Policy replay of advisor routes: replaying a routing log under the settings that wrote it
 * reproduces every logged outcome (a property over executor turns, advisor replies, sessions,
 * `session_final`, `max_reviews` and `fail_open`, the log written by the real advisor route), and a
 * worked example under another budget and posture.
 */
import { assert, describe, it } from "@effect/vitest"
import * as PolicyReplay from "@switchyard-ts/server/PolicyReplay"
import * as Effect from "effect/Effect"
import * as FastCheck from "effect/FastCheck"
import * as ReplayLog from "./replayLog.js"

import {
  type Advice,
  advisorLogOf,
  advisorReplayer,
  advisorSettingsArbitrary,
  type AdvisorStep,
  advisorStepArbitrary,
  type AdvisorTurn
} from "./replayScenarios.js"

describe("policy replay of advisor routes", () => {
  it.effect.prop(
    "replaying a log under its own settings reproduces every logged outcome",
    { steps: FastCheck.array(advisorStepArbitrary, { maxLength: 14 }), settings: advisorSettingsArbitrary },
    ({ settings, steps }) =>
      Effect.flatMap(
        advisorLogOf(steps, settings),
        (lines) => ReplayLog.assertReproduced(lines, advisorReplayer(settings), steps.length)
      ),
    { fastCheck: { numRuns: 150 } }
  )

  it.effect("every kind of gate outcome occurs in a fixed schedule, and its lines carry the gate's facts", () =>
    Effect.gen(function*() {
      const settings = { failOpen: true, maxReviews: 2 }
      const step = (turn: AdvisorTurn, advice: Advice, final = false): AdvisorStep => ({
        session: "a",
        final,
        turn,
        again: "ok",
        advice
      })
      const lines = yield* advisorLogOf([
        step("working", "approve"), // no trigger
        step("done", "approve"), // review 1
        step("done", "garbage"), // unparseable: refunded, 1 failed consult
        step("done", "transport"), // fail-open: refunded, 2 failed consults
        step("done", "redo"), // review 2
        step("done", "approve", true), // budget spent: skipped before the advisorExecutor; session_final drops the scope
        step("done", "approve") // a fresh scope: review 1 again
      ], settings)
      const responses = lines.flatMap((line) => line.kind === "response" ? [line] : [])
      assert.deepStrictEqual(responses.map((line) => line.advisor), [
        { reviews_before: 0, failed_consults_before: 0, trigger: null, consult: null },
        { reviews_before: 0, failed_consults_before: 0, trigger: "pattern", consult: "approve" },
        { reviews_before: 1, failed_consults_before: 0, trigger: "pattern", consult: "parse_error" },
        { reviews_before: 1, failed_consults_before: 1, trigger: "pattern", consult: "transport" },
        { reviews_before: 1, failed_consults_before: 2, trigger: "pattern", consult: "redo" },
        { reviews_before: 2, failed_consults_before: 2, trigger: null, consult: null },
        { reviews_before: 0, failed_consults_before: 0, trigger: "pattern", consult: "approve" }
      ])
      assert.deepStrictEqual(responses.map((line) => line.posture), Array(7).fill("fail_open"))
      assert.isTrue(yield* ReplayLog.assertReproduced(lines, advisorReplayer(settings), 7))
    }))

  it.effect("worked example: a budget of one review and fail_open = false on the same traffic", () =>
    Effect.gen(function*() {
      const logged = { failOpen: true, maxReviews: 3 }
      const step = (session: "a" | "b", turn: AdvisorTurn, advice: Advice): AdvisorStep => ({
        session,
        final: false,
        turn,
        again: "ok",
        advice
      })
      const lines = yield* advisorLogOf([
        step("a", "done", "redo"), // a: review 1 (REDO)
        step("a", "done", "approve"), // a: review 2; with one review: skipped (budget)
        step("b", "done", "500"), // b: failed consult, released under fail_open; failed under error
        step("b", "done", "approve"), // b: review 1 (the failure was refunded) — the same under both
        step("b", "working", "approve") // b: no trigger; with one review: skipped (budget), released
      ], logged)
      const [report] = yield* PolicyReplay.replay(
        lines,
        new Map([[ReplayLog.routeId, advisorReplayer({ failOpen: false, maxReviews: 1 })]])
      )
      assert.deepStrictEqual(report, {
        route: ReplayLog.routeId,
        kind: "advisor",
        requests: 5,
        other_algorithm: 0,
        logged: {
          routed: { released: 4, redone: 1 },
          failed: 0,
          failed_by_status: {},
          unknown: 0,
          without_verdict: { upstream_5xx: 1 },
          without_verdict_routed: { released: 1 },
          tokens: { released: 400, redone: 100 }
        },
        replayed: {
          routed: { released: 3, redone: 1 },
          failed: 1,
          failed_by_status: { "502": 1 },
          unknown: 0,
          without_verdict: {},
          without_verdict_routed: {},
          tokens: { released: 300, redone: 100 }
        },
        // a's second request (approve → skipped), b's first (fail-open → failed), b's third (no trigger → skipped)
        changed: 3,
        sessions_changed: 2
      })
    }))
})
