import { assert, describe, it } from "@effect/vitest"
import type { Target } from "@switchyard-ts/client/Target"
import type { AdvisorRouteSpec, Deployment, RouteSpec } from "@switchyard-ts/config/Deployment"
import * as DeploymentToml from "@switchyard-ts/config/DeploymentToml"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { expectInvalid, load } from "./support.js"

/**
 * A valid deployment with one advisor route `[routes.gate]`; `route` appends lines to it,
 * `advisorClient` to the advisor's client (which has no `timeout_ms`).
 */
const advisor = (parts: { route?: string; advisorClient?: string } = {}): string => `
schema_version = 1

[llm_clients.hosted]
format = "openai_chat"
base_url = "https://api.example.com/v1"
timeout_ms = 120000

[llm_clients.review]
format = "openai_chat"
base_url = "https://review.example.com/v1"
${parts.advisorClient ?? ""}

[targets.exec]
id = "small-coder"
llm_client = "hosted"

[targets.reviewer]
id = "frontier-reviewer"
llm_client = "review"

[routes.gate]
id = "gate"
type = "advisor"
executor_target = "exec"
advisor_target = "reviewer"
${parts.route ?? ""}
`

const at = "routes.gate"

const target = (deployment: Deployment, name: string): Target =>
  deployment.targets.find((t) => t.name === name) ?? assert.fail(`no target ${name}`)

const advisorRoute = (deployment: Deployment): AdvisorRouteSpec => {
  const route: RouteSpec | undefined = deployment.routes.find((r) => r.id === "gate")
  return route?.type === "advisor" ? route : assert.fail("no advisor route")
}

