/**
 * `forward_auth = true` on an LLM client (bring your own key): the caller's credential reaches
 * that client's upstream and no other — not a client with its own key, not a judge whose client
 * does not forward — and a caller's key echoed in an upstream error is redacted.
 */
import type * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import { assert, describe, it } from "@effect/vitest"
import type { RequestRecord } from "@switchyard-ts/testkit/FakeUpstream"
import * as FakeUpstream from "@switchyard-ts/testkit/FakeUpstream"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import { startServer } from "./harness.js"

const houseKey = "sk-house-SECRET-0123456789"
const callerKey = "sk-caller-OWN-KEY-0123456789"
const withHouseKey = Effect.withConfigProvider(ConfigProvider.fromMap(new Map([["HOUSE_KEY", houseKey]])))

const toml = (upstreamUrl: string) => `
schema_version = 1

[llm_clients.byok]
format = "openai_chat"
base_url = "${upstreamUrl}"
forward_auth = true
max_retries = 0

[llm_clients.house]
format = "openai_chat"
base_url = "${upstreamUrl}"
api_key_env = "HOUSE_KEY"
max_retries = 0

[llm_clients.claude_byok]
format = "anthropic_messages"
base_url = "${upstreamUrl.replace(/\/v1$/, "")}"
forward_auth = true
max_retries = 0

[llm_clients.judge_plain]
format = "openai_chat"
base_url = "${upstreamUrl}"
max_retries = 0

[llm_clients.judge_byok]
format = "openai_chat"
base_url = "${upstreamUrl}"
forward_auth = true
max_retries = 0

[targets.mine]
id = "byok-model"
llm_client = "byok"

[targets.theirs]
id = "house-model"
llm_client = "house"

[targets.claude]
id = "claude-byok"
llm_client = "claude_byok"

[targets.judge_plain]
id = "judge-plain"
llm_client = "judge_plain"

[targets.judge_byok]
id = "judge-byok"
llm_client = "judge_byok"

[routes.byok]
id = "byok"
type = "passthrough"
target = "mine"

[routes.house]
id = "house"
type = "passthrough"
target = "theirs"

[routes.claude]
id = "claude"
type = "passthrough"
target = "claude"

[routes.judged_plain]
id = "judged-plain"
type = "llm_classifier"
classifier_target = "judge_plain"
weak_target = "mine"
strong_target = "theirs"
base_threshold = 0.5

[routes.judged_byok]
id = "judged-byok"
type = "llm_classifier"
classifier_target = "judge_byok"
weak_target = "mine"
strong_target = "theirs"
base_threshold = 0.5
`

const messages = [{ role: "user", content: "fix it" }]

const post = (
  client: HttpClient.HttpClient,
  path: string,
  body: unknown,
  headers: Readonly<Record<string, string>>
) =>
  Effect.flatMap(
    client.execute(
      HttpClientRequest.post(path).pipe(HttpClientRequest.bodyUnsafeJson(body), HttpClientRequest.setHeaders(headers))
    ),
    (response) => Effect.map(response.text, (text) => ({ status: response.status, text }))
  )

const verdict = FakeUpstream.ok(
  JSON.stringify({ crux: "small fix", primary_rule: "SUP-1", capability_boundary: "supported", p_solve: 0.9 })
)

const seenBy = (records: ReadonlyArray<RequestRecord>, model: string): RequestRecord => {
  const record = records.find((r) => r.model === model)
  assert.isDefined(record, `${model} was called`)
  if (record === undefined) throw new Error(`${model} was not called`)
  return record
}

const callerHeaders = {
  authorization: `Bearer ${callerKey}`,
  "chatgpt-account-id": "acct-caller",
  "x-team": "infra"
}

