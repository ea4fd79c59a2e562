import { assert, describe, it } from "@effect/vitest"
import * as Cause from "effect/Cause"
import * as FastCheck from "effect/FastCheck"
import * as FiberId from "effect/FiberId"
import * as FiberRefs from "effect/FiberRefs"
import * as HashMap from "effect/HashMap"
import * as List from "effect/List"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as LogSpan from "effect/LogSpan"
import * as Logfmt from "../src/internal/logfmt.js"

// text with what logfmt must quote or rewrite: spaces, quotes, equals signs, line breaks, tabs
const text = FastCheck.string({
  unit: FastCheck.constantFrom("a", "Z", "0", " ", "\"", "=", "\n", "\t", "\\", "é", "-"),
  maxLength: 10
})
const scalar = FastCheck.oneof(
  text,
  FastCheck.integer(),
  FastCheck.double(),
  FastCheck.boolean(),
  FastCheck.constant(null),
  FastCheck.constant(undefined),
  FastCheck.bigInt()
)
const loggable = FastCheck.oneof(
  scalar,
  FastCheck.array(scalar, { maxLength: 3 }),
  FastCheck.dictionary(text, scalar, { maxKeys: 3 })
)
const fiberId = FastCheck.oneof(
  FastCheck.constant(FiberId.none),
  FastCheck.tuple(FastCheck.nat(), FastCheck.nat()).map(([id, start]) => FiberId.make(id, start)),
  FastCheck.tuple(FastCheck.nat(), FastCheck.nat()).map(([a, b]) =>
    FiberId.combine(FiberId.make(a, 0), FiberId.make(b, 0))
  )
)
const cause = FastCheck.oneof(
  FastCheck.constant(Cause.empty),
  text.map((message) => Cause.fail(message)),
  text.map((message) => Cause.die(new Error(message)))
)
const options = FastCheck.record({
  level: FastCheck.constantFrom(...LogLevel.allLevels),
  message: FastCheck.oneof(loggable, FastCheck.array(loggable, { maxLength: 3 })),
  fiberId,
  cause,
  spans: FastCheck.array(FastCheck.tuple(text, FastCheck.integer({ min: 0, max: 1_000_000 })), { maxLength: 3 }),
  annotations: FastCheck.array(FastCheck.tuple(text, loggable), { maxLength: 6 }),
  at: FastCheck.integer({ min: 0, max: 4_102_444_800_000 })
}).map((o): Logger.Logger.Options<unknown> => ({
  logLevel: o.level,
  message: o.message,
  fiberId: o.fiberId,
  cause: o.cause,
  context: FiberRefs.empty(),
  spans: List.fromIterable(o.spans.map(([label, start]) => LogSpan.make(label, start))),
  annotations: HashMap.fromIterable(o.annotations),
  date: new Date(o.at)
}))

describe("logfmt", () => {
  it("writes the text of Effect's logfmt logger", () => {
    FastCheck.assert(
      FastCheck.property(options, (o) => {
        assert.strictEqual(Logfmt.format(o), Logger.logfmtLogger.log(o))
      }),
      { numRuns: 500 }
    )
  })

  it("writes a request line's fields as logfmt pairs", () => {
    const line = Logfmt.format({
      logLevel: LogLevel.Info,
      message: ["request"],
      fiberId: FiberId.make(42, 0),
      cause: Cause.empty,
      context: FiberRefs.empty(),
      spans: List.empty(),
      annotations: HashMap.make(["route", "auto"], ["evidence_reason", "judge unavailable"], ["status", 200]),
      date: new Date(0)
    })
    assert.match(line, /^timestamp=1970-01-01T00:00:00\.000Z level=INFO fiber=#42 message=request /)
    assert.include(line, "evidence_reason=\"judge unavailable\"")
    assert.include(line, "status=200")
    assert.include(line, "route=auto")
  })
})
