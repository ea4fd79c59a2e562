import { assert, describe, it } from "@effect/vitest"
import type { Deployment, SubagentsSpec } from "@switchyard-ts/config/Deployment"
import * as DeploymentToml from "@switchyard-ts/config/DeploymentToml"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Rejections from "./rejections.js"
import { customSubagents, doc, expectInvalid, load, table, target, unboundedJudge } from "./support.js"

/** The route types that take a `subagents` table, with the lines of such a parent route over `parent` and `light`. */
const parents = {
  passthrough: "type = \"passthrough\"\ntarget = \"parent\"",
  stage_router: [
    "type = \"stage_router\"",
    "capable_target = \"parent\"",
    "efficient_target = \"light\"",
    "picker = \"efficient_first\"",
    "confidence_threshold = 0.5"
  ].join("\n")
} as const
type Parent = keyof typeof parents

/**
 * `doc()` plus a judge, four targets and one `parent`-typed route `[routes.main]` with its
 * `[routes.main.subagents]` table made of `subagents` (lines); `route` appends lines to the route
 * table itself.
 */
const withSubagentsOn = (parent: Parent) => (subagents: string, route = ""): string =>
  doc({
    more: [
      target("judge", "qwen3-30b", "hosted"),
      target("parent", "frontier-coder", "hosted"),
      target("worker", "worker-coder", "hosted"),
      target("reviewer", "review-coder", "hosted"),
      target("light", "light-coder", "hosted"),
      table("routes.main", "id = \"main\"", parents[parent], route),
      table("routes.main.subagents", subagents)
    ].join("\n")
  })

/** A valid custom classifier subagents table (judge `judge`, over worker and reviewer); `extra` appends lines. */
const custom = (extra = ""): string => customSubagents(["worker", "reviewer"], extra)

const at = "routes.main.subagents"

/** The `subagents` of route `main`, whose type must be `parent`. */
const subagentsOfRoute = (parent: Parent) => (deployment: Deployment): Option.Option<SubagentsSpec> => {
  const route = deployment.routes.find((r) => r.id === "main")
  return route?.type === parent && (route.type === "passthrough" || route.type === "stage_router")
    ? route.subagents
    : assert.fail(`route main is not a ${parent} route`)
}

