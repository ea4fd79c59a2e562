/**
 * The `[server]` table (inbound auth: `api_keys_env`, `metrics_auth`; the connection timeouts) and
 * `forward_auth` on an LLM client: what loads, what is refused at which key path, and that no key
 * value reaches a message.
 */
import { assert, describe, it } from "@effect/vitest"
import * as DeploymentToml from "@switchyard-ts/config/DeploymentToml"
import * as ServerTable from "@switchyard-ts/config/ServerTable"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { doc, expectInvalid, load, secret } from "./support.js"

const keyA = "sk-inbound-A-0123456789"
const keyB = "sk-inbound-B-0123456789"
const env = (more: ReadonlyArray<readonly [string, string]>): ReadonlyArray<readonly [string, string]> => [
  ["HOSTED_API_KEY", secret],
  ...more
]

/** A document whose only client forwards the caller's credential. */
const forwarding = (parts: { readonly client?: string; readonly top?: string } = {}) =>
  doc({ top: parts.top ?? "" }).replace(
    "api_key_env = \"HOSTED_API_KEY\"",
    `forward_auth = true\n${parts.client ?? ""}`
  )

describe("[server] inbound auth", () => {
  it.effect("without the table inbound auth is off", () =>
    Effect.gen(function*() {
      const deployment = yield* load(doc())
      assert.deepStrictEqual(deployment.server.apiKeys, [])
      assert.isFalse(deployment.server.metricsAuth)
    }))

  it.effect("an array of variables: every key, kept redacted", () =>
    Effect.gen(function*() {
      const deployment = yield* load(
        doc({ more: "[server]\napi_keys_env = [\"KEY_A\", \"KEY_B\"]\nmetrics_auth = true" }),
        env([["KEY_A", keyA], ["KEY_B", keyB]])
      )
      assert.deepStrictEqual(deployment.server.apiKeys.map(Redacted.value), [keyA, keyB])
      assert.isTrue(deployment.server.metricsAuth)
      assert.notInclude(String(deployment.server.apiKeys[0]), keyA)
    }))

  it.effect("one variable holding a comma-separated list (items trimmed, empty ones dropped)", () =>
    Effect.gen(function*() {
      const deployment = yield* load(
        doc({ more: "[server]\napi_keys_env = \"KEYS\"" }),
        env([["KEYS", ` ${keyA} ,, ${keyB},`]])
      )
      assert.deepStrictEqual(deployment.server.apiKeys.map(Redacted.value), [keyA, keyB])
    }))

  it.effect("a missing variable is a load error naming it at its index", () =>
    expectInvalid(
      doc({ more: "[server]\napi_keys_env = [\"KEY_A\", \"KEY_MISSING\"]" }),
      "server.api_keys_env[1]",
      "could not read api_keys_env KEY_MISSING",
      env([["KEY_A", keyA]])
    ))

  it.effect("an empty variable, or one holding only commas, is a load error", () =>
    Effect.gen(function*() {
      yield* expectInvalid(
        doc({ more: "[server]\napi_keys_env = \"KEYS\"" }),
        "server.api_keys_env",
        "api_keys_env KEYS is empty",
        env([["KEYS", "  "]])
      )
      yield* expectInvalid(
        doc({ more: "[server]\napi_keys_env = \"KEYS\"" }),
        "server.api_keys_env",
        "api_keys_env KEYS is empty",
        env([["KEYS", " , ,"]])
      )
    }))

  it.effect("an empty list, a blank name and a non-string are refused", () =>
    Effect.gen(function*() {
      yield* expectInvalid(doc({ more: "[server]\napi_keys_env = []" }), "server.api_keys_env", "at least one variable")
      yield* expectInvalid(
        doc({ more: "[server]\napi_keys_env = [\" \"]" }),
        "server.api_keys_env[0]",
        "api_keys_env must not be empty"
      )
      yield* expectInvalid(
        doc({ more: "[server]\napi_keys_env = 3" }),
        "server.api_keys_env",
        "expected a string or an array of strings, got integer"
      )
    }))

  it.effect("metrics_auth needs api_keys_env; unknown keys are refused", () =>
    Effect.gen(function*() {
      yield* expectInvalid(doc({ more: "[server]\nmetrics_auth = true" }), "server.metrics_auth", "needs api_keys_env")
      yield* expectInvalid(doc({ more: "[server]\napi_keys = [\"x\"]" }), "server.api_keys", "unknown field")
    }))

  it.effect("no key value ever appears in a load error", () =>
    Effect.gen(function*() {
      const error = yield* expectInvalid(
        doc({ more: "[server]\napi_keys_env = [\"KEY_A\"]\nmetrics_auth = \"yes\"" }),
        "server.metrics_auth",
        "expected a boolean",
        env([["KEY_A", keyA]])
      )
      assert.notInclude(JSON.stringify(error), keyA)
    }))
})

