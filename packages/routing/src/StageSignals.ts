/**
 * The stage router's signal scorer: what a coding agent's tool history says about where it is in
 * its run, and which tier (capable or efficient) that points to. Pure and deterministic; the route
 * (`StageRoute`) adds the classifier, the picker's default and the metrics.
 *
 * From a chat request's messages it reads the assistant tool calls (what each was doing: writing,
 * editing, reading, planning, or something else) and the tool results (how badly they failed, and
 * whether tests passed), over the trailing `recent_turn_window` of each, and projects them on four
 * dimensions:
 *
 * - `severity`: the worst failure among the window's tool results (0 clean, 0.3 a plain non-zero
 *   exit, 0.7 a hard error such as a traceback, 1 a critical one such as out-of-memory);
 * - `spinning` / `exploring`: on a deep conversation (at least 8 non-system messages) with no
 *   write or edit in the window, 1 when it neither reads nor plans (spinning) or when it does
 *   (exploring), else 0;
 * - `production_intensity`: the share of writes and edits among the window's categorised calls.
 *
 * The score is `tanh(5 × 0.1 × (severity / 0.7 + spinning + exploring − production_intensity))`:
 * positive points to capable, negative to efficient, and `confidence = |score|`. One full signal
 * alone gives about 0.46, so a threshold of 0.5 needs corroboration. Before the score, two hard
 * rules: a critical failure or a compacted context forces capable (`override`), and passing tests
 * after a write or edit with no failure in the window forces efficient (`tests_passed`). A score
 * whose confidence reaches the threshold decides (`dimensions`); otherwise the turn is ambiguous.
 *
 * This is the compatible system's scorer (same weights, windows, rules and signal vocabulary, so
 * thresholds calibrated there carry over), written for chat requests.
 */
import type { Message } from "@switchyard-ts/protocol/OpenAiChat"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"

/** The two tiers of a stage router. */
export type Tier = "capable" | "efficient"

/** `picker`: which tier a turn the signals leave undecided goes to. */
export type Picker = "efficient_first" | "capable_first"

/** The picker's default tier. */
export const defaultTier = (picker: Picker): Tier => (picker === "capable_first" ? "capable" : "efficient")

/** `recent_turn_window` when unset. */
export const defaultRecentTurnWindow = 3

/** What a conversation's tool history holds. */
export interface Signals {
  /** The worst failure among the trailing window of tool results: 0, 0.3, 0.7 or 1. */
  readonly severity: number
  /** A tool result of the window reports passing tests and no failure. */
  readonly testsPassed: boolean
  /** The conversation carries a context-compaction summary. */
  readonly compacted: boolean
  /** Non-system messages: a proxy for how deep into its run the agent is. */
  readonly turnDepth: number
  /** Categorised tool calls among the trailing window of tool calls. */
  readonly recentWrites: number
  readonly recentEdits: number
  readonly recentReads: number
  readonly recentPlans: number
}

/** The scorer's four inputs, each in [0, 1]. */
export interface Dimensions {
  readonly severity: number
  readonly spinning: number
  readonly exploring: number
  readonly production_intensity: number
}

/** A turn the signals decided, or one they left to the classifier and the picker's default. */
export type Pick =
  | {
    readonly _tag: "Decided"
    readonly tier: Tier
    readonly source: "override" | "tests_passed" | "dimensions"
    readonly score: number
    readonly confidence: number
  }
  | { readonly _tag: "Ambiguous"; readonly score: number; readonly confidence: number }

// ---------------------------------------------------------------------------------------------
// Vocabulary (lower-cased substrings and tool names)
// ---------------------------------------------------------------------------------------------

const critical = 1
const hard = 0.7
const soft = 0.3

/** Failure markers by severity, worst first. */
const failureMarkers: ReadonlyArray<readonly [number, ReadonlyArray<string>]> = [
  [critical, [
    "out of memory",
    "memoryerror",
    "cannot allocate memory",
    "connection refused",
    "connectionrefusederror",
    "econnrefused"
  ]],
  [hard, [
    "traceback (most recent call last)",
    "modulenotfounderror:",
    "importerror:",
    "no module named ",
    "command not found",
    "not found\n",
    "/usr/bin/env: ",
    "assertionerror",
    "valueerror:",
    "syntaxerror:",
    "timed out",
    "timeouterror",
    "timeout expired",
    "deadline exceeded",
    "filenotfounderror:",
    "no such file or directory",
    "file does not exist"
  ]],
  [soft, ["exit code 1", "exit code 2", "exit status 1", "returned non-zero", "exited with code"]]
]

type Activity = "write" | "edit" | "read" | "plan" | "other"

