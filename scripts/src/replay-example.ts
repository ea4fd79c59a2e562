// `npm run replay-example`: the policy replay's worked example (README, "Policy replay").
//
// 1. Runs the soak (scripts/dist/soak.js, see soak.ts) for --minutes with the server's routing log
//    (`--routing-log-file OUT/routing.jsonl`) and its generated deployment (`--write-config
//    OUT/soak.toml`): route `soak-fo` under judge_failure = "fail_open", `soak-err` under "error"
//    (with a judge breaker), a judge that flips between up, stalled, refused, 5xx and garbage.
// 2. Writes the other posture, OUT/other.toml: the same deployment with the two postures swapped
//    (`soak-fo` → "error", `soak-err` → "fail_open"), and `base_threshold = --base-threshold` on
//    both routes when given.
// 3. Replays the log under the soak's own deployment (every decision and its cost must come out
//    unchanged), then under OUT/other.toml, with the real CLI (`node packages/server/bin/switchyard.js
//    replay --pricing-file OUT/prices.json`: the soak's models at example prices), and prints that
//    table (also in OUT/replay.txt and, as JSON, OUT/replay.json), what `fail_open` → `error` would
//    have failed and saved, and what a threshold change (OUT/threshold.toml: `base_threshold =
//    --base-threshold`, default 0.8, postures kept) would cost.
// 4. Cross-checks the log against the soak's own report: per route, the logged requests against the
//    responses the soak saw; on `soak-err`, the logged failed requests against the error answers the
//    soak saw because of the judge; on `soak-fo` (and `soak-err`), the logged requests routed without
//    a verdict against the fail-open counter scraped from /metrics.
//
//   node scripts/dist/replay-example.js [--minutes 5] [--out DIR] [--base-threshold X] [--from DIR]
//
// --from DIR replays and cross-checks the files of an earlier run (DIR/routing.jsonl, soak.toml,
// soak.json) instead of running the soak. OUT defaults to bench-results/replay-example-<timestamp>.
// Everything listens on 127.0.0.1 (the soak's server and upstreams); every child is started here,
// tracked by PID and stopped by PID (the testkit's ServerProcess), and bounded in time. Exits 1 when
// the soak fails, the replay under the soak's own deployment changes a decision, or a cross-check
// differs. Needs `npm run build` first.
import * as ServerProcess from "@switchyard-ts/testkit/ServerProcess"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import { createReadStream, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs"
import path from "node:path"
import { createInterface } from "node:readline"
import { fileURLToPath } from "node:url"
import { parseArgs } from "node:util"
import { killAll, requireBuild } from "./lib/processes.js"
import { JUDGE_ERR, JUDGE_FO, STRONG, WEAK } from "./soak/options.js"

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..")
const SOAK = path.join(ROOT, "scripts/dist/soak.js")
const ROUTES = ["soak-fo", "soak-err"] as const
/** How long a replay may take before it is stopped. */
const REPLAY_TIMEOUT_MS = 10 * 60_000

const { values: args } = parseArgs({
  options: {
    minutes: { type: "string", default: "5" },
    out: { type: "string" },
    "base-threshold": { type: "string" },
    from: { type: "string" }
  },
  strict: true
})

const fail = (message: string): never => {
  console.error(`replay-example: ${message}`)
  killAll()
  process.exit(2)
}
const MINUTES = Number(args.minutes)
if (!Number.isFinite(MINUTES) || MINUTES < 0.05 || MINUTES > 24 * 60) fail(`--minutes must be in [0.05, 1440]`)
const BASE_THRESHOLD = args["base-threshold"] === undefined ? undefined : Number(args["base-threshold"])
if (BASE_THRESHOLD !== undefined && !(BASE_THRESHOLD >= 0 && BASE_THRESHOLD <= 1)) {
  fail(`--base-threshold must be a number in [0, 1]`)
}
const FROM = args.from === undefined ? undefined : path.resolve(args.from)
const OUT = FROM ??
  (args.out === undefined
    ? path.join(ROOT, "bench-results", `replay-example-${new Date().toISOString().replace(/[:.]/g, "-")}`)
    : path.resolve(args.out))
const LOG = path.join(OUT, "routing.jsonl")
const SOAK_TOML = path.join(OUT, "soak.toml")
const SOAK_JSON = path.join(OUT, "soak.json")
const OTHER_TOML = path.join(OUT, "other.toml")
const THRESHOLD_TOML = path.join(OUT, "threshold.toml")
const PRICES = path.join(OUT, "prices.json")
/** The threshold of the threshold change (--base-threshold, else 0.8). */
const NEW_THRESHOLD = BASE_THRESHOLD ?? 0.8
/** Example prices of the soak's models, USD per million tokens (the README tour's demo prices). */
const EXAMPLE_PRICES = {
  [WEAK]: { input: 0.25, output: 2, cache_read: 0.025, cache_write: 0.3 },
  [STRONG]: { input: 3, output: 15, cache_read: 0.3, cache_write: 3.75 },
  [JUDGE_FO]: { input: 0.1, output: 0.4, cache_read: 0, cache_write: 0 },
  [JUDGE_ERR]: { input: 0.1, output: 0.4, cache_read: 0, cache_write: 0 }
}

requireBuild(ROOT)

// ---------------------------------------------------------------------------------------------
// Children (the soak, the CLI's replay): the testkit's ServerProcess, stopped by PID after `timeoutMs`.
interface Ran {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

const run = ([bin = "", ...args]: ReadonlyArray<string>, timeoutMs: number, echo: boolean): Promise<Ran> =>
  Effect.runPromise(
    Effect.gen(function*() {
      const child = yield* ServerProcess.spawnUnscoped({
        bin,
        args,
        cwd: ROOT,
        keepOutput: Number.POSITIVE_INFINITY, // all of it: the report is read back
        ...(echo ? { onOutput: (stream, chunk) => process[stream].write(chunk) } : {})
      })
      const exit = yield* Effect.timeoutFail(child.exited, {
        duration: timeoutMs,
        onTimeout: () => new Error(`${path.basename(bin)} ${args[0] ?? ""}: no exit within ${timeoutMs} ms (stopped)`)
      }).pipe(Effect.tapError(() => child.stop))
      return { code: exit.code, stdout: child.stdout(), stderr: child.stderr() }
    })
  )

// ---------------------------------------------------------------------------------------------
// What is read back: the replay's --json and the parts of the soak's report the cross-check uses.
const Totals = Schema.Struct({
  known_usd: Schema.Number,
  total_usd: Schema.NullOr(Schema.Number),
  unknown_calls: Schema.Number
})
const Cost = Schema.Struct({
  answer_cost: Totals,
  routing_cost: Totals,
  cost: Totals,
  baseline_cost: Totals,
  savings: Schema.Struct({ total_usd: Schema.NullOr(Schema.Number), unknown_calls: Schema.Number })
})
type Cost = typeof Cost.Type
const Side = Schema.Struct({
  routed: Schema.Struct({ weak: Schema.Number, strong: Schema.Number }),
  failed: Schema.Number,
  unknown: Schema.Number,
  without_verdict: Schema.Record({ key: Schema.String, value: Schema.Number }),
  tokens: Schema.Struct({ weak: Schema.Number, strong: Schema.Number }),
  cost: Schema.optional(Cost)
})
const Reports = Schema.Array(Schema.Struct({
  route: Schema.String,
  requests: Schema.Number,
  logged: Side,
  replayed: Side,
  changed: Schema.Number,
  sessions_changed: Schema.Number
}))
type Reports = typeof Reports.Type
const SoakReport = Schema.Struct({
  result: Schema.String,
  requests: Schema.Number,
  options: Schema.Struct({ minutes: Schema.Number }),
  routes: Schema.Array(Schema.Struct({
    route: Schema.String,
    requests: Schema.Number,
    sessions: Schema.Number,
    errors: Schema.Number,
    judgeErrors: Schema.Number,
    withoutVerdict: Schema.Number
  })),
  failOpen: Schema.Struct({ counterDelta: Schema.Number, errorRouteWithoutVerdictCounter: Schema.Number })
})
/** The fields of a response line the summary reads. */
const LogLine = Schema.Struct({
  kind: Schema.String,
  ts: Schema.String,
  route: Schema.String,
  session_id: Schema.NullOr(Schema.String)
})

const decode = <A, I>(schema: Schema.Schema<A, I>, text: string, what: string): A =>
  Either.getOrElse(
    Schema.decodeUnknownEither(Schema.parseJson(schema))(text),
    (error) => fail(`${what} is not what this script expects: ${String(error).slice(0, 400)}`)
  )

/** Requests and distinct sessions per route, and the time the log spans (one streaming pass). */
const summarize = async (file: string) => {
  const byRoute = new Map<string, { requests: number; sessions: Set<string> }>()
  let first = ""
  let last = ""
  let lines = 0
  const decodeLine = Schema.decodeUnknownEither(Schema.parseJson(LogLine))
  for await (const raw of createInterface({ input: createReadStream(file, "utf8"), crlfDelay: Infinity })) {
    if (raw === "") continue
    lines++
    const line = Either.getOrUndefined(decodeLine(raw))
    if (line === undefined) continue
    if (first === "" || line.ts < first) first = line.ts
    if (line.ts > last) last = line.ts
    if (line.kind !== "response") continue
    const route = byRoute.get(line.route) ?? { requests: 0, sessions: new Set<string>() }
    byRoute.set(line.route, route)
    route.requests++
    if (line.session_id !== null) route.sessions.add(line.session_id)
  }
  return { byRoute, first, last, lines }
}

// ---------------------------------------------------------------------------------------------
/** The soak's deployment with the postures swapped (and the threshold changed); throws if its shape moved. */
const otherPosture = (toml: string): string => {
  const sections = toml.split(/^(?=\[)/m)
  let swapped = 0
  let thresholds = 0
  const out = sections.map((section) => {
    if (!/^\[routes\./.test(section)) return section
    let text = section.replace(/^judge_failure = "(fail_open|error)"$/m, (_, posture: string) => {
      swapped++
      return `judge_failure = "${posture === "fail_open" ? "error" : "fail_open"}"`
    })
    if (BASE_THRESHOLD !== undefined) {
      text = text.replace(/^base_threshold = [0-9.]+$/m, () => {
        thresholds++
        return `base_threshold = ${BASE_THRESHOLD}`
      })
    }
    return text
  })
  if (swapped !== ROUTES.length || (BASE_THRESHOLD !== undefined && thresholds !== ROUTES.length)) {
    fail(`${SOAK_TOML} does not have the soak's two routes with judge_failure and base_threshold`)
  }
  return `# the soak's deployment with the other posture (scripts/src/replay-example.ts)\n${out.join("")}`
}

/** The soak's deployment with only `base_threshold` changed (to {@link NEW_THRESHOLD}) on both routes. */
const otherThreshold = (toml: string): string => {
  let thresholds = 0
  const out = toml.replace(/^base_threshold = [0-9.]+$/gm, () => {
    thresholds++
    return `base_threshold = ${NEW_THRESHOLD}`
  })
  if (thresholds !== ROUTES.length) fail(`${SOAK_TOML} does not have the soak's two routes with base_threshold`)
  return `# the soak's deployment with base_threshold = ${NEW_THRESHOLD} (scripts/src/replay-example.ts)\n${out}`
}

/** A cost total as the summary prints it: USD, a lower bound while calls are unpriced. */
const usd = (totals: typeof Totals.Type | undefined): string =>
  totals === undefined
    ? "unpriced"
    : totals.total_usd === null
    ? `$${totals.known_usd.toFixed(4)}+ (${totals.unknown_calls} unpriced)`
    : `$${totals.total_usd.toFixed(4)}`
const savingsOf = (cost: Cost | undefined): string =>
  cost?.savings.total_usd === null || cost?.savings.total_usd === undefined
    ? "unknown"
    : `$${cost.savings.total_usd.toFixed(4)}`

/** One line per route: failed requests, cost (routing apart) and savings, logged → replayed. */
const costSummary = (reports: Reports): ReadonlyArray<string> =>
  reports.map((r) =>
    `  ${r.route}: failed ${r.logged.failed} → ${r.replayed.failed} of ${r.requests} requests; cost ${
      usd(r.logged.cost?.cost)
    } → ${usd(r.replayed.cost?.cost)} (routing ${usd(r.logged.cost?.routing_cost)} → ${
      usd(r.replayed.cost?.routing_cost)
    }); ${difference(r.logged.cost, r.replayed.cost)}savings against the strong model ${savingsOf(r.logged.cost)} → ${
      savingsOf(r.replayed.cost)
    }`
  )

/** What the replayed side spends less (or more) than the logged one, when both are known. */
const difference = (logged: Cost | undefined, replayed: Cost | undefined): string => {
  const before = logged?.cost.total_usd
  const after = replayed?.cost.total_usd
  if (before === undefined || before === null || after === undefined || after === null) return ""
  return before >= after
    ? `spends $${(before - after).toFixed(4)} less; `
    : `spends $${(after - before).toFixed(4)} more; `
}

const sum = (record: Readonly<Record<string, number>>): number => Object.values(record).reduce((a, b) => a + b, 0)

const main = async (): Promise<number> => {
  if (FROM === undefined) {
    if (existsSync(OUT) && readdirSync(OUT).length > 0) fail(`${OUT} is not empty`)
    mkdirSync(OUT, { recursive: true })
    console.log(`replay-example: soak of ${MINUTES} min, files in ${path.relative(ROOT, OUT)}/`)
    const soak = await run(
      [SOAK, "--minutes", String(MINUTES), "--routing-log-file", LOG, "--write-config", SOAK_TOML],
      MINUTES * 60_000 + 180_000,
      true
    )
    writeFileSync(path.join(OUT, "soak.txt"), soak.stdout)
    const report = /^wrote (bench-results\/soak-\S+\.json)$/m.exec(soak.stdout)?.[1]
    if (report !== undefined) writeFileSync(SOAK_JSON, readFileSync(path.join(ROOT, report)))
    if (soak.code !== 0 || report === undefined) {
      console.error(`replay-example: the soak failed (exit ${soak.code}); nothing replayed`)
      return 1
    }
  }
  for (const file of [LOG, SOAK_TOML, SOAK_JSON]) if (!existsSync(file)) fail(`${file} is missing`)
  writeFileSync(OTHER_TOML, otherPosture(readFileSync(SOAK_TOML, "utf8")))
  writeFileSync(THRESHOLD_TOML, otherThreshold(readFileSync(SOAK_TOML, "utf8")))
  writeFileSync(PRICES, `${JSON.stringify(EXAMPLE_PRICES, null, 2)}\n`)
  const soakReport = decode(SoakReport, readFileSync(SOAK_JSON, "utf8"), SOAK_JSON)

  const replay = async (config: string, json: boolean): Promise<string> => {
    const result = await run(
      [
        ServerProcess.serverBin,
        "replay",
        "--log",
        LOG,
        "--config",
        config,
        "--pricing-file",
        PRICES,
        ...(json ? ["--json"] : [])
      ],
      REPLAY_TIMEOUT_MS,
      false
    )
    if (result.code !== 0) fail(`replay under ${config} exited ${result.code}: ${result.stderr.slice(0, 400)}`)
    if (result.stderr !== "") process.stderr.write(result.stderr)
    return result.stdout
  }
  const rel = (file: string) => path.relative(ROOT, file)
  const command = (config: string) =>
    `node packages/server/bin/switchyard.js replay --log ${rel(LOG)} --config ${rel(config)} --pricing-file ${
      rel(PRICES)
    }`

  const summary = await summarize(LOG)
  const spanMin = (Date.parse(summary.last) - Date.parse(summary.first)) / 60_000
  console.log(
    `\nreplay-example: ${rel(LOG)}: ${summary.lines} lines from ${summary.first} to ${summary.last} (${
      spanMin.toFixed(1)
    } min); ${
      ROUTES.map((r) => {
        const route = summary.byRoute.get(r)
        return `${r} ${route?.requests ?? 0} requests in ${route?.sessions.size ?? 0} sessions`
      }).join(", ")
    }`
  )

  // Under its own deployment the replay must reproduce every logged decision.
  const same: Reports = decode(Reports, await replay(SOAK_TOML, true), "the replay's --json")
  const sameChanged = same.reduce((a, r) => a + r.changed, 0)
  const sameCost = same.filter((r) => JSON.stringify(r.logged.cost) !== JSON.stringify(r.replayed.cost)).length
  console.log(
    `replay-example: under the soak's own deployment: ${sameChanged} requests changed, ${sameCost} routes' cost changed (must be 0)`
  )

  const otherJson = await replay(OTHER_TOML, true)
  const other = decode(Reports, otherJson, "the replay's --json")
  const table = await replay(OTHER_TOML, false)
  writeFileSync(path.join(OUT, "replay.json"), otherJson)
  writeFileSync(path.join(OUT, "replay.txt"), table)
  console.log(
    `\nreplay-example: the other posture (soak-fo → error, soak-err → fail_open${
      BASE_THRESHOLD === undefined ? "" : `, base_threshold ${BASE_THRESHOLD}`
    })\n$ ${command(OTHER_TOML)}\n${table}`
  )
  console.log(`\nreplay-example: what the other posture would have failed and cost (${rel(PRICES)})`)
  for (const line of costSummary(other)) console.log(line)
  const threshold = decode(Reports, await replay(THRESHOLD_TOML, true), "the replay's --json")
  console.log(`replay-example: what base_threshold = ${NEW_THRESHOLD} would have cost\n$ ${command(THRESHOLD_TOML)}`)
  for (const line of costSummary(threshold)) console.log(line)

  // Cross-check against the soak's report.
  const checks: Array<{ readonly what: string; readonly log: number; readonly soak: number }> = []
  for (const route of ROUTES) {
    const seen = soakReport.routes.find((r) => r.route === route)
    const logged = other.find((r) => r.route === route)
    if (seen === undefined || logged === undefined) fail(`route ${route} missing from the soak's report or the replay`)
    if (seen === undefined || logged === undefined) continue
    checks.push({
      what: `${route}: logged requests / responses the soak saw`,
      log: logged.requests,
      soak: seen.requests
    })
    checks.push({
      what: `${route}: logged sessions / sessions the soak played`,
      log: summary.byRoute.get(route)?.sessions.size ?? 0,
      soak: seen.sessions
    })
    checks.push({
      what: `${route}: logged failed / error answers the soak saw because of the judge`,
      log: logged.logged.failed,
      soak: seen.judgeErrors
    })
    checks.push({
      what: `${route}: logged without a verdict / 2xx without a verdict the soak saw`,
      log: sum(logged.logged.without_verdict),
      soak: seen.withoutVerdict
    })
    checks.push({
      what: `${route}: logged without a verdict / fail-open counter (/metrics)`,
      log: sum(logged.logged.without_verdict),
      soak: route === "soak-fo" ? soakReport.failOpen.counterDelta : soakReport.failOpen.errorRouteWithoutVerdictCounter
    })
  }
  console.log(`replay-example: the log against the soak's report (${rel(SOAK_JSON)})`)
  for (const c of checks) {
    console.log(`  ${c.what}: ${c.log} / ${c.soak}${c.log === c.soak ? "" : `  <-- differ by ${c.log - c.soak}`}`)
  }
  const differ = checks.filter((c) => c.log !== c.soak).length
  const pass = differ === 0 && sameChanged === 0 && sameCost === 0
  console.log(`replay-example: ${pass ? "PASS" : "FAIL"}; ${differ} cross-checks differ; files in ${rel(OUT)}/`)
  return pass ? 0 : 1
}

main().then(
  (code) => {
    killAll()
    process.exit(code)
  },
  (error: unknown) => {
    console.error(`replay-example failed: ${error instanceof Error ? error.stack : error}`)
    killAll()
    process.exit(1)
  }
)
