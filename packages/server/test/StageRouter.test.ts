/**
 * Stage router routes (`type = "stage_router"`) through the real server, with a fake upstream: a
 * decisive tool signal goes to the capable target with the tier's system prompt first and the
 * escalation note last (the caller's messages unchanged in between), an undecided turn goes to the
 * classifier judge (`/v1/decision` returns its evidence with the stage facts), a dead judge under
 * both postures (502 under `error`; the picker's default tier, `fail-open` / `transport`, counted
 * once under `fail_open`), `/v1/models`, and the `switchyard_stage_router_*` families on `/metrics`.
 */
import type * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import { assert, describe, it } from "@effect/vitest"
import * as D from "@switchyard-ts/testkit/DeploymentBuilder"
import * as FakeUpstream from "@switchyard-ts/testkit/FakeUpstream"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { judgeDeployment, postureRoutes, startServer } from "./harness.js"

let counter = 0
/** Model ids unique to one test, so the process-global metric registry does not mix tests. */
const unique = (prefix: string) => `${prefix}-${process.pid}-${++counter}`

interface Ids {
  readonly judge: string
  readonly capable: string
  readonly efficient: string
}

const deployment = (ids: Ids) => (upstreamUrl: string): D.Deployment =>
  judgeDeployment(upstreamUrl, {
    judgeModel: ids.judge,
    answers: { capable: ids.capable, efficient: ids.efficient },
    routes: {
      signals: D.stageRouter("signals", {
        capable_target: "capable",
        efficient_target: "efficient",
        picker: "efficient_first",
        confidence_threshold: 0.5,
        capable_system_prompt: "CAPABLE-PROMPT",
        handoff_notes: { escalation_note: "ESCALATION-NOTE" }
      }),
      ...postureRoutes("stage", (id, judge_failure, judge) =>
        D.stageRouter(id, {
          capable_target: "capable",
          efficient_target: "efficient",
          picker: "capable_first",
          confidence_threshold: 0.5,
          classifier: { target: judge, base_threshold: 0.5, judge_failure }
        }))
    }
  })

/** A tool continuation whose last result reports a critical failure. */
const critical = [
  { role: "user", content: "fix the build" },
  {
    role: "assistant",
    content: null,
    tool_calls: [{ id: "c1", type: "function", function: { name: "Bash", arguments: "{\"command\":\"cargo test\"}" } }]
  },
  { role: "tool", tool_call_id: "c1", content: "fatal runtime error: out of memory" }
]

const quiet = [{ role: "user", content: "explain the module" }]

const completion = (client: HttpClient.HttpClient, model: string, messages: ReadonlyArray<unknown>) =>
  Effect.flatMap(
    client.execute(
      HttpClientRequest.post("/v1/chat/completions").pipe(HttpClientRequest.bodyUnsafeJson({ model, messages }))
    ),
    (response) =>
      Effect.map(response.text, (text) => ({
        status: response.status,
        text,
        selected: response.headers["x-switchyard-selected-model"],
        source: response.headers["x-switchyard-evidence-source"],
        reason: response.headers["x-switchyard-evidence-reason"]
      }))
  )

const decision = (client: HttpClient.HttpClient, model: string, messages: ReadonlyArray<unknown>) =>
  Effect.flatMap(
    client.execute(
      HttpClientRequest.post("/v1/decision").pipe(
        HttpClientRequest.bodyUnsafeJson({ input_format: "openai_chat", request: { model, messages } })
      )
    ),
    (response) => Effect.map(response.json, (json) => ({ status: response.status, json }))
  )

const metrics = (client: HttpClient.HttpClient) =>
  Effect.flatMap(client.execute(HttpClientRequest.get("/metrics")), (response) => response.text)

const sample = (text: string, name: string, labels: Readonly<Record<string, string>>): number => {
  const line = text.split("\n").find((l) =>
    l.startsWith(`${name}{`) && Object.entries(labels).every(([k, v]) => l.includes(`${k}="${v}"`))
  )
  return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(" ") + 1))
}

const UpstreamBody = Schema.Struct({
  messages: Schema.Array(Schema.Struct({ role: Schema.String, content: Schema.Unknown }))
})

const DecisionBody = Schema.Struct({
  selected: Schema.Struct({ target: Schema.String, model: Schema.String }),
  fallbacks: Schema.Array(Schema.Struct({ target: Schema.String })),
  evidence: Schema.Record({ key: Schema.String, value: Schema.Unknown })
})

const callsTo = (upstream: FakeUpstream.FakeUpstream["Type"], model: string) =>
  Effect.map(upstream.requests, (records) => records.filter((r) => r.model === model))

