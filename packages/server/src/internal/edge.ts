/**
 * The lean edge of the LLM endpoints: a `node:http` request listener that runs one Effect program
 * per request on a runtime built once, and writes its {@link Reply} straight to the Node response.
 * Every other request goes to the platform handler of the admin endpoints. What the platform's
 * handler did per request and the LLM endpoints need is done here: the caller's trace context
 * becomes the parent span, a caller that goes away interrupts the request's fiber, and a stream's
 * writes wait for the socket to drain.
 *
 * @internal
 */
import * as Headers from "@effect/platform/Headers"
import * as HttpTraceContext from "@effect/platform/HttpTraceContext"
import * as Relay from "@switchyard-ts/client/Relay"
import * as Effect from "effect/Effect"
import * as FiberId from "effect/FiberId"
import * as Option from "effect/Option"
import * as Runtime from "effect/Runtime"
import type { IncomingMessage, ServerResponse } from "node:http"

/** What an LLM endpoint's pipeline hands to the edge. */
export interface EdgeRequest {
  /** The caller's headers, lower-case names, repeated headers joined by `, `. */
  readonly headers: Readonly<Record<string, string>>
  /** The Node request, whose body the pipeline reads. */
  readonly incoming: IncomingMessage
}

/** The answer of one request, written by the edge. */
export type Reply =
  | {
    readonly _tag: "Json"
    readonly status: number
    readonly headers: Readonly<Record<string, string>>
    readonly body: unknown
  }
  | {
    readonly _tag: "Sse"
    /** Its headers; `content-type` is `text/event-stream` unless they set one. */
    readonly headers: Readonly<Record<string, string>>
    /** The SSE text in order; failures are already encoded as the format's error events. */
    readonly events: Relay.Relay<string, never>
  }

/** A JSON reply. */
export const json = (body: unknown, status = 200, headers: Readonly<Record<string, string>> = {}): Reply => ({
  _tag: "Json",
  status,
  headers,
  body
})

/** An SSE reply (status 200). */
export const sse = (events: Relay.Relay<string, never>, headers: Readonly<Record<string, string>> = {}): Reply => ({
  _tag: "Sse",
  headers,
  events
})

/** The status a reply is answered with. */
export const statusOf = (reply: Reply): number => (reply._tag === "Json" ? reply.status : 200)

/** Node's request headers as a plain record of strings (repeated values joined by `, `). */
export const headersOf = (incoming: IncomingMessage): Record<string, string> => {
  const headers: Record<string, string> = {}
  const raw = incoming.headers
  for (const name in raw) {
    const value = raw[name]
    if (typeof value === "string") headers[name] = value
    else if (value !== undefined) headers[name] = value.join(", ")
  }
  return headers
}

/** Waits until `res` can take more data (after a `write` returned `false`), or it closed. */
const drained = (res: ServerResponse) =>
  Effect.async<void>((resume) => {
    const done = () => {
      res.off("drain", done)
      res.off("close", done)
      resume(Effect.void)
    }
    res.on("drain", done)
    res.on("close", done)
    return Effect.sync(() => {
      res.off("drain", done)
      res.off("close", done)
    })
  })

/**
 * Writes `reply` to `res`: a JSON body with its `content-length`, or an SSE stream written event by
 * event (waiting for the socket to drain when Node's buffer is full) and ended after the last.
 * `record` (the request's log line and counters) runs once the caller has its answer's first bytes
 * — after the JSON body, after the first SSE write — so it is never on the caller's path; and at the
 * latest when the writing ends, however it ends. `settle` (the routing log's response line) runs
 * once, after the writing ended, however it ended.
 */
