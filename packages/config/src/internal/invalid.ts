/**
 * A deployment file's `InvalidConfig`, made of a key path and a message, or of the first issue a
 * table's keys or rules fail with (`Toml.issueAt`), at its full key path; and the decoder of one
 * table that reports so.
 *
 * @internal
 */
import { formatPath, type Path } from "@switchyard-ts/routing/Toml"
import * as Effect from "effect/Effect"
import * as ParseResult from "effect/ParseResult"
import * as Predicate from "effect/Predicate"
import type * as Schema from "effect/Schema"
import { InvalidConfig } from "../InvalidConfig.js"

/** Builds an `InvalidConfig` whose message starts with the rendered path. */
export const invalid = (path: Path, text: string): InvalidConfig => {
  const rendered = formatPath(path)
  return new InvalidConfig({ path: rendered, message: rendered === "" ? text : `${rendered}: ${text}` })
}

/** Fails with `invalid(path, text)`. */
export const fail = (path: Path, text: string): Effect.Effect<never, InvalidConfig> => Effect.fail(invalid(path, text))

/** The first issue of `issue` as an `InvalidConfig` at its full path (`path`, then the issue's own). */
export const invalidAt = (path: Path, issue: ParseResult.ParseIssue): InvalidConfig => {
  const [first] = ParseResult.ArrayFormatter.formatIssueSync(issue)
  if (first === undefined) return invalid(path, "invalid value")
  const at = [...path, ...first.path.map((key) => (Predicate.isSymbol(key) ? String(key) : key))]
  switch (first._tag) {
    case "Missing":
      return invalid(at, "missing")
    case "Unexpected":
      return invalid(at, "unknown field")
    default:
      return invalid(at, first.message)
  }
}

/** Runs an effect over the table found at `path` (its keys or its rules), its first issue becoming an `InvalidConfig` at its full path. */
export const reportAt = <A>(
  path: Path,
  rules: Effect.Effect<A, ParseResult.ParseIssue>
): Effect.Effect<A, InvalidConfig> => Effect.mapError(rules, (issue) => invalidAt(path, issue))

/**
 * Decodes `input` (found at `path`) with `schema`, rejecting unknown keys unless `excess` is
 * `"ignore"`. The first issue becomes an `InvalidConfig` at the issue's full path: `missing`,
 * `unknown field`, or the leaf's message.
 */
export const decodeAt = <A, I>(
  schema: Schema.Schema<A, I>,
  path: Path,
  input: unknown,
  excess: "error" | "ignore" = "error"
): Effect.Effect<A, InvalidConfig> =>
  reportAt(path, ParseResult.decodeUnknown(schema, { errors: "first", onExcessProperty: excess })(input))
