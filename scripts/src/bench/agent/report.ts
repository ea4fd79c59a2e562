/**
 * The agent rows' part of the report: their table, the in-flight memory table, and the 256 KB
 * targets computed from the same run's rows (ours against the floor and the peer gateway of the
 * same path; the translated paths and the memory reported beside them).
 */
import { type LoadRow, roundsNote, type StreamRow } from "../measure.js"
import type { PathRows, Trio } from "../rows/agent.js"
import { AGENT_PATHS } from "./paths.js"
import type { AgentResults } from "./stage.js"

/** A target's state: measured and met or missed, not measured (a row is missing), or a figure only. */
export type AgentTargetStatus = "met" | "missed" | "not measured" | "reported"

export interface AgentTarget {
  readonly target: string
  readonly status: AgentTargetStatus
  readonly figure: string
}

const f = (v: number | undefined, d = 2) => (v === undefined || Number.isNaN(v) ? "–" : v.toFixed(d))
const signed = (v: number | undefined, d = 2) =>
  v === undefined || Number.isNaN(v) ? "–" : `${v >= 0 ? "+" : ""}${v.toFixed(d)}`
const ratio = (a: number | undefined, b: number | undefined) =>
  a === undefined || b === undefined || !Number.isFinite(a / b) ? NaN : a / b
/** A load row's req/s, NaN when it completed nothing in its window (nothing measured, not zero). */
const rps = (row: LoadRow | undefined) => (row === undefined || row.count === 0 ? NaN : row.rps)

/** The agent rows table, size by size. */
export const agentTable = (r: AgentResults): Array<string> => {
  const table = [
    "| agent row | req/s | mean ms | p50 ms | p99 ms | added ms | CPU µs/req | errors / non-2xx |",
    "|---|---:|---:|---:|---:|---:|---:|---:|"
  ]
  const load = (row: LoadRow) =>
    table.push(
      `| ${row.name} | ${f(row.rps, 0)} | ${f(row.mean)} | ${f(row.p50)} | ${f(row.p99)} | ${
        row.added === undefined ? "" : `${signed(row.added)}${row.addedVs === undefined ? "" : ` vs ${row.addedVs}`}`
      } | ${f(row.cpuUsPerReq, 0)} | ${row.errors} / ${row.non2xx} |`
    )
  const stream = (row: StreamRow) =>
    table.push(
      `| ${row.name}: first chunk (${row.count} sequential) | – | ${f(row.first.mean)} | ${f(row.first.p50)} | ${
        f(row.first.p99)
      } | ${
        row.addedFirst === undefined
          ? ""
          : `${signed(row.addedFirst)} (p50)${row.addedVs === undefined ? "" : ` vs ${row.addedVs}`}`
      } | ${f(row.cpuUsPerReq, 0)} | ${row.errors} |`
    )
  const trio = (t: Trio) => {
    load(t.c1)
    load(t.c32)
    stream(t.stream)
  }
  for (const size of r.sizes) {
    trio(size.direct.chat)
    trio(size.direct.messages)
    for (const path of size.paths) {
      trio(path.ours)
      if (path.floor) trio(path.floor)
      if (path.peer) trio(path.peer)
      else {
        const label = AGENT_PATHS.find((p) => p.key === path.path)?.label ?? path.path
        table.push(
          `| agent ${size.kb} KB, peer gateway, ${label} | no rows: ${
            path.peerSkipped ?? r.peerSkipped ?? ""
          } | | | | | | |`
        )
      }
    }
    trio(size.judge.pass)
    trio(size.judge.cap)
    load(size.judge.affinity)
  }
  return table
}

/** The in-flight memory table. */
export const agentMemoryTable = (r: AgentResults): Array<string> =>
  r.memory.length === 0 ? [] : [
    "| in-flight memory | VmRSS before → VmHWM while held | per in-flight request |",
    "|---|---:|---:|",
    ...r.memory.map((m) =>
      `| ${m.name}${m.hwmReset ? "" : " (peak not reset: VmHWM since start)"}${
        m.reached < m.held ? ` (only ${m.reached} held)` : ""
      }${m.errors > 0 ? ` (${m.errors} errors)` : ""} | ${f(m.rssBeforeMb, 1)} → ${f(m.hwmMb, 1)} MB | ${
        f(m.perRequestKb, 0)
      } KB |`
    )
  ]

type Check = boolean | undefined

const status = (checks: ReadonlyArray<Check>): AgentTargetStatus =>
  checks.some((c) => c === false) ? "missed" : checks.some((c) => c === undefined) ? "not measured" : "met"

/** `ok`, or `undefined` (not measured) when a figure it compares is missing (a row without answers). */
const check = (ok: boolean, ...figures: ReadonlyArray<number | undefined>): Check =>
  figures.every((v) => v !== undefined && Number.isFinite(v)) ? ok : undefined

const clean = (row: LoadRow) => row.errors === 0 && row.non2xx === 0

