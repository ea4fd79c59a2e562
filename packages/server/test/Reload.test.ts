/**
 * `SIGHUP` reloads the deployment of a running `switchyard` (the CLI binary, as operators run it):
 * a posture flip takes effect on the next request, a bad file keeps the running deployment and
 * says why, streams in flight finish on the routes they started with, and
 * `switchyard_config_reloads_total{outcome}` counts each reload.
 */
import { assert, describe, it } from "@effect/vitest"
import * as D from "@switchyard-ts/testkit/DeploymentBuilder"
import * as FakeUpstream from "@switchyard-ts/testkit/FakeUpstream"
import * as Effect from "effect/Effect"
import { writeFileSync } from "node:fs"
import { listening, printed, run, writeToml } from "./cliProcess.js"

/** A passthrough route `fast` and a capability route `judged` whose judge is down, under `posture`. */
const deployment = (upstreamUrl: string, posture: "error" | "fail_open"): string =>
  D.toToml({
    llm_clients: {
      sim: D.client("openai_chat", upstreamUrl, { max_retries: 0 }),
      dead: D.client("openai_chat", D.deadUrl, { max_retries: 0, timeout_ms: 2_000 })
    },
    targets: {
      weak: D.target("weak-model", "sim"),
      strong: D.target("strong-model", "sim"),
      judge: D.target("judge-model", "dead")
    },
    routes: {
      fast: D.passthrough("fast", "weak"),
      judged: D.capability("judged", {
        classifier_target: "judge",
        weak_target: "weak",
        strong_target: "strong",
        base_threshold: 0.7,
        judge_failure: posture
      })
    }
  })

const post = (url: string, model: string, stream = false) =>
  Effect.promise(() =>
    fetch(`${url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model, stream, messages: [{ role: "user", content: "hello" }] })
    }).then(async (response) => ({ status: response.status, text: await response.text() }))
  )

const reloadsCounted = (url: string) =>
  Effect.promise(() => fetch(`${url}/metrics`).then((response) => response.text())).pipe(
    Effect.map((text) => ({
      success: /switchyard_config_reloads_total\{outcome="success"[^}]*\} (\d+)/.exec(text)?.[1],
      error: /switchyard_config_reloads_total\{outcome="error"[^}]*\} (\d+)/.exec(text)?.[1]
    }))
  )

describe("SIGHUP reloads the deployment", () => {
  it.scopedLive("a posture flip takes effect on the next request; a bad file keeps the running deployment", () =>
    Effect.gen(function*() {
      const upstream = yield* FakeUpstream.make()
      const file = writeToml(deployment(upstream.url, "error"))
      const cli = yield* run(["--config", file, "--port", "0"])
      const url = yield* listening(cli)
      assert.deepStrictEqual(yield* reloadsCounted(url), { success: "0", error: "0" })
      assert.strictEqual((yield* post(url, "judged")).status, 502)

      writeFileSync(file, deployment(upstream.url, "fail_open"))
      process.kill(cli.child.pid ?? 0, "SIGHUP")
      yield* printed(cli, "config reloaded")
      assert.include(cli.stdout(), "changed=judged")
      const flipped = yield* post(url, "judged")
      assert.strictEqual(flipped.status, 200, flipped.text)
      assert.include(flipped.text, "strong-model")
      assert.deepStrictEqual(yield* reloadsCounted(url), { success: "1", error: "0" })

      // A file that does not validate: the running deployment (fail_open) stays, the reason is logged.
      writeFileSync(file, deployment(upstream.url, "fail_open").replace("base_threshold = 0.7", "base_threshold = 7"))
      process.kill(cli.child.pid ?? 0, "SIGHUP")
      yield* printed(cli, "config reload failed")
      const failed = cli.stdout().split("\n").find((line) => line.includes("config reload failed")) ?? ""
      assert.include(failed, "base_threshold")
      assert.strictEqual((yield* post(url, "judged")).status, 200)
      assert.strictEqual((yield* post(url, "fast")).status, 200)
      assert.deepStrictEqual(yield* reloadsCounted(url), { success: "1", error: "1" })

      // Unreadable: the same.
      writeFileSync(file, "not = [toml")
      process.kill(cli.child.pid ?? 0, "SIGHUP")
      yield* printed(cli, "config reload failed", 2)
      assert.strictEqual((yield* post(url, "judged")).status, 200)

      // Back to `error`: the flip works both ways; the process is still the one started.
      writeFileSync(file, deployment(upstream.url, "error"))
      process.kill(cli.child.pid ?? 0, "SIGHUP")
      yield* printed(cli, "config reloaded", 2)
      assert.strictEqual((yield* post(url, "judged")).status, 502)
      assert.deepStrictEqual(yield* reloadsCounted(url), { success: "2", error: "2" })
      cli.child.kill("SIGTERM")
      assert.strictEqual(yield* cli.exited, 0)
    }))

  it.scopedLive(
    "100 streams held across a reload all finish, on the route they started with",
    () =>
      Effect.gen(function*() {
        const upstream = yield* FakeUpstream.make()
        yield* upstream.setBehaviour("weak-model", FakeUpstream.Chunks.make({ chunks: ["one ", "two"], gapMs: 1_500 }))
        const file = writeToml(deployment(upstream.url, "error"))
        const cli = yield* run(["--config", file, "--port", "0"])
        const url = yield* listening(cli)
        const streams = yield* Effect.forEach(
          Array.from({ length: 100 }, (_, i) => i),
          () => Effect.fork(post(url, "fast", true)),
          { concurrency: "unbounded" }
        )
        yield* upstream.awaitRequests((records) => records.filter((r) => r.model === "weak-model").length >= 100)
        // `fast` now goes to another model: streams in flight keep theirs.
        writeFileSync(file, deployment(upstream.url, "fail_open").replace("target = \"weak\"", "target = \"strong\""))
        process.kill(cli.child.pid ?? 0, "SIGHUP")
        yield* printed(cli, "config reloaded")
        assert.include(cli.stdout(), "changed=fast,judged")
        const after = yield* post(url, "fast")
        assert.strictEqual(after.status, 200)
        assert.include(after.text, "strong-model")
        for (const stream of streams) {
          const done = yield* stream.await.pipe(Effect.flatten)
          assert.strictEqual(done.status, 200)
          assert.include(done.text, "one ")
          assert.include(done.text, "two")
          assert.include(done.text, "weak-model")
          assert.include(done.text, "data: [DONE]")
        }
        assert.deepStrictEqual(yield* reloadsCounted(url), { success: "1", error: "0" })
        cli.child.kill("SIGTERM")
        assert.strictEqual(yield* cli.exited, 0)
      }),
    { timeout: 60_000 }
  )
})
