/**
 * The `UpstreamTransport` service: the callback-level I/O seam under `UpstreamClient`. One
 * `dispatch` sends one HTTP request and reports its answer through a handler (headers, body
 * chunks, end or error), modelled on undici's dispatcher handler; the caller gets a
 * {@link TransportControl} to abort the exchange or pause and resume the body (backpressure).
 * Deadlines, retries, decoding and typed failures live above it, in one place for every
 * transport.
 *
 * Two transports:
 * - {@link fromDispatcher} / {@link layerDispatcher}: a thin adapter over an undici `Agent` (or
 *   any object with its `dispatch`), used by the server: no Effect fibers, streams or
 *   `AbortSignal`s per request. Structurally typed, so this package does not import undici.
 * - {@link fromHttpClient} / {@link layerHttpClient}: an adapter over any platform `HttpClient`
 *   (`FetchHttpClient.layer`, `NodeHttpClient.layerUndici`, scripted test clients), run as if in
 *   the calling fiber (its span, tracer and services), so the client's own span and trace
 *   propagation behave as when calling the `HttpClient` directly.
 */
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as FiberId from "effect/FiberId"
import * as FiberRef from "effect/FiberRef"
import * as FiberRefs from "effect/FiberRefs"
import * as Layer from "effect/Layer"
import * as Predicate from "effect/Predicate"
import * as Runtime from "effect/Runtime"
import * as Stream from "effect/Stream"
import * as Failure from "./internal/failure.js"

/** One request: where, how, and its (already encoded) body. */
export interface TransportRequest {
  /** Scheme, host and port: `https://api.example.com`. */
  readonly origin: string
  /** Path and query: `/v1/chat/completions`. */
  readonly path: string
  readonly method: "POST" | "GET"
  /** Lower-case names; `content-length` is the transport's to set. */
  readonly headers: Readonly<Record<string, string>>
  /**
   * The body: a string, or its bytes in pieces (e.g. a caller's body with what changed spliced in,
   * `RawJson.encode`) written in order without being joined first.
   */
  readonly body: string | ReadonlyArray<Uint8Array>
  /**
   * The calling fiber's `FiberRefs` (services, current span, tracer settings). A transport that
   * runs Effects (the `HttpClient` adapter) runs them with these; the undici one ignores them.
   * Read it inside `dispatch`: it is the calling fiber's state at that moment, copied on each read.
   */
  readonly fiberRefs: FiberRefs.FiberRefs
}

/**
 * What a transport reports, in this order: `onHeaders` once, then `onData` per body chunk, then
 * `onComplete`; or `onError` at any point. Nothing is reported after `abort()`, after
 * `onComplete` or after `onError`. Callbacks may run synchronously inside `dispatch`.
 */
export interface TransportHandler {
  /** The final (non-1xx) status and headers (lower-case names; repeated ones joined by `, `). */
  readonly onHeaders: (status: number, headers: Readonly<Record<string, string>>) => void
  readonly onData: (chunk: Uint8Array) => void
  readonly onComplete: () => void
  /**
   * The exchange failed (connection refused or reset, body cut): `reason` is short and
   * secret-free (`connection failed (ECONNREFUSED)`), fit for a `TransportError`.
   */
  readonly onError: (reason: string) => void
}

/** The caller's hold on one exchange. Every method may be called at any time, also repeatedly. */
export interface TransportControl {
  /** Stops the exchange and releases its connection (a request still queued is never sent). */
  readonly abort: () => void
  /** Stops reading the body until `resume` (the socket's receive window fills, the upstream waits). */
  readonly pause: () => void
  readonly resume: () => void
  /**
   * Completes once the exchange let go of its resources after `abort`, `onComplete` or `onError`
   * (the `HttpClient` adapter's fiber has ended; at once for undici, whose `abort` is synchronous).
   * Only meaningful after one of those; the caller awaits it when it releases an exchange.
   */
  readonly released: Effect.Effect<void>
}

/** The seam: send one request, report its answer to `handler`. */
export class UpstreamTransport extends Context.Tag("@switchyard-ts/client/UpstreamTransport")<UpstreamTransport, {
  readonly dispatch: (request: TransportRequest, handler: TransportHandler) => TransportControl
}>() {}

