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

/**
 * The CLI serving `fast` with one chat request in flight, held by the upstream's `behaviour` for
 * `weak-model`; `args` are added to the command line. The request's fiber yields its response.
 */
const servingOneRequest = (behaviour: FakeUpstream.Behaviour, args: ReadonlyArray<string> = []) =>
  Effect.gen(function*() {
    const upstream = yield* FakeUpstream.make()
    yield* upstream.setBehaviour("weak-model", behaviour)
    const cli = yield* run(["--config", writeToml(tomlFor(upstream.url)), "--port", "0", ...args])
    const inFlight = yield* Effect.fork(chat(yield* listening(cli)))
    yield* upstream.awaitRequest("weak-model").pipe(Effect.timeout("5 seconds"))
    return { cli, response: inFlight.await.pipe(Effect.flatten) }
  })

/** For a test that starts several CLI processes (each loads the whole server: seconds on a busy machine). */
const spawnTimeout = 60_000

/** `text` without its ANSI styling (the help is styled even when stdout is not a terminal). */
const plain = (text: string) => text.replace(/\u001b\[[0-9;]*m/g, "")

describe("switchyard CLI", () => {
  it.scopedLive("--dry-run validates and prints a one-line summary", () =>
    Effect.gen(function*() {
      const cli = yield* run(["--config", "examples/demo.toml", "--dry-run"])
      assert.strictEqual(yield* cli.exited, 0)
      assert.strictEqual(cli.stdout(), "server OK: auto, fast, frontier, mix, ping\n")
    }))

  it.scopedLive(
    "--help shows the default command's usage, lists the four commands and exits 0; each command has its own --help",
    () =>
      Effect.gen(function*() {
        const help = yield* run(["--help"])
        const replay = yield* run(["replay", "--help"])
        assert.strictEqual(yield* help.exited, 0)
        const text = plain(help.stdout())
        // the usage of `switchyard` without a command name: serve's flags
        const usage = text.slice(text.indexOf("USAGE"), text.indexOf("DESCRIPTION"))
        assert.match(usage, /^\$ switchyard \[--config FILE\] .*\[--dry-run\]$/m)
        const options = text.slice(text.indexOf("OPTIONS"), text.indexOf("COMMANDS"))
        for (const flag of ["--config FILE", "--dry-run", "--pricing-file PATH"]) assert.include(options, flag)
        const commands = text.slice(text.indexOf("COMMANDS"))
        for (const command of ["serve", "check", "replay", "status-line"]) {
          assert.match(commands, new RegExp(`^  - ${command} `, "m"))
        }
        assert.include(commands, "--config FILE")
        assert.include(commands, "--log FILE")
        assert.strictEqual(help.stderr(), "")
        assert.strictEqual(yield* replay.exited, 0)
        for (const flag of ["--log FILE", "--config OTHER.toml", "--route ID", "--json"]) {
          assert.include(plain(replay.stdout()), flag)
        }
      }),
    spawnTimeout
  )

  it.scopedLive("check validates like --dry-run; serve is the default command", () =>
    Effect.gen(function*() {
      const file = writeToml(tomlFor("http://127.0.0.1:1/v1").replace("max_retries = 0", "max_retries = 11"))
      const check = yield* run(["check", "--config", "examples/demo.toml"])
      const serve = yield* run(["serve", "--config", "examples/demo.toml", "--dry-run"])
      const bad = yield* run(["check", "--config", file])
      assert.strictEqual(yield* check.exited, 0)
      assert.strictEqual(check.stdout(), "server OK: auto, fast, frontier, mix, ping\n")
      assert.strictEqual(yield* serve.exited, 0)
      assert.strictEqual(serve.stdout(), check.stdout())
      assert.strictEqual(yield* bad.exited, 1)
      assert.strictEqual(
        bad.stderr(),
        `invalid server config ${file}: llm_clients.sim.max_retries: must be at most 10, got 11\n`
      )
    }), spawnTimeout)

  it.scopedLive("bad arguments exit 2 with the message and the command's usage line", () =>
    Effect.gen(function*() {
      const missing = yield* run([])
      const unknown = yield* run(["--config", "examples/demo.toml", "--prot", "4000"])
      const replay = yield* run(["replay", "--log", "routing.jsonl"])
      assert.strictEqual(yield* missing.exited, 2)
      assert.isTrue(missing.stderr().startsWith("--config is required\nusage: switchyard --config FILE "))
      assert.strictEqual(yield* unknown.exited, 2)
      assert.include(unknown.stderr(), "'--prot'")
      assert.include(unknown.stderr(), "\nusage: switchyard --config FILE ")
      assert.strictEqual(yield* replay.exited, 2)
      assert.strictEqual(
        replay.stderr(),
        "--log and --config are required\nusage: switchyard replay --log FILE [--log FILE ...] --config OTHER.toml [--route ID] [--pricing-file PRICES.json] [--judge-outage [--judge-outage-from ISO] [--judge-outage-until ISO]] [--json]\n"
      )
      for (const cli of [missing, unknown, replay]) assert.strictEqual(cli.stdout(), "")
    }), spawnTimeout)

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
      const { cli, response } = yield* servingOneRequest(FakeUpstream.ok("slow answer", { delayMs: 600 }))
      cli.child.kill("SIGTERM")
      yield* Effect.sleep("100 millis")
      cli.child.kill("SIGINT")
      const answer = yield* response
      assert.strictEqual(answer.status, 200)
      assert.include(answer.text, "slow answer")
      assert.strictEqual(yield* cli.exited.pipe(Effect.timeout("5 seconds")), 0)
    }))

  it.scopedLive("a signal more than 1 s after the first exits at once with code 1", () =>
    Effect.gen(function*() {
      const { cli, response } = yield* servingOneRequest(FakeUpstream.stall)
      cli.child.kill("SIGTERM")
      yield* Effect.sleep("1200 millis")
      // Still draining (--shutdown-timeout is 30 s) when the second signal comes.
      assert.isNull(cli.child.exitCode)
      cli.child.kill("SIGTERM")
      assert.strictEqual(yield* cli.exited.pipe(Effect.timeout("3 seconds")), 1)
      assert.notStrictEqual((yield* response).status, 200)
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
      const { cli, response } = yield* servingOneRequest(FakeUpstream.stall, ["--shutdown-timeout", "1"])
      cli.child.kill("SIGTERM")
      assert.strictEqual(yield* cli.exited.pipe(Effect.timeout("5 seconds")), 0)
      assert.notStrictEqual((yield* response).status, 200)
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
