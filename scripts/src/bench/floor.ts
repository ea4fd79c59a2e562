// The floor of `npm run bench`: the least a forwarder on this runtime can do. `node:http` in, undici
// `dispatch()` out on one pooled Agent, the request body buffered and its `model` rewritten, nothing
// else (no validation, no routing, no telemetry). SSE responses are written through as the bytes
// arrive; other responses are buffered and sent with their length. Run as a child of
// scripts/dist/bench.js (fork, IPC) with the upstream port and the model to stamp as arguments; it
// listens on 127.0.0.1 only, reports its port over IPC and exits when the parent goes away.
import http from "node:http"
import { Agent, type Dispatcher } from "undici"

const [upstreamPort = "", model = "bench-weak", connections = "128"] = process.argv.slice(2)
const origin = `http://127.0.0.1:${upstreamPort}`
// connections per origin: 128 for the load rows, one per stream for the many-streams row (a held
// stream holds its upstream connection, as in our server, whose pool has 1,024)
const agent = new Agent({ connections: Number(connections), keepAliveTimeout: 60_000 })

const fail = (res: http.ServerResponse, status: number, message: string): void => {
  if (res.headersSent) return void res.destroy()
  res.writeHead(status, { "content-type": "application/json" })
  res.end(JSON.stringify({ error: { message, type: "floor_error", code: "floor_error" } }))
}

const forward = (req: http.IncomingMessage, res: http.ServerResponse, body: Buffer): void => {
  let streaming = false
  const parts: Array<Buffer> = []
  const handler: Dispatcher.DispatchHandler = {
    onRequestStart: () => {},
    onResponseStart: (_controller, statusCode, headers) => {
      const type = String(headers["content-type"] ?? "application/json")
      streaming = type.startsWith("text/event-stream")
      res.statusCode = statusCode
      res.setHeader("content-type", type)
      if (streaming) res.flushHeaders()
    },
    onResponseData: (_controller, chunk) => {
      if (streaming) res.write(chunk)
      else parts.push(chunk)
    },
    onResponseEnd: () => {
      if (streaming) return void res.end()
      const out = Buffer.concat(parts)
      res.setHeader("content-length", out.length)
      res.end(out)
    },
    onResponseError: (_controller, error) => fail(res, 502, error.message)
  }
  agent.dispatch({
    origin,
    path: req.url ?? "/",
    method: "POST",
    headers: { "content-type": "application/json", "content-length": String(body.length) },
    body
  }, handler)
}

const server = http.createServer({ keepAliveTimeout: 120_000, noDelay: true }, (req, res) => {
  const parts: Array<Buffer> = []
  req.on("data", (part: Buffer) => parts.push(part))
  req.on("end", () => {
    let json: unknown
    try {
      json = JSON.parse(Buffer.concat(parts).toString("utf8"))
    } catch {
      return fail(res, 400, "bad json")
    }
    if (typeof json !== "object" || json === null || Array.isArray(json)) return fail(res, 400, "not an object")
    forward(req, res, Buffer.from(JSON.stringify({ ...json, model })))
  })
})

server.listen(0, "127.0.0.1", () => {
  const address = server.address()
  const port = typeof address === "object" && address !== null ? address.port : 0
  if (process.send) process.send({ port })
  else console.log(`floor listening on http://127.0.0.1:${port} -> ${origin}`)
})

const stop = (): void => {
  server.closeAllConnections()
  server.close()
  void agent.close()
  process.exit(0)
}
process.on("disconnect", stop)
process.on("SIGTERM", stop)
process.on("SIGINT", stop)
