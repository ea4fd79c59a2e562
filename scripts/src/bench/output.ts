// The end of a bench run: the contention figures (CPU the rest of the machine used), the report
// printed as Markdown, and bench-results/bench-<timestamp>.json with every figure.
import os from "node:os"
import { performance } from "node:perf_hooks"
import { writeResultsFile } from "../lib/results.js"
import { agentMemoryTable, agentTable, agentTargets, printAgentReport } from "./agent/report.js"
import type { AgentResults } from "./agent/stage.js"
import { ROOT } from "./children.js"
import type { Row } from "./context.js"
import type { Forwarders } from "./forwarders.js"
import type { Machine } from "./machine.js"
import type { BenchOptions } from "./options.js"
import { CLK_TCK, machineJiffies, type OwnCpu, type ProcStatus } from "./proc.js"
import type { Reach } from "./reach.js"
import { issueTargets, manyStreamsTable, memoryTable, type Results, rowsTable, targets } from "./report.js"
import type { BufferedRows } from "./rows/buffered.js"
import type { HedgeRow } from "./rows/hedge.js"
import type { JudgeRows } from "./rows/judge.js"
import type { ManyStreamsRows } from "./rows/manyStreams.js"
import type { SessionsRow } from "./rows/sessions.js"
import type { StallRow } from "./rows/stall.js"
import type { StreamingRows } from "./rows/streaming.js"
import type { Sanity } from "./sanity.js"

/** What the one-line-body rows measured (the session row apart: it runs after the main server stops). */
export interface TinyStage {
  readonly buffered: BufferedRows
  readonly streaming: StreamingRows
  readonly judge: JudgeRows
  readonly stall: StallRow
  readonly hedge: HedgeRow
  readonly many: ManyStreamsRows
  readonly sanity: ReadonlyArray<Sanity>
  readonly forwarders: Forwarders & { readonly reach: { readonly floor: Reach; readonly peer?: Reach } }
}

export interface Output {
  /** The one-line-body rows, unless `--rows agent`. */
  readonly tiny: TinyStage | undefined
  /** The agent rows, unless `--rows tiny`. */
  readonly agent: AgentResults | undefined
  readonly sessions: SessionsRow | null
  /** The main server's VmRSS and VmHWM after the one-line rows. */
  readonly mainStatus: ProcStatus
  readonly options: BenchOptions
  readonly machine: Machine
  readonly source: { readonly commit: string; readonly uncommittedPackageFiles: number }
  readonly jiffiesAtStart: ReturnType<typeof machineJiffies>
  readonly cpu: OwnCpu
  /** performance.now() at the start of the run. */
  readonly t0: number
  readonly serverStartupMs: number
  readonly rows: ReadonlyArray<Row>
}

/** Contention: CPU the rest of the machine used while the bench ran (bench, mock and servers excluded). */
const duringRun = (out: Output, runtimeS: number): NonNullable<Machine["duringRun"]> => {
  const { cpu, machine } = out
  const jiffiesAtEnd = machineJiffies()
  const benchCpuS = (process.cpuUsage().user + process.cpuUsage().system) / 1e6
  const machineBusyS = (jiffiesAtEnd.busy - out.jiffiesAtStart.busy) / 100
  const stealS = (jiffiesAtEnd.steal - out.jiffiesAtStart.steal) / 100
  const otherCpuS = Math.max(0, machineBusyS - stealS - benchCpuS - cpu.servers - cpu.mock - cpu.floor - cpu.peer)
  return {
    benchCpuS: Number(benchCpuS.toFixed(1)),
    serverCpuS: Number(cpu.servers.toFixed(1)),
    mockCpuS: Number(cpu.mock.toFixed(1)),
    floorCpuS: Number(cpu.floor.toFixed(1)),
    peerCpuS: Number(cpu.peer.toFixed(1)),
    otherProcessesCpuS: Number(otherCpuS.toFixed(1)),
    otherProcessesPctOfMachine: Math.round((100 * otherCpuS) / (runtimeS * machine.cores)),
    hostStealS: Number(stealS.toFixed(1)),
    hostStealPctOfMachine: Math.round((100 * stealS) / (runtimeS * machine.cores))
  }
}

