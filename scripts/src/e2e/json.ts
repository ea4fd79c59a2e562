// Reading JSON whose shape is not ours (what Claude Code and Codex send, what they record): parsed
// to `unknown` with effect/Schema and read through these narrowing accessors, which answer
// `undefined` or an empty list where a shape does not fit.
import * as Either from "effect/Either"
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"

/** A JSON object. */
export type JsonObject = Readonly<Record<string, unknown>>

const decodeJson = Schema.decodeUnknownEither(Schema.parseJson())

/** `text` parsed as JSON, or `undefined` when it is not JSON. */
export const parseJson = (text: string): unknown => Either.getOrUndefined(decodeJson(text))

/** Whether `u` is a JSON object (not an array, not null). */
export const isObject = (u: unknown): u is JsonObject => Predicate.isRecord(u)

/** `u[key]` when `u` is an object. */
export const get = (u: unknown, key: string): unknown => (isObject(u) ? u[key] : undefined)

/** `u` when it is a string. */
export const str = (u: unknown): string | undefined => (typeof u === "string" ? u : undefined)

/** `u` when it is an array, else an empty one. */
export const arr = (u: unknown): ReadonlyArray<unknown> => (Array.isArray(u) ? u : [])

/** The last element of a list. */
export const last = <A>(list: ReadonlyArray<A>): A | undefined => list[list.length - 1]

/** A value for a message: its JSON, cut to `n` characters (`undefined` spelled out). */
export const show = (u: unknown, n = 200): string => String(JSON.stringify(u)).slice(0, n)
