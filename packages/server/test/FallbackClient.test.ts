/**
 * `fallback_client` through the real server against a loopback upstream of the test's own: an
 * unmatched request forwarded raw (the URL rule, method, end-to-end headers with the caller's
 * `authorization`, hop-by-hop headers removed both ways, repeated response headers kept), bodies
 * streamed both ways (each side answers the other's first piece before the second is sent), inbound
 * auth checked first (and the header carrying the router's own key withheld), a 502 without the URL when nothing listens; matched endpoints and the 404
 * without it unchanged. And the URL rule itself, case by case.
 */
import { assert, describe, it } from "@effect/vitest"
import * as D from "@switchyard-ts/testkit/DeploymentBuilder"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Predicate from "effect/Predicate"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { upstreamUrl } from "../src/internal/forward.js"
import { chatAndClaude, readReply, startServer } from "./harness.js"

const record = (value: unknown): Record<string, unknown> => (Predicate.isRecord(value) ? value : {})

/** What the loopback upstream saw of one request. */
interface Seen {
  readonly method: string
  readonly url: string
  readonly headers: Http.IncomingHttpHeaders
}

/**
 * A loopback upstream: `/stream` answers each piece of the request body as it arrives (`got <piece>`)
 * and ends with the body; every other path answers 200 with fixed headers, hop-by-hop ones among
 * them, and `ok`. Closed with the scope.
 */
const loopbackUpstream = Effect.acquireRelease(
  Effect.async<{ readonly server: Http.Server; readonly url: string; readonly seen: Array<Seen> }>((resume) => {
    const seen: Array<Seen> = []
    const server = Http.createServer((req, res) => {
      seen.push({ method: req.method ?? "", url: req.url ?? "", headers: req.headers })
      if (req.url?.startsWith("/v1/stream") === true) {
        res.writeHead(200, { "content-type": "text/plain" })
        req.on("data", (piece: Buffer) => res.write(`got ${piece.toString("utf8")};`))
        req.on("end", () => res.end("end"))
        return
      }
      req.resume()
      req.on("end", () => {
        res.setHeader("x-upstream", "yes")
        res.setHeader("set-cookie", ["a=1", "b=2"])
        res.setHeader("proxy-authenticate", "Basic")
        res.setHeader("keep-alive", "timeout=5")
        res.setHeader("connection", "keep-alive, x-hop")
        res.setHeader("x-hop", "secret")
        res.writeHead(201, { "content-type": "text/plain" })
        res.end("ok")
      })
    })
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo
      resume(Effect.succeed({ server, url: `http://127.0.0.1:${port}/v1`, seen }))
    })
  }),
  ({ server }) =>
    Effect.async<void>((resume) => {
      server.closeAllConnections()
      server.close(() => resume(Effect.void))
    })
)

const routerKey = "sk-router-FALLBACK-0123456789"

const withKey = Effect.withConfigProvider(ConfigProvider.fromMap(new Map([["SWITCHYARD_FALLBACK_KEY", routerKey]])))

/** The protocol tests' deployment with `fallback_client = "gateway"` at `gatewayUrl` (and `server`). */
const deployment = (gatewayUrl: string, server?: D.Server) => (upstreamUrl: string): D.Deployment =>
  D.extend(chatAndClaude(upstreamUrl), {
    llm_clients: { gateway: D.client("openai_chat", gatewayUrl, { max_retries: 3 }) },
    fallback_client: "gateway",
    ...(server === undefined ? {} : { server })
  })

/** One raw request to the server at `url`, its body written by `write`, read to its end. */
const request = (
  url: string,
  options: Http.RequestOptions,
  write: (req: Http.ClientRequest) => void = (req) => req.end()
) =>
  Effect.tryPromise(() =>
    new Promise<{ readonly status: number; readonly headers: Http.IncomingHttpHeaders; readonly body: string }>(
      (resolve, reject) => {
        const req = Http.request(new URL(options.path ?? "/", url), { ...options, agent: false })
        req.on("response", (response) => readReply(response).then(resolve, reject))
        req.on("error", reject)
        write(req)
      }
    )
  )

