/**
 * The `switchyard` command as users run it: the compiled bin in a child process (built by
 * `npm run build`, which `npm ci` and `npm test` run first). Shutdown tests use real time.
 */
import { assert, describe, it } from "@effect/vitest"
import * as FakeUpstream from "@switchyard-ts/testkit/FakeUpstream"
import * as Effect from "effect/Effect"
import { createServer, type Server } from "node:http"
import { listening, run, tomlFor, writeToml } from "./cliProcess.js"

const chat = (url: string) =>
  Effect.promise(() =>
    fetch(`${url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "fast", messages: [{ role: "user", content: "hi" }] })
    }).then(
      async (response) => ({ status: response.status, text: await response.text() }),
      () => ({ status: 0, text: "" })
    )
  )

describe("switchyard CLI", () => {
  it.scopedLive("--dry-run validates and prints a one-line summary", () =>
    Effect.gen(function*() {
      const cli = yield* run(["--config", "examples/demo.toml", "--dry-run"])
      assert.strictEqual(yield* cli.exited, 0)
      assert.strictEqual(cli.stdout(), "server OK: auto, fast, frontier, mix, ping\n")
    }))

  it.scopedLive("a bad file exits non-zero with one `invalid server config` line naming the key", () =>
    Effect.gen(function*() {
      const file = writeToml(tomlFor("http://127.0.0.1:1/v1").replace("max_retries = 0", "max_retries = 11"))
      const cli = yield* run(["--config", file, "--dry-run"])
      assert.strictEqual(yield* cli.exited, 1)
      const lines = cli.stderr().trim().split("\n")
      assert.strictEqual(lines.length, 1)
      assert.strictEqual(
        lines[0],
        `invalid server config ${file}: llm_clients.sim.max_retries: must be at most 10, got 11`
      )
      assert.strictEqual(cli.stdout(), "")
    }))

  it.scopedLive("SIGTERM lets an in-flight request finish, and a repeated signal within 1 s does not cut it short", () =>
    Effect.gen(function*() {
      const upstream = yield* FakeUpstream.make()
      yield* upstream.setBehaviour("weak-model", FakeUpstream.ok("slow answer", { delayMs: 600 }))
      const cli = yield* run(["--config", writeToml(tomlFor(upstream.url)), "--port", "0"])
      const url = yield* listening(cli)
      const inFlight = yield* Effect.fork(chat(url))
      yield* upstream.awaitRequest("weak-model").pipe(Effect.timeout("5 seconds"))
      cli.child.kill("SIGTERM")
      yield* Effect.sleep("100 millis")
      cli.child.kill("SIGINT")
      const response = yield* inFlight.await.pipe(Effect.flatten)
      assert.strictEqual(response.status, 200)
      assert.include(response.text, "slow answer")
      assert.strictEqual(yield* cli.exited.pipe(Effect.timeout("5 seconds")), 0)
    }))

  it.scopedLive("SIGTERM drains an in-flight SSE stream to its [DONE] while new connections are refused", () =>
    Effect.gen(function*() {
      const upstream = yield* FakeUpstream.make()
      const pieces = Array.from({ length: 12 }, (_, i) => `piece-${i} `)
      yield* upstream.setBehaviour("weak-model", FakeUpstream.Chunks.make({ chunks: pieces, gapMs: 200 }))
      const cli = yield* run(["--config", writeToml(tomlFor(upstream.url)), "--port", "0", "--shutdown-timeout", "10"])
      const url = yield* listening(cli)
      const reader = yield* Effect.promise(async () => {
        const response = await fetch(`${url}/v1/chat/completions`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ model: "fast", stream: true, messages: [{ role: "user", content: "hi" }] })
        })
        assert.strictEqual(response.status, 200)
        const body = response.body
        if (body === null) return assert.fail("no response body")
        return body.pipeThrough(new TextDecoderStream()).getReader()
      })
      let text = ""
      let done = false
      const readSome = Effect.promise(() => reader.read()).pipe(Effect.map((part) => {
        if (part.done) done = true
        else text += part.value
      }))
      for (let i = 0; i < 1000 && !done && !text.includes("piece-0"); i++) yield* readSome
      assert.include(text, "piece-0")
      const signalledAt = Date.now()
      cli.child.kill("SIGTERM")
      // Stop accepting: a fresh connection is refused while the stream is still being written.
      let refused = false
      for (let i = 0; i < 40 && !refused; i++) {
        const status = yield* Effect.promise(() => fetch(`${url}/health`).then((r) => r.status, () => 0))
        refused = status === 0
        if (!refused) yield* Effect.sleep("50 millis")
      }
      assert.isTrue(refused, "a new connection was still accepted after SIGTERM")
      assert.notInclude(text, "[DONE]")
      for (let i = 0; i < 1000 && !done; i++) yield* readSome
      assert.isTrue(done)
      for (const piece of pieces) assert.include(text, piece)
      assert.isTrue(text.endsWith("data: [DONE]\n\n"), text.slice(-200))
      // The remaining 11 gaps of 200 ms ran after the signal: the drain waited for the stream.
      assert.isAtLeast(Date.now() - signalledAt, 1500)
      assert.strictEqual(yield* cli.exited.pipe(Effect.timeout("5 seconds")), 0)
      assert.isFalse((yield* upstream.requests).some((r) => r.closedEarly))
    }))

  it.scopedLive("request heads up to 64 KiB are served; a larger head is answered 431", () =>
    Effect.gen(function*() {
      const upstream = yield* FakeUpstream.make()
      const cli = yield* run(["--config", writeToml(tomlFor(upstream.url)), "--port", "0"])
      const url = yield* listening(cli)
      const statusWith = (bytes: number) =>
        Effect.promise(() =>
          fetch(`${url}/health`, { headers: { "x-padding": "a".repeat(bytes) } }).then((r) => r.status, () => 0)
        )
      // 40 KiB is over Node's default limit (16 KiB) and under ours.
      assert.strictEqual(yield* statusWith(40 * 1024), 200)
      // Just over the limit, so Node reads the whole head before answering: with much more unread
      // data its close can reset the connection before the client has read the 431.
      assert.strictEqual(yield* statusWith(70 * 1024), 431)
      assert.strictEqual(yield* statusWith(16), 200)
      cli.child.kill("SIGTERM")
      assert.strictEqual(yield* cli.exited.pipe(Effect.timeout("5 seconds")), 0)
    }))

  it.scopedLive("a request still running at --shutdown-timeout is cut and the process exits 0", () =>
    Effect.gen(function*() {
      const upstream = yield* FakeUpstream.make()
      yield* upstream.setBehaviour("weak-model", FakeUpstream.stall)
      const cli = yield* run(["--config", writeToml(tomlFor(upstream.url)), "--port", "0", "--shutdown-timeout", "1"])
      const url = yield* listening(cli)
      const inFlight = yield* Effect.fork(chat(url))
      yield* upstream.awaitRequest("weak-model").pipe(Effect.timeout("5 seconds"))
      cli.child.kill("SIGTERM")
      assert.strictEqual(yield* cli.exited.pipe(Effect.timeout("5 seconds")), 0)
      const response = yield* inFlight.await.pipe(Effect.flatten)
      assert.notStrictEqual(response.status, 200)
    }))

  it.scopedLive("with OTEL_EXPORTER_OTLP_ENDPOINT set, spans are exported over OTLP/HTTP with OTEL_SERVICE_NAME", () =>
    Effect.gen(function*() {
      const received: Array<{ readonly path: string; readonly body: string }> = []
      const collector = yield* Effect.acquireRelease(
        Effect.async<Server>((resume) => {
          const server = createServer((req, res) => {
            let body = ""
            req.on("data", (chunk: Buffer) => (body += chunk.toString("latin1")))
            req.on("end", () => {
              received.push({ path: req.url ?? "", body })
              res.writeHead(200, { "content-type": "application/json" }).end("{}")
            })
          })
          server.listen(0, "127.0.0.1", () => resume(Effect.succeed(server)))
        }),
        (server) =>
          Effect.async<void>((resume) => {
            server.close(() => resume(Effect.void))
          })
      )
      const address = collector.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      const upstream = yield* FakeUpstream.make()
      const cli = yield* run(["--config", writeToml(tomlFor(upstream.url)), "--port", "0"], {
        OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`,
        OTEL_SERVICE_NAME: "switchyard-otlp-test"
      })
      const url = yield* listening(cli)
      assert.strictEqual((yield* chat(url)).status, 200)
      cli.child.kill("SIGTERM")
      assert.strictEqual(yield* cli.exited.pipe(Effect.timeout("10 seconds")), 0)
      const traces = received.filter((r) => r.path === "/v1/traces")
      assert.isAbove(traces.length, 0)
      const all = traces.map((r) => r.body).join("")
      assert.include(all, "switchyard-otlp-test")
      assert.include(all, "libsy.run")
    }))

  it.scopedLive("without OTEL_EXPORTER_OTLP_ENDPOINT nothing is exported", () =>
    Effect.gen(function*() {
      const upstream = yield* FakeUpstream.make()
      const cli = yield* run(["--config", writeToml(tomlFor(upstream.url)), "--port", "0"], {
        OTEL_EXPORTER_OTLP_ENDPOINT: ""
      })
      const url = yield* listening(cli)
      assert.strictEqual((yield* chat(url)).status, 200)
      cli.child.kill("SIGTERM")
      assert.strictEqual(yield* cli.exited.pipe(Effect.timeout("10 seconds")), 0)
      // Only the upstream saw traffic: no request left the process for a collector.
      assert.deepStrictEqual((yield* upstream.requests).map((r) => r.path), ["/v1/chat/completions"])
    }))
})
