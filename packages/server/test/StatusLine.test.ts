/**
 * `switchyard status-line`: the line for a session's stats (calls and tokens; cost, a lower bound
 * while calls are unpriced, and routing's share when the server prices calls), and the command
 * against the real server — by `--session-id` and from Claude Code's status-line JSON on standard
 * input — and against a refused key, an unknown session and a stopped server: always one short
 * line and exit code 0.
 */
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import { assert, describe, it } from "@effect/vitest"
import * as Pricing from "@switchyard-ts/routing/Pricing"
import * as Cli from "@switchyard-ts/server/Cli"
import * as D from "@switchyard-ts/testkit/DeploymentBuilder"
import * as FakeUpstream from "@switchyard-ts/testkit/FakeUpstream"
import * as ServerProcess from "@switchyard-ts/testkit/ServerProcess"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { spawn } from "node:child_process"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import * as path from "node:path"
import { startServer } from "./harness.js"

const inboundKey = "sk-status-line-SECRET-0123456789"

const deployment = (upstreamUrl: string): D.Deployment => ({
  server: { api_keys_env: ["SWITCHYARD_SL_KEY"] },
  llm_clients: { sim: D.client("openai_chat", upstreamUrl, { max_retries: 0 }) },
  targets: { weak: D.target("weak-model", "sim") },
  routes: D.byId(D.passthrough("fast", "weak"))
})

const withKey = Effect.withConfigProvider(ConfigProvider.fromMap(new Map([["SWITCHYARD_SL_KEY", inboundKey]])))

/** The lines `effect` prints with `Console.log`. */
const printed = <A, E>(effect: Effect.Effect<A, E>) =>
  Effect.gen(function*() {
    const lines: Array<string> = []
    const console = yield* Console.consoleWith((real) =>
      Effect.succeed<Console.Console>({
        ...real,
        log: (...args) => Effect.sync(() => void lines.push(args.map(String).join(" ")))
      })
    )
    yield* Effect.withConsole(effect, console)
    return lines
  })

/** The bin, run with `args` and `stdin`; its stdout and exit code. */
const runBin = (args: ReadonlyArray<string>, stdin: string, env: Readonly<Record<string, string>> = {}) =>
  Effect.async<{ readonly stdout: string; readonly stderr: string; readonly code: number | null }>((resume) => {
    const bin = path.join(ServerProcess.repositoryRoot, "packages/server/bin/switchyard.js")
    const child = spawn(process.execPath, [bin, ...args], {
      env: { PATH: process.env.PATH ?? "", ...env },
      stdio: ["pipe", "pipe", "pipe"]
    })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (part: Buffer) => void (stdout += part.toString("utf8")))
    child.stderr.on("data", (part: Buffer) => void (stderr += part.toString("utf8")))
    child.once("exit", (code) => resume(Effect.succeed({ stdout, stderr, code })))
    child.stdin.end(stdin)
    return Effect.sync(() => void child.kill("SIGKILL"))
  })

/** A status-line JSON as Claude Code writes it (abridged: the command reads only `session_id`). */
const claudeStatus = (sessionId: string) =>
  JSON.stringify({
    hook_event_name: "Status",
    session_id: sessionId,
    transcript_path: "/tmp/transcript.jsonl",
    cwd: "/work/project",
    model: { id: "claude-sonnet-5-5", display_name: "Sonnet" },
    workspace: { current_dir: "/work/project", project_dir: "/work/project" },
    version: "2.1.332",
    cost: { total_cost_usd: 0.01, total_duration_ms: 1000 }
  })

const totals = (known: number, total: number | null, unknown: number, estimated = 1) => ({
  known_usd: known,
  total_usd: total,
  unknown_calls: unknown,
  estimated_calls: estimated,
  provider_reported_calls: 0
})

