/**
 * The `switchyard` command line: `--config FILE [--host] [--port] [--dry-run]
 * [--shutdown-timeout SECONDS] [--backlog N] [--tls-cert FILE --tls-key FILE]
 * [--routing-log-file PATH]`, and `switchyard replay --log FILE --config OTHER.toml [--route ID]
 * [--json]` (policy replay of a routing log, see `PolicyReplay`). This is the one
 * place that runs effects; an embedding command (the demo) may launch an {@link Extension} beside
 * the server.
 *
 * Serving on a host that is not a loopback address without inbound auth (`[server] api_keys_env`)
 * prints a warning on stderr at start-up.
 *
 * Shutdown: SIGINT/SIGTERM stop accepting and let in-flight requests finish for up to
 * `--shutdown-timeout` seconds, then the process exits 0. A repeated signal within 1 s (a terminal
 * Ctrl-C reaches the server from the terminal and again from npm) is the same request to stop;
 * a signal more than 1 s after the first forces an immediate exit (code 1).
 */
import type { Deployment } from "@switchyard-ts/config/Deployment"
import * as DeploymentToml from "@switchyard-ts/config/DeploymentToml"
import * as Cause from "effect/Cause"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import { createReadStream } from "node:fs"
import { readFile } from "node:fs/promises"
import { createInterface } from "node:readline"
import { createSecureContext } from "node:tls"
import { parseArgs, type ParseArgsConfig } from "node:util"
import * as PolicyReplay from "./PolicyReplay.js"
import * as RoutingLog from "./RoutingLog.js"
import * as Server from "./Server.js"

/** Parsed command-line options. */
export interface CliOptions {
  readonly config: string
  readonly host: string
  readonly port: number
  readonly dryRun: boolean
  readonly shutdownTimeoutMs: number
  /** `--backlog` (default `Server.defaultBacklog`). */
  readonly backlog: number
  /** `--tls-cert` and `--tls-key` (PEM files; always both or neither). */
  readonly tlsFiles?: { readonly cert: string; readonly key: string } | undefined
  /**
   * `--routing-log-file`: append the routing log (JSONL, see `RoutingLog`) to this file, reopened
   * on SIGHUP, and serve `/v1/session-stats`.
   */
  readonly routingLogFile?: string | undefined
}

/**
 * What an embedding command adds to the server it runs (e.g. the demo's simulated upstreams): a
 * Layer built from the loaded deployment and the options, launched beside the server.
 */
export interface Extension {
  /** A defect of it (e.g. a port it cannot bind) ends the command like a server failure. */
  readonly layer: (deployment: Deployment, options: CliOptions) => Layer.Layer<never>
}

/** A usage problem on the command line. */
export class UsageError extends Schema.TaggedError<UsageError>()("UsageError", { message: Schema.String }) {}

/** The config file could not be read or is invalid; `message` is the one line to print. */
export class ConfigFileError extends Schema.TaggedError<ConfigFileError>()("ConfigFileError", {
  message: Schema.String
}) {}

/** A `--tls-cert` / `--tls-key` file could not be read, or the pair is not a usable certificate and key. */
export class TlsFileError extends Schema.TaggedError<TlsFileError>()("TlsFileError", {
  message: Schema.String
}) {}

const usage = "usage: switchyard --config FILE [--host 127.0.0.1] [--port 4000] [--dry-run] [--shutdown-timeout 30]" +
  " [--backlog 65535] [--tls-cert FILE --tls-key FILE] [--routing-log-file PATH]"

/** `argv` parsed against `options` (strict, no positionals); a problem is a `UsageError` ending with `usageText`. */
const parseFlags = <const O extends NonNullable<ParseArgsConfig["options"]>>(
  argv: ReadonlyArray<string>,
  options: O,
  usageText: string
) =>
  Effect.try({
    try: () => parseArgs({ args: [...argv], options, strict: true, allowPositionals: false }),
    catch: (error) =>
      new UsageError({ message: `${error instanceof Error ? error.message : "bad arguments"}\n${usageText}` })
  })

