// What every bench row gets: the options, the processes it measures, and `log`, which prints a row
// as it is measured and keeps it for the report.
import type { Forked, Server } from "./children.js"
import type { LoadRow, StreamRow } from "./measure.js"
import type { BenchOptions } from "./options.js"
import type { Peer } from "./peer.js"
import type { OwnCpu } from "./proc.js"
import type { InflightRow } from "./rows/agentMemory.js"
import type { HedgeRow } from "./rows/hedge.js"
import type { ManyStreamsRow } from "./rows/manyStreams.js"
import type { SessionsRow } from "./rows/sessions.js"
import type { StallRow } from "./rows/stall.js"

/** Any row of the report. */
export type Row = LoadRow | StreamRow | StallRow | SessionsRow | ManyStreamsRow | InflightRow | HedgeRow

/** The run's processes and settings, as the rows see them. */
export interface BenchContext {
  readonly options: BenchOptions
  readonly server: Server
  readonly mock: Forked
  readonly floor: Forked
  /** The peer gateway, unless its rows are skipped. */
  readonly peer: Peer | undefined
  /** What the peer gateway needs to reach the mock: provider `openai` at a custom host. */
  readonly peerHeaders: Readonly<Record<string, string>>
  /** CPU seconds of the bench's children, read before each is stopped. */
  readonly cpu: OwnCpu
  /** Prints `row` and keeps it for the report. */
  readonly log: <R extends Row>(row: R) => R
}

/** The run's server, mock and ledger, before a group of rows starts a floor and a peer gateway of its own. */
export type RunContext = Omit<BenchContext, "floor" | "peer" | "peerHeaders">

/** The one-line summary printed as each row finishes. */
export const rowLine = (row: Row): string => {
  switch (row.kind) {
    case "load":
      return `  ${row.name}: ${row.rps.toFixed(0)} req/s, mean ${row.mean.toFixed(3)} ms, p99 ${
        row.p99.toFixed(3)
      } ms, errors ${row.errors}, non-2xx ${row.non2xx}`
    case "stream":
      return `  ${row.name}: first chunk p50 ${row.first.p50.toFixed(3)} ms, last chunk p50 ${
        row.last.p50.toFixed(3)
      } ms, errors ${row.errors}`
    case "hedge":
      return `  ${row.name}: alone mean ${row.slow.mean.toFixed(1)} p99 ${row.slow.p99.toFixed(1)} ms, hedged mean ${
        row.hedged.mean.toFixed(1)
      } p99 ${row.hedged.p99.toFixed(1)} ms, ${
        row.hedgesPerRequest.toFixed(2)
      } added judge calls/request, errors ${row.errors}`
    case "stall":
      return `  ${row.name}: ${
        row.runs.map((r) => `${r.status} ${r.ms.toFixed(1)} ms ${r.source}/${r.reason}`).join(", ")
      }`
    case "many-streams":
      return `  ${row.name}: ${row.completed}/${row.streams} complete${
        row.errorSamples.length > 0 ? ` (errors: ${row.errorSamples.join("; ")})` : ""
      }, ${row.chunksRelayed} chunks in ${row.windowS.toFixed(1)} s, server ${
        row.cpuUsPerChunk.toFixed(1)
      } µs CPU/chunk, /health p50 ${row.health.p50.toFixed(2)} p99 ${
        row.health.p99.toFixed(2)
      } ms (${row.health.n} samples), VmRSS ${row.rssBeforeMb.toFixed(1)} → ${row.rssPeakMb.toFixed(1)} MB`
    case "inflight":
      return `  ${row.name}: VmRSS ${row.rssBeforeMb.toFixed(1)} MB before, VmHWM ${
        row.hwmMb.toFixed(1)
      } MB with ${row.reached}/${row.held} held${row.hwmReset ? "" : " (peak not reset)"}: ${
        row.perRequestKb.toFixed(0)
      } KB per request, errors ${row.errors}`
    case "sessions":
      return `  ${row.name}: ${row.rps.toFixed(0)} req/s, heapUsed ${
        row.points.map((p) => `${p.sessions}:${p.heapUsedMb.toFixed(1)}`).join(" ")
      } MB`
  }
}
