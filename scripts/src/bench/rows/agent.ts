// Rows 8: agent-sized bodies (a coding agent's conversation of 64 KB and 256 KB, scripts/src/bench/agent/)
// on each request path — /v1/chat/completions → chat, /v1/messages → anthropic_messages (native) and →
// chat (translated), /v1/responses → chat — at c=1, at c=32 and streamed, through our server, the
// floor (on the paths it forwards as bytes) and the peer gateway (where its API carries them), each
// against the direct mock row of the upstream's format and size; and a `user_turn` capability route
// with the live judge on user-turn bodies against passthrough on the same bodies.
import { AGENT_MODEL, AGENT_PATHS, type AgentPath, ENDPOINTS, peerHeaders, type SizedBodies } from "../agent/paths.js"
import type { AgentBody, Format } from "../agent/wire.js"
import type { BenchContext } from "../context.js"
import { AGENT_ROUTES } from "../deployment.js"
import { type LoadOptions, type LoadRow, loadRow, pairedRows, type StreamRow, streamRow } from "../measure.js"
import { HOST } from "../options.js"

/** One body measured three ways: buffered at c=1 and c=32, and streamed (sequential). */
export interface Trio {
  readonly c1: LoadRow
  readonly c32: LoadRow
  readonly stream: StreamRow
}

/** A path's rows: our server, the floor and the peer gateway (`undefined` where they have none). */
export interface PathRows {
  readonly path: AgentPath["key"]
  readonly ours: Trio
  readonly floor: Trio | undefined
  readonly peer: Trio | undefined
  /** Why the peer has no rows here, when it has none. */
  readonly peerSkipped: string | undefined
}

/** The `user_turn` capability route with the live judge, and passthrough on the same bodies. */
export interface JudgeRows {
  readonly pass: Trio
  readonly cap: Trio
  /** The capability route on a continuation of the same session: the stored tier, no judge. */
  readonly affinity: LoadRow
}

/** Every agent row of one body size. */
export interface AgentSizeRows {
  readonly kb: number
  readonly direct: Readonly<Record<"chat" | "messages", Trio>>
  readonly paths: ReadonlyArray<PathRows>
  readonly judge: JudgeRows
}

/** Where a trio is sent: a process's port, the endpoint and its headers, the bodies, the stream's end. */
interface Target {
  readonly port: number
  readonly pid: number | undefined
  readonly format: Format
  readonly headers?: Readonly<Record<string, string>>
  readonly body: AgentBody
  readonly model: string
}

/** The session of the judge rows (Claude Code and Codex send one on every request). */
const SESSION = { "x-switchyard-session-id": "bench-agent-session" }

const timingOf = (ctx: BenchContext) => ({ rowS: ctx.options.agentRowS, warmS: ctx.options.agentWarmS })

/** The buffered load of a target at `connections`. */
const loadOf = (t: Target, connections: number): LoadOptions => {
  const { endpoint, headers: formatHeaders } = ENDPOINTS[t.format]
  return {
    url: `http://${HOST}:${t.port}${endpoint}`,
    body: t.body.text({ model: t.model, stream: false }),
    headers: { ...formatHeaders, ...t.headers },
    connections,
    ...(t.pid === undefined ? {} : { pid: t.pid })
  }
}

/** A target's trio; `c1` when its c=1 row was measured already (paired with another's). */
const measureTrio = async (
  ctx: BenchContext,
  label: string,
  t: Target,
  ref: Trio | undefined,
  measuredC1?: LoadRow
): Promise<Trio> => {
  const { endpoint, done, headers: formatHeaders } = ENDPOINTS[t.format]
  const headers = { ...formatHeaders, ...t.headers }
  const load = async (connections: number, vs: LoadRow | undefined) => {
    const row = ctx.log(await loadRow(`${label}, c=${connections}`, loadOf(t, connections), timingOf(ctx)))
    if (vs !== undefined) row.added = row.mean - vs.mean
    return row
  }
  const c1 = measuredC1 ?? await load(1, ref?.c1)
  const c32 = await load(32, ref?.c32)
  const stream = ctx.log(
    await streamRow(`${label}, streaming`, t.port, t.body.text({ model: t.model, stream: true }), {
      n: ctx.options.agentStreamN,
      headers,
      path: endpoint,
      done,
      ...(t.pid === undefined ? {} : { pid: t.pid })
    })
  )
  if (ref !== undefined) {
    stream.addedFirst = stream.first.p50 - ref.stream.first.p50
    stream.addedLast = stream.last.p50 - ref.stream.last.p50
  }
  return { c1, c32, stream }
}

/**
 * Sets the c=32 and streamed rows' `added` against `base` (same body, another route), named by `vs`
 * (the c=1 rows are measured in alternation, which sets theirs).
 */
