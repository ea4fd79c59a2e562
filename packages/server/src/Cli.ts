/**
 * The `switchyard` command line, on `@effect/cli` (`switchyard --help`, `switchyard COMMAND --help`):
 *
 * - `switchyard serve --config FILE [--host] [--port] [--dry-run] [--shutdown-timeout SECONDS]
 *   [--backlog N] [--tls-cert FILE --tls-key FILE] [--routing-log-file PATH]`, the default command:
 *   a command line that does not start with a command name (`switchyard --config FILE`) is serve's,
 *   and `switchyard --help` shows serve's usage and flags before the commands.
 * - `switchyard check --config FILE [--tls-cert FILE --tls-key FILE]`: validate, print a one-line
 *   summary (serve's `--dry-run`).
 * - `switchyard replay --log FILE [--log FILE ...] --config OTHER.toml [--route ID] [--json]`: policy replay of a
 *   routing log (see `PolicyReplay`).
 * - `switchyard status-line [--url URL] [--session-id ID] [--api-key-env NAME] [--timeout-ms MS]`:
 *   one line about a coding-agent session from a running server (its session-stats).
 *
 * Exit codes: 0 done (also after a signal), 1 a file that cannot be read or is invalid or a server
 * failure (one line on stderr), 2 bad arguments. {@link main} is the one place that runs effects,
 * through `NodeRuntime.runMain`; an embedding command (the demo) may launch an {@link Extension}
 * beside the server.
 *
 * Serving on a host that is not a loopback address without inbound auth (`[server] api_keys_env`)
 * prints a warning on stderr at start-up.
 *
 * Shutdown: SIGINT/SIGTERM interrupt the program; the server stops accepting and lets in-flight
 * requests finish for up to `--shutdown-timeout` seconds (a finalizer then closes their
 * connections), the other finalizers flush, and the process exits 0. A repeated signal within 1 s
 * (a terminal Ctrl-C reaches the server from the terminal and again from npm) is the same request
 * to stop; a signal more than 1 s after the first forces an immediate exit (code 1).
 */
import * as Command from "@effect/cli/Command"
import * as ValidationError from "@effect/cli/ValidationError"
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as FileSystem from "@effect/platform/FileSystem"
import type * as PlatformRuntime from "@effect/platform/Runtime"
import * as Cause from "effect/Cause"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Schema from "effect/Schema"
import { fileURLToPath } from "node:url"
import { replayCommand, replayUsage } from "./internal/cliReplay.js"
import { checkCommand, checkUsage, defaultCommand, type Extension, serveCommand, usage } from "./internal/cliServe.js"
import { statusLineCommand, statusLineUsage } from "./internal/cliStatusLine.js"

export { ConfigFileError, loadDeployment, loadPricing, loadTls, TlsFileError } from "./internal/cliFiles.js"
export { UsageError } from "./internal/cliParse.js"
export {
  LogFileError,
  parseReplay,
  type ReplayOptions,
  replayProgram,
  replayProgressEvery
} from "./internal/cliReplay.js"
export { type CliOptions, exposureWarning, type Extension, isLoopback, parseCli, program } from "./internal/cliServe.js"
export {
  dollars,
  parseStatusLine,
  renderStats,
  statusLineDefaults,
  type StatusLineOptions,
  statusLineProgram
} from "./internal/cliStatusLine.js"

/** The usage line of each command, printed after its parse errors. */
const usages: ReadonlyMap<string, string> = new Map([
  ["serve", usage],
  ["check", checkUsage],
  ["replay", replayUsage],
  ["status-line", statusLineUsage]
])

/** Options of `switchyard` itself: without them, the help and version would be serve's. */
const rootOptions: ReadonlySet<string> = new Set(["--help", "-h", "--version", "--wizard", "--completions"])

