// Rows 3 and 4: the capability route with a live judge (every_request) against the two upstream
// calls made directly (the judge request as the server sent it, then the answer), and the same
// route under fail_open with a dead judge (a closed port) against the live one, at c=1 and c=8 —
// live and dead measured in alternating rounds (`pairedRows`), their difference being the figure;
// then a dead first judge with a live `classifier_fallback` against the live judge, paired the same way.
import type { BenchContext } from "../context.js"
import { chatBody, JSON_HEADERS, type LoadOptions, type LoadRow, loadRow, pairedRows } from "../measure.js"
import { directUrl, routedUrl } from "./buffered.js"

export interface JudgeRows {
  readonly pair: LoadRow
  readonly cap: LoadRow
  readonly dead: LoadRow
  /** The live and dead judge rows at c=8. */
  readonly cap8: LoadRow
  readonly dead8: LoadRow
  /** A dead first judge with a live fallback (`classifier_fallback`), paired with the live judge, c=1 and c=8. */
  readonly chain: LoadRow
  readonly chain8: LoadRow
}

/** `judgeBody`: the judge request body the server sent the mock (replayed for the direct pair). */
export const judgeRows = async (ctx: BenchContext, judgeBody: string): Promise<JudgeRows> => {
  const { log, options, server } = ctx
  const pair = log(
    await loadRow("direct judge call + answer call, c=1", {
      url: directUrl(ctx),
      connections: 1,
      pairs: true,
      requests: [
        { method: "POST", path: "/v1/chat/completions", headers: JSON_HEADERS, body: judgeBody },
        { method: "POST", path: "/v1/chat/completions", headers: JSON_HEADERS, body: chatBody("bench-weak") }
      ]
    }, options)
  )
  const routed = (route: string, connections: number): LoadOptions => ({
    url: routedUrl(ctx),
    body: chatBody(route),
    connections,
    pid: server.pid
  })
  const live = (connections: number) => ({
    name: `capability, live judge, c=${connections}`,
    options: routed("cap", connections)
  })
  const closed = (connections: number) => ({
    name: `capability fail_open, dead judge, c=${connections}`,
    options: routed("cap-dead", connections)
  })
  const c1 = await pairedRows(live(1), closed(1), options, "live judge")
  const cap = log(c1.a)
  cap.added = cap.mean - pair.mean
  const dead = log(c1.b)
  const c8 = await pairedRows(live(8), closed(8), options, "live judge, c=8")
  const cap8 = log(c8.a)
  const dead8 = log(c8.b)
  const fallback = (connections: number) => ({
    name: `capability, dead first judge → live fallback, c=${connections}`,
    options: routed("cap-chain", connections)
  })
  const k1 = await pairedRows(live(1), fallback(1), options, "live judge (fallback pair)")
  const chain = log(k1.b)
  chain.added = k1.b.mean - k1.a.mean
  const k8 = await pairedRows(live(8), fallback(8), options, "live judge, c=8 (fallback pair)")
  const chain8 = log(k8.b)
  chain8.added = k8.b.mean - k8.a.mean
  return { pair, cap, dead, cap8, dead8, chain, chain8 }
}
