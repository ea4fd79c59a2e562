/**
 * The `advisor` route (the advisor gate, algorithm `advisor_gate`): an executor target answers
 * every turn the client sees; when its turn would end the work (no tool call, or text matching a
 * pattern, or a stalled conversation), a stronger advisor reviews it before it is released.
 *
 * Per request:
 *
 * 1. Scope: the caller's session id (`x-switchyard-session-id`), else one instance-wide scope.
 *    A scope whose reviews are used up (`max_reviews`) or that had 3 failed consults routes like a
 *    passthrough to the executor (no answer produced here, no fallbacks; streams stay live). A
 *    session's last request (`session_final`) drops its scope once routed; the instance-wide scope
 *    is never dropped.
 * 2. The executor answers, buffered, one candidate; its failures fail the request as they are
 *    (a context overflow stays a 400).
 * 3. No trigger → the turn is released. Trigger → one review is reserved (none left: released
 *    unreviewed) and the advisor is consulted: non-streaming, one candidate, never a fallback.
 * 4. APPROVE → released. REDO → the turn is discarded, appended with the advisor's plan as user
 *    feedback, and the executor answers again (a plain call); that answer is released.
 * 5. A failed consultation refunds the review and counts a failed consult. The consultation runs
 *    through `Consultation.run` with the same `Posture` combinator as a judge's: `fail_open = true`
 *    → the turn is released without the advisor's verdict (a WARN line, rate-limited per reason
 *    and trigger as a judge's is); `fail_open = false` → the request fails with
 *    `AdvisorUnavailable` (502, 504; 503 for an open breaker, which comes back `Refused` and is
 *    settled by the route as the capability route does). An unparseable reply is an
 *    `InvalidVerdict`, folded by the posture under both settings: the turn is released, counted
 *    `unparseable`, and the consult counts as failed.
 *
 * The released answer travels in an `Answered` decision; the `Router` replays it to streaming callers.
 */
import * as TaggedMetric from "@switchyard-ts/client/TaggedMetric"
import type { Target } from "@switchyard-ts/client/Target"
import { AdvisorUnavailable } from "@switchyard-ts/protocol/Errors"
import { type ChatCompletion, tokenCounts, type Usage } from "@switchyard-ts/protocol/OpenAiChat"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as Decision from "../../Decision.js"
import type * as Evidence from "../../Evidence.js"
import * as LiveHost from "../../host/LiveHost.js"
import * as ReplayHost from "../../host/ReplayHost.js"
import * as RouteHost from "../../host/RouteHost.js"
import * as RoutingFacts from "../../host/RoutingFacts.js"
import type * as RoutingRecord from "../../host/RoutingRecord.js"
import * as Warnings from "../../internal/warnings.js"
import * as Consultation from "../../judge/Consultation.js"
import * as Posture from "../../judge/Posture.js"
import * as Metrics from "../../Metrics.js"
import type { Route, RoutedRequest } from "../../Route.js"
import * as SessionIdentity from "../../sessions/SessionIdentity.js"
import * as AdvisorReview from "./AdvisorReview.js"

/** What makes a turn eligible for review (`gate_trigger`). */
export type GateTrigger = "no_tool_call" | "pattern"

/** Options of an advisor route (its TOML keys, validated). */
export interface Options extends AdvisorReview.ReviewOptions {
  readonly id: string
  readonly name: string
  /** `executor_target`: answers every turn the client sees. */
  readonly executor: Target
  /** `gate_trigger` (default `no_tool_call`). */
  readonly gateTrigger: GateTrigger
  /** `gate_trigger_pattern`: searched (not anchored) in the turn's visible text; set exactly with `pattern`. */
  readonly gateTriggerPattern: Option.Option<RegExp>
  /** `max_reviews` >= 1 (default 1): reviews per scope. */
  readonly maxReviews: number
  /** `gate_stall_turns` (default 0, off): review once per conversation after this many assistant turns. */
  readonly gateStallTurns: number
  /** `gate_min_tool_results` (default 0): `no_tool_call` needs at least this many tool results. */
  readonly gateMinToolResults: number
  /** `fail_open` (default true): the posture of a failed consultation. */
  readonly failOpen: boolean
  /** `redo_feedback_prefix`: replaces the packaged prefix when set. */
  readonly redoFeedbackPrefix: Option.Option<string>
  readonly contextWindow?: Option.Option<number>
  readonly toolCalling?: Option.Option<boolean>
}

