/**
 * A passthrough or stage router route's `subagents` table through the real server, against the
 * fake upstream: delegated sub-agent work (a Claude child's agent id, a Codex child thread, a
 * `collab_spawn` / `review` harness kind, the explicit flag) goes to the sub-agent target or custom
 * classifier, the parent's own requests and harness maintenance turns go to the parent route (the
 * passthrough target; the stage router's signals, tier prompt and classifier); `/v1/decision`, the
 * `libsy.run` span and the request log say the sub-agent route decided.
 */
import type * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import { assert, describe, it } from "@effect/vitest"
import { InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base"
import * as Telemetry from "@switchyard-ts/server/Telemetry"
import * as D from "@switchyard-ts/testkit/DeploymentBuilder"
import * as FakeUpstream from "@switchyard-ts/testkit/FakeUpstream"
import * as Effect from "effect/Effect"
import * as Logger from "effect/Logger"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { basicDeployment, routedAnswer, startServer } from "./harness.js"

let judgeCounter = 0
/** A judge model id unique to one test (the metric registry is process-global). */
const uniqueJudge = () => `subagent-judge-${process.pid}-${++judgeCounter}`

/** A custom sub-agent classifier on target `judge` over weak and reviewer (`new_session`, `fail_open`). */
const judgedSubagents: D.Subagents = {
  type: "llm_classifier",
  mode: "custom",
  classifier_target: "judge",
  targets: ["weak", "reviewer"],
  default_target: "weak",
  classify_trigger: "new_session",
  judge_failure: "fail_open",
  prompt: "Name the target for this delegated task.",
  response_schema: `{"type": "object", "properties": {"route": {"type": "string"}}, "required": ["route"]}`,
  policy: { type: "target_selector", selector: "/route" }
}

/** `basicDeployment`'s deployment (weak, strong) plus a judge, a reviewer and two passthrough routes with subagents. */
const deployment = (judgeModel: string) => (upstreamUrl: string): D.Deployment =>
  D.extend(basicDeployment({ timeoutMs: 5000 })(upstreamUrl), {
    targets: { judge: D.target(judgeModel, "sim"), reviewer: D.target("reviewer-model", "sim") },
    routes: D.byId(
      D.passthrough("fixed", "strong", { subagents: { type: "passthrough", target: "weak" } }),
      D.passthrough("judged", "strong", { subagents: judgedSubagents })
    )
  })

const lookInto: ReadonlyArray<unknown> = [{ role: "user", content: "look into the failing test" }]

const chat = (model: string, messages: ReadonlyArray<unknown> = lookInto) => ({ model, messages })

/** POST `body` to `path` with `headers`. */
const post = (client: HttpClient.HttpClient, path: string, headers: Readonly<Record<string, string>>, body: unknown) =>
  client.execute(
    HttpClientRequest.post(path).pipe(HttpClientRequest.setHeaders(headers), HttpClientRequest.bodyUnsafeJson(body))
  )

const completion = (
  client: HttpClient.HttpClient,
  model: string,
  headers: Readonly<Record<string, string>>,
  messages?: ReadonlyArray<unknown>
) => Effect.flatMap(post(client, "/v1/chat/completions", headers, chat(model, messages)), routedAnswer)

const DecisionBody = Schema.Struct({
  selected: Schema.Struct({ target: Schema.String, model: Schema.String }),
  fallbacks: Schema.Array(Schema.Struct({ target: Schema.String })),
  evidence: Schema.Record({ key: Schema.String, value: Schema.Unknown })
})

const decision = (
  client: HttpClient.HttpClient,
  model: string,
  headers: Readonly<Record<string, string>>,
  messages?: ReadonlyArray<unknown>
) =>
  Effect.flatMap(
    post(client, "/v1/decision", headers, { input_format: "openai_chat", request: chat(model, messages) }),
    (response) => Effect.flatMap(response.json, Schema.decodeUnknown(DecisionBody))
  )

const callsTo = (upstream: FakeUpstream.FakeUpstream["Type"], model: string) =>
  Effect.map(upstream.requests, (records) => records.filter((r) => r.model === model).length)

const codex = (fields: Record<string, string>) => ({ "x-codex-turn-metadata": JSON.stringify(fields) })
const claudeRoot = { "x-claude-code-session-id": "claude-1" }
const claudeChild = { "x-claude-code-session-id": "claude-1", "x-claude-code-agent-id": "agent-1" }
const codexRoot = codex({ session_id: "codex-1", thread_id: "root-thread" })
const codexChild = codex({
  session_id: "codex-1",
  thread_id: "child-thread",
  parent_thread_id: "root-thread",
  thread_source: "subagent"
})

describe("subagents on a passthrough route, through the server", () => {
  it.scopedLive("delegated Claude and Codex children go to the sub-agent target; their parents to the parent target", () =>
    Effect.gen(function*() {
      const { client, upstream } = yield* startServer(deployment(uniqueJudge()))
      yield* upstream.setBehaviour("strong-model", FakeUpstream.ok("strong answer"))
      yield* upstream.setBehaviour("weak-model", FakeUpstream.ok("weak answer"))

      const cases: ReadonlyArray<readonly [string, Readonly<Record<string, string>>, string]> = [
        ["claude root", claudeRoot, "strong-model"],
        ["claude child", claudeChild, "weak-model"],
        ["codex root", codexRoot, "strong-model"],
        ["codex child", codexChild, "weak-model"],
        ["codex collab_spawn", codex({ session_id: "codex-1", subagent_kind: "collab_spawn" }), "weak-model"],
        ["x-openai-subagent review", { "x-openai-subagent": "review" }, "weak-model"],
        ["codex compact (maintenance)", codex({ session_id: "codex-1", subagent_kind: "compact" }), "strong-model"],
        ["x-openai-subagent memory_consolidation", { "x-openai-subagent": "memory_consolidation" }, "strong-model"],
        ["explicit false on a claude child", { ...claudeChild, "x-switchyard-is-subagent": "false" }, "strong-model"],
        ["explicit true", { "x-switchyard-is-subagent": "true" }, "weak-model"],
        ["no headers", {}, "strong-model"]
      ]
      for (const [name, headers, expected] of cases) {
        const answer = yield* completion(client, "fixed", headers)
        assert.strictEqual(answer.status, 200, name)
        assert.strictEqual(answer.selected, expected, name)
        assert.strictEqual(answer.source, "passthrough", name)
        assert.include(answer.text, expected === "weak-model" ? "weak answer" : "strong answer", name)
      }
      assert.strictEqual(yield* callsTo(upstream, "weak-model"), 5)
      assert.strictEqual(yield* callsTo(upstream, "strong-model"), 6)

      const child = yield* decision(client, "fixed", claudeChild)
      assert.strictEqual(child.selected.target, "weak")
      assert.deepStrictEqual(child.fallbacks, [])
      assert.deepStrictEqual(child.evidence, { source: "passthrough", subagent: true })
      const root = yield* decision(client, "fixed", claudeRoot)
      assert.strictEqual(root.selected.target, "strong")
      assert.deepStrictEqual(root.evidence, { source: "passthrough" })
    }))

  it.scopedLive("a custom sub-agent classifier: one judge call per (session, agent), parents never judged", () =>
    Effect.gen(function*() {
      const judge = uniqueJudge()
      const { client, upstream } = yield* startServer(deployment(judge))
      for (const model of ["strong-model", "weak-model", "reviewer-model"]) {
        yield* upstream.setBehaviour(model, FakeUpstream.ok(`${model} answer`))
      }
      yield* upstream.setBehaviour(judge, FakeUpstream.ok("{\"route\": \"reviewer\"}"))

      const first = yield* completion(client, "judged", claudeChild)
      assert.strictEqual(first.selected, "reviewer-model")
      assert.strictEqual(first.source, "llm-classifier")
      const again = yield* completion(client, "judged", claudeChild)
      assert.strictEqual(again.selected, "reviewer-model")
      assert.strictEqual(again.source, "affinity")
      assert.strictEqual(yield* callsTo(upstream, judge), 1)

      // the Codex child is another (session, agent): judged on its own
      yield* upstream.setBehaviour(judge, FakeUpstream.ok("{\"route\": \"weak\"}"))
      const codexAnswer = yield* completion(client, "judged", codexChild)
      assert.strictEqual(codexAnswer.selected, "weak-model")
      assert.strictEqual(yield* callsTo(upstream, judge), 2)

      // parents are passthrough, no judge call
      const parent = yield* completion(client, "judged", claudeRoot)
      assert.strictEqual(parent.selected, "strong-model")
      assert.strictEqual(parent.source, "passthrough")
      assert.strictEqual(yield* callsTo(upstream, judge), 2)

      const shown = yield* decision(client, "judged", claudeChild)
      assert.strictEqual(shown.selected.target, "reviewer")
      assert.deepStrictEqual(shown.fallbacks.map((f) => f.target), ["weak"])
      assert.deepStrictEqual(shown.evidence, { source: "affinity", previous_source: "llm-classifier", subagent: true })

      // a dead judge under fail_open: a new child is routed to default_target, never failed
      yield* upstream.setBehaviour(judge, FakeUpstream.status(503, { message: "down" }))
      const degraded = yield* completion(client, "judged", { ...claudeChild, "x-claude-code-agent-id": "agent-2" })
      assert.strictEqual(degraded.status, 200)
      assert.strictEqual(degraded.selected, "weak-model")
      assert.strictEqual(degraded.source, "fail-open")
    }))

  it.scopedLive("the libsy.run span and the request log say the sub-agent route decided", () =>
    Effect.gen(function*() {
      const exporter = new InMemorySpanExporter()
      const logs: Array<Record<string, unknown>> = []
      const capture = Logger.make(({ annotations, message }) => {
        const text = Array.isArray(message) ? message.join(" ") : String(message)
        if (text === "request") logs.push(Object.fromEntries(annotations))
      })
      const { client, upstream } = yield* startServer(
        deployment(uniqueJudge()),
        { telemetry: Telemetry.layerWith({ spanProcessor: new SimpleSpanProcessor(exporter) }) },
        Option.some(capture)
      )
      yield* upstream.setBehaviour("strong-model", FakeUpstream.ok("strong answer"))
      yield* upstream.setBehaviour("weak-model", FakeUpstream.ok("weak answer"))
      assert.strictEqual((yield* completion(client, "fixed", claudeChild)).status, 200)
      assert.strictEqual((yield* completion(client, "fixed", claudeRoot)).status, 200)

      const runs = exporter.getFinishedSpans().filter((span) => span.name === "libsy.run")
      assert.deepStrictEqual(
        runs.map((span) => [span.attributes["selected_model"], span.attributes["evidence.subagent"] ?? false]),
        [["weak-model", true], ["strong-model", false]]
      )
      assert.deepStrictEqual(runs.map((span) => span.attributes["switchyard.algorithm"]), [
        "passthrough",
        "passthrough"
      ])
      // (the edge writes a request's log line right after its JSON body, before the caller can read it)
      assert.deepStrictEqual(
        logs.map((line) => [line["selected_model"], line["subagent"]]),
        [["weak-model", true], ["strong-model", false]]
      )
    }))
})

/**
 * `deployment`'s deployment (its judge is the sub-agent classifier's) plus a stage judge and two
 * stage routes (capable strong, efficient weak) with subagents: `stage-fixed` (a capable system
 * prompt and an escalation note; sub-agents to the reviewer) and `stage-judged` (a `[classifier]` on
 * the stage judge; `judgedSubagents` on the judge).
 */
const stageDeployment = (judges: { readonly stage: string; readonly subagent: string }) => (upstreamUrl: string) =>
  D.extend(deployment(judges.subagent)(upstreamUrl), {
    targets: { stage_judge: D.target(judges.stage, "sim") },
    routes: D.byId(
      D.stageRouter("stage-fixed", {
        capable_target: "strong",
        efficient_target: "weak",
        picker: "efficient_first",
        confidence_threshold: 0.5,
        // about sub-agents: the undecided parent turn after the critical ones is not held capable
        capable_hold_turns: 0,
        capable_system_prompt: "CAPABLE-PROMPT",
        handoff_notes: { escalation_note: "ESCALATION-NOTE" },
        subagents: { type: "passthrough", target: "reviewer" }
      }),
      D.stageRouter("stage-judged", {
        capable_target: "strong",
        efficient_target: "weak",
        picker: "efficient_first",
        confidence_threshold: 0.5,
        classifier: { target: "stage_judge", base_threshold: 0.5, classify_trigger: "new_session" },
        subagents: judgedSubagents
      })
    )
  })

/** A tool continuation whose last result reports a critical failure: the stage signals say capable. */
const critical: ReadonlyArray<unknown> = [
  { role: "user", content: "fix the build" },
  {
    role: "assistant",
    content: null,
    tool_calls: [{ id: "c1", type: "function", function: { name: "Bash", arguments: "{\"command\":\"cargo test\"}" } }]
  },
  { role: "tool", tool_call_id: "c1", content: "fatal runtime error: out of memory" }
]

const UpstreamBody = Schema.Struct({ messages: Schema.Array(Schema.Unknown) })

describe("subagents on a stage router route, through the server", () => {
  it.scopedLive("delegated Claude and Codex children go to the sub-agent target, untouched; parent turns by the signals", () =>
    Effect.gen(function*() {
      const { client, upstream } = yield* startServer(
        stageDeployment({ stage: uniqueJudge(), subagent: uniqueJudge() })
      )
      for (const model of ["strong-model", "weak-model", "reviewer-model"]) {
        yield* upstream.setBehaviour(model, FakeUpstream.ok(`${model} answer`))
      }
      const cases: ReadonlyArray<readonly [string, Readonly<Record<string, string>>, string, string]> = [
        ["claude root", claudeRoot, "strong-model", "stage_router"],
        ["claude child", claudeChild, "reviewer-model", "passthrough"],
        ["codex root", codexRoot, "strong-model", "stage_router"],
        ["codex child", codexChild, "reviewer-model", "passthrough"],
        [
          "codex compact (maintenance)",
          codex({ session_id: "codex-1", subagent_kind: "compact" }),
          "strong-model",
          "stage_router"
        ],
        ["explicit true", { "x-switchyard-is-subagent": "true" }, "reviewer-model", "passthrough"]
      ]
      for (const [name, headers, expected, source] of cases) {
        const answer = yield* completion(client, "stage-fixed", headers, critical)
        assert.strictEqual(answer.status, 200, name)
        assert.strictEqual(answer.selected, expected, name)
        assert.strictEqual(answer.source, source, name)
        assert.include(answer.text, `${expected} answer`, name)
      }
      // children's calls carry the caller's conversation as sent; the parent's the tier prompt and the note
      const records = yield* upstream.requests
      const sent = (model: string) =>
        records.filter((r) => r.model === model).map((r) => Schema.decodeUnknownSync(UpstreamBody)(r.body).messages)
      assert.deepStrictEqual(sent("reviewer-model"), [critical, critical, critical])
      for (const messages of sent("strong-model")) {
        assert.deepStrictEqual(messages, [
          { role: "system", content: "CAPABLE-PROMPT" },
          ...critical,
          { role: "user", content: "ESCALATION-NOTE" }
        ])
      }
      assert.strictEqual(sent("strong-model").length, 3)

      // an undecided parent turn: the picker's default tier (efficient)
      assert.strictEqual((yield* completion(client, "stage-fixed", claudeRoot)).selected, "weak-model")

      const child = yield* decision(client, "stage-fixed", claudeChild, critical)
      assert.strictEqual(child.selected.target, "reviewer")
      assert.deepStrictEqual(child.fallbacks, [])
      assert.deepStrictEqual(child.evidence, { source: "passthrough", subagent: true })
      const root = yield* decision(client, "stage-fixed", claudeRoot, critical)
      assert.strictEqual(root.selected.target, "strong")
      assert.deepStrictEqual(root.fallbacks.map((f) => f.target), ["weak"])
      assert.strictEqual(root.evidence["source"], "stage_router")
      assert.isUndefined(root.evidence["subagent"])
    }))

  it.scopedLive("a custom sub-agent classifier beside the stage classifier: each judge sees only its own requests", () =>
    Effect.gen(function*() {
      const judges = { stage: uniqueJudge(), subagent: uniqueJudge() }
      const { client, upstream } = yield* startServer(stageDeployment(judges))
      for (const model of ["strong-model", "weak-model", "reviewer-model"]) {
        yield* upstream.setBehaviour(model, FakeUpstream.ok(`${model} answer`))
      }
      yield* upstream.setBehaviour(
        judges.stage,
        FakeUpstream.ok(
          JSON.stringify({ crux: "small", primary_rule: "SUP-1", capability_boundary: "supported", p_solve: 0.9 })
        )
      )
      yield* upstream.setBehaviour(judges.subagent, FakeUpstream.ok("{\"route\": \"reviewer\"}"))

      // the parent: an undecided turn goes to the stage classifier (efficient), stored for the session
      const parent = yield* completion(client, "stage-judged", claudeRoot)
      assert.strictEqual(parent.selected, "weak-model")
      assert.strictEqual(parent.source, "llm-classifier")
      assert.strictEqual(yield* callsTo(upstream, judges.stage), 1)

      // its child (same session id): the sub-agent classifier, not the parent's stored tier
      const first = yield* completion(client, "stage-judged", claudeChild)
      assert.strictEqual(first.selected, "reviewer-model")
      assert.strictEqual(first.source, "llm-classifier")
      const again = yield* completion(client, "stage-judged", claudeChild)
      assert.strictEqual(again.selected, "reviewer-model")
      assert.strictEqual(again.source, "affinity")
      const codexAnswer = yield* completion(client, "stage-judged", codexChild)
      assert.strictEqual(codexAnswer.selected, "reviewer-model")
      assert.strictEqual(yield* callsTo(upstream, judges.subagent), 2)
      assert.strictEqual(yield* callsTo(upstream, judges.stage), 1)

      // the parent again: its own stored tier, and the signals still decide a critical turn
      assert.strictEqual((yield* completion(client, "stage-judged", claudeRoot)).source, "affinity")
      const escalated = yield* completion(client, "stage-judged", claudeRoot, critical)
      assert.strictEqual(escalated.selected, "strong-model")
      assert.strictEqual(escalated.source, "stage_router")
      assert.strictEqual(yield* callsTo(upstream, judges.stage), 1)

      const shown = yield* decision(client, "stage-judged", claudeChild)
      assert.strictEqual(shown.selected.target, "reviewer")
      assert.deepStrictEqual(shown.fallbacks.map((f) => f.target), ["weak"])
      assert.deepStrictEqual(shown.evidence, { source: "affinity", previous_source: "llm-classifier", subagent: true })
    }))
})
