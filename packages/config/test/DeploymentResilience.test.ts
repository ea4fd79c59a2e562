/**
 * The resilience keys of the deployment TOML: `breaker` on an LLM client, `request_timeout_ms` on
 * every route type, `judge_timeout_ms` on capability routes — values, defaults, and one test per
 * rule with its key path. Also: `Deployment.layer` registers every configured breaker.
 */
import * as HttpClient from "@effect/platform/HttpClient"
import { assert, describe, it } from "@effect/vitest"
import * as UpstreamClient from "@switchyard-ts/client/UpstreamClient"
import * as Deployment from "@switchyard-ts/config/Deployment"
import * as DeploymentToml from "@switchyard-ts/config/DeploymentToml"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Rejections from "./rejections.js"
import { doc, expectInvalid, load, route, target } from "./support.js"

const clientOf = (deployment: Deployment.Deployment, name: string) =>
  deployment.clients.find((c) => c.name === name) ?? assert.fail(`no client ${name}`)

const routeOf = (deployment: Deployment.Deployment, id: string) =>
  deployment.routes.find((r) => r.id === id) ?? assert.fail(`no route ${id}`)

const capability = (lines: string) =>
  doc({
    more: target("judge", "qwen3-30b", "hosted") + route(
      "auto",
      "llm_classifier",
      "classifier_target = \"judge\"",
      "weak_target = \"weak\"",
      "strong_target = \"weak\"",
      "base_threshold = 0.5",
      lines
    )
  })

describe("DeploymentToml.parse: breaker", () => {
  it.effect("absent by default", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(clientOf(yield* load(doc()), "hosted").breaker, Option.none())
    }))

  it.effect("an inline table with both keys", () =>
    Effect.gen(function*() {
      const deployment = yield* load(doc({ client: "breaker = { failure_threshold = 5, cooldown_ms = 30000 }" }))
      assert.deepStrictEqual(
        clientOf(deployment, "hosted").breaker,
        Option.some({ failureThreshold: 5, cooldownMs: 30_000 })
      )
      // the targets of the client share it
      assert.deepStrictEqual(
        deployment.targets[0]?.client.breaker,
        Option.some({ failureThreshold: 5, cooldownMs: 30_000 })
      )
    }))

  it.effect("a [llm_clients.X.breaker] sub-table works too", () =>
    Effect.gen(function*() {
      const deployment = yield* load(
        doc({ more: "[llm_clients.hosted.breaker]\nfailure_threshold = 1\ncooldown_ms = 1" })
      )
      assert.deepStrictEqual(
        clientOf(deployment, "hosted").breaker,
        Option.some({ failureThreshold: 1, cooldownMs: 1 })
      )
    }))

  Rejections.lines("llm_clients.hosted", (line) => doc({ client: line }))([
    ["breaker = 5", "expected a table, got integer"]
  ])

  Rejections.each([
    [
      "failure_threshold is required",
      doc({ client: "breaker = { cooldown_ms = 30000 }" }),
      "llm_clients.hosted.breaker.failure_threshold",
      "missing"
    ],
    [
      "cooldown_ms is required",
      doc({ client: "breaker = { failure_threshold = 5 }" }),
      "llm_clients.hosted.breaker.cooldown_ms",
      "missing"
    ],
    [
      "unknown keys are rejected",
      doc({ client: "breaker = { failure_threshold = 5, cooldown_ms = 30000, half_open_calls = 2 }" }),
      "llm_clients.hosted.breaker.half_open_calls",
      "unknown field"
    ],
    [
      "failure_threshold is an integer",
      doc({ client: "breaker = { failure_threshold = 2.5, cooldown_ms = 30000 }" }),
      "llm_clients.hosted.breaker.failure_threshold",
      "expected an integer, got float"
    ],
    [
      "failure_threshold is at least 1",
      doc({ client: "breaker = { failure_threshold = 0, cooldown_ms = 30000 }" }),
      "llm_clients.hosted.breaker.failure_threshold",
      "must be a positive integer, got 0"
    ],
    [
      "cooldown_ms is an integer",
      doc({ client: "breaker = { failure_threshold = 5, cooldown_ms = \"30s\" }" }),
      "llm_clients.hosted.breaker.cooldown_ms",
      "expected an integer, got string"
    ],
    [
      "cooldown_ms is at least 1",
      doc({ client: "breaker = { failure_threshold = 5, cooldown_ms = -1 }" }),
      "llm_clients.hosted.breaker.cooldown_ms",
      "must be a positive integer, got -1"
    ]
  ])
})

