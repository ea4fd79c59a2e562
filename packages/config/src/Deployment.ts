/**
 * A validated deployment: the LLM clients, targets and routes of one deployment TOML file.
 */
import type * as HttpClient from "@effect/platform/HttpClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Option from "effect/Option"
import type { LlmClient, Target } from "@switchyard-ts/client/Target"
import * as UpstreamClient from "@switchyard-ts/client/UpstreamClient"
import * as Noop from "@switchyard-ts/routing/Noop"
import * as Passthrough from "@switchyard-ts/routing/Passthrough"
import * as RandomRoute from "@switchyard-ts/routing/RandomRoute"
import type { Route } from "@switchyard-ts/routing/Route"
import * as Router from "@switchyard-ts/routing/Router"
import * as DeploymentToml from "./DeploymentToml.js"
import { InvalidConfig } from "./InvalidConfig.js"

export { InvalidConfig } from "./InvalidConfig.js"

/** Keys every route table shares. */
export interface RouteCommon {
  /** The TOML table name (`[routes.<name>]`). */
  readonly name: string
  /** The public model name clients send. */
  readonly id: string
  /** Advertised by `/v1/models` only. */
  readonly contextWindow: Option.Option<number>
  /** Advertised by `/v1/models` only. */
  readonly toolCalling: Option.Option<boolean>
}

/** `type = "noop"`: answers `OK` itself, without any upstream. */
export interface NoopRouteSpec extends RouteCommon {
  readonly type: "noop"
}

/** `type = "passthrough"`: always the one target, no fallbacks. */
export interface PassthroughRouteSpec extends RouteCommon {
  readonly type: "passthrough"
  readonly target: Target
}

/** `type = "random"`: a weighted pick among `targets`; the others are fallbacks in config order. */
export interface RandomRouteSpec extends RouteCommon {
  readonly type: "random"
  readonly targets: readonly [Target, ...Array<Target>]
  /** Same length as `targets`, finite, non-negative, at least one positive (equal when omitted). */
  readonly weights: ReadonlyArray<number>
  /** With a seed the pick sequence repeats for an identical order of calls. */
  readonly seed: Option.Option<bigint>
}

export type RouteSpec = NoopRouteSpec | PassthroughRouteSpec | RandomRouteSpec

/** A validated deployment. Every list is sorted by table name (routes by route id). */
export interface Deployment {
  readonly clients: ReadonlyArray<LlmClient>
  readonly targets: ReadonlyArray<Target>
  readonly routes: ReadonlyArray<RouteSpec>
}


/** The route algorithms of a deployment, in route-id order. */
export const routes = (deployment: Deployment): ReadonlyArray<Route> =>
  deployment.routes.map((spec) => {
    const common = { id: spec.id, name: spec.name, contextWindow: spec.contextWindow, toolCalling: spec.toolCalling }
    switch (spec.type) {
      case "noop":
        return Noop.make(common)
      case "passthrough":
        return Passthrough.make({ ...common, target: spec.target })
      case "random":
        return RandomRoute.make({ ...common, targets: spec.targets, weights: spec.weights, seed: spec.seed })
    }
  })

/** The `Router` of a validated deployment; the upstream client is the caller's to provide. */
export const layer = (deployment: Deployment): Layer.Layer<Router.Router, never, UpstreamClient.UpstreamClient> =>
  Layer.suspend(() => Router.layer(routes(deployment)))

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
