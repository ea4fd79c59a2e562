/**
 * Custom classifier routes (`mode = "custom"`) through the real server, with a fake judge
 * upstream: a verdict naming a label, a verdict whose selector names no label (abstains to
 * `default_target`), and a dead judge under both postures — status, selected target, evidence,
 * the evidence header, `switchyard_classifier_fail_open_total`, and `/v1/models`.
 */
import type * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import { assert, describe, it } from "@effect/vitest"
import * as D from "@switchyard-ts/testkit/DeploymentBuilder"
import * as FakeUpstream from "@switchyard-ts/testkit/FakeUpstream"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { judgeDeployment, postureRoutes, startServer } from "./harness.js"

let judgeCounter = 0
/** A judge model id unique to one test, so the process-global metric registry does not mix tests. */
const uniqueJudge = () => `custom-judge-${process.pid}-${++judgeCounter}`

const deployment = (judgeModel: string) => (upstreamUrl: string): D.Deployment =>
  judgeDeployment(upstreamUrl, {
    judgeModel,
    answers: { fast: "fast-model", careful: "careful-model" },
    routes: postureRoutes("custom", (id, judge_failure, judge) =>
      D.custom(id, {
        classifier_target: judge,
        targets: ["fast", "careful"],
        default_target: "careful",
        prompt: "Name the target that should answer.",
        response_schema:
          `{"type": "object", "properties": {"route": {"type": "string"}}, "required": ["route"], "additionalProperties": false}`,
        policy: { type: "target_selector", selector: "/route" },
        judge_failure
      }))
  })

const chat = (model: string) => ({ model, messages: [{ role: "user", content: "reset my router" }] })

const DecisionBody = Schema.Struct({
  selected: Schema.Struct({ target: Schema.String, model: Schema.String }),
  fallbacks: Schema.Array(Schema.Struct({ target: Schema.String })),
  evidence: Schema.Record({ key: Schema.String, value: Schema.Unknown })
})
const ErrorBody = Schema.Struct({
  error: Schema.Struct({ message: Schema.String, type: Schema.String, code: Schema.String })
})
const ModelsBody = Schema.Struct({ data: Schema.Array(Schema.Struct({ id: Schema.String })) })

const post = (client: HttpClient.HttpClient, path: string, body: unknown) =>
  client.execute(HttpClientRequest.post(path).pipe(HttpClientRequest.bodyUnsafeJson(body)))

const decision = (client: HttpClient.HttpClient, model: string) =>
  Effect.flatMap(
    post(client, "/v1/decision", { input_format: "openai_chat", request: chat(model) }),
    (response) => Effect.map(response.json, (json) => ({ status: response.status, json }))
  )

const completion = (client: HttpClient.HttpClient, model: string) =>
  Effect.flatMap(post(client, "/v1/chat/completions", chat(model)), (response) =>
    Effect.map(response.json, (json) => ({
      status: response.status,
      json,
      selected: response.headers["x-switchyard-selected-model"],
      source: response.headers["x-switchyard-evidence-source"],
      reason: response.headers["x-switchyard-evidence-reason"]
    })))

const failOpenCount = (client: HttpClient.HttpClient, judgeModel: string, reason: string) =>
  Effect.map(Effect.flatMap(client.execute(HttpClientRequest.get("/metrics")), (r) => r.text), (text) => {
    const line = text.split("\n").find((l) =>
      l.startsWith("switchyard_classifier_fail_open_total{") && l.includes(`judge_model="${judgeModel}"`) &&
      l.includes(`reason="${reason}"`)
    )
    return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(" ") + 1))
  })

