/**
 * TOML text from plain values: keys, strings, numbers, arrays and inline tables, and sections
 * (`[a.b]`) with their `key = value` lines. Only what a deployment file needs; no dates.
 */

/** A value that has a TOML spelling. `undefined` entries of a table are left out. */
export type TomlValue = string | number | bigint | boolean | ReadonlyArray<TomlValue> | TomlTable

/** A TOML table; entries whose value is `undefined` are not written. */
export interface TomlTable {
  readonly [key: string]: TomlValue | undefined
}

const bareKey = /^[A-Za-z0-9_-]+$/

/** A key as written in TOML: bare when it may be, else a quoted string. */
export const key = (name: string): string => bareKey.test(name) ? name : string(name)

/**
 * A TOML basic string. JSON's escapes are TOML's (`\"`, `\\`, `\n`, `\uXXXX`, …); DEL, which JSON
 * leaves alone and TOML forbids in a basic string, is escaped too.
 */
export const string = (text: string): string => JSON.stringify(text).replace(/\u007f/g, "\\u007f")

const number = (n: number): string => {
  if (Number.isNaN(n)) return "nan"
  if (n === Infinity) return "inf"
  if (n === -Infinity) return "-inf"
  // An integral number is written as a TOML integer, any other as a float (`0.5`, `1e-7`).
  return Object.is(n, -0) ? "-0.0" : String(n)
}

const isTable = (value: TomlValue): value is TomlTable => typeof value === "object" && !Array.isArray(value)

/** One value on one line: arrays as `[a, b]`, tables inline as `{ k = v }`. */
export const value = (v: TomlValue): string => {
  if (typeof v === "string") return string(v)
  if (typeof v === "number") return number(v)
  if (typeof v === "bigint" || typeof v === "boolean") return String(v)
  if (isTable(v)) {
    const entries = defined(v).map(([k, item]) => `${key(k)} = ${value(item)}`)
    return entries.length === 0 ? "{}" : `{ ${entries.join(", ")} }`
  }
  return `[${v.map(value).join(", ")}]`
}

/** The entries of a table whose value is not `undefined`, in insertion order. */
export const defined = (table: TomlTable): ReadonlyArray<readonly [string, TomlValue]> =>
  Object.entries(table).flatMap(([k, v]) => v === undefined ? [] : [[k, v] as const])

/**
 * A section: `[path]` and one `key = value` line per entry, except the entries named in
 * `subTables`, which follow as sections of their own (`[path.key]`). An empty path writes the
 * lines without a header (the top of the file).
 */
export const section = (
  path: ReadonlyArray<string>,
  table: TomlTable,
  subTables: ReadonlyArray<string> = []
): string => {
  const lines = path.length === 0 ? [] : [`[${path.map(key).join(".")}]`]
  const nested: Array<string> = []
  for (const [k, v] of defined(table)) {
    if (subTables.includes(k) && isTable(v)) nested.push(section([...path, k], v))
    else lines.push(`${key(k)} = ${value(v)}`)
  }
  return [lines.join("\n"), ...nested].join("\n\n")
}
