/**
 * The `fallback_client` forwarding of requests no endpoint matches (docs/http-api.md): the request
 * goes, raw, to the client's API root — same method, the caller's end-to-end headers (its
 * `authorization` included, unless it carried the router's own inbound key), the body streamed
 * through — and the upstream's status, end-to-end headers and body come back streamed. Redirects
 * are not followed; nothing of the client but its `base_url` is used (no key, `extra_headers`,
 * retries or deadline). A transport failure before the
 * upstream's headers, or a base URL that cannot be used, is a 502 in the OpenAI envelope that never
 * names the URL.
 *
 * @internal
 */
import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import type * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Effect from "effect/Effect"
import * as Http from "node:http"
import * as Https from "node:https"

/** Path suffixes of a base URL stripped (one of them, the first that matches) to get the API root. */
const rootSuffixes = ["/v1/chat/completions", "/v1/responses", "/v1/messages", "/v1"] as const

/**
 * The upstream URL of a request target (`/path?query`, or absolute-form) on `baseUrl`: the base
 * URL without its fragment and without one trailing `/v1/chat/completions`, `/v1/responses`,
 * `/v1/messages` or `/v1` (trailing `/` ignored) is the API root; the request's path is appended
 * to it (`root + "/" + path`, the path's leading `/` dropped), and the query is the base URL's
 * query then the request's, joined by `&`. Undefined when `baseUrl` is not an absolute http(s) URL.
 */
export const upstreamUrl = (baseUrl: string, target: string): URL | undefined => {
  if (!URL.canParse(baseUrl)) return undefined
  const base = new URL(baseUrl)
  if (base.protocol !== "http:" && base.protocol !== "https:") return undefined
  let root = base.pathname
  while (root.endsWith("/")) root = root.slice(0, -1)
  const suffix = rootSuffixes.find((s) => root.endsWith(s))
  if (suffix !== undefined) root = root.slice(0, -suffix.length)
  const origin = target.startsWith("/") ? target : target.replace(/^[a-z][a-z0-9+.-]*:\/\/[^/?#]*/i, "")
  const hash = origin.indexOf("#")
  const local = hash === -1 ? origin : origin.slice(0, hash)
  const question = local.indexOf("?")
  const path = (question === -1 ? local : local.slice(0, question)).replace(/^\/+/, "")
  const query = [base.search.slice(1), question === -1 ? "" : local.slice(question + 1)].filter((q) => q !== "")
  return new URL(`${base.origin}${root}/${path}${query.length === 0 ? "" : `?${query.join("&")}`}`)
}

/** Hop-by-hop headers (RFC 9110 §7.6.1), never forwarded either way, besides those `connection` lists. */
const hopByHop: ReadonlySet<string> = new Set([
  "connection",
  "keep-alive",
  "proxy-authenticate",
  "proxy-authorization",
  "proxy-connection",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade"
])

/**
 * `headers` without the hop-by-hop ones, those their `connection` header names, those of
 * `withheld`, and — for a request — `host` (the upstream's own is sent). Repeated values stay as
 * they came.
 */
export const endToEnd = (
  headers: Http.IncomingHttpHeaders,
  options: { readonly request: boolean; readonly withheld?: ReadonlyArray<string> }
): Record<string, string | Array<string>> => {
  const listed = new Set<string>()
  const connection = headers["connection"]
  for (const value of Array.isArray(connection) ? connection : connection === undefined ? [] : [connection]) {
    for (const name of value.split(",")) if (name.trim() !== "") listed.add(name.trim().toLowerCase())
  }
  const out: Record<string, string | Array<string>> = {}
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || hopByHop.has(name) || listed.has(name) || options.withheld?.includes(name)) continue
    if (options.request && name === "host") continue
    out[name] = value
  }
  return out
}

/** The 502 of a forwarding that failed before the upstream answered. */
export const badGateway = HttpServerResponse.unsafeJson(
  {
    error: {
      message: "the fallback upstream could not be reached",
      type: "upstream_error",
      code: "upstream_error"
    }
  },
  { status: 502 }
)

/**
 * Forward `request` to the API root of `baseUrl` (without the caller's headers named in `withheld`:
 * those that carried the router's own inbound key) and write the upstream's answer to the caller as
 * it streams in. Succeeds once the answer was written (the response then already ended, and the
 * platform writes nothing more), with {@link badGateway} when the upstream could not be reached,
 * or is interrupted when the exchange broke after the upstream's headers (the caller's connection
 * is destroyed: its answer cannot be completed). Interrupting it (the caller went away) aborts the
 * upstream request.
 */
export const forward = (
  baseUrl: string,
  request: HttpServerRequest.HttpServerRequest,
  withheld: ReadonlyArray<string> = []
): Effect.Effect<HttpServerResponse.HttpServerResponse> =>
  Effect.async<HttpServerResponse.HttpServerResponse>((resume) => {
    const incoming = NodeHttpServerRequest.toIncomingMessage(request)
    const res = NodeHttpServerRequest.toServerResponse(request)
    const url = upstreamUrl(baseUrl, incoming.url ?? "/")
    if (url === undefined) {
      resume(Effect.succeed(badGateway))
      return
    }
    const send = url.protocol === "https:" ? Https.request : Http.request
    const outgoing = send(url, {
      method: incoming.method,
      headers: endToEnd(incoming.headers, { request: true, withheld })
    })
    let settled = false
    const settle = (outcome: Effect.Effect<HttpServerResponse.HttpServerResponse>) => {
      if (settled) return
      settled = true
      resume(outcome)
    }
    outgoing.on("response", (upstream) => {
      res.writeHead(upstream.statusCode ?? 502, endToEnd(upstream.headers, { request: false }))
      upstream.pipe(res)
      upstream.on("error", () => res.destroy())
      upstream.on("aborted", () => res.destroy())
      res.on("close", () => {
        if (!res.writableFinished) upstream.destroy()
        settle(res.writableFinished ? Effect.succeed(HttpServerResponse.empty()) : Effect.interrupt)
      })
    })
    outgoing.on("error", () => {
      if (res.headersSent) {
        res.destroy()
        settle(Effect.interrupt)
      } else {
        settle(Effect.succeed(badGateway))
      }
    })
    incoming.pipe(outgoing)
    return Effect.sync(() => {
      settled = true
      outgoing.destroy()
    })
  })
