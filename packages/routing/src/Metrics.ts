/**
 * Routing metrics (Effect `Metric`s, bridged to OpenTelemetry and Prometheus by the server).
 * Names, labels and meanings follow the compatible system's metric reference.
 */
import * as TaggedMetric from "@switchyard-ts/client/TaggedMetric"
import { type ClientFailure, toHttp } from "@switchyard-ts/protocol/Errors"
import type { ChatCompletion } from "@switchyard-ts/protocol/OpenAiChat"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Metric from "effect/Metric"
import * as MetricBoundaries from "effect/MetricBoundaries"
import * as Option from "effect/Option"
import * as RoutingFacts from "./host/RoutingFacts.js"
import { advisorGateMetrics, stageRouterMetrics } from "./internal/algorithmMetricNames.js"

/** Successful routed runs, labelled `model` = the algorithm-selected model id (route id for noop). */
export const requestsTotal = Metric.counter("switchyard_requests_total", {
  incremental: true,
  description: "Successful routed requests by selected model"
})

/** Failed routed runs, labelled `model`; also +1 (served model) when a stream fails mid-way. */
export const errorsTotal = Metric.counter("switchyard_errors_total", {
  incremental: true,
  description: "Failed routed requests by model"
})

/** Terminal answer calls, labelled `algorithm`, `selected_model`, `outcome` (`ok` / `error`). */
export const llmCallsTotal = Metric.counter("switchyard_llm_calls_total", {
  incremental: true,
  description: "Model calls by algorithm, selected model and outcome"
})

/** Duration of terminal answer calls in milliseconds, same labels as `llmCallsTotal`. */
export const llmCallDurationMs = Metric.histogram(
  "switchyard_llm_call_duration_ms",
  MetricBoundaries.fromIterable([0, 5, 10, 25, 50, 75, 100, 250, 500, 750, 1000, 2500, 5000, 7500, 10000]),
  "Model call duration in milliseconds"
)

/** Time from run start to the routing outcome (judge calls included), labelled `algorithm`. */
export const routingOverheadMs = Metric.histogram(
  "switchyard_routing_overhead_ms",
  MetricBoundaries.fromIterable([0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000]),
  "Routing overhead in milliseconds"
)

/**
 * Requests actually routed without a verdict, labelled `judge_model` (the judge target's model id)
 * and `reason` (bounded, see `Evidence.Reason`). Never counts a request the `error` posture failed.
 */
export const classifierFailOpenTotal = Metric.counter("switchyard_classifier_fail_open_total", {
  incremental: true,
  description: "Classifier requests routed without a verdict, by judge model and reason"
})

/**
 * Judges of a chain (`classifier_fallback`) that failed and were followed by the next one, labelled
 * `route`, `judge_model` (the judge that failed) and `reason` (`Evidence.Reason`).
 */
export const classifierJudgeFallbacksTotal = Metric.counter("switchyard_classifier_judge_fallbacks_total", {
  incremental: true,
  description: "Judges that failed and were followed by the next judge of their chain, by route, judge model and reason"
})

/** Hedges started (`classifier_hedge_ms`), labelled `route` and `judge_model` (the judge asked as a hedge). */
export const classifierJudgeHedgesTotal = Metric.counter("switchyard_classifier_judge_hedges_total", {
  incremental: true,
  description: "Judges asked as a hedge beside a slow one, by route and judge model"
})

/**
 * Judge calls that missed their deadline on a route with `late_verdict_ms`, labelled `judge_model`
 * and `outcome` (`LateVerdict.Outcome`: `stored`, `superseded`, `invalid`, `failed`, `expired`, `dropped`).
 */
export const classifierLateVerdictsTotal = Metric.counter("switchyard_classifier_late_verdicts_total", {
  incremental: true,
  description: "Classifier judge calls past their deadline, by judge model and what became of them"
})

/** Millisecond buckets of the compatible system's histograms (its default boundaries). */
const defaultBuckets = [0, 5, 10, 25, 50, 75, 100, 250, 500, 750, 1000, 2500, 5000, 7500, 10000]
const defaultBoundaries = MetricBoundaries.fromIterable(defaultBuckets)
/** The same, extended to 5 minutes for whole-request latencies. */
const latencyBoundaries = MetricBoundaries.fromIterable([...defaultBuckets, 15000, 30000, 60000, 120000, 300000])

