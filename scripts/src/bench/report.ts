// The bench's report: the Markdown tables (rows, memory, many streams), the targets it is held to
// and the issue targets (ratios from this run's rows), printed and written to
// bench-results/bench-<timestamp>.json with everything measured.
import { type LoadRow, roundsNote, type StreamRow } from "./measure.js"
import type { BenchOptions } from "./options.js"
import { STALL_TIMEOUT_MS } from "./options.js"
import type { ProcStatus } from "./proc.js"
import type { BufferedRows } from "./rows/buffered.js"
import type { HedgeRow } from "./rows/hedge.js"
import type { JudgeRows } from "./rows/judge.js"
import type { ManyStreamsRows } from "./rows/manyStreams.js"
import type { SessionsRow } from "./rows/sessions.js"
import type { StallRow } from "./rows/stall.js"
import type { StreamingRows } from "./rows/streaming.js"

/** Every row of a run, as the report reads them. */
export interface Results {
  readonly buffered: BufferedRows
  readonly streaming: StreamingRows
  readonly judge: JudgeRows
  readonly stall: StallRow
  readonly hedge: HedgeRow
  readonly many: ManyStreamsRows
  readonly sessions: SessionsRow | null
  readonly mainStatus: ProcStatus
  /** Why the peer gateway rows were skipped, if they were. */
  readonly peerSkipped: string | undefined
}

export interface Target {
  readonly target: string
  readonly ok: boolean
  readonly figure: string
}

type Status = "met" | "missed" | "not measured"

export interface IssueTarget {
  readonly target: string
  readonly status: Status
  readonly figure: string
}

const f = (v: number | undefined, d = 2) => (v === undefined || Number.isNaN(v) ? "–" : v.toFixed(d))
const signed = (
  v: number | undefined,
  d = 2
) => (v === undefined || Number.isNaN(v) ? "–" : `${v >= 0 ? "+" : ""}${v.toFixed(d)}`)

