/**
 * How the `Router` runs one request: find its route, run the route's algorithm with the request's
 * observer (holding the routing-time calls of an answering run for the stats), bound it by
 * `request_timeout_ms` inside the `libsy.run` span, then answer — with the route's own answer, or by
 * an answer call over the decision's candidates — recording the run's metrics and stats.
 *
 * @internal
 */
import * as Fallback from "@switchyard-ts/client/Fallback"
import * as Relay from "@switchyard-ts/client/Relay"
import * as Spans from "@switchyard-ts/client/Spans"
import * as TaggedMetric from "@switchyard-ts/client/TaggedMetric"
import type { NativeBody, Target } from "@switchyard-ts/client/Target"
import type { StreamPiece, UpstreamClient } from "@switchyard-ts/client/UpstreamClient"
import {
  type ClientFailure,
  type ForwardAuthMismatch,
  ModelNotFound,
  RequestDeadlineExceeded,
  type UnsupportedCapability,
  type UpstreamFailure
} from "@switchyard-ts/protocol/Errors"
import type { ChatCompletion, Usage } from "@switchyard-ts/protocol/OpenAiChat"
import type * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import type * as Stream from "effect/Stream"
import * as AnswerChunks from "../AnswerChunks.js"
import type * as Stats from "../cost/Stats.js"
import * as Decision from "../Decision.js"
import * as Evidence from "../Evidence.js"
import * as RoutingFacts from "../host/RoutingFacts.js"
import * as Metrics from "../Metrics.js"
import { forwardAuthMismatch, type Route, type RoutedRequest, type RouteFailure } from "../Route.js"
import * as RouteFlags from "../RouteFlags.js"
import * as Continuation from "../sessions/Continuation.js"

/** Every way a routed request can fail. */
export type RouterFailure =
  | RouteFailure
  | ClientFailure
  | ModelNotFound
  | ForwardAuthMismatch
  | UnsupportedCapability
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
   * never retried or failed over. (The server writes the relay underneath: `Relay.fromStream`.)
   */
  readonly pieces: Stream.Stream<StreamPiece, UpstreamFailure>
  /** The last usage the pieces carried so far: the answer's usage once they ended (undefined when none came). */
  readonly usage: () => Usage | undefined
}

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
const recordUsage = (model: string, usage: Usage | null | undefined): Effect.Effect<void> =>
  usage === null || usage === undefined ? Effect.void : Effect.sync(() => addUsage(model, usage))

/** The caller's native body for the answer call: none once the route amended the request (it lacks the amendment). */
const nativeOf = (request: RoutedRequest, decision: Decision.Routed): NativeBody | undefined =>
  decision.body === undefined ? request.native : undefined

/** Milliseconds of the clock, at once (inside an `Effect.clockWith`). */
const millisOf = (clock: Clock.Clock): number => Number(clock.unsafeCurrentTimeNanos()) / 1e6

/** The terminal answer call's metrics: calls, duration, request/error counters. */
const recordCall = (decision: Decision.Decision, outcome: "ok" | "error", elapsedMs: number): void => {
  const model = modelLabel(decision)
  const tags = { algorithm: decision.route.algorithm, selected_model: model, outcome }
  add(Metrics.llmCallsTotal, tags)
  observe(Metrics.llmCallDurationMs, tags, elapsedMs)
  if (outcome === "ok") observe(Metrics.modelCallLatencyMs, { model }, elapsedMs)
  add(outcome === "ok" ? Metrics.requestsTotal : Metrics.errorsTotal, { model })
}

/** A terminal run's metrics (one that answers; `/v1/decision` runs are not counted). */
const recordRun = (algorithm: string, outcome: "ok" | "error", elapsedMs: number): void => {
  const tags = { algorithm, outcome }
  add(Metrics.runsTotal, tags)
  observe(Metrics.runDurationMs, tags, elapsedMs)
  add(Metrics.totalRequests, {})
  if (outcome === "error") add(Metrics.totalErrors, {})
}

/** `self` bounded by the route's `request_timeout_ms` (its expiry interrupts whatever call is in flight). */
const bounded = <A, E>(route: Route, self: Effect.Effect<A, E>): Effect.Effect<A, E | RequestDeadlineExceeded> =>
  Option.match(route.requestTimeoutMs ?? Option.none(), {
    onNone: () => self,
    onSome: (ms) =>
      Effect.timeoutFail(self, {
        duration: Duration.millis(ms),
        onTimeout: () => new RequestDeadlineExceeded({ route: route.id, afterMs: ms })
      })
  })

