/**
 * The `switchyard` command as users run it, in a child process: spawned with arguments and
 * environment, ready once stdout prints its `listening on http://HOST:PORT` line, its output
 * collected, and stopped by PID (a signal, a bounded wait, then `SIGKILL`).
 *
 * Two ways in. Tests use the scoped constructors ({@link spawn}, {@link start}): the process is
 * stopped when the scope closes, whether the test passed, failed or was interrupted. Scripts,
 * which are plain async programs, use {@link spawnUnscoped} / {@link startUnscoped} through
 * `Effect.runPromise` and run `stop` themselves. Either way every child is also recorded in a
 * process-wide set and killed with `SIGKILL` when this Node process exits, so none outlives it.
 *
 * Bounds (the ready wait, the stop wait, {@link ServerProcess.nextLine}) are wall-clock timers:
 * a child process does not follow a test's `TestClock`.
 */
import * as Data from "effect/Data"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import { type ChildProcess, spawn as nodeSpawn } from "node:child_process"
import * as path from "node:path"
import { children, remember } from "./internal/children.js"
import { watchChild, type WatchedChild } from "./internal/watchedChild.js"

/** The workspace's `switchyard` bin (packages/server/bin/switchyard.js), run with `node`. */
export const serverBin = path.resolve(import.meta.dirname, "../../server/bin/switchyard.js")

/** The repository root: the default working directory (relative `--config` paths resolve there). */
export const repositoryRoot = path.resolve(import.meta.dirname, "../../..")

/** Which output stream of the child. */
export type Stream = "stdout" | "stderr"

/** Options of {@link spawn} and {@link start}. */
export interface Options {
  /** The CLI's arguments, e.g. `["--config", file, "--port", "0"]`. */
  readonly args: ReadonlyArray<string>
  /** Variables set over this process's environment. */
  readonly env?: Readonly<Record<string, string>>
  /** The script run with `node`; {@link serverBin} by default (the demo passes its own bin). */
  readonly bin?: string
  /** Flags for `node` itself, before the script (`--cpu-prof`, `--expose-gc`, …). */
  readonly nodeFlags?: ReadonlyArray<string>
  /** Working directory; {@link repositoryRoot} by default. */
  readonly cwd?: string
  /** How long {@link ServerProcess.ready} waits for the `listening on` line; 30 s by default. */
  readonly readyTimeout?: Duration.DurationInput
  /** The signal {@link ServerProcess.stop} sends first; `SIGTERM` by default. */
  readonly stopSignal?: NodeJS.Signals
  /** How long {@link ServerProcess.stop} waits after that signal before `SIGKILL`; 10 s by default. */
  readonly stopTimeout?: Duration.DurationInput
  /** Characters of each stream kept by `stdout()` / `stderr()` (the tail); 4 MiB by default. */
  readonly keepOutput?: number
  /** Called with every chunk of output as it arrives (e.g. to copy it into a log file). */
  readonly onOutput?: (stream: Stream, chunk: string) => void
  /** Called with every complete line of output, without its newline. */
  readonly onLine?: (stream: Stream, line: string) => void
}

/** Where a ready server listens, from its `listening on` line. */
export interface Listening {
  /** The base URL as printed, e.g. `http://127.0.0.1:40123` (`https://` with TLS). */
  readonly url: string
  readonly host: string
  readonly port: number
}

/** How the child ended. */
export interface Exit {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
}

/** What {@link ServerProcess.stop} did. */
export interface Stopped extends Exit {
  /** `true` when the first signal was not enough and the child was killed with `SIGKILL`. */
  readonly forced: boolean
  /** Milliseconds from the first signal to the exit (0 when it had already exited). */
  readonly ms: number
}

/**
 * The child could not be spawned, exited before it was ready, or a bound ran out. `stderr` is the
 * tail of its error output, for the message.
 */
export class ServerProcessError extends Data.TaggedError("ServerProcessError")<{
  readonly reason: "SpawnFailed" | "ExitedBeforeReady" | "ReadyTimeout" | "LineTimeout"
  readonly pid: number | undefined
  readonly exit: Exit | undefined
  readonly what: string
  readonly stderr: string
}> {
  override get message(): string {
    switch (this.reason) {
      case "SpawnFailed":
        return `could not spawn ${this.what}: ${this.stderr}`
      case "ExitedBeforeReady":
        return `server did not start (exit ${this.exit?.code ?? this.exit?.signal}): ${this.stderr}`
      case "ReadyTimeout":
        return `server (pid ${this.pid}) printed no listening line within ${this.what}: ${this.stderr}`
      case "LineTimeout":
        return `server (pid ${this.pid}): no ${this.what}: ${this.stderr}`
    }
  }
}

