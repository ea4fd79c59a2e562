/**
 * `switchyard status-line`: one line about a coding-agent session, for Claude Code's `statusLine`
 * setting (or any agent's prompt): it reads the session id from the status-line JSON on standard
 * input (`session_id`) or `--session-id`, asks a running server's `GET /v1/session-stats`, and prints
 * the session's calls and — once a call of it was priced (`--pricing-file`, or a provider's own
 * `usage.cost`) — its cost and the share of it spent on routing (every call made while routing that
 * did not answer: judges, reviews, discarded turns).
 *
 * Every outcome is one short line on stdout and exit code 0 (a status line shows stdout; a stack or
 * a non-zero exit would only blank it): a server that is down or slow, a refused key, an unknown
 * session are each a line saying so. The whole command is bounded by `--timeout-ms`.
 *
 * @internal
 */
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as Pricing from "@switchyard-ts/routing/Pricing"
import * as Config from "effect/Config"
import * as Console from "effect/Console"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import { parseWith, UsageError } from "./cliParse.js"

/** Options of `switchyard status-line`. */
export interface StatusLineOptions {
  /** The server's base URL. */
  readonly url: string
  /** The session to report; else the `session_id` of the JSON on standard input. */
  readonly sessionId?: string | undefined
  /** The environment variable holding the server's inbound key (sent as a bearer token when set; read through the `ConfigProvider`). */
  readonly apiKeyEnv: string
  /** Bound on reading standard input and asking the server, in milliseconds. */
  readonly timeoutMs: number
}

/** The usage line of `switchyard status-line`, printed after a usage error. */
export const statusLineUsage =
  "usage: switchyard status-line [--url URL] [--session-id ID] [--api-key-env NAME] [--timeout-ms MS]"

/** Defaults of the flags. */
export const statusLineDefaults = {
  url: "http://127.0.0.1:4000",
  apiKeyEnv: "SWITCHYARD_API_KEY",
  timeoutMs: 1_000
} as const

/** What the command reads of Claude Code's status-line JSON (every other field is ignored). */
const AgentStatus = Schema.Struct({ session_id: Schema.optional(Schema.String) })

type CostTotals = Pricing.TotalsJson

/** What the command reads of the session-stats body. */
const SessionStatsView = Schema.Struct({
  total_calls: Schema.Number,
  total_prompt_tokens: Schema.Number,
  total_completion_tokens: Schema.Number,
  cost: Schema.optional(Pricing.TotalsJson),
  routing_cost: Schema.optional(Pricing.TotalsJson),
  savings: Schema.optional(Pricing.SavingsJson)
})
type SessionStatsView = typeof SessionStatsView.Type

/**
 * Dollars as a status line shows them: cents from a dollar, four decimals from a tenth of a cent,
 * else six; a negative amount with its sign first (`-$0.0012`).
 */
export const dollars = (usd: number): string => {
  const size = Math.abs(usd)
  return `${usd < 0 ? "-" : ""}$${size.toFixed(size >= 1 ? 2 : size >= 0.001 || size === 0 ? 4 : 6)}`
}

/** Token counts in thousands above 10,000. */
const tokens = (n: number): string => n >= 10_000 ? `${(n / 1000).toFixed(1)}k` : String(n)

/** The cost part of the line: the total (a lower bound while calls are unpriced) and routing's share. */
const costPart = (cost: CostTotals, routing: CostTotals | undefined): string => {
  const total = cost.total_usd === null
    ? `${dollars(cost.known_usd)}+ (${cost.unknown_calls} unpriced ${cost.unknown_calls === 1 ? "call" : "calls"})`
    : dollars(cost.total_usd)
  if (routing === undefined || routing.known_usd === 0) return total
  const share = cost.known_usd > 0 ? ` ${Math.round((routing.known_usd / cost.known_usd) * 100)}%` : ""
  return `${total}, routing ${dollars(routing.known_usd)}${share}`
}

/** Whether any counted call was priced (the server has a pricing file, or a provider reported a cost). */
const priced = (cost: CostTotals | undefined): cost is CostTotals =>
  cost !== undefined && cost.estimated_calls + cost.provider_reported_calls > 0

/** The savings part: what routing saved against the baseline, when known and not zero (negative: it cost more). */
const savingsPart = (savings: Pricing.SavingsJson | undefined): string =>
  savings === undefined || savings.total_usd === null || savings.total_usd === 0
    ? ""
    : `, saved ${dollars(savings.total_usd)}`

/**
 * The line for a session's stats: its cost once a call of it was priced (and the savings against
 * the baseline when all of them are known), else its tokens.
 */
export const renderStats = (stats: SessionStatsView): string => {
  const calls = `${stats.total_calls} ${stats.total_calls === 1 ? "call" : "calls"}`
  const usage = `${tokens(stats.total_prompt_tokens)} in / ${tokens(stats.total_completion_tokens)} out`
  return priced(stats.cost)
    ? `switchyard: ${calls}, ${costPart(stats.cost, stats.routing_cost)}${savingsPart(stats.savings)}`
    : `switchyard: ${calls}, ${usage} tokens`
}

/** Standard input, whole, when it is not a terminal (else empty); bounded by the command's timeout. */
const readStdin: Effect.Effect<string> = Effect.async<string>((resume) => {
  if (process.stdin.isTTY === true) return resume(Effect.succeed(""))
  const parts: Array<Buffer> = []
  const onData = (part: Buffer) => void parts.push(part)
  const done = () => resume(Effect.succeed(Buffer.concat(parts).toString("utf8")))
  process.stdin.on("data", onData)
  process.stdin.once("end", done)
  process.stdin.once("error", done)
  return Effect.sync(() => {
    process.stdin.off("data", onData)
    process.stdin.off("end", done)
    process.stdin.off("error", done)
    process.stdin.pause()
  })
})

