/**
 * Policy replay: re-decide every logged request of a judge-using route under another deployment's
 * settings of that route, without calling any model, through the route's own decision rules (the
 * pure functions its live Effect shell calls too) and the posture combinator. Judge outcomes come from the routing log: a
 * logged verdict keeps its p_solve and boundary (a custom classifier's: its label; an escalation
 * judge's: escalate or decline, with its category and fresh-evidence flag, on a weak or a strong
 * turn), a failed judge stays failed, an invalid verdict stays invalid, a
 * call the breaker refused stays refused. What each route type replays:
 *
 * - capability classifier routes: `base_threshold`, `threshold_step`, `classify_trigger`,
 *   `judge_failure`;
 * - custom classifier routes: `targets` (a logged label goes to the target of that name, else
 *   `default_target`), `default_target`, `classify_trigger`, `judge_failure`;
 * - stage routers (and `auto` routes): `confidence_threshold` (against each turn's logged scorer
 *   confidence), `picker`, `capable_hold_turns`, and the `[classifier]` table's settings as a
 *   capability route's (or its absence);
 * - composite routes: the `[classifier]` table's settings as a capability route's, the `[stage]`
 *   table's `confidence_threshold` and `capable_hold_turns`;
 * - escalation routes: `escalation.confirmations`, `judge_failure`, and the
 *   `escalation.deescalation` table (its strong phase, release, hard limit and cooldown);
 * - advisor routes: `max_reviews` (each scope's review budget re-run), `fail_open`.
 *
 * A request the new settings would decide from a judge verdict the log does not have (its original
 * routing reused a stored decision, a latched session answered without a weak turn) is `unknown`.
 * The session state is replayed too: lines are taken in file order, only a replayed verdict changes a
 * session's stored decision (as the routes do), and a session whose logged line found nothing
 * stored (expired, evicted, ended by `session_final`) starts afresh. Sessions are the lines'
 * `session_id`; a route with `message_hash_fallback` keys requests without one by a
 * message hash the log does not have, so those requests replay without a stored decision. Delegated
 * sub-agent requests (evidence `subagent: true`) and Responses continuations by id (evidence
 * `continuation`, under {@link continuationDestination}) are counted as logged. Late verdicts
 * (`late_verdict_ms`): a request that waited for one was routed on its logged timeout; a verdict the
 * log says was stored late (its `judge` line, `late: "stored"`) is stored in the replay, held to the
 * new settings, where the logged run's next request of the session found it (`stored_before.late`).
 *
 * With a pricing table ({@link pricingOf}), each side also has its `cost`: answers, judge calls,
 * the baseline and the savings (see `internal/replayCost.ts` and docs/operations.md).
 */
import type { Deployment, RouteSpec } from "@switchyard-ts/config/Deployment"
import type * as Pricing from "@switchyard-ts/routing/Pricing"
import * as ReplayHost from "@switchyard-ts/routing/ReplayHost"
import * as RouteTypes from "@switchyard-ts/routing/RouteTypes"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as ReplayCost from "./internal/replayCost.js"
import type * as RoutingLog from "./RoutingLog.js"

export type { LateVerdicts, Outcome, Replayer } from "@switchyard-ts/routing/ReplayHost"
export type { CostSide, RoutePricing } from "./internal/replayCost.js"

/** The destination Responses continuations by id are counted under; they replay as logged. */
export const continuationDestination = "continuation (as logged)"

const asContinued: ReplayHost.Outcome = { _tag: "Routed", destination: continuationDestination, source: "continuation" }

const continued = (line: Pick<RoutingLog.ResponseLine, "evidence">): boolean =>
  line.evidence !== null && line.evidence.source === "continuation"

/**
 * The replayer of a route type's program (`ReplayHost.replayer`), with Responses continuations by
 * id (evidence `continuation`) counted as logged: such a request went back to the target of the
 * answer it continued whatever the route's settings (`Continuation.decide`, applied by the `Router`
 * before the route), so a replay neither re-decides it nor lets it touch the replayed session state.
 */
export const replayerOf = (replayable: ReplayHost.Replayable): ReplayHost.Replayer => {
  const replayer = ReplayHost.replayer(replayable)
  return {
    ...replayer,
    logged: (line) => continued(line) ? asContinued : replayer.logged(line),
    start: (options) => {
      const step = replayer.start(options)
      return (line, late) => continued(line) ? Effect.succeed(asContinued) : step(line, late)
    }
  }
}

