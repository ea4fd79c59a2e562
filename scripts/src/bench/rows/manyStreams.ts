// Row 6: many streams held open at once by the passthrough route, each relaying `manyChunks`
// chunks `manyGapMs` apart, with /health sampled and a trickle of buffered requests sent while they
// flow; then the same streams through the floor (a process of its own stamping the drip model), for
// what a relayed chunk costs Node itself on this machine.
import http from "node:http"
import { performance } from "node:perf_hooks"
import { Pool } from "undici"
import { sleep, withTimeout } from "../../lib/processes.js"
import { startFloor, stopChild } from "../children.js"
import type { BenchContext } from "../context.js"
import { chatBody, JSON_HEADERS, type Stats, stats, timedGet, timedRequest } from "../measure.js"
import type { BenchOptions } from "../options.js"
import { HOST } from "../options.js"
import { cpuS, procCpuS, procStatus } from "../proc.js"

export interface ManyStreamsRow {
  readonly name: string
  readonly kind: "many-streams"
  readonly streams: number
  readonly chunksPerStream: number
  readonly gapMs: number
  readonly completed: number
  readonly errors: number
  readonly errorSamples: ReadonlyArray<string>
  /** SSE events received by the clients (content chunks and `[DONE]`). */
  readonly eventsRelayed: number
  /** Content chunks relayed (the events without `[DONE]`). */
  readonly chunksRelayed: number
  readonly windowS: number
  readonly serverCpuS: number
  readonly cpuUsPerChunk: number
  /** The same over the steady part only: all streams open, none finished yet (NaN when none). */
  readonly steady: { readonly windowS: number; readonly chunks: number; readonly cpuUsPerChunk: number }
  readonly health: Stats & { readonly errors: number }
  /**
   * The /health samples by when they were sent: while the streams were opening (before all were
   * open), in the steady part, and once the first had finished.
   */
  readonly healthPhases: { readonly opening: Stats; readonly steady: Stats; readonly closing: Stats }
  readonly trickle: Stats & { readonly errors: number }
  readonly rssBeforeMb: number
  readonly rssPeakMb: number
  readonly rssPerStreamKb: number
}

/** What the many-streams row drives: a process listening on `port` (its `url`) that relays the streams. */
interface Relayer {
  readonly url: string
  readonly port: number
  readonly pid: number
}

interface Mark {
  readonly t: number
  readonly cpu: number
  readonly chunks: number
}

/** What the streams have done so far. */
interface StreamsState {
  events: number
  chunks: number
  /** Streams that received their first event. */
  opened: number
  finished: number
  /** Streams that ended well; every other stream counts as an error. */
  completed: number
  readonly errorSamples: Array<string>
  /** When all streams were open, and when the first one finished: the steady part. */
  steadyStart: Mark | undefined
  steadyEnd: Mark | undefined
}