/** The rows table: load, stream, judge and stall rows, and the session fill. */
export const rowsTable = (r: Results): Array<string> => {
  const { d1, d32, f1, f32, m1, p1, p32, peer1, peer32 } = r.buffered
  const { ds, fs, peerS, ps } = r.streaming
  const { cap, cap8, chain, chain8, dead, dead8, pair } = r.judge
  const { hedge, sessions, stall } = r
  const table = [
    "| row | req/s | mean ms | p50 ms | p99 ms | added ms vs direct | CPU µs/req | errors / non-2xx |",
    "|---|---:|---:|---:|---:|---:|---:|---:|"
  ]
  const loadLine = (row: LoadRow, added = "") =>
    table.push(
      `| ${row.name} | ${f(row.rps, 0)} | ${f(row.mean)} | ${f(row.p50)} | ${f(row.p99)} | ${added} | ${
        f(row.cpuUsPerReq, 0)
      } | ${row.errors} / ${row.non2xx} |`
    )
  const skippedLine = (what: string) => table.push(`| ${what} | skipped: ${r.peerSkipped ?? ""} | | | | | | |`)
  const streamLine = (row: StreamRow, which: "first" | "last", label: string) => {
    const st = which === "first" ? row.first : row.last
    const added = which === "first" ? row.addedFirst : row.addedLast
    table.push(
      `| ${label} | – | ${f(st.mean)} | ${f(st.p50)} | ${f(st.p99)} | ${
        added === undefined ? "" : `${signed(added)} (p50)`
      } | ${which === "first" ? f(row.cpuUsPerReq, 0) : ""} | ${row.errors} |`
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
  loadLine(cap8)
  loadLine(dead8, `${signed(dead8.added)} vs live judge, c=8`)
  loadLine(chain, `${signed(chain.added)} vs live judge (paired)`)
  loadLine(chain8, `${signed(chain8.added)} vs live judge, c=8 (paired)`)
  table.push(
    `| ${hedge.name}, ${hedge.count} sequential each | – | ${f(hedge.hedged.mean, 1)} hedged / ${
      f(hedge.slow.mean, 1)
    } alone | | ${f(hedge.hedged.p99, 1)} hedged / ${f(hedge.slow.p99, 1)} alone | ${
      signed(hedge.hedged.p99 - hedge.slow.p99, 1)
    } p99 for ${f(hedge.hedgesPerRequest)} added judge calls/request | | ${hedge.errors} |`
  )
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
  return table
}

/** The memory table: the main server's peak, the session server's RSS, heap and slope. */
export const memoryTable = (r: Results): Array<string> => {
  const { sessions } = r
  const memory = [
    "| memory | value |",
    "|---|---:|",
    `| main server peak RSS (VmHWM, after all rows above) | ${f(r.mainStatus.hwmMb, 1)} MB |`
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
  return memory
}

/** The many-streams table (empty when the row was skipped). */
export const manyStreamsTable = ({ many: { many, manyFloor } }: Results): Array<string> =>
  many
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
      `| /health by phase, p99 / max (samples): streams opening / steady / closing | ${
        (["opening", "steady", "closing"] as const).map((phase) => {
          const h = many.healthPhases[phase]
          return `${f(h.p99)} / ${f(h.max)} (${h.n})`
        }).join(" · ")
      } ms |`,
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

/** The issue "one lean Effect pipeline": each target from this run's rows, as ratios where it says so. */
export const issueTargets = (r: Results): Array<IssueTarget> => {
  const { f1, f32, m1, p1, p32, peer1, peer32 } = r.buffered
  const { fs, peerS, ps } = r.streaming
  const { many, manyFloor } = r.many
  const out: Array<IssueTarget> = []
  const judge = (target: string, checks: ReadonlyArray<boolean | undefined>, figure: string) => {
    const status: Status = checks.some((c) => c === false)
      ? "missed"
      : checks.some((c) => c === undefined)
      ? "not measured"
      : "met"
    out.push({ target, status, figure })
  }
  const ratio = (a: number | undefined, b: number | undefined) =>
    a === undefined || b === undefined || !Number.isFinite(a / b) ? NaN : a / b
  const noPeer = r.peerSkipped !== undefined ? ` (peer: ${r.peerSkipped})` : ""
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
  const { cap8, dead, dead8 } = r.judge
  judge(
    "a dead judge (closed port, no breaker) under fail_open: ≤ live + 0.5 ms at c=1 and c=8",
    [
      (dead.added ?? NaN) <= 0.5 && dead.errors === 0 && dead.non2xx === 0,
      (dead8.added ?? NaN) <= 0.5 && dead8.errors === 0 && dead8.non2xx === 0
    ],
    `c=1 ${signed(dead.added, 3)} ms (${roundsNote(dead, 3)}); c=8 ${signed(dead8.added, 3)} ms (${
      roundsNote(dead8, 3)
    }; mean ${f(dead8.mean, 3)} vs ${f(cap8.mean, 3)} ms; ${f(dead8.rps, 0)} vs ${f(cap8.rps, 0)} req/s)`
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
  return out
}

/** The bench's own targets. */
export const targets = (r: Results, options: BenchOptions): Array<Target> => {
  const { p1, p32 } = r.buffered
  const { ps } = r.streaming
  const { cap, dead } = r.judge
  const { sessions, stall } = r
  const out: Array<Target> = [
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
      ok: stall.count === options.stallN && stall.costMax <= STALL_TIMEOUT_MS + 10,
      figure: `a stalled request costs at most ${f(stall.costMax, 1)} ms (mean ${
        f(stall.costMean, 1)
      } ms) more than a live-judge request made just before it after the same idle, for a ${STALL_TIMEOUT_MS} ms deadline; slowest stalled request ${
        f(stall.max, 1)
      } ms, live-judge c=1 mean ${f(cap.mean, 2)} ms; ${stall.errors} errors`
    }
  ]
  if (sessions) {
    out.push({
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
  return out
}
