/**
 * JSON Pointers (RFC 6901): parsing a pointer string into its reference tokens, and resolving a
 * pointer against a JSON value. A custom classifier route's `policy.selector` is one.
 */
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"

/** A parsed pointer: its text and its unescaped reference tokens (none for the root pointer `""`). */
export interface JsonPointer {
  readonly text: string
  readonly tokens: ReadonlyArray<string>
}

const arrayIndex = /^(?:0|[1-9][0-9]*)$/

/**
 * Parse a pointer. `""` is the root (no tokens); anything else must start with `/`, and `~` must be
 * followed by `0` (a `~`) or `1` (a `/`). Fails with a message saying what is wrong.
 */
export const parse = (text: string): Either.Either<JsonPointer, string> => {
  if (text === "") return Either.right({ text, tokens: [] })
  if (!text.startsWith("/")) return Either.left("a JSON Pointer must be empty or start with \"/\"")
  const tokens: Array<string> = []
  for (const raw of text.slice(1).split("/")) {
    if (/~(?![01])/.test(raw)) return Either.left(`"~" must be followed by 0 or 1 in ${JSON.stringify(raw)}`)
    tokens.push(raw.replace(/~1/g, "/").replace(/~0/g, "~"))
  }
  return Either.right({ text, tokens })
}

/** Whether the pointer is the root (`""`), which names the whole document. */
export const isRoot = (pointer: JsonPointer): boolean => pointer.tokens.length === 0

/**
 * The value the pointer names in `document`: an object's own member, or an array's element at a
 * decimal index without leading zeros. None when some token names nothing (including `-`).
 */
export const resolve = (pointer: JsonPointer, document: unknown): Option.Option<unknown> => {
  let current: unknown = document
  for (const token of pointer.tokens) {
    if (Array.isArray(current)) {
      if (!arrayIndex.test(token)) return Option.none()
      const index = Number(token)
      if (index >= current.length) return Option.none()
      current = current[index]
    } else if (Predicate.isRecord(current)) {
      if (!Object.hasOwn(current, token)) return Option.none()
      current = current[token]
    } else {
      return Option.none()
    }
  }
  return Option.some(current)
}
