import { assert, describe, it } from "@effect/vitest"
import type { AutoRouteSpec, CompositeRouteSpec, Deployment, RouteSpec } from "@switchyard-ts/config/Deployment"
import * as DeploymentToml from "@switchyard-ts/config/DeploymentToml"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { readFileSync } from "node:fs"
import { customSubagents, expectInvalid, judgeWeakStrong, load } from "./support.js"

const fixture = (name: string) => readFileSync(new URL(`./fixtures/${name}`, import.meta.url), "utf8")

const head = (judgeClient = "timeout_ms = 3000") => `
schema_version = 1

[llm_clients.hosted]
format = "openai_chat"
base_url = "https://api.example.com/v1"

[llm_clients.judge]
format = "openai_chat"
base_url = "http://127.0.0.1:8001/v1"
${judgeClient}

${judgeWeakStrong("judge")}
`

/** A valid deployment with one `auto` route `[routes.a]`; `route` appends lines to it. */
const auto = (route = "") =>
  `${head()}
[routes.a]
id = "a"
type = "auto"
capable_target = "strong"
efficient_target = "weak"
${route}
`

/** A valid deployment with one `composite` route `[routes.c]`; each part appends lines to its table. */
const composite = (
  parts: { route?: string; classifier?: string; stage?: string; more?: string; judgeClient?: string } = {}
) =>
  `${head(parts.judgeClient)}
[routes.c]
id = "c"
type = "composite"
${parts.route ?? ""}

[routes.c.classifier]
target = "judge"
base_threshold = 0.5
classify_trigger = "user_turn"
${parts.classifier ?? ""}

[routes.c.stage]
capable_target = "strong"
efficient_target = "weak"
confidence_threshold = 0.5
${parts.stage ?? ""}

${parts.more ?? ""}
`

const routeOf = <T extends RouteSpec["type"]>(deployment: Deployment, type: T): Extract<RouteSpec, { type: T }> => {
  const route = deployment.routes.find((r): r is Extract<RouteSpec, { type: T }> => r.type === type)
  return route ?? assert.fail(`no ${type} route`)
}

describe("DeploymentToml.parse auto", () => {
  it.effect("the compatible system's minimal auto route loads unchanged: a stage router preset", () =>
    Effect.gen(function*() {
      const deployment = yield* load(fixture("auto-minimal.toml"))
      const route: AutoRouteSpec = routeOf(deployment, "auto")
      assert.strictEqual(route.id, "switchyard/auto")
      assert.strictEqual(route.capable.name, "strong")
      assert.strictEqual(route.efficient.name, "weak")
      assert.strictEqual(route.picker, "efficient_first")
      assert.strictEqual(route.confidenceThreshold, 0.5)
      assert.strictEqual(route.recentTurnWindow, 3)
      assert.strictEqual(route.capableHoldTurns, 2)
      assert.deepStrictEqual(route.toolSemantics, { observe: [], mutate: [], plan: [], new: [] })
      assert.deepStrictEqual(route.classifier, Option.none())
      assert.deepStrictEqual(route.subagents, Option.none())
      assert.deepStrictEqual(route.handoffNotes, Option.none())
      assert.deepStrictEqual(route.capableSystemPrompt, Option.none())
      assert.deepStrictEqual(route.efficientSystemPrompt, Option.none())
      assert.strictEqual(DeploymentToml.summary(deployment), "server OK: switchyard/auto")
      assert.deepStrictEqual(DeploymentToml.warnings(deployment), [])
    }))

  it.effect("the keys every route has are taken", () =>
    Effect.gen(function*() {
      const route = routeOf(yield* load(auto("request_timeout_ms = 60000\ncontext_window = 200000")), "auto")
      assert.deepStrictEqual(route.requestTimeoutMs, Option.some(60000))
      assert.deepStrictEqual(route.contextWindow, Option.some(200000))
    }))

  const at = "routes.a"
  const unknown: ReadonlyArray<readonly [string, string]> = [
    ["picker", "picker = \"capable_first\""],
    ["confidence_threshold", "confidence_threshold = 0.7"],
    ["recent_turn_window", "recent_turn_window = 5"],
    ["capable_hold_turns", "capable_hold_turns = 0"],
    ["capable_system_prompt", "capable_system_prompt = \"x\""],
    ["classifier", "classifier = { target = \"judge\", base_threshold = 0.5 }"],
    ["subagents", "subagents = { type = \"passthrough\", target = \"weak\" }"],
    ["tool_semantics", "tool_semantics = { observe = [\"lookup\"] }"],
    ["handoff_notes", "handoff_notes = { escalation_note = \"x\" }"]
  ]
  for (const [key, line] of unknown) {
    it.effect(`${key} is an unknown field`, () => expectInvalid(auto(line), `${at}.${key}`, "unknown field"))
  }
  it.effect("capable_target missing", () =>
    expectInvalid(auto().replace("capable_target = \"strong\"", ""), `${at}.capable_target`, "missing"))
  it.effect("efficient_target missing", () =>
    expectInvalid(auto().replace("efficient_target = \"weak\"", ""), `${at}.efficient_target`, "missing"))
  it.effect("an unknown target", () =>
    expectInvalid(
      auto().replace("capable_target = \"strong\"", "capable_target = \"nope\""),
      `${at}.capable_target`,
      "references unknown target \"nope\""
    ))
  it.effect("an unknown route type names auto and composite among the variants", () =>
    expectInvalid(auto().replace("type = \"auto\"", "type = \"automatic\""), `${at}.type`, "\"auto\", \"composite\""))
})