/** Terminal routed runs (success and failure) since start; a gauge, as in the compatible system. */
export const totalRequests = Metric.counter("switchyard_total_requests", {
  description: "Terminal routed runs since start"
})

/** Failed terminal routed runs since start; a gauge. */
export const totalErrors = Metric.counter("switchyard_total_errors", {
  description: "Failed terminal routed runs since start"
})

/** Routed runs by `algorithm` and `outcome` (`ok` / `error`). */
export const runsTotal = Metric.counter("switchyard_runs_total", {
  incremental: true,
  description: "Routed runs by algorithm and outcome"
})

/** Duration of routed runs in milliseconds (routing and answer call), labelled like `runsTotal`. */
export const runDurationMs = Metric.histogram(
  "switchyard_run_duration_ms",
  defaultBoundaries,
  "Routed run duration in milliseconds"
)

/** Successful routing outcomes by `algorithm` and `selected_model`. */
export const decisionsTotal = Metric.counter("switchyard_decisions_total", {
  incremental: true,
  description: "Routing decisions by algorithm and selected model"
})

/** Duration of a successful terminal answer call (all candidates), labelled `model` = the selected model. */
export const modelCallLatencyMs = Metric.histogram(
  "switchyard_model_call_latency_ms",
  latencyBoundaries,
  "Answer call latency in milliseconds by selected model"
)

/** Ingress to the full answer (buffered body ready, or clean end of stream), labelled `model` = the served model. */
export const totalLatencyMs = Metric.histogram(
  "switchyard_total_latency_ms",
  latencyBoundaries,
  "Request latency from ingress to the full answer in milliseconds by served model"
)

/** Prompt tokens (input, cached and cache-creation) of answers, labelled `model` = the served model. */
export const promptTokensTotal = Metric.counter("switchyard_prompt_tokens_total", {
  incremental: true,
  description: "Prompt tokens by served model"
})
/** Completion tokens of answers, by served model. */
export const completionTokensTotal = Metric.counter("switchyard_completion_tokens_total", {
  incremental: true,
  description: "Completion tokens by served model"
})
/** Cached prompt tokens, by served model (only when the upstream reports them). */
export const cachedTokensTotal = Metric.counter("switchyard_cached_tokens_total", {
  incremental: true,
  description: "Cached prompt tokens by served model"
})
/** Cache-creation prompt tokens, by served model (only when the upstream reports them). */
export const cacheCreationTokensTotal = Metric.counter("switchyard_cache_creation_tokens_total", {
  incremental: true,
  description: "Cache-creation prompt tokens by served model"
})
/** Reasoning tokens, by served model (only when the upstream reports them). */
export const reasoningTokensTotal = Metric.counter("switchyard_reasoning_tokens_total", {
  incremental: true,
  description: "Reasoning tokens by served model"
})

/**
 * Advisor gate reviews, labelled `verdict` (`approve` / `redo` / `unparseable`) and `trigger`
 * (`no_tool_call` / `pattern` / `stall`): one per consultation that returned a reply.
 */
export const advisorGateReviewsTotal = Metric.counter(advisorGateMetrics.reviews, {
  incremental: true,
  description: "Advisor gate reviews by verdict and trigger"
})

/**
 * Advisor consultations that failed, labelled `reason` (`timeout`, `transport`, `upstream_5xx`,
 * `upstream_non_5xx`, `invalid_response`, `circuit_open`), under both `fail_open` settings.
 */
export const advisorGateConsultFailuresTotal = Metric.counter(advisorGateMetrics.consultFailures, {
  incremental: true,
  description: "Advisor gate consultations that failed, by reason"
})

/** Executor turns the advisor gate discarded after a REDO verdict. */
export const advisorGateDiscardedTurnsTotal = Metric.counter(advisorGateMetrics.discardedTurns, {
  incremental: true,
  description: "Executor turns discarded by the advisor gate"
})

/**
 * Tokens of the executor turns the advisor gate discarded, labelled `kind`: `input` (prompt tokens
 * neither read from nor written to the provider's cache), `cached`, `cache_creation`, `output`
 * (the four add up to the turn's prompt + completion tokens). A turn without a usage adds nothing.
 */