/**
 * The observer a terminal run's routing reports to: the caller's, with its routing-time calls also
 * kept in `calls`, which the run settles into the stats once its outcome is known.
 */
const holding = (observer: RoutingFacts.Observer, calls: Array<RoutingFacts.RoutingCall>): RoutingFacts.Observer => ({
  judgeCall: observer.judgeCall,
  routed: observer.routed,
  routingCall: (call) => {
    calls.push(call)
    observer.routingCall(call)
  }
})

/** The streamed pieces of a served answer, its usage counted as they pass, a failure counted once. */
const counted = (
  stats: Stats.Recorder,
  served: Fallback.Streamed
): { readonly pieces: Stream.Stream<StreamPiece, UpstreamFailure>; readonly usage: () => Usage | undefined } => {
  const model = served.target.id
  let usage: Usage | undefined
  // Relay stages on the client's relay (unwrapped: nothing per piece), handed out as a Stream.
  const pieces = Relay.tapError(
    Relay.map(Relay.fromStream(served.stream), (batch) => {
      for (const piece of batch) {
        for (const chunk of piece.chunks) {
          if (chunk.usage === null || chunk.usage === undefined) continue
          addUsage(model, chunk.usage)
          usage = chunk.usage
        }
      }
      return batch
    }),
    () => {
      add(Metrics.errorsTotal, { model })
      stats.streamError(model)
    }
  )
  return { pieces: Relay.toStream(pieces), usage: () => usage }
}

/** What a router runs requests with. */
export interface Deps {
  readonly upstream: UpstreamClient["Type"]
  readonly stats: Stats.Recorder
  readonly routes: ReadonlyMap<string, Route>
}

/** Each answer call to a candidate counts in the stats. */
const observeCandidate = (stats: Stats.Recorder): Fallback.CandidateObserver => (target, ok, durationMs) =>
  stats.answerCall(target.id, ok, durationMs)

/**
 * The request's route (`ModelNotFound` when its model names none), refused when it forwards caller
 * credentials of the other family than the request's endpoint (`ForwardAuthMismatch`), then when
 * the request uses an input the route disables (`UnsupportedCapability`): all before any call is
 * made.
 */
const findRoute = (
  deps: Deps,
  request: RoutedRequest
): Effect.Effect<Route, ModelNotFound | ForwardAuthMismatch | UnsupportedCapability> => {
  const model = request.body.model
  const found = deps.routes.get(model)
  if (found === undefined) return Effect.fail(new ModelNotFound({ model }))
  const mismatch = forwardAuthMismatch(found, request.inboundFormat)
  if (Option.isSome(mismatch)) return Effect.fail(mismatch.value)
  const refused = RouteFlags.refusal(found, request)
  return Option.isSome(refused) ? Effect.fail(refused.value) : Effect.succeed(found)
}

/**
 * Run the route's algorithm with `observer` receiving its facts; records the routing overhead and
 * the decision. In a terminal run (one that answers) the overhead and the routing-time calls also go
 * to the stats: the calls are held while routing and settled once the outcome shows which one, if
 * any, was served.
 */
const routeOnce = (
  deps: Deps,
  found: Route,
  request: RoutedRequest,
  observer: RoutingFacts.Observer,
  terminal: boolean
) =>
  Effect.clockWith((clock) => {
    const start = millisOf(clock)
    const calls: Array<RoutingFacts.RoutingCall> = []
    const decided = RoutingFacts.observe(
      Option.match(Continuation.decide(found, request), {
        onNone: () => found.decide(request),
        onSome: Effect.succeed
      }),
      terminal ? holding(observer, calls) : observer
    ).pipe(Spans.tapOutcome((fiber, decision) => {
      const overhead = millisOf(clock) - start
      observe(Metrics.routingOverheadMs, { algorithm: found.algorithm }, overhead)
      add(Metrics.decisionsTotal, { algorithm: found.algorithm, selected_model: modelLabel(decision) })
      if (terminal) deps.stats.routingOverhead(overhead)
      Spans.unsafeAnnotateCurrentSpan(fiber, () => decisionAttributes(decision))
    }, () => {}))
    if (!terminal) return decided
    return Effect.onExit(decided, (exit) =>
      Effect.sync(() =>
        deps.stats.settle(
          calls,
          Exit.isSuccess(exit) && exit.value._tag === "Answered" ? exit.value.answer : undefined,
          found.id
        )
      ))
  })

