// bench-results/soak-<timestamp>.json: the options, every count and figure, the checks, the result
// and the printed report.
import os from "node:os"
import { writeResultsFile } from "../lib/results.js"
import type { SoakRun } from "./report.js"

/** Writes the JSON file under `root`/bench-results and prints its path. */
export const writeSoakJson = (
  root: string,
  { after, checks, failed, failOpen, lines, options, results, rss, server, staleSocketRetries, traffic }: SoakRun & {
    readonly checks: Readonly<Record<string, boolean>>
    readonly lines: ReadonlyArray<string>
  }
): void => {
  writeResultsFile(root, "soak", {
    date: new Date().toISOString(),
    machine: {
      cpu: os.cpus()[0]?.model,
      cores: os.cpus().length,
      node: process.version,
      platform: `${os.platform()} ${os.release()}`
    },
    options: {
      minutes: options.minutes,
      concurrency: options.concurrency,
      phaseSeconds: options.phaseS,
      answerFaultRate: options.answerFaultRate,
      judgeTimeoutMs: options.judgeTimeoutMs,
      warmupS: options.warmupMs / 1000,
      routingLogFile: options.routingLog ?? null,
      writeConfig: options.writeConfig ?? null
    },
    requests: results.requests,
    requestsPerSecond: results.requests / traffic.trafficS,
    violations: results.violations,
    violationExamples: results.violationExamples,
    staleSocketRetries,
    outcomes: results.outcomes,
    evidence: results.evidence,
    phases: failOpen.phasesOut,
    routes: failOpen.routeTotals,
    failOpen: {
      counterDelta: failOpen.foTotalDelta,
      byReason: failOpen.foReasons,
      clientSeenWithoutVerdict: failOpen.foWithoutVerdict,
      whileJudgeFaulty: failOpen.foFaulty,
      whileJudgeUp: failOpen.foUp,
      errorRouteWithoutVerdictCounter: failOpen.errTotalDelta
    },
    rss: {
      start: traffic.rssStart,
      warm: rss.warm,
      middle: rss.middle,
      end: rss.endLevel,
      last: traffic.rssEnd,
      maxAfterWarmMb: rss.maxAfterWarm,
      growthAfterWarmPct: rss.growthPct,
      judged: rss.rssJudged,
      slopeAfterWarmMbPerMin: rss.slopeMbPerMin,
      flagged: rss.rssFlag,
      samples: traffic.rssSamples
    },
    health: after.healthOk,
    shutdown: after.stopped,
    serverLogLevels: server.logLevels,
    mock: after.mockStats,
    checks,
    result: failed ? "FAIL" : "PASS",
    report: lines.join("\n")
  })
}
