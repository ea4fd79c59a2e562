/**
 * Policy replay of advisor routes: replaying a routing log under the settings that wrote it
 * reproduces every logged outcome (a property over executor turns, advisor replies, sessions,
 * `session_final`, `max_reviews` and `fail_open`, the log written by the real advisor route), and a
 * worked example under another budget and posture.
 */
import { assert, describe, it } from "@effect/vitest"
import * as AdvisorRoute from "@switchyard-ts/routing/AdvisorRoute"
import * as PolicyReplay from "@switchyard-ts/server/PolicyReplay"
import * as Effect from "effect/Effect"
import * as FastCheck from "effect/FastCheck"
import * as Option from "effect/Option"
import * as ReplayLog from "./replayLog.js"

const executor = ReplayLog.target("exec", "exec-model")
const advisorTarget = ReplayLog.target("advisor", "advisor-model")

/** What the executor does: a turn that ends the work (`done`: triggers the gate), one that does not, a failure. */
type Turn = "done" | "working" | "fail"
/** What the advisor answers. */
type Advice = "approve" | "redo" | "garbage" | "invalid" | "transport" | "500" | "refused"

interface Step {
  readonly session: "a" | "b" | null
  readonly final: boolean
  readonly turn: Turn
  /** The executor's second answer after a REDO. */
  readonly again: "ok" | "fail"
  readonly advice: Advice
}

const stepArbitrary: FastCheck.Arbitrary<Step> = FastCheck.record({
  session: FastCheck.constantFrom("a" as const, "b" as const, null),
  final: FastCheck.constantFrom(false, false, true),
  turn: FastCheck.constantFrom("done" as const, "done" as const, "working" as const, "fail" as const),
  again: FastCheck.constantFrom("ok" as const, "ok" as const, "fail" as const),
  advice: FastCheck.constantFrom(
    "approve" as const,
    "redo" as const,
    "garbage" as const,
    "invalid" as const,
    "transport" as const,
    "500" as const,
    "refused" as const
  )
})

const settingsArbitrary: FastCheck.Arbitrary<PolicyReplay.AdvisorSettings> = FastCheck.record({
  failOpen: FastCheck.boolean(),
  maxReviews: FastCheck.constantFrom(1, 2, 3)
})

const build = (settings: PolicyReplay.AdvisorSettings) =>
  AdvisorRoute.make({
    id: ReplayLog.routeId,
    name: ReplayLog.routeId,
    executor,
    advisor: advisorTarget,
    reviewerSystemPrompt: Option.none(),
    advisorMaxTokens: 64,
    advisorTemperature: Option.none(),
    transcriptMaxChars: 2_000,
    gateTrigger: "pattern",
    gateTriggerPattern: Option.some(/DONE/),
    gateStallTurns: 0,
    gateMinToolResults: 0,
    redoFeedbackPrefix: Option.none(),
    ...settings
  })

const adviceReply = (advice: Advice): ReplayLog.Reply => {
  switch (advice) {
    case "approve":
      return { _tag: "text", text: "APPROVE" }
    case "redo":
      return { _tag: "text", text: "REDO: add a test first" }
    case "garbage":
      return { _tag: "text", text: "hmm, not sure" }
    case "invalid":
      return { _tag: "invalid" }
    case "transport":
      return { _tag: "transport" }
    case "500":
      return { _tag: "status", status: 500 }
    case "refused":
      return { _tag: "refused" }
  }
}

/** The log of `steps` through the real advisor route under `settings`. */
const logOf = (steps: ReadonlyArray<Step>, settings: PolicyReplay.AdvisorSettings) => {
  // The executor's first call of a step answers `turn`, a second (after a REDO) answers `again`.
  let executorCalls = 0
  let current: Step | undefined
  return ReplayLog.logOf(
    build(settings),
    steps,
    (step) => {
      current = step
      executorCalls = 0
      return {
        session: step.session,
        final: step.final,
        messages: [{ role: "user", content: "fix the pager" }],
        tokens: 100
      }
    },
    (step, called): ReplayLog.Reply => {
      if (called !== executor.id) return adviceReply(step.advice)
      executorCalls += current === step ? 1 : 0
      if (executorCalls > 1) {
        return step.again === "ok"
          ? { _tag: "text", text: "DONE, with a test" }
          : { _tag: "transport" }
      }
      return step.turn === "fail"
        ? { _tag: "status", status: 500 }
        : { _tag: "text", text: step.turn === "done" ? "DONE: fixed" : "still working" }
    }
  )
}

describe("policy replay of advisor routes", () => {
  it.effect.prop(
    "replaying a log under its own settings reproduces every logged outcome",
    { steps: FastCheck.array(stepArbitrary, { maxLength: 14 }), settings: settingsArbitrary },
    ({ settings, steps }) =>
      Effect.flatMap(
        logOf(steps, settings),
        (lines) => ReplayLog.assertReproduced(lines, PolicyReplay.advisor(settings), steps.length)
      ),
    { fastCheck: { numRuns: 150 } }
  )

  it.effect("every kind of gate outcome occurs in a fixed schedule, and its lines carry the gate's facts", () =>
    Effect.gen(function*() {
      const settings = { failOpen: true, maxReviews: 2 }
      const step = (turn: Turn, advice: Advice, final = false): Step => ({
        session: "a",
        final,
        turn,
        again: "ok",
        advice
      })
      const lines = yield* logOf([
        step("working", "approve"), // no trigger
        step("done", "approve"), // review 1
        step("done", "garbage"), // unparseable: refunded, 1 failed consult
        step("done", "transport"), // fail-open: refunded, 2 failed consults
        step("done", "redo"), // review 2
        step("done", "approve", true), // budget spent: skipped before the executor; session_final drops the scope
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
      assert.isTrue(yield* ReplayLog.assertReproduced(lines, PolicyReplay.advisor(settings), 7))
    }))

  it.effect("worked example: a budget of one review and fail_open = false on the same traffic", () =>
    Effect.gen(function*() {
      const logged = { failOpen: true, maxReviews: 3 }
      const step = (session: "a" | "b", turn: Turn, advice: Advice): Step => ({
        session,
        final: false,
        turn,
        again: "ok",
        advice
      })
      const lines = yield* logOf([
        step("a", "done", "redo"), // a: review 1 (REDO)
        step("a", "done", "approve"), // a: review 2; with one review: skipped (budget)
        step("b", "done", "500"), // b: failed consult, released under fail_open; failed under error
        step("b", "done", "approve"), // b: review 1 (the failure was refunded) — the same under both
        step("b", "working", "approve") // b: no trigger; with one review: skipped (budget), released
      ], logged)
      const [report] = yield* PolicyReplay.replay(
        lines,
        new Map([[ReplayLog.routeId, PolicyReplay.advisor({ failOpen: false, maxReviews: 1 })]])
      )
      assert.deepStrictEqual(report, {
        route: ReplayLog.routeId,
        kind: "advisor",
        requests: 5,
        other_algorithm: 0,
        logged: {
          routed: { released: 4, redone: 1 },
          failed: 0,
          unknown: 0,
          without_verdict: { upstream_5xx: 1 },
          tokens: { released: 400, redone: 100 }
        },
        replayed: {
          routed: { released: 3, redone: 1 },
          failed: 1,
          unknown: 0,
          without_verdict: {},
          tokens: { released: 300, redone: 100 }
        },
        // a's second request (approve → skipped), b's first (fail-open → failed), b's third (no trigger → skipped)
        changed: 3,
        sessions_changed: 2
      })
    }))
})