/** The streams' side of the row: opened in batches, each read to its end and checked. */
const driveStreams = (options: BenchOptions, server: Relayer) => {
  const n = options.manyStreams
  const pool = new Pool(server.url, {
    connections: n + 8,
    pipelining: 1,
    keepAliveTimeout: 30_000,
    headersTimeout: 20_000,
    bodyTimeout: 20_000
  })
  const body = chatBody("drip", { stream: true })
  const state: StreamsState = {
    events: 0,
    chunks: 0,
    opened: 0,
    finished: 0,
    completed: 0,
    errorSamples: [],
    steadyStart: undefined,
    steadyEnd: undefined
  }
  const fail = (why: string) => {
    if (state.errorSamples.length < 5) state.errorSamples.push(why)
  }
  const mark = (): Mark => ({ t: performance.now(), cpu: cpuS(server.pid), chunks: state.chunks })
  const one = async (): Promise<void> => {
    try {
      const res = await pool.request({ path: "/v1/chat/completions", method: "POST", headers: JSON_HEADERS, body })
      let got = 0
      let done = false
      let tail = ""
      for await (const part of res.body) {
        const text = tail + (Buffer.isBuffer(part) ? part.toString("utf8") : String(part))
        let at = 0
        let end
        while ((end = text.indexOf("\n\n", at)) >= 0) {
          const event = text.slice(at, end)
          at = end + 2
          if (!event.startsWith("data: ")) continue
          if (got++ === 0 && ++state.opened === n) state.steadyStart = mark()
          state.events++
          if (event === "data: [DONE]") done = true
          else state.chunks++
        }
        tail = text.slice(at)
      }
      if (res.statusCode !== 200) fail(`HTTP ${res.statusCode}`)
      else if (!done || got !== options.manyChunks + 1) fail(`${got} events${done ? "" : ", no [DONE]"}`)
      else state.completed++
    } catch (error) {
      fail(error instanceof Error ? error.message : String(error))
    } finally {
      if (state.finished++ === 0 && state.steadyStart !== undefined) state.steadyEnd = mark()
    }
  }
  const run = async (): Promise<void> => {
    const all: Array<Promise<void>> = []
    // Open the streams in batches (a thousand connects at once would overflow the listen backlog).
    for (let i = 0; i < n; i += 50) {
      for (let j = i; j < Math.min(n, i + 50); j++) all.push(one())
      await sleep(20)
    }
    await withTimeout(Promise.all(all), options.manyChunks * options.manyGapMs + 20_000, "many streams")
  }
  return { state, fail, mark, run, close: () => pool.destroy() }
}

/**
 * While the streams run: /health every ~50 ms and the RSS peak with it, on its own connection, and a
 * trickle of buffered requests (about 10 a second) on the passthrough route; without `probes` only
 * the RSS.
 */
const probe = async (
  server: Relayer,
  { passBody, probes, rssBeforeMb, running }: {
    readonly passBody: string
    readonly probes: boolean
    readonly running: { readonly done: boolean }
    readonly rssBeforeMb: number
  }
) => {
  let rssPeakMb = rssBeforeMb
  const healthMs: Array<number> = []
  /** When each of `healthMs` was sent (`performance.now()`). */
  const healthAt: Array<number> = []
  let healthErrors = 0
  const healthAgent = new http.Agent({ keepAlive: true, maxSockets: 1 })
  const healthLoop = (async () => {
    while (!running.done) {
      const t = performance.now()
      try {
        if (probes) {
          const r = await timedGet(healthAgent, server.port, "/health")
          if (r.status === 200) {
            healthMs.push(r.ms)
            healthAt.push(t)
          } else healthErrors++
        }
      } catch {
        healthErrors++
      }
      rssPeakMb = Math.max(rssPeakMb, procStatus(server.pid).rssMb)
      await sleep(Math.max(0, 50 - (performance.now() - t)))
    }
  })()
  const trickleMs: Array<number> = []
  let trickleErrors = 0
  const trickleAgent = new http.Agent({ keepAlive: true, maxSockets: 1 })
  const trickleLoop = (async () => {
    while (probes && !running.done) {
      try {
        const r = await timedRequest(trickleAgent, server.port, "/v1/chat/completions", passBody)
        if (r.status === 200) trickleMs.push(r.total)
        else trickleErrors++
      } catch {
        trickleErrors++
      }
      await sleep(100)
    }
  })()
  await Promise.all([healthLoop, trickleLoop])
  healthAgent.destroy()
  trickleAgent.destroy()
  return { rssPeakMb, healthMs, healthAt, healthErrors, trickleMs, trickleErrors }
}

/**
 * Samples split by the time they were taken: before `steadyStart` (the streams opening), up to
 * `steadyEnd` (all open, none finished), after it (closing). Without a steady part every sample is
 * "opening" until the end is known, so all go there.
 */
export const healthByPhase = (
  ms: ReadonlyArray<number>,
  at: ReadonlyArray<number>,
  steadyStart: number | undefined,
  steadyEnd: number | undefined
): ManyStreamsRow["healthPhases"] => {
  const opening: Array<number> = []
  const steady: Array<number> = []
  const closing: Array<number> = []
  ms.forEach((value, i) => {
    const t = at[i] ?? NaN
    if (steadyStart === undefined || steadyEnd === undefined || t < steadyStart) opening.push(value)
    else if (t < steadyEnd) steady.push(value)
    else closing.push(value)
  })
  return { opening: stats(opening), steady: stats(steady), closing: stats(closing) }
}

