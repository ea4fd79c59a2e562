/**
 * A deployment table as two steps of one Schema: its keys (structure: TOML types, enum variants,
 * unknown keys rejected) and its rules (defaults, ranges, consistency, references to other
 * tables). The deployment loader runs the keys of every table before any rule, so a structural
 * problem anywhere is reported before a rule's; a library user decodes one table with `schema`.
 */
import * as Arr from "effect/Array"
import * as Effect from "effect/Effect"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import type { Path } from "./Toml.js"

/**
 * A table: `keys` decodes its TOML keys, `rules` turns them into `A` given the tables it refers to
 * (`Context`), failing with an issue at a key path relative to the table.
 */
export interface Table<K, I, A, Context> {
  readonly keys: Schema.Schema<K, I>
  readonly rules: (keys: K, context: Context) => Effect.Effect<A, ParseResult.ParseIssue>
}

/** A table of `keys` and `rules` (the types inferred from both). */
export const make = <K, I, A, Context>(
  keys: Schema.Schema<K, I>,
  rules: (keys: K, context: Context) => Effect.Effect<A, ParseResult.ParseIssue>
): Table<K, I, A, Context> => ({ keys, rules })

/**
 * `table` as one Schema over `context`: the keys, then the rules. Decoding only: a decoded table
 * holds resolved references (targets, clients) and is not encoded back to TOML.
 */
export const schema = <K, I, A, Context>(table: Table<K, I, A, Context>, context: Context): Schema.Schema<A, I> =>
  Schema.declare<A, I, readonly [Schema.Schema<K, I>]>([table.keys], {
    decode: (keys) => (input, options) =>
      Effect.flatMap(ParseResult.decodeUnknown(keys)(input, options), (decoded) => table.rules(decoded, context)),
    encode: () => (input, _options, ast) =>
      ParseResult.fail(new ParseResult.Forbidden(ast, input, "a decoded deployment table is not encoded back"))
  })

/** Runs the rules of a table nested at `path` (`classifier`, `subagents`, ...), its issues under that path. */
export const nested = <A>(
  path: Path,
  rules: Effect.Effect<A, ParseResult.ParseIssue>
): Effect.Effect<A, ParseResult.ParseIssue> =>
  Effect.mapError(
    rules,
    (issue) => Arr.isNonEmptyReadonlyArray(path) ? new ParseResult.Pointer(path, undefined, issue) : issue
  )
