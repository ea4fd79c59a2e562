/**
 * The rules table schemas share: integer ranges (TOML integers are `bigint`s), the unit interval,
 * non-blank texts, target references and secrets read from the environment. Each fails with an issue at a key path relative to the
 * table being decoded, worded as the deployment loader reports it (`must be at least 1, got 0`).
 */
import type { Target } from "@switchyard-ts/client/Target"
import * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as ParseResult from "effect/ParseResult"
import * as Redacted from "effect/Redacted"
import { failAt, type Path } from "./Toml.js"

type Rule<A> = Effect.Effect<A, ParseResult.ParseIssue>

/** The largest integer a JS number holds exactly (2^53-1): the cap of milliseconds and counts. */
export const maxSafe = BigInt(Number.MAX_SAFE_INTEGER)

/** 2^32-1: the cap of token counts, review budgets and context windows. */
export const maxU32 = 2n ** 32n - 1n

/** 2^64-1: the cap of a random route's `seed`. */
export const maxU64 = 2n ** 64n - 1n

/** `value` within `min..max`; below `min` the message is `<belowMin>, got <value>`. */
export const integerInRange = (
  path: Path,
  value: bigint,
  min: bigint,
  max: bigint,
  belowMin: string = `must be at least ${min}`
): Rule<bigint> =>
  value < min
    ? failAt(path, `${belowMin}, got ${value}`)
    : value > max
    ? failAt(path, `must be at most ${max}, got ${value}`)
    : Effect.succeed(value)

/** The bounds of an integer key; `belowMin` words the message of a value below `min`. */
export interface Range {
  readonly min: bigint
  readonly max: bigint
  readonly belowMin?: string
}

/** An integer key within `range`, as a number. */
export const integer = (path: Path, value: bigint, range: Range): Rule<number> =>
  Effect.map(integerInRange(path, value, range.min, range.max, range.belowMin), Number)

/** An optional integer key within `range`, as a number; `orElse` when unset. */
export const integerOr = (path: Path, value: bigint | undefined, range: Range, orElse: number): Rule<number> =>
  value === undefined ? Effect.succeed(orElse) : integer(path, value, range)

/** An optional integer key within `range`, as a number; none when unset. */
export const optionalInteger = (path: Path, value: bigint | undefined, range: Range): Rule<Option.Option<number>> =>
  value === undefined ? Effect.succeedNone : Effect.asSome(integer(path, value, range))

/** An integer in 1..2^53-1 (milliseconds, counts). */
export const positive: Range = { min: 1n, max: maxSafe, belowMin: "must be a positive integer" }

/** A TOML float (or integer) in [0, 1], NaN and infinities excluded; -0.0 reads as 0. */
export const unitInterval = (path: Path, value: number, label?: string): Rule<number> =>
  Number.isFinite(value) && value >= 0 && value <= 1
    ? Effect.succeed(value === 0 ? 0 : value)
    : failAt(path, `${label === undefined ? "" : `${label} `}must be between 0 and 1, got ${value}`)

/** An optional text key (a prompt, a note): when set, it must not be blank (`<what> must not be empty`). */
export const nonBlank = (path: Path, value: string | undefined, what: string): Rule<Option.Option<string>> =>
  value === undefined
    ? Effect.succeedNone
    : value.trim() === ""
    ? failAt(path, `${what} must not be empty`)
    : Effect.succeed(Option.some(value))

/** The optional text key `key` of `keys`: when set, it must not be blank. */
export const optionalText = <K extends string>(
  keys: { readonly [P in K]?: string | undefined },
  key: K
): Rule<Option.Option<string>> => nonBlank([key], keys[key], key)

/** The target table named `name` (the value of the key at `path`). */
export const lookupTarget = (targets: ReadonlyMap<string, Target>, path: Path, name: string): Rule<Target> => {
  const target = targets.get(name)
  return target === undefined
    ? failAt(path, `references unknown target ${JSON.stringify(name)}`)
    : Effect.succeed(target)
}

/**
 * The value of the environment variable `variable`, named at `path` by the key `key`
 * (`api_key_env`, `api_keys_env`), with surrounding whitespace trimmed (a mounted secret file ends
 * in a newline): the name must not be blank, the variable must be set and its value not blank.
 * Messages name the variable, never its value.
 */
export const readSecret = (
  path: Path,
  key: string,
  variable: string
): Effect.Effect<Redacted.Redacted<string>, ParseResult.ParseIssue> =>
  Effect.gen(function*() {
    if (variable.trim() === "") return yield* failAt(path, `${key} must not be empty`)
    // the ConfigError is dropped: the variable's name is all the message needs
    const value = yield* Effect.orElse(
      Config.redacted(variable),
      () => failAt(path, `could not read ${key} ${variable}`)
    )
    const trimmed = Redacted.value(value).trim()
    if (trimmed === "") return yield* failAt(path, `${key} ${variable} is empty`)
    return Redacted.make(trimmed)
  })

/** An HTTP header name: an RFC 9110 token, as Node and undici check it. */
const headerToken = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/

/** A character no HTTP header value may hold (a control other than tab, or past U+00FF), as Node and undici check it. */
const headerValueChar = /[^\t\x20-\x7e\x80-\xff]/

/** Whether `name` can be sent as an HTTP header name. */
export const isHeaderName = (name: string): boolean => headerToken.test(name)

/** Whether `value` can be sent as an HTTP header value. */
export const isHeaderValue = (value: string): boolean => !headerValueChar.test(value)

/**
 * {@link readSecret} for a credential sent in an HTTP header (`api_key_env`): its trimmed value
 * must also be a valid header value, else the load fails naming the variable, never its value.
 */
export const readHeaderSecret = (
  path: Path,
  key: string,
  variable: string
): Effect.Effect<Redacted.Redacted<string>, ParseResult.ParseIssue> =>
  Effect.filterOrElse(
    readSecret(path, key, variable),
    (value) => isHeaderValue(Redacted.value(value)),
    () => failAt(path, `${key} ${variable} holds a character that cannot be sent in an HTTP header`)
  )
