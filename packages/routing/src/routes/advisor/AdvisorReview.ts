/**
 * One review by the advisor gate, as data: what the advisor is shown (the reviewer prompt, the
 * client's instructions, the conversation as JSON shortened in the middle, the executor's proposed
 * turn), the consultation request, and how the advisor's reply is read as a verdict.
 */
import type { Target } from "@switchyard-ts/client/Target"
import type { ChatCompletion, Message } from "@switchyard-ts/protocol/OpenAiChat"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import * as Conversation from "../../sessions/Conversation.js"
import * as AdvisorPrompt from "./AdvisorPrompt.js"

/** The advisor's verdict: release the turn, or discard it and retry with the advisor's plan. */
export type Verdict =
  | { readonly _tag: "Approve" }
  | { readonly _tag: "Redo"; readonly plan: string }

/** How a route consults its advisor (the route's advisor keys). */
export interface ReviewOptions {
  readonly advisor: Target
  /** Replaces the packaged reviewer prompt when set. */
  readonly reviewerSystemPrompt: Option.Option<string>
  /** Sent as `max_completion_tokens`. */
  readonly advisorMaxTokens: number
  /** Sent as `temperature` when set; omitted otherwise. */
  readonly advisorTemperature: Option.Option<number>
  /** Longest client-instructions-plus-conversation text shown to the advisor (>= 256). */
  readonly transcriptMaxChars: number
}

const isInstruction = (message: Message): boolean => message.role === "system" || message.role === "developer"

/**
 * `text` cut to at most `maxChars` characters by removing its middle: the first quarter of the
 * kept characters (the task) and the last three quarters (the latest work) stay, joined by a
 * marker that says how many characters were omitted. Texts that fit are returned unchanged.
 */
export const truncateMiddle = (text: string, maxChars: number): string => {
  if (text.length <= maxChars) return text
  const marker = (omitted: number) => `\n[… ${omitted} characters omitted from the middle of the transcript …]\n`
  // The marker is sized for the largest possible count, so the result never exceeds maxChars.
  const keep = Math.max(0, maxChars - marker(text.length).length)
  const head = Math.floor(keep / 4)
  const tail = keep - head
  return `${text.slice(0, head)}${marker(text.length - keep)}${text.slice(text.length - tail)}`
}

const reasoningOf = (message: ChatCompletion["choices"][number]["message"]): Option.Option<string> => {
  // Provider extensions, kept by the preserving decode: `reasoning_content` (vLLM, DeepSeek), `reasoning`.
  const candidates: ReadonlyArray<unknown> = [
    Predicate.hasProperty(message, "reasoning_content") ? message.reasoning_content : undefined,
    Predicate.hasProperty(message, "reasoning") ? message.reasoning : undefined
  ]
  return Option.fromNullable(
    candidates.find((value): value is string => typeof value === "string" && value.trim() !== "")
  )
}

/** The visible text of a turn: its content, else its refusal; empty when it has neither. */
export const visibleText = (turn: ChatCompletion): string => {
  const message = turn.choices[0]?.message
  if (message === undefined) return ""
  if (typeof message.content === "string" && message.content !== "") return message.content
  return typeof message.refusal === "string" ? message.refusal : ""
}

/** The number of tool calls in a turn's first choice. */
export const toolCallCount = (turn: ChatCompletion): number => turn.choices[0]?.message.tool_calls?.length ?? 0

/**
 * A turn as text for the advisor and for the REDO history: its visible text, else its reasoning
 * (labelled), else a placeholder; tool calls, when the turn made any, are listed after it.
 */
export const turnText = (turn: ChatCompletion): string => {
  const message = turn.choices[0]?.message
  const visible = visibleText(turn)
  const body = visible !== ""
    ? visible
    : Option.match(Option.flatMap(Option.fromNullable(message), reasoningOf), {
      onNone: () => "(the turn has no visible text)",
      onSome: (reasoning) => `(the turn has no visible text; its reasoning was:)\n${reasoning}`
    })
  const calls = (message?.tool_calls ?? []).map((call) =>
    call.type === "function"
      ? `[tool call ${call.function.name}] ${call.function.arguments}`
      : `[tool call ${call.custom.name}] ${call.custom.input}`
  )
  return [body, ...calls].join("\n")
}

/**
 * The advisor's user message: the client's instructions (system and developer messages) and the
 * rest of the conversation as JSON, shortened by {@link truncateMiddle} to `transcriptMaxChars`,
 * then the executor's proposed turn.
 */
