/**
 * The process-local accounting behind `GET /v1/stats` (docs/http-api.md): answer calls per model,
 * tokens and latency summaries, routing overhead, the routing-time (classifier) calls, and — for
 * deployments with such routes — the advisor gate's and stage router's counters since start or the
 * last reset.
 *
 * Every record function is synchronous and does a few map look-ups and additions: it is called on
 * the request path right next to the Prometheus update of the same fact (`Router`, `Fallback`
 * candidates, `Metrics.recordLlmCall`, the server's total-latency point), never from a second pass.
 *
 * Latency summaries are bounded: each keeps its count, sum, min and max exactly and the most
 * recent {@link maxSamples} values in a ring (the oldest overwritten first); `p50_ms` and `p99_ms`
 * are the values at ranks `floor(n / 2)` and `min(n - 1, floor(n * 0.99))` of the sorted ring,
 * sorted only when a snapshot is taken. Every reported value is rounded to 2 decimals.
 *
 * Costs (`cost` per model and per section) are priced with the table of `Pricing.Prices` current
 * when the call is recorded: an answer when its full answer is out, a failed candidate or a stream
 * failed after its headers as an unknown cost, a routing-time call when its run settles. Each is
 * also counted in `switchyard_cost_usd_total` / `switchyard_unpriced_calls_total`.
 *
 * Per route (`routes`), what routing saves: each request's answer cost and its baseline (the answer
 * priced at the route's baseline model, `Pricing.baselineCostOf`), the routing-time calls of its
 * runs, and savings = baseline − (answer + routing); also counted in
 * `switchyard_route_cost_usd_total` and `switchyard_baseline_cost_usd_total`.
 */
import { type ChatCompletion, tokenCounts, type Usage } from "@switchyard-ts/protocol/OpenAiChat"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as RoutingFacts from "../host/RoutingFacts.js"
import * as AlgorithmStats from "../internal/algorithmStats.js"
import * as RouteCosts from "../internal/routeCosts.js"
import * as Metrics from "../Metrics.js"
import * as Pricing from "./Pricing.js"

/** Most samples a latency summary keeps. */
export const maxSamples = 10_000

const round2 = (value: number): number => Math.round(value * 100) / 100
const round4 = (value: number): number => Math.round(value * 10_000) / 10_000
const percentage = (part: number, whole: number): number => (whole === 0 ? 0 : round2((part / whole) * 100))
const average = (sum: number, count: number): number => (count === 0 ? 0 : round2(sum / count))

/** A latency summary as `/v1/stats` reports it. */
export interface LatencySnapshot {
  readonly count: number
  readonly total_ms: number
  readonly min_ms: number
  readonly max_ms: number
  readonly avg_ms: number
  readonly p50_ms: number
  readonly p99_ms: number
}

/**
 * A bounded latency summary: exact count, sum, min and max; the last `capacity` samples in a ring
 * for the percentiles. Non-finite samples are ignored, negative ones count as 0.
 */
export class LatencySummary {
  private count = 0
  private total = 0
  private min = Infinity
  private max = 0
  private readonly samples: Array<number> = []

  constructor(private readonly capacity: number = maxSamples) {}

  /** Record one sample (O(1)). */
  record(ms: number): void {
    if (!Number.isFinite(ms)) return
    const value = ms < 0 ? 0 : ms
    if (this.samples.length < this.capacity) this.samples.push(value)
    else this.samples[this.count % this.capacity] = value
    this.count += 1
    this.total += value
    if (value < this.min) this.min = value
    if (value > this.max) this.max = value
  }

  /** How many samples the ring holds (≤ the capacity). */
  get retained(): number {
    return this.samples.length
  }

  /** The summary; all zeros when nothing was recorded. */
  snapshot(): LatencySnapshot {
    const n = this.samples.length
    if (this.count === 0 || n === 0) return emptyLatency
    const sorted = Float64Array.from(this.samples).sort()
    return {
      count: this.count,
      total_ms: round2(this.total),
      min_ms: round2(this.min),
      max_ms: round2(this.max),
      avg_ms: round2(this.total / this.count),
      p50_ms: round2(sorted[Math.floor(n / 2)] ?? 0),
      p99_ms: round2(sorted[Math.min(n - 1, Math.floor(n * 0.99))] ?? 0)
    }
  }
}

