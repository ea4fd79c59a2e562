// Rows 3 and 4: the capability route with a live judge (every_request) against the two upstream
// calls made directly (the judge request as the server sent it, then the answer), and the same
// route under fail_open with a dead judge (a closed port) against the live one, at c=1 and c=8.
import type { BenchContext } from "../context.js"
import { chatBody, JSON_HEADERS, type LoadRow, loadRow } from "../measure.js"
import { directUrl, routedUrl } from "./buffered.js"

export interface JudgeRows {
  readonly pair: LoadRow
  readonly cap: LoadRow
  readonly dead: LoadRow
  /** The live and dead judge rows at c=8. */
  readonly cap8: LoadRow
  readonly dead8: LoadRow
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
  const routedRow = async (name: string, route: string, connections: number) =>
    log(await loadRow(name, { url: routedUrl(ctx), body: chatBody(route), connections, pid: server.pid }, options))
  const cap = await routedRow("capability, live judge, c=1", "cap", 1)
  cap.added = cap.mean - pair.mean
  const dead = await routedRow("capability fail_open, dead judge, c=1", "cap-dead", 1)
  dead.added = dead.mean - cap.mean
  dead.addedVs = "live judge"
  const cap8 = await routedRow("capability, live judge, c=8", "cap", 8)
  const dead8 = await routedRow("capability fail_open, dead judge, c=8", "cap-dead", 8)
  dead8.added = dead8.mean - cap8.mean
  dead8.addedVs = "live judge, c=8"
  return { pair, cap, dead, cap8, dead8 }
}
