/**
 * `GET /v1/stats` and `POST /v1/stats/reset` through the real server: exact counts after a scripted
 * traffic mix (buffered and streamed answers on two models, a fallback, a mid-stream failure, a
 * judge call and a judge failure), the empty shape after a reset, and the latency summaries'
 * sample bound.
 */
import type * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import { assert, describe, it } from "@effect/vitest"
import type { ChatCompletion } from "@switchyard-ts/protocol/OpenAiChat"
import * as Stats from "@switchyard-ts/routing/Stats"
import * as D from "@switchyard-ts/testkit/DeploymentBuilder"
import * as FakeUpstream from "@switchyard-ts/testkit/FakeUpstream"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { basicDeployment, routedAnswer, startServer } from "./harness.js"

/** The harness deployment (weak, strong, an unreachable gone-model) plus a judge and routes for each case. */
const deployment = (upstreamUrl: string): D.Deployment =>
  D.extend(basicDeployment()(upstreamUrl), {
    targets: { judge: D.target("judge-model", "sim") },
    routes: D.byId(
      D.passthrough("big", "strong"),
      D.random("failover", ["gone", "strong"], { weights: [1, 0] }),
      D.capability("auto", {
        classifier_target: "judge",
        weak_target: "weak",
        strong_target: "strong",
        base_threshold: 0.5,
        classify_trigger: "every_request",
        judge_failure: "fail_open"
      })
    )
  })

const usage = (prompt: number, completion: number, cached?: number) => ({
  prompt_tokens: prompt,
  completion_tokens: completion,
  total_tokens: prompt + completion,
  ...(cached === undefined ? {} : { prompt_tokens_details: { cached_tokens: cached } })
})

const weakAnswer = FakeUpstream.ok("weak answer", { usage: usage(10, 5) })
const strongAnswer = FakeUpstream.ok("strong answer", { usage: usage(20, 7, 4) })
const verdict = FakeUpstream.ok(
  JSON.stringify({ crux: "a small fix", primary_rule: "SUP-1", capability_boundary: "supported", p_solve: 0.9 }),
  { usage: usage(30, 2) }
)

const chat = (client: HttpClient.HttpClient, model: string, stream = false) =>
  client.execute(
    HttpClientRequest.post("/v1/chat/completions").pipe(
      HttpClientRequest.bodyUnsafeJson({ model, messages: [{ role: "user", content: "fix the typo" }], stream })
    )
  ).pipe(Effect.flatMap(routedAnswer))

const Latency = Schema.Struct({
  count: Schema.Number,
  total_ms: Schema.Number,
  min_ms: Schema.Number,
  max_ms: Schema.Number,
  avg_ms: Schema.Number,
  p50_ms: Schema.Number,
  p99_ms: Schema.Number
})
const Tokens = Schema.Record({ key: Schema.String, value: Schema.Number })
const ModelEntry = Schema.extend(
  Schema.Struct({ model_call_latency: Latency, total_latency: Latency }),
  Schema.Record({ key: Schema.String, value: Schema.Unknown })
)
const Section = Schema.Struct({
  total_requests: Schema.Number,
  total_errors: Schema.Number,
  total_tokens: Tokens,
  models: Schema.Record({ key: Schema.String, value: ModelEntry })
})
const Snapshot = Schema.extend(
  Section,
  Schema.Struct({
    routing_overhead: Latency,
    routing_fallbacks: Tokens,
    classifier: Section,
    algorithm_stats: Schema.Record({ key: Schema.String, value: Schema.Unknown })
  })
)

/** The raw body of `GET /v1/stats`. */
const statsJson = (client: HttpClient.HttpClient) => client.get("/v1/stats").pipe(Effect.flatMap((r) => r.json))
/** The body of `GET /v1/stats`, decoded. */
const stats = (client: HttpClient.HttpClient) => Effect.flatMap(statsJson(client), Schema.decodeUnknown(Snapshot))