describe("DeploymentToml.parse advisor", () => {
  it.effect("a minimal route decodes with every default", () =>
    Effect.gen(function*() {
      const deployment = yield* load(advisor())
      const expected: AdvisorRouteSpec = {
        name: "gate",
        id: "gate",
        contextWindow: Option.none(),
        toolCalling: Option.none(),
        requestTimeoutMs: Option.none(),
        type: "advisor",
        executor: target(deployment, "exec"),
        advisor: target(deployment, "reviewer"),
        gateTrigger: "no_tool_call",
        gateTriggerPattern: Option.none(),
        maxReviews: 1,
        gateStallTurns: 0,
        gateMinToolResults: 0,
        advisorMaxTokens: 2048,
        advisorTemperature: Option.none(),
        transcriptMaxChars: 200000,
        failOpen: true,
        reviewerSystemPrompt: Option.none(),
        redoFeedbackPrefix: Option.none()
      }
      assert.deepStrictEqual(advisorRoute(deployment), expected)
    }))

  it.effect("a route with every key set", () =>
    Effect.gen(function*() {
      const deployment = yield* load(advisor({
        route: [
          "gate_trigger = \"pattern\"",
          "gate_trigger_pattern = \"(?:done|finished)\\\\.$\"",
          "max_reviews = 3",
          "gate_stall_turns = 12",
          "gate_min_tool_results = 2",
          "advisor_max_tokens = 512",
          "advisor_temperature = 0.2",
          "transcript_max_chars = 256",
          "fail_open = false",
          "reviewer_system_prompt = \"Review it.\"",
          "redo_feedback_prefix = \"Try again: \"",
          "request_timeout_ms = 90000",
          "context_window = 128000",
          "tool_calling = true"
        ].join("\n")
      }))
      const route = advisorRoute(deployment)
      assert.strictEqual(route.gateTrigger, "pattern")
      assert.deepStrictEqual(
        Option.map(route.gateTriggerPattern, (p) => [p.source, p.flags]),
        Option.some(["(?:done|finished)\\.$", "u"])
      )
      assert.isTrue(Option.exists(route.gateTriggerPattern, (p) => p.test("All finished.")))
      assert.deepStrictEqual(
        {
          maxReviews: route.maxReviews,
          gateStallTurns: route.gateStallTurns,
          gateMinToolResults: route.gateMinToolResults,
          advisorMaxTokens: route.advisorMaxTokens,
          advisorTemperature: route.advisorTemperature,
          transcriptMaxChars: route.transcriptMaxChars,
          failOpen: route.failOpen,
          reviewerSystemPrompt: route.reviewerSystemPrompt,
          redoFeedbackPrefix: route.redoFeedbackPrefix,
          requestTimeoutMs: route.requestTimeoutMs,
          contextWindow: route.contextWindow,
          toolCalling: route.toolCalling
        },
        {
          maxReviews: 3,
          gateStallTurns: 12,
          gateMinToolResults: 2,
          advisorMaxTokens: 512,
          advisorTemperature: Option.some(0.2),
          transcriptMaxChars: 256,
          failOpen: false,
          reviewerSystemPrompt: Option.some("Review it."),
          redoFeedbackPrefix: Option.some("Try again: "),
          requestTimeoutMs: Option.some(90000),
          contextWindow: Option.some(128000),
          toolCalling: Option.some(true)
        }
      )
    }))

  it.effect("gate_stall_turns and gate_min_tool_results may be 0; advisor_temperature an integer", () =>
    Effect.gen(function*() {
      const route = advisorRoute(
        yield* load(advisor({ route: "gate_stall_turns = 0\ngate_min_tool_results = 0\nadvisor_temperature = 1" }))
      )
      assert.strictEqual(route.gateStallTurns, 0)
      assert.strictEqual(route.gateMinToolResults, 0)
      assert.deepStrictEqual(route.advisorTemperature, Option.some(1))
    }))

  // One test per rule.
  it.effect("executor_target is required", () =>
    expectInvalid(advisor().replace("executor_target = \"exec\"", ""), `${at}.executor_target`, "missing"))

  it.effect("advisor_target is required", () =>
    expectInvalid(advisor().replace("advisor_target = \"reviewer\"", ""), `${at}.advisor_target`, "missing"))

  it.effect("executor_target must name a target", () =>
    expectInvalid(
      advisor().replace("executor_target = \"exec\"", "executor_target = \"nope\""),
      `${at}.executor_target`,
      "references unknown target \"nope\""
    ))

  it.effect("advisor_target must name a target", () =>
    expectInvalid(
      advisor().replace("advisor_target = \"reviewer\"", "advisor_target = \"nope\""),
      `${at}.advisor_target`,
      "references unknown target \"nope\""
    ))

  it.effect("gate_trigger is no_tool_call or pattern", () =>
    expectInvalid(
      advisor({ route: "gate_trigger = \"always\"" }),
      `${at}.gate_trigger`,
      "unknown variant \"always\"; expected one of \"no_tool_call\", \"pattern\""
    ))

  it.effect("gate_trigger = \"pattern\" requires gate_trigger_pattern", () =>
    expectInvalid(
      advisor({ route: "gate_trigger = \"pattern\"" }),
      `${at}.gate_trigger_pattern`,
      "gate_trigger_pattern is required when gate_trigger = \"pattern\""
    ))

  it.effect("gate_trigger_pattern without gate_trigger = \"pattern\" is rejected", () =>
    expectInvalid(
      advisor({ route: "gate_trigger_pattern = \"done\"" }),
      `${at}.gate_trigger_pattern`,
      "gate_trigger_pattern requires gate_trigger = \"pattern\""
    ))

  it.effect("gate_trigger_pattern must not be blank", () =>
    expectInvalid(
      advisor({ route: "gate_trigger = \"pattern\"\ngate_trigger_pattern = \"  \"" }),
      `${at}.gate_trigger_pattern`,
      "gate_trigger_pattern must not be empty"
    ))

  it.effect("gate_trigger_pattern must be a valid regular expression", () =>
    expectInvalid(
      advisor({ route: "gate_trigger = \"pattern\"\ngate_trigger_pattern = \"(unclosed\"" }),
      `${at}.gate_trigger_pattern`,
      "gate_trigger_pattern is not a valid regular expression"
    ))

  it.effect("max_reviews is at least 1", () =>
    expectInvalid(advisor({ route: "max_reviews = 0" }), `${at}.max_reviews`, "must be at least 1, got 0"))

  it.effect("max_reviews is an integer", () =>
    expectInvalid(advisor({ route: "max_reviews = 1.5" }), `${at}.max_reviews`, "expected an integer, got float"))

  it.effect("gate_stall_turns is not negative", () =>
    expectInvalid(advisor({ route: "gate_stall_turns = -1" }), `${at}.gate_stall_turns`, "must be at least 0, got -1"))

  it.effect("gate_min_tool_results is not negative", () =>
    expectInvalid(
      advisor({ route: "gate_min_tool_results = -2" }),
      `${at}.gate_min_tool_results`,
      "must be at least 0, got -2"
    ))

  it.effect("advisor_max_tokens is at least 1", () =>
    expectInvalid(
      advisor({ route: "advisor_max_tokens = 0" }),
      `${at}.advisor_max_tokens`,
      "must be at least 1, got 0"
    ))

  it.effect("advisor_temperature is finite and not negative", () =>
    Effect.gen(function*() {
      yield* expectInvalid(
        advisor({ route: "advisor_temperature = -0.5" }),
        `${at}.advisor_temperature`,
        "must be finite and at least 0, got -0.5"
      )
      yield* expectInvalid(
        advisor({ route: "advisor_temperature = nan" }),
        `${at}.advisor_temperature`,
        "must be finite and at least 0, got NaN"
      )
      yield* expectInvalid(
        advisor({ route: "advisor_temperature = \"hot\"" }),
        `${at}.advisor_temperature`,
        "expected a number, got string"
      )
    }))

  it.effect("transcript_max_chars is at least 256", () =>
    expectInvalid(
      advisor({ route: "transcript_max_chars = 255" }),
      `${at}.transcript_max_chars`,
      "must be at least 256, got 255"
    ))

  it.effect("fail_open is a boolean", () =>
    expectInvalid(advisor({ route: "fail_open = \"yes\"" }), `${at}.fail_open`, "expected a boolean, got string"))

  it.effect("reviewer_system_prompt must not be blank", () =>
    expectInvalid(
      advisor({ route: "reviewer_system_prompt = \" \"" }),
      `${at}.reviewer_system_prompt`,
      "reviewer_system_prompt must not be empty"
    ))

  it.effect("redo_feedback_prefix must not be blank", () =>
    expectInvalid(
      advisor({ route: "redo_feedback_prefix = \"\"" }),
      `${at}.redo_feedback_prefix`,
      "redo_feedback_prefix must not be empty"
    ))

  it.effect("unknown keys are rejected with their path", () =>
    expectInvalid(advisor({ route: "judge_failure = \"error\"" }), `${at}.judge_failure`, "unknown field"))

  it.effect("references are checked before the other rules", () =>
    expectInvalid(
      advisor({ route: "max_reviews = 0" }).replace("advisor_target = \"reviewer\"", "advisor_target = \"nope\""),
      `${at}.advisor_target`,
      "references unknown target"
    ))
})

describe("DeploymentToml.warnings for advisor routes", () => {
  it.effect("an advisor client without timeout_ms warns", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(DeploymentToml.warnings(yield* load(advisor())), [
        "route gate: advisor client review has no timeout_ms; a stalled advisor holds requests until the peer closes the connection"
      ])
    }))

  it.effect("timeout_ms on the advisor's client, or request_timeout_ms on the route, silences it", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(DeploymentToml.warnings(yield* load(advisor({ advisorClient: "timeout_ms = 30000" }))), [])
      assert.deepStrictEqual(DeploymentToml.warnings(yield* load(advisor({ route: "request_timeout_ms = 60000" }))), [])
    }))

  it.effect("summary lists advisor routes like any other", () =>
    Effect.gen(function*() {
      assert.strictEqual(DeploymentToml.summary(yield* load(advisor())), "server OK: gate")
    }))
})