export const advisorGateDiscardedTokensTotal = Metric.counter(advisorGateMetrics.discardedTokens, {
  incremental: true,
  description: "Tokens of executor turns discarded by the advisor gate, by kind"
})

/**
 * Record one model call made while routing (a judge or an advisor consult, an advisor's executor
 * turn, an escalation's weak turn) in `switchyard_llm_calls_total` and
 * `switchyard_llm_call_duration_ms`, and report it (with its usage, when it answered) to the
 * request's observer, which the `Router` settles into `/v1/stats` (the classifier section, or the
 * answer when it became one).
 */
export const recordLlmCall = (
  algorithm: string,
  call: RoutingFacts.RoutingCall
): Effect.Effect<void, never, RoutingFacts.Reporter> =>
  Effect.flatMap(RoutingFacts.Reporter, (observer) =>
    Effect.sync(() => {
      const labels = { algorithm, selected_model: call.model, outcome: call.ok ? "ok" : "error" }
      TaggedMetric.unsafeUpdate(llmCallsTotal, labels, 1)
      TaggedMetric.unsafeUpdate(llmCallDurationMs, labels, call.latencyMs)
      observer.routingCall(call)
    }))

/**
 * A model call made while routing, counted (`recordLlmCall`) once it ends: its kind, its model, its
 * outcome (the error code of its failure, `Errors.toHttp`), its latency on the `Clock`, its usage
 * and reply. A call its client's breaker refused made no request and is not counted; one
 * interrupted before it ended is not either.
 */
export const countedCall = <R>(
  algorithm: string,
  kind: RoutingFacts.RoutingCallKind,
  model: string,
  call: Effect.Effect<ChatCompletion, ClientFailure, R>
): Effect.Effect<ChatCompletion, ClientFailure, R | RoutingFacts.Reporter> =>
  Effect.flatMap(Clock.currentTimeMillis, (start) =>
    call.pipe(Effect.onExit((exit) => {
      if (Exit.isSuccess(exit)) {
        return Effect.flatMap(Clock.currentTimeMillis, (end) =>
          recordLlmCall(algorithm, {
            kind,
            model,
            ok: true,
            latencyMs: end - start,
            endedAtMs: end,
            usage: exit.value.usage,
            reply: exit.value
          }))
      }
      const failure = Cause.failureOption(exit.cause)
      if (Option.isNone(failure) || failure.value._tag === "CircuitOpen") return Effect.void
      return Effect.flatMap(Clock.currentTimeMillis, (end) =>
        recordLlmCall(algorithm, {
          kind,
          model,
          ok: false,
          error: toHttp(failure.value).code,
          latencyMs: end - start,
          endedAtMs: end,
          usage: undefined
        }))
    })))

/**
 * Final `stage_router` (and `auto`, `composite`) decisions, labelled `decision_source` (`override`, `tests_passed`,
 * `dimensions`, `capable_hold`, `llm-classifier`, `fall_open`) and `target_name` (the selected target's model id,
 * as in the compatible system). Never counts a request its judge failed under `error`.
 */
export const stageRouterRoutingDecisionsTotal = Metric.counter(stageRouterMetrics.decisions, {
  incremental: true,
  description: "Stage router decisions by decision source and target"
})

const stageScoreBoundaries = MetricBoundaries.fromIterable([-1, -0.75, -0.5, -0.25, 0, 0.25, 0.5, 0.75, 1])
const stageUnitBoundaries = MetricBoundaries.fromIterable([0, 0.1, 0.25, 0.5, 0.75, 0.9, 1])

