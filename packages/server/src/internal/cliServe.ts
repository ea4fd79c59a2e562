/**
 * `switchyard serve` (the default command) and `switchyard check` (serve's `--dry-run`): their
 * flags, the checks that turn them into {@link CliOptions}, and the program that validates the
 * deployment and serves it until the runtime interrupts it.
 *
 * @internal
 */
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import type { Deployment } from "@switchyard-ts/config/Deployment"
import * as DeploymentToml from "@switchyard-ts/config/DeploymentToml"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Server from "../Server.js"
import { loadDeployment, loadPricing, loadTls } from "./cliFiles.js"
import { parseWith, UsageError } from "./cliParse.js"

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
  /**
   * `--pricing-file`: the model prices (JSON, see `Pricing.parse`) that cost every call in the
   * routing log, `/v1/session-stats`, `/v1/stats` and the metrics; re-read on SIGHUP.
   */
  readonly pricingFile?: string | undefined
}

/**
 * What an embedding command adds to the server it runs (e.g. the demo's simulated upstreams): a
 * Layer built from the loaded deployment and the options, launched beside the server.
 */
export interface Extension {
  /** A defect of it (e.g. a port it cannot bind) ends the command like a server failure. */
  readonly layer: (deployment: Deployment, options: CliOptions) => Layer.Layer<never>
}

/** The usage line of `switchyard serve`, printed after a usage error. */
export const usage =
  "usage: switchyard --config FILE [--host 127.0.0.1] [--port 4000] [--dry-run] [--shutdown-timeout 30]" +
  " [--backlog 65535] [--tls-cert FILE --tls-key FILE] [--routing-log-file PATH] [--pricing-file PATH]"

/** The usage line of `switchyard check`. */
export const checkUsage = "usage: switchyard check --config FILE [--tls-cert FILE --tls-key FILE] [--pricing-file PATH]"

/** Largest `--backlog` (the kernel caps it further, at `net.core.somaxconn` on Linux). */
const maxBacklog = 2 ** 31 - 1

const text = (name: string, pseudoName: string, description: string) =>
  Options.text(name).pipe(Options.withPseudoName(pseudoName), Options.withDescription(description))

/**
 * The flags `serve` and `check` share. Numbers and durations are read as text and checked by
 * {@link toCliOptions}, whose messages are the command's own.
 */
const flags = {
  config: text("config", "FILE", "The deployment TOML file (required).").pipe(Options.optional),
  host: text("host", "HOST", "Interface to bind (default 127.0.0.1).").pipe(Options.withDefault("127.0.0.1")),
  port: text("port", "PORT", "Port to bind, 0..65535; 0 picks a free one (default 4000).").pipe(
    Options.withAlias("p"),
    Options.withDefault("4000")
  ),
  shutdownTimeout: text(
    "shutdown-timeout",
    "SECONDS",
    "On SIGINT/SIGTERM, how long in-flight requests may run before their connections are closed: 30, 30s or 500ms" +
      " (default 30)."
  ).pipe(Options.withDefault("30")),
  backlog: text(
    "backlog",
    "N",
    `Queue of pending connections passed to listen, 1..${maxBacklog} (default ${Server.defaultBacklog}).`
  ).pipe(Options.withDefault(String(Server.defaultBacklog))),
  tlsCert: text("tls-cert", "FILE", "Serve HTTPS with this PEM certificate chain (with --tls-key).").pipe(
    Options.optional
  ),
  tlsKey: text("tls-key", "FILE", "The PEM private key of --tls-cert.").pipe(Options.optional),
  routingLogFile: text(
    "routing-log-file",
    "PATH",
    "Append the routing log (JSONL) to this file, reopened on SIGHUP, and serve /v1/session-stats."
  ).pipe(Options.optional),
  pricingFile: text(
    "pricing-file",
    "PATH",
    "Model prices (JSON: model id to USD per million tokens) for the cost of every call; re-read on SIGHUP."
  ).pipe(Options.optional)
}

type Flags = Command.Command.ParseConfig<typeof flags>

/** Seconds, optionally suffixed `s` or `ms` (`30`, `30s`, `500ms`). */
const parseDurationMs = (value: string): number | undefined => {
  const match = /^(\d+(?:\.\d+)?)(ms|s)?$/.exec(value.trim())
  if (match === null) return undefined
  const amount = Number(match[1])
  return match[2] === "ms" ? amount : amount * 1000
}

