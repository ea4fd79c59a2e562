/**
 * Outbound request preparation for one target (anchor §5.1–5.3): the URL, the body and the
 * headers. Pure functions; the caller's objects are never mutated.
 *
 * @internal
 */
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import type { LlmClient, Target } from "../Target.js"
import { reservedHeaders } from "../Target.js"

/**
 * The Chat Completions URL of an `openai_chat` client: `base_url` trimmed, trailing `/` removed,
 * a trailing `/chat/completions` or `/responses` stripped, then `/chat/completions` appended.
 */
export const chatCompletionsUrl = (baseUrl: string): string => {
  let base = baseUrl.trim()
  while (base.endsWith("/")) base = base.slice(0, -1)
  for (const suffix of ["/chat/completions", "/responses"]) {
    if (base.endsWith(suffix)) {
      base = base.slice(0, -suffix.length)
      break
    }
  }
  while (base.endsWith("/")) base = base.slice(0, -1)
  return `${base}/chat/completions`
}

/**
 * The body sent upstream: a shallow copy of the caller's body with `model` = the target's id,
 * the target's `extra_body` keys added where the body lacks them, and the stream flags set:
 * streamed calls get `stream: true` and `stream_options.include_usage = true` unless the caller
 * set `include_usage`; buffered calls drop `stream` and `stream_options`.
 */
export const prepareBody = (
  target: Target,
  body: Readonly<Record<string, unknown>>,
  streaming: boolean
): Record<string, unknown> => {
  const out: Record<string, unknown> = { ...body, model: target.id }
  for (const [key, value] of Object.entries(target.extraBody)) {
    if (out[key] === undefined) out[key] = value
  }
  if (streaming) {
    out["stream"] = true
    const options = out["stream_options"]
    if (Predicate.isRecord(options)) {
      if (typeof options["include_usage"] !== "boolean") out["stream_options"] = { ...options, include_usage: true }
    } else {
      out["stream_options"] = { include_usage: true }
    }
  } else {
    delete out["stream"]
    delete out["stream_options"]
  }
  return out
}

/**
 * The forwarded and static headers, in order: the caller's headers minus the reserved set
 * (case-insensitive), then the client's `extra_headers` (later entries win). Auth, `accept` and
 * `content-type` are added by the request builder after these.
 */
export const prepareHeaders = (
  client: LlmClient,
  callerHeaders: Readonly<Record<string, string>>
): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const [name, value] of Object.entries(callerHeaders)) {
    const lower = name.toLowerCase()
    if (!reservedHeaders.has(lower)) out[lower] = value
  }
  for (const [name, value] of Object.entries(client.extraHeaders)) {
    out[name.toLowerCase()] = value
  }
  return out
}

/** `server.address` / `server.port` of a URL, when it parses. */
export const serverOf = (url: string): Option.Option<{ readonly address: string; readonly port: number }> => {
  if (!URL.canParse(url)) return Option.none()
  const parsed = new URL(url)
  const port = parsed.port !== "" ? Number(parsed.port) : parsed.protocol === "https:" ? 443 : 80
  return Option.some({ address: parsed.hostname, port })
}
