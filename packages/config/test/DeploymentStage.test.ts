import { assert, describe, it } from "@effect/vitest"
import type { Deployment, StageRouterRouteSpec } from "@switchyard-ts/config/Deployment"
import * as DeploymentToml from "@switchyard-ts/config/DeploymentToml"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Rejections from "./rejections.js"
import {
  customSubagents,
  document,
  expectInvalid,
  fixture,
  judgeCallDefaults,
  judgeCallOf,
  judgedHead,
  load,
  route,
  routeOf,
  unboundedJudge
} from "./support.js"

/** A valid deployment with one stage router `[routes.stage]`; `route` appends route lines, `more` whole tables. */
const stage = (parts: { route?: string; more?: string; judgeClient?: string } = {}): string =>
  document(
    judgedHead(parts.judgeClient),
    route(
      "stage",
      "stage_router",
      "capable_target = \"strong\"",
      "efficient_target = \"weak\"",
      "picker = \"efficient_first\"",
      "confidence_threshold = 0.5",
      parts.route ?? ""
    ),
    parts.more ?? ""
  )

/** `stage` with a `[routes.stage.classifier]` table of `lines` (after `target` and `base_threshold`). */
const withClassifier = (lines = "", head = "target = \"judge\"\nbase_threshold = 0.5") =>
  stage({ more: `[routes.stage.classifier]\n${head}\n${lines}` })

const at = "routes.stage"

const capableFirst = (text: string) => text.replace("picker = \"efficient_first\"", "picker = \"capable_first\"")

const stageRoute = (deployment: Deployment): StageRouterRouteSpec => routeOf(deployment, "stage", "stage_router")

