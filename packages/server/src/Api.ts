/**
 * The HTTP endpoints of SPEC §5 as `HttpLayerRouter` route layers: chat completions (buffered and
 * SSE), decision, models, health, metrics, and an enveloped 404 for everything else. Every failure
 * is mapped to the error envelope here, never left to the platform's defaults.
 */
import * as HttpLayerRouter from "@effect/platform/HttpLayerRouter"
import type * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as ClientMetrics from "@switchyard-ts/client/Metrics"
import * as TaggedMetric from "@switchyard-ts/client/TaggedMetric"
import type { Format, Target } from "@switchyard-ts/client/Target"
import * as UpstreamClient from "@switchyard-ts/client/UpstreamClient"
import * as AnthropicMessages from "@switchyard-ts/protocol/AnthropicMessages"
import {
  InvalidRequest,
  ModelNotFound,
  type RequestFailure,
  toEnvelope,
  toHttp,
  type UpstreamFailure
} from "@switchyard-ts/protocol/Errors"
import { clip, excerpt } from "@switchyard-ts/protocol/Excerpt"
import { SessionId } from "@switchyard-ts/protocol/Ids"
import { ChatCompletionRequest } from "@switchyard-ts/protocol/OpenAiChat"
import * as Translate from "@switchyard-ts/protocol/Translate"
import type { Decision } from "@switchyard-ts/routing/Decision"
import * as RoutingMetrics from "@switchyard-ts/routing/Metrics"
import type { RoutedRequest } from "@switchyard-ts/routing/Route"
import { Router } from "@switchyard-ts/routing/Router"
import { decodeJson, decodeValue, defaultBodyLimit, readText } from "./internal/body.js"
import * as Messages from "./internal/messages.js"
import * as Metrics from "./Metrics.js"
import * as Telemetry from "./Telemetry.js"

/** Options of the HTTP API. */
export interface Options {
  /** Request body limit in bytes (default 16 MiB). */
  readonly bodyLimit?: number
}

/** Header naming the model that served a chat completion. */
export const selectedModelHeader = "x-switchyard-selected-model"
/** Header summarising the evidence source of a chat completion. */
export const evidenceSourceHeader = "x-switchyard-evidence-source"
/** Header giving the reason of a decision made without a verdict (`retained`, `fail-open`). */
export const evidenceReasonHeader = "x-switchyard-evidence-reason"
/** Header carrying the caller's session identity. */
export const sessionHeader = "x-switchyard-session-id"

/**
 * Where a session identity is read from, first non-blank value wins (anchor §2.2): our own header,
 * then the ones coding agents send by themselves (Claude Code, NeMo relay, generic), then the
 * `session_id` of Codex's JSON `x-codex-turn-metadata`, then `session-id`.
 */
const sessionSources: ReadonlyArray<string | { readonly json: string; readonly field: string }> = [
  sessionHeader,
  "x-claude-code-session-id",
  "x-nemo-relay-session-id",
  "x-session-id",
  { json: "x-codex-turn-metadata", field: "session_id" },
  "session-id"
]

const jsonField = (text: string, field: string): string => {
  try {
    const parsed: unknown = JSON.parse(text)
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) return ""
    const value: unknown = Object.getOwnPropertyDescriptor(parsed, field)?.value
    return value === undefined || value === null ? "" : typeof value === "string" ? value : JSON.stringify(value)
  } catch {
    return ""
  }
}

/** The session identity of a request's headers (lower-case names), if any. */
export const sessionIdOf = (headers: Readonly<Record<string, string>>): Option.Option<SessionId> => {
  for (const source of sessionSources) {
    const raw = typeof source === "string" ? headers[source] : jsonField(headers[source.json] ?? "", source.field)
    const value = (raw ?? "").trim()
    if (value !== "") return Option.some(SessionId.make(value))
  }
  return Option.none()
}

const errorResponse = (failure: RequestFailure) => {
  const mapping = toHttp(failure)
  return HttpServerResponse.unsafeJson(toEnvelope(mapping), { status: mapping.status })
}

const internalError = HttpServerResponse.unsafeJson(
  { error: { message: "internal error", type: "server_error", code: "server_error" } },
  { status: 500 }
)