const toolsByActivity: ReadonlyArray<readonly [Activity, ReadonlyArray<string>]> = [
  ["write", ["write", "create_file", "new_file", "write_file"]],
  ["edit", ["edit", "multiedit", "notebookedit", "str_replace", "str_replace_based_edit_tool", "text_editor", "patch"]],
  ["read", ["read", "view", "read_file", "search_files"]],
  ["plan", ["todowrite", "todo_write", "todo", "update_plan"]]
]

/** Tools whose `command` argument is a shell command line, categorised by what it does. */
const shellTools = ["bash", "shell_command", "shell", "local_shell_call", "terminal"]

/** Shell command fragments by activity; redirection and in-place edits win over reading. */
const commandsByActivity: ReadonlyArray<readonly [Activity, ReadonlyArray<string>]> = [
  ["write", ["cat >", "echo >", "tee ", "printf >", "> /", "<<eof", "<< eof", "<<'eof'", "<< 'eof'"]],
  ["edit", [
    "sed -i",
    "sed --in-place",
    "awk -i inplace",
    "awk 'inplace=1'",
    "patch ",
    "perl -i",
    "perl -p -i",
    "perl -pi"
  ]],
  ["read", [
    "cat /",
    "cat ./",
    "cat ../",
    "grep ",
    "ls ",
    "find ",
    "head ",
    "tail ",
    "wc ",
    "diff ",
    "which ",
    "ps ",
    "df ",
    "du ",
    "stat ",
    "file ",
    "less ",
    "more "
  ]]
]

/** Phrases of a passing test run (false negatives are preferred: a pass drops the tier). */
const passPhrases = [" passed", "passed in", "passed.\n", "test ok", "test result: ok", "tests pass", "\nok ", "✓ "]
/** Phrases that never appear in a clean run. */
const failurePhrases = ["✗ ", "fatal:", "assertionerror", "error:"]
/** A non-zero count of failures or errors ("0 failed" is a clean summary). */
const failureCount = /(\d+)\s*(?:failed|failures|failure|errors|error)(?![a-z0-9])/g

/** The Claude Code preamble of a compacted context. */
const compactionMarker = "session is being continued"

/** Deep enough that a run without writes is a stall rather than early exploration. */
const stallDepth = 8
/** Weight of one full signal, and the gain before the squash. */
const signalUnit = 0.1
const gain = 5

// ---------------------------------------------------------------------------------------------
// Extraction
// ---------------------------------------------------------------------------------------------

/** The severity of one tool result's text. */
export const severityOf = (text: string): number => {
  const lower = text.toLowerCase()
  for (const [severity, markers] of failureMarkers) {
    if (markers.some((marker) => lower.includes(marker))) return severity
  }
  return 0
}

const hasFailureCount = (lower: string): boolean => {
  for (const match of lower.matchAll(failureCount)) {
    if (/[1-9]/.test(match[1] ?? "")) return true
  }
  return false
}

/** Whether one tool result's text reports passing tests (and nothing failing). */
export const reportsPass = (text: string): boolean => {
  const lower = text.toLowerCase()
  return passPhrases.some((phrase) => lower.includes(phrase)) &&
    !failurePhrases.some((phrase) => lower.includes(phrase)) &&
    !hasFailureCount(lower)
}

const CommandArgument = Schema.parseJson(Schema.Struct({ command: Schema.String }))
const decodeCommand = Schema.decodeUnknownOption(CommandArgument)

/** What one tool call was doing, from its name and (for shell tools) its `command` argument. */
export const activityOf = (name: string, argumentsJson: string): Activity => {
  const lower = name.toLowerCase()
  for (const [activity, names] of toolsByActivity) if (names.includes(lower)) return activity
  if (!shellTools.includes(lower)) return "other"
  return Option.match(decodeCommand(argumentsJson), {
    onNone: (): Activity => "other",
    onSome: ({ command }) => {
      const line = command.toLowerCase()
      for (const [activity, fragments] of commandsByActivity) {
        if (fragments.some((fragment) => line.includes(fragment))) return activity
      }
      return "other"
    }
  })
}

const textParts = (content: Message["content"]): ReadonlyArray<string> => {
  if (content === undefined || content === null) return []
  if (typeof content === "string") return [content]
  return content.flatMap((part) => (part.type === "text" && "text" in part ? [part.text] : []))
}

