// The hedge row: a judge that answers in SLOW_JUDGE_MS, alone (`cap-slow`) and hedged by the live
// judge after HEDGE_MS (`cap-hedge`), sequential requests alternating between the two routes. It
// reports what the hedge saves in routing time (mean and p99 of each) and what it costs in added
// judge calls (hedges started per request, from the server's
// `switchyard_classifier_judge_hedges_total`: each is one more judge call).
import http from "node:http"
import type { BenchContext } from "../context.js"
import { HEDGE_MS } from "../deployment.js"
import { chatBody, type Stats, stats, timedRequest } from "../measure.js"
import { SLOW_JUDGE_MS } from "../shared.js"

export interface HedgeRow {
  readonly name: string
  readonly kind: "hedge"
  readonly count: number
  readonly slow: Stats
  readonly hedged: Stats
  /** Hedges started per hedged request (each one added judge call). */
  readonly hedgesPerRequest: number
  readonly errors: number
}

/** The server's hedge counter of route `cap-hedge` now. */
const hedgesNow = (agent: http.Agent, port: number): Promise<number> =>
  new Promise<string>((resolve, reject) => {
    http.get({ host: "127.0.0.1", port, path: "/metrics", agent }, (res) => {
      const parts: Array<Buffer> = []
      res.on("data", (part: Buffer) => parts.push(part))
      res.on("end", () => resolve(Buffer.concat(parts).toString("utf8")))
      res.on("error", reject)
    }).on("error", reject)
  }).then((text) =>
    text.split("\n")
      .filter((line) =>
        line.startsWith("switchyard_classifier_judge_hedges_total{") && line.includes("route=\"cap-hedge\"")
      )
      .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(" ") + 1)), 0)
  )

export const hedgeRow = async (ctx: BenchContext, agent: http.Agent): Promise<HedgeRow> => {
  const port = ctx.server.port
  const n = ctx.options.quick ? 3 : 10
  const slow: Array<number> = []
  const hedged: Array<number> = []
  let errors = 0
  const before = await hedgesNow(agent, port)
  for (let i = 0; i < n; i++) {
    const order: ReadonlyArray<readonly [string, Array<number>]> = i % 2 === 0
      ? [["cap-slow", slow], ["cap-hedge", hedged]]
      : [["cap-hedge", hedged], ["cap-slow", slow]]
    for (const [route, into] of order) {
      const r = await timedRequest(agent, port, "/v1/chat/completions", chatBody(route), {}, 10_000)
      if (r.status === 200) into.push(r.total)
      else errors++
    }
  }
  const hedges = (await hedgesNow(agent, port)) - before
  return ctx.log({
    name: `capability, judge answering in ${SLOW_JUDGE_MS} ms: alone vs hedged after ${HEDGE_MS} ms by a live judge`,
    kind: "hedge",
    count: n,
    slow: stats(slow),
    hedged: stats(hedged),
    hedgesPerRequest: hedged.length === 0 ? NaN : hedges / hedged.length,
    errors
  })
}
