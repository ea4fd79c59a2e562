/**
 * Who sent a request, read from the headers coding agents send (docs/http-api.md, session and
 * agent headers): the session, the agent inside it, whether the request is delegated sub-agent
 * work, and whether it is the session's last request. One parser for the server (the session id
 * of every request) and the routes (sub-agent dispatch and affinity, `session_final`).
 *
 * Every field takes the first non-blank (trimmed) value of its sources, in order. A source
 * `x-codex-turn-metadata.<field>` reads that member of the header's JSON object (decoded with
 * Schema; a header that is not a JSON object reads as absent); a non-string member is used as its
 * JSON text, `null` as absent.
 *
 * | field | sources |
 * |---|---|
 * | session id | `x-switchyard-session-id`, `x-claude-code-session-id`, `x-nemo-relay-session-id`, `x-session-id`, codex `session_id`, `session-id`, `session_id` (pi's Responses provider) |
 * | agent id | `x-switchyard-agent-id`, `x-claude-code-agent-id`, `x-nemo-relay-subagent-id`, `x-dynamo-session-id`, codex `thread_id`, `thread-id` |
 * | parent agent id | `x-switchyard-parent-agent-id`, `x-dynamo-parent-session-id`, codex `parent_thread_id`, `x-codex-parent-thread-id`; for a Claude child `x-claude-code-parent-agent-id`, then its Claude session |
 * | harness kind | codex `subagent_kind`, `x-openai-subagent` (never `x-switchyard-agent-kind`, an operator's label) |
 * | session final | `x-switchyard-session-final`, `x-dynamo-session-final` (a boolean) |
 *
 * Sub-agent classification:
 * - a *Claude child* carries `x-claude-code-agent-id` (root agents send none); a *Codex child*
 *   has a parent agent id and codex `thread_source = "subagent"`;
 * - `isSubagent`: an explicit `x-switchyard-is-subagent` boolean, else Claude child, Codex child
 *   or any harness kind;
 * - `isDelegatedWork` (what `subagents` routing follows): explicit false → false; explicit true →
 *   true unless a harness kind is present and is not `collab_spawn` / `review`; no explicit value →
 *   Claude child, Codex child, or harness kind `collab_spawn` / `review`. Other kinds (`compact`,
 *   memory upkeep) are the harness's own maintenance, not delegated work.
 *
 * Booleans are `1/true/yes/on` and `0/false/no/off`, case-insensitive; anything else is absent.
 */
import { SessionId } from "@switchyard-ts/protocol/Ids"
import * as Nesting from "@switchyard-ts/protocol/Nesting"
import * as Effect from "effect/Effect"
import { dual } from "effect/Function"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"

/** The caller's headers, lower-case names. */
export type Headers = Readonly<Record<string, string>>

/** Header carrying the caller's session identity (the first of its sources). */
export const sessionHeader = "x-switchyard-session-id"
/** Explicit sub-agent flag, a boolean. */
export const isSubagentHeader = "x-switchyard-is-subagent"
/** Explicit end of a session, a boolean (falls back to `x-dynamo-session-final`). */
export const sessionFinalHeader = "x-switchyard-session-final"
/** Codex's JSON turn metadata. */
export const codexTurnMetadataHeader = "x-codex-turn-metadata"

/** Harness kinds that carry delegated work rather than the harness's own maintenance. */
export const delegatedKinds: ReadonlyArray<string> = ["collab_spawn", "review"]

/** A header, or a member of the Codex turn-metadata JSON. */
type Source = string | { readonly codex: string }

const sessionSources: ReadonlyArray<Source> = [
  sessionHeader,
  "x-claude-code-session-id",
  "x-nemo-relay-session-id",
  "x-session-id",
  { codex: "session_id" },
  "session-id",
  "session_id"
]

const agentSources: ReadonlyArray<Source> = [
  "x-switchyard-agent-id",
  "x-claude-code-agent-id",
  "x-nemo-relay-subagent-id",
  "x-dynamo-session-id",
  { codex: "thread_id" },
  "thread-id"
]

const parentSources: ReadonlyArray<Source> = [
  "x-switchyard-parent-agent-id",
  "x-dynamo-parent-session-id",
  { codex: "parent_thread_id" },
  "x-codex-parent-thread-id"
]

const harnessKindSources: ReadonlyArray<Source> = [{ codex: "subagent_kind" }, "x-openai-subagent"]

const sessionFinalSources: ReadonlyArray<Source> = [sessionFinalHeader, "x-dynamo-session-final"]

const JsonObject = Schema.Record({ key: Schema.String, value: Schema.Unknown })
const decodeJsonObject = Schema.decodeUnknownOption(JsonObject)

/** The headers, with the Codex turn metadata decoded at most once, when a source first needs it. */
interface Read {
  readonly headers: Headers
  readonly codex: () => Readonly<Record<string, unknown>>
}

const read = (headers: Headers): Read => {
  let codex: Readonly<Record<string, unknown>> | undefined
  return {
    headers,
    codex: () => {
      if (codex === undefined) {
        const raw = (headers[codexTurnMetadataHeader] ?? "").trim()
        // Held to the request bound (`Nesting`): a header nested deeper reads as an invalid one.
        const parsed = raw === "" ? undefined : Nesting.parse(raw)
        codex = parsed?._tag === "Json" ? Option.getOrElse(decodeJsonObject(parsed.value), () => ({})) : {}
      }
      return codex
    }
  }
}

