/**
 * `auto` and `composite` routes through the real server, loaded from the compatible system's own
 * example files (`packages/config/test/fixtures`, each naming its source; only the clients'
 * `base_url` is pointed at the fake upstream here): each serves a request (a chat completion; the
 * Claude Code recipe, whose route forwards an Anthropic credential, a Messages one), `/v1/decision`
 * returns its evidence and stage facts, `/v1/models` names its algorithm, and the capable hold acts
 * on a session.
 */
import type * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import { assert, describe, it } from "@effect/vitest"
import * as FakeUpstream from "@switchyard-ts/testkit/FakeUpstream"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { serveFixture } from "./harness.js"

const post = (
  client: HttpClient.HttpClient,
  path: string,
  body: unknown,
  headers: Readonly<Record<string, string>> = {}
) =>
  Effect.flatMap(
    client.execute(
      HttpClientRequest.post(path).pipe(HttpClientRequest.setHeaders(headers), HttpClientRequest.bodyUnsafeJson(body))
    ),
    (response) =>
      Effect.map(response.text, (text) => ({
        status: response.status,
        text,
        selected: response.headers["x-switchyard-selected-model"],
        source: response.headers["x-switchyard-evidence-source"]
      }))
  )

const DecisionBody = Schema.Struct({
  selected: Schema.Struct({ target: Schema.String }),
  evidence: Schema.Struct({
    source: Schema.String,
    stage: Schema.Struct({ decision_source: Schema.String, tier: Schema.String })
  })
})

const ModelsBody = Schema.Struct({
  data: Schema.Array(Schema.Struct({ id: Schema.String, route_type: Schema.String }))
})

const models = (client: HttpClient.HttpClient) =>
  Effect.flatMap(
    Effect.flatMap(client.execute(HttpClientRequest.get("/v1/models")), (response) => response.json),
    Schema.decodeUnknown(ModelsBody)
  )

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

describe("auto and composite routes through the server", () => {
  it.scopedLive("auto (the compatible system's minimal route): a chat request, the preset's decisions, the hold", () =>
    Effect.gen(function*() {
      const { client, upstream } = yield* serveFixture("auto-minimal.toml", ["https://api.example.com/v1"])
      yield* upstream.setBehaviour("small-coder", FakeUpstream.ok("efficient answer"))
      yield* upstream.setBehaviour("frontier-coder", FakeUpstream.ok("capable answer"))
      const answered = yield* post(client, "/v1/chat/completions", { model: "switchyard/auto", messages: quiet })
      assert.strictEqual(answered.status, 200)
      assert.strictEqual(answered.selected, "small-coder")
      assert.strictEqual(answered.source, "stage_router")
      assert.include(answered.text, "efficient answer")
      const session = { "x-switchyard-session-id": "auto-session" }
      const escalated = yield* post(
        client,
        "/v1/chat/completions",
        { model: "switchyard/auto", messages: critical },
        session
      )
      assert.strictEqual(escalated.selected, "frontier-coder")
      // capable_hold_turns = 2 in the preset: the session's next quiet turns stay capable
      for (const _ of [1, 2]) {
        const held = yield* post(client, "/v1/decision", {
          input_format: "openai_chat",
          request: { model: "switchyard/auto", messages: quiet }
        }, session)
        const body = Schema.decodeUnknownSync(DecisionBody)(JSON.parse(held.text))
        assert.strictEqual(body.selected.target, "strong")
        assert.deepStrictEqual(body.evidence.stage, { ...body.evidence.stage, decision_source: "capable_hold" })
      }
      const released = yield* post(
        client,
        "/v1/chat/completions",
        { model: "switchyard/auto", messages: quiet },
        session
      )
      assert.strictEqual(released.selected, "small-coder")
      const listed = yield* models(client)
      assert.deepStrictEqual(listed.data.map((m) => [m.id, m.route_type]), [["switchyard/auto", "stage_router"]])
    }))

  it.scopedLive("composite (the compatible system's Claude Code recipe): the judge sets the tier once per user turn", () =>
    Effect.gen(function*() {
      const { client, upstream } = yield* serveFixture("claude-routing-composite.toml", ["https://api.anthropic.com"])
      yield* upstream.setBehaviour(
        "claude-haiku-4-5-20251001",
        FakeUpstream.ok(
          JSON.stringify({ crux: "hard", primary_rule: "SUP-1", capability_boundary: "supported", p_solve: 0.1 })
        )
      )
      yield* upstream.setBehaviour("claude-opus-5-5", FakeUpstream.ok("capable answer"))
      yield* upstream.setBehaviour("claude-sonnet-5-5", FakeUpstream.ok("efficient answer"))
      // forward_auth: the caller's own key goes upstream
      const headers = { "x-api-key": "sk-ant-caller", "x-switchyard-session-id": "composite-session" }
      // the route forwards an Anthropic credential: its callers speak Messages
      const answered = yield* post(
        client,
        "/v1/messages",
        { model: "switchyard", max_tokens: 256, messages: quiet },
        headers
      )
      assert.strictEqual(answered.status, 200, answered.text)
      assert.strictEqual(answered.selected, "claude-opus-5-5")
      assert.strictEqual(answered.source, "llm-classifier")
      assert.include(answered.text, "capable answer")
      // a tool continuation of the same turn: the stored tier, no second judge call
      const continued = yield* post(client, "/v1/decision", {
        input_format: "anthropic_messages",
        request: {
          model: "switchyard",
          max_tokens: 256,
          messages: [
            { role: "user", content: "explain the module" },
            { role: "assistant", content: [{ type: "tool_use", id: "c1", name: "lookup", input: {} }] },
            { role: "user", content: [{ type: "tool_result", tool_use_id: "c1", content: "nothing to report" }] }
          ]
        }
      }, headers)
      const body = Schema.decodeUnknownSync(DecisionBody)(JSON.parse(continued.text))
      assert.strictEqual(body.selected.target, "capable")
      assert.strictEqual(body.evidence.source, "affinity")
      assert.strictEqual(body.evidence.stage.decision_source, "llm-classifier")
      const judged = yield* Effect.map(
        upstream.requests,
        (records) => records.filter((r) => r.model === "claude-haiku-4-5-20251001")
      )
      assert.strictEqual(judged.length, 1)
      assert.strictEqual(judged[0]?.headers["x-api-key"], "sk-ant-caller")
      const listed = yield* models(client)
      assert.deepStrictEqual(listed.data.map((m) => [m.id, m.route_type]), [["switchyard", "composite"]])
    }))
})
