// `npm run bench`: the latency/throughput/memory benchmark of the switchyard server.
//
// Starts a minimal fast mock upstream (scripts/src/bench/mock-upstream.ts, a child process) and the
// real server from its CLI (`node packages/server/bin/switchyard.js --config <toml> --port 0`),
// both on 127.0.0.1, then measures every routed row beside a direct-to-mock row of the same run.
// Load is driven with autocannon (bounded by duration); per-request latencies are taken from
// autocannon's `response` events (float ms, so sub-millisecond differences are visible).
//
//   node scripts/dist/bench.js [--quick] [--sessions N] [--session-budget S] [--no-sessions] [--cpu-prof DIR]
//
//   --quick         ~1 s rows, fewer sequential requests, 20 s session budget (a smoke run)
//   --sessions N    distinct sessions for the memory row (default 100000, quick 20000); the row
//                   stops at its time budget and then extrapolates along the measured heap slope
//   --session-budget S   time budget of the session row in seconds (default 90, quick 20)
//   --no-sessions   skip the session-memory row
//   --cpu-prof DIR  run the main server under `node --cpu-prof --cpu-prof-dir DIR` (profiling)
//
//   BENCH_SERVER_NODE_FLAGS="--max-semi-space-size=32 ..."  extra node flags for the main server
//
// Prints the machine, a Markdown table and the issue-5 targets; writes
// bench-results/bench-<timestamp>.json. Needs `npm run build` first (it compiles this script too).
import autocannon from "autocannon"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { type ChildProcess, execFileSync, fork, spawn } from "node:child_process"
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import http from "node:http"
import net from "node:net"
import os from "node:os"
import path from "node:path"
import { performance } from "node:perf_hooks"
import { fileURLToPath } from "node:url"
import { parseArgs } from "node:util"
import { JUDGE_MODEL, Ready, STALL_MODEL } from "./bench/shared.js"
import { killAll, pidOf, sleep, track, withTimeout } from "./lib/processes.js"

const HERE = path.dirname(fileURLToPath(import.meta.url)) // scripts/dist
const ROOT = path.resolve(HERE, "../..")
const BIN = path.join(ROOT, "packages/server/bin/switchyard.js")
const MOCK = path.join(HERE, "bench/mock-upstream.js")
const HEAP_PROBE = path.join(HERE, "bench/heap-probe.cjs")
const HOST = "127.0.0.1"
const STALL_TIMEOUT_MS = 1000

const { values: args } = parseArgs({
  options: {
    quick: { type: "boolean", default: false },
    sessions: { type: "string" },
    "no-sessions": { type: "boolean", default: false },
    "session-budget": { type: "string" },
    "cpu-prof": { type: "string" }
  },
  strict: true
})
const QUICK = args.quick
const ROW_S = QUICK ? 1 : 6 // seconds per autocannon row
const WARM_S = QUICK ? 0.5 : 1.5 // warm-up before each row (not measured)
const STREAM_N = QUICK ? 50 : 300 // sequential streamed requests per stream row
const STALL_N = QUICK ? 2 : 5 // sequential requests to the stalled-judge route
const SESSIONS = args["no-sessions"] ? 0 : Number(args.sessions ?? (QUICK ? 20_000 : 100_000))
const SESSION_C = 64
const SESSION_MAX_S = Number(args["session-budget"] ?? (QUICK ? 20 : 90)) // time budget of the session row (fewer sessions are extrapolated)
const GLOBAL_WARM_S = QUICK ? 2 : 6 // JIT warm-up of the server on every route before any row

if (!existsSync(path.join(ROOT, "packages/server/dist/Cli.js"))) {
  console.error("packages/server/dist is missing: run `npm run build` first")
  process.exit(1)
}

type Headers = http.IncomingHttpHeaders

/** A response header as one string (repeated values joined), or `undefined`. */
const header = (headers: Headers, name: string): string | undefined => {
  const value = headers[name]
  return Array.isArray(value) ? value.join(", ") : value
}

const decodeReady = Schema.decodeUnknownOption(Ready)
/** The part of the heap probe's `process.memoryUsage()` line the bench reads. */
const HeapLine = Schema.parseJson(Schema.Struct({ heapUsed: Schema.Number }))
const decodeHeapLine = Schema.decodeUnknownSync(HeapLine)

// ---------------------------------------------------------------------------------------------
const startMock = async (): Promise<{ readonly child: ChildProcess; readonly port: number }> => {
  const child = track(fork(MOCK, [], { stdio: ["ignore", "inherit", "inherit", "ipc"] }))
  const port = await withTimeout(
    new Promise<number>((resolve, reject) => {
      child.once("message", (m) => {
        const ready = decodeReady(m)
        if (Option.isSome(ready)) resolve(ready.value.port)
        else reject(new Error(`mock sent an unexpected first message: ${JSON.stringify(m)}`))
      })
      child.once("exit", (code) => reject(new Error(`mock exited with ${code}`)))
    }),
    10_000,
    "mock start"
  )
  return { child, port }
}

const closedPort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const probe = net.createServer()
    probe.once("error", reject)
    probe.listen(0, HOST, () => {
      const address = probe.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      probe.close(() => resolve(port))
    })
  })

interface Server {
  readonly child: ChildProcess
  readonly pid: number
  readonly url: string
  readonly port: number
  readonly startupMs: number
  readonly stderrLines: Array<string>
  /** The rest of the next stderr line starting with `prefix`, within `ms`. */
  readonly waitLine: (prefix: string, ms: number) => Promise<string>
}

