/**
 * The replay scenarios of the judge-using route types other than capability (`replayLog.ts` has
 * it): per route type, schedules of requests (steps), the settings a replay changes, the route those
 * settings build, the routing log of a schedule through it, and its replayer. Shared by the replay
 * tests of each route type and the differential replay test.
 */
import type { Message } from "@switchyard-ts/protocol/OpenAiChat"
import * as AdvisorRoute from "@switchyard-ts/routing/AdvisorRoute"
import * as CompositeRoute from "@switchyard-ts/routing/CompositeRoute"
import * as CustomRoute from "@switchyard-ts/routing/CustomRoute"
import * as EscalationRoute from "@switchyard-ts/routing/EscalationRoute"
import * as JsonPointer from "@switchyard-ts/routing/JsonPointer"
import * as JsonSchema from "@switchyard-ts/routing/JsonSchema"
import * as StageRoute from "@switchyard-ts/routing/StageRoute"
import * as PolicyReplay from "@switchyard-ts/server/PolicyReplay"
import type * as RoutingLog from "@switchyard-ts/server/RoutingLog"
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

export const sessionArbitrary = FastCheck.constantFrom("a" as const, "b" as const, null)
export const tokensArbitrary = FastCheck.constantFrom(1, 10, 100)
export const runs = { fastCheck: { numRuns: 150 } }

export const ask: Message = { role: "user", content: "fix the build" }
export const toolCall = (id: string, name: string, args: string): Message => ({
  role: "assistant",
  content: null,
  tool_calls: [{ id, type: "function", function: { name, arguments: args } }]
})
export const toolResult = (id: string, text: string): Message => ({ role: "tool", tool_call_id: id, content: text })

/** A user turn, or a tool continuation (`classify_trigger = "user_turn"` reuses a stored decision on it). */
export const turnOf = (userTurn: boolean): ReadonlyArray<Message> =>
  userTurn ? [ask] : [ask, toolCall("c1", "lookup", "{}"), toolResult("c1", "nothing to report")]

// ---------------------------------------------------------------------------------------------
// Custom classifier routes

export const labels = ["alpha", "beta", "gamma"] as const
export type Label = (typeof labels)[number]
export const customTarget = (label: Label) => target(label, `${label}-model`)
export const customTargets = labels.map(customTarget)

/** What a custom judge does: name a label at `/route` (`delta` is configured nowhere), name none, or fail. */
export type CustomJudge =
  | { readonly _tag: "label"; readonly label: "alpha" | "beta" | "gamma" | "delta" }
  | { readonly _tag: "none" }
  | Failure

export interface CustomStep {
  readonly session: "a" | "b" | null
  readonly userTurn: boolean
  readonly judge: CustomJudge
  readonly tokens: number
}

