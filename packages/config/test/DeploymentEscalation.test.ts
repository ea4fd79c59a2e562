import { assert, describe, it } from "@effect/vitest"
import type { Deployment, EscalationClassifierRouteSpec } from "@switchyard-ts/config/Deployment"
import * as DeploymentToml from "@switchyard-ts/config/DeploymentToml"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Rejections from "./rejections.js"
import {
  document,
  expectInvalid,
  fixture,
  hosted,
  judgeCallDefaults,
  judgeCallOf,
  judgeWeakStrong,
  load,
  route,
  routeOf,
  table
} from "./support.js"

/** A valid deployment with one escalation route `[routes.auto]`; `route` appends lines, `table` the escalation table's lines. */
const escalation = (parts: { route?: string; table?: string; mode?: string } = {}): string =>
  document(
    hosted("timeout_ms = 120000"),
    judgeWeakStrong("hosted"),
    route(
      "auto",
      "llm_classifier",
      parts.mode ?? "mode = \"escalation\"",
      "classifier_target = \"judge\"",
      "weak_target = \"weak\"",
      "strong_target = \"strong\"",
      parts.route ?? ""
    ),
    table("routes.auto.escalation", parts.table ?? "")
  )

const at = "routes.auto"

const escalationRoute = (deployment: Deployment): EscalationClassifierRouteSpec =>
  routeOf(deployment, "auto", "escalation")

describe("DeploymentToml.parse llm_classifier (escalation)", () => {
  it.effect("the compatible system's documented escalation example loads unchanged (mode implied by the table)", () =>
    Effect.gen(function*() {
      const deployment = yield* load(fixture("escalation-router-routing-example.toml"), [[
        "OPENROUTER_API_KEY",
        "sk-or-test"
      ]])
      const route = routeOf(deployment, "agent", "escalation")
      assert.strictEqual(route.judge.id, "google/gemini-3.5-flash")
      assert.strictEqual(route.weak.id, "moonshotai/kimi-k2.6")
      assert.strictEqual(route.strong.id, "anthropic/claude-opus-4.7")
      assert.strictEqual(route.confirmations, 2)
      assert.strictEqual(route.recentTurnWindow, 28)
      assert.strictEqual(route.windowMessageChars, 500)
      assert.strictEqual(route.judgeFailure, "error")
      assert.strictEqual(DeploymentToml.summary(deployment), "server OK: agent")
    }))

  it.effect("a minimal route decodes with every default", () =>
    Effect.gen(function*() {
      const route = escalationRoute(yield* load(escalation()))
      assert.strictEqual(route.judge.name, "judge")
      assert.strictEqual(route.weak.name, "weak")
      assert.strictEqual(route.strong.name, "strong")
      assert.strictEqual(route.confirmations, 2)
      assert.strictEqual(route.recentTurnWindow, 28)
      assert.strictEqual(route.windowMessageChars, 500)
      assert.deepStrictEqual(judgeCallOf(route), judgeCallDefaults)
    }))

  it.effect("every key is read", () =>
    Effect.gen(function*() {
      const route = escalationRoute(
        yield* load(escalation({
          route: [
            "prompt = \"Escalate when the reply is wrong.\"",
            "response_format_type = \"json_object\"",
            "max_output_tokens = 64",
            "judge_failure = \"fail_open\"",
            "judge_timeout_ms = 1500",
            "classify_trigger = \"every_request\""
          ].join("\n"),
          table: "confirmations = 1\nrecent_turn_window = 4\nwindow_message_chars = 50"
        }))
      )
      assert.strictEqual(route.confirmations, 1)
      assert.strictEqual(route.recentTurnWindow, 4)
      assert.strictEqual(route.windowMessageChars, 50)
      assert.deepStrictEqual(route.prompt, Option.some("Escalate when the reply is wrong."))
      assert.strictEqual(route.responseFormatType, "json_object")
      assert.strictEqual(route.maxOutputTokens, 64)
      assert.strictEqual(route.judgeFailure, "fail_open")
      assert.deepStrictEqual(route.judgeTimeoutMs, Option.some(1500))
    }))

  it.effect("an escalation table implies the mode; its base_threshold is ignored", () =>
    Effect.gen(function*() {
      const route = escalationRoute(yield* load(escalation({ mode: "base_threshold = 0.5" })))
      assert.strictEqual(route.confirmations, 2)
    }))
})

