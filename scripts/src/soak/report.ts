// The soak's report: RSS levels and slope after warm-up, the fail-open counter against what the
// clients saw (per phase, while the judge was faulty and while it was up), per-route totals, the
// checks that make the run PASS or FAIL, and the printed lines.
import { performance } from "node:perf_hooks"
import { byLabel, FAIL_OPEN, sumOf } from "./metrics.js"
import { JUDGE_ERR, JUDGE_FO, RSS_WINDOW_S, type SoakOptions } from "./options.js"
import type { PhaseStats, Results } from "./results.js"
import type { SoakServer } from "./server.js"
import type { RssSample, Traffic } from "./traffic.js"
import type { WindDown } from "./windDown.js"

/** The RSS figures after warm-up: medians over windows, the slope, and whether growth is flagged. */
export const rssFigures = (options: SoakOptions, traffic: Traffic) => {
  const { rssEnd, rssSamples, trafficS } = traffic
  const sample = (tS: number) =>
    rssSamples.reduce((best, s) => (Math.abs(s.tS - tS) < Math.abs(best.tS - tS) ? s : best), rssSamples[0] ?? rssEnd)
  const median = (values: ReadonlyArray<number>) => {
    const sorted = [...values].sort((a, b) => a - b)
    return sorted.length === 0 ? NaN : sorted[Math.floor((sorted.length - 1) / 2)] ?? NaN
  }
  const level = (fromS: number, toS: number) => {
    const inWindow = rssSamples.filter((s) => s.tS >= fromS && s.tS <= toS)
    return {
      fromS,
      toS,
      rssMb: median(inWindow.length > 0 ? inWindow.map((s) => s.rssMb) : [rssEnd.rssMb]),
      samples: inWindow.length
    }
  }
  const warmS = options.warmupMs / 1000
  const warm = level(warmS, warmS + RSS_WINDOW_S)
  const endLevel = level(trafficS - RSS_WINDOW_S, trafficS + 1)
  const middle: RssSample = sample(trafficS / 2)
  const afterWarm = rssSamples.filter((s) => s.tS >= warmS)
  // Least-squares slope of VmRSS after warm-up, MB per minute.
  const mx = afterWarm.reduce((a, s) => a + s.tS, 0) / Math.max(1, afterWarm.length)
  const my = afterWarm.reduce((a, s) => a + s.rssMb, 0) / Math.max(1, afterWarm.length)
  const slopeMbPerMin = (60 * afterWarm.reduce((a, s) => a + (s.tS - mx) * (s.rssMb - my), 0)) /
    Math.max(1e-9, afterWarm.reduce((a, s) => a + (s.tS - mx) ** 2, 0))
  const maxAfterWarm = Math.max(...afterWarm.map((s) => s.rssMb), rssEnd.rssMb)
  const growthPct = (100 * (endLevel.rssMb - warm.rssMb)) / warm.rssMb
  // Below one warm-up plus two windows there is no steady state to judge.
  const rssJudged = trafficS >= warmS + 2 * RSS_WINDOW_S
  const rssFlag = rssJudged && growthPct > 20
  return { warm, endLevel, middle, maxAfterWarm, growthPct, slopeMbPerMin, rssJudged, rssFlag }
}

const sumSides = <K extends string>(sides: ReadonlyArray<Readonly<Record<K, number>>>, key: K) =>
  sides.reduce((a, s) => a + s[key], 0)

