// Row 9: peak RSS per in-flight agent request. For each path, a fresh server (so an earlier row's
// heap growth does not hide this one's) is warmed with one request at a time, its peak RSS is reset
// (`/proc/<pid>/clear_refs` = 5), then `agentHeld` agent-sized requests are held in flight by the
// mock (its held model answers only when released): (VmHWM while held − VmRSS before) / requests.
// The floor, a fresh process stamping the held model, is measured the same way on the paths it can
// forward.
import { writeFileSync } from "node:fs"
import http from "node:http"
import { sleep } from "../../lib/processes.js"
import { AGENT_PATHS, type AgentPath, ENDPOINTS, type SizedBodies } from "../agent/paths.js"
import { startBenchServer, startFloor, stopBenchServer, stopChild } from "../children.js"
import type { BenchContext } from "../context.js"
import { timedRequest } from "../measure.js"
import { heldNow, release } from "../mockApi.js"
import { procCpuS, procStatus } from "../proc.js"
import { HOLD_MODEL } from "../shared.js"

export interface InflightRow {
  readonly name: string
  readonly kind: "inflight"
  readonly process: "server" | "floor"
  readonly path: AgentPath["key"]
  readonly held: number
  readonly bodyBytes: number
  readonly rssBeforeMb: number
  /** VmRSS once every request is held. */
  readonly rssHeldMb: number
  /** VmHWM once every request is held (reset just before them when `hwmReset`). */
  readonly hwmMb: number
  readonly perRequestKb: number
  /** Whether the peak could be reset before the requests; otherwise VmHWM is the process's peak since start. */
  readonly hwmReset: boolean
  /** Requests the mock held when the peak was read (all of them unless the server stalled). */
  readonly reached: number
  /** Requests that did not answer 200 after their release. */
  readonly errors: number
}

/** Resets the process's VmHWM to its VmRSS; false when /proc does not allow it. */
const resetPeak = (pid: number): boolean => {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, "5")
    return true
  } catch {
    return false
  }
}

/**
 * Sends `k` requests at once, waits (15 s at most) until the mock holds all of them, calls `atPeak`,
 * releases them and waits for every answer: the statuses, how many were held at the peak and what
 * `atPeak` returned.
 */
const holdRound = async <A>(
  mockPort: number,
  port: number,
  request: { readonly path: string; readonly body: string; readonly headers: Readonly<Record<string, string>> },
  k: number,
  atPeak: () => A
): Promise<{ readonly statuses: ReadonlyArray<number>; readonly reached: number; readonly peak: A }> => {
  const agent = new http.Agent({ keepAlive: true, maxSockets: k })
  try {
    const answers = Array.from(
      { length: k },
      () =>
        timedRequest(agent, port, request.path, request.body, request.headers, 30_000).then((r) => r.status, () => 0)
    )
    const deadline = Date.now() + 15_000
    let reached = await heldNow(mockPort)
    while (reached < k && Date.now() < deadline) {
      await sleep(5)
      reached = await heldNow(mockPort)
    }
    const peak = atPeak()
    await release(mockPort)
    return { statuses: await Promise.all(answers), reached, peak }
  } finally {
    agent.destroy()
  }
}

/** The row of one process: warmed by 20 requests one at a time, then `held` requests in flight. */
const measureHeld = async (
  ctx: BenchContext,
  { body, label, path, pid, port, process, request }: {
    readonly label: string
    readonly path: AgentPath["key"]
    readonly process: "server" | "floor"
    readonly pid: number
    readonly port: number
    readonly body: string
    readonly request: { readonly path: string; readonly headers: Readonly<Record<string, string>> }
  }
): Promise<InflightRow> => {
  const held = ctx.options.agentHeld
  const send = { ...request, body }
  for (let i = 0; i < 20; i++) await holdRound(ctx.mock.port, port, send, 1, () => undefined)
  await sleep(200)
  const hwmReset = resetPeak(pid)
  const before = procStatus(pid)
  const { peak, reached, statuses } = await holdRound(ctx.mock.port, port, send, held, () => procStatus(pid))
  return ctx.log({
    name: `${label}: ${held} × ${Math.round(Buffer.byteLength(body) / 1024)} KB requests in flight`,
    kind: "inflight",
    process,
    path,
    held,
    bodyBytes: Buffer.byteLength(body),
    rssBeforeMb: before.rssMb,
    rssHeldMb: peak.rssMb,
    hwmMb: peak.hwmMb,
    perRequestKb: ((peak.hwmMb - before.rssMb) * 1024) / held,
    hwmReset,
    reached,
    errors: statuses.filter((s) => s !== 200).length
  })
}

/** A fresh process of one kind: where it listens, and how it is stopped (its CPU added to the ledger). */
interface Fresh {
  readonly pid: number
  readonly port: number
  readonly stop: () => Promise<void>
}

/** The in-flight memory rows at the largest agent size: each path on a fresh server, then the floor. */
export const agentMemoryRows = async (
  ctx: BenchContext,
  tomlPath: string,
  sized: SizedBodies
): Promise<ReadonlyArray<InflightRow>> => {
  const server = async (): Promise<Fresh> => {
    const started = await startBenchServer(tomlPath)
    return { pid: started.pid, port: started.port, stop: async () => void (await stopBenchServer(started, ctx.cpu)) }
  }
  const floor = async (): Promise<Fresh> => {
    const started = await startFloor(ctx.mock.port, HOLD_MODEL, "floor (in-flight memory)")
    return {
      pid: started.pid,
      port: started.port,
      stop: () => {
        ctx.cpu.floor += procCpuS(started.pid)
        return stopChild(started.child)
      }
    }
  }
  // Our server's body names the held route; the floor stamps the held model on whatever it gets.
  const subjects = [
    ...AGENT_PATHS.map((path) => ({ process: "server" as const, path, start: server, model: path.holdRoute })),
    ...AGENT_PATHS.filter((p) => p.floor).map((path) => ({
      process: "floor" as const,
      path,
      start: floor,
      model: path.route
    }))
  ]
  const rows: Array<InflightRow> = []
  for (const { model, path, process, start } of subjects) {
    const { endpoint, headers } = ENDPOINTS[path.format]
    const fresh = await start()
    try {
      rows.push(
        await measureHeld(ctx, {
          label: `in-flight memory, ${process}, ${process === "server" ? path.label : endpoint}`,
          path: path.key,
          process,
          pid: fresh.pid,
          port: fresh.port,
          body: sized.continuation[path.format].text({ model, stream: false }),
          request: { path: endpoint, headers }
        })
      )
    } finally {
      await fresh.stop()
    }
  }
  return rows
}