const emptyLatency: LatencySnapshot = {
  count: 0,
  total_ms: 0,
  min_ms: 0,
  max_ms: 0,
  avg_ms: 0,
  p50_ms: 0,
  p99_ms: 0
}

/** Token totals of a section. */
export interface TokenTotals {
  readonly prompt: number
  readonly completion: number
  readonly cached: number
  readonly cache_creation: number
  readonly reasoning: number
  readonly total: number
}

/** One model's entry in `models` (answer calls) or `classifier.models` (routing-time calls). */
export interface ModelSnapshot {
  readonly calls: number
  readonly errors: number
  readonly request_pct: number
  readonly prompt_tokens: number
  readonly max_observed_context_tokens: number
  readonly completion_tokens: number
  readonly total_tokens: number
  readonly token_pct: number
  readonly cached_tokens: number
  readonly cache_creation_tokens: number
  readonly reasoning_tokens: number
  readonly avg_prompt_tokens: number
  readonly avg_completion_tokens: number
  readonly cache_hit_rate: number
  readonly theoretical_cache_hit_rate: number
  readonly model_call_latency: LatencySnapshot
  readonly total_latency: LatencySnapshot
  /** The cost of the model's calls (see `Pricing.TotalsJson`). */
  readonly cost: Pricing.TotalsJson
}

/** `algorithm_stats.advisor_gate`. */
export type AdvisorGateSnapshot = AlgorithmStats.AdvisorGateSnapshot

/** A histogram's count and mean. */
export type MetricSummary = AlgorithmStats.MetricSummary

/** `algorithm_stats.stage_router`. */
export type StageRouterSnapshot = AlgorithmStats.StageRouterSnapshot

/** One route's entry in `routes` (see `internal/routeCosts.ts`). */
export type RouteSnapshot = RouteCosts.RouteSnapshot

/** The body of `GET /v1/stats`. */
export interface StatsSnapshot {
  readonly total_requests: number
  readonly total_errors: number
  readonly total_tokens: TokenTotals
  /** The cost of the answer calls (the sum of `models.<id>.cost`). */
  readonly cost: Pricing.TotalsJson
  readonly models: Readonly<Record<string, ModelSnapshot>>
  readonly routing_overhead: LatencySnapshot
  readonly routing_fallbacks: { readonly context_window: number; readonly unavailable: number }
  readonly classifier: {
    readonly total_requests: number
    readonly total_errors: number
    readonly total_tokens: TokenTotals
    /** The cost of the routing-time calls (the sum of `classifier.models.<id>.cost`). */
    readonly cost: Pricing.TotalsJson
    readonly models: Readonly<Record<string, ModelSnapshot>>
  }
  /** Per route id: cost, baseline and savings. */
  readonly routes: Readonly<Record<string, RouteSnapshot>>
  readonly algorithm_stats: {
    readonly advisor_gate?: AdvisorGateSnapshot
    readonly stage_router?: StageRouterSnapshot
  }
}

/** A routing-time model call (judge, advisor consult, weak or executor turn), held until the run's outcome is known. */
export type RoutingCall = RoutingFacts.RoutingCall

