/**
 * Policy replay: replaying a routing log under the configuration that wrote it reproduces every
 * logged decision (a property over judge-outcome schedules, sessions, turns and route settings, the
 * log written by the real capability route and judge through the routing log's own line builder);
 * a worked example of another posture and threshold; and the `replay` command on a log file.
 */
import { assert, describe, it, vi } from "@effect/vitest"
import type { Target } from "@switchyard-ts/client/Target"
import { ofChat, UpstreamClient } from "@switchyard-ts/client/UpstreamClient"
import { toHttp, TransportError, UpstreamStatus } from "@switchyard-ts/protocol/Errors"
import { SessionId } from "@switchyard-ts/protocol/Ids"
import type { Message } from "@switchyard-ts/protocol/OpenAiChat"
import * as CapabilityRoute from "@switchyard-ts/routing/CapabilityRoute"
import * as Judge from "@switchyard-ts/routing/Judge"
import * as RoutingFacts from "@switchyard-ts/routing/RoutingFacts"
import * as SessionStore from "@switchyard-ts/routing/SessionStore"
import * as Cli from "@switchyard-ts/server/Cli"
import * as PolicyReplay from "@switchyard-ts/server/PolicyReplay"
import * as RoutingLog from "@switchyard-ts/server/RoutingLog"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FastCheck from "effect/FastCheck"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { spawnSync } from "node:child_process"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import * as path from "node:path"
import * as RoutingLine from "../src/internal/routingLine.js"
import { root } from "./cliProcess.js"

const client = {
  name: "sim",
  format: "openai_chat",
  baseUrl: "http://127.0.0.1:9/v1",
  apiKey: Option.none(),
  extraHeaders: {},
  maxRetries: 0,
  timeoutMs: Option.none()
} as const
const target = (name: string, id: string): Target => ({ name, id, client, extraBody: {} })
const judgeTarget = target("judge", "judge-model")

/** What the judge does for one request. */
type JudgeStep =
  | { readonly _tag: "verdict"; readonly p: number; readonly boundary: "supported" | "uncertain" | "unsupported" }
  | { readonly _tag: "transport" }
  | { readonly _tag: "status"; readonly status: 500 | 400 }
  | { readonly _tag: "garbage" }

interface Step {
  readonly session: "a" | "b" | null
  readonly userTurn: boolean
  readonly judge: JudgeStep
}

const stepArbitrary: FastCheck.Arbitrary<Step> = FastCheck.record({
  session: FastCheck.constantFrom("a" as const, "b" as const, null),
  userTurn: FastCheck.boolean(),
  judge: FastCheck.oneof(
    FastCheck.record({
      _tag: FastCheck.constant("verdict" as const),
      p: FastCheck.constantFrom(0.1, 0.4, 0.5, 0.6, 0.75, 0.9),
      boundary: FastCheck.constantFrom("supported" as const, "uncertain" as const, "unsupported" as const)
    }),
    FastCheck.constant({ _tag: "transport" as const }),
    FastCheck.record({
      _tag: FastCheck.constant("status" as const),
      status: FastCheck.constantFrom(500 as const, 400 as const)
    }),
    FastCheck.constant({ _tag: "garbage" as const })
  )
})

const settingsArbitrary: FastCheck.Arbitrary<PolicyReplay.CapabilitySettings> = FastCheck.record({
  baseThreshold: FastCheck.constantFrom(0.3, 0.5, 0.7),
  thresholdStep: FastCheck.constantFrom(0, 0.1),
  classifyTrigger: FastCheck.constantFrom("every_request" as const, "user_turn" as const, "new_session" as const),
  judgeFailure: FastCheck.constantFrom("error" as const, "fail_open" as const)
})

const messagesOf = (userTurn: boolean): ReadonlyArray<Message> =>
  userTurn
    ? [{ role: "user", content: "fix the typo" }]
    : [
      { role: "user", content: "fix the typo" },
      { role: "assistant", content: "looking" },
      { role: "tool", content: "file contents", tool_call_id: "call_1" }
    ]

const verdictText = (p: number, boundary: string) =>
  JSON.stringify({
    crux: "c",
    primary_rule: boundary === "supported" ? "SUP-1" : "LIM-2",
    capability_boundary: boundary,
    p_solve: p
  })

/** An upstream whose judge answers the scripted step; answer calls are never made (decide only). */
const upstreamFor = (current: () => JudgeStep) =>
  Layer.succeed(
    UpstreamClient,
    ofChat({
      complete: ({ target: called }) => {
        const step = current()
        switch (step._tag) {
          case "transport":
            return Effect.fail(new TransportError({ target: called.id, reason: "connection refused" }))
          case "status":
            return Effect.fail(new UpstreamStatus({ target: called.id, status: step.status }))
          default:
            return Effect.succeed({
              id: "j",
              object: "chat.completion",
              created: 0,
              model: called.id,
              choices: [{
                index: 0,
                message: {
                  role: "assistant",
                  content: step._tag === "garbage" ? "not json" : verdictText(step.p, step.boundary)
                },
                finish_reason: "stop"
              }],
              usage: { prompt_tokens: 10, completion_tokens: 2, total_tokens: 12 }
            })
        }
      },
      stream: () => Effect.dieMessage("not used"),
      countTokens: () => Effect.dieMessage("not used"),
      register: () => Effect.void,
      breakers: Effect.succeed([])
    })
  )

