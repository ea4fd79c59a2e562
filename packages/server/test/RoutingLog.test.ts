/**
 * The routing log (`--routing-log-file`) and `/v1/session-stats` through the real server: a
 * scripted traffic mix (passthrough, a classifier with a working judge, one whose judge is down
 * under `fail_open` and under `error`, a streamed answer with usage, a stream cut mid-way) gives
 * exactly the expected lines and session aggregates, with no key, secret or message content in the
 * file; a full queue drops and counts; an unwritable path never fails a request; SIGHUP rotation
 * through the CLI binary loses and duplicates no line.
 */
import type * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import { assert, describe, it } from "@effect/vitest"
import * as Cli from "@switchyard-ts/server/Cli"
import * as RoutingLog from "@switchyard-ts/server/RoutingLog"
import * as D from "@switchyard-ts/testkit/DeploymentBuilder"
import * as FakeUpstream from "@switchyard-ts/testkit/FakeUpstream"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Logger from "effect/Logger"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { existsSync, mkdtempSync, readFileSync, renameSync } from "node:fs"
import { tmpdir } from "node:os"
import * as path from "node:path"
import { listening, run, tomlFor, writeToml } from "./cliProcess.js"
import { basicDeployment, capabilityRoute, chat, startServer } from "./harness.js"

const inboundKey = "sk-routing-log-SECRET-0123456789"
const secretContent = "CONFIDENTIAL-PROMPT-TEXT-42"

const withKey = Effect.withConfigProvider(ConfigProvider.fromMap(new Map([["SWITCHYARD_RL_KEY", inboundKey]])))

const deployment = (upstreamUrl: string): D.Deployment => ({
  server: { api_keys_env: ["SWITCHYARD_RL_KEY"] },
  llm_clients: {
    sim: D.client("openai_chat", upstreamUrl, { max_retries: 0 }),
    stopped: D.client("openai_chat", D.deadUrl, { max_retries: 0, timeout_ms: 3000 })
  },
  targets: {
    judge: D.target("rl-judge", "sim"),
    down_judge: D.target("rl-judge-down", "stopped"),
    weak: D.target("weak-model", "sim"),
    strong: D.target("strong-model", "sim")
  },
  routes: D.byId(
    D.passthrough("fast", "weak"),
    capabilityRoute("auto", "judge", { classify_trigger: "user_turn", judge_failure: "fail_open" }),
    capabilityRoute("auto-down", "down_judge", { judge_failure: "fail_open" }),
    capabilityRoute("auto-error", "down_judge", { judge_failure: "error" })
  )
})

const usage = (prompt: number, completion: number, cached?: number) => ({
  prompt_tokens: prompt,
  completion_tokens: completion,
  total_tokens: prompt + completion,
  ...(cached === undefined ? {} : { prompt_tokens_details: { cached_tokens: cached } })
})

const verdict = FakeUpstream.ok(
  JSON.stringify({ crux: "a small fix", primary_rule: "SUP-1", capability_boundary: "supported", p_solve: 0.9 }),
  { usage: usage(20, 5) }
)

const headersFor = (requestId: string) => ({
  authorization: `Bearer ${inboundKey}`,
  "x-switchyard-session-id": "sess-rl",
  "x-switchyard-agent-id": "agent-7",
  "x-request-id": requestId,
  "x-switchyard-trial-id": "trial-3",
  // a blank origin is no origin
  "x-switchyard-origin": requestId === "req-1" ? "  " : " nightly-eval "
})

const body = (model: string, extra: Record<string, unknown> = {}) => ({
  model,
  messages: [{ role: "user", content: `${secretContent} please fix the typo` }],
  ...extra
})

const post = (client: HttpClient.HttpClient, requestId: string, payload: unknown) =>
  Effect.flatMap(
    client.execute(
      HttpClientRequest.post("/v1/chat/completions").pipe(
        HttpClientRequest.setHeaders(headersFor(requestId)),
        HttpClientRequest.bodyUnsafeJson(payload)
      )
    ),
    (response) => Effect.map(response.text, (text) => ({ status: response.status, text }))
  )

