/**
 * Escalation classifier routes (`mode = "escalation"`) through the real server, with a fake judge
 * upstream: the weak reply is served while the judge declines or the streak is short, the session
 * latches to strong after `confirmations` escalate verdicts (later turns skip the judge), a
 * streaming caller gets the buffered weak reply replayed as a stream, and a dead judge under both
 * postures (502 under `error`; the weak reply, `fail-open` / `transport`, counted once under
 * `fail_open`). With a `deescalation` table: one cycle — escalate, a judged strong phase (the judge
 * reads `STRONG_EVALUATION`), release, weak again — also through `/v1/decision`, and a failing
 * judge on a strong turn under `error` (the strong answer is served, strong stays).
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
const uniqueJudge = () => `escalation-judge-${process.pid}-${++judgeCounter}`

/** Escalation routes `<prefix>-<posture>[-stopped]` with the `escalation` table given (confirmations 2 by default). */
const deployment =
  (judgeModel: string, escalation: D.Escalation = { confirmations: 2 }, prefix = "esc") =>
  (upstreamUrl: string): D.Deployment =>
    judgeDeployment(upstreamUrl, {
      judgeModel,
      answers: { weak: "weak-model", strong: "strong-model" },
      routes: postureRoutes(prefix, (id, judge_failure, judge) =>
        D.escalation(id, {
          classifier_target: judge,
          weak_target: "weak",
          strong_target: "strong",
          judge_failure,
          escalation
        }))
    })

const chat = (model: string, stream = false) => ({
  model,
  messages: [{ role: "user", content: "prove the lemma" }],
  ...(stream ? { stream: true } : {})
})

const ErrorBody = Schema.Struct({
  error: Schema.Struct({ message: Schema.String, type: Schema.String, code: Schema.String })
})

const completion = (
  client: HttpClient.HttpClient,
  model: string,
  session: string,
  stream = false,
  headers: Readonly<Record<string, string>> = {}
) =>
  Effect.flatMap(
    client.execute(
      HttpClientRequest.post("/v1/chat/completions").pipe(
        HttpClientRequest.setHeaders(headers),
        HttpClientRequest.setHeader("x-switchyard-session-id", session),
        HttpClientRequest.bodyUnsafeJson(chat(model, stream))
      )
    ),
    (response) =>
      Effect.map(response.text, (text) => ({
        status: response.status,
        text,
        contentType: response.headers["content-type"] ?? "",
        selected: response.headers["x-switchyard-selected-model"],
        source: response.headers["x-switchyard-evidence-source"],
        reason: response.headers["x-switchyard-evidence-reason"]
      }))
  )

const failOpenCount = (client: HttpClient.HttpClient, judgeModel: string, reason: string) =>
  Effect.map(Effect.flatMap(client.execute(HttpClientRequest.get("/metrics")), (r) => r.text), (text) => {
    const line = text.split("\n").find((l) =>
      l.startsWith("switchyard_classifier_fail_open_total{") && l.includes(`judge_model="${judgeModel}"`) &&
      l.includes(`reason="${reason}"`)
    )
    return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(" ") + 1))
  })

const callsTo = (upstream: FakeUpstream.FakeUpstream["Type"], model: string) =>
  Effect.map(upstream.requests, (records) => records.filter((r) => r.model === model).length)

/** A server whose weak and strong targets answer and whose judge says escalate to every turn. */
const escalatingServer = Effect.gen(function*() {
  const judge = uniqueJudge()
  const { client, upstream } = yield* startServer(deployment(judge))
  yield* upstream.setBehaviour("weak-model", FakeUpstream.ok("weak answer"))
  yield* upstream.setBehaviour("strong-model", FakeUpstream.ok("strong answer"))
  yield* upstream.setBehaviour(judge, FakeUpstream.ok("{\"escalate\": true, \"reason\": \"out of its depth\"}"))
  return { client, judge, upstream }
})

