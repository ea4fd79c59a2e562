/**
 * A route's `subagents` table as a route combinator: requests flagged as delegated sub-agent work
 * (`SessionIdentity.isDelegatedWork`: `x-switchyard-is-subagent`, a Claude child's agent id, a
 * Codex child thread, a `collab_spawn` / `review` harness kind) are routed by the sub-agent route;
 * every other request — root agents, and harness maintenance turns such as Codex `compact` — by
 * the parent route, unchanged.
 *
 * The sub-agent route is any `Route` over its own targets: a fixed target (`type = "passthrough"`,
 * a `Passthrough` route) or a custom classifier (`type = "llm_classifier"`, a `CustomRoute` with
 * `affinity = "agent"`: its `new_session` affinity is keyed by `(session id, agent id)`, never by a
 * message hash). A sub-agent decision keeps the sub-agent route's target, fallbacks (its own
 * targets only) and evidence, marked `subagent: true`; its route info is the parent's, so metrics
 * and spans stay labelled with the route's own algorithm. Routing failures of either side (a judge
 * under `judge_failure = "error"`) are the request's failures, as on any route.
 *
 * Used by `passthrough` and `stage_router` routes (written over any parent `Route`). A delegated
 * request never reaches the parent, as in the compatible system: under a stage router it skips the
 * signals, the tier system prompts and handoff notes, the stage metrics, and the classifier's
 * per-session lock and stored tier, so a child neither waits for its parent session's routing nor
 * changes it. A custom sub-agent classifier serializes by session on locks of its own.
 */
import * as Effect from "effect/Effect"
import { dual } from "effect/Function"
import type * as Decision from "../../Decision.js"
import * as Evidence from "../../Evidence.js"
import { distinctTargets, type Route } from "../../Route.js"
import * as SessionIdentity from "../../sessions/SessionIdentity.js"

/** A decision of the sub-agent route, presented as the parent route's, with its evidence marked `subagent`. */
const asParents = (parent: Route, decision: Decision.Decision): Decision.Decision => ({
  ...decision,
  route: { id: parent.id, name: parent.name, algorithm: parent.algorithm },
  evidence: Evidence.asSubagent(decision.evidence)
})

/**
 * `parent` with delegated sub-agent work routed by `subagent` (see the module doc). The result's
 * `targets` are the parent's then the sub-agent route's, without repeats; id, name, algorithm,
 * context window, tool calling and request timeout are the parent's.
 */
export const delegate: {
  (subagent: Route): (parent: Route) => Route
  (parent: Route, subagent: Route): Route
} = dual(2, (parent: Route, subagent: Route): Route => ({
  ...parent,
  targets: distinctTargets([...parent.targets, ...subagent.targets]),
  decide: (request) =>
    SessionIdentity.isDelegatedWork(request.headers)
      ? Effect.map(subagent.decide(request), (decision) => asParents(parent, decision))
      : parent.decide(request)
}))
