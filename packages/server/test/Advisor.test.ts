/**
 * Advisor routes through the real server against the testkit upstream: APPROVE, REDO, an advisor
 * that is down under both `fail_open` settings (and stalled under `fail_open = false`), streaming
 * replay of the released turn, `/v1/decision` with the gate's `response`, and the gate's metrics.
 */
import type * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import { assert, describe, it } from "@effect/vitest"
import { ChatCompletion, ChatCompletionChunk, decodeOptions } from "@switchyard-ts/protocol/OpenAiChat"
import * as AdvisorPrompt from "@switchyard-ts/routing/AdvisorPrompt"
import * as D from "@switchyard-ts/testkit/DeploymentBuilder"
import * as FakeUpstream from "@switchyard-ts/testkit/FakeUpstream"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"
import * as TestClock from "effect/TestClock"
import { startServer } from "./harness.js"

const deployment = (upstreamUrl: string): D.Deployment => ({
  llm_clients: {
    sim: D.client("openai_chat", upstreamUrl, { max_retries: 0 }),
    review: D.client("openai_chat", upstreamUrl, { max_retries: 0, timeout_ms: 3000 }),
    stopped: D.client("openai_chat", D.deadUrl, { max_retries: 0, timeout_ms: 3000 })
  },
  targets: {
    exec: D.target("exec-model", "sim"),
    reviewer: D.target("advisor-model", "review"),
    stopped_reviewer: D.target("advisor-model", "stopped")
  },
  routes: D.byId(
    ...([["open", true], ["closed", false]] as const).flatMap(([name, fail_open]) =>
      ([["", "reviewer"], ["-down", "stopped_reviewer"]] as const).map(([suffix, advisor_target]) =>
        D.advisor(`gate-${name}${suffix}`, { executor_target: "exec", advisor_target, max_reviews: 10, fail_open })
      )
    )
  )
})

const task = { role: "user", content: "fix the off-by-one in pager.ts" }
const chat = (model: string, extra: Record<string, unknown> = {}) => ({ model, messages: [task], ...extra })

const ErrorBody = Schema.Struct({
  error: Schema.Struct({ message: Schema.String, type: Schema.String, code: Schema.String })
})
const DecisionBody = Schema.Struct({
  selected: Schema.Struct({ target: Schema.String, model: Schema.String }),
  fallbacks: Schema.Array(Schema.Unknown),
  evidence: Schema.Record({ key: Schema.String, value: Schema.Unknown }),
  response: ChatCompletion
})

const post = (client: HttpClient.HttpClient, path: string, body: unknown, session = "sess-1") =>
  client.execute(
    HttpClientRequest.post(path).pipe(
      HttpClientRequest.bodyUnsafeJson(body),
      HttpClientRequest.setHeader("x-switchyard-session-id", session)
    )
  )

const completion = (client: HttpClient.HttpClient, model: string, session?: string) =>
  Effect.flatMap(
    post(client, "/v1/chat/completions", chat(model), session),
    (response) =>
      Effect.map(response.json, (json) => ({
        status: response.status,
        json,
        selected: response.headers["x-switchyard-selected-model"],
        source: response.headers["x-switchyard-evidence-source"],
        reason: response.headers["x-switchyard-evidence-reason"]
      }))
  )

const contentOf = (json: unknown): string =>
  Schema.decodeUnknownSync(ChatCompletion, decodeOptions)(json).choices[0]?.message.content ?? ""

/** The value of one series on `/metrics` (0 when absent); `labels` must all appear on the line. */
const series = (client: HttpClient.HttpClient, name: string, labels: Readonly<Record<string, string>> = {}) =>
  Effect.map(Effect.flatMap(client.execute(HttpClientRequest.get("/metrics")), (r) => r.text), (text) => {
    const line = text.split("\n").find((l) =>
      (l.startsWith(`${name}{`) || l.startsWith(`${name} `)) &&
      Object.entries(labels).every(([k, v]) => l.includes(`${k}="${v}"`))
    )
    return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(" ") + 1))
  })

const messagesOf = (body: unknown): ReadonlyArray<unknown> =>
  Predicate.hasProperty(body, "messages") && Array.isArray(body.messages) ? body.messages : assert.fail("no messages")

