/**
 * The replay host of a route program (`RouteHost`): it serves the program from the routing log, one
 * record (`RoutingRecord`) at a time, so that policy replay decides nothing and sequences nothing of
 * its own — it runs the route's program under other settings on the facts the log holds.
 *
 * - A judge's answer is the record's logged answer; a logged failure is put back as a failure of
 *   its reason (`Consultation.failureOf`), so the program's own posture folds it.
 * - A routing-time call answers when the log says it answered (with an empty completion standing
 *   for the logged reply, which no replay reads), and fails as the log says it failed.
 * - The request's signals are the record's: whether it was a user turn, a stage router's logged
 *   signal facts, an advisor's logged trigger.
 * - State lives in the replay (one store per space, for the whole replay); a key the logged run
 *   found nothing stored for is forgotten first, and a verdict the log says landed late is stored
 *   where the logged run found it.
 * - Where the log does not hold what the program asks (a judge answer it never got, a turn the
 *   logged run did not make), the host interrupts the program: the request's outcome is unknown.
 * - No lock, no telemetry.
 */
import { TransportError } from "@switchyard-ts/protocol/Errors"
import { SessionId } from "@switchyard-ts/protocol/Ids"
import type { ChatCompletion } from "@switchyard-ts/protocol/OpenAiChat"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import type * as Decision from "../Decision.js"
import type * as Evidence from "../Evidence.js"
import * as Consultation from "../judge/Consultation.js"
import type { JudgeError } from "../judge/Consultation.js"
import * as JudgeChain from "../judge/JudgeChain.js"
import type { RoutedRequest, RouteFailure } from "../Route.js"
import * as EscalationRules from "../routes/escalation/EscalationRules.js"
import * as RouteHost from "./RouteHost.js"
import * as RoutingFacts from "./RoutingFacts.js"
import * as RoutingRecord from "./RoutingRecord.js"

type Record = RoutingRecord.RoutingRecord

/** What one request came to: where it went and what decided it, the failure of its routing, or unknown. */
export type Outcome =
  | {
    readonly _tag: "Routed"
    /** A capability / escalation tier, a stage router tier, a custom route's model id, an advisor's release. */
    readonly destination: string
    /** The evidence source (a stage router: its decision source; an escalation route: its verdict). */
    readonly source: string
    /** Why it was routed without a verdict. */
    readonly reason?: string
  }
  | { readonly _tag: "Failed"; readonly reason: string }
  | { readonly _tag: "Unknown" }

/** A routed outcome. */
export const routed = (destination: string, source: string, reason?: string): Outcome =>
  reason === undefined ? { _tag: "Routed", destination, source } : { _tag: "Routed", destination, source, reason }

/** The unknown outcome. */
export const unknown: Outcome = { _tag: "Unknown" }

/** A decision's outcome: its destination, its evidence's source (or `source`), and why it had no verdict. */
export const decided = (destination: string, evidence: Evidence.Evidence, source: string = evidence.source): Outcome =>
  routed(destination, source, RoutingRecord.withoutVerdictReason(evidence))

/** A record without evidence: the failure of its routing when the log says the judge caused it, else unknown. */
export const failureOf = (record: RoutingRecord.Decided): Outcome => {
  const fact = RoutingRecord.judgeFact(record, () => undefined)
  return fact._tag === "Failed" && fact.reason !== "invalid_response" && fact.reason !== "parse_error"
    ? { _tag: "Failed", reason: fact.reason }
    : unknown
}

/**
 * What the log says a record of a tiered route came to: its tier (`tierOf`, unknown without one)
 * and evidence; the failure of its routing without evidence; a delegated sub-agent request counted
 * under {@link subagentDestination}.
 */
export const loggedTier = (
  record: RoutingRecord.Decided,
  tierOf: (record: RoutingRecord.Decided) => string | undefined
): Outcome => {
  if (RoutingRecord.isDelegated(record)) return routed(subagentDestination, record.evidence?.source ?? "")
  const evidence = record.evidence
  if (evidence === null) return failureOf(record)
  const tier = tierOf(record)
  return tier === undefined ? unknown : decided(tier, evidence)
}

/** The verdicts a log says arrived late and were stored for a session, as a replay meets them in file order. */
export interface LateVerdicts {
  /**
   * The evidence of the newest verdict stored late for `session` by `beforeMs` (a request's start)
   * and not taken yet; taking it removes it and every older one. A verdict stored after the request
   * started (its own judge call's, logged before its response line) stays for a later request.
   */
  readonly take: (session: string, beforeMs: number) => Option.Option<Evidence.Evidence>
}

