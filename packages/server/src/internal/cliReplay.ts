/**
 * `switchyard replay`: policy replay of a routing log under another deployment. Every call into
 * `PolicyReplay` is in {@link policyReplay}.
 *
 * @internal
 */
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import type { Deployment } from "@switchyard-ts/config/Deployment"
import type * as Pricing from "@switchyard-ts/routing/Pricing"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import { createReadStream } from "node:fs"
import { createInterface } from "node:readline"
import * as PolicyReplay from "../PolicyReplay.js"
import * as RoutingLog from "../RoutingLog.js"
import { loadDeployment, loadPricing } from "./cliFiles.js"
import { parseWith, UsageError } from "./cliParse.js"

/** Options of `switchyard replay`. */
export interface ReplayOptions {
  /**
   * The routing log, or the logs of several replicas of one deployment: replayed as one log, their
   * lines merged by `ts` (each file's own order kept; equal times in the order the files are given).
   */
  readonly log: string | ReadonlyArray<string>
  readonly config: string
  readonly route?: string | undefined
  /**
   * A pricing file (`--pricing-file`, the server's format): each side of a route's report gets its
   * answer, routing and baseline cost and its savings.
   */
  readonly pricingFile?: string | undefined
  readonly json: boolean
  /**
   * `--judge-outage`: replay as if every judge of every route had been unreachable (a `transport`
   * failure on every consultation, fallback judges included), under each route's posture; with
   * `from` / `until` (epoch ms, from the ISO flags) only the records in that window.
   */
  readonly outage?: { readonly from?: number | undefined; readonly until?: number | undefined } | undefined
  /**
   * Report progress on stderr every this many log lines read (the command: every 100,000 lines
   * when stderr is a terminal, else never).
   */
  readonly progressEvery?: number | undefined
}

/** How often the command reports progress when stderr is a terminal, in log lines read. */
export const replayProgressEvery = 100_000

/** The usage line of `switchyard replay`, printed after a usage error. */
export const replayUsage =
  "usage: switchyard replay --log FILE [--log FILE ...] --config OTHER.toml [--route ID] [--pricing-file PRICES.json] [--judge-outage [--judge-outage-from ISO] [--judge-outage-until ISO]] [--json]"

/** The routing log file could not be read. */
export class LogFileError extends Schema.TaggedError<LogFileError>()("LogFileError", { message: Schema.String }) {}

/**
 * A replay of `deployment`'s judge-using routes (or only `route`) fed one routing log line at a
 * time, and its result rendered as the command prints it: the table, or the JSON array of
 * `PolicyReplay.RouteReport`s.
 */
const policyReplay = (
  deployment: Deployment,
  route: string | undefined,
  table: Pricing.Table | undefined,
  outage: ReplayOptions["outage"]
) => {
  const run = PolicyReplay.start(
    PolicyReplay.replayersOf(deployment),
    route,
    table === undefined ? undefined : PolicyReplay.pricingOf(deployment, table),
    outage === undefined ? {} : { outage: inOutage(outage) }
  )
  return {
    add: (line: RoutingLog.Line): Effect.Effect<void> => run.add(line),
    render: (json: boolean): string => {
      const reports = run.reports()
      return json ? JSON.stringify(reports) : PolicyReplay.format(reports)
    }
  }
}

/** Whether a record falls in the outage window (a record without a readable time: when the window is open-ended). */
const inOutage = (window: NonNullable<ReplayOptions["outage"]>) => (record: { readonly ts?: string | undefined }) => {
  const at = record.ts === undefined ? Number.NaN : Date.parse(record.ts)
  if (Number.isNaN(at)) return window.from === undefined && window.until === undefined
  return (window.from === undefined || at >= window.from) && (window.until === undefined || at < window.until)
}

const decodeLine = Schema.decodeUnknownOption(Schema.parseJson(RoutingLog.Line))

/** One raw line of a log, decoded when it is a routing log record. */
interface Read {
  readonly raw: string
  readonly line: Option.Option<RoutingLog.Line>
}

/** The time a record sorts by in a merge: its `ts`; a line without one keeps its place behind the others' heads. */
const timeOf = (read: Read): number =>
  Option.match(read.line, {
    onNone: () => Number.NEGATIVE_INFINITY,
    onSome: (line) => {
      const at = Date.parse(line.ts)
      return Number.isNaN(at) ? Number.NEGATIVE_INFINITY : at
    }
  })

/** The non-blank lines of `path`, decoded. */
async function* readLines(path: string): AsyncGenerator<Read> {
  for await (const raw of createInterface({ input: createReadStream(path, "utf8"), crlfDelay: Infinity })) {
    if (raw.trim() !== "") yield { raw, line: decodeLine(raw) }
  }
}

/**
 * The lines of `paths` as one sequence: each file read in its own order; of the files' next lines
 * the earliest `ts` comes first (a line that is not a record, or has no readable time, at once),
 * ties in the order of `paths`. Holds one line per file.
 */
async function* mergedLines(paths: ReadonlyArray<string>): AsyncGenerator<Read> {
  const sources = paths.map((path) => readLines(path))
  const heads: Array<IteratorResult<Read>> = await Promise.all(sources.map((source) => source.next()))
  for (;;) {
    let next = -1
    let nextAt = Number.POSITIVE_INFINITY
    heads.forEach((head, index) => {
      if (head.done === true) return
      const at = timeOf(head.value)
      if (next === -1 || at < nextAt) {
        next = index
        nextAt = at
      }
    })
    const head = heads[next]
    const source = sources[next]
    if (head === undefined || head.done === true || source === undefined) return
    yield head.value
    heads[next] = await source.next()
  }
}

