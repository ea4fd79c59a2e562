/**
 * The guard of a plain schema, compiled once from its AST into plain functions: what
 * `Schema.is(schema)` answers (`exact` property checks, unknown fields allowed), without Effect's
 * parser machinery — no `Either` per value, no copy of each object, no union candidate search
 * (a few µs per streamed chunk; a measurable share of a large request).
 *
 * Each node of the AST becomes a function: structs check their own properties (`hasOwnProperty`,
 * an absent optional property is fine, an absent required one is not) and every key an index
 * signature covers; tuples and arrays their elements; a union accepts what one member accepts; a
 * refinement runs its own filter after its base. A node this compiler does not know (a
 * declaration such as a class, a template literal, a transformation) is checked by
 * `ParseResult.is` of that node, so the guard answers for every schema; it is the only guard the
 * decoder of wire data uses (`Plain.decoder`).
 *
 * @internal
 */
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"
import type * as AST from "effect/SchemaAST"

export type Guard = (input: unknown) => boolean

/** The options `Schema.is` checks with (and that refinements' filters are given). */
const isOptions: AST.ParseOptions = { exact: true }

const always: Guard = () => true
const never: Guard = () => false
const isUndefined: Guard = (u) => u === undefined

const compiled = new WeakMap<AST.AST, Guard>()

/**
 * The guard of `schema`: a type guard, as `Schema.is(schema)` is (it answers what that answers).
 */
export const guardFor = <A, I, R>(schema: Schema.Schema<A, I, R>): (input: unknown) => input is A => {
  const guard = guardOf(schema.ast)
  return (input): input is A => guard(input)
}

/** The guard of `ast` (compiled once per node, shared by every schema that holds the node). */
export const guardOf = (ast: AST.AST): Guard => {
  const known = compiled.get(ast)
  if (known !== undefined) return known
  // a recursive schema meets itself (through a `Suspend`) while it is compiled: it gets a guard
  // that calls this one, which is there before any guard runs
  const forward: Guard = (u) => self(u)
  compiled.set(ast, forward)
  const self = compile(ast)
  compiled.set(ast, self)
  return self
}

/** `ParseResult.is` of one node: what the compiler leaves to Effect. */
const delegated = (ast: AST.AST): Guard => {
  const is = ParseResult.is(Schema.make(ast))
  return (u) => is(u)
}

const compile = (ast: AST.AST): Guard => {
  switch (ast._tag) {
    case "Literal": {
      const literal = ast.literal
      return (u) => u === literal
    }
    case "UniqueSymbol": {
      const symbol = ast.symbol
      return (u) => u === symbol
    }
    case "UndefinedKeyword":
    case "VoidKeyword":
      return isUndefined
    case "NeverKeyword":
      return never
    case "UnknownKeyword":
    case "AnyKeyword":
      return always
    case "StringKeyword":
      return Predicate.isString
    case "NumberKeyword":
      return Predicate.isNumber
    case "BooleanKeyword":
      return Predicate.isBoolean
    case "BigIntKeyword":
      return Predicate.isBigInt
    case "SymbolKeyword":
      return Predicate.isSymbol
    case "ObjectKeyword":
      return Predicate.isObject
    case "Enums": {
      const values = ast.enums.map(([, value]) => value)
      return (u) => values.some((value) => value === u)
    }
    case "Union": {
      const members = ast.types.map(guardOf)
      return (u) => {
        for (const member of members) if (member(u)) return true
        return false
      }
    }
    case "Suspend": {
      let target: Guard | undefined
      return (u) => (target ??= guardOf(ast.f()))(u)
    }
    case "Refinement": {
      const from = guardOf(ast.from)
      return (u) => from(u) && Option.isNone(ast.filter(u, isOptions, ast))
    }
    case "TupleType":
      return tupleGuard(ast)
    case "TypeLiteral":
      return structGuard(ast)
    case "Declaration":
    case "TemplateLiteral":
    case "Transformation":
      return delegated(ast)
  }
}

const tupleGuard = (ast: AST.TupleType): Guard => {
  // elements after a rest element (`[...A[], B]`) are left to Effect: no wire schema has them
  if (ast.rest.length > 1) return delegated(ast)
  const elements = ast.elements.map((element) => ({ is: guardOf(element.type), optional: element.isOptional }))
  const rest = ast.rest[0] === undefined ? undefined : guardOf(ast.rest[0].type)
  return (u) => {
    if (!Array.isArray(u)) return false
    const length = u.length
    for (let i = 0; i < elements.length; i++) {
      const element = elements[i]
      if (element === undefined) continue
      if (i >= length) {
        if (element.optional) continue
        return false
      }
      if (!element.is(u[i])) return false
    }
    if (rest === undefined) return length <= elements.length
    for (let i = elements.length; i < length; i++) if (!rest(u[i])) return false
    return true
  }
}

/** The keys of `u` an index signature with `parameter` covers (as Effect's parser lists them). */
const keysFor = (parameter: AST.AST): ((u: object) => ReadonlyArray<PropertyKey>) | undefined => {
  switch (parameter._tag) {
    case "StringKeyword":
    case "TemplateLiteral":
      return Object.keys
    case "SymbolKeyword":
      return Object.getOwnPropertySymbols
    case "Refinement":
      return keysFor(parameter.from)
    default:
      return undefined
  }
}

const hasOwn = (u: object, key: PropertyKey): boolean => Object.prototype.hasOwnProperty.call(u, key)

const structGuard = (ast: AST.TypeLiteral): Guard => {
  // an empty struct is any value but `null` and `undefined`, as in Effect
  if (ast.propertySignatures.length === 0 && ast.indexSignatures.length === 0) return Predicate.isNotNullable
  const properties = ast.propertySignatures.map((ps) => ({
    name: ps.name,
    optional: ps.isOptional,
    is: guardOf(ps.type)
  }))
  const indexes = ast.indexSignatures.map((signature) => ({
    keys: keysFor(signature.parameter),
    key: guardOf(signature.parameter),
    is: guardOf(signature.type)
  }))
  if (indexes.some((index) => index.keys === undefined)) return delegated(ast)
  return (u) => {
    if (!Predicate.isRecord(u)) return false
    for (let i = 0; i < properties.length; i++) {
      const property = properties[i]
      if (property === undefined) continue
      if (!hasOwn(u, property.name)) {
        if (property.optional) continue
        return false
      }
      if (!property.is(Reflect.get(u, property.name))) return false
    }
    for (const index of indexes) {
      for (const key of index.keys?.(u) ?? []) {
        if (index.key(key) && !index.is(Reflect.get(u, key))) return false
      }
    }
    return true
  }
}