/** No late verdicts. */
export const noLateVerdicts: LateVerdicts = { take: () => Option.none() }

/** What a late call's log line says of it. */
export interface LateCall {
  readonly ts: string
  readonly session_id: string | null
  readonly late?: string | undefined
  readonly evidence?: Evidence.Evidence | undefined
}

/**
 * Late verdicts gathered from a route's judge lines in file order (`add`): the ones stored per
 * session, with when they were stored, until a replay takes them.
 */
export const lateVerdicts = (): LateVerdicts & { readonly add: (line: LateCall) => void } => {
  const stored = new Map<string, Array<{ readonly atMs: number; readonly evidence: Evidence.Evidence }>>()
  return {
    add: (line) => {
      if (line.late === "stored" && line.evidence !== undefined && line.session_id !== null) {
        const verdicts = stored.get(line.session_id) ?? []
        verdicts.push({ atMs: Date.parse(line.ts), evidence: line.evidence })
        stored.set(line.session_id, verdicts)
      }
    },
    take: (session, beforeMs) => {
      const verdicts = stored.get(session) ?? []
      let newest = -1
      for (let i = 0; i < verdicts.length; i++) if ((verdicts[i]?.atMs ?? Infinity) <= beforeMs) newest = i
      if (newest < 0) return Option.none()
      const evidence = verdicts[newest]?.evidence
      const rest = verdicts.slice(newest + 1)
      if (rest.length === 0) stored.delete(session)
      else stored.set(session, rest)
      return Option.fromNullable(evidence)
    }
  }
}

// ---------------------------------------------------------------------------------------------
// What the log holds

/** The program asked for something the log does not hold: the request's outcome is unknown. */
const notLogged = Effect.interrupt

/** A logged answer, or a logged failure put back as a failure of its reason; nothing logged: unknown. */
const answered = <A>(fact: RoutingRecord.JudgeFact<A>, target: string) =>
  fact._tag === "Answered"
    ? Effect.succeed(fact.answer)
    : fact._tag === "Failed"
    ? Effect.fail(Consultation.failureOf(fact.reason, target))
    : notLogged

/** A strong turn's logged review: its verdict, or the reason the judge gave none (strong stays whatever the posture). */
const strongReview = (evidence: Evidence.Evidence): RoutingRecord.JudgeFact<RouteHost.Vote> => {
  const vote = EscalationRules.strongVoteOf(evidence)
  if (vote !== undefined) return { _tag: "Answered", answer: vote }
  return evidence.source === "retained"
    ? { _tag: "Failed", reason: evidence.reason }
    : evidence.source === "circuit-open"
    ? { _tag: "Failed", reason: "circuit_open" }
    : { _tag: "None" }
}

/** The logged advisor consultation. */
const advisorFact = (record: Record): RoutingRecord.JudgeFact<RouteHost.Answers["Advisor"]> => {
  const consult = record.advisor?.consult ?? null
  if (consult === null) return { _tag: "None" }
  if (consult === "approve") return { _tag: "Answered", answer: { _tag: "Approve" } }
  // The plan is not logged: the REDO's second turn is then read from the log as well.
  if (consult === "redo") return { _tag: "Answered", answer: { _tag: "Redo", plan: "" } }
  return { _tag: "Failed", reason: consult }
}

/** Whether the logged advisor gate's executor answered (it triggered, or it did not and the turn was released). */
const executorAnswered = (record: Record): boolean => {
  const evidence = record.evidence
  return record.advisor !== undefined && (
    record.advisor.trigger !== null ||
    (evidence !== null && evidence.source === "advisor" && "verdict" in evidence && evidence.verdict === "skipped" &&
      evidence.skipped === "no_trigger")
  )
}

/** The reply a replayed call answers with: it stands for the logged reply, which no replay reads. */
const loggedReply = (target: string): ChatCompletion => ({
  id: "replayed",
  object: "chat.completion",
  created: 0,
  model: target,
  choices: [{ index: 0, message: { role: "assistant", content: "" }, finish_reason: "stop" }]
})

