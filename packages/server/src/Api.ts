/**
 * The HTTP endpoints. The LLM endpoints (`/v1/chat/completions`, `/v1/messages`, `/v1/responses`,
 * and Gemini's `/v1beta/models/{model}:generateContent` / `:streamGenerateContent` / `:countTokens`)
 * are each the one request pipeline (`internal/pipeline.ts`) with its format's codec
 * (`internal/codecs.ts`, `internal/gemini.ts`), served by the lean edge (`internal/edge.ts`); token
 * counting, the Responses auxiliary calls (`/v1/responses/input_tokens`, `/v1/responses/compact`),
 * decision, models (`/v1/models`, `/v1beta/models`, `/v1beta/models/{model}`), stats, health, metrics, and an enveloped 404
 * for everything else are `HttpLayerRouter` routes.
 * Every failure is mapped to an error envelope here, never left to the platform's defaults.
 *
 * `GET /v1/session-stats` (and `/v1/routing/session-stats`) exists only with the routing log on.
 *
 * Inbound auth (`Options.inboundAuth`) is one check (`internal/auth.ts`) that both kinds of
 * endpoint run first: every `/v1/*` endpoint, `/metrics` with `metrics_auth`, and the forwarding of
 * unmatched requests to `fallback_client`; `/health` and the 404 stay open.
 */
import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import * as HttpLayerRouter from "@effect/platform/HttpLayerRouter"
import type * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import type { LlmClient, Target } from "@switchyard-ts/client/Target"
import * as UpstreamClient from "@switchyard-ts/client/UpstreamClient"
import type { ServerSpec } from "@switchyard-ts/config/Deployment"
import {
  type ClientFailure,
  InvalidRequest,
  ModelNotFound,
  type RequestFailure,
  ResponsesAuxiliaryUnsupported
} from "@switchyard-ts/protocol/Errors"
import * as Decision from "@switchyard-ts/routing/Decision"
import * as JudgeHealth from "@switchyard-ts/routing/JudgeHealth"
import * as ResponseState from "@switchyard-ts/routing/ResponseState"
import { forwardAuthMismatch, type Route } from "@switchyard-ts/routing/Route"
import { Router } from "@switchyard-ts/routing/Router"
import * as Stats from "@switchyard-ts/routing/Stats"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Auth from "./internal/auth.js"
import { decodeJson, decodeValue, defaultBodyLimit, readText } from "./internal/body.js"
import * as Codecs from "./internal/codecs.js"
import * as Continuations from "./internal/continuations.js"
import * as Edge from "./internal/edge.js"
import * as Forward from "./internal/forward.js"
import * as Gemini from "./internal/gemini.js"
import * as Judges from "./internal/judges.js"
import * as Messages from "./internal/messages.js"
import * as Pipeline from "./internal/pipeline.js"
import { sessionIdOf } from "./internal/session.js"
import * as RoutingLog from "./RoutingLog.js"
import * as Telemetry from "./Telemetry.js"

/** Options of the HTTP API. */
export interface Options {
  /** Request body limit in bytes (default 16 MiB). */
  readonly bodyLimit?: number
  /**
   * Inbound auth (the deployment's `[server]` table): with keys, every `/v1/*` endpoint — and
   * `/metrics` with `metricsAuth` — answers 401 in its envelope to a caller without one of them.
   * Absent or without keys: every endpoint is open.
   */
  readonly inboundAuth?: ServerSpec
  /**
   * The deployment's `fallback_client`: every request no endpoint matches is forwarded raw to its
   * API root (`internal/forward.ts`), behind inbound auth. Absent: such requests get the 404.
   */
  readonly fallbackClient?: LlmClient
  /**
   * The deployment's judges (`Server.layerApp` passes them): `GET /v1/judges` lists them with what
   * the `JudgeHealth` recorder has seen. Absent (or no recorder): the endpoint lists none.
   */
  readonly judges?: ReadonlyArray<Judges.Listed>
}

export {
  compatibleSelectedModelHeader,
  evidenceReasonHeader,
  evidenceSourceHeader,
  selectedModelHeader
} from "./internal/pipeline.js"
export { sessionHeader, sessionIdOf } from "./internal/session.js"

