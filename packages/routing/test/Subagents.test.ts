import { assert, describe, it } from "@effect/vitest"
import * as Decision from "@switchyard-ts/routing/Decision"
import * as Judge from "@switchyard-ts/routing/Judge"
import * as Passthrough from "@switchyard-ts/routing/Passthrough"
import type { Route } from "@switchyard-ts/routing/Route"
import * as RoutingFacts from "@switchyard-ts/routing/RoutingFacts"
import * as Subagents from "@switchyard-ts/routing/Subagents"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import { pipe } from "effect/Function"
import type * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import { conversation, routed, uniqueJudgeModel } from "./capabilityModel.js"
import {
  buildCustomRoute,
  customOptions,
  decideCustom,
  makeCustomJudge,
  parentTarget,
  runCustomSchedule,
  subagentSchedule
} from "./customModel.js"
import { target } from "./scriptedJudge.js"
import { buildStageRoute, conversationOf, escalationNote, stageDecisions, stageOptions } from "./stageModel.js"

describe.concurrent("Subagents.delegate over a custom classifier: failure schedules against the model", () => {
  for (const trigger of ["every_request", "new_session"] as const) {
    for (const posture of ["error", "fail_open"] as const) {
      for (const maxRetries of [0, 2]) {
        it.effect.prop(
          `${trigger} × ${posture} × maxRetries ${maxRetries}`,
          { steps: subagentSchedule },
          ({ steps }) => runCustomSchedule({ trigger, posture, maxRetries, subagent: true }, steps),
          { fastCheck: { numRuns: 60 }, timeout: 120_000 }
        )
      }
    }
  }
})

const parent = Passthrough.make({ id: "main", name: "main", target: parentTarget })
const worker = target("worker", "worker-model")
const fixed = Passthrough.make({ id: "main", name: "main", target: worker })

const ask = (route: Route, headers: Readonly<Record<string, string>>, session = "s1") =>
  RoutingFacts.observe(
    route.decide(routed(conversation("user_turn", "task"), Option.some(session), headers)),
    RoutingFacts.ignored
  )