// ---------------------------------------------------------------------------------------------
// undici

/** The part of an undici `DispatchController` the adapter uses. */
export interface DispatchController {
  abort(reason: Error): void
  pause(): void
  resume(): void
}

/** The undici dispatch handler the adapter passes (undici 7's controller-based handler API). */
export interface DispatchHandler {
  onRequestStart(controller: DispatchController, context: unknown): void
  onResponseStart(
    controller: DispatchController,
    statusCode: number,
    headers: Readonly<Record<string, string | ReadonlyArray<string> | undefined>>,
    statusMessage?: string
  ): void
  onResponseData(controller: DispatchController, chunk: Uint8Array): void
  onResponseEnd(controller: DispatchController, trailers: unknown): void
  onResponseError(controller: DispatchController, error: Error): void
}

/** One request as a dispatcher takes it. */
export interface DispatchOptions<Body> {
  readonly origin: string
  readonly path: string
  readonly method: "POST" | "GET"
  readonly headers: Readonly<Record<string, string>>
  readonly body: Body
}

/** What the adapter needs of an undici `Agent` (or `Pool`, `Client`): its `dispatch`. */
export interface Dispatcher {
  dispatch(options: DispatchOptions<string | Uint8Array>, handler: DispatchHandler): boolean
}

/**
 * A dispatcher that can also send a body given in pieces without joining them first (the server's
 * adapter writes them as a stream); a plain {@link Dispatcher} is given the pieces joined.
 */
export interface PiecewiseDispatcher extends Dispatcher {
  readonly dispatchPieces: (options: DispatchOptions<ReadonlyArray<Uint8Array>>, handler: DispatchHandler) => boolean
}

const isPiecewise = (dispatcher: Dispatcher): dispatcher is PiecewiseDispatcher =>
  "dispatchPieces" in dispatcher && typeof dispatcher.dispatchPieces === "function"

/** A {@link Dispatcher} that owns connections: destroyed when the transport layer's scope closes. */
export interface DestroyableDispatcher extends Dispatcher {
  destroy(): Promise<void>
}

const errorCode = (error: unknown): string =>
  Predicate.hasProperty(error, "code") && typeof error.code === "string" && /^[A-Z][A-Z0-9_]{1,40}$/.test(error.code)
    ? ` (${error.code})`
    : ""

const abortReason = new Error("aborted by the caller")

const headerRecord = (
  headers: Readonly<Record<string, string | ReadonlyArray<string> | undefined>>
): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const name in headers) {
    const value = headers[name]
    if (value === undefined) continue
    out[name.toLowerCase()] = typeof value === "string" ? value : value.join(", ")
  }
  return out
}

/**
 * An exchange over undici's `dispatch`: one handler object, no per-request fiber, stream or
 * `AbortSignal`. An abort before undici started the request (it waits in the pool's queue)
 * takes effect as soon as it starts; it is then never written to a socket.
 */
class UndiciExchange implements DispatchHandler, TransportControl {
  controller: DispatchController | undefined = undefined
  aborted = false
  paused = false
  done = false
  headersSeen = false
  constructor(readonly handler: TransportHandler) {}

  onRequestStart(controller: DispatchController): void {
    this.controller = controller
    if (this.aborted) controller.abort(abortReason)
    else if (this.paused) controller.pause()
  }
  onResponseStart(
    _controller: DispatchController,
    statusCode: number,
    headers: Readonly<Record<string, string | ReadonlyArray<string> | undefined>>
  ): void {
    if (this.aborted || this.done || statusCode < 200) return
    this.headersSeen = true
    this.handler.onHeaders(statusCode, headerRecord(headers))
  }
  onResponseData(_controller: DispatchController, chunk: Uint8Array): void {
    if (!this.aborted && !this.done) this.handler.onData(chunk)
  }
  onResponseEnd(): void {
    if (this.aborted || this.done) return
    this.done = true
    this.handler.onComplete()
  }
  onResponseError(_controller: DispatchController, error: Error): void {
    if (this.aborted || this.done) return
    this.done = true
    this.handler.onError(
      this.headersSeen ? `response body could not be read${errorCode(error)}` : `connection failed${errorCode(error)}`
    )
  }
  readonly abort = (): void => {
    if (this.aborted) return
    this.aborted = true
    if (!this.done) this.controller?.abort(abortReason)
  }
  readonly pause = (): void => {
    this.paused = true
    this.controller?.pause()
  }
  readonly resume = (): void => {
    this.paused = false
    this.controller?.resume()
  }
  readonly released: Effect.Effect<void> = Effect.void
}

