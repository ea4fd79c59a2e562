/**
 * Differential replay: for random settings S1 and S2 of a route type, and judges and upstreams whose
 * answers are a function of the request, replaying the log written under S1 with S2 gives what live
 * routing under S2 gives. Per request:
 *
 * - a replayed outcome other than unknown is the outcome the log of the live run under S2 records
 *   for that request, as long as no earlier request of its scope (its session; the advisor's
 *   instance-wide scope for requests without one) was unknown — an unknown request leaves its
 *   scope's replayed state behind the live one;
 * - for the classifier routes, a request is unknown only when the log under S1 holds no judge fact
 *   for it (the replay needed a verdict the logged run never asked for).
 *
 * The replay runs each route type's own program on the replay host, so this checks the host: that
 * it answers every question from the log as the live run under S2 would have been answered, and
 * gives up only where the log is silent.
 */
import { assert, describe, it } from "@effect/vitest"
import * as ReplayHost from "@switchyard-ts/routing/ReplayHost"
import * as RoutingRecord from "@switchyard-ts/routing/RoutingRecord"
import type * as PolicyReplay from "@switchyard-ts/server/PolicyReplay"
import type * as RoutingLog from "@switchyard-ts/server/RoutingLog"
import * as Effect from "effect/Effect"
import * as FastCheck from "effect/FastCheck"
import * as Option from "effect/Option"
import * as ReplayLog from "./replayLog.js"
import * as Scenarios from "./replayScenarios.js"

const runs = { fastCheck: { numRuns: 60 }, timeout: 120_000 }

/** One route type's scenario: its steps, the settings a replay changes, its log, its replayer. */
interface Scenario<Step, Settings> {
  readonly steps: FastCheck.Arbitrary<Step>
  readonly settings: FastCheck.Arbitrary<Settings>
  readonly logOf: (steps: ReadonlyArray<Step>, settings: Settings) => Effect.Effect<ReadonlyArray<RoutingLog.Line>>
  readonly replayer: (settings: Settings) => PolicyReplay.Replayer
  /** A request's scope: its session, else `index` (its own) or a shared one. */
  readonly scopeOf: (line: RoutingLog.ResponseLine, index: number) => string
  /**
   * Whether the log may leave this request unknown (none: any request may be unknown, the route's
   * turns being read off more than the judge, e.g. an escalation's phases).
   */
  readonly unknownAllowed?: (line: RoutingLog.ResponseLine) => boolean
}

const ownScope = (line: RoutingLog.ResponseLine, index: number) => line.session_id ?? `#${index}`

/** Whether the log holds a judge fact of the line: an answer (a verdict, or an abstention) or a failure. */
const judged = (line: RoutingLog.ResponseLine): boolean =>
  (line.evidence !== null && (line.evidence.source === "llm-classifier" || line.evidence.source === "abstained")) ||
  RoutingRecord.judgeFact(line, () => undefined)._tag === "Failed"

interface CapabilityStep {
  readonly session: "a" | "b" | null
  readonly userTurn: boolean
  readonly judge: ReplayLog.CapabilityJudge
}

const capability: Scenario<CapabilityStep, ReplayLog.CapabilitySettings> = {
  steps: FastCheck.record({
    session: FastCheck.constantFrom("a" as const, "b" as const, null),
    userTurn: FastCheck.boolean(),
    judge: ReplayLog.capabilityJudgeArbitrary
  }),
  settings: ReplayLog.capabilitySettingsArbitrary,
  logOf: (steps, settings) =>
    ReplayLog.logOf(
      ReplayLog.capabilityRoute(settings),
      steps,
      (step) => ({ session: step.session, messages: Scenarios.turnOf(step.userTurn) }),
      (step) => ReplayLog.capabilityJudgeReply(step.judge)
    ),
  replayer: ReplayLog.capabilityReplayer,
  scopeOf: ownScope,
  unknownAllowed: (line) => !judged(line)
}

const custom: Scenario<Scenarios.CustomStep, Scenarios.CustomLogged> = {
  steps: Scenarios.customStepArbitrary,
  settings: Scenarios.customSettingsArbitrary,
  logOf: Scenarios.customLogOf,
  replayer: (settings) => Scenarios.customReplayer(settings),
  scopeOf: ownScope,
  unknownAllowed: (line) => !judged(line)
}