/** The replayed call of `kind`, from what the record says of it. */
const callOf = (record: Record, call: RouteHost.ModelCall): Effect.Effect<ChatCompletion, TransportError> => {
  const reply = Effect.succeed(loggedReply(call.target.id))
  const evidence = record.evidence
  switch (call.kind) {
    case "weak_turn":
      if (EscalationRules.strongPhase(record) || EscalationRules.weakCallFailed(record)) return notLogged
      // A failure that routes to strong: the logged run's weak call failed that way.
      return evidence !== null && evidence.source === "escalation" && evidence.verdict === "weak_failed"
        ? Effect.fail(new TransportError({ target: call.target.id, reason: "logged weak failure" }))
        : reply
    case "strong_turn":
      if (!EscalationRules.strongPhase(record) || evidence === null) return notLogged
      return evidence.source === "escalation" && evidence.verdict === "strong_fallback"
        ? Effect.fail(new TransportError({ target: call.target.id, reason: "logged strong failure" }))
        : reply
    case "strong_fallback_turn":
      return reply
    case "executor_turn":
      return executorAnswered(record) ? reply : notLogged
    case "redo_turn":
      // The REDO's second turn failed the logged request: the log says no more.
      return evidence === null ? notLogged : reply
  }
}

/**
 * What the record says the request's judge chain came to (`JudgeChain.Trail`): the judge its
 * evidence names when a fallback or a hedge gave it, else `first` alone.
 */
const loggedTrail = (record: Record, first: string): JudgeChain.Trail => {
  const evidence = record.evidence
  if (evidence === null || (evidence.judge_fallbacks === undefined && evidence.hedged === undefined)) {
    return JudgeChain.single(first)
  }
  return {
    judgeModel: "judge_model" in evidence && evidence.judge_model !== undefined ? evidence.judge_model : first,
    fallbacks: evidence.judge_fallbacks ?? [],
    hedged: evidence.hedged === true
  }
}

/** A logged consultation as a chain: its answer or last failure, with the logged trail. */
const chainOf = <A>(record: Record, first: string, self: Effect.Effect<A, JudgeError>) => {
  const trail = loggedTrail(record, first)
  return Effect.mapBoth(self, {
    onSuccess: (answer): JudgeChain.Chained<A> => ({ answer, trail }),
    onFailure: (failure): JudgeChain.Unanswered => ({ failure, trail })
  })
}

/** The replayed answer of a judge question, from what the record says of it. */
const consultantsOf = (record: Record): RouteHost.Consultants<never> => ({
  Capability: (question) =>
    chainOf(
      record,
      question.options.judge.id,
      answered(RoutingRecord.judgeFact(record, RouteHost.answerIn.Capability), question.options.judge.id)
    ),
  Custom: (question) =>
    chainOf(
      record,
      question.options.judge.id,
      answered(RoutingRecord.judgeFact(record, RouteHost.answerIn.Custom), question.options.judge.id)
    ),
  Escalation: (question) => {
    const target = question.options.judge.id
    if (question.turn === "weak") {
      return EscalationRules.strongPhase(record)
        ? notLogged
        : chainOf(record, target, answered(RoutingRecord.judgeFact(record, EscalationRules.weakVoteOf), target))
    }
    return !EscalationRules.strongPhase(record) || record.evidence === null
      ? notLogged
      : chainOf(record, target, answered(strongReview(record.evidence), target))
  },
  Advisor: (question) =>
    JudgeChain.one(question.options.advisor.id, answered(advisorFact(record), question.options.advisor.id))
})

/**
 * Every judge unreachable (a judge outage): each consultation fails with a `transport` failure of
 * the last judge of its chain, every judge before it a `transport` fallback — what the posture then
 * makes of it is the route's. An advisor's consultation fails alike.
 */
const outageFailure = (judges: ReadonlyArray<{ readonly id: string }>): JudgeChain.Unanswered => {
  const models = judges.map((judge) => judge.id)
  const last = models[models.length - 1] ?? ""
  return {
    failure: new TransportError({ target: last, reason: "judge outage (replay)" }),
    trail: {
      judgeModel: last,
      fallbacks: models.slice(0, -1).map((model) => ({ model, reason: "transport" })),
      hedged: false
    }
  }
}

const outageConsultants: RouteHost.Consultants<never> = {
  Capability: (question) => Effect.fail(outageFailure(JudgeChain.judgesOf(question.options))),
  Custom: (question) => Effect.fail(outageFailure(JudgeChain.judgesOf(question.options))),
  Escalation: (question) => Effect.fail(outageFailure(JudgeChain.judgesOf(question.options))),
  Advisor: (question) => Effect.fail(outageFailure([question.options.advisor]))
}

