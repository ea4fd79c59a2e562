/**
 * `forward_auth = true` on an LLM client (bring your own key): the caller's credential reaches
 * that client's upstream and no other — not a client with its own key, not a judge whose client
 * does not forward — and a caller's key echoed in an upstream error is redacted. A route that
 * forwards Anthropic credentials is called on `/v1/messages` (and `/v1/messages/count_tokens`), one
 * that forwards OpenAI credentials on `/v1/chat/completions` or `/v1/responses`; `/v1/decision`
 * checks its `input_format` the same way. Any other endpoint gets a 400 in its envelope before any
 * upstream call, judges included; a route that forwards nothing takes every endpoint.
 */
import type * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import { assert, describe, it } from "@effect/vitest"
import * as Metrics from "@switchyard-ts/server/Metrics"
import * as D from "@switchyard-ts/testkit/DeploymentBuilder"
import type { RequestRecord } from "@switchyard-ts/testkit/FakeUpstream"
import * as FakeUpstream from "@switchyard-ts/testkit/FakeUpstream"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Logger from "effect/Logger"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import { capabilityRoute, startServer } from "./harness.js"

const houseKey = "sk-house-SECRET-0123456789"
const callerKey = "sk-caller-OWN-KEY-0123456789"
const withHouseKey = Effect.withConfigProvider(ConfigProvider.fromMap(new Map([["HOUSE_KEY", houseKey]])))

const deployment = (upstreamUrl: string): D.Deployment => {
  const anthropicUrl = upstreamUrl.replace(/\/v1$/, "")
  return {
    llm_clients: {
      byok: D.client("openai_chat", upstreamUrl, { forward_auth: true, max_retries: 0 }),
      house: D.client("openai_chat", upstreamUrl, { api_key_env: "HOUSE_KEY", max_retries: 0 }),
      claude_byok: D.client("anthropic_messages", anthropicUrl, { forward_auth: true, max_retries: 0 }),
      claude_house: D.client("anthropic_messages", anthropicUrl, { api_key_env: "HOUSE_KEY", max_retries: 0 }),
      judge_plain: D.client("openai_chat", upstreamUrl, { max_retries: 0 }),
      judge_byok: D.client("openai_chat", upstreamUrl, { forward_auth: true, max_retries: 0 })
    },
    targets: {
      mine: D.target("byok-model", "byok"),
      theirs: D.target("house-model", "house"),
      claude: D.target("claude-byok", "claude_byok"),
      claude_judge: D.target("claude-judge", "claude_byok"),
      claude_house: D.target("claude-house", "claude_house"),
      judge_plain: D.target("judge-plain", "judge_plain"),
      judge_byok: D.target("judge-byok", "judge_byok")
    },
    routes: {
      byok: D.passthrough("byok", "mine"),
      house: D.passthrough("house", "theirs"),
      claude: D.passthrough("claude", "claude"),
      claude_house: D.passthrough("claude-house", "claude_house"),
      judged_claude: capabilityRoute("judged-claude", "claude_judge", {
        weak_target: "claude",
        strong_target: "theirs"
      }),
      openai_mixed: D.random("openai-mixed", ["mine", "claude_house"], { weights: [1, 0] }),
      judged_plain: capabilityRoute("judged-plain", "judge_plain", { weak_target: "mine", strong_target: "theirs" }),
      judged_byok: capabilityRoute("judged-byok", "judge_byok", { weak_target: "mine", strong_target: "theirs" })
    }
  }
}

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

/** An Anthropic caller's credential headers (an API key and an OAuth token). */
const anthropicCaller = {
  "x-api-key": callerKey,
  authorization: "Bearer caller-oauth-token-0123"
}

const chatBody = (model: string, extra: Record<string, unknown> = {}) => ({ model, messages, ...extra })
const responsesBody = (model: string, extra: Record<string, unknown> = {}) => ({ model, input: "fix it", ...extra })
const messagesBody = (model: string, extra: Record<string, unknown> = {}) => ({
  model,
  max_tokens: 16,
  messages,
  ...extra
})

/** An LLM endpoint: its path, the credential family of its callers, a request body for a route, its error envelope. */
interface Endpoint {
  readonly path: string
  readonly family: "anthropic" | "openai"
  readonly body: (model: string, extra?: Record<string, unknown>) => Record<string, unknown>
  readonly envelope: "openai" | "anthropic"
}

const endpoints: ReadonlyArray<Endpoint> = [
  { path: "/v1/chat/completions", family: "openai", body: chatBody, envelope: "openai" },
  { path: "/v1/responses", family: "openai", body: responsesBody, envelope: "openai" },
  { path: "/v1/messages", family: "anthropic", body: messagesBody, envelope: "anthropic" }
]

