/**
 * The `Router` service: finds a request's route, runs its algorithm, makes the answer call with
 * candidate fallback, and records the run (span `libsy.run`, request/error/call metrics).
 */
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Metric from "effect/Metric"
import * as MetricLabel from "effect/MetricLabel"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import * as Fallback from "@switchyard-ts/client/Fallback"
import type { Target } from "@switchyard-ts/client/Target"
import { UpstreamClient } from "@switchyard-ts/client/UpstreamClient"
import { ModelNotFound, type UpstreamFailure } from "@switchyard-ts/protocol/Errors"
import type { ChatCompletion, ChatCompletionChunk } from "@switchyard-ts/protocol/OpenAiChat"
import type { Decision } from "./Decision.js"
import * as Evidence from "./Evidence.js"
import * as Metrics from "./Metrics.js"
import * as Noop from "./Noop.js"
import type { Route, RouteFailure, RoutedRequest } from "./Route.js"

/** Every way a routed request can fail. */
export type RouterFailure = RouteFailure | UpstreamFailure | ModelNotFound

/** A buffered answer and where it came from. */
export interface Completed {
  readonly decision: Decision
  /** The target that served the answer (a fallback after a fallback-worthy failure); none for noop. */
  readonly served: Option.Option<Target>
  readonly completion: ChatCompletion
}

/** A streamed answer whose response headers have arrived. */
export interface Streamed {
  readonly decision: Decision
  readonly served: Option.Option<Target>
  /** The chunks; a failure after this point is never retried or failed over. */
  readonly chunks: Stream.Stream<ChatCompletionChunk, UpstreamFailure>
}

/** The router of one deployment. */
export class Router extends Context.Tag("@switchyard-ts/routing/Router")<Router, {
  /** The routes, sorted by route id. */
  readonly routes: ReadonlyArray<Route>
  /** Run routing (judge calls included) without making the answer call. */
  readonly decide: (request: RoutedRequest) => Effect.Effect<Decision, RouteFailure | ModelNotFound>
  /** Route and make the buffered answer call. */
  readonly complete: (request: RoutedRequest) => Effect.Effect<Completed, RouterFailure>
  /** Route and start the streamed answer call. */
  readonly stream: (request: RoutedRequest) => Effect.Effect<Streamed, RouterFailure>
}>() {}

const nowMs = Effect.map(Clock.currentTimeNanos, (nanos) => Number(nanos) / 1e6)

/** The model label of a run: the selected target's model id, or the route id when none. */
const modelLabel = (decision: Decision): string =>
  Option.match(decision.selected, { onNone: () => decision.route.id, onSome: (t) => t.id })

const decisionAttributes = (decision: Decision) => ({
  selected_model: modelLabel(decision),
  ...Evidence.spanAttributes(decision.evidence)
})

