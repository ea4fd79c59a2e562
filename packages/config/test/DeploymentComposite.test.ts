import { assert, describe, it } from "@effect/vitest"
import type { AutoRouteSpec, CompositeRouteSpec } from "@switchyard-ts/config/Deployment"
import * as DeploymentToml from "@switchyard-ts/config/DeploymentToml"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Rejections from "./rejections.js"
import {
  customSubagents,
  document,
  firstOf,
  fixture,
  judgedHead,
  load,
  route,
  table,
  unboundedJudge
} from "./support.js"

/** A valid deployment with one `auto` route `[routes.a]`; `lines` are appended to it. */
const auto = (lines = "") =>
  document(judgedHead(), route("a", "auto", "capable_target = \"strong\"", "efficient_target = \"weak\"", lines))

/** A valid deployment with one `composite` route `[routes.c]`; each part appends lines to its table. */
const composite = (
  parts: { route?: string; classifier?: string; stage?: string; more?: string; judgeClient?: string } = {}
) =>
  document(
    judgedHead(parts.judgeClient),
    route("c", "composite", parts.route ?? ""),
    table(
      "routes.c.classifier",
      "target = \"judge\"",
      "base_threshold = 0.5",
      "classify_trigger = \"user_turn\"",
      parts.classifier ?? ""
    ),
    table(
      "routes.c.stage",
      "capable_target = \"strong\"",
      "efficient_target = \"weak\"",
      "confidence_threshold = 0.5",
      parts.stage ?? ""
    ),
    parts.more ?? ""
  )

describe("DeploymentToml.parse auto", () => {
  it.effect("the compatible system's minimal auto route loads unchanged: a stage router preset", () =>
    Effect.gen(function*() {
      const deployment = yield* load(fixture("auto-minimal.toml"))
      const route: AutoRouteSpec = firstOf(deployment, "auto")
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
      const route = firstOf(yield* load(auto("request_timeout_ms = 60000\ncontext_window = 200000")), "auto")
      assert.deepStrictEqual(route.requestTimeoutMs, Option.some(60000))
      assert.deepStrictEqual(route.contextWindow, Option.some(200000))
    }))

  Rejections.lines("routes.a", auto)([
    ["picker = \"capable_first\"", "unknown field"],
    ["confidence_threshold = 0.7", "unknown field"],
    ["recent_turn_window = 5", "unknown field"],
    ["capable_hold_turns = 0", "unknown field"],
    ["capable_system_prompt = \"x\"", "unknown field"],
    ["classifier = { target = \"judge\", base_threshold = 0.5 }", "unknown field"],
    ["subagents = { type = \"passthrough\", target = \"weak\" }", "unknown field"],
    ["tool_semantics = { observe = [\"lookup\"] }", "unknown field"],
    ["handoff_notes = { escalation_note = \"x\" }", "unknown field"]
  ])

  Rejections.edits("routes.a", auto())([
    ["capable_target = \"strong\"", "", "missing"],
    ["efficient_target = \"weak\"", "", "missing"],
    ["capable_target = \"strong\"", "capable_target = \"nope\"", "references unknown target \"nope\""],
    // an unknown route type names auto and composite among the variants
    ["type = \"auto\"", "type = \"automatic\"", "\"auto\", \"composite\""]
  ])
})

