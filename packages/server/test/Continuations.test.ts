/**
 * Responses continuations by id through the real server and the fake upstream: a Chat or Messages
 * target's answer continued by `previous_response_id` (its transcript restored, buffered and
 * streamed, `store: false` keeping nothing), a recorded id going back to its target with no judge
 * call and no other provider tried, `/v1/decision` deciding alike, native Responses ids recorded
 * only on a route whose targets span several clients, and `response_state_conflict` (409 before
 * any call, an `error` event after the headers).
 */
import { assert, describe, it } from "@effect/vitest"
import * as D from "@switchyard-ts/testkit/DeploymentBuilder"
import * as FakeUpstream from "@switchyard-ts/testkit/FakeUpstream"
import * as Effect from "effect/Effect"
import * as Predicate from "effect/Predicate"
import { capabilityRoute, chatAndClaude, startServer } from "./harness.js"

const deployment = (upstreamUrl: string): D.Deployment =>
  D.extend(chatAndClaude(upstreamUrl), {
    llm_clients: {
      resp: D.client("openai_responses", upstreamUrl, { max_retries: 0 }),
      resp2: D.client("openai_responses", upstreamUrl, { max_retries: 0 })
    },
    targets: {
      judge: D.target("judge-model", "oai"),
      gpt: D.target("gpt-resp", "resp"),
      gpt2: D.target("gpt2-resp", "resp2")
    },
    routes: D.byId(
      D.noop("ping"),
      capabilityRoute("auto", "judge", { weak_target: "local", strong_target: "sonnet" }),
      capabilityRoute("mixed", "judge", { weak_target: "gpt", strong_target: "local" }),
      capabilityRoute("twins", "judge", { weak_target: "gpt", strong_target: "gpt2" }),
      D.passthrough("native", "gpt")
    )
  })

const start = startServer(deployment)
const record = (value: unknown): Record<string, unknown> => (Predicate.isRecord(value) ? value : {})
const list = (value: unknown): ReadonlyArray<unknown> => (Array.isArray(value) ? value : [])
const verdict = (pSolve: number) =>
  FakeUpstream.ok(
    JSON.stringify({ crux: "a task", primary_rule: "SUP-1", capability_boundary: "supported", p_solve: pSolve })
  )

interface Reply {
  readonly status: number
  readonly headers: Headers
  readonly text: string
}

