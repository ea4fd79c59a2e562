/**
 * A route with `classifier_fallback` through the real server: a stopped first judge hands over to
 * the live fallback (the evidence names both, the fallback counter on `/metrics` counts it), and
 * `GET /v1/judges` lists both judges with their roles, the route's posture and what was seen.
 */
import type * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import { assert, describe, it } from "@effect/vitest"
import * as D from "@switchyard-ts/testkit/DeploymentBuilder"
import * as FakeUpstream from "@switchyard-ts/testkit/FakeUpstream"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { capabilityRoute, startServer } from "./harness.js"

let counter = 0
/** Judge model ids unique to one test (the metric registry is process-wide). */
const unique = (what: string) => `${what}-${process.pid}-${++counter}`

const deployment = (stopped: string, live: string) => (upstreamUrl: string): D.Deployment => ({
  llm_clients: {
    sim: D.client("openai_chat", upstreamUrl, { max_retries: 0 }),
    judge: D.client("openai_chat", upstreamUrl, { max_retries: 0, timeout_ms: 3000 }),
    stopped: D.client("openai_chat", D.deadUrl, {
      max_retries: 0,
      timeout_ms: 3000,
      breaker: { failure_threshold: 5, cooldown_ms: 30000 }
    })
  },
  targets: {
    primary: D.target(stopped, "stopped"),
    backup: D.target(live, "judge"),
    weak: D.target("weak-model", "sim"),
    strong: D.target("strong-model", "sim")
  },
  routes: {
    auto: capabilityRoute("auto", "primary", { classifier_fallback: ["backup"], judge_failure: "fail_open" })
  }
})

const verdict = (p: number) =>
  FakeUpstream.ok(
    JSON.stringify({ crux: "a small local fix", primary_rule: "SUP-1", capability_boundary: "supported", p_solve: p })
  )

const get = (client: HttpClient.HttpClient, path: string) =>
  Effect.flatMap(client.execute(HttpClientRequest.get(path)), (response) => response.text)

const Judges = Schema.parseJson(Schema.Struct({
  judges: Schema.Array(Schema.Struct({
    target: Schema.String,
    model: Schema.String,
    llm_client: Schema.String,
    routes: Schema.Array(Schema.Struct({ route: Schema.String, role: Schema.String, judge_failure: Schema.String })),
    breaker: Schema.NullOr(Schema.Struct({
      state: Schema.String,
      opened_at: Schema.NullOr(Schema.String),
      shared: Schema.Boolean
    })),
    last_success_at: Schema.NullOr(Schema.String),
    last_failure: Schema.NullOr(Schema.Struct({ at: Schema.String, reason: Schema.String })),
    window: Schema.Struct({
      calls: Schema.Number,
      failures: Schema.Number,
      p50_ms: Schema.NullOr(Schema.Number),
      p99_ms: Schema.NullOr(Schema.Number)
    })
  }))
}))

describe("classifier_fallback through the server", () => {
  it.scopedLive("a stopped first judge: the fallback's verdict routes; evidence, metrics and /v1/judges say so", () =>
    Effect.gen(function*() {
      const stopped = unique("stopped-judge")
      const live = unique("live-judge")
      const { client, upstream } = yield* startServer(deployment(stopped, live))
      yield* upstream.setBehaviour(live, verdict(0.9))
      const response = yield* client.execute(
        HttpClientRequest.post("/v1/decision").pipe(HttpClientRequest.bodyUnsafeJson({
          input_format: "openai_chat",
          request: { model: "auto", messages: [{ role: "user", content: "fix the typo in README" }] }
        }))
      )
      assert.strictEqual(response.status, 200)
      const decided = yield* Effect.flatMap(
        response.json,
        Schema.decodeUnknown(
          Schema.Struct({ evidence: Schema.Unknown, selected: Schema.Struct({ model: Schema.String }) })
        )
      )
      assert.strictEqual(decided.selected.model, "weak-model")
      assert.deepStrictEqual(decided.evidence, {
        source: "llm-classifier",
        score: 0.9,
        threshold: 0.5,
        boundary: "supported",
        judge_model: live,
        judge_fallbacks: [{ model: stopped, reason: "transport" }]
      })

      const metrics = yield* get(client, "/metrics")
      const fallbackLine = metrics.split("\n").find((line) =>
        line.startsWith("switchyard_classifier_judge_fallbacks_total{") && line.includes(`judge_model="${stopped}"`)
      )
      assert.isDefined(fallbackLine)
      assert.include(fallbackLine ?? "", "reason=\"transport\"")
      assert.include(fallbackLine ?? "", "route=\"auto\"")
      assert.isTrue((fallbackLine ?? "").endsWith(" 1"), fallbackLine)
      assert.isUndefined(
        metrics.split("\n").find((line) =>
          line.startsWith("switchyard_classifier_fail_open_total{") && line.includes(stopped) && !line.endsWith(" 0")
        )
      )

      const judges = yield* Effect.flatMap(get(client, "/v1/judges"), Schema.decodeUnknown(Judges))
      assert.deepStrictEqual(judges.judges.map((j) => [j.target, j.model, j.llm_client, j.routes]), [
        ["primary", stopped, "stopped", [{ route: "auto", role: "primary", judge_failure: "fail_open" }]],
        ["backup", live, "judge", [{ route: "auto", role: "fallback", judge_failure: "fail_open" }]]
      ])
      const [first, second] = judges.judges
      // one failure of five: the stopped judge's breaker is still closed, and not shared (no Redis)
      assert.deepStrictEqual(first?.breaker, { state: "closed", opened_at: null, shared: false })
      assert.strictEqual(second?.breaker, null)
      assert.strictEqual(first?.last_success_at, null)
      assert.strictEqual(first?.last_failure?.reason, "transport")
      assert.deepStrictEqual([first?.window.calls, first?.window.failures], [1, 1])
      assert.isString(second?.last_success_at)
      assert.strictEqual(second?.last_failure, null)
      assert.deepStrictEqual([second?.window.calls, second?.window.failures], [1, 0])
      assert.isNumber(second?.window.p50_ms)
    }))
})
