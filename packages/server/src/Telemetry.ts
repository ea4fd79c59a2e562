/**
 * Telemetry as a Layer: the OpenTelemetry SDK (through @effect/opentelemetry) with a Prometheus
 * reader that `/metrics` renders on demand, and OTLP/HTTP trace export only when
 * `OTEL_EXPORTER_OTLP_ENDPOINT` is set.
 */
import * as NodeSdk from "@effect/opentelemetry/NodeSdk"
import { PrometheusExporter, PrometheusSerializer } from "@opentelemetry/exporter-prometheus"
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http"
import { BatchSpanProcessor, type SpanProcessor } from "@opentelemetry/sdk-trace-base"
import * as ClientMetrics from "@switchyard-ts/client/Metrics"
import * as RoutingMetrics from "@switchyard-ts/routing/Metrics"
import type { Route } from "@switchyard-ts/routing/Route"
import * as Config from "effect/Config"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as ServerMetrics from "./Metrics.js"

/** The Prometheus reader bound to the SDK's meter provider. */
export class PrometheusReader extends Context.Tag("@switchyard-ts/server/PrometheusReader")<
  PrometheusReader,
  PrometheusExporter
>() {}

const ReaderLive = Layer.sync(PrometheusReader, () => new PrometheusExporter({ preventServerStart: true }))

/**
 * The telemetry layer with a given span processor (e.g. an in-memory exporter in tests) instead
 * of the one chosen from the environment. Without any span processor nobody collects spans, so
 * tracing is switched off (`Layer.setTracerEnabled(false)`): spans on the request path are no-ops
 * that allocate no trace state, and a caller's `traceparent` reaches the upstream as it came (it is
 * forwarded like any other caller header instead of being replaced by ours).
 */
export const layerWith = (options: { readonly spanProcessor?: SpanProcessor }): Layer.Layer<PrometheusReader> =>
  Layer.unwrapEffect(
    Effect.gen(function*() {
      const serviceName = yield* Config.string("OTEL_SERVICE_NAME").pipe(Config.withDefault("switchyard-server"))
      const endpoint = yield* Config.option(Config.nonEmptyString("OTEL_EXPORTER_OTLP_ENDPOINT"))
      // The OTLP exporter reads the standard OTEL_EXPORTER_OTLP_* variables itself.
      const spanProcessor = options.spanProcessor ??
        Option.getOrUndefined(Option.map(endpoint, () => new BatchSpanProcessor(new OTLPTraceExporter())))
      const sdk = Layer.provideMerge(
        NodeSdk.layer(
          Effect.map(PrometheusReader, (metricReader) => ({ resource: { serviceName }, metricReader, spanProcessor }))
        ),
        ReaderLive
      )
      return spanProcessor === undefined ? Layer.merge(sdk, Layer.setTracerEnabled(false)) : sdk
    }).pipe(Effect.orDie)
  )

/**
 * The telemetry layer: SDK, Prometheus reader (exposed for `/metrics`), and OTLP/HTTP trace
 * export only when `OTEL_EXPORTER_OTLP_ENDPOINT` is set.
 */
export const layer: Layer.Layer<PrometheusReader> = layerWith({})

const serializer = new PrometheusSerializer()

/** Prometheus text exposition of every metric collected so far. */
export const scrape: Effect.Effect<string, never, PrometheusReader> = Effect.flatMap(
  PrometheusReader,
  (reader) =>
    Effect.map(
      Effect.promise(() => reader.collect()),
      ({ resourceMetrics }) => serializer.serialize(resourceMetrics)
    )
)

/**
 * Create, at 0, the series dashboards expect before the first request: the upstream attempt
 * codes and retry counter the compatible system pre-seeds, and `requests_total` / `errors_total`
 * for every model a route can select. (An advisor route seeds its own discarded-turn counter when it
 * is built: `AdvisorRoute.make`.)
 */
export const seed = (routes: ReadonlyArray<Route>): Effect.Effect<void> =>
  Effect.zipRight(
    Effect.zipRight(ClientMetrics.seed, ServerMetrics.seed),
    Effect.forEach(
      routes.flatMap((route) => (route.targets.length === 0 ? [route.id] : route.targets.map((target) => target.id))),
      (model) =>
        Effect.zipRight(
          Metric.update(RoutingMetrics.requestsTotal.pipe(Metric.tagged("model", model)), 0),
          Metric.update(RoutingMetrics.errorsTotal.pipe(Metric.tagged("model", model)), 0)
        ),
      { discard: true }
    )
  )