/**
 * Log a defect (a bug: no input should reach one) by its kind and a bounded message only; its text
 * may quote the request.
 */
const logDefect = (defect: unknown) =>
  Effect.logError("request failed with a defect").pipe(Effect.annotateLogs({
    defect: defect instanceof Error ? `${clip(defect.name)}: ${clip(defect.message, 200)}` : excerpt(defect)
  }))

/** Map every typed failure to the envelope and every defect to a 500 envelope. */
const enveloped = <E extends RequestFailure, R>(
  handler: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
): Effect.Effect<HttpServerResponse.HttpServerResponse, never, R> =>
  handler.pipe(
    Effect.catchAll(errorResponse),
    Effect.catchAllDefect((defect) => Effect.as(logDefect(defect), internalError))
  )

const plainHeaders = (request: HttpServerRequest.HttpServerRequest): Record<string, string> => ({ ...request.headers })

const routedRequest = (
  request: HttpServerRequest.HttpServerRequest,
  body: ChatCompletionRequest
): RoutedRequest => {
  const headers = plainHeaders(request)
  return { body, headers, sessionId: sessionIdOf(headers) }
}

/**
 * The routed request of a Messages request: the translated chat request routing works on, with
 * the caller's own body kept for `anthropic_messages` targets.
 */
const messagesRoutedRequest = (
  request: HttpServerRequest.HttpServerRequest,
  native: AnthropicMessages.MessagesRequest
) =>
  Effect.map(Messages.chatRequestOf(native), (body): RoutedRequest => ({
    ...routedRequest(request, body),
    native: { format: "anthropic_messages", body: native }
  }))

const servedModel = (decision: Decision, served: Option.Option<Target>): string =>
  Option.match(served, { onNone: () => decision.route.id, onSome: (target) => target.id })

const routingHeaders = (decision: Decision, served: Option.Option<Target>): Record<string, string> => ({
  [selectedModelHeader]: servedModel(decision, served),
  [evidenceSourceHeader]: decision.evidence.source,
  ...("reason" in decision.evidence ? { [evidenceReasonHeader]: decision.evidence.reason } : {})
})

const sseEvent = (data: string) => `data: ${data}\n\n`

const streamErrorEvent = (failure: UpstreamFailure) => {
  const mapping = toHttp(failure)
  return sseEvent(JSON.stringify({ error: { message: mapping.message, type: "SwitchyardError", code: mapping.code } }))
}

/** What the request log line and the request metrics know about one chat request. */
interface RequestFacts {
  /** The inbound wire format. */
  wireFormat: Format
  route: string
  selectedModel: string
  evidenceSource: string
  evidenceReason: string
  streaming: boolean
  error: string
}

const noteDecision = (facts: RequestFacts, decision: Decision, served: Option.Option<Target>) => {
  facts.route = decision.route.id
  facts.selectedModel = servedModel(decision, served)
  facts.evidenceSource = decision.evidence.source
  facts.evidenceReason = "reason" in decision.evidence ? decision.evidence.reason : ""
}

const nowMs = Effect.map(Clock.currentTimeNanos, (nanos) => Number(nanos) / 1e6)

/**
 * One log line and the client-response counter per chat or Messages request: inbound wire format,
 * route, selected model, evidence source and reason, status, latency. INFO for 2xx, WARN for other non-5xx, ERROR for 5xx. No body,
 * header value or upstream error text is logged.
 */
const recordRequest = (facts: RequestFacts, status: number, startMs: number) =>
  Effect.gen(function*() {
    const latencyMs = Math.round(((yield* nowMs) - startMs) * 100) / 100
    yield* Metric.update(
      TaggedMetric.tagged(Metrics.clientResponsesTotal, { outcome: ClientMetrics.attemptOutcome(Option.some(status)) }),
      1
    )
    const log = status >= 500 ? Effect.logError : status >= 300 ? Effect.logWarning : Effect.logInfo
    yield* log("request").pipe(Effect.annotateLogs({
      wire_format: facts.wireFormat,
      route: clip(facts.route),
      selected_model: facts.selectedModel,
      evidence_source: facts.evidenceSource,
      evidence_reason: facts.evidenceReason,
      status,
      latency_ms: latencyMs,
      streaming: facts.streaming,
      error: facts.error
    }))
  })