/** A routing log that keeps its lines in memory. */
const memoryLog = () => {
  const lines: Array<RoutingLog.Line> = []
  const log = RoutingLog.RoutingLog.of({
    enabled: true,
    unsafeAppend: (line) => {
      lines.push(line)
    },
    sessionStats: () => Effect.succeedNone
  })
  return { lines, log }
}

/** Route `steps` through the real capability route and judge, writing the routing log's lines. */
const logOf = (steps: ReadonlyArray<Step>, settings: PolicyReplay.CapabilitySettings) =>
  Effect.scoped(Effect.gen(function*() {
    let current: JudgeStep = { _tag: "garbage" }
    const route = yield* CapabilityRoute.make({
      id: "auto",
      name: "auto",
      judge: judgeTarget,
      prompt: Option.none(),
      responseFormatType: "json_schema",
      maxOutputTokens: 64,
      recentTurnWindow: Option.none(),
      weak: target("weak", "weak-model"),
      strong: target("strong", "strong-model"),
      messageHashFallback: false,
      ...settings
    }).pipe(
      Effect.provide(
        Layer.merge(
          Judge.layer.pipe(Layer.provide(upstreamFor(() => current))),
          SessionStore.layerMemory({ maxEntries: 100, ttlMs: 3_600_000 })
        )
      )
    )
    const { lines, log } = memoryLog()
    for (const step of steps) {
      current = step.judge
      const headers: Record<string, string> = step.session === null ? {} : { "x-switchyard-session-id": step.session }
      const tally = RoutingLine.start(log, headers, "auto", step.userTurn)
      const exit = yield* Effect.exit(
        RoutingFacts.observe(tally.observer)(
          route.decide({
            body: { model: "auto", messages: messagesOf(step.userTurn) },
            headers,
            sessionId: step.session === null ? Option.none() : Option.some(SessionId.make(step.session))
          })
        )
      )
      const decision = Exit.isSuccess(exit) ? Option.some(exit.value) : Option.none()
      const status = Exit.isSuccess(exit) ? 200 : 502
      tally.respond({
        decision,
        model: Option.match(decision, {
          onNone: () => "",
          onSome: (d) => d._tag === "Routed" ? d.selected.id : "auto"
        }),
        wireFormat: "openai_chat",
        streaming: false,
        status,
        error: Exit.isSuccess(exit) ? "" : Option.match(
          Cause.failureOption(exit.cause),
          { onNone: () => "internal_error", onSome: (e) => toHttp(e).code }
        ),
        latencyMs: 1,
        endedAtMs: 0
      })
    }
    return lines
  }))

/** The settings the examples' logs are written under. */
const settings: PolicyReplay.CapabilitySettings = {
  baseThreshold: 0.5,
  thresholdStep: 0,
  classifyTrigger: "every_request",
  judgeFailure: "error"
}