const sizeOf = (pieces: ReadonlyArray<Uint8Array>): number => pieces.reduce((size, piece) => size + piece.length, 0)

/**
 * Bodies up to this size are joined and sent whole even to a {@link PiecewiseDispatcher}: copying a
 * small body costs less than writing its pieces as a stream (one socket write instead of one per
 * piece, and no stream machinery); larger bodies are written piece by piece, never copied whole.
 */
export const joinedUpTo = 64 * 1024

/** Pieces joined into one array (the platform client and a plain dispatcher take one). */
const joined = (pieces: ReadonlyArray<Uint8Array>, size = sizeOf(pieces)): Uint8Array => {
  if (pieces.length === 1 && pieces[0] !== undefined) return pieces[0]
  const out = new Uint8Array(size)
  let at = 0
  for (const piece of pieces) {
    out.set(piece, at)
    at += piece.length
  }
  return out
}

/**
 * The transport over an undici dispatcher (an `Agent` pools connections per origin and keeps
 * them alive). A `dispatch` that throws (an invalid origin) is reported as `onError`.
 */
export const fromDispatcher = (dispatcher: Dispatcher): UpstreamTransport["Type"] =>
  UpstreamTransport.of({
    dispatch: (request, handler) => {
      const exchange = new UndiciExchange(handler)
      try {
        const { body, headers, method, origin, path } = request
        if (typeof body === "string") dispatcher.dispatch({ origin, path, method, headers, body }, exchange)
        else {
          const size = sizeOf(body)
          if (size > joinedUpTo && isPiecewise(dispatcher)) {
            // pieces are written as they are, with their total length (no chunked encoding)
            const length = { ...headers, "content-length": String(size) }
            dispatcher.dispatchPieces({ origin, path, method, headers: length, body }, exchange)
          } else dispatcher.dispatch({ origin, path, method, headers, body: joined(body, size) }, exchange)
        }
      } catch (error) {
        if (!exchange.done) {
          exchange.done = true
          handler.onError(`connection failed${errorCode(error)}`)
        }
      }
      return exchange
    }
  })

/**
 * One dispatcher per origin, made by `make` on the origin's first request (an undici `Pool`) and
 * kept until {@link DestroyableDispatcher.destroy} destroys them all. Unlike undici's `Agent`,
 * which closes an origin's pool when a connection to it fails and builds a new pool (and client)
 * for the next request, an origin that refuses connections (a judge whose port is closed) costs
 * one connection attempt per request and nothing more. The origins are those of the configured
 * clients, so the table is bounded by the configuration; a pool keeps its idle clients (a few KB
 * each once their sockets closed, at most its `connections`). After `destroy`, `dispatch` throws.
 */
export const perOrigin = (
  make: (origin: string) => DestroyableDispatcher
): DestroyableDispatcher & PiecewiseDispatcher => {
  const dispatchers = new Map<string, DestroyableDispatcher>()
  let destroyed = false
  const of = (origin: string): DestroyableDispatcher => {
    if (destroyed) throw new Error("the upstream dispatcher was destroyed")
    let dispatcher = dispatchers.get(origin)
    if (dispatcher === undefined) {
      dispatcher = make(origin)
      dispatchers.set(origin, dispatcher)
    }
    return dispatcher
  }
  return {
    dispatch: (options, handler) => of(options.origin).dispatch(options, handler),
    dispatchPieces: (options, handler) => {
      const dispatcher = of(options.origin)
      return isPiecewise(dispatcher)
        ? dispatcher.dispatchPieces(options, handler)
        : dispatcher.dispatch({ ...options, body: joined(options.body) }, handler)
    },
    destroy: () => {
      destroyed = true
      const all = [...dispatchers.values()]
      dispatchers.clear()
      return Promise.all(all.map((dispatcher) => dispatcher.destroy())).then(() => undefined)
    }
  }
}

