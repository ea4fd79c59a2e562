import { assert, describe, it } from "@effect/vitest"
import type { Target } from "@switchyard-ts/client/Target"
import type { ClassifierRouteSpec, Deployment, RouteSpec } from "@switchyard-ts/config/Deployment"
import * as DeploymentToml from "@switchyard-ts/config/DeploymentToml"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { classifier, doc, expectInvalid, load } from "./support.js"

/** `classifier(parts)` with the line `key = ...` of `[routes.auto]` removed. */
const without = (key: string, parts: { route?: string } = {}): string =>
  classifier(parts).replace(new RegExp(`^${key} = .*$`, "m"), "")

const target = (deployment: Deployment, name: string): Target =>
  deployment.targets.find((t) => t.name === name) ?? assert.fail(`no target ${name}`)

const classifierRoute = (deployment: Deployment, id: string): ClassifierRouteSpec => {
  const route: RouteSpec | undefined = deployment.routes.find((r) => r.id === id)
  return route?.type === "llm_classifier" && route.mode === "capability"
    ? route
    : assert.fail(`no classifier route ${id}`)
}

const at = "routes.auto"

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
        maxLateVerdicts: 16
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
        maxLateVerdicts: 4
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
  it.effect("mode escalation on a capability table names the capability setting it cannot use", () =>
    expectInvalid(
      classifier({ route: "mode = \"escalation\"\nescalation = {}" }),
      `${at}.base_threshold`,
      "mode escalation cannot use capability routing settings"
    ))

  it.effect("mode custom on a capability table names the first capability key it cannot use", () =>
    expectInvalid(
      classifier({ route: "mode = \"custom\"" }),
      `${at}.strong_target`,
      "mode custom cannot use capability or escalation fields"
    ))

  it.effect("an unknown mode lists the supported ones", () =>
    expectInvalid(
      classifier({ route: "mode = \"fancy\"" }),
      `${at}.mode`,
      "unknown variant \"fancy\"; expected one of \"capability\", \"escalation\", \"custom\""
    ))

  it.effect("mode is a string", () =>
    expectInvalid(classifier({ route: "mode = 1" }), `${at}.mode`, "expected a string, got integer"))

  it.effect("an escalation table without mode selects escalation (base_threshold ignored)", () =>
    Effect.gen(function*() {
      const deployment = yield* load(classifier({ more: "[routes.auto.escalation]\nconfirmations = 3" }))
      const route = deployment.routes.find((r) => r.id === "auto")
      assert.isTrue(route?.type === "llm_classifier" && route.mode === "escalation" && route.confirmations === 3)
    }))

  it.effect("mode capability cannot use escalation", () =>
    expectInvalid(
      classifier({ route: "mode = \"capability\"\nescalation = { confirmations = 2 }" }),
      `${at}.escalation`,
      "mode capability cannot use escalation"
    ))

  it.effect("custom field targets is rejected", () =>
    expectInvalid(
      classifier({ route: "targets = [\"weak\", \"strong\"]" }),
      `${at}.targets`,
      "mode capability cannot use custom classifier fields"
    ))

  it.effect("custom field default_target is rejected", () =>
    expectInvalid(
      classifier({ route: "default_target = \"strong\"" }),
      `${at}.default_target`,
      "mode capability cannot use custom classifier fields"
    ))

  it.effect("custom field response_schema is rejected", () =>
    expectInvalid(
      classifier({ route: "response_schema = \"{}\"" }),
      `${at}.response_schema`,
      "mode capability cannot use custom classifier fields"
    ))

  it.effect("custom field policy is rejected", () =>
    expectInvalid(
      classifier({ route: "policy = { type = \"target_selector\", selector = \"/t\" }" }),
      `${at}.policy`,
      "mode capability cannot use custom classifier fields"
    ))

  it.effect("unknown keys are rejected", () =>
    expectInvalid(classifier({ route: "threshold = 0.5" }), `${at}.threshold`, "unknown field"))

  it.effect("a random-route key is unknown here", () =>
    expectInvalid(classifier({ route: "seed = 1" }), `${at}.seed`, "unknown field"))
})

