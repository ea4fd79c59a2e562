// The soak's server from its CLI (the testkit's ServerProcess): started on the generated deployment,
// its log lines counted by level, its VmRSS read from /proc, stopped with SIGTERM (SIGKILL after 15 s).
import type * as ServerProcess from "@switchyard-ts/testkit/ServerProcess"
import { readFileSync } from "node:fs"
import { startServer, stopServer } from "../lib/processes.js"
import { HOST } from "./options.js"

export interface SoakServer {
  readonly process: ServerProcess.ServerProcess
  readonly pid: number
  readonly url: string
  readonly port: number
  /** Log lines on stdout by `level=`. */
  readonly logLevels: Record<string, number>
}

/** Starts the server on `tomlPath` (`--shutdown-timeout 10`, the routing log when given), ready within 30 s. */
export const startSoakServer = async (
  { cwd, routingLog, tomlPath }: {
    readonly tomlPath: string
    readonly routingLog: string | undefined
    readonly cwd: string
  }
): Promise<SoakServer> => {
  const logLevels: Record<string, number> = {}
  const server = await startServer({
    args: [
      "--config",
      tomlPath,
      "--host",
      HOST,
      "--port",
      "0",
      "--shutdown-timeout",
      "10",
      ...(routingLog === undefined ? [] : ["--routing-log-file", routingLog])
    ],
    cwd,
    keepOutput: 8192,
    readyTimeout: "30 seconds",
    stopTimeout: "15 seconds",
    onLine: (stream, line) => {
      if (stream !== "stdout") return
      const level = /level=(\w+)/.exec(line)?.[1]
      if (level) logLevels[level] = (logLevels[level] ?? 0) + 1
    }
  })
  return { process: server.process, pid: server.process.pid, url: server.url, port: server.port, logLevels }
}

export interface Stopped {
  readonly code: number | null | "killed"
  readonly ms: number
}

/** SIGTERM, then SIGKILL after 15 s: the exit code (or `"killed"`) and how long it took. */
export const stopSoakServer = async (server: SoakServer): Promise<Stopped> => {
  const stopped = await stopServer(server.process)
  return { code: stopped.forced ? "killed" : stopped.code, ms: stopped.ms }
}

export interface Rss {
  readonly rssMb: number
  readonly hwmMb: number
}

/** VmRSS and VmHWM of `pid` (NaN when it cannot be read). */
export const rssMb = (pid: number): Rss => {
  try {
    const text = readFileSync(`/proc/${pid}/status`, "utf8")
    const kb = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, "m").exec(text)?.[1] ?? NaN)
    return { rssMb: kb("VmRSS") / 1024, hwmMb: kb("VmHWM") / 1024 }
  } catch {
    return { rssMb: NaN, hwmMb: NaN }
  }
}
