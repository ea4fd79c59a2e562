/**
 * The session totals (`SessionTotals`) kept in Redis, used when the session store is Redis
 * (`[sessions] store = "redis"`), so that every replica's `/v1/session-stats` gives the same
 * numbers: the sums of all replicas' routing log lines of the session.
 *
 * - One hash per session, `<keyPrefix><session id>` (prefix `switchyard:stats:` by default), of
 *   integer counters: `m:<model>:<stat>` per model (`calls`, `prompt`, `cached`, `cache_creation`,
 *   `completion`, and the model's cost), `b:<bucket>:<stat>` per cost bucket of
 *   `SessionTotals.buckets` (`answer`, `routing`, `baseline`). A cost is `femto_hi` and `femto_lo`
 *   (femto-dollars = hi · 10⁹ + lo), `unknown`, `estimated` and `reported` (calls by kind).
 * - A line's increments (`SessionTotals.addLine` into an empty tally) go in one `MULTI`/`EXEC`:
 *   `HINCRBY` per non-zero field, then `PEXPIRE <ttlMs>` (the session store's `ttl_ms`). It is
 *   atomic, so a read never sees half a line; the hash expires `ttl_ms` after the session's last
 *   line (reading it does not refresh it).
 * - The bound: `HINCRBY` is signed 64-bit, so one femto-dollar field would overflow at about
 *   9,223 USD. Each cost is split instead: `femto_hi` counts whole micro-dollars, `femto_lo` the
 *   remainder of each increment (below 10⁹), read back as hi · 10⁹ + lo, exact to the femto-dollar
 *   up to about 9.2 · 10¹² USD per field and 9.2 · 10⁹ calls.
 * - `get` reads the hash (`HGETALL`) and renders it with `SessionTotals.statsOf`: the same JSON
 *   as the in-memory store gives for the same lines. No hash: no session.
 * - An outage never fails nor delays a request: `add` runs in the background, on a fiber of the
 *   layer's scope, at most `maxInFlight` at once, each command bounded by the connection's timeout.
 *   An increment that fails, or finds `maxInFlight` reached, is lost: counted in
 *   `switchyard_session_store_errors_total{operation="totals_add"}` and logged as the session
 *   store logs (the in-flight limit: one warning per minute at most). A `get` that fails is counted
 *   under `totals_get` and fails with `TotalsUnavailable` (session-stats answers 503).
 * - Closing the scope waits (at most one second) for the increments still in flight.
 */
import * as Spans from "@switchyard-ts/client/Spans"
import * as TaggedMetric from "@switchyard-ts/client/TaggedMetric"
import type * as Pricing from "@switchyard-ts/routing/Pricing"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as FiberSet from "effect/FiberSet"
import * as Layer from "effect/Layer"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import type { Redis } from "ioredis"
import * as RedisSessionStore from "./RedisSessionStore.js"
import type { Line } from "./RoutingLog.js"
import * as SessionTotals from "./SessionTotals.js"

/** Options of the Redis totals. */
export interface Options {
  /** Expiry of a session's hash, refreshed by every line added (the session store's `ttl_ms`). */
  readonly ttlMs: number
  /** Prefix of every key (default {@link defaultKeyPrefix}). */
  readonly keyPrefix?: string
  /** Most increments in flight at once (default {@link defaultMaxInFlight}); past it, lines are lost, counted. */
  readonly maxInFlight?: number
}

/** Keys are `switchyard:stats:<session id>`. */
export const defaultKeyPrefix = "switchyard:stats:"
/** Default bound of the increments in flight. */
export const defaultMaxInFlight = 1_000

/** Femto-dollars per unit of a cost's `femto_hi` field (one micro-dollar). */
const hiUnit = 10n ** 9n
/** At most one WARN per this many ms for increments lost to the in-flight limit. */
const warnEveryMs = 60_000
/** How long closing the scope waits for increments in flight. */
const drainTimeout = "1 second"

/** A hash field and what to add to it. */
export type Increment = readonly [field: string, by: bigint | number]

const costFields = (prefix: string, totals: Pricing.Totals): ReadonlyArray<Increment> => [
  [`${prefix}femto_hi`, totals.knownFemto / hiUnit],
  [`${prefix}femto_lo`, totals.knownFemto % hiUnit],
  [`${prefix}unknown`, totals.unknownCalls],
  [`${prefix}estimated`, totals.estimatedCalls],
  [`${prefix}reported`, totals.providerReportedCalls]
]

/** The hash increments of a tally (fields that would add 0 left out). */
export const incrementsOf = (tally: SessionTotals.Tally): ReadonlyArray<Increment> => {
  const fields: Array<Increment> = []
  for (const [name, totals] of tally.buckets) fields.push(...costFields(`b:${name}:`, totals))
  for (const [model, stats] of tally.models) {
    const prefix = `m:${model}:`
    fields.push(
      [`${prefix}calls`, stats.calls],
      [`${prefix}prompt`, stats.prompt_tokens],
      [`${prefix}cached`, stats.cached_tokens],
      [`${prefix}cache_creation`, stats.cache_creation_tokens],
      [`${prefix}completion`, stats.completion_tokens],
      ...costFields(prefix, stats.cost)
    )
  }
  return fields.filter(([, by]) => by !== 0 && by !== 0n)
}

const integer = (text: string | undefined): bigint => (text !== undefined && /^-?\d+$/.test(text) ? BigInt(text) : 0n)
const number = (text: string | undefined): number => {
  const value = Number(text ?? 0)
  return Number.isFinite(value) ? value : 0
}

