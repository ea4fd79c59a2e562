/**
 * A target's `system_prompt` through the real server: the answer call of each target format gets
 * it before the caller's instructions (Chat, Messages and Responses callers alike), a fallback
 * candidate gets its own target's prompt, an escalation's weak call gets it — and a judge call
 * never does, even to a target that has a prompt.
 */
import type * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import { assert, describe, it } from "@effect/vitest"
import * as D from "@switchyard-ts/testkit/DeploymentBuilder"
import * as FakeUpstream from "@switchyard-ts/testkit/FakeUpstream"
import * as Effect from "effect/Effect"
import * as Predicate from "effect/Predicate"
import { capabilityRoute, startServer } from "./harness.js"

const record = (value: unknown): Record<string, unknown> => (Predicate.isRecord(value) ? value : {})

const post = (client: HttpClient.HttpClient, path: string, body: unknown) =>
  Effect.flatMap(
    client.execute(
      HttpClientRequest.post(path).pipe(
        HttpClientRequest.setHeader("x-switchyard-session-id", `s-${Math.random()}`),
        HttpClientRequest.bodyUnsafeJson(body)
      )
    ),
    (response) => Effect.as(response.text, response.status)
  )

const deployment = (upstreamUrl: string): D.Deployment => ({
  llm_clients: {
    oai: D.client("openai_chat", upstreamUrl, { max_retries: 0 }),
    claude: D.client("anthropic_messages", upstreamUrl.replace(/\/v1$/, ""), { max_retries: 0 }),
    resp: D.client("openai_responses", upstreamUrl, { max_retries: 0 }),
    dead: D.client("openai_chat", D.deadUrl, { max_retries: 0 })
  },
  targets: {
    chat: D.target("chat-model", "oai", { system_prompt: "P-chat" }),
    claude: D.target("claude-model", "claude", { system_prompt: "P-claude" }),
    resp: D.target("resp-model", "resp", { system_prompt: "P-resp" }),
    gone: D.target("gone-model", "dead", { system_prompt: "P-gone" }),
    judge: D.target("judge-model", "oai", { system_prompt: "P-judge" }),
    weak: D.target("weak-model", "oai", { system_prompt: "P-weak" }),
    strong: D.target("strong-model", "oai", { system_prompt: "P-strong" })
  },
  routes: D.byId(
    D.passthrough("to-chat", "chat"),
    D.passthrough("to-claude", "claude"),
    D.passthrough("to-resp", "resp"),
    D.passthrough("to-judge", "judge"),
    D.random("falls-back", ["gone", "chat"], { weights: [1, 0] }),
    capabilityRoute("judged", "judge", { judge_failure: "error" }),
    D.escalation("escalating", {
      classifier_target: "judge",
      weak_target: "weak",
      strong_target: "strong",
      judge_failure: "error",
      escalation: { confirmations: 2 }
    })
  )
})

const chatBody = (model: string) => ({
  model,
  messages: [{ role: "system", content: "caller instructions" }, { role: "user", content: "hi" }]
})
const messagesBody = (model: string) => ({
  model,
  max_tokens: 16,
  system: "caller instructions",
  messages: [{ role: "user", content: "hi" }]
})
const responsesBody = (model: string) => ({ model, instructions: "caller instructions", input: "hi" })

/** The system text an upstream request carried first, by the API it was sent to (up to a blank line). */
const firstInstruction = (body: unknown, path: string): unknown => {
  const b = record(body)
  if (path.endsWith("/chat/completions")) {
    return Array.isArray(b["messages"])
      ? record(b["messages"][0])["content"]
      : undefined
  }
  if (path.endsWith("/messages")) {
    const system = b["system"]
    return Array.isArray(system) ? record(system[0])["text"] : system
  }
  // Responses: the prompt, a blank line, then the caller's instructions
  const instructions = b["instructions"]
  return typeof instructions === "string" ? instructions.split("\n\n")[0] : instructions
}

describe("system_prompt through the server", () => {
  it.scoped("every caller format and target format: the prompt first, the caller's instructions kept", () =>
    Effect.gen(function*() {
      const { client, upstream } = yield* startServer(deployment)
      const callers = [
        ["/v1/chat/completions", chatBody],
        ["/v1/messages", messagesBody],
        ["/v1/responses", responsesBody]
      ] as const
      const targets = [["to-chat", "chat-model", "P-chat"], ["to-claude", "claude-model", "P-claude"], [
        "to-resp",
        "resp-model",
        "P-resp"
      ]] as const
      for (const [path, body] of callers) {
        for (const [route, model, prompt] of targets) {
          yield* upstream.clear
          assert.strictEqual(yield* post(client, path, body(route)), 200, `${path} → ${route}`)
          const [seen] = yield* upstream.requests
          assert.strictEqual(seen?.model, model)
          assert.strictEqual(firstInstruction(seen?.body, seen?.path ?? ""), prompt, `${path} → ${route}`)
          assert.include(seen?.bodyText, "caller instructions", `${path} → ${route}`)
        }
      }
    }))

  it.scoped("a fallback candidate is sent its own target's prompt", () =>
    Effect.gen(function*() {
      const { client, upstream } = yield* startServer(deployment)
      assert.strictEqual(yield* post(client, "/v1/chat/completions", chatBody("falls-back")), 200)
      const [seen] = yield* upstream.requests
      assert.strictEqual(seen?.model, "chat-model")
      assert.strictEqual(firstInstruction(seen?.body, seen?.path ?? ""), "P-chat")
    }))

  it.scoped("judge calls never carry a prompt, not even their own target's; the answer and the weak call do", () =>
    Effect.gen(function*() {
      const { client, upstream } = yield* startServer(deployment)
      yield* upstream.setBehaviour(
        "judge-model",
        FakeUpstream.ok(
          JSON.stringify({ crux: "c", primary_rule: "SUP-1", capability_boundary: "supported", p_solve: 0.9 })
        )
      )
      assert.strictEqual(yield* post(client, "/v1/chat/completions", chatBody("judged")), 200)
      const [judged, answered] = yield* upstream.requests
      assert.strictEqual(judged?.model, "judge-model")
      assert.notInclude(judged?.bodyText, "P-judge")
      assert.strictEqual(answered?.model, "weak-model")
      assert.strictEqual(firstInstruction(answered?.body, answered?.path ?? ""), "P-weak")

      yield* upstream.clear
      yield* upstream.setBehaviour("judge-model", FakeUpstream.ok("{\"escalate\": false, \"reason\": \"fine\"}"))
      assert.strictEqual(yield* post(client, "/v1/chat/completions", chatBody("escalating")), 200)
      const escalation = yield* upstream.requests
      const weakCall = escalation.find((r) => r.model === "weak-model")
      assert.strictEqual(firstInstruction(weakCall?.body, weakCall?.path ?? ""), "P-weak")
      for (const call of escalation.filter((r) => r.model === "judge-model")) {
        assert.notInclude(call.bodyText, "P-judge")
      }

      yield* upstream.clear
      assert.strictEqual(yield* post(client, "/v1/chat/completions", chatBody("to-judge")), 200)
      const [direct] = yield* upstream.requests
      assert.strictEqual(firstInstruction(direct?.body, direct?.path ?? ""), "P-judge")
    }))
})
