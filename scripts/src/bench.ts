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
//   --no-peer       skip the peer gateway rows (otherwise bench/peer is installed on demand with
//                   `npm ci --prefix bench/peer`; when that fails, its rows are skipped with the reason)
//   --streams N     streams of the many-streams row (default 1000, quick 200; 0 skips the row)
//
// Beside our server, the same mock is also reached through two other forwarders, each its own
// process on its own loopback port: the floor (scripts/src/bench/floor.ts: node:http + undici
// dispatch(), nothing else) and the TypeScript peer gateway (bench/peer, started bound to 127.0.0.1
// by scripts/src/bench/peer-gateway.ts). Every load and stream row reports the CPU µs per request of
// the process it measures (utime + stime from /proc/<pid>/stat before and after the row).
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
import { Pool } from "undici"
import { JUDGE_MODEL, Ready, STALL_MODEL } from "./bench/shared.js"
import { header, killAll, pidOf, requireBuild, sleep, track, withTimeout } from "./lib/processes.js"

const HERE = path.dirname(fileURLToPath(import.meta.url)) // scripts/dist
const ROOT = path.resolve(HERE, "../..")
const BIN = path.join(ROOT, "packages/server/bin/switchyard.js")
const MOCK = path.join(HERE, "bench/mock-upstream.js")
const HEAP_PROBE = path.join(HERE, "bench/heap-probe.cjs")
const FLOOR = path.join(HERE, "bench/floor.js")
const PEER_LAUNCHER = path.join(HERE, "bench/peer-gateway.js")
const PEER_DIR = path.join(ROOT, "bench/peer")
const PEER_ENTRY = path.join(PEER_DIR, "node_modules/@portkey-ai/gateway/build/start-server.js")
const HOST = "127.0.0.1"
const STALL_TIMEOUT_MS = 1000

const { values: args } = parseArgs({
  options: {
    quick: { type: "boolean", default: false },
    sessions: { type: "string" },
    "no-sessions": { type: "boolean", default: false },
    "session-budget": { type: "string" },
    "cpu-prof": { type: "string" },
    "no-peer": { type: "boolean", default: false },
    streams: { type: "string" }
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
const MANY_STREAMS = Number(args.streams ?? (QUICK ? 200 : 1000)) // concurrent held streams
const MANY_CHUNKS = QUICK ? 10 : 20 // content chunks per held stream
const MANY_GAP_MS = 250 // between two chunks of a held stream
const DRIP_MODEL = `bench-drip-${MANY_CHUNKS}x${MANY_GAP_MS}`

requireBuild(ROOT)

const decodeReady = Schema.decodeUnknownOption(Ready)
/** The part of the heap probe's `process.memoryUsage()` line the bench reads. */
const HeapLine = Schema.parseJson(Schema.Struct({ heapUsed: Schema.Number }))
const decodeHeapLine = Schema.decodeUnknownSync(HeapLine)

// ---------------------------------------------------------------------------------------------
const startForked = async (
  script: string,
  argv: ReadonlyArray<string>,
  what: string
): Promise<{ readonly child: ChildProcess; readonly pid: number; readonly port: number }> => {
  const child = track(fork(script, argv, { stdio: ["ignore", "inherit", "inherit", "ipc"] }))
  const port = await withTimeout(
    new Promise<number>((resolve, reject) => {
      child.once("message", (m) => {
        const ready = decodeReady(m)
        if (Option.isSome(ready)) resolve(ready.value.port)
        else reject(new Error(`${what} sent an unexpected first message: ${JSON.stringify(m)}`))
      })
      child.once("exit", (code) => reject(new Error(`${what} exited with ${code}`)))
    }),
    10_000,
    `${what} start`
  )
  return { child, pid: pidOf(child), port }
}
const startMock = () => startForked(MOCK, [], "mock")

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

/** Clock ticks per second of /proc/<pid>/stat's utime and stime (`getconf CLK_TCK`, normally 100). */
const CLK_TCK = ((): number => {
  try {
    const n = Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }))
    return n > 0 ? n : 100
  } catch {
    return 100
  }
})()

/** CPU seconds (utime + stime) a live process has used so far, or NaN when it cannot be read. */
const cpuS = (pid: number): number => {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, "utf8")
    // The command name (field 2) may hold spaces: count fields after its closing parenthesis.
    const fields = text.slice(text.lastIndexOf(")") + 2).split(" ")
    return (Number(fields[11]) + Number(fields[12])) / CLK_TCK
  } catch {
    return NaN
  }
}
/** CPU seconds a live process has used so far (0 when it cannot be read). */
const procCpuS = (pid: number): number => {
  const s = cpuS(pid)
  return Number.isNaN(s) ? 0 : s
}
const ownCpuS = { servers: 0, mock: 0, floor: 0, peer: 0 }

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
  /** CPU µs per completed request of the measured process (utime + stime over the row). */
  readonly cpuUsPerReq: number
  readonly pid?: number
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
  /** The process whose CPU per request the row reports. */
  readonly pid?: number
}

/** CPU µs per request of `pid` between two `cpuS` readings. */
const cpuPerRequest = (before: number, after: number, requests: number): number =>
  requests > 0 ? ((after - before) * 1e6) / requests : NaN

const loadRow = async (
  name: string,
  { url, body, connections, headers, requests, pairs = false, pid }: LoadOptions
): Promise<LoadRow> => {
  const base = { url, connections, headers: { ...JSON_HEADERS, ...headers }, body, requests }
  await cannon({ ...base, duration: WARM_S })
  const cpuBefore = pid === undefined ? NaN : cpuS(pid)
  const { result, latencies, non2xx } = await cannon({ ...base, duration: ROW_S })
  const cpuAfter = pid === undefined ? NaN : cpuS(pid)
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
    non2xx,
    cpuUsPerReq: cpuPerRequest(cpuBefore, cpuAfter, latencies.length + non2xx),
    ...(pid === undefined ? {} : { pid })
  }
}

