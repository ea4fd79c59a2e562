/**
 * What an operator sees: the span tree and attributes (in-memory exporter on the real server),
 * exact metric deltas, a strict parse of the Prometheus exposition, and that secrets and judge
 * error bodies never reach logs, spans or error bodies.
 */
import type * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import { assert, describe, it } from "@effect/vitest"
import { InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base"
import * as Telemetry from "@switchyard-ts/server/Telemetry"
import * as D from "@switchyard-ts/testkit/DeploymentBuilder"
import * as FakeUpstream from "@switchyard-ts/testkit/FakeUpstream"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Logger from "effect/Logger"
import * as Option from "effect/Option"
import * as TestClock from "effect/TestClock"
import { capabilityRoute, spansText, startServer } from "./harness.js"

let counter = 0
const unique = (prefix: string) => `${prefix}-${process.pid}-${++counter}`

const deployment =
  (ids: { readonly judge: string; readonly weak: string; readonly strong: string }) =>
  (upstreamUrl: string): D.Deployment => ({
    llm_clients: {
      sim: D.client("openai_chat", upstreamUrl, { api_key_env: "SWITCHYARD_TEST_KEY", max_retries: 0 }),
      judge: D.client("openai_chat", upstreamUrl, {
        api_key_env: "SWITCHYARD_TEST_KEY",
        max_retries: 0,
        timeout_ms: 2000
      })
    },
    targets: {
      judge: D.target(ids.judge, "judge"),
      weak: D.target(ids.weak, "sim"),
      strong: D.target(ids.strong, "sim")
    },
    routes: D.byId(
      capabilityRoute("auto", "judge", { judge_failure: "error" }),
      capabilityRoute("open", "judge", { judge_failure: "fail_open" }),
      D.passthrough("fast", "weak")
    )
  })

const apiKey = "sk-test-SECRET-0123456789"
const withKey = Effect.withConfigProvider(ConfigProvider.fromMap(new Map([["SWITCHYARD_TEST_KEY", apiKey]])))

const verdict = (p: number) =>
  FakeUpstream.ok(
    JSON.stringify({ crux: "small fix", primary_rule: "SUP-1", capability_boundary: "supported", p_solve: p }),
    {
      usage: { prompt_tokens: 50, completion_tokens: 10, total_tokens: 60 }
    }
  )

const post = (client: HttpClient.HttpClient, model: string, extra: Record<string, unknown> = {}) =>
  Effect.flatMap(
    client.execute(
      HttpClientRequest.post("/v1/chat/completions").pipe(
        HttpClientRequest.bodyUnsafeJson({ model, messages: [{ role: "user", content: "fix it" }], ...extra })
      )
    ),
    (response) => Effect.map(response.text, (text) => ({ status: response.status, text }))
  )

const scrape = (client: HttpClient.HttpClient) =>
  Effect.flatMap(client.execute(HttpClientRequest.get("/metrics")), (response) => response.text)

/** The value of one series (labels given as a subset), 0 when absent. */
const sample = (text: string, name: string, labels: Readonly<Record<string, string>> = {}): number => {
  for (const line of text.split("\n")) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue
    if (Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) {
      return Number(line.slice(line.lastIndexOf(" ") + 1))
    }
  }
  return 0
}

const telemetryWith = (exporter: InMemorySpanExporter) =>
  Telemetry.layerWith({ spanProcessor: new SimpleSpanProcessor(exporter) })

const spanNamed = (spans: ReadonlyArray<ReadableSpan>, name: string) => {
  const span = spans.find((s) => s.name === name)
  assert.isDefined(span, `span ${name} was exported`)
  return span
}
const parentId = (span: ReadableSpan | undefined) => span?.parentSpanContext?.spanId