export const customStepArbitrary: FastCheck.Arbitrary<CustomStep> = FastCheck.record({
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

export interface CustomLogged {
  readonly defaultLabel: Label
  readonly classifyTrigger: CustomRoute.Options["classifyTrigger"]
  readonly judgeFailure: CustomRoute.Options["judgeFailure"]
  /** The group form: each label a group whose first target is another label's (see {@link groupsOf}). */
  readonly grouped?: boolean
}

export const customSettingsArbitrary: FastCheck.Arbitrary<CustomLogged> = FastCheck.record({
  defaultLabel: FastCheck.constantFrom(...labels),
  classifyTrigger: FastCheck.constantFrom("every_request" as const, "user_turn" as const, "new_session" as const),
  judgeFailure: FastCheck.constantFrom("error" as const, "fail_open" as const),
  grouped: FastCheck.boolean()
})

/** In the group form, the group a label names is served first by this label's target. */
export const servedFirst: Readonly<Record<Label, Label>> = { alpha: "gamma", beta: "alpha", gamma: "beta" }

/** The group form of `settings` (each group: its first target, then the others), if grouped. */
export const groupsOf = (settings: CustomLogged) =>
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

export const customDefault = (settings: CustomLogged) =>
  customTarget(settings.grouped === true ? servedFirst[settings.defaultLabel] : settings.defaultLabel)

export const responseSchema = {
  type: "object",
  properties: { route: { type: "string" } },
  required: [],
  additionalProperties: false
} as const

export const customReply = (judge: CustomJudge): Reply =>
  judge._tag === "label"
    ? { _tag: "text", text: JSON.stringify({ route: judge.label }) }
    : judge._tag === "none"
    ? { _tag: "text", text: "{}" }
    : failureReply(judge)

/** A custom route over `targets` under `settings`. */
export const customOptions = (settings: CustomLogged, targets = customTargets): CustomRoute.Options => ({
  id: ReplayLog.routeId,
  name: ReplayLog.routeId,
  judge: judgeTarget,
  prompt: "Name the target for this conversation.",
  responseSchema,
  compiledSchema: Either.getOrThrow(JsonSchema.compile(responseSchema)),
  maxOutputTokens: 64,
  recentTurnWindow: Option.none(),
  targets,
  defaultTarget: customDefault(settings),
  ...groupsOf(settings),
  selector: Either.getOrThrow(JsonPointer.parse("/route")),
  classifyTrigger: settings.classifyTrigger,
  messageHashFallback: false,
  judgeFailure: settings.judgeFailure
})

export const customLogOf = (steps: ReadonlyArray<CustomStep>, settings: CustomLogged) =>
  ReplayLog.logOf(
    CustomRoute.make(customOptions(settings)),
    steps,
    (step) => ({ session: step.session, messages: turnOf(step.userTurn), tokens: step.tokens }),
    (step) => customReply(step.judge)
  )

export const customReplayer = (settings: CustomLogged, targets = customTargets) =>
  PolicyReplay.replayerOf(CustomRoute.replayable(customOptions(settings, targets)))

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
export const histories = {
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
export type History = keyof typeof histories
export const historyNames: ReadonlyArray<History> = [
  "critical",
  "settled",
  "spinning",
  "hard_error",
  "writing",
  "quiet_turn",
  "quiet_continuation",
  "user_after_read"
]

export interface StageStep {
  readonly session: "a" | "b" | null
  readonly history: History
  readonly judge: CapabilityJudge
  readonly tokens: number
}

export const stageStepArbitrary: FastCheck.Arbitrary<StageStep> = FastCheck.record({
  session: sessionArbitrary,
  // the ambiguous user turns twice as often: the classifier's session rules (user_turn consults on them)
  history: FastCheck.constantFrom(...historyNames, "quiet_turn", "user_after_read"),
  judge: capabilityJudgeArbitrary,
  tokens: tokensArbitrary
})

/** The settings of a stage router that a replay changes. */
export interface StageSettings {
  readonly picker: StageRoute.Options["picker"]
  readonly confidenceThreshold: number
  readonly capableHoldTurns?: number
  /** The `[classifier]` table's settings; none: undecided turns go to the picker's default. */
  readonly classifier: ReplayLog.CapabilitySettings | undefined
}

export const stageSettingsArbitrary: FastCheck.Arbitrary<StageSettings> = FastCheck.record({
  picker: FastCheck.constantFrom("efficient_first" as const, "capable_first" as const),
  confidenceThreshold: FastCheck.constantFrom(0.3, 0.5, 0.8),
  classifier: FastCheck.option(capabilitySettingsArbitrary, { nil: undefined, freq: 4 })
})

/** A stage route's turn over the capable and efficient targets, without prompts or notes. */
export const turnOptions = {
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
export const judgeOptions = {
  judge: judgeTarget,
  prompt: Option.none(),
  responseFormatType: "json_schema",
  maxOutputTokens: 64,
  recentTurnWindow: Option.none(),
  messageHashFallback: false
} as const

/** Route `steps` through a stage route `build` makes; the log's lines. */
export const turnLogOf = (
  build: Parameters<typeof ReplayLog.logOf>[0],
  steps: ReadonlyArray<StageStep>
) =>
  ReplayLog.logOf(
    build,
    steps,
    (step) => ({ session: step.session, messages: histories[step.history], tokens: step.tokens }),
    (step) => capabilityJudgeReply(step.judge)
  )

/** A stage router under `settings`. */
export const stageOptions = (settings: StageSettings): StageRoute.Options => ({
  ...turnOptions,
  ...(settings.capableHoldTurns === undefined ? {} : { capableHoldTurns: settings.capableHoldTurns }),
  picker: settings.picker,
  confidenceThreshold: settings.confidenceThreshold,
  classifier: Option.map(Option.fromNullable(settings.classifier), (classifier) => ({
    ...judgeOptions,
    ...classifier
  }))
})

export const stageLogOf = (steps: ReadonlyArray<StageStep>, settings: StageSettings) =>
  turnLogOf(StageRoute.make(stageOptions(settings)), steps)

export const stageReplayer = (settings: StageSettings) =>
  PolicyReplay.replayerOf(StageRoute.replayable(stageOptions(settings)))

/** The stage facts of a stage router's response line: its evidence's, else the line's own (a failed request). */
export const stageFactsOf = (line: RoutingLog.Line) =>
  line.kind !== "response"
    ? undefined
    : line.evidence !== null && "stage" in line.evidence
    ? line.evidence.stage
    : line.stage

// ---------------------------------------------------------------------------------------------
// Escalation routes

/** What the weak target does: answer, fail over to strong (transport, context overflow), or fail the request. */
export type Weak = "answer" | "transport" | "overflow" | "status_500" | "refused"

/** A verdict's optional category and fresh-evidence flag (absent: an older judge's verdict). */
export interface VerdictFacts {
  readonly category?: "drift" | "repetition"
  readonly fresh?: boolean
}

export type EscalationJudge =
  | { readonly _tag: "escalate" } & VerdictFacts
  | { readonly _tag: "decline" } & VerdictFacts
  | Failure

export interface EscalationStep {
  readonly session: "a" | "b" | null
  readonly final: boolean
  readonly weak: Weak
  readonly judge: EscalationJudge
  readonly tokens: number
  /** What the strong target does when the route calls it (a judged strong turn); absent: it answers. */
  readonly strong?: Weak
}

export const escalationStepArbitrary: FastCheck.Arbitrary<EscalationStep> = FastCheck.record({
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

/** The settings of an escalation route that a replay changes. */
export type EscalationSettings = Pick<EscalationRoute.Options, "confirmations" | "deescalation" | "judgeFailure">

export const escalationSettingsArbitrary: FastCheck.Arbitrary<EscalationSettings> = FastCheck.record({
  confirmations: FastCheck.integer({ min: 1, max: 3 }),
  judgeFailure: FastCheck.constantFrom("error" as const, "fail_open" as const)
})

export const verdictFactsArbitrary: FastCheck.Arbitrary<VerdictFacts> = FastCheck.record({
  category: FastCheck.constantFrom("drift" as const, "repetition" as const),
  fresh: FastCheck.constantFrom(true, true, true, false)
}, { requiredKeys: [] })

/** Steps of de-escalating routes: verdicts with categories and fresh-evidence flags, strong-target failures. */
export const deescalationStepArbitrary: FastCheck.Arbitrary<EscalationStep> = FastCheck.record({
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
export const deescalationSettingsArbitrary: FastCheck.Arbitrary<EscalationSettings> = FastCheck.record({
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

export const weakReply = (weak: Weak): Reply => {
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

export const escalationJudgeReply = (judge: EscalationJudge): Reply =>
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

export const strongTarget = target("strong", "strong-model")

export const weakTarget = target("weak", "weak-model")

/** An escalation route under `settings`. */
export const escalationOptions = (settings: EscalationSettings): EscalationRoute.Options => ({
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
})

export const escalationReplayer = (settings: EscalationSettings) =>
  PolicyReplay.replayerOf(EscalationRoute.replayable(escalationOptions(settings)))

export const escalationLogOf = (steps: ReadonlyArray<EscalationStep>, settings: EscalationSettings) =>
  ReplayLog.logOf(
    EscalationRoute.make(escalationOptions(settings)),
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
// Composite routes

/** The settings of a composite route that a replay changes: its `[stage]` thresholds and its `[classifier]`. */
export interface CompositeSettings {
  readonly confidenceThreshold: number
  readonly capableHoldTurns?: number
  readonly classifier: ReplayLog.CapabilitySettings
}

export const compositeSettingsArbitrary: FastCheck.Arbitrary<CompositeSettings> = FastCheck.record({
  confidenceThreshold: FastCheck.constantFrom(0.3, 0.5, 0.8),
  capableHoldTurns: FastCheck.constantFrom(0, 1, 2),
  classifier: capabilitySettingsArbitrary.map((settings) => ({
    ...settings,
    classifyTrigger: settings.classifyTrigger === "every_request" ? "user_turn" as const : settings.classifyTrigger
  }))
})

/** A composite route under `settings`. */
export const compositeOptions = (settings: CompositeSettings): CompositeRoute.Options => ({
  ...turnOptions,
  confidenceThreshold: settings.confidenceThreshold,
  capableHoldTurns: settings.capableHoldTurns ?? 0,
  classifier: {
    ...judgeOptions,
    ...settings.classifier,
    classifyTrigger: settings.classifier.classifyTrigger === "new_session" ? "new_session" : "user_turn"
  }
})

export const compositeLogOf = (steps: ReadonlyArray<StageStep>, settings: CompositeSettings) =>
  turnLogOf(CompositeRoute.make(compositeOptions(settings)), steps)

export const compositeReplayer = (settings: CompositeSettings) =>
  PolicyReplay.replayerOf(CompositeRoute.replayable(compositeOptions(settings)))

// ---------------------------------------------------------------------------------------------
// Advisor routes

export const advisorExecutor = ReplayLog.target("exec", "exec-model")
export const advisorTarget = ReplayLog.target("advisor", "advisor-model")

/** What the advisorExecutor does: a turn that ends the work (`done`: triggers the gate), one that does not, a failure. */
export type AdvisorTurn = "done" | "working" | "fail"
/** What the advisor answers. */
export type Advice = "approve" | "redo" | "garbage" | "invalid" | "transport" | "500" | "refused"

export interface AdvisorStep {
  readonly session: "a" | "b" | null
  readonly final: boolean
  readonly turn: AdvisorTurn
  /** The advisorExecutor's second answer after a REDO. */
  readonly again: "ok" | "fail"
  readonly advice: Advice
}

export const advisorStepArbitrary: FastCheck.Arbitrary<AdvisorStep> = FastCheck.record({
  session: FastCheck.constantFrom("a" as const, "b" as const, null),
  final: FastCheck.constantFrom(false, false, true),
  turn: FastCheck.constantFrom("done" as const, "done" as const, "working" as const, "fail" as const),
  again: FastCheck.constantFrom("ok" as const, "ok" as const, "fail" as const),
  advice: FastCheck.constantFrom(
    "approve" as const,
    "redo" as const,
    "garbage" as const,
    "invalid" as const,
    "transport" as const,
    "500" as const,
    "refused" as const
  )
})

/** The settings of an advisor route that a replay changes. */
export type AdvisorSettings = Pick<AdvisorRoute.Options, "maxReviews" | "failOpen">

export const advisorSettingsArbitrary: FastCheck.Arbitrary<AdvisorSettings> = FastCheck.record({
  failOpen: FastCheck.boolean(),
  maxReviews: FastCheck.constantFrom(1, 2, 3)
})

export const advisorOptions = (settings: AdvisorSettings): AdvisorRoute.Options => ({
  id: ReplayLog.routeId,
  name: ReplayLog.routeId,
  executor: advisorExecutor,
  advisor: advisorTarget,
  reviewerSystemPrompt: Option.none(),
  advisorMaxTokens: 64,
  advisorTemperature: Option.none(),
  transcriptMaxChars: 2_000,
  gateTrigger: "pattern",
  gateTriggerPattern: Option.some(/DONE/),
  gateStallTurns: 0,
  gateMinToolResults: 0,
  redoFeedbackPrefix: Option.none(),
  ...settings
})

export const advisorRoute = (settings: AdvisorSettings) => AdvisorRoute.make(advisorOptions(settings))

export const advisorReplayer = (settings: AdvisorSettings) =>
  PolicyReplay.replayerOf(AdvisorRoute.replayable(advisorOptions(settings)))

export const adviceReply = (advice: Advice): ReplayLog.Reply => {
  switch (advice) {
    case "approve":
      return { _tag: "text", text: "APPROVE" }
    case "redo":
      return { _tag: "text", text: "REDO: add a test first" }
    case "garbage":
      return { _tag: "text", text: "hmm, not sure" }
    case "invalid":
      return { _tag: "invalid" }
    case "transport":
      return { _tag: "transport" }
    case "500":
      return { _tag: "status", status: 500 }
    case "refused":
      return { _tag: "refused" }
  }
}

/** The log of `steps` through the real advisor route under `settings`. */
export const advisorLogOf = (steps: ReadonlyArray<AdvisorStep>, settings: AdvisorSettings) => {
  // The advisorExecutor's first call of a step answers `turn`, a second (after a REDO) answers `again`.
  let executorCalls = 0
  let current: AdvisorStep | undefined
  return ReplayLog.logOf(
    advisorRoute(settings),
    steps,
    (step) => {
      current = step
      executorCalls = 0
      return {
        session: step.session,
        final: step.final,
        messages: [{ role: "user", content: "fix the pager" }],
        tokens: 100
      }
    },
    (step, called): ReplayLog.Reply => {
      if (called !== advisorExecutor.id) return adviceReply(step.advice)
      executorCalls += current === step ? 1 : 0
      if (executorCalls > 1) {
        return step.again === "ok"
          ? { _tag: "text", text: "DONE, with a test" }
          : { _tag: "transport" }
      }
      return step.turn === "fail"
        ? { _tag: "status", status: 500 }
        : { _tag: "text", text: step.turn === "done" ? "DONE: fixed" : "still working" }
    }
  )
}