/** Failed consults after which a scope is no longer reviewed. */
export const maxFailedConsults = 3

/** Session scopes (and stall-trigger conversations) tracked at once; the least recently used go first. */
export const maxTrackedScopes = 1024

/** A scope's review budget. */
export interface Budget {
  /** Reviews used (successful consults), in `0..max_reviews`. */
  readonly reviews: number
  /** Failed consults (call failures and unparseable replies), in `0..3`. */
  readonly failedConsults: number
}

/** An advisor route, with a view of its budgets (for tests and operators). */
export interface AdvisorRoute extends Route {
  /** The budget of a session's scope, or of the instance-wide scope for none. */
  readonly budget: (sessionId: Option.Option<string>) => Effect.Effect<Budget>
}

/** The settings the decision rules read (a route's options, or a deployment's route spec). */
export type Settings = Pick<Options, "maxReviews">

/** A fresh scope's budget. */
export const freshBudget: Budget = { reviews: 0, failedConsults: 0 }

/** Why a scope is not reviewed any more (its failed consults, else its reviews, are used up); none while it is. */
export const spent = (settings: Settings, budget: Budget): Option.Option<Evidence.AdvisorSkip> =>
  budget.failedConsults >= maxFailedConsults
    ? Option.some("consult_failures")
    : budget.reviews >= settings.maxReviews
    ? Option.some("budget_exhausted")
    : Option.none()

/** A scope's budget after a consultation: a failed one gives its review back and counts towards the failure cap. */
export const afterConsult = (budget: Budget, consult: "approve" | "redo" | Evidence.Reason): Budget =>
  consult === "approve" || consult === "redo"
    ? budget
    : {
      reviews: Math.max(0, budget.reviews - 1),
      failedConsults: Math.min(maxFailedConsults, budget.failedConsults + 1)
    }

/**
 * The evidence of a reviewed turn: APPROVE releases it, REDO has the executor answer again; without
 * the advisor's verdict (the posture folded a failure) it is released — `unparseable` for an
 * unusable reply, else with the failure's reason.
 */
export const reviewEvidence = (
  outcome: Consultation.Outcome<"approve" | "redo">,
  trigger: Evidence.AdvisorTrigger,
  advisorModel: string
): Evidence.Evidence =>
  outcome._tag === "Verdict"
    ? { source: "advisor", verdict: outcome.verdict, trigger, advisor_model: advisorModel }
    : outcome.reason === "parse_error"
    ? { source: "advisor", verdict: "unparseable", trigger, advisor_model: advisorModel }
    : { source: "advisor", reason: outcome.reason, trigger, advisor_model: advisorModel }

/** The evidence of a turn the gate did not review. */
export const skipEvidence = (
  skip: Evidence.AdvisorSkip,
  trigger: Option.Option<Evidence.AdvisorTrigger>,
  advisorModel: string
): Evidence.Evidence => ({
  source: "advisor",
  verdict: "skipped",
  ...Option.match(trigger, { onNone: () => ({}), onSome: (t) => ({ trigger: t }) }),
  skipped: skip,
  advisor_model: advisorModel
})

/** The `posture` of a route's `fail_open` key: the same combinator a judge's `judge_failure` goes through. */
export const postureOf = (failOpen: boolean): Posture.Posture => (failOpen ? "fail_open" : "error")

/** Add a discarded turn's usage to `switchyard_advisor_gate_discarded_tokens_total` by kind. */
const countDiscardedTokens = (usage: Usage | null | undefined): Effect.Effect<void> => {
  if (usage === null || usage === undefined) return Effect.void
  const { cacheCreation, cached, completion, prompt } = tokenCounts(usage)
  const kinds: ReadonlyArray<readonly [string, number]> = [
    ["input", Math.max(0, prompt - cached - cacheCreation)],
    ["cached", cached],
    ["cache_creation", cacheCreation],
    ["output", completion]
  ]
  return Effect.forEach(
    kinds,
    ([kind, tokens]) =>
      tokens > 0
        ? Metric.update(Metrics.advisorGateDiscardedTokensTotal.pipe(Metric.tagged("kind", kind)), tokens)
        : Effect.void,
    { discard: true }
  )
}

