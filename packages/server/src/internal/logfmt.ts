/**
 * The server's log line text: the text of Effect's `Logger.logfmtLogger` (same keys in the same
 * order, same quoting), made with less work for the line written on every request — a runtime
 * fiber's id written at once instead of through a set of ids, labels and values tested before they
 * are rewritten or quoted, no match arrays.
 *
 * @internal
 */
import * as Arr from "effect/Array"
import * as Cause from "effect/Cause"
import * as FiberId from "effect/FiberId"
import * as Inspectable from "effect/Inspectable"
import * as Logger from "effect/Logger"

/** A value written as is: no whitespace, double quote or equals sign in it. */
const textOnly = /^[^\s"=]*$/
/** What a label may not hold (each such character written as `_`). */
const labelUnsafe = /[\s="]/
const labelUnsafeAll = new RegExp(labelUnsafe.source, "g")

const label = (key: string): string => (labelUnsafe.test(key) ? key.replace(labelUnsafeAll, "_") : key)

const value = (text: string): string => (textOnly.test(text) ? text : JSON.stringify(text))

const pair = (key: string, text: string): string => ` ${label(key)}=${value(text)}`

const fiberName = (id: FiberId.FiberId): string => (id._tag === "Runtime" ? `#${id.id}` : FiberId.threadName(id))

/** The logfmt line of one log call. */
export const format = (options: Logger.Logger.Options<unknown>): string => {
  let out = `timestamp=${value(options.date.toISOString())}`
  out += pair("level", options.logLevel.label)
  out += pair("fiber", fiberName(options.fiberId))
  for (const message of Arr.ensure(options.message)) out += pair("message", Inspectable.toStringUnknown(message, 0))
  if (!Cause.isEmptyType(options.cause)) out += pair("cause", Cause.pretty(options.cause, { renderErrorCause: true }))
  const now = options.date.getTime()
  for (const span of options.spans) out += ` ${label(span.label)}=${now - span.startTime}ms`
  for (const [key, annotation] of options.annotations) out += pair(key, Inspectable.toStringUnknown(annotation, 0))
  return out
}

/** A logger writing {@link format}'s lines. */
export const logger: Logger.Logger<unknown, string> = Logger.make(format)
