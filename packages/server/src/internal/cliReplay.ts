/**
 * `switchyard replay`: policy replay of a routing log under another deployment. Every call into
 * `PolicyReplay` is in {@link policyReplay}.
 *
 * @internal
 */
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import type { Deployment } from "@switchyard-ts/config/Deployment"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import { createReadStream } from "node:fs"
import { createInterface } from "node:readline"
import * as PolicyReplay from "../PolicyReplay.js"
import * as RoutingLog from "../RoutingLog.js"
import { loadDeployment } from "./cliFiles.js"
import { parseWith, UsageError } from "./cliParse.js"

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

/** The usage line of `switchyard replay`, printed after a usage error. */
export const replayUsage = "usage: switchyard replay --log FILE --config OTHER.toml [--route ID] [--json]"

/** The routing log file could not be read. */
export class LogFileError extends Schema.TaggedError<LogFileError>()("LogFileError", { message: Schema.String }) {}

/**
 * A replay of `deployment`'s judge-using routes (or only `route`) fed one routing log line at a
 * time, and its result rendered as the command prints it: the table, or the JSON array of
 * `PolicyReplay.RouteReport`s.
 */
const policyReplay = (deployment: Deployment, route: string | undefined) => {
  const run = PolicyReplay.start(PolicyReplay.replayersOf(deployment), route)
  return {
    add: (line: RoutingLog.Line): Effect.Effect<void> => run.add(line),
    render: (json: boolean): string => {
      const reports = run.reports()
      return json ? JSON.stringify(reports) : PolicyReplay.format(reports)
    }
  }
}

const decodeLine = Schema.decodeUnknownOption(Schema.parseJson(RoutingLog.Line))

/**
 * `switchyard replay`: load the other deployment, then read the routing log line by line (lines that
 * do not decode are skipped and counted on stderr) into a replay, and print the table (or `--json`).
 * The log is streamed: memory holds the replay's session state, not the file.
 */
export const replayProgram = (options: ReplayOptions) =>
  Effect.gen(function*() {
    const deployment = yield* loadDeployment(options.config)
    const replay = policyReplay(deployment, options.route)
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
      return Option.isSome(line) ? Effect.zipRight(replay.add(line.value), progress) : progress
    })
    if (every !== undefined && read >= every) {
      yield* Console.error(`replay: ${read} lines read, ${records} records replayed`)
    }
    if (skipped > 0) yield* Console.error(`skipped ${skipped} lines that are not routing log records`)
    yield* Console.log(replay.render(options.json))
  })

const replayFlags = {
  log: Options.text("log").pipe(
    Options.withPseudoName("FILE"),
    Options.withDescription("The routing log to replay (JSONL, as --routing-log-file writes it; required)."),
    Options.optional
  ),
  config: Options.text("config").pipe(
    Options.withPseudoName("OTHER.toml"),
    Options.withDescription("The deployment whose route settings re-decide the logged requests (required)."),
    Options.optional
  ),
  route: Options.text("route").pipe(
    Options.withPseudoName("ID"),
    Options.withDescription("Replay only this route (default: every judge-using route of --config)."),
    Options.optional
  ),
  json: Options.boolean("json").pipe(Options.withDescription("Print the reports as a JSON array instead of a table."))
}

/** The options of parsed replay flags, or the `UsageError` the command prints. */
const toReplayOptions = (
  flags: Command.Command.ParseConfig<typeof replayFlags>
): Effect.Effect<ReplayOptions, UsageError> =>
  Option.isSome(flags.log) && Option.isSome(flags.config)
    ? Effect.succeed({
      log: flags.log.value,
      config: flags.config.value,
      route: Option.getOrUndefined(flags.route),
      json: flags.json
    })
    : new UsageError({ message: `--log and --config are required\n${replayUsage}` })

/** `switchyard replay`, reporting progress on stderr when it is a terminal. */
export const replayCommand = Command.make("replay", replayFlags, (flags) =>
  Effect.gen(function*() {
    const options = yield* toReplayOptions(flags)
    const progressEvery = yield* Effect.sync(() => process.stderr.isTTY === true ? replayProgressEvery : undefined)
    return yield* replayProgram({ ...options, progressEvery })
  })).pipe(Command.withDescription(
    "Re-decide a routing log's requests under another deployment's route settings, calling no model."
  ))

/** Parse the arguments of `switchyard replay` (after the word `replay`). */
export const parseReplay = (argv: ReadonlyArray<string>): Effect.Effect<ReplayOptions, UsageError> =>
  parseWith(replayCommand, "replay", argv, replayUsage).pipe(Effect.flatMap(toReplayOptions))
