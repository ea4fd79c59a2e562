/**
 * `algorithm_stats` of `GET /v1/stats`: the advisor gate's and stage router's series of the
 * (process-wide) Effect metric registry, read as their growth since a baseline taken when the
 * recorder was made or last reset.
 */
import * as Metric from "effect/Metric"
import * as MetricState from "effect/MetricState"
import { advisorGateMetrics, stageRouterMetrics } from "./algorithmMetricNames.js"

const round4 = (value: number): number => Math.round(value * 10_000) / 10_000

/** `algorithm_stats.advisor_gate`. */
export interface AdvisorGateSnapshot {
  readonly reviews: Readonly<Record<string, { readonly total: number; readonly by_trigger: Record<string, number> }>>
  readonly consult_failures: Readonly<Record<string, number>>
  readonly discarded: { readonly turns: number; readonly tokens: Readonly<Record<string, number>> }
}

/** A histogram's count and mean. */
export interface MetricSummary {
  readonly count: number
  readonly mean: number
}

/** `algorithm_stats.stage_router`. */
export interface StageRouterSnapshot {
  readonly routing_decisions: Readonly<
    Record<string, { readonly total: number; readonly targets: Readonly<Record<string, number>> }>
  >
  readonly scoring: {
    readonly score: MetricSummary
    readonly confidence: MetricSummary
    readonly dimensions: {
      readonly severity: MetricSummary
      readonly spinning: MetricSummary
      readonly exploring: MetricSummary
      readonly production_intensity: MetricSummary
    }
  }
}

/** One counter or histogram series of the Effect metric registry: its labels, count (or counter value) and sum. */
export interface Series {
  readonly name: string
  readonly labels: Readonly<Record<string, string>>
  readonly count: number
  readonly sum: number
}

const algorithmMetricNames: ReadonlySet<string> = new Set([
  ...Object.values(advisorGateMetrics),
  ...Object.values(stageRouterMetrics)
])

/** The algorithm series of the (process-wide) Effect metric registry, by name and label set. */
export const collect = (): ReadonlyMap<string, Series> => {
  const series = new Map<string, Series>()
  for (const pair of Metric.unsafeSnapshot()) {
    const name = pair.metricKey.name
    if (!algorithmMetricNames.has(name)) continue
    const labels: Record<string, string> = {}
    for (const label of pair.metricKey.tags) labels[label.key] = label.value
    const key = [name, ...Object.keys(labels).sort().map((k) => `${k}=${labels[k]}`)].join("\u0000")
    const state: unknown = pair.metricState
    if (MetricState.isCounterState(state)) series.set(key, { name, labels, count: Number(state.count), sum: 0 })
    else if (MetricState.isHistogramState(state)) series.set(key, { name, labels, count: state.count, sum: state.sum })
  }
  return series
}

/** Each series' change since `baseline`, series that did not grow left out. */
export const delta = (baseline: ReadonlyMap<string, Series>): ReadonlyArray<Series> => {
  const grown: Array<Series> = []
  for (const [key, now] of collect()) {
    const before = baseline.get(key)
    const count = now.count - (before?.count ?? 0)
    if (count > 0) grown.push({ ...now, count, sum: now.sum - (before?.sum ?? 0) })
  }
  return grown
}

const bump = (record: Record<string, number>, key: string, by: number): void => {
  record[key] = (record[key] ?? 0) + by
}

export const advisorGateOf = (series: ReadonlyArray<Series>): AdvisorGateSnapshot => {
  const reviews: Record<string, { total: number; by_trigger: Record<string, number> }> = {}
  const failures: Record<string, number> = {}
  const tokens: Record<string, number> = {}
  let turns = 0
  for (const s of series) {
    if (s.name === advisorGateMetrics.reviews) {
      const verdict = s.labels["verdict"] ?? ""
      const entry = reviews[verdict] ?? { total: 0, by_trigger: {} }
      entry.total += s.count
      bump(entry.by_trigger, s.labels["trigger"] ?? "", s.count)
      reviews[verdict] = entry
    } else if (s.name === advisorGateMetrics.consultFailures) {
      bump(failures, s.labels["reason"] ?? "", s.count)
    } else if (s.name === advisorGateMetrics.discardedTurns) {
      turns += s.count
    } else if (s.name === advisorGateMetrics.discardedTokens) {
      bump(tokens, s.labels["kind"] ?? "", s.count)
    }
  }
  return { reviews, consult_failures: failures, discarded: { turns, tokens } }
}

const summaryOf = (series: ReadonlyArray<Series>, name: string): MetricSummary => {
  let count = 0
  let sum = 0
  for (const s of series) {
    if (s.name !== name) continue
    count += s.count
    sum += s.sum
  }
  return { count, mean: count === 0 ? 0 : round4(sum / count) }
}

export const stageRouterOf = (series: ReadonlyArray<Series>): StageRouterSnapshot => {
  const decisions: Record<string, { total: number; targets: Record<string, number> }> = {}
  for (const s of series) {
    if (s.name !== stageRouterMetrics.decisions) continue
    const source = s.labels["decision_source"] ?? ""
    const entry = decisions[source] ?? { total: 0, targets: {} }
    entry.total += s.count
    bump(entry.targets, s.labels["target_name"] ?? "", s.count)
    decisions[source] = entry
  }
  return {
    routing_decisions: decisions,
    scoring: {
      score: summaryOf(series, stageRouterMetrics.score),
      confidence: summaryOf(series, stageRouterMetrics.confidence),
      dimensions: {
        severity: summaryOf(series, stageRouterMetrics.severity),
        spinning: summaryOf(series, stageRouterMetrics.spinning),
        exploring: summaryOf(series, stageRouterMetrics.exploring),
        production_intensity: summaryOf(series, stageRouterMetrics.productionIntensity)
      }
    }
  }
}
