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
 *
 * **Shared by replicas** ({@link makeSharedRegistry}, over a {@link SharedStore}; the server's is
 * Redis). The same state machine decides every call, from this process's state: sharing only
 * changes that state, in the background.
 * - A transition a breaker makes (it opens; a probe closes or re-opens it) is written to the store
 *   at once, in the background, as a {@link SharedRecord}, which the store keeps only if it is newer
 *   than the one it has (replicas order transitions by their time: their clocks are assumed in step).
 * - Every `syncIntervalMs` (default {@link defaultSyncIntervalMs}) the registry reads every client's
 *   record and a breaker adopts one newer than its own last transition: open until the record's
 *   `until` (its count of failures stays its own), or closed. So a breaker that opens on one replica
 *   is open on the others about one interval later, and so is a probe's outcome.
 * - When the cooldown is over, the call that would probe first takes the store's probe lease of that
 *   opening, for the client's `timeout_ms` (else `cooldown_ms`). Only the replica that gets it
 *   probes; on the others that call is refused with `CircuitOpen` and the breaker waits, open, for
 *   the probe's outcome (its next read) or, should none come, for the lease to run out. Taking the
 *   lease is the only store command a call ever waits for (one command, bounded by the store).
 * - A store that cannot be reached is never waited for: a failed read or write is tried again at the
 *   next interval, and while the store is unreachable a probe takes no lease. Each replica's breaker
 *   then works on its own, as without sharing; a transition it made meanwhile is written when the
 *   store answers again.
 */
import { CircuitOpen, type ClientFailure } from "@switchyard-ts/protocol/Errors"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as Ref from "effect/Ref"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as SynchronizedRef from "effect/SynchronizedRef"
import * as ExpectedFailure from "./ExpectedFailure.js"
import * as Phases from "./internal/breakerPhase.js"
import type { Outcome, Phase } from "./internal/breakerPhase.js"
import * as Metrics from "./Metrics.js"
import type { BreakerSettings, LlmClient } from "./Target.js"

/** The `breaker` table of an LLM client (declared with the client, in `Target`). */
export type Settings = BreakerSettings

/** The reported state (`/health`, the gauge). */
export type State = "closed" | "open" | "half_open"

/** The value of `switchyard_circuit_breaker_state` for a state: 0 closed, 1 open, 2 half-open. */
export const stateValue = (state: State): number => (state === "closed" ? 0 : state === "open" ? 1 : 2)

/**
 * A breaker's state as an endpoint reports it: the state, when the breaker opened (epoch ms; `None`
 * while closed, the opening being probed while half-open) and whether its state is `shared` with
 * other replicas right now (a shared store is configured and answered its last command).
 */
export const Snapshot = Schema.Struct({
  state: Schema.Literal("closed", "open", "half_open"),
  opened_at: Schema.OptionFromNullOr(Schema.Number),
  shared: Schema.Boolean
})
export type Snapshot = typeof Snapshot.Type

/** A breaker's client and state. */
export interface Status extends Snapshot {
  readonly client: string
}

/**
 * The breaker state of LLM client `client` among `breakers` (an `UpstreamClient`'s `breakers`, a
 * registry's `statuses`); `None` when that client has no breaker.
 */
export const read = (
  breakers: Effect.Effect<ReadonlyArray<Status>>,
  client: string
): Effect.Effect<Option.Option<Snapshot>> =>
  Effect.map(breakers, (statuses) =>
    Option.map(
      Option.fromNullable(statuses.find((status) => status.client === client)),
      ({ opened_at, shared, state }): Snapshot => ({ state, opened_at, shared })
    ))

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
  /** The current state with its opening time and whether it is shared. */
  readonly snapshot: Effect.Effect<Snapshot>
  /**
   * Runs `self` under the breaker: refused with `CircuitOpen { target, client }` (without running
   * `self`) while open or while a probe is in flight (here, or on another replica when shared);
   * otherwise run, and its outcome recorded — `isFailure` says which failures count.
   */
  readonly guard: <A, E, R>(
    self: Effect.Effect<A, E, R>,
    options: { readonly target: string; readonly isFailure: (error: E) => boolean }
  ) => Effect.Effect<A, E | CircuitOpen, R>
}