describe("custom classifier through the server", () => {
  it.scopedLive("a verdict naming a label selects it under both postures; /v1/models lists the routes", () =>
    Effect.gen(function*() {
      const judge = uniqueJudge()
      const { client, upstream } = yield* startServer(deployment(judge))
      yield* upstream.setBehaviour(judge, FakeUpstream.ok("```json\n{\"route\": \"fast\"}\n```"))
      for (const route of ["custom-error", "custom-fail_open"]) {
        const decided = yield* decision(client, route)
        assert.strictEqual(decided.status, 200)
        const body = Schema.decodeUnknownSync(DecisionBody)(decided.json)
        assert.strictEqual(body.selected.target, "fast")
        assert.strictEqual(body.selected.model, "fast-model")
        assert.deepStrictEqual(body.fallbacks.map((f) => f.target), ["careful"])
        assert.deepStrictEqual<unknown>(body.evidence, { source: "llm-classifier", label: "fast" })

        const answered = yield* completion(client, route)
        assert.strictEqual(answered.status, 200)
        assert.strictEqual(answered.selected, "fast-model")
        assert.strictEqual(answered.source, "llm-classifier")
      }
      const models = Schema.decodeUnknownSync(ModelsBody)(
        yield* Effect.flatMap(client.execute(HttpClientRequest.get("/v1/models")), (r) => r.json)
      )
      assert.includeMembers(models.data.map((m) => m.id), ["custom-error", "custom-fail_open"])
      assert.strictEqual(yield* failOpenCount(client, judge, "parse_error"), 0)
    }))

  it.scopedLive("a verdict whose selector names no label abstains to default_target, uncounted", () =>
    Effect.gen(function*() {
      const judge = uniqueJudge()
      const { client, upstream } = yield* startServer(deployment(judge))
      yield* upstream.setBehaviour(judge, FakeUpstream.ok("{\"route\": \"somebody-else\"}"))
      for (const route of ["custom-error", "custom-fail_open"]) {
        const decided = yield* decision(client, route)
        assert.strictEqual(decided.status, 200)
        const body = Schema.decodeUnknownSync(DecisionBody)(decided.json)
        assert.strictEqual(body.selected.target, "careful")
        assert.deepStrictEqual<unknown>(body.evidence, { source: "abstained", selector: "/route", judge_model: judge })
        const answered = yield* completion(client, route)
        assert.strictEqual(answered.status, 200)
        assert.strictEqual(answered.selected, "careful-model")
        assert.strictEqual(answered.source, "abstained")
      }
      for (const reason of ["parse_error", "transport", "timeout"]) {
        assert.strictEqual(yield* failOpenCount(client, judge, reason), 0, reason)
      }
    }))

  it.scopedLive("a dead judge: error → 502; fail_open → default_target, reason transport, counted once", () =>
    Effect.gen(function*() {
      const judge = uniqueJudge()
      const { client } = yield* startServer(deployment(judge))
      const failed = yield* completion(client, "custom-error-stopped")
      assert.strictEqual(failed.status, 502)
      assert.strictEqual(Schema.decodeUnknownSync(ErrorBody)(failed.json).error.code, "upstream_error")
      const failedDecision = yield* decision(client, "custom-error-stopped")
      assert.strictEqual(failedDecision.status, 502)
      assert.strictEqual(yield* failOpenCount(client, judge, "transport"), 0)

      const open = yield* completion(client, "custom-fail_open-stopped")
      assert.strictEqual(open.status, 200)
      assert.strictEqual(open.selected, "careful-model")
      assert.strictEqual(open.source, "fail-open")
      assert.strictEqual(open.reason, "transport")
      assert.strictEqual(yield* failOpenCount(client, judge, "transport"), 1)

      const openDecision = yield* decision(client, "custom-fail_open-stopped")
      assert.deepStrictEqual<unknown>(Schema.decodeUnknownSync(DecisionBody)(openDecision.json).evidence, {
        source: "fail-open",
        reason: "transport",
        judge_model: judge
      })
      assert.strictEqual(yield* failOpenCount(client, judge, "transport"), 2)
    }))

  it.scopedLive("a schema-invalid verdict is no verdict under both postures (reason parse_error)", () =>
    Effect.gen(function*() {
      const judge = uniqueJudge()
      const { client, upstream } = yield* startServer(deployment(judge))
      yield* upstream.setBehaviour(judge, FakeUpstream.ok("{\"route\": \"fast\", \"why\": \"cheap\"}"))
      for (const route of ["custom-error", "custom-fail_open"]) {
        const answered = yield* completion(client, route)
        assert.strictEqual(answered.status, 200)
        assert.strictEqual(answered.selected, "careful-model")
        assert.strictEqual(answered.source, "fail-open")
        assert.strictEqual(answered.reason, "parse_error")
      }
      assert.strictEqual(yield* failOpenCount(client, judge, "parse_error"), 2)
    }))
})

describe("custom classifier, the group form ([routes.<n>.models])", () => {
  const groups = (judgeModel: string) => (upstreamUrl: string): D.Deployment =>
    judgeDeployment(upstreamUrl, {
      judgeModel,
      answers: { fast: "fast-model", reasoning: "reasoning-model", premium: "premium-model" },
      routes: {
        grouped: D.custom("grouped", {
          models: {
            judge: ["judge"],
            fast: ["fast"],
            reasoning: ["reasoning", "premium"],
            premium: ["premium"],
            any: ["fast", "reasoning", "premium"]
          },
          default_target: "premium",
          prompt: "Name the group that should answer.",
          response_schema: `{"type": "object", "properties": {"route": {"type": "string"}}, "required": ["route"]}`,
          policy: { type: "target_selector", selector: "/route" },
          judge_failure: "error"
        })
      }
    })

  it.scopedLive("a verdict names a group: its first target serves, then the group's others, then any's", () =>
    Effect.gen(function*() {
      const judge = uniqueJudge()
      const { client, upstream } = yield* startServer(groups(judge))
      yield* upstream.setBehaviour(judge, FakeUpstream.ok("{\"route\": \"reasoning\"}"))
      const decided = Schema.decodeUnknownSync(DecisionBody)((yield* decision(client, "grouped")).json)
      assert.strictEqual(decided.selected.target, "reasoning")
      assert.deepStrictEqual(decided.fallbacks.map((f) => f.target), ["premium", "fast"])
      assert.deepStrictEqual<unknown>(decided.evidence, { source: "llm-classifier", label: "reasoning" })
      assert.strictEqual((yield* completion(client, "grouped")).selected, "reasoning-model")
      // the group's first target unavailable: the group's next one answers
      yield* upstream.script("reasoning-model", [FakeUpstream.status(503)])
      assert.strictEqual((yield* completion(client, "grouped")).selected, "premium-model")
    }))

  it.scopedLive("judge is never routable; `any` is a group like the others; an unknown name abstains", () =>
    Effect.gen(function*() {
      const judge = uniqueJudge()
      const { client, upstream } = yield* startServer(groups(judge))
      const selectedFor = (route: string) =>
        Effect.gen(function*() {
          yield* upstream.setBehaviour(judge, FakeUpstream.ok(JSON.stringify({ route })))
          const body = Schema.decodeUnknownSync(DecisionBody)((yield* decision(client, "grouped")).json)
          return { target: body.selected.target, source: body.evidence["source"] }
        })
      assert.deepStrictEqual(yield* selectedFor("judge"), { target: "premium", source: "abstained" })
      assert.deepStrictEqual(yield* selectedFor("any"), { target: "fast", source: "llm-classifier" })
      assert.deepStrictEqual(yield* selectedFor("fast"), { target: "fast", source: "llm-classifier" })
      assert.deepStrictEqual(yield* selectedFor("nobody"), { target: "premium", source: "abstained" })
    }))
})
