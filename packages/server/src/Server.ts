/**
 * The switchyard HTTP server as Layers: the API over a deployment's Router, with telemetry, on a
 * Node HTTP server of its own (LLM endpoints on the lean edge, the rest on the platform router).
 * `layerApp` binds a loopback port by default and describes it as the `HttpServer` (tests, the
 * drill); `layer` binds the configured host and port and prints the `listening on` line.
 */
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as Undici from "@effect/platform-node/Undici"
import * as HttpLayerRouter from "@effect/platform/HttpLayerRouter"
import * as HttpServer from "@effect/platform/HttpServer"
import type * as Breaker from "@switchyard-ts/client/Breaker"
import * as UpstreamClient from "@switchyard-ts/client/UpstreamClient"
import * as UpstreamTransport from "@switchyard-ts/client/UpstreamTransport"
import * as Deployment from "@switchyard-ts/config/Deployment"
import * as ServerTable from "@switchyard-ts/config/ServerTable"
import * as Judge from "@switchyard-ts/routing/Judge"
import * as JudgeHealth from "@switchyard-ts/routing/JudgeHealth"
import * as Pricing from "@switchyard-ts/routing/Pricing"
import * as ResponseState from "@switchyard-ts/routing/ResponseState"
import * as Router from "@switchyard-ts/routing/Router"
import * as RouteTypes from "@switchyard-ts/routing/RouteTypes"
import * as SessionStore from "@switchyard-ts/routing/SessionStore"
import * as Stats from "@switchyard-ts/routing/Stats"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as Option from "effect/Option"
import { createServer, type Server } from "node:http"
import { createServer as createHttpsServer } from "node:https"
import { Readable } from "node:stream"
import * as Api from "./Api.js"
import * as Auth from "./internal/auth.js"
import * as Edge from "./internal/edge.js"
import * as Judges from "./internal/judges.js"
import * as LineBatches from "./internal/lineBatches.js"
import * as Logfmt from "./internal/logfmt.js"
import * as Reload from "./internal/reload.js"
import * as Tracing from "./internal/tracing.js"
import * as RedisBreakerStore from "./RedisBreakerStore.js"
import * as RedisSessionStore from "./RedisSessionStore.js"
import * as RedisSessionTotals from "./RedisSessionTotals.js"
import * as RoutingLog from "./RoutingLog.js"
import type * as SessionTotals from "./SessionTotals.js"
import * as Telemetry from "./Telemetry.js"

/** A certificate chain and its private key (PEM), to serve HTTPS. */
export interface TlsMaterial {
  readonly cert: string | Buffer
  readonly key: string | Buffer
}

/** Options of the server. */
export interface Options extends Api.Options {
  readonly host: string
  readonly port: number
  /** Serve HTTPS with this certificate and key (default: plain HTTP). */
  readonly tls?: TlsMaterial | undefined
  /** Length of the queue of pending connections passed to `listen` (default {@link defaultBacklog}). */
  readonly backlog?: number | undefined
  /** Write the routing log (`--routing-log-file`) with these options (default: no routing log). */
  readonly routingLog?: RoutingLog.Options | undefined
  /** The model prices (`--pricing-file`; see `AppOptions.prices`). */
  readonly prices?: Pricing.Table | undefined
  /**
   * How long shutdown lets in-flight requests run before closing their connections
   * (`--shutdown-timeout`; default: until they end).
   */
  readonly shutdownTimeoutMs?: number | undefined
  /**
   * Reload the deployment on `SIGHUP` from this (the CLI: its `--config` file read and validated
   * again; see `Deployment.Reloader`). Default: no reload (and no `SIGHUP` listener of its own).
   */
  readonly reload?: Effect.Effect<Deployment.Deployment, { readonly message: string }> | undefined
  /**
   * Re-read the pricing table from this on `SIGHUP`, with the deployment (the CLI: its
   * `--pricing-file` read and validated again): a reload applies both or, when either fails,
   * neither. Only with `reload`.
   */
  readonly reloadPrices?: Effect.Effect<Pricing.Table, { readonly message: string }> | undefined
}