/** The session id: the flag's, else the status-line JSON's `session_id`. */
const sessionIdOf = (options: StatusLineOptions) =>
  options.sessionId !== undefined
    ? Effect.succeed(Option.some(options.sessionId))
    : Effect.map(
      readStdin,
      (text) =>
        Option.flatMap(
          Schema.decodeUnknownOption(Schema.parseJson(AgentStatus))(text),
          (status) => Option.fromNullable(status.session_id).pipe(Option.filter((id) => id !== ""))
        )
    )

/** The line for the server's answer to the session-stats request. */
const lineOfResponse = (url: string, sessionId: string) =>
(
  response: { readonly status: number; readonly json: Effect.Effect<unknown, unknown> }
): Effect.Effect<string> => {
  switch (response.status) {
    case 200:
      return response.json.pipe(
        Effect.flatMap(Schema.decodeUnknown(SessionStatsView)),
        Effect.map(renderStats),
        Effect.orElseSucceed(() => `switchyard: unexpected session stats from ${url}`)
      )
    case 404:
      return Effect.succeed(`switchyard: no calls recorded for session ${sessionId.slice(0, 8)} yet`)
    case 401:
    case 403:
      return Effect.succeed("switchyard: the server refused the key (see --api-key-env)")
    default:
      return Effect.succeed(`switchyard: ${url} answered ${response.status}`)
  }
}

/**
 * `switchyard status-line`: print one line about the session (see the module's description). Never
 * fails: every problem is the line it prints.
 */
export const statusLineProgram = (options: StatusLineOptions): Effect.Effect<void> =>
  Effect.gen(function*() {
    const url = options.url.replace(/\/+$/, "")
    const sessionId = yield* sessionIdOf(options)
    if (Option.isNone(sessionId)) return "switchyard: no session id (status-line JSON without session_id)"
    const key = yield* Config.option(Config.redacted(options.apiKeyEnv)).pipe(Effect.orElseSucceed(Option.none))
    const request = HttpClientRequest.get(`${url}/v1/session-stats`).pipe(
      HttpClientRequest.setUrlParam("session_id", sessionId.value),
      Option.match(Option.filter(key, (k) => Redacted.value(k) !== ""), {
        onNone: () => (r: HttpClientRequest.HttpClientRequest) => r,
        onSome: (k) => HttpClientRequest.bearerToken(Redacted.value(k))
      })
    )
    const client = yield* HttpClient.HttpClient
    return yield* client.execute(request).pipe(
      Effect.flatMap(lineOfResponse(url, sessionId.value)),
      Effect.scoped,
      Effect.orElseSucceed(() => `switchyard: server not reachable at ${url}`)
    )
  }).pipe(
    Effect.timeoutTo({
      duration: Duration.millis(options.timeoutMs),
      onTimeout: () => `switchyard: no answer from ${options.url} within ${options.timeoutMs} ms`,
      onSuccess: (line) => line
    }),
    Effect.provide(NodeHttpClient.layerUndici),
    Effect.flatMap(Console.log)
  )

const statusLineFlags = {
  url: Options.text("url").pipe(
    Options.withPseudoName("URL"),
    Options.withDescription(`The server's base URL (default ${statusLineDefaults.url}).`),
    Options.withDefault(statusLineDefaults.url)
  ),
  sessionId: Options.text("session-id").pipe(
    Options.withPseudoName("ID"),
    Options.withDescription("The session to report (default: session_id of the status-line JSON on standard input)."),
    Options.optional
  ),
  apiKeyEnv: Options.text("api-key-env").pipe(
    Options.withPseudoName("NAME"),
    Options.withDescription(
      `The environment variable holding the server's inbound key, sent when set (default ${statusLineDefaults.apiKeyEnv}).`
    ),
    Options.withDefault(statusLineDefaults.apiKeyEnv)
  ),
  timeoutMs: Options.integer("timeout-ms").pipe(
    Options.withPseudoName("MS"),
    Options.withDescription(`Bound on the whole command, in milliseconds (default ${statusLineDefaults.timeoutMs}).`),
    Options.withDefault(statusLineDefaults.timeoutMs)
  )
}

/** The options of parsed status-line flags, or the `UsageError` the command prints. */
const toStatusLineOptions = (
  flags: Command.Command.ParseConfig<typeof statusLineFlags>
): Effect.Effect<StatusLineOptions, UsageError> =>
  flags.timeoutMs >= 1 && flags.timeoutMs <= 60_000
    ? Effect.succeed({
      url: flags.url,
      sessionId: Option.getOrUndefined(flags.sessionId),
      apiKeyEnv: flags.apiKeyEnv,
      timeoutMs: flags.timeoutMs
    })
    : new UsageError({ message: `--timeout-ms must be from 1 to 60000, got ${flags.timeoutMs}\n${statusLineUsage}` })

/** `switchyard status-line`. */
export const statusLineCommand = Command.make(
  "status-line",
  statusLineFlags,
  (flags) => Effect.flatMap(toStatusLineOptions(flags), statusLineProgram)
).pipe(Command.withDescription(
  "Print one line about a coding-agent session (calls, cost, routing's share) from a running server."
))

/** Parse the arguments of `switchyard status-line` (after the words `status-line`). */
export const parseStatusLine = (argv: ReadonlyArray<string>): Effect.Effect<StatusLineOptions, UsageError> =>
  parseWith(statusLineCommand, "status-line", argv, statusLineUsage).pipe(Effect.flatMap(toStatusLineOptions))