export const write = (
  res: ServerResponse,
  reply: Reply,
  record: Effect.Effect<void>,
  settle: Effect.Effect<void> = Effect.void
): Effect.Effect<void> => {
  if (reply._tag === "Json") {
    return Effect.zipRight(
      Effect.sync(() => {
        const body = Buffer.from(JSON.stringify(reply.body), "utf8")
        res.writeHead(reply.status, {
          ...reply.headers,
          "content-type": "application/json",
          "content-length": String(body.length)
        })
        res.end(body)
      }),
      Effect.zipRight(record, settle)
    )
  }
  return Effect.suspend(() => {
    let recorded = false
    const recordOnce = Effect.suspend(() => {
      if (recorded) return Effect.void
      recorded = true
      return record
    })
    res.writeHead(200, { "content-type": "text/event-stream", ...reply.headers })
    // One write per batch of events (all the events one upstream read produced), not per event,
    // made from the upstream's callback while the stream flows; the fiber runs only to record the
    // request after the first write, to wait for the socket to drain, or to stop once it closed.
    const written = Relay.runWrites(
      reply.events,
      (texts) => {
        if (res.destroyed) return false
        let text = ""
        for (const piece of texts) text += piece
        if (text === "") return true
        return res.write(text) && recorded
      },
      Effect.suspend(() => {
        if (res.destroyed) return Effect.interrupt
        const next = res.writableNeedDrain ? drained(res) : Effect.void
        return recorded ? next : Effect.zipRight(recordOnce, next)
      })
    )
    return Effect.ensuring(
      written,
      Effect.zipRight(recordOnce, Effect.zipRight(Effect.sync(() => res.end()), settle))
    )
  })
}

/** The fiber id that interrupts the request of a caller that went away. */
const callerGone = FiberId.make(-1, 0)

/** What an endpoint's pipeline produced: the reply, and the request's record written after it. */
export interface Handled {
  readonly reply: Reply
  /** The request's log line and counters (see {@link write}). */
  readonly record: Effect.Effect<void>
  /** The request's routing log line, once its answer was written (see {@link write}); none without the log. */
  readonly settle?: Effect.Effect<void> | undefined
}

/** An LLM endpoint of the edge: its pipeline, from the request to the reply. */
export type Endpoint = (request: EdgeRequest) => Effect.Effect<Handled>

/**
 * The scheme and authority of an absolute-form request target, up to the path's `/`: the rule of
 * the platform router that serves the admin endpoints, so every endpoint reads a target alike.
 */
const absoluteForm = /^https?:\/\/.*?\//

/**
 * The path of a request target, without its query (`/v1/messages?beta=true` is `/v1/messages`);
 * an absolute-form target (`http://host/v1/messages`, RFC 9112 §3.2.2) is served at its path, as
 * `new URL(req.url, base)` reads it.
 */
export const pathOf = (url: string | undefined): string => {
  if (url === undefined) return "/"
  const origin = url.charCodeAt(0) === 47 ? url : url.replace(absoluteForm, "/")
  const query = origin.indexOf("?")
  return query === -1 ? origin : origin.slice(0, query)
}

/**
 * Where the LLM endpoints are: the endpoint of a `POST` to a request path, if any. An exact path is
 * one map lookup; a path family (the Gemini models) is asked only when that misses.
 */
export type Dispatch = (path: string) => Endpoint | undefined

/**
 * The server's request listener: `POST` to a path `dispatch` knows runs that endpoint as one fiber
 * on `runtime` (the caller's `traceparent` or B3 headers, when present, as the parent span);
 * anything else goes to `fallback` (the admin endpoints). A response closed before it was ended
 * (the caller went away) interrupts the fiber, which aborts the upstream call it is in.
 */
export const listener = <R>(
  runtime: Runtime.Runtime<R>,
  dispatch: Dispatch,
  fallback: (incoming: IncomingMessage, res: ServerResponse) => void
) => {
  const runFork = Runtime.runFork(runtime)
  return (incoming: IncomingMessage, res: ServerResponse): void => {
    const endpoint = incoming.method === "POST" ? dispatch(pathOf(incoming.url)) : undefined
    if (endpoint === undefined) {
      fallback(incoming, res)
      return
    }
    const headers = headersOf(incoming)
    const handled = Effect.flatMap(
      endpoint({ headers, incoming }),
      (done) => write(res, done.reply, done.record, done.settle)
    )
    const parent = "traceparent" in headers || "b3" in headers || "x-b3-traceid" in headers
      ? HttpTraceContext.fromHeaders(Headers.fromInput(headers))
      : Option.none()
    const fiber = runFork(Option.isSome(parent) ? Effect.withParentSpan(handled, parent.value) : handled)
    res.on("close", () => {
      if (!res.writableEnded) fiber.unsafeInterruptAsFork(callerGone)
    })
  }
}
