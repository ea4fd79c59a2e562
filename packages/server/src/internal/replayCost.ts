/**
 * The cost side of a policy replay (`switchyard replay --pricing-file`): per route and per side
 * (as logged, as replayed), the answers' cost, the judge calls' cost, the baseline and the savings,
 * from the routing log's lines and a pricing table.
 *
 * - An answer is its line's logged `cost` when the replay sends it where it went; a request the
 *   replay sends to another destination is its line's token counts priced at that destination's
 *   model (one-hour cache writes are not in a line: they are priced as other writes; a provider's
 *   charge does not carry over). A request the `error` posture fails has no answer; an unknown
 *   outcome has an unknown one. A line without a logged cost is priced from its tokens (unknown
 *   when it has none).
 * - The baseline of an answered request is its answer priced at the route's baseline model under
 *   the replayed deployment (`Deployment.baselineTarget`), on both sides, so they compare alike.
 * - Routing: the logged side is the route's successful `judge` lines (as `/v1/session-stats` counts
 *   them). The replayed side is the same, plus one judge call at the route's mean logged judge-call
 *   cost for each changed request the replay decides by a verdict and the log did not, minus one
 *   for each the other way round (a request failed or routed without a verdict made no call that
 *   counts, on either side).
 *
 * A replay under the deployment that wrote the log changes no outcome, so both sides are equal to
 * the femto-dollar.
 *
 * @internal
 */
import type { RouteSpec } from "@switchyard-ts/config/Deployment"
import * as Deployment from "@switchyard-ts/config/Deployment"
import * as Pricing from "@switchyard-ts/routing/Pricing"
import type { Outcome } from "@switchyard-ts/routing/ReplayHost"
import * as RouteTypes from "@switchyard-ts/routing/RouteTypes"
import * as Option from "effect/Option"
import type * as RoutingLog from "../RoutingLog.js"

/** One side's cost (the JSON of the report's `cost`). */
export interface CostSide {
  readonly answer_cost: Pricing.TotalsJson
  readonly routing_cost: Pricing.TotalsJson
  /** `answer_cost` + `routing_cost`. */
  readonly cost: Pricing.TotalsJson
  readonly baseline_cost: Pricing.TotalsJson
  /** `baseline_cost` − `cost`. */
  readonly savings: Pricing.SavingsJson
}

/** What prices one route's replay: the table, its destinations' models and its baseline model. */
export interface RoutePricing {
  readonly table: Pricing.Table
  /** The model a destination of the route's replayer answers with (none: unknown). */
  readonly modelOf: (destination: string) => string | undefined
  /** The route's baseline model under the replayed deployment; none: each answer is its own baseline. */
  readonly baseline: string | undefined
}

/** The pricing of `spec`'s replay under `table`. */
export const routePricing = (table: Pricing.Table, spec: RouteSpec): RoutePricing => ({
  table,
  modelOf: RouteTypes.of(spec).destinationModel,
  baseline: Option.getOrUndefined(Option.map(Deployment.baselineTarget(spec), (target) => target.id))
})

/** A line's token buckets (no one-hour split, no provider charge). */
const countsOf = (line: RoutingLog.Line): Pricing.Counts => {
  const input = line.prompt_tokens - line.cached_tokens - line.cache_creation_tokens
  return {
    input: input < 0 ? undefined : input,
    output: line.completion_tokens,
    cacheRead: line.cached_tokens,
    cacheWrite: line.cache_creation_tokens
  }
}

/** The logged `cost` of a line, exactly. */
const loggedCost = (line: RoutingLog.Line): Pricing.Cost | undefined =>
  line.cost === null ? undefined : { femto: Pricing.femtoOfUsd(line.cost.usd), source: line.cost.source }

/**
 * `line` answered by `model`: its logged cost when `model` served it and a cost was logged, else its
 * tokens priced at `model` (unknown without tokens or without a price).
 */
const answerCost = (table: Pricing.Table, model: string, line: RoutingLog.Line): Pricing.Cost | undefined => {
  if (model === line.model && line.cost !== null) return loggedCost(line)
  if (model === "" || line.total_tokens === 0) return undefined
  return Pricing.costOf(table, model, countsOf(line))
}

