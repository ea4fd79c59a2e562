import { assert, describe, it } from "@effect/vitest"
import { CircuitOpen, toHttp } from "@switchyard-ts/protocol/Errors"
import { SessionId } from "@switchyard-ts/protocol/Ids"
import type { Message } from "@switchyard-ts/protocol/OpenAiChat"
import * as Evidence from "@switchyard-ts/routing/Evidence"
import * as Judge from "@switchyard-ts/routing/Judge"
import * as Metrics from "@switchyard-ts/routing/Metrics"
import * as RoutingFacts from "@switchyard-ts/routing/RoutingFacts"
import * as StageRoute from "@switchyard-ts/routing/StageRoute"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import { postures, routed, triggers, uniqueJudgeModel } from "./capabilityModel.js"
import { target } from "./scriptedJudge.js"
import {
  buildStageRoute,
  conversationOf,
  countingJudge,
  decisionFacts as decide,
  escalationNote,
  runStageSchedule,
  stageDecisions,
  stageOptions,
  stageSchedule,
  verdict
} from "./stageModel.js"

describe.concurrent("StageRoute: failure schedules against the model", () => {
  for (const posture of postures) {
    for (const trigger of triggers) {
      for (const picker of ["efficient_first", "capable_first"] as const) {
        it.effect.prop(
          `${posture} × ${trigger} × ${picker}`,
          { steps: stageSchedule },
          ({ steps }) => runStageSchedule({ posture, trigger, picker }, steps),
          { fastCheck: { numRuns: 40 }, timeout: 120_000 }
        )
      }
    }
  }
})

const textsOf = (messages: ReadonlyArray<Message> | undefined): ReadonlyArray<string> =>
  (messages ?? []).map((message) =>
    message.content === undefined || message.content === null
      ? ""
      : typeof message.content === "string"
      ? message.content
      : message.content.map((part) => (part.type === "text" && "text" in part ? part.text : `[${part.type}]`)).join("|")
  )