describe("DeploymentToml.parse llm_classifier references", () => {
  it.effect("classifier_target is required", () =>
    expectInvalid(without("classifier_target"), `${at}.classifier_target`, "missing"))

  it.effect("classifier_target must exist", () =>
    expectInvalid(
      classifier().replace("classifier_target = \"judge\"", "classifier_target = \"ghost\""),
      `${at}.classifier_target`,
      "references unknown target \"ghost\""
    ))

  it.effect("a blank classifier_target is an unknown target", () =>
    expectInvalid(
      classifier().replace("classifier_target = \"judge\"", "classifier_target = \" \""),
      `${at}.classifier_target`,
      "references unknown target \" \""
    ))

  it.effect("weak_target is required", () =>
    expectInvalid(without("weak_target"), `${at}.weak_target`, `${at}.weak_target: missing`))

  it.effect("weak_target must exist", () =>
    expectInvalid(
      classifier().replace("weak_target = \"weak\"", "weak_target = \"ghost\""),
      `${at}.weak_target`,
      "references unknown target \"ghost\""
    ))

  it.effect("strong_target is required", () =>
    expectInvalid(without("strong_target"), `${at}.strong_target`, "missing"))

  it.effect("strong_target must exist", () =>
    expectInvalid(
      classifier().replace("strong_target = \"strong\"", "strong_target = \"ghost\""),
      `${at}.strong_target`,
      "references unknown target \"ghost\""
    ))

  it.effect("targets are strings", () =>
    expectInvalid(
      classifier().replace("strong_target = \"strong\"", "strong_target = [\"strong\"]"),
      `${at}.strong_target`,
      "expected a string, got array"
    ))
})

describe("DeploymentToml.parse llm_classifier thresholds", () => {
  const base = (value: string, route = "") =>
    classifier({ route }).replace("base_threshold = 0.95", `base_threshold = ${value}`)

  it.effect("base_threshold is required", () =>
    expectInvalid(without("base_threshold"), `${at}.base_threshold`, "missing"))

  it.effect("base_threshold is at most 1", () =>
    expectInvalid(base("1.5"), `${at}.base_threshold`, "must be between 0 and 1, got 1.5"))

  it.effect("base_threshold is at least 0", () =>
    expectInvalid(base("-0.1"), `${at}.base_threshold`, "must be between 0 and 1, got -0.1"))

  it.effect("integer base_threshold out of range", () =>
    expectInvalid(base("2"), `${at}.base_threshold`, "must be between 0 and 1, got 2"))

  it.effect("base_threshold is not NaN", () =>
    expectInvalid(base("nan"), `${at}.base_threshold`, "must be between 0 and 1, got NaN"))

  it.effect("base_threshold is not infinite", () =>
    expectInvalid(base("inf"), `${at}.base_threshold`, "must be between 0 and 1, got Infinity"))

  it.effect("base_threshold is a number", () =>
    expectInvalid(base("\"0.9\""), `${at}.base_threshold`, "expected a number, got string"))

  it.effect("threshold_step is non-negative", () =>
    expectInvalid(
      classifier({ route: "threshold_step = -0.01" }),
      `${at}.threshold_step`,
      "must be finite and at least 0, got -0.01"
    ))

  it.effect("threshold_step is finite", () =>
    expectInvalid(
      classifier({ route: "threshold_step = inf" }),
      `${at}.threshold_step`,
      "must be finite and at least 0, got Infinity"
    ))

  it.effect("threshold_step is not NaN", () =>
    expectInvalid(
      classifier({ route: "threshold_step = nan" }),
      `${at}.threshold_step`,
      "must be finite and at least 0, got NaN"
    ))

  it.effect("base_threshold + 2 * threshold_step is at most 1", () =>
    expectInvalid(
      base("0.9", "threshold_step = 0.1"),
      `${at}.threshold_step`,
      "base_threshold + 2 * threshold_step must be at most 1, got 1.1"
    ))

  it.effect("the derived rule's tolerance is one epsilon", () =>
    expectInvalid(
      base("1", "threshold_step = 2.220446049250313e-16"),
      `${at}.threshold_step`,
      "base_threshold + 2 * threshold_step must be at most 1, got 1.0000000000000004"
    ))
})