/**
 * One routed request inside its `libsy.run` span, bounded by the route's `request_timeout_ms`. A
 * terminal run (one that answers) also counts in the run metrics; `/v1/decision` runs do not.
 */
const run = <A, E extends RouterFailure>(
  deps: Deps,
  request: RoutedRequest,
  terminal: boolean,
  body: (route: Route) => Effect.Effect<A, E>
): Effect.Effect<A, E | ModelNotFound | ForwardAuthMismatch | UnsupportedCapability | RequestDeadlineExceeded> =>
  Effect.flatMap(findRoute(deps, request), (found) =>
    Effect.clockWith((clock) => {
      const start = millisOf(clock)
      const limited = bounded(found, body(found))
      const succeeded = () => ({ outcome: "success" })
      const failed = (error: E | RequestDeadlineExceeded) => ({ outcome: "error", "error.type": error._tag })
      if (!terminal) return Spans.annotateOutcome<A, E | RequestDeadlineExceeded>(succeeded, failed)(limited)
      return Spans.tapOutcome<A, E | RequestDeadlineExceeded>((fiber) => {
        Spans.unsafeAnnotateCurrentSpan(fiber, succeeded)
        recordRun(found.algorithm, "ok", millisOf(clock) - start)
      }, (fiber, error) => {
        Spans.unsafeAnnotateCurrentSpan(fiber, () => failed(error))
        recordRun(found.algorithm, "error", millisOf(clock) - start)
      })(limited)
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

/** Route without an answer call (`/v1/decision`). */
export const decide = (deps: Deps, request: RoutedRequest, observer: RoutingFacts.Observer) =>
  run(deps, request, false, (found) => routeOnce(deps, found, request, observer, false))

/**
 * Route, then answer: with the answer the route produced while routing (`Answered`: noop, the
 * advisor gate — no answer call, so only the request counter and the served model's tokens are
 * recorded), or by an answer call over the candidates of a `Routed` decision.
 */
const routeAndAnswer = <A>(
  deps: Deps,
  request: RoutedRequest,
  observer: RoutingFacts.Observer,
  byRoute: (decision: Decision.Answered) => A,
  byUpstream: (
    decision: Decision.Routed,
    candidates: readonly [Target, ...Array<Target>]
  ) => Effect.Effect<A, ClientFailure>
) =>
  run(deps, request, true, (found) =>
    Effect.flatMap(routeOnce(deps, found, request, observer, true), (decision) => {
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
          Effect.tap(() => Effect.sync(() => recordCall(decision, "ok", millisOf(clock) - start))),
          Effect.tapError(() => Effect.sync(() => recordCall(decision, "error", millisOf(clock) - start)))
        )
      })
    }))

/** Route and make the buffered answer call. */
export const complete = (deps: Deps, request: RoutedRequest, observer: RoutingFacts.Observer) =>
  routeAndAnswer(
    deps,
    request,
    observer,
    (decision): Completed => ({
      decision,
      served: decision.servedBy,
      completion: decision.answer,
      native: Option.none()
    }),
    (decision, candidates) =>
      Effect.flatMap(
        Fallback.completeWith(
          deps.upstream,
          candidates,
          decision.body ?? request.body,
          request.headers,
          nativeOf(request, decision),
          observeCandidate(deps.stats)
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

/** Route and start the streamed answer call. */
export const stream = (deps: Deps, request: RoutedRequest, observer: RoutingFacts.Observer) =>
  routeAndAnswer(
    deps,
    request,
    observer,
    (decision): Streamed => ({
      decision,
      served: decision.servedBy,
      pieces: Relay.toStream(Relay.make<StreamPiece>([{
        chunks: AnswerChunks.chunks(decision.answer, {
          includeUsage: request.body.stream_options?.include_usage === true
        }),
        native: Option.none()
      }])),
      usage: () => decision.answer.usage ?? undefined
    }),
    (decision, candidates) =>
      Effect.map(
        Fallback.streamWith(
          deps.upstream,
          candidates,
          decision.body ?? request.body,
          request.headers,
          nativeOf(request, decision),
          observeCandidate(deps.stats)
        ),
        (served): Streamed => ({ decision, served: Option.some(served.target), ...counted(deps.stats, served) })
      )
  )
