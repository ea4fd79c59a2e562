/**
 * The session identity of a request, from the headers coding agents send.
 *
 * @internal
 */
import { SessionId } from "@switchyard-ts/protocol/Ids"
import * as Option from "effect/Option"

/** Header carrying the caller's session identity. */
export const sessionHeader = "x-switchyard-session-id"

/**
 * Where a session identity is read from, first non-blank value wins (docs/routes.md): our own header,
 * then the ones coding agents send by themselves (Claude Code, NeMo relay, generic), then the
 * `session_id` of Codex's JSON `x-codex-turn-metadata`, then `session-id`.
 */
const sessionSources: ReadonlyArray<string | { readonly json: string; readonly field: string }> = [
  sessionHeader,
  "x-claude-code-session-id",
  "x-nemo-relay-session-id",
  "x-session-id",
  { json: "x-codex-turn-metadata", field: "session_id" },
  "session-id"
]

const jsonField = (text: string, field: string): string => {
  if (text === "") return ""
  try {
    const parsed: unknown = JSON.parse(text)
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) return ""
    const value: unknown = Object.getOwnPropertyDescriptor(parsed, field)?.value
    return value === undefined || value === null ? "" : typeof value === "string" ? value : JSON.stringify(value)
  } catch {
    return ""
  }
}

/** The session identity of a request's headers (lower-case names), if any. */
export const sessionIdOf = (headers: Readonly<Record<string, string>>): Option.Option<SessionId> => {
  for (const source of sessionSources) {
    const raw = typeof source === "string" ? headers[source] : jsonField(headers[source.json] ?? "", source.field)
    const value = (raw ?? "").trim()
    if (value !== "") return Option.some(SessionId.make(value))
  }
  return Option.none()
}
