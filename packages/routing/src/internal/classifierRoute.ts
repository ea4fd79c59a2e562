/**
 * The Effect shell every classifier mode shares (capability and custom routes, a stage router's
 * classifier, a custom `subagents` classifier): it gathers what the decision rules of
 * `ClassifierCascade` need and applies what they decide. Per request: the session identity and its
 * lock, the session's stored selection, the judge consultation through the route's posture
 * (`Consultation.run`), then the rules; a verdict's selection is stored, a request routed without a
 * verdict counts once in the fail-open metric and in a rate-limited WARN line, and the facts are
 * reported to the request's observer. Late verdicts (`late_verdict_ms`): a call past its deadline settles in the
 * background, its valid verdict stored for the session unless a newer one was.
 *
 * @internal
 */
import * as TaggedMetric from "@switchyard-ts/client/TaggedMetric"
import { JudgeUnavailable } from "@switchyard-ts/protocol/Errors"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import * as ClassifierCascade from "../ClassifierCascade.js"
import * as Consultation from "../Consultation.js"
import * as Conversation from "../Conversation.js"
import type * as Evidence from "../Evidence.js"
import * as LateVerdict from "../LateVerdict.js"
import * as Metrics from "../Metrics.js"
import * as Posture from "../Posture.js"
import type { RoutedRequest } from "../Route.js"
import * as RoutingFacts from "../RoutingFacts.js"
import * as SessionIdentity from "../SessionIdentity.js"
import { type SessionDecision, SessionStore } from "../SessionStore.js"
import * as Warnings from "./warnings.js"

/**
 * Whose selection the stored decision is: a session's (its session id; with
 * `message_hash_fallback`, else a hash of its first user message), or — for a route's `subagents`
 * table — a sub-agent's: the pair (session id, agent id), both required, never a message hash.
 */
export type Affinity = "session" | "agent"

