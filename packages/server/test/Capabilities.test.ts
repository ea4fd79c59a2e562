/**
 * The route flags `reasoning`, `tool_calling` and `vision` through the real server: a request
 * using a disabled input is refused with 400 before any upstream call — the judge's included — on
 * each inbound format and on `/v1/decision`, in the format's envelope (OpenAI: code
 * `unsupported_capability`; Anthropic: `invalid_request_error`); unset or `true` flags let the same
 * requests through; `/v1/models` shows `capabilities.vision`.
 */
import type * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import { assert, describe, it } from "@effect/vitest"
import * as D from "@switchyard-ts/testkit/DeploymentBuilder"
import * as Effect from "effect/Effect"
import * as Predicate from "effect/Predicate"
import { capabilityRoute, startServer } from "./harness.js"

const record = (value: unknown): Record<string, unknown> => (Predicate.isRecord(value) ? value : {})

const post = (client: HttpClient.HttpClient, path: string, body: unknown) =>
  Effect.flatMap(
    client.execute(HttpClientRequest.post(path).pipe(HttpClientRequest.bodyUnsafeJson(body))),
    (response) => Effect.map(response.json, (json) => ({ status: response.status, body: record(json) }))
  )

const deployment = (upstreamUrl: string): D.Deployment => ({
  llm_clients: {
    oai: D.client("openai_chat", upstreamUrl, { max_retries: 0 }),
    judge: D.client("openai_chat", upstreamUrl, { max_retries: 0, timeout_ms: 3000 })
  },
  targets: {
    weak: D.target("weak-model", "oai"),
    strong: D.target("strong-model", "oai"),
    judge: D.target("judge-model", "judge")
  },
  routes: D.byId(
    D.passthrough("no-vision", "weak", { vision: false }),
    D.passthrough("no-tools", "weak", { tool_calling: false }),
    D.passthrough("no-reasoning", "weak", { reasoning: false }),
    D.passthrough("all-off", "weak", { reasoning: false, tool_calling: false, vision: false }),
    D.passthrough("all-on", "weak", { reasoning: true, tool_calling: true, vision: true }),
    D.passthrough("unset", "weak"),
    capabilityRoute("judged-no-vision", "judge", { vision: false, judge_failure: "error" })
  )
})

const image = "data:image/png;base64,iVBORw0KGgo="

/** The same uses in each inbound format: an image, a tool offer, a reasoning control. */
const uses = {
  chat: {
    path: "/v1/chat/completions",
    image: { messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: image } }] }] },
    tools: {
      messages: [{ role: "user", content: "hi" }],
      tools: [{ type: "function", function: { name: "f", parameters: { type: "object" } } }]
    },
    reasoning: { messages: [{ role: "user", content: "hi" }], reasoning_effort: "high" }
  },
  messages: {
    path: "/v1/messages",
    image: {
      max_tokens: 16,
      messages: [{
        role: "user",
        content: [{ type: "image", source: { type: "base64", media_type: "image/png", data: "iVBORw0KGgo=" } }]
      }]
    },
    tools: {
      max_tokens: 16,
      messages: [{ role: "user", content: "hi" }],
      tools: [{ name: "f", input_schema: { type: "object" } }]
    },
    reasoning: {
      max_tokens: 2048,
      messages: [{ role: "user", content: "hi" }],
      thinking: { type: "enabled", budget_tokens: 1024 }
    }
  },
  responses: {
    path: "/v1/responses",
    image: { input: [{ role: "user", content: [{ type: "input_image", image_url: image }] }] },
    tools: { input: "hi", tools: [{ type: "function", name: "f", parameters: { type: "object" } }] },
    reasoning: { input: "hi", reasoning: { effort: "high" } }
  }
} as const

describe("route capability flags through the server", () => {
  it.scoped("a disabled input is a 400 on every inbound format, before any upstream call", () =>
    Effect.gen(function*() {
      const { client, upstream } = yield* startServer(deployment)
      for (const [format, use] of Object.entries(uses)) {
        for (
          const [route, kind, capability] of [
            ["no-vision", "image", "vision"],
            ["no-tools", "tools", "tool_calling"],
            ["no-reasoning", "reasoning", "reasoning"]
          ] as const
        ) {
          const reply = yield* post(client, use.path, { model: route, ...use[kind] })
          assert.strictEqual(reply.status, 400, `${format} ${route}`)
          const message =
            `route ${route} does not support ${capability} (${capability} = false), and the request uses it`
          if (format === "messages") {
            assert.deepStrictEqual(reply.body, { type: "error", error: { type: "invalid_request_error", message } })
          } else {
            assert.deepStrictEqual(reply.body, {
              error: { message, type: "invalid_request_error", code: "unsupported_capability" }
            })
          }
        }
      }
      assert.deepStrictEqual(yield* upstream.requests, [])
    }))

  it.scoped("reasoning is checked before tool_calling, tool_calling before vision", () =>
    Effect.gen(function*() {
      const { client } = yield* startServer(deployment)
      const all = { ...uses.chat.image, ...uses.chat.reasoning, tools: uses.chat.tools.tools }
      const message = (body: Record<string, unknown>) => record(body["error"])["message"]
      const first = yield* post(client, "/v1/chat/completions", { model: "all-off", ...all })
      assert.include(message(first.body), "does not support reasoning")
      const { reasoning_effort: _effort, ...toolsAndImage } = all
      const second = yield* post(client, "/v1/chat/completions", { model: "all-off", ...toolsAndImage })
      assert.include(message(second.body), "does not support tool_calling")
    }))

  it.scoped("unset or true flags never restrict", () =>
    Effect.gen(function*() {
      const { client, upstream } = yield* startServer(deployment)
      for (const route of ["unset", "all-on"]) {
        for (const use of Object.values(uses)) {
          for (const kind of ["image", "tools", "reasoning"] as const) {
            const reply = yield* post(client, use.path, { model: route, ...use[kind] })
            assert.strictEqual(reply.status, 200, `${route} ${use.path} ${kind}`)
          }
        }
      }
      assert.strictEqual((yield* upstream.requests).length, 18)
    }))

  it.scoped("a judge-using route refuses before its judge is asked; /v1/decision refuses alike", () =>
    Effect.gen(function*() {
      const { client, upstream } = yield* startServer(deployment)
      const answered = yield* post(client, "/v1/chat/completions", { model: "judged-no-vision", ...uses.chat.image })
      assert.strictEqual(answered.status, 400)
      const asked: ReadonlyArray<readonly [string, object]> = [
        ["openai_chat", uses.chat.image],
        ["anthropic_messages", uses.messages.image]
      ]
      for (const [format, body] of asked) {
        const decided = yield* post(client, "/v1/decision", {
          input_format: format,
          request: { model: "judged-no-vision", ...body }
        })
        assert.strictEqual(decided.status, 400)
        assert.strictEqual(record(decided.body["error"])["code"], "unsupported_capability")
      }
      assert.deepStrictEqual(yield* upstream.requests, [])
    }))

  it.scoped("/v1/models shows capabilities.vision: the flag, or null when unset", () =>
    Effect.gen(function*() {
      const { client } = yield* startServer(deployment)
      const listed = yield* Effect.flatMap(client.get("/v1/models"), (response) => response.json)
      const data = record(listed)["data"]
      const vision = new Map(
        (Array.isArray(data) ? data : []).map((
          entry
        ) => [record(entry)["id"], record(record(entry)["capabilities"])["vision"]])
      )
      assert.strictEqual(vision.get("no-vision"), false)
      assert.strictEqual(vision.get("all-on"), true)
      assert.strictEqual(vision.get("unset"), null)
    }))
})