/** `/v1/decision` with a request in `input_format`, which decides the family as the endpoint would. */
const decisionBody = (format: "openai_chat" | "openai_responses" | "anthropic_messages", model: string) => ({
  input_format: format,
  request: format === "openai_chat"
    ? chatBody(model)
    : format === "openai_responses"
    ? responsesBody(model)
    : messagesBody(model)
})

const OpenAiError = Schema.Struct({
  error: Schema.Struct({ message: Schema.String, type: Schema.String, code: Schema.String })
})
const AnthropicError = Schema.Struct({
  type: Schema.Literal("error"),
  error: Schema.Struct({ type: Schema.String, message: Schema.String })
})
const exactly = { onExcessProperty: "error" } as const

/** The message of a 400 refusing `route`, which forwards `family` credentials. */
const refusal = (route: string, family: "anthropic" | "openai") =>
  family === "anthropic"
    ? `route ${route} forwards the caller's Anthropic credential: call it on /v1/messages`
    : `route ${route} forwards the caller's OpenAI credential: call it on /v1/chat/completions or /v1/responses`

/** Assert a 400 of the forward-auth check in `envelope`'s shape, naming `route` and the endpoint to use. */
const assertRefused = (
  reply: { readonly status: number; readonly text: string },
  envelope: "openai" | "anthropic",
  route: string,
  family: "anthropic" | "openai"
) =>
  Effect.gen(function*() {
    assert.strictEqual(reply.status, 400, reply.text)
    if (envelope === "openai") {
      const body = yield* Schema.decodeUnknown(Schema.parseJson(OpenAiError), exactly)(reply.text)
      assert.deepStrictEqual(body.error, {
        message: refusal(route, family),
        type: "invalid_request_error",
        code: "invalid_request_error"
      })
    } else {
      const body = yield* Schema.decodeUnknown(Schema.parseJson(AnthropicError), exactly)(reply.text)
      assert.deepStrictEqual(body.error, { type: "invalid_request_error", message: refusal(route, family) })
    }
  })

/** The request log lines of a server (message `request`), as their annotations. */
const requestLog = () => {
  const lines: Array<Record<string, unknown>> = []
  const logger = Logger.make(({ annotations, message }) => {
    const text = Array.isArray(message) ? message.join(" ") : String(message)
    if (text === "request") lines.push(Object.fromEntries(annotations))
  })
  return { lines, logger }
}

/** Waits (real time, 5 s at most) until `done` holds: the request log is written after the reply. */
const eventually = (done: () => boolean, what: string) =>
  Effect.suspend(() => (done() ? Effect.void : Effect.fail(new NotYet({ what })))).pipe(
    Effect.retry(Schedule.spaced("10 millis").pipe(Schedule.upTo("5 seconds")))
  )

class NotYet extends Data.TaggedError("NotYet")<{ readonly what: string }> {}

const otherErrors = Effect.map(
  Metric.value(Metrics.clientResponsesTotal.pipe(Metric.tagged("outcome", "other_error"))),
  (state) => state.count
)