/** Seconds, optionally suffixed `s` or `ms` (`30`, `30s`, `500ms`). */
const parseDurationMs = (text: string): number | undefined => {
  const match = /^(\d+(?:\.\d+)?)(ms|s)?$/.exec(text.trim())
  if (match === null) return undefined
  const value = Number(match[1])
  return match[2] === "ms" ? value : value * 1000
}

/** Parse argv (without node and script). */
export const parseCli = (argv: ReadonlyArray<string>): Effect.Effect<CliOptions, UsageError> =>
  Effect.gen(function*() {
    const parsed = yield* parseFlags(argv, {
      config: { type: "string" },
      host: { type: "string", default: "127.0.0.1" },
      port: { type: "string", short: "p", default: "4000" },
      "dry-run": { type: "boolean", default: false },
      "shutdown-timeout": { type: "string", default: "30" },
      backlog: { type: "string", default: String(Server.defaultBacklog) },
      "tls-cert": { type: "string" },
      "tls-key": { type: "string" },
      "routing-log-file": { type: "string" },
      help: { type: "boolean", short: "h", default: false }
    }, usage)
    const values = parsed.values
    if (values.help === true) return yield* new UsageError({ message: usage })
    if (values.config === undefined) return yield* new UsageError({ message: `--config is required\n${usage}` })
    const port = Number(values.port)
    if (!Number.isInteger(port) || port < 0 || port > 65535) {
      return yield* new UsageError({ message: `--port must be an integer in 0..65535, got ${values.port}` })
    }
    const shutdownTimeoutMs = parseDurationMs(values["shutdown-timeout"] ?? "30")
    if (shutdownTimeoutMs === undefined) {
      return yield* new UsageError({
        message: `--shutdown-timeout must be seconds (e.g. 30 or 30s), got ${values["shutdown-timeout"]}`
      })
    }
    const backlog = Number(values.backlog)
    if (!Number.isInteger(backlog) || backlog < 1 || backlog > maxBacklog) {
      return yield* new UsageError({
        message: `--backlog must be an integer in 1..${maxBacklog}, got ${values.backlog}`
      })
    }
    const routingLogFile = values["routing-log-file"]
    if (routingLogFile !== undefined && routingLogFile.trim() === "") {
      return yield* new UsageError({ message: `--routing-log-file needs a path\n${usage}` })
    }
    const cert = values["tls-cert"]
    const key = values["tls-key"]
    if ((cert === undefined) !== (key === undefined)) {
      return yield* new UsageError({
        message: `${cert === undefined ? "--tls-key requires --tls-cert" : "--tls-cert requires --tls-key"}\n${usage}`
      })
    }
    return {
      config: values.config,
      host: values.host ?? "127.0.0.1",
      port,
      dryRun: values["dry-run"] === true,
      shutdownTimeoutMs,
      backlog,
      tlsFiles: cert !== undefined && key !== undefined ? { cert, key } : undefined,
      routingLogFile
    }
  })

/** Largest `--backlog` (the kernel caps it further, at `net.core.somaxconn` on Linux). */
const maxBacklog = 2 ** 31 - 1

/**
 * The certificate and key of `--tls-cert` / `--tls-key`: both files read, and the pair checked by
 * building a TLS context from it, so a missing file, a malformed PEM or a key that does not match
 * the certificate fails before anything is bound. Messages name the files, never their contents.
 */
export const loadTls = (files: { readonly cert: string; readonly key: string }) =>
  Effect.gen(function*() {
    const read = (flag: string, file: string) =>
      Effect.tryPromise({
        try: () => readFile(file),
        catch: (error) =>
          new TlsFileError({
            message: `failed to read ${flag} ${file}: ${error instanceof Error ? error.message : "read error"}`
          })
      })
    const material: Server.TlsMaterial = {
      cert: yield* read("--tls-cert", files.cert),
      key: yield* read("--tls-key", files.key)
    }
    yield* Effect.try({
      try: () => createSecureContext(material),
      catch: (error) =>
        new TlsFileError({
          message: `invalid TLS certificate or key (--tls-cert ${files.cert}, --tls-key ${files.key}): ${
            error instanceof Error ? error.message : "unusable"
          }`
        })
    })
    return material
  })

