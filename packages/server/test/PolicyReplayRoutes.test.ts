/**
 * Policy replay of custom classifier routes, stage routers and escalation routes: replaying a
 * routing log under the configuration that wrote it reproduces every logged decision (a property
 * per route type over judge-outcome schedules, sessions, turns and route settings; the log written
 * by the real route and judge through the routing log's own line builder, `replayLog.ts`), and a
 * worked example per route type under changed settings, its report computed by hand.
 */
import { assert, describe, it } from "@effect/vitest"
import type { Message } from "@switchyard-ts/protocol/OpenAiChat"
import * as CompositeRoute from "@switchyard-ts/routing/CompositeRoute"
import * as CustomRoute from "@switchyard-ts/routing/CustomRoute"
import * as EscalationRoute from "@switchyard-ts/routing/EscalationRoute"
import * as JsonPointer from "@switchyard-ts/routing/JsonPointer"
import * as JsonSchema from "@switchyard-ts/routing/JsonSchema"
import * as StageRoute from "@switchyard-ts/routing/StageRoute"
import * as PolicyReplay from "@switchyard-ts/server/PolicyReplay"
import type * as RoutingLog from "@switchyard-ts/server/RoutingLog"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as FastCheck from "effect/FastCheck"
import * as Option from "effect/Option"
import * as ReplayLog from "./replayLog.js"
import {
  type CapabilityJudge,
  capabilityJudgeArbitrary,
  capabilityJudgeReply,
  capabilitySettingsArbitrary,
  type Failure,
  failureArbitrary,
  failureReply,
  judgeTarget,
  type Reply,
  target
} from "./replayLog.js"

const sessionArbitrary = FastCheck.constantFrom("a" as const, "b" as const, null)
const tokensArbitrary = FastCheck.constantFrom(1, 10, 100)
const runs = { fastCheck: { numRuns: 150 } }

const ask: Message = { role: "user", content: "fix the build" }
const toolCall = (id: string, name: string, args: string): Message => ({
  role: "assistant",
  content: null,
  tool_calls: [{ id, type: "function", function: { name, arguments: args } }]
})
const toolResult = (id: string, text: string): Message => ({ role: "tool", tool_call_id: id, content: text })

/** A user turn, or a tool continuation (`classify_trigger = "user_turn"` reuses a stored decision on it). */
const turnOf = (userTurn: boolean): ReadonlyArray<Message> =>
  userTurn ? [ask] : [ask, toolCall("c1", "lookup", "{}"), toolResult("c1", "nothing to report")]

// ---------------------------------------------------------------------------------------------
// Custom classifier routes

const labels = ["alpha", "beta", "gamma"] as const
type Label = (typeof labels)[number]
const customTarget = (label: Label) => target(label, `${label}-model`)
const customTargets = labels.map(customTarget)

/** What a custom judge does: name a label at `/route` (`delta` is configured nowhere), name none, or fail. */
type CustomJudge =
  | { readonly _tag: "label"; readonly label: "alpha" | "beta" | "gamma" | "delta" }
  | { readonly _tag: "none" }
  | Failure

interface CustomStep {
  readonly session: "a" | "b" | null
  readonly userTurn: boolean
  readonly judge: CustomJudge
  readonly tokens: number
}

const customStepArbitrary: FastCheck.Arbitrary<CustomStep> = FastCheck.record({
  session: sessionArbitrary,
  userTurn: FastCheck.boolean(),
  judge: FastCheck.oneof(
    FastCheck.record({
      _tag: FastCheck.constant("label" as const),
      label: FastCheck.constantFrom("alpha" as const, "beta" as const, "gamma" as const, "delta" as const)
    }),
    FastCheck.constant({ _tag: "none" as const }),
    failureArbitrary
  ),
  tokens: tokensArbitrary
})

interface CustomLogged {
  readonly defaultLabel: Label
  readonly classifyTrigger: PolicyReplay.CustomSettings["classifyTrigger"]
  readonly judgeFailure: PolicyReplay.CustomSettings["judgeFailure"]
  /** The group form: each label a group whose first target is another label's (see {@link groupsOf}). */
  readonly grouped?: boolean
}

const customSettingsArbitrary: FastCheck.Arbitrary<CustomLogged> = FastCheck.record({
  defaultLabel: FastCheck.constantFrom(...labels),
  classifyTrigger: FastCheck.constantFrom("every_request" as const, "user_turn" as const, "new_session" as const),
  judgeFailure: FastCheck.constantFrom("error" as const, "fail_open" as const),
  grouped: FastCheck.boolean()
})

/** In the group form, the group a label names is served first by this label's target. */
const servedFirst: Readonly<Record<Label, Label>> = { alpha: "gamma", beta: "alpha", gamma: "beta" }

