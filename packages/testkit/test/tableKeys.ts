/**
 * Values of a deployment table's keys, generated from the table's own Schema: the decoded side of
 * `table.keys` (what the keys of a deployment file read as, before any rule), walked node by node,
 * so a key a table gains is a key generated here without a change. A node of a shape with no TOML
 * value (a datetime, a symbol, ...) throws, naming its key path: the test asking for it fails.
 *
 * Strings are any Unicode text (a TOML file cannot hold a lone surrogate, so none is made),
 * integers any 64-bit TOML integer (`bigint`), floats any double (NaN, infinities and -0
 * included). An opaque node (a `Schema.declare` of the tables: a variant, an untyped table, a
 * union of key sets) is generated from the variants its rejection message lists
 * (`unknown variant "x"; expected one of "a", "b"`), from its type parameters, or else from TOML
 * values it accepts.
 */
import type * as D from "@switchyard-ts/testkit/DeploymentBuilder"
import * as FastCheck from "effect/FastCheck"
import * as ParseResult from "effect/ParseResult"
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"
import * as AST from "effect/SchemaAST"

/**
 * Whether `u` is made of TOML values only (strings, numbers, bigints, booleans, arrays and plain
 * tables, which may leave keys `undefined`).
 */
export const isToml = (u: unknown): boolean => {
  if (Predicate.isString(u) || Predicate.isNumber(u) || Predicate.isBigInt(u) || Predicate.isBoolean(u)) return true
  if (Array.isArray(u)) return u.every(isToml)
  const prototype: unknown = Predicate.isRecord(u) ? Object.getPrototypeOf(u) : undefined
  if (Predicate.isRecord(u) && (prototype === Object.prototype || prototype === null)) {
    return Object.values(u).every((item) => item === undefined || isToml(item))
  }
  return false
}

/** Keys a deployment may not hold (the loader refuses them): any other text is a key. */
const unsafeKeys = new Set(["__proto__", "constructor", "prototype"])

/** Any Unicode text, ASCII most of the time. */
export const text: FastCheck.Arbitrary<string> = FastCheck.oneof(
  FastCheck.string({ maxLength: 12 }),
  FastCheck.string({ unit: "grapheme", maxLength: 8 }),
  FastCheck.string({
    unit: FastCheck.constantFrom("\"", "\\", "\n", "\t", "\u0000", "\u007f", "'", "#", "=", "."),
    maxLength: 4
  })
)

const tableKey = text.filter((key) => !unsafeKeys.has(key))

/** Any 64-bit integer, as TOML has them. */
const integer = FastCheck.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n })

/** Any double. */
const float = FastCheck.double()

/**
 * A TOML float as the builder writes one: a number with an integral value (`1`, not `-0`) is its
 * spelling of the integer (`1`), so a float is any double but those.
 */
const tomlFloat = float.filter((n) => !Number.isInteger(n) || Object.is(n, -0))

/** Any TOML value. */
export const tomlValue: FastCheck.Arbitrary<D.TomlValue> = FastCheck.letrec<{ value: D.TomlValue }>((tie) => ({
  value: FastCheck.oneof(
    { depthSize: "small", withCrossShrink: true },
    text,
    integer,
    tomlFloat,
    FastCheck.boolean(),
    FastCheck.array(tie("value"), { maxLength: 3 }),
    FastCheck.dictionary(tableKey, tie("value"), { maxKeys: 3 })
  )
})).value

/** `path` as the key path of a message. */
const render = (path: ReadonlyArray<string>) => path.length === 0 ? "(the table)" : path.join(".")

/**
 * The variants a declaration lists when it refuses a string that is none of them, or none when its
 * message lists none.
 */
const variantsOf = (ast: AST.Declaration): ReadonlyArray<string> | undefined => {
  const probe = "\u0000not a variant"
  const result = ParseResult.decodeUnknownEither(Schema.make(ast))(probe)
  if (result._tag === "Right") return undefined
  const match = /expected one of (.+)$/.exec(ParseResult.TreeFormatter.formatIssueSync(result.left))
  if (match === null) return undefined
  const listed: unknown = JSON.parse(`[${match[1]}]`)
  return Array.isArray(listed) && listed.every(Predicate.isString) ? listed : undefined
}

