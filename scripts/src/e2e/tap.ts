// A recording pass-through in front of the server (plain node:http, 127.0.0.1 only): what a CLI
// sends the server (method, path with its query, headers, body) is logged, and the request and answer are
// piped through unchanged, streams included. The Gemini CLI scenarios point the CLI at it to check
// the endpoint and the key it calls the server with, and give it a sink on the loopback as its
// proxy, counting the connections of anything it would send elsewhere.
import http from "node:http"
import net from "node:net"
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

/** A proxy that answers nothing: it counts the connections made to it and closes them at once. */
export interface Sink {
  /** `http://127.0.0.1:PORT`. */
  readonly url: string
  /** The connections made so far. */
  readonly connections: () => number
  readonly close: () => Promise<void>
}

/** Starts the sink on a free loopback port. */
export const startSink = () =>
  new Promise<Sink>((resolve, reject) => {
    let connections = 0
    const server = net.createServer((socket) => {
      connections++
      socket.destroy()
    })
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      resolve({
        url: `http://127.0.0.1:${port}`,
        connections: () => connections,
        close: () => new Promise<void>((done) => server.close(() => done()))
      })
    })
  })
