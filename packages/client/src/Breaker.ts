/**
 * Circuit breakers, one per LLM client (opt-in with `breaker = { failure_threshold, cooldown_ms }`
 * on `[llm_clients.X]`). The state machine is runtime-neutral: its state lives in a
 * `SynchronizedRef` and its time comes from `Clock`, so a `TestClock` drives the cooldown.
 *
 * - **closed**: calls go through. Each *logical* call (retries included) that ends in a counted
 *   failure ({@link isCountedFailure}: `TransportError`, `DeadlineExceeded`, `UpstreamStatus` 5xx or
 *   429) adds one to a count of consecutive failures; any other outcome (a success, a 4xx, an
 *   undecodable body: the upstream answered) resets it. At `failure_threshold` the breaker opens.
 * - **open**: every call fails at once with `CircuitOpen`, no HTTP request is made, until
 *   `cooldown_ms` has passed since it opened.
 * - **half-open**: the first call after the cooldown is the one probe; calls made while it runs fail
 *   with `CircuitOpen`. A probe that is not a counted failure closes the breaker (count 0); a counted
 *   failure re-opens it for another cooldown; an interrupted probe (caller gone, request deadline)
 *   proves nothing and leaves the breaker open with its cooldown over, so the next call probes.
 *
 * The outcome of a call admitted while closed only counts if the breaker is still closed when it
 * ends: once open, only the probe decides. `state` reports `open` until a probe is let through.
 */
import { CircuitOpen, type ClientFailure } from "@switchyard-ts/protocol/Errors"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as SynchronizedRef from "effect/SynchronizedRef"
import * as ExpectedFailure from "./ExpectedFailure.js"
import * as Metrics from "./Metrics.js"
import type { BreakerSettings, LlmClient } from "./Target.js"

/** The `breaker` table of an LLM client (declared with the client, in `Target`). */
export type Settings = BreakerSettings

/** The reported state (`/health`, the gauge). */
export type State = "closed" | "open" | "half_open"

/** The value of `switchyard_circuit_breaker_state` for a state: 0 closed, 1 open, 2 half-open. */
export const stateValue = (state: State): number => (state === "closed" ? 0 : state === "open" ? 1 : 2)

/** A breaker's client and state. */
export interface Status {
  readonly client: string
  readonly state: State
}

/** The failures a breaker counts: transport, deadline, 5xx and 429 (after retries). */
export const isCountedFailure = (failure: ClientFailure): boolean => {
  switch (failure._tag) {
    case "TransportError":
    case "DeadlineExceeded":
      return true
    case "UpstreamStatus":
      return failure.status === 429 || (failure.status >= 500 && failure.status <= 599)
    case "InvalidResponse":
    case "CircuitOpen":
    case "TranslationError":
      return false
  }
}

/** The breaker of one LLM client. */
export interface Breaker {
  readonly client: string
  readonly settings: Settings
  /** The current state. */
  readonly state: Effect.Effect<State>
  /**
   * Runs `self` under the breaker: refused with `CircuitOpen { target, client }` (without running
   * `self`) while open or while a probe is in flight; otherwise run, and its outcome recorded —
   * `isFailure` says which failures count.
   */
  readonly guard: <A, E, R>(
    self: Effect.Effect<A, E, R>,
    options: { readonly target: string; readonly isFailure: (error: E) => boolean }
  ) => Effect.Effect<A, E | CircuitOpen, R>
}

type Phase =
  | { readonly _tag: "Closed"; readonly failures: number }
  | { readonly _tag: "Open"; readonly until: number }
  | { readonly _tag: "HalfOpen" }

type Permit = "call" | "probe" | "refuse"
type Outcome = "success" | "failure" | "interrupted"

const stateOf = (phase: Phase): State =>
  phase._tag === "Closed" ? "closed" : phase._tag === "Open" ? "open" : "half_open"

const closed: Phase = { _tag: "Closed", failures: 0 }

/** The gauge series of one client. */
const gaugeOf = (client: string) => Metrics.circuitBreakerState.pipe(Metric.tagged("llm_client", client))

/** Where a permit and its outcome take the breaker. */
const settle = (phase: Phase, permit: Permit, outcome: Outcome, now: number, settings: Settings): Phase => {
  if (permit === "probe") {
    switch (outcome) {
      case "success":
        return closed
      case "failure":
        return { _tag: "Open", until: now + settings.cooldownMs }
      case "interrupted":
        return { _tag: "Open", until: now }
    }
  }
  if (phase._tag !== "Closed" || outcome === "interrupted") return phase
  if (outcome === "success") return phase.failures === 0 ? phase : closed
  const failures = phase.failures + 1
  return failures >= settings.failureThreshold
    ? { _tag: "Open", until: now + settings.cooldownMs }
    : { _tag: "Closed", failures }
}