/** Prints the results and targets and writes the JSON file. */
export const writeOutput = (out: Output): void => {
  const { agent, machine, options, tiny } = out
  const results: Results | undefined = tiny && {
    ...tiny,
    sessions: out.sessions,
    mainStatus: out.mainStatus,
    peerSkipped: tiny.forwarders.peerSkipped
  }
  const table = results ? rowsTable(results) : []
  const memory = results ? memoryTable(results) : []
  const manyTable = results ? manyStreamsTable(results) : []
  const issue = results ? issueTargets(results) : []
  const own = results ? targets(results, options) : []
  const agentReport = agent && {
    table: agentTable(agent),
    memory: agentMemoryTable(agent),
    targets: agentTargets(agent)
  }
  const runtimeS = (performance.now() - out.t0) / 1000
  machine.loadavgAtEnd = os.loadavg().map((l) => Number(l.toFixed(2)))
  const during = machine.duringRun = duringRun(out, runtimeS)

  const contention =
    `other processes used ${during.otherProcessesCpuS} CPU-s during the run (${during.otherProcessesPctOfMachine}% of the machine), the VM's host stole ${during.hostStealS} (${during.hostStealPctOfMachine}%); server ${during.serverCpuS} CPU-s, mock ${during.mockCpuS}, floor ${during.floorCpuS}, peer ${during.peerCpuS}, load generator ${during.benchCpuS}`
  const verdict = (ok: boolean) => (ok ? "met" : "NOT met")
  console.log(`\n## Results\n\nmachine: ${machine.cpu} x ${machine.cores}, node ${machine.node}; ${contention}\n`)
  if (results) {
    console.log(table.join("\n"))
    console.log("")
    console.log(memory.join("\n"))
    if (manyTable.length > 0) console.log(`\n${manyTable.join("\n")}`)
    console.log("\n## Targets\n")
    for (const t of own) console.log(`- ${t.target}: **${verdict(t.ok)}** — ${t.figure}`)
    console.log("\n## Issue targets: one lean Effect pipeline (ratios from this run's rows)\n")
    for (const t of issue) console.log(`- ${t.target}: **${t.status}** — ${t.figure}`)
  }
  if (agent && agentReport) printAgentReport(agent, agentReport)
  console.log(`\nbench runtime ${runtimeS.toFixed(1)} s`)

  const forwarders = tiny?.forwarders
  writeResultsFile(ROOT, "bench", {
    date: new Date().toISOString(),
    machine,
    source: out.source,
    options: {
      quick: options.quick,
      rows: options.rows,
      rowSeconds: options.rowS,
      warmSeconds: options.warmS,
      streamRequests: options.streamN,
      stallRequests: options.stallN,
      sessions: options.sessions,
      manyStreams: options.manyStreams,
      manyStreamChunks: options.manyChunks,
      manyStreamGapMs: options.manyGapMs,
      agentSizesKb: options.agentSizesKb,
      agentRowSeconds: options.agentRowS,
      agentWarmSeconds: options.agentWarmS,
      agentStreamRequests: options.agentStreamN,
      agentHeld: options.agentHeld
    },
    clkTck: CLK_TCK,
    serverStartupMs: out.serverStartupMs,
    sanity: tiny?.sanity ?? [],
    forwarders: forwarders && {
      floor: { pid: forwarders.floor.pid, reach: forwarders.reach.floor },
      peer: forwarders.peerSkipped !== undefined
        ? { skipped: forwarders.peerSkipped, reach: forwarders.reach.peer }
        : {
          version: forwarders.peer?.version,
          reach: forwarders.reach.peer,
          headers: Object.keys(forwarders.peerHeaders)
        }
    },
    rows: out.rows,
    memory: { mainServer: out.mainStatus, sessions: out.sessions },
    manyStreams: tiny?.many.many,
    manyStreamsFloor: tiny?.many.manyFloor,
    targets: own,
    issueTargets: issue,
    agent: agent && agentReport && {
      bodies: agent.bodies,
      peerSkipped: agent.peerSkipped,
      peerSkippedPaths: agent.peerSkippedPaths,
      judgeRequestBytes: agent.judgeRequestBytes,
      memory: agent.memory,
      targets: agentReport.targets,
      runtimeS: agent.runtimeS
    },
    markdown: {
      table: table.join("\n"),
      memory: memory.join("\n"),
      manyStreams: manyTable.join("\n"),
      ...(agentReport ? { agent: agentReport.table.join("\n"), agentMemory: agentReport.memory.join("\n") } : {})
    },
    runtimeS
  })
}
