// HTTP to the soak's server: keep-alive, each request bounded by REQUEST_TIMEOUT_MS, never rejects
// (a failure is a `Reply` too).
import http from "node:http"
import { HOST, REQUEST_TIMEOUT_MS } from "./options.js"

export type Reply =
  | { readonly ok: true; readonly status: number; readonly headers: http.IncomingHttpHeaders; readonly text: string }
  | { readonly ok: false; readonly error: string; readonly gotResponse: boolean; readonly reusedSocket?: boolean }

/** A keep-alive client of one server, counting the requests it retried after a stale socket. */
export interface Client {
  readonly send: (
    method: string,
    reqPath: string,
    body?: string,
    headers?: Readonly<Record<string, string>>
  ) => Promise<Reply>
  /** Requests retried once because the server had closed the idle socket they were sent on. */
  readonly staleSocketRetries: () => number
  readonly close: () => void
}

/** A client of the server on `port`, with `sockets` keep-alive sockets at most. */
export const makeClient = (port: number, sockets: number): Client => {
  const agent = new http.Agent({ keepAlive: true, maxSockets: sockets })
  let staleSocketRetries = 0
  const once = (
    method: string,
    reqPath: string,
    body: string | undefined,
    headers: Readonly<Record<string, string>>
  ): Promise<Reply> =>
    new Promise((resolve) => {
      const payload = body === undefined ? undefined : Buffer.from(body)
      let settled = false
      const done = (result: Reply): void => {
        if (settled) return
        settled = true
        clearTimeout(timer)
        resolve(result)
      }
      const req = http.request(
        {
          agent,
          host: HOST,
          port,
          path: reqPath,
          method,
          headers: payload === undefined
            ? headers
            : { "content-type": "application/json", "content-length": payload.length, ...headers }
        },
        (res) => {
          const parts: Array<Buffer> = []
          res.on("data", (part: Buffer) => parts.push(part))
          res.on("end", () =>
            done({
              ok: true,
              status: res.statusCode ?? 0,
              headers: res.headers,
              text: Buffer.concat(parts).toString("utf8")
            }))
          res.on("error", (error: NodeJS.ErrnoException) =>
            done({ ok: false, error: `response: ${error.code ?? error.message}`, gotResponse: true }))
        }
      )
      const timer = setTimeout(() => {
        req.destroy()
        done({ ok: false, error: `no answer within ${REQUEST_TIMEOUT_MS} ms`, gotResponse: false })
      }, REQUEST_TIMEOUT_MS)
      req.on("error", (error: NodeJS.ErrnoException) =>
        done({ ok: false, error: error.code ?? error.message, gotResponse: false, reusedSocket: req.reusedSocket }))
      req.end(payload)
    })
  /**
   * One request; a reset on a reused keep-alive socket before any response byte (the server closed
   * an idle socket as it was being reused) is retried once, and counted.
   */
  const send = async (
    method: string,
    reqPath: string,
    body?: string,
    headers: Readonly<Record<string, string>> = {}
  ): Promise<Reply> => {
    const first = await once(method, reqPath, body, headers)
    if (
      !first.ok && first.reusedSocket === true && !first.gotResponse &&
      ["ECONNRESET", "EPIPE", "socket hang up"].includes(first.error)
    ) {
      staleSocketRetries++
      return once(method, reqPath, body, headers)
    }
    return first
  }
  return { send, staleSocketRetries: () => staleSocketRetries, close: () => agent.destroy() }
}