const startServer = async (tomlPath: string, nodeFlags: ReadonlyArray<string> = []): Promise<Server> => {
  const started = performance.now()
  const child = track(
    spawn(process.execPath, [
      ...nodeFlags,
      BIN,
      "--config",
      tomlPath,
      "--host",
      HOST,
      "--port",
      "0",
      "--shutdown-timeout",
      "5"
    ], {
      cwd: ROOT,
      stdio: ["ignore", "pipe", "pipe"]
    })
  )
  let stdout = ""
  let stderr = ""
  const stderrLines: Array<string> = []
  const lineWaiters = new Set<(line: string) => void>()
  child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout = (stdout + d).slice(-65536)))
  child.stderr.setEncoding("utf8").on("data", (d: string) => {
    stderr += d
    let nl
    while ((nl = stderr.indexOf("\n")) >= 0) {
      const line = stderr.slice(0, nl)
      stderr = stderr.slice(nl + 1)
      if (stderrLines.length < 1000) stderrLines.push(line)
      for (const waiter of lineWaiters) waiter(line)
    }
  })
  const url = await withTimeout(
    new Promise<string>((resolve, reject) => {
      const onData = (): void => {
        const m = /listening on (http:\/\/[^\s]+)/.exec(stdout)
        if (m?.[1] !== undefined) {
          child.stdout.off("data", onData)
          resolve(m[1])
        }
      }
      child.stdout.on("data", onData)
      child.once(
        "exit",
        (code) =>
          reject(new Error(`server exited with ${code} before listening:\n${stdout}\n${stderrLines.join("\n")}`))
      )
    }),
    30_000,
    "server start"
  )
  const { port } = new URL(url)
  return {
    child,
    pid: pidOf(child),
    url,
    port: Number(port),
    startupMs: performance.now() - started,
    stderrLines,
    waitLine: (prefix, ms) =>
      withTimeout(
        new Promise<string>((resolve) => {
          const waiter = (line: string): void => {
            if (line.startsWith(prefix)) {
              lineWaiters.delete(waiter)
              resolve(line.slice(prefix.length))
            }
          }
          lineWaiters.add(waiter)
        }),
        ms,
        `server line ${prefix}`
      )
  }
}

const stopServer = async (server: Server): Promise<number | null | "killed"> => {
  if (server.child.exitCode !== null || server.child.signalCode !== null) return server.child.exitCode
  ownCpuS.servers += procCpuS(server.pid)
  const exited = new Promise<number | null>((resolve) => server.child.once("exit", (code) => resolve(code)))
  process.kill(server.pid, "SIGTERM")
  try {
    return await withTimeout(exited, 10_000, "server stop")
  } catch {
    process.kill(server.pid, "SIGKILL")
    return "killed"
  }
}

/** The first line of /proc/stat: the machine's CPU jiffies by state (user, nice, system, idle, iowait, …). */
const procStatCpu = (): Array<number> =>
  (readFileSync("/proc/stat", "utf8").split("\n")[0] ?? "").trim().split(/\s+/).slice(1).map(Number)

/** Share of all cores busy over `ms` (from /proc/stat): other work on the machine skews every row. */
const cpuBusy = async (ms: number): Promise<number> => {
  const read = () => {
    const f = procStatCpu()
    return { idle: (f[3] ?? NaN) + (f[4] ?? 0), total: f.reduce((a, b) => a + b, 0) }
  }
  try {
    const a = read()
    await sleep(ms)
    const b = read()
    return Math.round(100 * (1 - (b.idle - a.idle) / Math.max(1, b.total - a.total)))
  } catch {
    return NaN
  }
}

/** Whole-machine CPU jiffies (busy, total) from /proc/stat. */
const machineJiffies = (): { readonly busy: number; readonly total: number } => {
  try {
    const f = procStatCpu()
    const total = f.reduce((a, b) => a + b, 0)
    return { busy: total - (f[3] ?? NaN) - (f[4] ?? 0), total }
  } catch {
    return { busy: NaN, total: NaN }
  }
}

/** CPU seconds (user + system) a live process has used so far (USER_HZ = 100 on Linux). */
const procCpuS = (pid: number): number => {
  try {
    const rest = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]
    if (rest === undefined) return 0
    const fields = rest.split(" ")
    return (Number(fields[11]) + Number(fields[12])) / 100
  } catch {
    return 0
  }
}
const ownCpuS = { servers: 0, mock: 0 }

const procStatus = (pid: number): { readonly rssMb: number; readonly hwmMb: number } => {
  const text = readFileSync(`/proc/${pid}/status`, "utf8")
  const kb = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, "m").exec(text)?.[1] ?? NaN)
  return { rssMb: kb("VmRSS") / 1024, hwmMb: kb("VmHWM") / 1024 }
}

// ---------------------------------------------------------------------------------------------
// Measurement helpers.
interface Stats {
  readonly n: number
  readonly mean: number
  readonly p50: number
  readonly p99: number
  readonly max: number
}

const stats = (values: ReadonlyArray<number>): Stats => {
  if (values.length === 0) return { n: 0, mean: NaN, p50: NaN, p99: NaN, max: NaN }
  const sorted = Float64Array.from(values).sort()
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] ?? NaN
  let sum = 0
  for (const v of sorted) sum += v
  return {
    n: sorted.length,
    mean: sum / sorted.length,
    p50: at(0.5),
    p99: at(0.99),
    max: sorted[sorted.length - 1] ?? NaN
  }
}

const JSON_HEADERS = { "content-type": "application/json" }

interface CannonOptions extends autocannon.Options {
  /** Hard bound of the run in seconds (default: `duration` + 5). */
  readonly maxSeconds?: number
}

interface CannonRun {
  readonly result: autocannon.Result
  readonly latencies: Array<number>
  readonly non2xx: number
}

/** One autocannon run; latencies of 2xx responses from its `response` events (float ms). */
const cannon = ({ maxSeconds, ...opts }: CannonOptions): Promise<CannonRun> =>
  new Promise((resolve, reject) => {
    const latencies: Array<number> = []
    let non2xx = 0
    const instance = autocannon(
      { method: "POST", headers: JSON_HEADERS, timeout: 10, ...opts },
      (err, result) => {
        clearTimeout(guard)
        if (err) return reject(err)
        resolve({ result, latencies, non2xx })
      }
    )
    // Hard bound in case `amount` is set and the server is slower than expected.
    const guard = setTimeout(
      () => instance.stop(),
      maxSeconds !== undefined ? maxSeconds * 1000 : ((opts.duration ?? 10) + 5) * 1000
    )
    instance.on("response", (_client, statusCode, _bytes, responseTime) => {
      if (statusCode >= 200 && statusCode < 300) latencies.push(responseTime)
      else non2xx++
    })
  })