/** The group form of `settings` (each group: its first target, then the others), if grouped. */
const groupsOf = (settings: CustomLogged) =>
  settings.grouped === true
    ? {
      groups: {
        groups: labels.map((label) => {
          const first = servedFirst[label]
          return {
            label,
            candidates: [customTarget(first), ...labels.filter((l) => l !== first).map(customTarget)] as const
          }
        }),
        defaultLabel: settings.defaultLabel
      }
    }
    : {}

const customDefault = (settings: CustomLogged) =>
  customTarget(settings.grouped === true ? servedFirst[settings.defaultLabel] : settings.defaultLabel)

const responseSchema = {
  type: "object",
  properties: { route: { type: "string" } },
  required: [],
  additionalProperties: false
} as const

const customReply = (judge: CustomJudge): Reply =>
  judge._tag === "label"
    ? { _tag: "text", text: JSON.stringify({ route: judge.label }) }
    : judge._tag === "none"
    ? { _tag: "text", text: "{}" }
    : failureReply(judge)

const customLogOf = (steps: ReadonlyArray<CustomStep>, settings: CustomLogged) =>
  ReplayLog.logOf(
    CustomRoute.make({
      id: ReplayLog.routeId,
      name: ReplayLog.routeId,
      judge: judgeTarget,
      prompt: "Name the target for this conversation.",
      responseSchema,
      compiledSchema: Either.getOrThrow(JsonSchema.compile(responseSchema)),
      maxOutputTokens: 64,
      recentTurnWindow: Option.none(),
      targets: customTargets,
      defaultTarget: customDefault(settings),
      ...groupsOf(settings),
      selector: Either.getOrThrow(JsonPointer.parse("/route")),
      classifyTrigger: settings.classifyTrigger,
      messageHashFallback: false,
      judgeFailure: settings.judgeFailure
    }),
    steps,
    (step) => ({ session: step.session, messages: turnOf(step.userTurn), tokens: step.tokens }),
    (step) => customReply(step.judge)
  )

const customReplayer = (settings: CustomLogged, targets = customTargets) =>
  PolicyReplay.custom({
    targets,
    defaultTarget: customDefault(settings),
    ...groupsOf(settings),
    classifyTrigger: settings.classifyTrigger,
    judgeFailure: settings.judgeFailure
  })

// ---------------------------------------------------------------------------------------------
// Stage routers

/**
 * Tool histories and what the signals make of them (default window 3): `critical` (out of memory:
 * `override` capable); `settled` (a write, then passing tests: `tests_passed` efficient);
 * `spinning` (9 messages, no write, read or plan, a traceback last: spinning 1 + severity 0.7,
 * score tanh(1) ≈ 0.762 → capable); `hard_error` (a traceback: score tanh(0.5) ≈ 0.462 → capable);
 * `writing` (a write and an edit, clean: production 1, score −0.462 → efficient); `quiet_turn`,
 * `quiet_continuation`, `user_after_read` (score 0: ambiguous under any threshold used here; the
 * first and last are user turns). The scored ones decide (`dimensions`) when their confidence
 * reaches `confidence_threshold`, else they are ambiguous too.
 */
const histories = {
  critical: [ask, toolCall("c1", "Bash", "{\"command\":\"cargo test\"}"), toolResult("c1", "fatal: out of memory")],
  settled: [
    ask,
    toolCall("c1", "Write", "{\"file_path\":\"a.rs\"}"),
    toolResult("c1", "written"),
    toolCall("c2", "Bash", "{\"command\":\"pytest\"}"),
    toolResult("c2", "12 passed in 0.4s")
  ],
  spinning: [
    ask,
    ...[1, 2, 3].flatMap((i) => [toolCall(`c${i}`, "lookup", "{}"), toolResult(`c${i}`, "nothing yet")]),
    toolCall("c4", "lookup", "{}"),
    toolResult("c4", "Traceback (most recent call last):\nValueError: bad input")
  ],
  hard_error: [
    ask,
    toolCall("c1", "Bash", "{\"command\":\"python app.py\"}"),
    toolResult("c1", "Traceback (most recent call last):\nValueError: bad input")
  ],
  writing: [
    ask,
    toolCall("c1", "Write", "{\"file_path\":\"a.rs\"}"),
    toolResult("c1", "written"),
    toolCall("c2", "Edit", "{\"file_path\":\"b.rs\"}"),
    toolResult("c2", "edited")
  ],
  quiet_turn: [ask],
  quiet_continuation: turnOf(false),
  user_after_read: [
    ask,
    toolCall("c1", "Read", "{\"file_path\":\"a.rs\"}"),
    toolResult("c1", "fn main() {}"),
    { role: "user", content: "now fix it" }
  ]
} satisfies Record<string, ReadonlyArray<Message>>
type History = keyof typeof histories
const historyNames: ReadonlyArray<History> = [
  "critical",
  "settled",
  "spinning",
  "hard_error",
  "writing",
  "quiet_turn",
  "quiet_continuation",
  "user_after_read"
]

interface StageStep {
  readonly session: "a" | "b" | null
  readonly history: History
  readonly judge: CapabilityJudge
  readonly tokens: number
}

