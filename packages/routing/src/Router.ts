/**
 * The `Router` service: finds a request's route, runs its algorithm, makes the answer call with
 * candidate fallback — or takes the answer the route produced while routing (an `Answered`
 * decision, replayed as chunks to streaming callers) — bounds the whole run by the route's
 * `request_timeout_ms`, and records the run (span `libsy.run`, request/error/call metrics).
 */
import * as Fallback from "@switchyard-ts/client/Fallback"
import * as TaggedMetric from "@switchyard-ts/client/TaggedMetric"
import type { NativeBody, Target } from "@switchyard-ts/client/Target"
import { type StreamPiece, UpstreamClient } from "@switchyard-ts/client/UpstreamClient"
import {
  type ClientFailure,
  ModelNotFound,
  RequestDeadlineExceeded,
  type UpstreamFailure
} from "@switchyard-ts/protocol/Errors"
import type { ChatCompletion, Usage } from "@switchyard-ts/protocol/OpenAiChat"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import * as Decision from "./Decision.js"
import * as Evidence from "./Evidence.js"
import * as Metrics from "./Metrics.js"
import * as Replay from "./Replay.js"
import type { Route, RoutedRequest, RouteFailure } from "./Route.js"

/** Every way a routed request can fail. */
export type RouterFailure = RouteFailure | ClientFailure | ModelNotFound | RequestDeadlineExceeded

/** A buffered answer and where it came from. */
export interface Completed {
  readonly decision: Decision.Decision
  /**
   * The target that served the answer (a fallback after a fallback-worthy failure; the executor of
   * an advisor gate); none for noop.
   */
  readonly served: Option.Option<Target>
  readonly completion: ChatCompletion
  /**
   * The served target's own answer body when the caller's native body was replayed to a target of
   * its format (an Anthropic Messages caller on an `anthropic_messages` target): the caller can be
   * given it as the upstream sent it.
   */
  readonly native: Option.Option<NativeBody>
}

/** A streamed answer whose response headers have arrived. */
export interface Streamed {
  readonly decision: Decision.Decision
  readonly served: Option.Option<Target>
  /**
   * The pieces: chat chunks, with the upstream's own events on a native replay (see
   * {@link Completed}); `UpstreamClient.chunksOf` gives the chunks alone. A failure after this
   * point is never retried or failed over.
   */
  readonly pieces: Stream.Stream<StreamPiece, UpstreamFailure>
}

/** The router of one deployment. */
export class Router extends Context.Tag("@switchyard-ts/routing/Router")<Router, {
  /** The routes, sorted by route id. */
  readonly routes: ReadonlyArray<Route>
  /** Run routing (judge calls included, bounded by `request_timeout_ms`) without making the answer call. */
  readonly decide: (
    request: RoutedRequest
  ) => Effect.Effect<Decision.Decision, RouteFailure | ModelNotFound | RequestDeadlineExceeded>
  /** Route and make the buffered answer call. */
  readonly complete: (request: RoutedRequest) => Effect.Effect<Completed, RouterFailure>
  /** Route and start the streamed answer call. */
  readonly stream: (request: RoutedRequest) => Effect.Effect<Streamed, RouterFailure>
}>() {}

const nowMs = Effect.map(Clock.currentTimeNanos, (nanos) => Number(nanos) / 1e6)

/** The model label of a run: the selected target's model id, or the route id when none. */
const modelLabel = (decision: Decision.Decision): string =>
  Option.match(Decision.selected(decision), { onNone: () => decision.route.id, onSome: (t) => t.id })

const decisionAttributes = (decision: Decision.Decision) => ({
  selected_model: modelLabel(decision),
  ...Evidence.spanAttributes(decision.evidence)
})

/** Add `value` to a counter tagged with `tags`. */
const add = (
  counter: Metric.Metric.Counter<number>,
  tags: Readonly<Record<string, string>>,
  value = 1
): Effect.Effect<void> => Metric.update(TaggedMetric.tagged(counter, tags), value)

/** Record a value in a histogram tagged with `tags`. */
const observe = (
  histogram: Metric.Metric.Histogram<number>,
  tags: Readonly<Record<string, string>>,
  value: number
): Effect.Effect<void> => Metric.update(TaggedMetric.tagged(histogram, tags), value)