/** The fail-open counter against what the clients saw, and the per-route totals. */
export const failOpenFigures = (results: Results, traffic: Traffic, after: WindDown) => {
  const { baseline } = traffic
  const { final } = after
  const foTotalDelta = sumOf(final, FAIL_OPEN, { judge_model: JUDGE_FO }) -
    sumOf(baseline, FAIL_OPEN, { judge_model: JUDGE_FO })
  const errTotalDelta = sumOf(final, FAIL_OPEN, { judge_model: JUDGE_ERR }) -
    sumOf(baseline, FAIL_OPEN, { judge_model: JUDGE_ERR })
  const foReasons = byLabel(final, FAIL_OPEN, "reason", { judge_model: JUDGE_FO })
  const baseReasons = byLabel(baseline, FAIL_OPEN, "reason", { judge_model: JUDGE_FO })
  for (const [k, v] of Object.entries(foReasons)) foReasons[k] = v - (baseReasons[k] ?? 0)
  const phasesOut = results.byPhase.filter(Boolean)
  const foWithoutVerdict = phasesOut.reduce((a, p) => a + p.fo.withoutVerdict, 0)
  const foDuring = (phases: ReadonlyArray<PhaseStats>) => ({
    sent: sumSides(phases.map((p) => p.fo), "sent"),
    judged: sumSides(phases.map((p) => p.fo), "judged"),
    withoutVerdict: sumSides(phases.map((p) => p.fo), "withoutVerdict"),
    counter: phases.reduce((a, p) => a + p.failOpenCounterDelta, 0)
  })
  const foFaulty = foDuring(phasesOut.filter((p) => p.mode !== "up"))
  const foUp = foDuring(phasesOut.filter((p) => p.mode === "up"))
  const routeTotals = (["soak-fo", "soak-err"] as const).map((route) => {
    const sides = phasesOut.map((p) => route === "soak-fo" ? { ...p.fo, judgeErrors: 0 } : p.err)
    return {
      route,
      requests: sumSides(sides, "sent"),
      sessions: results.sessions[route],
      errors: sumSides(sides, "errors"),
      judgeErrors: sumSides(sides, "judgeErrors"),
      withoutVerdict: sumSides(sides, "withoutVerdict")
    }
  })
  return { foTotalDelta, errTotalDelta, foReasons, phasesOut, foWithoutVerdict, foFaulty, foUp, routeTotals }
}

export type RssFigures = ReturnType<typeof rssFigures>
export type FailOpenFigures = ReturnType<typeof failOpenFigures>

/** Everything a finished run reports. */
export interface SoakRun {
  readonly options: SoakOptions
  readonly results: Results
  readonly traffic: Traffic
  readonly after: WindDown
  readonly rss: RssFigures
  readonly failOpen: FailOpenFigures
  readonly server: SoakServer
  readonly staleSocketRetries: number
  readonly failed: boolean
}

/** The report's first part: requests, violations, outcomes, evidence, and the phases table. */
const outcomeLines = (
  { failOpen: { phasesOut }, options, results, staleSocketRetries, traffic }: SoakRun,
  out: (s?: string) => void
): void => {
  out(
    `\n## Soak results (${options.minutes} min, ${results.requests} requests, ${
      (results.requests / traffic.trafficS).toFixed(0)
    } req/s)\n`
  )
  out(
    `violations (no answer, or not a documented outcome): **${results.violations}**${
      results.violations > 0 ? "  <-- FAIL" : ""
    }`
  )
  for (const v of results.violationExamples) {
    out(`  - ${v.route} ${v.streaming ? "stream" : "buffered"} (judge ${v.judgeMode}): ${v.why}`)
  }
  out(`client retries after a stale keep-alive socket: ${staleSocketRetries}`)
  out(`\n| outcome (status route shape [code]) | requests |\n|---|---:|`)
  for (const [k, v] of Object.entries(results.outcomes).sort()) out(`| ${k} | ${v} |`)
  out(`\n| evidence of 2xx answers (route source[/reason]) | requests |\n|---|---:|`)
  for (const [k, v] of Object.entries(results.evidence).sort()) out(`| ${k} | ${v} |`)
  out(
    `\n| phase | judge | soak-fo sent / judged / without verdict | fail-open counter Δ (soak-fo) | soak-err 2xx / errors (judge) | soak-err judge breaker at end |`
  )
  out(`|---:|---|---|---:|---|---|`)
  for (const p of phasesOut) {
    out(
      `| ${p.phase} | ${p.mode} | ${p.fo.sent} / ${p.fo.judged} / ${p.fo.withoutVerdict} | ${p.failOpenCounterDelta} | ${p.err.ok} / ${p.err.errors} (${p.err.judgeErrors}) | ${p.judgeBreaker} |`
    )
  }
}