/** The baseline of `line` answered by `model` at `cost`: see the module documentation. */
const baselineCost = (
  pricing: RoutePricing,
  model: string,
  line: RoutingLog.ResponseLine,
  cost: Pricing.Cost | undefined
): Pricing.Cost | undefined => {
  const baseline = pricing.baseline
  if (baseline === undefined || baseline === model) return cost
  if (line.baseline_model === baseline && line.baseline_cost !== undefined && line.baseline_cost !== null) {
    return { femto: Pricing.femtoOfUsd(line.baseline_cost.usd), source: line.baseline_cost.source }
  }
  return answerCost(pricing.table, baseline, line)
}

/**
 * Whether an outcome's routing made a judge call the routing cost counts: one that gave a verdict
 * (the successful `judge` lines, as `/v1/session-stats` counts them). A failed request, or one
 * routed without a verdict (the judge unreachable, refused by its breaker, or its reply unusable),
 * made none that counts.
 */
const consulted = (outcome: Outcome): boolean =>
  outcome._tag === "Routed" && outcome.reason === undefined && outcome.source === "llm-classifier"

/** A route's cost tally for both sides of its replay, fed one line at a time. */
export const tally = (pricing: RoutePricing) => {
  const sides = {
    logged: { answer: Pricing.noTotals, baseline: Pricing.noTotals },
    replayed: { answer: Pricing.noTotals, baseline: Pricing.noTotals }
  }
  let judges = Pricing.noTotals
  /** The route's other routing-time calls (reviews, discarded turns): counted as logged on both sides. */
  let turns = Pricing.noTotals
  let moreCalls = 0
  const request = (side: keyof typeof sides, line: RoutingLog.ResponseLine, outcome: Outcome, logged: boolean) => {
    const totals = sides[side]
    if (outcome._tag === "Failed") return
    if (outcome._tag === "Unknown") {
      totals.answer = Pricing.add(totals.answer, undefined)
      totals.baseline = Pricing.add(totals.baseline, undefined)
      return
    }
    const model = logged ? line.model : pricing.modelOf(outcome.destination) ?? ""
    const cost = answerCost(pricing.table, model, line)
    totals.answer = Pricing.add(totals.answer, cost)
    totals.baseline = Pricing.add(totals.baseline, baselineCost(pricing, model, line, cost))
  }
  const replayedRouting = (): Pricing.Totals => {
    if (moreCalls === 0) return judges
    const priced = judges.estimatedCalls + judges.providerReportedCalls
    if (priced === 0) return { ...judges, unknownCalls: Math.max(0, judges.unknownCalls + moreCalls) }
    const mean = judges.knownFemto / BigInt(priced)
    return {
      ...judges,
      knownFemto: judges.knownFemto + mean * BigInt(moreCalls),
      estimatedCalls: Math.max(0, judges.estimatedCalls + moreCalls)
    }
  }
  const sideOf = (totals: { answer: Pricing.Totals; baseline: Pricing.Totals }, routing: Pricing.Totals) => {
    const cost = Pricing.sum(totals.answer, routing)
    return {
      answer_cost: Pricing.totalsJson(totals.answer),
      routing_cost: Pricing.totalsJson(routing),
      cost: Pricing.totalsJson(cost),
      baseline_cost: Pricing.totalsJson(totals.baseline),
      savings: Pricing.savingsJson(totals.baseline, cost)
    }
  }
  return {
    /** A successful judge call of the route (other judge lines are not counted, as in session-stats). */
    judge: (line: RoutingLog.JudgeLine): void => {
      if (line.outcome === "ok") judges = Pricing.add(judges, answerCost(pricing.table, line.model, line))
    },
    /**
     * A routing-time call of the route other than a judge's (a review, a discarded or failed turn):
     * counted as logged, on both sides, when it answered.
     */
    call: (line: RoutingLog.CallLine): void => {
      if (line.outcome === "ok") turns = Pricing.add(turns, loggedCost(line))
    },
    /** A request of the route: what the log says it came to, and what the replay says. */
    request: (line: RoutingLog.ResponseLine, before: Outcome, after: Outcome, same: boolean): void => {
      request("logged", line, before, true)
      request("replayed", line, after, same)
      if (!same) moreCalls += Number(consulted(after)) - Number(consulted(before))
    },
    logged: (): CostSide => sideOf(sides.logged, Pricing.sum(judges, turns)),
    replayed: (): CostSide => sideOf(sides.replayed, Pricing.sum(replayedRouting(), turns))
  }
}
