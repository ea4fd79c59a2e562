// Row 7: sessions. A fresh server (with a GC probe preloaded) and distinct session ids on a
// new_session route, each judged once and stored. Sessions are created through /v1/decision, which
// routes exactly like /v1/chat/completions (session state included) but skips the answer call, so
// about twice as many sessions fit in the time budget. The fill runs in chunks; after each chunk a
// full GC and a heapUsed reading give the slope, and 100k sessions are extrapolated along it.
import * as Schema from "effect/Schema"
import http from "node:http"
import path from "node:path"
import { performance } from "node:perf_hooks"
import { header, sleep, withTimeout } from "../../lib/processes.js"
import { HERE, type Server, startBenchServer, stopBenchServer } from "../children.js"
import type { RunContext } from "../context.js"
import { cannon, chatBody, chatRequest, JSON_HEADERS, stats, timedRequest } from "../measure.js"
import type { BenchOptions } from "../options.js"
import { procStatus } from "../proc.js"
import { checkRoute } from "../sanity.js"

const HEAP_PROBE = path.join(HERE, "heap-probe.cjs")
const PROBE_PREFIX = "heap-probe "

/** The part of the heap probe's `process.memoryUsage()` line the bench reads. */
const HeapLine = Schema.parseJson(Schema.Struct({ heapUsed: Schema.Number }))
const decodeHeapLine = Schema.decodeUnknownSync(HeapLine)

export interface HeapPoint {
  readonly sessions: number
  readonly heapUsedMb: number
  readonly rssMb: number
}

export interface SessionsRow {
  readonly name: string
  readonly kind: "sessions"
  readonly requested: number
  readonly sent: number
  readonly stored: number
  readonly budgetS: number
  readonly elapsedS: number
  readonly rps: number
  readonly mean: number
  readonly p50: number
  readonly p99: number
  readonly errors: number
  readonly non2xx: number
  readonly rssBeforeMb: number
  readonly rssAfterMb: number
  readonly rssPeakDuringMb: number
  readonly rssDeltaMb: number
  readonly hwmMb: number
  readonly heapUsedBeforeMb: number
  readonly heapUsedAfterMb: number
  readonly heapDeltaMb: number
  readonly bytesPerSessionSlope: number
  readonly heapDeltaAt100kMb: number
  readonly extrapolated: boolean
  readonly points: ReadonlyArray<HeapPoint>
  readonly lastSessionEvidence: string | undefined
  readonly firstSessionEvidence: string | undefined
}

const mb = (bytes: number) => bytes / 2 ** 20

/** The session server and its heap reading: SIGUSR2 makes the probe GC and print one line. */
const startProbedServer = async (tomlPath: string) => {
  const waiters = new Set<(line: string) => void>()
  const server = await startBenchServer(tomlPath, ["--expose-gc", "--require", HEAP_PROBE], (stream, line) => {
    if (stream !== "stderr" || !line.startsWith(PROBE_PREFIX)) return
    for (const waiter of waiters) waiter(line.slice(PROBE_PREFIX.length))
    waiters.clear()
  })
  const heap = async () => {
    const line = withTimeout(
      new Promise<string>((resolve) => waiters.add(resolve)),
      10_000,
      `server line ${PROBE_PREFIX}`
    )
    process.kill(server.pid, "SIGUSR2")
    return decodeHeapLine(await line)
  }
  return { server, heap }
}

/** Least-squares slope of heapUsed over sessions (MB per session), without the warm first point when there are enough. */
const heapSlope = (points: ReadonlyArray<HeapPoint>): number => {
  const fit = points.length > 3 ? points.slice(1) : points
  const mx = fit.reduce((a, p) => a + p.sessions, 0) / fit.length
  const my = fit.reduce((a, p) => a + p.heapUsedMb, 0) / fit.length
  return fit.reduce((a, p) => a + (p.sessions - mx) * (p.heapUsedMb - my), 0) /
    Math.max(1e-9, fit.reduce((a, p) => a + (p.sessions - mx) ** 2, 0))
}

interface Fill {
  readonly points: ReadonlyArray<HeapPoint>
  readonly latencies: ReadonlyArray<number>
  readonly sent: number
  readonly stored: number
  readonly errors: number
  readonly non2xx: number
  readonly rssPeakDuringMb: number
  readonly fillS: number
  readonly elapsedS: number
}