/**
 * {@link fromDispatcher} over a dispatcher made by `acquire` when the layer is built and
 * destroyed when its scope closes (bounded by 2 s; whatever is still in flight is aborted).
 * The server passes `() => new Undici.Agent({ connections, keepAliveTimeout })`.
 */
export const layerDispatcher = (acquire: () => DestroyableDispatcher): Layer.Layer<UpstreamTransport> =>
  Layer.scoped(
    UpstreamTransport,
    Effect.map(
      Effect.acquireRelease(
        Effect.sync(acquire),
        (dispatcher) =>
          Effect.tryPromise(() => dispatcher.destroy()).pipe(Effect.ignore, Effect.timeoutOption("2 seconds"))
      ),
      fromDispatcher
    )
  )

// ---------------------------------------------------------------------------------------------
// platform HttpClient

const runtimeOf = (fiberRefs: FiberRefs.FiberRefs): Runtime.Runtime<never> =>
  Runtime.make({
    context: FiberRefs.getOrDefault(fiberRefs, FiberRef.currentContext),
    fiberRefs,
    runtimeFlags: Runtime.defaultRuntimeFlags
  })

/**
 * The transport over a platform `HttpClient`: each exchange runs `execute` and reads the body in
 * one fiber forked with the caller's `FiberRefs` (so the platform's `http.client` span, trace
 * propagation and interruption-aborts-the-socket behave as in the calling fiber); `abort`
 * interrupts that fiber, `pause` holds it between body chunks.
 */
export const fromHttpClient = (http: HttpClient.HttpClient): UpstreamTransport["Type"] =>
  UpstreamTransport.of({
    dispatch: (request, handler) => {
      const latch = Effect.unsafeMakeLatch(true)
      const clientRequest = HttpClientRequest.make(request.method)(`${request.origin}${request.path}`).pipe(
        HttpClientRequest.setHeaders(request.headers),
        (r) =>
          request.method === "GET"
            ? r
            : typeof request.body === "string"
            ? HttpClientRequest.bodyText(r, request.body, request.headers["content-type"] ?? "application/json")
            : HttpClientRequest.bodyUint8Array(
              r,
              joined(request.body),
              request.headers["content-type"] ?? "application/json"
            )
      )
      const exchange = Effect.matchEffect(http.execute(clientRequest), {
        onFailure: (error) => Effect.sync(() => handler.onError(Failure.transportReason(error))),
        onSuccess: (response) =>
          Effect.zipRight(
            Effect.sync(() => handler.onHeaders(response.status, response.headers)),
            Effect.matchEffect(
              Stream.runForEach(
                response.stream,
                (chunk) => Effect.zipRight(Effect.sync(() => handler.onData(chunk)), latch.await)
              ),
              {
                onFailure: (error) => Effect.sync(() => handler.onError(Failure.transportReason(error))),
                onSuccess: () => Effect.sync(() => handler.onComplete())
              }
            )
          )
      })
      let aborted = false
      let fiber: Fiber.RuntimeFiber<void> | undefined = undefined
      const control: TransportControl = {
        abort: () => {
          aborted = true
          fiber?.unsafeInterruptAsFork(FiberId.none)
        },
        pause: () => latch.unsafeClose(),
        resume: () => latch.unsafeOpen(),
        released: Effect.suspend(() => (fiber === undefined ? Effect.void : Effect.asVoid(Fiber.await(fiber))))
      }
      // The handler may abort while the fiber's first steps run synchronously, before `fiber` is set.
      fiber = Runtime.runFork(runtimeOf(request.fiberRefs))(exchange)
      if (aborted) fiber.unsafeInterruptAsFork(FiberId.none)
      return control
    }
  })

/** {@link fromHttpClient} over the ambient `HttpClient`. */
export const layerHttpClient: Layer.Layer<UpstreamTransport, never, HttpClient.HttpClient> = Layer.effect(
  UpstreamTransport,
  Effect.map(HttpClient.HttpClient, fromHttpClient)
)