const codexMember = (codex: Readonly<Record<string, unknown>>, field: string): string => {
  const value = Object.hasOwn(codex, field) ? codex[field] : undefined
  return value === undefined || value === null ? "" : typeof value === "string" ? value : JSON.stringify(value)
}

const valueOf = ({ codex, headers }: Read, source: Source): Option.Option<string> => {
  const value = (typeof source === "string" ? headers[source] ?? "" : codexMember(codex(), source.codex)).trim()
  return value === "" ? Option.none() : Option.some(value)
}

const first = (input: Read, sources: ReadonlyArray<Source>): Option.Option<string> => {
  for (const source of sources) {
    const value = valueOf(input, source)
    if (Option.isSome(value)) return value
  }
  return Option.none()
}

/** A header boolean: `1/true/yes/on` or `0/false/no/off` (case-insensitive, trimmed); else none. */
export const parseBool = (text: string): Option.Option<boolean> => {
  switch (text.trim().toLowerCase()) {
    case "1":
    case "true":
    case "yes":
    case "on":
      return Option.some(true)
    case "0":
    case "false":
    case "no":
    case "off":
      return Option.some(false)
    default:
      return Option.none()
  }
}

/** Everything the headers say about who sent a request. */
export interface Identity {
  readonly sessionId: Option.Option<SessionId>
  readonly agentId: Option.Option<string>
  readonly parentAgentId: Option.Option<string>
  /** Codex `subagent_kind` or `x-openai-subagent`. */
  readonly harnessKind: Option.Option<string>
  readonly isSubagent: boolean
  /** Sub-agent requests that `subagents` routing takes (see the module doc). */
  readonly isDelegatedWork: boolean
  /** The explicit `session_final` value; none when the headers say nothing (or nothing parseable). */
  readonly sessionFinal: Option.Option<boolean>
}

/** The identity of a request's headers (lower-case names). Never fails: unreadable values are absent. */
export const identityOf = (headers: Headers): Identity => {
  const input = read(headers)
  const claudeAgent = valueOf(input, "x-claude-code-agent-id")
  const claudeChild = Option.isSome(claudeAgent)
  const parentAgentId = Option.orElse(
    first(input, parentSources),
    () =>
      claudeChild
        ? Option.orElse(
          valueOf(input, "x-claude-code-parent-agent-id"),
          () => valueOf(input, "x-claude-code-session-id")
        )
        : Option.none()
  )
  const codexChild = Option.isSome(parentAgentId) && codexMember(input.codex(), "thread_source").trim() === "subagent"
  const harnessKind = first(input, harnessKindSources)
  const delegatedKind = Option.exists(harnessKind, (kind) => delegatedKinds.includes(kind))
  const explicit = Option.flatMap(valueOf(input, isSubagentHeader), parseBool)
  const isSubagent = Option.getOrElse(explicit, () => claudeChild || codexChild || Option.isSome(harnessKind))
  const isDelegatedWork = Option.match(explicit, {
    onNone: () => claudeChild || codexChild || delegatedKind,
    onSome: (flag) => flag && (Option.isNone(harnessKind) || delegatedKind)
  })
  return {
    sessionId: Option.map(first(input, sessionSources), SessionId.make),
    agentId: first(input, agentSources),
    parentAgentId,
    harnessKind,
    isSubagent,
    isDelegatedWork,
    sessionFinal: Option.flatMap(first(input, sessionFinalSources), parseBool)
  }
}

/** The session identity of a request's headers (lower-case names), if any. */
export const sessionIdOf = (headers: Headers): Option.Option<SessionId> =>
  Option.map(first(read(headers), sessionSources), SessionId.make)

/** The agent identity of a request's headers (lower-case names), if any. */
export const agentIdOf = (headers: Headers): Option.Option<string> => first(read(headers), agentSources)

/** Whether the headers flag delegated sub-agent work (the module doc's `isDelegatedWork`). */
export const isDelegatedWork = (headers: Headers): boolean => identityOf(headers).isDelegatedWork

/** Whether the headers say this is the session's last request (`session_final` true). */
export const isSessionFinal = (headers: Headers): boolean =>
  Option.getOrElse(Option.flatMap(first(read(headers), sessionFinalSources), parseBool), () => false)

/**
 * Run `self`, then — when the request's headers say `session_final` true — `forget` (whatever
 * `self`'s outcome): how a route drops its per-session composition state at a session's end.
 * Interruption runs `forget` too.
 */
export const forgetOnFinal: {
  (headers: Headers, forget: Effect.Effect<void>): <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  <A, E, R>(self: Effect.Effect<A, E, R>, headers: Headers, forget: Effect.Effect<void>): Effect.Effect<A, E, R>
} = dual(
  3,
  <A, E, R>(self: Effect.Effect<A, E, R>, headers: Headers, forget: Effect.Effect<void>): Effect.Effect<A, E, R> =>
    isSessionFinal(headers) ? Effect.ensuring(self, forget) : self
)
