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
import * as Layer from "effect/Layer"
import { createServer } from "node:http"
import * as UpstreamClient from "@switchyard-ts/client/UpstreamClient"
import * as Deployment from "@switchyard-ts/config/Deployment"
import * as Api from "./Api.js"
import * as Telemetry from "./Telemetry.js"

/** Options of the server. */
export interface Options extends Api.Options {
  readonly host: string
  readonly port: number
}

/** The Router of a deployment with a real upstream client (undici, keep-alive pool per origin). */
export const routerLayer = (deployment: Deployment.Deployment) =>
  Deployment.layer(deployment).pipe(
    Layer.provide(UpstreamClient.layer),
    Layer.provide(NodeHttpClient.layerUndici)
  )

/** The API served on whatever `HttpServer` is provided. */
export const layerApp = (deployment: Deployment.Deployment, options: Api.Options = {}) =>
  HttpLayerRouter.serve(Api.layer(options), { disableListenLog: true, disableLogger: true }).pipe(
    Layer.provide(routerLayer(deployment)),
    Layer.provide(Telemetry.layer)
  )

/** Prints `listening on http://HOST:PORT` once the server is bound. */
export const listeningLine = HttpServer.addressFormattedWith((address) => Console.log(`listening on ${address}`))

/** The whole server bound to `options.host:options.port`. */
export const layer = (deployment: Deployment.Deployment, options: Options) =>
  Layer.mergeAll(layerApp(deployment, options), Layer.effectDiscard(listeningLine)).pipe(
    Layer.provide(NodeHttpServer.layer(createServer, { host: options.host, port: options.port }))
  )
