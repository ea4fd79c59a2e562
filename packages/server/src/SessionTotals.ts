/**
 * The per-session totals of `GET /v1/session-stats`: calls, tokens and cost per model, and the cost
 * buckets of a session ({@link buckets}: `answer`, `routing`, `baseline`), summed from the routing log's lines
 * as they are made. One interface ({@link SessionTotals}), two stores: in memory (this module,
 * {@link makeMemory}: one process's lines, bounded by a session count) and in Redis
 * (`RedisSessionTotals`: every replica's lines, when the session store is Redis).
 *
 * Both stores sum a line the same way ({@link addLine} into a {@link Tally}) and render a session
 * the same way ({@link statsOf}), so the body of session-stats does not depend on the store.
 */
import * as Pricing from "@switchyard-ts/routing/Pricing"
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type { Line } from "./RoutingLog.js"

/** One model's share of a session's calls. */
export const ModelStats = Schema.Struct({
  calls: Schema.Number,
  prompt_tokens: Schema.Number,
  cached_tokens: Schema.Number,
  cache_creation_tokens: Schema.Number,
  completion_tokens: Schema.Number,
  cost: Pricing.TotalsJson
})
export type ModelStats = typeof ModelStats.Type

/**
 * The body of `GET /v1/session-stats`: totals are the sums over `models`; `cost` is the cost of
 * every counted call, `answer_cost` that of the response lines, `routing_cost` that of the calls
 * made while routing that did not answer (judge lines, reviews, discarded turns: every other line)
 * (`answer_cost` + `routing_cost` = `cost`); `baseline_cost` what the
 * response lines' answers would have cost at their baseline models, and `savings` =
 * `baseline_cost` − `cost` (null once any of them is unpriced).
 */
export const SessionStats = Schema.Struct({
  session_id: Schema.String,
  total_calls: Schema.Number,
  total_prompt_tokens: Schema.Number,
  total_cached_tokens: Schema.Number,
  total_cache_creation_tokens: Schema.Number,
  total_completion_tokens: Schema.Number,
  cost: Pricing.TotalsJson,
  answer_cost: Pricing.TotalsJson,
  routing_cost: Pricing.TotalsJson,
  baseline_cost: Pricing.TotalsJson,
  savings: Pricing.SavingsJson,
  models: Schema.Record({ key: Schema.String, value: ModelStats })
})
export type SessionStats = typeof SessionStats.Type

/** The totals could not be read (the shared store is unreachable); session-stats answers 503. */
export class TotalsUnavailable extends Data.TaggedError("TotalsUnavailable")<{ readonly message: string }> {}

/** The per-session totals of the server's routing log lines. */
export class SessionTotals extends Context.Tag("@switchyard-ts/server/SessionTotals")<SessionTotals, {
  /**
   * Add a line to its session's totals, at once: never blocks, never fails (a store that writes
   * elsewhere does so in the background and counts what it loses). `cost` is the line's exact cost
   * when the caller priced it, `baseline` its answer's exact baseline cost; without them the line's
   * `cost.usd` and `baseline_cost.usd` are read back (exact below 4 USD a call).
   */
  readonly add: (line: Line, cost?: Pricing.Cost, baseline?: Pricing.Cost) => void
  /** The totals of a session; none when no counted line names it (or it was evicted or expired). */
  readonly get: (sessionId: string) => Effect.Effect<Option.Option<SessionStats>, TotalsUnavailable>
}>() {}

/** The exact costs of one line: its own, and its answer's at the baseline model (`undefined`: unpriced). */
export interface LineCosts {
  readonly cost: Pricing.Cost | undefined
  readonly baseline: Pricing.Cost | undefined
}

/** A cost bucket of a session: which lines it counts, at which cost, and whether `cost` includes it. */
export interface Bucket {
  /** `none`: `line` is not counted here; `some(cost)`: counted with `cost` (`undefined`: unpriced). */
  readonly of: (line: Line, costs: LineCosts) => Option.Option<Pricing.Cost | undefined>
  /** Part of the session's `cost` (the sum of what was spent), or a figure beside it. */
  readonly inCost: boolean
}

/**
 * The cost buckets of a session, in a fixed order: `answer` (the response lines), `routing` (every
 * other line: the calls made while routing that did not answer the request — judges, reviews,
 * discarded turns), `baseline` (the response lines' answers at their baseline models; beside `cost`).
 */
export const bucketNames = ["answer", "routing", "baseline"] as const

/** The name of a cost bucket. */
export type BucketName = typeof bucketNames[number]

/**
 * What each cost bucket counts. A bucket is its name in {@link bucketNames}, its rule here, and its
 * `<name>_cost` field in {@link SessionStats} and {@link statsOf}; both stores (and the Redis
 * hash's fields) follow these.
 */
export const buckets: { readonly [Name in BucketName]: Bucket } = {
  answer: { of: (line, costs) => line.kind === "response" ? Option.some(costs.cost) : Option.none(), inCost: true },
  routing: { of: (line, costs) => line.kind !== "response" ? Option.some(costs.cost) : Option.none(), inCost: true },
  baseline: {
    of: (line, costs) => line.kind === "response" ? Option.some(costs.baseline) : Option.none(),
    inCost: false
  }
}

/** One model's running totals. */
export interface ModelTally {
  calls: number
  prompt_tokens: number
  cached_tokens: number
  cache_creation_tokens: number
  completion_tokens: number
  cost: Pricing.Totals
}