describe("forward_auth", () => {
  it.scopedLive("the caller's credential goes to the forwarding client only; the other client sends its own key", () =>
    Effect.gen(function*() {
      const { client, upstream } = yield* withHouseKey(startServer(deployment))
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
      const { client, upstream } = yield* withHouseKey(startServer(deployment))
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

  it.scopedLive(
    "an Anthropic forwarding client gets x-api-key and authorization; anthropic-beta whole on a native replay, its oauth-* items only when translated (a judge call)",
    () =>
      Effect.gen(function*() {
        const { client, upstream } = yield* withHouseKey(startServer(deployment))
        yield* upstream.setBehaviour("claude-judge", verdict)
        const headers = {
          ...anthropicCaller,
          "anthropic-beta": "oauth-2025-04-20, fine-grained-tool-streaming-2025-05-14",
          "chatgpt-account-id": "acct-caller"
        }
        const native = yield* post(client, "/v1/messages", messagesBody("claude"), headers)
        assert.strictEqual(native.status, 200, native.text)
        // the judge's request is built by the router (chat → Messages); the answer replays the caller's body
        const judged = yield* post(client, "/v1/messages", messagesBody("judged-claude"), headers)
        assert.strictEqual(judged.status, 200, judged.text)
        const records = yield* upstream.requests
        const [replayed, judgedAnswer] = records.filter((r) => r.model === "claude-byok")
        const judge = seenBy(records, "claude-judge")
        for (const record of [replayed, judgedAnswer, judge]) {
          assert.strictEqual(record?.path, "/v1/messages")
          assert.strictEqual(record?.headers["x-api-key"], callerKey)
          assert.strictEqual(record?.headers["authorization"], "Bearer caller-oauth-token-0123")
          assert.isUndefined(record?.headers["chatgpt-account-id"])
          assert.strictEqual(record?.headers["anthropic-version"], "2023-06-01")
        }
        for (const record of [replayed, judgedAnswer]) {
          assert.strictEqual(
            record?.headers["anthropic-beta"],
            "oauth-2025-04-20,fine-grained-tool-streaming-2025-05-14"
          )
        }
        assert.strictEqual(judge.headers["anthropic-beta"], "oauth-2025-04-20")

        // no oauth-* item: a translated call carries no anthropic-beta at all
        yield* upstream.clear
        const withoutOauth = { ...anthropicCaller, "anthropic-beta": "fine-grained-tool-streaming-2025-05-14" }
        const again = yield* post(client, "/v1/messages", messagesBody("judged-claude"), withoutOauth)
        assert.strictEqual(again.status, 200, again.text)
        const later = yield* upstream.requests
        assert.isUndefined(seenBy(later, "claude-judge").headers["anthropic-beta"])
        assert.strictEqual(
          seenBy(later, "claude-byok").headers["anthropic-beta"],
          "fine-grained-tool-streaming-2025-05-14"
        )
      })
  )

  it.scopedLive("a caller's key echoed in the upstream's error is redacted from the answer", () =>
    Effect.gen(function*() {
      const { client, upstream } = yield* withHouseKey(startServer(deployment))
      yield* upstream.setBehaviour(
        "byok-model",
        FakeUpstream.status(401, { message: `Incorrect API key ${callerKey}` })
      )
      const reply = yield* post(client, "/v1/chat/completions", { model: "byok", messages }, callerHeaders)
      assert.strictEqual(reply.status, 401)
      assert.notInclude(reply.text, callerKey)
      assert.include(reply.text, "[REDACTED]")
    }))

  it.scopedLive(
    "a route forwarding one family on an endpoint of the other: 400 in the endpoint's envelope, no upstream call (judges included), logged and counted as a client response",
    () =>
      Effect.gen(function*() {
        const log = requestLog()
        const { client, upstream } = yield* withHouseKey(startServer(deployment, {}, Option.some(log.logger)))
        yield* upstream.setBehaviour("claude-judge", verdict)
        yield* upstream.setBehaviour("judge-byok", verdict)
        yield* upstream.setBehaviour("judge-plain", verdict)
        const before = yield* otherErrors
        const headers = { ...callerHeaders, ...anthropicCaller }
        const refused: Array<{ readonly path: string; readonly route: string }> = []
        for (const endpoint of endpoints) {
          const family = endpoint.family === "anthropic" ? "openai" : "anthropic"
          const routes = family === "anthropic" ? ["claude", "judged-claude"] : ["byok", "judged-byok", "judged-plain"]
          for (const route of routes) {
            for (const stream of [false, true]) {
              const reply = yield* post(client, endpoint.path, endpoint.body(route, { stream }), headers)
              yield* assertRefused(reply, endpoint.envelope, route, family)
              refused.push({ path: endpoint.path, route })
            }
          }
        }
        // /v1/decision: its input_format is the endpoint; always the OpenAI envelope; not a client response
        for (const format of ["openai_chat", "openai_responses"] as const) {
          const reply = yield* post(client, "/v1/decision", decisionBody(format, "judged-claude"), headers)
          yield* assertRefused(reply, "openai", "judged-claude", "anthropic")
        }
        const decided = yield* post(client, "/v1/decision", decisionBody("anthropic_messages", "judged-byok"), headers)
        yield* assertRefused(decided, "openai", "judged-byok", "openai")
        // token counting is an Anthropic endpoint: a route forwarding OpenAI credentials is refused
        // even with a (non-forwarding) Anthropic target to count on
        const counted = yield* post(client, "/v1/messages/count_tokens", messagesBody("openai-mixed"), headers)
        yield* assertRefused(counted, "anthropic", "openai-mixed", "openai")

        assert.deepStrictEqual(yield* upstream.requests, [], "no upstream call, judges included")
        yield* eventually(() => log.lines.length === refused.length, "one request line per refused LLM request")
        assert.deepStrictEqual(
          log.lines.map((line) => [line["status"], line["error"], line["route"]]),
          refused.map(({ route }) => [400, "invalid_request_error", route])
        )
        assert.strictEqual((yield* otherErrors) - before, refused.length)
      })
  )

  it.scopedLive(
    "a route forwarding one family on an endpoint of that family reaches the upstream with the caller's credential",
    () =>
      Effect.gen(function*() {
        const { client, upstream } = yield* withHouseKey(startServer(deployment))
        yield* upstream.setBehaviour("claude-judge", verdict)
        yield* upstream.setBehaviour("judge-byok", verdict)
        /** Each caller sends its family's credential, and the other family's account header to see it dropped. */
        const headersOf = (family: "anthropic" | "openai") =>
          family === "anthropic" ? { ...anthropicCaller, "chatgpt-account-id": "acct-caller" } : callerHeaders
        const assertCallerCredential = (record: RequestRecord | undefined, family: "anthropic" | "openai") => {
          if (family === "anthropic") {
            assert.strictEqual(record?.headers["x-api-key"], callerKey)
            assert.strictEqual(record?.headers["authorization"], "Bearer caller-oauth-token-0123")
            assert.isUndefined(record?.headers["chatgpt-account-id"])
          } else {
            assert.strictEqual(record?.headers["authorization"], `Bearer ${callerKey}`)
            assert.strictEqual(record?.headers["chatgpt-account-id"], "acct-caller")
          }
        }
        for (const endpoint of endpoints) {
          const routes = endpoint.family === "anthropic" ? ["claude", "judged-claude"] : ["byok", "judged-byok"]
          for (const route of routes) {
            for (const stream of [false, true]) {
              yield* upstream.clear
              const reply = yield* post(
                client,
                endpoint.path,
                endpoint.body(route, { stream }),
                headersOf(endpoint.family)
              )
              assert.strictEqual(reply.status, 200, `${endpoint.path} ${route}: ${reply.text}`)
              const records = yield* upstream.requests
              // the answer call, and for a judged route the judge call first, each with the caller's credential
              const expected = endpoint.family === "anthropic"
                ? (route === "claude" ? ["claude-byok"] : ["claude-judge", "claude-byok"])
                : (route === "byok" ? ["byok-model"] : ["judge-byok", "byok-model"])
              assert.deepStrictEqual(records.map((r) => r.model), expected, `${endpoint.path} ${route}`)
              for (const record of records) assertCallerCredential(record, endpoint.family)
            }
          }
        }
        // /v1/decision with a matching input_format runs the judge (with the caller's credential), no answer call
        const decisions = [
          { format: "anthropic_messages", family: "anthropic", route: "judged-claude", judge: "claude-judge" },
          { format: "openai_chat", family: "openai", route: "judged-byok", judge: "judge-byok" },
          { format: "openai_responses", family: "openai", route: "judged-byok", judge: "judge-byok" }
        ] as const
        for (const { family, format, judge, route } of decisions) {
          yield* upstream.clear
          const reply = yield* post(client, "/v1/decision", decisionBody(format, route), headersOf(family))
          assert.strictEqual(reply.status, 200, `${format} ${route}: ${reply.text}`)
          const records = yield* upstream.requests
          assert.deepStrictEqual(records.map((r) => r.model), [judge])
          assertCallerCredential(records[0], family)
        }
        // token counting on a route forwarding Anthropic credentials: the caller's credential
        yield* upstream.clear
        const counted = yield* post(
          client,
          "/v1/messages/count_tokens",
          messagesBody("claude"),
          headersOf("anthropic")
        )
        assert.strictEqual(counted.status, 200, counted.text)
        const [count] = yield* upstream.requests
        assert.strictEqual(count?.path, "/v1/messages/count_tokens")
        assertCallerCredential(count, "anthropic")
      })
  )

  it.scopedLive("a route forwarding no credential takes every endpoint, answered with the client's own key", () =>
    Effect.gen(function*() {
      const { client, upstream } = yield* withHouseKey(startServer(deployment))
      const headers = { ...callerHeaders, ...anthropicCaller }
      for (const endpoint of endpoints) {
        for (const [route, model] of [["house", "house-model"], ["claude-house", "claude-house"]] as const) {
          yield* upstream.clear
          const reply = yield* post(client, endpoint.path, endpoint.body(route), headers)
          assert.strictEqual(reply.status, 200, `${endpoint.path} ${route}: ${reply.text}`)
          const [record] = yield* upstream.requests
          assert.strictEqual(record?.model, model)
          if (model === "house-model") assert.strictEqual(record?.headers["authorization"], `Bearer ${houseKey}`)
          else assert.strictEqual(record?.headers["x-api-key"], houseKey)
          assert.notInclude(JSON.stringify(record?.headers), callerKey)
        }
      }
      for (const format of ["openai_chat", "openai_responses", "anthropic_messages"] as const) {
        const reply = yield* post(client, "/v1/decision", decisionBody(format, "house"), headers)
        assert.strictEqual(reply.status, 200, `${format}: ${reply.text}`)
      }
      yield* upstream.clear
      const counted = yield* post(client, "/v1/messages/count_tokens", messagesBody("claude-house"), headers)
      assert.strictEqual(counted.status, 200, counted.text)
      const [count] = yield* upstream.requests
      assert.strictEqual(count?.headers["x-api-key"], houseKey)
    }))
})
