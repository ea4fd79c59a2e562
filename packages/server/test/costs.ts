/**
 * Helpers of the cost tests: exact amounts from decimal strings, the expected totals of
 * `Pricing.TotalsJson`, and routing log lines of session `prop` carrying a given cost.
 */
import * as Pricing from "@switchyard-ts/routing/Pricing"
import type * as RoutingLog from "@switchyard-ts/server/RoutingLog"

/** Femto-dollars of a decimal USD string. */
export const femto = (decimal: string): bigint => Pricing.femtoOfUsd(Number(decimal))

/** Expected totals: `known` in femto-dollars and the calls of each kind. */
export const totals = (known: bigint, calls: { unknown?: number; estimated?: number; reported?: number }) => ({
  known_usd: Pricing.usd(known),
  total_usd: (calls.unknown ?? 0) > 0 ? null : Pricing.usd(known),
  unknown_calls: calls.unknown ?? 0,
  estimated_calls: calls.estimated ?? 0,
  provider_reported_calls: calls.reported ?? 0
})

/**
 * A line of session `prop` of `kind` with `cost` (and what it says of it); a response line with
 * `baseline` also names its baseline model and cost.
 */
export const lineOf = (
  kind: "judge" | "response",
  cost: Pricing.Cost | undefined,
  baseline?: { readonly cost: Pricing.Cost | undefined }
): RoutingLog.Line => {
  const base = {
    ts: "2026-01-01T00:00:00.000Z",
    task: null,
    trial_id: null,
    session_id: "prop",
    agent_id: null,
    request_id: null,
    route: "r",
    origin: null,
    latency_ms: 1,
    prompt_tokens: 1,
    cached_tokens: 0,
    cache_creation_tokens: 0,
    completion_tokens: 1,
    reasoning_tokens: 0,
    total_tokens: 2,
    cost: Pricing.callCost(cost)
  }
  return kind === "judge"
    ? { ...base, kind, model: "j", tier: "classifier", outcome: "ok" }
    : {
      ...base,
      kind,
      algorithm: null,
      model: "m",
      selected_model: null,
      tier: null,
      wire_format: "openai_chat",
      streaming: false,
      user_turn: true,
      status: 200,
      outcome: "ok",
      error: null,
      evidence: null,
      posture: null,
      trigger: null,
      judge: null,
      stored_before: null,
      stored_after: null,
      ...(baseline === undefined ? {} : { baseline_model: "b", baseline_cost: Pricing.callCost(baseline.cost) })
    }
}