const costOf = (stats: ReadonlyMap<string, string>): Pricing.Totals => ({
  knownFemto: integer(stats.get("femto_hi")) * hiUnit + integer(stats.get("femto_lo")),
  unknownCalls: number(stats.get("unknown")),
  estimatedCalls: number(stats.get("estimated")),
  providerReportedCalls: number(stats.get("reported"))
})

/** The tally a session's hash holds (fields of other shapes ignored); none for an empty hash. */
export const tallyOf = (hash: Readonly<Record<string, string>>): Option.Option<SessionTotals.Tally> => {
  const owners = new Map<string, Map<string, string>>()
  for (const [field, value] of Object.entries(hash)) {
    const at = field.lastIndexOf(":")
    if (at < 2 || !(field.startsWith("b:") || field.startsWith("m:"))) continue
    const owner = field.slice(0, at + 1)
    const stats = owners.get(owner) ?? new Map<string, string>()
    owners.set(owner, stats)
    stats.set(field.slice(at + 1), value)
  }
  if (owners.size === 0) return Option.none()
  const tally = SessionTotals.emptyTally()
  for (const name of SessionTotals.bucketNames) {
    const stats = owners.get(`b:${name}:`)
    if (stats !== undefined) tally.buckets.set(name, costOf(stats))
  }
  for (const [owner, stats] of owners) {
    if (!owner.startsWith("m:")) continue
    tally.models.set(owner.slice(2, -1), {
      calls: number(stats.get("calls")),
      prompt_tokens: number(stats.get("prompt")),
      cached_tokens: number(stats.get("cached")),
      cache_creation_tokens: number(stats.get("cache_creation")),
      completion_tokens: number(stats.get("completion")),
      cost: costOf(stats)
    })
  }
  return Option.some(tally)
}

/** Add `increments` to the hash `key` and refresh its expiry, in one transaction; rejects on any error. */
const apply = async (client: Redis, key: string, increments: ReadonlyArray<Increment>, ttlMs: number) => {
  const transaction = client.multi()
  for (const [field, by] of increments) {
    // Token counts are integers on every wire we read; a fractional one still adds up.
    if (typeof by === "number" && !Number.isSafeInteger(by)) transaction.hincrbyfloat(key, field, by)
    else transaction.hincrby(key, field, by.toString())
  }
  transaction.pexpire(key, ttlMs)
  const replies = await transaction.exec()
  if (replies === null) throw new Error("transaction aborted")
  for (const [error] of replies) if (error !== null) throw error
}

/**
 * The totals over `connection` (see the module doc). Requires a `Scope`: the background increments
 * live in it, and closing it waits for them (bounded).
 */
export const make = (connection: RedisSessionStore.Connection["Type"], options: Options) =>
  Effect.gen(function*() {
    const prefix = options.keyPrefix ?? defaultKeyPrefix
    const maxInFlight = options.maxInFlight ?? defaultMaxInFlight
    const background = yield* FiberSet.make<void>()
    const run = yield* FiberSet.runtime(background)()
    yield* Effect.addFinalizer(() => FiberSet.awaitEmpty(background).pipe(Effect.timeoutOption(drainTimeout)))
    yield* Effect.forEach(
      ["totals_add", "totals_get"] as const,
      (operation) => Metric.update(RedisSessionStore.errorsTotal.pipe(Metric.tagged("operation", operation)), 0),
      { discard: true }
    )
    let inFlight = 0
    let lastWarnMs = Number.NEGATIVE_INFINITY

    const overLimit = Effect.flatMap(Clock.currentTimeMillis, (now) => {
      if (now - lastWarnMs < warnEveryMs) return Effect.void
      lastWarnMs = now
      return Effect.logWarning("session store: too many session totals updates in flight; lines were not added").pipe(
        Effect.annotateLogs({ session_store: "redis", operation: "totals_add", max_in_flight: maxInFlight })
      )
    })

    const add = (line: Line, priced?: Pricing.Cost, baseline?: Pricing.Cost): void => {
      if (!SessionTotals.counts(line)) return
      const delta = SessionTotals.emptyTally()
      SessionTotals.addLine(delta, line, priced, baseline)
      if (inFlight >= maxInFlight) {
        TaggedMetric.unsafeUpdate(RedisSessionStore.errorsTotal, { operation: "totals_add" }, 1)
        run(overLimit)
        return
      }
      const key = prefix + line.session_id
      const increments = incrementsOf(delta)
      inFlight += 1
      const fiber = run(
        connection.command("totals_add", () => apply(connection.client, key, increments, options.ttlMs)).pipe(
          Effect.ignore
        )
      )
      fiber.addObserver(() => {
        inFlight -= 1
      })
    }

    const get = (sessionId: string) =>
      connection.command("totals_get", () => connection.client.hgetall(prefix + sessionId)).pipe(
        Effect.mapError(() =>
          new SessionTotals.TotalsUnavailable({
            message: "Session totals unavailable: the session store cannot be read"
          })
        ),
        Effect.map((hash) => Option.map(tallyOf(hash), (tally) => SessionTotals.statsOf(sessionId, tally))),
        Spans.withSpan("SessionTotals.get", () => ({ attributes: { "switchyard.session_store": "redis" } }))
      )

    return SessionTotals.SessionTotals.of({ add, get })
  })

/** The Redis totals over the provided connection, as a scoped layer. */
export const layer = (
  options: Options
): Layer.Layer<SessionTotals.SessionTotals, never, RedisSessionStore.Connection> =>
  Layer.scoped(
    SessionTotals.SessionTotals,
    Effect.flatMap(RedisSessionStore.Connection, (connection) => make(connection, options))
  )
