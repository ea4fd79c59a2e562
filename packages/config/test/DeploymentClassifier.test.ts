import { assert, describe, it } from "@effect/vitest"
import type { ClassifierRouteSpec, Deployment } from "@switchyard-ts/config/Deployment"
import * as DeploymentToml from "@switchyard-ts/config/DeploymentToml"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Rejections from "./rejections.js"
import {
  classifier,
  doc,
  expectInvalid,
  load,
  route,
  routeOf,
  table,
  targetNamed as target,
  unboundedJudge
} from "./support.js"

const classifierRoute = (deployment: Deployment, id: string): ClassifierRouteSpec =>
  routeOf(deployment, id, "capability")

const at = "routes.auto"

/** `classifier` with `lines` appended to its route. */
const withRoute = (lines: string) => classifier({ route: lines })

describe("DeploymentToml.parse llm_classifier (capability)", () => {
  it.effect("a minimal route decodes with every default", () =>
    Effect.gen(function*() {
      const deployment = yield* load(classifier())
      const expected: ClassifierRouteSpec = {
        name: "auto",
        id: "auto",
        contextWindow: Option.none(),
        toolCalling: Option.none(),
        type: "llm_classifier",
        mode: "capability",
        judge: target(deployment, "judge"),
        weak: target(deployment, "weak"),
        strong: target(deployment, "strong"),
        baseThreshold: 0.95,
        thresholdStep: 0,
        classifyTrigger: "every_request",
        messageHashFallback: false,
        recentTurnWindow: Option.none(),
        prompt: Option.none(),
        responseFormatType: "json_schema",
        maxOutputTokens: 4096,
        judgeFailure: "error",
        requestTimeoutMs: Option.none(),
        judgeTimeoutMs: Option.none(),
        lateVerdictMs: Option.none(),
        maxLateVerdicts: 16,
        fallbacks: [],
        hedgeMs: Option.none()
      }
      assert.deepStrictEqual(deployment.routes, [expected])
      const route = classifierRoute(deployment, "auto")
      assert.strictEqual(route.judge, target(deployment, "judge"))
      assert.strictEqual(route.judge.client.name, "local_judge")
    }))

  it.effect("a route with every key set", () =>
    Effect.gen(function*() {
      const deployment = yield* load(classifier({
        route: [
          "mode = \"capability\"",
          "threshold_step = 0.025",
          "classify_trigger = \"new_session\"",
          "message_hash_fallback = true",
          "recent_turn_window = 6",
          "prompt = \"Estimate whether the small model solves the task.\"",
          "response_format_type = \"json_object\"",
          "max_output_tokens = 512",
          "judge_failure = \"fail_open\"",
          "context_window = 128000",
          "tool_calling = true",
          "request_timeout_ms = 60000",
          "judge_timeout_ms = 1500",
          "late_verdict_ms = 800",
          "max_late_verdicts = 4"
        ].join("\n")
      }))
      const expected: ClassifierRouteSpec = {
        name: "auto",
        id: "auto",
        contextWindow: Option.some(128000),
        toolCalling: Option.some(true),
        type: "llm_classifier",
        mode: "capability",
        judge: target(deployment, "judge"),
        weak: target(deployment, "weak"),
        strong: target(deployment, "strong"),
        baseThreshold: 0.95,
        thresholdStep: 0.025,
        classifyTrigger: "new_session",
        messageHashFallback: true,
        recentTurnWindow: Option.some(6),
        prompt: Option.some("Estimate whether the small model solves the task."),
        responseFormatType: "json_object",
        maxOutputTokens: 512,
        judgeFailure: "fail_open",
        requestTimeoutMs: Option.some(60000),
        judgeTimeoutMs: Option.some(1500),
        lateVerdictMs: Option.some(800),
        maxLateVerdicts: 4,
        fallbacks: [],
        hedgeMs: Option.none()
      }
      assert.deepStrictEqual(classifierRoute(deployment, "auto"), expected)
    }))

  it.effect("TOML integers are accepted for base_threshold and threshold_step", () =>
    Effect.gen(function*() {
      const route = classifierRoute(
        yield* load(classifier({ route: "threshold_step = 0" }).replace("base_threshold = 0.95", "base_threshold = 1")),
        "auto"
      )
      assert.strictEqual(route.baseThreshold, 1)
      assert.strictEqual(route.thresholdStep, 0)
      const zero = classifierRoute(
        yield* load(classifier().replace("base_threshold = 0.95", "base_threshold = 0")),
        "auto"
      )
      assert.strictEqual(zero.baseThreshold, 0)
    }))

  it.effect("-0.0 thresholds read as 0", () =>
    Effect.gen(function*() {
      const route = classifierRoute(
        yield* load(
          classifier({ route: "threshold_step = -0.0" }).replace("base_threshold = 0.95", "base_threshold = -0.0")
        ),
        "auto"
      )
      assert.isTrue(Object.is(route.baseThreshold, 0))
      assert.isTrue(Object.is(route.thresholdStep, 0))
    }))

  it.effect("the derived threshold rule allows one epsilon above 1", () =>
    Effect.gen(function*() {
      const text = classifier({ route: "threshold_step = 1.1102230246251565e-16" }).replace(
        "base_threshold = 0.95",
        "base_threshold = 1"
      )
      assert.strictEqual(classifierRoute(yield* load(text), "auto").thresholdStep, 1.1102230246251565e-16)
    }))

  it.effect("recent_turn_window may be 0", () =>
    Effect.gen(function*() {
      const route = classifierRoute(yield* load(classifier({ route: "recent_turn_window = 0" })), "auto")
      assert.deepStrictEqual(route.recentTurnWindow, Option.some(0))
    }))

  it.effect("message_hash_fallback = false needs no trigger", () =>
    Effect.gen(function*() {
      const route = classifierRoute(yield* load(classifier({ route: "message_hash_fallback = false" })), "auto")
      assert.isFalse(route.messageHashFallback)
    }))

  it.effect("fail_open is judge_failure written as a boolean; both at once is a load error; neither is \"error\"", () =>
    Effect.gen(function*() {
      const open = classifierRoute(
        yield* load(classifier({ route: "fail_open = true\njudge_timeout_ms = 1500\nlate_verdict_ms = 800" })),
        "auto"
      )
      assert.strictEqual(open.judgeFailure, "fail_open")
      assert.deepStrictEqual(open.lateVerdictMs, Option.some(800))
      const closed = classifierRoute(yield* load(classifier({ route: "fail_open = false" })), "auto")
      assert.strictEqual(closed.judgeFailure, "error")
      assert.strictEqual(classifierRoute(yield* load(classifier()), "auto").judgeFailure, "error")
      yield* expectInvalid(
        classifier({ route: "fail_open = true\njudge_failure = \"fail_open\"" }),
        `${at}.fail_open`,
        "fail_open and judge_failure are one setting: give one of them"
      )
      yield* expectInvalid(classifier({ route: "fail_open = \"yes\"" }), `${at}.fail_open`, "a boolean")
      yield* expectInvalid(
        classifier({ route: "fail_open = false\njudge_timeout_ms = 1500\nlate_verdict_ms = 800" }),
        `${at}.late_verdict_ms`,
        "late_verdict_ms requires judge_failure = \"fail_open\""
      )
    }))

  it.effect("the unknown-route-type message lists llm_classifier", () =>
    expectInvalid(
      doc({ route: "" }).replace("type = \"noop\"", "type = \"classifier\""),
      "routes.r.type",
      "expected one of \"noop\", \"passthrough\", \"random\", \"llm_classifier\""
    ))
})

