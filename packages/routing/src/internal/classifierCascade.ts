/**
 * The machinery every `llm_classifier` mode shares (capability and custom, and a stage router's
 * classifier): the session identity
 * and its lock, the `classify_trigger` rules (reuse a stored decision, or consult), the judge
 * consultation through the route's `Posture`, and what a consultation without a verdict means —
 * the fail-open counter, the WARN log, `retained` / `fail-open` / `circuit-open` evidence, or
 * `JudgeUnavailable` under `error`, and late verdicts (`late_verdict_ms`: a call past its deadline
 * settled in the background, its valid verdict stored for the session). A mode supplies only its
 * consultation and how a verdict, a stored decision and the default become decisions.
 */
import { JudgeUnavailable } from "@switchyard-ts/protocol/Errors"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import * as Consultation from "../Consultation.js"
import * as Conversation from "../Conversation.js"
import type * as Decision from "../Decision.js"
import type * as Evidence from "../Evidence.js"
import type { JudgeError } from "../Judge.js"
import * as LateVerdict from "../LateVerdict.js"
import * as Metrics from "../Metrics.js"
import * as Posture from "../Posture.js"
import type { RoutedRequest } from "../Route.js"
import * as RoutingFacts from "../RoutingFacts.js"
import * as SessionIdentity from "../SessionIdentity.js"
import { type SessionDecision, SessionStore } from "../SessionStore.js"

/** When the judge is consulted. */
export type ClassifyTrigger = "every_request" | "user_turn" | "new_session"

/** What a valid verdict decides: the decision, and what the session stores (its selection). */
export interface Judged {
  readonly decision: Decision.Decision
  readonly stored: SessionDecision
}

/**
 * Whose selection the stored decision is: a session's (its session id; under `new_session` with
 * `message_hash_fallback`, else a hash of its first user message), or — for a route's `subagents`
 * table — a sub-agent's: the pair (session id, agent id), both required, never a message hash.
 */
export type Affinity = "session" | "agent"

/** One classifier mode, as the cascade needs it. */
export interface Mode<V> {
  /** Route id: the session key's prefix and the log's `route`. */
  readonly routeId: string
  readonly classifyTrigger: ClassifyTrigger
  /** Under `new_session`, a request without a session id is identified by its first user message. */
  readonly messageHashFallback: boolean
  /** Default `session`. */
  readonly affinity?: Affinity
  readonly judgeFailure: Posture.Posture
  /** The route's `judge_timeout_ms`, `late_verdict_ms` and `max_late_verdicts` (e.g. its options as they are). */
  readonly late: LateVerdict.Options
  /** The judge's model id (evidence, metric and error label). */
  readonly judgeModel: string
  /**
   * Consult the judge about one request with this deadline (the route's `judge_timeout_ms`, or
   * with late verdicts that plus `late_verdict_ms`).
   */
  readonly consult: (request: RoutedRequest, judgeTimeoutMs: Option.Option<number>) => Effect.Effect<V, JudgeError>
  /** A valid verdict's decision and stored selection. */
  readonly judged: (verdict: V) => Judged
  /** A stored selection as a decision with `evidence`; none when it names no target of the route any more. */
  readonly fromStored: (stored: SessionDecision, evidence: Evidence.Evidence) => Option.Option<Decision.Decision>
  /** The route's default (capability: strong; custom: `default_target`) with `evidence`. */
  readonly fallback: (evidence: Evidence.Evidence) => Decision.Decision
  /**
   * Whether a request judged without a verdict keeps the session's stored decision (`retained`,
   * the default) or always goes to `fallback` (`fail-open` / `circuit-open`; a stage router's
   * classifier, whose no-verdict tier is the picker's default).
   */
  readonly retainWithoutVerdict?: boolean
  /** The capability tier a decision went to, for the routing log (capability routes); default none. */
  readonly tierOf?: (decision: Decision.Decision) => Option.Option<string>
}

/**
 * Per-key locks: requests of one session are routed one at a time (judge call included), so a
 * second request sees the first one's stored state instead of consulting the judge again. No key:
 * no lock. A key's lock lives while requests use it.
 */