describe("spans", () => {
  it.scopedLive("a verdict-routed request: libsy.run → Judge.consult → libsy.client_call, and the answer call", () =>
    Effect.gen(function*() {
      const ids = { judge: unique("judge"), weak: unique("weak"), strong: unique("strong") }
      const exporter = new InMemorySpanExporter()
      const { client, upstream } = yield* withKey(startServer(deployment(ids), { telemetry: telemetryWith(exporter) }))
      yield* upstream.setBehaviour(ids.judge, verdict(0.9))
      assert.strictEqual((yield* post(client, "auto")).status, 200)
      const spans = exporter.getFinishedSpans()
      const run = spanNamed(spans, "libsy.run")
      assert.strictEqual(run?.attributes["switchyard.route"], "auto")
      assert.strictEqual(run?.attributes["switchyard.algorithm"], "llm_task_classifier")
      assert.strictEqual(run?.attributes["selected_model"], ids.weak)
      assert.strictEqual(run?.attributes["outcome"], "success")
      assert.strictEqual(run?.attributes["evidence.source"], "llm-classifier")
      assert.strictEqual(run?.attributes["evidence.score"], 0.9)
      assert.strictEqual(run?.attributes["evidence.threshold"], 0.5)
      const consult = spanNamed(spans, "Judge.consult")
      assert.strictEqual(parentId(consult), run?.spanContext().spanId)
      const calls = spans.filter((s) => s.name === "libsy.client_call")
      assert.strictEqual(calls.length, 2)
      const judgeCall = calls.find((s) => s.attributes["gen_ai.request.model"] === ids.judge)
      const answerCall = calls.find((s) => s.attributes["gen_ai.request.model"] === ids.weak)
      assert.strictEqual(parentId(judgeCall), consult?.spanContext().spanId)
      assert.strictEqual(parentId(answerCall), run?.spanContext().spanId)
      assert.strictEqual(answerCall?.attributes["switchyard.candidate"], 1)
      assert.strictEqual(answerCall?.attributes["outcome"], "ok")
      assert.strictEqual(judgeCall?.attributes["gen_ai.usage.input_tokens"], 50)
      assert.strictEqual(judgeCall?.attributes["gen_ai.usage.output_tokens"], 10)
      assert.strictEqual(judgeCall?.attributes["gen_ai.response.model"], ids.judge)
      assert.strictEqual(judgeCall?.attributes["gen_ai.request.max_tokens"], 4096)
    }))

  it.scoped("a fail-open request (judge stalled past its deadline, TestClock): reason timeout on libsy.run", () =>
    Effect.gen(function*() {
      const ids = { judge: unique("judge"), weak: unique("weak"), strong: unique("strong") }
      const exporter = new InMemorySpanExporter()
      const { client, upstream } = yield* withKey(startServer(deployment(ids), { telemetry: telemetryWith(exporter) }))
      yield* upstream.setBehaviour(ids.judge, FakeUpstream.stall)
      const fiber = yield* Effect.fork(post(client, "open"))
      yield* upstream.awaitRequest(ids.judge)
      yield* TestClock.adjust("2 seconds")
      assert.strictEqual((yield* Fiber.join(fiber)).status, 200)
      const spans = exporter.getFinishedSpans()
      const run = spanNamed(spans, "libsy.run")
      assert.strictEqual(run?.attributes["evidence.source"], "fail-open")
      assert.strictEqual(run?.attributes["evidence.reason"], "timeout")
      assert.strictEqual(run?.attributes["selected_model"], ids.strong)
      const judgeCall = spans.find((s) =>
        s.name === "libsy.client_call" && s.attributes["gen_ai.request.model"] === ids.judge
      )
      assert.strictEqual(judgeCall?.attributes["outcome"], "error")
      assert.strictEqual(judgeCall?.attributes["error.type"], "timeout")
    }))

  it.scopedLive("an error-posture 502: libsy.run outcome error with error.type JudgeUnavailable", () =>
    Effect.gen(function*() {
      const ids = { judge: unique("judge"), weak: unique("weak"), strong: unique("strong") }
      const exporter = new InMemorySpanExporter()
      const { client, upstream } = yield* withKey(startServer(deployment(ids), { telemetry: telemetryWith(exporter) }))
      yield* upstream.setBehaviour(ids.judge, FakeUpstream.status(503))
      assert.strictEqual((yield* post(client, "auto")).status, 502)
      const run = spanNamed(exporter.getFinishedSpans(), "libsy.run")
      assert.strictEqual(run?.attributes["outcome"], "error")
      assert.strictEqual(run?.attributes["error.type"], "JudgeUnavailable")
      assert.isUndefined(run?.attributes["selected_model"])
    }))
})

