// What the soak requires of every answer, against the README's error table and stream format: a
// 2xx well-formed completion or SSE stream ending in `data: [DONE]` (or the documented mid-stream
// error event), or a documented error envelope. A fail_open request that fails because of the judge
// is a violation.
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { header } from "../lib/processes.js"
import type { Reply } from "./client.js"
import { type Route, STRONG, WEAK } from "./options.js"

const EVIDENCE = new Set(["llm-classifier", "affinity", "retained", "fail-open", "circuit-open"])
/** Evidence sources of a request routed without a verdict. */
export const WITHOUT_VERDICT = new Set(["retained", "fail-open", "circuit-open"])

/** The documented (status, type, code) combinations an upstream or judge failure may produce. */
const documentedUpstreamError = (status: number, type: string, code: string): boolean =>
  type === "upstream_error" && (
    (code === "upstream_timeout" && status === 504) ||
    (code === "upstream_unavailable" && status === 503) ||
    (code === "upstream_error" &&
      (status === 502 || status === 429 || status === 408 || status === 403 || (status >= 500 && status <= 599)))
  )

/** What the soak requires of the server's answers (the rest of each body is not looked at). */
const decodeJson = <A, I>(schema: Schema.Schema<A, I>) => Schema.decodeUnknownOption(Schema.parseJson(schema))
/** A buffered answer: its first choice is an assistant message with text content. */
const decodeCompletion = decodeJson(Schema.Struct({
  object: Schema.Literal("chat.completion"),
  choices: Schema.Tuple([
    Schema.Struct({ message: Schema.Struct({ role: Schema.Literal("assistant"), content: Schema.String }) })
  ], Schema.Unknown)
}))
const decodeChunk = decodeJson(Schema.Struct({ object: Schema.Literal("chat.completion.chunk") }))
/** The documented mid-stream error event. */
const decodeStreamError = decodeJson(
  Schema.Struct({ error: Schema.Struct({ type: Schema.Literal("SwitchyardError"), code: Schema.String }) })
)
/** The documented error envelope. */
const decodeEnvelope = decodeJson(
  Schema.Struct({ error: Schema.Struct({ message: Schema.String, type: Schema.String, code: Schema.String }) })
)
/** `/health`'s answer. */
export const decodeHealth = decodeJson(Schema.Struct({ status: Schema.Literal("ok") }))

export type Outcome =
  | { readonly kind: "answer"; readonly evidence: string; readonly reason: string; readonly model: string }
  | {
    readonly kind: "stream-error"
    readonly code: string
    readonly evidence: string
    readonly reason: string
    readonly model: string
  }
  | { readonly kind: "error"; readonly code: string; readonly judge: boolean }
  | { readonly kind: "violation"; readonly why: string }

/** A 2xx answer: the routing headers, then the body (buffered completion or SSE stream). */
const validateAnswer = (
  response: Extract<Reply, { ok: true }>,
  streaming: boolean
): Outcome => {
  const { headers, text } = response
  const model = header(headers, "x-switchyard-selected-model")
  const evidence = header(headers, "x-switchyard-evidence-source")
  const reason = header(headers, "x-switchyard-evidence-reason") ?? ""
  if (model !== WEAK && model !== STRONG) return { kind: "violation", why: `2xx with selected model ${model}` }
  if (evidence === undefined || !EVIDENCE.has(evidence)) {
    return { kind: "violation", why: `2xx with evidence source ${evidence}` }
  }
  if (!streaming) {
    if (Option.isNone(decodeCompletion(text))) {
      return { kind: "violation", why: `2xx buffered body is not a chat completion: ${text.slice(0, 120)}` }
    }
    return { kind: "answer", evidence, reason, model }
  }
  if (!String(headers["content-type"] ?? "").startsWith("text/event-stream")) {
    return { kind: "violation", why: `2xx stream with content-type ${headers["content-type"]}` }
  }
  const events = text.split("\n\n").filter((e) => e.length > 0)
  const lastEvent = events[events.length - 1]
  if (lastEvent === undefined || events.some((e) => !e.startsWith("data: "))) {
    return { kind: "violation", why: `malformed SSE: ${text.slice(0, 120)}` }
  }
  const last = lastEvent.slice(6)
  const chunks = events.slice(0, -1)
  for (const event of chunks) {
    if (Option.isNone(decodeChunk(event.slice(6)))) {
      return { kind: "violation", why: `SSE event is not a chunk: ${event.slice(0, 120)}` }
    }
  }
  if (last === "[DONE]") {
    if (!chunks.some((e) => e.includes("\"content\""))) {
      return { kind: "violation", why: "stream ended without content" }
    }
    return { kind: "answer", evidence, reason, model }
  }
  const error = decodeStreamError(last)
  if (Option.isSome(error)) {
    return { kind: "stream-error", code: error.value.error.code, evidence, reason, model }
  }
  return { kind: "violation", why: `stream ended without [DONE] or error event: ${text.slice(-120)}` }
}

/**
 * Classify one response: `{ kind: "answer" | "error" | "stream-error", ... }` or
 * `{ kind: "violation", why }`.
 */
export const validate = (
  response: Reply,
  { route, streaming }: { readonly route: Route; readonly streaming: boolean }
): Outcome => {
  if (!response.ok) return { kind: "violation", why: `no answer: ${response.error}` }
  const { status, text } = response
  if (status >= 200 && status < 300) return validateAnswer(response, streaming)
  const envelope = decodeEnvelope(text)
  if (Option.isNone(envelope)) {
    return { kind: "violation", why: `${status} without the error envelope: ${text.slice(0, 120)}` }
  }
  const error = envelope.value.error
  if (!documentedUpstreamError(status, error.type, error.code)) {
    return {
      kind: "violation",
      why: `${status} ${error.type}/${error.code} is not a documented outcome of a valid request: ${
        error.message.slice(0, 120)
      }`
    }
  }
  if (route === "soak-fo" && error.message.startsWith("judge ")) {
    return {
      kind: "violation",
      why: `fail_open route failed because of the judge: ${status} ${error.message.slice(0, 120)}`
    }
  }
  return { kind: "error", code: error.code, judge: error.message.startsWith("judge ") }
}