describe("DeploymentToml.parse: request_timeout_ms", () => {
  it.effect("unset by default, on every route type", () =>
    Effect.gen(function*() {
      const deployment = yield* load(capability(""))
      for (const route of deployment.routes) assert.deepStrictEqual(route.requestTimeoutMs, Option.none())
    }))

  it.effect("accepted on noop, passthrough, random and llm_classifier routes", () =>
    Effect.gen(function*() {
      const deployment = yield* load(
        capability("request_timeout_ms = 4000").replace(
          "type = \"noop\"",
          "type = \"noop\"\nrequest_timeout_ms = 1000"
        ) + route("p", "passthrough", "target = \"weak\"", "request_timeout_ms = 2000") +
          route("q", "random", "targets = [\"weak\"]", "request_timeout_ms = 3000")
      )
      assert.deepStrictEqual(
        ["r", "p", "q", "auto"].map((id) => routeOf(deployment, id).requestTimeoutMs),
        [Option.some(1000), Option.some(2000), Option.some(3000), Option.some(4000)]
      )
    }))

  Rejections.lines("routes.r", (line) => doc({ route: line }))([
    ["request_timeout_ms = 0", "must be a positive integer, got 0"],
    ["request_timeout_ms = 1.5", "expected an integer, got float"]
  ])

  Rejections.each([
    [
      "is range-checked on classifier routes too",
      capability("request_timeout_ms = -5"),
      "routes.auto.request_timeout_ms",
      "must be a positive integer, got -5"
    ]
  ])
})

describe("DeploymentToml.parse: judge_timeout_ms", () => {
  it.effect("unset by default; a value when set", () =>
    Effect.gen(function*() {
      const none = routeOf(yield* load(capability("")), "auto")
      assert.isTrue(none.type === "llm_classifier" && Option.isNone(none.judgeTimeoutMs))
      const set = routeOf(yield* load(capability("judge_timeout_ms = 1500")), "auto")
      assert.isTrue(set.type === "llm_classifier" && Option.getOrNull(set.judgeTimeoutMs) === 1500)
    }))

  Rejections.lines("routes.auto", (line) => capability(line))([
    ["judge_timeout_ms = 0", "must be a positive integer, got 0"],
    ["judge_timeout_ms = \"2s\"", "expected an integer, got string"]
  ])

  it.effect("a judge bounded by judge_timeout_ms or request_timeout_ms draws no missing-timeout warning", () =>
    Effect.gen(function*() {
      // the judge's client (hosted) has no timeout_ms
      assert.strictEqual(DeploymentToml.warnings(yield* load(capability(""))).length, 1)
      assert.deepStrictEqual(DeploymentToml.warnings(yield* load(capability("judge_timeout_ms = 1500"))), [])
      assert.deepStrictEqual(DeploymentToml.warnings(yield* load(capability("request_timeout_ms = 5000"))), [])
    }))

  it.effect("belongs to llm_classifier routes only", () =>
    expectInvalid(doc({ route: "judge_timeout_ms = 100" }), "routes.r.judge_timeout_ms", "unknown field"))
})

describe("Deployment.layer and breakers", () => {
  it.effect("building the router registers every configured breaker on the UpstreamClient", () =>
    Effect.gen(function*() {
      const deployment = yield* load(doc({
        client: "breaker = { failure_threshold = 3, cooldown_ms = 1000 }",
        more: "[llm_clients.other]\nformat = \"openai_chat\"\nbase_url = \"http://127.0.0.1:9/v1\""
      }))
      const http = HttpClient.make(() => Effect.die("no HTTP in this test"))
      const statuses = yield* Effect.flatMap(UpstreamClient.UpstreamClient, (upstream) => upstream.breakers).pipe(
        Effect.provide(
          Deployment.layer(deployment).pipe(
            Layer.provideMerge(UpstreamClient.layer),
            Layer.provide(Layer.succeed(HttpClient.HttpClient, http))
          )
        )
      )
      assert.deepStrictEqual(statuses, [{ client: "hosted", state: "closed", opened_at: Option.none(), shared: false }])
    }))
})
