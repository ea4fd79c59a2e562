// Child processes of the scripts: tracked by PID and always stopped (SIGKILL as the last resort)
// when the script exits, on errors and on SIGINT/SIGTERM; the switchyard server through the
// testkit's ServerProcess (which kills its own children on exit too) as promises; plus small
// promise and HTTP helpers.
import * as ServerProcess from "@switchyard-ts/testkit/ServerProcess"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import type { ChildProcess } from "node:child_process"
import { existsSync } from "node:fs"
import type * as http from "node:http"
import * as path from "node:path"

const children = new Set<ChildProcess>()

/** Stop every tracked child now (also done on exit). */
export const killAll = (): void => {
  for (const child of children) {
    try {
      if (child.pid !== undefined) process.kill(child.pid, "SIGKILL")
    } catch {}
  }
  children.clear()
}

process.on("exit", killAll)
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.on(signal, () => {
    killAll()
    process.exit(130)
  })
}

/** Track a spawned child so it is stopped whatever happens to this script. */
export const track = <C extends ChildProcess>(child: C): C => {
  children.add(child)
  child.once("exit", () => children.delete(child))
  return child
}

/** Runs a ServerProcess effect; rejects with its `ServerProcessError` itself (its message names the cause). */
const run = async <A>(effect: Effect.Effect<A, ServerProcess.ServerProcessError>): Promise<A> => {
  const result = await Effect.runPromise(Effect.either(effect))
  if (Either.isLeft(result)) throw result.left
  return result.right
}

/** Starts the switchyard CLI and waits until it listens; the caller stops it ({@link stopServer}). */
export const startServer = (options: ServerProcess.Options): Promise<ServerProcess.Started> =>
  run(ServerProcess.startUnscoped(options))

/** Stops a server by PID: its signal, a bounded wait, then SIGKILL. Never rejects. */
export const stopServer = (server: ServerProcess.ServerProcess): Promise<ServerProcess.Stopped> =>
  Effect.runPromise(server.stop)

/** Resolve after `ms` milliseconds. */
export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

/** `promise`, or a rejection naming `what` after `ms` milliseconds. */
export const withTimeout = <A>(promise: Promise<A>, ms: number, what: string): Promise<A> =>
  new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${what}: no result within ${ms} ms`)), ms)
    promise.then(
      (v) => {
        clearTimeout(timer)
        resolve(v)
      },
      (e: unknown) => {
        clearTimeout(timer)
        reject(e)
      }
    )
  })

/** The spawned child's PID; a child without one failed to spawn. */
export const pidOf = (child: ChildProcess): number => {
  if (child.pid === undefined) throw new Error(`child process ${child.spawnfile} has no PID (spawn failed)`)
  return child.pid
}

/** Exits with a one-line hint when the server has not been built (`packages/server/dist`). */
export const requireBuild = (root: string): void => {
  if (!existsSync(path.join(root, "packages/server/dist/Cli.js"))) {
    console.error("packages/server/dist is missing: run `npm run build` first")
    process.exit(1)
  }
}

/** A response header as one string (repeated values joined), or `undefined`. */
export const header = (headers: http.IncomingHttpHeaders, name: string): string | undefined => {
  const value = headers[name]
  return Array.isArray(value) ? value.join(", ") : value
}