/** Sends distinct sessions in chunks until `options.sessions` or the time budget, reading the heap after each chunk. */
const fill = async (
  options: BenchOptions,
  s: Server,
  heap: () => Promise<{ readonly heapUsed: number }>,
  first: HeapPoint
): Promise<Fill> => {
  const decisionUrl = `${s.url}/v1/decision`
  const decisionBody = JSON.stringify({ input_format: "openai_chat", request: chatRequest("sess") })
  const points: Array<HeapPoint> = [first]
  const chunk = Math.min(options.quick ? 2_500 : 10_000, options.sessions)
  const latencies: Array<number> = []
  let next = 0
  let stored = 0
  let errors = 0
  let non2xx = 0
  let rssPeakDuringMb = first.rssMb
  const started = performance.now()
  let fillS = 0 // time spent sending (heap readings excluded)
  while (stored < options.sessions) {
    const leftS = options.sessionMaxS - (performance.now() - started) / 1000
    // Size the chunk to finish inside the budget (a chunk cut short leaves requests in flight,
    // which would show up in the next heap reading).
    const rate = fillS > 0 ? stored / fillS : Infinity
    const amount = Math.min(chunk, options.sessions - stored, Math.floor(rate * (leftS - 2)))
    if (amount < 500) break
    const chunkStarted = performance.now()
    const r = await cannon({
      url: decisionUrl,
      connections: options.sessionC,
      amount,
      maxSeconds: Math.max(leftS, 5),
      requests: [
        {
          method: "POST",
          path: "/v1/decision",
          body: decisionBody,
          setupRequest: (req) => ({
            ...req,
            headers: { ...JSON_HEADERS, "x-switchyard-session-id": `bench-session-${next++}` }
          })
        }
      ]
    })
    for (const l of r.latencies) latencies.push(l)
    stored += r.latencies.length
    errors += r.result.errors + r.result.timeouts
    non2xx += r.non2xx
    fillS += (performance.now() - chunkStarted) / 1000
    rssPeakDuringMb = Math.max(rssPeakDuringMb, procStatus(s.pid).rssMb)
    await sleep(300) // let the closed connections go before the reading
    const h = await heap()
    points.push({ sessions: stored, heapUsedMb: mb(h.heapUsed), rssMb: procStatus(s.pid).rssMb })
  }
  const elapsedS = (performance.now() - started) / 1000
  return { points, latencies, sent: next, stored, errors, non2xx, rssPeakDuringMb, fillS, elapsedS }
}

/** The sessions row on a server of its own (null with `--no-sessions`). */
export const sessionsRow = async (ctx: RunContext, tomlPath: string): Promise<SessionsRow | null> => {
  const { options } = ctx
  if (options.sessions <= 0) return null
  const { heap, server: s } = await startProbedServer(tomlPath)
  try {
    const sAgent = new http.Agent({ keepAlive: true, maxSockets: 1 })
    const decisionBody = JSON.stringify({ input_format: "openai_chat", request: chatRequest("sess") })
    // Warm up the route without a session identity (judged every time, nothing stored).
    await cannon({
      url: `${s.url}/v1/decision`,
      body: decisionBody,
      connections: options.sessionC,
      duration: options.quick ? 1 : 3
    })
    await cannon({
      url: `${s.url}/v1/chat/completions`,
      body: chatBody("sess"),
      connections: options.sessionC,
      duration: 1
    })
    await sleep(300)
    const heapBefore = await heap()
    const before = procStatus(s.pid)
    const firstPoint: HeapPoint = { sessions: 0, heapUsedMb: mb(heapBefore.heapUsed), rssMb: before.rssMb }
    const filled = await fill(options, s, heap, firstPoint)
    const { points, stored } = filled
    const after = procStatus(s.pid)
    const lastPoint = points[points.length - 1] ?? firstPoint
    // MB per session beyond the fixed start-up growth.
    const slope = heapSlope(points)
    const heapDeltaMb = lastPoint.heapUsedMb - firstPoint.heapUsedMb
    const heapDeltaAt100kMb = stored >= 100_000 ? heapDeltaMb : heapDeltaMb + slope * (100_000 - stored)
    const last = await checkRoute(sAgent, s.port, "sess", "affinity", {
      "x-switchyard-session-id": `bench-session-${Math.max(0, stored - 1)}`
    })
    const first = await timedRequest(sAgent, s.port, "/v1/chat/completions", chatBody("sess"), {
      "x-switchyard-session-id": "bench-session-0"
    })
    sAgent.destroy()
    const l = stats(filled.latencies)
    return ctx.log({
      name: `${stored} distinct sessions via /v1/decision (new_session), c=${options.sessionC}`,
      kind: "sessions",
      requested: options.sessions,
      sent: filled.sent,
      stored,
      budgetS: options.sessionMaxS,
      elapsedS: filled.elapsedS,
      rps: stored / filled.fillS,
      mean: l.mean,
      p50: l.p50,
      p99: l.p99,
      errors: filled.errors,
      non2xx: filled.non2xx,
      rssBeforeMb: before.rssMb,
      rssAfterMb: after.rssMb,
      rssPeakDuringMb: filled.rssPeakDuringMb,
      rssDeltaMb: after.rssMb - before.rssMb,
      hwmMb: after.hwmMb,
      heapUsedBeforeMb: firstPoint.heapUsedMb,
      heapUsedAfterMb: lastPoint.heapUsedMb,
      heapDeltaMb,
      bytesPerSessionSlope: slope * 2 ** 20,
      heapDeltaAt100kMb,
      extrapolated: stored < 100_000,
      points,
      lastSessionEvidence: last.source,
      firstSessionEvidence: header(first.headers, "x-switchyard-evidence-source")
    })
  } finally {
    await stopBenchServer(s, ctx.cpu)
  }
}