describe("DeploymentToml.parse llm_classifier mode", () => {
  it.effect("an escalation table without mode selects escalation (base_threshold ignored)", () =>
    Effect.gen(function*() {
      const deployment = yield* load(classifier({ more: "[routes.auto.escalation]\nconfirmations = 3" }))
      const route = deployment.routes.find((r) => r.id === "auto")
      assert.isTrue(route?.type === "llm_classifier" && route.mode === "escalation" && route.confirmations === 3)
    }))

  Rejections.lines(at, withRoute)([
    ["mode = \"fancy\"", "unknown variant \"fancy\"; expected one of \"capability\", \"escalation\", \"custom\""],
    ["mode = 1", "expected a string, got integer"],
    ["targets = [\"weak\", \"strong\"]", "mode capability cannot use custom classifier fields"],
    ["default_target = \"strong\"", "mode capability cannot use custom classifier fields"],
    ["response_schema = \"{}\"", "mode capability cannot use custom classifier fields"],
    [
      "policy = { type = \"target_selector\", selector = \"/t\" }",
      "mode capability cannot use custom classifier fields"
    ],
    ["threshold = 0.5", "unknown field"]
  ])

  Rejections.at(at)([
    [
      "mode escalation on a capability table names the capability setting it cannot use",
      withRoute("mode = \"escalation\"\nescalation = {}"),
      "base_threshold",
      "mode escalation cannot use capability routing settings"
    ],
    [
      "mode custom on a capability table names the first capability key it cannot use",
      withRoute("mode = \"custom\""),
      "strong_target",
      "mode custom cannot use capability or escalation fields"
    ],
    [
      "mode capability cannot use escalation",
      withRoute("mode = \"capability\"\nescalation = { confirmations = 2 }"),
      "escalation",
      "mode capability cannot use escalation"
    ],
    ["a random-route key is unknown here", withRoute("seed = 1"), "seed", "unknown field"]
  ])
})