const stageStepArbitrary: FastCheck.Arbitrary<StageStep> = FastCheck.record({
  session: sessionArbitrary,
  // the ambiguous user turns twice as often: the classifier's session rules (user_turn consults on them)
  history: FastCheck.constantFrom(...historyNames, "quiet_turn", "user_after_read"),
  judge: capabilityJudgeArbitrary,
  tokens: tokensArbitrary
})

const stageSettingsArbitrary: FastCheck.Arbitrary<PolicyReplay.StageSettings> = FastCheck.record({
  picker: FastCheck.constantFrom("efficient_first" as const, "capable_first" as const),
  confidenceThreshold: FastCheck.constantFrom(0.3, 0.5, 0.8),
  classifier: FastCheck.option(capabilitySettingsArbitrary, { nil: undefined, freq: 4 })
})

/** A stage route's turn over the capable and efficient targets, without prompts or notes. */
const turnOptions = {
  id: ReplayLog.routeId,
  name: ReplayLog.routeId,
  capable: target("capable", "capable-model"),
  efficient: target("efficient", "efficient-model"),
  recentTurnWindow: 3,
  capableSystemPrompt: Option.none(),
  efficientSystemPrompt: Option.none(),
  handoffNotes: Option.none()
}

/** A capability judge's options beside `settings` (the judge, its prompt and call). */
const judgeOptions = {
  judge: judgeTarget,
  prompt: Option.none(),
  responseFormatType: "json_schema",
  maxOutputTokens: 64,
  recentTurnWindow: Option.none(),
  messageHashFallback: false
} as const

/** Route `steps` through a stage route `build` makes; the log's lines. */
const turnLogOf = (
  build: Parameters<typeof ReplayLog.logOf>[0],
  steps: ReadonlyArray<StageStep>
) =>
  ReplayLog.logOf(
    build,
    steps,
    (step) => ({ session: step.session, messages: histories[step.history], tokens: step.tokens }),
    (step) => capabilityJudgeReply(step.judge)
  )

const stageLogOf = (steps: ReadonlyArray<StageStep>, settings: PolicyReplay.StageSettings) =>
  turnLogOf(
    StageRoute.make({
      ...turnOptions,
      ...(settings.capableHoldTurns === undefined ? {} : { capableHoldTurns: settings.capableHoldTurns }),
      picker: settings.picker,
      confidenceThreshold: settings.confidenceThreshold,
      classifier: Option.map(Option.fromNullable(settings.classifier), (classifier) => ({
        ...judgeOptions,
        ...classifier
      }))
    }),
    steps
  )

/** The stage facts of a stage router's response line: its evidence's, else the line's own (a failed request). */
const stageFactsOf = (line: RoutingLog.Line) =>
  line.kind !== "response"
    ? undefined
    : line.evidence !== null && "stage" in line.evidence
    ? line.evidence.stage
    : line.stage

// ---------------------------------------------------------------------------------------------
// Escalation routes

/** What the weak target does: answer, fail over to strong (transport, context overflow), or fail the request. */
type Weak = "answer" | "transport" | "overflow" | "status_500" | "refused"

/** A verdict's optional category and fresh-evidence flag (absent: an older judge's verdict). */
interface VerdictFacts {
  readonly category?: "drift" | "repetition"
  readonly fresh?: boolean
}

type EscalationJudge =
  | { readonly _tag: "escalate" } & VerdictFacts
  | { readonly _tag: "decline" } & VerdictFacts
  | Failure

interface EscalationStep {
  readonly session: "a" | "b" | null
  readonly final: boolean
  readonly weak: Weak
  readonly judge: EscalationJudge
  readonly tokens: number
  /** What the strong target does when the route calls it (a judged strong turn); absent: it answers. */
  readonly strong?: Weak
}

const escalationStepArbitrary: FastCheck.Arbitrary<EscalationStep> = FastCheck.record({
  session: sessionArbitrary,
  final: FastCheck.constantFrom(false, false, false, true),
  weak: FastCheck.oneof(
    { arbitrary: FastCheck.constant("answer" as const), weight: 6 },
    { arbitrary: FastCheck.constantFrom("transport" as const, "overflow" as const), weight: 2 },
    { arbitrary: FastCheck.constantFrom("status_500" as const, "refused" as const), weight: 1 }
  ),
  judge: FastCheck.oneof(
    { arbitrary: FastCheck.constant({ _tag: "escalate" as const }), weight: 3 },
    { arbitrary: FastCheck.constant({ _tag: "decline" as const }), weight: 2 },
    { arbitrary: failureArbitrary, weight: 2 }
  ),
  tokens: tokensArbitrary
})

const escalationSettingsArbitrary: FastCheck.Arbitrary<PolicyReplay.EscalationSettings> = FastCheck.record({
  confirmations: FastCheck.integer({ min: 1, max: 3 }),
  judgeFailure: FastCheck.constantFrom("error" as const, "fail_open" as const)
})