interface Timed {
  readonly status: number
  readonly headers: http.IncomingHttpHeaders
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
  /** CPU µs per streamed request of the measured process over the timed requests. */
  readonly cpuUsPerReq: number
  addedFirst?: number
  addedLast?: number
}

const streamRow = async (
  name: string,
  port: number,
  body: string,
  { n = STREAM_N, pid, headers = {} }: {
    readonly n?: number
    readonly pid?: number
    readonly headers?: Readonly<Record<string, string>>
  } = {}
): Promise<StreamRow> => {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
  const firsts: Array<number> = []
  const lasts: Array<number> = []
  let errors = 0
  let cpuBefore = NaN
  try {
    for (let i = 0; i < n + 20; i++) {
      if (i === 20 && pid !== undefined) cpuBefore = cpuS(pid)
      try {
        const r = await timedRequest(agent, port, "/v1/chat/completions", body, headers)
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
  const cpuUsPerReq = pid === undefined ? NaN : cpuPerRequest(cpuBefore, cpuS(pid), n)
  return { name, kind: "stream", count: firsts.length, first: stats(firsts), last: stats(lasts), errors, cpuUsPerReq }
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

type Row = LoadRow | StreamRow | StallRow | SessionsRow | ManyStreamsRow

// ---------------------------------------------------------------------------------------------
// The peer gateway (bench/peer): installed on demand, started bound to 127.0.0.1.
interface Peer {
  readonly child: ChildProcess
  readonly pid: number
  readonly port: number
  readonly version: string
}

/** Install bench/peer when its node_modules is missing; the reason it cannot be run, or `undefined`. */
const installPeer = (): string | undefined => {
  if (existsSync(PEER_ENTRY)) return undefined
  console.log("installing the peer gateway: npm ci --prefix bench/peer")
  try {
    execFileSync("npm", ["ci", "--prefix", PEER_DIR, "--no-audit", "--no-fund"], {
      cwd: ROOT,
      stdio: ["ignore", "ignore", "pipe"],
      timeout: 300_000
    })
  } catch (error) {
    const stderr = typeof error === "object" && error !== null && "stderr" in error ? String(error.stderr) : ""
    const line = stderr.split("\n").find((l) => /err/i.test(l)) ?? (error instanceof Error ? error.message : "")
    return `\`npm ci --prefix bench/peer\` failed (${line.trim().slice(0, 160) || "no output"})`
  }
  return existsSync(PEER_ENTRY) ? undefined : `bench/peer installed, but ${path.relative(ROOT, PEER_ENTRY)} is missing`
}

/** Resolves once a GET on `port` answers at all (any status). */
const waitForHttp = async (port: number, ms: number, what: string): Promise<void> => {
  const deadline = performance.now() + ms
  while (performance.now() < deadline) {
    const up = await new Promise<boolean>((resolve) => {
      const req = http.get({ host: HOST, port, path: "/", agent: false }, (res) => {
        res.resume()
        resolve(true)
      })
      req.setTimeout(1000, () => req.destroy())
      req.on("error", () => resolve(false))
    })
    if (up) return
    await sleep(100)
  }
  throw new Error(`${what}: nothing answered on ${HOST}:${port} within ${ms} ms`)
}

const startPeer = async (): Promise<Peer> => {
  const port = await closedPort()
  const child = track(
    spawn(process.execPath, [PEER_LAUNCHER, PEER_ENTRY, String(port)], {
      cwd: PEER_DIR,
      stdio: ["ignore", "pipe", "pipe"]
    })
  )
  let output = ""
  const keep = (d: string) => (output = (output + d).slice(-4000))
  child.stdout.setEncoding("utf8").on("data", keep)
  child.stderr.setEncoding("utf8").on("data", keep)
  const exited = new Promise<never>((_, reject) =>
    child.once("exit", (code) => reject(new Error(`peer gateway exited with ${code}: ${output.slice(-500)}`)))
  )
  exited.catch(() => {})
  await Promise.race([waitForHttp(port, 30_000, "peer gateway"), exited])
  const version = Schema.decodeUnknownSync(Schema.parseJson(Schema.Struct({ version: Schema.String })))(
    readFileSync(path.join(PEER_DIR, "node_modules/@portkey-ai/gateway/package.json"), "utf8")
  ).version
  return { child, pid: pidOf(child), port, version }
}

const stopChild = async (child: ChildProcess): Promise<void> => {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()))
  child.kill("SIGTERM")
  try {
    await withTimeout(exited, 5_000, "child stop")
  } catch {
    child.kill("SIGKILL")
  }
}

/** What a forwarder's answer shows: the upstream reached, the model answered, whether SSE streams. */
interface Reach {
  readonly bufferedStatus: number
  readonly model: string | undefined
  readonly content: string | undefined
  readonly streamStatus: number
  readonly streamContentType: string | undefined
  readonly streamEvents: number
  readonly streamDone: boolean
  /** The model of the streamed check (the mock's timing depends on it). */
  readonly streamModel: string
  /** ms to the first body chunk of the streamed check. */
  readonly streamFirstMs: number
  /** ms between the first and the last body chunk. */
  readonly streamSpreadMs: number
  /** The least spread that shows the events were relayed as they came. */
  readonly streamMinSpreadMs: number
  readonly ok: boolean
  readonly streams: boolean
}

const ChatAnswer = Schema.parseJson(Schema.Struct({
  model: Schema.optional(Schema.String),
  choices: Schema.optional(Schema.Array(Schema.Struct({
    message: Schema.optional(Schema.Struct({ content: Schema.optional(Schema.NullOr(Schema.String)) }))
  })))
}))
const decodeChatAnswer = Schema.decodeUnknownOption(ChatAnswer)

/**
 * One buffered and one streamed request through a forwarder, checked against the mock's answers.
 * The streamed one asks `streamModel`: a forwarder that holds SSE events back shows a spread between
 * its first and last body chunk well under the mock's (`minSpreadMs`).
 */
const checkReach = async (
  port: number,
  model: string,
  headers: Readonly<Record<string, string>>,
  { minSpreadMs, streamModel }: { readonly streamModel: string; readonly minSpreadMs: number }
): Promise<Reach> => {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
  try {
    // A first round warms the process and its upstream connection; the second is the one checked.
    await timedRequest(agent, port, "/v1/chat/completions", chatBody(model), headers)
    await timedRequest(agent, port, "/v1/chat/completions", chatBody(streamModel, { stream: true }), headers)
    const b = await timedRequest(agent, port, "/v1/chat/completions", chatBody(model), headers)
    const answer = decodeChatAnswer(b.text)
    const s = await timedRequest(agent, port, "/v1/chat/completions", chatBody(streamModel, { stream: true }), headers)
    const bodyModel = Option.isSome(answer) ? answer.value.model : undefined
    const content = Option.isSome(answer) ? answer.value.choices?.[0]?.message?.content ?? undefined : undefined
    const streamContentType = header(s.headers, "content-type")
    const streamEvents = s.text.split("\n\n").filter((e) => e.startsWith("data: ")).length
    const streamDone = s.text.includes("data: [DONE]")
    const streamSpreadMs = s.total - s.first
    const ok = b.status === 200 && bodyModel === "bench-weak" && content === "Hello from the bench mock." &&
      s.status === 200 && s.text.includes("\"content\":\"") && streamDone
    return {
      bufferedStatus: b.status,
      model: bodyModel,
      content,
      streamStatus: s.status,
      streamContentType,
      streamEvents,
      streamDone,
      streamModel,
      streamFirstMs: s.first,
      streamSpreadMs,
      streamMinSpreadMs: minSpreadMs,
      ok,
      streams: ok && (streamContentType ?? "").startsWith("text/event-stream") && streamSpreadMs >= minSpreadMs
    }
  } finally {
    agent.destroy()
  }
}

// ---------------------------------------------------------------------------------------------
// Many streams: MANY_STREAMS concurrent streams held open by the passthrough route, each relaying
// MANY_CHUNKS chunks MANY_GAP_MS apart, a trickle of buffered requests and /health sampled while
// they flow.
interface ManyStreamsRow {
  readonly name: string
  readonly kind: "many-streams"
  readonly streams: number
  readonly chunksPerStream: number
  readonly gapMs: number
  readonly completed: number
  readonly errors: number
  readonly errorSamples: ReadonlyArray<string>
  /** SSE events received by the clients (content chunks and `[DONE]`). */
  readonly eventsRelayed: number
  /** Content chunks relayed (the events without `[DONE]`). */
  readonly chunksRelayed: number
  readonly windowS: number
  readonly serverCpuS: number
  readonly cpuUsPerChunk: number
  /** The same over the steady part only: all streams open, none finished yet (NaN when none). */
  readonly steady: { readonly windowS: number; readonly chunks: number; readonly cpuUsPerChunk: number }
  readonly health: Stats & { readonly errors: number }
  readonly trickle: Stats & { readonly errors: number }
  readonly rssBeforeMb: number
  readonly rssPeakMb: number
  readonly rssPerStreamKb: number
}

const timedGet = (agent: http.Agent, port: number, reqPath: string): Promise<{ status: number; ms: number }> =>
  new Promise((resolve, reject) => {
    const t = performance.now()
    const req = http.get({ agent, host: HOST, port, path: reqPath }, (res) => {
      res.resume()
      res.on("end", () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - t }))
      res.on("error", reject)
    })
    req.setTimeout(10_000, () => req.destroy(new Error("GET timed out")))
    req.on("error", reject)
  })

