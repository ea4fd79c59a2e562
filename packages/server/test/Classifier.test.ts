/**
 * Capability classifier routes through the real server, for each row of the judge drill and both
 * postures, on `/v1/decision` and `/v1/chat/completions`: status, selected model, evidence, the
 * evidence header, and `switchyard_classifier_fail_open_total` on `/metrics` — with a Chat judge
 * and with a Gemini (`gemini_generate_content`) judge, the posture table the same for both.
 */
import type * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import { assert, describe, it } from "@effect/vitest"
import type * as D from "@switchyard-ts/testkit/DeploymentBuilder"
import * as FakeUpstream from "@switchyard-ts/testkit/FakeUpstream"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Schema from "effect/Schema"
import * as TestClock from "effect/TestClock"
import { capabilityRoute, judgeDeployment, postureRoutes, startServer } from "./harness.js"

let judgeCounter = 0
/** A judge model id unique to one test, so the process-global metric registry does not mix tests. */
const uniqueJudge = () => `judge-${process.pid}-${++judgeCounter}`

/** The judge formats every row below runs with: the posture table holds for each alike. */
const judgeFormats = ["openai_chat", "gemini_generate_content"] as const
type JudgeFormat = typeof judgeFormats[number]

/** A judge's `temperature = 0` in its format (Gemini's sits in `generationConfig`). */
const judgeOptions = (format: JudgeFormat) =>
  format === "openai_chat"
    ? { extra_body: { temperature: 0 } }
    : { extra_body: { generationConfig: { temperature: 0 } } }

const deployment =
  (judgeModel: string, judgeFormat: JudgeFormat = "openai_chat") => (upstreamUrl: string): D.Deployment =>
    judgeDeployment(upstreamUrl, {
      judgeModel,
      judgeFormat,
      judgeOptions: judgeOptions(judgeFormat),
      answers: { weak: "weak-model", strong: "strong-model" },
      routes: {
        ...postureRoutes("auto", (id, judge_failure, judge) => capabilityRoute(id, judge, { judge_failure })),
        "auto-session": capabilityRoute("auto-session", "judge", {
          classify_trigger: "user_turn",
          judge_failure: "fail_open"
        })
      }
    })

const verdict = (p: number, rule = "SUP-1", boundary = "supported") =>
  FakeUpstream.ok(
    JSON.stringify({ crux: "a small local fix", primary_rule: rule, capability_boundary: boundary, p_solve: p })
  )

const chat = (model: string) => ({
  model,
  messages: [{ role: "system", content: "SECRET SYSTEM PROMPT" }, { role: "user", content: "fix the typo in README" }]
})

const DecisionBody = Schema.Struct({
  selected: Schema.Struct({ target: Schema.String, model: Schema.String }),
  fallbacks: Schema.Array(Schema.Struct({ target: Schema.String })),
  evidence: Schema.Record({ key: Schema.String, value: Schema.Unknown })
})
const ErrorBody = Schema.Struct({
  error: Schema.Struct({ message: Schema.String, type: Schema.String, code: Schema.String })
})

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
      source: response.headers["x-switchyard-evidence-source"]
    })))

const failOpenCount = (client: HttpClient.HttpClient, judgeModel: string, reason: string) =>
  Effect.map(Effect.flatMap(client.execute(HttpClientRequest.get("/metrics")), (r) => r.text), (text) => {
    const line = text.split("\n").find((l) =>
      l.startsWith("switchyard_classifier_fail_open_total{") && l.includes(`judge_model="${judgeModel}"`) &&
      l.includes(`reason="${reason}"`)
    )
    return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(" ") + 1))
  })