describe("forward_auth", () => {
  it.scopedLive("the caller's credential goes to the forwarding client only; the other client sends its own key", () =>
    Effect.gen(function*() {
      const { client, upstream } = yield* withHouseKey(startServer(toml))
      assert.strictEqual(
        (yield* post(client, "/v1/chat/completions", { model: "byok", messages }, callerHeaders)).status,
        200
      )
      assert.strictEqual(
        (yield* post(client, "/v1/chat/completions", { model: "house", messages }, callerHeaders)).status,
        200
      )
      const records = yield* upstream.requests
      const mine = seenBy(records, "byok-model")
      assert.strictEqual(mine.headers["authorization"], `Bearer ${callerKey}`)
      assert.strictEqual(mine.headers["chatgpt-account-id"], "acct-caller")
      assert.strictEqual(mine.headers["x-team"], "infra")
      const theirs = seenBy(records, "house-model")
      assert.strictEqual(theirs.headers["authorization"], `Bearer ${houseKey}`)
      assert.isUndefined(theirs.headers["chatgpt-account-id"])
      assert.notInclude(JSON.stringify(theirs), callerKey)
    }))

  it.scopedLive("a judge gets the caller's credential only when its own client forwards", () =>
    Effect.gen(function*() {
      const { client, upstream } = yield* withHouseKey(startServer(toml))
      yield* upstream.setBehaviour("judge-plain", verdict)
      yield* upstream.setBehaviour("judge-byok", verdict)
      for (const model of ["judged-plain", "judged-byok"]) {
        const reply = yield* post(client, "/v1/chat/completions", { model, messages }, callerHeaders)
        assert.strictEqual(reply.status, 200, reply.text)
      }
      const records = yield* upstream.requests
      const plain = seenBy(records, "judge-plain")
      assert.isUndefined(plain.headers["authorization"])
      assert.notInclude(JSON.stringify(plain), callerKey)
      assert.strictEqual(seenBy(records, "judge-byok").headers["authorization"], `Bearer ${callerKey}`)
      // both routes answered on the weak target, whose client forwards
      const answers = records.filter((r) => r.model === "byok-model")
      assert.strictEqual(answers.length, 2)
      for (const answer of answers) assert.strictEqual(answer.headers["authorization"], `Bearer ${callerKey}`)
    }))

  it.scopedLive("an Anthropic forwarding client: x-api-key and authorization, oauth-* betas only when translated", () =>
    Effect.gen(function*() {
      const { client, upstream } = yield* withHouseKey(startServer(toml))
      const headers = {
        "x-api-key": callerKey,
        authorization: "Bearer caller-oauth-token-0123",
        "anthropic-beta": "oauth-2025-04-20, fine-grained-tool-streaming-2025-05-14",
        "chatgpt-account-id": "acct-caller"
      }
      const native = yield* post(client, "/v1/messages", { model: "claude", max_tokens: 16, messages }, headers)
      assert.strictEqual(native.status, 200, native.text)
      const translated = yield* post(client, "/v1/chat/completions", { model: "claude", messages }, headers)
      assert.strictEqual(translated.status, 200, translated.text)
      const [replayed, fromChat] = (yield* upstream.requests).filter((r) => r.model === "claude-byok")
      for (const record of [replayed, fromChat]) {
        assert.strictEqual(record?.headers["x-api-key"], callerKey)
        assert.strictEqual(record?.headers["authorization"], "Bearer caller-oauth-token-0123")
        assert.isUndefined(record?.headers["chatgpt-account-id"])
        assert.strictEqual(record?.headers["anthropic-version"], "2023-06-01")
      }
      assert.strictEqual(
        replayed?.headers["anthropic-beta"],
        "oauth-2025-04-20,fine-grained-tool-streaming-2025-05-14"
      )
      assert.strictEqual(fromChat?.headers["anthropic-beta"], "oauth-2025-04-20")
    }))

  it.scopedLive("a caller's key echoed in the upstream's error is redacted from the answer", () =>
    Effect.gen(function*() {
      const { client, upstream } = yield* withHouseKey(startServer(toml))
      yield* upstream.setBehaviour(
        "byok-model",
        FakeUpstream.status(401, { message: `Incorrect API key ${callerKey}` })
      )
      const reply = yield* post(client, "/v1/chat/completions", { model: "byok", messages }, callerHeaders)
      assert.strictEqual(reply.status, 401)
      assert.notInclude(reply.text, callerKey)
      assert.include(reply.text, "[REDACTED]")
    }))
})