describe("Cli.renderStats", () => {
  const base = { total_calls: 12, total_prompt_tokens: 48_213, total_completion_tokens: 3_100 }

  it("without prices: calls and tokens", () => {
    assert.strictEqual(Cli.renderStats(base), "switchyard: 12 calls, 48.2k in / 3100 out tokens")
    // a server without a pricing file counts every call unpriced
    assert.strictEqual(
      Cli.renderStats({ ...base, cost: totals(0, null, 12, 0), routing_cost: totals(0, 0, 0, 0) }),
      "switchyard: 12 calls, 48.2k in / 3100 out tokens"
    )
    assert.strictEqual(
      Cli.renderStats({ ...base, total_calls: 1, total_prompt_tokens: 11, total_completion_tokens: 3 }),
      "switchyard: 1 call, 11 in / 3 out tokens"
    )
  })

  it("with prices: the session's cost and routing's share of it", () => {
    assert.strictEqual(
      Cli.renderStats({ ...base, cost: totals(0.0421, 0.0421, 0), routing_cost: totals(0.0013, 0.0013, 0) }),
      "switchyard: 12 calls, $0.0421, routing $0.0013 3%"
    )
    assert.strictEqual(
      Cli.renderStats({ ...base, cost: totals(2.5, 2.5, 0), routing_cost: totals(0, 0, 0) }),
      "switchyard: 12 calls, $2.50"
    )
    assert.strictEqual(
      Cli.renderStats({ ...base, cost: totals(0.000026, 0.000026, 0), routing_cost: totals(0.000004, 0.000004, 0) }),
      "switchyard: 12 calls, $0.000026, routing $0.000004 15%"
    )
  })

  it("with every call priced, the savings against the baseline (negative: routing cost more), none when 0 or unknown", () => {
    const cost = { cost: totals(0.000223, 0.000223, 0), routing_cost: totals(0.000189, 0.000189, 0) }
    assert.strictEqual(
      Cli.renderStats({ ...base, ...cost, savings: { total_usd: 0.0042, unknown_calls: 0 } }),
      "switchyard: 12 calls, $0.000223, routing $0.000189 85%, saved $0.0042"
    )
    assert.strictEqual(
      Cli.renderStats({ ...base, ...cost, savings: { total_usd: -0.00115, unknown_calls: 0 } }),
      "switchyard: 12 calls, $0.000223, routing $0.000189 85%, saved -$0.0011"
    )
    assert.strictEqual(
      Cli.renderStats({ ...base, ...cost, savings: { total_usd: -0.000012, unknown_calls: 0 } }),
      "switchyard: 12 calls, $0.000223, routing $0.000189 85%, saved -$0.000012"
    )
    assert.strictEqual(
      Cli.renderStats({ ...base, ...cost, savings: { total_usd: 0, unknown_calls: 0 } }),
      "switchyard: 12 calls, $0.000223, routing $0.000189 85%"
    )
    assert.strictEqual(
      Cli.renderStats({ ...base, ...cost, savings: { total_usd: null, unknown_calls: 1 } }),
      "switchyard: 12 calls, $0.000223, routing $0.000189 85%"
    )
  })

  it("while calls are unpriced, the known cost is a lower bound", () => {
    assert.strictEqual(
      Cli.renderStats({ ...base, cost: totals(0.04, null, 2) }),
      "switchyard: 12 calls, $0.0400+ (2 unpriced calls)"
    )
    assert.strictEqual(
      Cli.renderStats({ ...base, cost: totals(0, null, 1) }),
      "switchyard: 12 calls, $0.0000+ (1 unpriced call)"
    )
  })
})