// ---------------------------------------------------------------------------------------------
// The shared store
// ---------------------------------------------------------------------------------------------

/**
 * One client's breaker state as replicas share it, the JSON value of its key in the store: open
 * since `opened_at` with its cooldown ending at `until`, or closed since `closed_at` (epoch ms).
 */
export const SharedRecord: Schema.Schema<Phases.Shared> = Schema.Union(
  Schema.Struct({ state: Schema.Literal("open"), opened_at: Schema.Int, until: Schema.Int }),
  Schema.Struct({ state: Schema.Literal("closed"), closed_at: Schema.Int })
)
export type SharedRecord = typeof SharedRecord.Type

/** The time of a record's transition (`opened_at` or `closed_at`): a newer record replaces an older one. */
export const recordTime: (record: SharedRecord) => number = Phases.timeOf

/** A store command failed (the store could not be reached, or did not answer in time). */
export class SharedStoreUnavailable extends Data.TaggedError("SharedStoreUnavailable")<{
  readonly operation: "read" | "write" | "lease"
}> {}

/**
 * Where replicas share breaker state (the server's is Redis, `RedisBreakerStore`). Every command
 * is bounded by the store; none is retried by it.
 */
export class SharedStore extends Context.Tag("@switchyard-ts/client/Breaker/SharedStore")<SharedStore, {
  /** Whether the store answered its last command (`true` before the first). */
  readonly reachable: Effect.Effect<boolean>
  /** The records of `clients`, in order; `None` for a client without one (or with an unreadable one). */
  readonly read: (
    clients: ReadonlyArray<string>
  ) => Effect.Effect<ReadonlyArray<Option.Option<SharedRecord>>, SharedStoreUnavailable>
  /** Store `record` as `client`'s, unless the store holds one at least as new ({@link recordTime}). */
  readonly write: (client: string, record: SharedRecord) => Effect.Effect<void, SharedStoreUnavailable>
  /**
   * Take the probe lease of `client`'s opening at `openedAt` for `ttlMs`: `true` for the first
   * taker, `false` while another holds it.
   */
  readonly lease: (client: string, openedAt: number, ttlMs: number) => Effect.Effect<boolean, SharedStoreUnavailable>
}>() {}

/** A {@link SharedStore} in this process, whose reachability a test sets. */
export interface MemoryStore extends Context.Tag.Service<SharedStore> {
  /** Make every command fail with `SharedStoreUnavailable` (`false`), as an unreachable store does, or answer again. */
  readonly setReachable: (reachable: boolean) => Effect.Effect<void>
}

/**
 * A shared store in memory, for tests and for several `UpstreamClient`s of one process: records
 * kept only when newer, leases that run out on the `Clock`.
 */
export const makeMemoryStore: Effect.Effect<MemoryStore> = Effect.gen(function*() {
  const records = yield* Ref.make<ReadonlyMap<string, SharedRecord>>(new Map())
  const leases = yield* Ref.make<ReadonlyMap<string, number>>(new Map())
  const up = yield* Ref.make(true)
  const answering = <A>(operation: SharedStoreUnavailable["operation"], effect: Effect.Effect<A>) =>
    Effect.flatMap(
      Ref.get(up),
      (reachable): Effect.Effect<A, SharedStoreUnavailable> =>
        reachable ? effect : Effect.fail(new SharedStoreUnavailable({ operation }))
    )
  return {
    reachable: Ref.get(up),
    setReachable: (reachable) => Ref.set(up, reachable),
    read: (clients) =>
      answering("read", Effect.map(Ref.get(records), (all) => clients.map((c) => Option.fromNullable(all.get(c))))),
    write: (client, record) =>
      answering(
        "write",
        Ref.update(records, (all) => {
          const stored = all.get(client)
          return stored !== undefined && recordTime(stored) >= recordTime(record)
            ? all
            : new Map([...all, [client, record]])
        })
      ),
    lease: (client, openedAt, ttlMs) =>
      answering(
        "lease",
        Effect.flatMap(Clock.currentTimeMillis, (now) =>
          Ref.modify(leases, (all): readonly [boolean, ReadonlyMap<string, number>] => {
            const key = `${client}\u0000${openedAt}`
            const expires = all.get(key)
            return expires !== undefined && expires > now ? [false, all] : [true, new Map([...all, [key, now + ttlMs]])]
          }))
      )
  }
})