const against = (trio: Trio, base: Trio, vs: string): Trio => {
  trio.c32.added = trio.c32.mean - base.c32.mean
  trio.c32.addedVs = vs
  trio.stream.addedFirst = trio.stream.first.p50 - base.stream.first.p50
  trio.stream.addedLast = trio.stream.last.p50 - base.stream.last.p50
  trio.stream.addedVs = vs
  return trio
}

const pathRows = async (
  ctx: BenchContext,
  sized: SizedBodies,
  path: AgentPath,
  direct: Trio,
  peerUsable: (path: AgentPath) => string | undefined
): Promise<PathRows> => {
  const body = sized.continuation[path.format]
  const prefix = `agent ${sized.kb} KB`
  const ours = await measureTrio(ctx, `${prefix}, ${path.label}`, {
    port: ctx.server.port,
    pid: ctx.server.pid,
    format: path.format,
    body,
    model: path.route
  }, direct)
  const floor = path.floor
    ? await measureTrio(ctx, `${prefix}, floor, ${ENDPOINTS[path.format].endpoint}`, {
      port: ctx.floor.port,
      pid: ctx.floor.pid,
      format: path.format,
      body,
      model: path.route
    }, direct)
    : undefined
  const peerSkipped = peerUsable(path)
  const peer = ctx.peer !== undefined && peerSkipped === undefined && typeof path.peer === "string"
    ? await measureTrio(ctx, `${prefix}, peer gateway, ${ENDPOINTS[path.format].endpoint}`, {
      port: ctx.peer.port,
      pid: ctx.peer.pid,
      format: path.format,
      headers: peerHeaders(path.peer, ctx.mock.port),
      body,
      model: AGENT_MODEL
    }, direct)
    : undefined
  return { path: path.key, ours, floor, peer, peerSkipped }
}

const judgeRows = async (ctx: BenchContext, sized: SizedBodies, direct: Trio, chat: Trio): Promise<JudgeRows> => {
  const prefix = `agent ${sized.kb} KB user turn`
  const on = (route: string): Target => ({
    port: ctx.server.port,
    pid: ctx.server.pid,
    format: "chat",
    headers: SESSION,
    body: sized.userTurn,
    model: route
  })
  const passLabel = `${prefix}, passthrough`
  const capLabel = `${prefix}, capability user_turn, live judge`
  // the target's figure is the c=1 difference: the two routes' c=1 rows in alternating rounds
  const c1 = await pairedRows(
    { name: `${passLabel}, c=1`, options: loadOf(on(AGENT_ROUTES.chat), 1) },
    { name: `${capLabel}, c=1`, options: loadOf(on(AGENT_ROUTES.cap), 1) },
    timingOf(ctx),
    "passthrough, same body"
  )
  const passC1 = ctx.log(c1.a)
  passC1.added = passC1.mean - direct.c1.mean
  const pass = await measureTrio(ctx, passLabel, on(AGENT_ROUTES.chat), direct, passC1)
  const cap = against(
    await measureTrio(ctx, capLabel, on(AGENT_ROUTES.cap), undefined, ctx.log(c1.b)),
    pass,
    "passthrough, same body"
  )
  const affinity = ctx.log(
    await loadRow(`agent ${sized.kb} KB continuation, capability user_turn, stored tier (affinity), c=1`, {
      url: `${ctx.server.url}${ENDPOINTS.chat.endpoint}`,
      body: sized.continuation.chat.text({ model: AGENT_ROUTES.cap, stream: false }),
      headers: SESSION,
      connections: 1,
      pid: ctx.server.pid
    }, timingOf(ctx))
  )
  affinity.added = affinity.mean - chat.c1.mean
  affinity.addedVs = "passthrough, same body"
  return { pass, cap, affinity }
}

/**
 * Every agent row, size by size. `peerUsable` says why the peer cannot carry a path (its sanity
 * check failed), or `undefined` when it can.
 */
export const agentRows = async (
  ctx: BenchContext,
  bodies: ReadonlyArray<SizedBodies>,
  peerUsable: (path: AgentPath) => string | undefined
): Promise<ReadonlyArray<AgentSizeRows>> => {
  const out: Array<AgentSizeRows> = []
  for (const sized of bodies) {
    const directTrio = (upstream: "chat" | "messages") =>
      measureTrio(ctx, `agent ${sized.kb} KB, direct mock ${ENDPOINTS[upstream].endpoint}`, {
        port: ctx.mock.port,
        pid: undefined,
        format: upstream,
        body: sized.continuation[upstream],
        model: AGENT_MODEL
      }, undefined)
    const direct = { chat: await directTrio("chat"), messages: await directTrio("messages") }
    const paths: Array<PathRows> = []
    for (const path of AGENT_PATHS) paths.push(await pathRows(ctx, sized, path, direct[path.upstream], peerUsable))
    const chat = paths.find((p) => p.path === "chat")?.ours
    if (chat === undefined) throw new Error("the chat path has no rows")
    out.push({ kb: sized.kb, direct, paths, judge: await judgeRows(ctx, sized, direct.chat, chat) })
  }
  return out
}