describe.each(["passthrough", "stage_router"] as const)("a %s route's subagents table", (parent) => {
  const withSubagents = withSubagentsOn(parent)
  const subagentsOf = (deployment: Deployment): SubagentsSpec =>
    Option.getOrElse(subagentsOfRoute(parent)(deployment), () => assert.fail("no subagents table"))

  describe("DeploymentToml.parse subagents", () => {
    it.effect("a route without a subagents table has none", () =>
      Effect.gen(function*() {
        const deployment = yield* load(withSubagents("").replace("[routes.main.subagents]", ""))
        assert.isTrue(Option.isNone(subagentsOfRoute(parent)(deployment)))
      }))

    it.effect("type = passthrough names one target (as a table or inline)", () =>
      Effect.gen(function*() {
        const table = subagentsOf(yield* load(withSubagents("type = \"passthrough\"\ntarget = \"worker\"")))
        assert.isTrue(table.type === "passthrough" && table.target.name === "worker")
        const inline = subagentsOf(
          yield* load(
            withSubagents("", "subagents = { type = \"passthrough\", target = \"reviewer\" }").replace(
              "[routes.main.subagents]",
              ""
            )
          )
        )
        assert.isTrue(inline.type === "passthrough" && inline.target.name === "reviewer")
      }))

    it.effect("type = llm_classifier, mode = custom: the custom classifier's keys with their defaults", () =>
      Effect.gen(function*() {
        const table = subagentsOf(yield* load(withSubagents(custom())))
        if (table.type !== "llm_classifier") return assert.fail("expected a custom classifier")
        assert.strictEqual(table.mode, "custom")
        assert.strictEqual(table.judge.name, "judge")
        assert.deepStrictEqual(table.targets.map((t) => t.name), ["worker", "reviewer"])
        assert.strictEqual(table.defaultTarget.name, "worker")
        assert.strictEqual(table.classifyTrigger, "every_request")
        assert.strictEqual(table.judgeFailure, "error")
        assert.strictEqual(table.maxOutputTokens, 4096)
        assert.deepStrictEqual(table.selector.tokens, ["route"])
      }))

    it.effect("a custom classifier in the group form (models) routes sub-agents to groups", () =>
      Effect.gen(function*() {
        const groupsForm = custom()
          .replace("classifier_target = \"judge\"\n", "")
          .replace(
            /^targets = .*\n/m,
            "models = { judge = [\"judge\"], review = [\"reviewer\"], any = [\"worker\", \"reviewer\"] }\n"
          )
          .replace(/^default_target = .*$/m, "default_target = \"review\"")
        const table = subagentsOf(yield* load(withSubagents(groupsForm)))
        if (table.type !== "llm_classifier") return assert.fail("expected a custom classifier")
        assert.strictEqual(table.judge.name, "judge")
        assert.strictEqual(table.groups?.defaultLabel, "review")
        assert.deepStrictEqual(
          table.groups?.groups.map((g) => [g.label, g.candidates.map((t) => t.name)]),
          [["any", ["worker", "reviewer"]], ["review", ["reviewer", "worker"]]]
        )
      }))

    it.effect("every optional key of the custom classifier", () =>
      Effect.gen(function*() {
        const table = subagentsOf(
          yield* load(
            withSubagents(
              custom(
                [
                  "classify_trigger = \"new_session\"",
                  "message_hash_fallback = false",
                  "recent_turn_window = 3",
                  "response_format_type = \"json_schema\"",
                  "max_output_tokens = 200",
                  "judge_failure = \"fail_open\"",
                  "judge_timeout_ms = 800"
                ].join("\n")
              )
            )
          )
        )
        if (table.type !== "llm_classifier") return assert.fail("expected a custom classifier")
        assert.strictEqual(table.classifyTrigger, "new_session")
        assert.deepStrictEqual(table.recentTurnWindow, Option.some(3))
        assert.strictEqual(table.maxOutputTokens, 200)
        assert.strictEqual(table.judgeFailure, "fail_open")
        assert.deepStrictEqual(table.judgeTimeoutMs, Option.some(800))
      }))

    describe("load errors name their key path", () => {
      Rejections.at(at)([
        ["a missing type", withSubagents("target = \"worker\""), "type", "missing"],
        [
          "an unknown type lists the allowed ones",
          withSubagents("type = \"random\"\ntargets = [\"worker\"]"),
          "type",
          "\"passthrough\", \"llm_classifier\""
        ]
      ])

      it.effect("passthrough: target is required, and must exist", () =>
        Effect.gen(function*() {
          yield* expectInvalid(withSubagents("type = \"passthrough\""), `${at}.target`, "missing")
          yield* expectInvalid(
            withSubagents("type = \"passthrough\"\ntarget = \"nowhere\""),
            `${at}.target`,
            "references unknown target \"nowhere\""
          )
        }))

      it.effect("passthrough: unknown keys are rejected", () =>
        expectInvalid(withSubagents("type = \"passthrough\"\ntarget = \"worker\"\nweights = [1]"), `${at}.weights`, ""))

      it.effect("llm_classifier without mode custom: only mode custom is supported", () =>
        Effect.gen(function*() {
          const capability = [
            "type = \"llm_classifier\"",
            "classifier_target = \"judge\"",
            "weak_target = \"worker\"",
            "strong_target = \"reviewer\"",
            "base_threshold = 0.5"
          ].join("\n")
          yield* expectInvalid(
            withSubagents(capability),
            `${at}.mode`,
            "subagents llm_classifier only supports mode custom"
          )
          yield* expectInvalid(
            withSubagents(`${capability}\nmode = "capability"`),
            `${at}.mode`,
            "subagents llm_classifier only supports mode custom"
          )
          yield* expectInvalid(
            withSubagents(custom().replace("mode = \"custom\"", "mode = \"escalation\"")),
            `${at}.mode`,
            "subagents llm_classifier only supports mode custom"
          )
          yield* expectInvalid(
            withSubagents(custom().replace("mode = \"custom\"", "mode = \"clever\"")),
            `${at}.mode`,
            "\"capability\", \"escalation\", \"custom\""
          )
        }))

      it.effect("classify_trigger user_turn is rejected", () =>
        expectInvalid(
          withSubagents(custom("classify_trigger = \"user_turn\"")),
          `${at}.classify_trigger`,
          "subagents classify_trigger must be every_request or new_session, got user_turn"
        ))

      it.effect("message_hash_fallback = true is rejected, whatever the trigger", () =>
        Effect.gen(function*() {
          for (const trigger of ["new_session", "every_request"]) {
            yield* expectInvalid(
              withSubagents(custom(`classify_trigger = "${trigger}"\nmessage_hash_fallback = true`)),
              `${at}.message_hash_fallback`,
              "subagents cannot use message_hash_fallback"
            )
          }
        }))

      it.effect("the custom classifier's own rules apply under the subagents path", () =>
        Effect.gen(function*() {
          yield* expectInvalid(
            withSubagents(custom().replace("targets = [\"worker\", \"reviewer\"]", "targets = [\"worker\"]")),
            `${at}.targets`,
            "custom classifier requires at least two targets"
          )
          yield* expectInvalid(
            withSubagents(custom().replace("default_target = \"worker\"", "default_target = \"parent\"")),
            `${at}.default_target`,
            "must be one of targets"
          )
          yield* expectInvalid(
            withSubagents(custom().replace("classifier_target = \"judge\"", "classifier_target = \"oracle\"")),
            `${at}.classifier_target`,
            "references unknown target \"oracle\""
          )
          yield* expectInvalid(
            withSubagents(custom().replace("selector = \"/route\"", "selector = \"\"")),
            `${at}.policy.selector`,
            "must not be the root pointer"
          )
          yield* expectInvalid(
            withSubagents(custom("judge_failure = \"ignore\"")),
            `${at}.judge_failure`,
            ""
          )
          yield* expectInvalid(
            withSubagents(custom("base_threshold = 0.5")),
            `${at}.base_threshold`,
            "mode custom cannot use"
          )
          yield* expectInvalid(withSubagents(custom("id = \"sub\"")), `${at}.id`, "")
        }))
    })
  })

  describe("DeploymentToml.warnings for a custom subagents classifier", () => {
    it.effect("a judge client without timeout_ms is named, unless judge_timeout_ms or request_timeout_ms bounds it", () =>
      Effect.gen(function*() {
        const unbounded = yield* load(withSubagents(custom()))
        assert.deepStrictEqual(DeploymentToml.warnings(unbounded), [unboundedJudge("main", "hosted", "subagents ")])
        const clientBound = withSubagents(custom()).replace(
          "api_key_env = \"HOSTED_API_KEY\"",
          "api_key_env = \"HOSTED_API_KEY\"\ntimeout_ms = 3000"
        )
        assert.deepStrictEqual(DeploymentToml.warnings(yield* load(clientBound)), [])
        assert.deepStrictEqual(
          DeploymentToml.warnings(yield* load(withSubagents(custom("judge_timeout_ms = 900")))),
          []
        )
        assert.deepStrictEqual(
          DeploymentToml.warnings(yield* load(withSubagents(custom(), "request_timeout_ms = 60000"))),
          []
        )
        assert.deepStrictEqual(
          DeploymentToml.warnings(yield* load(withSubagents("type = \"passthrough\"\ntarget = \"worker\""))),
          []
        )
      }))
  })
})