/** The four targets of a path the floor carries: throughput, CPU, c=1 latency, first chunk. */
const floorTargets = (path: PathRows, label: string, peerNote: string): Array<AgentTarget> => {
  const { floor, ours, peer } = path
  if (floor === undefined) return []
  const vsFloor = ratio(rps(ours.c32), rps(floor.c32))
  const vsPeer = ratio(rps(ours.c32), rps(peer?.c32))
  return [
    {
      target: `256 KB ${label}, c=32: ≥ 1.0× the floor's req/s and ≥ 3× the peer's, no errors`,
      status: status([check(vsFloor >= 1, vsFloor), peer ? check(vsPeer >= 3, vsPeer) : undefined, clean(ours.c32)]),
      figure: `${f(ours.c32.rps, 0)} req/s = ${f(vsFloor)}× floor (${f(floor.c32.rps, 0)}) and ${f(vsPeer)}× peer (${
        f(peer?.c32.rps, 0)
      })${peer ? "" : peerNote}; ${ours.c32.errors} errors, ${ours.c32.non2xx} non-2xx`
    },
    {
      target: `256 KB ${label}, c=32: CPU per request ≤ the floor's`,
      status: status([
        check(ours.c32.cpuUsPerReq <= floor.c32.cpuUsPerReq, ours.c32.cpuUsPerReq, floor.c32.cpuUsPerReq)
      ]),
      figure: `${f(ours.c32.cpuUsPerReq, 0)} µs (floor ${f(floor.c32.cpuUsPerReq, 0)}, peer ${
        f(peer?.c32.cpuUsPerReq, 0)
      })`
    },
    {
      target: `256 KB ${label}, c=1: added mean ≤ the floor's`,
      status: status([check((ours.c1.added ?? NaN) <= (floor.c1.added ?? NaN), ours.c1.added, floor.c1.added)]),
      figure: `${signed(ours.c1.added, 3)} ms (floor ${signed(floor.c1.added, 3)}, peer ${signed(peer?.c1.added, 3)})`
    },
    {
      target: `256 KB ${label}, streamed: first chunk added p50 ≤ the floor's + 0.5 ms`,
      status: status([
        check(
          (ours.stream.addedFirst ?? NaN) <= (floor.stream.addedFirst ?? NaN) + 0.5,
          ours.stream.addedFirst,
          floor.stream.addedFirst
        ),
        ours.stream.errors === 0
      ]),
      figure: `${signed(ours.stream.addedFirst, 3)} ms (floor ${signed(floor.stream.addedFirst, 3)}, peer ${
        signed(peer?.stream.addedFirst, 3)
      })`
    }
  ]
}

/** The issue's 256 KB targets from this run's agent rows. */
export const agentTargets = (r: AgentResults): Array<AgentTarget> => {
  const size = r.sizes.find((s) => s.kb === 256)
  if (size === undefined) {
    return [{ target: "256 KB agent targets", status: "not measured", figure: "no 256 KB rows (--agent-sizes)" }]
  }
  const out: Array<AgentTarget> = []
  const peerNote = r.peerSkipped === undefined ? "" : ` (peer: ${r.peerSkipped})`
  const chatFloor = size.paths.find((p) => p.path === "chat")?.floor
  for (const path of size.paths) {
    const label = AGENT_PATHS.find((p) => p.key === path.path)?.label ?? path.path
    if (path.floor) out.push(...floorTargets(path, label, path.peerSkipped ? ` (peer: ${path.peerSkipped})` : peerNote))
    else {
      const { ours } = path
      out.push({
        target: `256 KB ${label}, beside the passthrough rows (against the chat floor)`,
        status: "reported",
        figure: `c=32 ${f(ours.c32.rps, 0)} req/s = ${f(ratio(rps(ours.c32), rps(chatFloor?.c32)))}× the chat floor, ${
          f(ours.c32.cpuUsPerReq, 0)
        } µs CPU/request; c=1 added ${signed(ours.c1.added, 3)} ms; first chunk added ${
          signed(ours.stream.addedFirst, 3)
        } ms; ${ours.c32.errors + ours.c1.errors} errors`
      })
    }
  }
  const { cap } = size.judge
  out.push({
    target:
      "256 KB user turn, capability user_turn with a live judge: ≤ +1 ms over passthrough on the same body (c=1 mean)",
    status: status([check((cap.c1.added ?? NaN) <= 1, cap.c1.added), clean(cap.c1)]),
    figure: `${signed(cap.c1.added, 3)} ms (${roundsNote(cap.c1, 3)}; means ${f(cap.c1.mean, 3)} vs ${
      f(size.judge.pass.c1.mean, 3)
    } ms); c=32 ${f(cap.c32.rps, 0)} vs ${f(size.judge.pass.c32.rps, 0)} req/s; first chunk ${
      signed(cap.stream.addedFirst, 3)
    } ms`
  })
  const memory = r.memory.filter((m) => m.process === "server")
  out.push({
    target: "peak RSS with 32 agent-sized requests in flight",
    status: memory.length > 0 ? "reported" : "not measured",
    figure: memory.length > 0
      ? [...memory, ...r.memory.filter((m) => m.process === "floor")].map((m) =>
        `${m.process} ${m.path} ${f(m.perRequestKb, 0)} KB/request (${f(m.hwmMb - m.rssBeforeMb, 1)} MB)`
      ).join("; ")
      : "no memory rows"
  })
  return out
}

/** The lines the report prints for the agent rows. */
export const printAgentReport = (
  r: AgentResults,
  { memory, table, targets }: {
    readonly table: ReadonlyArray<string>
    readonly memory: ReadonlyArray<string>
    readonly targets: ReadonlyArray<AgentTarget>
  }
): void => {
  console.log(`\n## Agent-sized rows\n\n${table.join("\n")}`)
  if (memory.length > 0) console.log(`\n${memory.join("\n")}`)
  console.log("\n## Agent-sized targets (256 KB; ratios from this run's rows)\n")
  for (const t of targets) console.log(`- ${t.target}: **${t.status}** — ${t.figure}`)
  console.log(`\nagent rows took ${r.runtimeS.toFixed(1)} s`)
}
