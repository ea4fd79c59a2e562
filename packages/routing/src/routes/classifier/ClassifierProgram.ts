/**
 * The program every classifier mode shares (capability and custom routes, a stage router's
 * classifier, a composite route's, a custom `subagents` classifier): per request, the identity its
 * selection is stored under and its lock, the stored selection, the judge's answer through the
 * route's posture (`Consultation.run`), the rules of `ClassifierCascade`, and what they decide
 * stored and reported. A request routed without a verdict counts once in the fail-open metric and
 * in a rate-limited WARN line (live telemetry). Everything outside the rules — the judge, the
 * session store, the lock, whether the request is a user turn — is asked of the `RouteHost`.
 *
 * @internal
 */
import * as TaggedMetric from "@switchyard-ts/client/TaggedMetric"
import { JudgeUnavailable } from "@switchyard-ts/protocol/Errors"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Evidence from "../../Evidence.js"
import * as RouteHost from "../../host/RouteHost.js"
import * as RoutingFacts from "../../host/RoutingFacts.js"
import * as Warnings from "../../internal/warnings.js"
import * as Consultation from "../../judge/Consultation.js"
import * as Posture from "../../judge/Posture.js"
import * as Metrics from "../../Metrics.js"
import type { RoutedRequest } from "../../Route.js"
import * as SessionIdentity from "../../sessions/SessionIdentity.js"
import type { SessionDecision } from "../../sessions/SessionStore.js"
import * as ClassifierCascade from "./ClassifierCascade.js"

/**
 * Whose selection the stored decision is: a session's (its session id; with
 * `message_hash_fallback`, else a hash of its first user message), or — for a route's `subagents`
 * table — a sub-agent's: the pair (session id, agent id), both required, never a message hash.
 */
export type Affinity = "session" | "agent"

/** The kinds of question a classifier mode asks. */
export type Kind = "Capability" | "Custom"

/** One classifier mode, as its program needs it: its rules, its question, and how its selection is stored. */
export interface Mode<K extends Kind, S> {
  /** Route id: the session key's prefix and the log's `route`. */
  readonly routeId: string
  readonly kind: K
  readonly rules: ClassifierCascade.Rules<RouteHost.Answers[K], S>
  /** Under `new_session`, a request without a session id is identified by its first user message. */
  readonly messageHashFallback: boolean
  /** Default `session`. */
  readonly affinity?: Affinity
  /** `judge_failure`: turned into its combinator once, and reported as it is configured. */
  readonly posture: Posture.Posture
  /** The question of one request (`late`: where a late answer is stored, when the request has a key). */
  readonly question: (
    request: RoutedRequest,
    late: Option.Option<RouteHost.LateStore<RouteHost.Answers[K]>>
  ) => RouteHost.Question<K>
  /** What the session store holds for a selection. */
  readonly toStored: (selection: S) => SessionDecision
  /** A stored decision as a selection; none when it names nothing of the route any more. */
  readonly fromStored: (stored: SessionDecision) => Option.Option<S>
  /** The capability tier of a selection, for the routing log (capability routes); default none. */
  readonly tierOf?: (selection: S) => Option.Option<string>
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
const keyOf = <K extends Kind, S>(mode: Mode<K, S>, host: RouteHost.Host, request: RoutedRequest) => {
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
    return Effect.map(host.signals.messageHash(request), (hash) => keyed(Option.map(hash, (h) => `h:${h}`)))
  }
  return Effect.succeedNone
}

/** The program of a classifier mode: a request's selection and evidence, or the failure of its `error` posture. */
export type Program<S> = (
  request: RoutedRequest
) => Effect.Effect<ClassifierCascade.Selected<S>, JudgeUnavailable, RouteHost.RouteHost | RoutingFacts.Reporter>

/**
 * The program of a classifier mode (see the module doc). Requests of one identity are routed one at
 * a time; a request without an identity (`every_request`, or none to key it by) neither reads nor
 * writes the store.
 */
