// Running the image's own command inside its mounted root file system: `unshare --mount` (a private
// mount namespace, so the /proc and /dev mounted for the server vanish with it and the host's
// mounts are never touched), then `chroot --userspec` as the image's user, then `env -i` with the
// image's environment and working directory. Each of these execs the next, so the PID spawned here
// is the server's own and it is stopped by that PID.
import { spawn } from "node:child_process"
import { appendFileSync, readFileSync } from "node:fs"
import { pidOf, sleep, track } from "../lib/processes.js"
import { CheckFailed, run, type RunOptions, type RunResult, tail } from "./commands.js"
import type { RunConfig } from "./image.js"

/** The command line that runs `argv` inside `root` as the image says (user, environment, directory). */
export const insideCommand = (
  root: string,
  config: RunConfig,
  extraEnv: ReadonlyArray<string>,
  argv: ReadonlyArray<string>
): ReadonlyArray<string> => {
  const user = config.user === "" ? "0:0" : config.user
  const mountAndChroot = [
    "mount -t proc proc \"$1/proc\"",
    "mount --rbind /dev \"$1/dev\"",
    "root=\"$1\"; user=\"$2\"; shift 2",
    "exec chroot --userspec=\"$user\" \"$root\" \"$@\""
  ].join(" && ")
  return [
    "unshare",
    "--mount",
    "--propagation",
    "private",
    "sh",
    "-c",
    mountAndChroot,
    "sh",
    root,
    user,
    "/usr/bin/env",
    "-i",
    "-C",
    config.workingDir,
    ...config.env,
    ...extraEnv,
    ...argv
  ]
}

/** Runs `argv` inside the image to its end (bounded), as {@link insideCommand} says. */
export const runInside = (
  root: string,
  config: RunConfig,
  argv: ReadonlyArray<string>,
  options: RunOptions
): Promise<RunResult> => {
  const [file = "unshare", ...args] = insideCommand(root, config, [], argv)
  return run(file, args, options)
}

/** A server started inside the image. */
export interface InsideServer {
  readonly pid: number
  readonly output: () => string
  /** Resolves with the exit code (or signal) once it has exited. */
  readonly exited: Promise<string>
  readonly hasExited: () => boolean
}

/** Spawns `command` (from {@link insideCommand}); its output is appended to `log` as well. */
export const startInside = (command: ReadonlyArray<string>, log: string): InsideServer => {
  const [file, ...args] = command
  if (file === undefined) throw new CheckFailed("empty command")
  appendFileSync(log, `\n$ ${command.join(" ")}\n`)
  const child = track(spawn(file, args, { stdio: ["ignore", "pipe", "pipe"] }))
  let output = ""
  const collect = (chunk: Buffer): void => {
    output += chunk.toString()
    appendFileSync(log, chunk)
  }
  child.stdout.on("data", collect)
  child.stderr.on("data", collect)
  let done = false
  const exited = new Promise<string>((resolve) => {
    child.once("close", (code, signal) => {
      done = true
      resolve(code === null ? `signal ${signal}` : `exit ${code}`)
    })
  })
  return { pid: pidOf(child), output: () => output, exited, hasExited: () => done }
}

/** The real user and group ids of a running process, from /proc (e.g. `10001:10001`). */
export const idsOf = (pid: number): string => {
  const status = readFileSync(`/proc/${pid}/status`, "utf8")
  const field = (name: string): string => status.match(new RegExp(`^${name}:\\s+(\\d+)`, "m"))?.[1] ?? "?"
  return `${field("Uid")}:${field("Gid")}`
}

/**
 * Stops the server by its PID: SIGTERM, up to `timeoutMs` for it to exit, then SIGKILL. Returns
 * how it ended and whether the SIGKILL was needed.
 */
export const stopInside = async (
  server: InsideServer,
  timeoutMs: number
): Promise<{ readonly how: string; readonly forced: boolean }> => {
  if (server.hasExited()) return { how: await server.exited, forced: false }
  process.kill(server.pid, "SIGTERM")
  const deadline = Date.now() + timeoutMs
  while (!server.hasExited() && Date.now() < deadline) await sleep(50)
  if (server.hasExited()) return { how: await server.exited, forced: false }
  process.kill(server.pid, "SIGKILL")
  return { how: await server.exited, forced: true }
}

/** Waits (bounded) until the output holds `listening on http://…`; fails with the output's tail. */
export const awaitListening = async (server: InsideServer, timeoutMs: number): Promise<string> => {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const url = server.output().match(/listening on (https?:\/\/\S+)/)?.[1]
    if (url !== undefined) return url
    if (server.hasExited()) {
      throw new CheckFailed(`the server exited before listening (${await server.exited}):\n${tail(server.output())}`)
    }
    if (Date.now() > deadline) {
      throw new CheckFailed(
        `the server printed no listening line within ${timeoutMs / 1000} s:\n${tail(server.output())}`
      )
    }
    await sleep(50)
  }
}