describe("policy replay", () => {
  it.effect.prop(
    "replaying a log under its own configuration reproduces every logged decision",
    { steps: FastCheck.array(stepArbitrary, { maxLength: 12 }), settings: settingsArbitrary },
    ({ settings: own, steps }) =>
      Effect.gen(function*() {
        const lines = yield* logOf(steps, own)
        const [report] = PolicyReplay.replay(lines, new Map([["auto", PolicyReplay.capability(own)]]))
        if (steps.length === 0) return report === undefined
        assert.isDefined(report)
        assert.strictEqual(report?.requests, steps.length)
        assert.strictEqual(report?.changed, 0)
        assert.deepStrictEqual(report?.replayed, report?.logged)
        return true
      }),
    { fastCheck: { numRuns: 150 } }
  )

  it.effect("worked example: the same traffic under fail_open and a higher threshold", () =>
    Effect.gen(function*() {
      const lines = yield* logOf([
        { session: "a", userTurn: true, judge: { _tag: "verdict", p: 0.6, boundary: "supported" } },
        { session: "a", userTurn: true, judge: { _tag: "transport" } },
        { session: "b", userTurn: true, judge: { _tag: "verdict", p: 0.9, boundary: "supported" } },
        { session: "b", userTurn: true, judge: { _tag: "garbage" } }
      ], settings)
      const [report] = PolicyReplay.replay(
        lines,
        new Map([["auto", PolicyReplay.capability({ ...settings, baseThreshold: 0.7, judgeFailure: "fail_open" })]])
      )
      assert.deepStrictEqual(report, {
        route: "auto",
        kind: "capability",
        requests: 4,
        other_algorithm: 0,
        logged: {
          routed: { weak: 2, strong: 1 },
          failed: 1,
          unknown: 0,
          without_verdict: { parse_error: 1 },
          tokens: { weak: 0, strong: 0 }
        },
        replayed: {
          routed: { weak: 1, strong: 3 },
          failed: 0,
          unknown: 0,
          without_verdict: { parse_error: 1, transport: 1 },
          tokens: { weak: 0, strong: 0 }
        },
        changed: 2,
        sessions_changed: 1
      })
    }))

  it("the table keeps its columns aligned and apart for long reasons and six-digit counts", () => {
    const side = (weak: number, strong: number, failed: number, reasons: Record<string, number>) => ({
      routed: { weak, strong },
      failed,
      unknown: 0,
      without_verdict: reasons,
      tokens: { weak: weak * 49, strong: strong * 49 }
    })
    const text = PolicyReplay.format([{
      route: "soak-err",
      kind: "capability",
      requests: 115939,
      other_algorithm: 0,
      logged: side(11610, 27878, 76451, { invalid_response: 8741 }),
      replayed: side(11644, 104295, 0, { invalid_response: 8741, circuit_open: 76167 }),
      changed: 76451,
      sessions_changed: 23622
    }])
    assert.deepStrictEqual(text.split("\n"), [
      "route soak-err: 115939 requests",
      "                                             logged      replayed",
      "  weak                                  11610 (10%)   11644 (10%)",
      "  strong                                27878 (24%)  104295 (90%)",
      "  failed (error posture)                76451 (66%)        0 (0%)",
      "  unknown (no logged verdict)                0 (0%)        0 (0%)",
      "  without verdict: circuit_open                   0         76167",
      "  without verdict: invalid_response            8741          8741",
      "  tokens on weak                             568890        570556",
      "  tokens on strong                          1366022       5110455",
      "  changed: 76451 requests, 23622 sessions"
    ])
    // small tables keep the 30 + 12 + 12 layout
    const small = PolicyReplay.format([{
      route: "auto",
      kind: "capability",
      requests: 4,
      other_algorithm: 0,
      logged: side(2, 1, 1, { parse_error: 1 }),
      replayed: side(1, 3, 0, { parse_error: 1, transport: 1 }),
      changed: 2,
      sessions_changed: 1
    }])
    assert.strictEqual(small.split("\n")[2], "  weak                               2 (50%)     1 (25%)")
  })

  it.effect("the replay command prints the table, and --json the reports", () =>
    Effect.gen(function*() {
      const lines = yield* logOf([
        { session: "a", userTurn: true, judge: { _tag: "verdict", p: 0.6, boundary: "supported" } },
        { session: "a", userTurn: true, judge: { _tag: "transport" } }
      ], settings)
      const dir = mkdtempSync(path.join(tmpdir(), "switchyard-replay-"))
      const log = path.join(dir, "routing.jsonl")
      writeFileSync(log, `${lines.map((line) => JSON.stringify(line)).join("\n")}\nnot a record\n`)
      const config = path.join(dir, "other.toml")
      writeFileSync(
        config,
        `schema_version = 1
[llm_clients.sim]
format = "openai_chat"
base_url = "http://127.0.0.1:9/v1"
[targets.judge]
id = "judge-model"
llm_client = "sim"
[targets.weak]
id = "weak-model"
llm_client = "sim"
[targets.strong]
id = "strong-model"
llm_client = "sim"
[routes.auto]
id = "auto"
type = "llm_classifier"
classifier_target = "judge"
weak_target = "weak"
strong_target = "strong"
base_threshold = 0.7
judge_failure = "fail_open"
`
      )
      const bin = path.join(root, "packages/server/bin/switchyard.js")
      const text = spawnSync(process.execPath, [bin, "replay", "--log", log, "--config", config], { encoding: "utf8" })
      assert.strictEqual(text.status, 0)
      assert.include(text.stdout, "route auto: 2 requests")
      assert.include(text.stdout, "changed: 2 requests, 1 sessions")
      assert.include(text.stderr, "skipped 1 lines")
      const json = spawnSync(process.execPath, [bin, "replay", "--log", log, "--config", config, "--json"], {
        encoding: "utf8"
      })
      assert.strictEqual(json.status, 0)
      const [report] = PolicyReplay.replay(lines, PolicyReplay.replayersOf(yield* loadOther(config)))
      assert.strictEqual(json.stdout.trim(), JSON.stringify([report]))
      // not a terminal: no progress lines
      assert.notInclude(text.stderr, "lines read")
      // progress every line read (the command does it every 100,000 lines on a terminal)
      const errors = vi.spyOn(console, "error").mockImplementation(() => {})
      const logged = vi.spyOn(console, "log").mockImplementation(() => {})
      try {
        yield* Effect.orDie(Cli.replayProgram({ log, config, json: true, progressEvery: 1 }))
        const read = lines.length + 1 // the records and one line that is not a record
        assert.deepStrictEqual(errors.mock.calls.map((call) => call.join(" ")), [
          ...Array.from({ length: read }, (_, i) => `replay: ${i + 1} lines read`),
          `replay: ${read} lines read, ${lines.length} records replayed`,
          "skipped 1 lines that are not routing log records"
        ])
        assert.strictEqual(logged.mock.calls.map((call) => call.join(" ")).join(""), JSON.stringify([report]))
      } finally {
        errors.mockRestore()
        logged.mockRestore()
      }
    }))
})

const loadOther = (file: string) => Effect.orDie(Cli.loadDeployment(file))