describe("switchyard status-line against the server", () => {
  it.scopedLive("by --session-id and from Claude Code's status-line JSON; unknown sessions and refused keys are lines", () =>
    Effect.gen(function*() {
      const file = path.join(mkdtempSync(path.join(tmpdir(), "switchyard-status-")), "routing.jsonl")
      const { client, upstream, url } = yield* withKey(startServer(deployment, { routingLog: { path: file } }))
      yield* upstream.setBehaviour(
        "weak-model",
        FakeUpstream.ok("done", { usage: { prompt_tokens: 11, completion_tokens: 3, total_tokens: 14 } })
      )
      const answered = yield* client.execute(
        HttpClientRequest.post("/v1/chat/completions").pipe(
          HttpClientRequest.setHeaders({
            authorization: `Bearer ${inboundKey}`,
            "x-claude-code-session-id": "sess-sl"
          }),
          HttpClientRequest.bodyUnsafeJson({ model: "fast", messages: [{ role: "user", content: "fix it" }] })
        )
      )
      assert.strictEqual(answered.status, 200)

      const options = { url, apiKeyEnv: "SWITCHYARD_SL_TEST_KEY", timeoutMs: 5_000 }
      const keyed = Effect.withConfigProvider(
        ConfigProvider.fromMap(new Map([["SWITCHYARD_SL_TEST_KEY", inboundKey]]))
      )
      assert.deepStrictEqual(yield* keyed(printed(Cli.statusLineProgram({ ...options, sessionId: "sess-sl" }))), [
        "switchyard: 1 call, 11 in / 3 out tokens"
      ])
      assert.deepStrictEqual(
        yield* keyed(printed(Cli.statusLineProgram({ ...options, sessionId: "nope-0123456789" }))),
        [
          "switchyard: no calls recorded for session nope-012 yet"
        ]
      )
      const keyless = Effect.withConfigProvider(ConfigProvider.fromMap(new Map()))
      assert.deepStrictEqual(yield* keyless(printed(Cli.statusLineProgram({ ...options, sessionId: "sess-sl" }))), [
        "switchyard: the server refused the key (see --api-key-env)"
      ])

      // the bin, as Claude Code's statusLine runs it: the JSON on standard input, the key in the environment
      const bin = yield* runBin(["status-line", "--url", url], claudeStatus("sess-sl"), {
        SWITCHYARD_API_KEY: inboundKey
      })
      assert.deepStrictEqual(bin, { stdout: "switchyard: 1 call, 11 in / 3 out tokens\n", stderr: "", code: 0 })
      assert.notInclude(bin.stdout, inboundKey)
    }))

  it.scopedLive("a server that prices calls: the session's cost and the judge's share of it", () =>
    Effect.gen(function*() {
      const table = Either.getOrThrow(Pricing.parse(
        JSON.stringify({
          "weak-model": { input: 1000, output: 5000, cache_read: 0, cache_write: 0 },
          "judge-model": { input: 100, output: 100, cache_read: 0, cache_write: 0 }
        }),
        "prices.json"
      ))
      const file = path.join(mkdtempSync(path.join(tmpdir(), "switchyard-status-")), "routing.jsonl")
      const { client, upstream, url } = yield* startServer((upstreamUrl) => ({
        llm_clients: { sim: D.client("openai_chat", upstreamUrl, { max_retries: 0 }) },
        targets: {
          weak: D.target("weak-model", "sim"),
          strong: D.target("strong-model", "sim"),
          judge: D.target("judge-model", "sim")
        },
        routes: D.byId(D.capability("auto", {
          classifier_target: "judge",
          weak_target: "weak",
          strong_target: "strong",
          base_threshold: 0.5
        }))
      }), { routingLog: { path: file }, prices: table })
      yield* upstream.setBehaviour(
        "judge-model",
        FakeUpstream.ok(
          JSON.stringify({ crux: "a typo", primary_rule: "SUP-1", capability_boundary: "supported", p_solve: 0.9 }),
          { usage: { prompt_tokens: 30, completion_tokens: 10, total_tokens: 40 } }
        )
      )
      yield* upstream.setBehaviour(
        "weak-model",
        FakeUpstream.ok("done", { usage: { prompt_tokens: 11, completion_tokens: 3, total_tokens: 14 } })
      )
      const answered = yield* client.execute(
        HttpClientRequest.post("/v1/chat/completions").pipe(
          HttpClientRequest.setHeaders({ "x-claude-code-session-id": "sess-priced" }),
          HttpClientRequest.bodyUnsafeJson({ model: "auto", messages: [{ role: "user", content: "fix the typo" }] })
        )
      )
      assert.strictEqual(answered.status, 200)
      // answer 11 × $1000/M + 3 × $5000/M = $0.026; judge 40 × $100/M = $0.004; 2 calls
      const bin = yield* runBin(["status-line", "--url", url], claudeStatus("sess-priced"))
      assert.deepStrictEqual(bin, {
        stdout: "switchyard: 2 calls, $0.0300, routing $0.0040 13%\n",
        stderr: "",
        code: 0
      })
    }))

  it.scopedLive("a stopped server or a status without a session id: one short line, exit 0", () =>
    Effect.gen(function*() {
      const down = yield* runBin(["status-line", "--url", "http://127.0.0.1:9"], claudeStatus("sess-sl"))
      assert.deepStrictEqual(down, {
        stdout: "switchyard: server not reachable at http://127.0.0.1:9\n",
        stderr: "",
        code: 0
      })
      const anonymous = yield* runBin(["status-line", "--url", "http://127.0.0.1:9"], "{}")
      assert.deepStrictEqual(anonymous, {
        stdout: "switchyard: no session id (status-line JSON without session_id)\n",
        stderr: "",
        code: 0
      })
      const bad = yield* runBin(["status-line", "--timeout-ms", "0"], "")
      assert.strictEqual(bad.code, 2)
      assert.include(bad.stderr, "--timeout-ms must be from 1 to 60000")
    }))
})