const verdictFactsArbitrary: FastCheck.Arbitrary<VerdictFacts> = FastCheck.record({
  category: FastCheck.constantFrom("drift" as const, "repetition" as const),
  fresh: FastCheck.constantFrom(true, true, true, false)
}, { requiredKeys: [] })

/** Steps of de-escalating routes: verdicts with categories and fresh-evidence flags, strong-target failures. */
const deescalationStepArbitrary: FastCheck.Arbitrary<EscalationStep> = FastCheck.record({
  session: FastCheck.constantFrom("a" as const, "a" as const, "b" as const, null),
  final: FastCheck.constantFrom(false, false, false, false, false, true),
  weak: FastCheck.oneof(
    { arbitrary: FastCheck.constant("answer" as const), weight: 8 },
    { arbitrary: FastCheck.constantFrom("transport" as const, "overflow" as const), weight: 1 },
    { arbitrary: FastCheck.constantFrom("status_500" as const, "refused" as const), weight: 1 }
  ),
  judge: FastCheck.oneof(
    {
      arbitrary: verdictFactsArbitrary.map((facts): EscalationJudge => ({ _tag: "escalate", ...facts })),
      weight: 3
    },
    {
      arbitrary: verdictFactsArbitrary.map((facts): EscalationJudge => ({ _tag: "decline", ...facts })),
      weight: 3
    },
    { arbitrary: failureArbitrary, weight: 1 }
  ),
  tokens: tokensArbitrary,
  strong: FastCheck.oneof(
    { arbitrary: FastCheck.constant("answer" as const), weight: 8 },
    { arbitrary: FastCheck.constantFrom("status_500" as const, "refused" as const, "transport" as const), weight: 1 }
  )
})

/** Settings with a de-escalation table (`strongMaxCalls` unset or >= `strongMinCalls`). */
const deescalationSettingsArbitrary: FastCheck.Arbitrary<PolicyReplay.EscalationSettings> = FastCheck.record({
  confirmations: FastCheck.integer({ min: 1, max: 2 }),
  judgeFailure: FastCheck.constantFrom("error" as const, "fail_open" as const),
  strongMinCalls: FastCheck.integer({ min: 1, max: 3 }),
  release: FastCheck.integer({ min: 1, max: 2 }),
  extra: FastCheck.option(FastCheck.integer({ min: 0, max: 2 })),
  cooldown: FastCheck.integer({ min: 0, max: 2 })
}).map(({ confirmations, cooldown, extra, judgeFailure, release, strongMinCalls }) => ({
  confirmations,
  judgeFailure,
  deescalation: Option.some({
    strongMinCalls,
    confirmations: release,
    strongMaxCalls: extra === null ? Option.none() : Option.some(strongMinCalls + extra),
    weakCooldownCalls: cooldown
  })
}))

const weakReply = (weak: Weak): Reply => {
  switch (weak) {
    case "answer":
      return { _tag: "text", text: "here is the fix" }
    case "transport":
      return { _tag: "transport" }
    case "overflow":
      return { _tag: "status", status: 400, contextWindowExceeded: true }
    case "status_500":
      return { _tag: "status", status: 500 }
    case "refused":
      return { _tag: "refused" }
  }
}

const escalationJudgeReply = (judge: EscalationJudge): Reply =>
  judge._tag === "escalate" || judge._tag === "decline"
    ? {
      _tag: "text",
      text: JSON.stringify({
        escalate: judge._tag === "escalate",
        ...(judge.category === undefined ? {} : { category: judge.category }),
        ...(judge.fresh === undefined ? {} : { new_evidence: judge.fresh }),
        reason: "r"
      })
    }
    : failureReply(judge)

const strongTarget = target("strong", "strong-model")

const weakTarget = target("weak", "weak-model")

const escalationLogOf = (steps: ReadonlyArray<EscalationStep>, settings: PolicyReplay.EscalationSettings) =>
  ReplayLog.logOf(
    EscalationRoute.make({
      id: ReplayLog.routeId,
      name: ReplayLog.routeId,
      judge: judgeTarget,
      prompt: Option.none(),
      responseFormatType: "json_schema",
      maxOutputTokens: 64,
      recentTurnWindow: 28,
      windowMessageChars: 500,
      weak: weakTarget,
      strong: strongTarget,
      ...settings
    }),
    steps,
    (step) => ({ session: step.session, messages: [ask], final: step.final, tokens: step.tokens }),
    (step, called) =>
      called === weakTarget.id
        ? weakReply(step.weak)
        : called === strongTarget.id
        ? weakReply(step.strong ?? "answer")
        : escalationJudgeReply(step.judge)
  )

// ---------------------------------------------------------------------------------------------