// ---------------------------------------------------------------------------------------------
// One breaker
// ---------------------------------------------------------------------------------------------

const stateOf = (phase: Phase): State =>
  phase._tag === "Closed" ? "closed" : phase._tag === "Open" ? "open" : "half_open"

/** The gauge series of one client. */
const gaugeOf = (client: string) => Metrics.circuitBreakerState.pipe(Metric.tagged("llm_client", client))

/** What a breaker needs to share its state: the store, its probe lease's length, and a wake-up of the sync. */
interface Sharing {
  readonly store: Context.Tag.Service<SharedStore>
  readonly leaseMs: number
  /** Ask the registry's sync to run now (a transition to write). */
  readonly wake: Effect.Effect<void>
}

/** A breaker with its side of the sync (used by the registry's sync loop only). */
interface SyncedBreaker extends Breaker {
  /** Write this breaker's last transition to the store, unless the store has it already. */
  readonly publish: (store: Context.Tag.Service<SharedStore>) => Effect.Effect<void, SharedStoreUnavailable>
  /** Take `record` when it is newer than this breaker's last transition. */
  readonly adopt: (record: SharedRecord) => Effect.Effect<void>
}

/** What a breaker's `guard` is made of (see {@link build}). */
interface Gate {
  readonly client: string
  readonly sharing: Option.Option<Sharing>
  /** The admission of a call now (a transition). */
  readonly acquire: Effect.Effect<Phases.Admission>
  /** A call's outcome, settled into the breaker (and published when sharing). */
  readonly release: (probe: boolean, outcome: Outcome) => Effect.Effect<unknown>
  /** Whether this replica may probe the opening at `at`. */
  readonly claim: (store: Context.Tag.Service<SharedStore>, at: number) => Effect.Effect<boolean>
}

/**
 * A breaker's `guard`: admit the call (refused while open; a probe when due — with sharing, only
 * the replica holding the probe lease), run it, and settle its outcome, uninterruptibly around it.
 */
const guarded = ({ acquire, claim, client, release, sharing }: Gate) => {
  const refused = (target: string) => Effect.fail(ExpectedFailure.make(() => new CircuitOpen({ target, client })))
  return <A, E, R>(
    self: Effect.Effect<A, E, R>,
    options: { readonly target: string; readonly isFailure: (error: E) => boolean }
  ): Effect.Effect<A, E | CircuitOpen, R> =>
    Effect.uninterruptibleMask((restore) => {
      const run = (probe: boolean) =>
        restore(self).pipe(
          Effect.onExit((exit) => {
            if (Exit.isSuccess(exit)) return release(probe, "success")
            // A defect or an interruption says nothing about the upstream's health.
            return Option.match(Cause.failureOption(exit.cause), {
              onNone: () => release(probe, "interrupted"),
              onSome: (error) => release(probe, options.isFailure(error) ? "failure" : "success")
            })
          })
        )
      return Effect.flatMap(acquire, (admission): Effect.Effect<A, E | CircuitOpen, R> => {
        switch (admission._tag) {
          case "Refuse":
            return refused(options.target)
          case "Call":
            return run(false)
          case "Probe":
            return Option.match(sharing, {
              onNone: () => run(true),
              onSome: ({ store }) =>
                restore(claim(store, admission.at)).pipe(
                  Effect.onInterrupt(() => release(true, "interrupted")),
                  Effect.flatMap((won): Effect.Effect<A, E | CircuitOpen, R> =>
                    won ? run(true) : Effect.zipRight(release(true, "lost"), refused(options.target))
                  )
                )
            })
        }
      })
    })
}