/** The stage scorer's signed score in (-1, 1) (positive: capable), once per scored turn. */
export const stageRouterScore = Metric.histogram(
  stageRouterMetrics.score,
  stageScoreBoundaries,
  "Stage router signed score"
)
/** The confidence a turn was resolved or deferred with, in [0, 1]. */
export const stageRouterConfidence = Metric.histogram(
  stageRouterMetrics.confidence,
  stageUnitBoundaries,
  "Stage router confidence"
)
/** The windowed tool-failure severity (0, 0.3, 0.7, 1). */
export const stageRouterSeverity = Metric.histogram(
  stageRouterMetrics.severity,
  stageUnitBoundaries,
  "Stage router tool failure severity"
)
/** 1 when a deep turn shows no reads, plans, writes or edits in its window, else 0. */
export const stageRouterSpinning = Metric.histogram(
  stageRouterMetrics.spinning,
  stageUnitBoundaries,
  "Stage router spinning signal"
)
/** 1 when a deep turn reads or plans but neither writes nor edits in its window, else 0. */
export const stageRouterExploring = Metric.histogram(
  stageRouterMetrics.exploring,
  stageUnitBoundaries,
  "Stage router exploring signal"
)
/** The share of writes and edits among the window's tool calls, in [0, 1]. */
export const stageRouterProductionIntensity = Metric.histogram(
  stageRouterMetrics.productionIntensity,
  stageUnitBoundaries,
  "Stage router production intensity"
)

/**
 * The known cost of model calls in USD, labelled `model` (the served model id) and `kind`
 * (`answer`: calls that answered or tried to answer a request; `routing`: judge, classifier,
 * advisor and escalation calls made while routing). A float counter for dashboards; the exact sums
 * are the `cost` totals of `/v1/stats` and `/v1/session-stats`.
 */
export const costUsdTotal = Metric.counter("switchyard_cost_usd_total", {
  incremental: true,
  description: "Known cost of model calls in USD, by model and kind (answer or routing)"
})

/**
 * Model calls whose cost is unknown (no price for the model, no usage reported, or the call failed
 * before its usage was known), labelled `model` and `kind` as {@link costUsdTotal}.
 */
export const unpricedCallsTotal = Metric.counter("switchyard_unpriced_calls_total", {
  incremental: true,
  description: "Model calls whose cost is unknown, by model and kind (answer or routing)"
})

/** A cost in USD, as the float counters add it. */
const usdOf = (cost: { readonly femto: bigint }): number => Number(cost.femto) / 1e15

/** Count one call's cost (`undefined`: unknown) in {@link costUsdTotal} or {@link unpricedCallsTotal}. */
export const unsafeRecordCost = (
  model: string,
  kind: "answer" | "routing",
  cost: { readonly femto: bigint } | undefined
): void => {
  const labels = { model, kind }
  if (cost === undefined) TaggedMetric.unsafeUpdate(unpricedCallsTotal, labels, 1)
  else TaggedMetric.unsafeUpdate(costUsdTotal, labels, usdOf(cost))
}

/**
 * The known cost of a route's requests in USD, labelled `route` (a configured route id) and `kind`
 * (`answer`: the answers; `routing`: the routing-time calls of its runs): the same calls as
 * {@link costUsdTotal}, by route. With {@link baselineCostUsdTotal}, savings are
 * `baseline − cost` in PromQL.
 */
export const routeCostUsdTotal = Metric.counter("switchyard_route_cost_usd_total", {
  incremental: true,
  description: "Known cost of a route's requests in USD, by route and kind (answer or routing)"
})

/**
 * What a route's answers would have cost at its baseline model in USD (`baseline_target`), labelled
 * `route`: known baselines only (an unpriced one adds nothing).
 */
export const baselineCostUsdTotal = Metric.counter("switchyard_baseline_cost_usd_total", {
  incremental: true,
  description: "Known cost of a route's answers at its baseline model in USD, by route"
})

/** Count a known cost of `route` (`undefined`: unknown, not counted) in {@link routeCostUsdTotal}. */
export const unsafeRecordRouteCost = (
  route: string,
  kind: "answer" | "routing",
  cost: { readonly femto: bigint } | undefined
): void => {
  if (cost !== undefined) TaggedMetric.unsafeUpdate(routeCostUsdTotal, { route, kind }, usdOf(cost))
}

/** Count a known baseline cost of `route` (`undefined`: unknown, not counted) in {@link baselineCostUsdTotal}. */
export const unsafeRecordBaselineCost = (route: string, cost: { readonly femto: bigint } | undefined): void => {
  if (cost !== undefined) TaggedMetric.unsafeUpdate(baselineCostUsdTotal, { route }, usdOf(cost))
}