/**
 * Runs one chat or Messages request's handler with its bookkeeping: the facts the handler notes,
 * `totalLatency` (the `switchyard_total_latency_ms` sample, taken by the handler once the answer is
 * complete), the error envelope of the wire format, then the log line and the response counter.
 */
const recordedRequest = <E extends RequestFailure, R>(
  wireFormat: Format,
  handle: (
    facts: RequestFacts,
    totalLatency: (model: string) => Effect.Effect<void>
  ) => Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
) =>
  Effect.gen(function*() {
    const start = yield* nowMs
    const facts: RequestFacts = {
      wireFormat,
      route: "",
      selectedModel: "",
      evidenceSource: "",
      evidenceReason: "",
      streaming: false,
      error: ""
    }
    const totalLatency = (model: string) =>
      Effect.flatMap(nowMs, (end) =>
        Metric.update(TaggedMetric.tagged(RoutingMetrics.totalLatencyMs, { model }), end - start))
    const handled = handle(facts, totalLatency).pipe(
      Effect.tapError((failure) => Effect.sync(() => (facts.error = toHttp(failure).code)))
    )
    const response = yield* (wireFormat === "anthropic_messages" ? envelopedMessages(handled) : enveloped(handled))
    yield* recordRequest(facts, response.status, start)
    return response
  })

const chatCompletions = (router: Router["Type"], limit: number) => (request: HttpServerRequest.HttpServerRequest) =>
  recordedRequest("openai_chat", (facts, totalLatency) =>
    Effect.gen(function*() {
      const text = yield* readText(request, limit)
      const body = yield* decodeJson(ChatCompletionRequest, text)
      facts.route = body.model
      const routed = routedRequest(request, body)
      if (body.stream === true) {
        facts.streaming = true
        const streamed = yield* router.stream(routed)
        noteDecision(facts, streamed.decision, streamed.served)
        const events = UpstreamClient.chunksOf(streamed.pieces).pipe(
          Stream.map((chunk) => sseEvent(JSON.stringify(chunk))),
          Stream.concat(Stream.fromEffect(Effect.as(totalLatency(facts.selectedModel), sseEvent("[DONE]")))),
          Stream.catchAll((failure) => Stream.succeed(streamErrorEvent(failure))),
          Stream.encodeText
        )
        return HttpServerResponse.stream(events, {
          contentType: "text/event-stream",
          headers: { "cache-control": "no-cache", ...routingHeaders(streamed.decision, streamed.served) }
        })
      }
      const completed = yield* router.complete(routed)
      noteDecision(facts, completed.decision, completed.served)
      yield* totalLatency(facts.selectedModel)
      return HttpServerResponse.unsafeJson(completed.completion, {
        headers: routingHeaders(completed.decision, completed.served)
      })
    }))

/** Map every typed failure to the Anthropic envelope and every defect to a 500 Anthropic envelope. */
const envelopedMessages = <E extends RequestFailure, R>(
  handler: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
): Effect.Effect<HttpServerResponse.HttpServerResponse, never, R> =>
  handler.pipe(
    Effect.catchAll((failure) => {
      const { body, status } = Messages.errorOf(failure)
      return Effect.succeed(HttpServerResponse.unsafeJson(body, { status }))
    }),
    Effect.catchAllDefect((defect) =>
      Effect.as(
        logDefect(defect),
        HttpServerResponse.unsafeJson(AnthropicMessages.envelope(500, "internal error"), { status: 500 })
      )
    )
  )

/**
 * `POST /v1/messages`: an Anthropic Messages request, translated into the chat request routing
 * works on (its original body kept for `anthropic_messages` targets), routed like a chat
 * completion, and answered in the Messages format — a message, or Anthropic's SSE events — with
 * the routing headers. Errors use the Anthropic envelope with the chat endpoint's statuses.
 */