const post = (url: string, path: string, body: unknown) =>
  Effect.promise(() =>
    fetch(`${url}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: "Bearer sk-caller-secret" },
      body: JSON.stringify(body)
    }).then(async (response): Promise<Reply> => ({
      status: response.status,
      headers: response.headers,
      text: await response.text()
    }))
  )
const responses = (url: string, body: unknown) => post(url, "/v1/responses", body)
const json = (reply: Reply) => record(JSON.parse(reply.text))
const idOf = (reply: Reply) => String(json(reply)["id"])

/** The `data:` objects of a Responses SSE body. */
const events = (text: string): ReadonlyArray<Record<string, unknown>> =>
  text.split("\n").filter((line) => line.startsWith("data: ")).map((line) => record(JSON.parse(line.slice(6))))

/** The chat messages (role and text) the upstream saw for `model`, request by request. */
const chatMessages = (seen: ReadonlyArray<FakeUpstream.RequestRecord>, model: string) =>
  seen.filter((r) => r.model === model).map((r) =>
    list(record(r.body)["messages"]).map((m) => `${String(record(m)["role"])}:${JSON.stringify(record(m)["content"])}`)
  )

describe("Responses continuations by id on Chat and Messages targets", () => {
  it.scopedLive("a Chat target's answer is continued: the transcript is restored turn after turn", () =>
    Effect.gen(function*() {
      const { upstream, url } = yield* start
      yield* upstream.script("local-coder", [
        FakeUpstream.ok("noted: 42"),
        FakeUpstream.ok("the code is 42"),
        FakeUpstream.ok("bye")
      ])
      const first = yield* responses(url, { model: "fast", input: "remember the code 42" })
      assert.strictEqual(first.status, 200)
      assert.match(idOf(first), /^resp_[0-9a-f]{32}$/)
      const second = yield* responses(url, {
        model: "fast",
        instructions: "Be terse.",
        previous_response_id: idOf(first),
        input: [{ role: "user", content: "what is the code?" }]
      })
      assert.strictEqual(second.status, 200, second.text)
      assert.notStrictEqual(idOf(second), idOf(first))
      const third = yield* responses(url, { model: "fast", previous_response_id: idOf(second), input: "thanks" })
      assert.strictEqual(third.status, 200, third.text)
      const seen = chatMessages(yield* upstream.requests, "local-coder")
      assert.deepStrictEqual(seen[1], [
        "system:\"Be terse.\"",
        "user:\"remember the code 42\"",
        "assistant:\"noted: 42\"",
        "user:\"what is the code?\""
      ])
      assert.deepStrictEqual(seen[2], [
        "user:\"remember the code 42\"",
        "assistant:\"noted: 42\"",
        "user:\"what is the code?\"",
        "assistant:\"the code is 42\"",
        "user:\"thanks\""
      ])
      // The passthrough route decided nothing: a continuation says so.
      assert.strictEqual(third.headers.get("x-switchyard-evidence-source"), "continuation")
    }))

  it.scopedLive("a streamed Messages answer is kept once it completed, with its tool call; store: false keeps nothing", () =>
    Effect.gen(function*() {
      const { upstream, url } = yield* start
      yield* upstream.script("claude-sonnet", [
        FakeUpstream.toolUse("read_file", "{\"path\":\"a.txt\"}"),
        FakeUpstream.ok("the file says hi"),
        FakeUpstream.ok("unkept")
      ])
      const tools = [{ type: "function", name: "read_file", parameters: { type: "object", properties: {} } }]
      const streamed = yield* responses(url, { model: "claude", stream: true, tools, input: "read a.txt" })
      const completed = events(streamed.text).find((event) => event["type"] === "response.completed")
      const response = record(completed?.["response"])
      const call = record(list(response["output"]).find((item) => record(item)["type"] === "function_call"))
      assert.strictEqual(call["name"], "read_file")
      const next = yield* responses(url, {
        model: "claude",
        tools,
        store: false,
        previous_response_id: response["id"],
        input: [{ type: "function_call_output", call_id: call["call_id"], output: "hi" }]
      })
      assert.strictEqual(next.status, 200, next.text)
      const [, second] = (yield* upstream.requests).filter((r) => r.model === "claude-sonnet")
      const messages = list(record(second?.body)["messages"]).map(record)
      assert.deepStrictEqual(messages.map((m) => m["role"]), ["user", "assistant", "user"])
      assert.include(JSON.stringify(messages[1]?.["content"]), "tool_use")
      assert.include(JSON.stringify(messages[2]?.["content"]), "tool_result")
      // `store: false`: that answer was not kept, so continuing it is refused as any unknown id.
      const refused = yield* responses(url, { model: "claude", previous_response_id: idOf(next), input: "more" })
      assert.strictEqual(refused.status, 400)
      assert.include(refused.text, "previous_response_id")
      assert.strictEqual((yield* upstream.requests).filter((r) => r.model === "claude-sonnet").length, 2)
    }))

  it.scopedLive("a recorded id goes back to its target: no judge call, no other provider after a failure", () =>
    Effect.gen(function*() {
      const { upstream, url } = yield* start
      yield* upstream.script("judge-model", [verdict(0.9), verdict(0.1)])
      yield* upstream.script("local-coder", [FakeUpstream.ok("weak answer"), FakeUpstream.ok("weak again")])
      const first = yield* responses(url, { model: "auto", input: "a small fix" })
      assert.strictEqual(first.headers.get("x-switchyard-selected-model"), "local-coder")
      // The judge would now say strong; the continuation never asks it.
      const second = yield* responses(url, { model: "auto", previous_response_id: idOf(first), input: "go on" })
      assert.strictEqual(second.headers.get("x-switchyard-selected-model"), "local-coder")
      assert.strictEqual(second.headers.get("x-switchyard-evidence-source"), "continuation")
      const judged = (yield* upstream.requests).filter((r) => r.model === "judge-model")
      assert.strictEqual(judged.length, 1)

      // /v1/decision decides the same way, and names no fallback on another client.
      const decided = yield* post(url, "/v1/decision", {
        input_format: "openai_responses",
        request: { model: "auto", previous_response_id: idOf(second), input: "and?" }
      })
      assert.strictEqual(decided.status, 200, decided.text)
      assert.strictEqual(record(json(decided)["selected"])["model"], "local-coder")
      assert.deepStrictEqual(json(decided)["fallbacks"], [])
      assert.strictEqual(record(json(decided)["evidence"])["source"], "continuation")

      yield* upstream.setBehaviour("local-coder", FakeUpstream.status(503))
      const failed = yield* responses(url, { model: "auto", previous_response_id: idOf(second), input: "again" })
      assert.strictEqual(failed.status, 503)
      const seen = yield* upstream.requests
      assert.strictEqual(seen.filter((r) => r.model === "claude-sonnet").length, 0)
      assert.strictEqual(seen.filter((r) => r.model === "judge-model").length, 1)
    }))

  it.scopedLive("/v1/decision's own answer (noop) is kept: a later request may continue it", () =>
    Effect.gen(function*() {
      const { url } = yield* start
      const decided = yield* post(url, "/v1/decision", {
        input_format: "openai_responses",
        request: { model: "ping", input: "ping" }
      })
      const id = String(record(json(decided)["response"])["id"])
      assert.match(id, /^resp_[0-9a-f]{32}$/)
      const continued = yield* responses(url, { model: "ping", previous_response_id: id, input: "again" })
      assert.strictEqual(continued.status, 200, continued.text)
      const unknown = yield* responses(url, { model: "ping", previous_response_id: "resp_unknown", input: "again" })
      // noop answers anything; only an id it kept is a continuation (its transcript restored).
      assert.strictEqual(unknown.status, 200)
    }))
})

describe("native Responses ids", () => {
  it.scopedLive("recorded on a route whose targets span several clients: the continuation skips the judge, the id is forwarded", () =>
    Effect.gen(function*() {
      const { upstream, url } = yield* start
      yield* upstream.script("judge-model", [verdict(0.9), verdict(0.1)])
      const first = yield* responses(url, { model: "mixed", input: "hello" })
      assert.strictEqual(first.headers.get("x-switchyard-selected-model"), "gpt-resp")
      const second = yield* responses(url, { model: "mixed", previous_response_id: idOf(first), input: "more" })
      assert.strictEqual(second.status, 200, second.text)
      assert.strictEqual(second.headers.get("x-switchyard-selected-model"), "gpt-resp")
      const seen = yield* upstream.requests
      assert.strictEqual(seen.filter((r) => r.model === "judge-model").length, 1)
      assert.strictEqual(record(seen.at(-1)?.body)["previous_response_id"], idOf(first))

      // One client: nothing recorded, the passthrough decides as ever.
      const single = yield* responses(url, { model: "native", input: "hi" })
      const continued = yield* responses(url, { model: "native", previous_response_id: idOf(single), input: "hi" })
      assert.strictEqual(continued.headers.get("x-switchyard-evidence-source"), "passthrough")
    }))

  it.scopedLive("a previous_response_id and a conversation held by different targets: 409 before any call", () =>
    Effect.gen(function*() {
      const { upstream, url } = yield* start
      yield* upstream.script("judge-model", [verdict(0.9), verdict(0.1)])
      const native = yield* responses(url, { model: "mixed", conversation: "conv_1", input: "hello" })
      assert.strictEqual(native.headers.get("x-switchyard-selected-model"), "gpt-resp")
      const translated = yield* responses(url, { model: "mixed", input: "something hard" })
      assert.strictEqual(translated.headers.get("x-switchyard-selected-model"), "local-coder")
      const before = (yield* upstream.requests).length
      const conflict = yield* responses(url, {
        model: "mixed",
        conversation: { id: "conv_1" },
        previous_response_id: idOf(translated),
        input: "which?"
      })
      assert.strictEqual(conflict.status, 409)
      assert.deepStrictEqual(record(json(conflict)["error"])["code"], "response_state_conflict")
      assert.strictEqual((yield* upstream.requests).length, before)
    }))

  it.scopedLive("an upstream id another target holds: 409 when buffered, an error event after the stream's headers", () =>
    Effect.gen(function*() {
      const { upstream, url } = yield* start
      const answer = (model: string) => ({
        id: "resp_same",
        object: "response",
        created_at: 0,
        status: "completed",
        model,
        output: [],
        usage: { input_tokens: 1, output_tokens: 1, total_tokens: 2 }
      })
      const raw = (model: string) =>
        FakeUpstream.Raw.make({
          body: JSON.stringify(answer(model)),
          events: [{
            event: "response.completed",
            data: JSON.stringify({ type: "response.completed", sequence_number: 0, response: answer(model) })
          }]
        })
      yield* upstream.setBehaviour("gpt-resp", raw("gpt-resp"))
      yield* upstream.setBehaviour("gpt2-resp", raw("gpt2-resp"))
      yield* upstream.script("judge-model", [verdict(0.9), verdict(0.1), verdict(0.1)])
      const first = yield* responses(url, { model: "twins", input: "one" })
      assert.strictEqual(first.status, 200)
      const buffered = yield* responses(url, { model: "twins", input: "two" })
      assert.strictEqual(buffered.status, 409)
      assert.include(buffered.text, "response_state_conflict")
      const streamed = yield* responses(url, { model: "twins", input: "three", stream: true })
      assert.strictEqual(streamed.status, 200)
      const last = events(streamed.text).at(-1)
      assert.strictEqual(last?.["type"], "error")
      assert.strictEqual(record(last?.["error"])["code"], "response_state_conflict")
    }))
})

describe("POST /v1/responses/input_tokens and /v1/responses/compact", () => {
  it.scopedLive("forwarded to the route's first Responses target, model rewritten, the answer verbatim", () =>
    Effect.gen(function*() {
      const { upstream, url } = yield* start
      for (const [operation, route] of [["input_tokens", "native"], ["compact", "mixed"]] as const) {
        const body = { model: route, input: [{ role: "user", content: "count me" }], instructions: "Be terse." }
        const reply = yield* post(url, `/v1/responses/${operation}`, body)
        assert.strictEqual(reply.status, 200, reply.text)
        const seen = (yield* upstream.requests).at(-1)
        assert.strictEqual(seen?.path, `/v1/responses/${operation}`)
        assert.deepStrictEqual(seen?.body, { ...body, model: "gpt-resp" })
        assert.notInclude(JSON.stringify(seen?.headers), "sk-caller-secret")
        const direct = yield* Effect.promise(() =>
          fetch(`${upstream.url}/responses/${operation}`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ ...body, model: "gpt-resp" })
          }).then((response) => response.json())
        )
        assert.deepStrictEqual(json(reply), direct)
      }
    }))

  it.scopedLive("a route without a Responses target: 400 responses_auxiliary_unsupported; an unknown model: 404", () =>
    Effect.gen(function*() {
      const { upstream, url } = yield* start
      for (const operation of ["input_tokens", "compact"]) {
        const reply = yield* post(url, `/v1/responses/${operation}`, { model: "auto", input: "x" })
        assert.strictEqual(reply.status, 400)
        assert.deepStrictEqual(json(reply)["error"], {
          message: "route has no OpenAI Responses target",
          type: "invalid_request_error",
          code: "responses_auxiliary_unsupported"
        })
        const unknown = yield* post(url, `/v1/responses/${operation}`, { model: "nope", input: "x" })
        assert.strictEqual(unknown.status, 404)
        assert.strictEqual(record(json(unknown)["error"])["code"], "model_not_found")
      }
      assert.strictEqual((yield* upstream.requests).length, 0)
    }))
})

const deadDeployment = (upstreamUrl: string): D.Deployment =>
  D.extend(chatAndClaude(upstreamUrl), {
    llm_clients: { dead: D.client("openai_responses", D.deadUrl, { max_retries: 0 }) },
    targets: { gone: D.target("gone-resp", "dead") },
    routes: D.byId(D.passthrough("gone", "gone"))
  })

describe("a Responses auxiliary call that fails upstream", () => {
  it.scopedLive("is mapped as the answer endpoints map it: 502 upstream_error for a dead upstream", () =>
    Effect.gen(function*() {
      const { url } = yield* startServer(deadDeployment)
      const reply = yield* post(url, "/v1/responses/compact", { model: "gone", input: "x" })
      assert.strictEqual(reply.status, 502)
      assert.strictEqual(record(json(reply)["error"])["code"], "upstream_error")
    }))
})
