/**
 * Policy replay: re-decide every logged request of a capability classifier route under another
 * deployment's settings of that route (`base_threshold`, `threshold_step`, `classify_trigger`,
 * `judge_failure`) without calling any model. Judge outcomes come from the routing log: a logged
 * verdict keeps its p_solve and boundary, a failed judge stays failed, an invalid verdict stays
 * invalid, a call the breaker refused stays refused. A request whose original routing made no judge
 * call (it reused the session's stored decision) but which the new settings would consult is
 * `unknown`: the log has no verdict for it.
 *
 * The session state is replayed too: lines are taken in file order, and only a replayed verdict
 * changes a session's stored tier (as the route does). Sessions are the lines' `session_id`; a
 * `new_session` route with `message_hash_fallback` keys requests without one by a message hash the
 * log does not have, so those requests replay without a stored decision.
 */
import type { Deployment } from "@switchyard-ts/config/Deployment"
import * as Policy from "@switchyard-ts/routing/Policy"
import type { Boundary } from "@switchyard-ts/routing/Verdict"
import type * as RoutingLog from "./RoutingLog.js"

/** The settings of one capability route that a replay changes. */
export interface Settings {
  readonly baseThreshold: number
  readonly thresholdStep: number
  readonly classifyTrigger: "every_request" | "user_turn" | "new_session"
  readonly judgeFailure: "error" | "fail_open"
}

/** The capability classifier routes of `deployment`, by route id, with their settings. */
export const settingsOf = (deployment: Deployment): ReadonlyMap<string, Settings> =>
  new Map(
    deployment.routes.flatMap((route) =>
      route.type === "llm_classifier" && route.mode === "capability"
        ? [
          [route.id, {
            baseThreshold: route.baseThreshold,
            thresholdStep: route.thresholdStep,
            classifyTrigger: route.classifyTrigger,
            judgeFailure: route.judgeFailure
          }] as const
        ]
        : []
    )
  )

/** What one request came to: a tier and the evidence source that chose it, a failure, or unknown. */
export type Outcome =
  | { readonly _tag: "Tier"; readonly tier: Policy.Tier; readonly source: string; readonly reason?: string }
  | { readonly _tag: "Failed"; readonly reason: string }
  | { readonly _tag: "Unknown" }

/** What the log says the judge did for a request. */
type JudgeFact =
  | { readonly _tag: "Verdict"; readonly pSolve: number; readonly boundary: Boundary }
  /** The judge could not be consulted (`timeout`, `transport`, `upstream_*`): the posture decides. */
  | { readonly _tag: "CallFailed"; readonly reason: string }
  /** It answered unusably (`invalid_response`, `parse_error`): no verdict under both postures. */
  | { readonly _tag: "Invalid"; readonly reason: string }
  /** The breaker refused the call. */
  | { readonly _tag: "Refused" }
  | { readonly _tag: "None" }

const invalidReasons: ReadonlyArray<string> = ["invalid_response", "parse_error"]

const judgeFactOf = (line: RoutingLog.ResponseLine): JudgeFact => {
  const evidence = line.evidence
  if (evidence !== null && evidence.source === "llm-classifier" && "score" in evidence) {
    return { _tag: "Verdict", pSolve: evidence.score, boundary: evidence.boundary }
  }
  if (evidence !== null && evidence.source === "circuit-open") return { _tag: "Refused" }
  if (evidence === null && line.judge === null && line.error === "upstream_unavailable") return { _tag: "Refused" }
  if (line.judge !== null && line.judge.outcome !== "ok" && line.judge.outcome !== "interrupted") {
    return invalidReasons.includes(line.judge.outcome)
      ? { _tag: "Invalid", reason: line.judge.outcome }
      : { _tag: "CallFailed", reason: line.judge.outcome }
  }
  return { _tag: "None" }
}