describe("DeploymentToml.parse stage_router", () => {
  it.effect("the compatible system's documented stage router example loads unchanged", () =>
    Effect.gen(function*() {
      const deployment = yield* load(fixture("stage-router-routing-example.toml"), [["OPENROUTER_API_KEY", "sk-or"]])
      const route = routeOf(deployment, "switchyard/stage", "stage_router")
      assert.strictEqual(route.capable.id, "openai/gpt-4o")
      assert.strictEqual(route.efficient.id, "openai/gpt-4o-mini")
      assert.strictEqual(route.picker, "efficient_first")
      assert.strictEqual(route.confidenceThreshold, 0.5)
      assert.strictEqual(route.recentTurnWindow, 3)
      assert.deepStrictEqual(route.classifier, Option.none())
      assert.strictEqual(DeploymentToml.summary(deployment), "server OK: switchyard/stage")
      assert.deepStrictEqual(DeploymentToml.warnings(deployment), [])
    }))

  it.effect("the compatible system's dev-server deployment (every route type, handoff notes) loads unchanged", () =>
    Effect.gen(function*() {
      const deployment = yield* load(fixture("dev-server-config.toml"), [["NVIDIA_API_KEY", "nvapi-test"]])
      assert.strictEqual(
        DeploymentToml.summary(deployment),
        "server OK: switchyard/advisor, switchyard/classifier, switchyard/noop, switchyard/passthrough, switchyard/random, switchyard/stage"
      )
      const route = routeOf(deployment, "switchyard/stage", "stage_router")
      const notes = Option.getOrThrow(route.handoffNotes)
      assert.include(notes.escalationNote, "[router-guidance]")
      assert.deepStrictEqual(notes.deescalationNote, Option.none())
      assert.isTrue(notes.onlyOnWrongSignalEscalation)
      assert.strictEqual(route.capable.client.format, "openai_responses")
    }))

  it.effect("a minimal route decodes with every default", () =>
    Effect.gen(function*() {
      const route = stageRoute(yield* load(stage()))
      assert.strictEqual(route.capable.name, "strong")
      assert.strictEqual(route.efficient.name, "weak")
      assert.strictEqual(route.picker, "efficient_first")
      assert.strictEqual(route.confidenceThreshold, 0.5)
      assert.strictEqual(route.recentTurnWindow, 3)
      assert.deepStrictEqual(route.capableSystemPrompt, Option.none())
      assert.deepStrictEqual(route.efficientSystemPrompt, Option.none())
      assert.deepStrictEqual(route.handoffNotes, Option.none())
      assert.deepStrictEqual(route.classifier, Option.none())
      assert.deepStrictEqual(route.requestTimeoutMs, Option.none())
    }))

  it.effect("every key, the notes and the classifier table", () =>
    Effect.gen(function*() {
      const route = stageRoute(
        yield* load(capableFirst(stage({
          route: `recent_turn_window = 0
capable_system_prompt = "diagnose before you edit"
efficient_system_prompt = "follow the settled plan"
request_timeout_ms = 60000
context_window = 200000
tool_calling = true`,
          more: `[routes.stage.handoff_notes]
escalation_note = "take over"
deescalation_note = "carry on"
only_on_wrong_signal_escalation = false

[routes.stage.classifier]
target = "judge"
base_threshold = 0.5
threshold_step = 0.1
classify_trigger = "new_session"
message_hash_fallback = true
recent_turn_window = 3
prompt = "Estimate whether the efficient target can complete this request."
response_format_type = "json_object"
max_output_tokens = 512
judge_failure = "fail_open"
judge_timeout_ms = 2000`
        })))
      )
      assert.strictEqual(route.picker, "capable_first")
      assert.strictEqual(route.recentTurnWindow, 0)
      assert.deepStrictEqual(route.capableSystemPrompt, Option.some("diagnose before you edit"))
      assert.deepStrictEqual(route.efficientSystemPrompt, Option.some("follow the settled plan"))
      assert.deepStrictEqual(route.requestTimeoutMs, Option.some(60000))
      assert.deepStrictEqual(
        route.handoffNotes,
        Option.some({
          escalationNote: "take over",
          deescalationNote: Option.some("carry on"),
          onlyOnWrongSignalEscalation: false
        })
      )
      const classifier = Option.getOrThrow(route.classifier)
      assert.strictEqual(classifier.judge.name, "judge")
      assert.strictEqual(classifier.baseThreshold, 0.5)
      assert.strictEqual(classifier.thresholdStep, 0.1)
      assert.strictEqual(classifier.classifyTrigger, "new_session")
      assert.isTrue(classifier.messageHashFallback)
      assert.deepStrictEqual(classifier.recentTurnWindow, Option.some(3))
      assert.deepStrictEqual(
        classifier.prompt,
        Option.some("Estimate whether the efficient target can complete this request.")
      )
      assert.strictEqual(classifier.responseFormatType, "json_object")
      assert.strictEqual(classifier.maxOutputTokens, 512)
      assert.strictEqual(classifier.judgeFailure, "fail_open")
      assert.deepStrictEqual(classifier.judgeTimeoutMs, Option.some(2000))
    }))

  it.effect("a classifier's defaults are a capability route's (judge_failure = error)", () =>
    Effect.gen(function*() {
      const classifier = Option.getOrThrow(stageRoute(yield* load(withClassifier())).classifier)
      assert.strictEqual(classifier.thresholdStep, 0)
      assert.strictEqual(classifier.classifyTrigger, "every_request")
      assert.isFalse(classifier.messageHashFallback)
      assert.deepStrictEqual(classifier.recentTurnWindow, Option.none())
      assert.deepStrictEqual(judgeCallOf(classifier), judgeCallDefaults)
    }))

  it.effect("warnings: capable_first is experimental; a classifier judge without any deadline", () =>
    Effect.gen(function*() {
      const [warning] = DeploymentToml.warnings(yield* load(capableFirst(stage())))
      assert.include(warning ?? "", "route stage: picker \"capable_first\" is experimental")
      assert.deepStrictEqual(DeploymentToml.warnings(yield* load(withClassifier())), [])
      assert.deepStrictEqual(DeploymentToml.warnings(yield* load(stage({ judgeClient: "" }))), [])
      const unbounded = yield* load(stage({
        judgeClient: "",
        more: "[routes.stage.classifier]\ntarget = \"judge\"\nbase_threshold = 0.5"
      }))
      assert.deepStrictEqual(DeploymentToml.warnings(unbounded), [unboundedJudge("stage", "judge")])
      const bounded = yield* load(stage({
        judgeClient: "",
        more: "[routes.stage.classifier]\ntarget = \"judge\"\nbase_threshold = 0.5\njudge_timeout_ms = 500"
      }))
      assert.deepStrictEqual(DeploymentToml.warnings(bounded), [])
    }))
})

