// The bench's command line (see bench.ts for what each flag does) and the figures derived from it.
import { parseArgs } from "node:util"

/** Where every process of the bench listens. */
export const HOST = "127.0.0.1"
/** The stalled judge's client deadline (timeout_ms) in the bench deployment. */
export const STALL_TIMEOUT_MS = 1000

/** Which groups of rows a run measures: the one-line-body rows, the agent-sized rows, or both. */
export interface RowGroups {
  readonly tiny: boolean
  readonly agent: boolean
}

/** What one run measures, and how long. */
export interface BenchOptions {
  readonly quick: boolean
  /** `--rows`: the groups of rows measured. */
  readonly rows: RowGroups
  /** Seconds per autocannon row. */
  readonly rowS: number
  /** Warm-up before each row (not measured), seconds. */
  readonly warmS: number
  /** Sequential streamed requests per stream row. */
  readonly streamN: number
  /** Sequential requests to the stalled-judge route. */
  readonly stallN: number
  /** Distinct sessions of the memory row (0: skipped). */
  readonly sessions: number
  /** Connections of the session row. */
  readonly sessionC: number
  /** Time budget of the session row, seconds (fewer sessions are extrapolated). */
  readonly sessionMaxS: number
  /** JIT warm-up of the server on every route before any row, seconds. */
  readonly globalWarmS: number
  /** Concurrent held streams of the many-streams row (0: skipped). */
  readonly manyStreams: number
  /** Content chunks per held stream. */
  readonly manyChunks: number
  /** Milliseconds between two chunks of a held stream. */
  readonly manyGapMs: number
  /** The mock's model that drips `manyChunks` chunks `manyGapMs` apart. */
  readonly dripModel: string
  /** `--cpu-prof DIR`, when given. */
  readonly cpuProf: string | undefined
  readonly noPeer: boolean
  /** Body sizes of the agent rows, KB (1 KB = 1,024 bytes). */
  readonly agentSizesKb: ReadonlyArray<number>
  /** Seconds per agent load row, and its warm-up. */
  readonly agentRowS: number
  readonly agentWarmS: number
  /** Sequential streamed requests per agent stream row. */
  readonly agentStreamN: number
  /** Requests held in flight by the in-flight memory row. */
  readonly agentHeld: number
}

/** The groups of `--rows all|tiny|agent` (exits on anything else). */
const rowGroups = (value: string): RowGroups => {
  if (value === "all") return { tiny: true, agent: true }
  if (value === "tiny") return { tiny: true, agent: false }
  if (value === "agent") return { tiny: false, agent: true }
  console.error(`--rows must be all, tiny or agent, got ${value}`)
  process.exit(2)
}

/** The sizes of `--agent-sizes 64,256` (exits unless each is a whole number of KB, 1 to 16,000). */
const agentSizes = (value: string): ReadonlyArray<number> => {
  const sizes = value.split(",").map((part) => Number(part.trim()))
  if (sizes.length === 0 || sizes.some((kb) => !Number.isInteger(kb) || kb < 1 || kb > 16_000)) {
    console.error(`--agent-sizes must be KB sizes separated by commas (e.g. 64,256), got ${value}`)
    process.exit(2)
  }
  return sizes
}

/** Parses the bench's flags (exits on an unknown one, as `parseArgs` strict mode does). */
export const parseBenchOptions = (argv: ReadonlyArray<string>): BenchOptions => {
  const { values: args } = parseArgs({
    args: [...argv],
    options: {
      quick: { type: "boolean", default: false },
      sessions: { type: "string" },
      "no-sessions": { type: "boolean", default: false },
      "session-budget": { type: "string" },
      "cpu-prof": { type: "string" },
      "no-peer": { type: "boolean", default: false },
      streams: { type: "string" },
      rows: { type: "string", default: "all" },
      "agent-sizes": { type: "string", default: "64,256" }
    },
    strict: true
  })
  const quick = args.quick
  const manyChunks = quick ? 10 : 20
  const manyGapMs = 250
  return {
    quick,
    rows: rowGroups(args.rows),
    rowS: quick ? 1 : 6,
    warmS: quick ? 0.5 : 1.5,
    streamN: quick ? 50 : 300,
    stallN: quick ? 2 : 5,
    sessions: args["no-sessions"] ? 0 : Number(args.sessions ?? (quick ? 20_000 : 100_000)),
    sessionC: 64,
    sessionMaxS: Number(args["session-budget"] ?? (quick ? 20 : 90)),
    globalWarmS: quick ? 2 : 6,
    manyStreams: Number(args.streams ?? (quick ? 200 : 1000)),
    manyChunks,
    manyGapMs,
    dripModel: `bench-drip-${manyChunks}x${manyGapMs}`,
    cpuProf: args["cpu-prof"],
    noPeer: args["no-peer"],
    agentSizesKb: agentSizes(args["agent-sizes"]),
    agentRowS: quick ? 1 : 3,
    agentWarmS: quick ? 0.5 : 1,
    agentStreamN: quick ? 30 : 100,
    agentHeld: 32
  }
}
