/**
 * The one request pipeline every LLM endpoint runs, whatever its wire format: read the body (size
 * limit), parse it (nesting bound), decode it with the endpoint's codec, route and answer through
 * the `Router`, and encode the answer, the stream or the failure with the same codec. Each stage
 * returns a value; the request's log line and response counter are written from those values.
 *
 * @internal
 */
import * as LogLine from "@switchyard-ts/client/LogLine"
import * as ClientMetrics from "@switchyard-ts/client/Metrics"
import * as Relay from "@switchyard-ts/client/Relay"
import * as TaggedMetric from "@switchyard-ts/client/TaggedMetric"
import type { Target } from "@switchyard-ts/client/Target"
import { type RequestFailure, toHttp, type Unauthorized } from "@switchyard-ts/protocol/Errors"
import { clip, excerpt } from "@switchyard-ts/protocol/Excerpt"
import type { Usage } from "@switchyard-ts/protocol/OpenAiChat"
import * as Conversation from "@switchyard-ts/routing/Conversation"
import type * as Decision from "@switchyard-ts/routing/Decision"
import * as RoutingMetrics from "@switchyard-ts/routing/Metrics"
import type { Router } from "@switchyard-ts/routing/Router"
import type * as Stats from "@switchyard-ts/routing/Stats"
import type * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as LogLevel from "effect/LogLevel"
import * as Option from "effect/Option"
import * as Metrics from "../Metrics.js"
import * as RoutingLog from "../RoutingLog.js"
import { parseBody, readBody } from "./body.js"
import type { Codec, ErrorResponse, Inbound } from "./codecs.js"
import * as Edge from "./edge.js"
import * as RoutingLine from "./routingLine.js"
import { sessionIdOf } from "./session.js"

/** Header naming the model that served an answer. */
export const selectedModelHeader = "x-switchyard-selected-model"
/**
 * The compatible system's header naming the model that served an answer (its clients, such as
 * pi, read it): the same model, whitespace runs collapsed to one space, at most 512 characters.
 */
export const compatibleSelectedModelHeader = "x-model-router-selected-model"
/** Header summarising the evidence source of an answer. */
export const evidenceSourceHeader = "x-switchyard-evidence-source"
/** Header giving the reason of a decision made without a verdict (`retained`, `fail-open`). */
export const evidenceReasonHeader = "x-switchyard-evidence-reason"

/** The time now by `clock`, in milliseconds with sub-millisecond precision. */
const msOf = (clock: Clock.Clock): number => Number(clock.unsafeCurrentTimeNanos()) / 1e6

/**
 * Read, parse and decode a request body with `codec`: the routed request (its session id from the
 * caller's headers), the requested model and whether the caller streams.
 */
export const decodeRequest = (codec: Codec, request: Edge.EdgeRequest, limit: number) =>
  readBody(request.incoming, limit).pipe(
    Effect.flatMap(parseBody),
    Effect.flatMap(({ json, raw }) => codec.decode(json, request.headers, sessionIdOf(request.headers), raw))
  )

/** The model an answer names: the served target's id, or the route id when no target served. */
export const servedModel = (decision: Decision.Decision, served: Option.Option<Target>): string =>
  Option.match(served, { onNone: () => decision.route.id, onSome: (target) => target.id })

/**
 * The model an answer of `decision` served by `model` is measured against: the baseline target of
 * its route (as the router serves it now), else `model` itself (a route without one, e.g. noop).
 */
const baselineModel = (router: Router["Type"], decision: Decision.Decision, model: string): string => {
  const baseline = router.routes.find((route) => route.id === decision.route.id)?.baseline ?? Option.none()
  return Option.match(baseline, { onNone: () => model, onSome: (target) => target.id })
}

const routingHeaders = (decision: Decision.Decision, model: string): Record<string, string> => ({
  [selectedModelHeader]: model,
  [compatibleSelectedModelHeader]: model.replace(/\s+/g, " ").slice(0, 512),
  [evidenceSourceHeader]: decision.evidence.source,
  ...("reason" in decision.evidence ? { [evidenceReasonHeader]: decision.evidence.reason } : {})
})

/** What the log line of one request says besides its status and latency. */
interface Facts {
  readonly route: string
  readonly selectedModel: string
  readonly evidenceSource: string
  readonly evidenceReason: string
  /** The route's `subagents` table decided (delegated sub-agent work). */
  readonly subagent: boolean
  readonly streaming: boolean
  readonly error: string
  /** The model the answer is measured against (see `baselineModel`); null without a decision. */
  readonly baselineModel: string | null
}

const noFacts: Facts = {
  route: "",
  selectedModel: "",
  evidenceSource: "",
  evidenceReason: "",
  subagent: false,
  streaming: false,
  error: "",
  baselineModel: null
}

