// JSON values for the properties of the wire decoder and its guard: valid values, some with one
// value replaced by any JSON value (objects with a `toString` or `valueOf` field among them) or an
// unknown field added.
import * as FastCheck from "effect/FastCheck"
import * as Predicate from "effect/Predicate"
import * as Arb from "./arbitraries.js"

type Json = unknown

/** Every path to a value inside `value` (the root included). */
const pathsOf = (value: Json, at: ReadonlyArray<string | number> = []): Array<ReadonlyArray<string | number>> => {
  const here = [at]
  if (Array.isArray(value)) return [...here, ...value.flatMap((item, i) => pathsOf(item, [...at, i]))]
  if (Predicate.isRecord(value)) return [...here, ...Object.keys(value).flatMap((k) => pathsOf(value[k], [...at, k]))]
  return here
}

/** `value` with the value at `path` replaced (a fresh copy: JSON round trip). */
const replaced = (value: Json, path: ReadonlyArray<string | number>, by: Json): Json => {
  if (path.length === 0) return by
  const [head, ...rest] = path
  if (Array.isArray(value) && typeof head === "number") {
    return value.map((item, i) => (i === head ? replaced(item, rest, by) : item))
  }
  if (Predicate.isRecord(value) && typeof head === "string") {
    return { ...value, [head]: replaced(value[head], rest, by) }
  }
  return value
}

const jsonValue: FastCheck.Arbitrary<Json> = FastCheck.oneof(
  { weight: 4, arbitrary: FastCheck.jsonValue({ maxDepth: 2 }).map((v): Json => JSON.parse(JSON.stringify(v))) },
  // objects Effect's union decoding cannot turn into a property key
  {
    weight: 1,
    arbitrary: FastCheck.constantFrom("{\"toString\":{}}", "{\"valueOf\":1,\"toString\":[]}").map((t) => JSON.parse(t))
  }
)

/** A valid value, sometimes with one of its values replaced by any JSON value, or an unknown field added. */
export const mutated = (valid: FastCheck.Arbitrary<Json>): FastCheck.Arbitrary<Json> =>
  FastCheck.tuple(valid, FastCheck.nat(), jsonValue, FastCheck.integer({ min: 0, max: 2 }), Arb.identifier).map(
    ([value, choice, by, how, key]) => {
      const copy: Json = JSON.parse(JSON.stringify(value))
      if (how === 0) return copy
      if (how === 1) {
        const paths = pathsOf(copy)
        return replaced(copy, paths[choice % paths.length] ?? [], by)
      }
      return Predicate.isRecord(copy) ? { ...copy, [`x_${key}`]: by } : copy
    }
  )