describe("StageRoute", () => {
  it.effect("without a classifier an undecided turn goes to the picker's default tier (fall_open), no judge", () =>
    Effect.gen(function*() {
      const judge = yield* countingJudge([])
      for (const picker of ["efficient_first", "capable_first"] as const) {
        const route = yield* buildStageRoute(
          stageOptions(target("judge", "j"), { picker, classifier: Option.none(), handoffNotes: Option.none() }),
          judge.layer
        )
        const decision = yield* RoutingFacts.observe(
          route.decide(routed(conversationOf("quiet_turn"))),
          RoutingFacts.ignored
        )
        assert.strictEqual(decision._tag, "Routed")
        if (decision._tag !== "Routed") return
        const tier = picker === "capable_first" ? "capable" : "efficient"
        assert.strictEqual(decision.selected.name, tier)
        assert.deepStrictEqual(decision.evidence, {
          source: "stage_router",
          stage: {
            decision_source: "fall_open",
            tier,
            score: 0,
            confidence: 0,
            severity: 0,
            spinning: 0,
            exploring: 0,
            production_intensity: 0
          }
        })
        assert.isUndefined(decision.body)
      }
      assert.strictEqual(yield* judge.calls, 0)
    }))

  it.effect("a decisive signal never reaches the judge; its tier's system prompt goes first", () =>
    Effect.gen(function*() {
      const judge = yield* countingJudge([verdict(1)])
      const route = yield* buildStageRoute(
        stageOptions(target("judge", yield* uniqueJudgeModel), {
          capableSystemPrompt: Option.some("CAPABLE-PROMPT"),
          efficientSystemPrompt: Option.some("EFFICIENT-PROMPT"),
          handoffNotes: Option.none()
        }),
        judge.layer
      )
      const critical = yield* RoutingFacts.observe(
        route.decide(routed(conversationOf("critical"))),
        RoutingFacts.ignored
      )
      if (critical._tag !== "Routed") return assert.fail("routed")
      assert.strictEqual(critical.evidence.source, "stage_router")
      assert.strictEqual(critical.selected.name, "capable")
      assert.strictEqual(textsOf(critical.body?.messages)[0], "CAPABLE-PROMPT")
      assert.strictEqual(critical.body?.messages[0]?.role, "system")
      // the caller's own messages follow unchanged
      assert.deepStrictEqual(critical.body?.messages.slice(1), conversationOf("critical"))
      const settled = yield* RoutingFacts.observe(route.decide(routed(conversationOf("settled"))), RoutingFacts.ignored)
      if (settled._tag !== "Routed") return assert.fail("routed")
      assert.strictEqual(settled.selected.name, "efficient")
      assert.strictEqual(textsOf(settled.body?.messages)[0], "EFFICIENT-PROMPT")
      assert.strictEqual(yield* judge.calls, 0)
    }))

  it.effect("the escalation note joins a trailing user message; after a tool result it is a user message of its own", () =>
    Effect.gen(function*() {
      const judge = yield* countingJudge([verdict(0)])
      const route = yield* buildStageRoute(
        stageOptions(target("judge", yield* uniqueJudgeModel), {
          handoffNotes: Option.some({
            escalationNote,
            deescalationNote: Option.none(),
            onlyOnWrongSignalEscalation: false
          })
        }),
        judge.layer
      )
      // ungated: the classifier's capable verdict carries the note too
      const judged = yield* RoutingFacts.observe(
        route.decide(routed(conversationOf("quiet_turn"))),
        RoutingFacts.ignored
      )
      if (judged._tag !== "Routed") return assert.fail("routed")
      assert.strictEqual(judged.selected.name, "capable")
      assert.strictEqual(judged.evidence.source, "llm-classifier")
      const last = judged.body?.messages[judged.body.messages.length - 1]
      assert.strictEqual(last?.role, "user")
      assert.deepStrictEqual(textsOf(judged.body?.messages).at(-1), `fix the build|${escalationNote}`)
      assert.strictEqual(judged.body?.messages.length, conversationOf("quiet_turn").length)

      const critical = yield* RoutingFacts.observe(
        route.decide(routed(conversationOf("critical"))),
        RoutingFacts.ignored
      )
      if (critical._tag !== "Routed") return assert.fail("routed")
      assert.deepStrictEqual(critical.body?.messages.slice(0, -1), conversationOf("critical"))
      assert.deepStrictEqual(critical.body?.messages.at(-1), { role: "user", content: escalationNote })
    }))

  it.effect("gated notes: no escalation note on a classifier-driven capable turn, no de-escalation note when unset", () =>
    Effect.gen(function*() {
      const judge = yield* countingJudge([verdict(0)])
      const route = yield* buildStageRoute(
        stageOptions(target("judge", yield* uniqueJudgeModel), {
          handoffNotes: Option.some({
            escalationNote,
            deescalationNote: Option.none(),
            onlyOnWrongSignalEscalation: true
          })
        }),
        judge.layer
      )
      const judged = yield* RoutingFacts.observe(
        route.decide(routed(conversationOf("quiet_turn"))),
        RoutingFacts.ignored
      )
      if (judged._tag !== "Routed") return assert.fail("routed")
      assert.strictEqual(judged.selected.name, "capable")
      assert.isUndefined(judged.body)
      const settled = yield* RoutingFacts.observe(route.decide(routed(conversationOf("settled"))), RoutingFacts.ignored)
      if (settled._tag !== "Routed") return assert.fail("routed")
      assert.isUndefined(settled.body)
      assert.deepStrictEqual(settled.evidence.source, "stage_router")
    }))

  it.effect("under every_request the classifier's verdict is never pinned to the session", () =>
    Effect.gen(function*() {
      const judge = yield* countingJudge([verdict(0.1), verdict(0.9)])
      const route = yield* buildStageRoute(stageOptions(target("judge", yield* uniqueJudgeModel)), judge.layer)
      const request = routed(conversationOf("quiet_continuation"), Option.some("s1"))
      const first = yield* RoutingFacts.observe(route.decide(request), RoutingFacts.ignored)
      const second = yield* RoutingFacts.observe(route.decide(request), RoutingFacts.ignored)
      assert.deepStrictEqual(
        [first, second].map((d) => d._tag === "Routed" ? d.selected.name : "answered"),
        ["capable", "efficient"]
      )
      assert.strictEqual(yield* judge.calls, 2)
    }))

  it.effect("an open judge breaker: fail_open routes the picker's default (circuit-open, fall_open); error fails 503", () =>
    Effect.gen(function*() {
      const judgeModel = yield* uniqueJudgeModel
      const refused = Effect.fail(new CircuitOpen({ target: judgeModel, client: "judge-client" }))
      const judge = yield* countingJudge([refused])
      const open = yield* buildStageRoute(
        stageOptions(target("judge", judgeModel), { picker: "capable_first" }, { judgeFailure: "fail_open" }),
        judge.layer
      )
      const decision = yield* RoutingFacts.observe(
        open.decide(routed(conversationOf("quiet_turn"))),
        RoutingFacts.ignored
      )
      if (decision._tag !== "Routed") return assert.fail("routed")
      assert.strictEqual(decision.selected.name, "capable")
      assert.strictEqual(decision.evidence.source, "circuit-open")
      assert.strictEqual("stage" in decision.evidence ? decision.evidence.stage?.decision_source : "", "fall_open")

      const strict = yield* buildStageRoute(stageOptions(target("judge", judgeModel)), judge.layer)
      const exit = yield* Effect.exit(
        RoutingFacts.observe(strict.decide(routed(conversationOf("quiet_turn"))), RoutingFacts.ignored)
      )
      assert.isTrue(Exit.isFailure(exit))
      if (Exit.isFailure(exit)) {
        const error = Option.getOrThrow(Cause.failureOption(exit.cause))
        assert.strictEqual(error._tag, "JudgeUnavailable")
        if (error._tag === "JudgeUnavailable") assert.strictEqual(toHttp(error).status, 503)
      }
    }))

  it.effect("requests of one session wait for each other (judge call included)", () =>
    Effect.gen(function*() {
      const gate = yield* Effect.makeLatch(false)
      const calls = yield* Ref.make(0)
      const layer = Judge.layerTest(() =>
        Effect.zipRight(Ref.update(calls, (n) => n + 1), Effect.zipRight(gate.await, verdict(1)))
      )
      const route = yield* buildStageRoute(stageOptions(target("judge", yield* uniqueJudgeModel)), layer)
      const request = { ...routed(conversationOf("quiet_turn")), sessionId: Option.some(SessionId.make("s1")) }
      const first = yield* Effect.fork(RoutingFacts.observe(route.decide(request), RoutingFacts.ignored))
      const second = yield* Effect.fork(RoutingFacts.observe(route.decide(request), RoutingFacts.ignored))
      const other = yield* Effect.fork(
        RoutingFacts.observe(
          route.decide({ ...request, sessionId: Option.some(SessionId.make("s2")) }),
          RoutingFacts.ignored
        )
      )
      while ((yield* Ref.get(calls)) < 2) yield* Effect.yieldNow()
      for (let i = 0; i < 20; i++) yield* Effect.yieldNow()
      // s1's second request waits for the first; s2 is not held up
      assert.strictEqual(yield* Ref.get(calls), 2)
      yield* gate.open
      yield* Fiber.join(first)
      yield* Fiber.join(second)
      yield* Fiber.join(other)
      assert.strictEqual(yield* Ref.get(calls), 3)
    }))

  it.effect("the scorer's histograms are recorded once per turn; the decisions counter names the model id", () =>
    Effect.gen(function*() {
      const judge = yield* countingJudge([])
      const model = `capable-${yield* uniqueJudgeModel}`
      const route = yield* buildStageRoute(
        stageOptions(target("judge", "j"), { capable: target("capable", model), classifier: Option.none() }),
        judge.layer
      )
      const count = (histogram: typeof Metrics.stageRouterSeverity) =>
        Effect.map(Metric.value(histogram), (state) => [state.count, state.sum] as const)
      const before = yield* Effect.all([count(Metrics.stageRouterScore), count(Metrics.stageRouterSeverity)])
      const overrides = yield* stageDecisions("override", model)
      yield* RoutingFacts.observe(route.decide(routed(conversationOf("critical"))), RoutingFacts.ignored)
      const after = yield* Effect.all([count(Metrics.stageRouterScore), count(Metrics.stageRouterSeverity)])
      assert.strictEqual(after[0][0] - before[0][0], 1)
      assert.strictEqual(after[1][0] - before[1][0], 1)
      assert.strictEqual(after[1][1] - before[1][1], 1)
      assert.strictEqual((yield* stageDecisions("override", model)) - overrides, 1)
    }))

  it.effect("a classifier judge sees the conversation through the capability judge's request", () =>
    Effect.gen(function*() {
      const seen = yield* Ref.make<ReadonlyArray<string>>([])
      const layer = Judge.layerTest((consultation) =>
        Effect.zipRight(Ref.set(seen, textsOf(consultation.messages)), verdict(1))
      )
      const route = yield* buildStageRoute(stageOptions(target("judge", yield* uniqueJudgeModel)), layer)
      yield* RoutingFacts.observe(route.decide(routed(conversationOf("quiet_continuation"))), RoutingFacts.ignored)
      assert.include((yield* Ref.get(seen)).join("\n"), "fix the build")
    }))
})