const factsOf = (inbound: Inbound, decision: Decision.Decision, model: string, baseline: string): Facts => ({
  route: decision.route.id,
  selectedModel: model,
  evidenceSource: decision.evidence.source,
  evidenceReason: "reason" in decision.evidence ? decision.evidence.reason : "",
  subagent: decision.evidence.subagent === true,
  streaming: inbound.streaming,
  error: "",
  baselineModel: baseline
})

/**
 * Log a defect (a bug: no input should reach one) by its kind and a bounded message only; its text
 * may quote the request.
 */
export const logDefect = (defect: unknown) =>
  Effect.logError("request failed with a defect").pipe(Effect.annotateLogs({
    defect: defect instanceof Error ? `${clip(defect.name)}: ${clip(defect.message, 200)}` : excerpt(defect)
  }))

/** The reply of an error. */
const errorReply = ({ body, status }: ErrorResponse): Edge.Reply => Edge.json(body, status)

/**
 * One log line and the client-response counter per request: inbound wire format, route, selected
 * model, evidence source and reason, whether the route's `subagents` table decided, status, latency. INFO for 2xx, WARN for other non-5xx, ERROR
 * for 5xx. No body, header value or upstream error text is logged; the route is clipped.
 */
const recordRequest = (format: string, facts: Facts, status: number, clock: Clock.Clock, startMs: number) =>
  Effect.withFiberRuntime((fiber) => {
    const latencyMs = Math.round((msOf(clock) - startMs) * 100) / 100
    const level = status >= 500 ? LogLevel.Error : status >= 300 ? LogLevel.Warning : LogLevel.Info
    TaggedMetric.unsafeUpdate(
      Metrics.clientResponsesTotal,
      { outcome: ClientMetrics.attemptOutcome(Option.some(status)) },
      1
    )
    LogLine.unsafeLog(fiber, level, "request", {
      wire_format: format,
      route: clip(facts.route),
      selected_model: facts.selectedModel,
      evidence_source: facts.evidenceSource,
      evidence_reason: facts.evidenceReason,
      subagent: facts.subagent,
      status,
      latency_ms: latencyMs,
      streaming: facts.streaming,
      error: facts.error
    })
    return Effect.void
  })

/**
 * Route and answer one decoded request: a buffered answer, or an SSE stream whose events the
 * request's encoder writes (a failure after the headers ends it with the encoder's error events).
 * `finished` records the total latency once the answer is complete (for a stream, after its last
 * event), and — when a target served it — its usage and total latency in the stats, and the
 * route's answer and baseline cost (a stream failed after its headers: a failed request). With a
 * routing-log `tally`, the router reports the routing to its observer and the answer's usage and
 * ending are collected into it.
 */
const answer = (
  router: Router["Type"],
  stats: Stats.Recorder,
  inbound: Inbound,
  clock: Clock.Clock,
  startMs: number,
  tally: RoutingLine.Tally | undefined
) => {
  const finished = (
    facts: Facts,
    served: Option.Option<Target>,
    usage: () => Usage | null | undefined
  ) =>
    Effect.sync(() => {
      const model = facts.selectedModel
      const elapsed = msOf(clock) - startMs
      TaggedMetric.unsafeUpdate(RoutingMetrics.totalLatencyMs, { model }, elapsed)
      if (Option.isSome(served)) stats.answered(model, usage(), elapsed)
      stats.routeAnswered(facts.route, model, facts.baselineModel ?? model, usage())
    })
  const observer = tally?.observer
  if (inbound.streaming) {
    return Effect.map(router.stream(inbound.routed, observer), (streamed) => {
      const model = servedModel(streamed.decision, streamed.served)
      tally?.answered(streamed.usage)
      const encoding = inbound.encoder.stream(streamed, model)
      const facts = factsOf(inbound, streamed.decision, model, baselineModel(router, streamed.decision, model))
      const done = finished(facts, streamed.served, streamed.usage)
      const ended = tally === undefined ? done : Effect.zipRight(done, Effect.sync(tally.ended))
      const events = Relay.catchAll(
        Relay.concat(encoding.events, Effect.as(ended, [])),
        (failure) => {
          tally?.failed()
          stats.routeFailed(streamed.decision.route.id)
          return [encoding.streamError(failure)]
        }
      )
      return {
        facts,
        decision: Option.some(streamed.decision),
        reply: Edge.sse(events, {
          "cache-control": "no-cache",
          ...routingHeaders(streamed.decision, model),
          ...(encoding.contentType === undefined ? {} : { "content-type": encoding.contentType })
        })
      }
    })
  }
  return Effect.flatMap(router.complete(inbound.routed, observer), (completed) => {
    const model = servedModel(completed.decision, completed.served)
    const body = inbound.encoder.answer(completed, model)
    const retained = inbound.encoder.retain?.(completed.decision, completed.served) ?? Effect.void
    return Effect.flatMap(retained, () => {
      tally?.answered(() => completed.completion.usage)
      const facts = factsOf(inbound, completed.decision, model, baselineModel(router, completed.decision, model))
      return Effect.as(finished(facts, completed.served, () => completed.completion.usage), {
        facts,
        decision: Option.some<Decision.Decision>(completed.decision),
        reply: Edge.json(body, 200, routingHeaders(completed.decision, model))
      })
    })
  })
}

