/**
 * What this process has seen of each judge lately, for `GET /v1/judges`: per judge model, when it
 * last answered, its last failure (when and why), and its calls of the last {@link windowMs}
 * (count, failures, latency p50 / p99).
 *
 * The `Judge` records every consultation that made a request (one refused by an open breaker made
 * none and is not a call), when a `JudgeHealth` service is there when the judge layer is built;
 * without one nothing is recorded. Bounded: at most {@link maxCalls} calls kept per model (the
 * oldest dropped first), so the window's figures are over at most that many calls.
 */
import * as Context from "effect/Context"
import * as Layer from "effect/Layer"
import type * as Evidence from "../Evidence.js"

/** The window of the call figures: 5 minutes. */
export const windowMs = 300_000

/** Most calls kept per judge model. */
export const maxCalls = 10_000

/** One call: when it ended, its outcome (`ok` or the failure's reason), its latency. */
export interface Call {
  readonly model: string
  readonly outcome: "ok" | "interrupted" | Evidence.Reason
  readonly latencyMs: number
  readonly endedAtMs: number
}

/** A judge model's health as `/v1/judges` reports it (times as epoch milliseconds). */
export interface Health {
  readonly lastSuccessAtMs: number | undefined
  readonly lastFailure: { readonly atMs: number; readonly reason: string } | undefined
  readonly window: {
    readonly calls: number
    readonly failures: number
    readonly p50_ms: number | null
    readonly p99_ms: number | null
  }
}

/** The recorder: `record` a call, read one model's `health` at `nowMs`. */
export interface Recorder {
  readonly record: (call: Call) => void
  readonly health: (model: string, nowMs: number) => Health
}

interface Seen {
  readonly calls: Array<{ readonly endedAtMs: number; readonly failed: boolean; readonly latencyMs: number }>
  lastSuccessAtMs: number | undefined
  lastFailure: { readonly atMs: number; readonly reason: string } | undefined
}

const rank = (sorted: ReadonlyArray<number>, at: number): number | null =>
  sorted.length === 0 ? null : Math.round(sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * at))] ?? 0)

/** A fresh recorder. An interrupted call (its request gone) is neither a success nor a failure. */
export const make = (): Recorder => {
  const models = new Map<string, Seen>()
  return {
    record: (call) => {
      if (call.outcome === "interrupted") return
      const seen = models.get(call.model) ?? { calls: [], lastSuccessAtMs: undefined, lastFailure: undefined }
      models.set(call.model, seen)
      const failed = call.outcome !== "ok"
      seen.calls.push({ endedAtMs: call.endedAtMs, failed, latencyMs: call.latencyMs })
      if (seen.calls.length > maxCalls) seen.calls.splice(0, seen.calls.length - maxCalls)
      if (failed) seen.lastFailure = { atMs: call.endedAtMs, reason: call.outcome }
      else seen.lastSuccessAtMs = call.endedAtMs
    },
    health: (model, nowMs) => {
      const seen = models.get(model)
      const recent = (seen?.calls ?? []).filter((c) => c.endedAtMs > nowMs - windowMs)
      const latencies = recent.map((c) => c.latencyMs).sort((a, b) => a - b)
      return {
        lastSuccessAtMs: seen?.lastSuccessAtMs,
        lastFailure: seen?.lastFailure,
        window: {
          calls: recent.length,
          failures: recent.filter((c) => c.failed).length,
          p50_ms: rank(latencies, 0.5),
          p99_ms: rank(latencies, 0.99)
        }
      }
    }
  }
}

/** The judge health service (optional to the `Judge`: see the module doc). */
export class JudgeHealth extends Context.Tag("@switchyard-ts/routing/JudgeHealth")<JudgeHealth, Recorder>() {}

/** A fresh recorder as a layer. */
export const layer: Layer.Layer<JudgeHealth> = Layer.sync(JudgeHealth, make)