describe("policy replay of custom classifier routes", () => {
  it.effect.prop(
    "replaying a log under its own configuration reproduces every logged decision",
    { steps: FastCheck.array(customStepArbitrary, { maxLength: 12 }), settings: customSettingsArbitrary },
    ({ settings, steps }) =>
      Effect.flatMap(
        customLogOf(steps, settings),
        (lines) => ReplayLog.assertReproduced(lines, customReplayer(settings), steps.length)
      ),
    runs
  )

  it.effect("worked example: fail_open, and gamma removed from targets (its label goes to default_target)", () =>
    Effect.gen(function*() {
      const logged: CustomLogged = { defaultLabel: "beta", classifyTrigger: "user_turn", judgeFailure: "error" }
      const lines = yield* customLogOf([
        { session: "a", userTurn: true, judge: { _tag: "label", label: "gamma" }, tokens: 100 },
        { session: "a", userTurn: false, judge: { _tag: "garbage" }, tokens: 10 },
        { session: "a", userTurn: true, judge: { _tag: "transport" }, tokens: 1 },
        { session: "b", userTurn: true, judge: { _tag: "label", label: "alpha" }, tokens: 40 },
        { session: "b", userTurn: true, judge: { _tag: "label", label: "delta" }, tokens: 5 },
        { session: null, userTurn: true, judge: { _tag: "garbage" }, tokens: 1 }
      ], logged)
      const [report] = yield* PolicyReplay.replay(
        lines,
        new Map([[
          ReplayLog.routeId,
          customReplayer({ ...logged, judgeFailure: "fail_open" }, [customTarget("alpha"), customTarget("beta")])
        ]])
      )
      // Logged: 1 gamma (verdict, stores gamma); 2 gamma (a tool turn under user_turn: the stored
      // decision, no judge call); 3 failed (transport under error); 4 alpha; 5 beta (delta is no
      // label: abstained); 6 beta (parse_error, no session: the default).
      // Replayed: 1 beta (gamma is no target: abstained, stores beta); 2 beta (the stored beta);
      // 3 beta (retained, transport); 4-6 as logged. Tokens follow: the failed request has none.
      assert.deepStrictEqual(report, {
        route: ReplayLog.routeId,
        kind: "custom",
        requests: 6,
        other_algorithm: 0,
        logged: {
          routed: { "alpha-model": 1, "beta-model": 2, "gamma-model": 2 },
          failed: 1,
          unknown: 0,
          without_verdict: { parse_error: 1 },
          tokens: { "alpha-model": 40, "beta-model": 6, "gamma-model": 110 }
        },
        replayed: {
          routed: { "alpha-model": 1, "beta-model": 5 },
          failed: 0,
          unknown: 0,
          without_verdict: { transport: 1, parse_error: 1 },
          tokens: { "alpha-model": 40, "beta-model": 116 }
        },
        changed: 3,
        sessions_changed: 1
      })
    }))
})