/** A spawned child running the CLI. */
export interface ServerProcess {
  readonly pid: number
  /** The Node handle, for what this interface does not cover (a test sending `SIGHUP`, …). */
  readonly child: ChildProcess
  /** The output so far (at most `keepOutput` characters, the tail). */
  readonly stdout: () => string
  readonly stderr: () => string
  /** How it ended, once it has. */
  readonly exit: () => Option.Option<Exit>
  /** Waits for the exit (and the end of its output). Never fails. */
  readonly exited: Effect.Effect<Exit>
  /**
   * Waits for the `listening on` line; fails with `ExitedBeforeReady` when the child exits first
   * and `ReadyTimeout` after `readyTimeout`.
   */
  readonly ready: Effect.Effect<Listening, ServerProcessError>
  /**
   * Waits for the next line of `stream` (from now on) that `matches`, within `timeout`; fails
   * with `LineTimeout` (also when the child exits first).
   */
  readonly nextLine: (
    stream: Stream,
    matches: (line: string) => boolean,
    timeout: Duration.DurationInput
  ) => Effect.Effect<string, ServerProcessError>
  /** Sends `signal` to the child by PID, if it is still running. */
  readonly signal: (signal: NodeJS.Signals) => Effect.Effect<void>
  /**
   * Sends `stopSignal`, waits up to `stopTimeout` for the exit, then `SIGKILL` and waits for that.
   * Safe to run more than once, and after the child has exited. Never fails.
   */
  readonly stop: Effect.Effect<Stopped>
}

/** A ready server: the process and where it listens. */
export interface Started extends Listening {
  readonly process: ServerProcess
}

const millis = (d: Duration.DurationInput): number => Duration.toMillis(Duration.decode(d))

/**
 * Waits up to `ms` of wall-clock time for `register` to call back (it may do so at once, before it
 * returns its unregister function); `onTimeout` otherwise.
 */
const bounded = <A, E>(
  ms: number,
  register: (done: (a: A) => void) => () => void,
  onTimeout: () => E
): Effect.Effect<A, E> =>
  Effect.async<A, E>((resume) => {
    let settled = false
    let unregister = (): void => {}
    const settle = (result: Effect.Effect<A, E>): void => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      unregister()
      resume(result)
    }
    const timer = setTimeout(() => settle(Effect.fail(onTimeout())), ms)
    unregister = register((a) => settle(Effect.succeed(a)))
    if (settled) unregister()
    return Effect.sync(() => {
      clearTimeout(timer)
      unregister()
    })
  })

/**
 * Spawns the CLI without tying it to a scope: the caller runs `stop` (scripts). The child is
 * still killed when this Node process exits. Fails with `SpawnFailed` when Node cannot start it.
 */
export const spawnUnscoped = (options: Options): Effect.Effect<ServerProcess, ServerProcessError> =>
  Effect.suspend(() => {
    const bin = options.bin ?? serverBin
    const child = nodeSpawn(process.execPath, [...(options.nodeFlags ?? []), bin, ...options.args], {
      cwd: options.cwd ?? repositoryRoot,
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, ...options.env }
    })
    // Without a listener, a spawn error would be thrown as an uncaught exception.
    const spawnError = new Promise<string>((resolve) => child.once("error", (e) => resolve(e.message)))
    const pid = child.pid
    if (pid === undefined) {
      return Effect.flatMap(
        Effect.promise(() => spawnError),
        (message) => new ServerProcessError({ reason: "SpawnFailed", pid, exit: undefined, what: bin, stderr: message })
      )
    }
    remember(child)
    return Effect.succeed(handleOf(child, pid, options))
  })

/** Waits for the `listening on` line (or the exit, which fails it), within `readyTimeout`. */
const readyOf = (watched: WatchedChild, ms: number, error: ErrorOf): Effect.Effect<Listening, ServerProcessError> =>
  bounded<Listening | Exit, ServerProcessError>(
    ms,
    (done) => {
      const now = watched.listening()
      if (now !== undefined) {
        done(now)
        return () => {}
      }
      const unregisterLine = watched.onLine(() => {
        const at = watched.listening()
        if (at !== undefined) done(at)
      })
      const unregisterExit = watched.onExit(done)
      return () => {
        unregisterLine()
        unregisterExit()
      }
    },
    () => error("ReadyTimeout", `${ms} ms`)
  ).pipe(
    Effect.flatMap((result) =>
      "url" in result ? Effect.succeed(result) : Effect.fail(error("ExitedBeforeReady", "ready"))
    )
  )

