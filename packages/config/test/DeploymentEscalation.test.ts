import { assert, describe, it } from "@effect/vitest"
import type { Deployment, EscalationClassifierRouteSpec, RouteSpec } from "@switchyard-ts/config/Deployment"
import * as DeploymentToml from "@switchyard-ts/config/DeploymentToml"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { readFileSync } from "node:fs"
import { expectInvalid, judgeWeakStrong, load } from "./support.js"

/** A valid deployment with one escalation route `[routes.auto]`; `route` appends lines, `table` the escalation table's lines. */
const escalation = (parts: { route?: string; table?: string; mode?: string } = {}): string => `
schema_version = 1

[llm_clients.hosted]
format = "openai_chat"
base_url = "https://api.example.com/v1"
timeout_ms = 120000

${judgeWeakStrong("hosted")}

[routes.auto]
id = "auto"
type = "llm_classifier"
${parts.mode ?? "mode = \"escalation\""}
classifier_target = "judge"
weak_target = "weak"
strong_target = "strong"
${parts.route ?? ""}

[routes.auto.escalation]
${parts.table ?? ""}
`

const at = "routes.auto"

const escalationRoute = (deployment: Deployment): EscalationClassifierRouteSpec => {
  const route: RouteSpec | undefined = deployment.routes.find((r) => r.id === "auto")
  return route?.type === "llm_classifier" && route.mode === "escalation" ? route : assert.fail("no escalation route")
}