/** Count, and order of the summary's figures (the values themselves are wall-clock times). */
const assertLatency = (latency: typeof Latency.Type | undefined, count: number) => {
  assert.isDefined(latency)
  if (latency === undefined) return
  assert.strictEqual(latency.count, count)
  if (count === 0) {
    assert.deepStrictEqual(latency, { count: 0, total_ms: 0, min_ms: 0, max_ms: 0, avg_ms: 0, p50_ms: 0, p99_ms: 0 })
    return
  }
  assert.isAtMost(latency.min_ms, latency.p50_ms)
  assert.isAtMost(latency.p50_ms, latency.p99_ms)
  assert.isAtMost(latency.p99_ms, latency.max_ms)
}

const emptyTokens = { prompt: 0, completion: 0, cached: 0, cache_creation: 0, reasoning: 0, total: 0 }
const emptyLatency = { count: 0, total_ms: 0, min_ms: 0, max_ms: 0, avg_ms: 0, p50_ms: 0, p99_ms: 0 }
const cost = (unknown: number) => ({
  known_usd: 0,
  total_usd: unknown === 0 ? 0 : null,
  unknown_calls: unknown,
  estimated_calls: 0,
  provider_reported_calls: 0
})
const emptyStats = {
  total_requests: 0,
  total_errors: 0,
  total_tokens: emptyTokens,
  cost: cost(0),
  models: {},
  routing_overhead: emptyLatency,
  routing_fallbacks: { context_window: 0, unavailable: 0 },
  classifier: { total_requests: 0, total_errors: 0, total_tokens: emptyTokens, cost: cost(0), models: {} },
  routes: {},
  algorithm_stats: {}
}