describe("escalation classifier through the server", () => {
  it.scopedLive("two escalate verdicts latch the session to strong; later turns skip the judge", () =>
    Effect.gen(function*() {
      const { client, judge, upstream } = yield* escalatingServer

      const first = yield* completion(client, "esc-error", "s-latch")
      assert.strictEqual(first.status, 200)
      assert.strictEqual(first.selected, "weak-model")
      assert.strictEqual(first.source, "escalation")
      assert.include(first.text, "weak answer")

      const second = yield* completion(client, "esc-error", "s-latch")
      assert.strictEqual(second.status, 200)
      assert.strictEqual(second.selected, "strong-model")
      assert.include(second.text, "strong answer")
      assert.strictEqual(yield* callsTo(upstream, judge), 2)

      const third = yield* completion(client, "esc-error", "s-latch")
      assert.strictEqual(third.selected, "strong-model")
      assert.strictEqual(yield* callsTo(upstream, judge), 2)

      // another session starts over on weak
      const other = yield* completion(client, "esc-error", "s-other")
      assert.strictEqual(other.selected, "weak-model")
    }))

  it.scopedLive("session_final: a latched session's final request is served strong, then the session starts over", () =>
    Effect.gen(function*() {
      const { client, judge, upstream } = yield* escalatingServer

      const selected = (headers: Readonly<Record<string, string>> = {}) =>
        Effect.map(completion(client, "esc-error", "s-final", false, headers), (answer) => answer.selected)
      assert.deepStrictEqual([yield* selected(), yield* selected()], ["weak-model", "strong-model"])
      // not final: the latch holds
      assert.strictEqual(yield* selected({ "x-switchyard-session-final": "no" }), "strong-model")
      assert.strictEqual(yield* selected({ "x-switchyard-session-final": "True" }), "strong-model")
      assert.strictEqual(yield* callsTo(upstream, judge), 2)
      // the state is gone: weak again, judged again (streak 1 of 2)
      assert.strictEqual(yield* selected(), "weak-model")
      assert.strictEqual(yield* callsTo(upstream, judge), 3)
      assert.strictEqual(yield* selected(), "strong-model")
    }))

  it.scopedLive("a streamed caller gets the buffered weak reply replayed as a stream", () =>
    Effect.gen(function*() {
      const judge = uniqueJudge()
      const { client, upstream } = yield* startServer(deployment(judge))
      yield* upstream.setBehaviour("weak-model", FakeUpstream.ok("weak answer"))
      yield* upstream.setBehaviour(judge, FakeUpstream.ok("{\"escalate\": false, \"reason\": \"fine\"}"))
      const streamed = yield* completion(client, "esc-fail_open", "s-stream", true)
      assert.strictEqual(streamed.status, 200)
      assert.include(streamed.contentType, "text/event-stream")
      assert.include(streamed.text, "weak answer")
      assert.include(streamed.text, "[DONE]")
    }))

  it.scopedLive("a dead judge: error → 502; fail_open → the weak reply, reason transport, counted once", () =>
    Effect.gen(function*() {
      const judge = uniqueJudge()
      const { client, upstream } = yield* startServer(deployment(judge))
      yield* upstream.setBehaviour("weak-model", FakeUpstream.ok("weak answer"))
      const failed = yield* completion(client, "esc-error-stopped", "s-dead")
      assert.strictEqual(failed.status, 502)
      assert.strictEqual(Schema.decodeUnknownSync(ErrorBody)(JSON.parse(failed.text)).error.code, "upstream_error")
      assert.strictEqual(yield* failOpenCount(client, judge, "transport"), 0)

      const open = yield* completion(client, "esc-fail_open-stopped", "s-dead")
      assert.strictEqual(open.status, 200)
      assert.strictEqual(open.selected, "weak-model")
      assert.strictEqual(open.source, "fail-open")
      assert.strictEqual(open.reason, "transport")
      assert.include(open.text, "weak answer")
      assert.strictEqual(yield* failOpenCount(client, judge, "transport"), 1)
    }))
})

/** Escalation routes (`deesc-…`) that latch on one verdict and release on one decline after one strong turn. */
const deescalating = (judgeModel: string) =>
  deployment(judgeModel, { confirmations: 1, deescalation: { strong_min_calls: 1, confirmations: 1 } }, "deesc")

const verdictText = (escalate: boolean) =>
  JSON.stringify({ escalate, category: escalate ? "drift" : "none", new_evidence: escalate, reason: "r" })

const DecisionBody = Schema.Struct({
  evidence: Schema.Struct({ source: Schema.String, verdict: Schema.optional(Schema.String) }),
  response: Schema.optional(
    Schema.Struct({ choices: Schema.Array(Schema.Struct({ message: Schema.Struct({ content: Schema.String }) })) })
  )
})

