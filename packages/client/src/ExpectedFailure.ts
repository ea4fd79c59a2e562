/**
 * Typed failures made without a stack trace: the expected ones (a refused connection, a deadline, a
 * non-2xx answer, an open breaker, an unusable judge reply), made once per failed call and shown
 * only through their tag, fields and `message` (envelopes, evidence, metrics, log fields). V8
 * captures a stack trace when an `Error` is constructed — about 10 µs with the default 10 frames —
 * and these errors are `Error`s (`Data.TaggedError`, `Schema.TaggedError`); nothing reads their
 * stack. Defects keep theirs.
 */

/**
 * `construct()` with no stack trace captured (`Error.stackTraceLimit` is 0 while it runs, then
 * restored). The error is otherwise the same: its tag, fields, `message`, `toJSON` and
 * `String(error)`; its `stack` is its first line only.
 *
 * @example
 * Effect.fail(ExpectedFailure.make(() => new TransportError({ target, reason })))
 */
export const make = <E>(construct: () => E): E => {
  const limit = Error.stackTraceLimit
  Error.stackTraceLimit = 0
  try {
    return construct()
  } finally {
    Error.stackTraceLimit = limit
  }
}