describe("trace context", () => {
  it.scopedLive("a caller's traceparent is the parent of libsy.run; the upstream gets libsy.client_call's; no platform http spans", () =>
    Effect.gen(function*() {
      const ids = { judge: unique("judge"), weak: unique("weak"), strong: unique("strong") }
      const exporter = new InMemorySpanExporter()
      const { client, upstream } = yield* withKey(startServer(deployment(ids), { telemetry: telemetryWith(exporter) }))
      const traceId = "0af7651916cd43dd8448eb211c80319c"
      const callerSpanId = "b7ad6b7169203331"
      const response = yield* client.execute(
        HttpClientRequest.post("/v1/chat/completions").pipe(
          HttpClientRequest.setHeader("traceparent", `00-${traceId}-${callerSpanId}-01`),
          HttpClientRequest.bodyUnsafeJson({ model: "fast", messages: [{ role: "user", content: "fix it" }] })
        )
      ).pipe(Effect.withTracerEnabled(false))
      assert.strictEqual(response.status, 200)
      const spans = exporter.getFinishedSpans()
      const run = spanNamed(spans, "libsy.run")
      assert.strictEqual(run?.spanContext().traceId, traceId)
      assert.strictEqual(parentId(run), callerSpanId)
      const call = spanNamed(spans, "libsy.client_call")
      assert.strictEqual(parentId(call), run?.spanContext().spanId)
      const sent = yield* upstream.awaitRequest(ids.weak)
      assert.strictEqual(sent.headers["traceparent"], `00-${traceId}-${call?.spanContext().spanId}-01`)
      assert.deepStrictEqual(
        spans.filter((s) => s.name.startsWith("http.") || s.name === "POST").map((s) => s.name),
        []
      )
    }))
})

describe("trace context without a span exporter", () => {
  it.scopedLive("no exporter: tracing is off, and the caller's traceparent reaches the upstream unchanged", () =>
    Effect.gen(function*() {
      const ids = { judge: unique("judge"), weak: unique("weak"), strong: unique("strong") }
      const { client, upstream } = yield* withKey(startServer(deployment(ids)))
      const traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
      const response = yield* client.execute(
        HttpClientRequest.post("/v1/chat/completions").pipe(
          HttpClientRequest.setHeader("traceparent", traceparent),
          HttpClientRequest.bodyUnsafeJson({ model: "fast", messages: [{ role: "user", content: "fix it" }] })
        )
      ).pipe(Effect.withTracerEnabled(false))
      assert.strictEqual(response.status, 200)
      const sent = yield* upstream.awaitRequest(ids.weak)
      assert.strictEqual(sent.headers["traceparent"], traceparent)
    }))
})