const get = (client: HttpClient.HttpClient, url: string, authorized = true) =>
  Effect.flatMap(
    client.execute(
      HttpClientRequest.get(url).pipe(
        HttpClientRequest.setHeaders(authorized ? { authorization: `Bearer ${inboundKey}` } : {})
      )
    ),
    (response) => Effect.map(response.text, (text) => ({ status: response.status, text }))
  )

const decodeLine = Schema.decodeUnknownSync(Schema.parseJson(RoutingLog.Line))
/** A written line's request id and origin, the origin key required. */
const WrittenOrigin = Schema.Struct({ request_id: Schema.String, origin: Schema.NullOr(Schema.String) })
const decodeStats = Schema.decodeUnknownSync(Schema.parseJson(RoutingLog.SessionStats))
const ErrorBody = Schema.parseJson(Schema.Struct({
  error: Schema.Struct({ message: Schema.String, type: Schema.String, code: Schema.String })
}))

/** The file's lines, each decoded; the clock-dependent fields (`ts`, latencies) checked and zeroed. */
const linesOf = (file: string): ReadonlyArray<RoutingLog.Line> => {
  const text = existsSync(file) ? readFileSync(file, "utf8") : ""
  return text.split("\n").filter((line) => line !== "").map((raw) => {
    const line = decodeLine(raw)
    assert.match(line.ts, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
    assert.isAtLeast(line.latency_ms, 0)
    if (line.kind !== "response") return { ...line, ts: "T", latency_ms: 0 }
    return { ...line, ts: "T", latency_ms: 0, judge: line.judge === null ? null : { ...line.judge, latency_ms: 0 } }
  })
}

const tempFile = (name = "routing.jsonl") => path.join(mkdtempSync(path.join(tmpdir(), "switchyard-rl-")), name)

const counterValue = (counter: typeof RoutingLog.droppedTotal) => Effect.map(Metric.value(counter), (s) => s.count)

const who = (requestId: string, route: string) => ({
  task: null,
  trial_id: "trial-3",
  session_id: "sess-rl",
  agent_id: "agent-7",
  request_id: requestId,
  route,
  route_id: route,
  origin: requestId === "req-1" ? null : "nightly-eval"
})

const noTokens = {
  prompt_tokens: 0,
  cached_tokens: 0,
  cache_creation_tokens: 0,
  completion_tokens: 0,
  reasoning_tokens: 0,
  total_tokens: 0,
  // no pricing file: every cost is unknown
  cost: null
}

const tokens = (prompt: number, completion: number, cached = 0) => ({
  ...noTokens,
  prompt_tokens: prompt,
  cached_tokens: cached,
  completion_tokens: completion,
  total_tokens: prompt + completion
})

const unknownCost = (calls: number) => ({
  known_usd: 0,
  total_usd: null,
  unknown_calls: calls,
  estimated_calls: 0,
  provider_reported_calls: 0
})

const noClassifier = { posture: null, trigger: null, judge: null, stored_before: null, stored_after: null }

describe("routing log", () => {
  it.scopedLive("a traffic mix gives one exact line per response and per judge call, and session stats", () =>
    Effect.gen(function*() {
      const file = tempFile()
      yield* Effect.scoped(Effect.gen(function*() {
        const { client, upstream } = yield* startServer(deployment, { routingLog: { path: file } })
        yield* upstream.setBehaviour("rl-judge", verdict)
        yield* upstream.script("weak-model", [
          FakeUpstream.ok("plain answer", { usage: usage(11, 3, 2) }),
          FakeUpstream.ok("weak answer", { usage: usage(7, 2) }),
          FakeUpstream.ok("streamed answer", { usage: usage(4, 2) }),
          FakeUpstream.CloseMidStream.make({ chunksBeforeClose: 1 })
        ])
        yield* upstream.script("strong-model", [FakeUpstream.ok("strong answer", { usage: usage(5, 1) })])

        assert.strictEqual((yield* post(client, "req-1", body("fast"))).status, 200)
        assert.strictEqual((yield* post(client, "req-2", body("auto"))).status, 200)
        assert.strictEqual((yield* post(client, "req-3", body("auto-down"))).status, 200)
        assert.strictEqual((yield* post(client, "req-4", body("auto-error"))).status, 502)
        const streamed = yield* post(
          client,
          "req-5",
          body("fast", { stream: true, stream_options: { include_usage: true } })
        )
        assert.include(streamed.text, "[DONE]")
        const cut = yield* post(client, "req-6", body("fast", { stream: true }))
        assert.notInclude(cut.text, "[DONE]")

        const stats = yield* get(client, "/v1/session-stats?session_id=sess-rl")
        assert.strictEqual(stats.status, 200)
        assert.deepStrictEqual(decodeStats(stats.text), {
          session_id: "sess-rl",
          total_calls: 7,
          total_prompt_tokens: 47,
          total_cached_tokens: 2,
          total_cache_creation_tokens: 0,
          total_completion_tokens: 13,
          // no pricing file: every counted call (7: 1 routing, 6 answers) is unknown
          cost: unknownCost(7),
          answer_cost: unknownCost(6),
          routing_cost: unknownCost(1),
          baseline_cost: unknownCost(6),
          savings: { total_usd: null, unknown_calls: 13 },
          models: {
            "rl-judge": {
              calls: 1,
              prompt_tokens: 20,
              cached_tokens: 0,
              cache_creation_tokens: 0,
              completion_tokens: 5,
              cost: unknownCost(1)
            },
            "strong-model": {
              calls: 1,
              prompt_tokens: 5,
              cached_tokens: 0,
              cache_creation_tokens: 0,
              completion_tokens: 1,
              cost: unknownCost(1)
            },
            unknown: {
              calls: 1,
              prompt_tokens: 0,
              cached_tokens: 0,
              cache_creation_tokens: 0,
              completion_tokens: 0,
              cost: unknownCost(1)
            },
            "weak-model": {
              calls: 4,
              prompt_tokens: 22,
              cached_tokens: 2,
              cache_creation_tokens: 0,
              completion_tokens: 7,
              cost: unknownCost(4)
            }
          }
        })
        // The compatible system's path answers the same.
        assert.deepStrictEqual(
          decodeStats((yield* get(client, "/v1/routing/session-stats?session_id=sess-rl")).text),
          decodeStats(stats.text)
        )
      }))

      // The scope closed: shutdown wrote everything queued.
      const text = readFileSync(file, "utf8")
      for (const secret of [inboundKey, secretContent, "please fix the typo", "authorization", "Bearer"]) {
        assert.notInclude(text, secret)
      }
      const lines = linesOf(file)
      const passthrough = {
        ...who("req-1", "fast"),
        kind: "response" as const,
        algorithm: "passthrough",
        model: "weak-model",
        selected_model: "weak-model",
        tier: null,
        wire_format: "openai_chat",
        streaming: false,
        user_turn: true,
        status: 200,
        outcome: "ok" as const,
        error: null,
        evidence: { source: "passthrough" as const },
        ...noClassifier,
        ts: "T",
        latency_ms: 0,
        // no pricing file: no baseline cost; a passthrough route's baseline is its own target
        baseline_model: "weak-model",
        baseline_cost: null
      }
      const judgeLine = (
        requestId: string,
        route: string,
        model: string,
        outcome: RoutingLog.JudgeLine["outcome"]
      ) => ({
        kind: "judge" as const,
        ts: "T",
        ...who(requestId, route),
        model,
        tier: "classifier" as const,
        outcome,
        latency_ms: 0,
        ...(outcome === "ok" ? tokens(20, 5) : noTokens)
      })
      const classifier = (requestId: string, route: string) => ({
        ...passthrough,
        ...who(requestId, route),
        algorithm: "llm_task_classifier",
        // a capability route's baseline is its strong target
        baseline_model: "strong-model"
      })
      assert.deepStrictEqual(lines, [
        { ...passthrough, ...tokens(11, 3, 2) },
        judgeLine("req-2", "auto", "rl-judge", "ok"),
        {
          ...classifier("req-2", "auto"),
          tier: "weak",
          evidence: { source: "llm-classifier", score: 0.9, threshold: 0.5, boundary: "supported" },
          posture: "fail_open",
          trigger: "user_turn",
          judge: { model: "rl-judge", outcome: "ok", latency_ms: 0 },
          stored_before: null,
          stored_after: { target: "weak", tier: "weak", streak: null },
          ...tokens(7, 2)
        },
        judgeLine("req-3", "auto-down", "rl-judge-down", "transport"),
        {
          ...classifier("req-3", "auto-down"),
          model: "strong-model",
          selected_model: "strong-model",
          tier: "strong",
          evidence: { source: "fail-open", reason: "transport", judge_model: "rl-judge-down" },
          posture: "fail_open",
          trigger: "every_request",
          judge: { model: "rl-judge-down", outcome: "transport", latency_ms: 0 },
          ...tokens(5, 1)
        },
        judgeLine("req-4", "auto-error", "rl-judge-down", "transport"),
        {
          ...passthrough,
          ...who("req-4", "auto-error"),
          algorithm: null,
          model: "",
          selected_model: null,
          status: 502,
          outcome: "error",
          error: "upstream_error",
          evidence: null,
          posture: "error",
          trigger: "every_request",
          judge: { model: "rl-judge-down", outcome: "transport", latency_ms: 0 },
          ...noTokens,
          baseline_model: null
        },
        { ...passthrough, ...who("req-5", "fast"), streaming: true, ...tokens(4, 2) },
        { ...passthrough, ...who("req-6", "fast"), streaming: true, outcome: "stream_error", ...noTokens }
      ])
    }).pipe(withKey))

  it.scopedLive("a caller that goes away mid-stream gets an `incomplete` line, written when the writing ended", () =>
    Effect.gen(function*() {
      const file = tempFile()
      yield* Effect.scoped(Effect.gen(function*() {
        const { upstream, url } = yield* startServer(basicDeployment(), { routingLog: { path: file } })
        yield* upstream.setBehaviour("weak-model", FakeUpstream.ok("a b c d e f g h i j k l", { gapMs: 200 }))
        yield* Effect.promise(async () => {
          const controller = new AbortController()
          const response = await fetch(`${url}/v1/chat/completions`, {
            method: "POST",
            headers: { "content-type": "application/json", "x-request-id": "gone" },
            body: JSON.stringify(chat("fast", { stream: true })),
            signal: controller.signal
          })
          const reader = response.body?.getReader()
          await reader?.read()
          controller.abort()
        })
        yield* upstream.awaitClosed("weak-model")
      }))
      const lines = linesOf(file)
      assert.strictEqual(lines.length, 1)
      const [line] = lines
      assert.strictEqual(line?.kind, "response")
      if (line?.kind === "response") {
        assert.strictEqual(line.request_id, "gone")
        assert.strictEqual(line.streaming, true)
        assert.strictEqual(line.status, 200)
        assert.strictEqual(line.outcome, "incomplete")
      }
    }))

  it.scopedLive(
    "origin is written null when x-switchyard-origin is absent, empty, blank or not text; a line without it still decodes",
    () =>
      Effect.gen(function*() {
        const file = tempFile()
        const origins: ReadonlyArray<readonly [string, string | undefined, string | null]> = [
          ["absent", undefined, null],
          ["empty", "", null],
          ["blank", " \t ", null],
          // a byte outside visible ASCII: not text, as the compatible system reads a header
          ["latin1", "nightly-\u00e9val", null],
          ["label", " nightly-eval ", "nightly-eval"]
        ]
        yield* Effect.scoped(Effect.gen(function*() {
          const { upstream, url } = yield* startServer(basicDeployment(), { routingLog: { path: file } })
          yield* upstream.setBehaviour("weak-model", FakeUpstream.ok("answer"))
          for (const [requestId, origin] of origins) {
            const status = yield* Effect.promise(() =>
              fetch(`${url}/v1/chat/completions`, {
                method: "POST",
                headers: {
                  "content-type": "application/json",
                  "x-request-id": requestId,
                  ...(origin === undefined ? {} : { "x-switchyard-origin": origin })
                },
                body: JSON.stringify(chat("fast"))
              }).then((response) => response.status)
            )
            assert.strictEqual(status, 200)
          }
        }))
        // the written text, not the decoded line (decoding a line without the key gives null too)
        const written = readFileSync(file, "utf8").split("\n").filter((line) => line !== "").map((line) =>
          Schema.decodeUnknownSync(Schema.parseJson(WrittenOrigin))(line)
        )
        assert.deepStrictEqual(
          written,
          origins.map(([requestId, , origin]) => ({ request_id: requestId, origin }))
        )
        // a line of a version before origin (and route_id) decodes with origin null
        const [first = ""] = readFileSync(file, "utf8").split("\n")
        const { origin: _origin, route_id: _routeId, ...older } = Schema.decodeUnknownSync(
          Schema.parseJson(Schema.Record({ key: Schema.String, value: Schema.Unknown }))
        )(first)
        const decoded = decodeLine(JSON.stringify(older))
        assert.strictEqual(decoded.origin, null)
        assert.strictEqual(decoded.route_id, undefined)
      })
  )

  it.scopedLive("session stats: protected by inbound auth, 400 without session_id, 404 for an unknown session", () =>
    Effect.gen(function*() {
      const { client } = yield* startServer(deployment, { routingLog: { path: tempFile() } })
      assert.strictEqual((yield* get(client, "/v1/session-stats?session_id=x", false)).status, 401)
      const missing = yield* get(client, "/v1/session-stats")
      assert.strictEqual(missing.status, 400)
      assert.strictEqual(Schema.decodeUnknownSync(ErrorBody)(missing.text).error.code, "invalid_query")
      const unknown = yield* get(client, "/v1/session-stats?session_id=nobody")
      assert.strictEqual(unknown.status, 404)
      assert.deepStrictEqual(Schema.decodeUnknownSync(ErrorBody)(unknown.text).error, {
        message: "Routing session not found",
        type: "not_found",
        code: "routing_session_not_found"
      })
    }).pipe(withKey))

  it.scopedLive("without --routing-log-file there is no session-stats endpoint and no file", () =>
    Effect.gen(function*() {
      const { client } = yield* startServer(basicDeployment())
      const response = yield* get(client, "/v1/session-stats?session_id=x")
      assert.strictEqual(response.status, 404)
      assert.strictEqual(Schema.decodeUnknownSync(ErrorBody)(response.text).error.code, "endpoint_not_found")
    }))

  it.scopedLive("a full queue drops lines and counts them; every line is either written or dropped", () =>
    Effect.gen(function*() {
      const file = tempFile()
      const before = yield* counterValue(RoutingLog.droppedTotal)
      const appended = 50
      yield* Effect.scoped(Effect.gen(function*() {
        const log = yield* RoutingLog.make({ path: file, capacity: 4 })
        const line = (i: number): RoutingLog.Line => ({
          kind: "judge",
          ts: "2026-01-01T00:00:00.000Z",
          ...who(`req-${i}`, "auto"),
          model: "rl-judge",
          tier: "classifier",
          outcome: "ok",
          latency_ms: 1,
          ...noTokens
        })
        // One synchronous burst: the writer cannot take anything in between.
        yield* Effect.sync(() => {
          for (let i = 0; i < appended; i++) log.unsafeAppend(line(i))
        })
      }))
      const dropped = (yield* counterValue(RoutingLog.droppedTotal)) - before
      const written = linesOf(file).length
      // capacity 4, plus at most one line handed straight to a waiting writer
      assert.isAtMost(written, 5)
      assert.isAtLeast(written, 4)
      assert.strictEqual(written + dropped, appended)
    }))

  it.scoped("session stats keep at most maxSessions sessions, the least recently updated evicted first", () =>
    Effect.gen(function*() {
      const log = yield* RoutingLog.make({ path: tempFile(), maxSessions: 2 })
      const line = (session: string): RoutingLog.Line => ({
        kind: "judge",
        ts: "2026-01-01T00:00:00.000Z",
        ...who("r", "auto"),
        session_id: session,
        model: "rl-judge",
        tier: "classifier",
        outcome: "ok",
        latency_ms: 1,
        ...tokens(3, 1)
      })
      yield* Effect.sync(() => {
        log.unsafeAppend(line("a"))
        log.unsafeAppend(line("b"))
        log.unsafeAppend(line("a"))
        log.unsafeAppend(line("c"))
      })
      assert.isTrue(Option.isNone(yield* log.sessionStats("b")))
      const a = yield* log.sessionStats("a")
      assert.isTrue(Option.isSome(a))
      assert.strictEqual(Option.getOrThrow(a).total_calls, 2)
      assert.strictEqual(Option.getOrThrow(a).total_prompt_tokens, 6)
      assert.isTrue(Option.isSome(yield* log.sessionStats("c")))
    }))

  it.effect("--routing-log-file is parsed, and an empty path is a usage error", () =>
    Effect.gen(function*() {
      assert.isUndefined((yield* Cli.parseCli(["--config", "x.toml"])).routingLogFile)
      assert.strictEqual(
        (yield* Cli.parseCli(["--config", "x.toml", "--routing-log-file", "/var/log/sy.jsonl"])).routingLogFile,
        "/var/log/sy.jsonl"
      )
      const empty = yield* Effect.either(Cli.parseCli(["--config", "x.toml", "--routing-log-file", ""]))
      assert.isTrue(Either.isLeft(empty))
    }))

  for (
    const [label, unwritable] of [
      ["a directory", () => mkdtempSync(path.join(tmpdir(), "switchyard-rl-dir-"))],
      ["a path in a missing folder", () => path.join(tmpdir(), `switchyard-rl-missing-${process.pid}`, "log.jsonl")]
    ] as const
  ) {
    it.scopedLive(`an unwritable path (${label}) never fails a request: lines are counted as lost, one WARN`, () =>
      Effect.gen(function*() {
        const before = yield* counterValue(RoutingLog.writeErrorsTotal)
        const warnings: Array<string> = []
        const logger = Logger.make<unknown, void>(({ logLevel, message }) => {
          if (logLevel._tag === "Warning") warnings.push(JSON.stringify(message))
        })
        yield* Effect.scoped(Effect.gen(function*() {
          const { client } = yield* startServer(
            basicDeployment(),
            { routingLog: { path: unwritable() } },
            Option.some(logger)
          )
          for (let i = 0; i < 3; i++) {
            const response = yield* client.execute(
              HttpClientRequest.post("/v1/chat/completions").pipe(HttpClientRequest.bodyUnsafeJson(chat("fast")))
            )
            assert.strictEqual(response.status, 200)
          }
        }))
        assert.strictEqual((yield* counterValue(RoutingLog.writeErrorsTotal)) - before, 3)
        assert.strictEqual(warnings.filter((w) => w.includes("routing log write failed")).length, 1)
      }))
  }
})

describe("routing log rotation through the CLI", () => {
  it.scopedLive("mv + SIGHUP: later lines go to the new file, and no line is lost or duplicated", () =>
    Effect.gen(function*() {
      const upstream = yield* FakeUpstream.make()
      const file = tempFile()
      const cli = yield* run(["--config", writeToml(tomlFor(upstream.url)), "--port", "0", "--routing-log-file", file])
      const url = yield* listening(cli)
      const send = (requestId: string) =>
        Effect.promise(() =>
          fetch(`${url}/v1/chat/completions`, {
            method: "POST",
            headers: { "content-type": "application/json", "x-request-id": requestId },
            body: JSON.stringify(chat("fast"))
          }).then((response) => response.text().then(() => response.status))
        )
      for (let i = 0; i < 5; i++) assert.strictEqual(yield* send(`before-${i}`), 200)
      renameSync(file, `${file}.1`)
      process.kill(cli.child.pid ?? 0, "SIGHUP")
      for (let i = 0; i < 5; i++) assert.strictEqual(yield* send(`after-${i}`), 200)
      cli.child.kill("SIGTERM")
      assert.strictEqual(yield* cli.exited, 0)

      const rotated = linesOf(`${file}.1`)
      const fresh = linesOf(file)
      assert.isAbove(fresh.length, 0)
      const ids = [...rotated, ...fresh].map((line) => line.request_id ?? "").sort()
      assert.deepStrictEqual(ids, [
        ...Array.from({ length: 5 }, (_, i) => `after-${i}`),
        ...Array.from({ length: 5 }, (_, i) => `before-${i}`)
      ])
    }))
})
