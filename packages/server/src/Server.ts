/**
 * The switchyard HTTP server as Layers: the API over a deployment's Router, with telemetry, on a
 * Node HTTP server. `layerApp` leaves the `HttpServer` to the caller (tests use
 * `NodeHttpServer.layerTest`); `layer` binds a host and port.
 */
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as HttpLayerRouter from "@effect/platform/HttpLayerRouter"
import * as HttpServer from "@effect/platform/HttpServer"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as Option from "effect/Option"
import { createServer, type Server } from "node:http"
import * as UpstreamClient from "@switchyard-ts/client/UpstreamClient"
import * as Deployment from "@switchyard-ts/config/Deployment"
import * as Judge from "@switchyard-ts/routing/Judge"
import * as SessionStore from "@switchyard-ts/routing/SessionStore"
import * as Api from "./Api.js"
import * as RedisSessionStore from "./RedisSessionStore.js"
import * as Telemetry from "./Telemetry.js"

/** Options of the server. */
export interface Options extends Api.Options {
  readonly host: string
  readonly port: number
}

/**
 * The session store a deployment's `[sessions]` table asks for: in memory (bounded by
 * `max_entries` and `ttl_ms`), or shared in Redis (`store = "redis"`, `url`, `ttl_ms`).
 * A `redis` spec without a URL (impossible after `DeploymentToml.parse`) is a defect.
 */
export const sessionStoreLayer = (sessions: Deployment.SessionsSpec): Layer.Layer<SessionStore.SessionStore> =>
  sessions.store === "redis"
    ? Option.match(sessions.url, {
      onNone: () => Layer.die(new Error("[sessions] store = \"redis\" needs a url")),
      onSome: (url) => RedisSessionStore.layer({ url, ttlMs: sessions.ttlMs })
    })
    : SessionStore.layerMemory(sessions)

/**
 * The Router of a deployment with the default judge, the deployment's session store and a real
 * upstream client (undici, keep-alive pool per origin).
 */
export const routerLayer = (deployment: Deployment.Deployment) =>
  Deployment.layerWith(deployment).pipe(
    Layer.provide(Layer.merge(Judge.layer, sessionStoreLayer(deployment.sessions))),
    // also exposed: /health reads the circuit breaker states of the one UpstreamClient
    Layer.provideMerge(UpstreamClient.layer),
    Layer.provide(NodeHttpClient.layerUndici)
  )

/** Options of `layerApp`. */
export interface AppOptions extends Api.Options {
  /** The telemetry layer (default `Telemetry.layer`); tests pass one with an in-memory exporter. */
  readonly telemetry?: Layer.Layer<Telemetry.PrometheusReader>
}

/** The API served on whatever `HttpServer` is provided. */
export const layerApp = (deployment: Deployment.Deployment, options: AppOptions = {}) =>
  HttpLayerRouter.serve(Api.layer(options), { disableListenLog: true, disableLogger: true }).pipe(
    Layer.provide(routerLayer(deployment)),
    Layer.provide(options.telemetry ?? Telemetry.layer)
  )

/**
 * The server's logger: logfmt lines like Effect's default logger, written to stdout in batches
 * every 20 ms (one write per batch instead of one synchronous write per line); flushed on shutdown.
 */
export const batchedLogger = Logger.replaceScoped(
  Logger.defaultLogger,
  Logger.batched(Logger.logfmtLogger, "20 millis", (lines) =>
    Effect.sync(() => {
      process.stdout.write(`${lines.join("\n")}\n`)
    }))
)

/** Prints `listening on http://HOST:PORT` once the server is bound. */
export const listeningLine = HttpServer.addressFormattedWith((address) => Console.log(`listening on ${address}`))

/**
 * The whole server bound to `options.host:options.port`. The Node server sits between the API and
 * the router so that, on shutdown, it stops accepting and drains in-flight requests while the
 * router and its upstream connection pool are still alive.
 */
export const layer = (deployment: Deployment.Deployment, options: Options) => {
  const server = createServer()
  return Layer.mergeAll(
    HttpLayerRouter.serve(Api.layer(options), { disableListenLog: true, disableLogger: true }),
    Layer.effectDiscard(listeningLine),
    closeIdleOnShutdown(server)
  ).pipe(
    Layer.provide(NodeHttpServer.layer(() => server, { host: options.host, port: options.port })),
    Layer.provide(routerLayer(deployment)),
    Layer.provide(Telemetry.layer)
  )
}

/**
 * While the server drains, close keep-alive connections as soon as they become idle, so the drain
 * ends when the last in-flight response is sent rather than when keep-alive timers expire.
 */
const closeIdleOnShutdown = (server: Server) =>
  Layer.scopedDiscard(Effect.addFinalizer(() =>
    Effect.sync(() => {
      server.closeIdleConnections()
      setInterval(() => server.closeIdleConnections(), 20).unref()
    })
  ))