/** The stats service: synchronous record functions, a snapshot and a reset. */
export interface Recorder {
  /**
   * One answer call to one candidate (each fallback candidate counts): `ok` adds a call and a
   * `model_call_latency` sample, a failure an error; both count in `total_requests`.
   */
  readonly answerCall: (model: string, ok: boolean, latencyMs: number) => void
  /** A streamed answer failed after its headers: an error of `model`, not a new request. */
  readonly streamError: (model: string) => void
  /** The full answer of `model` is out (buffered body, or clean end of stream): its tokens and `total_latency`. */
  readonly answered: (model: string, usage: Usage | null | undefined, totalLatencyMs: number) => void
  /** The routing overhead of one answered run. */
  readonly routingOverhead: (ms: number) => void
  /**
   * Settle a run's routing-time calls once its outcome is known: the last successful call to
   * `answeredBy` (the model whose routing-time answer was served) counts as that model's answer call, every
   * other call — an advisor REDO's discarded turn of the same model included — goes to `classifier`.
   */
  readonly settle: (calls: ReadonlyArray<RoutingCall>, answer: ChatCompletion | undefined, route?: string) => void
  /**
   * A request of `route` was answered by `model` with `usage`: its answer's cost and its baseline
   * (`model`'s answer priced at `baseline`, the route's baseline model) count in the route's entry.
   * `route` must be a configured route id (it labels a metric).
   */
  readonly routeAnswered: (route: string, model: string, baseline: string, usage: Usage | null | undefined) => void
  /** A request of the configured route `route` failed after it was found: an unknown answer and baseline. */
  readonly routeFailed: (route: string) => void
  /** The current snapshot. */
  readonly snapshot: () => StatsSnapshot
  /** Clear everything and re-baseline `algorithm_stats`. */
  readonly reset: () => void
}

class ModelStats {
  calls = 0
  errors = 0
  prompt = 0
  completion = 0
  cached = 0
  cacheCreation = 0
  reasoning = 0
  maxContext = 0
  cost: Pricing.Totals = Pricing.noTotals
  readonly callLatency = new LatencySummary()
  readonly totalLatency = new LatencySummary()

  addUsage(usage: Usage): void {
    const tokens = tokenCounts(usage)
    this.prompt += tokens.prompt
    this.completion += tokens.completion
    this.cached += tokens.cached
    this.cacheCreation += tokens.cacheCreation
    this.reasoning += tokens.reasoning
    const context = tokens.prompt + tokens.completion
    if (context > this.maxContext) this.maxContext = context
  }
}

const statsOf = (models: Map<string, ModelStats>, model: string): ModelStats => {
  let stats = models.get(model)
  if (stats === undefined) {
    stats = new ModelStats()
    models.set(model, stats)
  }
  return stats
}

const sectionOf = (models: Map<string, ModelStats>, totalRequests: number) => {
  let prompt = 0, completion = 0, cached = 0, cacheCreation = 0, reasoning = 0
  let cost = Pricing.noTotals
  for (const stats of models.values()) {
    cost = Pricing.sum(cost, stats.cost)
    prompt += stats.prompt
    completion += stats.completion
    cached += stats.cached
    cacheCreation += stats.cacheCreation
    reasoning += stats.reasoning
  }
  const total = prompt + completion
  const entries: Record<string, ModelSnapshot> = {}
  for (const model of [...models.keys()].sort()) {
    const stats = statsOf(models, model)
    const tokens = stats.prompt + stats.completion
    entries[model] = {
      calls: stats.calls,
      errors: stats.errors,
      request_pct: percentage(stats.calls, totalRequests),
      prompt_tokens: stats.prompt,
      max_observed_context_tokens: stats.maxContext,
      completion_tokens: stats.completion,
      total_tokens: tokens,
      token_pct: percentage(tokens, total),
      cached_tokens: stats.cached,
      cache_creation_tokens: stats.cacheCreation,
      reasoning_tokens: stats.reasoning,
      avg_prompt_tokens: average(stats.prompt, stats.calls),
      avg_completion_tokens: average(stats.completion, stats.calls),
      cache_hit_rate: stats.prompt === 0 ? 0 : round4(stats.cached / stats.prompt),
      theoretical_cache_hit_rate: 0,
      model_call_latency: stats.callLatency.snapshot(),
      total_latency: stats.totalLatency.snapshot(),
      cost: Pricing.totalsJson(stats.cost)
    }
  }
  return {
    tokens: { prompt, completion, cached, cache_creation: cacheCreation, reasoning, total },
    cost: Pricing.totalsJson(cost),
    models: entries
  }
}

