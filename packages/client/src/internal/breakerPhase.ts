/**
 * The breaker's state machine as pure steps (`Breaker` runs them atomically on a `SynchronizedRef`):
 * which calls are admitted, where an admitted call's outcome takes the breaker, and which shared
 * record replaces the local state. Every phase carries `at`, the time of the transition that made
 * it (-1 for a breaker that never opened, older than any time): replicas order their transitions by it.
 */
import type { BreakerSettings } from "../Target.js"

/** Closed (with its run of consecutive counted failures), open until `until`, or probing. */
export type Phase =
  | { readonly _tag: "Closed"; readonly failures: number; readonly at: number }
  | { readonly _tag: "Open"; readonly at: number; readonly until: number }
  | { readonly _tag: "HalfOpen"; readonly at: number; readonly until: number }

/** A breaker that never opened. */
export const initial: Phase = { _tag: "Closed", failures: 0, at: -1 }

/** One state of a breaker as replicas share it (`Breaker.SharedRecord`): open since, or closed since. */
export type Shared =
  | { readonly state: "open"; readonly opened_at: number; readonly until: number }
  | { readonly state: "closed"; readonly closed_at: number }

/** What a call is allowed: run as an ordinary call, run as the probe of the opening at `at`, or refused. */
export type Admission =
  | { readonly _tag: "Call" }
  | { readonly _tag: "Refuse" }
  | { readonly _tag: "Probe"; readonly at: number }

const call: Admission = { _tag: "Call" }
const refuse: Admission = { _tag: "Refuse" }

/**
 * How an admitted call ended: `lost` is a probe that another replica is making (the shared probe
 * lease was taken), so this one was not made.
 */
export type Outcome = "success" | "failure" | "interrupted" | "lost"

/** Admit a call at `now`: closed lets it through, open refuses until `until`, then lets one probe through. */
export const admit = (phase: Phase, now: number): readonly [Admission, Phase] => {
  switch (phase._tag) {
    case "Closed":
      return [call, phase]
    case "Open":
      return now >= phase.until
        ? [{ _tag: "Probe", at: phase.at }, { _tag: "HalfOpen", at: phase.at, until: phase.until }]
        : [refuse, phase]
    case "HalfOpen":
      return [refuse, phase]
  }
}

/**
 * Where a call admitted as `probe` (or not) and its outcome take the breaker at `now`. A probe
 * decides whatever the phase is by then; an interrupted or lost probe leaves the breaker open (the
 * next call probes; after a lost one, not before `leaseMs`, when the other replica's probe should
 * have decided). An ordinary call's outcome counts only while the breaker is still closed. A new
 * transition is always later than the phase's (by 1 ms at least, should the phase be an adopted
 * record of the same millisecond), so that it is written to the store.
 */
export const settle = (
  phase: Phase,
  probe: boolean,
  outcome: Outcome,
  now: number,
  settings: BreakerSettings,
  leaseMs: number
): Phase => {
  const at = Math.max(now, phase.at + 1)
  if (probe) {
    switch (outcome) {
      case "success":
        return { _tag: "Closed", failures: 0, at }
      case "failure":
        return { _tag: "Open", at, until: at + settings.cooldownMs }
      case "interrupted":
        return phase._tag === "HalfOpen" ? { _tag: "Open", at: phase.at, until: now } : phase
      case "lost":
        return phase._tag === "HalfOpen" ? { _tag: "Open", at: phase.at, until: now + leaseMs } : phase
    }
  }
  if (phase._tag !== "Closed" || outcome === "interrupted" || outcome === "lost") return phase
  if (outcome === "success") return phase.failures === 0 ? phase : { _tag: "Closed", failures: 0, at: phase.at }
  const failures = phase.failures + 1
  return failures >= settings.failureThreshold
    ? { _tag: "Open", at, until: at + settings.cooldownMs }
    : { _tag: "Closed", failures, at: phase.at }
}

/** The time of a shared record's transition. */
export const timeOf = (record: Shared): number => (record.state === "open" ? record.opened_at : record.closed_at)

/** The record of a phase's transition (a probing breaker is still the opening it probes). */
export const recordOf = (phase: Phase): Shared =>
  phase._tag === "Closed"
    ? { state: "closed", closed_at: phase.at }
    : { state: "open", opened_at: phase.at, until: phase.until }

/**
 * `record` when it is newer than the phase's own transition: open with its `until` (a replica's
 * count of failures is its own), or closed with a fresh count. An older or equal record changes
 * nothing.
 */
export const adopt = (phase: Phase, record: Shared): Phase => {
  const at = timeOf(record)
  if (at <= phase.at) return phase
  return record.state === "open"
    ? { _tag: "Open", at, until: record.until }
    : { _tag: "Closed", failures: 0, at }
}