describe("fallback_client", () => {
  it("the URL rule: API root, path appended, queries joined, fragment dropped", () => {
    const cases: ReadonlyArray<readonly [string, string, string]> = [
      ["https://gw.example/v1", "/v1/files?limit=2", "https://gw.example/v1/files?limit=2"],
      ["https://gw.example/v1/chat/completions", "/v1/files", "https://gw.example/v1/files"],
      ["https://gw.example/api/v1/responses/", "/v1/x", "https://gw.example/api/v1/x"],
      ["https://gw.example/api/v1/messages", "/other", "https://gw.example/api/other"],
      ["https://gw.example/base?key=k#frag", "/v1/x?y=1", "https://gw.example/base/v1/x?key=k&y=1"],
      ["http://127.0.0.1:8080", "/", "http://127.0.0.1:8080/"],
      ["http://127.0.0.1:8080/v1", "http://other.host/v1/models?a=b", "http://127.0.0.1:8080/v1/models?a=b"]
    ]
    for (const [base, target, expected] of cases) {
      assert.strictEqual(upstreamUrl(base, target)?.toString(), expected, `${base} + ${target}`)
    }
    assert.isUndefined(upstreamUrl("ftp://gw.example/v1", "/x"))
  })

  it.scopedLive("an unmatched request is forwarded raw: method, URL, end-to-end headers both ways", () =>
    Effect.gen(function*() {
      const gateway = yield* loopbackUpstream
      const { upstream, url } = yield* startServer(deployment(gateway.url))
      const reply = yield* request(url, {
        method: "PUT",
        path: "/v1/files/f1?purpose=batch",
        headers: {
          authorization: "Bearer caller-token",
          "x-custom": "kept",
          connection: "keep-alive, x-drop",
          "x-drop": "1",
          "keep-alive": "timeout=1",
          te: "trailers",
          "proxy-authorization": "Basic abc",
          "content-type": "application/octet-stream"
        }
      }, (req) => req.end("payload"))
      assert.strictEqual(reply.status, 201)
      assert.strictEqual(reply.body, "ok")
      assert.strictEqual(reply.headers["x-upstream"], "yes")
      assert.deepStrictEqual(reply.headers["set-cookie"], ["a=1", "b=2"])
      for (const name of ["proxy-authenticate", "x-hop"]) assert.isUndefined(reply.headers[name], name)
      const [seen] = gateway.seen
      assert.strictEqual(seen?.method, "PUT")
      assert.strictEqual(seen?.url, "/v1/files/f1?purpose=batch")
      assert.strictEqual(seen?.headers["authorization"], "Bearer caller-token")
      assert.strictEqual(seen?.headers["x-custom"], "kept")
      assert.strictEqual(seen?.headers["host"], new URL(gateway.url).host)
      for (const name of ["x-drop", "te", "proxy-authorization"]) assert.isUndefined(seen?.headers[name], name)
      assert.notInclude(String(seen?.headers["keep-alive"] ?? ""), "timeout=1")
      // the gateway client's own settings are not applied: one attempt, no key
      assert.strictEqual(gateway.seen.length, 1)
      assert.deepStrictEqual(yield* upstream.requests, [])
    }))

  it.scopedLive("bodies stream both ways: each side answers a piece before the other sends the next", () =>
    Effect.gen(function*() {
      const gateway = yield* loopbackUpstream
      const { url } = yield* startServer(deployment(gateway.url))
      const reply = yield* request(url, { method: "POST", path: "/v1/stream" }, (req) => {
        req.write("one")
        // the second piece goes only once the answer to the first came back through the server
        req.on("response", (response) =>
          response.once("data", (first: Buffer) => {
            assert.strictEqual(first.toString("utf8"), "got one;")
            req.end("two")
          }))
      }).pipe(Effect.timeout("10 seconds"))
      assert.strictEqual(reply.status, 200)
      assert.strictEqual(reply.body, "got one;got two;end")
    }))

  it.scopedLive("inbound auth first: a refused caller gets the 401, nothing forwarded; the router's key is withheld", () =>
    Effect.gen(function*() {
      const gateway = yield* loopbackUpstream
      const { url } = yield* withKey(
        startServer(deployment(gateway.url, { api_keys_env: "SWITCHYARD_FALLBACK_KEY" }))
      )
      const refused = yield* request(url, { method: "GET", path: "/v1/files" })
      assert.strictEqual(refused.status, 401)
      assert.strictEqual(record(record(JSON.parse(refused.body))["error"])["code"], "invalid_api_key")
      assert.deepStrictEqual(gateway.seen, [])
      const admitted = yield* request(url, {
        method: "GET",
        path: "/v1/files",
        headers: { authorization: `Bearer ${routerKey}` }
      })
      assert.strictEqual(admitted.status, 201)
      assert.strictEqual(gateway.seen.length, 1)
      // the router's own key never leaves it; a credential for the upstream beside it does
      assert.isUndefined(gateway.seen[0]?.headers["authorization"])
      const both = yield* request(url, {
        method: "GET",
        path: "/v1/files",
        headers: { "x-api-key": routerKey, authorization: "Bearer upstream-token" }
      })
      assert.strictEqual(both.status, 201)
      assert.isUndefined(gateway.seen[1]?.headers["x-api-key"])
      assert.strictEqual(gateway.seen[1]?.headers["authorization"], "Bearer upstream-token")
    }))

  it.scopedLive("nothing listening: 502 in the OpenAI envelope, the URL not named", () =>
    Effect.gen(function*() {
      const { url } = yield* startServer(deployment(D.deadUrl))
      const reply = yield* request(url, { method: "POST", path: "/v1/embeddings" }, (req) => req.end("{}"))
      assert.strictEqual(reply.status, 502)
      assert.deepStrictEqual(JSON.parse(reply.body), {
        error: { message: "the fallback upstream could not be reached", type: "upstream_error", code: "upstream_error" }
      })
      assert.notInclude(reply.body, "127.0.0.1:9")
    }))

  it.scopedLive("matched endpoints are served, not forwarded; without fallback_client the 404 stays", () =>
    Effect.gen(function*() {
      const gateway = yield* loopbackUpstream
      const { url } = yield* startServer(deployment(gateway.url))
      const models = yield* request(url, { method: "GET", path: "/v1/models" })
      assert.strictEqual(models.status, 200)
      const unknownModel = yield* request(url, {
        method: "POST",
        path: "/v1/chat/completions",
        headers: { "content-type": "application/json" }
      }, (req) => req.end(JSON.stringify({ model: "nope", messages: [{ role: "user", content: "hi" }] })))
      assert.strictEqual(unknownModel.status, 404)
      const health = yield* request(url, { method: "HEAD", path: "/health" })
      assert.strictEqual(health.status, 200)
      assert.deepStrictEqual(gateway.seen, [])
      const plain = yield* startServer(chatAndClaude)
      const missing = yield* request(plain.url, { method: "GET", path: "/v1/files" })
      assert.strictEqual(missing.status, 404)
      assert.strictEqual(record(record(JSON.parse(missing.body))["error"])["code"], "endpoint_not_found")
    }))
})