describe("/v1/stats", () => {
  it.scopedLive("counts a scripted traffic mix exactly, and a reset empties it", () =>
    Effect.gen(function*() {
      const { client, upstream } = yield* startServer(deployment)
      assert.deepStrictEqual(yield* statsJson(client), emptyStats)
      yield* upstream.setBehaviour("weak-model", weakAnswer)
      yield* upstream.setBehaviour("strong-model", strongAnswer)

      // buffered and streamed on two models
      assert.strictEqual((yield* chat(client, "fast")).status, 200)
      assert.strictEqual((yield* chat(client, "fast", true)).status, 200)
      assert.strictEqual((yield* chat(client, "big")).status, 200)
      assert.strictEqual((yield* chat(client, "big", true)).status, 200)
      // gone-model refuses the connection, strong-model answers
      const failedOver = yield* chat(client, "failover")
      assert.strictEqual(failedOver.selected, "strong-model")
      // the stream's headers arrive, then the connection is cut
      yield* upstream.setBehaviour("weak-model", FakeUpstream.CloseMidStream.make({ chunksBeforeClose: 1 }))
      const cut = yield* chat(client, "fast", true)
      assert.strictEqual(cut.status, 200)
      assert.notInclude(cut.text, "[DONE]")
      yield* upstream.setBehaviour("weak-model", weakAnswer)
      // a judge call that routes weak, then a failed one (fail_open routes strong)
      yield* upstream.setBehaviour("judge-model", verdict)
      assert.strictEqual((yield* chat(client, "auto")).selected, "weak-model")
      yield* upstream.setBehaviour("judge-model", FakeUpstream.status(500))
      const failedOpen = yield* chat(client, "auto")
      assert.strictEqual(failedOpen.selected, "strong-model")
      assert.strictEqual(failedOpen.source, "fail-open")

      const snapshot = yield* stats(client)
      assert.strictEqual(snapshot.total_requests, 9) // 8 requests, the failover's first candidate included
      assert.strictEqual(snapshot.total_errors, 2) // the failed candidate and the cut stream
      assert.deepStrictEqual(snapshot.total_tokens, {
        prompt: 110,
        completion: 43,
        cached: 16,
        cache_creation: 0,
        reasoning: 0,
        total: 153
      })
      assert.deepStrictEqual(Object.keys(snapshot.models), ["gone-model", "strong-model", "weak-model"])
      const weak = snapshot.models["weak-model"]
      const strong = snapshot.models["strong-model"]
      const gone = snapshot.models["gone-model"]
      assert.isDefined(weak)
      assert.isDefined(strong)
      assert.isDefined(gone)
      if (weak === undefined || strong === undefined || gone === undefined) return
      const { model_call_latency: weakCall, total_latency: weakTotal, ...weakCounts } = weak
      assert.deepStrictEqual(weakCounts, {
        calls: 4,
        errors: 1,
        request_pct: 44.44,
        prompt_tokens: 30,
        max_observed_context_tokens: 15,
        completion_tokens: 15,
        total_tokens: 45,
        token_pct: 29.41,
        cached_tokens: 0,
        cache_creation_tokens: 0,
        reasoning_tokens: 0,
        avg_prompt_tokens: 7.5,
        avg_completion_tokens: 3.75,
        cache_hit_rate: 0,
        theoretical_cache_hit_rate: 0,
        // no pricing: 3 full answers and the cut stream, all unknown
        cost: cost(4)
      })
      assertLatency(weakCall, 4) // the cut stream's headers came: a call
      assertLatency(weakTotal, 3) // but no full answer
      const { model_call_latency: strongCall, total_latency: strongTotal, ...strongCounts } = strong
      assert.deepStrictEqual(strongCounts, {
        calls: 4,
        errors: 0,
        request_pct: 44.44,
        prompt_tokens: 80,
        max_observed_context_tokens: 27,
        completion_tokens: 28,
        total_tokens: 108,
        token_pct: 70.59,
        cached_tokens: 16,
        cache_creation_tokens: 0,
        reasoning_tokens: 0,
        avg_prompt_tokens: 20,
        avg_completion_tokens: 7,
        cache_hit_rate: 0.2,
        theoretical_cache_hit_rate: 0,
        cost: cost(4)
      })
      assertLatency(strongCall, 4)
      assertLatency(strongTotal, 4)
      assert.strictEqual(gone.calls, 0)
      assert.strictEqual(gone.errors, 1)
      assertLatency(gone.model_call_latency, 0)
      assertLatency(snapshot.routing_overhead, 8)
      assert.deepStrictEqual(snapshot.routing_fallbacks, { context_window: 0, unavailable: 0 })

      assert.strictEqual(snapshot.classifier.total_requests, 2)
      assert.strictEqual(snapshot.classifier.total_errors, 1)
      assert.deepStrictEqual(snapshot.classifier.total_tokens, {
        prompt: 30,
        completion: 2,
        cached: 0,
        cache_creation: 0,
        reasoning: 0,
        total: 32
      })
      assert.deepStrictEqual(Object.keys(snapshot.classifier.models), ["judge-model"])
      const judge = snapshot.classifier.models["judge-model"]
      assert.strictEqual(judge?.calls, 1)
      assert.strictEqual(judge?.errors, 1)
      assert.strictEqual(judge?.request_pct, 50)
      assertLatency(judge?.model_call_latency, 1)
      assert.deepStrictEqual(snapshot.algorithm_stats, {})

      const reset = yield* client.post("/v1/stats/reset")
      assert.strictEqual(reset.status, 200)
      assert.deepStrictEqual(yield* reset.json, { status: "reset" })
      assert.deepStrictEqual(yield* statsJson(client), emptyStats)
    }))

  it.scopedLive("/v1/decision runs routing-time calls without counting them", () =>
    Effect.gen(function*() {
      const { client, upstream } = yield* startServer(deployment)
      yield* upstream.setBehaviour("judge-model", verdict)
      const response = yield* client.execute(
        HttpClientRequest.post("/v1/decision").pipe(HttpClientRequest.bodyUnsafeJson({
          input_format: "openai_chat",
          request: { model: "auto", messages: [{ role: "user", content: "fix the typo" }] }
        }))
      )
      assert.strictEqual(response.status, 200)
      assert.strictEqual((yield* upstream.requests).length, 1)
      assert.deepStrictEqual(yield* statsJson(client), emptyStats)
    }))
})

