/**
 * What each judge-using route does with each consultation outcome, under each posture: the exit
 * (evidence, or the failure and its cause), the warning log line and its annotations, and the
 * metrics (the classifier's fail-open counter; the advisor gate's review and consult-failure
 * counters and its budget). The property tests cover evidence and counters over schedules; this
 * table also pins the log lines, one consultation at a time, against scripted fakes.
 */
import { assert, describe, it } from "@effect/vitest"
import { ofChat, UpstreamClient } from "@switchyard-ts/client/UpstreamClient"
import {
  CircuitOpen,
  type ClientFailure,
  DeadlineExceeded,
  InvalidResponse,
  TranslationError,
  TransportError,
  UpstreamStatus
} from "@switchyard-ts/protocol/Errors"
import type { ChatCompletion } from "@switchyard-ts/protocol/OpenAiChat"
import * as AdvisorRoute from "@switchyard-ts/routing/AdvisorRoute"
import * as Decision from "@switchyard-ts/routing/Decision"
import type * as Evidence from "@switchyard-ts/routing/Evidence"
import * as Judge from "@switchyard-ts/routing/Judge"
import * as Metrics from "@switchyard-ts/routing/Metrics"
import type * as Posture from "@switchyard-ts/routing/Posture"
import * as RoutingFacts from "@switchyard-ts/routing/RoutingFacts"
import { InvalidVerdict, type Verdict } from "@switchyard-ts/routing/Verdict"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as HashMap from "effect/HashMap"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as AdvisorModel from "./advisorModel.js"
import { buildRoute, routed, uniqueJudgeModel } from "./capabilityModel.js"
import { memoryStore, routeServices, unusedJudge } from "./harness.js"
import { routeOptions, target } from "./scriptedJudge.js"

interface LogLine {
  readonly level: string
  readonly message: unknown
  readonly annotations: Readonly<Record<string, unknown>>
}

/** Run `effect` to its exit, with the log lines it wrote. */
const withLogs = <A, E>(effect: Effect.Effect<A, E>) =>
  Effect.suspend(() => {
    const lines: Array<LogLine> = []
    const capture = Logger.make(({ annotations, logLevel, message }) => {
      lines.push({ level: logLevel.label, message, annotations: Object.fromEntries(HashMap.toEntries(annotations)) })
    })
    return Effect.map(
      Effect.exit(effect.pipe(Effect.withTracerEnabled(false), Effect.provide(Logger.add(capture)))),
      (exit) => ({ exit, lines })
    )
  })

const failureOf = <A, E>(exit: Exit.Exit<A, E>): E =>
  Exit.isFailure(exit)
    ? Option.getOrElse(Cause.failureOption(exit.cause), () => assert.fail(`expected a failure, got ${String(exit)}`))
    : assert.fail("expected a failure, got a success")

const successOf = <A, E>(
  exit: Exit.Exit<A, E>
): A => (Exit.isSuccess(exit) ? exit.value : assert.fail(`expected a success, got ${String(exit)}`))

/** An error's own fields (its `_tag` included), to compare errors by value. */
const fields = (error: object): Readonly<Record<string, unknown>> => Object.fromEntries(Object.entries(error))

/** The released answer's text. */
const answerText = (decision: Decision.Decision): Option.Option<string> =>
  Option.flatMapNullable(Decision.answerOf(decision), (answer) => answer.choices[0]?.message.content)

const postures: ReadonlyArray<Posture.Posture> = ["error", "fail_open"]
const reasons = [
  "timeout",
  "transport",
  "upstream_5xx",
  "upstream_non_5xx",
  "invalid_response",
  "parse_error",
  "circuit_open"
] as const

type CallFailure = TransportError | DeadlineExceeded | UpstreamStatus

/** The judge call failures (the `error` posture fails with them) and their reasons. */
const callFailures: ReadonlyArray<readonly [CallFailure, Evidence.Reason]> = [
  [new TransportError({ target: "judge", reason: "connection refused" }), "transport"],
  [new DeadlineExceeded({ target: "judge", afterMs: 3000 }), "timeout"],
  [new UpstreamStatus({ target: "judge", status: 503 }), "upstream_5xx"],
  [new UpstreamStatus({ target: "judge", status: 401 }), "upstream_non_5xx"]
]
const circuitOpen = new CircuitOpen({ target: "judge", client: "judge-client" })

