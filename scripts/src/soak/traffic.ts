// The soak's traffic phase: the workers run for the whole duration while the fault schedule flips
// the judge every phase (the fail-open counter scraped at each phase edge), VmRSS is sampled every
// 2 s and a progress line is printed every 15 s.
import { performance } from "node:perf_hooks"
import { sleep } from "../lib/processes.js"
import type { Client } from "./client.js"
import { BREAKER, breakerName, FAIL_OPEN, scrape, type Series, sumOf } from "./metrics.js"
import { JUDGE_ERR, JUDGE_FO, type SoakOptions } from "./options.js"
import { phaseStats, type SoakState } from "./results.js"
import { type Rss, rssMb, type SoakServer } from "./server.js"
import { type JudgeMode, MODES, type Upstreams } from "./upstreams.js"
import { worker } from "./workers.js"

export interface RssSample extends Rss {
  readonly tS: number
}

/** What the traffic phase leaves for the report. */
export interface Traffic {
  readonly rssStart: RssSample
  /** Every 2 s until the traffic stopped. */
  readonly rssSamples: ReadonlyArray<RssSample>
  readonly rssEnd: RssSample
  /** /metrics before the traffic. */
  readonly baseline: ReadonlyArray<Series>
  /** Seconds of traffic. */
  readonly trafficS: number
}

/** Runs the traffic phase on `server` with the judge of `upstreams` following the fault schedule. */
export const runTraffic = async (
  options: SoakOptions,
  { client, server, state, upstreams }: {
    readonly server: SoakServer
    readonly client: Client
    readonly upstreams: Upstreams
    readonly state: SoakState
  }
): Promise<Traffic> => {
  const rssStart: RssSample = { tS: 0, ...rssMb(server.pid) }
  const rssSamples: Array<RssSample> = []
  const baseline = await scrape(client)
  let lastFo = sumOf(baseline, FAIL_OPEN, { judge_model: JUDGE_FO })
  let lastErr = sumOf(baseline, FAIL_OPEN, { judge_model: JUDGE_ERR })

  const t0 = performance.now()
  state.stopAt = t0 + options.durationMs
  const elapsedS = () => (performance.now() - t0) / 1000

  // RSS sampler, every 2 s until the traffic stops.
  const sampler = (async () => {
    while (performance.now() < state.stopAt) {
      await sleep(Math.min(2000, Math.max(0, state.stopAt - performance.now())))
      rssSamples.push({ tS: elapsedS(), ...rssMb(server.pid) })
    }
  })()

  // Fault schedule: phase i has mode MODES[i % 5]; the fail-open counter is scraped at each boundary.
  const phases = Math.ceil(options.durationMs / (options.phaseS * 1000))
  const modeOf = (index: number): JudgeMode => MODES[index % MODES.length] ?? "up"
  const closePhase = async (index: number) => {
    const series = await scrape(client)
    const fo = sumOf(series, FAIL_OPEN, { judge_model: JUDGE_FO })
    const err = sumOf(series, FAIL_OPEN, { judge_model: JUDGE_ERR })
    const p = phaseStats(state.results, index, modeOf(index))
    p.failOpenCounterDelta = fo - lastFo
    p.failOpenCounterDeltaErr = err - lastErr
    p.judgeBreaker = breakerName(sumOf(series, BREAKER, { llm_client: "judge_breaker" }))
    lastFo = fo
    lastErr = err
  }
  const schedule = (async () => {
    for (let i = 0; i < phases; i++) {
      const mode = modeOf(i)
      await upstreams.setJudgeMode(mode)
      state.phase = i
      state.mode = mode
      phaseStats(state.results, i, mode).startS = elapsedS()
      const phaseEnd = Math.min(state.stopAt, t0 + (i + 1) * options.phaseS * 1000)
      await sleep(Math.max(0, phaseEnd - performance.now()))
      if (i < phases - 1) await closePhase(i)
    }
  })()

  const workers = Array.from({ length: options.concurrency }, (_, i) => worker(i, client, state))
  // Progress line every 15 s.
  const progress = (async () => {
    while (performance.now() < state.stopAt) {
      await sleep(Math.min(15_000, Math.max(0, state.stopAt - performance.now())))
      const last = rssSamples[rssSamples.length - 1]
      console.log(
        `soak: ${
          elapsedS().toFixed(0)
        } s, ${state.results.requests} requests, ${state.results.violations} violations, judge ${state.mode}, RSS ${
          last ? last.rssMb.toFixed(1) : "?"
        } MB`
      )
    }
  })()
  await Promise.all([...workers, schedule, sampler, progress])
  await closePhase(phases - 1)
  const trafficS = elapsedS()
  return { rssStart, rssSamples, rssEnd: { tS: trafficS, ...rssMb(server.pid) }, baseline, trafficS }
}