describe("advisor routes through the server", () => {
  it.scopedLive("APPROVE releases the executor's turn; the advisor saw our reviewer prompt and the task", () =>
    Effect.gen(function*() {
      const { client, upstream } = yield* startServer(deployment)
      yield* upstream.setBehaviour("exec-model", FakeUpstream.ok("Fixed: the loop now stops at length - 1."))
      yield* upstream.setBehaviour("advisor-model", FakeUpstream.ok("APPROVE"))
      const before = yield* series(client, "switchyard_advisor_gate_reviews_total", {
        verdict: "approve",
        trigger: "no_tool_call"
      })
      const answered = yield* completion(client, "gate-open")
      assert.strictEqual(answered.status, 200)
      assert.strictEqual(contentOf(answered.json), "Fixed: the loop now stops at length - 1.")
      assert.strictEqual(answered.selected, "exec-model")
      assert.strictEqual(answered.source, "advisor")
      const requests = yield* upstream.requests
      const consults = requests.filter((r) => r.model === "advisor-model")
      assert.strictEqual(consults.length, 1)
      const consult = JSON.stringify(consults[0]?.body)
      assert.include(consult, JSON.stringify(AdvisorPrompt.reviewerSystemPrompt))
      assert.include(consult, "fix the off-by-one in pager.ts")
      assert.include(consult, "Fixed: the loop now stops at length - 1.")
      assert.strictEqual(requests.filter((r) => r.model === "exec-model").length, 1)
      assert.strictEqual(
        (yield* series(client, "switchyard_advisor_gate_reviews_total", {
          verdict: "approve",
          trigger: "no_tool_call"
        })) - before,
        1
      )
    }))

  it.scopedLive("REDO: the executor is called twice, the second request carries the turn and the feedback", () =>
    Effect.gen(function*() {
      const { client, upstream } = yield* startServer(deployment)
      yield* upstream.script("exec-model", [
        FakeUpstream.ok("first try", {
          usage: {
            prompt_tokens: 1200,
            completion_tokens: 80,
            total_tokens: 1280,
            prompt_tokens_details: { cached_tokens: 900, cache_creation_tokens: 100 }
          }
        }),
        FakeUpstream.ok("second try, with a test", {
          usage: { prompt_tokens: 1300, completion_tokens: 95, total_tokens: 1395 }
        })
      ])
      yield* upstream.setBehaviour("advisor-model", FakeUpstream.ok("REDO: add a regression test for an empty page"))
      const discardedBefore = yield* series(client, "switchyard_advisor_gate_discarded_turns_total")
      const tokensOf = (kind: string) => series(client, "switchyard_advisor_gate_discarded_tokens_total", { kind })
      const kinds = ["input", "cached", "cache_creation", "output"] as const
      const tokensBefore = yield* Effect.forEach(kinds, tokensOf)
      yield* client.execute(HttpClientRequest.post("/v1/stats/reset"))
      const answered = yield* completion(client, "gate-open")
      assert.strictEqual(answered.status, 200)
      assert.strictEqual(contentOf(answered.json), "second try, with a test")
      const executed = (yield* upstream.requests).filter((r) => r.model === "exec-model")
      assert.strictEqual(executed.length, 2)
      assert.deepStrictEqual(messagesOf(executed[0]?.body), [task])
      assert.deepStrictEqual(messagesOf(executed[1]?.body), [
        task,
        { role: "assistant", content: "first try" },
        { role: "user", content: `${AdvisorPrompt.redoFeedbackPrefix}add a regression test for an empty page` }
      ])
      assert.strictEqual((yield* series(client, "switchyard_advisor_gate_discarded_turns_total")) - discardedBefore, 1)
      // Only the discarded (first) turn's usage: 1200 prompt = 200 input + 900 cached + 100 written.
      const tokensAfter = yield* Effect.forEach(kinds, tokensOf)
      assert.deepStrictEqual(tokensAfter.map((after, i) => after - (tokensBefore[i] ?? 0)), [200, 900, 100, 80])
      // /v1/stats: the same, as the change since the reset
      const stats: unknown = yield* Effect.flatMap(client.execute(HttpClientRequest.get("/v1/stats")), (r) => r.json)
      const gate =
        Predicate.hasProperty(stats, "algorithm_stats") && Predicate.hasProperty(stats.algorithm_stats, "advisor_gate")
          ? stats.algorithm_stats.advisor_gate
          : assert.fail("no advisor_gate block")
      assert.deepStrictEqual(Predicate.hasProperty(gate, "discarded") ? gate.discarded : undefined, {
        turns: 1,
        tokens: { input: 200, cached: 900, cache_creation: 100, output: 80 }
      })
    }))

  it.scopedLive("an advisor that is down: fail_open releases the turn (200), fail_open = false is a 502", () =>
    Effect.gen(function*() {
      const { client, upstream } = yield* startServer(deployment)
      yield* upstream.setBehaviour("exec-model", FakeUpstream.ok("released anyway"))
      const failuresBefore = yield* series(client, "switchyard_advisor_gate_consult_failures_total", {
        reason: "transport"
      })
      const open = yield* completion(client, "gate-open-down")
      assert.strictEqual(open.status, 200)
      assert.strictEqual(contentOf(open.json), "released anyway")
      assert.strictEqual(open.source, "advisor")
      assert.strictEqual(open.reason, "transport")
      const closed = yield* completion(client, "gate-closed-down")
      assert.strictEqual(closed.status, 502)
      const error = Schema.decodeUnknownSync(ErrorBody)(closed.json).error
      assert.deepStrictEqual([error.type, error.code], ["upstream_error", "upstream_error"])
      assert.include(error.message, "advisor advisor-model is unreachable")
      assert.strictEqual(
        (yield* series(client, "switchyard_advisor_gate_consult_failures_total", { reason: "transport" })) -
          failuresBefore,
        2
      )
    }))

  it.scopedLive("an advisor answering 500: fail_open → 200, fail_open = false → 502 naming the advisor, never its body", () =>
    Effect.gen(function*() {
      const { client, upstream } = yield* startServer(deployment)
      yield* upstream.setBehaviour("exec-model", FakeUpstream.ok("my answer"))
      yield* upstream.setBehaviour(
        "advisor-model",
        FakeUpstream.status(500, { message: "the user asked: fix the off-by-one" })
      )
      const open = yield* completion(client, "gate-open")
      assert.deepStrictEqual([open.status, open.reason], [200, "upstream_5xx"])
      const closed = yield* completion(client, "gate-closed")
      assert.strictEqual(closed.status, 502)
      assert.strictEqual(
        Schema.decodeUnknownSync(ErrorBody)(closed.json).error.message,
        "advisor advisor-model answered HTTP 500"
      )
    }))

  it.scoped("a stalled advisor under fail_open = false is a 504 upstream_timeout", () =>
    Effect.gen(function*() {
      const { client, upstream } = yield* startServer(deployment)
      yield* upstream.setBehaviour("exec-model", FakeUpstream.ok("waiting for review"))
      yield* upstream.setBehaviour("advisor-model", FakeUpstream.stall)
      const fiber = yield* Effect.fork(completion(client, "gate-closed"))
      // Once the consultation has reached the upstream its deadline is running: pass it.
      yield* upstream.awaitRequest("advisor-model")
      yield* TestClock.adjust("3 seconds")
      const failed = yield* Fiber.join(fiber)
      assert.strictEqual(failed.status, 504)
      const error = Schema.decodeUnknownSync(ErrorBody)(failed.json).error
      assert.strictEqual(error.code, "upstream_timeout")
      assert.strictEqual(error.message, "advisor advisor-model did not finish within 3000 ms, retries included")
    }))

  it.scopedLive("a streaming caller gets the released turn replayed as SSE ending with [DONE]", () =>
    Effect.gen(function*() {
      const { client, upstream } = yield* startServer(deployment)
      yield* upstream.setBehaviour("exec-model", FakeUpstream.ok("streamed after review"))
      yield* upstream.setBehaviour("advisor-model", FakeUpstream.ok("**Verdict:** APPROVE"))
      const response = yield* post(client, "/v1/chat/completions", chat("gate-open", { stream: true }))
      assert.strictEqual(response.status, 200)
      assert.include(response.headers["content-type"] ?? "", "text/event-stream")
      assert.strictEqual(response.headers["x-switchyard-evidence-source"], "advisor")
      const text = yield* response.text
      assert.isTrue(text.endsWith("data: [DONE]\n\n"))
      const content = text.split("\n\n")
        .filter((event) => event.startsWith("data: {"))
        .map((event) => Schema.decodeUnknownSync(Schema.parseJson(ChatCompletionChunk))(event.slice(6)))
        .map((chunk) => chunk.choices[0]?.delta.content ?? "")
        .join("")
      assert.strictEqual(content, "streamed after review")
      // The executor's turn was buffered for review: its upstream call was not a stream.
      const executed = (yield* upstream.requests).filter((r) => r.model === "exec-model")
      assert.isFalse(Predicate.hasProperty(executed[0]?.body, "stream"))
    }))

  it.scopedLive("/v1/decision runs the gate and includes the released turn as response", () =>
    Effect.gen(function*() {
      const { client, upstream } = yield* startServer(deployment)
      yield* upstream.setBehaviour("exec-model", FakeUpstream.ok("decided and answered"))
      yield* upstream.setBehaviour("advisor-model", FakeUpstream.ok("APPROVE"))
      const response = yield* post(client, "/v1/decision", { input_format: "openai_chat", request: chat("gate-open") })
      assert.strictEqual(response.status, 200)
      const body = Schema.decodeUnknownSync(DecisionBody, decodeOptions)(yield* response.json)
      assert.deepStrictEqual([body.selected.target, body.selected.model], ["exec", "exec-model"])
      assert.deepStrictEqual(body.fallbacks, [])
      assert.deepStrictEqual<unknown>(body.evidence, {
        source: "advisor",
        verdict: "approve",
        trigger: "no_tool_call",
        advisor_model: "advisor-model"
      })
      assert.strictEqual(body.response.choices[0]?.message.content, "decided and answered")
      // Under fail_open = false, a down advisor fails the decision the same way.
      const down = yield* post(client, "/v1/decision", {
        input_format: "openai_chat",
        request: chat("gate-closed-down")
      })
      assert.strictEqual(down.status, 502)
    }))
})
