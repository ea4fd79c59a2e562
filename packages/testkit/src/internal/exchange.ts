/**
 * One request being answered by the fake upstream ({@link Exchange}) and the I/O every wire
 * encoder shares: real-time sleeps, flushed writes, JSON and SSE responses, content splitting, the
 * usage estimate, and the behaviours whose bytes do not depend on the API (`Stall`, `Garbage`,
 * `Reset`, `Raw`) or are OpenAI's on both OpenAI APIs (`Status`).
 *
 * @internal
 */
import type { Usage } from "@switchyard-ts/protocol/OpenAiChat"
import * as Effect from "effect/Effect"
import type * as Http from "node:http"
import type { Garbage, Raw, Reset, Stall, Status } from "./behaviour.js"

/** The wire format a chat route speaks. */
export type Api = "openai" | "anthropic" | "responses" | "gemini"

/** What a request handler needs to answer. */
export interface Exchange {
  readonly api: Api
  readonly req: Http.IncomingMessage
  readonly res: Http.ServerResponse
  readonly id: number
  readonly model: string
  readonly method: string
  readonly path: string
  readonly headers: Readonly<Record<string, string>>
  readonly body: unknown
  readonly bodyText: string
  readonly at: number
  /** The body's `stream: true` (Gemini: the `streamGenerateContent` method). */
  readonly stream: boolean
  /** The body's `stream_options.include_usage: true` (OpenAI Chat only; the others always send usage). */
  readonly includeUsage: boolean
  /** Mark that the behaviour itself is about to cut the connection. */
  readonly cutting: () => void
}

/** Real-time sleep; the timer is cleared on interruption. */
export const sleep = (ms: number): Effect.Effect<void> =>
  ms <= 0 ? Effect.void : Effect.async<void>((resume) => {
    const timer = setTimeout(() => resume(Effect.void), ms)
    return Effect.sync(() => clearTimeout(timer))
  })

/** Write and wait until the bytes were handed to the socket. */
export const write = (res: Http.ServerResponse, data: string): Effect.Effect<void> =>
  Effect.async<void>((resume) => {
    res.write(data, () => resume(Effect.void))
  })

/** Answer `statusCode` with a JSON `body` (already text) and a `content-length`. */
export const sendJson = (
  res: Http.ServerResponse,
  statusCode: number,
  body: string,
  headers: Readonly<Record<string, string>> = {}
): Effect.Effect<void> =>
  Effect.sync(() => {
    res.writeHead(statusCode, {
      "content-type": "application/json",
      "content-length": String(Buffer.byteLength(body)),
      ...headers
    })
    res.end(body)
  })

/** OpenAI's error envelope, `{"error":{"message","type","code"}}`, as text. */
export const errorEnvelope = (message: string, type: string, code: string | null): string =>
  JSON.stringify({ error: { message, type, code } })

/** 200 SSE headers, flushed at once. */
export const openSse = (res: Http.ServerResponse): Effect.Effect<void> =>
  Effect.sync(() => {
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" })
    res.flushHeaders()
  })

/** A rough usage estimate: a token per 4 bytes of request body, a token per word of content. */
export const estimateUsage = (ex: Exchange, content: string): Usage => {
  const prompt = Math.ceil(ex.bodyText.length / 4)
  const completion = content.split(/\s+/).filter((w) => w.length > 0).length
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion }
}

/** Split into at most `parts` pieces on code-point boundaries; no pieces for "". */
export const split = (content: string, parts: number): ReadonlyArray<string> => {
  const points = Array.from(content)
  const size = Math.max(1, Math.ceil(points.length / parts))
  const out: Array<string> = []
  for (let i = 0; i < points.length; i += size) out.push(points.slice(i, i + size).join(""))
  return out
}

/** What `Echo` answers as content: the request as received. */
export const echoContent = (ex: Exchange): string =>
  JSON.stringify({ method: ex.method, path: ex.path, headers: ex.headers, body: ex.body })

/** The `Retry-After` header of a `Status`, when it has one. */
export const retryAfterHeader = (b: Status): Record<string, string> =>
  b.retryAfter === undefined ? {} : { "retry-after": b.retryAfter }

/** Cut the connection with `destroy`, marked as the behaviour's own cut (not `closedEarly`). */
export const cut = (ex: Exchange, destroy: () => void): Effect.Effect<void> =>
  Effect.sync(() => {
    ex.cutting()
    destroy()
  })

/** `Status` in OpenAI's envelope (both OpenAI APIs): `body` verbatim when given. */
export const openAiStatus = (ex: Exchange, b: Status): Effect.Effect<void> => {
  const body = b.body ?? errorEnvelope(
    b.message ?? `fake upstream answered ${b.status}`,
    b.type ?? (b.status >= 500 ? "server_error" : "invalid_request_error"),
    b.code ?? null
  )
  return sendJson(ex.res, b.status, body, retryAfterHeader(b))
}

/** The behaviours whose bytes are the same on every API. */
export type WireNeutral = Stall | Garbage | Reset | Raw

/**
 * `Stall` (never answer), `Garbage` (200 with a body that is not JSON), `Reset` (destroy the
 * socket) and `Raw` (its `body`, or its `events` as SSE for `stream: true`), whatever the API.
 */
export const performNeutral = (behaviour: WireNeutral, ex: Exchange): Effect.Effect<void> => {
  switch (behaviour._tag) {
    case "Stall":
      return Effect.never
    case "Garbage":
      return sendJson(ex.res, 200, behaviour.body)
    case "Reset":
      return cut(ex, () => ex.req.socket.destroy())
    case "Raw":
      return ex.stream
        ? Effect.gen(function*() {
          yield* openSse(ex.res)
          for (const { data, event } of behaviour.events) {
            yield* write(ex.res, `${event === undefined ? "" : `event: ${event}\n`}data: ${data}\n\n`)
          }
          yield* Effect.sync(() => ex.res.end())
        })
        : sendJson(ex.res, 200, behaviour.body)
  }
}