/** Token counters of an answer's usage, labelled with the served model; absent fields add nothing. */
export const recordUsage = (model: string, usage: Usage | null | undefined): Effect.Effect<void> => {
  if (usage === null || usage === undefined) return Effect.void
  const tags = { model }
  const cached = usage.prompt_tokens_details?.cached_tokens
  const creation = usage.prompt_tokens_details?.cache_creation_tokens
  const reasoning = usage.completion_tokens_details?.reasoning_tokens
  return Effect.all([
    add(Metrics.promptTokensTotal, tags, usage.prompt_tokens),
    add(Metrics.completionTokensTotal, tags, usage.completion_tokens),
    typeof cached === "number" ? add(Metrics.cachedTokensTotal, tags, cached) : Effect.void,
    typeof creation === "number" ? add(Metrics.cacheCreationTokensTotal, tags, creation) : Effect.void,
    typeof reasoning === "number" ? add(Metrics.reasoningTokensTotal, tags, reasoning) : Effect.void
  ], { discard: true })
}

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

    /** Run the route's algorithm; records the routing overhead and the decision. */
    const route = (route: Route, request: RoutedRequest) =>
      Effect.gen(function*() {
        const start = yield* nowMs
        const decision = yield* route.decide(request)
        const end = yield* nowMs
        yield* observe(Metrics.routingOverheadMs, { algorithm: route.algorithm }, end - start)
        yield* add(Metrics.decisionsTotal, { algorithm: route.algorithm, selected_model: modelLabel(decision) })
        yield* Effect.annotateCurrentSpan(decisionAttributes(decision))
        return decision
      })

    /** The terminal answer call's metrics: calls, duration, request/error counters. */
    const recordCall = (decision: Decision.Decision, outcome: "ok" | "error", startMs: number) =>
      Effect.gen(function*() {
        const model = modelLabel(decision)
        const tags = { algorithm: decision.route.algorithm, selected_model: model, outcome }
        const elapsed = (yield* nowMs) - startMs
        yield* add(Metrics.llmCallsTotal, tags)
        yield* observe(Metrics.llmCallDurationMs, tags, elapsed)
        if (outcome === "ok") yield* observe(Metrics.modelCallLatencyMs, { model }, elapsed)
        yield* add(outcome === "ok" ? Metrics.requestsTotal : Metrics.errorsTotal, { model })
      })

    /**
     * One routed request inside its `libsy.run` span, bounded by the route's `request_timeout_ms`
     * (its expiry interrupts whatever call is in flight). A terminal run (one that answers) also
     * counts in the run metrics; `/v1/decision` runs do not.
     */
    const run = <A, E extends RouterFailure>(
      request: RoutedRequest,
      terminal: boolean,
      body: (route: Route) => Effect.Effect<A, E>
    ): Effect.Effect<A, E | ModelNotFound | RequestDeadlineExceeded> =>
      Effect.flatMap(findRoute(request.body.model), (found) =>
        Effect.gen(function*() {
          const start = yield* nowMs
          const recordRun = (outcome: "ok" | "error") =>
            terminal
              ? Effect.gen(function*() {
                const tags = { algorithm: found.algorithm, outcome }
                yield* add(Metrics.runsTotal, tags)
                yield* observe(Metrics.runDurationMs, tags, (yield* nowMs) - start)
                yield* add(Metrics.totalRequests, {})
                if (outcome === "error") yield* add(Metrics.totalErrors, {})
              })
              : Effect.void
          const bounded: Effect.Effect<A, E | RequestDeadlineExceeded> = Option.match(
            found.requestTimeoutMs ?? Option.none(),
            {
              onNone: () => body(found),
              onSome: (ms) =>
                Effect.timeoutFail(body(found), {
                  duration: Duration.millis(ms),
                  onTimeout: () => new RequestDeadlineExceeded({ route: found.id, afterMs: ms })
                })
            }
          )
          return yield* bounded.pipe(
            Effect.tap(() => Effect.zipRight(Effect.annotateCurrentSpan("outcome", "success"), recordRun("ok"))),
            Effect.tapError((error) =>
              Effect.zipRight(
                Effect.annotateCurrentSpan({ outcome: "error", "error.type": error._tag }),
                recordRun("error")
              )
            )
          )
        }).pipe(
          Effect.withSpan("libsy.run", {
            captureStackTrace: false,
            attributes: {
              "switchyard.route": found.id,
              "switchyard.algorithm": found.algorithm,
              ...Option.match(request.sessionId, { onNone: () => ({}), onSome: (id) => ({ "session.id": id }) })
            }
          })
        ))

    const decide = (request: RoutedRequest) => run(request, false, (found) => route(found, request))

    /**
     * Route, then answer: with the answer the route produced while routing (`Answered`: noop, the
     * advisor gate — no answer call, so only the request counter and the served model's tokens are
     * recorded), or by an answer call over the candidates of a `Routed` decision.
     */
    const routeAndAnswer = <A>(
      request: RoutedRequest,
      byRoute: (decision: Decision.Answered) => A,
      byUpstream: (
        decision: Decision.Routed,
        candidates: readonly [Target, ...Array<Target>]
      ) => Effect.Effect<A, ClientFailure, UpstreamClient>
    ) =>
      run(request, true, (found) =>
        Effect.gen(function*() {
          const decision = yield* route(found, request)
          if (decision._tag === "Answered") {
            yield* add(Metrics.requestsTotal, { model: modelLabel(decision) })
            if (Option.isSome(decision.servedBy)) yield* recordUsage(decision.servedBy.value.id, decision.answer.usage)
            return byRoute(decision)
          }
          const start = yield* nowMs
          return yield* byUpstream(decision, [decision.selected, ...decision.fallbacks]).pipe(
            Effect.provideService(UpstreamClient, upstream),
            Effect.tap(() => recordCall(decision, "ok", start)),
            Effect.tapError(() => recordCall(decision, "error", start))
          )
        }))

    const complete = (request: RoutedRequest) =>
      routeAndAnswer(
        request,
        (decision): Completed => ({
          decision,
          served: decision.servedBy,
          completion: decision.answer,
          native: Option.none()
        }),
        (decision, candidates) =>
          Effect.flatMap(
            Fallback.complete(candidates, request.body, request.headers, request.native),
            (served) =>
              Effect.as(recordUsage(served.target.id, served.completion.usage), {
                decision,
                served: Option.some(served.target),
                completion: served.completion,
                native: served.native
              })
          )
      )

    const stream = (request: RoutedRequest) =>
      routeAndAnswer(
        request,
        (decision): Streamed => ({
          decision,
          served: decision.servedBy,
          pieces: Stream.make<[StreamPiece]>({
            chunks: Replay.chunks(decision.answer, {
              includeUsage: request.body.stream_options?.include_usage === true
            }),
            native: Option.none()
          })
        }),
        (decision, candidates) =>
          Effect.map(
            Fallback.stream(candidates, request.body, request.headers, request.native),
            (served): Streamed => ({
              decision,
              served: Option.some(served.target),
              pieces: served.stream.pipe(
                Stream.tap((piece) =>
                  Effect.forEach(piece.chunks, (chunk) => recordUsage(served.target.id, chunk.usage), { discard: true })
                ),
                Stream.tapError(() => add(Metrics.errorsTotal, { model: served.target.id }))
              )
            })
          )
      )

    return Router.of({ routes: sorted, decide, complete, stream })
  })

/** A router layer over fixed routes. */
export const layer = (routes: ReadonlyArray<Route>): Layer.Layer<Router, never, UpstreamClient> =>
  Layer.effect(Router, make(routes))

/**
 * Route a request without an answer call (judge calls included):
 * `Effect<Decision.Decision, RouteFailure | ModelNotFound | RequestDeadlineExceeded, Router>`.
 */
export const decide = (
  request: RoutedRequest
): Effect.Effect<Decision.Decision, RouteFailure | ModelNotFound | RequestDeadlineExceeded, Router> =>
  Effect.flatMap(Router, (router) => router.decide(request))

/** Route a request and make the buffered answer call: `Effect<Completed, RouterFailure, Router>`. */
export const complete = (request: RoutedRequest): Effect.Effect<Completed, RouterFailure, Router> =>
  Effect.flatMap(Router, (router) => router.complete(request))

/**
 * Route a request and start the streamed answer call (succeeds once the response headers arrived):
 * `Effect<Streamed, RouterFailure, Router>`.
 */
export const stream = (request: RoutedRequest): Effect.Effect<Streamed, RouterFailure, Router> =>
  Effect.flatMap(Router, (router) => router.stream(request))
