/**
 * The compatible system's 0.3.0-era example deployments (anchor §6; `packages/config/test/fixtures`,
 * each naming its source) load unchanged and serve a chat, a Messages and a Responses request on
 * every route through the fake upstream (only the clients' `base_url` is pointed at it). A route that
 * forwards an Anthropic caller credential serves Messages and refuses the OpenAI endpoints, as the
 * compatible system does.
 */
import type * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { serveFixture } from "./harness.js"

interface Example {
  readonly file: string
  /** The clients' `base_url`s, pointed at the fake upstream. */
  readonly baseUrls: ReadonlyArray<string>
  readonly routes: ReadonlyArray<string>
  /** The route forwards the caller's Anthropic key: Messages only. */
  readonly anthropicOnly?: boolean
}

const examples: ReadonlyArray<Example> = [
  {
    file: "claude-routing-composite.toml",
    baseUrls: ["https://api.anthropic.com"],
    routes: ["switchyard"],
    anthropicOnly: true
  },
  {
    file: "server-readme-routes.toml",
    baseUrls: ["https://example.com/v1"],
    routes: ["switchyard/general", "switchyard/classified", "switchyard/passthrough", "switchyard/stage"]
  },
  { file: "auto-minimal.toml", baseUrls: ["https://api.example.com/v1"], routes: ["switchyard/auto"] },
  { file: "composite-routing-doc.toml", baseUrls: ["https://openrouter.ai/api/v1"], routes: ["switchyard"] },
  { file: "llm-classifier-custom-groups.toml", baseUrls: ["https://openrouter.ai/api/v1"], routes: ["smart"] },
  { file: "escalation-deescalation-example.toml", baseUrls: ["https://openrouter.ai/api/v1"], routes: ["agent"] },
  { file: "noop-only.toml", baseUrls: [], routes: ["noop"] }
]

const serve = (example: Example) => Effect.map(serveFixture(example.file, example.baseUrls), ({ client }) => client)

const requests = (route: string) => ({
  "/v1/chat/completions": { model: route, messages: [{ role: "user", content: "fix the failing test" }] },
  "/v1/messages": { model: route, max_tokens: 64, messages: [{ role: "user", content: "fix the failing test" }] },
  "/v1/responses": { model: route, input: "fix the failing test" }
})

const statusOf = (client: HttpClient.HttpClient, path: string, body: unknown) =>
  Effect.flatMap(
    client.execute(
      HttpClientRequest.post(path).pipe(
        HttpClientRequest.setHeaders({ "x-api-key": "sk-caller", "anthropic-version": "2023-06-01" }),
        HttpClientRequest.bodyUnsafeJson(body)
      )
    ),
    (response) => Effect.map(response.text, (text) => ({ status: response.status, text }))
  )

describe("the compatible system's 0.3.0-era examples through the server", () => {
  for (const example of examples) {
    it.scopedLive(`${example.file}: every route serves chat, Messages and Responses`, () =>
      Effect.gen(function*() {
        const client = yield* serve(example)
        for (const route of example.routes) {
          for (const [path, body] of Object.entries(requests(route))) {
            const answer = yield* statusOf(client, path, body)
            const refused = example.anthropicOnly === true && path !== "/v1/messages"
            assert.strictEqual(answer.status, refused ? 400 : 200, `${route} ${path}: ${answer.text}`)
            if (refused) assert.include(answer.text, "forward")
          }
        }
      }))
  }
})

describe("the Codex auto-review passthrough (anchor §6 #3)", () => {
  it.scopedLive("Responses and chat requests reach the Codex backend with the caller's bearer token; Messages is refused", () =>
    Effect.gen(function*() {
      const { client, upstream } = yield* serveFixture("codex-auto-review-passthrough.toml", [
        "https://chatgpt.com/backend-api/codex"
      ])
      const post = (path: string, body: unknown, headers: Record<string, string>) =>
        Effect.flatMap(
          client.execute(
            HttpClientRequest.post(path).pipe(
              HttpClientRequest.setHeaders(headers),
              HttpClientRequest.bodyUnsafeJson(body)
            )
          ),
          (response) => Effect.map(response.text, (text) => ({ status: response.status, text }))
        )
      const bearer = { authorization: "Bearer sk-codex-caller" }
      const review = yield* post("/v1/responses", { model: "codex-auto-review", input: "review this patch" }, bearer)
      assert.strictEqual(review.status, 200, review.text)
      const chat = yield* post("/v1/chat/completions", {
        model: "codex-auto-review",
        messages: [{ role: "user", content: "review this patch" }]
      }, bearer)
      assert.strictEqual(chat.status, 200, chat.text)
      const seen = yield* upstream.requests
      assert.deepStrictEqual(seen.map((request) => request.model), ["codex-auto-review", "codex-auto-review"])
      assert.deepStrictEqual(seen.map((request) => request.path.endsWith("/responses")), [true, true])
      assert.deepStrictEqual(seen.map((request) => request.headers.authorization), [
        "Bearer sk-codex-caller",
        "Bearer sk-codex-caller"
      ])
      const messages = yield* post("/v1/messages", {
        model: "codex-auto-review",
        max_tokens: 64,
        messages: [{ role: "user", content: "review this patch" }]
      }, { "x-api-key": "sk-ant-caller", "anthropic-version": "2023-06-01" })
      assert.strictEqual(messages.status, 400, messages.text)
      assert.include(messages.text, "forward")
      assert.strictEqual((yield* upstream.requests).length, 2)
    }))
})
