/**
 * The `SessionStore` service: the stored decision of each (route, session) — the target chosen by
 * the last valid verdict, or an escalation route's streak, latch or strong phase. The in-memory store is bounded: least recently used entries are evicted
 * beyond `maxEntries`, and an entry idle for longer than `ttlMs` is forgotten (by the `Clock`, so
 * tests drive it with `TestClock`).
 */
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type { Tier } from "../routes/capability/ThresholdPolicy.js"
import type { Category } from "../routes/escalation/EscalationJudge.js"

/** What a session remembers on a route. */
export interface SessionDecision {
  /** The target's table name. */
  readonly target: string
  /** The capability tier of `target`; absent for a custom classifier route (its labels are target names). */
  readonly tier?: Tier
  /**
   * Escalation mode: consecutive escalate verdicts so far on an unlatched session (`target` is the
   * weak target); absent once latched (`target` is the strong target).
   */
  readonly streak?: number
  /** Escalation mode, unlatched: the category of the vote that last moved `streak` (absent: none named). */
  readonly category?: Category
  /** Escalation mode, unlatched: weak turns still served unjudged after a forced return (absent: none). */
  readonly cooldown?: number
  /** Escalation mode with de-escalation, strong phase: strong turns so far (`target` is the strong target). */
  readonly strongCalls?: number
  /** Escalation mode with de-escalation, strong phase: consecutive declines on strong turns. */
  readonly releaseStreak?: number
  /** Stored by a verdict that landed after its request's deadline (`late_verdict_ms`); absent otherwise. */
  readonly late?: true
}

/** The session store port. Keys are opaque strings built by the route (route id + session identity). */
export class SessionStore extends Context.Tag("@switchyard-ts/routing/SessionStore")<SessionStore, {
  readonly get: (key: string) => Effect.Effect<Option.Option<SessionDecision>>
  readonly put: (key: string, decision: SessionDecision) => Effect.Effect<void>
  /**
   * Forget the key's entry (nothing when there is none): a route drops its per-session composition
   * state when the session ends (`session_final`). Never fails.
   */
  readonly remove: (key: string) => Effect.Effect<void>
  /** Number of live entries (for tests and the benchmark). */
  readonly size: Effect.Effect<number>
}>() {}

/** Bounds of the in-memory store. */
export interface MemoryOptions {
  /** At most this many sessions are kept (least recently used evicted first). */
  readonly maxEntries: number
  /** A session unused for this long is forgotten. */
  readonly ttlMs: number
}

/** Defaults: 100,000 sessions, one hour idle. */
export const defaults: MemoryOptions = { maxEntries: 100_000, ttlMs: 3_600_000 }

interface Entry {
  readonly decision: SessionDecision
  readonly touchedAt: number
}

/** A bounded in-memory store (a Map in recency order). */
export const makeMemory = (options: MemoryOptions = defaults): SessionStore["Type"] => {
  const entries = new Map<string, Entry>()
  const expired = (entry: Entry, now: number) => now - entry.touchedAt > options.ttlMs
  const evictIdle = (now: number) => {
    // Recency order: the oldest entries come first, so stop at the first live one.
    for (const [key, entry] of entries) {
      if (!expired(entry, now)) break
      entries.delete(key)
    }
  }
  return SessionStore.of({
    get: (key) =>
      Effect.map(Clock.currentTimeMillis, (now) => {
        evictIdle(now)
        const entry = entries.get(key)
        if (entry === undefined) return Option.none()
        entries.delete(key)
        entries.set(key, { decision: entry.decision, touchedAt: now })
        return Option.some(entry.decision)
      }),
    put: (key, decision) =>
      Effect.map(Clock.currentTimeMillis, (now) => {
        evictIdle(now)
        entries.delete(key)
        entries.set(key, { decision, touchedAt: now })
        while (entries.size > options.maxEntries) {
          const oldest = entries.keys().next()
          if (oldest.done === true) break
          entries.delete(oldest.value)
        }
      }),
    remove: (key) =>
      Effect.sync(() => {
        entries.delete(key)
      }),
    size: Effect.map(Clock.currentTimeMillis, (now) => {
      evictIdle(now)
      return entries.size
    })
  })
}

/** The in-memory store with the given bounds. */
export const layerMemory = (options: MemoryOptions = defaults): Layer.Layer<SessionStore> =>
  Layer.sync(SessionStore, () => makeMemory(options))

/** The default store: in memory, with the default bounds. */
export const layer: Layer.Layer<SessionStore> = layerMemory()

/** A small store for tests (100 sessions, one hour idle), fresh per layer build. */
export const layerTest: Layer.Layer<SessionStore> = layerMemory({ maxEntries: 100, ttlMs: 3_600_000 })
