import { assert, describe, it } from "@effect/vitest"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Equal from "effect/Equal"
import * as FastCheck from "effect/FastCheck"
import * as FiberRef from "effect/FiberRef"
import * as FiberRefs from "effect/FiberRefs"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as TestContext from "effect/TestContext"
import * as LogLine from "../src/LogLine.js"

type Options = Logger.Logger.Options<unknown>

/** Runs `line` with a logger that keeps what it is handed, in the given surroundings. */
const capture = (
  line: Effect.Effect<void>,
  surroundings: {
    readonly minimum: LogLevel.LogLevel
    readonly base: Readonly<Record<string, unknown>>
    readonly span: string | undefined
  }
): ReadonlyArray<Options> => {
  const seen: Array<Options> = []
  const logger = Logger.make((options) => {
    seen.push(options)
  })
  const spanned = surroundings.span === undefined ? line : Effect.withLogSpan(line, surroundings.span)
  Effect.runSync(
    spanned.pipe(
      Effect.annotateLogs(surroundings.base),
      Logger.withMinimumLogLevel(surroundings.minimum),
      Effect.provide(Logger.replace(Logger.defaultLogger, logger)),
      // the test clock: both lines are written at the same instant
      Effect.provide(TestContext.TestContext)
    )
  )
  return seen
}

/** Which refs a logger was handed, and the logging ones' values but the annotations (`annotateLogs` sets those). */
const refsOf = (refs: FiberRefs.FiberRefs) => ({
  refs: new Set(FiberRefs.fiberRefs(refs)),
  level: FiberRefs.getOrDefault(refs, FiberRef.currentLogLevel),
  minimum: FiberRefs.getOrDefault(refs, FiberRef.currentMinimumLogLevel),
  spans: Array.from(FiberRefs.getOrDefault(refs, FiberRef.currentLogSpan))
})

const levels = FastCheck.constantFrom(...LogLevel.allLevels)
const names = FastCheck.constantFrom("route", "status", "model", "error", "streaming", "a b", "x=y")
const values = FastCheck.oneof(
  FastCheck.string({ maxLength: 8 }),
  FastCheck.integer(),
  FastCheck.boolean(),
  FastCheck.double({ noNaN: true })
)

describe("LogLine", () => {
  it("hands the loggers what Effect.logWithLevel with Effect.annotateLogs hands them", () => {
    FastCheck.assert(
      FastCheck.property(
        levels,
        levels,
        FastCheck.string({ maxLength: 12 }),
        FastCheck.dictionary(names, values, { maxKeys: 4 }),
        FastCheck.dictionary(names, values, { maxKeys: 6 }),
        FastCheck.option(FastCheck.constantFrom("outer", "handler"), { nil: undefined }),
        (level, minimum, message, base, fields, span) => {
          const surroundings = { minimum, base, span }
          const expected = capture(
            Effect.logWithLevel(level, message).pipe(Effect.annotateLogs(fields)),
            surroundings
          )
          const actual = capture(LogLine.log(level, message, fields), surroundings)
          assert.strictEqual(actual.length, LogLevel.greaterThan(minimum, level) ? 0 : 1)
          assert.strictEqual(actual.length, expected.length)
          const [a, e] = [actual[0], expected[0]]
          if (a === undefined || e === undefined) return
          assert.deepStrictEqual(a.message, e.message)
          assert.strictEqual(a.logLevel, e.logLevel)
          assert.isTrue(Cause.isEmpty(a.cause))
          assert.isTrue(Cause.isEmpty(e.cause))
          // the same entries in the same order (a field replaces a base annotation of its name)
          assert.deepStrictEqual(Array.from(a.annotations), Array.from(e.annotations))
          assert.deepStrictEqual(Array.from(a.spans), Array.from(e.spans))
          assert.strictEqual(a.date.getTime(), e.date.getTime())
          assert.strictEqual(a.fiberId._tag, e.fiberId._tag)
          // the fiber's own refs: the same as under annotateLogs, but the annotations, which keep
          // only the fiber's own (the line's are not set in the fiber)
          assert.deepStrictEqual(refsOf(a.context), refsOf(e.context))
          const sorted = (entries: Iterable<readonly [string, unknown]>) =>
            Array.from(entries).sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0))
          assert.deepStrictEqual(
            sorted(FiberRefs.getOrDefault(a.context, FiberRef.currentLogAnnotations)),
            sorted(Object.entries(base))
          )
        }
      )
    )
  })

  it.effect("leaves the fiber's annotations as they were", () =>
    Effect.gen(function*() {
      const before = yield* FiberRef.get(FiberRef.currentLogAnnotations)
      yield* LogLine.log(LogLevel.Info, "request", { status: 200 })
      assert.isTrue(Equal.equals(yield* FiberRef.get(FiberRef.currentLogAnnotations), before))
    }).pipe(Effect.annotateLogs({ route: "r" })))

  it("writes the line the server's logfmt logger writes for the annotated log", () => {
    const lines = (line: Effect.Effect<void>) => {
      const out: Array<string> = []
      const logger = Logger.map(Logger.logfmtLogger, (text) => out.push(text.replace(/fiber=#\d+/, "fiber=#")))
      Effect.runSync(line.pipe(Effect.provide(Logger.replace(Logger.defaultLogger, logger))))
      return out
    }
    const fields = { route: "auto", status: 502, streaming: false, evidence_reason: "judge unavailable" }
    const strip = (text: string) => text.replace(/^timestamp=\S+ /, "")
    const written = lines(LogLine.log(LogLevel.Warning, "request", fields)).map(strip)
    assert.deepStrictEqual(
      written,
      lines(Effect.logWarning("request").pipe(Effect.annotateLogs(fields))).map(strip)
    )
    assert.match(written[0] ?? "", /level=WARN fiber=# message=request /)
    assert.match(written[0] ?? "", /evidence_reason="judge unavailable"/)
  })
})