/** No late verdicts: steps a replayer through a log without any. */
export const { noLateVerdicts } = ReplayHost

/** The replayer of a route spec (`RouteType.replayable`); none for a route type whose decisions need no judge. */
export const replayerOfSpec = (route: RouteSpec): Option.Option<ReplayHost.Replayer> =>
  Option.map(RouteTypes.of(route).replayable, replayerOf)

/** The replayers of `deployment`'s judge-using routes, by route id. */
export const replayersOf = (deployment: Deployment): ReadonlyMap<string, ReplayHost.Replayer> =>
  new Map(
    deployment.routes.flatMap((route) =>
      Option.match(replayerOfSpec(route), { onNone: () => [], onSome: (replayer) => [[route.id, replayer] as const] })
    )
  )

/**
 * How to price the replay of `deployment`'s routes under `table`: per route id, its destinations'
 * models and its baseline model.
 */
export const pricingOf = (
  deployment: Deployment,
  table: Pricing.Table
): ReadonlyMap<string, ReplayCost.RoutePricing> =>
  new Map(deployment.routes.map((spec) => [spec.id, ReplayCost.routePricing(table, spec)]))

/** Counts of one side (logged or replayed) of a route's report. */
export interface Side {
  /** Requests by destination (tier, or a custom route's model id). */
  readonly routed: Readonly<Record<string, number>>
  /** Requests failed by the `error` posture. */
  readonly failed: number
  /** Those failures by the HTTP status they answered (502 a judge call failure, 504 its deadline, 503 an open breaker). */
  readonly failed_by_status: Readonly<Record<string, number>>
  /** Requests whose outcome the log cannot tell. */
  readonly unknown: number
  /** Requests routed without a verdict (fail-open, retained, circuit-open), by reason. */
  readonly without_verdict: Readonly<Record<string, number>>
  /** The same requests by the destination they went to. */
  readonly without_verdict_routed: Readonly<Record<string, number>>
  /** `total_tokens` of the logged lines, by the destination each request went (or would go) to. */
  readonly tokens: Readonly<Record<string, number>>
  /** With a pricing table: the side's answer, routing and baseline cost and its savings. */
  readonly cost?: ReplayCost.CostSide
}

/** One route's replay. */
export interface RouteReport {
  readonly route: string
  /** The route's type under the replayed settings. */
  readonly kind: ReplayHost.Replayer["kind"]
  readonly requests: number
  /** Lines of the route logged by another algorithm (the route changed type): not replayed. */
  readonly other_algorithm: number
  readonly logged: Side
  readonly replayed: Side
  /** Requests whose replayed outcome differs from the logged one. */
  readonly changed: number
  /** Sessions with at least one changed request. */
  readonly sessions_changed: number
}

/** The status a request failed by the `error` posture answered, by its judge failure's reason (docs/http-api.md). */
const statusOf = (reason: string): number => reason === "timeout" ? 504 : reason === "circuit_open" ? 503 : 502

/** A side's counts as they grow. */
const tally = (destinations: ReadonlyArray<string>) => {
  let failed = 0, unknown = 0
  const routed: Record<string, number> = Object.fromEntries(destinations.map((d) => [d, 0]))
  const tokens: Record<string, number> = Object.fromEntries(destinations.map((d) => [d, 0]))
  const withoutVerdict: Record<string, number> = {}
  const withoutVerdictRouted: Record<string, number> = {}
  const byStatus: Record<string, number> = {}
  const bump = (record: Record<string, number>, key: string, by = 1) => {
    record[key] = (record[key] ?? 0) + by
  }
  return {
    add: (outcome: ReplayHost.Outcome, lineTokens: number) => {
      if (outcome._tag === "Failed") {
        failed++
        bump(byStatus, String(statusOf(outcome.reason)))
      } else if (outcome._tag === "Unknown") unknown++
      else {
        bump(routed, outcome.destination)
        bump(tokens, outcome.destination, lineTokens)
        if (outcome.reason !== undefined) {
          bump(withoutVerdict, outcome.reason)
          bump(withoutVerdictRouted, outcome.destination)
        }
      }
    },
    side: (): Side => ({
      routed,
      failed,
      failed_by_status: byStatus,
      unknown,
      without_verdict: withoutVerdict,
      without_verdict_routed: withoutVerdictRouted,
      tokens
    })
  }
}