/** What the many-streams row drives: a process listening on `port` (its `url`) that relays the streams. */
interface Relayer {
  readonly url: string
  readonly port: number
  readonly pid: number
}

/**
 * The many-streams row against `server`. With `probes` (our server), `/health` is sampled and a
 * buffered trickle is sent while the chunks flow; without (the floor, which has neither), only its
 * CPU and RSS are read.
 */
const manyStreamsRow = async (
  server: Relayer,
  passBody: string,
  label: string,
  probes = true
): Promise<ManyStreamsRow> => {
  const n = MANY_STREAMS
  const pool = new Pool(server.url, {
    connections: n + 8,
    pipelining: 1,
    keepAliveTimeout: 30_000,
    headersTimeout: 20_000,
    bodyTimeout: 20_000
  })
  const body = chatBody("drip", { stream: true })
  let events = 0
  let chunks = 0
  let opened = 0 // streams that received their first event
  let finished = 0
  let completed = 0 // every other stream counts as an error
  const errorSamples: Array<string> = []
  const fail = (why: string) => {
    if (errorSamples.length < 5) errorSamples.push(why)
  }
  const mark = () => ({ t: performance.now(), cpu: cpuS(server.pid), chunks })
  let steadyStart: ReturnType<typeof mark> | undefined
  let steadyEnd: ReturnType<typeof mark> | undefined

  const one = async (): Promise<void> => {
    try {
      const res = await pool.request({ path: "/v1/chat/completions", method: "POST", headers: JSON_HEADERS, body })
      let got = 0
      let done = false
      let tail = ""
      for await (const part of res.body) {
        const text = tail + (Buffer.isBuffer(part) ? part.toString("utf8") : String(part))
        let at = 0
        let end
        while ((end = text.indexOf("\n\n", at)) >= 0) {
          const event = text.slice(at, end)
          at = end + 2
          if (!event.startsWith("data: ")) continue
          if (got++ === 0 && ++opened === n) steadyStart = mark()
          events++
          if (event === "data: [DONE]") done = true
          else chunks++
        }
        tail = text.slice(at)
      }
      if (res.statusCode !== 200) fail(`HTTP ${res.statusCode}`)
      else if (!done || got !== MANY_CHUNKS + 1) fail(`${got} events${done ? "" : ", no [DONE]"}`)
      else completed++
    } catch (error) {
      fail(error instanceof Error ? error.message : String(error))
    } finally {
      if (finished++ === 0 && steadyStart !== undefined) steadyEnd = mark()
    }
  }

  const rssBeforeMb = procStatus(server.pid).rssMb
  let rssPeakMb = rssBeforeMb
  const start = mark()
  const all: Array<Promise<void>> = []
  let allDone = false
  const launched = (async () => {
    // Open the streams in batches (a thousand connects at once would overflow the listen backlog).
    for (let i = 0; i < n; i += 50) {
      for (let j = i; j < Math.min(n, i + 50); j++) all.push(one())
      await sleep(20)
    }
    await withTimeout(Promise.all(all), MANY_CHUNKS * MANY_GAP_MS + 20_000, "many streams")
  })().finally(() => (allDone = true))

  // /health every ~50 ms and RSS with it, on its own connection, while the chunks flow.
  const healthMs: Array<number> = []
  let healthErrors = 0
  const healthAgent = new http.Agent({ keepAlive: true, maxSockets: 1 })
  const healthLoop = (async () => {
    while (!allDone) {
      const t = performance.now()
      try {
        if (probes) {
          const r = await timedGet(healthAgent, server.port, "/health")
          if (r.status === 200) healthMs.push(r.ms)
          else healthErrors++
        }
      } catch {
        healthErrors++
      }
      rssPeakMb = Math.max(rssPeakMb, procStatus(server.pid).rssMb)
      await sleep(Math.max(0, 50 - (performance.now() - t)))
    }
  })()
  // A trickle of buffered requests (about 10 a second) on the passthrough route.
  const trickleMs: Array<number> = []
  let trickleErrors = 0
  const trickleAgent = new http.Agent({ keepAlive: true, maxSockets: 1 })
  const trickleLoop = (async () => {
    while (probes && !allDone) {
      try {
        const r = await timedRequest(trickleAgent, server.port, "/v1/chat/completions", passBody)
        if (r.status === 200) trickleMs.push(r.total)
        else trickleErrors++
      } catch {
        trickleErrors++
      }
      await sleep(100)
    }
  })()

  try {
    await launched
  } catch (error) {
    fail(error instanceof Error ? error.message : String(error))
  }
  const end = mark()
  await Promise.all([healthLoop, trickleLoop])
  healthAgent.destroy()
  trickleAgent.destroy()
  await pool.destroy()

  const windowS = (end.t - start.t) / 1000
  const serverCpuS = end.cpu - start.cpu
  const steady = steadyStart !== undefined && steadyEnd !== undefined && steadyEnd.chunks > steadyStart.chunks
    ? {
      windowS: (steadyEnd.t - steadyStart.t) / 1000,
      chunks: steadyEnd.chunks - steadyStart.chunks,
      cpuUsPerChunk: ((steadyEnd.cpu - steadyStart.cpu) * 1e6) / (steadyEnd.chunks - steadyStart.chunks)
    }
    : { windowS: NaN, chunks: 0, cpuUsPerChunk: NaN }
  return {
    name: `${n} concurrent streams × ${MANY_CHUNKS} chunks ${MANY_GAP_MS} ms apart (${label})`,
    kind: "many-streams",
    streams: n,
    chunksPerStream: MANY_CHUNKS,
    gapMs: MANY_GAP_MS,
    completed,
    errors: n - completed,
    errorSamples,
    eventsRelayed: events,
    chunksRelayed: chunks,
    windowS,
    serverCpuS,
    cpuUsPerChunk: chunks > 0 ? (serverCpuS * 1e6) / chunks : NaN,
    steady,
    health: { ...stats(healthMs), errors: healthErrors },
    trickle: { ...stats(trickleMs), errors: trickleErrors },
    rssBeforeMb,
    rssPeakMb,
    rssPerStreamKb: ((rssPeakMb - rssBeforeMb) * 1024) / n
  }
}

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

