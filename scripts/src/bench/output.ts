// The end of a bench run: the contention figures (CPU the rest of the machine used), the report
// printed as Markdown, and bench-results/bench-<timestamp>.json with every figure.
import os from "node:os"
import { performance } from "node:perf_hooks"
import { writeResultsFile } from "../lib/results.js"
import { ROOT } from "./children.js"
import type { Row } from "./context.js"
import type { Forwarders } from "./forwarders.js"
import type { Machine } from "./machine.js"
import type { BenchOptions } from "./options.js"
import { CLK_TCK, machineJiffies, type OwnCpu } from "./proc.js"
import type { Reach } from "./reach.js"
import { issueTargets, manyStreamsTable, memoryTable, type Results, rowsTable, targets } from "./report.js"
import type { Sanity } from "./sanity.js"

export interface Output {
  readonly results: Results
  readonly options: BenchOptions
  readonly machine: Machine
  readonly source: { readonly commit: string; readonly uncommittedPackageFiles: number }
  readonly jiffiesAtStart: { readonly busy: number; readonly total: number }
  readonly cpu: OwnCpu
  /** performance.now() at the start of the run. */
  readonly t0: number
  readonly serverStartupMs: number
  readonly sanity: ReadonlyArray<Sanity>
  readonly forwarders: Forwarders & { readonly reach: { readonly floor: Reach; readonly peer?: Reach } }
  readonly rows: ReadonlyArray<Row>
}

/** Prints the results and targets and writes the JSON file. */
export const writeOutput = (out: Output): void => {
  const { cpu, machine, options, results } = out
  const table = rowsTable(results)
  const memory = memoryTable(results)
  const manyTable = manyStreamsTable(results)
  const issue = issueTargets(results)
  const own = targets(results, options)
  const runtimeS = (performance.now() - out.t0) / 1000
  machine.loadavgAtEnd = os.loadavg().map((l) => Number(l.toFixed(2)))
  // Contention: CPU the rest of the machine used while the bench ran (bench, mock and servers excluded).
  const jiffiesAtEnd = machineJiffies()
  const benchCpuS = (process.cpuUsage().user + process.cpuUsage().system) / 1e6
  const machineBusyS = (jiffiesAtEnd.busy - out.jiffiesAtStart.busy) / 100
  const otherCpuS = Math.max(0, machineBusyS - benchCpuS - cpu.servers - cpu.mock - cpu.floor - cpu.peer)
  machine.duringRun = {
    benchCpuS: Number(benchCpuS.toFixed(1)),
    serverCpuS: Number(cpu.servers.toFixed(1)),
    mockCpuS: Number(cpu.mock.toFixed(1)),
    floorCpuS: Number(cpu.floor.toFixed(1)),
    peerCpuS: Number(cpu.peer.toFixed(1)),
    otherProcessesCpuS: Number(otherCpuS.toFixed(1)),
    otherProcessesPctOfMachine: Math.round((100 * otherCpuS) / (runtimeS * machine.cores))
  }

  const contention =
    `other processes used ${machine.duringRun.otherProcessesCpuS} CPU-s during the run (${machine.duringRun.otherProcessesPctOfMachine}% of the machine); server ${machine.duringRun.serverCpuS} CPU-s, mock ${machine.duringRun.mockCpuS}, floor ${machine.duringRun.floorCpuS}, peer ${machine.duringRun.peerCpuS}, load generator ${machine.duringRun.benchCpuS}`
  const verdict = (ok: boolean) => (ok ? "met" : "NOT met")
  console.log(`\n## Results\n\nmachine: ${machine.cpu} x ${machine.cores}, node ${machine.node}; ${contention}\n`)
  console.log(table.join("\n"))
  console.log("")
  console.log(memory.join("\n"))
  if (manyTable.length > 0) console.log(`\n${manyTable.join("\n")}`)
  console.log("\n## Targets\n")
  for (const t of own) console.log(`- ${t.target}: **${verdict(t.ok)}** — ${t.figure}`)
  console.log("\n## Issue targets: one lean Effect pipeline (ratios from this run's rows)\n")
  for (const t of issue) console.log(`- ${t.target}: **${t.status}** — ${t.figure}`)
  console.log(`\nbench runtime ${runtimeS.toFixed(1)} s`)

  const { forwarders } = out
  writeResultsFile(ROOT, "bench", {
    date: new Date().toISOString(),
    machine,
    source: out.source,
    options: {
      quick: options.quick,
      rowSeconds: options.rowS,
      warmSeconds: options.warmS,
      streamRequests: options.streamN,
      stallRequests: options.stallN,
      sessions: options.sessions,
      manyStreams: options.manyStreams,
      manyStreamChunks: options.manyChunks,
      manyStreamGapMs: options.manyGapMs
    },
    clkTck: CLK_TCK,
    serverStartupMs: out.serverStartupMs,
    sanity: out.sanity,
    forwarders: {
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
    memory: { mainServer: results.mainStatus, sessions: results.sessions },
    manyStreams: results.many.many,
    manyStreamsFloor: results.many.manyFloor,
    targets: own,
    issueTargets: issue,
    markdown: { table: table.join("\n"), memory: memory.join("\n"), manyStreams: manyTable.join("\n") },
    runtimeS
  })
}