describe("DeploymentToml.parse llm_classifier references", () => {
  Rejections.edits(at, classifier())([
    ["classifier_target = \"judge\"", "", "missing"],
    ["classifier_target = \"judge\"", "classifier_target = \"ghost\"", "references unknown target \"ghost\""],
    ["classifier_target = \"judge\"", "classifier_target = \" \"", "references unknown target \" \""],
    ["weak_target = \"weak\"", "", `${at}.weak_target: missing`],
    ["weak_target = \"weak\"", "weak_target = \"ghost\"", "references unknown target \"ghost\""],
    ["strong_target = \"strong\"", "", "missing"],
    ["strong_target = \"strong\"", "strong_target = \"ghost\"", "references unknown target \"ghost\""],
    ["strong_target = \"strong\"", "strong_target = [\"strong\"]", "expected a string, got array"]
  ])
})

describe("DeploymentToml.parse llm_classifier thresholds", () => {
  Rejections.edits(at, classifier())([
    ["base_threshold = 0.95", "", "missing"],
    ["base_threshold = 0.95", "base_threshold = 1.5", "must be between 0 and 1, got 1.5"],
    ["base_threshold = 0.95", "base_threshold = -0.1", "must be between 0 and 1, got -0.1"],
    ["base_threshold = 0.95", "base_threshold = 2", "must be between 0 and 1, got 2"],
    ["base_threshold = 0.95", "base_threshold = nan", "must be between 0 and 1, got NaN"],
    ["base_threshold = 0.95", "base_threshold = inf", "must be between 0 and 1, got Infinity"],
    ["base_threshold = 0.95", "base_threshold = \"0.9\"", "expected a number, got string"]
  ])

  Rejections.lines(at, withRoute)([
    ["threshold_step = -0.01", "must be finite and at least 0, got -0.01"],
    ["threshold_step = inf", "must be finite and at least 0, got Infinity"],
    ["threshold_step = nan", "must be finite and at least 0, got NaN"]
  ])

  const base = (value: string, route: string) =>
    classifier({ route }).replace("base_threshold = 0.95", `base_threshold = ${value}`)
  Rejections.at(at)([
    [
      "base_threshold + 2 * threshold_step is at most 1",
      base("0.9", "threshold_step = 0.1"),
      "threshold_step",
      "base_threshold + 2 * threshold_step must be at most 1, got 1.1"
    ],
    [
      "the derived rule's tolerance is one epsilon",
      base("1", "threshold_step = 2.220446049250313e-16"),
      "threshold_step",
      "base_threshold + 2 * threshold_step must be at most 1, got 1.0000000000000004"
    ]
  ])
})

describe("DeploymentToml.parse llm_classifier judge keys", () => {
  it.effect("message_hash_fallback goes with user_turn as with new_session", () =>
    Effect.gen(function*() {
      const route = classifierRoute(
        yield* load(withRoute("classify_trigger = \"user_turn\"\nmessage_hash_fallback = true")),
        "auto"
      )
      assert.isTrue(route.messageHashFallback)
      assert.strictEqual(route.classifyTrigger, "user_turn")
    }))

  Rejections.lines(at, withRoute)([
    [
      "classify_trigger = \"sometimes\"",
      "unknown variant \"sometimes\"; expected one of \"every_request\", \"user_turn\", \"new_session\""
    ],
    ["message_hash_fallback = 1", "expected a boolean, got integer"],
    ["recent_turn_window = -1", "must be at least 0, got -1"],
    ["recent_turn_window = 2.5", "expected an integer, got float"],
    ["prompt = \"\"", "classifier prompt must not be empty"],
    ["prompt = \"Answer with {{RESPONSE_SCHEMA}}\"", "the response schema is supplied automatically"],
    ["response_format_type = \"text\"", "unknown variant \"text\"; expected one of \"json_schema\", \"json_object\""],
    ["max_output_tokens = 0", "must be at least 1, got 0"],
    ["max_output_tokens = 1.5", "expected an integer, got float"],
    ["judge_failure = \"retry\"", "unknown variant \"retry\"; expected one of \"error\", \"fail_open\""]
  ])

  Rejections.at(at)([
    [
      "judge_max_images (an unconfirmed key of a later example) is an unknown field",
      withRoute("judge_max_images = 2"),
      "judge_max_images",
      "unknown field"
    ],
    [
      "session_affinity, removed in 0.3.0 in favour of classify_trigger, is an unknown field",
      withRoute("session_affinity = true"),
      "session_affinity",
      "unknown field"
    ],
    [
      "message_hash_fallback requires a trigger that keeps sessions (default trigger)",
      withRoute("message_hash_fallback = true"),
      "message_hash_fallback",
      "message_hash_fallback requires classify_trigger = new_session or user_turn"
    ],
    [
      "prompt must not be blank",
      withRoute("prompt = \"\"\"\n  \n\"\"\""),
      "prompt",
      "classifier prompt must not be empty"
    ],
    [
      "judge_failure is a string, not a boolean",
      withRoute("judge_failure = true"),
      "judge_failure",
      "expected a string, got boolean"
    ],
    [
      "context_window is still checked",
      withRoute("context_window = 0"),
      "context_window",
      "must be greater than zero, got 0"
    ],
    ["tool_calling is still checked", withRoute("tool_calling = 1"), "tool_calling", "expected a boolean, got integer"]
  ])
})