describe("CapabilityRoute × consultation outcome × posture", () => {
  const verdict: Verdict = { crux: "c", primary_rule: "SUP-1", capability_boundary: "supported", p_solve: 0.9 }

  const run = (posture: Posture.Posture, answer: Effect.Effect<Verdict, Judge.JudgeError>) =>
    Effect.gen(function*() {
      const judgeModel = yield* uniqueJudgeModel
      const route = yield* buildRoute(
        routeOptions(target("judge", judgeModel), { judgeFailure: posture }),
        Judge.layerTest(() => answer)
      )
      const { exit, lines } = yield* withLogs(
        RoutingFacts.observe(route.decide(routed([{ role: "user", content: "task" }])), RoutingFacts.ignored)
      )
      const counted = yield* Effect.forEach(
        reasons,
        (reason) =>
          Effect.map(
            Metric.value(
              Metrics.classifierFailOpenTotal.pipe(
                Metric.tagged("judge_model", judgeModel),
                Metric.tagged("reason", reason)
              )
            ),
            (state) => [reason, state.count] as const
          )
      )
      return { judgeModel, exit, lines, counted: counted.filter(([, count]) => count > 0) }
    })

  const warned = (judgeModel: string, reason: Evidence.Reason): ReadonlyArray<LogLine> => [{
    level: "WARN",
    message: ["routing without a judge verdict"],
    // the first failure of a judge and reason is logged at once, standing for itself
    annotations: { route: "auto", judge_model: judgeModel, reason, count: 1 }
  }]

  for (const posture of postures) {
    it.effect(`${posture} × a verdict: llm-classifier, no log, not counted`, () =>
      Effect.gen(function*() {
        const { counted, exit, lines } = yield* run(posture, Effect.succeed(verdict))
        assert.deepStrictEqual(successOf(exit).evidence, {
          source: "llm-classifier",
          score: 0.9,
          threshold: 0.5,
          boundary: "supported"
        })
        assert.deepStrictEqual(lines, [])
        assert.deepStrictEqual(counted, [])
      }))

    for (const [failure, reason] of callFailures) {
      it.effect(`${posture} × ${failure._tag} ${reason}`, () =>
        Effect.gen(function*() {
          const { counted, exit, judgeModel, lines } = yield* run(posture, Effect.fail(failure))
          if (posture === "error") {
            const error = failureOf(exit)
            assert.strictEqual(error._tag, "JudgeUnavailable")
            assert.deepStrictEqual(
              error._tag === "JudgeUnavailable" ? fields(error.failure) : undefined,
              fields(failure)
            )
            assert.deepStrictEqual(lines, [])
            assert.deepStrictEqual(counted, [])
          } else {
            assert.deepStrictEqual(successOf(exit).evidence, { source: "fail-open", reason, judge_model: judgeModel })
            assert.deepStrictEqual(lines, warned(judgeModel, reason))
            assert.deepStrictEqual(counted, [[reason, 1]])
          }
        }))
    }

    for (const reason of ["parse_error", "invalid_response"] as const) {
      it.effect(`${posture} × InvalidVerdict ${reason}: fail-open under both postures`, () =>
        Effect.gen(function*() {
          const { counted, exit, judgeModel, lines } = yield* run(
            posture,
            Effect.fail(new InvalidVerdict({ reason, detail: "x" }))
          )
          assert.deepStrictEqual(successOf(exit).evidence, { source: "fail-open", reason, judge_model: judgeModel })
          assert.deepStrictEqual(lines, warned(judgeModel, reason))
          assert.deepStrictEqual(counted, [[reason, 1]])
        }))
    }

    it.effect(`${posture} × CircuitOpen`, () =>
      Effect.gen(function*() {
        const { counted, exit, judgeModel, lines } = yield* run(posture, Effect.fail(circuitOpen))
        if (posture === "error") {
          const error = failureOf(exit)
          assert.strictEqual(error._tag, "JudgeUnavailable")
          assert.deepStrictEqual(
            error._tag === "JudgeUnavailable" ? fields(error.failure) : undefined,
            fields(circuitOpen)
          )
          assert.deepStrictEqual(lines, [])
          assert.deepStrictEqual(counted, [])
        } else {
          assert.deepStrictEqual(successOf(exit).evidence, { source: "circuit-open", judge_model: judgeModel })
          assert.deepStrictEqual(
            Decision.selected(successOf(exit)).pipe(Option.map((t) => t.name)),
            Option.some("strong")
          )
          assert.deepStrictEqual(lines, warned(judgeModel, "circuit_open"))
          assert.deepStrictEqual(counted, [["circuit_open", 1]])
        }
      }))
  }
})