const build = (client: string, settings: Settings, sharing: Option.Option<Sharing>): Effect.Effect<SyncedBreaker> =>
  Effect.gen(function*() {
    const gauge = gaugeOf(client)
    const ref = yield* SynchronizedRef.make<Phase>(Phases.initial)
    /** The time of the newest transition the store is known to hold (the initial phase's: nothing to write). */
    const synced = yield* Ref.make(Phases.initial.at)
    /** The probe lease this replica holds: of the opening at `at`, until `expires`. */
    const held = yield* Ref.make({ at: -1, expires: 0 })
    const leaseMs = Option.match(sharing, { onNone: () => settings.cooldownMs, onSome: (s) => s.leaseMs })
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

    const acquire = transition(Phases.admit)

    const settled = (probe: boolean, outcome: Outcome) =>
      transition((phase, now): readonly [boolean, Phase] => {
        const next = Phases.settle(phase, probe, outcome, now, settings, leaseMs)
        return [next.at !== phase.at, next]
      })
    // A transition of its own is written to the store at once (not at the next interval).
    const release: (probe: boolean, outcome: Outcome) => Effect.Effect<unknown> = Option.match(sharing, {
      onNone: () => settled,
      onSome: ({ wake }) => (probe, outcome) =>
        Effect.flatMap(settled(probe, outcome), (changed) => (changed ? wake : Effect.void))
    })

    /** Whether this replica may probe the opening at `at`: it holds (or takes) the lease, or the store is unreachable. */
    const claim: (store: Context.Tag.Service<SharedStore>, at: number) => Effect.Effect<boolean> = Effect.fnUntraced(
      function*(store, at) {
        const now = yield* Clock.currentTimeMillis
        const lease = yield* Ref.get(held)
        if (lease.at === at && now < lease.expires) return true
        if (!(yield* store.reachable)) return true
        const won = yield* store.lease(client, at, leaseMs).pipe(Effect.orElseSucceed(() => true))
        if (won) yield* Ref.set(held, { at, expires: now + leaseMs })
        return won
      }
    )

    const guard = guarded({ client, sharing, acquire, release, claim })

    const isShared = Option.match(sharing, { onNone: () => Effect.succeed(false), onSome: (s) => s.store.reachable })

    const publish = Effect.fnUntraced(function*(store: Context.Tag.Service<SharedStore>) {
      const phase = yield* SynchronizedRef.get(ref)
      if (phase.at <= (yield* Ref.get(synced))) return
      yield* store.write(client, Phases.recordOf(phase))
      yield* Ref.update(synced, (known) => Math.max(known, phase.at))
    })

    const adopt = (record: SharedRecord) =>
      Effect.zipRight(
        transition((phase): readonly [void, Phase] => [undefined, Phases.adopt(phase, record)]),
        Ref.update(synced, (known) => Math.max(known, recordTime(record)))
      )

    return {
      client,
      settings,
      state: Effect.map(SynchronizedRef.get(ref), stateOf),
      snapshot: Effect.zipWith(SynchronizedRef.get(ref), isShared, (phase, shared): Snapshot => ({
        state: stateOf(phase),
        opened_at: phase._tag === "Closed" ? Option.none() : Option.some(phase.at),
        shared
      })),
      guard,
      publish,
      adopt
    }
  })

/** A closed breaker for `client`, of this process only; its gauge series is set to 0 at once. */
export const make = (client: string, settings: Settings): Effect.Effect<Breaker> =>
  build(client, settings, Option.none())

// ---------------------------------------------------------------------------------------------
// Registries
// ---------------------------------------------------------------------------------------------

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

/** How often a shared registry reads the store by default. */
export const defaultSyncIntervalMs = 250