interface LoadRow {
  readonly name: string
  readonly kind: "load"
  readonly connections: number
  readonly durationS: number
  readonly count: number
  readonly rps: number
  readonly mean: number
  readonly p50: number
  readonly p99: number
  readonly max: number
  readonly errors: number
  readonly non2xx: number
  added?: number
  addedVs?: string
}

interface LoadOptions {
  readonly url: string
  readonly body?: string
  readonly connections: number
  readonly headers?: Readonly<Record<string, string>>
  readonly requests?: ReadonlyArray<autocannon.Request>
  readonly pairs?: boolean
}

const loadRow = async (
  name: string,
  { url, body, connections, headers, requests, pairs = false }: LoadOptions
): Promise<LoadRow> => {
  const base = { url, connections, headers: { ...JSON_HEADERS, ...headers }, body, requests }
  await cannon({ ...base, duration: WARM_S })
  const { result, latencies, non2xx } = await cannon({ ...base, duration: ROW_S })
  let samples = latencies
  if (pairs) {
    // c=1 and a two-request sequence: responses alternate judge, answer; a pair is one "turn".
    samples = []
    for (let i = 0; i + 1 < latencies.length; i += 2) samples.push((latencies[i] ?? NaN) + (latencies[i + 1] ?? NaN))
  }
  const s = stats(samples)
  return {
    name,
    kind: "load",
    connections,
    durationS: result.duration,
    count: s.n,
    rps: s.n / result.duration,
    mean: s.mean,
    p50: s.p50,
    p99: s.p99,
    max: s.max,
    errors: result.errors + result.timeouts,
    non2xx
  }
}

interface Timed {
  readonly status: number
  readonly headers: Headers
  /** Milliseconds to the first body chunk. */
  readonly first: number
  /** Milliseconds to the end of the body. */
  readonly total: number
  readonly text: string
}

/** One request on a keep-alive agent: status, headers, time to first body chunk and to the end. */
const timedRequest = (
  agent: http.Agent,
  port: number,
  reqPath: string,
  body: string,
  headers: Readonly<Record<string, string>> = {},
  timeoutMs = 10_000
): Promise<Timed> =>
  new Promise((resolve, reject) => {
    const payload = Buffer.from(body)
    const t0 = performance.now()
    let tFirst = NaN
    const req = http.request(
      {
        agent,
        host: HOST,
        port,
        path: reqPath,
        method: "POST",
        headers: { ...JSON_HEADERS, "content-length": payload.length, ...headers }
      },
      (res) => {
        const parts: Array<Buffer> = []
        res.on("data", (part: Buffer) => {
          if (parts.length === 0) tFirst = performance.now()
          parts.push(part)
        })
        res.on("end", () => {
          const tEnd = performance.now()
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            first: tFirst - t0,
            total: tEnd - t0,
            text: Buffer.concat(parts).toString("utf8")
          })
        })
        res.on("error", reject)
      }
    )
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`request timed out after ${timeoutMs} ms`)))
    req.on("error", reject)
    req.end(payload)
  })

interface StreamRow {
  readonly name: string
  readonly kind: "stream"
  readonly count: number
  readonly first: Stats
  readonly last: Stats
  readonly errors: number
  addedFirst?: number
  addedLast?: number
}

const streamRow = async (name: string, port: number, body: string, n = STREAM_N): Promise<StreamRow> => {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
  const firsts: Array<number> = []
  const lasts: Array<number> = []
  let errors = 0
  try {
    for (let i = 0; i < n + 20; i++) {
      try {
        const r = await timedRequest(agent, port, "/v1/chat/completions", body)
        if (r.status !== 200 || !r.text.includes("data: [DONE]")) {
          errors++
          continue
        }
        if (i >= 20) {
          firsts.push(r.first)
          lasts.push(r.total)
        }
      } catch {
        errors++
      }
    }
  } finally {
    agent.destroy()
  }
  return { name, kind: "stream", count: firsts.length, first: stats(firsts), last: stats(lasts), errors }
}

interface StallRun {
  readonly status: number
  readonly ms: number
  readonly liveMs: number
  readonly costMs: number
  readonly source: string | undefined
  readonly reason: string | undefined
}

interface StallRow {
  readonly name: string
  readonly kind: "stall"
  readonly count: number
  readonly mean: number
  readonly p50: number
  readonly p99: number
  readonly max: number
  readonly added: number
  readonly addedVs: string
  readonly costMean: number
  readonly costMax: number
  readonly errors: number
  readonly runs: ReadonlyArray<StallRun>
}

interface HeapPoint {
  readonly sessions: number
  readonly heapUsedMb: number
  readonly rssMb: number
}

interface SessionsRow {
  readonly name: string
  readonly kind: "sessions"
  readonly requested: number
  readonly sent: number
  readonly stored: number
  readonly budgetS: number
  readonly elapsedS: number
  readonly rps: number
  readonly mean: number
  readonly p50: number
  readonly p99: number
  readonly errors: number
  readonly non2xx: number
  readonly rssBeforeMb: number
  readonly rssAfterMb: number
  readonly rssPeakDuringMb: number
  readonly rssDeltaMb: number
  readonly hwmMb: number
  readonly heapUsedBeforeMb: number
  readonly heapUsedAfterMb: number
  readonly heapDeltaMb: number
  readonly bytesPerSessionSlope: number
  readonly heapDeltaAt100kMb: number
  readonly extrapolated: boolean
  readonly points: ReadonlyArray<HeapPoint>
  readonly lastSessionEvidence: string | undefined
  readonly firstSessionEvidence: string | undefined
}

type Row = LoadRow | StreamRow | StallRow | SessionsRow