const countReview = (verdict: "approve" | "redo" | "unparseable", trigger: Evidence.AdvisorTrigger) =>
  Metric.update(
    Metrics.advisorGateReviewsTotal.pipe(Metric.tagged("verdict", verdict), Metric.tagged("trigger", trigger)),
    1
  )

/** The key of the instance-wide scope (requests without a session id) in its space. */
const instanceKey = "instance"

/**
 * The review scopes of one route: session scopes (least recently used dropped beyond
 * {@link maxTrackedScopes}), the instance-wide scope (never dropped), and the conversations the
 * stall trigger already reviewed. A logged request whose scope had used nothing (no review, no failed
 * consult) had a fresh scope (new, dropped, or ended by `session_final`): so has its replay.
 */
const scopeSpaces = () => {
  const fresh = (record: RoutingRecord.RoutingRecord) =>
    record.advisor !== undefined && record.advisor.reviews_before === 0 &&
    record.advisor.failed_consults_before === 0
  return {
    sessions: RouteHost.local<Budget>(maxTrackedScopes, { forgotten: fresh }),
    instance: RouteHost.local<Budget>(1, { forgotten: fresh }),
    stalled: RouteHost.local<true>(maxTrackedScopes, { forgotten: RouteHost.neverForgotten })
  }
}

/** A request's scope: its store and key. */
interface Scope {
  readonly store: RouteHost.Store<Budget>
  readonly key: string
}

/** What a request tells the routing log of its gate: consult none before the consultation, or how it came out. */
type Advise = (
  trigger: Option.Option<Evidence.AdvisorTrigger>,
  consult: Option.Option<"approve" | "redo" | Evidence.Reason>
) => Effect.Effect<void, never, RoutingFacts.Reporter>

/** What one advisor route's program gates requests with. */
interface Gate {
  readonly options: Options
  readonly spaces: ReturnType<typeof scopeSpaces>
  /** The posture of the route's `fail_open`, as its combinator. */
  readonly posture: Posture.Combinator
  /** The decision of a gated request: the turn released (or answered again), or none — a passthrough to the executor. */
  readonly decision: (evidence: Evidence.Evidence, answer: Option.Option<ChatCompletion>) => Decision.Decision
  /** The rate limit of the "without the advisor's verdict" WARN line, per reason and trigger. */
  readonly warnings: Warnings.Warnings
}

/** The scope of a request: its session's, else the instance-wide one. */
const scopeOf = (host: RouteHost.Host, gate: Gate, sessionId: Option.Option<string>): Scope =>
  Option.match(sessionId, {
    onNone: () => ({ store: host.store(gate.spaces.instance), key: instanceKey }),
    onSome: (id) => ({ store: host.store(gate.spaces.sessions), key: id })
  })

/** The scope's budget, its entry made (or made the most recent). */
const budgetOf = (scope: Scope): Effect.Effect<Budget> =>
  scope.store.modify(scope.key, (stored) => {
    const budget = Option.getOrElse(stored, () => freshBudget)
    return [budget, Option.some(budget)] as const
  })

/** Take one review from the scope, atomically; why not when it has none left (another request raced us). */
const reserve = (settings: Settings, scope: Scope): Effect.Effect<Option.Option<Evidence.AdvisorSkip>> =>
  scope.store.modify(scope.key, (stored) => {
    const budget = Option.getOrElse(stored, () => freshBudget)
    const skip = spent(settings, budget)
    return [skip, Option.some(Option.isNone(skip) ? { ...budget, reviews: budget.reviews + 1 } : budget)] as const
  })

/** Settle a failed consult in the scope's budget. */
const failedConsult = (scope: Scope, reason: Evidence.Reason): Effect.Effect<void> =>
  scope.store.modify(scope.key, (stored) => {
    const budget = Option.getOrElse(stored, () => freshBudget)
    return [undefined, Option.some(afterConsult(budget, reason))] as const
  })

/**
 * Consult the advisor on `turn` (the scope's review is already reserved): a failed consult is
 * settled in the scope's budget and counted whatever the posture then does; the consultation goes
 * through the route's posture (`Consultation.run`), and the verdict releases the turn or has the
 * executor answer again.
 */