describe("Subagents.delegate", () => {
  it.effect("delegated work goes to the sub-agent route, marked subagent, under the parent's route info", () =>
    Effect.gen(function*() {
      const route = Subagents.delegate(parent, fixed)
      const child = yield* ask(route, { "x-claude-code-session-id": "s1", "x-claude-code-agent-id": "agent-7" })
      assert.strictEqual(Option.getOrThrow(Decision.selected(child)).name, "worker")
      assert.deepStrictEqual(Decision.fallbacks(child), [])
      assert.deepStrictEqual(child.evidence, { source: "passthrough", subagent: true })
      assert.deepStrictEqual(child.route, { id: "main", name: "main", algorithm: "passthrough" })

      const root = yield* ask(route, { "x-claude-code-session-id": "s1" })
      assert.strictEqual(Option.getOrThrow(Decision.selected(root)).name, "parent")
      assert.deepStrictEqual(root.evidence, { source: "passthrough" })
    }))

  it.effect("kinds that are not delegated work, and an explicit false, stay with the parent", () =>
    Effect.gen(function*() {
      const route = pipe(parent, Subagents.delegate(fixed))
      const codex = (fields: Record<string, string>) => ({ "x-codex-turn-metadata": JSON.stringify(fields) })
      const cases: ReadonlyArray<readonly [Record<string, string>, string]> = [
        [codex({ session_id: "s1", thread_id: "t", subagent_kind: "compact" }), "parent"],
        [{ "x-openai-subagent": "memory_consolidation" }, "parent"],
        [{ "x-switchyard-is-subagent": "false", "x-claude-code-agent-id": "a" }, "parent"],
        [{ "x-switchyard-agent-kind": "review" }, "parent"],
        [codex({ session_id: "s1", thread_id: "c", parent_thread_id: "p", thread_source: "subagent" }), "worker"],
        [codex({ session_id: "s1", subagent_kind: "collab_spawn" }), "worker"],
        [{ "x-openai-subagent": "review" }, "worker"],
        [{ "x-switchyard-is-subagent": "on" }, "worker"]
      ]
      for (const [headers, expected] of cases) {
        const decision = yield* ask(route, headers)
        assert.strictEqual(Option.getOrThrow(Decision.selected(decision)).name, expected, JSON.stringify(headers))
      }
    }))

  it("the result keeps the parent's identity; its targets are the parent's then the sub-agent's, once each", () => {
    const route = Subagents.delegate(parent, Passthrough.make({ id: "x", name: "x", target: parentTarget }))
    assert.strictEqual(route.id, "main")
    assert.strictEqual(route.algorithm, "passthrough")
    assert.deepStrictEqual(route.targets.map((t) => t.name), ["parent"])
    assert.deepStrictEqual(Subagents.delegate(parent, fixed).targets.map((t) => t.name), ["parent", "worker"])
  })

  it.effect("a custom sub-agent route under new_session keys affinity by (session, agent): one judge call per agent", () =>
    Effect.gen(function*() {
      const judge = yield* makeCustomJudge
      const custom = yield* buildCustomRoute(
        customOptions(target("judge", yield* uniqueJudgeModel), { classifyTrigger: "new_session", affinity: "agent" }),
        judge.layer
      )
      const route = Subagents.delegate(parent, custom)
      const child = (session: string, agent: string) => ({
        "x-claude-code-session-id": session,
        "x-claude-code-agent-id": agent
      })
      const reply = { _tag: "reply", text: "{\"route\":\"gamma\"}" } as const
      yield* judge.script([reply])
      const first = yield* decideCustom(
        route,
        routed(conversation("user_turn", "t"), Option.some("s1"), child("s1", "a1")),
        reply,
        0
      )
      const again = yield* ask(route, child("s1", "a1"))
      assert.deepStrictEqual(again.evidence, { source: "affinity", previous_source: "llm-classifier", subagent: true })
      assert.strictEqual(yield* judge.calls, 1)
      assert.isTrue(first._tag === "Success")

      yield* judge.script([{ _tag: "reply", text: "{\"route\":\"alpha\"}" }])
      // a sibling agent, and the same agent id in another session, are judged on their own
      const sibling = yield* ask(route, child("s1", "a2"))
      const elsewhere = yield* ask(route, child("s2", "a1"), "s2")
      assert.strictEqual(Option.getOrThrow(Decision.selected(sibling)).name, "alpha")
      assert.strictEqual(Option.getOrThrow(Decision.selected(elsewhere)).name, "alpha")
      assert.strictEqual(yield* judge.calls, 3)

      // the explicit flag without an agent id has no key: judged every time
      yield* ask(route, { "x-switchyard-is-subagent": "true" })
      yield* ask(route, { "x-switchyard-is-subagent": "true" })
      assert.strictEqual(yield* judge.calls, 5)

      // the parent's requests never reach the judge
      const root = yield* ask(route, { "x-claude-code-session-id": "s1" })
      assert.strictEqual(Option.getOrThrow(Decision.selected(root)).name, "parent")
      assert.strictEqual(yield* judge.calls, 5)
    }))
})

