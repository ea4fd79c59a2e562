/**
 * The `Router` service: finds a request's route (refusing one that forwards caller credentials of
 * the other family than the request's endpoint, `Route.forwardAuthMismatch`), runs its algorithm,
 * makes the answer call with candidate fallback — or takes the answer the route produced while
 * routing (an `Answered` decision, replayed as chunks to streaming callers) — bounds the whole run
 * by the route's `request_timeout_ms`, and records the run (span `libsy.run`, request/error/call
 * metrics).
 */
import * as Fallback from "@switchyard-ts/client/Fallback"
import * as Relay from "@switchyard-ts/client/Relay"
import * as Spans from "@switchyard-ts/client/Spans"
import * as TaggedMetric from "@switchyard-ts/client/TaggedMetric"
import type { NativeBody, Target } from "@switchyard-ts/client/Target"
import { type StreamPiece, UpstreamClient } from "@switchyard-ts/client/UpstreamClient"
import {
  type ClientFailure,
  type ForwardAuthMismatch,
  ModelNotFound,
  RequestDeadlineExceeded,
  type UpstreamFailure
} from "@switchyard-ts/protocol/Errors"
import type { ChatCompletion, Usage } from "@switchyard-ts/protocol/OpenAiChat"
import type * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import type * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import type * as Stream from "effect/Stream"
import * as Decision from "./Decision.js"
import * as Evidence from "./Evidence.js"
import * as Metrics from "./Metrics.js"
import * as Replay from "./Replay.js"
import { forwardAuthMismatch, type Route, type RoutedRequest, type RouteFailure } from "./Route.js"
import * as Stats from "./Stats.js"

/** Every way a routed request can fail. */
export type RouterFailure =
  | RouteFailure
  | ClientFailure
  | ModelNotFound
  | ForwardAuthMismatch
  | RequestDeadlineExceeded

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
   * {@link Completed}); `UpstreamClient.chunksOf` gives the chunks alone. Run it once; ending it
   * early or interrupting its consumer aborts the upstream exchange. A failure after this point is
   * never retried or failed over.
   */
  readonly pieces: Stream.Stream<StreamPiece, UpstreamFailure>
  /** The last usage the pieces carried so far: the answer's usage once they ended (undefined when none came). */
  readonly usage: () => Usage | undefined
}

/** The router of one deployment. */
export class Router extends Context.Tag("@switchyard-ts/routing/Router")<Router, {
  /** The routes, sorted by route id. */
  readonly routes: ReadonlyArray<Route>
  /** Run routing (judge calls included, bounded by `request_timeout_ms`) without making the answer call. */
  readonly decide: (
    request: RoutedRequest
  ) => Effect.Effect<Decision.Decision, RouteFailure | ModelNotFound | ForwardAuthMismatch | RequestDeadlineExceeded>
  /** Route and make the buffered answer call. */
  readonly complete: (request: RoutedRequest) => Effect.Effect<Completed, RouterFailure>
  /** Route and start the streamed answer call. */
  readonly stream: (request: RoutedRequest) => Effect.Effect<Streamed, RouterFailure>
}>() {}

/** The model label of a run: the selected target's model id, or the route id when none. */
const modelLabel = (decision: Decision.Decision): string =>
  Option.match(Decision.selected(decision), { onNone: () => decision.route.id, onSome: (t) => t.id })

const decisionAttributes = (decision: Decision.Decision) => ({
  selected_model: modelLabel(decision),
  ...Evidence.spanAttributes(decision.evidence)
})

/** Add `value` to a counter tagged with `tags`, at once (inside an `Effect.sync`). */
const add = (counter: Metric.Metric.Counter<number>, tags: Readonly<Record<string, string>>, value = 1): void =>
  TaggedMetric.unsafeUpdate(counter, tags, value)

/** Record a value in a histogram tagged with `tags`, at once (inside an `Effect.sync`). */
const observe = (
  histogram: Metric.Metric.Histogram<number>,
  tags: Readonly<Record<string, string>>,
  value: number
): void => TaggedMetric.unsafeUpdate(histogram, tags, value)

/** {@link recordUsage}, at once (inside an `Effect.sync`). */
const addUsage = (model: string, usage: Usage | null | undefined): void => {
  if (usage === null || usage === undefined) return
  const tags = { model }
  const cached = usage.prompt_tokens_details?.cached_tokens
  const creation = usage.prompt_tokens_details?.cache_creation_tokens
  const reasoning = usage.completion_tokens_details?.reasoning_tokens
  add(Metrics.promptTokensTotal, tags, usage.prompt_tokens)
  add(Metrics.completionTokensTotal, tags, usage.completion_tokens)
  if (typeof cached === "number") add(Metrics.cachedTokensTotal, tags, cached)
  if (typeof creation === "number") add(Metrics.cacheCreationTokensTotal, tags, creation)
  if (typeof reasoning === "number") add(Metrics.reasoningTokensTotal, tags, reasoning)
}

