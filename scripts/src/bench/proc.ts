// What /proc says about the machine and about one process: CPU jiffies and busy share, a
// process's CPU seconds (utime + stime), its VmRSS and VmHWM.
import { execFileSync } from "node:child_process"
import { readFileSync } from "node:fs"
import { sleep } from "../lib/processes.js"

/** The first line of /proc/stat: the machine's CPU jiffies by state (user, nice, system, idle, iowait, …). */
const procStatCpu = (): Array<number> =>
  (readFileSync("/proc/stat", "utf8").split("\n")[0] ?? "").trim().split(/\s+/).slice(1).map(Number)

/**
 * Share of all cores busy over `ms` (from /proc/stat), and the share the VM's host stole (counted
 * in busy): other work on the machine, or on its host, skews every row.
 */
export const cpuBusy = async (ms: number): Promise<{ readonly busyPct: number; readonly stealPct: number }> => {
  const a = machineJiffies()
  await sleep(ms)
  const b = machineJiffies()
  const total = Math.max(1, b.total - a.total)
  return {
    busyPct: Math.round((100 * (b.busy - a.busy)) / total),
    stealPct: Math.round((100 * (b.steal - a.steal)) / total)
  }
}

/**
 * Whole-machine CPU jiffies from /proc/stat: busy (everything but idle and iowait), of which
 * `steal` is time the hypervisor gave to other guests (a VM's host busy elsewhere: every row runs
 * slower although no process here used the CPU), and the total.
 */
export const machineJiffies = (): { readonly busy: number; readonly steal: number; readonly total: number } => {
  try {
    const f = procStatCpu()
    const total = f.reduce((a, b) => a + b, 0)
    return { busy: total - (f[3] ?? NaN) - (f[4] ?? 0), steal: f[7] ?? 0, total }
  } catch {
    return { busy: NaN, steal: NaN, total: NaN }
  }
}

/** Clock ticks per second of /proc/<pid>/stat's utime and stime (`getconf CLK_TCK`, normally 100). */
export const CLK_TCK = ((): number => {
  try {
    const n = Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }))
    return n > 0 ? n : 100
  } catch {
    return 100
  }
})()

/** CPU seconds (utime + stime) a live process has used so far, or NaN when it cannot be read. */
export const cpuS = (pid: number): number => {
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
export const procCpuS = (pid: number): number => {
  const s = cpuS(pid)
  return Number.isNaN(s) ? 0 : s
}

/** A process's resident set now and at its peak, MB. */
export interface ProcStatus {
  readonly rssMb: number
  readonly hwmMb: number
}

/** VmRSS and VmHWM of a live process (from /proc/<pid>/status). */
export const procStatus = (pid: number): ProcStatus => {
  const text = readFileSync(`/proc/${pid}/status`, "utf8")
  const kb = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, "m").exec(text)?.[1] ?? NaN)
  return { rssMb: kb("VmRSS") / 1024, hwmMb: kb("VmHWM") / 1024 }
}

/**
 * CPU seconds the bench's own children used, read just before each is stopped: the rest of the
 * machine's busy time during the run is the contention the report states.
 */
export interface OwnCpu {
  servers: number
  mock: number
  floor: number
  peer: number
}

/** An empty ledger. */
export const ownCpu = (): OwnCpu => ({ servers: 0, mock: 0, floor: 0, peer: 0 })