const stage: Scenario<Scenarios.StageStep, Scenarios.StageSettings> = {
  steps: Scenarios.stageStepArbitrary,
  settings: Scenarios.stageSettingsArbitrary.chain((settings) =>
    FastCheck.constantFrom(0, 1, 2).map((capableHoldTurns) => ({ ...settings, capableHoldTurns }))
  ),
  logOf: Scenarios.stageLogOf,
  replayer: Scenarios.stageReplayer,
  scopeOf: ownScope,
  unknownAllowed: (line) => !judged(line) || RoutingRecord.stageFactsOf(line) === undefined
}

const composite: Scenario<Scenarios.StageStep, Scenarios.CompositeSettings> = {
  steps: Scenarios.stageStepArbitrary,
  settings: Scenarios.compositeSettingsArbitrary,
  logOf: Scenarios.compositeLogOf,
  replayer: Scenarios.compositeReplayer,
  scopeOf: ownScope,
  // A request its classifier failed under `error` has no stage facts: its turn cannot be replayed.
  unknownAllowed: (line) => !judged(line) || RoutingRecord.stageFactsOf(line) === undefined
}

const escalation: Scenario<Scenarios.EscalationStep, Scenarios.EscalationSettings> = {
  steps: FastCheck.oneof(Scenarios.escalationStepArbitrary, Scenarios.deescalationStepArbitrary),
  settings: FastCheck.oneof(Scenarios.escalationSettingsArbitrary, Scenarios.deescalationSettingsArbitrary),
  logOf: Scenarios.escalationLogOf,
  replayer: Scenarios.escalationReplayer,
  scopeOf: ownScope
}

const advisor: Scenario<Scenarios.AdvisorStep, Scenarios.AdvisorSettings> = {
  steps: Scenarios.advisorStepArbitrary,
  settings: Scenarios.advisorSettingsArbitrary,
  logOf: Scenarios.advisorLogOf,
  replayer: Scenarios.advisorReplayer,
  scopeOf: (line) => line.session_id ?? "instance"
}

/** The outcome of each response line of `lines` when replayed with `replayer`, in order. */
const replayed = (lines: ReadonlyArray<RoutingLog.Line>, replayer: PolicyReplay.Replayer) =>
  Effect.suspend(() => {
    const step = replayer.start()
    const late = ReplayHost.lateVerdicts()
    return Effect.map(
      Effect.forEach(lines, (line) => {
        if (line.kind === "response") return Effect.asSome(step(line, late))
        late.add(line)
        return Effect.succeedNone
      }),
      (outcomes) => outcomes.flatMap(Option.toArray)
    )
  })

const responses = (lines: ReadonlyArray<RoutingLog.Line>) =>
  lines.filter((line): line is RoutingLog.ResponseLine => line.kind === "response")

/**
 * Check the differential property for one schedule: the log under `s1` replayed with `s2` against
 * the log of the live run under `s2`. True when it holds (assertions say where it does not).
 */
const holds = <Step, Settings>(
  scenario: Scenario<Step, Settings>,
  steps: ReadonlyArray<Step>,
  s1: Settings,
  s2: Settings
) =>
  Effect.gen(function*() {
    const written = yield* scenario.logOf(steps, s1)
    const live = responses(yield* scenario.logOf(steps, s2))
    const outcomes = yield* replayed(written, scenario.replayer(s2))
    const logged = responses(written)
    const expected = live.map(scenario.replayer(s2).logged)
    assert.strictEqual(outcomes.length, expected.length)
    const behind = new Set<string>()
    outcomes.forEach((outcome, i) => {
      const line = logged[i]
      if (line === undefined) return
      const scope = scenario.scopeOf(line, i)
      if (outcome._tag === "Unknown") {
        if (scenario.unknownAllowed !== undefined) {
          assert.isTrue(scenario.unknownAllowed(line), `request ${i} is unknown, yet the log holds what it needs`)
        }
        behind.add(scope)
        return
      }
      if (behind.has(scope)) return
      assert.deepStrictEqual(outcome, expected[i], `request ${i} (scope ${scope})`)
    })
    return true
  })

const property = <Step, Settings>(name: string, scenario: Scenario<Step, Settings>) =>
  it.effect.prop(
    `${name}: a log under S1 replayed with S2 gives live routing under S2`,
    {
      steps: FastCheck.array(scenario.steps, { minLength: 1, maxLength: 10 }),
      s1: scenario.settings,
      s2: scenario.settings
    },
    ({ s1, s2, steps }) => holds(scenario, steps, s1, s2),
    runs
  )

describe("differential policy replay", () => {
  property("capability", capability)
  property("custom", custom)
  property("stage router", stage)
  property("composite", composite)
  property("escalation", escalation)
  property("advisor", advisor)
})