describe("DeploymentToml.parse stage_router with a subagents table (its keys: DeploymentSubagents.test.ts)", () => {
  const subagents = (lines = "") => `[routes.stage.subagents]\n${customSubagents(["weak", "strong"], lines)}`
  const classifier = "[routes.stage.classifier]\ntarget = \"judge\"\nbase_threshold = 0.5"

  it.effect("sits beside the classifier and the rest of the route", () =>
    Effect.gen(function*() {
      const route = stageRoute(
        yield* load(stage({ route: "request_timeout_ms = 60000", more: `${classifier}\n${subagents()}` }))
      )
      assert.strictEqual(Option.getOrThrow(route.classifier).judge.name, "judge")
      const table = Option.getOrThrow(route.subagents)
      assert.isTrue(table.type === "llm_classifier" && table.defaultTarget.name === "weak")
      assert.deepStrictEqual(route.requestTimeoutMs, Option.some(60000))
    }))

  it.effect("is checked after the route's own keys, the classifier included", () =>
    Effect.gen(function*() {
      const badSubagents = subagents("classify_trigger = \"user_turn\"")
      yield* expectInvalid(
        stage({ more: `${classifier}\n${badSubagents}` }).replace(
          "capable_target = \"strong\"",
          "capable_target = \"nope\""
        ),
        `${at}.capable_target`,
        "references unknown target \"nope\""
      )
      yield* expectInvalid(
        stage({ more: `${classifier}\nthreshold_step = 0.5\n${badSubagents}` }),
        `${at}.classifier.threshold_step`,
        "base_threshold + 2 * threshold_step must be at most 1"
      )
      yield* expectInvalid(
        stage({ more: `${classifier}\n${badSubagents}` }),
        `${at}.subagents.classify_trigger`,
        "subagents classify_trigger must be every_request or new_session, got user_turn"
      )
    }))

  it.effect("warnings: the picker, the classifier's unbounded judge, then the subagents classifier's", () =>
    Effect.gen(function*() {
      const deployment = yield* load(capableFirst(stage({ judgeClient: "", more: `${classifier}\n${subagents()}` })))
      const [picker, ...judges] = DeploymentToml.warnings(deployment)
      assert.include(picker ?? "", "route stage: picker \"capable_first\" is experimental")
      assert.deepStrictEqual(judges, [unboundedJudge("stage", "judge"), unboundedJudge("stage", "judge", "subagents ")])
    }))
})