describe("StageRoute: the capable hold and tool_semantics", () => {
  it.effect("after an override the session's next turns stay capable (capable_hold), without the classifier", () =>
    Effect.gen(function*() {
      const judge = yield* countingJudge([verdict(1)])
      const route = yield* buildStageRoute(
        stageOptions(target("judge", yield* uniqueJudgeModel), { capableHoldTurns: 2, handoffNotes: Option.none() }),
        judge.layer
      )
      const turns = [
        yield* decide(route, "s1", "critical"),
        yield* decide(route, "s2", "quiet_turn"),
        yield* decide(route, "s1", "quiet_continuation"),
        yield* decide(route, null, "quiet_turn"),
        yield* decide(route, "s1", "quiet_turn"),
        yield* decide(route, "s1", "quiet_turn")
      ]
      assert.deepStrictEqual(turns, [
        ["capable", "override", "stage_router"],
        ["efficient", "llm-classifier", "llm-classifier"], // another session is not held
        ["capable", "capable_hold", "stage_router"],
        ["efficient", "llm-classifier", "llm-classifier"], // no session id: no hold
        ["capable", "capable_hold", "stage_router"],
        ["efficient", "llm-classifier", "llm-classifier"] // two turns held, then the classifier again
      ])
      assert.strictEqual(yield* judge.calls, 3)
    }))

  it.effect("a clean test pass ends the hold early; 0 turns (the library default) holds nothing", () =>
    Effect.gen(function*() {
      const judge = yield* countingJudge([verdict(1)])
      const held = yield* buildStageRoute(
        stageOptions(target("judge", yield* uniqueJudgeModel), {
          capableHoldTurns: 3,
          classifier: Option.none(),
          handoffNotes: Option.none()
        }),
        judge.layer
      )
      assert.deepStrictEqual(
        [
          yield* decide(held, "s1", "critical"),
          yield* decide(held, "s1", "settled"),
          yield* decide(held, "s1", "quiet_turn")
        ],
        [
          ["capable", "override", "stage_router"],
          ["efficient", "tests_passed", "stage_router"],
          ["efficient", "fall_open", "stage_router"]
        ]
      )
      const none = yield* buildStageRoute(
        stageOptions(target("judge", yield* uniqueJudgeModel), {
          classifier: Option.none(),
          handoffNotes: Option.none()
        }),
        judge.layer
      )
      assert.deepStrictEqual(
        [yield* decide(none, "s1", "critical"), yield* decide(none, "s1", "quiet_turn")],
        [["capable", "override", "stage_router"], ["efficient", "fall_open", "stage_router"]]
      )
      const counted = yield* stageDecisions("capable_hold", "capable-model")
      yield* decide(held, "s9", "critical")
      yield* decide(held, "s9", "quiet_turn")
      assert.strictEqual((yield* stageDecisions("capable_hold", "capable-model")) - counted, 1)
    }))

  it.effect("a held override keeps its reason in the stage facts; tool_semantics feed the signals", () =>
    Effect.gen(function*() {
      const judge = yield* countingJudge([verdict(1)])
      const route = yield* buildStageRoute(
        stageOptions(target("judge", yield* uniqueJudgeModel), {
          capableHoldTurns: 1,
          classifier: Option.none(),
          handoffNotes: Option.none(),
          confidenceThreshold: 0.3,
          toolSemantics: { observe: [], mutate: ["update_inventory"], plan: [], new: [] }
        }),
        judge.layer
      )
      const first = yield* RoutingFacts.observe(
        route.decide(routed(conversationOf("critical"), Option.some("s1"))),
        RoutingFacts.ignored
      )
      const second = yield* RoutingFacts.observe(
        route.decide(routed(conversationOf("critical"), Option.some("s1"))),
        RoutingFacts.ignored
      )
      const stageOf = (decision: typeof first) =>
        decision._tag === "Routed" && "stage" in decision.evidence ? decision.evidence.stage : undefined
      assert.deepInclude(stageOf(first), { decision_source: "override", override_reason: "critical_error" })
      assert.deepInclude(stageOf(second), { decision_source: "capable_hold", override_reason: "critical_error" })
      if (second._tag === "Routed") {
        assert.include(Evidence.spanAttributes(second.evidence), {
          "evidence.stage.decision_source": "capable_hold",
          "evidence.stage.override_reason": "critical_error"
        })
      }
      const mutating: ReadonlyArray<Message> = [
        { role: "user", content: "restock" },
        {
          role: "assistant",
          content: null,
          tool_calls: [{ id: "c1", type: "function", function: { name: "update_inventory", arguments: "{}" } }]
        },
        { role: "tool", tool_call_id: "c1", content: "done" }
      ]
      const produced = yield* RoutingFacts.observe(route.decide(routed(mutating)), RoutingFacts.ignored)
      assert.deepInclude(stageOf(produced), {
        decision_source: "dimensions",
        tier: "efficient",
        production_intensity: 1
      })
    }))
})