describe("forward_auth", () => {
  it.effect("a forwarding client loads without a key", () =>
    Effect.gen(function*() {
      const deployment = yield* load(forwarding())
      const [client] = deployment.clients
      assert.isTrue(client?.forwardAuth)
      assert.isTrue(client !== undefined && client.apiKey._tag === "None")
    }))

  it.effect("forward_auth = false is the default", () =>
    Effect.gen(function*() {
      const deployment = yield* load(doc())
      assert.isFalse(deployment.clients[0]?.forwardAuth)
    }))

  it.effect("combined with api_key_env it is a load error at the forward_auth key", () =>
    expectInvalid(
      doc({ client: "forward_auth = true" }),
      "llm_clients.hosted.forward_auth",
      "cannot set both forward_auth and api_key_env"
    ))

  it.effect("combined with inbound auth it is a load error: the caller's credential is the router's key", () =>
    expectInvalid(
      forwarding({ top: "" }) + "\n[server]\napi_keys_env = \"KEYS\"\n",
      "llm_clients.hosted.forward_auth",
      "cannot be combined with [server] api_keys_env",
      env([["KEYS", keyA]])
    ))

  it.effect("a route may forward to one family of clients only; routes of either family load side by side", () =>
    Effect.gen(function*() {
      const twoFamilies = (routes: string) =>
        forwarding({
          top: ""
        }) + `
[llm_clients.claude]
format = "anthropic_messages"
base_url = "https://api.example.com"
forward_auth = true

[targets.opus]
id = "claude-opus"
llm_client = "claude"
${routes}`
      yield* expectInvalid(
        twoFamilies("[routes.mixed]\nid = \"mixed\"\ntype = \"random\"\ntargets = [\"weak\", \"opus\"]\n"),
        "routes.mixed",
        "route mixed cannot forward both Anthropic and OpenAI caller credentials"
      )
      // a judge counts too: it receives the caller's credential when its client forwards
      yield* expectInvalid(
        twoFamilies(
          "[routes.judged]\nid = \"judged\"\ntype = \"llm_classifier\"\nclassifier_target = \"opus\"\n" +
            "weak_target = \"weak\"\nstrong_target = \"weak\"\nbase_threshold = 0.5\n"
        ),
        "routes.judged",
        "cannot forward both Anthropic and OpenAI caller credentials"
      )
      const separate = yield* load(
        twoFamilies("[routes.claude]\nid = \"claude\"\ntype = \"passthrough\"\ntarget = \"opus\"\n")
      )
      assert.deepStrictEqual(separate.routes.map((route) => route.id), ["claude", "r"])
    }))

  it.effect("the family a route forwards: that of its forwarding callable targets, judges and sub-agent targets included", () =>
    Effect.gen(function*() {
      const deployment = yield* load(
        forwarding({ top: "" }) + `
[llm_clients.claude]
format = "anthropic_messages"
base_url = "https://api.example.com"
forward_auth = true

[llm_clients.own]
format = "openai_chat"
base_url = "https://own.example.com/v1"

[targets.opus]
id = "claude-opus"
llm_client = "claude"

[targets.plain]
id = "plain-model"
llm_client = "own"

[routes.claude_judged]
id = "claude-judged"
type = "llm_classifier"
classifier_target = "opus"
weak_target = "plain"
strong_target = "plain"
base_threshold = 0.5

[routes.delegating]
id = "delegating"
type = "passthrough"
target = "plain"
subagents = { type = "passthrough", target = "weak" }

[routes.plain]
id = "plain"
type = "passthrough"
target = "plain"
`
      )
      const families = Object.fromEntries(
        deployment.routes.map((route) => [route.id, Option.getOrNull(DeploymentToml.forwardAuthFamily(route))])
      )
      assert.deepStrictEqual(families, {
        "claude-judged": "anthropic",
        delegating: "openai",
        plain: null,
        r: null
      })
    }))

  it.effect("a forwarding Anthropic client cannot set anthropic-beta in extra_headers", () =>
    Effect.gen(function*() {
      const anthropic = (more: string) =>
        forwarding({ client: more }).replace("format = \"openai_chat\"", "format = \"anthropic_messages\"")
      yield* expectInvalid(
        anthropic("extra_headers = { \"anthropic-beta\" = \"x\" }"),
        "llm_clients.hosted.extra_headers.anthropic-beta",
        "extra_headers cannot set"
      )
      // without forward_auth an Anthropic client may set it
      const plain = yield* load(
        doc({ client: "extra_headers = { \"anthropic-beta\" = \"x\" }" }).replace(
          "format = \"openai_chat\"",
          "format = \"anthropic_messages\""
        )
      )
      assert.strictEqual(plain.clients[0]?.extraHeaders["anthropic-beta"], "x")
    }))
})