const review = Effect.fnUntraced(function*(
  host: RouteHost.Host,
  gate: Gate,
  request: RoutedRequest,
  scope: Scope,
  turn: ChatCompletion,
  trigger: Evidence.AdvisorTrigger,
  advised: Advise
) {
  const { options } = gate
  const advisorModel = options.advisor.id
  const outcome = yield* host.consult({ _tag: "Advisor", options, request, turn, trigger }).pipe(
    Effect.tapError(({ failure }) => {
      const reason = Consultation.reasonOf(failure)
      return Effect.all([
        failedConsult(scope, reason),
        advised(Option.some(trigger), Option.some(reason)),
        host.record(
          reason === "parse_error"
            ? countReview("unparseable", trigger)
            : Effect.sync(() => TaggedMetric.unsafeUpdate(Metrics.advisorGateConsultFailuresTotal, { reason }, 1))
        )
      ], { discard: true })
    }),
    Consultation.runChained(gate.posture),
    Effect.mapError((failure) => new AdvisorUnavailable({ advisorModel, failure }))
  )
  const judged: Consultation.Outcome<"approve" | "redo"> = outcome._tag === "Verdict"
    ? Consultation.Verdict({ verdict: outcome.verdict._tag === "Approve" ? "approve" : "redo" })
    : Consultation.WithoutVerdict({ reason: outcome.reason })
  const evidence = reviewEvidence(judged, trigger, advisorModel)
  if (outcome._tag === "WithoutVerdict") {
    yield* host.record(Warnings.warn(
      gate.warnings,
      `${outcome.reason}\u0000${trigger}`,
      (count) =>
        Effect.logWarning("releasing the executor's turn without the advisor's verdict").pipe(
          Effect.annotateLogs({
            route: options.id,
            advisor_model: advisorModel,
            reason: outcome.reason,
            trigger,
            count
          })
        )
    ))
    return gate.decision(evidence, Option.some(turn))
  }
  const verdict = outcome.verdict
  yield* advised(Option.some(trigger), Option.some(verdict._tag === "Approve" ? "approve" : "redo"))
  if (verdict._tag === "Approve") {
    yield* host.record(countReview("approve", trigger))
    return gate.decision(evidence, Option.some(turn))
  }
  yield* host.record(
    Effect.zipRight(
      Effect.zipRight(countReview("redo", trigger), Metric.increment(Metrics.advisorGateDiscardedTurnsTotal)),
      countDiscardedTokens(turn.usage)
    )
  )
  const messages = AdvisorReview.redoMessages(request.body.messages, turn, options.redoFeedbackPrefix, verdict.plan)
  const again = yield* host.call({
    kind: "redo_turn",
    target: options.executor,
    body: { ...request.body, messages },
    headers: request.headers
  })
  return gate.decision(evidence, Option.some(again))
})

/**
 * One request through the gate: a spent scope passes through to the executor; else the executor
 * answers, and a triggered turn is reviewed when a review can be reserved.
 */
const gateRequest = Effect.fnUntraced(function*(host: RouteHost.Host, gate: Gate, request: RoutedRequest) {
  const { options } = gate
  const advisorModel = options.advisor.id
  const scope = scopeOf(host, gate, request.sessionId)
  const before = yield* budgetOf(scope)
  // What a policy replay needs: the scope's budget before this request, what triggered, how the consult ended.
  const advised: Advise = (trigger, consult) =>
    RoutingFacts.report((observer) =>
      observer.routed({
        _tag: "Advised",
        posture: postureOf(options.failOpen),
        reviewsBefore: before.reviews,
        failedConsultsBefore: before.failedConsults,
        trigger,
        consult
      })
    )
  const skip = spent(options, before)
  if (Option.isSome(skip)) {
    yield* advised(Option.none(), Option.none())
    return gate.decision(skipEvidence(skip.value, Option.none(), advisorModel), Option.none())
  }

  const turn = yield* host.call({
    kind: "executor_turn",
    target: options.executor,
    body: request.body,
    headers: request.headers
  }).pipe(Effect.tapError(() => advised(Option.none(), Option.none())))
  const stalled = host.store(gate.spaces.stalled)
  const { conversation, trigger } = yield* host.signals.trigger(
    request,
    turn,
    options,
    (key) => Effect.map(stalled.get(key), Option.isNone)
  )
  if (Option.isNone(trigger)) {
    yield* advised(Option.none(), Option.none())
    return gate.decision(skipEvidence("no_trigger", Option.none(), advisorModel), Option.some(turn))
  }

  const raced = yield* reserve(options, scope)
  if (Option.isSome(raced)) {
    yield* advised(trigger, Option.none())
    return gate.decision(skipEvidence(raced.value, trigger, advisorModel), Option.some(turn))
  }
  if (trigger.value === "stall" && Option.isSome(conversation)) yield* stalled.put(conversation.value, true)
  return yield* review(host, gate, request, scope, turn, trigger.value, advised)
})