export const program = <K extends Kind, S>(mode: Mode<K, S>): Program<S> => {
  const judgeModel = mode.rules.judgeModel
  const posture = Posture.fromConfig(mode.posture)
  const recordWithoutVerdict = withoutVerdict(mode.routeId)
  const storeAnswer = (answer: RouteHost.Answers[K]) => mode.toStored(mode.rules.judged(answer).selection)
  const answerIn = RouteHost.answerIn[mode.kind]
  const sessions = RouteHost.sessions({
    // The logged run read the store (its trigger keeps sessions) and found nothing there.
    forgotten: (record) =>
      record.stored_before === null && record.trigger !== null && ClassifierCascade.keepsSessions(record.trigger),
    late: (evidence) =>
      Option.map(Option.fromNullable(answerIn(evidence)), (answer) => ({ ...storeAnswer(answer), late: true }))
  })

  /** Tell the request's observer how it was classified (`selection` none: the posture failed it). */
  const report = (
    selection: Option.Option<S>,
    consulted: boolean,
    storedBefore: Option.Option<SessionDecision>,
    storedAfter: Option.Option<SessionDecision>
  ) =>
    RoutingFacts.report((observer) =>
      observer.routed({
        _tag: "Classified",
        trigger: mode.rules.trigger,
        posture: mode.posture,
        consulted,
        storedBefore,
        storedAfter,
        tier: Option.flatMap(selection, (s) => mode.tierOf === undefined ? Option.none() : mode.tierOf(s))
      })
    )

  /** Where a late answer of a request with `key` is stored. */
  const lateStore = (key: string): RouteHost.LateStore<RouteHost.Answers[K]> => ({
    key,
    store: storeAnswer,
    evidence: (answer) => mode.rules.judged(answer).evidence
  })

  // Defined once per route, not per request: a generator function made per call costs a new
  // object shape per call, and keeps what the call reads alive into the old generation
  // (docs/architecture.md, "Generators on the request path").
  const decideFor = Effect.fnUntraced(
    function*(host: RouteHost.Host, request: RoutedRequest, key: Option.Option<string>) {
      const store = host.store(sessions)
      const before = Option.isSome(key) ? yield* store.get(key.value) : Option.none<SessionDecision>()
      const stored = Option.flatMap(
        before,
        (decision) =>
          Option.map(mode.fromStored(decision), (selection) => ({ selection, late: decision.late === true }))
      )
      const reused = ClassifierCascade.reuse(mode.rules, stored, host.signals.userTurn(request))
      if (Option.isSome(reused)) {
        yield* report(Option.some(reused.value.selection), false, before, before)
        return reused.value
      }

      const outcome = yield* host.consult(mode.question(request, Option.map(key, lateStore))).pipe(
        Consultation.runChained(posture),
        Effect.mapError((failure) => new JudgeUnavailable({ judgeModel, failure })),
        Effect.tapError((error) => report(Option.none(), error.failure._tag !== "CircuitOpen", before, before))
      )
      const settled = ClassifierCascade.settle(mode.rules, stored, outcome)
      const decided = { ...settled, evidence: Evidence.withTrail(settled.evidence, outcome.trail) }
      if (outcome._tag === "WithoutVerdict") {
        yield* host.record(recordWithoutVerdict(outcome.trail?.judgeModel ?? judgeModel, outcome.reason))
      }
      const written = Option.flatMap(decided.store, (selection) => Option.map(key, () => mode.toStored(selection)))
      if (Option.isSome(key) && Option.isSome(written)) yield* store.put(key.value, written.value)
      const consulted = outcome._tag === "Verdict" || outcome.reason !== "circuit_open"
      yield* report(Option.some(decided.selection), consulted, before, Option.orElse(written, () => before))
      return decided
    }
  )

  return (request) =>
    Effect.flatMap(
      RouteHost.RouteHost,
      (host) => Effect.flatMap(keyOf(mode, host, request), (key) => host.exclusive(key)(decideFor(host, request, key)))
    )
}