/** A closed breaker for `client`; its gauge series is set to 0 at once. */
export const make = (client: string, settings: Settings): Effect.Effect<Breaker> =>
  Effect.gen(function*() {
    const gauge = gaugeOf(client)
    const ref = yield* SynchronizedRef.make<Phase>(closed)
    yield* Metric.set(gauge, stateValue("closed"))

    /** Apply `step` atomically at the current time, publishing the new state when it changed. */
    const transition = <B>(step: (phase: Phase, now: number) => readonly [B, Phase]): Effect.Effect<B> =>
      SynchronizedRef.modifyEffect(ref, (phase) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) => {
          const [result, next] = step(phase, now)
          return stateOf(next) === stateOf(phase)
            ? Effect.succeed([result, next] as const)
            : Effect.as(Metric.set(gauge, stateValue(stateOf(next))), [result, next] as const)
        }))

    const acquire = transition((phase, now): readonly [Permit, Phase] => {
      switch (phase._tag) {
        case "Closed":
          return ["call", phase]
        case "Open":
          return now >= phase.until ? ["probe", { _tag: "HalfOpen" }] : ["refuse", phase]
        case "HalfOpen":
          return ["refuse", phase]
      }
    })

    const release = (permit: Permit, outcome: Outcome) =>
      transition((phase, now): readonly [void, Phase] => [undefined, settle(phase, permit, outcome, now, settings)])

    const guard = <A, E, R>(
      self: Effect.Effect<A, E, R>,
      options: { readonly target: string; readonly isFailure: (error: E) => boolean }
    ): Effect.Effect<A, E | CircuitOpen, R> =>
      Effect.uninterruptibleMask((restore) =>
        Effect.flatMap(acquire, (permit): Effect.Effect<A, E | CircuitOpen, R> =>
          permit === "refuse"
            ? Effect.fail(ExpectedFailure.make(() => new CircuitOpen({ target: options.target, client })))
            : restore(self).pipe(
              Effect.onExit((exit) => {
                if (Exit.isSuccess(exit)) return release(permit, "success")
                // A defect or an interruption says nothing about the upstream's health.
                return Option.match(Cause.failureOption(exit.cause), {
                  onNone: () => release(permit, "interrupted"),
                  onSome: (error) => release(permit, options.isFailure(error) ? "failure" : "success")
                })
              })
            ))
      )

    return {
      client,
      settings,
      state: Effect.map(SynchronizedRef.get(ref), stateOf),
      guard
    }
  })

/** The breakers of one upstream client service, keyed by LLM client name. */
export interface Registry {
  /**
   * The breaker of `client`, created on first use from its `breaker` settings; `None` when the
   * client has none. Clients are identified by name: the settings last registered for a name (else
   * the first seen) win.
   */
  readonly forClient: (client: LlmClient) => Effect.Effect<Option.Option<Breaker>>
  /**
   * Make `client`'s `breaker` settings the ones of its name (a deployment's clients, at start and
   * at each reload): a breaker with the same settings is kept with its state, one with other
   * settings is replaced by a new, closed breaker, and a client without a `breaker` table has none.
   */
  readonly register: (client: LlmClient) => Effect.Effect<void>
  /** Every breaker created so far, sorted by client name. */
  readonly statuses: Effect.Effect<ReadonlyArray<Status>>
}

/** An empty registry. */
export const makeRegistry: Effect.Effect<Registry> = Effect.gen(function*() {
  const breakers = yield* SynchronizedRef.make<ReadonlyMap<string, Breaker>>(new Map())

  const forClient = (client: LlmClient): Effect.Effect<Option.Option<Breaker>> => {
    const settings = client.breaker ?? Option.none()
    if (Option.isNone(settings)) return Effect.succeedNone
    const known = Effect.map(SynchronizedRef.get(breakers), (all) => Option.fromNullable(all.get(client.name)))
    const create = SynchronizedRef.modifyEffect(breakers, (all) => {
      const existing = all.get(client.name)
      if (existing !== undefined) return Effect.succeed([Option.some(existing), all] as const)
      return Effect.map(
        make(client.name, settings.value),
        (created) => [Option.some(created), new Map([...all, [client.name, created]])] as const
      )
    })
    return Effect.flatMap(known, (breaker) => (Option.isSome(breaker) ? Effect.succeed(breaker) : create))
  }

  const register = (client: LlmClient): Effect.Effect<void> =>
    SynchronizedRef.updateEffect(breakers, (all) => {
      const settings = client.breaker ?? Option.none()
      const existing = all.get(client.name)
      if (Option.isNone(settings)) {
        if (existing === undefined) return Effect.succeed(all)
        const rest = new Map(all)
        rest.delete(client.name)
        return Effect.succeed(rest)
      }
      const same = existing !== undefined &&
        existing.settings.failureThreshold === settings.value.failureThreshold &&
        existing.settings.cooldownMs === settings.value.cooldownMs
      if (same) return Effect.succeed(all)
      return Effect.map(make(client.name, settings.value), (created) => new Map([...all, [client.name, created]]))
    })

  const statuses = Effect.flatMap(SynchronizedRef.get(breakers), (all) =>
    Effect.forEach(
      [...all.values()].sort((a, b) => (a.client < b.client ? -1 : a.client > b.client ? 1 : 0)),
      (breaker) => Effect.map(breaker.state, (state): Status => ({ client: breaker.client, state }))
    ))

  return { forClient, register, statuses }
})