/** What an advisor route's program keeps: its gate (for {@link make}'s view of the budgets). */
const gateOf = (options: Options): Gate => {
  const info = { id: options.id, name: options.name, algorithm: "advisor_gate" } as const
  return {
    options,
    spaces: scopeSpaces(),
    posture: Posture.fromConfig(postureOf(options.failOpen)),
    warnings: Warnings.make(),
    decision: (evidence, answer) =>
      Option.match(answer, {
        onNone: () => Decision.routed({ route: info, selected: options.executor, fallbacks: [], evidence }),
        onSome: (released) =>
          Decision.answered({ route: info, answer: released, servedBy: Option.some(options.executor), evidence })
      })
  }
}

/** The program of a gate: a session's last request (`session_final`) drops the session's scope once routed. */
const programOf = (gate: Gate): RouteHost.Program => (request) =>
  Effect.flatMap(RouteHost.RouteHost, (host) =>
    Option.match(request.sessionId, {
      onNone: () => gateRequest(host, gate, request),
      onSome: (id) =>
        SessionIdentity.forgetOnFinal(
          gateRequest(host, gate, request),
          request.headers,
          host.store(gate.spaces.sessions).remove(id)
        )
    }))

/** An advisor route's program (see the module doc). */
export const program = (options: Options): RouteHost.Program => programOf(gateOf(options))

/**
 * Build an advisor route: its {@link program} on a live host (`LiveHost`: the `UpstreamClient` for
 * its executor and advisor calls), with a view of its budgets. Its discarded-turn counter
 * (`switchyard_advisor_gate_discarded_turns_total`) exists from then on, at 0 until a turn is
 * discarded.
 */
export const make = (options: Options): Effect.Effect<AdvisorRoute, never, LiveHost.Services> =>
  Effect.zipLeft(
    Effect.map(LiveHost.make({ algorithm: "advisor_gate", late: Option.none(), route: options.id }), (host) =>
      gateRoute(options, host)),
    Metric.update(Metrics.advisorGateDiscardedTurnsTotal, 0)
  )

/** An advisor route over `host`. */
const gateRoute = (options: Options, host: RouteHost.Host): AdvisorRoute => {
  const gate = gateOf(options)
  const route: AdvisorRoute = {
    id: options.id,
    name: options.name,
    algorithm: "advisor_gate",
    targets: [options.executor],
    contextWindow: options.contextWindow ?? Option.none(),
    toolCalling: options.toolCalling ?? Option.none(),
    decide: LiveHost.serve(host, programOf(gate)),
    budget: (sessionId) =>
      Effect.map(
        scopeOf(host, gate, sessionId).store.get(Option.getOrElse(sessionId, () => instanceKey)),
        (budget) => Option.getOrElse(budget, () => freshBudget)
      )
  }
  return route
}

/** Where an advisor route's request went: the executor's turn released, or answered again after a REDO. */
const released = "released"
const redone = "redone"

/** What the log says an advisor route's record came to. */
export const logged = (record: RoutingRecord.Decided): ReplayHost.Outcome => {
  const evidence = record.evidence
  if (evidence === null) {
    const consult = record.advisor?.consult
    return consult === undefined || consult === null || consult === "approve" || consult === "redo"
      ? ReplayHost.unknown
      : { _tag: "Failed", reason: consult }
  }
  if (evidence.source !== "advisor") return ReplayHost.unknown
  if ("reason" in evidence) return ReplayHost.routed(released, "fail-open", evidence.reason)
  switch (evidence.verdict) {
    case "approve":
      return ReplayHost.routed(released, "approve")
    case "redo":
      return ReplayHost.routed(redone, "redo")
    case "unparseable":
      return ReplayHost.routed(released, "unparseable")
    case "skipped":
      return ReplayHost.routed(released, `skipped: ${evidence.skipped ?? "no_trigger"}`)
  }
}

/** An advisor route's replay: its {@link program} on the log's facts, read back as {@link logged}. */
export const replayable = (options: Options): ReplayHost.Replayable => ({
  kind: "advisor",
  algorithm: "advisor_gate",
  destinations: [released, redone],
  logged,
  program: () => program(options)
})
