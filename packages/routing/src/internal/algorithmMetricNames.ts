/**
 * The names of the advisor gate and stage router metrics: `Metrics` registers them, and `Stats`
 * reads their series back for `/v1/stats`'s `algorithm_stats` (an Effect metric does not expose
 * its name).
 *
 * @internal
 */

export const advisorGateMetrics = {
  reviews: "switchyard_advisor_gate_reviews_total",
  consultFailures: "switchyard_advisor_gate_consult_failures_total",
  discardedTurns: "switchyard_advisor_gate_discarded_turns_total",
  discardedTokens: "switchyard_advisor_gate_discarded_tokens_total"
} as const

export const stageRouterMetrics = {
  decisions: "switchyard_stage_router_routing_decisions_total",
  score: "switchyard_stage_router_score",
  confidence: "switchyard_stage_router_confidence",
  severity: "switchyard_stage_router_severity",
  spinning: "switchyard_stage_router_spinning",
  exploring: "switchyard_stage_router_exploring",
  productionIntensity: "switchyard_stage_router_production_intensity"
} as const
