/**
 * The JSON Schema subset a custom classifier route's `response_schema` may use: `type`,
 * `properties`, `required`, `enum`, `items`, `additionalProperties`, and the annotations `title`
 * and `description`. {@link compile} meta-validates a schema document (any other keyword is
 * rejected, so a schema never silently means less than it says); {@link validate} checks a judge's
 * verdict against the compiled schema.
 */
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"

/** The instance types of `type`. */
export const types = ["object", "array", "string", "number", "integer", "boolean", "null"] as const
export type JsonType = (typeof types)[number]

/** The keywords {@link compile} accepts. */
export const keywords = [
  "type",
  "properties",
  "required",
  "enum",
  "items",
  "additionalProperties",
  "title",
  "description"
] as const

/** A compiled schema: a boolean schema (`true` accepts everything, `false` nothing) or a keyword set. */
export type JsonSchema = boolean | {
  /** Allowed instance types; none means any type. */
  readonly type: Option.Option<ReadonlyArray<JsonType>>
  readonly properties: ReadonlyArray<readonly [string, JsonSchema]>
  readonly required: ReadonlyArray<string>
  readonly enum: Option.Option<ReadonlyArray<unknown>>
  readonly items: Option.Option<JsonSchema>
  /** Members not listed in `properties` must match it (`true` when absent). */
  readonly additionalProperties: JsonSchema
}

/** A problem found in a schema document or an instance: where (a JSON Pointer) and what. */
export interface Problem {
  readonly at: string
  readonly message: string
}