export const transcript = (
  messages: ReadonlyArray<Message>,
  turn: ChatCompletion,
  transcriptMaxChars: number
): string => {
  const instructions = messages.filter(isInstruction).map(Conversation.textOf).filter((text) => text !== "")
  const history = [
    "## Client instructions",
    instructions.length === 0 ? "(none)" : instructions.join("\n\n"),
    "",
    "## Conversation (JSON, oldest message first)",
    JSON.stringify(messages.filter((message) => !isInstruction(message)))
  ].join("\n")
  return `${truncateMiddle(history, transcriptMaxChars)}\n\n## Proposed turn (under review)\n${turnText(turn)}`
}

/** The advisor's system prompt for these options. */
export const systemPrompt = (options: ReviewOptions): string =>
  Option.getOrElse(options.reviewerSystemPrompt, () => AdvisorPrompt.reviewerSystemPrompt)

/** The consultation request: non-streaming, no tools, one candidate (the advisor target). */
export const requestBody = (
  options: ReviewOptions,
  messages: ReadonlyArray<Message>,
  turn: ChatCompletion
): Readonly<Record<string, unknown>> => ({
  model: options.advisor.id,
  messages: [
    { role: "system", content: systemPrompt(options) },
    { role: "user", content: transcript(messages, turn, options.transcriptMaxChars) }
  ],
  max_completion_tokens: options.advisorMaxTokens,
  ...Option.match(options.advisorTemperature, { onNone: () => ({}), onSome: (temperature) => ({ temperature }) })
})

const decoration = /^[\s*_#>`~]+/
const verdictPrefix = /^(?:final\s+)?verdict\s*[:\-–—]?/i
const token = /^(approve|redo)(?![a-z0-9_])/i
const planEdges = /^[\s*_:-]+|[\s*_:-]+$/g

/**
 * The verdict at the start of an advisor's reply: `APPROVE` or `REDO`, case-insensitive, after
 * optional markdown decoration (`**`, `#`, `>`, backticks, ...) and an optional `verdict:` /
 * `final verdict:` prefix. A REDO's plan is the text after the token, trimmed of `*`, `_`, `:`,
 * `-` and whitespace — or the whole reply when nothing follows. None when the reply has no verdict.
 */
export const parseVerdict = (reply: string): Option.Option<Verdict> => {
  const afterPrefix = reply.replace(decoration, "").replace(verdictPrefix, "")
  const rest = afterPrefix.replace(decoration, "")
  const match = token.exec(rest)
  if (match === null) return Option.none()
  if (match[1]?.toLowerCase() === "approve") return Option.some({ _tag: "Approve" })
  const plan = rest.slice(match[0].length).replace(planEdges, "")
  return Option.some({ _tag: "Redo", plan: plan === "" ? reply.trim() : plan })
}

/** The executor's request for another attempt: the discarded turn, then the feedback, appended. */
export const redoMessages = (
  messages: ReadonlyArray<Message>,
  turn: ChatCompletion,
  prefix: Option.Option<string>,
  plan: string
): ReadonlyArray<Message> => [
  ...messages,
  { role: "assistant", content: turnText(turn) },
  { role: "user", content: `${Option.getOrElse(prefix, () => AdvisorPrompt.redoFeedbackPrefix)}${plan}` }
]

/** What the gate's trigger rules read (`gate_trigger`, `gate_trigger_pattern`, `gate_min_tool_results`, `gate_stall_turns`). */
export interface TriggerRules {
  readonly gateTrigger: "no_tool_call" | "pattern"
  readonly gateTriggerPattern: Option.Option<RegExp>
  readonly gateMinToolResults: number
  readonly gateStallTurns: number
}

/**
 * Which trigger (if any) asks for a review of the executor's `turn`: the configured one (no tool
 * call with enough tool results, or the pattern in its visible text), else the stall trigger once
 * the conversation has `gate_stall_turns` assistant turns and `unreviewedStall` (the stall trigger
 * reviews a conversation once).
 */
export const triggerOf = (
  rules: TriggerRules,
  messages: ReadonlyArray<Message>,
  turn: ChatCompletion,
  unreviewedStall: boolean
): Option.Option<"no_tool_call" | "pattern" | "stall"> => {
  const configured = rules.gateTrigger === "no_tool_call"
    ? toolCallCount(turn) === 0 &&
      messages.filter((message) => message.role === "tool").length >= rules.gateMinToolResults
    : Option.exists(rules.gateTriggerPattern, (pattern) => pattern.test(visibleText(turn)))
  if (configured) return Option.some(rules.gateTrigger)
  const assistantTurns = messages.filter((message) => message.role === "assistant").length + 1
  const stall = rules.gateStallTurns > 0 && assistantTurns >= rules.gateStallTurns && unreviewedStall
  return stall ? Option.some("stall") : Option.none()
}