describe("StageRoute.noteFor", () => {
  const notes = {
    escalationNote: "E",
    deescalationNote: Option.some("D"),
    onlyOnWrongSignalEscalation: true
  }
  it("gated: the escalation note only on signal-driven capable turns", () => {
    assert.deepStrictEqual(
      StageRoute.noteFor(notes, "capable", "override"),
      Option.some({ kind: "escalation", text: "E" })
    )
    assert.deepStrictEqual(
      StageRoute.noteFor(notes, "capable", "dimensions"),
      Option.some({ kind: "escalation", text: "E" })
    )
    assert.deepStrictEqual(StageRoute.noteFor(notes, "capable", "llm-classifier"), Option.none())
    assert.deepStrictEqual(StageRoute.noteFor(notes, "capable", "fall_open"), Option.none())
  })
  it("ungated: the escalation note on every capable turn", () => {
    const ungated = { ...notes, onlyOnWrongSignalEscalation: false }
    assert.deepStrictEqual(
      StageRoute.noteFor(ungated, "capable", "fall_open"),
      Option.some({ kind: "escalation", text: "E" })
    )
  })
  it("the de-escalation note on signal-driven efficient turns, when configured", () => {
    assert.deepStrictEqual(
      StageRoute.noteFor(notes, "efficient", "tests_passed"),
      Option.some({ kind: "deescalation", text: "D" })
    )
    assert.deepStrictEqual(StageRoute.noteFor(notes, "efficient", "fall_open"), Option.none())
    assert.deepStrictEqual(
      StageRoute.noteFor({ ...notes, deescalationNote: Option.none() }, "efficient", "dimensions"),
      Option.none()
    )
  })
})