/** Token counters of an answer's usage, labelled with the served model; absent fields add nothing. */
export const recordUsage = (model: string, usage: Usage | null | undefined): Effect.Effect<void> =>
  usage === null || usage === undefined ? Effect.void : Effect.sync(() => addUsage(model, usage))

/** The caller's native body for the answer call: none once the route amended the request (it lacks the amendment). */
const nativeOf = (request: RoutedRequest, decision: Decision.Routed): NativeBody | undefined =>
  decision.body === undefined ? request.native : undefined

/** Milliseconds of the clock, at once (inside an `Effect.clockWith`). */
const millisOf = (clock: Clock.Clock): number => Number(clock.unsafeCurrentTimeNanos()) / 1e6

/** Build a router over `routes` (route ids must be unique; config guarantees it). */
export const make = (routes: ReadonlyArray<Route>): Effect.Effect<Router["Type"], never, UpstreamClient> =>
  Effect.gen(function*() {
    const upstream = yield* UpstreamClient
    const stats = yield* Stats.Stats
    const observeCandidate: Fallback.CandidateObserver = (target, ok, durationMs) =>
      stats.answerCall(target.id, ok, durationMs)
    const sorted = [...routes].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
    const byId = new Map(sorted.map((route) => [route.id, route]))

    /**
     * The request's route (`ModelNotFound` when its model names none), refused when it forwards
     * caller credentials of the other family than the request's endpoint (`ForwardAuthMismatch`):
     * both before any call is made.
     */
    const findRoute = (request: RoutedRequest): Effect.Effect<Route, ModelNotFound | ForwardAuthMismatch> => {
      const model = request.body.model
      const found = byId.get(model)
      if (found === undefined) return Effect.fail(new ModelNotFound({ model }))
      const mismatch = forwardAuthMismatch(found, request.inboundFormat)
      return Option.isSome(mismatch) ? Effect.fail(mismatch.value) : Effect.succeed(found)
    }

    /**
     * Run the route's algorithm; records the routing overhead and the decision. In a terminal run
     * (one that answers) the overhead and the routing-time calls also go to the stats: the calls
     * are held while routing and settled once the outcome shows which one, if any, was served.
     */
    const route = (route: Route, request: RoutedRequest, terminal: boolean) =>
      Effect.clockWith((clock) => {
        const start = millisOf(clock)
        const decided = Effect.tap(route.decide(request), (decision) => {
          const overhead = millisOf(clock) - start
          observe(Metrics.routingOverheadMs, { algorithm: route.algorithm }, overhead)
          add(Metrics.decisionsTotal, { algorithm: route.algorithm, selected_model: modelLabel(decision) })
          if (terminal) stats.routingOverhead(overhead)
          return Spans.annotateCurrentSpan(() => decisionAttributes(decision))
        })
        if (!terminal) return decided
        const calls: Array<Stats.RoutingCall> = []
        return decided.pipe(
          Effect.provideService(Stats.RoutingCalls, calls),
          Effect.onExit((exit) =>
            Effect.sync(() =>
              stats.settle(
                calls,
                Exit.isSuccess(exit) && exit.value._tag === "Answered" && Option.isSome(exit.value.servedBy)
                  ? exit.value.servedBy.value.id
                  : undefined
              )
            )
          )
        )
      })

    /** The terminal answer call's metrics: calls, duration, request/error counters. */
    const recordCall = (decision: Decision.Decision, outcome: "ok" | "error", clock: Clock.Clock, startMs: number) =>
      Effect.sync(() => {
        const model = modelLabel(decision)
        const tags = { algorithm: decision.route.algorithm, selected_model: model, outcome }
        const elapsed = millisOf(clock) - startMs
        add(Metrics.llmCallsTotal, tags)
        observe(Metrics.llmCallDurationMs, tags, elapsed)
        if (outcome === "ok") observe(Metrics.modelCallLatencyMs, { model }, elapsed)
        add(outcome === "ok" ? Metrics.requestsTotal : Metrics.errorsTotal, { model })
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
    ): Effect.Effect<A, E | ModelNotFound | ForwardAuthMismatch | RequestDeadlineExceeded> =>
      Effect.flatMap(findRoute(request), (found) =>
        Effect.clockWith((clock) => {
          const start = millisOf(clock)
          const recordRun = (outcome: "ok" | "error") =>
            terminal
              ? Effect.sync(() => {
                const tags = { algorithm: found.algorithm, outcome }
                add(Metrics.runsTotal, tags)
                observe(Metrics.runDurationMs, tags, millisOf(clock) - start)
                add(Metrics.totalRequests, {})
                if (outcome === "error") add(Metrics.totalErrors, {})
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
          return bounded.pipe(
            Effect.tap(() =>
              Effect.zipRight(Spans.annotateCurrentSpan(() => ({ outcome: "success" })), recordRun("ok"))
            ),
            Effect.tapError((error) =>
              Effect.zipRight(
                Spans.annotateCurrentSpan(() => ({ outcome: "error", "error.type": error._tag })),
                recordRun("error")
              )
            )
          )
        }).pipe(
          Spans.withSpan("libsy.run", () => ({
            captureStackTrace: false,
            attributes: {
              "switchyard.route": found.id,
              "switchyard.algorithm": found.algorithm,
              ...Option.match(request.sessionId, { onNone: () => ({}), onSome: (id) => ({ "session.id": id }) })
            }
          }))
        ))

    const decide = (request: RoutedRequest) => run(request, false, (found) => route(found, request, false))

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
        Effect.flatMap(route(found, request, true), (decision) => {
          if (decision._tag === "Answered") {
            return Effect.sync(() => {
              add(Metrics.requestsTotal, { model: modelLabel(decision) })
              if (Option.isSome(decision.servedBy)) addUsage(decision.servedBy.value.id, decision.answer.usage)
              return byRoute(decision)
            })
          }
          return Effect.clockWith((clock) => {
            const start = millisOf(clock)
            return byUpstream(decision, [decision.selected, ...decision.fallbacks]).pipe(
              Effect.provideService(UpstreamClient, upstream),
              Effect.tap(() => recordCall(decision, "ok", clock, start)),
              Effect.tapError(() => recordCall(decision, "error", clock, start))
            )
          })
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
            Fallback.complete(
              candidates,
              decision.body ?? request.body,
              request.headers,
              nativeOf(request, decision),
              observeCandidate
            ),
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
          pieces: Relay.toStream(Relay.make<StreamPiece>([{
            chunks: Replay.chunks(decision.answer, {
              includeUsage: request.body.stream_options?.include_usage === true
            }),
            native: Option.none()
          }])),
          usage: () => decision.answer.usage ?? undefined
        }),
        (decision, candidates) =>
          Effect.map(
            Fallback.stream(
              candidates,
              decision.body ?? request.body,
              request.headers,
              nativeOf(request, decision),
              observeCandidate
            ),
            (served): Streamed => {
              const model = served.target.id
              let usage: Usage | undefined
              return {
                decision,
                served: Option.some(served.target),
                // relay stages on the client's relay (unwrapped, nothing per piece), handed out as a Stream
                pieces: Relay.toStream(Relay.tapError(
                  // usage counted as the pieces pass
                  Relay.map(Relay.fromStream(served.stream), (pieces) => {
                    for (const piece of pieces) {
                      for (const chunk of piece.chunks) {
                        if (chunk.usage === null || chunk.usage === undefined) continue
                        addUsage(model, chunk.usage)
                        usage = chunk.usage
                      }
                    }
                    return pieces
                  }),
                  () => {
                    add(Metrics.errorsTotal, { model })
                    stats.streamError(model)
                  }
                )),
                usage: () => usage
              }
            }
          )
      )

    return Router.of({ routes: sorted, decide, complete, stream })
  })

/** A router layer over fixed routes. */
export const layer = (routes: ReadonlyArray<Route>): Layer.Layer<Router, never, UpstreamClient> =>
  Layer.effect(Router, make(routes))

/**
 * Route a request without an answer call (judge calls included):
 * `Effect<Decision.Decision, RouteFailure | ModelNotFound | ForwardAuthMismatch | RequestDeadlineExceeded, Router>`.
 */
export const decide = (
  request: RoutedRequest
): Effect.Effect<
  Decision.Decision,
  RouteFailure | ModelNotFound | ForwardAuthMismatch | RequestDeadlineExceeded,
  Router
> => Effect.flatMap(Router, (router) => router.decide(request))

/** Route a request and make the buffered answer call: `Effect<Completed, RouterFailure, Router>`. */
export const complete = (request: RoutedRequest): Effect.Effect<Completed, RouterFailure, Router> =>
  Effect.flatMap(Router, (router) => router.complete(request))

/**
 * Route a request and start the streamed answer call (succeeds once the response headers arrived):
 * `Effect<Streamed, RouterFailure, Router>`.
 */
export const stream = (request: RoutedRequest): Effect.Effect<Streamed, RouterFailure, Router> =>
  Effect.flatMap(Router, (router) => router.stream(request))
