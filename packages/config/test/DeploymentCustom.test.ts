import { assert, describe, it } from "@effect/vitest"
import type { CustomClassifierRouteSpec, Deployment } from "@switchyard-ts/config/Deployment"
import * as DeploymentToml from "@switchyard-ts/config/DeploymentToml"
import * as JsonSchema from "@switchyard-ts/routing/JsonSchema"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Rejections from "./rejections.js"
import { doc, document, expectInvalid, fixture, hosted, load, route, routeOf, target } from "./support.js"

const routeSchema =
  "{\"type\": \"object\", \"properties\": {\"route\": {\"type\": \"string\"}}, \"required\": [\"route\"]}"

/**
 * A valid deployment with one custom classifier route `[routes.auto]`; `route` appends lines to
 * it, `policy` replaces its policy line, `schema` its response_schema.
 */
const custom = (parts: { route?: string; policy?: string; schema?: string } = {}): string =>
  document(
    hosted("timeout_ms = 120000"),
    target("judge", "qwen3-30b", "hosted"),
    target("fast", "small-coder", "hosted"),
    target("careful", "frontier-coder", "hosted"),
    target("twin", "small-coder", "hosted"),
    route(
      "auto",
      "llm_classifier",
      "mode = \"custom\"",
      "classifier_target = \"judge\"",
      "targets = [\"fast\", \"careful\"]",
      "default_target = \"careful\"",
      "prompt = \"Answer with the target for this task.\"",
      `response_schema = '''${parts.schema ?? routeSchema}'''`,
      parts.policy ?? "policy = { type = \"target_selector\", selector = \"/route\" }",
      parts.route ?? ""
    )
  )

const at = "routes.auto"

/** `custom()` with the labelled targets `list` (a TOML array). */
const labels = (list: string) => custom().replace("targets = [\"fast\", \"careful\"]", `targets = ${list}`)

const customRoute = (deployment: Deployment, id: string): CustomClassifierRouteSpec => routeOf(deployment, id, "custom")

describe("DeploymentToml.parse llm_classifier (custom)", () => {
  it.effect("a minimal route decodes with every default", () =>
    Effect.gen(function*() {
      const route = customRoute(yield* load(custom()), "auto")
      assert.strictEqual(route.judge.name, "judge")
      assert.deepStrictEqual(route.targets.map((t) => t.name), ["fast", "careful"])
      assert.strictEqual(route.defaultTarget.name, "careful")
      assert.strictEqual(route.prompt, "Answer with the target for this task.")
      assert.deepStrictEqual(route.responseSchema, {
        type: "object",
        properties: { route: { type: "string" } },
        required: ["route"]
      })
      assert.deepStrictEqual(route.selector, { text: "/route", tokens: ["route"] })
      assert.strictEqual(route.classifyTrigger, "every_request")
      assert.strictEqual(route.messageHashFallback, false)
      assert.deepStrictEqual(route.recentTurnWindow, Option.none())
      assert.strictEqual(route.maxOutputTokens, 4096)
      assert.strictEqual(route.judgeFailure, "error")
      assert.deepStrictEqual(route.judgeTimeoutMs, Option.none())
      assert.deepStrictEqual(JsonSchema.validate(route.compiledSchema, { route: "fast" }), Option.none())
      assert.isTrue(Option.isSome(JsonSchema.validate(route.compiledSchema, {})))
    }))

  it.effect("every optional key set; labels are trimmed", () =>
    Effect.gen(function*() {
      const route = customRoute(
        yield* load(
          custom({
            route: [
              "classify_trigger = \"new_session\"",
              "message_hash_fallback = true",
              "recent_turn_window = 4",
              "response_format_type = \"json_schema\"",
              "max_output_tokens = 300",
              "judge_failure = \"fail_open\"",
              "judge_timeout_ms = 900",
              "request_timeout_ms = 30000"
            ].join("\n")
          }).replace("targets = [\"fast\", \"careful\"]", "targets = [\" fast\", \"careful \"]")
        ),
        "auto"
      )
      assert.deepStrictEqual(route.targets.map((t) => t.name), ["fast", "careful"])
      assert.strictEqual(route.classifyTrigger, "new_session")
      assert.strictEqual(route.messageHashFallback, true)
      assert.deepStrictEqual(route.recentTurnWindow, Option.some(4))
      assert.strictEqual(route.maxOutputTokens, 300)
      assert.strictEqual(route.judgeFailure, "fail_open")
      assert.deepStrictEqual(route.judgeTimeoutMs, Option.some(900))
      assert.deepStrictEqual(route.requestTimeoutMs, Option.some(30000))
    }))

  for (const name of ["tau2-telecom-custom-opus-qwen-balanced.toml", "tau2-telecom-custom-opus-qwen-aggressive.toml"]) {
    it.effect(`the compatible system's ${name} loads unchanged`, () =>
      Effect.gen(function*() {
        const deployment = yield* load(fixture(name), [["OPENROUTER_API_KEY", "sk-or-test"]])
        const route = customRoute(deployment, "switchyard")
        assert.deepStrictEqual(route.targets.map((t) => t.id), ["qwen/qwen3-35b-a3b", "anthropic/claude-opus-4.7"])
        assert.strictEqual(route.defaultTarget.name, "strong")
        assert.strictEqual(route.judge.name, "classifier")
        assert.strictEqual(route.classifyTrigger, "user_turn")
        assert.deepStrictEqual(route.recentTurnWindow, Option.some(6))
        assert.deepStrictEqual(route.selector.tokens, ["route"])
        assert.deepStrictEqual(
          JsonSchema.validate(route.compiledSchema, { route: "weak", confidence: 0.8, abstain: false }),
          Option.none()
        )
        assert.strictEqual(DeploymentToml.summary(deployment), "server OK: switchyard")
      }))
  }
})

