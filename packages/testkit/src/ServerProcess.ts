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
import { children, forget, remember } from "./internal/children.js"

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

const listeningLine = /^listening on (https?:\/\/\S+)$/

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
    return Effect.succeed(watch(child, pid, options))
  })

/** Wires the child's output and exit to the handle. */
const watch = (child: ChildProcess, pid: number, options: Options): ServerProcess => {
  const keep = options.keepOutput ?? 4 * 1024 * 1024
  const output: Record<Stream, string> = { stdout: "", stderr: "" }
  const partial: Record<Stream, string> = { stdout: "", stderr: "" }
  const lineWaiters = new Set<(stream: Stream, line: string) => void>()
  const exitWaiters = new Set<(exit: Exit) => void>()
  let listening: Listening | undefined
  let ended: Exit | undefined

  const onLine = (stream: Stream, line: string): void => {
    if (stream === "stdout" && listening === undefined) {
      const url = listeningLine.exec(line)?.[1]
      if (url !== undefined) {
        const parsed = new URL(url)
        listening = { url, host: parsed.hostname, port: Number(parsed.port) }
      }
    }
    options.onLine?.(stream, line)
    for (const waiter of lineWaiters) waiter(stream, line)
  }
  for (const stream of ["stdout", "stderr"] as const) {
    child[stream]?.setEncoding("utf8").on("data", (chunk: string) => {
      output[stream] = (output[stream] + chunk).slice(-keep)
      options.onOutput?.(stream, chunk)
      const lines = (partial[stream] + chunk).split("\n")
      partial[stream] = lines.pop() ?? ""
      for (const line of lines) onLine(stream, line)
    })
  }
  child.once("exit", () => forget(child))
  // `close`: the child has exited and its output has been read to the end.
  child.once("close", (code: number | null, signal: NodeJS.Signals | null) => {
    for (const stream of ["stdout", "stderr"] as const) {
      if (partial[stream] !== "") onLine(stream, partial[stream])
      partial[stream] = ""
    }
    ended = { code, signal }
    const exit = ended
    for (const waiter of exitWaiters) waiter(exit)
  })

  const onExit = (done: (exit: Exit) => void): () => void => {
    if (ended !== undefined) {
      done(ended)
      return () => {}
    }
    exitWaiters.add(done)
    return () => exitWaiters.delete(done)
  }
  const error = (reason: ServerProcessError["reason"], what: string) =>
    new ServerProcessError({ reason, pid, exit: ended, what, stderr: output.stderr.slice(-2000) })
  const exited: Effect.Effect<Exit> = Effect.async((resume) => {
    const unregister = onExit((exit) => resume(Effect.succeed(exit)))
    return Effect.sync(unregister)
  })
  const readyTimeoutMs = millis(options.readyTimeout ?? "30 seconds")
  const ready = bounded<Listening | Exit, ServerProcessError>(
    readyTimeoutMs,
    (done) => {
      if (listening !== undefined) {
        done(listening)
        return () => {}
      }
      const waiter = (): void => {
        if (listening !== undefined) done(listening)
      }
      lineWaiters.add(waiter)
      const unregisterExit = onExit(done)
      return () => {
        lineWaiters.delete(waiter)
        unregisterExit()
      }
    },
    () => error("ReadyTimeout", `${readyTimeoutMs} ms`)
  ).pipe(
    Effect.flatMap((result) =>
      "url" in result ? Effect.succeed(result) : Effect.fail(error("ExitedBeforeReady", "ready"))
    )
  )
  const nextLine = (stream: Stream, matches: (line: string) => boolean, timeout: Duration.DurationInput) =>
    bounded<string | Exit, ServerProcessError>(
      millis(timeout),
      (done) => {
        const waiter = (from: Stream, line: string): void => {
          if (from === stream && matches(line)) done(line)
        }
        lineWaiters.add(waiter)
        const unregisterExit = onExit(done)
        return () => {
          lineWaiters.delete(waiter)
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
  const signal = (sig: NodeJS.Signals) =>
    Effect.sync(() => {
      if (ended === undefined && child.exitCode === null && child.signalCode === null) {
        try {
          process.kill(pid, sig)
        } catch {
          // Already gone between the check and the kill.
        }
      }
    })
  const stopTimeoutMs = millis(options.stopTimeout ?? "10 seconds")
  const stop = Effect.gen(function*() {
    if (ended !== undefined) return { ...ended, forced: false, ms: 0 }
    const started = performance.now()
    yield* signal(options.stopSignal ?? "SIGTERM")
    const first = yield* Effect.option(bounded(stopTimeoutMs, onExit, () => "timeout"))
    if (Option.isSome(first)) return { ...first.value, forced: false, ms: performance.now() - started }
    yield* signal("SIGKILL")
    const exit = yield* exited
    return { ...exit, forced: true, ms: performance.now() - started }
  })
  return {
    pid,
    child,
    stdout: () => output.stdout,
    stderr: () => output.stderr,
    exit: () => Option.fromNullable(ended),
    exited,
    ready,
    nextLine,
    signal,
    stop
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