/**
 * The session store a deployment's `[sessions]` table asks for: in memory (bounded by
 * `max_entries` and `ttl_ms`), or shared in Redis (`store = "redis"`, `url`, `ttl_ms`).
 * A `redis` spec without a URL (impossible after `DeploymentToml.parse`) is a defect.
 */
export const sessionStoreLayer = (sessions: Deployment.SessionsSpec): Layer.Layer<SessionStore.SessionStore> =>
  sessionLayers(sessions).store

/** What a deployment's `[sessions]` table gives the server (see {@link sessionLayers}). */
export interface SessionLayers {
  readonly store: Layer.Layer<SessionStore.SessionStore>
  readonly totals: Option.Option<Layer.Layer<SessionTotals.SessionTotals>>
  readonly breakers: Option.Option<Layer.Layer<Breaker.SharedStore>>
}

/**
 * The session store and, when it is Redis, over one connection: the session totals of
 * `/v1/session-stats` kept beside it (`RedisSessionTotals`, same `ttl_ms`) and the circuit
 * breakers' shared state (`RedisBreakerStore`); with the memory store, neither (the routing log keeps
 * the totals in memory, each breaker is the process's own).
 */
export const sessionLayers = (sessions: Deployment.SessionsSpec): SessionLayers => {
  if (sessions.store !== "redis") {
    return { store: SessionStore.layerMemory(sessions), totals: Option.none(), breakers: Option.none() }
  }
  const connection = Option.match(sessions.url, {
    onNone: () => Layer.die(new Error("[sessions] store = \"redis\" needs a url")),
    onSome: (url) => RedisSessionStore.layerConnection({ url })
  })
  return {
    store: RedisSessionStore.layerOver({ ttlMs: sessions.ttlMs }).pipe(Layer.provide(connection)),
    totals: Option.some(RedisSessionTotals.layer({ ttlMs: sessions.ttlMs }).pipe(Layer.provide(connection))),
    breakers: Option.some(RedisBreakerStore.layer().pipe(Layer.provide(connection)))
  }
}

/** Options of {@link upstreamTransport}. */
export interface UpstreamPoolOptions {
  /** Connections per upstream origin (default {@link upstreamConnectionsPerOrigin}). */
  readonly connections?: number
  /** How long an idle keep-alive connection is kept (default {@link upstreamKeepAliveMs}). */
  readonly keepAliveTimeoutMs?: number
}

/**
 * Upstream connections per origin (scheme + host + port) of the server's HTTP client. Calls beyond
 * it wait in undici's queue for a free connection; the wait counts against the call's `timeout_ms`.
 */
export const upstreamConnectionsPerOrigin = 1024

/**
 * Idle keep-alive timeout of upstream connections (undici's default); an upstream's
 * `Keep-Alive: timeout=N` hint, less 2 s, replaces it.
 */
export const upstreamKeepAliveMs = 4_000

/**
 * `pool` taking a body in pieces (a caller's bytes with what changed spliced in) as a stream that
 * writes them in order, undici's way of sending a body it is not given whole.
 */
const piecewise = (
  pool: Undici.Pool
): UpstreamTransport.DestroyableDispatcher & UpstreamTransport.PiecewiseDispatcher => ({
  dispatch: (options, handler) => pool.dispatch(options, handler),
  dispatchPieces: (options, handler) => pool.dispatch({ ...options, body: Readable.from(options.body) }, handler),
  destroy: () => pool.destroy()
})

/**
 * The server's upstream transport: undici's `dispatch()` over a keep-alive `Pool` per origin
 * (`UpstreamTransport.perOrigin`: kept while the server runs, also when its origin refuses
 * connections), bounded to `connections` (default 1024). The pools are destroyed when the scope
 * closes (bounded by 2 s), which aborts whatever is still in flight. The client sets each
 * request's trace context (that of `libsy.client_call`) itself when tracing is on.
 */