const escape = (token: string) => token.replace(/~/g, "~0").replace(/\//g, "~1")
const child = (at: string, token: string | number) => `${at}/${escape(String(token))}`
const problem = (at: string, message: string): Either.Either<never, Problem> => Either.left({ at, message })

const isType = (u: unknown): u is JsonType => Predicate.isString(u) && types.some((t) => t === u)
const isKeyword = (key: string): boolean => keywords.some((k) => k === key)

const compileAt = (document: unknown, at: string): Either.Either<JsonSchema, Problem> => {
  if (Predicate.isBoolean(document)) return Either.right(document)
  if (!Predicate.isRecord(document) || Array.isArray(document)) {
    return problem(at, "a schema must be an object or a boolean")
  }
  for (const key of Object.keys(document)) {
    if (!isKeyword(key)) {
      return problem(
        child(at, key),
        `unsupported keyword ${JSON.stringify(key)} (supported: ${keywords.join(", ")})`
      )
    }
  }
  for (const key of ["title", "description"] as const) {
    if (document[key] !== undefined && !Predicate.isString(document[key])) {
      return problem(child(at, key), `${key} must be a string`)
    }
  }

  let type: Option.Option<ReadonlyArray<JsonType>> = Option.none()
  const rawType = document.type
  if (rawType !== undefined) {
    const list: ReadonlyArray<unknown> = Array.isArray(rawType) ? rawType : [rawType]
    if (list.length === 0) return problem(child(at, "type"), "type must not be an empty array")
    const checked: Array<JsonType> = []
    for (const entry of list) {
      if (!isType(entry)) return problem(child(at, "type"), `type must name one of ${types.join(", ")}`)
      if (checked.includes(entry)) return problem(child(at, "type"), `type lists ${entry} twice`)
      checked.push(entry)
    }
    type = Option.some(checked)
  }

  const properties: Array<readonly [string, JsonSchema]> = []
  if (document.properties !== undefined) {
    const raw = document.properties
    if (!Predicate.isRecord(raw) || Array.isArray(raw)) {
      return problem(child(at, "properties"), "properties must be an object of schemas")
    }
    for (const [name, sub] of Object.entries(raw)) {
      const compiled = compileAt(sub, child(child(at, "properties"), name))
      if (Either.isLeft(compiled)) return compiled
      properties.push([name, compiled.right])
    }
  }

  const required: Array<string> = []
  if (document.required !== undefined) {
    const raw = document.required
    if (!Array.isArray(raw)) return problem(child(at, "required"), "required must be an array of strings")
    for (const [i, name] of raw.entries()) {
      if (!Predicate.isString(name)) return problem(child(child(at, "required"), i), "required entries must be strings")
      if (required.includes(name)) return problem(child(child(at, "required"), i), `required lists ${name} twice`)
      required.push(name)
    }
  }

  let enumValues: Option.Option<ReadonlyArray<unknown>> = Option.none()
  if (document.enum !== undefined) {
    const raw: unknown = document.enum
    if (!Array.isArray(raw) || raw.length === 0) return problem(child(at, "enum"), "enum must be a non-empty array")
    enumValues = Option.some(raw)
  }

  let items: Option.Option<JsonSchema> = Option.none()
  if (document.items !== undefined) {
    const compiled = compileAt(document.items, child(at, "items"))
    if (Either.isLeft(compiled)) return compiled
    items = Option.some(compiled.right)
  }

  let additionalProperties: JsonSchema = true
  if (document.additionalProperties !== undefined) {
    const compiled = compileAt(document.additionalProperties, child(at, "additionalProperties"))
    if (Either.isLeft(compiled)) return compiled
    additionalProperties = compiled.right
  }

  return Either.right({ type, properties, required, enum: enumValues, items, additionalProperties })
}

/**
 * Meta-validate a schema document (already parsed from JSON) and compile it. Fails with the first
 * problem: a keyword outside {@link keywords}, or a keyword with a malformed value; `at` is the
 * JSON Pointer of the offending place in the document (`""` for the whole document).
 */
export const compile = (document: unknown): Either.Either<JsonSchema, Problem> => compileAt(document, "")

/** Structural equality of JSON values (object member order ignored). */
export const jsonEqual = (a: unknown, b: unknown): boolean => {
  if (a === b) return true
  if (Array.isArray(a) || Array.isArray(b)) {
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((x, i) => jsonEqual(x, b[i]))
  }
  if (Predicate.isRecord(a) && Predicate.isRecord(b)) {
    const keys = Object.keys(a)
    return keys.length === Object.keys(b).length && keys.every((k) => Object.hasOwn(b, k) && jsonEqual(a[k], b[k]))
  }
  return false
}

const typeMatches = (type: JsonType, value: unknown): boolean => {
  switch (type) {
    case "object":
      return Predicate.isRecord(value) && !Array.isArray(value)
    case "array":
      return Array.isArray(value)
    case "string":
      return Predicate.isString(value)
    case "number":
      return Predicate.isNumber(value) && Number.isFinite(value)
    case "integer":
      return Predicate.isNumber(value) && Number.isInteger(value)
    case "boolean":
      return Predicate.isBoolean(value)
    case "null":
      return value === null
  }
}

const validateAt = (schema: JsonSchema, value: unknown, at: string): Option.Option<Problem> => {
  if (schema === true) return Option.none()
  if (schema === false) return Option.some({ at, message: "no value is allowed here" })
  if (Option.isSome(schema.type) && !schema.type.value.some((type) => typeMatches(type, value))) {
    return Option.some({ at, message: `expected ${schema.type.value.join(" or ")}` })
  }
  if (Option.isSome(schema.enum) && !schema.enum.value.some((allowed) => jsonEqual(allowed, value))) {
    return Option.some({ at, message: "value is not one of the enum values" })
  }
  if (Array.isArray(value)) {
    if (Option.isSome(schema.items)) {
      for (const [i, element] of value.entries()) {
        const found = validateAt(schema.items.value, element, child(at, i))
        if (Option.isSome(found)) return found
      }
    }
  } else if (Predicate.isRecord(value)) {
    for (const name of schema.required) {
      if (!Object.hasOwn(value, name)) return Option.some({ at, message: `missing required member ${name}` })
    }
    for (const [name, member] of Object.entries(value)) {
      const declared = schema.properties.find(([key]) => key === name)
      const found = validateAt(
        declared === undefined ? schema.additionalProperties : declared[1],
        member,
        child(at, name)
      )
      if (Option.isSome(found)) return found
    }
  }
  return Option.none()
}

/** The first place where `value` does not match `schema` (none when it matches). */
export const validate = (schema: JsonSchema, value: unknown): Option.Option<Problem> => validateAt(schema, value, "")