/** Add one call's cost to `stats` and to the Prometheus cost counters. */
const priced = (
  stats: ModelStats,
  model: string,
  kind: "answer" | "routing",
  cost: Pricing.Cost | undefined
): void => {
  stats.cost = Pricing.add(stats.cost, cost)
  Metrics.unsafeRecordCost(model, kind, cost)
}

/** A recorder's counts since it was made or last reset. */
interface Tally {
  readonly models: Map<string, ModelStats>
  readonly judges: Map<string, ModelStats>
  readonly routes: ReturnType<typeof RouteCosts.make>
  totalRequests: number
  totalErrors: number
  judgeRequests: number
  judgeErrors: number
  readonly overhead: LatencySummary
  /** The algorithm series when the tally began (empty without `algorithm_stats`). */
  readonly baseline: ReadonlyMap<string, AlgorithmStats.Series>
}

/** One recorder's state: what it was made with and its current tally. */
interface Recording {
  readonly withAdvisor: boolean
  readonly withStage: boolean
  readonly prices: () => Pricing.Table
  tally: Tally
}

/** A tally of nothing yet; `algorithms`: the recorder reports `algorithm_stats` (the series are baselined). */
const freshTally = (algorithms: boolean): Tally => ({
  models: new Map(),
  judges: new Map(),
  routes: RouteCosts.make(),
  totalRequests: 0,
  totalErrors: 0,
  judgeRequests: 0,
  judgeErrors: 0,
  overhead: new LatencySummary(),
  baseline: algorithms ? AlgorithmStats.collect() : new Map()
})

/** {@link Recorder.answerCall}. */
const answerCall = (r: Recording, model: string, ok: boolean, latencyMs: number): void => {
  const tally = r.tally
  tally.totalRequests += 1
  const stats = statsOf(tally.models, model)
  if (ok) {
    stats.calls += 1
    stats.callLatency.record(latencyMs)
  } else {
    tally.totalErrors += 1
    stats.errors += 1
    priced(stats, model, "answer", undefined)
  }
}

/** One routing-time call of a settled run, counted under `classifier` (and its route's routing cost). */
const routingCall = (r: Recording, call: RoutingCall, route: string | undefined): void => {
  const tally = r.tally
  tally.judgeRequests += 1
  const stats = statsOf(tally.judges, call.model)
  if (call.ok) {
    stats.calls += 1
    if (call.usage !== null && call.usage !== undefined) stats.addUsage(call.usage)
    stats.callLatency.record(call.latencyMs)
    stats.totalLatency.record(call.latencyMs)
  } else {
    tally.judgeErrors += 1
    stats.errors += 1
  }
  const cost = Pricing.costOfUsage(r.prices(), call.model, call.usage)
  priced(stats, call.model, "routing", cost)
  if (route !== undefined) tally.routes.routing(route, cost)
}

/** {@link Recorder.streamError}. */
const streamError = (r: Recording, model: string): void => {
  r.tally.totalErrors += 1
  const stats = statsOf(r.tally.models, model)
  stats.errors += 1
  priced(stats, model, "answer", undefined)
}

/** {@link Recorder.answered}. */
const answered = (r: Recording, model: string, usage: Usage | null | undefined, totalLatencyMs: number): void => {
  const stats = statsOf(r.tally.models, model)
  if (usage !== null && usage !== undefined) stats.addUsage(usage)
  stats.totalLatency.record(totalLatencyMs)
  priced(stats, model, "answer", Pricing.costOfUsage(r.prices(), model, usage))
}

/** {@link Recorder.settle}. */
const settle = (
  r: Recording,
  calls: ReadonlyArray<RoutingCall>,
  answer: ChatCompletion | undefined,
  route: string | undefined
): void => {
  // the call whose reply the route served is the answer; every other one is routing's
  for (const call of calls) {
    if (RoutingFacts.isAnswer(call, answer)) answerCall(r, call.model, call.ok, call.latencyMs)
    else routingCall(r, call, route)
  }
}