/** A model with nothing counted. */
export const emptyModel = (): ModelTally => ({
  calls: 0,
  prompt_tokens: 0,
  cached_tokens: 0,
  cache_creation_tokens: 0,
  completion_tokens: 0,
  cost: Pricing.noTotals
})

/** A session's running totals: per model, and per cost bucket (a bucket absent: nothing counted). */
export interface Tally {
  readonly models: Map<string, ModelTally>
  readonly buckets: Map<BucketName, Pricing.Totals>
}

/** A session with nothing counted. */
export const emptyTally = (): Tally => ({ models: new Map(), buckets: new Map() })

/** The totals of a tally's bucket. */
export const bucketOf = (tally: Tally, name: BucketName): Pricing.Totals => tally.buckets.get(name) ?? Pricing.noTotals

/** The exact cost `given`, else read back from a line's logged cost (`null`, absent: unknown). */
const exactCost = (logged: Pricing.CallCost | undefined, given: Pricing.Cost | undefined): Pricing.Cost | undefined =>
  given ??
    (logged === null || logged === undefined
      ? undefined
      : { femto: Pricing.femtoOfUsd(logged.usd), source: logged.source })

/**
 * Whether `line` counts in its session's totals: every response line, and every line of a call made
 * while routing (a judge's, a review, a routing-time turn) that answered — as the compatible system
 * logs only successful judge calls; a failed call is not priced — of a named session.
 */
export const counts = (line: Line): line is Line & { readonly session_id: string } =>
  line.session_id !== null && (line.kind === "response" || line.outcome === "ok")

/** The model a line counts under (`unknown` when no model served it). */
const modelOf = (line: Line): string => line.model === "" ? "unknown" : line.model

/** Add a counted line (see {@link counts}) to `tally`. */
export const addLine = (
  tally: Tally,
  line: Line,
  priced: Pricing.Cost | undefined,
  baseline: Pricing.Cost | undefined
): void => {
  const cost = exactCost(line.cost, priced)
  const costs: LineCosts = {
    cost,
    baseline: line.kind === "response" ? exactCost(line.baseline_cost, baseline) : undefined
  }
  for (const name of bucketNames) {
    const counted = buckets[name].of(line, costs)
    if (Option.isSome(counted)) tally.buckets.set(name, Pricing.add(bucketOf(tally, name), counted.value))
  }
  const name = modelOf(line)
  const stats = tally.models.get(name) ?? emptyModel()
  tally.models.set(name, stats)
  stats.calls += 1
  stats.prompt_tokens += line.prompt_tokens
  stats.cached_tokens += line.cached_tokens
  stats.cache_creation_tokens += line.cache_creation_tokens
  stats.completion_tokens += line.completion_tokens
  stats.cost = Pricing.add(stats.cost, cost)
}

/** The session-stats body of a session's totals (models sorted by id). */
export const statsOf = (sessionId: string, tally: Tally): SessionStats => {
  const byModel: Record<string, ModelStats> = {}
  const total = emptyModel()
  const byName = [...tally.models].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
  for (const [name, stats] of byName) {
    byModel[name] = { ...stats, cost: Pricing.totalsJson(stats.cost) }
    total.calls += stats.calls
    total.prompt_tokens += stats.prompt_tokens
    total.cached_tokens += stats.cached_tokens
    total.cache_creation_tokens += stats.cache_creation_tokens
    total.completion_tokens += stats.completion_tokens
  }
  const spent = bucketNames.reduce(
    (sum, name) => buckets[name].inCost ? Pricing.sum(sum, bucketOf(tally, name)) : sum,
    Pricing.noTotals
  )
  return {
    session_id: sessionId,
    total_calls: total.calls,
    total_prompt_tokens: total.prompt_tokens,
    total_cached_tokens: total.cached_tokens,
    total_cache_creation_tokens: total.cache_creation_tokens,
    total_completion_tokens: total.completion_tokens,
    cost: Pricing.totalsJson(spent),
    answer_cost: Pricing.totalsJson(bucketOf(tally, "answer")),
    routing_cost: Pricing.totalsJson(bucketOf(tally, "routing")),
    baseline_cost: Pricing.totalsJson(bucketOf(tally, "baseline")),
    savings: Pricing.savingsJson(bucketOf(tally, "baseline"), spent),
    models: byModel
  }
}

/** Default number of sessions the in-memory store keeps. */
export const defaultMaxSessions = 10_000

/**
 * The in-memory totals: at most `maxSessions` sessions (a Map in update order: the least recently
 * updated session is evicted first).
 */
export const makeMemory = (maxSessions: number = defaultMaxSessions): SessionTotals["Type"] => {
  const sessions = new Map<string, Tally>()
  return SessionTotals.of({
    add: (line, priced, baseline) => {
      if (!counts(line)) return
      const session = sessions.get(line.session_id) ?? emptyTally()
      sessions.delete(line.session_id)
      sessions.set(line.session_id, session)
      if (sessions.size > maxSessions) {
        for (const oldest of sessions.keys()) {
          sessions.delete(oldest)
          break
        }
      }
      addLine(session, line, priced, baseline)
    },
    get: (sessionId) =>
      Effect.sync(() => {
        const session = sessions.get(sessionId)
        return session === undefined ? Option.none() : Option.some(statsOf(sessionId, session))
      })
  })
}

/** {@link makeMemory} as a layer (a fresh store per build). */
export const layerMemory = (maxSessions: number = defaultMaxSessions): Layer.Layer<SessionTotals> =>
  Layer.sync(SessionTotals, () => makeMemory(maxSessions))