/** What the log says happened to a request: its decision, or the failure of its routing. */
export const loggedOutcome = (line: RoutingLog.ResponseLine): Outcome => {
  if (line.evidence === null) {
    const fact = judgeFactOf(line)
    return fact._tag === "CallFailed"
      ? { _tag: "Failed", reason: fact.reason }
      : fact._tag === "Refused"
      ? { _tag: "Failed", reason: "circuit_open" }
      : { _tag: "Unknown" }
  }
  if (line.tier !== "weak" && line.tier !== "strong") return { _tag: "Unknown" }
  const evidence = line.evidence
  return "reason" in evidence && typeof evidence.reason === "string"
    ? { _tag: "Tier", tier: line.tier, source: evidence.source, reason: evidence.reason }
    : evidence.source === "circuit-open"
    ? { _tag: "Tier", tier: line.tier, source: evidence.source, reason: "circuit_open" }
    : { _tag: "Tier", tier: line.tier, source: evidence.source }
}

/**
 * Replay one route's response lines (in file order) under `settings`: each line's replayed
 * outcome, in order.
 */
export const replayRoute = (
  lines: ReadonlyArray<RoutingLog.ResponseLine>,
  settings: Settings
): ReadonlyArray<Outcome> => {
  const stored = new Map<string, Policy.Tier>()
  return lines.map((line): Outcome => {
    const key = settings.classifyTrigger === "every_request" ? null : line.session_id
    const previous = key === null ? undefined : stored.get(key)
    const reuse = settings.classifyTrigger === "new_session" ||
      (settings.classifyTrigger === "user_turn" && !line.user_turn)
    if (reuse && previous !== undefined) return { _tag: "Tier", tier: previous, source: "affinity" }
    const fact = judgeFactOf(line)
    const withoutVerdict = (reason: string, source: "fail-open" | "circuit-open"): Outcome =>
      previous !== undefined && source === "fail-open"
        ? { _tag: "Tier", tier: previous, source: "retained", reason }
        : previous !== undefined
        ? { _tag: "Tier", tier: previous, source, reason }
        : { _tag: "Tier", tier: "strong", source, reason }
    switch (fact._tag) {
      case "Verdict": {
        const chosen = Policy.choose(
          { p_solve: fact.pSolve, capability_boundary: fact.boundary },
          settings.baseThreshold,
          settings.thresholdStep
        )
        if (key !== null) stored.set(key, chosen.tier)
        return { _tag: "Tier", tier: chosen.tier, source: "llm-classifier" }
      }
      case "CallFailed":
        return settings.judgeFailure === "error"
          ? { _tag: "Failed", reason: fact.reason }
          : withoutVerdict(fact.reason, "fail-open")
      case "Invalid":
        return withoutVerdict(fact.reason, "fail-open")
      case "Refused":
        return settings.judgeFailure === "error"
          ? { _tag: "Failed", reason: "circuit_open" }
          : withoutVerdict("circuit_open", "circuit-open")
      case "None":
        return { _tag: "Unknown" }
    }
  })
}

/** Counts of one side (logged or replayed) of a route's report. */
export interface Side {
  readonly weak: number
  readonly strong: number
  /** Requests failed by the `error` posture. */
  readonly failed: number
  /** Requests whose outcome the log cannot tell. */
  readonly unknown: number
  /** Requests routed without a verdict (fail-open, retained, circuit-open), by reason. */
  readonly without_verdict: Readonly<Record<string, number>>
  /** `total_tokens` of the logged lines, by the tier each request went (or would go) to. */
  readonly tokens: { readonly weak: number; readonly strong: number }
}

/** One route's replay. */
export interface RouteReport {
  readonly route: string
  readonly requests: number
  readonly logged: Side
  readonly replayed: Side
  /** Requests whose replayed outcome differs from the logged one. */
  readonly changed: number
  /** Sessions with at least one changed request. */
  readonly sessions_changed: number
}

const sideOf = (lines: ReadonlyArray<RoutingLog.ResponseLine>, outcomes: ReadonlyArray<Outcome>): Side => {
  let weak = 0, strong = 0, failed = 0, unknown = 0, weakTokens = 0, strongTokens = 0
  const withoutVerdict: Record<string, number> = {}
  outcomes.forEach((outcome, i) => {
    const tokens = lines[i]?.total_tokens ?? 0
    if (outcome._tag === "Failed") failed++
    else if (outcome._tag === "Unknown") unknown++
    else {
      if (outcome.tier === "weak") {
        weak++
        weakTokens += tokens
      } else {
        strong++
        strongTokens += tokens
      }
      if (outcome.reason !== undefined) withoutVerdict[outcome.reason] = (withoutVerdict[outcome.reason] ?? 0) + 1
    }
  })
  return {
    weak,
    strong,
    failed,
    unknown,
    without_verdict: withoutVerdict,
    tokens: { weak: weakTokens, strong: strongTokens }
  }
}

