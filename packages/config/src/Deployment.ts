/**
 * A validated deployment as Layers: the route algorithms of its route specs (each handed to its
 * route's `make` as it is) and the `Router` over them (its data types are in `DeploymentSpec`,
 * re-exported here).
 */
import type * as HttpClient from "@effect/platform/HttpClient"
import * as UpstreamClient from "@switchyard-ts/client/UpstreamClient"
import * as AdvisorRoute from "@switchyard-ts/routing/AdvisorRoute"
import * as CapabilityRoute from "@switchyard-ts/routing/CapabilityRoute"
import * as CompositeRoute from "@switchyard-ts/routing/CompositeRoute"
import * as CustomRoute from "@switchyard-ts/routing/CustomRoute"
import * as EscalationRoute from "@switchyard-ts/routing/EscalationRoute"
import * as Judge from "@switchyard-ts/routing/Judge"
import * as Noop from "@switchyard-ts/routing/Noop"
import * as Passthrough from "@switchyard-ts/routing/Passthrough"
import * as RandomRoute from "@switchyard-ts/routing/RandomRoute"
import type { Route } from "@switchyard-ts/routing/Route"
import * as Router from "@switchyard-ts/routing/Router"
import * as SessionStore from "@switchyard-ts/routing/SessionStore"
import * as StageRoute from "@switchyard-ts/routing/StageRoute"
import * as Stats from "@switchyard-ts/routing/Stats"
import * as Subagents from "@switchyard-ts/routing/Subagents"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import type { Deployment, RouteCommon, SubagentsSpec } from "./DeploymentSpec.js"
import * as DeploymentToml from "./DeploymentToml.js"
import { type InvalidConfig } from "./InvalidConfig.js"

export type * from "./DeploymentSpec.js"
export { InvalidConfig } from "./InvalidConfig.js"

/**
 * The route a `subagents` table describes, over the parent route's id and name: a fixed target
 * (`Passthrough`), or a custom classifier whose stored selections are keyed by (session id, agent
 * id).
 */
const subagentRoute = (
  parent: RouteCommon,
  spec: SubagentsSpec
): Effect.Effect<Route, never, Judge.Judge | SessionStore.SessionStore | Scope.Scope> =>
  spec.type === "passthrough"
    ? Effect.succeed(Passthrough.make({ id: parent.id, name: parent.name, target: spec.target }))
    : CustomRoute.make({
      ...spec,
      id: parent.id,
      name: parent.name,
      messageHashFallback: false,
      affinity: "agent"
    })

/**
 * The route algorithms of a deployment, in route-id order, each with its `request_timeout_ms` and the
 * caller credential family it forwards (`DeploymentToml.forwardAuthFamily`, computed here once: the
 * `Router` refuses a request from an endpoint of the other family). Late judge calls of classifier
 * routes with `late_verdict_ms` run in `Scope`: closing it interrupts them.
 */
export const routes = (
  deployment: Deployment
): Effect.Effect<
  ReadonlyArray<Route>,
  never,
  Judge.Judge | SessionStore.SessionStore | UpstreamClient.UpstreamClient | Scope.Scope
> =>
  Effect.forEach(deployment.routes, (spec): Effect.Effect<
    Route,
    never,
    Judge.Judge | SessionStore.SessionStore | UpstreamClient.UpstreamClient | Scope.Scope
  > => {
    const forwardAuth = DeploymentToml.forwardAuthFamily(spec)
    /** The route with the spec's `request_timeout_ms` and the caller credential family it forwards. */
    const bounded = (route: Route): Route => ({ ...route, requestTimeoutMs: spec.requestTimeoutMs, forwardAuth })
    /** `parent` with its `subagents` table, if any, routing delegated sub-agent work. */
    const withSubagents = (
      parent: Route,
      subagents: Option.Option<SubagentsSpec>
    ): Effect.Effect<Route, never, Judge.Judge | SessionStore.SessionStore | Scope.Scope> =>
      Option.match(subagents, {
        onNone: () => Effect.succeed(bounded(parent)),
        onSome: (table) =>
          Effect.map(subagentRoute(spec, table), (subagent) => bounded(Subagents.delegate(parent, subagent)))
      })
    switch (spec.type) {
      case "noop":
        return Effect.succeed(bounded(Noop.make(spec)))
      case "passthrough":
        return withSubagents(Passthrough.make(spec), spec.subagents)
      case "random":
        return Effect.succeed(bounded(RandomRoute.make(spec)))
      case "llm_classifier":
        switch (spec.mode) {
          case "custom":
            return Effect.map(CustomRoute.make(spec), bounded)
          case "escalation":
            return Effect.map(EscalationRoute.make(spec), bounded)
          case "capability":
            return Effect.map(CapabilityRoute.make(spec), bounded)
        }
      case "stage_router":
      case "auto":
        return Effect.flatMap(StageRoute.make(spec), (parent) => withSubagents(parent, spec.subagents))
      case "composite":
        return Effect.flatMap(CompositeRoute.make(spec), (parent) => withSubagents(parent, spec.subagents))
      case "advisor":
        return Effect.map(AdvisorRoute.make(spec), bounded)
    }
  })

/**
 * The `Router` of a validated deployment over the caller's `Judge`, `SessionStore`, `UpstreamClient`
 * and `Stats` recorder (replace any of them, e.g. a scripted judge in tests, a shared session store,
 * `Stats.layer` for `/v1/stats`).
 * Building it registers the circuit breaker of every client with a `breaker` table on the
 * `UpstreamClient`, so breaker states are visible before the first call. The layer owns the
 * routes' background judge calls (`late_verdict_ms`): releasing it interrupts them.
 */
export const layerWith = (
  deployment: Deployment
): Layer.Layer<
  Router.Router,
  never,
  UpstreamClient.UpstreamClient | Judge.Judge | SessionStore.SessionStore | Stats.Stats
> =>
  Layer.scoped(
    Router.Router,
    Effect.zipRight(
      Effect.flatMap(
        UpstreamClient.UpstreamClient,
        (upstream) => Effect.forEach(deployment.clients, upstream.register, { discard: true })
      ),
      Effect.flatMap(routes(deployment), Router.make)
    )
  )

/**
 * The `Router` of a validated deployment with the default judge (over the upstream client), an
 * in-memory session store bounded by the deployment's `[sessions]` table and no stats
 * (`Stats.layerDisabled`). It ignores
 * `store = "redis"` (this package stays runtime-neutral): use `layerWith` and a Redis-backed
 * `SessionStore`, as the server does.
 */
export const layer = (deployment: Deployment): Layer.Layer<Router.Router, never, UpstreamClient.UpstreamClient> =>
  layerWith(deployment).pipe(
    Layer.provide(Layer.mergeAll(Judge.layer, SessionStore.layerMemory(deployment.sessions), Stats.layerDisabled))
  )

/**
 * The `Router` of a deployment TOML text, with the `UpstreamClient` built on the caller's
 * `HttpClient` (e.g. `NodeHttpClient.layerUndici` or `FetchHttpClient.layer`). API keys named by
 * `api_key_env` are read through `Config` when the layer is built.
 */
export const layerFromToml = (
  text: string
): Layer.Layer<Router.Router, InvalidConfig, HttpClient.HttpClient> =>
  Layer.unwrapEffect(Effect.map(DeploymentToml.parse(text), layer)).pipe(
    Layer.provide(UpstreamClient.layer)
  )