describe("metrics", () => {
  it.scopedLive("exact deltas: a verdict-routed answer, a fail-open, an error-posture failure", () =>
    Effect.gen(function*() {
      const ids = { judge: unique("judge"), weak: unique("weak"), strong: unique("strong") }
      const { client, upstream } = yield* withKey(startServer(deployment(ids)))
      yield* upstream.setBehaviour(ids.judge, verdict(0.9))
      yield* upstream.setBehaviour(
        ids.weak,
        FakeUpstream.ok("done", { usage: { prompt_tokens: 7, completion_tokens: 3, total_tokens: 10 } })
      )
      yield* upstream.setBehaviour(ids.strong, FakeUpstream.ok("done"))
      const before = yield* scrape(client)
      assert.strictEqual((yield* post(client, "auto")).status, 200)
      const after = yield* scrape(client)
      const delta = (name: string, labels: Readonly<Record<string, string>> = {}) =>
        sample(after, name, labels) - sample(before, name, labels)
      assert.strictEqual(delta("switchyard_requests_total", { model: ids.weak }), 1)
      assert.strictEqual(delta("switchyard_errors_total", { model: ids.weak }), 0)
      assert.strictEqual(delta("switchyard_llm_calls_total", { selected_model: ids.judge, outcome: "ok" }), 1)
      assert.strictEqual(delta("switchyard_llm_calls_total", { selected_model: ids.weak, outcome: "ok" }), 1)
      assert.strictEqual(delta("switchyard_decisions_total", { selected_model: ids.weak }), 1)
      assert.strictEqual(delta("switchyard_prompt_tokens_total", { model: ids.weak }), 7)
      assert.strictEqual(delta("switchyard_completion_tokens_total", { model: ids.weak }), 3)
      assert.strictEqual(delta("switchyard_model_call_latency_ms_count", { model: ids.weak }), 1)
      assert.strictEqual(delta("switchyard_total_latency_ms_count", { model: ids.weak }), 1)
      assert.strictEqual(delta("switchyard_routing_overhead_ms_count", { algorithm: "llm_task_classifier" }), 1)
      assert.isAtLeast(delta("switchyard_client_responses_total", { outcome: "success" }), 1)
      assert.isAtLeast(delta("switchyard_upstream_attempts_total", { outcome: "success", code: "200" }), 2)

      yield* upstream.setBehaviour(ids.judge, FakeUpstream.status(503))
      const beforeFailures = yield* scrape(client)
      assert.strictEqual((yield* post(client, "open")).status, 200)
      assert.strictEqual((yield* post(client, "auto")).status, 502)
      const afterFailures = yield* scrape(client)
      const failureDelta = (name: string, labels: Readonly<Record<string, string>> = {}) =>
        sample(afterFailures, name, labels) - sample(beforeFailures, name, labels)
      // Only the request actually routed without a verdict counts; the 502 does not.
      assert.strictEqual(
        failureDelta("switchyard_classifier_fail_open_total", { judge_model: ids.judge, reason: "upstream_5xx" }),
        1
      )
      assert.strictEqual(failureDelta("switchyard_requests_total", { model: ids.strong }), 1)
      assert.strictEqual(failureDelta("switchyard_llm_calls_total", { selected_model: ids.judge, outcome: "error" }), 2)
      assert.strictEqual(failureDelta("switchyard_decisions_total", { selected_model: ids.strong }), 1)
    }))

  it.scopedLive("/metrics is a strictly valid Prometheus text exposition with every documented family", () =>
    Effect.gen(function*() {
      const ids = { judge: unique("judge"), weak: unique("weak"), strong: unique("strong") }
      const { client, upstream } = yield* withKey(startServer(deployment(ids)))
      yield* upstream.setBehaviour(ids.judge, verdict(0.2))
      yield* upstream.setBehaviour(
        ids.strong,
        FakeUpstream.ok("ok", { usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } })
      )
      yield* post(client, "open")
      yield* post(client, "fast", { messages: "invalid" })
      const text = yield* scrape(client)
      const families = parseExposition(text)
      for (
        const name of [
          "switchyard_build_info",
          "switchyard_requests_total",
          "switchyard_errors_total",
          "switchyard_total_requests",
          "switchyard_total_errors",
          "switchyard_llm_calls_total",
          "switchyard_llm_call_duration_ms",
          "switchyard_routing_overhead_ms",
          "switchyard_model_call_latency_ms",
          "switchyard_total_latency_ms",
          "switchyard_runs_total",
          "switchyard_run_duration_ms",
          "switchyard_decisions_total",
          "switchyard_upstream_attempts_total",
          "switchyard_router_retry_recovered_total",
          "switchyard_client_responses_total",
          "switchyard_prompt_tokens_total",
          "switchyard_completion_tokens_total"
        ]
      ) {
        assert.isTrue(families.has(name), `family ${name} is exposed`)
      }
      assert.strictEqual(families.get("switchyard_requests_total"), "counter")
      assert.strictEqual(families.get("switchyard_total_requests"), "gauge")
      assert.strictEqual(families.get("switchyard_routing_overhead_ms"), "histogram")
      const overheadBuckets = text.split("\n").filter((l) => l.startsWith("switchyard_routing_overhead_ms_bucket{"))
      assert.include(overheadBuckets[0] ?? "", "le=\"0.1\"")
    }))
})

/**
 * A strict reader of the Prometheus text format (0.0.4): HELP/TYPE lines, sample syntax, label
 * escaping, TYPE before samples, histogram `_bucket` (with `le`, ending at `+Inf` equal to
 * `_count`), `_sum` and `_count`. Returns family name → type; throws on any violation.
 */