describe("DeploymentToml.parse llm_classifier (custom) load errors", () => {
  const capabilityOrEscalation = [
    ["strong_target", "strong_target = \"careful\""],
    ["weak_target", "weak_target = \"fast\""],
    ["base_threshold", "base_threshold = 0.5"],
    ["threshold_step", "threshold_step = 0.1"],
    ["escalation", "escalation = { confirmations = 2 }"],
    ["response_format_type", "response_format_type = \"json_object\""]
  ] as const
  const required = ["targets", "default_target", "prompt", "response_schema", "policy"]
  Rejections.at(at)([
    ...capabilityOrEscalation.map(([key, line]) =>
      [
        `${key} is a capability or escalation field`,
        custom({ route: line }),
        key,
        "mode custom cannot use capability or escalation fields"
      ] as const
    ),
    ["unknown keys are rejected", custom({ route: "bogus = 1" }), "bogus", "unknown field"],
    ...required.map((key) =>
      [`${key} is required`, custom().replace(new RegExp(`^${key} = .*$`, "m"), ""), key, "missing"] as const
    )
  ])

  Rejections.edits(at, custom())([
    ["classifier_target = \"judge\"", "classifier_target = \"ghost\"", "references unknown target \"ghost\""],
    ["targets = [\"fast\", \"careful\"]", "targets = [\"careful\"]", "custom classifier requires at least two targets"],
    ["default_target = \"careful\"", "default_target = \"judge\"", "default_target \"judge\" must be one of targets"],
    ["prompt = \"Answer with the target for this task.\"", "prompt = \"  \"", "classifier prompt must not be empty"]
  ])

  Rejections.lines(at, (line) => custom({ route: line }))([
    ["message_hash_fallback = true", "message_hash_fallback requires classify_trigger = new_session or user_turn"],
    ["recent_turn_window = -1", "must be at least 0"],
    ["max_output_tokens = 0", "must be at least 1"],
    ["judge_timeout_ms = 0", "must be a positive integer"],
    ["judge_failure = \"retry\"", "unknown variant \"retry\""]
  ])

  Rejections.at(at)([
    [
      "labels are not blank",
      labels("[\"fast\", \"  \"]"),
      "targets[1]",
      "labels must not be empty"
    ],
    [
      "labels are unique",
      labels("[\"fast\", \"careful\", \"fast\"]"),
      "targets[2]",
      "custom classifier targets must be unique; \"fast\" is listed twice"
    ],
    [
      "labels name configured targets",
      labels("[\"fast\", \"ghost\"]"),
      "targets[1]",
      "references unknown target \"ghost\""
    ],
    [
      "two labels resolving to the same model id are rejected",
      labels("[\"fast\", \"careful\", \"twin\"]"),
      "targets[2]",
      "resolved target \"small-coder\" is duplicated"
    ],
    [
      "prompt must not carry the schema placeholder",
      custom().replace("Answer with the target for this task.", "Answer per {{RESPONSE_SCHEMA}}"),
      "prompt",
      "the response schema is supplied automatically"
    ],
    [
      "response_schema must be JSON",
      custom({ schema: "{not json" }),
      "response_schema",
      "response_schema is invalid JSON"
    ],
    [
      "response_schema must be an object",
      custom({ schema: "[1, 2]" }),
      "response_schema",
      "response_schema must be a JSON object"
    ],
    [
      "response_schema must not be a provider wrapper",
      custom({ schema: "{\"type\": \"json_schema\", \"json_schema\": {\"name\": \"x\", \"schema\": {}}}" }),
      "response_schema",
      "not a provider response_format wrapper"
    ],
    [
      "response_schema keywords outside the supported subset are rejected with their place",
      custom({ schema: "{\"type\": \"object\", \"properties\": {\"p\": {\"type\": \"number\", \"minimum\": 0}}}" }),
      "response_schema",
      "response_schema is not a supported JSON Schema at \"/properties/p/minimum\": unsupported keyword \"minimum\""
    ],
    [
      "response_schema keyword values are meta-validated",
      custom({ schema: "{\"type\": \"object\", \"required\": \"route\"}" }),
      "response_schema",
      "at \"/required\": required must be an array of strings"
    ],
    [
      "policy.type is target_selector",
      custom({ policy: "policy = { type = \"threshold\", selector = \"/route\" }" }),
      "policy.type",
      "unknown variant \"threshold\"; expected one of \"target_selector\""
    ],
    [
      "policy.selector is required",
      custom({ policy: "policy = { type = \"target_selector\" }" }),
      "policy.selector",
      "missing"
    ],
    [
      "policy has no other keys",
      custom({ policy: "policy = { type = \"target_selector\", selector = \"/route\", extra = 1 }" }),
      "policy.extra",
      "unknown field"
    ],
    [
      "policy.selector must be a JSON Pointer",
      custom({ policy: "policy = { type = \"target_selector\", selector = \"route\" }" }),
      "policy.selector",
      "selector is not a valid JSON Pointer"
    ],
    [
      "policy.selector escapes are checked",
      custom({ policy: "policy = { type = \"target_selector\", selector = \"/a~2\" }" }),
      "policy.selector",
      "\"~\" must be followed by 0 or 1"
    ],
    [
      "policy.selector must not be the root",
      custom({ policy: "policy = { type = \"target_selector\", selector = \"\" }" }),
      "policy.selector",
      "selector must not be the root pointer"
    ]
  ])
})