describe("DeploymentToml.parse stage_router load errors (each names its key path)", () => {
  Rejections.edits(at, stage())([
    ["capable_target = \"strong\"", "", "missing"],
    ["efficient_target = \"weak\"", "", "missing"],
    ["picker = \"efficient_first\"", "", "missing"],
    ["confidence_threshold = 0.5", "", "missing"],
    ["capable_target = \"strong\"", "capable_target = \"nope\"", "references unknown target \"nope\""],
    ["efficient_target = \"weak\"", "efficient_target = \"nope\"", "references unknown target \"nope\""],
    [
      "picker = \"efficient_first\"",
      "picker = \"cheapest\"",
      "unknown variant \"cheapest\"; expected one of \"efficient_first\", \"capable_first\""
    ],
    [
      "confidence_threshold = 0.5",
      "confidence_threshold = 1.5",
      "confidence_threshold must be between 0 and 1, got 1.5"
    ],
    [
      "confidence_threshold = 0.5",
      "confidence_threshold = -0.1",
      "confidence_threshold must be between 0 and 1, got -0.1"
    ],
    [
      "confidence_threshold = 0.5",
      "confidence_threshold = nan",
      "confidence_threshold must be between 0 and 1, got NaN"
    ],
    ["confidence_threshold = 0.5", "confidence_threshold = \"high\"", "expected a number, got string"]
  ])

  Rejections.lines(at, (line) => stage({ route: line }))([
    ["recent_turn_window = -1", "got -1"],
    ["capable_system_prompt = \" \"", "capable_system_prompt must not be empty"],
    ["efficient_system_prompt = \"\"", "efficient_system_prompt must not be empty"],
    ["weak_target = \"weak\"", "unknown field"]
  ])

  Rejections.lines(`${at}.classifier`, (line) => withClassifier(line))([
    ["threshold_step = -0.1", "must be finite and at least 0, got -0.1"],
    ["threshold_step = 0.3", "base_threshold + 2 * threshold_step must be at most 1, got 1.1"],
    ["classify_trigger = \"sometimes\"", "unknown variant \"sometimes\""],
    ["message_hash_fallback = true", "message_hash_fallback requires classify_trigger = new_session or user_turn"],
    ["recent_turn_window = -2", "got -2"],
    ["prompt = \"  \"", "classifier prompt must not be empty"],
    ["prompt = \"answer {{RESPONSE_SCHEMA}}\"", "must not contain {{RESPONSE_SCHEMA}}"],
    ["response_format_type = \"text\"", "unknown variant \"text\""],
    ["max_output_tokens = 0", "must be at least 1, got 0"],
    ["judge_failure = \"retry\"", "unknown variant \"retry\"; expected one of \"error\", \"fail_open\""],
    ["judge_timeout_ms = 0", "must be a positive integer, got 0"],
    ["classifier_target = \"judge\"", "unknown field"]
  ])

  Rejections.at(at)([
    [
      "judge_failure on the route (it belongs to the classifier table)",
      stage({ route: "judge_failure = \"fail_open\"" }),
      "judge_failure",
      "unknown field"
    ],
    [
      "handoff_notes without escalation_note",
      stage({ more: "[routes.stage.handoff_notes]\ndeescalation_note = \"carry on\"" }),
      "handoff_notes.escalation_note",
      "missing"
    ],
    [
      "blank escalation_note",
      stage({ more: "[routes.stage.handoff_notes]\nescalation_note = \" \"" }),
      "handoff_notes.escalation_note",
      "escalation_note must not be empty"
    ],
    [
      "blank deescalation_note",
      stage({ more: "[routes.stage.handoff_notes]\nescalation_note = \"x\"\ndeescalation_note = \"\"" }),
      "handoff_notes.deescalation_note",
      "deescalation_note must not be empty"
    ],
    [
      "only_on_wrong_signal_escalation not a boolean",
      stage({ more: "[routes.stage.handoff_notes]\nescalation_note = \"x\"\nonly_on_wrong_signal_escalation = 1" }),
      "handoff_notes.only_on_wrong_signal_escalation",
      "expected a boolean, got integer"
    ],
    [
      "unknown handoff_notes key",
      stage({ more: "[routes.stage.handoff_notes]\nescalation_note = \"x\"\nnote = \"y\"" }),
      "handoff_notes.note",
      "unknown field"
    ],
    ["classifier without target", withClassifier("", "base_threshold = 0.5"), "classifier.target", "missing"],
    [
      "classifier without base_threshold",
      withClassifier("", "target = \"judge\""),
      "classifier.base_threshold",
      "missing"
    ],
    [
      "classifier unknown target",
      withClassifier("", "target = \"oracle\"\nbase_threshold = 0.5"),
      "classifier.target",
      "references unknown target \"oracle\""
    ],
    [
      "classifier base_threshold above 1",
      withClassifier("", "target = \"judge\"\nbase_threshold = 2"),
      "classifier.base_threshold",
      "must be between 0 and 1, got 2"
    ]
  ])
})

