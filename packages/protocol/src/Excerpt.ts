/**
 * Bounded quotations of caller-supplied values. An error message, a log line or a span attribute
 * that names an offending value quotes at most a short prefix of it (then `…` and its length), and
 * never a whole nested structure, so a large or hostile request cannot be echoed back, amplified,
 * or carried into the logs.
 */

/** How many characters of a caller-supplied string an error message may quote. */
export const maxQuotedChars = 64

/**
 * `text` itself when it is at most {@link maxQuotedChars} characters, else its first
 * {@link maxQuotedChars} characters, `…` and its length (`abc… (100000 chars)`). For names shown
 * unquoted in messages (a model id, a block type).
 */
export const clip = (text: string, max: number = maxQuotedChars): string =>
  text.length <= max ? text : `${text.slice(0, max)}… (${text.length} chars)`

/**
 * A short description of any caller-supplied value: a string quoted as JSON and clipped like
 * {@link clip}; a number, boolean, `null` or `undefined` as itself; an array or an object by its
 * size only (`an array of 3 items`, `an object with 2 keys`).
 */
export const excerpt = (value: unknown): string => {
  if (typeof value === "string") {
    return value.length <= maxQuotedChars
      ? JSON.stringify(value)
      : `${JSON.stringify(value.slice(0, maxQuotedChars))}… (${value.length} chars)`
  }
  if (typeof value === "number" || typeof value === "boolean" || typeof value === "bigint") return String(value)
  if (value === null) return "null"
  if (value === undefined) return "undefined"
  if (Array.isArray(value)) return `an array of ${value.length} item${value.length === 1 ? "" : "s"}`
  if (typeof value === "object") {
    const keys = Object.keys(value).length
    return `an object with ${keys} key${keys === 1 ? "" : "s"}`
  }
  return typeof value
}
