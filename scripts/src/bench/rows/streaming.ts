// Rows 2: streamed requests one after another on one socket (our own HTTP client): time to the
// first and to the last chunk, straight to the mock, through our passthrough route, the floor and
// the peer gateway, each against the direct row's p50.
import type { BenchContext } from "../context.js"
import { chatBody, type StreamRow, streamRow } from "../measure.js"

export interface StreamingRows {
  readonly ds: StreamRow
  readonly ps: StreamRow
  readonly fs: StreamRow
  readonly peerS: StreamRow | undefined
}

export const streamingRows = async (ctx: BenchContext): Promise<StreamingRows> => {
  const { log, options, peer, peerHeaders, server } = ctx
  const n = options.streamN
  const ds = log(
    await streamRow("direct mock, streaming", ctx.mock.port, chatBody("bench-weak", { stream: true }), { n })
  )
  const against = (row: StreamRow): StreamRow => {
    row.addedFirst = row.first.p50 - ds.first.p50
    row.addedLast = row.last.p50 - ds.last.p50
    return row
  }
  const ps = against(
    log(
      await streamRow("passthrough, streaming", server.port, chatBody("pass", { stream: true }), { n, pid: server.pid })
    )
  )
  const fs = against(
    log(
      await streamRow("floor, streaming", ctx.floor.port, chatBody("pass", { stream: true }), { n, pid: ctx.floor.pid })
    )
  )
  const peerS = peer
    ? against(
      log(
        await streamRow("peer gateway, streaming", peer.port, chatBody("bench-weak", { stream: true }), {
          n,
          pid: peer.pid,
          headers: peerHeaders
        })
      )
    )
    : undefined
  return { ds, ps, fs, peerS }
}