describe("Stats.LatencySummary", () => {
  it("keeps at most 10,000 samples; count, sum and extremes stay exact; percentiles stay in range", () => {
    const summary = new Stats.LatencySummary()
    for (let i = 1; i <= 25_000; i++) summary.record(i)
    assert.strictEqual(summary.retained, Stats.maxSamples)
    const snapshot = summary.snapshot()
    assert.strictEqual(snapshot.count, 25_000)
    assert.strictEqual(snapshot.total_ms, (25_000 * 25_001) / 2)
    assert.strictEqual(snapshot.min_ms, 1)
    assert.strictEqual(snapshot.max_ms, 25_000)
    assert.strictEqual(snapshot.avg_ms, 12_500.5)
    // the ring holds the last 10,000 samples (15,001..25,000)
    assert.strictEqual(snapshot.p50_ms, 20_001)
    assert.strictEqual(snapshot.p99_ms, 24_901)
    assert.isAtLeast(snapshot.p50_ms, snapshot.min_ms)
    assert.isAtMost(snapshot.p99_ms, snapshot.max_ms)
  })

  it("rounds to 2 decimals, ignores non-finite samples and clamps negative ones to 0", () => {
    const summary = new Stats.LatencySummary()
    summary.record(1.234)
    summary.record(Number.NaN)
    summary.record(Number.POSITIVE_INFINITY)
    summary.record(-5)
    assert.deepStrictEqual(summary.snapshot(), {
      count: 2,
      total_ms: 1.23,
      min_ms: 0,
      max_ms: 1.23,
      avg_ms: 0.62,
      p50_ms: 1.23,
      p99_ms: 1.23
    })
  })
})

describe("Stats.make", () => {
  it("settles a run's routing-time calls: the served one is an answer call, the others classifier calls", () => {
    const recorder = Stats.make()
    const weakUsage = { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 }
    const reply = (model: string, usage: typeof weakUsage): ChatCompletion => ({
      id: "c",
      object: "chat.completion",
      created: 0,
      model,
      choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }],
      usage
    })
    // An escalation's weak turn, discarded, then the weak target's turn that answered (served), and
    // a failed call: only the served one's reply is the answer, the same model's other call is not.
    const served = reply("weak", weakUsage)
    const discarded = reply("weak", { prompt_tokens: 9, completion_tokens: 4, total_tokens: 13 })
    recorder.settle([
      {
        kind: "judge",
        model: "judge",
        ok: true,
        latencyMs: 3,
        endedAtMs: 3,
        usage: { prompt_tokens: 7, completion_tokens: 1, total_tokens: 8 }
      },
      {
        kind: "weak_turn",
        model: "weak",
        ok: true,
        latencyMs: 5,
        endedAtMs: 8,
        usage: discarded.usage,
        reply: discarded
      },
      { kind: "executor_turn", model: "weak", ok: true, latencyMs: 12, endedAtMs: 20, usage: weakUsage, reply: served },
      {
        kind: "redo_turn",
        model: "weak",
        ok: false,
        error: "upstream_error",
        latencyMs: 2,
        endedAtMs: 22,
        usage: undefined
      }
    ], served)
    recorder.answered("weak", weakUsage, 20)
    const snapshot = recorder.snapshot()
    assert.strictEqual(snapshot.total_requests, 1)
    assert.strictEqual(snapshot.models["weak"]?.calls, 1)
    assert.strictEqual(snapshot.models["weak"]?.prompt_tokens, 10)
    assert.strictEqual(snapshot.models["weak"]?.model_call_latency.max_ms, 12)
    assert.strictEqual(snapshot.models["weak"]?.total_latency.max_ms, 20)
    assert.strictEqual(snapshot.classifier.total_requests, 3)
    assert.strictEqual(snapshot.classifier.total_errors, 1)
    assert.strictEqual(snapshot.classifier.models["judge"]?.prompt_tokens, 7)
    assert.strictEqual(snapshot.classifier.models["weak"]?.prompt_tokens, 9)
    assert.strictEqual(snapshot.classifier.models["weak"]?.errors, 1)
    recorder.reset()
    assert.strictEqual(recorder.snapshot().classifier.total_requests, 0)
  })
})