/** The signals of a logged request. */
const signalsOf = (record: Record): RouteHost.Signals => ({
  userTurn: () => record.user_turn,
  // The log has no message hash: requests without a session id replay without a stored decision.
  messageHash: () => Effect.succeedNone,
  stage: () => {
    const facts = RoutingRecord.stageFactsOf(record)
    if (facts === undefined) return notLogged
    return Effect.succeed({
      reading: readingOf(facts),
      dimensions: {
        severity: facts.severity,
        spinning: facts.spinning,
        exploring: facts.exploring,
        production_intensity: facts.production_intensity
      }
    })
  },
  trigger: () =>
    record.advisor === undefined
      ? notLogged
      : Effect.succeed({ trigger: Option.fromNullable(record.advisor.trigger), conversation: Option.none() })
})

/**
 * The signal reading a turn's logged stage facts hold: an override (its reason is logged on the
 * turns the capable hold decided too), a settled turn, else the logged score.
 */
const readingOf = (facts: Evidence.StageFacts): RouteHost.StageReading["reading"] =>
  facts.override_reason !== undefined
    ? { _tag: "Override", reason: facts.override_reason }
    : facts.decision_source === "override"
    ? { _tag: "Override", reason: "critical_error" }
    : facts.decision_source === "tests_passed"
    ? { _tag: "TestsPassed" }
    : { _tag: "Scored", score: facts.score, confidence: facts.confidence }

/** A store of the replay's own, unbounded (a replay keeps what the logged run kept, and forgets what the log says it forgot). */
const replayStore = <S>(): RouteHost.Store<S> => {
  const entries = new Map<string, S>()
  const parts: Pick<RouteHost.Store<S>, "get" | "put" | "remove"> = {
    get: (key) => Effect.sync(() => Option.fromNullable(entries.get(key))),
    put: (key, value) => Effect.sync(() => void entries.set(key, value)),
    remove: (key) => Effect.sync(() => void entries.delete(key))
  }
  return { ...parts, modify: RouteHost.modifyByParts(parts) }
}

/** The replay's session of a record: where its facts come from while the program runs. */
interface Current {
  record: Record
  late: LateVerdicts
}

/**
 * A store as the log shows it: a read of a key first forgets it when the record says the logged run
 * found nothing stored, then stores the late verdict the logged run found stored (`stored_before.late`:
 * the newest the log holds for the session, as the space's rules store it).
 */
const viewed = <S>(
  current: Current,
  store: RouteHost.Store<S>,
  rules: RouteHost.ReplayRules<S>
): RouteHost.Store<S> => {
  const before = (key: string) =>
    Effect.suspend(() => {
      const { late, record } = current
      const forget = rules.forgotten(record) ? store.remove(key) : Effect.void
      if (record.stored_before?.late !== true || rules.late === undefined || record.session_id === null) return forget
      const startedMs = record.ts === undefined ? Infinity : Date.parse(record.ts) - (record.latency_ms ?? 0)
      const stored = Option.flatMap(late.take(record.session_id, startedMs), rules.late)
      return Option.match(stored, {
        onNone: () => forget,
        onSome: (value) => Effect.zipRight(forget, store.put(key, value))
      })
    })
  return {
    get: (key) => Effect.zipRight(before(key), store.get(key)),
    put: store.put,
    remove: store.remove,
    modify: (key, f) => Effect.zipRight(before(key), store.modify(key, f))
  }
}

/** One replay's host: its state, and the host of each record as the replay reaches it. */
export interface Replay {
  /**
   * The host serving the program for `record` (`late`: the route's late verdicts read so far);
   * `down`: every judge is unreachable for it (a judge outage, {@link outageConsultants}).
   */
  readonly at: (record: Record, late: LateVerdicts, down?: boolean) => RouteHost.Host
}

/** A fresh replay: its own state, kept across the records it is given. */
export const start = (): Replay => {
  const current: Current = {
    record: {
      session_id: null,
      algorithm: null,
      selected_model: null,
      tier: null,
      user_turn: false,
      error: null,
      evidence: null,
      posture: null,
      trigger: null,
      judge: null,
      stored_before: null,
      stored_after: null
    },
    late: noLateVerdicts
  }
  const opener: RouteHost.StoreOpener = {
    sessions: replayStore(),
    local: replayStore,
    view: (store, rules) => viewed(current, store, rules)
  }
  return {
    at: (record, late, down = false) => {
      current.record = record
      // an outage brings no late verdict either
      current.late = down ? noLateVerdicts : late
      const consultants = down ? outageConsultants : consultantsOf(record)
      return {
        consult: (question) => RouteHost.dispatch(consultants, question),
        call: (call) => callOf(record, call),
        store: (space) => space.open(opener),
        exclusive: () => (self) => self,
        signals: signalsOf(record),
        record: () => Effect.void
      }
    }
  }
}