/** The options of parsed `flags`, or the `UsageError` the command prints (ending with `usageText` where it helps). */
const toCliOptions = (
  flags: Flags,
  dryRun: boolean,
  usageText: string
): Effect.Effect<CliOptions, UsageError> =>
  Effect.gen(function*() {
    if (Option.isNone(flags.config)) return yield* new UsageError({ message: `--config is required\n${usageText}` })
    const port = Number(flags.port)
    if (!Number.isInteger(port) || port < 0 || port > 65535) {
      return yield* new UsageError({ message: `--port must be an integer in 0..65535, got ${flags.port}` })
    }
    const shutdownTimeoutMs = parseDurationMs(flags.shutdownTimeout)
    if (shutdownTimeoutMs === undefined) {
      return yield* new UsageError({
        message: `--shutdown-timeout must be seconds (e.g. 30 or 30s), got ${flags.shutdownTimeout}`
      })
    }
    const backlog = Number(flags.backlog)
    if (!Number.isInteger(backlog) || backlog < 1 || backlog > maxBacklog) {
      return yield* new UsageError({
        message: `--backlog must be an integer in 1..${maxBacklog}, got ${flags.backlog}`
      })
    }
    const routingLogFile = Option.getOrUndefined(flags.routingLogFile)
    if (routingLogFile !== undefined && routingLogFile.trim() === "") {
      return yield* new UsageError({ message: `--routing-log-file needs a path\n${usageText}` })
    }
    const pricingFile = Option.getOrUndefined(flags.pricingFile)
    if (pricingFile !== undefined && pricingFile.trim() === "") {
      return yield* new UsageError({ message: `--pricing-file needs a path\n${usageText}` })
    }
    const cert = Option.getOrUndefined(flags.tlsCert)
    const key = Option.getOrUndefined(flags.tlsKey)
    if ((cert === undefined) !== (key === undefined)) {
      return yield* new UsageError({
        message: `${
          cert === undefined ? "--tls-key requires --tls-cert" : "--tls-cert requires --tls-key"
        }\n${usageText}`
      })
    }
    return {
      config: flags.config.value,
      host: flags.host,
      port,
      dryRun,
      shutdownTimeoutMs,
      backlog,
      tlsFiles: cert !== undefined && key !== undefined ? { cert, key } : undefined,
      routingLogFile,
      pricingFile
    }
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

/**
 * While the program serves, a SIGINT/SIGTERM after the first: `NodeRuntime.runMain` interrupts the
 * program on the first signal and stops listening, so without this listener a second one would end
 * the process by Node's default action in the middle of the drain. Within 1 s of the first it is
 * the same request to stop (a terminal Ctrl-C under npm arrives twice) and is ignored; a later one
 * exits at once with code 1, leaving the runtime, since finalizers cannot be interrupted.
 */
const repeatedSignals = Effect.acquireRelease(
  Effect.sync(() => {
    let firstAt: number | undefined
    const onSignal = () => {
      const now = Date.now()
      if (firstAt === undefined) firstAt = now
      else if (now - firstAt > 1000) process.exit(1)
    }
    process.on("SIGINT", onSignal)
    process.on("SIGTERM", onSignal)
    return onSignal
  }),
  (onSignal) =>
    Effect.sync(() => {
      process.off("SIGINT", onSignal)
      process.off("SIGTERM", onSignal)
    })
)

/**
 * The program behind `serve` and `check`: load and validate the deployment (printing its warnings),
 * the TLS files and the pricing file; then either print the one-line summary (`dryRun`), or serve until interrupted,
 * the server's bounded drain running as a finalizer.
 */
export const program = (options: CliOptions, extension?: Extension) =>
  Effect.scoped(Effect.gen(function*() {
    const deployment = yield* loadDeployment(options.config)
    for (const warning of DeploymentToml.warnings(deployment)) yield* Console.error(`warning: ${warning}`)
    const tls = options.tlsFiles === undefined ? undefined : yield* loadTls(options.tlsFiles)
    const pricingFile = options.pricingFile
    const prices = pricingFile === undefined ? undefined : yield* loadPricing(pricingFile)
    if (options.dryRun) {
      yield* Console.log(DeploymentToml.summary(deployment))
      return
    }
    const exposure = exposureWarning(options.host, deployment)
    if (exposure !== undefined) yield* Console.error(exposure)
    yield* repeatedSignals
    const routingLog = options.routingLogFile === undefined ? undefined : { path: options.routingLogFile }
    const server = Server.layer(deployment, {
      ...options,
      tls,
      routingLog,
      reload: loadDeployment(options.config),
      ...(pricingFile === undefined || prices === undefined ? {} : { prices, reloadPrices: loadPricing(pricingFile) })
    })
    const app = extension === undefined ? server : Layer.merge(server, extension.layer(deployment, options))
    return yield* Layer.launch(app.pipe(Layer.provide(Server.batchedLogger)))
  }))

/** `serve`'s flags: every flag of {@link flags} plus `--dry-run` (the same as `check`). */
const serveFlags = {
  ...flags,
  dryRun: Options.boolean("dry-run").pipe(Options.withDescription("The same as switchyard check."))
}

/** What `serve` does with its parsed flags; with an `extension` launched beside the server. */
const serve = (extension?: Extension) => (parsed: Command.Command.ParseConfig<typeof serveFlags>) =>
  Effect.flatMap(toCliOptions(parsed, parsed.dryRun, usage), (options) => program(options, extension))

/**
 * `switchyard serve`: every flag of {@link flags} plus `--dry-run` (the same as `check`); with an
 * `extension` launched beside the server.
 */
export const serveCommand = (extension?: Extension) =>
  Command.make("serve", serveFlags, serve(extension)).pipe(Command.withDescription(
    "Serve the deployment until SIGINT/SIGTERM (the default command: switchyard --config FILE works too)."
  ))

/**
 * `switchyard` itself, before its commands are added: serve's flags and serve's handler, so that
 * `switchyard --help` shows the default command's usage and flags (`--config`, `--dry-run`, …)
 * above the list of commands.
 */
export const defaultCommand = (extension?: Extension) => Command.make("switchyard", serveFlags, serve(extension))

/**
 * `switchyard check`: validate the deployment (API key and inbound key variables included) and the
 * TLS files when given, print `server OK: <route ids>`. Takes serve's flags, so adding `check` to a
 * serve command line checks it.
 */
export const checkCommand = Command.make(
  "check",
  flags,
  (parsed) => Effect.flatMap(toCliOptions(parsed, true, checkUsage), (options) => program(options))
).pipe(Command.withDescription("Validate the deployment and the TLS files, print a one-line summary (--dry-run)."))

/** Parse the arguments of `switchyard serve` (the command line without a command name). */
export const parseCli = (argv: ReadonlyArray<string>): Effect.Effect<CliOptions, UsageError> =>
  parseWith(serveCommand(), "serve", argv, usage).pipe(
    Effect.flatMap((parsed) => toCliOptions(parsed, parsed.dryRun, usage))
  )
