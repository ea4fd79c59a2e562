/**
 * Routing log lines built from what a test says of them (kind, session, model, cost, tokens), for
 * the session totals tests.
 */
import * as Pricing from "@switchyard-ts/routing/Pricing"
import type * as RoutingLog from "@switchyard-ts/server/RoutingLog"

/** What a line says of itself, for {@link lineOf}. */
export interface LineSpec {
  readonly kind: "judge" | "response"
  readonly session: string | null
  readonly model: string
  readonly cost: Pricing.Cost | undefined
  readonly prompt?: number
  readonly cached?: number
  readonly written?: number
  readonly completion?: number
  readonly outcome?: "ok" | "timeout"
  /** A response line's baseline: its model `b` and this cost. */
  readonly baseline?: { readonly cost: Pricing.Cost | undefined }
}

/** A routing log line as `spec` says. */
export const lineOf = (spec: LineSpec): RoutingLog.Line => {
  const prompt = spec.prompt ?? 10
  const completion = spec.completion ?? 2
  const base = {
    ts: "2026-01-01T00:00:00.000Z",
    task: null,
    trial_id: null,
    session_id: spec.session,
    agent_id: null,
    request_id: null,
    route: "r",
    origin: null,
    model: spec.model,
    latency_ms: 1,
    prompt_tokens: prompt,
    cached_tokens: spec.cached ?? 0,
    cache_creation_tokens: spec.written ?? 0,
    completion_tokens: completion,
    reasoning_tokens: 0,
    total_tokens: prompt + completion,
    cost: Pricing.callCost(spec.cost)
  }
  if (spec.kind === "judge") return { ...base, kind: "judge", tier: "classifier", outcome: spec.outcome ?? "ok" }
  return {
    ...base,
    kind: "response",
    algorithm: null,
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
    ...(spec.baseline === undefined
      ? {}
      : { baseline_model: "b", baseline_cost: Pricing.callCost(spec.baseline.cost) })
  }
}