describe("policy replay of stage routers", () => {
  it.effect.prop(
    "replaying a log under its own configuration reproduces every logged decision",
    { steps: FastCheck.array(stageStepArbitrary, { maxLength: 12 }), settings: stageSettingsArbitrary },
    ({ settings, steps }) =>
      Effect.flatMap(
        stageLogOf(steps, settings),
        (lines) => ReplayLog.assertReproduced(lines, PolicyReplay.stage(settings), steps.length)
      ),
    runs
  )

  it.effect("the histories reach every decision source, and the classifier's error posture fails requests", () =>
    Effect.gen(function*() {
      const settings: PolicyReplay.StageSettings = {
        picker: "capable_first",
        confidenceThreshold: 0.5,
        classifier: { baseThreshold: 0.5, thresholdStep: 0, classifyTrigger: "user_turn", judgeFailure: "error" }
      }
      const verdict: CapabilityJudge = { _tag: "verdict", p: 0.9, boundary: "supported" }
      const steps: ReadonlyArray<StageStep> = [
        // the classifier's verdicts (efficient) are stored for session a; its tool turns reuse them
        ...historyNames.map((history) => ({ session: "a", history, judge: verdict, tokens: 1 }) as const),
        // no verdict: the picker's default (capable), not a's stored efficient
        { session: "a", history: "quiet_turn", judge: { _tag: "garbage" }, tokens: 1 },
        { session: "b", history: "quiet_turn", judge: { _tag: "transport" }, tokens: 1 },
        { session: "b", history: "writing", judge: { _tag: "refused" }, tokens: 1 }
      ]
      const lines = yield* stageLogOf(steps, settings)
      const responses = lines.filter((line) => line.kind === "response")
      assert.deepStrictEqual(
        responses.map((line) => [
          stageFactsOf(line)?.decision_source,
          line.evidence === null ? line.error : line.evidence.source,
          line.tier
        ]),
        [
          ["override", "stage_router", "capable"], // critical
          ["tests_passed", "stage_router", "efficient"], // settled
          ["dimensions", "stage_router", "capable"], // spinning: 0.762 >= 0.5
          ["llm-classifier", "llm-classifier", "efficient"], // hard_error: 0.462 < 0.5; nothing stored yet: a verdict
          ["llm-classifier", "affinity", "efficient"], // writing: a tool turn, the stored verdict
          ["llm-classifier", "llm-classifier", "efficient"], // quiet_turn: a user turn, a verdict
          ["llm-classifier", "affinity", "efficient"], // quiet_continuation: the stored verdict
          ["llm-classifier", "llm-classifier", "efficient"], // user_after_read: a verdict
          ["fall_open", "fail-open", "capable"], // parse_error: no verdict under both postures
          ["fall_open", "upstream_error", null], // transport under error: failed, the line keeps its signal facts
          ["fall_open", "upstream_unavailable", null] // the breaker under error
        ]
      )
      assert.isTrue(yield* ReplayLog.assertReproduced(lines, PolicyReplay.stage(settings), steps.length))
    }))

  it.effect("worked example: a lower confidence_threshold decides by dimensions; no classifier: the picker's default", () =>
    Effect.gen(function*() {
      const logged: PolicyReplay.StageSettings = {
        picker: "efficient_first",
        confidenceThreshold: 0.5,
        classifier: { baseThreshold: 0.5, thresholdStep: 0, classifyTrigger: "every_request", judgeFailure: "error" }
      }
      const lines = yield* stageLogOf([
        { session: "a", history: "hard_error", judge: { _tag: "verdict", p: 0.9, boundary: "supported" }, tokens: 100 },
        { session: "a", history: "writing", judge: { _tag: "verdict", p: 0.1, boundary: "supported" }, tokens: 200 },
        { session: "a", history: "quiet_turn", judge: { _tag: "transport" }, tokens: 1 },
        { session: "b", history: "critical", judge: { _tag: "garbage" }, tokens: 10 },
        { session: "b", history: "settled", judge: { _tag: "garbage" }, tokens: 20 },
        { session: "b", history: "quiet_turn", judge: { _tag: "verdict", p: 0.9, boundary: "supported" }, tokens: 1 }
      ], logged)
      const [report] = yield* PolicyReplay.replay(
        lines,
        new Map([[
          ReplayLog.routeId,
          PolicyReplay.stage({ picker: "capable_first", confidenceThreshold: 0.4, classifier: undefined })
        ]])
      )
      // Logged (threshold 0.5, the classifier under error): 1 efficient (0.462 ambiguous; p 0.9 >=
      // 0.5 is weak); 2 capable (ambiguous; p 0.1 is strong); 3 failed (transport); 4 capable
      // (override); 5 efficient (tests_passed); 6 efficient (score 0; p 0.9).
      // Replayed (threshold 0.4, no classifier, capable_first): 1 capable (dimensions, +0.462);
      // 2 efficient (dimensions, −0.462); 3 capable (confidence 0: the picker's default); 4, 5 as
      // logged; 6 capable (the picker's default). The failed request has no tokens.
      assert.deepStrictEqual(report, {
        route: ReplayLog.routeId,
        kind: "stage_router",
        requests: 6,
        other_algorithm: 0,
        logged: {
          routed: { capable: 2, efficient: 3 },
          failed: 1,
          unknown: 0,
          without_verdict: {},
          tokens: { capable: 210, efficient: 121 }
        },
        replayed: {
          routed: { capable: 4, efficient: 2 },
          failed: 0,
          unknown: 0,
          without_verdict: {},
          tokens: { capable: 111, efficient: 220 }
        },
        changed: 4,
        sessions_changed: 2
      })
    }))
})

describe("policy replay of stage routers with a capable hold", () => {
  it.effect.prop(
    "replaying a log under its own configuration reproduces every logged decision",
    {
      steps: FastCheck.array(stageStepArbitrary, { maxLength: 12 }),
      settings: stageSettingsArbitrary,
      holdTurns: FastCheck.constantFrom(1, 2)
    },
    ({ holdTurns, settings, steps }) =>
      Effect.flatMap(
        stageLogOf(steps, { ...settings, capableHoldTurns: holdTurns }),
        (lines) =>
          ReplayLog.assertReproduced(
            lines,
            PolicyReplay.stage({ ...settings, capableHoldTurns: holdTurns }),
            steps.length
          )
      ),
    runs
  )

  it.effect("worked example: the held turns of a log go back to the signals and the picker without the hold", () =>
    Effect.gen(function*() {
      const logged: PolicyReplay.StageSettings = {
        picker: "efficient_first",
        confidenceThreshold: 0.5,
        capableHoldTurns: 2,
        classifier: undefined
      }
      const none: CapabilityJudge = { _tag: "garbage" }
      const lines = yield* stageLogOf([
        { session: "a", history: "critical", judge: none, tokens: 1 },
        { session: "a", history: "writing", judge: none, tokens: 10 },
        { session: "a", history: "quiet_turn", judge: none, tokens: 100 },
        { session: "a", history: "quiet_turn", judge: none, tokens: 1000 }
      ], logged)
      assert.deepStrictEqual(
        lines.flatMap((line) => line.kind === "response" ? [[stageFactsOf(line)?.decision_source, line.tier]] : []),
        [["override", "capable"], ["capable_hold", "capable"], ["capable_hold", "capable"], ["fall_open", "efficient"]]
      )
      assert.isTrue(yield* ReplayLog.assertReproduced(lines, PolicyReplay.stage(logged), 4))
      const [report] = yield* PolicyReplay.replay(
        lines,
        new Map([[ReplayLog.routeId, PolicyReplay.stage({ ...logged, capableHoldTurns: 0 })]])
      )
      // Replayed without the hold: 2 efficient (writing: dimensions, -0.462 is below 0.5, so the picker's
      // default), 3 efficient (the picker's default).
      assert.deepStrictEqual(report?.replayed.routed, { capable: 1, efficient: 3 })
      assert.deepStrictEqual(report?.replayed.tokens, { capable: 1, efficient: 1110 })
      assert.strictEqual(report?.changed, 2)
    }))
})