/** The advisor gate's counters (trigger `no_tool_call`), keyed `approve`, `redo`, `unparseable`, `discarded`, `failure:<reason>`. */
const gateCounters = Effect.gen(function*() {
  const counters: Array<readonly [string, Metric.Metric.Counter<number>]> = [
    ...(["approve", "redo", "unparseable"] as const).map((verdict) =>
      [
        verdict,
        Metrics.advisorGateReviewsTotal.pipe(
          Metric.tagged("verdict", verdict),
          Metric.tagged("trigger", "no_tool_call")
        )
      ] as const
    ),
    ["discarded", Metrics.advisorGateDiscardedTurnsTotal],
    ...reasons.map((reason) =>
      [`failure:${reason}`, Metrics.advisorGateConsultFailuresTotal.pipe(Metric.tagged("reason", reason))] as const
    )
  ]
  return new Map(
    yield* Effect.forEach(
      counters,
      ([key, counter]) => Effect.map(Metric.value(counter), (state) => [key, state.count] as const)
    )
  )
})

/** The counters that moved, and by how much. */
const deltas = (before: ReadonlyMap<string, number>, after: ReadonlyMap<string, number>): Record<string, number> =>
  Object.fromEntries([...after].flatMap(([key, count]) => {
    const moved = count - (before.get(key) ?? 0)
    return moved === 0 ? [] : [[key, moved]]
  }))

