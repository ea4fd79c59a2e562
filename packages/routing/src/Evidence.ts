/**
 * Evidence: the one record per routed request that says why its target was chosen. Returned by
 * `/v1/decision`, set on the `libsy.run` span, summarised in `x-switchyard-evidence-source`.
 */
import * as Schema from "effect/Schema"
import { Boundary } from "./Verdict.js"

/**
 * Why a judged request was routed without a verdict (a bounded label set, also the
 * `reason` label of `switchyard_classifier_fail_open_total`).
 */
export const Reason = Schema.Literal(
  "timeout",
  "transport",
  "upstream_5xx",
  "upstream_non_5xx",
  "invalid_response",
  "parse_error",
  "circuit_open"
)
export type Reason = typeof Reason.Type

/** A `passthrough` route chose its only target. */
export const Passthrough = Schema.Struct({ source: Schema.Literal("passthrough") })
/** A `random` route made a weighted pick. */
export const Random = Schema.Struct({ source: Schema.Literal("random") })
/** A `noop` route answered by itself. */
export const Noop = Schema.Struct({ source: Schema.Literal("noop") })
/** A fresh valid verdict decided. */
export const Classifier = Schema.Struct({
  source: Schema.Literal("llm-classifier"),
  score: Schema.Number,
  threshold: Schema.Number,
  boundary: Boundary
})
/** The trigger held the session's stored target; no judge call was made. */
export const Affinity = Schema.Struct({
  source: Schema.Literal("affinity"),
  previous_source: Schema.Literal("llm-classifier")
})
/** The judge failed or its verdict was invalid; the session's stored target was kept. */
export const Retained = Schema.Struct({
  source: Schema.Literal("retained"),
  reason: Reason,
  judge_model: Schema.String
})
/** The judge failed or its verdict was invalid; the strong target was chosen. */
export const FailOpen = Schema.Struct({
  source: Schema.Literal("fail-open"),
  reason: Reason,
  judge_model: Schema.String
})

/**
 * The judge was not consulted because its LLM client's circuit breaker is open (posture
 * `fail_open`); the session's stored target was kept, else the strong target was chosen.
 */
export const CircuitOpen = Schema.Struct({
  source: Schema.Literal("circuit-open"),
  judge_model: Schema.String
})

/** Every evidence record, discriminated by `source`. */
export const Evidence = Schema.Union(Passthrough, Random, Noop, Classifier, Affinity, Retained, FailOpen, CircuitOpen)
export type Evidence = typeof Evidence.Type

/** The `source` values. */
export type Source = Evidence["source"]

/** Span attributes of an evidence record (`evidence.*`). */
export const spanAttributes = (evidence: Evidence): Record<string, string | number> => {
  switch (evidence.source) {
    case "llm-classifier":
      return {
        "evidence.source": evidence.source,
        "evidence.score": evidence.score,
        "evidence.threshold": evidence.threshold,
        "evidence.boundary": evidence.boundary
      }
    case "retained":
    case "fail-open":
      return { "evidence.source": evidence.source, "evidence.reason": evidence.reason, "evidence.judge_model": evidence.judge_model }
    case "circuit-open":
      return { "evidence.source": evidence.source, "evidence.reason": "circuit_open", "evidence.judge_model": evidence.judge_model }
    case "affinity":
      return { "evidence.source": evidence.source, "evidence.previous_source": evidence.previous_source }
    default:
      return { "evidence.source": evidence.source }
  }
}