describe("DeploymentToml.parse llm_classifier (escalation) load errors", () => {
  Rejections.lines(`${at}.escalation`, (line) => escalation({ table: line }))([
    ["confirmations = 0", "confirmations must be at least 1"],
    ["recent_turn_window = 0", "at least 1"],
    ["window_message_chars = 49", "at least 50"],
    ["bogus = 1", "bogus"],
    ["confirmations = \"2\"", "expected an integer"]
  ])

  Rejections.lines(at, (line) => escalation({ route: line }))([
    ["classify_trigger = \"user_turn\"", "mode escalation cannot use classify_trigger"],
    ["base_threshold = 0.5", "mode escalation cannot use capability routing settings"],
    ["threshold_step = 0.1", "mode escalation cannot use capability routing settings"],
    ["message_hash_fallback = true", "mode escalation cannot use capability routing settings"],
    ["recent_turn_window = 4", "mode escalation cannot use capability routing settings"],
    ["targets = [\"weak\", \"strong\"]", "mode escalation cannot use custom classifier fields"],
    [
      "policy = { type = \"target_selector\", selector = \"/r\" }",
      "mode escalation cannot use custom classifier fields"
    ],
    ["weak_target_unused = 1", "weak_target_unused"],
    ["prompt = \"  \"", "classifier prompt must not be empty"],
    ["prompt = \"x {{RESPONSE_SCHEMA}}\"", "supplied automatically"],
    ["max_output_tokens = 0", "at least 1"],
    ["judge_timeout_ms = 0", "must be a positive integer"],
    ["judge_failure = \"panic\"", "unknown variant"],
    ["response_format_type = \"text\"", "unknown variant"]
  ])

  it.effect("implicit mode with threshold_step", () =>
    expectInvalid(
      escalation({ mode: "threshold_step = 0.1" }),
      `${at}.threshold_step`,
      "mode escalation cannot use capability routing settings"
    ))

  Rejections.edits(at, escalation())([
    ["strong_target = \"strong\"", "", ""],
    ["weak_target = \"weak\"", "weak_target = \"nope\"", "nope"]
  ])

  Rejections.at(at)([
    [
      "explicit mode without the table",
      escalation().replace("[routes.auto.escalation]", ""),
      "escalation",
      "mode escalation requires an escalation table"
    ]
  ])
})

describe("DeploymentToml.parse llm_classifier (escalation): the deescalation table", () => {
  const deesc = (lines: string) =>
    escalation({ table: `confirmations = 2\n\n[routes.auto.escalation.deescalation]\n${lines}` })

  it.effect("the compatible system's documented de-escalation example loads unchanged", () =>
    Effect.gen(function*() {
      const deployment = yield* load(fixture("escalation-deescalation-example.toml"), [[
        "OPENROUTER_API_KEY",
        "sk-or-test"
      ]])
      const route = routeOf(deployment, "agent", "escalation")
      assert.strictEqual(route.confirmations, 2)
      assert.deepStrictEqual(
        route.deescalation,
        Option.some({ strongMinCalls: 3, confirmations: 2, strongMaxCalls: Option.some(6), weakCooldownCalls: 8 })
      )
      assert.strictEqual(DeploymentToml.summary(deployment), "server OK: agent")
    }))

  it.effect("absent, a latch is permanent; present with the required keys only, the defaults apply", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(escalationRoute(yield* load(escalation())).deescalation, Option.none())
      assert.deepStrictEqual(
        escalationRoute(yield* load(deesc("strong_min_calls = 1\nconfirmations = 1"))).deescalation,
        Option.some({ strongMinCalls: 1, confirmations: 1, strongMaxCalls: Option.none(), weakCooldownCalls: 0 })
      )
    }))

  it.effect("an inline table inside an inline escalation table loads too", () =>
    Effect.gen(function*() {
      const route = escalationRoute(
        yield* load(
          escalation({
            table: "",
            route: "escalation = { deescalation = { strong_min_calls = 2, confirmations = 1, strong_max_calls = 2 } }"
          }).replace("[routes.auto.escalation]", "")
        )
      )
      assert.deepStrictEqual(
        route.deescalation,
        Option.some({ strongMinCalls: 2, confirmations: 1, strongMaxCalls: Option.some(2), weakCooldownCalls: 0 })
      )
    }))

  Rejections.at(at)([
    [
      "strong_min_calls 0",
      deesc("strong_min_calls = 0\nconfirmations = 1"),
      "escalation.deescalation.strong_min_calls",
      "deescalation.strong_min_calls must be at least 1, got 0"
    ],
    [
      "confirmations 0",
      deesc("strong_min_calls = 1\nconfirmations = 0"),
      "escalation.deescalation.confirmations",
      "deescalation.confirmations must be at least 1, got 0"
    ],
    [
      "strong_max_calls below strong_min_calls",
      deesc("strong_min_calls = 3\nconfirmations = 1\nstrong_max_calls = 2"),
      "escalation.deescalation.strong_max_calls",
      "deescalation.strong_max_calls must be at least deescalation.strong_min_calls, got 2"
    ],
    [
      "a negative weak_cooldown_calls",
      deesc("strong_min_calls = 1\nconfirmations = 1\nweak_cooldown_calls = -1"),
      "escalation.deescalation.weak_cooldown_calls",
      "must be at least 0, got -1"
    ],
    ["a missing strong_min_calls", deesc("confirmations = 1"), "escalation.deescalation.strong_min_calls", "missing"],
    ["a missing confirmations", deesc("strong_min_calls = 1"), "escalation.deescalation.confirmations", "missing"],
    [
      "an unknown key",
      deesc("strong_min_calls = 1\nconfirmations = 1\nstrong_calls = 2"),
      "escalation.deescalation.strong_calls",
      "unknown field"
    ],
    [
      "strong_min_calls as a float",
      deesc("strong_min_calls = 1.5\nconfirmations = 1"),
      "escalation.deescalation.strong_min_calls",
      "expected an integer"
    ]
  ])

  it.effect("not a table", () =>
    expectInvalid(escalation({ table: "deescalation = 3" }), `${at}.escalation.deescalation`, "expected a table"))
})