/** Whether `host` names only the loopback interface (`localhost`, `127.0.0.0/8`, `::1`). */
export const isLoopback = (host: string): boolean => {
  const bare = host.trim().toLowerCase().replace(/^\[(.*)\]$/, "$1")
  return bare === "localhost" || bare === "::1" || /^(::ffff:)?127\.\d+\.\d+\.\d+$/.test(bare)
}

/** The start-up warning for `host` when it is reachable from other machines and `deployment` has no inbound auth. */
export const exposureWarning = (host: string, deployment: Deployment): string | undefined =>
  isLoopback(host) || deployment.server.apiKeys.length > 0
    ? undefined
    : `warning: listening on ${host}, which is not a loopback address, without inbound auth: anyone who can ` +
      "reach it can call the configured upstreams; set [server] api_keys_env"

/** Read and validate the deployment file; failures carry the one-line message of docs/configuration.md. */
export const loadDeployment = (path: string) =>
  Effect.gen(function*() {
    const text = yield* Effect.tryPromise({
      try: () => readFile(path, "utf8"),
      catch: (error) =>
        new ConfigFileError({
          message: `failed to read server config ${path}: ${error instanceof Error ? error.message : "read error"}`
        })
    })
    return yield* DeploymentToml.parse(text).pipe(
      Effect.mapError((error) => new ConfigFileError({ message: `invalid server config ${path}: ${error.message}` }))
    )
  })

/** The program behind the command: dry-run, or serve until interrupted. */
export const program = (options: CliOptions, extension?: Extension) =>
  Effect.gen(function*() {
    const deployment = yield* loadDeployment(options.config)
    for (const warning of DeploymentToml.warnings(deployment)) yield* Console.error(`warning: ${warning}`)
    const tls = options.tlsFiles === undefined ? undefined : yield* loadTls(options.tlsFiles)
    if (options.dryRun) {
      yield* Console.log(DeploymentToml.summary(deployment))
      return
    }
    const exposure = exposureWarning(options.host, deployment)
    if (exposure !== undefined) yield* Console.error(exposure)
    const routingLog = options.routingLogFile === undefined ? undefined : { path: options.routingLogFile }
    const server = Server.layer(deployment, { ...options, tls, routingLog })
    const app = extension === undefined ? server : Layer.merge(server, extension.layer(deployment, options))
    return yield* Layer.launch(app.pipe(Layer.provide(Server.batchedLogger)))
  })

/** Options of `switchyard replay`. */
export interface ReplayOptions {
  readonly log: string
  readonly config: string
  readonly route?: string | undefined
  readonly json: boolean
  /**
   * Report progress on stderr every this many log lines read (the command: every 100,000 lines
   * when stderr is a terminal, else never).
   */
  readonly progressEvery?: number | undefined
}

/** How often the command reports progress when stderr is a terminal, in log lines read. */
export const replayProgressEvery = 100_000

const replayUsage = "usage: switchyard replay --log FILE --config OTHER.toml [--route ID] [--json]"

/** Parse the arguments of `switchyard replay` (after the word `replay`). */
export const parseReplay = (argv: ReadonlyArray<string>): Effect.Effect<ReplayOptions, UsageError> =>
  Effect.gen(function*() {
    const parsed = yield* parseFlags(argv, {
      log: { type: "string" },
      config: { type: "string" },
      route: { type: "string" },
      json: { type: "boolean", default: false },
      help: { type: "boolean", short: "h", default: false }
    }, replayUsage)
    const values = parsed.values
    if (values.help === true) return yield* new UsageError({ message: replayUsage })
    if (values.log === undefined || values.config === undefined) {
      return yield* new UsageError({ message: `--log and --config are required\n${replayUsage}` })
    }
    return { log: values.log, config: values.config, route: values.route, json: values.json === true }
  })

/** The routing log file could not be read. */
export class LogFileError extends Schema.TaggedError<LogFileError>()("LogFileError", { message: Schema.String }) {}

const decodeLine = Schema.decodeUnknownOption(Schema.parseJson(RoutingLog.Line))