const decide = (client: HttpClient.HttpClient, model: string, session: string) =>
  Effect.flatMap(
    client.execute(
      HttpClientRequest.post("/v1/decision").pipe(
        HttpClientRequest.setHeader("x-switchyard-session-id", session),
        HttpClientRequest.bodyUnsafeJson({ input_format: "openai_chat", request: chat(model) })
      )
    ),
    (response) => Effect.flatMap(response.json, Schema.decodeUnknown(DecisionBody))
  )

/** A server of {@link deescalating} routes whose weak and strong targets answer. */
const deescalatingServer = Effect.gen(function*() {
  const judge = uniqueJudge()
  const { client, upstream } = yield* startServer(deescalating(judge))
  yield* upstream.setBehaviour("weak-model", FakeUpstream.ok("weak answer"))
  yield* upstream.setBehaviour("strong-model", FakeUpstream.ok("strong answer"))
  return { client, judge, upstream }
})

describe("escalation classifier with a deescalation table through the server", () => {
  it.scopedLive("one cycle: escalate, a judged strong turn that declines, then weak again", () =>
    Effect.gen(function*() {
      const { client, judge, upstream } = yield* deescalatingServer

      yield* upstream.setBehaviour(judge, FakeUpstream.ok(verdictText(true)))
      const escalated = yield* completion(client, "deesc-error", "s-cycle")
      assert.strictEqual(escalated.status, 200)
      assert.strictEqual(escalated.selected, "strong-model")
      assert.include(escalated.text, "strong answer")

      yield* upstream.setBehaviour(judge, FakeUpstream.ok(verdictText(false)))
      const reviewed = yield* completion(client, "deesc-error", "s-cycle")
      assert.strictEqual(reviewed.status, 200)
      assert.strictEqual(reviewed.selected, "strong-model")
      assert.include(reviewed.text, "strong answer")
      const judged = (yield* upstream.requests).filter((r) => r.model === judge).map((r) => JSON.stringify(r.body))
      assert.strictEqual(judged.length, 2)
      assert.include(judged[0], "EFFICIENT_EVALUATION")
      assert.include(judged[1], "STRONG_EVALUATION\\n")
      assert.include(judged[1], "strong answer")
      // strong answered both strong turns (the escalating one, then the judged one)
      assert.strictEqual(yield* callsTo(upstream, "strong-model"), 2)

      const released = yield* completion(client, "deesc-error", "s-cycle")
      assert.strictEqual(released.selected, "weak-model")
      assert.include(released.text, "weak answer")
    }))

  it.scopedLive("/v1/decision runs the strong phase too and returns the judged strong turn as response", () =>
    Effect.gen(function*() {
      const { client, judge, upstream } = yield* deescalatingServer
      yield* upstream.setBehaviour(judge, FakeUpstream.ok(verdictText(true)))
      const first = yield* decide(client, "deesc-error", "s-decision")
      assert.deepStrictEqual([first.evidence.source, first.evidence.verdict], ["escalation", "escalate"])
      assert.isUndefined(first.response)
      const second = yield* decide(client, "deesc-error", "s-decision")
      assert.deepStrictEqual([second.evidence.source, second.evidence.verdict], ["escalation", "retain"])
      assert.strictEqual(second.response?.choices[0]?.message.content, "strong answer")
    }))

  it.scopedLive("under error, a failing judge on a strong turn serves the strong answer and keeps strong (retained)", () =>
    Effect.gen(function*() {
      const { client, judge, upstream } = yield* deescalatingServer
      yield* upstream.setBehaviour(judge, FakeUpstream.ok(verdictText(true)))
      assert.strictEqual((yield* completion(client, "deesc-error", "s-down")).selected, "strong-model")

      yield* upstream.setBehaviour(judge, FakeUpstream.status(500, { message: "judge down" }))
      const before = yield* failOpenCount(client, judge, "upstream_5xx")
      const served = yield* completion(client, "deesc-error", "s-down")
      assert.strictEqual(served.status, 200)
      assert.strictEqual(served.selected, "strong-model")
      assert.strictEqual(served.source, "retained")
      assert.strictEqual(served.reason, "upstream_5xx")
      assert.include(served.text, "strong answer")
      assert.strictEqual((yield* failOpenCount(client, judge, "upstream_5xx")) - before, 1)

      // strong stays: the next turn is a strong turn again (judged), never the weak target
      yield* upstream.setBehaviour(judge, FakeUpstream.ok(verdictText(true)))
      const next = yield* completion(client, "deesc-error", "s-down")
      assert.strictEqual(next.selected, "strong-model")
      assert.strictEqual(yield* callsTo(upstream, "weak-model"), 1)
    }))
})