describe("stage router through the server", () => {
  it.scopedLive("a critical tool failure goes capable, with the tier's system prompt first and the escalation note last", () =>
    Effect.gen(function*() {
      const ids = { judge: unique("judge"), capable: unique("capable"), efficient: unique("efficient") }
      const { client, upstream } = yield* startServer(deployment(ids))
      yield* upstream.setBehaviour(ids.capable, FakeUpstream.ok("capable answer"))
      const answered = yield* completion(client, "signals", critical)
      assert.strictEqual(answered.status, 200)
      assert.strictEqual(answered.selected, ids.capable)
      assert.strictEqual(answered.source, "stage_router")
      assert.include(answered.text, "capable answer")
      const [sent] = yield* callsTo(upstream, ids.capable)
      const body = Schema.decodeUnknownSync(UpstreamBody)(sent?.body)
      assert.deepStrictEqual(body.messages[0], { role: "system", content: "CAPABLE-PROMPT" })
      assert.deepStrictEqual(body.messages.slice(1, -1).map((m) => m.role), ["user", "assistant", "tool"])
      assert.deepStrictEqual(body.messages.at(-1), { role: "user", content: "ESCALATION-NOTE" })

      // an undecided turn without a classifier: the picker's default (efficient), untouched body
      yield* upstream.setBehaviour(ids.efficient, FakeUpstream.ok("efficient answer"))
      const plain = yield* completion(client, "signals", quiet)
      assert.strictEqual(plain.selected, ids.efficient)
      const [sentPlain] = yield* callsTo(upstream, ids.efficient)
      assert.deepStrictEqual(Schema.decodeUnknownSync(UpstreamBody)(sentPlain?.body).messages, quiet)

      const text = yield* metrics(client)
      assert.strictEqual(
        sample(text, "switchyard_stage_router_routing_decisions_total", {
          decision_source: "override",
          target_name: ids.capable
        }),
        1
      )
      assert.strictEqual(
        sample(text, "switchyard_stage_router_routing_decisions_total", {
          decision_source: "fall_open",
          target_name: ids.efficient
        }),
        1
      )
      const types = new Map(
        text.split("\n").filter((l) => l.startsWith("# TYPE ")).map((l) => {
          const [name, type] = l.slice(7).split(" ")
          return [name ?? "", type ?? ""] as const
        })
      )
      assert.strictEqual(types.get("switchyard_stage_router_routing_decisions_total"), "counter")
      for (const name of ["score", "confidence", "severity", "spinning", "exploring", "production_intensity"]) {
        assert.strictEqual(types.get(`switchyard_stage_router_${name}`), "histogram", name)
      }
      // the signed score's buckets start at -1; both turns scored 0
      assert.match(text, /^switchyard_stage_router_score_bucket\{[^}]*le="-1"\} 0$/m)
      assert.match(text, /^switchyard_stage_router_score_bucket\{[^}]*le="0"\} 2$/m)
    }))

  it.scopedLive("an undecided turn goes to the classifier; /v1/decision returns its evidence and stage facts", () =>
    Effect.gen(function*() {
      const ids = { judge: unique("judge"), capable: unique("capable"), efficient: unique("efficient") }
      const { client, upstream } = yield* startServer(deployment(ids))
      yield* upstream.setBehaviour(
        ids.judge,
        FakeUpstream.ok(
          JSON.stringify({ crux: "small", primary_rule: "SUP-1", capability_boundary: "supported", p_solve: 0.9 })
        )
      )
      for (const route of ["stage-error", "stage-fail_open"]) {
        const decided = yield* decision(client, route, quiet)
        assert.strictEqual(decided.status, 200)
        const body = Schema.decodeUnknownSync(DecisionBody)(decided.json)
        assert.strictEqual(body.selected.target, "efficient")
        assert.deepStrictEqual(body.fallbacks.map((f) => f.target), ["capable"])
        assert.deepStrictEqual<unknown>(body.evidence, {
          source: "llm-classifier",
          score: 0.9,
          threshold: 0.5,
          boundary: "supported",
          stage: {
            decision_source: "llm-classifier",
            tier: "efficient",
            score: 0,
            confidence: 0,
            severity: 0,
            spinning: 0,
            exploring: 0,
            production_intensity: 0
          }
        })
      }
      assert.strictEqual((yield* callsTo(upstream, ids.judge)).length, 2)
      const models = Schema.decodeUnknownSync(
        Schema.Struct({ data: Schema.Array(Schema.Struct({ id: Schema.String })) })
      )(
        yield* Effect.flatMap(client.execute(HttpClientRequest.get("/v1/models")), (r) => r.json)
      )
      assert.includeMembers(models.data.map((m) => m.id), ["signals", "stage-error", "stage-fail_open"])
    }))

  it.scopedLive("a dead judge: error → 502; fail_open → the picker's default tier, fail-open / transport, counted once", () =>
    Effect.gen(function*() {
      const ids = { judge: unique("judge"), capable: unique("capable"), efficient: unique("efficient") }
      const { client, upstream } = yield* startServer(deployment(ids))
      yield* upstream.setBehaviour(ids.capable, FakeUpstream.ok("capable answer"))
      const failed = yield* completion(client, "stage-error-stopped", quiet)
      assert.strictEqual(failed.status, 502)
      assert.include(failed.text, "upstream_error")
      const before = sample(yield* metrics(client), "switchyard_classifier_fail_open_total", {
        judge_model: ids.judge,
        reason: "transport"
      })
      assert.strictEqual(before, 0)

      const open = yield* completion(client, "stage-fail_open-stopped", quiet)
      assert.strictEqual(open.status, 200)
      assert.strictEqual(open.selected, ids.capable)
      assert.strictEqual(open.source, "fail-open")
      assert.strictEqual(open.reason, "transport")
      const text = yield* metrics(client)
      assert.strictEqual(
        sample(text, "switchyard_classifier_fail_open_total", { judge_model: ids.judge, reason: "transport" }),
        1
      )
      assert.strictEqual(
        sample(text, "switchyard_stage_router_routing_decisions_total", {
          decision_source: "fall_open",
          target_name: ids.capable
        }),
        1
      )
    }))
})
