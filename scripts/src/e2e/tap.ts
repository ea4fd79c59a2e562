// A recording pass-through in front of the server (plain node:http, 127.0.0.1 only): what a CLI
// sends the server (method, path with its query, headers, body) is logged, and the request and answer are
// piped through unchanged, streams included. The Gemini CLI scenarios point the CLI at it to check
// the endpoint and the key it calls the server with.
import http from "node:http"
import { listenOnLoopback } from "./upstream/server.js"

/** One request a CLI sent the server. */
export interface TapEntry {
  readonly method: string
  /** With the query string. */
  readonly path: string
  readonly headers: http.IncomingHttpHeaders
  /** The request body's text, once it has been read. */
  body: string
}

export interface Tap {
  /** `http://127.0.0.1:PORT`: the server's stand-in. */
  readonly url: string
  /** The live log, in arrival order. */
  readonly requests: ReadonlyArray<TapEntry>
  readonly close: () => Promise<void>
}

/** Starts the pass-through to `target` (`http://127.0.0.1:PORT`) on a free loopback port. */
export const startTap = (target: string) =>
  new Promise<Tap>((resolve, reject) => {
    const requests: Array<TapEntry> = []
    const { hostname, port } = new URL(target)
    const server = http.createServer((req, res) => {
      const method = req.method ?? "GET"
      const path = req.url ?? "/"
      const entry: TapEntry = { method, path, headers: req.headers, body: "" }
      requests.push(entry)
      req.setEncoding("utf8").on("data", (part: string) => (entry.body += part))
      const forwarded = http.request({ hostname, port, method, path, headers: req.headers }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers)
        answer.pipe(res)
      })
      forwarded.on("error", (error) => {
        if (!res.headersSent) res.writeHead(502, { "content-type": "text/plain" })
        res.end(`e2e tap: ${error.message}`)
      })
      req.pipe(forwarded)
    })
    listenOnLoopback(server).then(({ close, url }) => resolve({ url, requests, close }), reject)
  })