export const upstreamTransport = (options: UpstreamPoolOptions = {}) =>
  UpstreamTransport.layerDispatcher(() =>
    UpstreamTransport.perOrigin((origin) =>
      piecewise(
        new Undici.Pool(origin, {
          connections: options.connections ?? upstreamConnectionsPerOrigin,
          keepAliveTimeout: options.keepAliveTimeoutMs ?? upstreamKeepAliveMs
        })
      )
    )
  )

/** {@link upstreamTransport} with the default pool bounds. */
export const upstreamTransportLayer = upstreamTransport()

/**
 * The Router of a deployment with the default judge, the deployment's session store and a real
 * upstream client (undici, keep-alive pool per origin, {@link upstreamConnectionsPerOrigin}
 * connections at most), whose circuit breakers share their state through `breakers` when given
 * (`sessionLayers(…).breakers`). Without arguments, both come from the deployment's `[sessions]`
 * table, over one Redis connection when it says `store = "redis"`.
 */
export const routerLayer = (
  deployment: Deployment.Deployment,
  sessions?: Layer.Layer<SessionStore.SessionStore>,
  breakers?: Option.Option<Layer.Layer<Breaker.SharedStore>>
) => {
  const own = sessions === undefined
    ? sessionLayers(deployment.sessions)
    : { store: sessions, breakers: Option.none<Layer.Layer<Breaker.SharedStore>>() }
  const shared = breakers ?? own.breakers
  const upstream = Option.match(shared, {
    onNone: () => UpstreamClient.layerTransport,
    onSome: (store) => UpstreamClient.layerTransportShared.pipe(Layer.provide(store))
  })
  return Deployment.layerWith(deployment).pipe(
    Layer.provide(Layer.merge(Judge.layer, own.store)),
    // also exposed: the judge calls the Judge records, which /v1/judges reads
    Layer.provideMerge(JudgeHealth.layer),
    // also exposed: /health reads the circuit breaker states of the one UpstreamClient
    Layer.provideMerge(upstream),
    Layer.provide(upstreamTransportLayer)
  )
}

/**
 * The Responses continuation state of a deployment (`ResponseState`): in memory, its id → target
 * records also in the session store `sessions` when that is Redis (shared by replicas).
 */
export const responseStateLayer = (
  deployment: Deployment.Deployment,
  sessions: Layer.Layer<SessionStore.SessionStore> = sessionStoreLayer(deployment.sessions)
): Layer.Layer<ResponseState.ResponseState> =>
  deployment.sessions.store === "redis"
    ? Layer.effect(
      ResponseState.ResponseState,
      Effect.map(SessionStore.SessionStore, (shared) => ResponseState.make({ shared }))
    ).pipe(Layer.provide(sessions))
    : ResponseState.layer()

/**
 * A fresh `/v1/stats` recorder for `deployment`, with the `algorithm_stats` blocks of its advisor
 * and stage-router routes.
 */
export const statsLayer = (deployment: Deployment.Deployment): Layer.Layer<Stats.Stats> =>
  Stats.layer(deployment.routes.flatMap((route) => RouteTypes.of(route).statsBlocks))

/** Options of `layerApp`. */
export interface AppOptions extends Api.Options {
  /** The telemetry layer (default `Telemetry.layer`); tests pass one with an in-memory exporter. */
  readonly telemetry?: Layer.Layer<Telemetry.PrometheusReader>
  /** Interface to bind (default `127.0.0.1`). */
  readonly host?: string
  /** Port to bind (default 0: any free port; the bound address is the `HttpServer`'s). */
  readonly port?: number
  /** Serve HTTPS with this certificate and key (default: plain HTTP). */
  readonly tls?: TlsMaterial | undefined
  /** Length of the queue of pending connections passed to `listen` (default {@link defaultBacklog}). */
  readonly backlog?: number | undefined
  /** Write the routing log with these options (default: none, and no `/v1/session-stats`). */
  readonly routingLog?: RoutingLog.Options | undefined
  /**
   * How long shutdown lets in-flight requests run before closing their connections, which
   * interrupts them (default: until they end).
   */
  readonly shutdownTimeoutMs?: number | undefined
  /**
   * The model prices (`--pricing-file`, `Pricing.parse`) that cost every call in the routing log,
   * `/v1/session-stats`, `/v1/stats` and the cost metrics (default: none, every cost unknown). The
   * server's `Pricing.Prices` holds it; a reload replaces it.
   */
  readonly prices?: Pricing.Table | undefined
}

