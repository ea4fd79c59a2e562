/**
 * Test support: the `switchyard` CLI as users run it — the compiled bin in a child process (built
 * by `npm run build`, which `npm ci` and `npm test` run first), killed when the scope closes. A thin
 * layer over the testkit's `ServerProcess`, in the shape the CLI tests use.
 */
import * as D from "@switchyard-ts/testkit/DeploymentBuilder"
import * as ServerProcess from "@switchyard-ts/testkit/ServerProcess"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Schedule from "effect/Schedule"
import type { ChildProcess } from "node:child_process"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import * as path from "node:path"

/** The repository root (the CLI's working directory). */
export const root = ServerProcess.repositoryRoot

/** A running CLI process. */
export interface Run {
  readonly child: ChildProcess
  readonly stdout: () => string
  readonly stderr: () => string
  readonly exited: Effect.Effect<number | null>
  /**
   * The base URL of the `listening on` line, once stdout has printed it; dies with the process's
   * stderr when it exits first.
   */
  readonly listeningOn: Effect.Effect<string>
}

/** Spawn the CLI; the process is killed (SIGKILL) when the scope closes if it is still running. */
export const run = (args: ReadonlyArray<string>, env: Readonly<Record<string, string>> = {}) =>
  Effect.map(
    Effect.orDie(ServerProcess.spawn({ args, env, stopSignal: "SIGKILL", readyTimeout: "60 seconds" })),
    (cli): Run => ({
      child: cli.child,
      stdout: cli.stdout,
      stderr: cli.stderr,
      exited: Effect.map(cli.exited, (exit) => exit.code),
      listeningOn: cli.ready.pipe(
        Effect.map((at) => at.url),
        Effect.catchAll((error) => Effect.dieMessage(error.message))
      )
    })
  )

/**
 * Wait for the `listening on` line and return the base URL; dies with the process's stderr if it
 * exits first (or prints nothing for a minute).
 */
export const listening = (cli: Run) => cli.listeningOn

/** Wait (bounded) until the process's stdout has printed `count` lines containing `marker`. */
export const printed = (cli: Run, marker: string, count = 1) =>
  Effect.suspend(() =>
    cli.stdout().split("\n").filter((line) => line.includes(marker)).length >= count
      ? Effect.void
      : Effect.fail("not yet")
  ).pipe(
    Effect.retry(Schedule.spaced("50 millis").pipe(Schedule.upTo(Duration.seconds(20)))),
    Effect.orElse(() => Effect.dieMessage(`no "${marker}" line ×${count} in:\n${cli.stdout()}\n${cli.stderr()}`))
  )

/** Write a deployment file into a fresh temporary folder and return its path. */
export const writeToml = (text: string) => {
  const dir = mkdtempSync(path.join(tmpdir(), "switchyard-cli-"))
  const file = path.join(dir, "routes.toml")
  writeFileSync(file, text)
  return file
}

/** A deployment with one passthrough route `fast` to `weak-model` on `upstreamUrl`; `top` goes after `schema_version`. */
export const tomlFor = (upstreamUrl: string, top = "") => {
  const [version, ...rest] = D.toToml({
    llm_clients: { sim: D.client("openai_chat", upstreamUrl, { max_retries: 0 }) },
    targets: { weak: D.target("weak-model", "sim") },
    routes: { fast: D.passthrough("fast", "weak") }
  }).split("\n")
  return [version, top, ...rest].join("\n")
}