const same = (a: ReplayHost.Outcome, b: ReplayHost.Outcome): boolean =>
  a._tag === "Routed" && b._tag === "Routed"
    ? a.destination === b.destination && a.source === b.source
    : a._tag === "Failed" && b._tag === "Failed"
    ? a.reason === b.reason
    : a._tag === b._tag

/** A replay fed one log line at a time (a log need not fit in memory: only session state is kept). */
export interface Replay {
  /**
   * The next line of the log, in file order (a route's judge lines only feed its late verdicts;
   * other routes' lines are passed over).
   */
  readonly add: (line: RoutingLog.Line) => Effect.Effect<void>
  /** The reports so far, per route of the replayers that had a line. */
  readonly reports: () => ReadonlyArray<RouteReport>
}

/**
 * Start a replay of the routes of `replayers` (or only `route`); with `pricing` (see
 * {@link pricingOf}), the routes it prices get a `cost` on each side.
 */
export const start = (
  replayers: ReadonlyMap<string, ReplayHost.Replayer>,
  route?: string,
  pricing?: ReadonlyMap<string, ReplayCost.RoutePricing>,
  options: ReplayHost.ReplayOptions = {}
): Replay => {
  const routes = new Map(
    [...replayers].filter(([id]) => route === undefined || id === route).map(([id, replayer]) => {
      const step = replayer.start(options)
      const late = ReplayHost.lateVerdicts()
      const logged = tally(replayer.destinations)
      const replayed = tally(replayer.destinations)
      const priced = pricing?.get(id)
      const costs = priced === undefined ? undefined : ReplayCost.tally(priced)
      const changedSessions = new Set<string>()
      let requests = 0, otherAlgorithm = 0, changed = 0
      const add = (line: RoutingLog.ResponseLine): Effect.Effect<void> => {
        if (line.algorithm !== null && line.algorithm !== replayer.algorithm) {
          otherAlgorithm++
          return Effect.void
        }
        requests++
        return Effect.map(step(line, late), (after) => {
          const before = replayer.logged(line)
          logged.add(before, line.total_tokens)
          replayed.add(after, line.total_tokens)
          costs?.request(line, before, after, same(before, after))
          if (same(before, after)) return
          changed++
          if (line.session_id !== null) changedSessions.add(line.session_id)
        })
      }
      const report = (): ReadonlyArray<RouteReport> =>
        requests === 0 && otherAlgorithm === 0 ? [] : [{
          route: id,
          kind: replayer.kind,
          requests,
          other_algorithm: otherAlgorithm,
          logged: costs === undefined ? logged.side() : { ...logged.side(), cost: costs.logged() },
          replayed: costs === undefined ? replayed.side() : { ...replayed.side(), cost: costs.replayed() },
          changed,
          sessions_changed: changedSessions.size
        }]
      const judge = (line: RoutingLog.JudgeLine) => {
        late.add(line)
        costs?.judge(line)
      }
      const call = (line: RoutingLog.CallLine) => costs?.call(line)
      return [id, { add, judge, call, report }] as const
    })
  )
  return {
    add: (line) => {
      const route = routes.get(line.route)
      if (route === undefined) return Effect.void
      if (line.kind !== "response" && line.kind !== "judge") {
        route.call(line)
        return Effect.void
      }
      if (line.kind === "judge") {
        route.judge(line)
        return Effect.void
      }
      return route.add(line)
    },
    reports: () => [...routes.values()].flatMap((entry) => entry.report())
  }
}

/**
 * Replay the response lines of every route of `replayers` (or only `route`), in file order; routes
 * with no line are left out.
 */
export const replay = (
  lines: ReadonlyArray<RoutingLog.Line>,
  replayers: ReadonlyMap<string, ReplayHost.Replayer>,
  route?: string,
  pricing?: ReadonlyMap<string, ReplayCost.RoutePricing>
): Effect.Effect<ReadonlyArray<RouteReport>> =>
  Effect.suspend(() => {
    const run = start(replayers, route, pricing)
    return Effect.map(Effect.forEach(lines, run.add, { discard: true }), () => run.reports())
  })

/** A cost total as the table shows it: USD, `+` and the unpriced calls while some are unknown. */
const dollars = (usd: number | null, known: number, unknown: number): string =>
  usd === null ? `${signed(known)}+ (${unknown} unpriced)` : signed(usd)