// ---------------------------------------------------------------------------------------------
// Composite routes

const compositeSettingsArbitrary: FastCheck.Arbitrary<PolicyReplay.CompositeSettings> = FastCheck.record({
  confidenceThreshold: FastCheck.constantFrom(0.3, 0.5, 0.8),
  capableHoldTurns: FastCheck.constantFrom(0, 1, 2),
  classifier: capabilitySettingsArbitrary.map((settings) => ({
    ...settings,
    classifyTrigger: settings.classifyTrigger === "every_request" ? "user_turn" as const : settings.classifyTrigger
  }))
})

const compositeLogOf = (steps: ReadonlyArray<StageStep>, settings: PolicyReplay.CompositeSettings) =>
  turnLogOf(
    CompositeRoute.make({
      ...turnOptions,
      confidenceThreshold: settings.confidenceThreshold,
      capableHoldTurns: settings.capableHoldTurns ?? 0,
      classifier: {
        ...judgeOptions,
        ...settings.classifier,
        classifyTrigger: settings.classifier.classifyTrigger === "new_session" ? "new_session" : "user_turn"
      }
    }),
    steps
  )

describe("policy replay of composite routes", () => {
  it.effect.prop(
    "replaying a log under its own configuration reproduces every logged decision",
    { steps: FastCheck.array(stageStepArbitrary, { maxLength: 12 }), settings: compositeSettingsArbitrary },
    ({ settings, steps }) =>
      Effect.flatMap(
        compositeLogOf(steps, settings),
        (lines) => ReplayLog.assertReproduced(lines, PolicyReplay.composite(settings), steps.length)
      ),
    runs
  )

  it.effect("worked example: another base_threshold moves the fall-open tier, not the turns the signals decide", () =>
    Effect.gen(function*() {
      const logged: PolicyReplay.CompositeSettings = {
        confidenceThreshold: 0.5,
        capableHoldTurns: 0,
        classifier: { baseThreshold: 0.5, thresholdStep: 0, classifyTrigger: "user_turn", judgeFailure: "fail_open" }
      }
      const p = (value: number): CapabilityJudge => ({ _tag: "verdict", p: value, boundary: "supported" })
      const lines = yield* compositeLogOf([
        { session: "a", history: "quiet_turn", judge: p(0.6), tokens: 1 },
        { session: "a", history: "quiet_continuation", judge: p(0.6), tokens: 10 },
        { session: "a", history: "critical", judge: p(0.6), tokens: 100 },
        { session: "b", history: "quiet_turn", judge: { _tag: "transport" }, tokens: 1000 }
      ], logged)
      assert.deepStrictEqual(
        lines.flatMap((line) =>
          line.kind === "response"
            ? [[stageFactsOf(line)?.decision_source, line.evidence?.source ?? line.error, line.tier]]
            : []
        ),
        [
          ["llm-classifier", "llm-classifier", "efficient"], // p 0.6 >= 0.5
          ["llm-classifier", "affinity", "efficient"], // a continuation: the stored tier
          ["override", "affinity", "capable"], // the signals decide inside the turn
          ["fall_open", "fail-open", "efficient"] // no verdict, nothing stored: efficient
        ]
      )
      assert.isTrue(yield* ReplayLog.assertReproduced(lines, PolicyReplay.composite(logged), 4))
      const [report] = yield* PolicyReplay.replay(
        lines,
        new Map([[
          ReplayLog.routeId,
          PolicyReplay.composite({ ...logged, classifier: { ...logged.classifier, baseThreshold: 0.7 } })
        ]])
      )
      // p 0.6 < 0.7: the verdict is strong, so requests 1 and 2 go capable; 3 and 4 as logged
      assert.strictEqual(report?.kind, "composite")
      assert.deepStrictEqual(report?.replayed.routed, { capable: 3, efficient: 1 })
      assert.deepStrictEqual(report?.replayed.without_verdict, { transport: 1 })
      assert.strictEqual(report?.changed, 2)
    }))
})