const parseExposition = (text: string): Map<string, string> => {
  const types = new Map<string, string>()
  const metricName = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/
  const sampleLine = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (-?[0-9.e+-]+|NaN|\+Inf|-Inf)( -?\d+)?$/
  const label = /^([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"$/
  const infBuckets = new Map<string, number>()
  const counts = new Map<string, number>()
  const lines = text.split("\n")
  assert.strictEqual(lines[lines.length - 1], "", "exposition ends with a newline")
  for (const line of lines) {
    if (line === "") continue
    if (line.startsWith("# HELP ")) {
      assert.match(line.slice(7).split(" ")[0] ?? "", metricName, line)
      continue
    }
    if (line.startsWith("# TYPE ")) {
      const [name, type] = line.slice(7).split(" ")
      assert.match(name ?? "", metricName, line)
      assert.include(["counter", "gauge", "histogram", "summary", "untyped"], type ?? "", line)
      assert.isFalse(types.has(name ?? ""), `one TYPE line for ${name}`)
      types.set(name ?? "", type ?? "")
      continue
    }
    // Other comment lines (e.g. `# UNIT`) are plain comments in the 0.0.4 text format.
    if (line.startsWith("#")) continue
    const match = sampleLine.exec(line)
    assert.isNotNull(match, `sample syntax: ${line}`)
    const name = match?.[1] ?? ""
    const labels = new Map<string, string>()
    const body = match?.[3] ?? ""
    // Split labels on commas outside quotes.
    let current = ""
    let quoted = false
    for (let i = 0; i < body.length; i++) {
      const c = body[i] ?? ""
      if (c === "\\" && quoted) {
        current += c + (body[i + 1] ?? "")
        i++
        continue
      }
      if (c === "\"") quoted = !quoted
      if (c === "," && !quoted) {
        labels.set(...parseLabel(current, label))
        current = ""
        continue
      }
      current += c
    }
    if (current !== "") labels.set(...parseLabel(current, label))
    const family = types.has(name)
      ? name
      : [...types.keys()].find((f) =>
        types.get(f) === "histogram" && [`${f}_bucket`, `${f}_sum`, `${f}_count`].includes(name)
      )
    assert.isDefined(family, `TYPE declared before sample ${name}`)
    if (family !== name && family !== undefined) {
      const key = `${family}|${[...labels].filter(([k]) => k !== "le").map(([k, v]) => `${k}=${v}`).sort().join(",")}`
      if (name.endsWith("_bucket")) {
        assert.isTrue(labels.has("le"), `bucket has le: ${line}`)
        if (labels.get("le") === "+Inf") infBuckets.set(key, Number(match?.[4]))
      }
      if (name.endsWith("_count")) counts.set(key, Number(match?.[4]))
    }
  }
  for (const [key, count] of counts) {
    assert.strictEqual(infBuckets.get(key), count, `+Inf bucket equals _count for ${key}`)
  }
  return types
}

const parseLabel = (text: string, pattern: RegExp): [string, string] => {
  const match = pattern.exec(text)
  assert.isNotNull(match, `label syntax: ${text}`)
  return [match?.[1] ?? "", match?.[2] ?? ""]
}

describe("secrets", () => {
  it.scopedLive("an API key and a judge's error body never reach logs, spans or error bodies", () =>
    Effect.gen(function*() {
      const ids = { judge: unique("judge"), weak: unique("weak"), strong: unique("strong") }
      const exporter = new InMemorySpanExporter()
      const logs: Array<string> = []
      const capture = Logger.make(({ annotations, message }) => {
        logs.push(JSON.stringify({ message, annotations: [...annotations] }))
      })
      const { client, upstream } = yield* withKey(
        startServer(deployment(ids), { telemetry: telemetryWith(exporter) }, Option.some(capture))
      )
      const marker = "MARKER-the-user-said-their-password-is-hunter2"
      yield* upstream.setBehaviour(
        ids.judge,
        FakeUpstream.status(500, { message: `internal error while reading: ${marker}` })
      )
      yield* upstream.setBehaviour(ids.weak, FakeUpstream.status(401, { message: `invalid api key ${apiKey}` }))
      const judged = yield* post(client, "auto")
      const failOpen = yield* post(client, "open")
      const answered = yield* post(client, "fast")
      assert.strictEqual(judged.status, 502)
      assert.strictEqual(failOpen.status, 200)
      assert.strictEqual(answered.status, 401)
      // The upstream really received the key, and the logs are not empty.
      assert.strictEqual((yield* upstream.requests)[0]?.headers["authorization"], `Bearer ${apiKey}`)
      assert.isAbove(logs.length, 0)
      assert.isTrue(logs.some((line) => line.includes("request")))
      const spans = spansText(exporter)
      for (const haystack of [judged.text, failOpen.text, answered.text, logs.join("\n"), spans]) {
        assert.notInclude(haystack, apiKey)
        assert.notInclude(haystack, marker)
      }
    }))
})
