/**
 * ServerProcess: the real `switchyard` CLI (built by `npm run build`) served, checked and stopped,
 * and a stand-in script (fixtures/fakeCli.mjs) for what the CLI never does on purpose: ignore
 * SIGTERM, never become ready, print a lot.
 */
import { assert, describe, it } from "@effect/vitest"
import { DeploymentBuilder, FakeUpstream, ServerProcess } from "@switchyard-ts/testkit"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import * as path from "node:path"

const fakeCli = path.join(import.meta.dirname, "fixtures/fakeCli.mjs")

/** Whether a process with this PID exists. */
const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

const writeFile = (text: string): string => {
  const file = path.join(mkdtempSync(path.join(tmpdir(), "switchyard-testkit-")), "routes.toml")
  writeFileSync(file, text)
  return file
}

const deployment = (upstreamUrl: string) =>
  DeploymentBuilder.toToml({
    llm_clients: { sim: DeploymentBuilder.client("openai_chat", upstreamUrl, { max_retries: 0 }) },
    targets: { weak: DeploymentBuilder.target("weak-model", "sim") },
    routes: DeploymentBuilder.byId(DeploymentBuilder.passthrough("fast", "weak"))
  })

describe("ServerProcess with the real CLI", () => {
  it.scopedLive("start waits for the listening line; the server answers; stop sends SIGTERM and it exits 0", () =>
    Effect.gen(function*() {
      const upstream = yield* FakeUpstream.make()
      const server = yield* ServerProcess.start({
        args: ["--config", writeFile(deployment(upstream.url)), "--port", "0"]
      })
      assert.match(server.url, /^http:\/\/127\.0\.0\.1:\d+$/)
      assert.strictEqual(server.url, `http://${server.host}:${server.port}`)
      assert.isTrue(server.port > 0)
      const health = yield* Effect.promise(() => fetch(`${server.url}/health`))
      assert.strictEqual(health.status, 200)
      const answer = yield* Effect.promise(() =>
        fetch(`${server.url}/v1/chat/completions`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ model: "fast", messages: [{ role: "user", content: "hi" }] })
        })
      )
      assert.strictEqual(answer.headers.get("x-switchyard-selected-model"), "weak-model")
      assert.include(server.process.stdout(), `listening on ${server.url}\n`)
      const stopped = yield* server.process.stop
      assert.deepStrictEqual({ code: stopped.code, signal: stopped.signal, forced: stopped.forced }, {
        code: 0,
        signal: null,
        forced: false
      })
      assert.isFalse(alive(server.process.pid))
      assert.deepStrictEqual(server.process.exit(), Option.some({ code: 0, signal: null }))
      // stopping again is a no-op
      assert.strictEqual((yield* server.process.stop).ms, 0)
    }))

  it.scopedLive("a file that does not load: ready fails with the exit and the CLI's stderr", () =>
    Effect.gen(function*() {
      const file = writeFile(deployment("http://127.0.0.1:1/v1").replace("max_retries = 0", "max_retries = 11"))
      const cli = yield* ServerProcess.spawn({ args: ["--config", file, "--port", "0"] })
      const error = yield* Effect.flip(cli.ready)
      assert.strictEqual(error.reason, "ExitedBeforeReady")
      assert.deepStrictEqual(error.exit, { code: 1, signal: null })
      assert.include(error.stderr, `invalid server config ${file}: llm_clients.sim.max_retries`)
      assert.match(error.message, /^server did not start \(exit 1\): invalid server config/)
    }))
})

describe("ServerProcess with a stand-in script", () => {
  it.scopedLive("a child that ignores SIGTERM is killed with SIGKILL after stopTimeout", () =>
    Effect.gen(function*() {
      const server = yield* ServerProcess.start({
        bin: fakeCli,
        args: ["--listen", "http://127.0.0.1:4321", "--ignore-term"],
        stopTimeout: "200 millis"
      })
      assert.strictEqual(server.port, 4321)
      // asked again once the line is there, ready answers at once
      assert.strictEqual((yield* server.process.ready).url, "http://127.0.0.1:4321")
      const stopped = yield* server.process.stop
      assert.isTrue(stopped.forced)
      assert.strictEqual(stopped.signal, "SIGKILL")
      assert.isTrue(stopped.ms >= 200)
      assert.isFalse(alive(server.process.pid))
    }))

  it.live("no listening line within readyTimeout: ReadyTimeout, and the child is stopped with the scope", () =>
    Effect.gen(function*() {
      let pid = 0
      const result = yield* Effect.scoped(
        Effect.gen(function*() {
          const cli = yield* ServerProcess.spawn({ bin: fakeCli, args: [], readyTimeout: "300 millis" })
          pid = cli.pid
          assert.isTrue(alive(pid))
          return yield* cli.ready
        })
      ).pipe(Effect.either)
      assert.isTrue(Either.isLeft(result))
      if (Either.isLeft(result)) assert.strictEqual(result.left.reason, "ReadyTimeout")
      assert.isFalse(alive(pid))
    }))

  it.live("a failing test stops the child too, even one that ignores SIGTERM", () =>
    Effect.gen(function*() {
      let pid = 0
      const before = ServerProcess.running()
      const exit = yield* Effect.scoped(
        Effect.gen(function*() {
          const server = yield* ServerProcess.start({
            bin: fakeCli,
            args: ["--listen", "http://127.0.0.1:1", "--ignore-term"],
            stopTimeout: "100 millis"
          })
          pid = server.process.pid
          return yield* Effect.fail("the test failed")
        })
      ).pipe(Effect.exit)
      assert.isTrue(Exit.isFailure(exit))
      assert.isFalse(alive(pid))
      assert.strictEqual(ServerProcess.running(), before)
    }))

  it.live("startUnscoped stops a child that is not ready before failing", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(ServerProcess.startUnscoped({ bin: fakeCli, args: ["--exit", "3"] }))
      assert.strictEqual(error.reason, "ExitedBeforeReady")
      assert.deepStrictEqual(error.exit, { code: 3, signal: null })
      assert.strictEqual(error.stderr, "bye\n")
      assert.isFalse(error.pid !== undefined && alive(error.pid))
    }))

  it.scopedLive("nextLine waits for a matching line from now on, within a bound; onLine sees every line", () =>
    Effect.gen(function*() {
      const seen: Array<string> = []
      const cli = yield* ServerProcess.spawn({
        bin: fakeCli,
        args: ["--ticks"],
        onLine: (stream, line) => stream === "stderr" && seen.push(line)
      })
      const line = yield* cli.nextLine("stderr", (l) => l === "tick 3", "5 seconds")
      assert.strictEqual(line, "tick 3")
      assert.deepStrictEqual(seen.slice(0, 3), ["tick 1", "tick 2", "tick 3"])
      const missing = yield* Effect.flip(cli.nextLine("stdout", () => true, "100 millis"))
      assert.strictEqual(missing.reason, "LineTimeout")
    }))

  it.scopedLive("keepOutput keeps the tail of each stream", () =>
    Effect.gen(function*() {
      const server = yield* ServerProcess.start({
        bin: fakeCli,
        args: ["--fill", "5000", "--listen", "http://127.0.0.1:2"],
        keepOutput: 100
      })
      const out = server.process.stdout()
      assert.strictEqual(out.length, 100)
      assert.isTrue(out.endsWith("listening on http://127.0.0.1:2\n"))
    }))
})
