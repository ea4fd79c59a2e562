// The machine the bench ran on, what else was running, and the source it measured.
import { execFileSync } from "node:child_process"
import os from "node:os"
import { ROOT } from "./children.js"
import type { BenchOptions } from "./options.js"
import { cpuBusy } from "./proc.js"

export interface Machine {
  readonly cpu: string
  readonly cores: number
  readonly node: string
  readonly os: string
  readonly memGb: number
  readonly loadavgAtStart: ReadonlyArray<number>
  cpuBusyBeforePct?: number
  /** Of `cpuBusyBeforePct`, the share the VM's host stole. */
  cpuStealBeforePct?: number
  loadavgAtEnd?: ReadonlyArray<number>
  duringRun?: {
    readonly benchCpuS: number
    readonly serverCpuS: number
    readonly mockCpuS: number
    readonly floorCpuS: number
    readonly peerCpuS: number
    readonly otherProcessesCpuS: number
    readonly otherProcessesPctOfMachine: number
    /** CPU the VM's host gave to other guests during the run (/proc/stat steal): not in the above. */
    readonly hostStealS: number
    readonly hostStealPctOfMachine: number
  }
}

/** The machine now, and how busy its CPUs were over the last second. */
export const describeMachine = async (): Promise<Machine> => {
  const cpus = os.cpus()
  const machine: Machine = {
    cpu: cpus[0]?.model ?? "unknown",
    cores: cpus.length,
    node: process.version,
    os: `${os.type()} ${os.release()} ${os.arch()}`,
    memGb: Math.round(os.totalmem() / 2 ** 30),
    loadavgAtStart: os.loadavg().map((l) => Number(l.toFixed(2)))
  }
  const before = await cpuBusy(1000)
  machine.cpuBusyBeforePct = before.busyPct
  machine.cpuStealBeforePct = before.stealPct
  return machine
}

/** The commit measured and how many files under packages/ differ from it. */
export const describeSource = () => {
  const git = (...a: Array<string>): string => {
    try {
      return execFileSync("git", a, { cwd: ROOT, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim()
    } catch {
      return "unknown"
    }
  }
  return {
    commit: git("rev-parse", "--short", "HEAD"),
    uncommittedPackageFiles: git("status", "--porcelain", "--", "packages").split("\n").filter(Boolean).length
  }
}

/** The lines a run starts with: the machine, how busy it was, the source, the row timings. */
export const printRunHeader = (
  options: BenchOptions,
  machine: Machine,
  source: ReturnType<typeof describeSource>
): void => {
  console.log(`# switchyard-ts bench${options.quick ? " (--quick)" : ""}`)
  console.log(`machine: ${machine.cpu} x ${machine.cores}, ${machine.memGb} GB, ${machine.os}, node ${machine.node}`)
  console.log(
    `before the run: load average ${
      machine.loadavgAtStart.join(" ")
    }, CPU ${machine.cpuBusyBeforePct}% busy (other processes; of it, stolen by the VM's host: ${machine.cpuStealBeforePct}%)`
  )
  console.log(
    `source: commit ${source.commit}, ${source.uncommittedPackageFiles} uncommitted files under packages/ (the server runs packages/*/dist as last built)`
  )
  if (options.rows.tiny) {
    console.log(
      `rows: ${options.rowS} s each after ${options.warmS} s warm-up; stream rows ${options.streamN} sequential requests; sessions ${options.sessions}`
    )
  }
  if (options.rows.agent) {
    console.log(
      `agent rows: ${
        options.agentSizesKb.join(", ")
      } KB bodies; ${options.agentRowS} s each after ${options.agentWarmS} s warm-up; stream rows ${options.agentStreamN} sequential requests; ${options.agentHeld} requests held in flight for memory`
    )
  }
  console.log("")
}
