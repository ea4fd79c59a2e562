// The container check's child processes: each one tracked by PID (./lib/processes.ts stops what is
// left on exit), bounded in time, its output kept for the failure message and appended to the run's
// log file; plus the root and tool checks that come before anything else.
import { spawn } from "node:child_process"
import { appendFileSync } from "node:fs"
import { pidOf, track } from "../lib/processes.js"

/** A step of the check failed; `message` says which and why, for the one line the check prints. */
export class CheckFailed extends Error {}

export interface RunOptions {
  /** Stop the command (SIGTERM, then SIGKILL 5 s later) and fail after this long. */
  readonly timeoutMs: number
  /** Append the command line and its output here. */
  readonly log: string
  readonly env?: NodeJS.ProcessEnv
  /** Text written to the command's stdin (closed afterwards; without it, closed at once). */
  readonly input?: string
}

export interface RunResult {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/** The last `n` lines of `text`, indented, for a failure message. */
export const tail = (text: string, n = 30): string =>
  text.trimEnd().split("\n").slice(-n).map((line) => `    ${line}`).join("\n")

/** Runs `command` to its end (or its bound); never rejects on a non-zero exit, see {@link must}. */
export const run = (command: string, args: ReadonlyArray<string>, options: RunOptions): Promise<RunResult> =>
  new Promise((resolve, reject) => {
    appendFileSync(options.log, `\n$ ${command} ${args.join(" ")}\n`)
    const child = track(spawn(command, args, { env: options.env ?? process.env, stdio: ["pipe", "pipe", "pipe"] }))
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString()
      appendFileSync(options.log, chunk)
    })
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString()
      appendFileSync(options.log, chunk)
    })
    // A command that exits before it reads its input closes the pipe (EPIPE on our side): its exit
    // code says how it went, so that error is not the check's failure.
    child.stdin.on("error", () => {})
    if (options.input === undefined) child.stdin.end()
    else child.stdin.end(options.input)
    let timedOut = false
    const timer = setTimeout(() => {
      timedOut = true
      process.kill(pidOf(child), "SIGTERM")
      setTimeout(() => {
        if (child.exitCode === null && child.signalCode === null) process.kill(pidOf(child), "SIGKILL")
      }, 5000).unref()
    }, options.timeoutMs)
    child.once("error", (error) => {
      clearTimeout(timer)
      reject(new CheckFailed(`could not run ${command}: ${error.message}`))
    })
    child.once("close", (code) => {
      clearTimeout(timer)
      if (timedOut) {
        reject(new CheckFailed(`${command} ${args.join(" ")} did not finish within ${options.timeoutMs / 1000} s`))
      } else {
        resolve({ code, stdout, stderr })
      }
    })
  })

/** {@link run}, failing with `what` and the output's tail when the exit code is not 0. */
export const must = async (
  what: string,
  command: string,
  args: ReadonlyArray<string>,
  options: RunOptions
): Promise<string> => {
  const result = await run(command, args, options)
  if (result.code !== 0) {
    throw new CheckFailed(`${what} failed (${command} exited ${result.code}):\n${tail(result.stderr || result.stdout)}`)
  }
  return result.stdout
}

/** Whether `command` is on the PATH. */
export const onPath = async (command: string, log: string): Promise<boolean> =>
  (await run("sh", ["-c", `command -v ${command}`], { timeoutMs: 5000, log })).code === 0

/** The Debian packages the check uses, installed with apt-get when missing (saying so). */
export const ensureTools = async (log: string): Promise<void> => {
  const missing: Array<string> = []
  for (const tool of ["buildah", "debootstrap"]) if (!(await onPath(tool, log))) missing.push(tool)
  if (missing.length === 0) return
  console.log(`container-check: installing ${missing.join(" and ")} from Debian's packages (apt-get install -y)`)
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" }
  await must("apt-get update", "apt-get", ["update", "-qq"], { timeoutMs: 300_000, log, env })
  await must(`apt-get install ${missing.join(" ")}`, "apt-get", ["install", "-y", "-qq", ...missing], {
    timeoutMs: 900_000,
    log,
    env
  })
}
