/**
 * What an escalation judge reads and answers: the condensed transcript of a finished turn and the
 * verdict `{"escalate", "category", "new_evidence", "reason"}` (structured-output name
 * `EscalationVerdict`; `category` and `new_evidence` may be missing from an older judge's reply).
 * With a `deescalation` table the transcript opens with the phase marker (`EFFICIENT_EVALUATION`
 * on a weak turn, `STRONG_EVALUATION` on a strong turn) and the prompt gains the phase contract.
 *
 * The transcript has fixed caps (not configurable): each system/developer anchor 1,000 characters,
 * the first user message 2,000, the whole transcript 18,000. The trailing window holds the last
 * `recent_turn_window` messages (the weak reply last), each capped at `window_message_chars`. A
 * capped text keeps 2/3 of its budget from the head and 1/3 from the tail. Over the whole cap the
 * oldest window lines are dropped first, then the text is cut with {@link truncationSuffix}.
 */
import type { ChatCompletion, Message } from "@switchyard-ts/protocol/OpenAiChat"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import * as Evidence from "../../Evidence.js"
import { invalid, type InvalidVerdict, stripFences } from "../../judge/Verdict.js"
import * as Conversation from "../../sessions/Conversation.js"

/** The bounded trouble pattern an escalate verdict names (`none` when it names none). */
export const Category = Evidence.EscalationCategory
export type Category = typeof Category.Type

/**
 * The verdict on a finished turn. `category` and `new_evidence` are optional so that a judge
 * prompted for the older `{"escalate", "reason"}` verdict keeps working (see {@link nextStreak}).
 */
export const EscalationVerdict = Schema.Struct({
  escalate: Schema.Boolean,
  category: Schema.optionalWith(Category, { exact: true }),
  new_evidence: Schema.optionalWith(Schema.Boolean, { exact: true }),
  reason: Schema.String
})
export type EscalationVerdict = typeof EscalationVerdict.Type

/** The inner JSON Schema of the verdict, as sent to the judge. */
export const jsonSchema = {
  type: "object",
  additionalProperties: false,
  required: ["escalate", "category", "new_evidence", "reason"],
  properties: {
    escalate: { type: "boolean" },
    category: { type: "string", enum: Category.literals },
    new_evidence: { type: "boolean" },
    reason: { type: "string" }
  }
} as const

/** The `response_format` of a `json_schema` escalation judge request. */
export const responseFormatJsonSchema = {
  type: "json_schema",
  json_schema: { name: "EscalationVerdict", strict: true, schema: jsonSchema }
} as const

/** The packaged system prompt of an escalation judge (replaced by the route's `prompt`). */
export const packagedPrompt = [
  "You review the latest reply of a fast, inexpensive assistant in the conversation below.",
  "Decide whether the conversation should move to a stronger assistant from now on: escalate when",
  "the reply is wrong, incomplete, evasive, or shows that the task is beyond the assistant; do not",
  "escalate when the reply handles the request adequately.",
  "Name the kind of trouble as category: repetition (the same attempt again), false_progress",
  "(claims of success the results do not show), drift (away from the task), desperation (random or",
  "destructive attempts), capability_gap (the task is beyond the assistant), none (no trouble).",
  "Set new_evidence to true only when the latest reply itself shows the trouble; false when you",
  "rely on what earlier turns already showed.",
  "Answer with one JSON object: {\"escalate\": true|false, \"category\": \"<category>\",",
  "\"new_evidence\": true|false, \"reason\": \"<one short sentence>\"}."
].join("\n")

/** Which tier's finished turn a de-escalating route's judge reads. */
export type Phase = "efficient" | "strong"

/** The marker that opens the transcript of a de-escalating route's judge. */
export const phaseMarker = (phase: Phase): string =>
  phase === "efficient" ? "EFFICIENT_EVALUATION" : "STRONG_EVALUATION"

/** Appended to the prompt (packaged or the route's own) of a de-escalating route's judge. */
export const phaseContract = [
  "The transcript opens with a phase marker.",
  "EFFICIENT_EVALUATION: the latest reply is the fast assistant's; escalate as described above.",
  "STRONG_EVALUATION: the conversation was moved to the stronger assistant and the latest reply is",
  "its own. Answer escalate: true while the trouble that caused the move still shows in the recent",
  "results, or the fix is not yet verified; answer escalate: false once it is resolved and",
  "verified, so the conversation may return to the fast assistant."
].join("\n")

/** The prompt a judge gets: `prompt`, with the phase contract when the route de-escalates. */
export const promptFor = (prompt: string, phase: Phase | undefined): string =>
  phase === undefined ? prompt : `${prompt.trimEnd()}\n\n${phaseContract}`

/** A session's escalate streak and the category of the vote that last moved it. */
export interface Streak {
  readonly streak: number
  readonly category?: Category | undefined
}

