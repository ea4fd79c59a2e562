import { assert, describe, it } from "@effect/vitest"
import type { Deployment, RouteSpec } from "@switchyard-ts/config/Deployment"
import { InvalidConfig } from "@switchyard-ts/config/Deployment"
import * as DeploymentToml from "@switchyard-ts/config/DeploymentToml"
import * as ServerTable from "@switchyard-ts/config/ServerTable"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Rejections from "./rejections.js"
import { doc, expectInvalid, load, secret } from "./support.js"

const fullDeployment = `
schema_version = 1

[llm_clients.local_judge]
format = "openai_chat"
base_url = "  http://127.0.0.1:8001/v1/  "

[llm_clients.hosted]
format = "openai_chat"
base_url = "https://API.example.com/v1"
api_key_env = "HOSTED_API_KEY"
extra_headers = { "x-team" = "infra" }
max_retries = 3
timeout_ms = 120000
forward_auth = false

[targets.weak]
id = "small-coder"
llm_client = "hosted"

[targets.judge]
id = "qwen3-30b"
llm_client = "local_judge"
extra_body = { temperature = 0, top_p = 0.5, stop = ["a", "b"], nested = { big = 9007199254740991 } }

[targets.strong]
id = "frontier-coder"
llm_client = "hosted"

[routes.zeta]
id = "auto"
type = "passthrough"
target = "strong"
context_window = 200000
tool_calling = true

[routes.alpha]
id = "zz-random"
type = "random"
targets = ["weak", "strong"]
weights = [1, 2.5]
seed = 18446744073709551615

[routes.mid]
id = "b-noop"
type = "noop"

[routes.equal]
id = "c-random"
type = "random"
targets = ["strong", "weak"]
`

const routeIds = (deployment: Deployment): Array<string> => deployment.routes.map((route) => route.id)

const routeById = (deployment: Deployment, id: string): RouteSpec => {
  const route = deployment.routes.find((r) => r.id === id)
  return route ?? assert.fail(`no route ${id}`)
}