/** The default `listen` backlog (as the compatible system's `--backlog`). */
export const defaultBacklog = 65535

/**
 * The API served on `server`: one request listener, which runs the LLM endpoints on the lean edge
 * (`internal/edge.ts`: one fiber per request on a runtime built once) and hands every other request
 * to the platform's handler of the admin endpoints (no platform request logger, no platform
 * `http.server` / `http.client` spans; a caller's `traceparent` kept as the parent). The listener
 * is removed when the layer is released.
 */
const serveOn = (server: Server, options: Api.Options) =>
  Tracing.withoutPlatformSpans(Layer.scopedDiscard(Effect.gen(function*() {
    const router = yield* Router.Router
    const stats = yield* Stats.Stats
    const log = yield* RoutingLog.RoutingLog
    const responses = yield* ResponseState.ResponseState
    yield* Telemetry.seed(router.routes)
    yield* Auth.seed(Auth.make(options.inboundAuth))
    const admin = yield* HttpLayerRouter.toHttpEffect(Api.adminLayer(options))
    const fallback = yield* NodeHttpServer.makeHandler(Tracing.parentFromHeaders(admin))
    const runtime = yield* Effect.runtime<never>()
    const upstream = yield* UpstreamClient.UpstreamClient
    const endpoints = Api.llmDispatch(router, stats, upstream, options, log, responses)
    const listener = Edge.listener(runtime, endpoints, fallback)
    server.on("request", listener)
    yield* Effect.addFinalizer(() => Effect.sync(() => server.off("request", listener)))
  })))

/**
 * The whole API on a Node server of its own (HTTPS with `options.tls`), bound to
 * `options.host:options.port` (default `127.0.0.1`, any free port) with `options.backlog`, which
 * the provided `HttpServer` describes (its `address`). Inbound auth follows the deployment's
 * `[server]` table unless `options.inboundAuth` replaces it. With `options.routingLog`, the routing
 * log is written; it is built first and closed last, so shutdown flushes it after the last request.
 */
export const layerApp = (deployment: Deployment.Deployment, options: AppOptions = {}) => {
  const server = createNodeServer(options.tls, deployment.server.timeouts)
  const fallbackClient = options.fallbackClient ?? deployment.fallbackClient
  const api: Api.Options = {
    ...options,
    judges: Judges.listOf(deployment),
    inboundAuth: options.inboundAuth ?? deployment.server,
    ...(fallbackClient === undefined ? {} : { fallbackClient })
  }
  // One session store (one Redis client) for the routes, the shared continuation records, the session
  // totals and the shared circuit breakers.
  const { breakers, store: sessions, totals } = sessionLayers(deployment.sessions)
  const logOptions = options.routingLog
  const routingLog = logOptions === undefined
    ? RoutingLog.layerNoop
    : Option.match(totals, {
      onNone: () => RoutingLog.layer(logOptions),
      onSome: (shared) => RoutingLog.layer(logOptions).pipe(Layer.provide(shared))
    })
  return Layer.merge(serveOn(server, api), drainOnShutdown(server, options.shutdownTimeoutMs)).pipe(
    Layer.provideMerge(
      NodeHttpServer.layer(() => server, {
        host: options.host ?? "127.0.0.1",
        port: options.port ?? 0,
        backlog: options.backlog ?? defaultBacklog
      })
    ),
    Layer.provideMerge(Layer.provideMerge(routerLayer(deployment, sessions, breakers), statsLayer(deployment))),
    Layer.provide(responseStateLayer(deployment, sessions)),
    Layer.provide(options.telemetry ?? Telemetry.layer),
    Layer.provide(routingLog),
    // one holder for the stats, the routing log and a reload
    Layer.provideMerge(Pricing.layer(options.prices ?? Pricing.emptyTable))
  )
}

