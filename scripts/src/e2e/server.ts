// A switchyard server for the e2e run (the testkit's ServerProcess): its stdout and stderr copied
// into a log file of the run folder, ready within 20 s, stopped with SIGTERM (SIGKILL after 5 s).
import type * as ServerProcess from "@switchyard-ts/testkit/ServerProcess"
import fs from "node:fs"
import { startServer, stopServer } from "../lib/processes.js"
import { ROOT } from "./paths.js"

export interface E2eServer {
  readonly url: string
  readonly logPath: string
  readonly stop: () => Promise<void>
}

/** Serves `tomlPath`, logging to `logPath`. */
export const startE2eServer = async (tomlPath: string, logPath: string): Promise<E2eServer> => {
  const log = fs.createWriteStream(logPath)
  let server: ServerProcess.Started
  try {
    server = await startServer({
      args: ["--config", tomlPath, "--host", "127.0.0.1", "--port", "0", "--shutdown-timeout", "2"],
      cwd: ROOT,
      readyTimeout: "20 seconds",
      stopTimeout: "5 seconds",
      keepOutput: 65536,
      onOutput: (_stream, chunk) => log.write(chunk)
    })
  } catch (error) {
    log.end()
    throw new Error(`${error instanceof Error ? error.message : String(error)} (log: ${logPath})`)
  }
  return {
    url: server.url,
    logPath,
    stop: async () => {
      await stopServer(server.process)
      await new Promise<void>((resolve) => log.end(() => resolve()))
    }
  }
}