/** A JSON response of an error. */
const errorResponse = ({ body, status }: Codecs.ErrorResponse) => HttpServerResponse.unsafeJson(body, { status })

/** The request body's text, within `limit` bytes. */
const bodyText = (request: HttpServerRequest.HttpServerRequest, limit: number) =>
  readText(NodeHttpServerRequest.toIncomingMessage(request), limit)

/**
 * `handler` behind the inbound auth check of `guard` (none: open), every typed failure in `codec`'s
 * envelope, every defect a 500 in it.
 */
const enveloped = <E extends RequestFailure, R>(
  codec: Codecs.Codec,
  guard: Auth.Guard | undefined,
  request: HttpServerRequest.HttpServerRequest,
  handler: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
): Effect.Effect<HttpServerResponse.HttpServerResponse, never, R> =>
  Effect.zipRight(Auth.admit(guard, request.headers), handler).pipe(
    Effect.catchAll((failure) => Effect.succeed(errorResponse(codec.error(failure)))),
    Effect.catchAllDefect((defect) => Effect.as(Pipeline.logDefect(defect), errorResponse(codec.internalError)))
  )

/** A forwarded endpoint's body: a JSON object (one schema for every request: its decoder is compiled once). */
const JsonObject = Schema.Record({ key: Schema.String, value: Schema.Unknown })

/** The body of a forwarded endpoint's request as far as routing needs it; the rest is forwarded. */
const ModelOnly = Schema.Struct({
  model: Schema.String.pipe(
    Schema.filter((m) => m.trim().length > 0, { message: () => "model must be a non-empty string" })
  )
})

/**
 * The body of a forwarded endpoint's request (a JSON object) and the route its `model` names:
 * `ModelNotFound` when none, `ForwardAuthMismatch` when the route forwards caller credentials of
 * the other family than `inbound`'s (the router's own check).
 */
const routedBody = Effect.fnUntraced(function*(
  router: Router["Type"],
  request: HttpServerRequest.HttpServerRequest,
  limit: number,
  inbound: Codecs.Codec["format"]
) {
  const text = yield* bodyText(request, limit)
  const body = yield* decodeJson(JsonObject, text)
  const { model } = yield* decodeValue(ModelOnly, body)
  const route = router.routes.find((candidate) => candidate.id === model)
  if (route === undefined) return yield* new ModelNotFound({ model })
  const mismatch = forwardAuthMismatch(route, inbound)
  if (Option.isSome(mismatch)) return yield* mismatch.value
  return { body, route }
})

/** One request of a {@link forwarded} endpoint (one generator for every request). */
const forward = Effect.fnUntraced(function*(
  codec: Codecs.Codec,
  pick: (route: Route) => Target | undefined,
  missing: (route: Route) => InvalidRequest | ResponsesAuxiliaryUnsupported,
  call: (options: UpstreamClient.CallOptions) => Effect.Effect<unknown, ClientFailure>,
  router: Router["Type"],
  limit: number,
  request: HttpServerRequest.HttpServerRequest
) {
  const { body, route } = yield* routedBody(router, request, limit, codec.format)
  const target = pick(route)
  if (target === undefined) return yield* Effect.fail(missing(route))
  return HttpServerResponse.unsafeJson(yield* call({ target, body, headers: { ...request.headers } }))
})

/**
 * An endpoint forwarding its body to one target of the route its `model` names (`pick`; none →
 * `missing`) through `call`, returning the upstream's JSON as-is; failures in `codec`'s envelope.
 */
const forwarded = (
  codec: Codecs.Codec,
  pick: (route: Route) => Target | undefined,
  missing: (route: Route) => InvalidRequest | ResponsesAuxiliaryUnsupported,
  call: (options: UpstreamClient.CallOptions) => Effect.Effect<unknown, ClientFailure>
) =>
(router: Router["Type"], limit: number, guard?: Auth.Guard) =>
(request: HttpServerRequest.HttpServerRequest) =>
  enveloped(codec, guard, request, forward(codec, pick, missing, call, router, limit, request))