describe("Subagents.delegate over a stage router parent", () => {
  const capablePrompt = "CAPABLE-PROMPT"
  /** A verdict the efficient tier can take (p_solve 1). */
  const verdict = Effect.succeed({
    crux: "c",
    primary_rule: "SUP-1" as const,
    capability_boundary: "supported" as const,
    p_solve: 1
  })
  const child = { "x-claude-code-session-id": "s1", "x-claude-code-agent-id": "agent-1" }
  const stageWith = (judge: Layer.Layer<Judge.Judge>, model: string) =>
    buildStageRoute(
      stageOptions(target("judge", model), {
        capable: target("capable", `capable-${model}`),
        efficient: target("efficient", `efficient-${model}`),
        capableSystemPrompt: Option.some(capablePrompt)
      }),
      judge
    )

  it.effect("a delegated child skips the signals, the tier prompt, the handoff note and the stage metrics", () =>
    Effect.gen(function*() {
      const model = yield* uniqueJudgeModel
      const stage = yield* stageWith(Judge.layerTest(() => Effect.dieMessage("no judge call expected")), model)
      const route = Subagents.delegate(stage, fixed)
      const critical = conversationOf("critical")

      const delegated = yield* RoutingFacts.observe(
        route.decide(routed(critical, Option.some("s1"), child)),
        RoutingFacts.ignored
      )
      assert.strictEqual(delegated._tag, "Routed")
      if (delegated._tag !== "Routed") return
      assert.strictEqual(delegated.selected.name, "worker")
      assert.deepStrictEqual(delegated.fallbacks, [])
      assert.deepStrictEqual(delegated.evidence, { source: "passthrough", subagent: true })
      assert.deepStrictEqual(delegated.route, { id: "stage", name: "stage", algorithm: "stage_router" })
      assert.isUndefined(delegated.body)
      assert.strictEqual(yield* stageDecisions("override", `capable-${model}`), 0)

      // the parent's own turn: the signals decide, with the tier prompt and the escalation note
      const parentTurn = yield* RoutingFacts.observe(
        route.decide(routed(critical, Option.some("s1"), { "x-claude-code-session-id": "s1" })),
        RoutingFacts.ignored
      )
      if (parentTurn._tag !== "Routed") return assert.fail("routed")
      assert.strictEqual(parentTurn.selected.name, "capable")
      assert.strictEqual(parentTurn.evidence.source, "stage_router")
      assert.isFalse("subagent" in parentTurn.evidence)
      // the tier prompt first, the escalation note last (a user message after the tool result)
      assert.deepStrictEqual(parentTurn.body?.messages.at(0), { role: "system", content: capablePrompt })
      assert.deepStrictEqual(parentTurn.body?.messages.at(-1), { role: "user", content: escalationNote })
      assert.strictEqual(yield* stageDecisions("override", `capable-${model}`), 1)
      assert.deepStrictEqual(route.targets.map((t) => t.name), ["capable", "efficient", "worker"])
    }))

  it.effect("a child is routed while its parent session holds the stage router's lock (judge stalled)", () =>
    Effect.gen(function*() {
      const gate = yield* Effect.makeLatch(false)
      const stageCalls = yield* Ref.make(0)
      const judge = Judge.layerTest(
        () => Effect.zipRight(Ref.update(stageCalls, (n) => n + 1), Effect.zipRight(gate.await, verdict)),
        () => Effect.succeed({ route: "gamma" })
      )
      const model = yield* uniqueJudgeModel
      const stage = yield* stageWith(judge, model)
      const custom = yield* buildCustomRoute(
        customOptions(target("judge", `custom-${model}`), { classifyTrigger: "new_session", affinity: "agent" }),
        judge
      )
      const route = Subagents.delegate(stage, custom)
      const quiet = conversationOf("quiet_turn")

      const parentTurn = yield* Effect.fork(
        RoutingFacts.observe(
          route.decide(routed(quiet, Option.some("s1"), { "x-claude-code-session-id": "s1" })),
          RoutingFacts.ignored
        )
      )
      while ((yield* Ref.get(stageCalls)) < 1) yield* Effect.yieldNow()
      // the parent session's lock is held by the stalled judge call; the child does not wait for it
      const delegated = yield* RoutingFacts.observe(
        route.decide(routed(quiet, Option.some("s1"), child)),
        RoutingFacts.ignored
      )
      assert.strictEqual(Option.getOrThrow(Decision.selected(delegated)).name, "gamma")
      assert.deepStrictEqual(delegated.evidence.subagent, true)
      assert.isNull(parentTurn.unsafePoll())

      yield* gate.open
      const parentDecision = yield* Fiber.join(parentTurn)
      assert.strictEqual(Option.getOrThrow(Decision.selected(parentDecision)).name, "efficient")
      assert.strictEqual(yield* Ref.get(stageCalls), 1)
    }))
})
