// The bench's command line (see bench.ts for what each flag does) and the figures derived from it.
import { parseArgs } from "node:util"

/** Where every process of the bench listens. */
export const HOST = "127.0.0.1"
/** The stalled judge's client deadline (timeout_ms) in the bench deployment. */
export const STALL_TIMEOUT_MS = 1000

/** What one run measures, and how long. */
export interface BenchOptions {
  readonly quick: boolean
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
      streams: { type: "string" }
    },
    strict: true
  })
  const quick = args.quick
  const manyChunks = quick ? 10 : 20
  const manyGapMs = 250
  return {
    quick,
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
    noPeer: args["no-peer"]
  }
}