/** `argv` with `serve` in front unless it starts with a command name or a root option. */
const withDefaultCommand = (argv: ReadonlyArray<string>): ReadonlyArray<string> => {
  const first = argv[0]
  return first !== undefined && (usages.has(first) || rootOptions.has(first)) ? argv : ["serve", ...argv]
}

/**
 * `switchyard` and its four commands; `extension` is launched beside the server by `serve`. Its own
 * flags are serve's (`switchyard --config FILE` serves), so its help shows the default command's
 * usage before the commands.
 */
export const command = (extension?: Extension) =>
  defaultCommand(extension).pipe(
    Command.withDescription(
      "An LLM routing proxy: serve a deployment, check it, replay a routing log under it, or print a session's status line." +
        " Without a command name, the flags are serve's: switchyard --config FILE serves it, switchyard --config FILE" +
        " --dry-run checks it."
    ),
    Command.withSubcommands([serveCommand(extension), checkCommand, replayCommand, statusLineCommand])
  )

/** The server package's version (`switchyard --version`). */
const version = Effect.gen(function*() {
  const fs = yield* FileSystem.FileSystem
  const text = yield* fs.readFileString(fileURLToPath(new URL("../package.json", import.meta.url)))
  return (yield* Schema.decodeUnknown(Schema.parseJson(Schema.Struct({ version: Schema.String })))(text)).version
}).pipe(Effect.orElseSucceed(() => "unknown"))

/**
 * The `switchyard` command with `argv` (without node and script), as an effect that ends with the
 * process's exit code: 0 when the command is done, 1 with the one line of an unreadable or invalid
 * file or a server failure, 2 after a usage error (a parse error as `@effect/cli` prints it, then the
 * command's usage line). Interrupted (a signal), it runs its finalizers and ends interrupted.
 */
export const run = (argv: ReadonlyArray<string>, extension?: Extension): Effect.Effect<number> =>
  Effect.gen(function*() {
    const cli = Command.run(command(extension), { name: "switchyard", version: yield* version })
    const args = withDefaultCommand(argv)
    return yield* cli(["node", "switchyard", ...args]).pipe(
      Effect.as(0),
      Effect.catchIf(ValidationError.isValidationError, () => {
        const commandUsage = usages.get(args[0] ?? "")
        return Effect.as(commandUsage === undefined ? Effect.void : Console.error(commandUsage), 2)
      })
    )
  }).pipe(
    Effect.catchTags({
      UsageError: (error) => Effect.as(Console.error(error.message), 2),
      ConfigFileError: (error) => Effect.as(Console.error(error.message), 1),
      TlsFileError: (error) => Effect.as(Console.error(error.message), 1),
      PricingError: (error) => Effect.as(Console.error(error.message), 1),
      LogFileError: (error) => Effect.as(Console.error(error.message), 1)
    }),
    Effect.catchAllCause((cause) =>
      Cause.isInterruptedOnly(cause)
        ? Effect.succeed(0)
        : Effect.as(Console.error(`switchyard failed: ${Cause.pretty(cause)}`), 1)
    ),
    Effect.provide(NodeContext.layer)
  )

/** The exit code of {@link run}'s exit: its value, 0 when interrupted (a signal), else 1. */
const teardown: PlatformRuntime.Teardown = (exit, onExit) =>
  onExit(
    Exit.isSuccess(exit)
      ? typeof exit.value === "number" ? exit.value : 0
      : Cause.isInterruptedOnly(exit.cause)
      ? 0
      : 1
  )

/**
 * Run the `switchyard` command with `argv` (without node and script) through
 * `NodeRuntime.runMain`, which interrupts it on SIGINT/SIGTERM, and exit with its code.
 */
export const main = (argv: ReadonlyArray<string>, extension?: Extension): void =>
  NodeRuntime.runMain(run(argv, extension), {
    // The server swaps the default logger for its batched one; a pretty logger would stay beside it.
    disablePrettyLogger: true,
    disableErrorReporting: true,
    teardown
  })