/**
 * The streak after a verdict: a decline, or an escalate without fresh evidence
 * (`new_evidence: false`), resets it to 0; an escalate with fresh evidence in the category of the
 * previous vote adds one, in another category restarts at 1. A verdict without `new_evidence`
 * counts as fresh evidence, and a missing category (on either vote) as the same category, so an
 * older judge's verdicts count as they always did: every escalate adds one.
 */
export const nextStreak = (
  previous: Streak,
  verdict: Pick<EscalationVerdict, "escalate" | "category" | "new_evidence">
): Streak => {
  if (!verdict.escalate || verdict.new_evidence === false) return { streak: 0 }
  const category = verdict.category ?? previous.category
  const same = previous.streak === 0 || verdict.category === undefined || previous.category === undefined ||
    verdict.category === previous.category
  return { streak: same ? previous.streak + 1 : 1, category }
}

/** Fixed caps of the condensed transcript. */
export const caps = {
  anchorChars: 1_000,
  firstUserChars: 2_000,
  transcriptChars: 18_000
} as const

/** Appended when the transcript is cut at its cap. */
export const truncationSuffix = "\n[… transcript truncated …]"

/** Keep at most `max` characters of `text`: 2/3 of them from the head, 1/3 from the tail. */
export const middle = (text: string, max: number): string => {
  if (text.length <= max) return text
  const marker = " […] "
  const budget = Math.max(0, max - marker.length)
  const head = Math.floor((budget * 2) / 3)
  const tail = budget - head
  return `${text.slice(0, head)}${marker}${tail === 0 ? "" : text.slice(text.length - tail)}`
}

/** The window keys of an escalation route. */
export interface TranscriptOptions {
  /** `escalation.recent_turn_window` >= 1 (default 28). */
  readonly recentTurnWindow: number
  /** `escalation.window_message_chars` >= 50 (default 500). */
  readonly windowMessageChars: number
}

const line = (label: string, text: string, max: number) => `[${label}] ${middle(text, max - label.length - 3)}`

/**
 * The condensed transcript of `messages` followed by the finished `reply`, opened by the phase
 * marker when `phase` is set (the marker does not count against the transcript's cap).
 */
export const transcript = (
  messages: ReadonlyArray<Message>,
  reply: ChatCompletion,
  options: TranscriptOptions,
  phase?: Phase
): string => {
  const body = condensed(messages, reply, options)
  return phase === undefined ? body : `${phaseMarker(phase)}\n${body}`
}

const condensed = (
  messages: ReadonlyArray<Message>,
  reply: ChatCompletion,
  options: TranscriptOptions
): string => {
  const anchors = messages
    .filter((message) => message.role === "system" || message.role === "developer")
    .map((message) => line(message.role, Conversation.textOf(message), caps.anchorChars))
  const conversation = messages.filter((message) => message.role !== "system" && message.role !== "developer")
  const firstUser = conversation.find((message) => message.role === "user")
  const head = [
    ...anchors,
    ...(firstUser === undefined
      ? []
      : [line("first user message", Conversation.textOf(firstUser), caps.firstUserChars)])
  ]
  const replyMessage = reply.choices[0]?.message
  const replyText = [
    replyMessage?.content ?? "",
    ...(replyMessage?.tool_calls ?? []).map((call) =>
      call.type === "function" ? `(calls ${call.function.name})` : `(calls ${call.custom.name})`
    )
  ].filter((part) => part !== "").join("\n")
  const window = [
    ...conversation.map((message) => ({ role: message.role, text: Conversation.textOf(message) })),
    { role: "assistant (latest reply)", text: replyText }
  ].slice(-options.recentTurnWindow).map((entry) => line(entry.role, entry.text, options.windowMessageChars))

  const render = (kept: ReadonlyArray<string>) =>
    [...head, "--- recent conversation (oldest first) ---", ...kept].join("\n")
  let kept = window
  while (kept.length > 0 && render(kept).length > caps.transcriptChars) kept = kept.slice(1)
  const text = render(kept)
  return text.length <= caps.transcriptChars
    ? text
    : text.slice(0, caps.transcriptChars - truncationSuffix.length) + truncationSuffix
}

const decodeStrict = Schema.decodeUnknownEither(Schema.parseJson(EscalationVerdict), { onExcessProperty: "error" })

/** The verdict in a judge's reply text (fences stripped); anything else is an `InvalidVerdict` (`parse_error`). */
export const decode = (text: string): Either.Either<EscalationVerdict, InvalidVerdict> => {
  const body = stripFences(text)
  if (body === "") return Either.left(invalid("parse_error", "empty reply"))
  return Either.mapLeft(
    decodeStrict(body),
    () => invalid("parse_error", "reply is not an escalation verdict")
  )
}
