// `npm run bench`: the latency/throughput/memory benchmark of the switchyard server.
//
// Starts a minimal fast mock upstream (scripts/src/bench/mock-upstream.ts, a child process) and the
// real server from its CLI (`node packages/server/bin/switchyard.js --config <toml> --port 0`),
// both on 127.0.0.1, then measures every routed row beside a direct-to-mock row of the same run.
// Load is driven with autocannon (bounded by duration); per-request latencies are taken from
// autocannon's `response` events (float ms, so sub-millisecond differences are visible).
//
//   node scripts/dist/bench.js [--quick] [--rows all|tiny|agent] [--agent-sizes KB,KB] [--sessions N]
//                              [--session-budget S] [--no-sessions] [--cpu-prof DIR] [--no-peer] [--streams N]
//
//   --quick         ~1 s rows, fewer sequential requests, 20 s session budget (a smoke run)
//   --rows G        which rows: `tiny` (every row of a one-line chat body: buffered, streaming, judges,
//                   many streams, sessions), `agent` (the agent-sized rows only: coding-agent bodies on
//                   every request path, their floor and peer rows, in-flight memory) or `all` (default)
//   --agent-sizes L body sizes of the agent rows in KB (default 64,256)
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
// The agent rows (bench/agent/: a deterministic coding-agent conversation in each wire format, 64 and
// 256 KB) run after the one-line rows on the same server, with a floor and a peer gateway of their
// own, then measure the in-flight memory on fresh servers.
//
// Prints the machine, Markdown tables and the targets; writes bench-results/bench-<timestamp>.json.
// Needs `npm run build` first (it compiles this script too).
//
// The pieces: bench/options.ts (flags), bench/deployment.ts (the server's deployment),
// bench/children.ts, forwarders.ts, peer.ts (the processes), bench/measure.ts (how a row is
// measured), one module per row under bench/rows/, bench/agent/ (the agent bodies, paths, sanity
// check, stage and report), bench/report.ts and output.ts (tables, targets, the JSON file).
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import http from "node:http"
import os from "node:os"
import path from "node:path"
import { performance } from "node:perf_hooks"
import { agentStage } from "./bench/agent/stage.js"
import { closedPort, ROOT, startBenchServer, startMock, stopBenchServer } from "./bench/children.js"
import { type BenchContext, type Row, rowLine, type RunContext } from "./bench/context.js"
import { benchToml } from "./bench/deployment.js"
import { checkForwarders, startForwarders, stopForwarders } from "./bench/forwarders.js"
import { describeMachine, describeSource, printRunHeader } from "./bench/machine.js"
import { lastBody } from "./bench/mockApi.js"
import { type BenchOptions, parseBenchOptions } from "./bench/options.js"
import { type TinyStage, writeOutput } from "./bench/output.js"
import { machineJiffies, ownCpu, procCpuS, procStatus } from "./bench/proc.js"
import { bufferedRows } from "./bench/rows/buffered.js"
import { hedgeRow } from "./bench/rows/hedge.js"
import { judgeRows } from "./bench/rows/judge.js"
import { manyStreamsRows } from "./bench/rows/manyStreams.js"
import { sessionsRow } from "./bench/rows/sessions.js"
import { stallRow } from "./bench/rows/stall.js"
import { streamingRows } from "./bench/rows/streaming.js"
import { checkEveryRoute } from "./bench/sanity.js"
import { JUDGE_MODEL } from "./bench/shared.js"
import { warmUp } from "./bench/warmUp.js"
import { killAll, pidOf, requireBuild } from "./lib/processes.js"

const options = parseBenchOptions(process.argv.slice(2))
requireBuild(ROOT)

/** The flags of the main server's node: `--cpu-prof` and BENCH_SERVER_NODE_FLAGS. */
const serverFlags = (o: BenchOptions): Array<string> => [
  ...(o.cpuProf ? ["--cpu-prof", "--cpu-prof-dir", path.resolve(o.cpuProf)] : []),
  ...(process.env.BENCH_SERVER_NODE_FLAGS ?? "").split(" ").filter((flag) => flag !== "")
]