describe("DeploymentToml.parse llm_classifier judge keys", () => {
  it.effect("an unknown classify_trigger lists the variants", () =>
    expectInvalid(
      classifier({ route: "classify_trigger = \"sometimes\"" }),
      `${at}.classify_trigger`,
      "unknown variant \"sometimes\"; expected one of \"every_request\", \"user_turn\", \"new_session\""
    ))

  it.effect("judge_max_images (an unconfirmed key of a later example) is an unknown field", () =>
    expectInvalid(classifier({ route: "judge_max_images = 2" }), `${at}.judge_max_images`, "unknown field"))

  it.effect("session_affinity, removed in 0.3.0 in favour of classify_trigger, is an unknown field", () =>
    expectInvalid(classifier({ route: "session_affinity = true" }), `${at}.session_affinity`, "unknown field"))

  it.effect("message_hash_fallback goes with user_turn as with new_session", () =>
    Effect.gen(function*() {
      const route = classifierRoute(
        yield* load(classifier({ route: "classify_trigger = \"user_turn\"\nmessage_hash_fallback = true" })),
        "auto"
      )
      assert.isTrue(route.messageHashFallback)
      assert.strictEqual(route.classifyTrigger, "user_turn")
    }))

  it.effect("message_hash_fallback requires a trigger that keeps sessions (default trigger)", () =>
    expectInvalid(
      classifier({ route: "message_hash_fallback = true" }),
      `${at}.message_hash_fallback`,
      "message_hash_fallback requires classify_trigger = new_session or user_turn"
    ))

  it.effect("message_hash_fallback is a boolean", () =>
    expectInvalid(
      classifier({ route: "message_hash_fallback = 1" }),
      `${at}.message_hash_fallback`,
      "expected a boolean, got integer"
    ))

  it.effect("recent_turn_window is non-negative", () =>
    expectInvalid(
      classifier({ route: "recent_turn_window = -1" }),
      `${at}.recent_turn_window`,
      "must be at least 0, got -1"
    ))

  it.effect("recent_turn_window is an integer", () =>
    expectInvalid(
      classifier({ route: "recent_turn_window = 2.5" }),
      `${at}.recent_turn_window`,
      "expected an integer, got float"
    ))

  it.effect("prompt must not be empty", () =>
    expectInvalid(classifier({ route: "prompt = \"\"" }), `${at}.prompt`, "classifier prompt must not be empty"))

  it.effect("prompt must not be blank", () =>
    expectInvalid(
      classifier({ route: "prompt = \"\"\"\n  \n\"\"\"" }),
      `${at}.prompt`,
      "classifier prompt must not be empty"
    ))

  it.effect("prompt must not contain {{RESPONSE_SCHEMA}}", () =>
    expectInvalid(
      classifier({ route: "prompt = \"Answer with {{RESPONSE_SCHEMA}}\"" }),
      `${at}.prompt`,
      "the response schema is supplied automatically"
    ))

  it.effect("an unknown response_format_type lists the variants", () =>
    expectInvalid(
      classifier({ route: "response_format_type = \"text\"" }),
      `${at}.response_format_type`,
      "unknown variant \"text\"; expected one of \"json_schema\", \"json_object\""
    ))

  it.effect("max_output_tokens is at least 1", () =>
    expectInvalid(
      classifier({ route: "max_output_tokens = 0" }),
      `${at}.max_output_tokens`,
      "must be at least 1, got 0"
    ))

  it.effect("max_output_tokens is an integer", () =>
    expectInvalid(
      classifier({ route: "max_output_tokens = 1.5" }),
      `${at}.max_output_tokens`,
      "expected an integer, got float"
    ))

  it.effect("an unknown judge_failure lists both postures", () =>
    expectInvalid(
      classifier({ route: "judge_failure = \"retry\"" }),
      `${at}.judge_failure`,
      "unknown variant \"retry\"; expected one of \"error\", \"fail_open\""
    ))

  it.effect("judge_failure is a string, not a boolean", () =>
    expectInvalid(
      classifier({ route: "judge_failure = true" }),
      `${at}.judge_failure`,
      "expected a string, got boolean"
    ))

  it.effect("context_window is still checked", () =>
    expectInvalid(
      classifier({ route: "context_window = 0" }),
      `${at}.context_window`,
      "must be greater than zero, got 0"
    ))

  it.effect("tool_calling is still checked", () =>
    expectInvalid(classifier({ route: "tool_calling = 1" }), `${at}.tool_calling`, "expected a boolean, got integer"))
})

describe("DeploymentToml.parse llm_classifier order of checks", () => {
  it.effect("mode is settled before the route's keys", () =>
    expectInvalid(
      classifier({ route: "mode = \"escalation\"\nbogus = 1" }),
      `${at}.escalation`,
      "mode escalation requires an escalation table"
    ))

  it.effect("structure (enum variants) comes before rules", () =>
    expectInvalid(
      classifier({ route: "judge_failure = \"retry\"" }).replace("weak_target = \"weak\"", "weak_target = \"ghost\""),
      `${at}.judge_failure`,
      "unknown variant"
    ))

  it.effect("targets are checked before routes", () =>
    expectInvalid(
      classifier().replace("classifier_target = \"judge\"", "classifier_target = \"ghost\"").replace(
        "llm_client = \"hosted\"",
        "llm_client = \"nope\""
      ),
      "targets.weak.llm_client",
      "references unknown llm client \"nope\""
    ))

  it.effect("context_window before references", () =>
    expectInvalid(
      classifier({ route: "context_window = 0" }).replace(
        "classifier_target = \"judge\"",
        "classifier_target = \"ghost\""
      ),
      `${at}.context_window`,
      "must be greater than zero"
    ))

  it.effect("references before numbers", () =>
    expectInvalid(
      classifier().replace("weak_target = \"weak\"", "weak_target = \"ghost\"").replace(
        "base_threshold = 0.95",
        "base_threshold = 2"
      ),
      `${at}.weak_target`,
      "references unknown target"
    ))

  it.effect("numbers before trigger and hash", () =>
    expectInvalid(
      classifier({ route: "threshold_step = 0.5\nmessage_hash_fallback = true" }),
      `${at}.threshold_step`,
      "must be at most 1"
    ))

  it.effect("trigger and hash before prompt", () =>
    expectInvalid(
      classifier({ route: "message_hash_fallback = true\nprompt = \" \"" }),
      `${at}.message_hash_fallback`,
      "requires classify_trigger = new_session"
    ))

  it.effect("prompt before max_output_tokens", () =>
    expectInvalid(
      classifier({ route: "prompt = \" \"\nmax_output_tokens = 0" }),
      `${at}.prompt`,
      "classifier prompt must not be empty"
    ))
})

