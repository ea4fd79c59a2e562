// The server's /metrics, read as series (name, labels, value) and summed by name and labels.
import type { Client } from "./client.js"

export interface Series {
  readonly name: string
  readonly labels: Readonly<Record<string, string>>
  readonly value: number
}

export const FAIL_OPEN = "switchyard_classifier_fail_open_total"
export const BREAKER = "switchyard_circuit_breaker_state"
export const breakerName = (value: number): string => ["closed", "open", "half_open"][value] ?? String(value)

/** The Prometheus text exposition, one entry per sample line; throws unless /metrics answers 200. */
export const scrape = async (client: Client): Promise<ReadonlyArray<Series>> => {
  const response = await client.send("GET", "/metrics")
  if (!response.ok || response.status !== 200) {
    throw new Error(`/metrics answered ${response.ok ? response.status : response.error}`)
  }
  const series: Array<Series> = []
  for (const line of response.text.split("\n")) {
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)$/.exec(line)
    if (!match?.[1]) continue
    const labels: Record<string, string> = {}
    for (const [, k, v] of (match[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) {
      if (k !== undefined && v !== undefined) labels[k] = v
    }
    series.push({ name: match[1], labels, value: Number(match[3]) })
  }
  return series
}

const matches = (s: Series, name: string, filter: Readonly<Record<string, string>>): boolean =>
  s.name === name && Object.entries(filter).every(([k, v]) => s.labels[k] === v)

/** The sum of the series `name` whose labels include `filter`. */
export const sumOf = (
  series: ReadonlyArray<Series>,
  name: string,
  filter: Readonly<Record<string, string>> = {}
): number => series.filter((s) => matches(s, name, filter)).reduce((a, s) => a + s.value, 0)

/** The series `name` (labels including `filter`) summed by the value of `label`. */
export const byLabel = (
  series: ReadonlyArray<Series>,
  name: string,
  label: string,
  filter: Readonly<Record<string, string>> = {}
): Record<string, number> => {
  const out: Record<string, number> = {}
  for (const s of series) {
    if (matches(s, name, filter)) {
      const key = String(s.labels[label])
      out[key] = (out[key] ?? 0) + s.value
    }
  }
  return out
}