for (const judgeFormat of judgeFormats) {
  describe(`capability classifier through the server (judge format ${judgeFormat})`, () => {
    it.scopedLive("a good verdict routes weak under both postures, with llm-classifier evidence", () =>
      Effect.gen(function*() {
        const judge = uniqueJudge()
        const { client, upstream } = yield* startServer(deployment(judge, judgeFormat))
        yield* upstream.setBehaviour(judge, verdict(0.9))
        for (const route of ["auto-error", "auto-fail_open"]) {
          const decided = yield* decision(client, route)
          assert.strictEqual(decided.status, 200)
          const body = Schema.decodeUnknownSync(DecisionBody)(decided.json)
          assert.strictEqual(body.selected.model, "weak-model")
          assert.deepStrictEqual(body.fallbacks.map((f) => f.target), ["strong"])
          assert.deepStrictEqual<unknown>(body.evidence, {
            source: "llm-classifier",
            score: 0.9,
            threshold: 0.5,
            boundary: "supported"
          })
          const answered = yield* completion(client, route)
          assert.strictEqual(answered.status, 200)
          assert.strictEqual(answered.selected, "weak-model")
          assert.strictEqual(answered.source, "llm-classifier")
        }
        // The judge saw our rubric and the task, never the client's system prompt, with structured output.
        const judged = (yield* upstream.requests).filter((r) => r.model === judge)
        assert.strictEqual(judged.length, 4)
        const body = JSON.stringify(judged[0]?.body)
        assert.notInclude(body, "SECRET SYSTEM PROMPT")
        assert.include(body, "fix the typo in README")
        // the verdict's schema: Chat's json_schema names it; Gemini's responseJsonSchema has no name
        assert.include(body, judgeFormat === "openai_chat" ? "CapabilityClassifierDecision" : "responseJsonSchema")
        assert.include(body, "\"temperature\":0")
      }))

    it.scopedLive("p_solve = 0 routes strong with llm-classifier evidence", () =>
      Effect.gen(function*() {
        const judge = uniqueJudge()
        const { client, upstream } = yield* startServer(deployment(judge, judgeFormat))
        yield* upstream.setBehaviour(judge, verdict(0))
        const answered = yield* completion(client, "auto-error")
        assert.strictEqual(answered.status, 200)
        assert.strictEqual(answered.selected, "strong-model")
        assert.strictEqual(answered.source, "llm-classifier")
      }))

    it.scoped("a judge stalled past timeout_ms: error → 504; fail_open → strong, reason timeout, counted once", () =>
      Effect.gen(function*() {
        const judge = uniqueJudge()
        const { client, upstream } = yield* startServer(deployment(judge, judgeFormat))
        yield* upstream.setBehaviour(judge, FakeUpstream.stall)
        const run = <A>(effect: Effect.Effect<A, unknown>) =>
          Effect.gen(function*() {
            const before = (yield* upstream.requests).filter((r) => r.model === judge).length
            const fiber = yield* Effect.fork(effect)
            // Once this request's judge call has reached the upstream its deadline is running: pass it.
            yield* upstream.awaitRequests((records) => records.filter((r) => r.model === judge).length > before)
            yield* TestClock.adjust("3 seconds")
            return yield* Fiber.join(fiber)
          })
        const failed = yield* run(completion(client, "auto-error"))
        assert.strictEqual(failed.status, 504)
        const error = Schema.decodeUnknownSync(ErrorBody)(failed.json).error
        assert.strictEqual(error.code, "upstream_timeout")
        assert.include(error.message, `judge ${judge} did not finish within 3000 ms, retries included`)
        assert.strictEqual(yield* failOpenCount(client, judge, "timeout"), 0)

        const decided = yield* run(decision(client, "auto-error"))
        assert.strictEqual(decided.status, 504)

        const open = yield* run(completion(client, "auto-fail_open"))
        assert.strictEqual(open.status, 200)
        assert.strictEqual(open.selected, "strong-model")
        assert.strictEqual(open.source, "fail-open")
        assert.strictEqual(yield* failOpenCount(client, judge, "timeout"), 1)

        const openDecision = yield* run(decision(client, "auto-fail_open"))
        assert.deepStrictEqual<unknown>(Schema.decodeUnknownSync(DecisionBody)(openDecision.json).evidence, {
          source: "fail-open",
          reason: "timeout",
          judge_model: judge
        })
        assert.strictEqual(yield* failOpenCount(client, judge, "timeout"), 2)
      }))

    it.scopedLive("a stopped judge (connection refused): error → 502; fail_open → strong, reason transport", () =>
      Effect.gen(function*() {
        const judge = uniqueJudge()
        const { client } = yield* startServer(deployment(judge, judgeFormat))
        const failed = yield* completion(client, "auto-error-stopped")
        assert.strictEqual(failed.status, 502)
        const error = Schema.decodeUnknownSync(ErrorBody)(failed.json).error
        assert.strictEqual(error.code, "upstream_error")
        assert.include(error.message, `judge ${judge}`)
        const open = yield* completion(client, "auto-fail_open-stopped")
        assert.strictEqual(open.status, 200)
        assert.strictEqual(open.selected, "strong-model")
        assert.strictEqual(open.source, "fail-open")
        assert.strictEqual(yield* failOpenCount(client, judge, "transport"), 1)
      }))

    it.scopedLive("a judge answering 500: error → 502 naming the judge and status, no body; fail_open → upstream_5xx", () =>
      Effect.gen(function*() {
        const judge = uniqueJudge()
        const { client, upstream } = yield* startServer(deployment(judge, judgeFormat))
        yield* upstream.setBehaviour(
          judge,
          FakeUpstream.status(500, { message: "the user asked: fix the typo in README" })
        )
        const failed = yield* completion(client, "auto-error")
        assert.strictEqual(failed.status, 502)
        const error = Schema.decodeUnknownSync(ErrorBody)(failed.json).error
        assert.strictEqual(error.message, `judge ${judge} answered HTTP 500`)
        const decided = yield* decision(client, "auto-error")
        assert.strictEqual(decided.status, 502)
        const open = yield* completion(client, "auto-fail_open")
        assert.strictEqual(open.status, 200)
        assert.strictEqual(open.source, "fail-open")
        assert.strictEqual(yield* failOpenCount(client, judge, "upstream_5xx"), 1)
        assert.strictEqual(yield* failOpenCount(client, judge, "transport"), 0)
      }))

    it.scopedLive("a judge answering garbage routes strong under both postures, reason parse_error", () =>
      Effect.gen(function*() {
        const judge = uniqueJudge()
        const { client, upstream } = yield* startServer(deployment(judge, judgeFormat))
        yield* upstream.setBehaviour(judge, FakeUpstream.ok("I think the small model can do it."))
        for (const route of ["auto-error", "auto-fail_open"]) {
          const answered = yield* completion(client, route)
          assert.strictEqual(answered.status, 200)
          assert.strictEqual(answered.selected, "strong-model")
          assert.strictEqual(answered.source, "fail-open")
        }
        assert.strictEqual(yield* failOpenCount(client, judge, "parse_error"), 2)
        yield* upstream.setBehaviour(judge, FakeUpstream.Garbage.make({ body: "<html>proxy error</html>" }))
        const invalid = yield* decision(client, "auto-error")
        assert.strictEqual(invalid.status, 200)
        assert.deepStrictEqual<unknown>(Schema.decodeUnknownSync(DecisionBody)(invalid.json).evidence, {
          source: "fail-open",
          reason: "invalid_response",
          judge_model: judge
        })
      }))
  })
}

