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
 * rules: a critical failure, a repeated failure (the same call failing twice in a row) or a
 * compacted context forces capable (`override`, with its reason), and passing tests after a write
 * or edit with no failure in the window forces efficient (`tests_passed`). A score whose confidence
 * reaches the threshold decides (`dimensions`); otherwise the turn is ambiguous.
 *
 * A route may extend the tool vocabulary (`tool_semantics`, {@link ToolSemantics}): exact tool
 * names, ASCII case-insensitive, counted as reads (`observe`), writes (`mutate`), plans (`plan`), or
 * as forward activity that keeps a deep run from reading as `spinning` / `exploring` without
 * favouring a tier (`new`). The built-in names are not reclassified.
 *
 * {@link hold} is the capable hold (`capable_hold_turns`): after a signal-driven escalation the
 * next turns of the session stay capable, a clean test pass ends it early.
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
  /** Calls of `tool_semantics.new` tools among the trailing window of tool calls. */
  readonly recentNew: number
  /** The two latest tool results both report a failure and answer the same call (tool name and arguments). */
  readonly repeatedFailure: boolean
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

type Activity = "write" | "edit" | "read" | "plan" | "new" | "other"

/**
 * A route's `tool_semantics`: exact tool names (matched ASCII case-insensitively) added to the
 * built-in vocabulary. `observe` tools count as reads, `mutate` as writes, `plan` as plans, `new` as
 * forward activity that is neither (it keeps a deep run from reading as a stall).
 */
export interface ToolSemantics {
  readonly observe: ReadonlyArray<string>
  readonly mutate: ReadonlyArray<string>
  readonly plan: ReadonlyArray<string>
  readonly new: ReadonlyArray<string>
}

/** No added tool names (the default). */
export const emptyToolSemantics: ToolSemantics = { observe: [], mutate: [], plan: [], new: [] }

/** `capable_hold_turns` when unset. */
export const defaultCapableHoldTurns = 2

const toolsByActivity: ReadonlyArray<readonly [Activity, ReadonlyArray<string>]> = [
  ["write", ["write", "create_file", "new_file", "write_file"]],
  ["edit", ["edit", "multiedit", "notebookedit", "str_replace", "str_replace_based_edit_tool", "text_editor", "patch"]],
  ["read", ["read", "view", "read_file", "search_files"]],
  ["plan", ["todowrite", "todo_write", "todo", "update_plan"]]
]

/** Tools whose `command` argument is a shell command line, categorised by what it does. */
const shellTools = ["bash", "shell_command", "shell", "local_shell_call", "terminal"]

/**
 * The tool names of the built-in vocabulary (lower case): the named writes, edits, reads and plans,
 * and the shell tools categorised by their command. `tool_semantics` cannot reclassify them.
 */
export const builtInToolNames: ReadonlySet<string> = new Set([
  ...toolsByActivity.flatMap(([, names]) => names),
  ...shellTools
])

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

const semanticActivities: ReadonlyArray<readonly [keyof ToolSemantics, Activity]> = [
  ["observe", "read"],
  ["mutate", "write"],
  ["plan", "plan"],
  ["new", "new"]
]

/** ASCII lower case (tool names match without regard to ASCII case only). */
const asciiLower = (name: string): string => name.replace(/[A-Z]/g, (c) => c.toLowerCase())

/**
 * What one tool call was doing, from its name and (for shell tools) its `command` argument; a name
 * the built-in vocabulary does not know is looked up in the route's `semantics`.
 */