/** The TOML values a declaration accepts; fails when a few hundred TOML values hold none. */
const acceptedValues = (ast: AST.Declaration, path: ReadonlyArray<string>): FastCheck.Arbitrary<unknown> => {
  const accepts = Schema.is(Schema.make(ast))
  const candidates = FastCheck.oneof(text, FastCheck.array(text, { maxLength: 3 }), tomlValue)
  if (!FastCheck.sample(candidates, { numRuns: 500, seed: 1 }).some(accepts)) {
    throw new Error(`no TOML value is accepted at ${render(path)}`)
  }
  return candidates.filter(accepts)
}

/** Values at `path` of what `ast` decodes to; `overrides` by key path (`a.b`). */
const generator = (overrides: Readonly<Record<string, FastCheck.Arbitrary<unknown>>>) => {
  const declaration = (ast: AST.Declaration, path: ReadonlyArray<string>): FastCheck.Arbitrary<unknown> => {
    if (ast.typeParameters.length > 0) {
      return FastCheck.oneof(...ast.typeParameters.map((parameter) => node(parameter, path)))
    }
    const variants = variantsOf(ast)
    return variants === undefined || variants.length === 0
      ? acceptedValues(ast, path)
      : FastCheck.constantFrom(...variants)
  }

  const typeLiteral = (ast: AST.TypeLiteral, path: ReadonlyArray<string>): FastCheck.Arbitrary<unknown> => {
    const [signature, ...moreSignatures] = ast.indexSignatures
    if (signature !== undefined) {
      if (ast.propertySignatures.length > 0 || moreSignatures.length > 0) {
        throw new Error(`a table of named keys and other keys at ${render(path)}`)
      }
      return FastCheck.dictionary(tableKey, node(signature.type, [...path, "*"]), { maxKeys: 3 })
    }
    const fields: Record<string, FastCheck.Arbitrary<unknown>> = {}
    const required: Array<string> = []
    for (const property of ast.propertySignatures) {
      if (!Predicate.isString(property.name)) throw new Error(`a key that is not a string at ${render(path)}`)
      fields[property.name] = node(property.type, [...path, property.name])
      if (!property.isOptional) required.push(property.name)
    }
    return FastCheck.record(fields, { requiredKeys: required })
  }

  const node = (ast: AST.AST, path: ReadonlyArray<string>): FastCheck.Arbitrary<unknown> => {
    const override = overrides[path.join(".")]
    if (override !== undefined) return override
    switch (ast._tag) {
      case "StringKeyword":
        return text
      case "BooleanKeyword":
        return FastCheck.boolean()
      case "BigIntKeyword":
        return integer
      case "NumberKeyword":
        return float
      case "UnknownKeyword":
        return tomlValue
      case "Literal":
        return FastCheck.constant(ast.literal)
      case "Union": {
        // an optional key's `undefined` is its absence
        const members = ast.types.filter((member) => member._tag !== "UndefinedKeyword")
        return FastCheck.oneof(...members.map((member) => node(member, path)))
      }
      case "TupleType": {
        const [rest, ...more] = ast.rest
        if (ast.elements.length > 0 || rest === undefined || more.length > 0) {
          throw new Error(`a tuple at ${render(path)}`)
        }
        return FastCheck.array(node(rest.type, [...path, "[]"]), { maxLength: 3 })
      }
      case "TypeLiteral":
        return typeLiteral(ast, path)
      case "Refinement":
        return node(ast.from, path).filter(Schema.is(Schema.make(ast)))
      case "Declaration":
        return declaration(ast, path)
      default:
        throw new Error(`no TOML value for a ${ast._tag} at ${render(path)}`)
    }
  }
  return node
}

/**
 * Values of what `keys` decodes to. `overrides` replaces the values of keys (by key path, `a.b`)
 * whose rule is a refinement of the whole table, which this cannot read (an LLM client's `format`).
 */
export const of = (
  keys: Schema.Schema.AnyNoContext,
  overrides: Readonly<Record<string, FastCheck.Arbitrary<unknown>>> = {}
): FastCheck.Arbitrary<unknown> => generator(overrides)(AST.typeAST(keys.ast), [])