/**
 * `switchyard replay`: load the other deployment, then read the routing log line by line (lines that
 * do not decode are skipped and counted on stderr) into a replay, and print the table (or `--json`).
 * The log is streamed: memory holds the replay's session state, not the file.
 */
export const replayProgram = (options: ReplayOptions) =>
  Effect.gen(function*() {
    const deployment = yield* loadDeployment(options.config)
    const table = options.pricingFile === undefined ? undefined : yield* loadPricing(options.pricingFile)
    const replay = policyReplay(deployment, options.route, table, options.outage)
    let skipped = 0
    let read = 0
    let records = 0
    const every = options.progressEvery
    const paths = typeof options.log === "string" ? [options.log] : options.log
    const lines = Stream.fromAsyncIterable(
      mergedLines(paths),
      (error) =>
        new LogFileError({
          message: `failed to read routing log ${readFailurePath(error, paths)}: ${
            error instanceof Error ? error.message : "read error"
          }`
        })
    )
    yield* Stream.runForEach(lines, ({ line }) => {
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

/** The file a read failure is about: the one its message names, else the only one. */
const readFailurePath = (error: unknown, paths: ReadonlyArray<string>): string => {
  const named = error instanceof Error && "path" in error && typeof error.path === "string" ? error.path : undefined
  return named ?? paths.join(", ")
}

const replayFlags = {
  log: Options.text("log").pipe(
    Options.withPseudoName("FILE"),
    Options.withDescription(
      "The routing log to replay (JSONL, as --routing-log-file writes it; required). Repeat it for the logs of several replicas: their lines are merged by time."
    ),
    Options.repeated
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
  pricingFile: Options.text("pricing-file").pipe(
    Options.withPseudoName("PRICES.json"),
    Options.withDescription(
      "Price both sides of each report (the server's --pricing-file format): answer, routing and baseline cost, savings."
    ),
    Options.optional
  ),
  json: Options.boolean("json").pipe(Options.withDescription("Print the reports as a JSON array instead of a table.")),
  judgeOutage: Options.boolean("judge-outage").pipe(
    Options.withDescription(
      "Replay as if every judge of every route had been unreachable (a transport failure on every consultation, fallbacks included), under each route's posture."
    )
  ),
  judgeOutageFrom: Options.text("judge-outage-from").pipe(
    Options.withPseudoName("ISO"),
    Options.withDescription(
      "With --judge-outage: the outage starts at this time (ISO 8601; default: the log's start)."
    ),
    Options.optional
  ),
  judgeOutageUntil: Options.text("judge-outage-until").pipe(
    Options.withPseudoName("ISO"),
    Options.withDescription(
      "With --judge-outage: the outage ends before this time (ISO 8601; default: the log's end)."
    ),
    Options.optional
  )
}

/** An ISO 8601 time of flag `flag` as epoch ms, or the usage error naming it. */
const timeFlag = (flag: string, value: Option.Option<string>): Effect.Effect<number | undefined, UsageError> => {
  if (Option.isNone(value)) return Effect.succeed(undefined)
  const at = Date.parse(value.value)
  return Number.isNaN(at)
    ? Effect.fail(
      new UsageError({ message: `--${flag} ${JSON.stringify(value.value)} is not an ISO 8601 time\n${replayUsage}` })
    )
    : Effect.succeed(at)
}

/** The outage window of the flags, or the usage error of a window without `--judge-outage` or one that ends before it starts. */
const outageOf = (
  flags: Command.Command.ParseConfig<typeof replayFlags>
): Effect.Effect<ReplayOptions["outage"], UsageError> =>
  Effect.gen(function*() {
    const from = yield* timeFlag("judge-outage-from", flags.judgeOutageFrom)
    const until = yield* timeFlag("judge-outage-until", flags.judgeOutageUntil)
    if (!flags.judgeOutage) {
      if (from !== undefined || until !== undefined) {
        return yield* new UsageError({
          message: `--judge-outage-from and --judge-outage-until go with --judge-outage\n${replayUsage}`
        })
      }
      return undefined
    }
    if (from !== undefined && until !== undefined && until <= from) {
      return yield* new UsageError({
        message: `--judge-outage-until must be after --judge-outage-from\n${replayUsage}`
      })
    }
    return { from, until }
  })

/** The options of parsed replay flags, or the `UsageError` the command prints. */
const toReplayOptions = (
  flags: Command.Command.ParseConfig<typeof replayFlags>
): Effect.Effect<ReplayOptions, UsageError> => {
  const [first, ...more] = flags.log
  if (first === undefined || Option.isNone(flags.config)) {
    return new UsageError({ message: `--log and --config are required\n${replayUsage}` })
  }
  const config = flags.config.value
  return Effect.map(outageOf(flags), (outage) => ({
    log: more.length === 0 ? first : flags.log,
    config,
    route: Option.getOrUndefined(flags.route),
    pricingFile: Option.getOrUndefined(flags.pricingFile),
    json: flags.json,
    ...(outage === undefined ? {} : { outage })
  }))
}

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