/** Options of {@link makeSharedRegistry}. */
export interface SharedOptions {
  readonly store: Context.Tag.Service<SharedStore>
  /** How often every breaker's record is read from the store (default {@link defaultSyncIntervalMs}). */
  readonly syncIntervalMs?: number
}

const byClient = (a: Breaker, b: Breaker) => (a.client < b.client ? -1 : a.client > b.client ? 1 : 0)

const makeRegistryWith = (sharing: Option.Option<Omit<Sharing, "leaseMs">>) =>
  Effect.gen(function*() {
    const breakers = yield* SynchronizedRef.make<ReadonlyMap<string, SyncedBreaker>>(new Map())

    const create = (client: LlmClient, settings: Settings) =>
      build(
        client.name,
        settings,
        Option.map(sharing, (s) => ({ ...s, leaseMs: Option.getOrElse(client.timeoutMs, () => settings.cooldownMs) }))
      )

    const forClient = (client: LlmClient): Effect.Effect<Option.Option<Breaker>> => {
      const settings = client.breaker ?? Option.none()
      if (Option.isNone(settings)) return Effect.succeedNone
      const known = Effect.map(SynchronizedRef.get(breakers), (all) => Option.fromNullable(all.get(client.name)))
      const created = SynchronizedRef.modifyEffect(breakers, (all) => {
        const existing = all.get(client.name)
        if (existing !== undefined) return Effect.succeed([Option.some<Breaker>(existing), all] as const)
        return Effect.map(
          create(client, settings.value),
          (made) => [Option.some<Breaker>(made), new Map([...all, [client.name, made]])] as const
        )
      })
      return Effect.flatMap(known, (breaker) => (Option.isSome(breaker) ? Effect.succeed(breaker) : created))
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
        return Effect.map(create(client, settings.value), (made) => new Map([...all, [client.name, made]]))
      })

    const statuses = Effect.flatMap(SynchronizedRef.get(breakers), (all) =>
      Effect.forEach(
        [...all.values()].sort(byClient),
        (breaker) => Effect.map(breaker.snapshot, (snapshot): Status => ({ client: breaker.client, ...snapshot }))
      ))

    const registry: Registry = { forClient, register, statuses }
    return { registry, breakers }
  })

/** An empty registry whose breakers are this process's own. */
export const makeRegistry: Effect.Effect<Registry> = Effect.map(
  makeRegistryWith(Option.none()),
  ({ registry }) => registry
)

/**
 * An empty registry whose breakers share their state through `options.store` (see the module doc),
 * with its sync running in the background for as long as the `Scope` lives: each round writes the
 * transitions the store has not got yet, then reads every breaker's record and adopts the newer
 * ones; a round that fails (the store unreachable) changes nothing and the next one tries again.
 */
export const makeSharedRegistry = (options: SharedOptions): Effect.Effect<Registry, never, Scope.Scope> =>
  Effect.gen(function*() {
    const { store } = options
    const wakeUps = yield* Queue.sliding<void>(1)
    const { breakers, registry } = yield* makeRegistryWith(
      Option.some({ store, wake: Effect.asVoid(Queue.offer(wakeUps, undefined)) })
    )
    const round = Effect.gen(function*() {
      const all = [...(yield* SynchronizedRef.get(breakers)).values()]
      if (all.length === 0) return
      yield* Effect.forEach(all, (breaker) => breaker.publish(store), { discard: true })
      const records = yield* store.read(all.map((breaker) => breaker.client))
      yield* Effect.forEach(
        all,
        (breaker, i) => Option.match(records[i] ?? Option.none(), { onNone: () => Effect.void, onSome: breaker.adopt }),
        { discard: true }
      )
    }).pipe(Effect.ignore)
    const interval = Duration.millis(options.syncIntervalMs ?? defaultSyncIntervalMs)
    const pause = Effect.ignore(Effect.timeout(Queue.take(wakeUps), interval))
    yield* Effect.forkScoped(Effect.forever(Effect.zipRight(round, pause)))
    return registry
  })