describe("DeploymentToml.parse llm_classifier order of checks", () => {
  Rejections.each([
    [
      "mode is settled before the route's keys",
      classifier({ route: "mode = \"escalation\"\nbogus = 1" }),
      `${at}.escalation`,
      "mode escalation requires an escalation table"
    ],
    [
      "structure (enum variants) comes before rules",
      classifier({ route: "judge_failure = \"retry\"" }).replace("weak_target = \"weak\"", "weak_target = \"ghost\""),
      `${at}.judge_failure`,
      "unknown variant"
    ],
    [
      "targets are checked before routes",
      classifier().replace("classifier_target = \"judge\"", "classifier_target = \"ghost\"").replace(
        "llm_client = \"hosted\"",
        "llm_client = \"nope\""
      ),
      "targets.weak.llm_client",
      "references unknown llm client \"nope\""
    ],
    [
      "context_window before references",
      classifier({ route: "context_window = 0" }).replace(
        "classifier_target = \"judge\"",
        "classifier_target = \"ghost\""
      ),
      `${at}.context_window`,
      "must be greater than zero"
    ],
    [
      "references before numbers",
      classifier().replace("weak_target = \"weak\"", "weak_target = \"ghost\"").replace(
        "base_threshold = 0.95",
        "base_threshold = 2"
      ),
      `${at}.weak_target`,
      "references unknown target"
    ],
    [
      "numbers before trigger and hash",
      classifier({ route: "threshold_step = 0.5\nmessage_hash_fallback = true" }),
      `${at}.threshold_step`,
      "must be at most 1"
    ],
    [
      "trigger and hash before prompt",
      classifier({ route: "message_hash_fallback = true\nprompt = \" \"" }),
      `${at}.message_hash_fallback`,
      "requires classify_trigger = new_session"
    ],
    [
      "prompt before max_output_tokens",
      classifier({ route: "prompt = \" \"\nmax_output_tokens = 0" }),
      `${at}.prompt`,
      "classifier prompt must not be empty"
    ]
  ])
})

describe("DeploymentToml.warnings", () => {
  it.effect("a judge client without timeout_ms warns once per classifier route", () =>
    Effect.gen(function*() {
      const deployment = yield* load(classifier())
      assert.deepStrictEqual(DeploymentToml.warnings(deployment), [unboundedJudge("auto", "local_judge")])
    }))

  it.effect("a judge client with timeout_ms gives no warning", () =>
    Effect.gen(function*() {
      const deployment = yield* load(classifier({ judgeClient: "timeout_ms = 3000" }))
      assert.deepStrictEqual(DeploymentToml.warnings(deployment), [])
    }))

  it.effect("warnings follow route order and name each route and client", () =>
    Effect.gen(function*() {
      const more = table(
        "routes.second",
        "id = \"a-first\"",
        "type = \"llm_classifier\"",
        "classifier_target = \"weak\"",
        "weak_target = \"weak\"",
        "strong_target = \"strong\"",
        "base_threshold = 0.5"
      ) + route("plain", "passthrough", "target = \"judge\"")
      const deployment = yield* load(classifier({ more }))
      const lines = DeploymentToml.warnings(deployment)
      assert.strictEqual(lines.length, 1)
      assert.isTrue(lines[0]?.startsWith("route auto: judge client local_judge"))
      const untimed = classifier({ more }).replace("timeout_ms = 120000", "")
      const both = DeploymentToml.warnings(yield* load(untimed))
      assert.deepStrictEqual(both.map((line) => line.split(":")[0]), ["route second", "route auto"])
      assert.include(both[0] ?? "", "judge client hosted has no timeout_ms")
    }))

  it.effect("summary lists classifier routes like any other", () =>
    Effect.gen(function*() {
      assert.strictEqual(DeploymentToml.summary(yield* load(classifier())), "server OK: auto")
    }))
})