// ---------------------------------------------------------------------------------------------
const toml = ({ mockPort, deadPort }: { readonly mockPort: number; readonly deadPort: number }): string =>
  `# generated by scripts/src/bench.ts
schema_version = 1

[llm_clients.mock]
format = "openai_chat"
base_url = "http://${HOST}:${mockPort}/v1"
timeout_ms = 30000

[llm_clients.judge]
format = "openai_chat"
base_url = "http://${HOST}:${mockPort}/v1"
max_retries = 0
timeout_ms = 3000

[llm_clients.dead_judge]
format = "openai_chat"
base_url = "http://${HOST}:${deadPort}/v1"
max_retries = 0
timeout_ms = 3000

[llm_clients.stall_judge]
format = "openai_chat"
base_url = "http://${HOST}:${mockPort}/v1"
max_retries = 0
timeout_ms = ${STALL_TIMEOUT_MS}

[targets.weak]
id = "bench-weak"
llm_client = "mock"

[targets.strong]
id = "bench-strong"
llm_client = "mock"

[targets.judge]
id = "${JUDGE_MODEL}"
llm_client = "judge"
extra_body = { temperature = 0 }

[targets.dead_judge]
id = "${JUDGE_MODEL}"
llm_client = "dead_judge"

[targets.stall_judge]
id = "${STALL_MODEL}"
llm_client = "stall_judge"

[routes.pass]
id = "pass"
type = "passthrough"
target = "weak"

[routes.cap]
id = "cap"
type = "llm_classifier"
classifier_target = "judge"
weak_target = "weak"
strong_target = "strong"
base_threshold = 0.7
classify_trigger = "every_request"
judge_failure = "fail_open"

[routes.cap_dead]
id = "cap-dead"
type = "llm_classifier"
classifier_target = "dead_judge"
weak_target = "weak"
strong_target = "strong"
base_threshold = 0.7
classify_trigger = "every_request"
judge_failure = "fail_open"

[routes.cap_stall]
id = "cap-stall"
type = "llm_classifier"
classifier_target = "stall_judge"
weak_target = "weak"
strong_target = "strong"
base_threshold = 0.7
classify_trigger = "every_request"
judge_failure = "fail_open"

[routes.sess]
id = "sess"
type = "llm_classifier"
classifier_target = "judge"
weak_target = "weak"
strong_target = "strong"
base_threshold = 0.7
classify_trigger = "new_session"
judge_failure = "fail_open"
`

const chatRequest = (model: string, extra: Readonly<Record<string, unknown>> = {}) => ({
  model,
  messages: [{ role: "user", content: "Write a function that reverses a string." }],
  ...extra
})
const chatBody = (model: string, extra: Readonly<Record<string, unknown>> = {}): string =>
  JSON.stringify(chatRequest(model, extra))

interface Sanity {
  readonly model: string
  readonly status: number
  readonly selected: string | undefined
  readonly source: string | undefined
  readonly reason: string | undefined
  readonly ms: number
}

const checkRoute = async (
  agent: http.Agent,
  port: number,
  model: string,
  expectSource: string,
  headers: Readonly<Record<string, string>> = {},
  timeoutMs = 10_000
): Promise<Sanity> => {
  const r = await timedRequest(agent, port, "/v1/chat/completions", chatBody(model), headers, timeoutMs)
  const source = header(r.headers, "x-switchyard-evidence-source")
  const reason = header(r.headers, "x-switchyard-evidence-reason")
  const ok = r.status === 200 && source === expectSource
  if (!ok) {
    throw new Error(
      `sanity check ${model}: HTTP ${r.status}, evidence ${source}/${reason} (expected ${expectSource}): ${
        r.text.slice(0, 300)
      }`
    )
  }
  return {
    model,
    status: r.status,
    selected: header(r.headers, "x-switchyard-selected-model"),
    source,
    reason,
    ms: r.total
  }
}

// ---------------------------------------------------------------------------------------------
interface Machine {
  readonly cpu: string
  readonly cores: number
  readonly node: string
  readonly os: string
  readonly memGb: number
  readonly loadavgAtStart: ReadonlyArray<number>
  cpuBusyBeforePct?: number
  loadavgAtEnd?: ReadonlyArray<number>
  duringRun?: {
    readonly benchCpuS: number
    readonly serverCpuS: number
    readonly mockCpuS: number
    readonly otherProcessesCpuS: number
    readonly otherProcessesPctOfMachine: number
  }
}

interface Target {
  readonly target: string
  readonly ok: boolean
  readonly figure: string
}

