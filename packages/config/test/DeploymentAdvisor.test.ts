import { assert, describe, it } from "@effect/vitest"
import type { AdvisorRouteSpec, Deployment } from "@switchyard-ts/config/Deployment"
import * as DeploymentToml from "@switchyard-ts/config/DeploymentToml"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Rejections from "./rejections.js"
import { chatClient, document, expectInvalid, hosted, load, route, routeOf, target, targetNamed } from "./support.js"

/**
 * A valid deployment with one advisor route `[routes.gate]`; `route` appends lines to it,
 * `advisorClient` to the advisor's client (which has no `timeout_ms`).
 */
const advisor = (parts: { route?: string; advisorClient?: string } = {}): string =>
  document(
    hosted("timeout_ms = 120000"),
    chatClient("review", "https://review.example.com/v1", parts.advisorClient ?? ""),
    target("exec", "small-coder", "hosted"),
    target("reviewer", "frontier-reviewer", "review"),
    route("gate", "advisor", "executor_target = \"exec\"", "advisor_target = \"reviewer\"", parts.route ?? "")
  )

const at = "routes.gate"

const advisorRoute = (deployment: Deployment): AdvisorRouteSpec => routeOf(deployment, "gate", "advisor")

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
        executor: targetNamed(deployment, "exec"),
        advisor: targetNamed(deployment, "reviewer"),
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
  Rejections.edits(at, advisor())([
    ["executor_target = \"exec\"", "", "missing"],
    ["advisor_target = \"reviewer\"", "", "missing"],
    ["executor_target = \"exec\"", "executor_target = \"nope\"", "references unknown target \"nope\""],
    ["advisor_target = \"reviewer\"", "advisor_target = \"nope\"", "references unknown target \"nope\""]
  ])

  Rejections.lines(at, (line) => advisor({ route: line }))([
    ["gate_trigger = \"always\"", "unknown variant \"always\"; expected one of \"no_tool_call\", \"pattern\""],
    ["gate_trigger_pattern = \"done\"", "gate_trigger_pattern requires gate_trigger = \"pattern\""],
    ["max_reviews = 0", "must be at least 1, got 0"],
    ["max_reviews = 1.5", "expected an integer, got float"],
    ["gate_stall_turns = -1", "must be at least 0, got -1"],
    ["gate_min_tool_results = -2", "must be at least 0, got -2"],
    ["advisor_max_tokens = 0", "must be at least 1, got 0"]
  ])

  Rejections.at(at)([
    [
      "gate_trigger = \"pattern\" requires gate_trigger_pattern",
      advisor({ route: "gate_trigger = \"pattern\"" }),
      "gate_trigger_pattern",
      "gate_trigger_pattern is required when gate_trigger = \"pattern\""
    ],
    [
      "gate_trigger_pattern must not be blank",
      advisor({ route: "gate_trigger = \"pattern\"\ngate_trigger_pattern = \"  \"" }),
      "gate_trigger_pattern",
      "gate_trigger_pattern must not be empty"
    ],
    [
      "gate_trigger_pattern must be a valid regular expression",
      advisor({ route: "gate_trigger = \"pattern\"\ngate_trigger_pattern = \"(unclosed\"" }),
      "gate_trigger_pattern",
      "gate_trigger_pattern is not a valid regular expression"
    ]
  ])

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

  Rejections.lines(at, (line) => advisor({ route: line }))([
    ["transcript_max_chars = 255", "must be at least 256, got 255"],
    ["fail_open = \"yes\"", "expected a boolean, got string"],
    ["reviewer_system_prompt = \" \"", "reviewer_system_prompt must not be empty"],
    ["redo_feedback_prefix = \"\"", "redo_feedback_prefix must not be empty"],
    ["judge_failure = \"error\"", "unknown field"]
  ])

  Rejections.at(at)([
    [
      "references are checked before the other rules",
      advisor({ route: "max_reviews = 0" }).replace("advisor_target = \"reviewer\"", "advisor_target = \"nope\""),
      "advisor_target",
      "references unknown target"
    ]
  ])
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