/** The group form: `custom()` with `models` in place of `classifier_target` and `targets`. */
const grouped = (models: string, defaultTarget = "careful") =>
  custom()
    .replace("classifier_target = \"judge\"\n", "")
    .replace("targets = [\"fast\", \"careful\"]\n", "")
    .replace("default_target = \"careful\"", `default_target = "${defaultTarget}"\nmodels = { ${models} }`)

const models = "judge = [\"judge\"], quick = [\"fast\"], deep = [\"careful\", \"fast\"], any = [\"fast\", \"careful\"]"

describe("DeploymentToml.parse llm_classifier (custom), the group form", () => {
  it.effect("the compatible system's example of model groups loads unchanged", () =>
    Effect.gen(function*() {
      const route = customRoute(
        yield* load(fixture("llm-classifier-custom-groups.toml"), [["OPENROUTER_API_KEY", "k"]]),
        "smart"
      )
      assert.strictEqual(route.judge.name, "classifier")
      assert.deepStrictEqual(route.targets.map((t) => t.name), ["fast", "balanced", "reasoning", "premium"])
      assert.strictEqual(route.defaultTarget.name, "premium")
      assert.deepStrictEqual(
        route.groups?.groups.map((g) => [g.label, g.candidates.map((t) => t.name)]),
        [
          ["any", ["fast", "balanced", "reasoning", "premium"]],
          ["balanced", ["balanced", "fast", "reasoning", "premium"]],
          ["fast", ["fast", "balanced", "reasoning", "premium"]],
          ["premium", ["premium", "fast", "balanced", "reasoning"]],
          ["reasoning", ["reasoning", "premium", "fast", "balanced"]]
        ]
      )
      assert.strictEqual(route.groups?.defaultLabel, "premium")
      assert.deepStrictEqual(route.selector.tokens, ["decision", "target"])
    }))

  it.effect("default_target names a group; the targets form has no groups", () =>
    Effect.gen(function*() {
      const route = customRoute(yield* load(grouped(models, "deep")), "auto")
      assert.strictEqual(route.defaultTarget.name, "careful")
      assert.strictEqual(route.groups?.defaultLabel, "deep")
      assert.strictEqual(customRoute(yield* load(custom()), "auto").groups, undefined)
    }))

  it.effect("models.any and models.judge must hold a target", () =>
    Effect.gen(function*() {
      yield* expectInvalid(
        grouped("judge = [\"judge\"], any = []"),
        `${at}.models.any`,
        "models.any must contain at least one target"
      )
      yield* expectInvalid(
        grouped("any = [\"fast\", \"careful\"]", "any"),
        `${at}.models.judge`,
        "models.judge must contain at least one target"
      )
    }))

  it.effect("default_target is a non-empty group other than judge", () =>
    Effect.gen(function*() {
      yield* expectInvalid(grouped(models, "judge"), `${at}.default_target`, "default_target cannot be judge")
      yield* expectInvalid(
        grouped(models, "missing"),
        `${at}.models.missing`,
        "models.missing must contain at least one target because it is the default_target"
      )
      yield* expectInvalid(grouped(models, " "), `${at}.default_target`, "has invalid default_target")
    }))

  it.effect("a group's targets must appear in models.any, and name configured targets", () =>
    Effect.gen(function*() {
      yield* expectInvalid(
        grouped("judge = [\"judge\"], deep = [\"careful\"], any = [\"fast\"]", "deep"),
        `${at}.models.deep[0]`,
        "models.deep lists target careful, which must also appear in models.any"
      )
      yield* expectInvalid(
        grouped("judge = [\"judge\"], any = [\"fast\", \"ghost\"]", "any"),
        `${at}.models.any[1]`,
        "references unknown target \"ghost\""
      )
    }))

  it.effect("models goes with neither classifier_target nor targets; judge's other targets are its fallbacks", () =>
    Effect.gen(function*() {
      yield* expectInvalid(
        grouped(models).replace("mode = \"custom\"", "mode = \"custom\"\nclassifier_target = \"judge\""),
        `${at}.classifier_target`,
        "mode custom cannot use capability or escalation fields and response_format_type must be 'json_schema'"
      )
      yield* expectInvalid(
        grouped(models).replace("mode = \"custom\"", "mode = \"custom\"\ntargets = [\"fast\", \"careful\"]"),
        `${at}.targets`,
        "mode custom takes models groups or targets, not both"
      )
      yield* expectInvalid(
        grouped("judge = [\"judge\", \"fast\"], any = [\"fast\", \"careful\"]", "any"),
        `${at}.models.judge`,
        "names target \"fast\", which the route routes to"
      )
      yield* expectInvalid(
        grouped("judge = [\"judge\", \"judge\"], any = [\"fast\", \"careful\"]", "any"),
        `${at}.models.judge`,
        "the route's classifier_target"
      )
      yield* expectInvalid(
        grouped("judge = [\"judge\", \"nope\"], any = [\"fast\", \"careful\"]", "any"),
        `${at}.models.judge[1]`,
        "references unknown target \"nope\""
      )
    }))

  it.effect("capability and escalation routes refuse models", () =>
    expectInvalid(
      doc({ route: "" }).replace(
        "type = \"noop\"",
        "type = \"llm_classifier\"\nclassifier_target = \"weak\"\nweak_target = \"weak\"\nstrong_target = \"weak\"\nbase_threshold = 0.5\nmodels = { any = [\"weak\"] }"
      ),
      "routes.r.models",
      "mode capability cannot use custom classifier fields"
    ))
})
