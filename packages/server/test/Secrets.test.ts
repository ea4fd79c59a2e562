/**
 * Secrets read from the environment reach the upstream as a header can carry them: a provider key
 * with the trailing newline of a mounted secret file is sent trimmed (both credential headers),
 * next to the client's `extra_headers`.
 *
 * Real sockets (a real server on loopback in front of the fake upstream), so `it.scopedLive`.
 */
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import { assert, describe, it } from "@effect/vitest"
import type * as D from "@switchyard-ts/testkit/DeploymentBuilder"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import { chat, chatAndClaude, startServer } from "./harness.js"

const providerKey = "sk-secret-file-0123456789"

/** The key as a mounted secret file gives it: surrounded by whitespace, ending in a newline. */
const withSecretFileKey = Effect.withConfigProvider(
  ConfigProvider.fromMap(new Map([["SWITCHYARD_SECRET_FILE_KEY", ` ${providerKey}\n`]]))
)

const deployment = (upstreamUrl: string): D.Deployment =>
  chatAndClaude(upstreamUrl, {
    settings: { api_key_env: "SWITCHYARD_SECRET_FILE_KEY", extra_headers: { "x-team": "infra\tcore" } }
  })

describe("secrets from the environment", () => {
  it.scopedLive("a provider key with a trailing newline reaches the upstream trimmed", () =>
    Effect.gen(function*() {
      const { client, upstream } = yield* withSecretFileKey(startServer(deployment))
      const chatReply = yield* client.execute(
        HttpClientRequest.post("/v1/chat/completions").pipe(HttpClientRequest.bodyUnsafeJson(chat("fast")))
      )
      assert.strictEqual(chatReply.status, 200)
      const messagesReply = yield* client.execute(
        HttpClientRequest.post("/v1/messages").pipe(HttpClientRequest.bodyUnsafeJson({
          model: "claude",
          max_tokens: 16,
          messages: [{ role: "user", content: "hello" }]
        }))
      )
      assert.strictEqual(messagesReply.status, 200)
      const [toChat, toMessages] = yield* upstream.requests
      assert.strictEqual(toChat?.headers["authorization"], `Bearer ${providerKey}`)
      assert.strictEqual(toChat?.headers["x-team"], "infra\tcore")
      assert.strictEqual(toMessages?.headers["x-api-key"], providerKey)
    }))
})