export const activityOf = (
  name: string,
  argumentsJson: string,
  semantics: ToolSemantics = emptyToolSemantics
): Activity => {
  const lower = name.toLowerCase()
  for (const [activity, names] of toolsByActivity) if (names.includes(lower)) return activity
  if (!shellTools.includes(lower)) {
    const ascii = asciiLower(name)
    for (const [key, activity] of semanticActivities) {
      if (semantics[key].some((configured) => asciiLower(configured) === ascii)) return activity
    }
    return "other"
  }
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

/** One tool call as the signals read it: what it was doing, and what identifies a repeat of it. */
interface Call {
  readonly activity: Activity
  readonly id: string
  readonly fingerprint: string
}

/** One tool result: its text and the call it answers. */
interface Result {
  readonly text: string
  readonly callId: string
}

/** Whether the two latest results both failed and answer the same call (tool name and arguments). */
const repeatedFailureOf = (results: ReadonlyArray<Result>, calls: ReadonlyArray<Call>): boolean => {
  const [previous, last] = results.slice(-2)
  if (previous === undefined || last === undefined) return false
  if (severityOf(previous.text) <= 0 || severityOf(last.text) <= 0) return false
  const callOf = (result: Result) => calls.find((call) => call.id === result.callId)
  const a = callOf(previous)
  const b = callOf(last)
  return a !== undefined && b !== undefined && a !== b && a.fingerprint === b.fingerprint
}

/**
 * The signals of a conversation, over the trailing `window` tool calls and tool results, with the
 * route's `semantics` added to the tool vocabulary.
 */
export const signalsOf = (
  messages: ReadonlyArray<Message>,
  window: number,
  semantics: ToolSemantics = emptyToolSemantics
): Signals => {
  const results: Array<Result> = []
  const calls: Array<Call> = []
  let compacted = false
  let turnDepth = 0
  for (const message of messages) {
    if (message.role === "system" || message.role === "developer") continue
    turnDepth++
    if (message.role === "tool") {
      const text = textParts(message.content).join("\n")
      if (text !== "") results.push({ text, callId: message.tool_call_id })
      continue
    }
    if (message.role === "user" || message.role === "assistant") {
      compacted ||= textParts(message.content).some((text) => text.toLowerCase().includes(compactionMarker))
    }
    if (message.role === "assistant") {
      for (const call of message.tool_calls ?? []) {
        const [name, args] = call.type === "function"
          ? [call.function.name, call.function.arguments]
          : [call.custom.name, ""]
        calls.push({
          activity: activityOf(name, args, semantics),
          id: call.id,
          fingerprint: JSON.stringify([name, args])
        })
      }
    }
  }
  // Failures and passes persist for at least the last result; call counts use the window as given.
  const recentResults = results.slice(Math.max(0, results.length - Math.max(window, 1))).map((r) => r.text)
  const recentCalls = window === 0 ? [] : calls.slice(Math.max(0, calls.length - window))
  const count = (activity: Activity) => recentCalls.filter((call) => call.activity === activity).length
  return {
    severity: recentResults.reduce((worst, text) => Math.max(worst, severityOf(text)), 0),
    testsPassed: recentResults.some(reportsPass),
    compacted,
    turnDepth,
    recentWrites: count("write"),
    recentEdits: count("edit"),
    recentReads: count("read"),
    recentPlans: count("plan"),
    recentNew: count("new"),
    repeatedFailure: repeatedFailureOf(results, calls)
  }
}

// ---------------------------------------------------------------------------------------------
// Scoring and picking
// ---------------------------------------------------------------------------------------------

/** The four dimensions of a conversation's signals. */
export const dimensionsOf = (signals: Signals): Dimensions => {
  const produced = signals.recentWrites + signals.recentEdits
  const categorised = produced + signals.recentReads + signals.recentPlans
  // forward activity (`tool_semantics.new`) is not a stall
  const stalled = signals.turnDepth >= stallDepth && produced === 0 && signals.recentNew === 0
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

/** Why a turn's signals forced the capable tier (the stage facts' `override_reason`). */
export type OverrideReason = "repeated_failure" | "critical_error" | "compaction"

/**
 * What a turn's signals say before any threshold, first rule that fires: a critical failure, a
 * repeated failure or compaction (`Override`, with its reason); tests passing after a write or edit
 * with no failure (`TestsPassed`); else the scorer's signed score and confidence (`Scored`). A
 * routing log keeps it (the stage facts' decision source, override reason, score and confidence),
 * so policy replay reads it back.
 */
export type Reading =
  | { readonly _tag: "Override"; readonly reason: OverrideReason }
  | { readonly _tag: "TestsPassed" }
  | { readonly _tag: "Scored"; readonly score: number; readonly confidence: number }

/** The reading of a conversation's signals. */
export const readingOf = (signals: Signals): Reading => {
  if (signals.severity >= critical) return { _tag: "Override", reason: "critical_error" }
  if (signals.repeatedFailure) return { _tag: "Override", reason: "repeated_failure" }
  if (signals.compacted) return { _tag: "Override", reason: "compaction" }
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

/** A stage router turn's tier and decision source after the capable hold, and the hold it leaves. */
export interface Held {
  readonly pick: Pick | { readonly _tag: "Held"; readonly score: number; readonly confidence: number }
  /** Turns of the hold left after this one (0: none). */
  readonly remaining: number
}

/**
 * The capable hold (`capable_hold_turns`) over one turn of a session whose hold has `remaining`
 * turns left: a clean test pass (`TestsPassed`) ends it and decides as usual; an open hold keeps
 * the turn capable (`Held`, decision source `capable_hold`) and spends one turn, whatever the
 * signals say; otherwise the reading decides under `confidenceThreshold`, and a signal-driven
 * escalation (capable by `override` or `dimensions`) opens a hold of `holdTurns`. The hold is not
 * evidence: it only ever keeps the capable tier, and a held turn never opens a new hold.
 */
export const hold = (reading: Reading, confidenceThreshold: number, remaining: number, holdTurns: number): Held => {
  const picked = decide(reading, confidenceThreshold)
  if (reading._tag === "TestsPassed") return { pick: picked, remaining: 0 }
  if (remaining > 0) {
    return { pick: { _tag: "Held", score: picked.score, confidence: picked.confidence }, remaining: remaining - 1 }
  }
  const escalated = picked._tag === "Decided" && picked.tier === "capable" &&
    (picked.source === "override" || picked.source === "dimensions")
  return { pick: picked, remaining: escalated ? holdTurns : 0 }
}