describe("DeploymentToml.parse [sessions]", () => {
  it.effect("defaults when absent", () =>
    Effect.gen(function*() {
      const deployment = yield* load(doc())
      assert.deepStrictEqual(deployment.sessions, {
        store: "memory",
        url: Option.none(),
        maxEntries: 100_000,
        ttlMs: 3_600_000
      })
    }))

  it.effect("defaults for an empty table", () =>
    Effect.gen(function*() {
      const deployment = yield* load(doc({ more: "[sessions]" }))
      assert.deepStrictEqual(deployment.sessions, {
        store: "memory",
        url: Option.none(),
        maxEntries: 100_000,
        ttlMs: 3_600_000
      })
    }))

  it.effect("values", () =>
    Effect.gen(function*() {
      const deployment = yield* load(doc({ more: "[sessions]\nmax_entries = 1\nttl_ms = 250" }))
      assert.deepStrictEqual(deployment.sessions, { store: "memory", url: Option.none(), maxEntries: 1, ttlMs: 250 })
    }))

  it.effect("max_entries is at least 1", () =>
    expectInvalid(
      doc({ more: "[sessions]\nmax_entries = 0" }),
      "sessions.max_entries",
      "sessions.max_entries: must be at least 1, got 0"
    ))

  it.effect("max_entries is an integer", () =>
    expectInvalid(
      doc({ more: "[sessions]\nmax_entries = 10.0" }),
      "sessions.max_entries",
      "expected an integer, got float"
    ))

  it.effect("ttl_ms is at least 1", () =>
    expectInvalid(doc({ more: "[sessions]\nttl_ms = -1" }), "sessions.ttl_ms", "must be at least 1, got -1"))

  it.effect("ttl_ms is an integer", () =>
    expectInvalid(doc({ more: "[sessions]\nttl_ms = \"1h\"" }), "sessions.ttl_ms", "expected an integer, got string"))

  it.effect("unknown keys are rejected", () =>
    expectInvalid(doc({ more: "[sessions]\nhost = \"h\"" }), "sessions.host", "unknown field"))

  it.effect("sessions is a table", () =>
    expectInvalid(doc({ top: "sessions = 3" }), "sessions", "expected a table, got integer"))

  it.effect("sessions rules come after routes", () =>
    expectInvalid(
      doc({ route: "context_window = 0", more: "[sessions]\nmax_entries = 0" }),
      "routes.r.context_window",
      "must be greater than zero"
    ))
})

describe("DeploymentToml.warnings", () => {
  it.effect("a judge client without timeout_ms warns once per classifier route", () =>
    Effect.gen(function*() {
      const deployment = yield* load(classifier())
      assert.deepStrictEqual(DeploymentToml.warnings(deployment), [
        "route auto: judge client local_judge has no timeout_ms; a stalled judge holds requests until the peer closes the connection"
      ])
    }))

  it.effect("a judge client with timeout_ms gives no warning", () =>
    Effect.gen(function*() {
      const deployment = yield* load(classifier({ judgeClient: "timeout_ms = 3000" }))
      assert.deepStrictEqual(DeploymentToml.warnings(deployment), [])
    }))

  it.effect("warnings follow route order and name each route and client", () =>
    Effect.gen(function*() {
      const more = [
        "[routes.second]",
        "id = \"a-first\"",
        "type = \"llm_classifier\"",
        "classifier_target = \"weak\"",
        "weak_target = \"weak\"",
        "strong_target = \"strong\"",
        "base_threshold = 0.5",
        "[routes.plain]",
        "id = \"plain\"",
        "type = \"passthrough\"",
        "target = \"judge\""
      ].join("\n")
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