describe("[server] connection timeouts", () => {
  it.effect("unset: Node's defaults (5 s idle keep-alive, 60 s for the head, 300 s for the request)", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual((yield* load(doc())).server.timeouts, {
        keepAliveTimeoutMs: 5_000,
        headersTimeoutMs: 60_000,
        requestTimeoutMs: 300_000
      })
      assert.deepStrictEqual(
        (yield* load(doc({ more: "[server]\nmetrics_auth = false" }))).server.timeouts,
        ServerTable.defaultTimeouts
      )
    }))

  it.effect("each key is read on its own", () =>
    Effect.gen(function*() {
      const deployment = yield* load(
        doc({ more: "[server]\nkeep_alive_timeout_ms = 65000\nheaders_timeout_ms = 10000\nrequest_timeout_ms = 20000" })
      )
      assert.deepStrictEqual(deployment.server.timeouts, {
        keepAliveTimeoutMs: 65_000,
        headersTimeoutMs: 10_000,
        requestTimeoutMs: 20_000
      })
      const one = yield* load(doc({ more: "[server]\nkeep_alive_timeout_ms = 1" }))
      assert.deepStrictEqual(one.server.timeouts, { ...ServerTable.defaultTimeouts, keepAliveTimeoutMs: 1 })
    }))

  it.effect("each must be a positive integer", () =>
    Effect.gen(function*() {
      for (const key of ["keep_alive_timeout_ms", "headers_timeout_ms", "request_timeout_ms"]) {
        yield* expectInvalid(
          doc({ more: `[server]\n${key} = 0` }),
          `server.${key}`,
          "must be a positive integer, got 0"
        )
        yield* expectInvalid(doc({ more: `[server]\n${key} = "5s"` }), `server.${key}`, "expected an integer")
      }
    }))

  it.effect("the head's timeout must fit in the request's", () =>
    expectInvalid(
      doc({ more: "[server]\nrequest_timeout_ms = 30000" }),
      "server.headers_timeout_ms",
      "headers_timeout_ms must not exceed request_timeout_ms (30000), got 60000"
    ))
})