/** {@link Recorder.routeAnswered}. */
const routeAnswered = (
  r: Recording,
  route: string,
  model: string,
  baseline: string,
  usage: Usage | null | undefined
): void => {
  const table = r.prices()
  const cost = Pricing.costOfUsage(table, model, usage)
  r.tally.routes.answered(route, cost, Pricing.baselineCostOf(table, baseline, model, usage, cost))
}

/** {@link Recorder.snapshot}. */
const snapshotOf = (r: Recording): StatsSnapshot => {
  const tally = r.tally
  const answers = sectionOf(tally.models, tally.totalRequests)
  const classifier = sectionOf(tally.judges, tally.judgeRequests)
  const grown = r.withAdvisor || r.withStage ? AlgorithmStats.delta(tally.baseline) : []
  return {
    total_requests: tally.totalRequests,
    total_errors: tally.totalErrors,
    total_tokens: answers.tokens,
    cost: answers.cost,
    models: answers.models,
    routing_overhead: tally.overhead.snapshot(),
    routing_fallbacks: { context_window: 0, unavailable: 0 },
    classifier: {
      total_requests: tally.judgeRequests,
      total_errors: tally.judgeErrors,
      total_tokens: classifier.tokens,
      cost: classifier.cost,
      models: classifier.models
    },
    routes: tally.routes.snapshot(),
    algorithm_stats: {
      ...(r.withAdvisor ? { advisor_gate: AlgorithmStats.advisorGateOf(grown) } : {}),
      ...(r.withStage ? { stage_router: AlgorithmStats.stageRouterOf(grown) } : {})
    }
  }
}

/**
 * A fresh recorder. `algorithms` are the deployment's route algorithms: `advisor_gate` and
 * `stage_router` among them turn on the matching `algorithm_stats` block, computed as the change of
 * that algorithm's Prometheus series since the recorder was made or last reset. `prices` reads the
 * pricing table in force (default: none, every call unpriced).
 */
export const make = (
  algorithms: Iterable<string> = [],
  prices: () => Pricing.Table = () => Pricing.emptyTable
): Recorder => {
  const names = new Set(algorithms)
  const withAdvisor = names.has("advisor_gate")
  const withStage = names.has("stage_router")
  const r: Recording = { withAdvisor, withStage, prices, tally: freshTally(withAdvisor || withStage) }
  return {
    answerCall: (model, ok, latencyMs) => answerCall(r, model, ok, latencyMs),
    streamError: (model) => streamError(r, model),
    answered: (model, usage, totalLatencyMs) => answered(r, model, usage, totalLatencyMs),
    routingOverhead: (ms) => r.tally.overhead.record(ms),
    settle: (calls, answer, route) => settle(r, calls, answer, route),
    routeAnswered: (route, model, baseline, usage) => routeAnswered(r, route, model, baseline, usage),
    routeFailed: (route) => r.tally.routes.failed(route),
    snapshot: () => snapshotOf(r),
    reset: () => {
      r.tally = freshTally(withAdvisor || withStage)
    }
  }
}

/** A recorder that keeps nothing: every record is dropped, the snapshot is the empty shape. */
export const disabled: Recorder = {
  answerCall: () => {},
  streamError: () => {},
  answered: () => {},
  routingOverhead: () => {},
  settle: () => {},
  routeAnswered: () => {},
  routeFailed: () => {},
  snapshot: () => make().snapshot(),
  reset: () => {}
}

/**
 * The stats recorder the `Router` and the server record into, one per deployment: a requirement of
 * `Router.make`, so a router says that it keeps stats. {@link layerDisabled} keeps none.
 */
export class Stats extends Context.Tag("@switchyard-ts/routing/Stats")<Stats, Recorder>() {}

/**
 * A fresh recorder for a deployment whose routes run `algorithms`, pricing calls with the provided
 * `Pricing.Prices` (without one, every call is unpriced).
 */
export const layer = (algorithms: Iterable<string>): Layer.Layer<Stats> =>
  Layer.effect(Stats, Effect.map(Pricing.currentTable, (prices) => make(algorithms, prices)))

/** A recorder that keeps nothing ({@link disabled}). */
export const layerDisabled: Layer.Layer<Stats> = Layer.succeed(Stats, disabled)
