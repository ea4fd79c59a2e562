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
import * as Spans from "@switchyard-ts/client/Spans"
import * as TaggedMetric from "@switchyard-ts/client/TaggedMetric"
import type { Target } from "@switchyard-ts/client/Target"
import { UpstreamClient } from "@switchyard-ts/client/UpstreamClient"
import { AdvisorUnavailable, type ClientFailure } from "@switchyard-ts/protocol/Errors"
import {
  type ChatCompletion,
  type ChatCompletionRequest,
  tokenCounts,
  type Usage
} from "@switchyard-ts/protocol/OpenAiChat"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as AdvisorReview from "./AdvisorReview.js"
import * as Consultation from "./Consultation.js"
import type { JudgeError } from "./Consultation.js"
import * as Conversation from "./Conversation.js"
import * as Decision from "./Decision.js"
import type * as Evidence from "./Evidence.js"
import * as Warnings from "./internal/warnings.js"
import * as Metrics from "./Metrics.js"
import * as Posture from "./Posture.js"
import type { Route, RoutedRequest } from "./Route.js"
import * as RoutingFacts from "./RoutingFacts.js"
import * as SessionIdentity from "./SessionIdentity.js"
import { invalid } from "./Verdict.js"

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
export const reviewed = (
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
export const skipped = (
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

interface ScopeState {
  reviews: number
  failedConsults: number
}

/** Insertion order is recency order: touching a key moves it last; beyond the bound the first goes. */
const touch = <V>(map: Map<string, V>, key: string, value: V): V => {
  map.delete(key)
  map.set(key, value)
  while (map.size > maxTrackedScopes) {
    const oldest = map.keys().next()
    if (oldest.done === true) break
    map.delete(oldest.value)
  }
  return value
}

/** The `posture` of a route's `fail_open` key: the same combinator a judge's `judge_failure` goes through. */
export const postureOf = (failOpen: boolean): Posture.Posture => (failOpen ? "fail_open" : "error")

const llmCall = (model: string, outcome: "ok" | "error", durationMs: number, usage?: Usage | null) =>
  Metrics.recordLlmCall("advisor_gate", model, outcome, durationMs, usage)

const refusedByBreaker = (exit: Exit.Exit<unknown, ClientFailure>): boolean =>
  Exit.isFailure(exit) && Option.exists(Cause.failureOption(exit.cause), (error) => error._tag === "CircuitOpen")

/** Record a routing-time call in `switchyard_llm_calls_total`; a call refused by a breaker made no request. */
const recorded = (
  model: string,
  call: Effect.Effect<ChatCompletion, ClientFailure>
): Effect.Effect<ChatCompletion, ClientFailure, RoutingFacts.Reporter> =>
  Effect.flatMap(Clock.currentTimeMillis, (start) =>
    call.pipe(Effect.onExit((exit) =>
      refusedByBreaker(exit)
        ? Effect.void
        : Effect.flatMap(
          Clock.currentTimeMillis,
          (end) =>
            Exit.isSuccess(exit)
              ? llmCall(model, "ok", end - start, exit.value.usage)
              : llmCall(model, "error", end - start)
        )
    )))

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

/** The advisor's verdict on `turn`, its unusable replies as `InvalidVerdict`s (folded by the posture). */
const consultAdvisor = (
  options: Options,
  upstream: UpstreamClient["Type"],
  request: RoutedRequest,
  turn: ChatCompletion
): Effect.Effect<AdvisorReview.Verdict, JudgeError, RoutingFacts.Reporter> =>
  recorded(
    options.advisor.id,
    upstream.complete({
      target: options.advisor,
      body: AdvisorReview.requestBody(options, request.body.messages, turn),
      headers: request.headers
    })
  ).pipe(
    Effect.catchTag(
      "InvalidResponse",
      () => Effect.fail(invalid("invalid_response", "advisor body is not a chat completion"))
    ),
    Effect.catchTag("TranslationError", () =>
      Effect.fail(
        invalid("invalid_response", "advisor request cannot be sent in its upstream's format")
      )),
    Effect.flatMap((completion) =>
      Option.match(AdvisorReview.parseVerdict(completion.choices[0]?.message.content ?? ""), {
        onNone: () => Effect.fail(invalid("parse_error", "advisor reply has no APPROVE or REDO")),
        onSome: Effect.succeed
      })
    )
  )

/**
 * The review scopes of one route: the instance-wide scope, session scopes (least recently used
 * dropped beyond {@link maxTrackedScopes}) and the conversations the stall trigger already reviewed.
 */
const makeScopes = () => {
  const instance: ScopeState = { reviews: 0, failedConsults: 0 }
  const sessions = new Map<string, ScopeState>()
  const stalled = new Map<string, true>()
  return {
    of: (sessionId: Option.Option<string>): Effect.Effect<ScopeState> =>
      Effect.sync(() =>
        Option.match(sessionId, {
          onNone: () => instance,
          onSome: (id) => touch(sessions, id, sessions.get(id) ?? { reviews: 0, failedConsults: 0 })
        })
      ),
    drop: (sessionId: string) => Effect.sync(() => sessions.delete(sessionId)),
    stalled: (conversation: string): boolean => stalled.has(conversation),
    markStalled: (conversation: string) => Effect.sync(() => touch(stalled, conversation, true)),
    budget: (sessionId: Option.Option<string>): Budget => {
      const scope = Option.match(sessionId, { onNone: () => instance, onSome: (id) => sessions.get(id) })
      return { reviews: scope?.reviews ?? 0, failedConsults: scope?.failedConsults ?? 0 }
    }
  }
}

/** Which trigger (if any) asks for a review of `turn`; the stall trigger also needs an unreviewed conversation. */
const triggerOf = (
  options: Options,
  request: RoutedRequest,
  turn: ChatCompletion,
  unreviewedStall: boolean
): Option.Option<Evidence.AdvisorTrigger> => {
  const messages = request.body.messages
  const configured = options.gateTrigger === "no_tool_call"
    ? AdvisorReview.toolCallCount(turn) === 0 &&
      messages.filter((message) => message.role === "tool").length >= options.gateMinToolResults
    : Option.exists(options.gateTriggerPattern, (pattern) => pattern.test(AdvisorReview.visibleText(turn)))
  if (configured) return Option.some(options.gateTrigger)
  const assistantTurns = messages.filter((message) => message.role === "assistant").length + 1
  const stall = options.gateStallTurns > 0 && assistantTurns >= options.gateStallTurns && unreviewedStall
  return stall ? Option.some("stall") : Option.none()
}

/** What a request tells the routing log of its gate: consult none before the consultation, or how it came out. */
type Advise = (
  trigger: Option.Option<Evidence.AdvisorTrigger>,
  consult: Option.Option<"approve" | "redo" | Evidence.Reason>
) => Effect.Effect<void, never, RoutingFacts.Reporter>

/** What one advisor route gates requests with. */
interface Gate {
  readonly options: Options
  readonly upstream: UpstreamClient["Type"]
  readonly scopes: ReturnType<typeof makeScopes>
  /** The posture of the route's `fail_open`, as its combinator. */
  readonly posture: Posture.Combinator
  /** The decision of a gated request: the turn released (or answered again), or none — a passthrough to the executor. */
  readonly decision: (evidence: Evidence.Evidence, answer: Option.Option<ChatCompletion>) => Decision.Decision
  /** The rate limit of the "without the advisor's verdict" WARN line, per reason and trigger. */
  readonly warnings: Warnings.Warnings
}

const callExecutor = (gate: Gate, body: ChatCompletionRequest, headers: Readonly<Record<string, string>>) =>
  recorded(
    gate.options.executor.id,
    gate.upstream.complete({ target: gate.options.executor, body, headers, completion: true })
  )

/** Take one review from the scope, atomically; why not when it has none left (another request raced us). */
const reserve = (settings: Settings, scope: ScopeState): Effect.Effect<Option.Option<Evidence.AdvisorSkip>> =>
  Effect.sync(() => {
    const skip = spent(settings, scope)
    if (Option.isNone(skip)) scope.reviews++
    return skip
  })

/**
 * Consult the advisor on `turn` (the scope's review is already reserved): a failed consult is
 * settled in the scope's budget and counted whatever the posture then does; the consultation goes
 * through the route's posture (`Consultation.run`), and the verdict releases the turn or has the
 * executor answer again.
 */
const review = Effect.fnUntraced(function*(
  gate: Gate,
  request: RoutedRequest,
  scope: ScopeState,
  turn: ChatCompletion,
  trigger: Evidence.AdvisorTrigger,
  advised: Advise
) {
  const { options } = gate
  const advisorModel = options.advisor.id
  const outcome = yield* consultAdvisor(options, gate.upstream, request, turn).pipe(
    Effect.tapError((error) => {
      const reason = Consultation.reasonOf(error)
      return Effect.all([
        Effect.sync(() => Object.assign(scope, afterConsult(scope, reason))),
        advised(Option.some(trigger), Option.some(reason)),
        reason === "parse_error"
          ? countReview("unparseable", trigger)
          : Effect.sync(() => TaggedMetric.unsafeUpdate(Metrics.advisorGateConsultFailuresTotal, { reason }, 1))
      ], { discard: true })
    }),
    Consultation.run(gate.posture),
    Effect.mapError((failure) => new AdvisorUnavailable({ advisorModel, failure })),
    Spans.withSpan("Advisor.consult", () => ({
      captureStackTrace: false,
      attributes: { "switchyard.advisor_model": advisorModel, "switchyard.trigger": trigger }
    }))
  )
  const judged: Consultation.Outcome<"approve" | "redo"> = outcome._tag === "Verdict"
    ? Consultation.Verdict({ verdict: outcome.verdict._tag === "Approve" ? "approve" : "redo" })
    : Consultation.WithoutVerdict({ reason: outcome.reason })
  const evidence = reviewed(judged, trigger, advisorModel)
  if (outcome._tag === "WithoutVerdict") {
    yield* Warnings.warn(
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
    )
    return gate.decision(evidence, Option.some(turn))
  }
  const verdict = outcome.verdict
  yield* advised(Option.some(trigger), Option.some(verdict._tag === "Approve" ? "approve" : "redo"))
  if (verdict._tag === "Approve") {
    yield* countReview("approve", trigger)
    return gate.decision(evidence, Option.some(turn))
  }
  yield* countReview("redo", trigger)
  yield* Metric.increment(Metrics.advisorGateDiscardedTurnsTotal)
  yield* countDiscardedTokens(turn.usage)
  const messages = AdvisorReview.redoMessages(request.body.messages, turn, options.redoFeedbackPrefix, verdict.plan)
  const again = yield* callExecutor(gate, { ...request.body, messages }, request.headers)
  return gate.decision(evidence, Option.some(again))
})

/**
 * One request through the gate: a spent scope passes through to the executor; else the executor
 * answers, and a triggered turn is reviewed when a review can be reserved.
 */
const gateRequest = Effect.fnUntraced(function*(gate: Gate, request: RoutedRequest) {
  const { options, scopes } = gate
  const advisorModel = options.advisor.id
  const scope = yield* scopes.of(request.sessionId)
  const before = { reviews: scope.reviews, failedConsults: scope.failedConsults }
  // What a policy replay needs: the scope's budget before this request, what triggered, how the consult ended.
  const advised: Advise = (trigger, consult) =>
    RoutingFacts.report((observer) =>
      observer.advised({
        posture: postureOf(options.failOpen),
        reviewsBefore: before.reviews,
        failedConsultsBefore: before.failedConsults,
        trigger,
        consult
      })
    )
  const skip = spent(options, scope)
  if (Option.isSome(skip)) {
    yield* advised(Option.none(), Option.none())
    return gate.decision(skipped(skip.value, Option.none(), advisorModel), Option.none())
  }

  const turn = yield* callExecutor(gate, request.body, request.headers).pipe(
    Effect.tapError(() => advised(Option.none(), Option.none()))
  )
  const conversation = options.gateStallTurns > 0
    ? yield* Conversation.messageHash(request.body.messages)
    : Option.none<string>()
  const trigger = triggerOf(options, request, turn, Option.exists(conversation, (key) => !scopes.stalled(key)))
  if (Option.isNone(trigger)) {
    yield* advised(Option.none(), Option.none())
    return gate.decision(skipped("no_trigger", Option.none(), advisorModel), Option.some(turn))
  }

  const raced = yield* reserve(options, scope)
  if (Option.isSome(raced)) {
    yield* advised(trigger, Option.none())
    return gate.decision(skipped(raced.value, trigger, advisorModel), Option.some(turn))
  }
  if (trigger.value === "stall" && Option.isSome(conversation)) yield* scopes.markStalled(conversation.value)
  return yield* review(gate, request, scope, turn, trigger.value, advised)
})

/** Build an advisor route over the `UpstreamClient` (executor and advisor calls). */
export const make = (options: Options): Effect.Effect<AdvisorRoute, never, UpstreamClient> =>
  Effect.map(UpstreamClient, (upstream) => {
    const info = { id: options.id, name: options.name, algorithm: "advisor_gate" } as const
    const scopes = makeScopes()
    const gate: Gate = {
      options,
      upstream,
      scopes,
      posture: Posture.fromConfig(postureOf(options.failOpen)),
      warnings: Warnings.make(),
      decision: (evidence, answer) =>
        Option.match(answer, {
          onNone: () => Decision.routed({ route: info, selected: options.executor, fallbacks: [], evidence }),
          onSome: (released) =>
            Decision.answered({ route: info, answer: released, servedBy: Option.some(options.executor), evidence })
        })
    }
    const route: AdvisorRoute = {
      id: options.id,
      name: options.name,
      algorithm: "advisor_gate",
      targets: [options.executor],
      contextWindow: options.contextWindow ?? Option.none(),
      toolCalling: options.toolCalling ?? Option.none(),
      // A session's last request (`session_final`) drops the session's scope once it is routed.
      decide: (request) =>
        Option.match(request.sessionId, {
          onNone: () => gateRequest(gate, request),
          onSome: (id) => SessionIdentity.forgetOnFinal(gateRequest(gate, request), request.headers, scopes.drop(id))
        }),
      budget: (sessionId) => Effect.sync(() => scopes.budget(sessionId))
    }
    return route
  })
