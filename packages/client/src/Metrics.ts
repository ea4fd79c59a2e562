/**
 * The upstream-client metrics (docs/operations.md, metrics) as runtime-neutral Effect `Metric` constants, plus the
 * bounded label values they use. The server bridges the Effect metric registry to OpenTelemetry
 * and serves Prometheus text; nothing here depends on a runtime or an SDK.
 *
 * Naming: both counters are `{ incremental: true }` (so they export as monotonic OTel sums and
 * Prometheus `counter`s, not gauges) and already carry the `_total` suffix. The OTel Prometheus
 * serializer appends `_total` only when it is missing, so the exposed names are exactly
 * `switchyard_upstream_attempts_total` and `switchyard_router_retry_recovered_total`, and OTLP
 * consumers see the same names.
 */
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as TaggedMetric from "./TaggedMetric.js"

/**
 * `switchyard_upstream_attempts_total{outcome,code}`: one increment per HTTP attempt (every
 * retry counts), answer and judge calls alike. Use {@link attemptLabels} for the labels.
 */
export const upstreamAttempts = Metric.counter("switchyard_upstream_attempts_total", {
  incremental: true,
  description: "Upstream HTTP attempts, by outcome and status code"
})

/** `switchyard_router_retry_recovered_total`: a logical call that succeeded after at least one retry. */
export const retryRecovered = Metric.counter("switchyard_router_retry_recovered_total", {
  incremental: true,
  description: "Upstream calls that succeeded after at least one retry"
})

/**
 * `switchyard_circuit_breaker_state{llm_client}`: the state of each LLM client's circuit breaker
 * (0 closed, 1 open, 2 half-open); a series exists for every client with a `breaker` table.
 */
export const circuitBreakerState = Metric.gauge("switchyard_circuit_breaker_state", {
  description: "Circuit breaker state by LLM client (0 closed, 1 open, 2 half-open)"
})

/** The `outcome` label of an attempt. */
export type AttemptOutcome = "success" | "retryable_error" | "other_error"

const verbatimCodes: ReadonlySet<number> = new Set([200, 400, 401, 403, 404, 408, 409, 422, 429, 500, 502, 503, 504])

/**
 * `outcome` label: 2xx → `success`; 408, 429, 5xx or no status (transport failure, timeout) →
 * `retryable_error`; anything else → `other_error`.
 */
export const attemptOutcome = (status: Option.Option<number>): AttemptOutcome =>
  Option.match(status, {
    onNone: () => "retryable_error",
    onSome: (s) =>
      s >= 200 && s <= 299
        ? "success"
        : s === 408 || s === 429 || (s >= 500 && s <= 599)
        ? "retryable_error"
        : "other_error"
  })

/**
 * `code` label: the common codes verbatim, other codes clamped to `1xx`..`5xx`, anything outside
 * 100..599 → `other`, no status → `none`. Always one of a small fixed set.
 */
export const attemptCode = (status: Option.Option<number>): string =>
  Option.match(status, {
    onNone: () => "none",
    onSome: (s) =>
      verbatimCodes.has(s)
        ? String(s)
        : Number.isInteger(s) && s >= 100 && s <= 599
        ? `${Math.floor(s / 100)}xx`
        : "other"
  })

/** The `{outcome, code}` labels of one attempt. */
export const attemptLabels = (
  status: Option.Option<number>
): { readonly outcome: AttemptOutcome; readonly code: string } => ({
  outcome: attemptOutcome(status),
  code: attemptCode(status)
})

/** The attempts counter tagged for one attempt's status (`None` = no status was received). */
export const attemptsFor = (status: Option.Option<number>): Metric.Metric.Counter<number> => {
  const labels = attemptLabels(status)
  return TaggedMetric.tagged(upstreamAttempts, { outcome: labels.outcome, code: labels.code })
}

/** Records one HTTP attempt. */
export const recordAttempt = (status: Option.Option<number>): Effect.Effect<void> =>
  Effect.sync(() => attemptsFor(status).unsafeUpdate(1, []))

/**
 * Creates the series the anchor pre-seeds at 0 (attempt codes 200, 404, 429, 500, 504 and none;
 * retry recovered), so dashboards see them before the first call. Run once at startup.
 */
export const seed: Effect.Effect<void> = Effect.forEach(
  [Option.some(200), Option.some(404), Option.some(429), Option.some(500), Option.some(504), Option.none()],
  (status) => Metric.incrementBy(attemptsFor(status), 0),
  { discard: true }
).pipe(Effect.zipRight(Metric.incrementBy(retryRecovered, 0)))
