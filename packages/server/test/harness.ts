import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import type * as HttpClientResponse from "@effect/platform/HttpClientResponse"
import * as HttpServer from "@effect/platform/HttpServer"
import type { InMemorySpanExporter } from "@opentelemetry/sdk-trace-base"
import * as DeploymentToml from "@switchyard-ts/config/DeploymentToml"
import * as Server from "@switchyard-ts/server/Server"
import * as FakeUpstream from "@switchyard-ts/testkit/FakeUpstream"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as Option from "effect/Option"

/**
 * A real switchyard server on a free loopback port, in front of a fresh fake upstream. `toml`
 * receives the fake upstream's base URL.
 */
export const startServer = (
  toml: (upstreamUrl: string) => string,
  options: Server.AppOptions = {},
  logger: Option.Option<Logger.Logger<unknown, void>> = Option.none()
) =>
  Effect.gen(function*() {
    const upstream = yield* FakeUpstream.make()
    const deployment = yield* DeploymentToml.parse(toml(upstream.url))
    const app = Layer.merge(Server.layerApp(deployment, options), NodeHttpClient.layerUndici)
    const context = yield* Layer.build(
      Option.match(logger, {
        onNone: () => app,
        onSome: (l) => app.pipe(Layer.provide(Logger.replace(Logger.defaultLogger, l)))
      })
    )
    const address = Context.get(context, HttpServer.HttpServer).address
    const url = address._tag === "TcpAddress" ? `http://127.0.0.1:${address.port}` : "http://invalid"
    const client = HttpClient.mapRequest(Context.get(context, HttpClient.HttpClient), HttpClientRequest.prependUrl(url))
    return { upstream, client, url, deployment }
  })

/** A deployment with one client on the fake upstream and the usual routes. */
export const basicToml =
  (settings: { readonly timeoutMs?: number; readonly maxRetries?: number } = {}) => (upstreamUrl: string) => `
schema_version = 1

[llm_clients.sim]
format = "openai_chat"
base_url = "${upstreamUrl}"
max_retries = ${settings.maxRetries ?? 0}
${settings.timeoutMs === undefined ? "" : `timeout_ms = ${settings.timeoutMs}`}

[llm_clients.dead]
format = "openai_chat"
base_url = "http://127.0.0.1:9/v1"
max_retries = 0

[targets.weak]
id = "weak-model"
llm_client = "sim"
extra_body = { temperature = 0.5 }

[targets.strong]
id = "strong-model"
llm_client = "sim"

[targets.gone]
id = "gone-model"
llm_client = "dead"

[routes.fast]
id = "fast"
type = "passthrough"
target = "weak"

[routes.mix]
id = "mix"
type = "random"
targets = ["weak", "strong"]
weights = [1, 0]

[routes.unreachable]
id = "unreachable"
type = "passthrough"
target = "gone"

[routes.ping]
id = "ping"
type = "noop"
`

/** A chat request body. */
export const chat = (model: string, extra: Record<string, unknown> = {}) => ({
  model,
  messages: [{ role: "user", content: "hello" }],
  ...extra
})

/** Every finished span of `exporter` as one JSON text (name, attributes, events, status), to search for secrets. */
export const spansText = (exporter: InMemorySpanExporter): string =>
  JSON.stringify(
    exporter.getFinishedSpans().map((s) => ({
      name: s.name,
      attributes: s.attributes,
      events: s.events,
      status: s.status
    }))
  )

/** An answer's status, body text, served model and evidence source (response headers). */
export const routedAnswer = (response: HttpClientResponse.HttpClientResponse) =>
  Effect.map(response.text, (text) => ({
    status: response.status,
    text,
    selected: response.headers["x-switchyard-selected-model"],
    source: response.headers["x-switchyard-evidence-source"]
  }))
