/**
 * WARN lines that stand for many requests: a route's "without a verdict" warnings, rate-limited
 * per key (its judge or advisor model and reason). The first occurrence of a key is logged at
 * once; after that, at most one line per {@link intervalMs}: the first occurrence at least that
 * long after the key's previous line is logged, carrying `count`, the occurrences since that
 * previous line (itself included); the ones in between are only counted. Metrics and evidence stay
 * per request: they are the exact record, these lines say that it is happening and how often.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"

/** At most one line per key per this many milliseconds (docs/operations.md). */
export const intervalMs = 10_000

/** One route's rate limit, over its keys. */
export interface Warnings {
  /**
   * One occurrence of `key` at `nowMs`: the count a line written now stands for, or none while
   * the interval since the key's previous line runs (the occurrence is carried by the next line).
   */
  readonly occur: (key: string, nowMs: number) => Option.Option<number>
}

/**
 * A rate limit of one line per key per `everyMs`. Keys are bounded label sets (a model id of the
 * configuration and a reason), so the table stays small. A clock set back restarts the interval.
 */
export const make = (everyMs: number = intervalMs): Warnings => {
  const keys = new Map<string, { lastLineMs: number; held: number }>()
  return {
    occur: (key, nowMs) => {
      const entry = keys.get(key)
      if (entry === undefined) {
        keys.set(key, { lastLineMs: nowMs, held: 0 })
        return Option.some(1)
      }
      const since = nowMs - entry.lastLineMs
      if (since >= 0 && since < everyMs) {
        entry.held++
        return Option.none()
      }
      const count = entry.held + 1
      entry.lastLineMs = nowMs
      entry.held = 0
      return Option.some(count)
    }
  }
}

/**
 * One occurrence of `key` on the fiber's `Clock`: `line(count)` when a line is due now, nothing
 * otherwise.
 */
export const warn = (
  warnings: Warnings,
  key: string,
  line: (count: number) => Effect.Effect<void>
): Effect.Effect<void> =>
  Effect.clockWith((clock) =>
    Option.match(warnings.occur(key, clock.unsafeCurrentTimeMillis()), { onNone: () => Effect.void, onSome: line })
  )