/**
 * `POST /v1/messages/count_tokens`: forwarded (with `model` = the target's id) to the route's
 * token-counting target (`Messages.countTokensTarget`); the upstream's JSON is returned as-is.
 * A route without an `anthropic_messages` target → 400 `route has no Anthropic target for token
 * counting`; a route that forwards OpenAI caller credentials → 400 `ForwardAuthMismatch` (the
 * same check as the router's: this is an Anthropic endpoint). Errors use the Anthropic envelope.
 */
const countTokens = (upstream: UpstreamClient.UpstreamClient["Type"]) =>
  forwarded(
    Codecs.anthropicMessages,
    Messages.countTokensTarget,
    () => new InvalidRequest({ message: "route has no Anthropic target for token counting" }),
    upstream.countTokens
  )

/**
 * `POST /v1/responses/input_tokens` and `POST /v1/responses/compact` (`operation`): forwarded (with
 * `model` = the target's id, that target's client credentials, retries and deadline) to the route's
 * first `openai_responses` target; the upstream's JSON is returned as-is. A route without one → 400
 * `responses_auxiliary_unsupported`; a route that forwards Anthropic caller credentials → 400
 * `ForwardAuthMismatch` (this is an OpenAI endpoint). Errors use the OpenAI envelope.
 */
const responsesAuxiliary = (
  upstream: UpstreamClient.UpstreamClient["Type"],
  operation: UpstreamClient.ResponsesAuxiliary
) =>
  forwarded(
    Codecs.openAiResponses,
    (route) => route.targets.find((candidate) => candidate.client.format === "openai_responses"),
    (route) => new ResponsesAuxiliaryUnsupported({ route: route.id }),
    (options) => upstream.responsesAuxiliary(options, operation)
  )

/** The body of `POST /v1/decision`; unknown keys are rejected. */
export const DecisionRequest = Schema.Struct({
  input_format: Schema.Literal("openai_chat", "openai_responses", "anthropic_messages"),
  request: Schema.Record({ key: Schema.String, value: Schema.Unknown })
})

const describeTarget = (target: Target) => ({
  target: target.name,
  model: target.id,
  llm_client: { format: target.client.format, base_url: target.client.baseUrl },
  extra_body: target.extraBody
})

/** One `/v1/decision` request (one generator for every request). */
const decideOne = Effect.fnUntraced(function*(
  router: Router["Type"],
  codecs: Readonly<Record<Codecs.DecisionFormat, Codecs.Codec>>,
  limit: number,
  request: HttpServerRequest.HttpServerRequest
) {
  const text = yield* bodyText(request, limit)
  const envelope = yield* decodeJson(DecisionRequest, text, { onExcessProperty: "error", errors: "all" })
  const codec = codecs[envelope.input_format]
  const headers = { ...request.headers }
  const inbound = yield* codec.decode(envelope.request, headers, sessionIdOf(headers))
  const decided = yield* router.decide(inbound.routed)
  const selected = Decision.selected(decided)
  const response = decided._tag === "Answered"
    ? { response: inbound.encoder.decisionResponse(decided.answer, Pipeline.servedModel(decided, selected)) }
    : {}
  if (decided._tag === "Answered" && inbound.encoder.retain !== undefined) {
    yield* inbound.encoder.retain(decided, decided.servedBy)
  }
  return HttpServerResponse.unsafeJson({
    selected: Option.match(selected, { onNone: () => null, onSome: describeTarget }),
    fallbacks: Decision.fallbacks(decided).map(describeTarget),
    evidence: decided.evidence,
    ...response
  })
})

/**
 * `POST /v1/decision`: decode `request` with the codec of `input_format`, route it exactly like the
 * answer endpoints (judge calls and session state included) without the answer call, and describe
 * the decision. As there, a route that forwards caller credentials of the other family than
 * `input_format` is refused (400 `ForwardAuthMismatch`, by the router, before any judge call). A
 * route that answered while routing (noop, the advisor gate) returns its answer as `response`, in
 * `input_format`. A Responses request continues by id as on `/v1/responses` (`codecs`), and such a
 * `response` is remembered as an answer would be. Errors use the OpenAI envelope.
 */