/**
 * `switchyard replay`: load the other deployment, then read the routing log line by line (lines that
 * do not decode are skipped and counted on stderr) into a replay, and print the table (or `--json`).
 * The log is streamed: memory holds the replay's session state, not the file.
 */
export const replayProgram = (options: ReplayOptions) =>
  Effect.gen(function*() {
    const deployment = yield* loadDeployment(options.config)
    const run = PolicyReplay.start(PolicyReplay.replayersOf(deployment), options.route)
    let skipped = 0
    let read = 0
    let records = 0
    const every = options.progressEvery
    const lines = Stream.fromAsyncIterable(
      createInterface({ input: createReadStream(options.log, "utf8"), crlfDelay: Infinity }),
      (error) =>
        new LogFileError({
          message: `failed to read routing log ${options.log}: ${error instanceof Error ? error.message : "read error"}`
        })
    )
    yield* Stream.runForEach(lines, (raw) => {
      if (raw.trim() === "") return Effect.void
      const line = decodeLine(raw)
      if (Option.isSome(line)) records++
      else skipped++
      read++
      const progress = every !== undefined && read % every === 0
        ? Console.error(`replay: ${read} lines read`)
        : Effect.void
      return Option.isSome(line) ? Effect.zipRight(run.add(line.value), progress) : progress
    })
    if (every !== undefined && read >= every) {
      yield* Console.error(`replay: ${read} lines read, ${records} records replayed`)
    }
    if (skipped > 0) yield* Console.error(`skipped ${skipped} lines that are not routing log records`)
    const reports = run.reports()
    yield* Console.log(options.json ? JSON.stringify(reports) : PolicyReplay.format(reports))
  })

/**
 * Run the command with `argv` and exit the process when it is done. Installs the SIGINT/SIGTERM
 * handling described in the module documentation.
 */
export const main = (argv: ReadonlyArray<string>, extension?: Extension): void => {
  if (argv[0] === "replay") {
    const replayParsed = Effect.runSync(Effect.either(parseReplay(argv.slice(1))))
    if (Either.isLeft(replayParsed)) {
      process.stderr.write(`${replayParsed.left.message}\n`)
      process.exitCode = 2
      return
    }
    Effect.runFork(
      replayProgram({
        ...replayParsed.right,
        progressEvery: process.stderr.isTTY === true ? replayProgressEvery : undefined
      }).pipe(
        Effect.as(0),
        Effect.catchTags({
          ConfigFileError: (error) => Effect.as(Console.error(error.message), 1),
          LogFileError: (error) => Effect.as(Console.error(error.message), 1)
        })
      )
    ).addObserver((exit) => {
      process.exitCode = Exit.isSuccess(exit) ? exit.value : 1
    })
    return
  }
  const parsed = Effect.runSync(Effect.either(parseCli(argv)))
  if (Either.isLeft(parsed)) {
    process.stderr.write(`${parsed.left.message}\n`)
    process.exitCode = 2
    return
  }
  const options = parsed.right
  const fiber = Effect.runFork(
    program(options, extension).pipe(
      Effect.as(0),
      Effect.catchTags({
        ConfigFileError: (error) => Effect.as(Console.error(error.message), 1),
        TlsFileError: (error) => Effect.as(Console.error(error.message), 1)
      }),
      Effect.catchAllCause((cause) =>
        Cause.isInterruptedOnly(cause)
          ? Effect.succeed(0)
          : Effect.as(Console.error(`switchyard failed: ${Cause.pretty(cause)}`), 1)
      )
    )
  )
  let firstSignalAt: number | undefined
  const onSignal = () => {
    const now = Date.now()
    if (firstSignalAt === undefined) {
      firstSignalAt = now
      setTimeout(() => process.exit(0), options.shutdownTimeoutMs).unref()
      Effect.runFork(Fiber.interrupt(fiber))
    } else if (now - firstSignalAt > 1000) {
      process.exit(1)
    }
  }
  process.on("SIGINT", onSignal)
  process.on("SIGTERM", onSignal)
  fiber.addObserver((exit) => {
    process.exit(Exit.isSuccess(exit) ? exit.value : 0)
  })
}
