// Warm-up before any row: the server's JIT needs several seconds of traffic on every route before
// latencies settle; the floor and the peer gateway get theirs too.
import { performance } from "node:perf_hooks"
import type { BenchContext } from "./context.js"
import { cannon, chatBody, JSON_HEADERS, streamRow } from "./measure.js"
import { floorUrl, peerUrl, routedUrl } from "./rows/buffered.js"

export const warmUp = async (ctx: BenchContext): Promise<void> => {
  const { peer, peerHeaders, server } = ctx
  const warmS = ctx.options.globalWarmS
  const started = performance.now()
  const routed = routedUrl(ctx)
  await cannon({ url: routed, body: chatBody("pass"), connections: 8, duration: warmS })
  await streamRow("warm-up", server.port, chatBody("pass", { stream: true }), { n: 50 })
  await cannon({ url: routed, body: chatBody("cap"), connections: 8, duration: warmS / 2 })
  await cannon({ url: routed, body: chatBody("cap-dead"), connections: 4, duration: warmS / 4 })
  await cannon({ url: floorUrl(ctx), body: chatBody("pass"), connections: 8, duration: warmS / 2 })
  if (peer) {
    await cannon({
      url: peerUrl(ctx),
      body: chatBody("bench-weak"),
      headers: { ...JSON_HEADERS, ...peerHeaders },
      connections: 8,
      duration: warmS / 2
    })
    await streamRow("warm-up", peer.port, chatBody("bench-weak", { stream: true }), { n: 30, headers: peerHeaders })
  }
  console.log(`warm-up: ${((performance.now() - started) / 1000).toFixed(1)} s on every route\n`)
}