/** The signals of a conversation, over the trailing `window` tool calls and tool results. */
export const signalsOf = (messages: ReadonlyArray<Message>, window: number): Signals => {
  const results: Array<string> = []
  const calls: Array<Activity> = []
  let compacted = false
  let turnDepth = 0
  for (const message of messages) {
    if (message.role === "system" || message.role === "developer") continue
    turnDepth++
    if (message.role === "tool") {
      const text = textParts(message.content).join("\n")
      if (text !== "") results.push(text)
      continue
    }
    if (message.role === "user" || message.role === "assistant") {
      compacted ||= textParts(message.content).some((text) => text.toLowerCase().includes(compactionMarker))
    }
    if (message.role === "assistant") {
      for (const call of message.tool_calls ?? []) {
        calls.push(
          call.type === "function"
            ? activityOf(call.function.name, call.function.arguments)
            : activityOf(call.custom.name, "")
        )
      }
    }
  }
  // Failures and passes persist for at least the last result; call counts use the window as given.
  const recentResults = results.slice(Math.max(0, results.length - Math.max(window, 1)))
  const recentCalls = window === 0 ? [] : calls.slice(Math.max(0, calls.length - window))
  const count = (activity: Activity) => recentCalls.filter((call) => call === activity).length
  return {
    severity: recentResults.reduce((worst, text) => Math.max(worst, severityOf(text)), 0),
    testsPassed: recentResults.some(reportsPass),
    compacted,
    turnDepth,
    recentWrites: count("write"),
    recentEdits: count("edit"),
    recentReads: count("read"),
    recentPlans: count("plan")
  }
}

// ---------------------------------------------------------------------------------------------
// Scoring and picking
// ---------------------------------------------------------------------------------------------

/** The four dimensions of a conversation's signals. */
export const dimensionsOf = (signals: Signals): Dimensions => {
  const produced = signals.recentWrites + signals.recentEdits
  const categorised = produced + signals.recentReads + signals.recentPlans
  const stalled = signals.turnDepth >= stallDepth && produced === 0
  const investigating = signals.recentReads > 0 || signals.recentPlans > 0
  return {
    severity: signals.severity,
    spinning: stalled && !investigating ? 1 : 0,
    exploring: stalled && investigating ? 1 : 0,
    production_intensity: categorised === 0 ? 0 : produced / categorised
  }
}

/** The signed score in (-1, 1) of a turn's dimensions (positive: capable) and its confidence. */
export const scoreOf = (d: Dimensions): { readonly score: number; readonly confidence: number } => {
  const raw = signalUnit * (d.severity / hard + d.spinning + d.exploring - d.production_intensity)
  const score = Math.tanh(gain * raw)
  return { score, confidence: Math.abs(score) }
}

/**
 * What a turn's signals say before any threshold, first rule that fires: a critical failure or
 * compaction (`Override`); tests passing after a write or edit with no failure (`TestsPassed`);
 * else the scorer's signed score and confidence (`Scored`). A routing log keeps it (the stage facts'
 * decision source, score and confidence), so policy replay reads it back.
 */
export type Reading =
  | { readonly _tag: "Override" }
  | { readonly _tag: "TestsPassed" }
  | { readonly _tag: "Scored"; readonly score: number; readonly confidence: number }

/** The reading of a conversation's signals. */
export const readingOf = (signals: Signals): Reading => {
  if (signals.compacted || signals.severity >= critical) return { _tag: "Override" }
  if (signals.testsPassed && signals.recentWrites + signals.recentEdits > 0 && signals.severity <= 0) {
    return { _tag: "TestsPassed" }
  }
  const { confidence, score } = scoreOf(dimensionsOf(signals))
  return { _tag: "Scored", score, confidence }
}

/**
 * The tier a reading picks under `confidenceThreshold`: an override → capable (`override`, score 0,
 * confidence 1); tests passed → efficient (`tests_passed`, score 0, confidence 0); a score whose
 * confidence reaches the threshold → its sign's tier (`dimensions`); else `Ambiguous`.
 */
export const decide = (reading: Reading, confidenceThreshold: number): Pick => {
  switch (reading._tag) {
    case "Override":
      return { _tag: "Decided", tier: "capable", source: "override", score: 0, confidence: 1 }
    case "TestsPassed":
      return { _tag: "Decided", tier: "efficient", source: "tests_passed", score: 0, confidence: 0 }
    case "Scored": {
      const { confidence, score } = reading
      return confidence >= confidenceThreshold
        ? { _tag: "Decided", tier: score > 0 ? "capable" : "efficient", source: "dimensions", score, confidence }
        : { _tag: "Ambiguous", score, confidence }
    }
  }
}

/** The tier a turn's signals pick under `confidenceThreshold` ({@link decide} of their {@link readingOf}). */
export const pick = (signals: Signals, confidenceThreshold: number): Pick =>
  decide(readingOf(signals), confidenceThreshold)