const messages = (router: Router["Type"], limit: number) => (request: HttpServerRequest.HttpServerRequest) =>
  recordedRequest("anthropic_messages", (facts, totalLatency) =>
    Effect.gen(function*() {
      const text = yield* readText(request, limit)
      const native = yield* decodeJson(AnthropicMessages.MessagesRequest, text)
      facts.route = native.model
      const routed = yield* messagesRoutedRequest(request, native)
      if (native.stream === true) {
        facts.streaming = true
        const streamed = yield* router.stream(routed)
        noteDecision(facts, streamed.decision, streamed.served)
        const events = Stream.suspend(() => {
          // The upstream's own events when it speaks Messages (only `model` restamped), else the
          // chat chunks translated.
          const sse = Option.exists(streamed.served, (target) => target.client.format === "anthropic_messages")
            ? streamed.pieces.pipe(
              Stream.filterMap((piece) => piece.native),
              Stream.map((event) => Messages.nativeSseEvent(event, facts.selectedModel))
            )
            : Stream.suspend(() => {
              const translator = Translate.openAiToAnthropicStream({ model: facts.selectedModel })
              return UpstreamClient.chunksOf(streamed.pieces).pipe(
                Stream.mapConcat((chunk) => translator.push(chunk)),
                Stream.concat(Stream.suspend(() => Stream.fromIterable(translator.end()))),
                Stream.map(Messages.sseEvent)
              )
            })
          return sse.pipe(
            Stream.concat(Stream.execute(totalLatency(facts.selectedModel))),
            Stream.catchAll((failure) => Stream.succeed(Messages.streamErrorEvent(failure))),
            Stream.encodeText
          )
        })
        return HttpServerResponse.stream(events, {
          contentType: "text/event-stream",
          headers: { "cache-control": "no-cache", ...routingHeaders(streamed.decision, streamed.served) }
        })
      }
      const completed = yield* router.complete(routed)
      noteDecision(facts, completed.decision, completed.served)
      yield* totalLatency(facts.selectedModel)
      const answer = Option.match(completed.native, {
        onNone: () => Messages.messageOf(completed.completion, facts.selectedModel),
        // The upstream's own answer, only `model` restamped.
        onSome: (native) => ({ ...native.body, model: facts.selectedModel })
      })
      return HttpServerResponse.unsafeJson(answer, {
        headers: routingHeaders(completed.decision, completed.served)
      })
    }))

/** The body of `POST /v1/messages/count_tokens` as far as routing needs it; the rest is forwarded. */
const CountTokensRoute = Schema.Struct({
  model: Schema.String.pipe(Schema.filter((m) => m.trim().length > 0, { message: () => "model must be a non-empty string" }))
})

/**
 * `POST /v1/messages/count_tokens`: forwarded (with `model` = the target's id) to the route's
 * token-counting target (`Messages.countTokensTarget`); the upstream's JSON is returned as-is.
 * A route without an `anthropic_messages` target → 400 `route has no Anthropic target for token
 * counting`. Errors use the Anthropic envelope.
 */
const countTokens = (router: Router["Type"], upstream: UpstreamClient.UpstreamClient["Type"], limit: number) =>
(request: HttpServerRequest.HttpServerRequest) =>
  envelopedMessages(Effect.gen(function*() {
    const text = yield* readText(request, limit)
    const body = yield* decodeJson(Schema.Record({ key: Schema.String, value: Schema.Unknown }), text)
    const { model } = yield* decodeValue(CountTokensRoute, body)
    const route = router.routes.find((candidate) => candidate.id === model)
    if (route === undefined) return yield* new ModelNotFound({ model })
    const target = Messages.countTokensTarget(route)
    if (target === undefined) {
      return yield* new InvalidRequest({ message: "route has no Anthropic target for token counting" })
    }
    const counted = yield* upstream.countTokens({ target, body, headers: plainHeaders(request) })
    return HttpServerResponse.unsafeJson(counted)
  }))

/** The body of `POST /v1/decision`; unknown keys are rejected. */
export const DecisionRequest = Schema.Struct({
  input_format: Schema.Literal("openai_chat", "anthropic_messages"),
  request: Schema.Record({ key: Schema.String, value: Schema.Unknown })
})

const describeTarget = (target: Target) => ({
  target: target.name,
  model: target.id,
  llm_client: { format: target.client.format, base_url: target.client.baseUrl },
  extra_body: target.extraBody
})