describe("DeploymentToml.parse", () => {
  it.effect("decodes a full deployment", () =>
    Effect.gen(function*() {
      const deployment = yield* load(fullDeployment)

      assert.deepStrictEqual(deployment.clients.map((c) => c.name), ["hosted", "local_judge"])
      const [hosted, local] = deployment.clients
      assert.isDefined(hosted)
      assert.isDefined(local)
      if (hosted === undefined || local === undefined) return
      assert.strictEqual(hosted.format, "openai_chat")
      assert.strictEqual(hosted.baseUrl, "https://api.example.com/v1")
      assert.strictEqual(Redacted.value(Option.getOrThrow(hosted.apiKey)), secret)
      assert.notInclude(String(Option.getOrThrow(hosted.apiKey)), secret)
      assert.deepStrictEqual(hosted.extraHeaders, { "x-team": "infra" })
      assert.strictEqual(hosted.maxRetries, 3)
      assert.deepStrictEqual(hosted.timeoutMs, Option.some(120000))
      assert.strictEqual(local.baseUrl, "http://127.0.0.1:8001/v1")
      assert.isTrue(Option.isNone(local.apiKey))
      assert.deepStrictEqual(local.extraHeaders, {})
      assert.strictEqual(local.maxRetries, 2)
      assert.isTrue(Option.isNone(local.timeoutMs))

      assert.deepStrictEqual(deployment.targets.map((t) => t.name), ["judge", "strong", "weak"])
      const judge = deployment.targets[0]
      assert.strictEqual(judge?.id, "qwen3-30b")
      assert.strictEqual(judge?.client, local)
      assert.deepStrictEqual(judge?.extraBody, {
        temperature: 0,
        top_p: 0.5,
        stop: ["a", "b"],
        nested: { big: 9007199254740991 }
      })
      assert.deepStrictEqual(deployment.targets[2]?.extraBody, {})

      assert.deepStrictEqual(routeIds(deployment), ["auto", "b-noop", "c-random", "zz-random"])

      const auto = routeById(deployment, "auto")
      assert.strictEqual(auto.type, "passthrough")
      assert.strictEqual(auto.name, "zeta")
      assert.deepStrictEqual(auto.contextWindow, Option.some(200000))
      assert.deepStrictEqual(auto.toolCalling, Option.some(true))
      if (auto.type === "passthrough") assert.strictEqual(auto.target.name, "strong")

      const noop = routeById(deployment, "b-noop")
      assert.strictEqual(noop.type, "noop")
      assert.isTrue(Option.isNone(noop.contextWindow))
      assert.isTrue(Option.isNone(noop.toolCalling))

      const seeded = routeById(deployment, "zz-random")
      assert.strictEqual(seeded.type, "random")
      if (seeded.type === "random") {
        assert.deepStrictEqual(seeded.targets.map((t) => t.name), ["weak", "strong"])
        assert.strictEqual(seeded.targets[0].client, hosted)
        assert.deepStrictEqual(seeded.weights, [1, 2.5])
        assert.deepStrictEqual(seeded.seed, Option.some(18446744073709551615n))
      }

      const equal = routeById(deployment, "c-random")
      if (equal.type === "random") {
        assert.deepStrictEqual(equal.weights, [1, 1])
        assert.isTrue(Option.isNone(equal.seed))
      } else {
        assert.fail("expected a random route")
      }
    }))

  it.effect("accepts a document without [llm_clients] and with an empty [targets]", () =>
    Effect.gen(function*() {
      const deployment = yield* load("schema_version = 1\n[targets]\n[routes.n]\nid = \"n\"\ntype = \"noop\"\n")
      assert.deepStrictEqual(deployment.clients, [])
      assert.deepStrictEqual(deployment.targets, [])
      assert.deepStrictEqual(routeIds(deployment), ["n"])
    }))

  it.effect("reads API keys through an env-style provider (pathDelim _)", () =>
    Effect.gen(function*() {
      const deployment = yield* DeploymentToml.parse(doc()).pipe(
        Effect.withConfigProvider(ConfigProvider.fromMap(new Map([["HOSTED_API_KEY", secret]]), { pathDelim: "_" }))
      )
      assert.strictEqual(Redacted.value(Option.getOrThrow(deployment.clients[0]?.apiKey ?? Option.none())), secret)
    }))
})