/**
 * The many-streams row against `server`. With `probes` (our server), `/health` is sampled and a
 * buffered trickle is sent while the chunks flow; without (the floor, which has neither), only its
 * CPU and RSS are read.
 */
const manyStreamsRow = async (
  options: BenchOptions,
  server: Relayer,
  passBody: string,
  label: string,
  probes = true
): Promise<ManyStreamsRow> => {
  const n = options.manyStreams
  const streams = driveStreams(options, server)
  const rssBeforeMb = procStatus(server.pid).rssMb
  const start = streams.mark()
  const running = { done: false }
  const launched = streams.run().finally(() => (running.done = true))
  const probed = probe(server, { passBody, probes, running, rssBeforeMb })
  try {
    await launched
  } catch (error) {
    streams.fail(error instanceof Error ? error.message : String(error))
  }
  const end = streams.mark()
  const { healthAt, healthErrors, healthMs, rssPeakMb, trickleErrors, trickleMs } = await probed
  await streams.close()

  const { chunks, completed, errorSamples, events, steadyEnd, steadyStart } = streams.state
  const windowS = (end.t - start.t) / 1000
  const serverCpuS = end.cpu - start.cpu
  const steady = steadyStart !== undefined && steadyEnd !== undefined && steadyEnd.chunks > steadyStart.chunks
    ? {
      windowS: (steadyEnd.t - steadyStart.t) / 1000,
      chunks: steadyEnd.chunks - steadyStart.chunks,
      cpuUsPerChunk: ((steadyEnd.cpu - steadyStart.cpu) * 1e6) / (steadyEnd.chunks - steadyStart.chunks)
    }
    : { windowS: NaN, chunks: 0, cpuUsPerChunk: NaN }
  return {
    name: `${n} concurrent streams × ${options.manyChunks} chunks ${options.manyGapMs} ms apart (${label})`,
    kind: "many-streams",
    streams: n,
    chunksPerStream: options.manyChunks,
    gapMs: options.manyGapMs,
    completed,
    errors: n - completed,
    errorSamples,
    eventsRelayed: events,
    chunksRelayed: chunks,
    windowS,
    serverCpuS,
    cpuUsPerChunk: chunks > 0 ? (serverCpuS * 1e6) / chunks : NaN,
    steady,
    health: { ...stats(healthMs), errors: healthErrors },
    healthPhases: healthByPhase(healthMs, healthAt, steadyStart?.t, steadyEnd?.t),
    trickle: { ...stats(trickleMs), errors: trickleErrors },
    rssBeforeMb,
    rssPeakMb,
    rssPerStreamKb: ((rssPeakMb - rssBeforeMb) * 1024) / n
  }
}

export interface ManyStreamsRows {
  readonly many: ManyStreamsRow | undefined
  readonly manyFloor: ManyStreamsRow | undefined
}

/** Both many-streams rows (none with `--streams 0`). */
export const manyStreamsRows = async (ctx: BenchContext): Promise<ManyStreamsRows> => {
  const { log, options, server } = ctx
  if (options.manyStreams <= 0) return { many: undefined, manyFloor: undefined }
  const passBody = chatBody("pass")
  const many = log(await manyStreamsRow(options, server, passBody, "passthrough"))
  const dripFloor = await startFloor(ctx.mock.port, options.dripModel, "floor (many streams)", options.manyStreams + 8)
  const manyFloor = log(
    await manyStreamsRow(
      options,
      { url: `http://${HOST}:${dripFloor.port}`, port: dripFloor.port, pid: dripFloor.pid },
      passBody,
      "floor",
      false
    )
  )
  ctx.cpu.floor += procCpuS(dripFloor.pid)
  await stopChild(dripFloor.child)
  return { many, manyFloor }
}
