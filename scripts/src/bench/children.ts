// The bench's processes: forked helpers that report their port over IPC (the mock upstream, the
// floor), the switchyard server from its CLI (the testkit's ServerProcess), and a closed port.
import type * as ServerProcess from "@switchyard-ts/testkit/ServerProcess"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { type ChildProcess, fork } from "node:child_process"
import net from "node:net"
import path from "node:path"
import { performance } from "node:perf_hooks"
import { fileURLToPath } from "node:url"
import { pidOf, startServer, stopServer, track, withTimeout } from "../lib/processes.js"
import { HOST } from "./options.js"
import { procCpuS } from "./proc.js"
import { Ready } from "./shared.js"

/** scripts/dist/bench: where the compiled helper scripts are. */
export const HERE = path.dirname(fileURLToPath(import.meta.url))
/** The repository root. */
export const ROOT = path.resolve(HERE, "../../..")

const decodeReady = Schema.decodeUnknownOption(Ready)

/** A forked helper and the port it listens on. */
export interface Forked {
  readonly child: ChildProcess
  readonly pid: number
  readonly port: number
}

/** Fork `script` with `argv` and wait (10 s at most) for its ready message. */
export const startForked = async (script: string, argv: ReadonlyArray<string>, what: string): Promise<Forked> => {
  const child = track(fork(script, argv, { stdio: ["ignore", "inherit", "inherit", "ipc"] }))
  const port = await withTimeout(
    new Promise<number>((resolve, reject) => {
      child.once("message", (m) => {
        const ready = decodeReady(m)
        if (Option.isSome(ready)) resolve(ready.value.port)
        else reject(new Error(`${what} sent an unexpected first message: ${JSON.stringify(m)}`))
      })
      child.once("exit", (code) => reject(new Error(`${what} exited with ${code}`)))
    }),
    10_000,
    `${what} start`
  )
  return { child, pid: pidOf(child), port }
}

/** The minimal mock upstream (scripts/src/bench/mock-upstream.ts). */
export const startMock = () => startForked(path.join(HERE, "mock-upstream.js"), [], "mock")

/** The floor forwarder (scripts/src/bench/floor.ts) in front of the mock, stamping `model`. */
export const startFloor = (mockPort: number, model: string, what: string, connections?: number) =>
  startForked(
    path.join(HERE, "floor.js"),
    [String(mockPort), model, ...(connections === undefined ? [] : [String(connections)])],
    what
  )

/** A loopback port nothing listens on (bound, then closed). */
export const closedPort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const probe = net.createServer()
    probe.once("error", reject)
    probe.listen(0, HOST, () => {
      const address = probe.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      probe.close(() => resolve(port))
    })
  })

/** A running switchyard server and how long it took to print its listening line. */
export interface Server extends ServerProcess.Started {
  readonly pid: number
  readonly startupMs: number
}

/** The server from its CLI on `tomlPath` (`--port 0`, `--shutdown-timeout 5`), ready within 30 s. */
export const startBenchServer = async (
  tomlPath: string,
  nodeFlags: ReadonlyArray<string> = [],
  onLine?: (stream: ServerProcess.Stream, line: string) => void
): Promise<Server> => {
  const started = performance.now()
  const server = await startServer({
    args: ["--config", tomlPath, "--host", HOST, "--port", "0", "--shutdown-timeout", "5"],
    nodeFlags,
    cwd: ROOT,
    keepOutput: 65536,
    readyTimeout: "30 seconds",
    stopTimeout: "10 seconds",
    ...(onLine === undefined ? {} : { onLine })
  })
  return { ...server, pid: server.process.pid, startupMs: performance.now() - started }
}

/**
 * SIGTERM the server (SIGKILL after 10 s) and add its CPU seconds to `cpu.servers`: its exit code,
 * or `"killed"`.
 */
export const stopBenchServer = async (
  server: Server,
  cpu: { servers: number }
): Promise<number | null | "killed"> => {
  const exit = server.process.exit()
  if (Option.isSome(exit)) return exit.value.code
  cpu.servers += procCpuS(server.pid)
  const stopped = await stopServer(server.process)
  return stopped.forced ? "killed" : stopped.code
}

/** SIGTERM a helper, SIGKILL after 5 s. */
export const stopChild = async (child: ChildProcess): Promise<void> => {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()))
  child.kill("SIGTERM")
  try {
    await withTimeout(exited, 5_000, "child stop")
  } catch {
    child.kill("SIGKILL")
  }
}