describe("policy replay of escalation routes", () => {
  it.effect.prop(
    "replaying a log under its own configuration reproduces every logged decision",
    { steps: FastCheck.array(escalationStepArbitrary, { maxLength: 12 }), settings: escalationSettingsArbitrary },
    ({ settings, steps }) =>
      Effect.flatMap(
        escalationLogOf(steps, settings),
        (lines) => ReplayLog.assertReproduced(lines, PolicyReplay.escalation(settings), steps.length)
      ),
    runs
  )

  it.effect.prop(
    "with a deescalation table, replaying a log under its own configuration reproduces every logged decision",
    {
      steps: FastCheck.array(deescalationStepArbitrary, { maxLength: 24, size: "max" }),
      settings: deescalationSettingsArbitrary
    },
    ({ settings, steps }) =>
      Effect.flatMap(
        escalationLogOf(steps, settings),
        (lines) => ReplayLog.assertReproduced(lines, PolicyReplay.escalation(settings), steps.length)
      ),
    runs
  )

  it.effect("a session ended latched, then its weak target fails a request: the replay starts it afresh", () =>
    Effect.gen(function*() {
      const settings: PolicyReplay.EscalationSettings = { confirmations: 1, judgeFailure: "error" }
      const lines = yield* escalationLogOf([
        { session: "b", final: false, weak: "answer", judge: { _tag: "escalate" }, tokens: 1 },
        { session: "b", final: true, weak: "answer", judge: { _tag: "garbage" }, tokens: 1 },
        { session: "b", final: false, weak: "status_500", judge: { _tag: "refused" }, tokens: 1 }
      ], settings)
      const last = lines[lines.length - 1]
      assert.strictEqual(last?.kind, "response")
      if (last?.kind === "response") {
        // the route read the store (nothing: the session ended) before its weak call failed
        assert.deepStrictEqual(
          [last.evidence, last.error, last.tier, last.posture, last.stored_before],
          [null, "upstream_error", "weak", "error", null]
        )
      }
      assert.isTrue(yield* ReplayLog.assertReproduced(lines, PolicyReplay.escalation(settings), 3))
    }))

  it.effect("worked example: confirmations 2 → 1 latches earlier, 2 → 3 leaves latched turns unknown", () =>
    Effect.gen(function*() {
      const answer = (session: "a" | "b", judge: EscalationJudge, tokens: number, final = false): EscalationStep => ({
        session,
        final,
        weak: "answer",
        judge,
        tokens
      })
      const escalate = { _tag: "escalate" } as const
      const lines = yield* escalationLogOf([
        answer("a", { _tag: "decline" }, 10),
        answer("a", escalate, 20),
        answer("a", escalate, 30),
        answer("a", escalate, 40),
        answer("a", escalate, 50, true),
        answer("a", escalate, 60),
        { session: "b", final: false, weak: "overflow", judge: escalate, tokens: 70 },
        answer("b", { _tag: "transport" }, 80)
      ], { confirmations: 2, judgeFailure: "error" })
      const replayed = (settings: PolicyReplay.EscalationSettings) =>
        Effect.map(
          PolicyReplay.replay(lines, new Map([[ReplayLog.routeId, PolicyReplay.escalation(settings)]])),
          (reports) => reports[0]
        )
      // Logged (2 confirmations, error): 1 weak (decline); 2 weak (escalate, streak 1); 3 strong
      // (escalate, latches); 4 strong (latched); 5 strong (latched; the session ends); 6 weak
      // (escalate, streak 1 afresh); 7 strong (weak_failed); 8 failed (transport).
      const logged = {
        routed: { weak: 3, strong: 4 },
        failed: 1,
        unknown: 0,
        without_verdict: {},
        tokens: { weak: 90, strong: 190 }
      }
      // 1 confirmation, fail_open: 2 latches (strong), 3 strong (latched, not escalate), 4-5 as
      // logged, 6 latches afresh (strong), 7 as logged, 8 weak (fail-open, transport; no tokens).
      assert.deepStrictEqual(yield* replayed({ confirmations: 1, judgeFailure: "fail_open" }), {
        route: ReplayLog.routeId,
        kind: "escalation",
        requests: 8,
        other_algorithm: 0,
        logged,
        replayed: {
          routed: { weak: 2, strong: 6 },
          failed: 0,
          unknown: 0,
          without_verdict: { transport: 1 },
          tokens: { weak: 10, strong: 270 }
        },
        changed: 4,
        sessions_changed: 2
      })
      // 3 confirmations: 3 weak (escalate, streak 2); 4 and 5 were answered latched, with no weak
      // turn and no verdict: unknown; 6 weak (streak 1 afresh); the rest as logged.
      assert.deepStrictEqual(yield* replayed({ confirmations: 3, judgeFailure: "error" }), {
        route: ReplayLog.routeId,
        kind: "escalation",
        requests: 8,
        other_algorithm: 0,
        logged,
        replayed: {
          routed: { weak: 4, strong: 1 },
          failed: 1,
          unknown: 2,
          without_verdict: {},
          tokens: { weak: 120, strong: 70 }
        },
        changed: 3,
        sessions_changed: 1
      })
    }))
})
