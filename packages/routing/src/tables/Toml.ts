/**
 * Helpers for decoding the tables of a parsed TOML document: key paths, leaf schemas whose
 * messages name TOML types, table schemas that reject unknown keys, issues at a key path (what
 * table rules fail with), and the JSON conversion of `extra_body` values. (A deployment file's
 * `InvalidConfig` is made of these issues by `@switchyard-ts/config`.)
 *
 * The document is parsed with `integersAsBigInt: true`, so TOML integers arrive as `bigint` and
 * TOML floats as `number`; the leaf schemas below rely on that to tell the two apart.
 */
import * as Arr from "effect/Array"
import * as Effect from "effect/Effect"
import * as ParseResult from "effect/ParseResult"
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"

/** A TOML key path: table keys as strings, array indices as numbers. */
export type Path = ReadonlyArray<string | number>

const bareKey = /^[A-Za-z0-9_-]+$/

/**
 * Renders a path as TOML would spell it: `llm_clients.hosted.max_retries`, `routes.r.targets[1]`,
 * quoting keys that are not bare keys (`llm_clients." x"`).
 */
export const formatPath = (path: Path): string => {
  let out = ""
  for (const segment of path) {
    if (typeof segment === "number") {
      out += `[${segment}]`
    } else {
      const key = bareKey.test(segment) ? segment : JSON.stringify(segment)
      out += out === "" ? key : `.${key}`
    }
  }
  return out
}

/**
 * A `ParseIssue` with the message `text` at `path`, relative to the value being decoded (a table
 * rule's failure; `decodeAt` prefixes the table's own path).
 */
export const issueAt = (path: Path, text: string, actual?: unknown): ParseResult.ParseIssue => {
  const leaf = new ParseResult.Type(Schema.Unknown.ast, actual, text)
  return Arr.isNonEmptyReadonlyArray(path) ? new ParseResult.Pointer(path, actual, leaf) : leaf
}

/** Fails with `issueAt(path, text)`. */
export const failAt = (path: Path, text: string, actual?: unknown): Effect.Effect<never, ParseResult.ParseIssue> =>
  Effect.fail(issueAt(path, text, actual))

/** Names the TOML type of a parsed value, for messages. */
export const describeToml = (value: unknown): string => {
  if (value === undefined) return "nothing"
  if (Predicate.isString(value)) return "string"
  if (Predicate.isBigInt(value)) return "integer"
  if (Predicate.isNumber(value)) return "float"
  if (Predicate.isBoolean(value)) return "boolean"
  if (Predicate.isDate(value)) return "datetime"
  if (Array.isArray(value)) return "array"
  if (Predicate.isRecord(value)) return "table"
  return typeof value
}

const expected = (what: string) => (issue: ParseResult.ParseIssue): string =>
  `expected ${what}, got ${describeToml(issue.actual)}`

/** A TOML table (not an array, not a datetime), keys untyped values. */
export const isTomlTable = (u: unknown): u is Readonly<Record<string, unknown>> =>
  Predicate.isRecord(u) && !Predicate.isDate(u)

/** A TOML string. */
export const TomlString = Schema.String.annotations({ message: expected("a string") })

/** A TOML integer (a `bigint`, given `integersAsBigInt: true`). */
export const TomlInteger = Schema.BigIntFromSelf.annotations({ message: expected("an integer") })

/** A TOML boolean. */
export const TomlBoolean = Schema.Boolean.annotations({ message: expected("a boolean") })

/** A TOML integer or float, as a JS number (integers beyond 2^53 lose precision, as floats do). */
export const TomlNumber = Schema.transform(
  Schema.declare((u): u is number | bigint => Predicate.isNumber(u) || Predicate.isBigInt(u), {
    message: expected("a number")
  }),
  Schema.Number,
  { strict: true, decode: (n) => Number(n), encode: (n) => n }
)

/** Renders enum variants for messages: `"a", "b"`. */
export const listVariants = (variants: ReadonlyArray<string>): string =>
  variants.map((v) => JSON.stringify(v)).join(", ")