/** USD with its sign before the dollar sign. */
const signed = (usd: number): string => usd < 0 ? `-$${-usd}` : `$${usd}`

/** The cost rows of a priced report: answer, routing, baseline, savings. */
const costRows = (report: RouteReport): ReadonlyArray<readonly [string, string, string]> => {
  const logged = report.logged.cost
  const replayed = report.replayed.cost
  if (logged === undefined || replayed === undefined) return []
  const total = (pick: (cost: ReplayCost.CostSide) => Pricing.TotalsJson) => (cost: ReplayCost.CostSide) => {
    const totals = pick(cost)
    return dollars(totals.total_usd, totals.known_usd, totals.unknown_calls)
  }
  const row = (label: string, show: (cost: ReplayCost.CostSide) => string) =>
    [label, show(logged), show(replayed)] as const
  return [
    row("answer cost", total((cost) => cost.answer_cost)),
    row("routing cost", total((cost) => cost.routing_cost)),
    row("baseline cost", total((cost) => cost.baseline_cost)),
    row("savings", (cost) =>
      cost.savings.total_usd === null
        ? `unknown (${cost.savings.unknown_calls} unpriced)`
        : signed(cost.savings.total_usd))
  ]
}

const percent = (part: number, whole: number) => whole === 0 ? "0%" : `${Math.round((part / whole) * 100)}%`

/**
 * The reports as a text table per route (logged beside replayed). Columns are at least 30 (labels)
 * and 12 (counts) characters wide and grow with their longest entry, so they stay aligned and apart.
 */
export const format = (reports: ReadonlyArray<RouteReport>): string =>
  reports.length === 0 ? "no logged request of a route a replay knows" : reports.map((report) => {
    const count = (label: string, pick: (side: Side) => number) =>
      [
        label,
        `${pick(report.logged)} (${percent(pick(report.logged), report.requests)})`,
        `${pick(report.replayed)} (${percent(pick(report.replayed), report.requests)})`
      ] as const
    const keysOf = (pick: (side: Side) => Readonly<Record<string, number>>) => [
      ...new Set([...Object.keys(pick(report.logged)), ...Object.keys(pick(report.replayed))])
    ]
    const destinations = keysOf((side) => side.routed)
    const reasons = keysOf((side) => side.without_verdict).sort()
    const rows: ReadonlyArray<readonly [string, string, string]> = [
      ["", "logged", "replayed"],
      ...destinations.map((destination) => count(destination, (side) => side.routed[destination] ?? 0)),
      count("failed (error posture)", (side) => side.failed),
      ...keysOf((side) => side.failed_by_status).sort().map((status) =>
        [
          `  failed ${status}`,
          String(report.logged.failed_by_status[status] ?? 0),
          String(report.replayed.failed_by_status[status] ?? 0)
        ] as const
      ),
      count("unknown (no logged verdict)", (side) => side.unknown),
      ...reasons.map((reason) =>
        [
          `without verdict: ${reason}`,
          String(report.logged.without_verdict[reason] ?? 0),
          String(report.replayed.without_verdict[reason] ?? 0)
        ] as const
      ),
      ...keysOf((side) => side.without_verdict_routed).map((destination) =>
        [
          `without verdict on ${destination}`,
          String(report.logged.without_verdict_routed[destination] ?? 0),
          String(report.replayed.without_verdict_routed[destination] ?? 0)
        ] as const
      ),
      ...destinations.map((destination) =>
        [
          `tokens on ${destination}`,
          String(report.logged.tokens[destination] ?? 0),
          String(report.replayed.tokens[destination] ?? 0)
        ] as const
      ),
      ...costRows(report)
    ]
    const labelWidth = Math.max(30, ...rows.map(([label]) => label.length + 2))
    const cellWidth = Math.max(12, ...rows.flatMap(([, logged, replayed]) => [logged.length + 2, replayed.length + 2]))
    return [
      `route ${report.route}: ${report.requests} requests`,
      ...rows.map(([label, logged, replayed]) =>
        `  ${label.padEnd(labelWidth)}${logged.padStart(cellWidth)}${replayed.padStart(cellWidth)}`
      ),
      `  changed: ${report.changed} requests, ${report.sessions_changed} sessions`,
      ...(report.other_algorithm === 0
        ? []
        : [`  not replayed: ${report.other_algorithm} lines logged by another algorithm (the route changed type)`])
    ].join("\n")
  }).join("\n\n")