[targets.drip]
id = "${DRIP_MODEL}"
llm_client = "mock"

[routes.pass]
id = "pass"
type = "passthrough"
target = "weak"

[routes.drip]
id = "drip"
type = "passthrough"
target = "drip"

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
    readonly floorCpuS: number
    readonly peerCpuS: number
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
  // The floor and the peer gateway: the same mock through two other forwarders, each its own process.
  const floor = await startForked(FLOOR, [String(mock.port), "bench-weak"], "floor")
  let peer: Peer | undefined
  let peerSkipped: string | undefined = args["no-peer"] ? "--no-peer" : installPeer()
  if (peerSkipped === undefined) {
    try {
      peer = await startPeer()
    } catch (error) {
      peerSkipped = `the peer gateway did not start: ${error instanceof Error ? error.message : String(error)}`
    }
  }
  console.log(
    `floor pid ${floor.pid} at :${floor.port}; ${
      peer ? `peer gateway ${peer.version} pid ${peer.pid} at :${peer.port}` : `peer gateway skipped: ${peerSkipped}`
    }`
  )
  /** What the peer gateway needs to reach the mock: provider `openai` at a custom host. */
  const peerHeaders: Readonly<Record<string, string>> = {
    "x-portkey-provider": "openai",
    "x-portkey-custom-host": `http://${HOST}:${mock.port}/v1`,
    authorization: "Bearer bench"
  }

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
    } else if (row.kind === "many-streams") {
      console.log(
        `  ${row.name}: ${row.completed}/${row.streams} complete${
          row.errorSamples.length > 0 ? ` (errors: ${row.errorSamples.join("; ")})` : ""
        }, ${row.chunksRelayed} chunks in ${row.windowS.toFixed(1)} s, server ${
          row.cpuUsPerChunk.toFixed(1)
        } µs CPU/chunk, /health p50 ${row.health.p50.toFixed(2)} p99 ${
          row.health.p99.toFixed(2)
        } ms (${row.health.n} samples), VmRSS ${row.rssBeforeMb.toFixed(1)} → ${row.rssPeakMb.toFixed(1)} MB`
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
  // The floor stamps one model, so its streamed check gets the mock's usual 6 events 2 ms apart; the
  // peer's gets 4 content events 50 ms apart (the peer's first chunk comes later than the whole of the
  // usual stream, which would hide whether it relays events as they come).
  const reach: { floor: Reach; peer?: Reach } = {
    floor: await checkReach(floor.port, "pass", {}, { streamModel: "pass", minSpreadMs: 4 })
  }
  if (!reach.floor.ok) throw new Error(`the floor does not reach the mock: ${JSON.stringify(reach.floor)}`)
  if (peer) {
    reach.peer = await checkReach(peer.port, "bench-weak", peerHeaders, {
      streamModel: "bench-drip-4x50",
      minSpreadMs: 100
    })
    if (!reach.peer.ok) {
      peerSkipped = `the peer gateway did not answer as the mock does: ${JSON.stringify(reach.peer)}`
      ownCpuS.peer = procCpuS(peer.pid)
      await stopChild(peer.child)
      peer = undefined
    }
  }
  const reachLine = (r: Reach) =>
    `buffered answer model ${r.model}; ${r.streamModel} streamed: ${r.streamEvents} SSE events${
      r.streamDone ? " ending [DONE]" : ""
    } (${r.streamContentType}), first chunk at ${r.streamFirstMs.toFixed(1)} ms, spread over ${
      r.streamSpreadMs.toFixed(1)
    } ms (≥ ${r.streamMinSpreadMs} when relayed as they come): ${r.streams ? "streams" : "does NOT stream"}`
  console.log(`floor reaches the mock: ${reachLine(reach.floor)}`)
  if (reach.peer && peer) console.log(`peer gateway reaches the mock: ${reachLine(reach.peer)}`)
  if (peerSkipped !== undefined) console.log(`peer gateway rows skipped: ${peerSkipped}`)

  // Warm-up: the server's JIT needs several seconds of traffic before latencies settle.
  const warmStarted = performance.now()
  await cannon({ url: routed, body: chatBody("pass"), connections: 8, duration: GLOBAL_WARM_S })
  await streamRow("warm-up", server.port, chatBody("pass", { stream: true }), { n: 50 })
  await cannon({ url: routed, body: chatBody("cap"), connections: 8, duration: GLOBAL_WARM_S / 2 })
  await cannon({ url: routed, body: chatBody("cap-dead"), connections: 4, duration: GLOBAL_WARM_S / 4 })
  const floorUrl = `http://${HOST}:${floor.port}/v1/chat/completions`
  const peerUrl = peer ? `http://${HOST}:${peer.port}/v1/chat/completions` : ""
  await cannon({ url: floorUrl, body: chatBody("pass"), connections: 8, duration: GLOBAL_WARM_S / 2 })
  if (peer) {
    await cannon({
      url: peerUrl,
      body: chatBody("bench-weak"),
      headers: { ...JSON_HEADERS, ...peerHeaders },
      connections: 8,
      duration: GLOBAL_WARM_S / 2
    })
    await streamRow("warm-up", peer.port, chatBody("bench-weak", { stream: true }), { n: 30, headers: peerHeaders })
  }
  console.log(`warm-up: ${((performance.now() - warmStarted) / 1000).toFixed(1)} s on every route\n`)

  // 1. Passthrough buffered, c=1 and c=32.
  const passBody = chatBody("pass")
  const directBody = chatBody("bench-weak")
  const d1 = log(await loadRow("direct mock, buffered, c=1", { url: direct, body: directBody, connections: 1 }))
  const p1 = log(
    await loadRow("passthrough, buffered, c=1", { url: routed, body: passBody, connections: 1, pid: server.pid })
  )
  p1.added = p1.mean - d1.mean
  const f1 = log(
    await loadRow("floor (node:http + undici dispatch), buffered, c=1", {
      url: floorUrl,
      body: passBody,
      connections: 1,
      pid: floor.pid
    })
  )
  f1.added = f1.mean - d1.mean
  const peer1 = peer
    ? log(
      await loadRow("peer gateway, buffered, c=1", {
        url: peerUrl,
        body: directBody,
        headers: peerHeaders,
        connections: 1,
        pid: peer.pid
      })
    )
    : undefined
  if (peer1) peer1.added = peer1.mean - d1.mean
  // The same route from an Anthropic Messages client: request and answer translated.
  const messagesBody = chatBody("pass", { max_tokens: 256 })
  const m1 = log(
    await loadRow("passthrough via /v1/messages (translated both ways), c=1", {
      url: `${server.url}/v1/messages`,
      body: messagesBody,
      connections: 1,
      pid: server.pid
    })
  )
  m1.added = m1.mean - d1.mean
  const d32 = log(await loadRow("direct mock, buffered, c=32", { url: direct, body: directBody, connections: 32 }))
  const p32 = log(
    await loadRow("passthrough, buffered, c=32", { url: routed, body: passBody, connections: 32, pid: server.pid })
  )
  p32.added = p32.mean - d32.mean
  const f32 = log(
    await loadRow("floor, buffered, c=32", { url: floorUrl, body: passBody, connections: 32, pid: floor.pid })
  )
  f32.added = f32.mean - d32.mean
  const peer32 = peer
    ? log(
      await loadRow("peer gateway, buffered, c=32", {
        url: peerUrl,
        body: directBody,
        headers: peerHeaders,
        connections: 32,
        pid: peer.pid
      })
    )
    : undefined
  if (peer32) peer32.added = peer32.mean - d32.mean

  // 2. Passthrough streaming (sequential, own HTTP client): time to first / last chunk.
  const ds = log(await streamRow("direct mock, streaming", mock.port, chatBody("bench-weak", { stream: true })))
  const ps = log(
    await streamRow("passthrough, streaming", server.port, chatBody("pass", { stream: true }), { pid: server.pid })
  )
  ps.addedFirst = ps.first.p50 - ds.first.p50
  ps.addedLast = ps.last.p50 - ds.last.p50
  const fs = log(
    await streamRow("floor, streaming", floor.port, chatBody("pass", { stream: true }), { pid: floor.pid })
  )
  fs.addedFirst = fs.first.p50 - ds.first.p50
  fs.addedLast = fs.last.p50 - ds.last.p50
  const peerS = peer
    ? log(
      await streamRow("peer gateway, streaming", peer.port, chatBody("bench-weak", { stream: true }), {
        pid: peer.pid,
        headers: peerHeaders
      })
    )
    : undefined
  if (peerS) {
    peerS.addedFirst = peerS.first.p50 - ds.first.p50
    peerS.addedLast = peerS.last.p50 - ds.last.p50
  }
  // The floor and the peer are done: stop them, so they take no CPU from the rows below.
  ownCpuS.floor = procCpuS(floor.pid)
  await stopChild(floor.child)
  const peerVersion = peer?.version
  if (peer) {
    ownCpuS.peer = procCpuS(peer.pid)
    await stopChild(peer.child)
  }

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
  const cap = log(
    await loadRow("capability, live judge, c=1", {
      url: routed,
      body: chatBody("cap"),
      connections: 1,
      pid: server.pid
    })
  )
  cap.added = cap.mean - pair.mean

  // 4. fail_open with a dead judge (closed port) vs the live judge above.
  const dead = log(
    await loadRow("capability fail_open, dead judge, c=1", {
      url: routed,
      body: chatBody("cap-dead"),
      connections: 1,
      pid: server.pid
    })
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

  // 6. Many held streams through the passthrough route, with /health and a buffered trickle.
  const many = MANY_STREAMS > 0 ? log(await manyStreamsRow(server, passBody, "passthrough")) : undefined
  // The same streams through the floor (a process of its own, stamping the drip model), for what a
  // relayed chunk costs Node itself on this machine today.
  let manyFloor: ManyStreamsRow | undefined = undefined
  if (MANY_STREAMS > 0) {
    const dripFloor = await startForked(
      FLOOR,
      [String(mock.port), DRIP_MODEL, String(MANY_STREAMS + 8)],
      "floor (many streams)"
    )
    manyFloor = log(
      await manyStreamsRow(
        { url: `http://${HOST}:${dripFloor.port}`, port: dripFloor.port, pid: dripFloor.pid },
        passBody,
        "floor",
        false
      )
    )
    ownCpuS.floor += procCpuS(dripFloor.pid)
    await stopChild(dripFloor.child)
  }

  const mainStatus = procStatus(server.pid)
  const mainExit = await stopServer(server)
  console.log(
    `main server: VmHWM ${mainStatus.hwmMb.toFixed(1)} MB, VmRSS ${mainStatus.rssMb.toFixed(1)} MB, exit ${mainExit}`
  )

  // 7. Sessions: a fresh server (with a GC probe preloaded) and distinct session ids on a
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
    "| row | req/s | mean ms | p50 ms | p99 ms | added ms vs direct | CPU µs/req | errors / non-2xx |",
    "|---|---:|---:|---:|---:|---:|---:|---:|"
  ]
  const loadLine = (r: LoadRow, added = "") =>
    table.push(
      `| ${r.name} | ${f(r.rps, 0)} | ${f(r.mean)} | ${f(r.p50)} | ${f(r.p99)} | ${added} | ${
        f(r.cpuUsPerReq, 0)
      } | ${r.errors} / ${r.non2xx} |`
    )
  const skippedLine = (what: string) => table.push(`| ${what} | skipped: ${peerSkipped ?? ""} | | | | | | |`)
  const streamLine = (r: StreamRow, which: "first" | "last", label: string) => {
    const st = which === "first" ? r.first : r.last
    const added = which === "first" ? r.addedFirst : r.addedLast
    table.push(
      `| ${label} | – | ${f(st.mean)} | ${f(st.p50)} | ${f(st.p99)} | ${
        added === undefined ? "" : `${signed(added)} (p50)`
      } | ${which === "first" ? f(r.cpuUsPerReq, 0) : ""} | ${r.errors} |`
    )
  }
  loadLine(d1)
  loadLine(p1, signed(p1.added))
  loadLine(f1, signed(f1.added))
  if (peer1) loadLine(peer1, signed(peer1.added))
  else skippedLine("peer gateway, buffered, c=1")
  loadLine(m1, signed(m1.added))
  loadLine(d32)
  loadLine(p32, signed(p32.added))
  loadLine(f32, signed(f32.added))
  if (peer32) loadLine(peer32, signed(peer32.added))
  else skippedLine("peer gateway, buffered, c=32")
  streamLine(ds, "first", `direct mock, streaming: first chunk (${ds.count} sequential)`)
  streamLine(ps, "first", "passthrough, streaming: first chunk")
  streamLine(fs, "first", "floor, streaming: first chunk")
  if (peerS) streamLine(peerS, "first", "peer gateway, streaming: first chunk")
  else skippedLine("peer gateway, streaming: first chunk")
  streamLine(ds, "last", "direct mock, streaming: last chunk")
  streamLine(ps, "last", "passthrough, streaming: last chunk")
  streamLine(fs, "last", "floor, streaming: last chunk")
  if (peerS) streamLine(peerS, "last", "peer gateway, streaming: last chunk")
  loadLine(pair)
  loadLine(cap, `${signed(cap.added)} (beyond the 2 calls)`)
  loadLine(dead, `${signed(dead.added)} vs live judge`)
  table.push(
    `| ${stall.name}, ${stall.count} sequential | – | ${f(stall.mean, 1)} | ${f(stall.p50, 1)} | ${
      f(stall.max, 1)
    } (max) | ${signed(stall.costMean, 1)} vs the paired live-judge request (mean; max ${
      signed(stall.costMax, 1)
    }) | | ${stall.errors} |`
  )
  if (sessions) {
    table.push(
      `| ${sessions.name} | ${f(sessions.rps, 0)} | ${f(sessions.mean)} | ${f(sessions.p50)} | ${
        f(sessions.p99)
      } | | | ${sessions.errors} / ${sessions.non2xx} |`
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

  const manyTable = many
    ? [
      "| many streams (our server) | value |",
      "|---|---:|",
      `| ${many.name}: completed / errors | ${many.completed} / ${many.errors}${
        many.errorSamples.length > 0 ? ` (${many.errorSamples.join("; ")})` : ""
      } |`,
      `| chunks relayed (SSE events incl. [DONE]) over the window | ${many.chunksRelayed} (${many.eventsRelayed}) in ${
        f(many.windowS, 1)
      } s |`,
      `| server CPU per relayed chunk, whole window (opening the streams included) | ${f(many.cpuUsPerChunk, 1)} µs |`,
      `| server CPU per relayed chunk, steady part (all open, none finished: ${
        f(many.steady.windowS, 1)
      } s, ${many.steady.chunks} chunks) | ${f(many.steady.cpuUsPerChunk, 1)} µs |`,
      `| /health while the chunks flow, p50 / p99 / max (${many.health.n} samples every ~50 ms, ${many.health.errors} errors) | ${
        f(many.health.p50)
      } / ${f(many.health.p99)} / ${f(many.health.max)} ms |`,
      `| buffered trickle during them, mean / p99 (${many.trickle.n} requests, ${many.trickle.errors} errors) | ${
        f(many.trickle.mean)
      } / ${f(many.trickle.p99)} ms |`,
      `| server VmRSS before → peak while held | ${f(many.rssBeforeMb, 1)} → ${f(many.rssPeakMb, 1)} MB (${
        f(many.rssPerStreamKb, 1)
      } KB per held stream) |`,
      ...(manyFloor === undefined ? [] : [
        `| floor, the same streams: completed / errors | ${manyFloor.completed} / ${manyFloor.errors} |`,
        `| floor CPU per relayed chunk, whole window / steady part | ${f(manyFloor.cpuUsPerChunk, 1)} / ${
          f(manyFloor.steady.cpuUsPerChunk, 1)
        } µs |`,
        `| floor VmRSS before → peak while held | ${f(manyFloor.rssBeforeMb, 1)} → ${f(manyFloor.rssPeakMb, 1)} MB (${
          f(manyFloor.rssPerStreamKb, 1)
        } KB per held stream) |`
      ])
    ]
    : []

  // The issue "one lean Effect pipeline": each target from this run's rows, as ratios where it says so.
  type Status = "met" | "missed" | "not measured"
  const issueTargets: Array<{ readonly target: string; readonly status: Status; readonly figure: string }> = []
  const judge = (target: string, checks: ReadonlyArray<boolean | undefined>, figure: string) => {
    const status: Status = checks.some((c) => c === false)
      ? "missed"
      : checks.some((c) => c === undefined)
      ? "not measured"
      : "met"
    issueTargets.push({ target, status, figure })
  }
  const ratio = (a: number | undefined, b: number | undefined) =>
    a === undefined || b === undefined || !Number.isFinite(a / b) ? NaN : a / b
  const noPeer = peerSkipped !== undefined ? ` (peer: ${peerSkipped})` : ""
  {
    const addedPeer = ratio(p1.added, peer1?.added)
    judge(
      "passthrough, buffered, c=1: added mean ≤ 0.4 ms and ≤ 0.5× the peer's added mean",
      [(p1.added ?? NaN) <= 0.4, peer1 ? addedPeer <= 0.5 : undefined],
      `${signed(p1.added, 3)} ms; peer ${signed(peer1?.added, 3)} ms → ${f(addedPeer)}×${noPeer}; floor ${
        signed(f1.added, 3)
      } ms`
    )
    const vsPeer = ratio(p32.rps, peer32?.rps)
    const vsFloor = ratio(p32.rps, f32.rps)
    judge(
      "passthrough, buffered, c=32: ≥ 3× the peer's req/s, ≥ 0.5× the floor's, 0 errors, CPU ≤ 400 µs/request",
      [
        peer32 ? vsPeer >= 3 : undefined,
        vsFloor >= 0.5,
        p32.errors === 0 && p32.non2xx === 0,
        p32.cpuUsPerReq <= 400
      ],
      `${f(p32.rps, 0)} req/s = ${f(vsPeer)}× peer (${f(peer32?.rps, 0)}) and ${f(vsFloor)}× floor (${
        f(f32.rps, 0)
      }); ${p32.errors} errors, ${p32.non2xx} non-2xx; ${f(p32.cpuUsPerReq, 0)} µs CPU/request (floor ${
        f(f32.cpuUsPerReq, 0)
      }, peer ${f(peer32?.cpuUsPerReq, 0)})${noPeer}`
    )
    const ttfcPeer = ratio(ps.addedFirst, peerS?.addedFirst)
    judge(
      "streaming: added time to first chunk p50 ≤ 1 ms and ≤ 0.1× the peer's",
      [(ps.addedFirst ?? NaN) <= 1 && ps.errors === 0, peerS ? ttfcPeer <= 0.1 : undefined],
      `${signed(ps.addedFirst, 3)} ms; peer ${signed(peerS?.addedFirst, 3)} ms → ${f(ttfcPeer)}×; floor ${
        signed(fs.addedFirst, 3)
      } ms${noPeer}`
    )
    const overChat = m1.mean - p1.mean
    judge(
      "/v1/messages (translated both ways), c=1: ≤ 0.1 ms over the chat row",
      [overChat <= 0.1 && m1.errors === 0 && m1.non2xx === 0],
      `${signed(overChat, 3)} ms (mean ${f(m1.mean, 3)} vs ${f(p1.mean, 3)} ms)`
    )
    if (many) {
      judge(
        `many streams (${many.streams} × ${many.chunksPerStream} chunks): all complete, /health p99 ≤ 50 ms, CPU ≤ 60 µs per relayed chunk`,
        [many.errors === 0 && many.completed === many.streams, many.health.p99 <= 50, many.cpuUsPerChunk <= 60],
        `${many.completed}/${many.streams} complete, ${many.errors} errors; /health p99 ${f(many.health.p99)} ms; ${
          f(many.cpuUsPerChunk, 1)
        } µs CPU per chunk (whole window; steady part ${f(many.steady.cpuUsPerChunk, 1)})${
          manyFloor === undefined
            ? ""
            : `; floor ${f(manyFloor.cpuUsPerChunk, 1)} (steady ${f(manyFloor.steady.cpuUsPerChunk, 1)})`
        }`
      )
    } else {
      judge(
        "many streams: all complete, /health p99 ≤ 50 ms, CPU ≤ 60 µs per relayed chunk",
        [undefined],
        "row skipped"
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
  const otherCpuS = Math.max(
    0,
    machineBusyS - benchCpuS - ownCpuS.servers - ownCpuS.mock - ownCpuS.floor - ownCpuS.peer
  )
  machine.duringRun = {
    benchCpuS: Number(benchCpuS.toFixed(1)),
    serverCpuS: Number(ownCpuS.servers.toFixed(1)),
    mockCpuS: Number(ownCpuS.mock.toFixed(1)),
    floorCpuS: Number(ownCpuS.floor.toFixed(1)),
    peerCpuS: Number(ownCpuS.peer.toFixed(1)),
    otherProcessesCpuS: Number(otherCpuS.toFixed(1)),
    otherProcessesPctOfMachine: Math.round((100 * otherCpuS) / (runtimeS * machine.cores))
  }

  const contention =
    `other processes used ${machine.duringRun.otherProcessesCpuS} CPU-s during the run (${machine.duringRun.otherProcessesPctOfMachine}% of the machine); server ${machine.duringRun.serverCpuS} CPU-s, mock ${machine.duringRun.mockCpuS}, floor ${machine.duringRun.floorCpuS}, peer ${machine.duringRun.peerCpuS}, load generator ${machine.duringRun.benchCpuS}`
  console.log(`\n## Results\n\nmachine: ${machine.cpu} x ${machine.cores}, node ${machine.node}; ${contention}\n`)
  console.log(table.join("\n"))
  console.log("")
  console.log(memory.join("\n"))
  if (manyTable.length > 0) console.log(`\n${manyTable.join("\n")}`)
  console.log("\n## Targets\n")
  for (const t of targets) console.log(`- ${t.target}: **${verdict(t.ok)}** — ${t.figure}`)
  console.log("\n## Issue targets: one lean Effect pipeline (ratios from this run's rows)\n")
  for (const t of issueTargets) console.log(`- ${t.target}: **${t.status}** — ${t.figure}`)
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
          sessions: SESSIONS,
          manyStreams: MANY_STREAMS,
          manyStreamChunks: MANY_CHUNKS,
          manyStreamGapMs: MANY_GAP_MS
        },
        clkTck: CLK_TCK,
        serverStartupMs: server.startupMs,
        sanity,
        forwarders: {
          floor: { pid: floor.pid, reach: reach.floor },
          peer: peerSkipped !== undefined
            ? { skipped: peerSkipped, reach: reach.peer }
            : { version: peerVersion, reach: reach.peer, headers: Object.keys(peerHeaders) }
        },
        rows,
        memory: { mainServer: mainStatus, sessions },
        manyStreams: many,
        manyStreamsFloor: manyFloor,
        targets,
        issueTargets,
        markdown: { table: table.join("\n"), memory: memory.join("\n"), manyStreams: manyTable.join("\n") },
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