describe("DeploymentToml.parse composite", () => {
  it.effect("the compatible system's Claude Code recipe (claude-routing.toml) loads unchanged", () =>
    Effect.gen(function*() {
      const deployment = yield* load(fixture("claude-routing-composite.toml"), [])
      const route: CompositeRouteSpec = routeOf(deployment, "composite")
      assert.strictEqual(route.id, "switchyard")
      assert.strictEqual(route.capable.id, "claude-opus-5-5")
      assert.strictEqual(route.efficient.id, "claude-sonnet-5-5")
      assert.strictEqual(route.classifier.judge.id, "claude-haiku-4-5-20251001")
      assert.strictEqual(route.classifier.classifyTrigger, "user_turn")
      assert.strictEqual(route.classifier.baseThreshold, 0.5)
      assert.strictEqual(route.classifier.judgeFailure, "error")
      assert.isFalse(route.classifier.messageHashFallback)
      assert.strictEqual(route.confidenceThreshold, 0.5)
      assert.strictEqual(route.recentTurnWindow, 3)
      assert.strictEqual(route.capableHoldTurns, 2)
      assert.strictEqual(DeploymentToml.summary(deployment), "server OK: switchyard")
    }))

  it.effect("the compatible system's composite routing doc's route (with stage tool_semantics) loads unchanged", () =>
    Effect.gen(function*() {
      const route = routeOf(
        yield* load(fixture("composite-routing-doc.toml"), [["OPENROUTER_API_KEY", "sk-or"]]),
        "composite"
      )
      assert.deepStrictEqual(route.toolSemantics, {
        observe: ["lookup_customer"],
        mutate: ["update_inventory"],
        plan: [],
        new: ["send_message"]
      })
    }))

  it.effect("every key: the classifier's, the stage's, the route's judge_failure and subagents", () =>
    Effect.gen(function*() {
      const route = routeOf(
        yield* load(composite({
          route: "judge_failure = \"fail_open\"\nrequest_timeout_ms = 60000",
          classifier: `threshold_step = 0.1
message_hash_fallback = true
recent_turn_window = 4
prompt = "Can the efficient target do it?"
response_format_type = "json_object"
max_output_tokens = 512
judge_timeout_ms = 2000
late_verdict_ms = 1000`,
          stage: `recent_turn_window = 5
capable_hold_turns = 0
capable_system_prompt = "diagnose"
efficient_system_prompt = "carry on"`,
          more: `[routes.c.stage.tool_semantics]
observe = ["lookup"]

[routes.c.stage.handoff_notes]
escalation_note = "take over"

[routes.c.subagents]
${customSubagents(["weak", "strong"])}`
        })),
        "composite"
      )
      assert.strictEqual(route.classifier.judgeFailure, "fail_open")
      assert.strictEqual(route.classifier.thresholdStep, 0.1)
      assert.isTrue(route.classifier.messageHashFallback)
      assert.deepStrictEqual(route.classifier.recentTurnWindow, Option.some(4))
      assert.deepStrictEqual(route.classifier.prompt, Option.some("Can the efficient target do it?"))
      assert.strictEqual(route.classifier.responseFormatType, "json_object")
      assert.strictEqual(route.classifier.maxOutputTokens, 512)
      assert.deepStrictEqual(route.classifier.judgeTimeoutMs, Option.some(2000))
      assert.deepStrictEqual(route.classifier.lateVerdictMs, Option.some(1000))
      assert.strictEqual(route.recentTurnWindow, 5)
      assert.strictEqual(route.capableHoldTurns, 0)
      assert.deepStrictEqual(route.capableSystemPrompt, Option.some("diagnose"))
      assert.deepStrictEqual(route.efficientSystemPrompt, Option.some("carry on"))
      assert.deepStrictEqual(route.toolSemantics.observe, ["lookup"])
      assert.strictEqual(Option.getOrThrow(route.handoffNotes).escalationNote, "take over")
      assert.strictEqual(Option.getOrThrow(route.subagents).type, "llm_classifier")
      assert.deepStrictEqual(route.requestTimeoutMs, Option.some(60000))
      const inClassifier = routeOf(yield* load(composite({ classifier: "judge_failure = \"fail_open\"" })), "composite")
      assert.strictEqual(inClassifier.classifier.judgeFailure, "fail_open")
      const once = routeOf(
        yield* load(composite().replace("classify_trigger = \"user_turn\"", "classify_trigger = \"new_session\"")),
        "composite"
      )
      assert.strictEqual(once.classifier.classifyTrigger, "new_session")
    }))

  it.effect("warnings: a judge bounded by no deadline", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(DeploymentToml.warnings(yield* load(composite())), [])
      assert.deepStrictEqual(DeploymentToml.warnings(yield* load(composite({ judgeClient: "" }))), [
        "route c: judge client judge has no timeout_ms; a stalled judge holds requests until the peer closes the connection"
      ])
      assert.deepStrictEqual(
        DeploymentToml.warnings(yield* load(composite({ judgeClient: "", classifier: "judge_timeout_ms = 500" }))),
        []
      )
    }))

  const at = "routes.c"
  const cases: ReadonlyArray<readonly [string, string, string, string]> = [
    [
      "classify_trigger missing",
      composite().replace("classify_trigger = \"user_turn\"", ""),
      `${at}.classifier.classify_trigger`,
      "missing"
    ],
    [
      "classify_trigger every_request",
      composite().replace("classify_trigger = \"user_turn\"", "classify_trigger = \"every_request\""),
      `${at}.classifier.classify_trigger`,
      "composite route c: classify_trigger must be user_turn or new_session, got every_request"
    ],
    [
      "classify_trigger unknown",
      composite().replace("classify_trigger = \"user_turn\"", "classify_trigger = \"always\""),
      `${at}.classifier.classify_trigger`,
      "unknown variant \"always\""
    ],
    ["classifier missing", composite().replace(/\[routes\.c\.classifier\][^[]*/, ""), `${at}.classifier`, "missing"],
    ["stage missing", composite().replace(/\[routes\.c\.stage\][^[]*/, ""), `${at}.stage`, "missing"],
    [
      "judge_failure on the route and in the classifier",
      composite({ route: "judge_failure = \"error\"", classifier: "judge_failure = \"fail_open\"" }),
      `${at}.classifier.judge_failure`,
      "composite route c: judge_failure is set both on the route and in [classifier]; set it in one place"
    ],
    [
      "judge_failure unknown on the route",
      composite({ route: "judge_failure = \"retry\"" }),
      `${at}.judge_failure`,
      "unknown variant \"retry\""
    ],
    [
      "picker in the stage",
      composite({ stage: "picker = \"efficient_first\"" }),
      `${at}.stage.picker`,
      "unknown field"
    ],
    [
      "a classifier nested in the stage",
      composite({ more: "[routes.c.stage.classifier]\ntarget = \"judge\"\nbase_threshold = 0.5" }),
      `${at}.stage.classifier`,
      "unknown field"
    ],
    ["picker on the route", composite({ route: "picker = \"efficient_first\"" }), `${at}.picker`, "unknown field"],
    [
      "stage keys on the route",
      composite({ route: "capable_target = \"strong\"" }),
      `${at}.capable_target`,
      "unknown field"
    ],
    [
      "classifier target missing",
      composite().replace("target = \"judge\"\n", ""),
      `${at}.classifier.target`,
      "missing"
    ],
    [
      "classifier unknown target",
      composite().replace("target = \"judge\"", "target = \"oracle\""),
      `${at}.classifier.target`,
      "references unknown target \"oracle\""
    ],
    [
      "classifier base_threshold above 1",
      composite().replace("base_threshold = 0.5", "base_threshold = 2"),
      `${at}.classifier.base_threshold`,
      "must be between 0 and 1, got 2"
    ],
    [
      "classifier unknown key",
      composite({ classifier: "classifier_target = \"judge\"" }),
      `${at}.classifier.classifier_target`,
      "unknown field"
    ],
    [
      "late_verdict_ms without fail_open",
      composite({ classifier: "judge_timeout_ms = 500\nlate_verdict_ms = 100" }),
      `${at}.classifier.late_verdict_ms`,
      "late_verdict_ms requires judge_failure = \"fail_open\""
    ],
    [
      "stage capable_target missing",
      composite().replace("capable_target = \"strong\"", ""),
      `${at}.stage.capable_target`,
      "missing"
    ],
    [
      "stage unknown efficient_target",
      composite().replace("efficient_target = \"weak\"", "efficient_target = \"nope\""),
      `${at}.stage.efficient_target`,
      "references unknown target \"nope\""
    ],
    [
      "stage confidence_threshold missing",
      composite().replace("confidence_threshold = 0.5", ""),
      `${at}.stage.confidence_threshold`,
      "missing"
    ],
    [
      "stage confidence_threshold above 1",
      composite().replace("confidence_threshold = 0.5", "confidence_threshold = 1.5"),
      `${at}.stage.confidence_threshold`,
      "composite route c: confidence_threshold must be between 0 and 1, got 1.5"
    ],
    [
      "stage capable_hold_turns negative",
      composite({ stage: "capable_hold_turns = -1" }),
      `${at}.stage.capable_hold_turns`,
      "got -1"
    ],
    [
      "stage tool_semantics built-in name",
      composite({ more: "[routes.c.stage.tool_semantics]\nobserve = [\"Read\"]" }),
      `${at}.stage.tool_semantics.observe[0]`,
      "composite route c: tool_semantics.observe names the built-in tool \"Read\""
    ],
    [
      "stage tool_semantics in two categories",
      composite({ more: "[routes.c.stage.tool_semantics]\nobserve = [\"x\"]\nnew = [\"X\"]" }),
      `${at}.stage.tool_semantics.new[0]`,
      "composite route c: tool_semantics lists \"X\" in both observe and new"
    ],
    [
      "stage tool_semantics empty name",
      composite({ more: "[routes.c.stage.tool_semantics]\nmutate = [\"\"]" }),
      `${at}.stage.tool_semantics.mutate[0]`,
      "composite route c: tool_semantics.mutate names must not be empty"
    ],
    [
      "stage tool_semantics unknown category",
      composite({ more: "[routes.c.stage.tool_semantics]\nwrite = [\"x\"]" }),
      `${at}.stage.tool_semantics.write`,
      "unknown field"
    ],
    [
      "stage blank escalation_note",
      composite({ more: "[routes.c.stage.handoff_notes]\nescalation_note = \" \"" }),
      `${at}.stage.handoff_notes.escalation_note`,
      "escalation_note must not be empty"
    ],
    [
      "subagents with user_turn",
      composite({
        more: `[routes.c.subagents]\n${customSubagents(["weak", "strong"], "classify_trigger = \"user_turn\"")}`
      }),
      `${at}.subagents.classify_trigger`,
      "subagents classify_trigger must be every_request or new_session, got user_turn"
    ]
  ]
  for (const [name, text, path, fragment] of cases) {
    it.effect(name, () => expectInvalid(text, path, fragment))
  }
})