const main = async (): Promise<void> => {
  const t0 = performance.now()
  const cpus = os.cpus()
  const machine: Machine = {
    cpu: cpus[0]?.model ?? "unknown",
    cores: cpus.length,
    node: process.version,
    os: `${os.type()} ${os.release()} ${os.arch()}`,
    memGb: Math.round(os.totalmem() / 2 ** 30),
    loadavgAtStart: os.loadavg().map((l) => Number(l.toFixed(2)))
  }
  machine.cpuBusyBeforePct = await cpuBusy(1000)
  const git = (...a: Array<string>): string => {
    try {
      return execFileSync("git", a, { cwd: ROOT, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim()
    } catch {
      return "unknown"
    }
  }
  const source = {
    commit: git("rev-parse", "--short", "HEAD"),
    uncommittedPackageFiles: git("status", "--porcelain", "--", "packages").split("\n").filter(Boolean).length
  }
  console.log(`# switchyard-ts bench${QUICK ? " (--quick)" : ""}`)
  console.log(`machine: ${machine.cpu} x ${machine.cores}, ${machine.memGb} GB, ${machine.os}, node ${machine.node}`)
  console.log(
    `before the run: load average ${
      machine.loadavgAtStart.join(" ")
    }, CPU ${machine.cpuBusyBeforePct}% busy (other processes)`
  )
  console.log(
    `source: commit ${source.commit}, ${source.uncommittedPackageFiles} uncommitted files under packages/ (the server runs packages/*/dist as last built)`
  )
  console.log(
    `rows: ${ROW_S} s each after ${WARM_S} s warm-up; stream rows ${STREAM_N} sequential requests; sessions ${SESSIONS}\n`
  )

  const jiffiesAtStart = machineJiffies()
  const tmp = mkdtempSync(path.join(os.tmpdir(), "switchyard-bench-"))
  const mock = await startMock()
  const deadPort = await closedPort()
  const tomlPath = path.join(tmp, "bench.toml")
  writeFileSync(tomlPath, toml({ mockPort: mock.port, deadPort }))

  const serverFlags = [
    ...(args["cpu-prof"] ? ["--cpu-prof", "--cpu-prof-dir", path.resolve(args["cpu-prof"])] : []),
    ...(process.env.BENCH_SERVER_NODE_FLAGS ?? "").split(" ").filter((flag) => flag !== "")
  ]
  const server = await startServer(tomlPath, serverFlags)
  console.log(
    `server pid ${server.pid} at ${server.url} (ready in ${server.startupMs.toFixed(0)} ms); mock at :${mock.port}`
  )

  const direct = `http://${HOST}:${mock.port}/v1/chat/completions`
  const routed = `${server.url}/v1/chat/completions`
  const rows: Array<Row> = []
  const log = <R extends Row>(row: R): R => {
    rows.push(row)
    if (row.kind === "load") {
      console.log(
        `  ${row.name}: ${row.rps.toFixed(0)} req/s, mean ${row.mean.toFixed(3)} ms, p99 ${
          row.p99.toFixed(3)
        } ms, errors ${row.errors}, non-2xx ${row.non2xx}`
      )
    } else if (row.kind === "stream") {
      console.log(
        `  ${row.name}: first chunk p50 ${row.first.p50.toFixed(3)} ms, last chunk p50 ${
          row.last.p50.toFixed(3)
        } ms, errors ${row.errors}`
      )
    } else if (row.kind === "stall") {
      console.log(
        `  ${row.name}: ${row.runs.map((r) => `${r.status} ${r.ms.toFixed(1)} ms ${r.source}/${r.reason}`).join(", ")}`
      )
    } else {
      console.log(
        `  ${row.name}: ${row.rps.toFixed(0)} req/s, heapUsed ${
          row.points.map((p) => `${p.sessions}:${p.heapUsedMb.toFixed(1)}`).join(" ")
        } MB`
      )
    }
    return row
  }

  // Sanity: every route answers as configured before anything is measured.
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
  const sanity = [
    await checkRoute(agent, server.port, "pass", "passthrough"),
    await checkRoute(agent, server.port, "cap", "llm-classifier"),
    await checkRoute(agent, server.port, "cap-dead", "fail-open"),
    await checkRoute(agent, server.port, "sess", "llm-classifier", { "x-switchyard-session-id": "sanity" }),
    await checkRoute(agent, server.port, "sess", "affinity", { "x-switchyard-session-id": "sanity" })
  ]
  const judgeBody = await new Promise<string>((resolve, reject) =>
    http.get(`http://${HOST}:${mock.port}/_bench/last?model=${JUDGE_MODEL}`, (res) => {
      let text = ""
      res.setEncoding("utf8").on("data", (d: string) => (text += d)).on(
        "end",
        () => (res.statusCode === 200 ? resolve(text) : reject(new Error("no judge body recorded")))
      )
    }).on("error", reject)
  )
  console.log(
    `sanity: ${sanity.map((s) => `${s.model}→${s.selected} (${s.source}${s.reason ? `/${s.reason}` : ""})`).join(", ")}`
  )
  console.log(`judge request body as sent by the server: ${judgeBody.length} bytes`)

  // Warm-up: the server's JIT needs several seconds of traffic before latencies settle.
  const warmStarted = performance.now()
  await cannon({ url: routed, body: chatBody("pass"), connections: 8, duration: GLOBAL_WARM_S })
  await streamRow("warm-up", server.port, chatBody("pass", { stream: true }), 50)
  await cannon({ url: routed, body: chatBody("cap"), connections: 8, duration: GLOBAL_WARM_S / 2 })
  await cannon({ url: routed, body: chatBody("cap-dead"), connections: 4, duration: GLOBAL_WARM_S / 4 })
  console.log(`warm-up: ${((performance.now() - warmStarted) / 1000).toFixed(1)} s on every route\n`)

  // 1. Passthrough buffered, c=1 and c=32.
  const passBody = chatBody("pass")
  const directBody = chatBody("bench-weak")
  const d1 = log(await loadRow("direct mock, buffered, c=1", { url: direct, body: directBody, connections: 1 }))
  const p1 = log(await loadRow("passthrough, buffered, c=1", { url: routed, body: passBody, connections: 1 }))
  p1.added = p1.mean - d1.mean
  // The same route from an Anthropic Messages client: request and answer translated.
  const messagesBody = chatBody("pass", { max_tokens: 256 })
  const m1 = log(
    await loadRow("passthrough via /v1/messages (translated both ways), c=1", {
      url: `${server.url}/v1/messages`,
      body: messagesBody,
      connections: 1
    })
  )
  m1.added = m1.mean - d1.mean
  const d32 = log(await loadRow("direct mock, buffered, c=32", { url: direct, body: directBody, connections: 32 }))
  const p32 = log(await loadRow("passthrough, buffered, c=32", { url: routed, body: passBody, connections: 32 }))
  p32.added = p32.mean - d32.mean

  // 2. Passthrough streaming (sequential, own HTTP client): time to first / last chunk.
  const ds = log(await streamRow("direct mock, streaming", mock.port, chatBody("bench-weak", { stream: true })))
  const ps = log(await streamRow("passthrough, streaming", server.port, chatBody("pass", { stream: true })))
  ps.addedFirst = ps.first.p50 - ds.first.p50
  ps.addedLast = ps.last.p50 - ds.last.p50

  // 3. Capability route, live judge (every_request), vs the two upstream calls made directly.
  const pair = log(
    await loadRow("direct judge call + answer call, c=1", {
      url: direct,
      connections: 1,
      pairs: true,
      requests: [
        { method: "POST", path: "/v1/chat/completions", headers: JSON_HEADERS, body: judgeBody },
        { method: "POST", path: "/v1/chat/completions", headers: JSON_HEADERS, body: directBody }
      ]
    })
  )
  const cap = log(await loadRow("capability, live judge, c=1", { url: routed, body: chatBody("cap"), connections: 1 }))
  cap.added = cap.mean - pair.mean

  // 4. fail_open with a dead judge (closed port) vs the live judge above.
  const dead = log(
    await loadRow("capability fail_open, dead judge, c=1", { url: routed, body: chatBody("cap-dead"), connections: 1 })
  )
  dead.added = dead.mean - cap.mean
  dead.addedVs = "live judge"

  // 5. Stalled judge, judge client timeout_ms = 1000 (sequential). Each stalled request is paired
  // with a live-judge request on the `cap` route made just before it, after the same 1 s of idle:
  // a stalled request's answer call runs after a second of idling, which costs a few ms by itself
  // (measured: 2-5 ms), so a warm c=1 mean is not the right reference for the stall's cost.
  const stallRuns: Array<StallRun> = []
  for (let i = 0; i < STALL_N; i++) {
    await sleep(STALL_TIMEOUT_MS)
    const live = await timedRequest(agent, server.port, "/v1/chat/completions", chatBody("cap"), {}, 10_000)
    const r = await timedRequest(agent, server.port, "/v1/chat/completions", chatBody("cap-stall"), {}, 10_000)
    stallRuns.push({
      status: r.status,
      ms: r.total,
      liveMs: live.total,
      costMs: r.total - live.total,
      source: header(r.headers, "x-switchyard-evidence-source"),
      reason: header(r.headers, "x-switchyard-evidence-reason")
    })
  }
  const stallStats = stats(stallRuns.filter((r) => r.status === 200).map((r) => r.ms))
  const stallCost = stats(stallRuns.filter((r) => r.status === 200).map((r) => r.costMs))
  const stall = log({
    name: `capability fail_open, stalled judge (timeout_ms ${STALL_TIMEOUT_MS})`,
    kind: "stall",
    count: stallStats.n,
    mean: stallStats.mean,
    p50: stallStats.p50,
    p99: stallStats.max,
    max: stallStats.max,
    added: stallStats.mean - cap.mean,
    addedVs: "live judge",
    costMean: stallCost.mean,
    costMax: stallCost.max,
    errors: stallRuns.filter((r) => r.status !== 200).length,
    runs: stallRuns
  })
  agent.destroy()

  const mainStatus = procStatus(server.pid)
  const mainExit = await stopServer(server)
  console.log(
    `main server: VmHWM ${mainStatus.hwmMb.toFixed(1)} MB, VmRSS ${mainStatus.rssMb.toFixed(1)} MB, exit ${mainExit}`
  )

  // 6. Sessions: a fresh server (with a GC probe preloaded) and distinct session ids on a
  //    new_session route, each judged once and stored. Sessions are created through
  //    /v1/decision, which routes exactly like /v1/chat/completions (session state included) but
  //    skips the answer call, so about twice as many sessions fit in the time budget. The fill
  //    runs in chunks; after each chunk a full GC and a heapUsed reading give the slope.
  let sessions: SessionsRow | null = null
  if (SESSIONS > 0) {
    const s = await startServer(tomlPath, ["--expose-gc", "--require", HEAP_PROBE])
    try {
      const sAgent = new http.Agent({ keepAlive: true, maxSockets: 1 })
      const mb = (bytes: number) => bytes / 2 ** 20
      const heap = async () => {
        const line = s.waitLine("heap-probe ", 10_000)
        process.kill(s.pid, "SIGUSR2")
        return decodeHeapLine(await line)
      }
      const decisionUrl = `${s.url}/v1/decision`
      const decisionBody = JSON.stringify({ input_format: "openai_chat", request: chatRequest("sess") })
      // Warm up the route without a session identity (judged every time, nothing stored).
      await cannon({ url: decisionUrl, body: decisionBody, connections: SESSION_C, duration: QUICK ? 1 : 3 })
      await cannon({ url: `${s.url}/v1/chat/completions`, body: chatBody("sess"), connections: SESSION_C, duration: 1 })
      await sleep(300)
      const heapBefore = await heap()
      const before = procStatus(s.pid)
      const firstPoint: HeapPoint = { sessions: 0, heapUsedMb: mb(heapBefore.heapUsed), rssMb: before.rssMb }
      const points: Array<HeapPoint> = [firstPoint]
      const chunk = Math.min(QUICK ? 2_500 : 10_000, SESSIONS)
      const latencies: Array<number> = []
      let next = 0
      let stored = 0
      let errors = 0
      let non2xx = 0
      let rssPeakDuringMb = before.rssMb
      const started = performance.now()
      let fillS = 0 // time spent sending (heap readings excluded)
      while (stored < SESSIONS) {
        const leftS = SESSION_MAX_S - (performance.now() - started) / 1000
        // Size the chunk to finish inside the budget (a chunk cut short leaves requests in flight,
        // which would show up in the next heap reading).
        const rate = fillS > 0 ? stored / fillS : Infinity
        const amount = Math.min(chunk, SESSIONS - stored, Math.floor(rate * (leftS - 2)))
        if (amount < 500) break
        const chunkStarted = performance.now()
        const r = await cannon({
          url: decisionUrl,
          connections: SESSION_C,
          amount,
          maxSeconds: Math.max(leftS, 5),
          requests: [
            {
              method: "POST",
              path: "/v1/decision",
              body: decisionBody,
              setupRequest: (req) => ({
                ...req,
                headers: { ...JSON_HEADERS, "x-switchyard-session-id": `bench-session-${next++}` }
              })
            }
          ]
        })
        for (const l of r.latencies) latencies.push(l)
        stored += r.latencies.length
        errors += r.result.errors + r.result.timeouts
        non2xx += r.non2xx
        fillS += (performance.now() - chunkStarted) / 1000
        rssPeakDuringMb = Math.max(rssPeakDuringMb, procStatus(s.pid).rssMb)
        await sleep(300) // let the closed connections go before the reading
        const h = await heap()
        points.push({ sessions: stored, heapUsedMb: mb(h.heapUsed), rssMb: procStatus(s.pid).rssMb })
      }
      const elapsedS = (performance.now() - started) / 1000
      const after = procStatus(s.pid)
      const lastPoint = points[points.length - 1] ?? firstPoint
      // Least-squares slope of heapUsed over sessions, leaving out the first (warm) point when
      // there are enough: MB per session beyond the fixed start-up growth.
      const fit = points.length > 3 ? points.slice(1) : points
      const mx = fit.reduce((a, p) => a + p.sessions, 0) / fit.length
      const my = fit.reduce((a, p) => a + p.heapUsedMb, 0) / fit.length
      const slope = fit.reduce((a, p) => a + (p.sessions - mx) * (p.heapUsedMb - my), 0) /
        Math.max(1e-9, fit.reduce((a, p) => a + (p.sessions - mx) ** 2, 0))
      const heapDeltaMb = lastPoint.heapUsedMb - firstPoint.heapUsedMb
      const heapDeltaAt100kMb = stored >= 100_000 ? heapDeltaMb : heapDeltaMb + slope * (100_000 - stored)
      const last = await checkRoute(sAgent, s.port, "sess", "affinity", {
        "x-switchyard-session-id": `bench-session-${Math.max(0, stored - 1)}`
      })
      const first = await timedRequest(sAgent, s.port, "/v1/chat/completions", chatBody("sess"), {
        "x-switchyard-session-id": "bench-session-0"
      })
      sAgent.destroy()
      const l = stats(latencies)
      sessions = {
        name: `${stored} distinct sessions via /v1/decision (new_session), c=${SESSION_C}`,
        kind: "sessions",
        requested: SESSIONS,
        sent: next,
        stored,
        budgetS: SESSION_MAX_S,
        elapsedS,
        rps: stored / fillS,
        mean: l.mean,
        p50: l.p50,
        p99: l.p99,
        errors,
        non2xx,
        rssBeforeMb: before.rssMb,
        rssAfterMb: after.rssMb,
        rssPeakDuringMb,
        rssDeltaMb: after.rssMb - before.rssMb,
        hwmMb: after.hwmMb,
        heapUsedBeforeMb: firstPoint.heapUsedMb,
        heapUsedAfterMb: lastPoint.heapUsedMb,
        heapDeltaMb,
        bytesPerSessionSlope: slope * 2 ** 20,
        heapDeltaAt100kMb,
        extrapolated: stored < 100_000,
        points,
        lastSessionEvidence: last.source,
        firstSessionEvidence: header(first.headers, "x-switchyard-evidence-source")
      }
      log(sessions)
    } finally {
      await stopServer(s)
    }
  }

  ownCpuS.mock = procCpuS(pidOf(mock.child))
  mock.child.kill("SIGTERM")
  rmSync(tmp, { recursive: true, force: true })

  // -------------------------------------------------------------------------------------------
  // Report.
  const f = (v: number | undefined, d = 2) => (v === undefined || Number.isNaN(v) ? "–" : v.toFixed(d))
  const signed = (
    v: number | undefined,
    d = 2
  ) => (v === undefined || Number.isNaN(v) ? "–" : `${v >= 0 ? "+" : ""}${v.toFixed(d)}`)
  const table = [
    "| row | req/s | mean ms | p50 ms | p99 ms | added ms vs direct | errors / non-2xx |",
    "|---|---:|---:|---:|---:|---:|---:|"
  ]
  const loadLine = (r: LoadRow, added = "") =>
    table.push(
      `| ${r.name} | ${f(r.rps, 0)} | ${f(r.mean)} | ${f(r.p50)} | ${f(r.p99)} | ${added} | ${r.errors} / ${r.non2xx} |`
    )
  loadLine(d1)
  loadLine(p1, signed(p1.added))
  loadLine(m1, signed(m1.added))
  loadLine(d32)
  loadLine(p32, signed(p32.added))
  table.push(
    `| direct mock, streaming: first chunk (${ds.count} sequential) | – | ${f(ds.first.mean)} | ${f(ds.first.p50)} | ${
      f(ds.first.p99)
    } | | ${ds.errors} |`
  )
  table.push(
    `| passthrough, streaming: first chunk | – | ${f(ps.first.mean)} | ${f(ps.first.p50)} | ${f(ps.first.p99)} | ${
      signed(ps.addedFirst)
    } (p50) | ${ps.errors} |`
  )
  table.push(
    `| direct mock, streaming: last chunk | – | ${f(ds.last.mean)} | ${f(ds.last.p50)} | ${
      f(ds.last.p99)
    } | | ${ds.errors} |`
  )
  table.push(
    `| passthrough, streaming: last chunk | – | ${f(ps.last.mean)} | ${f(ps.last.p50)} | ${f(ps.last.p99)} | ${
      signed(ps.addedLast)
    } (p50) | ${ps.errors} |`
  )
  loadLine(pair)
  loadLine(cap, `${signed(cap.added)} (beyond the 2 calls)`)
  loadLine(dead, `${signed(dead.added)} vs live judge`)
  table.push(
    `| ${stall.name}, ${stall.count} sequential | – | ${f(stall.mean, 1)} | ${f(stall.p50, 1)} | ${
      f(stall.max, 1)
    } (max) | ${signed(stall.costMean, 1)} vs the paired live-judge request (mean; max ${
      signed(stall.costMax, 1)
    }) | ${stall.errors} |`
  )
  if (sessions) {
    table.push(
      `| ${sessions.name} | ${f(sessions.rps, 0)} | ${f(sessions.mean)} | ${f(sessions.p50)} | ${
        f(sessions.p99)
      } | | ${sessions.errors} / ${sessions.non2xx} |`
    )
  }
  const memory = [
    "| memory | value |",
    "|---|---:|",
    `| main server peak RSS (VmHWM, after all rows above) | ${f(mainStatus.hwmMb, 1)} MB |`
  ]
  if (sessions) {
    memory.push(
      `| session server VmRSS before → after ${sessions.stored} sessions (after GC) | ${f(sessions.rssBeforeMb, 1)} → ${
        f(sessions.rssAfterMb, 1)
      } MB (${signed(sessions.rssDeltaMb, 1)} MB; ${f(sessions.rssPeakDuringMb, 1)} MB peak during the fill) |`,
      `| session server heapUsed after full GC, before → after | ${f(sessions.heapUsedBeforeMb, 1)} → ${
        f(sessions.heapUsedAfterMb, 1)
      } MB (${signed(sessions.heapDeltaMb, 1)} MB) |`,
      `| heap slope (least squares over ${sessions.points.length} GC'd readings) | ${
        f(sessions.bytesPerSessionSlope, 0)
      } B/session |`,
      `| session server peak RSS (VmHWM) | ${f(sessions.hwmMb, 1)} MB |`
    )
    if (sessions.extrapolated) {
      memory.push(
        `| heap delta at 100k sessions (measured delta + slope × the missing sessions) | ${
          signed(sessions.heapDeltaAt100kMb, 1)
        } MB |`
      )
    }
  }

  const verdict = (ok: boolean) => (ok ? "met" : "NOT met")
  const targets: Array<Target> = [
    {
      target: "passthrough added mean latency at c=1 ≤ 0.5 ms",
      ok: (p1.added ?? NaN) <= 0.5,
      figure: `${signed(p1.added, 3)} ms`
    },
    {
      target: "buffered throughput at c=32 ≥ 3,000 req/s, no errors",
      ok: p32.rps >= 3000 && p32.errors === 0 && p32.non2xx === 0,
      figure: `${f(p32.rps, 0)} req/s, ${p32.errors} errors, ${p32.non2xx} non-2xx`
    },
    {
      target: "streaming: ≤ 1 ms added time to first chunk",
      ok: (ps.addedFirst ?? NaN) <= 1 && ps.errors === 0,
      figure: `${signed(ps.addedFirst, 3)} ms (p50)`
    },
    {
      target: "fail_open with a dead judge ≤ 2 ms slower than with a live judge",
      ok: (dead.added ?? NaN) <= 2 && dead.non2xx === 0,
      figure: `${signed(dead.added, 3)} ms (mean, c=1)`
    },
    {
      target: `a stalled judge costs at most its deadline + 10 ms`,
      ok: stall.count === STALL_N && stall.costMax <= STALL_TIMEOUT_MS + 10,
      figure: `a stalled request costs at most ${f(stall.costMax, 1)} ms (mean ${
        f(stall.costMean, 1)
      } ms) more than a live-judge request made just before it after the same idle, for a ${STALL_TIMEOUT_MS} ms deadline; slowest stalled request ${
        f(stall.max, 1)
      } ms, live-judge c=1 mean ${f(cap.mean, 2)} ms; ${stall.errors} errors`
    }
  ]
  if (sessions) {
    targets.push({
      target: "100k sessions in the default store ≤ 40 MB of extra heap",
      ok: sessions.heapDeltaAt100kMb <= 40 && sessions.errors === 0 && sessions.non2xx === 0,
      figure: sessions.extrapolated
        ? `${
          signed(sessions.heapDeltaAt100kMb, 1)
        } MB heapUsed after GC at 100k, extrapolated from ${sessions.stored} sessions (${
          signed(sessions.heapDeltaMb, 1)
        } MB measured, ${f(sessions.bytesPerSessionSlope, 0)} B/session); VmRSS ${signed(sessions.rssDeltaMb, 1)} MB`
        : `${signed(sessions.heapDeltaMb, 1)} MB heapUsed after GC for ${sessions.stored} sessions (${
          f(sessions.bytesPerSessionSlope, 0)
        } B/session); VmRSS ${signed(sessions.rssDeltaMb, 1)} MB`
    })
  }
  const runtimeS = (performance.now() - t0) / 1000
  machine.loadavgAtEnd = os.loadavg().map((l) => Number(l.toFixed(2)))
  // Contention: CPU the rest of the machine used while the bench ran (bench, mock and servers excluded).
  const jiffiesAtEnd = machineJiffies()
  const benchCpuS = (process.cpuUsage().user + process.cpuUsage().system) / 1e6
  const machineBusyS = (jiffiesAtEnd.busy - jiffiesAtStart.busy) / 100
  const otherCpuS = Math.max(0, machineBusyS - benchCpuS - ownCpuS.servers - ownCpuS.mock)
  machine.duringRun = {
    benchCpuS: Number(benchCpuS.toFixed(1)),
    serverCpuS: Number(ownCpuS.servers.toFixed(1)),
    mockCpuS: Number(ownCpuS.mock.toFixed(1)),
    otherProcessesCpuS: Number(otherCpuS.toFixed(1)),
    otherProcessesPctOfMachine: Math.round((100 * otherCpuS) / (runtimeS * machine.cores))
  }

  const contention =
    `other processes used ${machine.duringRun.otherProcessesCpuS} CPU-s during the run (${machine.duringRun.otherProcessesPctOfMachine}% of the machine); server ${machine.duringRun.serverCpuS} CPU-s, mock ${machine.duringRun.mockCpuS}, load generator ${machine.duringRun.benchCpuS}`
  console.log(`\n## Results\n\nmachine: ${machine.cpu} x ${machine.cores}, node ${machine.node}; ${contention}\n`)
  console.log(table.join("\n"))
  console.log("")
  console.log(memory.join("\n"))
  console.log("\n## Targets\n")
  for (const t of targets) console.log(`- ${t.target}: **${verdict(t.ok)}** — ${t.figure}`)
  console.log(`\nbench runtime ${runtimeS.toFixed(1)} s`)

  const outDir = path.join(ROOT, "bench-results")
  mkdirSync(outDir, { recursive: true })
  const stamp = new Date().toISOString().replace(/[:.]/g, "-")
  const outFile = path.join(outDir, `bench-${stamp}.json`)
  writeFileSync(
    outFile,
    JSON.stringify(
      {
        date: new Date().toISOString(),
        machine,
        source,
        options: {
          quick: QUICK,
          rowSeconds: ROW_S,
          warmSeconds: WARM_S,
          streamRequests: STREAM_N,
          stallRequests: STALL_N,
          sessions: SESSIONS
        },
        serverStartupMs: server.startupMs,
        sanity,
        rows,
        memory: { mainServer: mainStatus, sessions },
        targets,
        markdown: { table: table.join("\n"), memory: memory.join("\n") },
        runtimeS
      },
      null,
      2
    )
  )
  console.log(`wrote ${path.relative(ROOT, outFile)}`)
}

main().then(
  () => {
    killAll()
    process.exit(0)
  },
  (error: unknown) => {
    console.error(`bench failed: ${error instanceof Error ? error.stack : error}`)
    killAll()
    process.exit(1)
  }
)
