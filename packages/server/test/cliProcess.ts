/**
 * Test support: the `switchyard` CLI as users run it — the compiled bin in a child process (built
 * by `npm run build`, which `npm ci` and `npm test` run first), killed when the scope closes.
 */
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import * as path from "node:path"

const bin = path.resolve(import.meta.dirname, "../bin/switchyard.js")
/** The repository root (the CLI's working directory). */
export const root = path.resolve(import.meta.dirname, "../../..")

/** A running CLI process. */
export interface Run {
  readonly child: ChildProcess
  readonly stdout: () => string
  readonly stderr: () => string
  readonly exited: Effect.Effect<number | null>
  /** The base URL of the `listening on` line, once stdout has printed it. */
  readonly listeningOn: Effect.Effect<string>
}

/** Spawn the CLI; the process is killed when the scope closes if it is still running. */
export const run = (args: ReadonlyArray<string>, env: Readonly<Record<string, string>> = {}) =>
  Effect.gen(function*() {
    const exit = yield* Deferred.make<number | null>()
    const child = yield* Effect.acquireRelease(
      Effect.sync(() =>
        spawn(process.execPath, [bin, ...args], {
          cwd: root,
          stdio: ["ignore", "pipe", "pipe"],
          env: { ...process.env, ...env }
        })
      ),
      (child) => Effect.sync(() => child.exitCode === null && child.kill("SIGKILL"))
    )
    const listeningOn = yield* Deferred.make<string>()
    let out = ""
    let err = ""
    child.stdout?.on("data", (data: Buffer) => {
      out += data.toString()
      // The whole line: a chunk may end inside the URL.
      const match = /listening on (https?:\/\/\S+)\s/.exec(out)
      if (match?.[1] !== undefined) Deferred.unsafeDone(listeningOn, Effect.succeed(match[1]))
    })
    child.stderr?.on("data", (data: Buffer) => (err += data.toString()))
    child.on("exit", (code) => Deferred.unsafeDone(exit, Effect.succeed(code)))
    const result: Run = {
      child,
      stdout: () => out,
      stderr: () => err,
      exited: Deferred.await(exit),
      listeningOn: Deferred.await(listeningOn)
    }
    return result
  })

/**
 * Wait for the `listening on` line and return the base URL; dies with the process's stderr if it
 * exits first. Woken by the process's output and exit, never by a timer.
 */
export const listening = (cli: Run) =>
  Effect.raceFirst(
    cli.listeningOn,
    Effect.flatMap(cli.exited, (code) => Effect.dieMessage(`server did not start (exit ${code}): ${cli.stderr()}`))
  )

/** Write a deployment file into a fresh temporary folder and return its path. */
export const writeToml = (text: string) => {
  const dir = mkdtempSync(path.join(tmpdir(), "switchyard-cli-"))
  const file = path.join(dir, "routes.toml")
  writeFileSync(file, text)
  return file
}

/** A deployment with one passthrough route `fast` to `weak-model` on `upstreamUrl`; `top` goes after `schema_version`. */
export const tomlFor = (upstreamUrl: string, top = "") => `
schema_version = 1
${top}
[llm_clients.sim]
format = "openai_chat"
base_url = "${upstreamUrl}"
max_retries = 0
[targets.weak]
id = "weak-model"
llm_client = "sim"
[routes.fast]
id = "fast"
type = "passthrough"
target = "weak"
`
