/**
 * The per-route cost totals behind `/v1/stats`' `routes` (see `Stats`): each route's requests, the
 * cost of its answers and of its runs' routing-time calls, its answers' baseline and the savings,
 * each fact also counted in `switchyard_route_cost_usd_total` / `switchyard_baseline_cost_usd_total`.
 *
 * @internal
 */
import * as Pricing from "../cost/Pricing.js"
import * as Metrics from "../Metrics.js"

/** One route's entry in `routes`: its requests, their cost, their baseline and the savings. */
export interface RouteSnapshot {
  /** Requests of the route that were answered or failed after it was found. */
  readonly requests: number
  /** `answer_cost` + `routing_cost`. */
  readonly cost: Pricing.TotalsJson
  /** The answers (a failed request: one unknown call). */
  readonly answer_cost: Pricing.TotalsJson
  /** The routing-time calls of the route's runs (judges, classifiers, escalated weak turns, advisor reviews). */
  readonly routing_cost: Pricing.TotalsJson
  /** The answers priced at the route's baseline model (a failed request: unknown). */
  readonly baseline_cost: Pricing.TotalsJson
  /** `baseline_cost` − `cost`. */
  readonly savings: Pricing.SavingsJson
}

/** A route's running totals. */
interface Tally {
  requests: number
  answer: Pricing.Totals
  routing: Pricing.Totals
  baseline: Pricing.Totals
}

/** Fresh per-route totals; route ids must be configured ones (they label metrics). */
export const make = () => {
  const routes = new Map<string, Tally>()
  const of = (route: string): Tally => {
    let tally = routes.get(route)
    if (tally === undefined) {
      tally = { requests: 0, answer: Pricing.noTotals, routing: Pricing.noTotals, baseline: Pricing.noTotals }
      routes.set(route, tally)
    }
    return tally
  }
  return {
    /** A routing-time call of one of the route's runs. */
    routing: (route: string, cost: Pricing.Cost | undefined): void => {
      const tally = of(route)
      tally.routing = Pricing.add(tally.routing, cost)
      Metrics.unsafeRecordRouteCost(route, "routing", cost)
    },
    /** An answered request of the route: its answer's cost and its baseline. */
    answered: (route: string, cost: Pricing.Cost | undefined, baseline: Pricing.Cost | undefined): void => {
      const tally = of(route)
      tally.requests += 1
      tally.answer = Pricing.add(tally.answer, cost)
      tally.baseline = Pricing.add(tally.baseline, baseline)
      Metrics.unsafeRecordRouteCost(route, "answer", cost)
      Metrics.unsafeRecordBaselineCost(route, baseline)
    },
    /** A failed request of the route: an unknown answer and baseline. */
    failed: (route: string): void => {
      const tally = of(route)
      tally.requests += 1
      tally.answer = Pricing.add(tally.answer, undefined)
      tally.baseline = Pricing.add(tally.baseline, undefined)
    },
    /** Every route's entry, by route id. */
    snapshot: (): Record<string, RouteSnapshot> => {
      const entries: Record<string, RouteSnapshot> = {}
      for (const id of [...routes.keys()].sort()) {
        const tally = of(id)
        const cost = Pricing.sum(tally.answer, tally.routing)
        entries[id] = {
          requests: tally.requests,
          cost: Pricing.totalsJson(cost),
          answer_cost: Pricing.totalsJson(tally.answer),
          routing_cost: Pricing.totalsJson(tally.routing),
          baseline_cost: Pricing.totalsJson(tally.baseline),
          savings: Pricing.savingsJson(tally.baseline, cost)
        }
      }
      return entries
    }
  }
}
