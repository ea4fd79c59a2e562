/**
 * The machinery every `llm_classifier` mode shares (capability and custom, and a stage router's
 * classifier): the session identity
 * and its lock, the `classify_trigger` rules (reuse a stored decision, or consult), the judge
 * consultation through the route's `Posture`, and what a consultation without a verdict means —
 * the fail-open counter, the WARN log, `retained` / `fail-open` / `circuit-open` evidence, or
 * `JudgeUnavailable` under `error`. A mode supplies only its consultation and how a verdict, a
 * stored decision and the default become decisions.
 */
import { JudgeUnavailable } from "@switchyard-ts/protocol/Errors"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as Consultation from "../Consultation.js"
import * as Conversation from "../Conversation.js"
import type * as Decision from "../Decision.js"
import type * as Evidence from "../Evidence.js"
import type { JudgeError } from "../Judge.js"
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
  /** The judge's model id (evidence, metric and error label). */
  readonly judgeModel: string
  /** Consult the judge about one request. */
  readonly consult: (request: RoutedRequest) => Effect.Effect<V, JudgeError>
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
 */
export const make = <V>(
  mode: Mode<V>
): Effect.Effect<(request: RoutedRequest) => Effect.Effect<Decision.Decision, JudgeUnavailable>, never, SessionStore> =>
  Effect.map(SessionStore, (store) => {
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
          const reused = previous({ source: "affinity", previous_source: "llm-classifier" })
          if (Option.isSome(reused)) return yield* reported(reused.value, false, stored, stored)
        }

        const outcome = yield* mode.consult(request).pipe(
          Consultation.run(posture),
          Effect.mapError((error) => new JudgeUnavailable({ judgeModel: mode.judgeModel, failure: error })),
          Effect.tapError(() => report(Option.none(), true, stored, stored))
        )

        if (outcome._tag === "Verdict") {
          const judged = mode.judged(outcome.verdict)
          if (Option.isNone(key)) return yield* reported(judged.decision, true, stored, stored)
          yield* store.put(key.value, judged.stored)
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