/** The fail-open counter against what the clients saw, and the per-route totals. */
const failOpenLines = ({ failOpen }: SoakRun, out: (s?: string) => void): void => {
  const { foFaulty, foReasons, foTotalDelta, foUp, foWithoutVerdict, routeTotals } = failOpen
  out(
    `\nfail-open counter (switchyard_classifier_fail_open_total{judge_model="${JUDGE_FO}"}): +${foTotalDelta} over the run ` +
      `(${Object.entries(foReasons).filter(([, v]) => v > 0).map(([k, v]) => `${k} ${v}`).join(", ")}); ` +
      `soak-fo 2xx answers without a verdict seen by the client: ${foWithoutVerdict} → ${
        foTotalDelta === foWithoutVerdict ? "equal" : `differ by ${foTotalDelta - foWithoutVerdict}`
      }`
  )
  out(
    `while the judge was faulty: ${foFaulty.sent} soak-fo requests, ${foFaulty.judged} needed the judge, ${foFaulty.withoutVerdict} routed without a verdict, counter +${foFaulty.counter}`
  )
  out(
    `while the judge was up: ${foUp.sent} soak-fo requests, ${foUp.judged} needed the judge, ${foUp.withoutVerdict} routed without a verdict (requests sent just before a phase edge), counter +${foUp.counter}`
  )
  out(
    `soak-err (judge_failure = "error") routed without a verdict (garbage judge): ${failOpen.errTotalDelta} by the counter{judge_model="${JUDGE_ERR}"}`
  )
  out(
    `per route: ${
      routeTotals.map((r) =>
        `${r.route} ${r.requests} requests in ${r.sessions} sessions, ${r.errors} error answers (${r.judgeErrors} because of the judge), ${r.withoutVerdict} 2xx without a verdict`
      ).join("; ")
    }`
  )
}

/** The server's RSS, its state after the soak, its log, the upstreams' counts and the result. */
const serverAndResultLines = (
  { after, failed, rss, server, traffic }: SoakRun,
  started: number,
  out: (s?: string) => void
): void => {
  const { health, healthOk, stopped } = after
  const { endLevel, growthPct, maxAfterWarm, middle, rssFlag, rssJudged, slopeMbPerMin, warm } = rss
  const { rssEnd } = traffic
  out(
    `\nserver RSS (VmRSS): start ${traffic.rssStart.rssMb.toFixed(1)} MB; after warm-up (median ${
      warm.fromS.toFixed(0)
    }–${warm.toS.toFixed(0)} s) ${warm.rssMb.toFixed(1)} MB; ` +
      `middle (${middle.tS.toFixed(0)} s) ${middle.rssMb.toFixed(1)} MB; end (median of the last ${RSS_WINDOW_S} s) ${
        endLevel.rssMb.toFixed(1)
      } MB, last sample ${rssEnd.rssMb.toFixed(1)} MB; ` +
      `max after warm-up ${maxAfterWarm.toFixed(1)} MB; peak VmHWM ${rssEnd.hwmMb.toFixed(1)} MB; ` +
      `growth after warm-up ${growthPct >= 0 ? "+" : ""}${growthPct.toFixed(1)}%, slope ${
        slopeMbPerMin >= 0 ? "+" : ""
      }${slopeMbPerMin.toFixed(1)} MB/min` +
      (!rssJudged ? " (run too short to judge)" : rssFlag ? "  <-- FLAG: more than 20%" : " (flat: within 20%)")
  )
  out(
    `after the soak: /health ${
      healthOk ? "200 ok" : `FAILED (${health.ok ? health.status : health.error})`
    }; SIGTERM → exit ${stopped.code} in ${stopped.ms.toFixed(0)} ms`
  )
  out(`server log lines by level: ${Object.entries(server.logLevels).map(([k, v]) => `${k} ${v}`).join(", ")}`)
  out(`mock: judge ${JSON.stringify(after.mockStats.judge)}, answers ${JSON.stringify(after.mockStats.answer)}`)
  out(
    `upstream attempts by code: ${
      JSON.stringify(byLabel(after.final, "switchyard_upstream_attempts_total", "code"))
    }; retry-recovered calls ${sumOf(after.final, "switchyard_router_retry_recovered_total")}`
  )
  out(
    `\nresult: ${failed ? "FAIL" : "PASS"}${rssFlag ? " (RSS flagged)" : ""}; runtime ${
      ((performance.now() - started) / 1000).toFixed(1)
    } s`
  )
}

/** The printed report (also stored in the JSON file); `started` is performance.now() at the start of the run. */
export const reportLines = (run: SoakRun, started: number): Array<string> => {
  const lines: Array<string> = []
  const out = (s = "") => lines.push(s)
  outcomeLines(run, out)
  failOpenLines(run, out)
  serverAndResultLines(run, started, out)
  return lines
}