describe("DeploymentToml.parse llm_classifier (escalation)", () => {
  it.effect("the compatible system's documented escalation example loads unchanged (mode implied by the table)", () =>
    Effect.gen(function*() {
      const text = readFileSync(new URL("./fixtures/escalation-router-routing-example.toml", import.meta.url), "utf8")
      const deployment = yield* load(text, [["OPENROUTER_API_KEY", "sk-or-test"]])
      const route: RouteSpec | undefined = deployment.routes.find((r) => r.id === "agent")
      if (route?.type !== "llm_classifier" || route.mode !== "escalation") {
        return assert.fail("no escalation route agent")
      }
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
      assert.deepStrictEqual(route.prompt, Option.none())
      assert.strictEqual(route.responseFormatType, "json_schema")
      assert.strictEqual(route.maxOutputTokens, 4096)
      assert.strictEqual(route.judgeFailure, "error")
      assert.deepStrictEqual(route.judgeTimeoutMs, Option.none())
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
  const cases: ReadonlyArray<readonly [string, Parameters<typeof escalation>[0], string, string]> = [
    ["explicit mode without the table", undefined, `${at}.escalation`, "mode escalation requires an escalation table"],
    [
      "confirmations 0",
      { table: "confirmations = 0" },
      `${at}.escalation.confirmations`,
      "confirmations must be at least 1"
    ],
    ["recent_turn_window 0", { table: "recent_turn_window = 0" }, `${at}.escalation.recent_turn_window`, "at least 1"],
    [
      "window_message_chars 49",
      { table: "window_message_chars = 49" },
      `${at}.escalation.window_message_chars`,
      "at least 50"
    ],
    ["an unknown escalation key", { table: "bogus = 1" }, `${at}.escalation.bogus`, "bogus"],
    [
      "confirmations as a string",
      { table: "confirmations = \"2\"" },
      `${at}.escalation.confirmations`,
      "expected an integer"
    ],
    [
      "classify_trigger other than every_request",
      { route: "classify_trigger = \"user_turn\"" },
      `${at}.classify_trigger`,
      "mode escalation cannot use classify_trigger"
    ],
    [
      "explicit base_threshold",
      { route: "base_threshold = 0.5" },
      `${at}.base_threshold`,
      "mode escalation cannot use capability routing settings"
    ],
    [
      "threshold_step",
      { route: "threshold_step = 0.1" },
      `${at}.threshold_step`,
      "mode escalation cannot use capability routing settings"
    ],
    [
      "message_hash_fallback",
      { route: "message_hash_fallback = true" },
      `${at}.message_hash_fallback`,
      "mode escalation cannot use capability routing settings"
    ],
    [
      "recent_turn_window at the route level",
      { route: "recent_turn_window = 4" },
      `${at}.recent_turn_window`,
      "mode escalation cannot use capability routing settings"
    ],
    [
      "implicit mode with threshold_step",
      { mode: "threshold_step = 0.1" },
      `${at}.threshold_step`,
      "mode escalation cannot use capability routing settings"
    ],
    [
      "custom field targets",
      { route: "targets = [\"weak\", \"strong\"]" },
      `${at}.targets`,
      "mode escalation cannot use custom classifier fields"
    ],
    [
      "custom field policy",
      { route: "policy = { type = \"target_selector\", selector = \"/r\" }" },
      `${at}.policy`,
      "mode escalation cannot use custom classifier fields"
    ],
    [
      "an unknown route key",
      { route: "weak_target_unused = 1" },
      `${at}.weak_target_unused`,
      "weak_target_unused"
    ],
    ["blank prompt", { route: "prompt = \"  \"" }, `${at}.prompt`, "classifier prompt must not be empty"],
    [
      "prompt with the schema placeholder",
      { route: "prompt = \"x {{RESPONSE_SCHEMA}}\"" },
      `${at}.prompt`,
      "supplied automatically"
    ],
    ["max_output_tokens 0", { route: "max_output_tokens = 0" }, `${at}.max_output_tokens`, "at least 1"],
    ["judge_timeout_ms 0", { route: "judge_timeout_ms = 0" }, `${at}.judge_timeout_ms`, "must be a positive integer"],
    ["judge_failure unknown", { route: "judge_failure = \"panic\"" }, `${at}.judge_failure`, "unknown variant"],
    [
      "response_format_type unknown",
      { route: "response_format_type = \"text\"" },
      `${at}.response_format_type`,
      "unknown variant"
    ]
  ]
  for (const [name, parts, path, fragment] of cases) {
    it.effect(name, () =>
      expectInvalid(
        name === "explicit mode without the table"
          ? escalation().replace("[routes.auto.escalation]", "")
          : escalation(parts),
        path,
        fragment
      ))
  }

  it.effect("a missing strong_target is reported at its key", () =>
    expectInvalid(escalation().replace("strong_target = \"strong\"", ""), `${at}.strong_target`, ""))

  it.effect("an unknown weak target is reported at weak_target", () =>
    expectInvalid(
      escalation().replace("weak_target = \"weak\"", "weak_target = \"nope\""),
      `${at}.weak_target`,
      "nope"
    ))
})

describe("DeploymentToml.parse llm_classifier (escalation): the deescalation table", () => {
  const deesc = (lines: string) =>
    escalation({ table: `confirmations = 2\n\n[routes.auto.escalation.deescalation]\n${lines}` })

  it.effect("the compatible system's documented de-escalation example loads unchanged", () =>
    Effect.gen(function*() {
      const text = readFileSync(new URL("./fixtures/escalation-deescalation-example.toml", import.meta.url), "utf8")
      const deployment = yield* load(text, [["OPENROUTER_API_KEY", "sk-or-test"]])
      const route: RouteSpec | undefined = deployment.routes.find((r) => r.id === "agent")
      if (route?.type !== "llm_classifier" || route.mode !== "escalation") {
        return assert.fail("no escalation route agent")
      }
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

  const where = `${at}.escalation.deescalation`
  const cases: ReadonlyArray<readonly [string, string, string, string]> = [
    [
      "strong_min_calls 0",
      "strong_min_calls = 0\nconfirmations = 1",
      `${where}.strong_min_calls`,
      "deescalation.strong_min_calls must be at least 1, got 0"
    ],
    [
      "confirmations 0",
      "strong_min_calls = 1\nconfirmations = 0",
      `${where}.confirmations`,
      "deescalation.confirmations must be at least 1, got 0"
    ],
    [
      "strong_max_calls below strong_min_calls",
      "strong_min_calls = 3\nconfirmations = 1\nstrong_max_calls = 2",
      `${where}.strong_max_calls`,
      "deescalation.strong_max_calls must be at least deescalation.strong_min_calls, got 2"
    ],
    [
      "a negative weak_cooldown_calls",
      "strong_min_calls = 1\nconfirmations = 1\nweak_cooldown_calls = -1",
      `${where}.weak_cooldown_calls`,
      "must be at least 0, got -1"
    ],
    ["a missing strong_min_calls", "confirmations = 1", `${where}.strong_min_calls`, "missing"],
    ["a missing confirmations", "strong_min_calls = 1", `${where}.confirmations`, "missing"],
    [
      "an unknown key",
      "strong_min_calls = 1\nconfirmations = 1\nstrong_calls = 2",
      `${where}.strong_calls`,
      "unknown field"
    ],
    [
      "strong_min_calls as a float",
      "strong_min_calls = 1.5\nconfirmations = 1",
      `${where}.strong_min_calls`,
      "expected an integer"
    ]
  ]
  for (const [name, lines, path, fragment] of cases) {
    it.effect(name, () => expectInvalid(deesc(lines), path, fragment))
  }

  it.effect("not a table", () =>
    expectInvalid(escalation({ table: "deescalation = 3" }), `${where}`, "expected a table"))
})