/** The routing log's response line of a request, once its answer was written (see `Edge.write`). */
const settle = (
  tally: RoutingLine.Tally,
  format: string,
  facts: Facts,
  decision: Option.Option<Decision.Decision>,
  status: number,
  clock: Clock.Clock,
  startMs: number
) =>
  Effect.sync(() => {
    const endMs = msOf(clock)
    tally.respond({
      decision,
      model: facts.selectedModel,
      wireFormat: format,
      streaming: facts.streaming,
      status,
      error: facts.error,
      latencyMs: Math.round((endMs - startMs) * 100) / 100,
      endedAtMs: Math.floor(endMs),
      baselineModel: facts.baselineModel
    })
  })

/**
 * The handler of an LLM endpoint in `codec`'s format: decode → route → decide → answer → encode,
 * every typed failure in the codec's envelope and every defect a 500 in it; with the request's log
 * line and response counter, which the edge writes once the answer's first bytes are sent. With the
 * routing log on, every request whose body was decoded also gets its routing log lines (judge calls
 * as they end, the response once written).
 */
export const handle = (
  codec: Codec,
  router: Router["Type"],
  stats: Stats.Recorder,
  limit: number,
  log: RoutingLog.RoutingLog["Type"] = RoutingLog.noop
): Edge.Endpoint =>
(request) =>
  Effect.clockWith((clock) => {
    const startMs = msOf(clock)
    let tally: RoutingLine.Tally | undefined
    const failed = (facts: Facts) => (failure: RequestFailure) =>
      Effect.succeed({
        facts: { ...facts, error: toHttp(failure).code },
        decision: Option.none<Decision.Decision>(),
        reply: errorReply(codec.error(failure))
      })
    return decodeRequest(codec, request, limit).pipe(
      Effect.matchEffect({
        onFailure: failed(noFacts),
        onSuccess: (inbound) => {
          if (log.enabled) {
            tally = RoutingLine.start(
              log,
              request.headers,
              inbound.model,
              Conversation.isUserTurn(inbound.routed.body.messages)
            )
          }
          const failedRouting = failed({ ...noFacts, route: inbound.model, streaming: inbound.streaming })
          return answer(router, stats, inbound, clock, startMs, tally).pipe(
            Effect.catchAll((failure) =>
              Effect.zipRight(
                Effect.sync(() => {
                  // only a configured route's failures count (a route id labels a metric)
                  if (router.routes.some((route) => route.id === inbound.model)) stats.routeFailed(inbound.model)
                }),
                failedRouting(failure)
              )
            )
          )
        }
      }),
      Effect.catchAllDefect((defect) =>
        Effect.as(logDefect(defect), {
          facts: noFacts,
          decision: Option.none<Decision.Decision>(),
          reply: errorReply(codec.internalError)
        })
      ),
      Effect.map((handled): Edge.Handled => {
        const status = Edge.statusOf(handled.reply)
        return {
          reply: handled.reply,
          record: recordRequest(codec.format, handled.facts, status, clock, startMs),
          settle: tally === undefined
            ? undefined
            : settle(tally, codec.format, handled.facts, handled.decision, status, clock, startMs)
        }
      })
    )
  })

/**
 * An LLM endpoint's answer that is not routed (Gemini token counting) or a refusal: `reply`, every
 * typed failure in `codec`'s envelope and every defect a 500 in it, logged and counted like any
 * request.
 */
export const respond = (codec: Codec, reply: Effect.Effect<Edge.Reply, RequestFailure>): Effect.Effect<Edge.Handled> =>
  Effect.clockWith((clock) => {
    const startMs = msOf(clock)
    return reply.pipe(
      Effect.map((ok) => ({ reply: ok, error: "" })),
      Effect.catchAll((failure) =>
        Effect.succeed({ reply: errorReply(codec.error(failure)), error: toHttp(failure).code })
      ),
      Effect.catchAllDefect((defect) =>
        Effect.as(logDefect(defect), { reply: errorReply(codec.internalError), error: "" })
      ),
      Effect.map(({ error, reply }): Edge.Handled => ({
        reply,
        record: recordRequest(codec.format, { ...noFacts, error }, Edge.statusOf(reply), clock, startMs)
      }))
    )
  })

/**
 * What an LLM endpoint in `codec`'s format answers a caller that inbound auth refused (see
 * `Api.llmEndpoints`): the 401 in the codec's envelope, logged and counted like any request.
 */
export const refuse = (codec: Codec, failure: Unauthorized): Effect.Effect<Edge.Handled> =>
  respond(codec, Effect.fail(failure))