describe("DeploymentToml.parse top level", () => {
  it.effect("TOML syntax errors are reported as failed to parse TOML", () =>
    Effect.gen(function*() {
      const error = yield* expectInvalid("schema_version = 1\nschema_version = 1\n", "", "failed to parse TOML: ")
      assert.isTrue(error.message.startsWith("failed to parse TOML: "))
      assert.include(error.message, "line 2")
    }))

  Rejections.each([
    [
      "schema_version is required",
      "[targets]\n[routes.n]\nid = \"n\"\ntype = \"noop\"\n",
      "schema_version",
      "schema_version: missing"
    ],
    ["unknown top-level keys are rejected", doc({ top: "surprise = true" }), "surprise", "surprise: unknown field"],
    [
      "[targets] is required",
      "schema_version = 1\n[routes.n]\nid = \"n\"\ntype = \"noop\"\n",
      "targets",
      "targets: missing"
    ],
    ["[routes] is required", "schema_version = 1\n[targets]\n", "routes", "routes: missing"],
    [
      "[routes] must not be empty",
      "schema_version = 1\n[targets]\n[routes]\n",
      "routes",
      "routes: at least one route is required"
    ],
    [
      "arrays of tables are not tables",
      "schema_version = 1\n[[targets]]\nid = \"a\"\n[routes.n]\nid = \"n\"\ntype = \"noop\"\n",
      "targets",
      "expected a table, got array"
    ],
    [
      "keys such as __proto__ are parse errors",
      doc({ target: "extra_body = { __proto__ = 1 }" }),
      "",
      "failed to parse TOML"
    ]
  ])

  Rejections.edits("", doc())([
    ["schema_version = 1", "schema_version = 2", "unsupported schema_version 2; expected 1"],
    ["schema_version = 1", "schema_version = 1.0", "expected an integer, got float"]
  ])

  it.effect("a table name must be a table", () =>
    expectInvalid(
      doc({ top: "llm_clients = 3" }).replace(/\[llm_clients\.hosted\][^[]*/, ""),
      "llm_clients",
      "expected a table, got integer"
    ))
})

describe("DeploymentToml.parse names and ids", () => {
  Rejections.edits("targets.weak", doc())([
    ["id = \"small-coder\"", "id = \"  \"", "target id must be non-empty"]
  ])

  Rejections.edits("routes.r", doc())([
    ["id = \"r\"", "id = \"r \"", "route id must be non-empty and have no surrounding whitespace"]
  ])

  Rejections.each([
    [
      "client table names have no surrounding whitespace",
      doc({ more: "[llm_clients.\" spaced\"]\nformat = \"openai_chat\"\nbase_url = \"http://h\"" }),
      "llm_clients.\" spaced\"",
      "llm client name must be non-empty and have no surrounding whitespace"
    ],
    [
      "target table names are non-empty",
      doc({ more: "[targets.\"\"]\nid = \"m\"\nllm_client = \"hosted\"" }),
      "targets.\"\"",
      "target name must be non-empty"
    ],
    [
      "names are checked before clients",
      doc({ client: "max_retries = 11" }).replace("id = \"r\"", "id = \"\""),
      "routes.r.id",
      "route id must be non-empty"
    ]
  ])
})

describe("DeploymentToml.parse llm clients", () => {
  const other = (body: string) => doc({ more: `[llm_clients.other]\n${body}` })

  it.effect("format is required", () =>
    expectInvalid(other("base_url = \"http://h\""), "llm_clients.other.format", "missing"))

  it.effect("anthropic_messages clients load with their format", () =>
    Effect.gen(function*() {
      const deployment = yield* load(
        other("format = \"anthropic_messages\"\nbase_url = \"https://api.anthropic.com/\"")
      )
      const client = deployment.clients.find((c) => c.name === "other")
      assert.strictEqual(client?.format, "anthropic_messages")
      assert.strictEqual(client?.baseUrl, "https://api.anthropic.com")
    }))

  it.effect("anthropic_messages clients cannot set anthropic-version in extra_headers", () =>
    expectInvalid(
      other(
        "format = \"anthropic_messages\"\nbase_url = \"http://h\"\nextra_headers = { \"Anthropic-Version\" = \"2024-01-01\" }"
      ),
      "llm_clients.other.extra_headers.Anthropic-Version",
      "extra_headers cannot set \"Anthropic-Version\""
    ))

  it.effect("openai_chat clients may set anthropic-version in extra_headers", () =>
    Effect.gen(function*() {
      const deployment = yield* load(
        other("format = \"openai_chat\"\nbase_url = \"http://h\"\nextra_headers = { \"anthropic-version\" = \"x\" }")
      )
      assert.deepStrictEqual(deployment.clients.find((c) => c.name === "other")?.extraHeaders, {
        "anthropic-version": "x"
      })
    }))

  it.effect("openai_responses clients load with their format", () =>
    Effect.gen(function*() {
      const deployment = yield* load(
        other("format = \"openai_responses\"\nbase_url = \"https://api.openai.com/v1/responses\"")
      )
      const client = deployment.clients.find((c) => c.name === "other")
      assert.strictEqual(client?.format, "openai_responses")
    }))

  it.effect("gemini_generate_content clients load with their format, base_url kept as the API root", () =>
    Effect.gen(function*() {
      const deployment = yield* load(
        other(
          "format = \"gemini_generate_content\"\nbase_url = \"https://generativelanguage.googleapis.com/v1beta/\"\napi_key_env = \"HOSTED_API_KEY\""
        )
      )
      const client = deployment.clients.find((c) => c.name === "other")
      assert.strictEqual(client?.format, "gemini_generate_content")
      assert.strictEqual(client?.baseUrl, "https://generativelanguage.googleapis.com/v1beta")
      assert.isTrue(client !== undefined && Option.isSome(client.apiKey))
    }))

  Rejections.each([
    [
      "gemini_generate_content clients never forward the caller's key",
      other("format = \"gemini_generate_content\"\nbase_url = \"http://h\"\nforward_auth = true"),
      "llm_clients.other.forward_auth",
      "is not supported on gemini_generate_content clients"
    ],
    [
      "no client sets x-goog-api-key in extra_headers",
      other(
        "format = \"gemini_generate_content\"\nbase_url = \"http://h\"\nextra_headers = { \"X-Goog-Api-Key\" = \"k\" }"
      ),
      "llm_clients.other.extra_headers.X-Goog-Api-Key",
      "extra_headers cannot set \"X-Goog-Api-Key\""
    ],
    [
      "a target of a gemini_generate_content client cannot set reasoning_effort",
      other("format = \"gemini_generate_content\"\nbase_url = \"http://h\"").concat(
        "\n[targets.g]\nid = \"gemini-2.5-flash\"\nllm_client = \"other\"\nreasoning_effort = \"high\"\n"
      ),
      "targets.g.reasoning_effort",
      "is not supported on gemini_generate_content clients (llm client \"other\")"
    ],
    [
      "an unknown format names the three supported ones",
      other("format = \"openai_completions\"\nbase_url = \"http://h\""),
      "llm_clients.other.format",
      "openai_responses"
    ],
    [
      "unknown formats list the allowed values",
      other("format = \"gemini\"\nbase_url = \"http://h\""),
      "llm_clients.other.format",
      "unknown variant \"gemini\"; expected one of \"openai_chat\", \"openai_responses\", \"anthropic_messages\", \"gemini_generate_content\""
    ],
    [
      "base_url is required",
      other("format = \"openai_chat\""),
      "llm_clients.other.base_url",
      "llm_clients.other.base_url: missing"
    ],
    [
      "base_url must be http(s)",
      other("format = \"openai_chat\"\nbase_url = \"ftp://h/v1\""),
      "llm_clients.other.base_url",
      "base_url must be an absolute HTTP(S) URL"
    ],
    [
      "base_url must be absolute",
      other("format = \"openai_chat\"\nbase_url = \"api.example.com/v1\""),
      "llm_clients.other.base_url",
      "base_url must be an absolute HTTP(S) URL"
    ]
  ])

  it.effect("base_url of a bare host is normalized without a trailing slash", () =>
    Effect.gen(function*() {
      const deployment = yield* load(other("format = \"openai_chat\"\nbase_url = \"HTTP://Example.COM:8080/\""))
      assert.strictEqual(deployment.clients.find((c) => c.name === "other")?.baseUrl, "http://example.com:8080")
    }))

  it.effect("api_key_env must not be blank", () =>
    expectInvalid(
      doc({ client: "max_retries = 1" }).replace("api_key_env = \"HOSTED_API_KEY\"", "api_key_env = \" \""),
      "llm_clients.hosted.api_key_env",
      "api_key_env must not be empty"
    ))

  it.effect("api_key_env must name a set variable", () =>
    expectInvalid(doc(), "llm_clients.hosted.api_key_env", "could not read api_key_env HOSTED_API_KEY", []))

  it.effect("api_key_env must name a non-empty variable", () =>
    expectInvalid(doc(), "llm_clients.hosted.api_key_env", "api_key_env HOSTED_API_KEY is empty", [[
      "HOSTED_API_KEY",
      "  "
    ]]))

  it.effect("an api_key_env value is trimmed (a secret file's trailing newline)", () =>
    Effect.gen(function*() {
      const deployment = yield* load(doc(), [["HOSTED_API_KEY", `  ${secret}\n`]])
      const key = deployment.clients.find((c) => c.name === "hosted")?.apiKey ?? Option.none()
      assert.strictEqual(Option.getOrNull(Option.map(key, Redacted.value)), secret)
    }))

  it.effect("an api_key_env value that cannot be a header value is refused, naming the variable only", () =>
    Effect.gen(function*() {
      for (const bad of [`${secret}\nsecond-line`, `${secret}\u0000`, `${secret}\u4e00`]) {
        const error = yield* expectInvalid(
          doc(),
          "llm_clients.hosted.api_key_env",
          "api_key_env HOSTED_API_KEY holds a character that cannot be sent in an HTTP header",
          [["HOSTED_API_KEY", bad]]
        )
        assert.notInclude(error.message, "second-line")
      }
    }))

  it.effect("an extra_headers name that is not an HTTP token is refused", () =>
    Effect.gen(function*() {
      for (const name of ["x team", "x-team:", "", "x\u00e9"]) {
        yield* expectInvalid(
          doc({ client: `extra_headers = { "x-ok" = "a", ${JSON.stringify(name)} = "b" }` }),
          `llm_clients.hosted.extra_headers.${JSON.stringify(name)}`,
          `extra_headers name ${JSON.stringify(name)} is not a valid HTTP header name`
        )
      }
    }))

  it.effect("an extra_headers value that cannot be a header value is refused without quoting it", () =>
    Effect.gen(function*() {
      const error = yield* expectInvalid(
        doc({ client: "extra_headers = { \"x-team\" = \"infra\\r\\nx-injected: yes\" }" }),
        "llm_clients.hosted.extra_headers.x-team",
        "extra_headers value of \"x-team\" holds a character that cannot be sent in an HTTP header"
      )
      assert.notInclude(error.message, "injected")
    }))

  it.effect("extra_headers values with Latin-1 text and tabs are sent as they are", () =>
    Effect.gen(function*() {
      const deployment = yield* load(doc({ client: "extra_headers = { \"x-team\" = \"caf\u00e9\\tinfra\" }" }))
      assert.deepStrictEqual(deployment.clients.find((c) => c.name === "hosted")?.extraHeaders, {
        "x-team": "caf\u00e9\tinfra"
      })
    }))

  Rejections.lines("llm_clients.hosted", (line) => doc({ client: line }))([
    ["max_retries = 11", "llm_clients.hosted.max_retries: must be at most 10, got 11"],
    ["max_retries = -1", "must be at least 0, got -1"],
    ["max_retries = 2.5", "expected an integer, got float"],
    ["timeout_ms = 0", "must be a positive integer, got 0"],
    ["timeout_ms = -5", "must be a positive integer, got -5"],
    ["forward_auth = true", "cannot set both forward_auth and api_key_env"],
    ["api_key = \"x\"", "unknown field"]
  ])

  Rejections.each([
    [
      "extra_headers cannot set credential headers",
      doc({ client: "extra_headers = { \"x-team\" = \"a\", \"Authorization\" = \"Bearer x\" }" }),
      "llm_clients.hosted.extra_headers.Authorization",
      "extra_headers cannot set \"Authorization\""
    ],
    [
      "extra_headers compares names case-insensitively",
      doc({ client: "extra_headers = { \"X-Api-Key\" = \"k\" }" }),
      "llm_clients.hosted.extra_headers.X-Api-Key",
      "extra_headers cannot set \"X-Api-Key\""
    ],
    [
      "extra_headers values are strings",
      doc({ client: "extra_headers = { \"x-n\" = 1 }" }),
      "llm_clients.hosted.extra_headers.x-n",
      "expected a string, got integer"
    ],
    [
      "clients are checked before targets",
      doc({ client: "max_retries = 11" }).replace("llm_client = \"hosted\"", "llm_client = \"nope\""),
      "llm_clients.hosted.max_retries",
      "must be at most 10"
    ],
    [
      "targets are checked before routes",
      doc({ more: "[routes.p]\nid = \"p\"\ntype = \"passthrough\"\ntarget = \"ghost\"" }).replace(
        "llm_client = \"hosted\"",
        "llm_client = \"nope\""
      ),
      "targets.weak.llm_client",
      "references unknown llm client \"nope\""
    ],
    [
      "structure (unknown keys) is checked before rules",
      doc({ client: "max_retries = 11", target: "llm_client_x = 1" }).replace(
        "llm_client = \"hosted\"",
        "llm_client = \"nope\""
      ),
      "targets.weak.llm_client_x",
      "unknown field"
    ]
  ])
})

describe("DeploymentToml.parse targets", () => {
  Rejections.edits("targets.weak", doc())([
    ["id = \"small-coder\"", "", "missing"],
    ["llm_client = \"hosted\"", "", "missing"],
    ["llm_client = \"hosted\"", "llm_client = \"x\"", "targets.weak.llm_client: references unknown llm client \"x\""]
  ])

  Rejections.lines("targets.weak", (line) => doc({ target: line }))([
    ["context_window = 1000", "unknown field"],
    ["extra_body = 1", "expected a table, got integer"]
  ])

  Rejections.each([
    [
      "extra_body rejects TOML datetimes",
      doc({ target: "extra_body = { a = { when = 1979-05-27T07:32:00Z } }" }),
      "targets.weak.extra_body.a.when",
      "TOML datetimes are not supported"
    ],
    [
      "extra_body rejects integers JSON cannot hold exactly",
      doc({ target: "extra_body = { n = 9007199254740993 }" }),
      "targets.weak.extra_body.n",
      "cannot be represented exactly"
    ]
  ])
})

describe("DeploymentToml.parse routes", () => {
  const route = (body: string) => doc({ more: `[routes.x]\n${body}` })

  Rejections.lines("routes.r", (line) => doc({ route: line }))([
    ["context_window = 0", "must be greater than zero, got 0"],
    ["tool_calling = \"yes\"", "expected a boolean, got string"],
    ["target = \"weak\"", "unknown field"]
  ])

  Rejections.each([
    ["id is required", route("type = \"noop\""), "routes.x.id", "routes.x.id: missing"],
    ["type is required", route("id = \"x\""), "routes.x.type", "routes.x.type: missing"],
    [
      "route ids are unique",
      route("id = \"r\"\ntype = \"noop\""),
      "routes.x.id",
      "routes.x.id: duplicate route model r"
    ],
    [
      "unknown keys in inline route tables are rejected",
      doc({ more: "[routes.inline]\nid = \"i\"\ntype = \"noop\"\nbogus = { a = 1 }" }),
      "routes.inline.bogus",
      "unknown field"
    ],
    ["passthrough requires target", route("id = \"x\"\ntype = \"passthrough\""), "routes.x.target", "missing"],
    [
      "passthrough target must exist",
      route("id = \"x\"\ntype = \"passthrough\"\ntarget = \"nope\""),
      "routes.x.target",
      "references unknown target \"nope\""
    ],
    ["random targets are required", route("id = \"x\"\ntype = \"random\""), "routes.x.targets", "missing"],
    [
      "random targets must be non-empty",
      route("id = \"x\"\ntype = \"random\"\ntargets = []"),
      "routes.x.targets",
      "no routing targets are configured"
    ],
    [
      "random targets must exist",
      route("id = \"x\"\ntype = \"random\"\ntargets = [\"weak\", \"ghost\"]"),
      "routes.x.targets[1]",
      "references unknown target \"ghost\""
    ],
    [
      "random targets must be unique",
      route("id = \"x\"\ntype = \"random\"\ntargets = [\"weak\", \"weak\"]"),
      "routes.x.targets[1]",
      "random targets must be unique"
    ],
    [
      "random targets are strings",
      route("id = \"x\"\ntype = \"random\"\ntargets = [\"weak\", 3]"),
      "routes.x.targets[1]",
      "expected a string, got integer"
    ],
    [
      "weights have one entry per target",
      route("id = \"x\"\ntype = \"random\"\ntargets = [\"weak\"]\nweights = [1, 2]"),
      "routes.x.weights",
      "expected 1 weights, got 2"
    ],
    [
      "weights are non-negative",
      route("id = \"x\"\ntype = \"random\"\ntargets = [\"weak\"]\nweights = [-1]"),
      "routes.x.weights[0]",
      "weights must be finite and nonnegative"
    ],
    [
      "weights are finite",
      route("id = \"x\"\ntype = \"random\"\ntargets = [\"weak\"]\nweights = [inf]"),
      "routes.x.weights[0]",
      "weights must be finite and nonnegative"
    ],
    [
      "weights are not NaN",
      route("id = \"x\"\ntype = \"random\"\ntargets = [\"weak\"]\nweights = [nan]"),
      "routes.x.weights[0]",
      "weights must be finite and nonnegative"
    ],
    [
      "at least one weight is positive",
      route("id = \"x\"\ntype = \"random\"\ntargets = [\"weak\"]\nweights = [0.0]"),
      "routes.x.weights",
      "at least one weight must be positive"
    ],
    [
      "seed is non-negative",
      route("id = \"x\"\ntype = \"random\"\ntargets = [\"weak\"]\nseed = -1"),
      "routes.x.seed",
      "must be at least 0, got -1"
    ],
    [
      "seed fits in 64 bits",
      route("id = \"x\"\ntype = \"random\"\ntargets = [\"weak\"]\nseed = 18446744073709551616"),
      "routes.x.seed",
      "must be at most 18446744073709551615"
    ],
    [
      "seed is an integer",
      route("id = \"x\"\ntype = \"random\"\ntargets = [\"weak\"]\nseed = 1.5"),
      "routes.x.seed",
      "expected an integer, got float"
    ],
    [
      "advisor is a supported route type whose keys are then required",
      route("id = \"x\"\ntype = \"advisor\""),
      "routes.x.executor_target",
      "missing"
    ],
    [
      "stage_router is a supported route type whose keys are then required",
      route("id = \"x\"\ntype = \"stage_router\""),
      "routes.x.capable_target",
      "missing"
    ],
    [
      "a passthrough route's subagents table needs its own type (see DeploymentSubagents.test.ts)",
      route("id = \"x\"\ntype = \"passthrough\"\ntarget = \"weak\"\nsubagents = { target = \"weak\" }"),
      "routes.x.subagents.type",
      "missing"
    ],
    [
      "unknown route types list the allowed values",
      route("id = \"x\"\ntype = \"magic\""),
      "routes.x.type",
      "unknown variant \"magic\"; expected one of \"noop\", \"passthrough\", \"random\", \"llm_classifier\", \"stage_router\", \"advisor\""
    ]
  ])
})

describe("DeploymentToml secrets", () => {
  it.effect("the API key never appears in an InvalidConfig message", () =>
    Effect.gen(function*() {
      const bad = [
        doc({ client: "timeout_ms = 0" }),
        doc({ client: `extra_headers = { authorization = "Bearer ${secret}" }` }),
        doc({ route: "context_window = 0" }),
        doc({ more: `[llm_clients.${"k"}]\nformat = "openai_chat"\nbase_url = "not a url"` })
      ]
      for (const text of bad) {
        const error = yield* Effect.flip(load(text))
        assert.instanceOf(error, InvalidConfig)
        assert.notInclude(error.message, secret)
        assert.notInclude(JSON.stringify(error), secret)
      }
    }))
})

describe("DeploymentToml.summary and warnings", () => {
  it.effect("summary lists route ids in order", () =>
    Effect.gen(function*() {
      const deployment = yield* load(fullDeployment)
      assert.strictEqual(DeploymentToml.summary(deployment), "server OK: auto, b-noop, c-random, zz-random")
    }))

  it("summary of a hand-built deployment", () => {
    const common = { contextWindow: Option.none(), toolCalling: Option.none(), requestTimeoutMs: Option.none() }
    const deployment: Deployment = {
      clients: [],
      targets: [],
      routes: [{ ...common, name: "a", id: "alpha", type: "noop" }, { ...common, name: "b", id: "beta", type: "noop" }],
      sessions: { store: "memory", url: Option.none(), maxEntries: 100_000, ttlMs: 3_600_000 },
      server: { apiKeys: [], metricsAuth: false, timeouts: ServerTable.defaultTimeouts }
    }
    assert.strictEqual(DeploymentToml.summary(deployment), "server OK: alpha, beta")
    assert.deepStrictEqual(DeploymentToml.warnings(deployment), [])
  })
})
