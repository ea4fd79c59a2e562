// The soak's command line (see soak.ts), checked (exit 2 on a bad value), and the names and bounds
// every part of the soak shares.
import { existsSync } from "node:fs"
import path from "node:path"
import { parseArgs } from "node:util"
import { MODES } from "./upstreams.js"

export const HOST = "127.0.0.1"
/** The judge model of the fail_open route and of the error route (a counter series each). */
export const JUDGE_FO = "soak-judge-fo"
export const JUDGE_ERR = "soak-judge-err"
export const WEAK = "soak-weak"
export const STRONG = "soak-strong"
/** The two routes, one per posture. */
export type Route = "soak-fo" | "soak-err"
/** How long one request to the server may take before it counts as unanswered. */
export const REQUEST_TIMEOUT_MS = 30_000
/** The most turns a session runs before a new one starts (drawn per session). */
export const SESSION_TURNS_MAX = 8
/** RSS levels are medians of the samples in a window this long, seconds. */
export const RSS_WINDOW_S = 10

export interface SoakOptions {
  readonly minutes: number
  readonly concurrency: number
  readonly phaseS: number
  readonly answerFaultRate: number
  readonly judgeTimeoutMs: number
  readonly durationMs: number
  /** One full cycle of the fault schedule (every code path has run), at most half the run. */
  readonly warmupMs: number
  readonly routingLog: string | undefined
  readonly writeConfig: string | undefined
}

/** Parses and checks the flags; exits 2 with one line on a bad value. */
export const parseSoakOptions = (argv: ReadonlyArray<string>): SoakOptions => {
  const { values: args } = parseArgs({
    args: [...argv],
    options: {
      minutes: { type: "string", default: "2" },
      concurrency: { type: "string", default: "16" },
      "phase-seconds": { type: "string", default: "10" },
      "answer-fault-rate": { type: "string", default: "0.1" },
      "judge-timeout-ms": { type: "string", default: "500" },
      "routing-log-file": { type: "string" },
      "write-config": { type: "string" }
    },
    strict: true
  })
  const number = (
    name: "minutes" | "concurrency" | "phase-seconds" | "answer-fault-rate" | "judge-timeout-ms",
    min: number,
    max: number
  ): number => {
    const value = Number(args[name])
    if (!Number.isFinite(value) || value < min || value > max) {
      console.error(`--${name} must be a number in [${min}, ${max}], got ${args[name]}`)
      process.exit(2)
    }
    return value
  }
  const minutes = number("minutes", 0.05, 24 * 60)
  const concurrency = Math.round(number("concurrency", 1, 256))
  const phaseS = number("phase-seconds", 1, 3600)
  const answerFaultRate = number("answer-fault-rate", 0, 0.9)
  const judgeTimeoutMs = Math.round(number("judge-timeout-ms", 50, 60_000))
  const durationMs = minutes * 60_000
  const routingLog = args["routing-log-file"] === undefined ? undefined : path.resolve(args["routing-log-file"])
  const writeConfig = args["write-config"] === undefined ? undefined : path.resolve(args["write-config"])
  if (routingLog !== undefined && existsSync(routingLog)) {
    console.error(
      `--routing-log-file ${routingLog} exists: give a new path (the server appends; the log must hold this run only)`
    )
    process.exit(2)
  }
  return {
    minutes,
    concurrency,
    phaseS,
    answerFaultRate,
    judgeTimeoutMs,
    durationMs,
    warmupMs: Math.min(MODES.length * phaseS * 1000, durationMs / 2),
    routingLog,
    writeConfig
  }
}