/** The mock, the deployment file (in `tmp`) and the main server. */
const startMockAndServer = async (tmp: string) => {
  const mock = await startMock()
  const tomlPath = path.join(tmp, "bench.toml")
  writeFileSync(
    tomlPath,
    benchToml({ mockPort: mock.port, deadPort: await closedPort(), dripModel: options.dripModel })
  )
  const server = await startBenchServer(tomlPath, serverFlags(options))
  console.log(
    `server pid ${server.pid} at ${server.url} (ready in ${server.startupMs.toFixed(0)} ms); mock at :${mock.port}`
  )
  return { mock, tomlPath, server }
}

/** Every route answers as configured before anything is measured; the judge body the server sends. */
const sanityCheck = async (agent: http.Agent, serverPort: number, mockPort: number) => {
  const sanity = await checkEveryRoute(agent, serverPort)
  const judgeBody = await lastBody(mockPort, JUDGE_MODEL)
  console.log(
    `sanity: ${sanity.map((s) => `${s.model}→${s.selected} (${s.source}${s.reason ? `/${s.reason}` : ""})`).join(", ")}`
  )
  console.log(`judge request body as sent by the server: ${judgeBody.length} bytes`)
  return { sanity, judgeBody }
}

/** The one-line-body rows, with a floor and a peer gateway of their own, on the running server. */
const tinyStage = async (base: RunContext): Promise<TinyStage> => {
  const { cpu, mock, server } = base
  const started = await startForwarders(mock.port, options.noPeer)
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
  const { judgeBody, sanity } = await sanityCheck(agent, server.port, mock.port)
  const forwarders = await checkForwarders(started, cpu)
  const ctx: BenchContext = {
    ...base,
    floor: forwarders.floor,
    peer: forwarders.peer,
    peerHeaders: forwarders.peerHeaders
  }
  await warmUp(ctx)
  const buffered = await bufferedRows(ctx)
  const streaming = await streamingRows(ctx)
  await stopForwarders(forwarders, cpu)
  const judge = await judgeRows(ctx, judgeBody)
  const stall = await stallRow(ctx, agent, judge.cap)
  const hedge = await hedgeRow(ctx, agent)
  agent.destroy()
  const many = await manyStreamsRows(ctx)
  return { buffered, streaming, judge, stall, hedge, many, sanity, forwarders }
}

const main = async (): Promise<void> => {
  const t0 = performance.now()
  const machine = await describeMachine()
  const source = describeSource()
  printRunHeader(options, machine, source)

  const jiffiesAtStart = machineJiffies()
  const cpu = ownCpu()
  const tmp = mkdtempSync(path.join(os.tmpdir(), "switchyard-bench-"))
  const { mock, server, tomlPath } = await startMockAndServer(tmp)

  const rows: Array<Row> = []
  const base: RunContext = {
    options,
    server,
    mock,
    cpu,
    log: (row) => {
      rows.push(row)
      console.log(rowLine(row))
      return row
    }
  }
  const tiny = options.rows.tiny ? await tinyStage(base) : undefined
  // The main server's peak is read after the one-line rows, before the agent rows.
  const mainStatus = procStatus(server.pid)
  const agent = options.rows.agent ? await agentStage(base, tomlPath) : undefined

  const mainExit = await stopBenchServer(server, cpu)
  console.log(
    `main server: VmHWM ${mainStatus.hwmMb.toFixed(1)} MB, VmRSS ${mainStatus.rssMb.toFixed(1)} MB, exit ${mainExit}`
  )
  const sessions = options.rows.tiny ? await sessionsRow(base, tomlPath) : null

  cpu.mock = procCpuS(pidOf(mock.child))
  mock.child.kill("SIGTERM")
  rmSync(tmp, { recursive: true, force: true })

  writeOutput({
    tiny,
    agent,
    sessions,
    mainStatus,
    options,
    machine,
    source,
    jiffiesAtStart,
    cpu,
    t0,
    serverStartupMs: server.startupMs,
    rows
  })
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