describe("DeploymentToml.parse stage_router: capable_hold_turns and tool_semantics", () => {
  const semantics = (lines: string) => stage({ more: `[routes.stage.tool_semantics]\n${lines}` })

  it.effect("capable_hold_turns defaults to 2 (0 turns the hold off); tool_semantics to none", () =>
    Effect.gen(function*() {
      const route = stageRoute(yield* load(stage()))
      assert.strictEqual(route.capableHoldTurns, 2)
      assert.deepStrictEqual(route.toolSemantics, { observe: [], mutate: [], plan: [], new: [] })
      assert.strictEqual(stageRoute(yield* load(stage({ route: "capable_hold_turns = 0" }))).capableHoldTurns, 0)
      assert.strictEqual(stageRoute(yield* load(stage({ route: "capable_hold_turns = 5" }))).capableHoldTurns, 5)
    }))

  it.effect("tool_semantics: the four lists as given (a name may repeat inside one list)", () =>
    Effect.gen(function*() {
      const route = stageRoute(
        yield* load(semantics(`observe = ["KB_search", "get_customer_by_phone"]
mutate = ["send_payment_request", "update_inventory"]
plan = ["create_research_plan"]
new = ["start_conversation", "start_conversation"]`))
      )
      assert.deepStrictEqual(route.toolSemantics, {
        observe: ["KB_search", "get_customer_by_phone"],
        mutate: ["send_payment_request", "update_inventory"],
        plan: ["create_research_plan"],
        new: ["start_conversation", "start_conversation"]
      })
      const partial = stageRoute(yield* load(semantics("observe = [\"lookup\"]")))
      assert.deepStrictEqual(partial.toolSemantics, { observe: ["lookup"], mutate: [], plan: [], new: [] })
    }))

  Rejections.lines(at, (line) => stage({ route: line }))([
    ["capable_hold_turns = -1", "got -1"],
    ["capable_hold_turns = 1.5", "expected an integer"],
    ["tool_semantics = \"observe\"", "expected a table"]
  ])

  Rejections.lines(`${at}.tool_semantics`, (line) => semantics(line))([
    ["investigate = [\"lookup\"]", "unknown field"]
  ])

  Rejections.at(at)([
    [
      "tool_semantics empty name",
      semantics("observe = [\"lookup\", \"\"]"),
      "tool_semantics.observe[1]",
      "tool_semantics.observe names must not be empty"
    ],
    [
      "tool_semantics blank name",
      semantics("new = [\"  \"]"),
      "tool_semantics.new[0]",
      "tool_semantics.new names must not be empty"
    ],
    [
      "tool_semantics name in two categories (ASCII case-insensitive)",
      semantics("observe = [\"lookup\"]\nplan = [\"LookUp\"]"),
      "tool_semantics.plan[0]",
      "tool_semantics lists \"LookUp\" in both observe and plan"
    ],
    [
      "tool_semantics built-in tool name",
      semantics("mutate = [\"Read\"]"),
      "tool_semantics.mutate[0]",
      "tool_semantics.mutate names the built-in tool \"Read\", which cannot be reclassified"
    ],
    [
      "tool_semantics built-in shell tool",
      semantics("observe = [\"bash\"]"),
      "tool_semantics.observe[0]",
      "names the built-in tool \"bash\""
    ],
    ["tool_semantics list of non-strings", semantics("observe = [1]"), "tool_semantics.observe[0]", "expected a string"]
  ])
})