/**
 * The server's logger: logfmt lines like Effect's default logger (the text of its
 * `Logger.logfmtLogger`, made with less work), written to stdout in batches: the lines of up to
 * 20 ms after the first one in one write, instead of one synchronous write per line, and no timer
 * at all while nothing is logged (`LineBatches`); flushed on shutdown.
 */
export const batchedLogger = Logger.replaceScoped(
  Logger.defaultLogger,
  Effect.map(
    Effect.acquireRelease(
      Effect.sync(() =>
        LineBatches.make((text) => {
          process.stdout.write(text)
        }, 20)
      ),
      (batches) => Effect.sync(batches.close)
    ),
    (batches) => Logger.make((options) => batches.add(Logfmt.logger.log(options)))
  )
)

/**
 * Largest request head (request line and headers) the server reads: 64 KiB, four times Node's
 * default, for callers that send long tokens or many trace headers. A larger head is answered
 * `431 Request Header Fields Too Large` by Node itself (no body) and the connection is closed.
 */
export const maxHeaderSize = 64 * 1024

/**
 * The Node server behind {@link layer}, with the {@link maxHeaderSize} limit and the connection
 * `timeouts` (the `[server]` table's; default Node's own, `ServerTable.defaultTimeouts`): HTTPS
 * (`node:https`) with `tls`, plain HTTP without.
 */
export const createNodeServer = (
  tls?: TlsMaterial,
  timeouts: ServerTable.Timeouts = ServerTable.defaultTimeouts
): Server => {
  const options = {
    maxHeaderSize,
    keepAliveTimeout: timeouts.keepAliveTimeoutMs,
    headersTimeout: timeouts.headersTimeoutMs,
    requestTimeout: timeouts.requestTimeoutMs
  }
  return tls === undefined ? createServer(options) : createHttpsServer({ ...options, ...tls })
}

/** Prints `listening on http://HOST:PORT` (`https://` with `tls`) once the server is bound. */
export const listeningLine = (tls: boolean) =>
  HttpServer.addressWith((address) =>
    Console.log(
      `listening on ${
        address._tag === "UnixAddress"
          ? `unix://${address.path}`
          : `${tls ? "https" : "http"}://${address.hostname}:${address.port}`
      }`
    )
  )

/**
 * The whole server bound to `options.host:options.port`, printing its `listening on` line. The
 * Node server sits between the API and the router so that, on shutdown, it stops accepting and
 * drains in-flight requests while the router and its upstream connection pool are still alive.
 * With `options.reload`, `SIGHUP` reloads the deployment (`Deployment.Reloader`), and with
 * `options.reloadPrices` the pricing table too.
 */
export const layer = (deployment: Deployment.Deployment, options: Options) =>
  Layer.merge(
    Layer.effectDiscard(listeningLine(options.tls !== undefined)),
    options.reload === undefined ? Layer.empty : Reload.onHangup(options.reload, options.reloadPrices)
  ).pipe(Layer.provide(layerApp(deployment, options)))

/**
 * The bounded drain, as a finalizer that runs before the Node server's own (which stops accepting
 * and waits for every connection to end): keep-alive connections are closed as soon as they become
 * idle, so the drain ends when the last in-flight response is sent rather than when keep-alive
 * timers expire; after `timeoutMs` every connection is closed, which interrupts what still runs.
 * The timers are unref'd: they never keep the process alive.
 */
const drainOnShutdown = (server: Server, timeoutMs: number | undefined) =>
  Layer.scopedDiscard(Effect.addFinalizer(() =>
    Effect.sync(() => {
      server.closeIdleConnections()
      setInterval(() => server.closeIdleConnections(), 20).unref()
      // Node fires a longer timer at once; its largest delay (about 24.8 days) stands in for longer ones.
      if (timeoutMs !== undefined) {
        setTimeout(() => server.closeAllConnections(), Math.min(timeoutMs, 2 ** 31 - 1)).unref()
      }
    })
  ))