describe("AdvisorRoute × consultation outcome × posture", () => {
  const completion = (model: string, content: string): ChatCompletion => ({
    id: `chatcmpl-${model}`,
    object: "chat.completion",
    created: 0,
    model,
    choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: "stop" }]
  })

  /** An advisor route whose executor always ends the work (a review) and whose advisor answers `answer`. */
  const run = (posture: Posture.Posture, answer: Effect.Effect<ChatCompletion, ClientFailure>) =>
    Effect.gen(function*() {
      let executorCalls = 0
      const upstream = Layer.succeed(
        UpstreamClient,
        ofChat({
          complete: ({ target }) =>
            target.id === AdvisorModel.advisor.id
              ? answer
              : Effect.sync(() => completion(target.id, ++executorCalls === 1 ? "All done." : "Revised.")),
          stream: () => Effect.dieMessage("not used"),
          countTokens: () => Effect.dieMessage("not used"),
          responsesAuxiliary: () => Effect.dieMessage("not used"),
          register: () => Effect.void,
          breakers: Effect.succeed([])
        })
      )
      const route = yield* AdvisorRoute.make(AdvisorModel.routeOptions({ failOpen: posture === "fail_open" })).pipe(
        Effect.provide(routeServices(unusedJudge, memoryStore(), upstream)),
        Effect.scoped
      )
      const before = yield* gateCounters
      const { exit, lines } = yield* withLogs(
        RoutingFacts.observe(route.decide(AdvisorModel.routed()), RoutingFacts.ignored)
      )
      const after = yield* gateCounters
      return { exit, lines, before, after, budget: yield* route.budget(Option.none()), executorCalls }
    })

  const released = (reason: Evidence.Reason): ReadonlyArray<LogLine> => [{
    level: "WARN",
    message: ["releasing the executor's turn without the advisor's verdict"],
    annotations: { route: "gate", advisor_model: "advisor-model", reason, trigger: "no_tool_call", count: 1 }
  }]

  /** The failures of an advisor call and the reason each is counted under. */
  const failures: ReadonlyArray<readonly [ClientFailure, Evidence.Reason]> = [
    ...callFailures,
    [new InvalidResponse({ target: "advisor", reason: "not a chat completion" }), "invalid_response"],
    [new TranslationError({ reason: "no such format" }), "invalid_response"],
    [new CircuitOpen({ target: "advisor", client: "advisor-client" }), "circuit_open"]
  ]

  for (const posture of postures) {
    it.effect(`${posture} × APPROVE: released, counted approve, no log`, () =>
      Effect.gen(function*() {
        const { after, before, budget, exit, lines } = yield* run(
          posture,
          Effect.succeed(completion("advisor-model", "APPROVE"))
        )
        const decision = successOf(exit)
        assert.deepStrictEqual(decision.evidence, {
          source: "advisor",
          verdict: "approve",
          trigger: "no_tool_call",
          advisor_model: "advisor-model"
        })
        assert.deepStrictEqual(answerText(decision), Option.some("All done."))
        assert.deepStrictEqual(lines, [])
        assert.deepStrictEqual(deltas(before, after), { approve: 1 })
        assert.deepStrictEqual(budget, { reviews: 1, failedConsults: 0 })
      }))

    it.effect(`${posture} × REDO: answered again, counted redo and discarded, no log`, () =>
      Effect.gen(function*() {
        const { after, before, budget, executorCalls, exit, lines } = yield* run(
          posture,
          Effect.succeed(completion("advisor-model", "REDO: add the test"))
        )
        const decision = successOf(exit)
        assert.deepStrictEqual(decision.evidence, {
          source: "advisor",
          verdict: "redo",
          trigger: "no_tool_call",
          advisor_model: "advisor-model"
        })
        assert.deepStrictEqual(answerText(decision), Option.some("Revised."))
        assert.strictEqual(executorCalls, 2)
        assert.deepStrictEqual(lines, [])
        assert.deepStrictEqual(deltas(before, after), { redo: 1, discarded: 1 })
        assert.deepStrictEqual(budget, { reviews: 1, failedConsults: 0 })
      }))

    it.effect(`${posture} × an unparseable reply: released unparseable under both postures`, () =>
      Effect.gen(function*() {
        const { after, before, budget, exit, lines } = yield* run(
          posture,
          Effect.succeed(completion("advisor-model", "Looks fine."))
        )
        assert.deepStrictEqual(answerText(successOf(exit)), Option.some("All done."))
        assert.deepStrictEqual(successOf(exit).evidence, {
          source: "advisor",
          verdict: "unparseable",
          trigger: "no_tool_call",
          advisor_model: "advisor-model"
        })
        assert.deepStrictEqual(lines, released("parse_error"))
        assert.deepStrictEqual(deltas(before, after), { unparseable: 1 })
        assert.deepStrictEqual(budget, { reviews: 0, failedConsults: 1 })
      }))

    for (const [failure, reason] of failures) {
      const fails = posture === "error" && reason !== "invalid_response"
      it.effect(`${posture} × ${failure._tag} ${reason}: ${fails ? "AdvisorUnavailable" : "released"}`, () =>
        Effect.gen(function*() {
          const { after, before, budget, exit, lines } = yield* run(posture, Effect.fail(failure))
          if (fails) {
            const error = failureOf(exit)
            assert.strictEqual(error._tag, "AdvisorUnavailable")
            assert.deepStrictEqual(
              error._tag === "AdvisorUnavailable" ? fields(error.failure) : undefined,
              fields(failure)
            )
            assert.deepStrictEqual(lines, [])
          } else {
            assert.deepStrictEqual(answerText(successOf(exit)), Option.some("All done."))
            assert.deepStrictEqual(successOf(exit).evidence, {
              source: "advisor",
              reason,
              trigger: "no_tool_call",
              advisor_model: "advisor-model"
            })
            assert.deepStrictEqual(lines, released(reason))
          }
          // A failed consult is counted and refunds its review under both postures.
          assert.deepStrictEqual(deltas(before, after), { [`failure:${reason}`]: 1 })
          assert.deepStrictEqual(budget, { reviews: 0, failedConsults: 1 })
        }))
    }
  }
})
