// What the soak counts while it runs: every request by outcome and evidence, violations (with up to
// 20 examples), and per fault-schedule phase what each route saw.
import type { Reply } from "./client.js"
import type { Route } from "./options.js"
import type { JudgeMode } from "./upstreams.js"
import { type Outcome, WITHOUT_VERDICT } from "./validate.js"

export interface PhaseStats {
  readonly phase: number
  readonly mode: JudgeMode
  startS: number
  readonly fo: { sent: number; judged: number; withoutVerdict: number; errors: number }
  readonly err: { sent: number; ok: number; errors: number; judgeErrors: number; withoutVerdict: number }
  failOpenCounterDelta: number
  failOpenCounterDeltaErr: number
  judgeBreaker: string
}

export interface ViolationExample {
  readonly route: Route
  readonly streaming: boolean
  readonly judgeMode: JudgeMode
  readonly why: string
}

export interface Results {
  requests: number
  /** "status route buffered|stream [code]" -> n */
  readonly outcomes: Record<string, number>
  /** "route evidence[/reason]" -> n */
  readonly evidence: Record<string, number>
  violations: number
  readonly violationExamples: Array<ViolationExample>
  /** Per phase, indexed by phase number. */
  readonly byPhase: Array<PhaseStats>
  /** Sessions that sent at least one request, by route. */
  readonly sessions: Record<Route, number>
}

/** The run's state: the counts, the phase in effect and when the traffic stops. */
export interface SoakState {
  readonly results: Results
  phase: number
  mode: JudgeMode
  /** performance.now() at which the workers stop. */
  stopAt: number
}

export const newState = (): SoakState => ({
  results: {
    requests: 0,
    outcomes: {},
    evidence: {},
    violations: 0,
    violationExamples: [],
    byPhase: [],
    sessions: { "soak-fo": 0, "soak-err": 0 }
  },
  phase: 0,
  mode: "up",
  stopAt: Infinity
})

const bump = (map: Record<string, number>, key: string, n = 1) => (map[key] = (map[key] ?? 0) + n)

/** The stats of phase `index`, created on first use. */
export const phaseStats = (results: Results, index: number, mode: JudgeMode): PhaseStats => {
  const existing = results.byPhase[index]
  if (existing !== undefined) return existing
  const created: PhaseStats = {
    phase: index,
    mode,
    startS: NaN,
    fo: { sent: 0, judged: 0, withoutVerdict: 0, errors: 0 },
    err: { sent: 0, ok: 0, errors: 0, judgeErrors: 0, withoutVerdict: 0 },
    failOpenCounterDelta: NaN,
    failOpenCounterDeltaErr: NaN,
    judgeBreaker: ""
  }
  results.byPhase[index] = created
  return created
}

const statusOf = (response: Reply): number | "none" => (response.ok ? response.status : "none")

/** Counts one request, sent during `phase` (judge in `mode`), and its outcome. */
export const record = (
  results: Results,
  { mode, outcome, phase, response, route, streaming }: {
    readonly route: Route
    readonly streaming: boolean
    readonly phase: number
    readonly mode: JudgeMode
    readonly response: Reply
    readonly outcome: Outcome
  }
): void => {
  results.requests++
  const p = phaseStats(results, phase, mode)
  const side = route === "soak-fo" ? p.fo : p.err
  side.sent++
  const shape = streaming ? "stream" : "buffered"
  if (outcome.kind === "violation") {
    results.violations++
    bump(results.outcomes, `${statusOf(response)} ${route} ${shape} VIOLATION`)
    if (results.violationExamples.length < 20) {
      results.violationExamples.push({ route, streaming, judgeMode: mode, why: outcome.why })
    }
    return
  }
  if (outcome.kind === "error") {
    bump(results.outcomes, `${statusOf(response)} ${route} ${shape} ${outcome.code}${outcome.judge ? " (judge)" : ""}`)
    side.errors++
    if (route === "soak-err" && outcome.judge) p.err.judgeErrors++
    return
  }
  const key = outcome.kind === "stream-error"
    ? `${statusOf(response)} ${route} ${shape} mid-stream ${outcome.code}`
    : `${statusOf(response)} ${route} ${shape}`
  bump(results.outcomes, key)
  bump(results.evidence, `${route} ${outcome.evidence}${outcome.reason ? `/${outcome.reason}` : ""}`)
  if (route === "soak-fo") {
    if (outcome.evidence !== "affinity") p.fo.judged++
    if (WITHOUT_VERDICT.has(outcome.evidence)) p.fo.withoutVerdict++
  } else {
    p.err.ok++
    if (WITHOUT_VERDICT.has(outcome.evidence)) p.err.withoutVerdict++
  }
}
