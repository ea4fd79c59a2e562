/**
 * The compatible system's keys of targets, routes and the top level: a target's `system_prompt`
 * and its two route-level load errors, the route flags `reasoning`, `vision` and `tool_calling`,
 * and `fallback_client` — each loading as documented, each load error word for word.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Rejections from "./rejections.js"
import { doc, expectInvalid, load, route, target } from "./support.js"

/** Two targets on one model id (`alias_a`, `alias_b`), a judge on another, all on `hosted`. */
const aliases = (a: string, b: string) =>
  [
    target("alias_a", "shared-model", "hosted", a),
    target("alias_b", "shared-model", "hosted", b),
    target("judge", "judge-model", "hosted")
  ].join("\n")

/** A random route `[routes.pair]` over both aliases. */
const pair = route("pair", "random", "targets = [\"alias_a\", \"alias_b\"]")

describe("a target's system_prompt", () => {
  it.effect("loads as given; absent, the target has none", () =>
    Effect.gen(function*() {
      const loaded = yield* load(doc({ target: "system_prompt = \"Answer in French.\"" }))
      assert.strictEqual(loaded.targets[0]?.systemPrompt, "Answer in French.")
      const plain = yield* load(doc())
      assert.isFalse(plain.targets[0] !== undefined && "systemPrompt" in plain.targets[0])
    }))

  Rejections.lines("targets.weak", (line) => doc({ target: line }))([
    ["system_prompt = 1", "expected a string"]
  ])

  Rejections.each([
    [
      "two answer targets of one route on one model with different prompts are a load error",
      doc({
        more: aliases("system_prompt = \"one\"", "system_prompt = \"two\"") + pair
      }),
      "routes.pair",
      "routes.pair: route pair maps completion target aliases to model shared-model with different system_prompt values"
    ]
  ])

  it.effect("one alias with a prompt and one without differ too; equal prompts, or aliases in different routes, load", () =>
    Effect.gen(function*() {
      yield* expectInvalid(
        doc({
          more: aliases("system_prompt = \"one\"", "") + pair
        }),
        "routes.pair",
        "maps completion target aliases to model shared-model with different system_prompt values"
      )
      yield* load(doc({
        more: aliases("system_prompt = \"same\"", "system_prompt = \"same\"") + pair
      }))
      yield* load(doc({
        more: aliases("system_prompt = \"one\"", "system_prompt = \"two\"") +
          route("a", "passthrough", "target = \"alias_a\"") + route("b", "passthrough", "target = \"alias_b\"")
      }))
    }))

  it.effect("an escalation's weak target with a prompt on its judge's model is a load error", () =>
    expectInvalid(
      doc({
        more: aliases("system_prompt = \"weak prompt\"", "") + target("strong", "strong-model", "hosted") + route(
          "esc",
          "llm_classifier",
          "mode = \"escalation\"",
          "classifier_target = \"alias_b\"",
          "weak_target = \"alias_a\"",
          "strong_target = \"strong\"",
          "escalation = {}"
        )
      }),
      "routes.esc",
      "routes.esc: route esc cannot apply system_prompt to target alias_a: " +
        "model shared-model is also used by routing-only target alias_b"
    ))

  it.effect("an advisor's executor with a prompt on its advisor's model is a load error; on another model it loads", () =>
    Effect.gen(function*() {
      const advisor = (executor: string) =>
        doc({
          more: aliases("system_prompt = \"executor prompt\"", "") +
            route("adv", "advisor", `executor_target = "${executor}"`, "advisor_target = \"alias_b\"")
        })
      yield* expectInvalid(
        advisor("alias_a"),
        "routes.adv",
        "routes.adv: route adv cannot apply system_prompt to target alias_a: " +
          "model shared-model is also used by routing-only target alias_b"
      )
      const judged = yield* load(
        advisor("alias_a").replace(
          "[targets.alias_b]\nid = \"shared-model\"",
          "[targets.alias_b]\nid = \"other-model\""
        )
      )
      assert.strictEqual(judged.routes[0]?.id, "adv")
    }))
})

describe("route flags reasoning, vision and tool_calling", () => {
  it.effect("load as booleans; unset, the spec has no such key", () =>
    Effect.gen(function*() {
      const loaded = yield* load(doc({ route: "reasoning = false\nvision = true\ntool_calling = false" }))
      const route = loaded.routes[0]
      assert.deepStrictEqual(route?.reasoning, Option.some(false))
      assert.deepStrictEqual(route?.vision, Option.some(true))
      assert.deepStrictEqual(route?.toolCalling, Option.some(false))
      const plain = (yield* load(doc())).routes[0]
      assert.deepStrictEqual([plain?.reasoning, plain?.vision], [undefined, undefined])
    }))

  it.effect("must be booleans", () =>
    Effect.gen(function*() {
      yield* expectInvalid(doc({ route: "vision = \"no\"" }), "routes.r.vision", "expected a boolean")
      yield* expectInvalid(doc({ route: "reasoning = 0" }), "routes.r.reasoning", "expected a boolean")
    }))
})

describe("fallback_client", () => {
  it.effect("names an LLM client, which the deployment carries; absent, none", () =>
    Effect.gen(function*() {
      const loaded = yield* load(doc({ top: "fallback_client = \"hosted\"" }))
      assert.strictEqual(loaded.fallbackClient?.name, "hosted")
      assert.strictEqual(loaded.fallbackClient?.baseUrl, "https://api.example.com/v1")
      assert.isUndefined((yield* load(doc())).fallbackClient)
    }))

  Rejections.each([
    [
      "an unknown client is a load error",
      doc({ top: "fallback_client = \"nope\"" }),
      "fallback_client",
      "fallback_client: references unknown llm client \"nope\""
    ],
    ["must be a string", doc({ top: "fallback_client = 1" }), "fallback_client", "expected a string"]
  ])
})
