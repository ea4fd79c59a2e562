/**
 * `GET /v1/judges`: one entry per target a route consults as a judge (first of its chain or a
 * fallback), with the routes that use it (its role there and the route's posture), its client's
 * breaker, and what this process has seen of it (`JudgeHealth`: last success, last failure, the
 * calls of the last 5 minutes). Times are ISO 8601.
 */
import type * as Breaker from "@switchyard-ts/client/Breaker"
import type { Target } from "@switchyard-ts/client/Target"
import type { Deployment } from "@switchyard-ts/config/Deployment"
import type * as JudgeHealth from "@switchyard-ts/routing/JudgeHealth"
import * as RouteTypes from "@switchyard-ts/routing/RouteTypes"
import * as Option from "effect/Option"

/** One route's use of a judge (`route`: the route's id, as in the metrics' `route` label). */
export interface Use {
  readonly route: string
  readonly role: "primary" | "fallback"
  readonly judge_failure: "error" | "fail_open"
}

/** A judge target and the routes that use it, in deployment order. */
export interface Listed {
  readonly target: Target
  readonly routes: ReadonlyArray<Use>
}

/** The judges of `deployment`, each once, in the order the routes first name them. */
export const listOf = (deployment: Deployment): ReadonlyArray<Listed> => {
  const listed = new Map<string, { readonly target: Target; readonly routes: Array<Use> }>()
  for (const spec of deployment.routes) {
    for (const use of RouteTypes.of(spec).judgeChains) {
      use.judges.forEach((target, i) => {
        const entry = listed.get(target.name) ?? { target, routes: [] }
        listed.set(target.name, entry)
        const role = i === 0 ? "primary" : "fallback"
        if (!entry.routes.some((r) => r.route === spec.id && r.role === role)) {
          entry.routes.push({ route: spec.id, role, judge_failure: use.posture })
        }
      })
    }
  }
  return [...listed.values()]
}

const iso = (ms: number): string => new Date(ms).toISOString()

/**
 * The breaker of a judge's client as the endpoint shows it (`opened_at` null while closed; `shared`:
 * its state is shared with other replicas right now); null for a client without one.
 */
const breakerOf = (statuses: ReadonlyArray<Breaker.Status>, client: string) => {
  const status = statuses.find((s) => s.client === client)
  return status === undefined ? null : {
    state: status.state,
    opened_at: Option.match(status.opened_at, { onNone: () => null, onSome: iso }),
    shared: status.shared
  }
}

/** The body of `GET /v1/judges` at `nowMs`. */
export const body = (
  listed: ReadonlyArray<Listed>,
  breakers: ReadonlyArray<Breaker.Status>,
  health: JudgeHealth.Recorder,
  nowMs: number
) => ({
  judges: listed.map(({ routes, target }) => {
    const seen = health.health(target.id, nowMs)
    return {
      target: target.name,
      model: target.id,
      llm_client: target.client.name,
      routes,
      breaker: breakerOf(breakers, target.client.name),
      last_success_at: seen.lastSuccessAtMs === undefined ? null : iso(seen.lastSuccessAtMs),
      last_failure: seen.lastFailure === undefined
        ? null
        : { at: iso(seen.lastFailure.atMs), reason: seen.lastFailure.reason },
      window: seen.window
    }
  })
})
