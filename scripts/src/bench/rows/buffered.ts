// Rows 1: buffered requests at c=1 and c=32 — straight to the mock, through our passthrough route,
// through the floor and through the peer gateway — and the same route from an Anthropic Messages
// client (translated both ways). Each forwarder row reports what it adds to the direct row's mean.
import type { BenchContext } from "../context.js"
import { chatBody, type LoadOptions, type LoadRow, loadRow } from "../measure.js"
import { HOST } from "../options.js"

/** The buffered rows, with `added` set against the direct row of the same concurrency. */
export interface BufferedRows {
  readonly d1: LoadRow
  readonly p1: LoadRow
  readonly f1: LoadRow
  readonly peer1: LoadRow | undefined
  readonly m1: LoadRow
  readonly d32: LoadRow
  readonly p32: LoadRow
  readonly f32: LoadRow
  readonly peer32: LoadRow | undefined
}

/** The direct mock URL of the chat endpoint. */
export const directUrl = (ctx: BenchContext) => `http://${HOST}:${ctx.mock.port}/v1/chat/completions`
/** Our server's chat endpoint. */
export const routedUrl = (ctx: BenchContext) => `${ctx.server.url}/v1/chat/completions`
/** The floor's chat endpoint. */
export const floorUrl = (ctx: BenchContext) => `http://${HOST}:${ctx.floor.port}/v1/chat/completions`
/** The peer gateway's chat endpoint ("" without it). */
export const peerUrl = (ctx: BenchContext) => ctx.peer ? `http://${HOST}:${ctx.peer.port}/v1/chat/completions` : ""

export const bufferedRows = async (ctx: BenchContext): Promise<BufferedRows> => {
  const { log, options, peer, peerHeaders, server } = ctx
  const row = async (name: string, load: LoadOptions, vs?: LoadRow): Promise<LoadRow> => {
    const measured = log(await loadRow(name, load, options))
    if (vs !== undefined) measured.added = measured.mean - vs.mean
    return measured
  }
  const passBody = chatBody("pass")
  const directBody = chatBody("bench-weak")
  const direct = directUrl(ctx)
  const routed = routedUrl(ctx)
  const floor = floorUrl(ctx)
  const peerAt = peerUrl(ctx)
  const peerRow = (name: string, connections: number, vs: LoadRow) =>
    peer
      ? row(name, { url: peerAt, body: directBody, headers: peerHeaders, connections, pid: peer.pid }, vs)
      : Promise.resolve(undefined)

  const d1 = await row("direct mock, buffered, c=1", { url: direct, body: directBody, connections: 1 })
  const p1 = await row(
    "passthrough, buffered, c=1",
    { url: routed, body: passBody, connections: 1, pid: server.pid },
    d1
  )
  const f1 = await row("floor (node:http + undici dispatch), buffered, c=1", {
    url: floor,
    body: passBody,
    connections: 1,
    pid: ctx.floor.pid
  }, d1)
  const peer1 = await peerRow("peer gateway, buffered, c=1", 1, d1)
  const m1 = await row("passthrough via /v1/messages (translated both ways), c=1", {
    url: `${server.url}/v1/messages`,
    body: chatBody("pass", { max_tokens: 256 }),
    connections: 1,
    pid: server.pid
  }, d1)
  const d32 = await row("direct mock, buffered, c=32", { url: direct, body: directBody, connections: 32 })
  const p32 = await row(
    "passthrough, buffered, c=32",
    { url: routed, body: passBody, connections: 32, pid: server.pid },
    d32
  )
  const f32 = await row(
    "floor, buffered, c=32",
    { url: floor, body: passBody, connections: 32, pid: ctx.floor.pid },
    d32
  )
  const peer32 = await peerRow("peer gateway, buffered, c=32", 32, d32)
  return { d1, p1, f1, peer1, m1, d32, p32, f32, peer32 }
}
