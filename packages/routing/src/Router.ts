/**
 * The `Router` service: finds a request's route (refusing one that forwards caller credentials of
 * the other family than the request's endpoint, `Route.forwardAuthMismatch`, and a request using an
 * input the route disables, `RouteFlags.refusal`), runs its algorithm,
 * makes the answer call with candidate fallback — or takes the answer the route produced while
 * routing (an `Answered` decision, replayed as chunks to streaming callers) — bounds the whole run
 * by the route's `request_timeout_ms`, and records the run (span `libsy.run`, request/error/call
 * metrics, the `Stats` recorder). How one request is run is `internal/routerRun.ts`.
 */
import { UpstreamClient } from "@switchyard-ts/client/UpstreamClient"
import type {
  ForwardAuthMismatch,
  ModelNotFound,
  RequestDeadlineExceeded,
  UnsupportedCapability
} from "@switchyard-ts/protocol/Errors"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Stats from "./cost/Stats.js"
import type * as Decision from "./Decision.js"
import * as RoutingFacts from "./host/RoutingFacts.js"
import * as RouterRun from "./internal/routerRun.js"
import type { Route, RoutedRequest, RouteFailure } from "./Route.js"

export type { Completed, RouterFailure, Streamed } from "./internal/routerRun.js"

/** The router of one deployment. */
export class Router extends Context.Tag("@switchyard-ts/routing/Router")<Router, {
  /** The routes, sorted by route id. */
  readonly routes: ReadonlyArray<Route>
  /**
   * Run routing (judge calls included, bounded by `request_timeout_ms`) without making the answer
   * call; `observer` (default: none) receives what the routing did (`RoutingFacts`).
   */
  readonly decide: (
    request: RoutedRequest,
    observer?: RoutingFacts.Observer
  ) => Effect.Effect<
    Decision.Decision,
    RouteFailure | ModelNotFound | ForwardAuthMismatch | UnsupportedCapability | RequestDeadlineExceeded
  >
  /** Route and make the buffered answer call; `observer` as for `decide`. */
  readonly complete: (
    request: RoutedRequest,
    observer?: RoutingFacts.Observer
  ) => Effect.Effect<RouterRun.Completed, RouterRun.RouterFailure>
  /** Route and start the streamed answer call; `observer` as for `decide`. */
  readonly stream: (
    request: RoutedRequest,
    observer?: RoutingFacts.Observer
  ) => Effect.Effect<RouterRun.Streamed, RouterRun.RouterFailure>
}>() {}

/** Build a router over `routes` (route ids must be unique; config guarantees it), recording into `Stats`. */
export const make = (
  routes: ReadonlyArray<Route>
): Effect.Effect<Router["Type"], never, UpstreamClient | Stats.Stats> =>
  Effect.gen(function*() {
    const sorted = [...routes].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
    const deps: RouterRun.Deps = {
      upstream: yield* UpstreamClient,
      stats: yield* Stats.Stats,
      routes: new Map(sorted.map((route) => [route.id, route]))
    }
    return Router.of({
      routes: sorted,
      decide: (request, observer = RoutingFacts.ignored) => RouterRun.decide(deps, request, observer),
      complete: (request, observer = RoutingFacts.ignored) => RouterRun.complete(deps, request, observer),
      stream: (request, observer = RoutingFacts.ignored) => RouterRun.stream(deps, request, observer)
    })
  })

/** A router layer over fixed routes. */
export const layer = (routes: ReadonlyArray<Route>): Layer.Layer<Router, never, UpstreamClient | Stats.Stats> =>
  Layer.effect(Router, make(routes))

/**
 * Route a request without an answer call (judge calls included):
 * `Effect<Decision.Decision, RouteFailure | ModelNotFound | ForwardAuthMismatch | UnsupportedCapability | RequestDeadlineExceeded, Router>`.
 */
export const decide = (
  request: RoutedRequest
): Effect.Effect<
  Decision.Decision,
  RouteFailure | ModelNotFound | ForwardAuthMismatch | UnsupportedCapability | RequestDeadlineExceeded,
  Router
> => Effect.flatMap(Router, (router) => router.decide(request))

/** Route a request and make the buffered answer call: `Effect<Completed, RouterFailure, Router>`. */
export const complete = (request: RoutedRequest): Effect.Effect<RouterRun.Completed, RouterRun.RouterFailure, Router> =>
  Effect.flatMap(Router, (router) => router.complete(request))

/**
 * Route a request and start the streamed answer call (succeeds once the response headers arrived):
 * `Effect<Streamed, RouterFailure, Router>`.
 */
export const stream = (request: RoutedRequest): Effect.Effect<RouterRun.Streamed, RouterRun.RouterFailure, Router> =>
  Effect.flatMap(Router, (router) => router.stream(request))