describe("DeploymentToml.parse composite", () => {
  it.effect("the compatible system's Claude Code recipe (claude-routing.toml) loads unchanged", () =>
    Effect.gen(function*() {
      const deployment = yield* load(fixture("claude-routing-composite.toml"), [])
      const route: CompositeRouteSpec = firstOf(deployment, "composite")
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
      const route = firstOf(
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
      const route = firstOf(
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
      const inClassifier = firstOf(yield* load(composite({ classifier: "judge_failure = \"fail_open\"" })), "composite")
      assert.strictEqual(inClassifier.classifier.judgeFailure, "fail_open")
      const once = firstOf(
        yield* load(composite().replace("classify_trigger = \"user_turn\"", "classify_trigger = \"new_session\"")),
        "composite"
      )
      assert.strictEqual(once.classifier.classifyTrigger, "new_session")
    }))

  it.effect("warnings: a judge bounded by no deadline", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(DeploymentToml.warnings(yield* load(composite())), [])
      assert.deepStrictEqual(DeploymentToml.warnings(yield* load(composite({ judgeClient: "" }))), [
        unboundedJudge("c", "judge")
      ])
      assert.deepStrictEqual(
        DeploymentToml.warnings(yield* load(composite({ judgeClient: "", classifier: "judge_timeout_ms = 500" }))),
        []
      )
    }))

  const at = "routes.c"
  const semantics = (lines: string) => composite({ more: `[routes.c.stage.tool_semantics]\n${lines}` })

  Rejections.lines(at, (line) => composite({ route: line }))([
    ["judge_failure = \"retry\"", "unknown variant \"retry\""],
    ["picker = \"efficient_first\"", "unknown field"],
    ["capable_target = \"strong\"", "unknown field"]
  ])

  Rejections.edits(`${at}.classifier`, composite())([
    ["classify_trigger = \"user_turn\"", "", "missing"],
    [
      "classify_trigger = \"user_turn\"",
      "classify_trigger = \"every_request\"",
      "composite route c: classify_trigger must be user_turn or new_session, got every_request"
    ],
    ["classify_trigger = \"user_turn\"", "classify_trigger = \"always\"", "unknown variant \"always\""],
    ["target = \"judge\"", "", "missing"],
    ["target = \"judge\"", "target = \"oracle\"", "references unknown target \"oracle\""],
    ["base_threshold = 0.5", "base_threshold = 2", "must be between 0 and 1, got 2"]
  ])

  Rejections.lines(`${at}.classifier`, (line) => composite({ classifier: line }))([
    ["classifier_target = \"judge\"", "unknown field"]
  ])

  Rejections.edits(`${at}.stage`, composite())([
    ["capable_target = \"strong\"", "", "missing"],
    ["efficient_target = \"weak\"", "efficient_target = \"nope\"", "references unknown target \"nope\""],
    ["confidence_threshold = 0.5", "", "missing"],
    [
      "confidence_threshold = 0.5",
      "confidence_threshold = 1.5",
      "composite route c: confidence_threshold must be between 0 and 1, got 1.5"
    ]
  ])

  Rejections.lines(`${at}.stage`, (line) => composite({ stage: line }))([
    ["picker = \"efficient_first\"", "unknown field"],
    ["capable_hold_turns = -1", "got -1"]
  ])

  Rejections.lines(`${at}.stage.tool_semantics`, semantics)([["write = [\"x\"]", "unknown field"]])

  Rejections.at(at)([
    ["classifier missing", composite().replace(/\[routes\.c\.classifier\][^[]*/, ""), "classifier", "missing"],
    ["stage missing", composite().replace(/\[routes\.c\.stage\][^[]*/, ""), "stage", "missing"],
    [
      "judge_failure on the route and in the classifier",
      composite({ route: "judge_failure = \"error\"", classifier: "judge_failure = \"fail_open\"" }),
      "classifier.judge_failure",
      "composite route c: judge_failure is set both on the route and in [classifier]; set it in one place"
    ],
    [
      "a classifier nested in the stage",
      composite({ more: "[routes.c.stage.classifier]\ntarget = \"judge\"\nbase_threshold = 0.5" }),
      "stage.classifier",
      "unknown field"
    ],
    [
      "late_verdict_ms without fail_open",
      composite({ classifier: "judge_timeout_ms = 500\nlate_verdict_ms = 100" }),
      "classifier.late_verdict_ms",
      "late_verdict_ms requires judge_failure = \"fail_open\""
    ],
    [
      "stage tool_semantics built-in name",
      semantics("observe = [\"Read\"]"),
      "stage.tool_semantics.observe[0]",
      "composite route c: tool_semantics.observe names the built-in tool \"Read\""
    ],
    [
      "stage tool_semantics in two categories",
      semantics("observe = [\"x\"]\nnew = [\"X\"]"),
      "stage.tool_semantics.new[0]",
      "composite route c: tool_semantics lists \"X\" in both observe and new"
    ],
    [
      "stage tool_semantics empty name",
      semantics("mutate = [\"\"]"),
      "stage.tool_semantics.mutate[0]",
      "composite route c: tool_semantics.mutate names must not be empty"
    ],
    [
      "stage blank escalation_note",
      composite({ more: "[routes.c.stage.handoff_notes]\nescalation_note = \" \"" }),
      "stage.handoff_notes.escalation_note",
      "escalation_note must not be empty"
    ],
    [
      "subagents with user_turn",
      composite({
        more: `[routes.c.subagents]\n${customSubagents(["weak", "strong"], "classify_trigger = \"user_turn\"")}`
      }),
      "subagents.classify_trigger",
      "subagents classify_trigger must be every_request or new_session, got user_turn"
    ]
  ])
})
