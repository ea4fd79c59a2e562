/**
 * The decoder of wire data: `Schema.decodeUnknownEither` with two differences.
 *
 * - A plain schema — one without transformations (structs, unions, literals, arrays, records,
 *   refinements), whose decoded value under `onExcessProperty: "preserve"` is a copy of its input,
 *   unknown fields included — checks the input with the schema's guard and keeps it, instead of
 *   building that copy: every request body, answer and streamed chunk is decoded. The guard answers
 *   what `Schema.is` answers, compiled once from the schema's AST into plain functions
 *   (`internal/guard.ts`). An input that fails the check is decoded, to give
 *   the `ParseError` a decode gives. A schema with a transformation is decoded.
 * - An input the schema cannot read fails, never throws: `JSON.parse` makes objects with a field
 *   named `toString` or `valueOf` (`{"role": {"toString": {}}}`), which Effect's union decoding
 *   turns into a property key and throws a `TypeError` on. Such an input is a `ParseError` at the
 *   path of that object, like any other mismatch.
 */
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"
import * as AST from "effect/SchemaAST"
import type { ParseOptions } from "effect/SchemaAST"
import { guardFor } from "./internal/guard.js"
import * as Nesting from "./Nesting.js"

/** Whether decoding with `schema` gives its input back (it has no transformation anywhere). */
export const isPlain = (schema: Schema.Schema.Any): boolean => AST.typeAST(schema.ast) === schema.ast

/** A field that makes an object unusable as a property key when it holds no function. */
const unreadableKeys = ["toString", "valueOf"] as const

const isUnreadable = (value: unknown): boolean =>
  Predicate.isObject(value) && !Array.isArray(value) &&
  unreadableKeys.some((key) => Object.hasOwn(value, key) && !Predicate.isFunction(Reflect.get(value, key)))

/**
 * The path to the first object of `input` that cannot be turned into a property key (depth first;
 * `Nesting.find`, no recursion).
 */
const unreadablePath = (input: unknown): ReadonlyArray<PropertyKey> | undefined => Nesting.find(input, isUnreadable)

const valueAt = (input: unknown, path: ReadonlyArray<PropertyKey>): unknown =>
  path.reduce<unknown>((value, key) => (Predicate.isObject(value) ? Reflect.get(value, key) : undefined), input)

/** The `ParseError` of an input whose decoding threw (see the module documentation). */
const unreadable = (ast: AST.AST, input: unknown): ParseResult.ParseError => {
  const path = unreadablePath(input) ?? []
  const issue = new ParseResult.Type(
    ast,
    valueAt(input, path),
    "an object with a field named toString or valueOf cannot be read here"
  )
  const [head, ...rest] = path
  return ParseResult.parseError(head === undefined ? issue : new ParseResult.Pointer([head, ...rest], input, issue))
}

/**
 * `Schema.decodeUnknownEither(schema, options)` for wire data (see the module documentation). The
 * input is kept only when `options.onExcessProperty` is `"preserve"`: with the default (`"ignore"`)
 * a decode drops unknown fields, and the input cannot stand for it.
 */
export const decoder = <A, I>(
  schema: Schema.Schema<A, I>,
  options: ParseOptions
): (input: unknown) => Either.Either<A, ParseResult.ParseError> => {
  const decode = Schema.decodeUnknownEither(schema, options)
  const is = options.onExcessProperty === "preserve" && isPlain(schema) ? guardFor(schema) : undefined
  return (input) => {
    try {
      return is !== undefined && is(input) ? Either.right(input) : decode(input)
    } catch {
      return Either.left(unreadable(schema.ast, input))
    }
  }
}