/** Build a router over `routes` (route ids must be unique; config guarantees it). */
export const make = (routes: ReadonlyArray<Route>): Effect.Effect<Router["Type"], never, UpstreamClient> =>
  Effect.gen(function*() {
    const upstream = yield* UpstreamClient
    const sorted = [...routes].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
    const byId = new Map(sorted.map((route) => [route.id, route]))

    const findRoute = (model: string) =>
      Option.match(Option.fromNullable(byId.get(model)), {
        onNone: () => Effect.fail(new ModelNotFound({ model })),
        onSome: Effect.succeed
      })

    const route = (route: Route, request: RoutedRequest) =>
      Effect.gen(function*() {
        const start = yield* nowMs
        const decision = yield* route.decide(request)
        const end = yield* nowMs
        yield* Metric.update(Metrics.routingOverheadMs.pipe(Metric.tagged("algorithm", route.algorithm)), end - start)
        yield* Effect.annotateCurrentSpan(decisionAttributes(decision))
        return decision
      })

    const recordCall = (decision: Decision, outcome: "ok" | "error", startMs: number) =>
      Effect.gen(function*() {
        const tags = {
          algorithm: decision.route.algorithm,
          selected_model: modelLabel(decision),
          outcome
        }
        const end = yield* nowMs
        yield* Metric.update(Metrics.llmCallsTotal.pipe(Metric.taggedWithLabels(labels(tags))), 1)
        yield* Metric.update(Metrics.llmCallDurationMs.pipe(Metric.taggedWithLabels(labels(tags))), end - startMs)
        yield* Metric.update(
          (outcome === "ok" ? Metrics.requestsTotal : Metrics.errorsTotal).pipe(Metric.tagged("model", modelLabel(decision))),
          1
        )
      })

    const run = <A, E extends RouterFailure>(
      request: RoutedRequest,
      body: (route: Route) => Effect.Effect<A, E>
    ): Effect.Effect<A, E | ModelNotFound> =>
      Effect.flatMap(findRoute(request.body.model), (found) =>
        body(found).pipe(
          Effect.tap(() => Effect.annotateCurrentSpan("outcome", "success")),
          Effect.tapError((error) =>
            Effect.annotateCurrentSpan({ outcome: "error", "error.type": error._tag })
          ),
          Effect.withSpan("libsy.run", {
            attributes: {
              "switchyard.route": found.id,
              "switchyard.algorithm": found.algorithm
            }
          })
        ))

    const decide = (request: RoutedRequest) => run(request, (found) => route(found, request))

    /** Route, then answer: by the route itself (noop) or by an answer call over the candidates. */
    const routeAndAnswer = <A>(
      request: RoutedRequest,
      byRoute: (decision: Decision, created: number) => A,
      byUpstream: (
        decision: Decision,
        candidates: readonly [Target, ...Array<Target>]
      ) => Effect.Effect<A, UpstreamFailure, UpstreamClient>
    ) =>
      run(request, (found) =>
        Effect.gen(function*() {
          const decision = yield* route(found, request)
          const start = yield* nowMs
          const answer = Option.match(decision.selected, {
            onNone: () => Effect.map(Clock.currentTimeMillis, (ms) => byRoute(decision, Math.floor(ms / 1000))),
            onSome: (selected) =>
              byUpstream(decision, [selected, ...decision.fallbacks]).pipe(Effect.provideService(UpstreamClient, upstream))
          })
          return yield* answer.pipe(
            Effect.tap(() => recordCall(decision, "ok", start)),
            Effect.tapError(() => recordCall(decision, "error", start))
          )
        }))

    const complete = (request: RoutedRequest) =>
      routeAndAnswer(
        request,
        (decision, created): Completed => ({
          decision,
          served: Option.none(),
          completion: Noop.completion(decision.route.id, created)
        }),
        (decision, candidates) =>
          Effect.map(
            Fallback.complete(candidates, request.body, request.headers),
            (served): Completed => ({ decision, served: Option.some(served.target), completion: served.completion })
          )
      )

    const stream = (request: RoutedRequest) =>
      routeAndAnswer(
        request,
        (decision, created): Streamed => ({
          decision,
          served: Option.none(),
          chunks: Stream.fromIterable(Noop.chunks(decision.route.id, created))
        }),
        (decision, candidates) =>
          Effect.map(
            Fallback.stream(candidates, request.body, request.headers),
            (served): Streamed => ({
              decision,
              served: Option.some(served.target),
              chunks: served.stream.pipe(
                Stream.tapError(() => Metric.update(Metrics.errorsTotal.pipe(Metric.tagged("model", served.target.id)), 1))
              )
            })
          )
      )

    return Router.of({ routes: sorted, decide, complete, stream })
  })

const labels = (tags: Readonly<Record<string, string>>) =>
  Object.entries(tags).map(([key, value]) => MetricLabel.make(key, value))


/** A router layer over fixed routes. */
export const layer = (routes: ReadonlyArray<Route>): Layer.Layer<Router, never, UpstreamClient> =>
  Layer.effect(Router, make(routes))

/** Route a request without an answer call (requires a `Router`). */
export const decide = (request: RoutedRequest) => Effect.flatMap(Router, (router) => router.decide(request))

/** Route a request and make the buffered answer call (requires a `Router`). */
export const complete = (request: RoutedRequest) => Effect.flatMap(Router, (router) => router.complete(request))

/** Route a request and start the streamed answer call (requires a `Router`). */
export const stream = (request: RoutedRequest) => Effect.flatMap(Router, (router) => router.stream(request))