const same = (a: Outcome, b: Outcome): boolean =>
  a._tag === "Tier" && b._tag === "Tier"
    ? a.tier === b.tier && a.source === b.source
    : a._tag === "Failed" && b._tag === "Failed"
    ? a.reason === b.reason
    : a._tag === b._tag

/**
 * Replay the response lines of every capability route of `settings` (or only `route`), in file
 * order; routes with no line are left out.
 */
export const replay = (
  lines: ReadonlyArray<RoutingLog.Line>,
  settings: ReadonlyMap<string, Settings>,
  route?: string
): ReadonlyArray<RouteReport> =>
  [...settings].filter(([id]) => route === undefined || id === route).flatMap(([id, routeSettings]) => {
    const own = lines.flatMap((line) => line.kind === "response" && line.route === id ? [line] : [])
    if (own.length === 0) return []
    const logged = own.map(loggedOutcome)
    const replayed = replayRoute(own, routeSettings)
    const changedSessions = new Set<string>()
    let changed = 0
    replayed.forEach((outcome, i) => {
      const before = logged[i]
      if (before === undefined || same(before, outcome)) return
      changed++
      const session = own[i]?.session_id
      if (session !== null && session !== undefined) changedSessions.add(session)
    })
    return [{
      route: id,
      requests: own.length,
      logged: sideOf(own, logged),
      replayed: sideOf(own, replayed),
      changed,
      sessions_changed: changedSessions.size
    }]
  })

const percent = (part: number, whole: number) => whole === 0 ? "0%" : `${Math.round((part / whole) * 100)}%`

/**
 * The reports as a text table per route (logged beside replayed). Columns are at least 30 (labels)
 * and 12 (counts) characters wide and grow with their longest entry, so they stay aligned and apart.
 */
export const format = (reports: ReadonlyArray<RouteReport>): string =>
  reports.length === 0 ? "no logged request of a capability classifier route" : reports.map((report) => {
    const count = (label: string, pick: (side: Side) => number) =>
      [
        label,
        `${pick(report.logged)} (${percent(pick(report.logged), report.requests)})`,
        `${pick(report.replayed)} (${percent(pick(report.replayed), report.requests)})`
      ] as const
    const reasons = [
      ...new Set([...Object.keys(report.logged.without_verdict), ...Object.keys(report.replayed.without_verdict)])
    ].sort()
    const rows: ReadonlyArray<readonly [string, string, string]> = [
      ["", "logged", "replayed"],
      count("weak", (side) => side.weak),
      count("strong", (side) => side.strong),
      count("failed (error posture)", (side) => side.failed),
      count("unknown (no logged verdict)", (side) => side.unknown),
      ...reasons.map((reason) =>
        [
          `without verdict: ${reason}`,
          String(report.logged.without_verdict[reason] ?? 0),
          String(report.replayed.without_verdict[reason] ?? 0)
        ] as const
      ),
      ["tokens on weak", String(report.logged.tokens.weak), String(report.replayed.tokens.weak)],
      ["tokens on strong", String(report.logged.tokens.strong), String(report.replayed.tokens.strong)]
    ]
    const labelWidth = Math.max(30, ...rows.map(([label]) => label.length + 2))
    const cellWidth = Math.max(12, ...rows.flatMap(([, logged, replayed]) => [logged.length + 2, replayed.length + 2]))
    return [
      `route ${report.route}: ${report.requests} requests`,
      ...rows.map(([label, logged, replayed]) =>
        `  ${label.padEnd(labelWidth)}${logged.padStart(cellWidth)}${replayed.padStart(cellWidth)}`
      ),
      `  changed: ${report.changed} requests, ${report.sessions_changed} sessions`
    ].join("\n")
  }).join("\n\n")
