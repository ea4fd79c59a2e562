/**
 * The compatible system's keys of targets, routes and the top level: a target's `system_prompt`
 * and its two route-level load errors, the route flags `reasoning`, `vision` and `tool_calling`,
 * and `fallback_client` — each loading as documented, each load error word for word.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { doc, expectInvalid, load } from "./support.js"

/** Two targets on one model id (`alias_a`, `alias_b`), a judge on another, all on `hosted`. */
const aliases = (a: string, b: string) => `
[targets.alias_a]
id = "shared-model"
llm_client = "hosted"
${a}

[targets.alias_b]
id = "shared-model"
llm_client = "hosted"
${b}

[targets.judge]
id = "judge-model"
llm_client = "hosted"
`

describe("a target's system_prompt", () => {
  it.effect("loads as given; absent, the target has none", () =>
    Effect.gen(function*() {
      const loaded = yield* load(doc({ target: "system_prompt = \"Answer in French.\"" }))
      assert.strictEqual(loaded.targets[0]?.systemPrompt, "Answer in French.")
      const plain = yield* load(doc())
      assert.isFalse(plain.targets[0] !== undefined && "systemPrompt" in plain.targets[0])
    }))

  it.effect("must be a string", () =>
    expectInvalid(doc({ target: "system_prompt = 1" }), "targets.weak.system_prompt", "expected a string"))

  it.effect("two answer targets of one route on one model with different prompts are a load error", () =>
    expectInvalid(
      doc({
        more: aliases("system_prompt = \"one\"", "system_prompt = \"two\"") +
          "[routes.pair]\nid = \"pair\"\ntype = \"random\"\ntargets = [\"alias_a\", \"alias_b\"]\n"
      }),
      "routes.pair",
      "routes.pair: route pair maps completion target aliases to model shared-model with different system_prompt values"
    ))

  it.effect("one alias with a prompt and one without differ too; equal prompts, or aliases in different routes, load", () =>
    Effect.gen(function*() {
      yield* expectInvalid(
        doc({
          more: aliases("system_prompt = \"one\"", "") +
            "[routes.pair]\nid = \"pair\"\ntype = \"random\"\ntargets = [\"alias_a\", \"alias_b\"]\n"
        }),
        "routes.pair",
        "maps completion target aliases to model shared-model with different system_prompt values"
      )
      yield* load(doc({
        more: aliases("system_prompt = \"same\"", "system_prompt = \"same\"") +
          "[routes.pair]\nid = \"pair\"\ntype = \"random\"\ntargets = [\"alias_a\", \"alias_b\"]\n"
      }))
      yield* load(doc({
        more: aliases("system_prompt = \"one\"", "system_prompt = \"two\"") +
          "[routes.a]\nid = \"a\"\ntype = \"passthrough\"\ntarget = \"alias_a\"\n" +
          "[routes.b]\nid = \"b\"\ntype = \"passthrough\"\ntarget = \"alias_b\"\n"
      }))
    }))

  it.effect("an escalation's weak target with a prompt on its judge's model is a load error", () =>
    expectInvalid(
      doc({
        more: aliases("system_prompt = \"weak prompt\"", "") + `
[targets.strong]
id = "strong-model"
llm_client = "hosted"

[routes.esc]
id = "esc"
type = "llm_classifier"
mode = "escalation"
classifier_target = "alias_b"
weak_target = "alias_a"
strong_target = "strong"
escalation = {}
`
      }),
      "routes.esc",
      "routes.esc: route esc cannot apply system_prompt to target alias_a: " +
        "model shared-model is also used by routing-only target alias_b"
    ))

  it.effect("an advisor's executor with a prompt on its advisor's model is a load error; on another model it loads", () =>
    Effect.gen(function*() {
      const advisor = (executor: string) =>
        doc({
          more: aliases("system_prompt = \"executor prompt\"", "") + `
[routes.adv]
id = "adv"
type = "advisor"
executor_target = "${executor}"
advisor_target = "alias_b"
`
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

  it.effect("an unknown client is a load error", () =>
    expectInvalid(
      doc({ top: "fallback_client = \"nope\"" }),
      "fallback_client",
      "fallback_client: references unknown llm client \"nope\""
    ))

  it.effect("must be a string", () =>
    expectInvalid(doc({ top: "fallback_client = 1" }), "fallback_client", "expected a string"))
})
