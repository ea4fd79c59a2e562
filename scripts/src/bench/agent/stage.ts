/**
 * The agent rows of a run, start to end: the bodies, a floor and a peer gateway of their own (started
 * here and stopped before the memory rows), the sanity check, a warm-up of every path, the rows
 * size by size, and the in-flight memory rows on fresh servers.
 */
import { performance } from "node:perf_hooks"
import type { BenchContext, RunContext } from "../context.js"
import { checkForwarders, startForwarders, stopForwarders } from "../forwarders.js"
import { cannon } from "../measure.js"
import { HOST } from "../options.js"
import { agentRows, type AgentSizeRows } from "../rows/agent.js"
import { agentMemoryRows, type InflightRow } from "../rows/agentMemory.js"
import {
  AGENT_MODEL,
  AGENT_PATHS,
  agentBodies,
  type AgentPath,
  ENDPOINTS,
  peerHeaders,
  type SizedBodies
} from "./paths.js"
import { checkAgentPaths } from "./sanity.js"

/** Everything the agent rows measured, as the report and the JSON file read it. */
export interface AgentResults {
  readonly sizes: ReadonlyArray<AgentSizeRows>
  readonly memory: ReadonlyArray<InflightRow>
  readonly bodies: ReadonlyArray<{
    readonly kb: number
    readonly format: string
    readonly kind: string
    readonly bytes: number
    readonly toolCalls: number
  }>
  /** Per path, why the peer gateway has no rows there. */
  readonly peerSkippedPaths: Readonly<Record<string, string>>
  /** Why the peer gateway has no rows at all, if it has none. */
  readonly peerSkipped: string | undefined
  /** What the server sent the judge for a user turn of each size. */
  readonly judgeRequestBytes: ReadonlyArray<{ readonly kb: number; readonly bytes: number }>
  readonly runtimeS: number
}

/** c=8 on every path of the largest body, ours, the floor's and the peer's, before any row. */
const warmUp = async (ctx: BenchContext, sized: SizedBodies, peerUsable: (p: AgentPath) => string | undefined) => {
  const started = performance.now()
  const duration = ctx.options.globalWarmS / 4
  const run = (port: number, path: AgentPath, model: string, headers: Readonly<Record<string, string>> = {}) =>
    cannon({
      url: `http://${HOST}:${port}${ENDPOINTS[path.format].endpoint}`,
      body: sized.continuation[path.format].text({ model, stream: false }),
      headers: { "content-type": "application/json", ...ENDPOINTS[path.format].headers, ...headers },
      connections: 8,
      duration
    })
  for (const path of AGENT_PATHS) {
    await run(ctx.server.port, path, path.route)
    if (path.floor) await run(ctx.floor.port, path, path.route)
    if (ctx.peer !== undefined && typeof path.peer === "string" && peerUsable(path) === undefined) {
      await run(ctx.peer.port, path, AGENT_MODEL, peerHeaders(path.peer, ctx.mock.port))
    }
  }
  console.log(`agent warm-up: ${((performance.now() - started) / 1000).toFixed(1)} s\n`)
}

/**
 * The agent rows against `base`'s server and mock (`tomlPath`: its deployment, for the fresh
 * servers of the memory rows). Every row goes through `base.log`.
 */
export const agentStage = async (
  base: RunContext,
  tomlPath: string
): Promise<AgentResults> => {
  const started = performance.now()
  const { options } = base
  const bodies = agentBodies(options.agentSizesKb)
  const forwarders = await checkForwarders(await startForwarders(base.mock.port, options.noPeer), base.cpu)
  const ctx: BenchContext = {
    ...base,
    floor: forwarders.floor,
    peer: forwarders.peer,
    peerHeaders: forwarders.peerHeaders
  }
  const sanity = await checkAgentPaths(ctx, bodies)
  const peerUsable = (path: AgentPath) => sanity.peerSkipped.get(path.key)
  const largest = bodies.reduce<SizedBodies | undefined>((a, b) => (a === undefined || b.kb > a.kb ? b : a), undefined)
  if (largest === undefined) throw new Error("no agent body sizes")
  await warmUp(ctx, largest, peerUsable)
  const sizes = await agentRows(ctx, bodies, peerUsable)
  await stopForwarders(forwarders, base.cpu)
  const memory = await agentMemoryRows(ctx, tomlPath, largest)
  return {
    sizes,
    memory,
    bodies: bodies.flatMap((s) =>
      [s.continuation.chat, s.continuation.messages, s.continuation.responses, s.userTurn].map((b) => ({
        kb: s.kb,
        format: b.format,
        kind: b.kind,
        bytes: b.bytes,
        toolCalls: b.toolCalls
      }))
    ),
    peerSkippedPaths: Object.fromEntries(sanity.peerSkipped),
    peerSkipped: forwarders.peerSkipped,
    judgeRequestBytes: sanity.judgeRequestBytes,
    runtimeS: (performance.now() - started) / 1000
  }
}