const decision = (
  router: Router["Type"],
  codecs: Readonly<Record<Codecs.DecisionFormat, Codecs.Codec>>,
  limit: number,
  guard?: Auth.Guard
) =>
(request: HttpServerRequest.HttpServerRequest) =>
  enveloped(
    Codecs.openAiChat,
    guard,
    request,
    decideOne(router, codecs, limit, request)
  )

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
      // the compatible system's fields: the route's algorithm, and its context window at the top level
      route_type: route.algorithm,
      context_length: Option.getOrNull(route.contextWindow),
      capabilities: {
        streaming: true,
        tool_calling: Option.getOrNull(route.toolCalling),
        vision: Option.getOrNull(route.vision ?? Option.none()),
        context_window: Option.getOrNull(route.contextWindow),
        supported_inbound_formats: ["openai-chat-completions", "openai-responses", "anthropic-messages"]
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
 * `GET /health` (and `HEAD /health`, the same without a body): always 200 `{"status":"ok","breakers":{...}}`, with the state (`closed`, `open`,
 * `half_open`) of every LLM client's circuit breaker; an open breaker is degraded service, not a
 * dead process.
 */
const health = (upstream: UpstreamClient.UpstreamClient["Type"]) =>
  Effect.map(upstream.breakers, (statuses) =>
    HttpServerResponse.unsafeJson({
      status: "ok",
      breakers: Object.fromEntries(statuses.map((status) => [status.client, status.state]))
    }))

/**
 * `GET /v1/session-stats?session_id=ID` (also at the compatible system's
 * `/v1/routing/session-stats`): the routing log's aggregates of one session (`RoutingLog.SessionStats`).
 * No or an empty `session_id` → 400 `invalid_query`; a session with no line (or evicted from the
 * bounded aggregates) → 404 `routing_session_not_found`; totals kept in Redis that cannot be read →
 * 503 `session_totals_unavailable`. Errors use the OpenAI envelope.
 */
const sessionStats =
  (log: RoutingLog.RoutingLog["Type"], guard?: Auth.Guard) => (request: HttpServerRequest.HttpServerRequest) =>
    enveloped(
      Codecs.openAiChat,
      guard,
      request,
      Effect.gen(function*() {
        const query = request.url.indexOf("?")
        const sessionId = query === -1 ? "" : new URLSearchParams(request.url.slice(query + 1)).get("session_id") ?? ""
        if (sessionId === "") {
          return HttpServerResponse.unsafeJson({
            error: {
              message: "missing query parameter session_id",
              type: "invalid_request_error",
              code: "invalid_query"
            }
          }, { status: 400 })
        }
        const stats = yield* log.sessionStats(sessionId).pipe(Effect.either)
        if (Either.isLeft(stats)) {
          return HttpServerResponse.unsafeJson({
            error: { message: stats.left.message, type: "server_error", code: "session_totals_unavailable" }
          }, { status: 503 })
        }
        return Option.match(stats.right, {
          onNone: () =>
            HttpServerResponse.unsafeJson({
              error: { message: "Routing session not found", type: "not_found", code: "routing_session_not_found" }
            }, { status: 404 }),
          onSome: (body) => HttpServerResponse.unsafeJson(body)
        })
      })
    )

const notFound = Effect.succeed(
  HttpServerResponse.unsafeJson(
    { error: { message: "Not Found", type: "not_found", code: "endpoint_not_found" } },
    { status: 404 }
  )
)

/**
 * The LLM endpoints by path, each the request pipeline with its codec, recording answers in
 * `stats` (and, when it is on, in the routing log); served by the lean edge.
 */
export const llmEndpoints = (
  router: Router["Type"],
  stats: Stats.Recorder,
  options: Options = {},
  log: RoutingLog.RoutingLog["Type"] = RoutingLog.noop,
  responses?: ResponseState.ResponseState["Type"]
): ReadonlyMap<string, Edge.Endpoint> => {
  const limit = options.bodyLimit ?? defaultBodyLimit
  const guard = Auth.make(options.inboundAuth)
  const codecs = codecsOf(router, responses)
  const endpoint = (codec: Codecs.Codec) => guarded(guard, codec, Pipeline.handle(codec, router, stats, limit, log))
  return new Map([
    ["/v1/chat/completions", endpoint(codecs.openai_chat)],
    ["/v1/messages", endpoint(codecs.anthropic_messages)],
    ["/v1/responses", endpoint(codecs.openai_responses)]
  ])
}

/**
 * Where the LLM endpoints are, as the lean edge dispatches: the exact paths of
 * {@link llmEndpoints}, then the Gemini model endpoints (`/v1beta/models/<model>:generateContent`,
 * `:streamGenerateContent`, `:countTokens`; `upstream` counts tokens), every one behind inbound auth.
 */
export const llmDispatch = (
  router: Router["Type"],
  stats: Stats.Recorder,
  upstream: UpstreamClient.UpstreamClient["Type"],
  options: Options = {},
  log: RoutingLog.RoutingLog["Type"] = RoutingLog.noop,
  responses?: ResponseState.ResponseState["Type"]
): Edge.Dispatch => {
  const exact = llmEndpoints(router, stats, options, log, responses)
  const deps = {
    router,
    upstream,
    stats,
    limit: options.bodyLimit ?? defaultBodyLimit,
    log,
    guard: Auth.make(options.inboundAuth)
  }
  const geminiPrefix = `${Gemini.modelsPath}/`
  return (path) => exact.get(path) ?? (path.startsWith(geminiPrefix) ? Gemini.endpoint(path, deps) : undefined)
}

/**
 * A Gemini `GET` endpoint: `handler`'s body behind inbound auth (`x-goog-api-key` and `?key=`
 * count); every failure in the Gemini envelope.
 */
const geminiGet = (
  guard: Auth.Guard | undefined,
  handler: (request: HttpServerRequest.HttpServerRequest) => Effect.Effect<unknown, RequestFailure>
) =>
(request: HttpServerRequest.HttpServerRequest) =>
  enveloped(
    Codecs.geminiPlain,
    undefined,
    request,
    Effect.zipRight(
      Auth.admit(guard, Gemini.authHeaders({ ...request.headers }, request.url), true),
      Effect.map(handler(request), (body) => HttpServerResponse.unsafeJson(body))
    )
  )

/**
 * `GET /v1beta/models`: a Gemini `ListModelsResponse` with one entry per route; `GET
 * /v1beta/models/{model}`: one `Model` entry, Gemini's 404 for an unknown route.
 */
const geminiModels = (router: Router["Type"], guard: Auth.Guard | undefined) => {
  const body = Gemini.modelsList(router)
  return {
    list: geminiGet(guard, () => Effect.succeed(body)),
    get: geminiGet(guard, (request) => Gemini.modelGet(router, Edge.pathOf(request.url)))
  }
}

/** The codec of each format; Responses continuations by id over `responses` when given. */
const codecsOf = (router: Router["Type"], responses: ResponseState.ResponseState["Type"] | undefined) =>
  Codecs.byFormatWith(responses === undefined ? undefined : Continuations.make(responses, router.routes))

/**
 * `endpoint` behind the inbound auth check of `guard` (none: `endpoint` itself): the check runs
 * synchronously on the caller's headers before anything else, and a refused caller gets the 401
 * of `codec` without its body being read.
 */
const guarded = (guard: Auth.Guard | undefined, codec: Codecs.Codec, endpoint: Edge.Endpoint): Edge.Endpoint =>
  guard === undefined ? endpoint : (request) => {
    const refused = Auth.refusal(guard, request.headers)
    return refused === undefined ? endpoint(request) : Pipeline.refuse(codec, refused)
  }

/**
 * `GET /v1/stats` (the recorder's snapshot) and `POST /v1/stats/reset` (→ `{"status":"reset"}`),
 * both behind inbound auth like every `/v1/*` endpoint.
 */
const statsRoutes = (stats: Stats.Recorder, guard: Auth.Guard | undefined) => ({
  read: (request: HttpServerRequest.HttpServerRequest) =>
    enveloped(Codecs.openAiChat, guard, request, Effect.sync(() => HttpServerResponse.unsafeJson(stats.snapshot()))),
  reset: (request: HttpServerRequest.HttpServerRequest) =>
    enveloped(
      Codecs.openAiChat,
      guard,
      request,
      Effect.sync(() => {
        stats.reset()
        return HttpServerResponse.unsafeJson({ status: "reset" })
      })
    )
})

/**
 * Every other endpoint (token counting, decision, models, stats, health, metrics, session stats
 * when the routing log is on, the enveloped 404 — or, with `fallbackClient`, the forwarding of every
 * unmatched request behind inbound auth) as `HttpLayerRouter` routes. Requires the
 * `Router`, the `UpstreamClient` (breaker states for `/health`), the `RoutingLog`, the
 * `ResponseState` (`/v1/decision`'s Responses continuations) and the telemetry reader when the
 * layer is built, and reads the `Stats` recorder.
 */
export const adminLayer = (options: Options = {}) =>
  HttpLayerRouter.use(Effect.fn(function*(http) {
    const router = yield* Router
    const upstream = yield* UpstreamClient.UpstreamClient
    const reader = yield* Telemetry.PrometheusReader
    const responses = yield* ResponseState.ResponseState
    const limit = options.bodyLimit ?? defaultBodyLimit
    const guard = Auth.make(options.inboundAuth)
    yield* http.add("POST", "/v1/messages/count_tokens", countTokens(upstream)(router, limit, guard))
    for (const operation of ["input_tokens", "compact"] as const) {
      yield* http.add(
        "POST",
        `/v1/responses/${operation}`,
        responsesAuxiliary(upstream, operation)(router, limit, guard)
      )
    }
    yield* http.add("POST", "/v1/decision", decision(router, codecsOf(router, responses), limit, guard))
    yield* http.add("GET", "/v1/models", (request) => enveloped(Codecs.openAiChat, guard, request, models(router)))
    const gemini = geminiModels(router, guard)
    yield* http.add("GET", Gemini.modelsPath, gemini.list)
    yield* http.add("GET", `${Gemini.modelsPath}/*`, gemini.get)
    const stats = statsRoutes(yield* Stats.Stats, guard)
    yield* http.add("GET", "/v1/stats", stats.read)
    yield* http.add("POST", "/v1/stats/reset", stats.reset)
    yield* http.add("GET", "/health", health(upstream))
    const judgeHealth = yield* Effect.serviceOption(JudgeHealth.JudgeHealth)
    const judged = Option.isSome(judgeHealth) ? options.judges ?? [] : []
    const recorder = Option.getOrElse(judgeHealth, JudgeHealth.make)
    yield* http.add(
      "GET",
      "/v1/judges",
      (request) =>
        enveloped(
          Codecs.openAiChat,
          guard,
          request,
          Effect.zipWith(
            upstream.breakers,
            Clock.currentTimeMillis,
            (breakers, now) => HttpServerResponse.unsafeJson(Judges.body(judged, breakers, recorder, now))
          )
        )
    )
    const log = yield* RoutingLog.RoutingLog
    if (log.enabled) {
      yield* http.add("GET", "/v1/session-stats", sessionStats(log, guard))
      yield* http.add("GET", "/v1/routing/session-stats", sessionStats(log, guard))
    }
    const scrape = Effect.map(
      Effect.provideService(Telemetry.scrape, Telemetry.PrometheusReader, reader),
      (text) => HttpServerResponse.text(text, { contentType: "text/plain; version=0.0.4; charset=utf-8" })
    )
    yield* http.add(
      "GET",
      "/metrics",
      (request) => enveloped(Codecs.openAiChat, guard?.metrics === true ? guard : undefined, request, scrape)
    )
    const fallbackClient = options.fallbackClient
    const unmatched = fallbackClient === undefined
      ? () => notFound
      : (request: HttpServerRequest.HttpServerRequest) =>
        enveloped(
          Codecs.openAiChat,
          guard,
          request,
          Effect.suspend(() =>
            Forward.forward(fallbackClient.baseUrl, request, Auth.keyHeaders(guard, request.headers))
          )
        )
    // The router takes no HEAD route, and this catch-all answers HEAD before its HEAD-as-GET fallback would.
    yield* http.add(
      "*",
      "*",
      (request) =>
        request.method === "HEAD" && Edge.pathOf(request.url) === "/health" ? health(upstream) : unmatched(request)
    )
  }))