export const sessionLocks = () => {
  const locks = new Map<string, { readonly semaphore: Effect.Semaphore; users: number }>()
  return <A, E, R>(key: Option.Option<string>, effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> => {
    if (Option.isNone(key)) return effect
    return Effect.acquireUseRelease(
      Effect.sync(() => {
        const lock = locks.get(key.value) ?? { semaphore: Effect.unsafeMakeSemaphore(1), users: 0 }
        lock.users++
        locks.set(key.value, lock)
        return lock
      }),
      (lock) => lock.semaphore.withPermits(1)(effect),
      (lock) =>
        Effect.sync(() => {
          lock.users--
          if (lock.users === 0) locks.delete(key.value)
        })
    )
  }
}

/** A request served without a verdict: one fail-open count (`judge_model`, `reason`) and one WARN. */
export const recordWithoutVerdict = (
  routeId: string,
  judgeModel: string,
  reason: Evidence.Reason
): Effect.Effect<void> =>
  Effect.zipRight(
    Metric.update(
      Metrics.classifierFailOpenTotal.pipe(Metric.tagged("judge_model", judgeModel), Metric.tagged("reason", reason)),
      1
    ),
    Effect.logWarning("routing without a judge verdict").pipe(
      Effect.annotateLogs({ route: routeId, judge_model: judgeModel, reason })
    )
  )

/**
 * The `decide` of a classifier route over the `SessionStore`. Only a valid verdict writes the
 * session's stored selection; without a verdict the stored one is kept (`retained`), else the
 * default decides (`fail-open`, or `circuit-open` when the breaker refused the call).
 *
 * Late verdicts (`LateVerdict.settings` of the mode is some, and the request has a session
 * identity): the request waits for the judge until `judge_timeout_ms` and is then routed as any
 * timed-out consultation under `fail_open`; the call goes on in the background (bounded, in `Scope`)
 * until `judge_timeout_ms + late_verdict_ms`. A valid verdict it brings is stored under the session
 * lock, marked `late` (`affinity` evidence then says `previous_source = "llm-classifier-late"`),
 * unless a newer request's valid verdict was stored for that identity meanwhile (`superseded`).
 * Without late verdicts (no session identity, `every_request`) the call is bounded by
 * `judge_timeout_ms` as before.
 */
export const make = <V>(
  mode: Mode<V>
): Effect.Effect<
  (request: RoutedRequest) => Effect.Effect<Decision.Decision, JudgeUnavailable>,
  never,
  SessionStore | Scope.Scope
> =>
  Effect.gen(function*() {
    const store = yield* SessionStore
    const late = LateVerdict.settings(mode.late, mode.judgeFailure)
    const runner = Option.isSome(late)
      ? Option.some(yield* LateVerdict.make(late.value, mode.judgeModel))
      : Option.none()
    /**
     * Identities with calls of late-verdict requests not finished yet: how many, and the sequence
     * number of the newest valid verdict stored for the identity since (-1: none). A late verdict
     * older than that is `superseded`. Entries live only while such calls do (at most
     * `max_late_verdicts` in the background, plus those of requests still waiting).
     */
    const pending = new Map<string, { calls: number; newest: number }>()
    let sequence = 0

    /**
     * The identity a stored selection belongs to: the caller's session id, or (new_session +
     * message_hash_fallback) a hash; for sub-agent affinity the (session id, agent id) pair.
     */
    const identity = (request: RoutedRequest): Effect.Effect<Option.Option<string>> => {
      if (mode.affinity === "agent") {
        return Effect.succeed(
          Option.zipWith(
            request.sessionId,
            SessionIdentity.agentIdOf(request.headers),
            (session, agent) => `a:${JSON.stringify([session, agent])}`
          )
        )
      }
      if (Option.isSome(request.sessionId)) return Effect.succeed(Option.some(`s:${request.sessionId.value}`))
      if (mode.classifyTrigger === "new_session" && mode.messageHashFallback) {
        return Effect.map(Conversation.messageHash(request.body.messages), Option.map((hash) => `h:${hash}`))
      }
      return Effect.succeedNone
    }

    const withSessionLock = sessionLocks()

    const posture = Posture.fromConfig(mode.judgeFailure)

    /** A valid verdict of request `seq` was stored for `key`: a pending late verdict older than it is superseded. */
    const storedVerdict = (key: string, seq: number) =>
      Effect.sync(() => {
        const entry = pending.get(key)
        if (entry !== undefined) entry.newest = Math.max(entry.newest, seq)
      })

    /** What a call of request `seq` that came back after its deadline settles to. */
    const settleLate = (key: string, seq: number) => (exit: Exit.Exit<V, JudgeError>) =>
      Exit.match(exit, {
        onFailure: (cause) =>
          Effect.succeed<LateVerdict.Outcome>(
            Option.exists(Cause.failureOption(cause), (error) => error._tag === "InvalidVerdict") ? "invalid" : "failed"
          ),
        onSuccess: (verdict) =>
          withSessionLock(
            Option.some(key),
            Effect.gen(function*() {
              if ((pending.get(key)?.newest ?? -1) > seq) return "superseded" as const
              yield* store.put(key, { ...mode.judged(verdict).stored, late: true })
              yield* storedVerdict(key, seq)
              return "stored" as const
            })
          )
      })

    /** The consultation of request `seq`: with late verdicts when the route has them and the request an identity. */
    const consult = (request: RoutedRequest, key: Option.Option<string>, seq: number): Effect.Effect<V, JudgeError> => {
      if (Option.isNone(runner) || Option.isNone(key)) {
        return mode.consult(request, mode.late.judgeTimeoutMs ?? Option.none())
      }
      const background = runner.value
      const id = key.value
      const track = Effect.sync(() => {
        const entry = pending.get(id) ?? { calls: 0, newest: -1 }
        entry.calls++
        pending.set(id, entry)
        return Effect.sync(() => {
          entry.calls--
          if (entry.calls === 0) {
            pending.delete(id)
          }
        })
      })
      const { deadlineMs, lateMs } = background.settings
      return background.run(mode.consult(request, Option.some(deadlineMs + lateMs)), settleLate(id, seq), track)
    }

    /**
     * Tell the request's routing observer how it was classified (see `RoutingFacts.Classified`):
     * `decision` none when the `error` posture failed the request.
     */
    const report = (
      decision: Option.Option<Decision.Decision>,
      consulted: boolean,
      storedBefore: Option.Option<SessionDecision>,
      storedAfter: Option.Option<SessionDecision>
    ) =>
      RoutingFacts.report((observer) =>
        observer.classified({
          trigger: mode.classifyTrigger,
          posture: mode.judgeFailure,
          consulted,
          storedBefore,
          storedAfter,
          tier: Option.flatMap(decision, (decided) => mode.tierOf === undefined ? Option.none() : mode.tierOf(decided))
        })
      )
    const reported = (
      decision: Decision.Decision,
      consulted: boolean,
      storedBefore: Option.Option<SessionDecision>,
      storedAfter: Option.Option<SessionDecision>
    ) => Effect.as(report(Option.some(decision), consulted, storedBefore, storedAfter), decision)

    const decideFor = (request: RoutedRequest, key: Option.Option<string>) =>
      Effect.gen(function*() {
        const stored = Option.isSome(key) ? yield* store.get(key.value) : Option.none()
        const previous = (evidence: Evidence.Evidence) =>
          Option.flatMap(stored, (decision) => mode.fromStored(decision, evidence))

        const reuse = mode.classifyTrigger === "new_session" ||
          (mode.classifyTrigger === "user_turn" && !Conversation.isUserTurn(request.body.messages))
        if (reuse) {
          const reused = Option.flatMap(stored, (decision) =>
            mode.fromStored(decision, {
              source: "affinity",
              previous_source: decision.late === true ? "llm-classifier-late" : "llm-classifier"
            }))
          if (Option.isSome(reused)) return yield* reported(reused.value, false, stored, stored)
        }

        const seq = sequence++
        const outcome = yield* consult(request, key, seq).pipe(
          Consultation.run(posture),
          Effect.mapError((error) => new JudgeUnavailable({ judgeModel: mode.judgeModel, failure: error })),
          Effect.tapError(() => report(Option.none(), true, stored, stored))
        )

        if (outcome._tag === "Verdict") {
          const judged = mode.judged(outcome.verdict)
          if (Option.isNone(key)) return yield* reported(judged.decision, true, stored, stored)
          yield* store.put(key.value, judged.stored)
          yield* storedVerdict(key.value, seq)
          return yield* reported(judged.decision, true, stored, Option.some(judged.stored))
        }
        if (outcome._tag === "Refused" && mode.judgeFailure === "error") {
          yield* report(Option.none(), false, stored, stored)
          return yield* new JudgeUnavailable({ judgeModel: mode.judgeModel, failure: outcome.circuitOpen })
        }

        // Routed without a verdict: a stored decision is kept (unless the mode says not), else the route's default.
        const reason = outcome._tag === "Refused" ? "circuit_open" : outcome.reason
        yield* recordWithoutVerdict(mode.routeId, mode.judgeModel, reason)
        const kept = (evidence: Evidence.Evidence) =>
          mode.retainWithoutVerdict === false ? Option.none() : previous(evidence)
        const decided = outcome._tag === "Refused"
          ? Option.getOrElse(
            kept({ source: "circuit-open", judge_model: mode.judgeModel }),
            () => mode.fallback({ source: "circuit-open", judge_model: mode.judgeModel })
          )
          : Option.getOrElse(
            kept({ source: "retained", reason, judge_model: mode.judgeModel }),
            () => mode.fallback({ source: "fail-open", reason, judge_model: mode.judgeModel })
          )
        return yield* reported(decided, outcome._tag !== "Refused", stored, stored)
      })

    return (request: RoutedRequest) =>
      Effect.flatMap(
        mode.classifyTrigger === "every_request"
          ? Effect.succeedNone
          : Effect.map(identity(request), Option.map((id) => `${mode.routeId}\u0000${id}`)),
        (key) => withSessionLock(key, decideFor(request, key))
      )
  })
