/**
 * Before the agent rows: every path answers an agent-sized body buffered and streamed, and what the
 * server forwarded is whole — the mock's copy of the upstream request decodes with the protocol
 * package's schema of its format and carries every tool result of the caller's body. The judge
 * route judges a user turn and reuses the stored tier on a continuation. The floor must carry its
 * paths; a path the peer gateway fails is skipped for it, with the reason.
 */
import * as Either from "effect/Either"
import http from "node:http"
import { header } from "../../lib/processes.js"
import type { BenchContext } from "../context.js"
import { AGENT_ROUTES } from "../deployment.js"
import { type Timed, timedRequest } from "../measure.js"
import { lastBody } from "../mockApi.js"
import { JUDGE_MODEL } from "../shared.js"
import { AGENT_MODEL, AGENT_PATHS, type AgentPath, ENDPOINTS, peerHeaders, type SizedBodies } from "./paths.js"
import { shapeOf } from "./shape.js"
import type { AgentBody, Format } from "./wire.js"

/** What went wrong with one answer, or `undefined`. */
const problem = (r: Timed, done: string | undefined): string | undefined =>
  r.status !== 200
    ? `HTTP ${r.status}: ${r.text.slice(0, 300)}`
    : done !== undefined && !r.text.includes(done)
    ? `the stream has no ${JSON.stringify(done)}: ${r.text.slice(-300)}`
    : undefined

/** One buffered and one streamed request of `body` to `port`: the first problem, or `undefined`. */
const bothWays = async (
  port: number,
  format: Format,
  body: AgentBody,
  model: string,
  headers: Readonly<Record<string, string>> = {}
): Promise<{ readonly problem: string | undefined; readonly buffered: Timed }> => {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
  try {
    const { done, endpoint, headers: formatHeaders } = ENDPOINTS[format]
    const all = { ...formatHeaders, ...headers }
    const buffered = await timedRequest(agent, port, endpoint, body.text({ model, stream: false }), all, 30_000)
    const streamed = await timedRequest(agent, port, endpoint, body.text({ model, stream: true }), all, 30_000)
    return { problem: problem(buffered, undefined) ?? problem(streamed, done), buffered }
  } finally {
    agent.destroy()
  }
}

/** Our server on `path`: both ways, the evidence, and the forwarded body checked at the mock. */
const checkServerPath = async (ctx: BenchContext, path: AgentPath, sized: SizedBodies): Promise<string> => {
  const body = sized.continuation[path.format]
  const what = `agent ${sized.kb} KB, ${path.label}`
  const { buffered, problem: failed } = await bothWays(ctx.server.port, path.format, body, path.route)
  // The last body the mock received is the streamed request's: the same conversation.
  const forwarded = await lastBody(ctx.mock.port, AGENT_MODEL)
  const source = header(buffered.headers, "x-switchyard-evidence-source")
  const shape = shapeOf(path.upstream, forwarded)
  const wrong = failed ??
    (source !== "passthrough" ? `evidence source ${source}` : undefined) ??
    (Either.isLeft(shape)
      ? `the upstream request does not decode: ${shape.left}`
      : shape.right.results !== body.toolCalls
      ? `the upstream received ${shape.right.results} tool results, not ${body.toolCalls}`
      : undefined)
  if (wrong !== undefined) throw new Error(`sanity check ${what}: ${wrong}`)
  return `${path.key} ${Buffer.byteLength(forwarded).toLocaleString("en-US")} B upstream`
}

/** The judge route: a user turn is judged, a continuation of the same session reuses the stored tier. */
const checkJudge = async (ctx: BenchContext, sized: SizedBodies): Promise<number> => {
  const session = { "x-switchyard-session-id": "bench-agent-sanity" }
  const turn = await bothWays(ctx.server.port, "chat", sized.userTurn, AGENT_ROUTES.cap, session)
  const judgeBody = await lastBody(ctx.mock.port, JUDGE_MODEL)
  const next = await bothWays(ctx.server.port, "chat", sized.continuation.chat, AGENT_ROUTES.cap, session)
  const sources = [turn, next].map((r) => header(r.buffered.headers, "x-switchyard-evidence-source"))
  const wrong = turn.problem ?? next.problem ??
    (sources[0] !== "llm-classifier" || sources[1] !== "affinity"
      ? `evidence sources ${sources.join(", ")} (expected llm-classifier, affinity)`
      : undefined)
  if (wrong !== undefined) throw new Error(`sanity check agent ${sized.kb} KB, capability user_turn: ${wrong}`)
  return Buffer.byteLength(judgeBody)
}

/** What the sanity check found: per path, why the peer gateway cannot carry it (absent: it can). */
export interface AgentSanity {
  readonly peerSkipped: ReadonlyMap<AgentPath["key"], string>
  readonly judgeRequestBytes: ReadonlyArray<{ readonly kb: number; readonly bytes: number }>
}

/** Checks every path at every size; throws when our server or the floor fails one. */
export const checkAgentPaths = async (ctx: BenchContext, bodies: ReadonlyArray<SizedBodies>): Promise<AgentSanity> => {
  const peerSkipped = new Map<AgentPath["key"], string>()
  const judgeRequestBytes: Array<{ kb: number; bytes: number }> = []
  for (const sized of bodies) {
    const lines: Array<string> = []
    for (const path of AGENT_PATHS) {
      lines.push(await checkServerPath(ctx, path, sized))
      const body = sized.continuation[path.format]
      if (path.floor) {
        const floor = await bothWays(ctx.floor.port, path.format, body, path.route)
        if (floor.problem !== undefined) throw new Error(`sanity check agent ${sized.kb} KB, floor: ${floor.problem}`)
      }
      if (typeof path.peer !== "string") peerSkipped.set(path.key, path.peer.skipped)
      else if (ctx.peer !== undefined && !peerSkipped.has(path.key)) {
        const peer = await bothWays(
          ctx.peer.port,
          path.format,
          body,
          AGENT_MODEL,
          peerHeaders(path.peer, ctx.mock.port)
        )
        if (peer.problem !== undefined) peerSkipped.set(path.key, `it failed the sanity check: ${peer.problem}`)
      }
    }
    const bytes = await checkJudge(ctx, sized)
    judgeRequestBytes.push({ kb: sized.kb, bytes })
    console.log(
      `agent sanity, ${sized.kb} KB: ${
        lines.join(", ")
      }; user turn judged (judge request ${bytes} B), continuation affinity`
    )
  }
  for (const [key, why] of peerSkipped) console.log(`peer gateway, agent path ${key}: no rows, ${why}`)
  return { peerSkipped, judgeRequestBytes }
}
