/**
 * Routing metrics (Effect `Metric`s, bridged to OpenTelemetry and Prometheus by the server).
 * Names, labels and meanings follow the compatible system's metric reference.
 */
import * as Metric from "effect/Metric"
import * as MetricBoundaries from "effect/MetricBoundaries"

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