/** The message of a string that is none of `variants`: `unknown variant "x"; expected one of "a", "b"`. */
export const unknownVariant = (value: string, variants: ReadonlyArray<string>): string =>
  `unknown variant ${JSON.stringify(value)}; expected one of ${listVariants(variants)}`

/**
 * A TOML string that must be one of `variants`. A declaration rather than `Schema.Literal`, so
 * the first reported issue is ours (`unknown variant ...`, or `expected a string, got ...`)
 * instead of one issue per literal.
 */
export const TomlVariant = <const Variants extends readonly [string, ...Array<string>]>(...variants: Variants) =>
  Schema.declare(
    (u): u is Variants[number] => Predicate.isString(u) && variants.some((variant) => variant === u),
    {
      message: (issue) =>
        Predicate.isString(issue.actual)
          ? unknownVariant(issue.actual, variants)
          : `expected a string, got ${describeToml(issue.actual)}`
    }
  )

/** A TOML table whose values are left undecoded. */
export const TomlTable = Schema.declare(isTomlTable, { message: expected("a table") })

/** A TOML table whose values all decode with `value`. */
export const tableOf = <A, I>(value: Schema.Schema<A, I>) =>
  Schema.compose(TomlTable, Schema.Record({ key: Schema.String, value }), { strict: false })

/**
 * The keys of a TOML table: `fields` by TOML key, unknown keys rejected (`unknown field`) whatever
 * the caller's parse options.
 */
export const keysOf = <Fields extends Schema.Struct.Fields>(fields: Fields) =>
  Schema.Struct(fields).annotations({ parseOptions: { onExcessProperty: "error" } })

/**
 * A table inside a table (`[routes.<n>.policy]`, or an inline table): `expected a table, got ...`
 * for anything else, then `keysOf(fields)`.
 */
export const subtable = <Fields extends Schema.Struct.Fields>(fields: Fields) =>
  Schema.compose(TomlTable, keysOf(fields), { strict: false })

/** A TOML array whose elements all decode with `element`. */
export const arrayOf = <A, I>(element: Schema.Schema<A, I>) =>
  Schema.Array(element).annotations({ message: expected("an array") })

/**
 * Converts a TOML value to a JSON-compatible one for `extra_body`: integers become numbers (they
 * must be safe integers), floats must be finite, tables and arrays are converted recursively.
 * TOML datetimes are rejected rather than stringified, so no value changes type silently.
 */
export const toJsonValue = (value: unknown, path: Path): Effect.Effect<unknown, ParseResult.ParseIssue> => {
  if (Predicate.isString(value) || Predicate.isBoolean(value)) return Effect.succeed(value)
  if (Predicate.isBigInt(value)) {
    const n = Number(value)
    return Number.isSafeInteger(n) && BigInt(n) === value
      ? Effect.succeed(n)
      : failAt(path, `integer ${value} cannot be represented exactly in JSON`)
  }
  if (Predicate.isNumber(value)) {
    return Number.isFinite(value) ? Effect.succeed(value) : failAt(path, `float ${value} is not valid JSON`)
  }
  if (Predicate.isDate(value)) return failAt(path, "TOML datetimes are not supported in extra_body")
  if (Schema.is(Schema.Array(Schema.Unknown))(value)) {
    return Effect.forEach(value, (item, index) => toJsonValue(item, [...path, index]))
  }
  if (isTomlTable(value)) return toJsonTable(value, path)
  return failAt(path, `unsupported value of type ${describeToml(value)}`)
}

/** `toJsonValue` for a table, keeping its key order. */
export const toJsonTable = (
  table: Readonly<Record<string, unknown>>,
  path: Path
): Effect.Effect<Record<string, unknown>, ParseResult.ParseIssue> =>
  Effect.reduce(
    Object.entries(table),
    {},
    (acc: Record<string, unknown>, [key, item]) =>
      Effect.map(toJsonValue(item, [...path, key]), (json) => {
        acc[key] = json
        return acc
      })
  )