const decision = (router: Router["Type"], limit: number) => (request: HttpServerRequest.HttpServerRequest) =>
  enveloped(Effect.gen(function*() {
    const text = yield* readText(request, limit)
    const envelope = yield* decodeJson(DecisionRequest, text, { onExcessProperty: "error", errors: "all" })
    const anthropic = envelope.input_format === "anthropic_messages"
    const routed = anthropic
      ? yield* messagesRoutedRequest(request, yield* decodeValue(AnthropicMessages.MessagesRequest, envelope.request))
      : routedRequest(request, yield* decodeValue(ChatCompletionRequest, envelope.request))
    const decided = yield* router.decide(routed)
    // A route that produced the answer while routing (noop, the advisor gate) returns it too,
    // encoded in `input_format`.
    const answer = Option.match(decided.answer ?? Option.none(), {
      onNone: () => ({}),
      onSome: (response) => ({
        response: anthropic ? Messages.messageOf(response, servedModel(decided, decided.selected)) : response
      })
    })
    return HttpServerResponse.unsafeJson({
      selected: Option.match(decided.selected, { onNone: () => null, onSome: describeTarget }),
      fallbacks: decided.fallbacks.map(describeTarget),
      evidence: decided.evidence,
      ...answer
    })
  }))

const models = (router: Router["Type"]) => {
  const ids = router.routes.map((route) => route.id)
  const body = {
    object: "list",
    data: router.routes.map((route) => ({
      id: route.id,
      object: "model",
      type: "model",
      created: 0,
      owned_by: "switchyard",
      display_name: route.id,
      capabilities: {
        streaming: true,
        tool_calling: Option.getOrNull(route.toolCalling),
        context_window: Option.getOrNull(route.contextWindow),
        supported_inbound_formats: ["openai-chat-completions", "anthropic-messages"]
      }
    })),
    first_id: ids[0] ?? null,
    last_id: ids[ids.length - 1] ?? null,
    has_more: false,
    default_model: ids[0] ?? null,
    model_pool: ids
  }
  return Effect.succeed(HttpServerResponse.unsafeJson(body))
}

/**
 * `GET /health`: always 200 `{"status":"ok","breakers":{...}}`, with the state (`closed`, `open`,
 * `half_open`) of every LLM client's circuit breaker; an open breaker is degraded service, not a
 * dead process.
 */
const health = (upstream: UpstreamClient.UpstreamClient["Type"]) =>
  Effect.map(upstream.breakers, (statuses) =>
    HttpServerResponse.unsafeJson({
      status: "ok",
      breakers: Object.fromEntries(statuses.map((status) => [status.client, status.state]))
    }))

const notFound = Effect.succeed(
  HttpServerResponse.unsafeJson(
    { error: { message: "Not Found", type: "not_found", code: "endpoint_not_found" } },
    { status: 404 }
  )
)

/**
 * All endpoints. Requires the `Router`, the `UpstreamClient` (breaker states for `/health`) and the
 * telemetry reader when the layer is built.
 */
export const layer = (options: Options = {}) =>
  HttpLayerRouter.use(Effect.fn(function*(http) {
    const router = yield* Router
    const upstream = yield* UpstreamClient.UpstreamClient
    const reader = yield* Telemetry.PrometheusReader
    const limit = options.bodyLimit ?? defaultBodyLimit
    yield* Telemetry.seed(router.routes)
    yield* http.add("POST", "/v1/chat/completions", chatCompletions(router, limit))
    yield* http.add("POST", "/v1/messages", messages(router, limit))
    yield* http.add("POST", "/v1/messages/count_tokens", countTokens(router, upstream, limit))
    yield* http.add("POST", "/v1/decision", decision(router, limit))
    yield* http.add("GET", "/v1/models", models(router))
    yield* http.add("GET", "/health", health(upstream))
    yield* http.add(
      "GET",
      "/metrics",
      Effect.map(
        Effect.provideService(Telemetry.scrape, Telemetry.PrometheusReader, reader),
        (text) => HttpServerResponse.text(text, { contentType: "text/plain; version=0.0.4; charset=utf-8" })
      )
    )
    yield* http.add("*", "*", notFound)
  }))