/** Waits for the next line of `stream` that `matches`, within `timeout` and before the exit. */
const nextLineOf = (watched: WatchedChild, error: ErrorOf) =>
(
  stream: Stream,
  matches: (line: string) => boolean,
  timeout: Duration.DurationInput
): Effect.Effect<string, ServerProcessError> =>
  bounded<string | Exit, ServerProcessError>(
    millis(timeout),
    (done) => {
      const unregisterLine = watched.onLine((from, line) => {
        if (from === stream && matches(line)) done(line)
      })
      const unregisterExit = watched.onExit(done)
      return () => {
        unregisterLine()
        unregisterExit()
      }
    },
    () => error("LineTimeout", `matching ${stream} line within ${millis(timeout)} ms`)
  ).pipe(
    Effect.flatMap((result) =>
      typeof result === "string"
        ? Effect.succeed(result)
        : Effect.fail(error("LineTimeout", `matching ${stream} line before the exit`))
    )
  )

/** The first signal, a bounded wait, then `SIGKILL` and the exit. */
const stopOf = (
  watched: WatchedChild,
  signal: (sig: NodeJS.Signals) => Effect.Effect<void>,
  exited: Effect.Effect<Exit>,
  { first, timeoutMs }: { readonly first: NodeJS.Signals; readonly timeoutMs: number }
): Effect.Effect<Stopped> =>
  Effect.gen(function*() {
    const ended = watched.ended()
    if (ended !== undefined) return { ...ended, forced: false, ms: 0 }
    const started = performance.now()
    yield* signal(first)
    const exit = yield* Effect.option(bounded(timeoutMs, watched.onExit, () => "timeout"))
    if (Option.isSome(exit)) return { ...exit.value, forced: false, ms: performance.now() - started }
    yield* signal("SIGKILL")
    const killed = yield* exited
    return { ...killed, forced: true, ms: performance.now() - started }
  })

type ErrorOf = (reason: ServerProcessError["reason"], what: string) => ServerProcessError

/** The handle of a spawned child. */
const handleOf = (child: ChildProcess, pid: number, options: Options): ServerProcess => {
  const watched = watchChild(child, {
    keep: options.keepOutput ?? 4 * 1024 * 1024,
    onOutput: options.onOutput,
    onLine: options.onLine
  })
  const error: ErrorOf = (reason, what) =>
    new ServerProcessError({ reason, pid, exit: watched.ended(), what, stderr: watched.output("stderr").slice(-2000) })
  const exited: Effect.Effect<Exit> = Effect.async((resume) =>
    Effect.sync(watched.onExit((exit) => resume(Effect.succeed(exit))))
  )
  const signal = (sig: NodeJS.Signals) =>
    Effect.sync(() => {
      if (watched.ended() === undefined && child.exitCode === null && child.signalCode === null) {
        try {
          process.kill(pid, sig)
        } catch {
          // Already gone between the check and the kill.
        }
      }
    })
  return {
    pid,
    child,
    stdout: () => watched.output("stdout"),
    stderr: () => watched.output("stderr"),
    exit: () => Option.fromNullable(watched.ended()),
    exited,
    ready: readyOf(watched, millis(options.readyTimeout ?? "30 seconds"), error),
    nextLine: nextLineOf(watched, error),
    signal,
    stop: stopOf(watched, signal, exited, {
      first: options.stopSignal ?? "SIGTERM",
      timeoutMs: millis(options.stopTimeout ?? "10 seconds")
    })
  }
}

/**
 * Spawns the CLI; the process is stopped (see {@link ServerProcess.stop}) when the scope closes.
 * Does not wait for it to be ready: use `ready`, or {@link start}.
 */
export const spawn = (options: Options): Effect.Effect<ServerProcess, ServerProcessError, Scope.Scope> =>
  Effect.acquireRelease(spawnUnscoped(options), (server) => server.stop)

/** {@link spawn} and wait until it is ready; stopped when the scope closes. */
export const start = (options: Options): Effect.Effect<Started, ServerProcessError, Scope.Scope> =>
  Effect.flatMap(spawn(options), (server) => Effect.map(server.ready, (at) => ({ ...at, process: server })))

/**
 * {@link spawnUnscoped} and wait until it is ready. When it is not ready (it exited, or the bound
 * ran out) it is stopped before the failure is returned. The caller runs `process.stop` later.
 */
export const startUnscoped = (options: Options): Effect.Effect<Started, ServerProcessError> =>
  Effect.flatMap(spawnUnscoped(options), (server) =>
    server.ready.pipe(
      Effect.map((at) => ({ ...at, process: server })),
      Effect.tapError(() => server.stop)
    ))

/** How many spawned children are still running (for tests that check nothing leaked). */
export const running = (): number => children.size
