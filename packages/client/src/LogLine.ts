/**
 * One annotated log line, written in the step that asks for it. `Effect.logInfo(message).pipe(
 * Effect.annotateLogs(fields))` sets the fiber's log annotations for the duration of the log
 * (`FiberRef` locally: an acquire/use/release, two copies of the fiber's refs, and a structural
 * comparison of the old and new annotation maps) only to read them back at once; for a line
 * written on every request that is most of its cost. {@link log} hands the fiber's loggers exactly
 * what that pair hands them — the same level, message, annotations (the fiber's own, then
 * `fields` in their order, a field replacing an annotation of its name), log spans, fiber id and
 * date — without changing the fiber's annotations. The fiber refs handed along are the fiber's
 * own, so the annotations in them are the fiber's without `fields` (a logger reads the line's
 * fields from its `annotations`, as Effect's loggers do).
 */
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import type * as Fiber from "effect/Fiber"
import * as FiberRef from "effect/FiberRef"
import * as HashMap from "effect/HashMap"
import * as HashSet from "effect/HashSet"
import * as Inspectable from "effect/Inspectable"
import * as LogLevel from "effect/LogLevel"

/**
 * Writes `message` at `level` with `fields` as annotations to `fiber`'s loggers, at once (`fiber`:
 * the running one, from inside `Effect.withFiberRuntime`). Nothing is written below the fiber's
 * minimum log level.
 */
export const unsafeLog = (
  fiber: Fiber.RuntimeFiber<unknown, unknown>,
  level: LogLevel.LogLevel,
  message: string,
  fields: Readonly<Record<string, unknown>>
): void => {
  if (LogLevel.greaterThan(fiber.getFiberRef(FiberRef.currentMinimumLogLevel), level)) return
  const loggers = fiber.getFiberRef(FiberRef.currentLoggers)
  if (HashSet.size(loggers) === 0) return
  const annotations = HashMap.mutate(fiber.getFiberRef(FiberRef.currentLogAnnotations), (map) => {
    for (const key in fields) HashMap.set(map, key, fields[key])
  })
  const spans = fiber.getFiberRef(FiberRef.currentLogSpan)
  const context = fiber.getFiberRefs()
  const date = new Date(Context.get(fiber.currentDefaultServices, Clock.Clock).unsafeCurrentTimeMillis())
  // `Effect.log*` hands loggers the list of its arguments
  const messages = [message]
  const fiberId = fiber.id()
  Inspectable.withRedactableContext(context, () => {
    for (const logger of loggers) {
      logger.log({ fiberId, logLevel: level, message: messages, cause: Cause.empty, context, spans, annotations, date })
    }
  })
}

/**
 * `Effect.logWithLevel(level, message).pipe(Effect.annotateLogs(fields))`, in one step: the same
 * line to the same loggers.
 */
export const log = (
  level: LogLevel.LogLevel,
  message: string,
  fields: Readonly<Record<string, unknown>>
): Effect.Effect<void> =>
  Effect.withFiberRuntime((fiber) => {
    unsafeLog(fiber, level, message, fields)
    return Effect.void
  })