/** One classifier mode, as the shell needs it: its rules, its judge, and how its selection is stored. */
export interface Mode<V, S> {
  /** Route id: the session key's prefix and the log's `route`. */
  readonly routeId: string
  readonly rules: ClassifierCascade.Rules<V, S>
  /** Under `new_session`, a request without a session id is identified by its first user message. */
  readonly messageHashFallback: boolean
  /** Default `session`. */
  readonly affinity?: Affinity
  /** `judge_failure`: turned into its combinator once, and reported as it is configured. */
  readonly posture: Posture.Posture
  /** The route's `judge_timeout_ms`, `late_verdict_ms` and `max_late_verdicts` (e.g. its options as they are). */
  readonly late: LateVerdict.Options
  /**
   * Consult the judge about one request with this deadline (the route's `judge_timeout_ms`, or
   * with late verdicts that plus `late_verdict_ms`).
   */
  readonly consult: (
    request: RoutedRequest,
    judgeTimeoutMs: Option.Option<number>
  ) => Effect.Effect<V, Consultation.JudgeError, RoutingFacts.Reporter>
  /** What the session store holds for a selection. */
  readonly toStored: (selection: S) => SessionDecision
  /** A stored decision as a selection; none when it names nothing of the route any more. */
  readonly fromStored: (stored: SessionDecision) => Option.Option<S>
  /** The capability tier of a selection, for the routing log (capability routes); default none. */
  readonly tierOf?: (selection: S) => Option.Option<string>
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

/** Records one request a route served without a verdict, of this judge model, for this reason. */
export type RecordWithoutVerdict = (judgeModel: string, reason: Evidence.Reason) => Effect.Effect<void>

/**
 * What one route records of a request served without a verdict: one fail-open count per request
 * (`judge_model`, `reason`), and the WARN line "routing without a judge verdict", rate-limited per
 * judge model and reason (`warnings.ts`: at once, then at most one line per interval, with the
 * `count` of requests it stands for).
 */
export const withoutVerdict = (routeId: string): RecordWithoutVerdict => {
  const warnings = Warnings.make()
  return (judgeModel, reason) =>
    Effect.zipRight(
      Effect.sync(() =>
        TaggedMetric.unsafeUpdate(Metrics.classifierFailOpenTotal, { judge_model: judgeModel, reason }, 1)
      ),
      Warnings.warn(warnings, `${judgeModel}\u0000${reason}`, (count) =>
        Effect.logWarning("routing without a judge verdict").pipe(
          Effect.annotateLogs({ route: routeId, judge_model: judgeModel, reason, count })
        ))
    )
}

/**
 * The identity a stored selection belongs to: the caller's session id, or (with
 * message_hash_fallback) a hash; for sub-agent affinity the (session id, agent id) pair. Prefixed
 * with the route id: the key in the session store. None under `every_request`.
 */
const keyOf = <V, S>(mode: Mode<V, S>) => (request: RoutedRequest): Effect.Effect<Option.Option<string>> => {
  const keyed = Option.map((id: string) => `${mode.routeId}\u0000${id}`)
  if (!ClassifierCascade.keepsSessions(mode.rules.trigger)) return Effect.succeedNone
  if (mode.affinity === "agent") {
    return Effect.succeed(keyed(
      Option.zipWith(
        request.sessionId,
        SessionIdentity.agentIdOf(request.headers),
        (session, agent) => `a:${JSON.stringify([session, agent])}`
      )
    ))
  }
  if (Option.isSome(request.sessionId)) return Effect.succeed(keyed(Option.some(`s:${request.sessionId.value}`)))
  if (mode.messageHashFallback) {
    return Effect.map(
      Conversation.messageHash(request.body.messages),
      (hash) => keyed(Option.map(hash, (h) => `h:${h}`))
    )
  }
  return Effect.succeedNone
}

/**
 * The consultations of a mode, with late verdicts when the route has them and the request an
 * identity. `stored(key, seq)` tells it that the valid verdict of request `seq` was stored for
 * `key`: a pending late verdict older than that is then `superseded`.
 */
const consultations = <V, S>(
  mode: Mode<V, S>,
  store: SessionStore["Type"],
  withSessionLock: ReturnType<typeof sessionLocks>
) =>
  Effect.gen(function*() {
    const late = LateVerdict.settings(mode.late, mode.posture)
    const runner = Option.isSome(late)
      ? Option.some(yield* LateVerdict.make(late.value, mode.rules.judgeModel))
      : Option.none()
    /**
     * Identities with calls of late-verdict requests not finished yet: how many, and the sequence
     * number of the newest valid verdict stored for the identity since (-1: none). Entries live only
     * while such calls do (at most `max_late_verdicts` in the background, plus those still waiting).
     */
    const pending = new Map<string, { calls: number; newest: number }>()

    const stored = (key: string, seq: number) =>
      Effect.sync(() => {
        const entry = pending.get(key)
        if (entry !== undefined) entry.newest = Math.max(entry.newest, seq)
      })

    /** A valid late verdict of request `seq`: stored for `key` unless a newer one was stored meanwhile. */
    const storeLate = Effect.fnUntraced(function*(key: string, seq: number, verdict: V) {
      const judged = mode.rules.judged(verdict)
      const settled = (outcome: LateVerdict.Outcome): LateVerdict.Settled => ({
        outcome,
        verdict: Option.some(judged.evidence)
      })
      if ((pending.get(key)?.newest ?? -1) > seq) return settled("superseded")
      yield* store.put(key, { ...mode.toStored(judged.selection), late: true })
      yield* stored(key, seq)
      return settled("stored")
    })

    /** What a call of request `seq` that came back after its deadline settles to. */
    const settleLate = (key: string, seq: number) => (exit: Exit.Exit<V, Consultation.JudgeError>) =>
      Exit.match(exit, {
        onFailure: (cause) =>
          Effect.succeed<LateVerdict.Settled>({
            outcome: Option.exists(Cause.failureOption(cause), (error) => error._tag === "InvalidVerdict")
              ? "invalid"
              : "failed",
            verdict: Option.none()
          }),
        onSuccess: (verdict) => withSessionLock(Option.some(key), storeLate(key, seq, verdict))
      })

    const track = (key: string) =>
      Effect.sync(() => {
        const entry = pending.get(key) ?? { calls: 0, newest: -1 }
        entry.calls++
        pending.set(key, entry)
        return Effect.sync(() => {
          entry.calls--
          if (entry.calls === 0) pending.delete(key)
        })
      })

    const consult = (
      request: RoutedRequest,
      key: Option.Option<string>,
      seq: number
    ): Effect.Effect<V, Consultation.JudgeError, RoutingFacts.Reporter> => {
      if (Option.isNone(runner) || Option.isNone(key)) {
        return mode.consult(request, mode.late.judgeTimeoutMs ?? Option.none())
      }
      const { deadlineMs, lateMs } = runner.value.settings
      return runner.value.run(
        mode.consult(request, Option.some(deadlineMs + lateMs)),
        settleLate(key.value, seq),
        track(key.value)
      )
    }
    return { consult, stored }
  })

/**
 * The `decide` of a classifier mode over the `SessionStore`: the selection of each request and its
 * evidence (the route makes it a decision), or `JudgeUnavailable` when the posture fails the
 * request. Requests of one identity are routed one at a time. Late verdicts (`LateVerdict.settings`
 * of the mode is some, and the request has an identity): the request waits for the judge until
 * `judge_timeout_ms` and is then routed as any timed-out consultation under `fail_open`; the call
 * goes on in the background (bounded, in `Scope`) until `judge_timeout_ms + late_verdict_ms`, and
 * a valid verdict it brings is stored under the session lock, marked `late`, unless a newer
 * request's valid verdict was stored for that identity meanwhile (`superseded`).
 */
export const make = <V, S>(
  mode: Mode<V, S>
): Effect.Effect<
  (request: RoutedRequest) => Effect.Effect<ClassifierCascade.Selected<S>, JudgeUnavailable, RoutingFacts.Reporter>,
  never,
  SessionStore | Scope.Scope
> =>
  Effect.gen(function*() {
    const store = yield* SessionStore
    const withSessionLock = sessionLocks()
    const judgeModel = mode.rules.judgeModel
    const posture = Posture.fromConfig(mode.posture)
    const { consult, stored: storedVerdict } = yield* consultations(mode, store, withSessionLock)
    const keyFor = keyOf(mode)
    const recordWithoutVerdict = withoutVerdict(mode.routeId)
    let sequence = 0

    /** Tell the request's observer how it was classified (`selection` none: the posture failed it). */
    const report = (
      selection: Option.Option<S>,
      consulted: boolean,
      storedBefore: Option.Option<SessionDecision>,
      storedAfter: Option.Option<SessionDecision>
    ) =>
      RoutingFacts.report((observer) =>
        observer.classified({
          trigger: mode.rules.trigger,
          posture: mode.posture,
          consulted,
          storedBefore,
          storedAfter,
          tier: Option.flatMap(selection, (s) => mode.tierOf === undefined ? Option.none() : mode.tierOf(s))
        })
      )

    // Defined once per route, not per request: a generator function made per call costs a new
    // object shape per call, and keeps what the call reads alive into the old generation
    // (docs/architecture.md, "Generators on the request path").
    const decideFor = Effect.fnUntraced(function*(request: RoutedRequest, key: Option.Option<string>) {
      const before = Option.isSome(key) ? yield* store.get(key.value) : Option.none<SessionDecision>()
      const stored = Option.flatMap(
        before,
        (decision) =>
          Option.map(mode.fromStored(decision), (selection) => ({ selection, late: decision.late === true }))
      )
      const reused = ClassifierCascade.reuse(mode.rules, stored, Conversation.isUserTurn(request.body.messages))
      if (Option.isSome(reused)) {
        yield* report(Option.some(reused.value.selection), false, before, before)
        return reused.value
      }

      const seq = sequence++
      const outcome = yield* consult(request, key, seq).pipe(
        Consultation.run(posture),
        Effect.mapError((failure) => new JudgeUnavailable({ judgeModel, failure })),
        Effect.tapError((error) => report(Option.none(), error.failure._tag !== "CircuitOpen", before, before))
      )
      const decided = ClassifierCascade.settle(mode.rules, stored, outcome)
      if (outcome._tag === "WithoutVerdict") yield* recordWithoutVerdict(judgeModel, outcome.reason)
      const written = Option.flatMap(decided.store, (selection) => Option.map(key, () => mode.toStored(selection)))
      if (Option.isSome(key) && Option.isSome(written)) {
        yield* store.put(key.value, written.value)
        yield* storedVerdict(key.value, seq)
      }
      const consulted = outcome._tag === "Verdict" || outcome.reason !== "circuit_open"
      yield* report(Option.some(decided.selection), consulted, before, Option.orElse(written, () => before))
      return decided
    })

    return (request: RoutedRequest) =>
      Effect.flatMap(keyFor(request), (key) => withSessionLock(key, decideFor(request, key)))
  })