/** A request as the replay hands it to a program: the record's session; the log holds no message. */
const requestOf = (record: Record): RoutedRequest => ({
  body: { model: "", messages: [] },
  headers: {},
  sessionId: Option.map(Option.fromNullable(record.session_id), SessionId.make)
})

/** What the replay of a route type reads of the log: what it logged, and its program. */
export interface Replayable {
  /** What kind of route it is (in the report). */
  readonly kind: "capability" | "custom" | "stage_router" | "composite" | "escalation" | "advisor"
  /** The `algorithm` its lines carry; lines of another algorithm are not replayed. */
  readonly algorithm: string
  /** Its destinations, in the order a report lists them. */
  readonly destinations: ReadonlyArray<string>
  /** What the log says a record came to (the route type's reading of its own records). */
  readonly logged: (record: Record) => Outcome
  /** A fresh program (its own instance: a replay keeps nothing of another's). */
  readonly program: () => RouteHost.Program
}

/** A route's replay procedure. */
export interface Replayer extends Omit<Replayable, "program"> {
  /**
   * A fresh replay (its own state): each call re-decides the route's next record, in file order,
   * under this replayer's settings; `late` holds the late verdicts of the route's judge lines read
   * so far.
   */
  readonly start: (options?: ReplayOptions) => (record: Record, late: LateVerdicts) => Effect.Effect<Outcome>
}

/** How a replay treats its records. */
export interface ReplayOptions {
  /** The records replayed as if every judge were unreachable (`switchyard replay --judge-outage`). */
  readonly outage?: (record: Record) => boolean
}

/** The destination delegated sub-agent requests are counted under; they replay as logged. */
export const subagentDestination = "sub-agent (as logged)"

/** What a replayed run came to: its decision read back as the log would have it, its failure, or unknown. */
const outcomeOf = (
  replayable: Replayable,
  record: Record,
  reported: RoutingRecord.Reported,
  exit: Exit.Exit<Decision.Decision, RouteFailure>
): Effect.Effect<Outcome> =>
  Exit.match(exit, {
    onSuccess: (decision) =>
      Effect.succeed(replayable.logged({
        ...RoutingRecord.decidedOf(Option.some(decision), reported),
        session_id: record.session_id,
        user_turn: record.user_turn,
        error: null,
        judge: null
      })),
    onFailure: (cause) => {
      if (Cause.isInterruptedOnly(cause)) return Effect.succeed(unknown)
      return Option.match(Cause.failureOption(cause), {
        onNone: () => Effect.failCause(cause).pipe(Effect.orDie),
        onSome: (failure): Effect.Effect<Outcome> =>
          Effect.succeed(
            failure._tag === "JudgeUnavailable" || failure._tag === "AdvisorUnavailable"
              ? { _tag: "Failed", reason: Consultation.reasonOf(failure.failure) }
              : unknown
          )
      })
    }
  })

/**
 * The replayer of a route type: each record runs a fresh program of its own on the replay's host
 * (delegated sub-agent requests count as logged; their route is not the route's algorithm).
 */
export const replayer = (replayable: Replayable): Replayer => ({
  kind: replayable.kind,
  algorithm: replayable.algorithm,
  destinations: replayable.destinations,
  logged: replayable.logged,
  start: (options = {}) => {
    const replay = start()
    const program = replayable.program()
    return (record, late) => {
      if (RoutingRecord.isDelegated(record)) return Effect.succeed(replayable.logged(record))
      let reported: RoutingRecord.Reported = {}
      const observer: RoutingFacts.Observer = {
        ...RoutingFacts.ignored,
        routed: (facts) => {
          reported = RoutingRecord.withFacts(reported, facts)
        }
      }
      return program(requestOf(record)).pipe(
        Effect.provideService(RouteHost.RouteHost, replay.at(record, late, options.outage?.(record) ?? false)),
        RoutingFacts.observe(observer),
        Effect.exit,
        Effect.flatMap((exit) => Effect.suspend(() => outcomeOf(replayable, record, reported, exit)))
      )
    }
  }
})
