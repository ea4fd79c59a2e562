/**
 * Request tracing without the platform's per-request `http.server` and `http.client` spans: the
 * routed request's own spans (`libsy.run`, `libsy.client_call`) cover them. A caller's trace
 * context (W3C `traceparent`, or B3) still becomes the parent of the spans a request makes; upstream
 * calls carry the trace context of the span they are made in (set by the `UpstreamClient` itself).
 *
 * @internal
 */
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpMiddleware from "@effect/platform/HttpMiddleware"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import type * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as HttpTraceContext from "@effect/platform/HttpTraceContext"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"

/**
 * `layer` (a served app) without the platform's `http.server` and `http.client` spans in its
 * request fibers (URL parsing, a span and an attribute per header, each time). Set once for the
 * fibers the server forks, so it costs nothing per request.
 */
export const withoutPlatformSpans = <A, E, R>(layer: Layer.Layer<A, E, R>): Layer.Layer<A, E, R> =>
  Layer.locally(
    HttpMiddleware.withTracerDisabledWhen(layer, () => true),
    HttpClient.currentTracerDisabledWhen,
    () => true
  )

/** Middleware: the request's trace context, when its headers carry one, is the parent span. */
export const parentFromHeaders = <E, R>(
  app: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
): Effect.Effect<HttpServerResponse.HttpServerResponse, E, R | HttpServerRequest.HttpServerRequest> =>
  Effect.flatMap(
    HttpServerRequest.HttpServerRequest,
    (request) =>
      Option.match(HttpTraceContext.fromHeaders(request.headers), {
        onNone: () => app,
        onSome: (parent) => Effect.withParentSpan(app, parent)
      })
  )