describe("sessions through the server", () => {
  it.scopedLive("x-switchyard-session-id: a continuation keeps the session's tier, a failed judge retains it", () =>
    Effect.gen(function*() {
      const judge = uniqueJudge()
      const { client, upstream } = yield* startServer(deployment(judge))
      const send = (messages: ReadonlyArray<unknown>, session: string) =>
        Effect.flatMap(
          client.execute(
            HttpClientRequest.post("/v1/chat/completions").pipe(
              HttpClientRequest.bodyUnsafeJson({ model: "auto-session", messages }),
              HttpClientRequest.setHeader("x-switchyard-session-id", session)
            )
          ),
          (response) =>
            Effect.succeed({
              status: response.status,
              selected: response.headers["x-switchyard-selected-model"],
              source: response.headers["x-switchyard-evidence-source"]
            })
        )
      const task = { role: "user", content: "refactor the parser" }
      const call = {
        role: "assistant",
        content: null,
        tool_calls: [{ id: "c1", type: "function", function: { name: "read", arguments: "{}" } }]
      }
      const result = { role: "tool", tool_call_id: "c1", content: "file contents" }

      yield* upstream.setBehaviour(judge, verdict(0.9))
      assert.deepStrictEqual(yield* send([task], "s-1"), {
        status: 200,
        selected: "weak-model",
        source: "llm-classifier"
      })
      const judgedBefore = (yield* upstream.requests).filter((r) => r.model === judge).length
      assert.deepStrictEqual(yield* send([task, call, result], "s-1"), {
        status: 200,
        selected: "weak-model",
        source: "affinity"
      })
      assert.strictEqual((yield* upstream.requests).filter((r) => r.model === judge).length, judgedBefore)

      yield* upstream.setBehaviour(judge, FakeUpstream.status(503))
      const next = [task, call, result, { role: "assistant", content: "done" }, {
        role: "user",
        content: "now add tests"
      }]
      assert.deepStrictEqual(yield* send(next, "s-1"), { status: 200, selected: "weak-model", source: "retained" })
      // Another session with nothing stored goes strong.
      assert.deepStrictEqual(yield* send([task], "s-2"), { status: 200, selected: "strong-model", source: "fail-open" })
      assert.strictEqual(yield* failOpenCount(client, judge, "upstream_5xx"), 2)
    }))

  it.scopedLive("session_id (pi's Responses provider): a user_turn route judges the session once across its tool continuations", () =>
    Effect.gen(function*() {
      const judge = uniqueJudge()
      const { client, upstream } = yield* startServer(deployment(judge))
      const send = (messages: ReadonlyArray<unknown>) =>
        Effect.map(
          client.execute(
            HttpClientRequest.post("/v1/chat/completions").pipe(
              HttpClientRequest.bodyUnsafeJson({ model: "auto-session", messages }),
              HttpClientRequest.setHeader("session_id", "pi-session-1")
            )
          ),
          (response) => ({ status: response.status, source: response.headers["x-switchyard-evidence-source"] })
        )
      const task = { role: "user", content: "refactor the parser" }
      const call = (id: string) => ({
        role: "assistant",
        content: null,
        tool_calls: [{ id, type: "function", function: { name: "read", arguments: "{}" } }]
      })
      const result = (id: string) => ({ role: "tool", tool_call_id: id, content: "file contents" })

      yield* upstream.setBehaviour(judge, verdict(0.9))
      assert.deepStrictEqual(yield* send([task]), { status: 200, source: "llm-classifier" })
      assert.deepStrictEqual(yield* send([task, call("c1"), result("c1")]), { status: 200, source: "affinity" })
      assert.deepStrictEqual(
        yield* send([task, call("c1"), result("c1"), call("c2"), result("c2")]),
        { status: 200, source: "affinity" }
      )
      const judged = (yield* upstream.requests).filter((r) => r.model === judge)
      assert.strictEqual(judged.length, 1)
    }))
})
