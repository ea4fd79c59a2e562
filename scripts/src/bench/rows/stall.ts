// Row 5: a stalled judge (its client's timeout_ms = 1000), sequential. Each stalled request is
// paired with a live-judge request on the `cap` route made just before it, after the same 1 s of
// idle: a stalled request's answer call runs after a second of idling, which costs a few ms by
// itself (measured: 2-5 ms), so a warm c=1 mean is not the right reference for the stall's cost.
import type http from "node:http"
import { header, sleep } from "../../lib/processes.js"
import type { BenchContext } from "../context.js"
import { chatBody, type LoadRow, stats, timedRequest } from "../measure.js"
import { STALL_TIMEOUT_MS } from "../options.js"

export interface StallRun {
  readonly status: number
  readonly ms: number
  readonly liveMs: number
  readonly costMs: number
  readonly source: string | undefined
  readonly reason: string | undefined
}

export interface StallRow {
  readonly name: string
  readonly kind: "stall"
  readonly count: number
  readonly mean: number
  readonly p50: number
  readonly p99: number
  readonly max: number
  readonly added: number
  readonly addedVs: string
  readonly costMean: number
  readonly costMax: number
  readonly errors: number
  readonly runs: ReadonlyArray<StallRun>
}

/** `cap`: the live-judge row (its mean is the row's `added` reference). */
export const stallRow = async (ctx: BenchContext, agent: http.Agent, cap: LoadRow): Promise<StallRow> => {
  const port = ctx.server.port
  const stallRuns: Array<StallRun> = []
  for (let i = 0; i < ctx.options.stallN; i++) {
    await sleep(STALL_TIMEOUT_MS)
    const live = await timedRequest(agent, port, "/v1/chat/completions", chatBody("cap"), {}, 10_000)
    const r = await timedRequest(agent, port, "/v1/chat/completions", chatBody("cap-stall"), {}, 10_000)
    stallRuns.push({
      status: r.status,
      ms: r.total,
      liveMs: live.total,
      costMs: r.total - live.total,
      source: header(r.headers, "x-switchyard-evidence-source"),
      reason: header(r.headers, "x-switchyard-evidence-reason")
    })
  }
  const stallStats = stats(stallRuns.filter((r) => r.status === 200).map((r) => r.ms))
  const stallCost = stats(stallRuns.filter((r) => r.status === 200).map((r) => r.costMs))
  return ctx.log({
    name: `capability fail_open, stalled judge (timeout_ms ${STALL_TIMEOUT_MS})`,
    kind: "stall",
    count: stallStats.n,
    mean: stallStats.mean,
    p50: stallStats.p50,
    p99: stallStats.max,
    max: stallStats.max,
    added: stallStats.mean - cap.mean,
    addedVs: "live judge",
    costMean: stallCost.mean,
    costMax: stallCost.max,
    errors: stallRuns.filter((r) => r.status !== 200).length,
    runs: stallRuns
  })
}
