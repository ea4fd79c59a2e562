/**
 * Telemetry as a Layer: the OpenTelemetry SDK (through @effect/opentelemetry) with a Prometheus
 * reader that `/metrics` renders on demand, and OTLP/HTTP trace export only when
 * `OTEL_EXPORTER_OTLP_ENDPOINT` is set.
 */
import * as NodeSdk from "@effect/opentelemetry/NodeSdk"
import { PrometheusExporter, PrometheusSerializer } from "@opentelemetry/exporter-prometheus"
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http"
import { BatchSpanProcessor } from "@opentelemetry/sdk-trace-base"
import * as Config from "effect/Config"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"

/** The Prometheus reader bound to the SDK's meter provider. */
export class PrometheusReader extends Context.Tag("@switchyard-ts/server/PrometheusReader")<
  PrometheusReader,
  PrometheusExporter
>() {}

const ReaderLive = Layer.sync(PrometheusReader, () => new PrometheusExporter({ preventServerStart: true }))

const SdkLive = NodeSdk.layer(
  Effect.gen(function*() {
    const metricReader = yield* PrometheusReader
    const serviceName = yield* Config.string("OTEL_SERVICE_NAME").pipe(Config.withDefault("switchyard-server"))
    const endpoint = yield* Config.option(Config.nonEmptyString("OTEL_EXPORTER_OTLP_ENDPOINT"))
    // The exporter reads the standard OTEL_EXPORTER_OTLP_* variables itself.
    const spanProcessor = Option.map(endpoint, () => new BatchSpanProcessor(new OTLPTraceExporter()))
    return {
      resource: { serviceName },
      metricReader,
      spanProcessor: Option.getOrUndefined(spanProcessor)
    }
  }).pipe(Effect.orDie)
)

/** The telemetry layer: SDK, Prometheus reader (exposed for `/metrics`), optional OTLP traces. */
export const layer: Layer.Layer<PrometheusReader> = Layer.provideMerge(SdkLive, ReaderLive)

const serializer = new PrometheusSerializer()

/** Prometheus text exposition of every metric collected so far. */
export const scrape: Effect.Effect<string, never, PrometheusReader> = Effect.flatMap(PrometheusReader, (reader) =>
  Effect.map(
    Effect.promise(() => reader.collect()),
    ({ resourceMetrics }) => serializer.serialize(resourceMetrics)
  ))
