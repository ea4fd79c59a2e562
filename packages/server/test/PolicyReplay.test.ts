/**
 * Policy replay of capability classifier routes: replaying a routing log under the configuration
 * that wrote it reproduces every logged decision (a property over judge-outcome schedules, sessions,
 * turns and route settings, the log written by the real capability route and judge through the
 * routing log's own line builder, `replayLog.ts`); a worked example of another posture and
 * threshold; and the `replay` command on a log file. The other route types: `PolicyReplayRoutes.test.ts`.
 */
import { assert, describe, it, vi } from "@effect/vitest"
import type { Message } from "@switchyard-ts/protocol/OpenAiChat"
import * as Cli from "@switchyard-ts/server/Cli"
import * as PolicyReplay from "@switchyard-ts/server/PolicyReplay"
import * as RoutingLog from "@switchyard-ts/server/RoutingLog"
import * as Effect from "effect/Effect"
import * as FastCheck from "effect/FastCheck"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { spawnSync } from "node:child_process"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import * as path from "node:path"
import { root } from "./cliProcess.js"
import * as ReplayLog from "./replayLog.js"
import {
  type CapabilityJudge,
  capabilityJudgeArbitrary,
  capabilityJudgeReply,
  capabilitySettingsArbitrary
} from "./replayLog.js"

interface Step {
  readonly session: "a" | "b" | null
  readonly userTurn: boolean
  readonly judge: CapabilityJudge
  /** How long the judge takes to answer (default 0: at once). */
  readonly judgeDelayMs?: number
  /** How far the clock moves while the request is routed, before its answer is written (default 0). */
  readonly gapMs?: number
  /** It continues a Responses answer of this target by id (no judge call, no session change). */
  readonly continuation?: "weak" | "strong"
}

/** The route's `judge_timeout_ms` in the property, and its `late_verdict_ms` when it has late verdicts. */
const deadlineMs = 100
const lateMs = 200

const stepArbitrary: FastCheck.Arbitrary<Step> = FastCheck.record({
  session: FastCheck.constantFrom("a" as const, "b" as const, null),
  userTurn: FastCheck.boolean(),
  judge: capabilityJudgeArbitrary,
  // On time, late within late_verdict_ms, late past it (expired); 0 is the most common.
  judgeDelayMs: FastCheck.constantFrom(0, 0, 0, 50, 150, 250, 400),
  // At least the deadline: the request is decided before its line is written; late answers land
  // before or after the session's next request.
  gapMs: FastCheck.constantFrom(deadlineMs, 2 * deadlineMs, 4 * deadlineMs),
  continuation: FastCheck.constantFrom("weak" as const, "strong" as const)
}, { requiredKeys: ["session", "userTurn", "judge", "judgeDelayMs", "gapMs"] })

/** `max_late_verdicts` when the route has late verdicts (`late_verdict_ms`; only under `fail_open`). */
const maxLateArbitrary = FastCheck.option(FastCheck.constantFrom(1, 2), { nil: undefined })

const messagesOf = (userTurn: boolean): ReadonlyArray<Message> =>
  userTurn
    ? [{ role: "user", content: "fix the typo" }]
    : [
      { role: "user", content: "fix the typo" },
      { role: "assistant", content: "looking" },
      { role: "tool", content: "file contents", tool_call_id: "call_1" }
    ]

/**
 * Route `steps` through the real capability route and judge, writing the routing log's lines; the
 * route has `judge_timeout_ms` when a step's judge takes time, and late verdicts with
 * `maxLateVerdicts`.
 */
const logOf = (steps: ReadonlyArray<Step>, settings: ReplayLog.CapabilitySettings, maxLateVerdicts?: number) =>
  ReplayLog.logOf(
    ReplayLog.capabilityRoute(settings, {
      judgeTimeoutMs: steps.some((step) => (step.judgeDelayMs ?? 0) > 0) ? Option.some(deadlineMs) : Option.none(),
      ...(maxLateVerdicts === undefined ? {} : { lateVerdictMs: Option.some(lateMs), maxLateVerdicts })
    }),
    steps,
    (step) => ({
      session: step.session,
      messages: messagesOf(step.userTurn),
      ...(step.continuation === undefined ? {} : { continuation: step.continuation })
    }),
    (step) => capabilityJudgeReply(step.judge),
    { judgeDelayMs: (step) => step.judgeDelayMs ?? 0, gapMs: (step) => step.gapMs ?? 0 }
  )

/** The settings the examples' logs are written under. */
const settings: ReplayLog.CapabilitySettings = {
  baseThreshold: 0.5,
  thresholdStep: 0,
  classifyTrigger: "every_request",
  judgeFailure: "error"
}

describe("policy replay", () => {
  it.effect.prop(
    "replaying a log under its own configuration reproduces every logged decision, late verdicts included",
    {
      steps: FastCheck.array(stepArbitrary, { maxLength: 12 }),
      settings: capabilitySettingsArbitrary,
      maxLateVerdicts: maxLateArbitrary
    },
    ({ maxLateVerdicts, settings: own, steps }) =>
      Effect.flatMap(
        logOf(steps, own, maxLateVerdicts),
        (lines) => ReplayLog.assertReproduced(lines, ReplayLog.capabilityReplayer(own), steps.length)
      ),
    { fastCheck: { numRuns: 150 }, timeout: 120_000 }
  )

  it.effect("worked example: the same traffic under fail_open and a higher threshold", () =>
    Effect.gen(function*() {
      const lines = yield* logOf([
        { session: "a", userTurn: true, judge: { _tag: "verdict", p: 0.6, boundary: "supported" } },
        { session: "a", userTurn: true, judge: { _tag: "transport" } },
        { session: "b", userTurn: true, judge: { _tag: "verdict", p: 0.9, boundary: "supported" } },
        { session: "b", userTurn: true, judge: { _tag: "garbage" } }
      ], settings)
      const [report] = yield* PolicyReplay.replay(
        lines,
        new Map([[
          "auto",
          ReplayLog.capabilityReplayer({ ...settings, baseThreshold: 0.7, judgeFailure: "fail_open" })
        ]])
      )
      assert.deepStrictEqual(report, {
        route: "auto",
        kind: "capability",
        requests: 4,
        other_algorithm: 0,
        logged: {
          routed: { weak: 2, strong: 1 },
          failed: 1,
          failed_by_status: { "502": 1 },
          unknown: 0,
          without_verdict: { parse_error: 1 },
          without_verdict_routed: { strong: 1 },
          tokens: { weak: 0, strong: 0 }
        },
        replayed: {
          routed: { weak: 1, strong: 3 },
          failed: 0,
          failed_by_status: {},
          unknown: 0,
          without_verdict: { parse_error: 1, transport: 1 },
          without_verdict_routed: { strong: 2 },
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
      failed_by_status: {},
      unknown: 0,
      without_verdict: reasons,
      without_verdict_routed: {},
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
      writeFileSync(config, ReplayLog.otherToml("fail_open"))
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
      const [report] = yield* PolicyReplay.replay(lines, PolicyReplay.replayersOf(yield* loadOther(config)))
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

describe("replay of several replicas' logs", () => {
  it.effect("one session served in turn by two replicas: their logs merged by time replay as the one log", () =>
    Effect.gen(function*() {
      const steps: ReadonlyArray<Step> = [
        { session: "a", userTurn: true, judge: { _tag: "verdict", p: 0.9, boundary: "supported" }, gapMs: 1000 },
        { session: "a", userTurn: false, judge: { _tag: "transport" }, gapMs: 1000 },
        { session: "a", userTurn: true, judge: { _tag: "verdict", p: 0.2, boundary: "supported" }, gapMs: 1000 },
        { session: "a", userTurn: true, judge: { _tag: "verdict", p: 0.9, boundary: "supported" }, gapMs: 1000 },
        { session: "a", userTurn: false, judge: { _tag: "transport" }, gapMs: 1000 },
        { session: "a", userTurn: true, judge: { _tag: "transport" }, gapMs: 1000 }
      ]
      const lines = yield* logOf(steps, settings)
      // each request's lines (its judge lines, then its response line) on one replica: A, A, B, A, B, B
      const replicaOf = ["A", "A", "B", "A", "B", "B"]
      const byReplica = { A: new Array<string>(), B: new Array<string>() }
      let request = 0
      for (const line of lines) {
        byReplica[replicaOf[request] === "B" ? "B" : "A"].push(JSON.stringify(line))
        if (line.kind === "response") request++
      }
      assert.strictEqual(request, steps.length)
      const dir = mkdtempSync(path.join(tmpdir(), "switchyard-replicas-"))
      const file = (name: string, text: string) => {
        const at = path.join(dir, name)
        writeFileSync(at, text)
        return at
      }
      const a = file("a.jsonl", `${byReplica.A.join("\n")}\n`)
      const b = file("b.jsonl", `${byReplica.B.join("\n")}\n`)
      const whole = file("whole.jsonl", `${lines.map((line) => JSON.stringify(line)).join("\n")}\n`)
      // a continuation keeps the tier its session's last user turn stored: the order of the turns matters
      const config = file("other.toml", ReplayLog.otherToml("error", "classify_trigger = \"user_turn\"\n"))
      const printed = (log: string | ReadonlyArray<string>) =>
        Effect.gen(function*() {
          const logged = vi.spyOn(console, "log").mockImplementation(() => {})
          try {
            yield* Effect.orDie(Cli.replayProgram({ log, config, json: true }))
            return logged.mock.calls.map((call) => call.join(" ")).join("")
          } finally {
            logged.mockRestore()
          }
        })
      const one = yield* printed(whole)
      assert.strictEqual(yield* printed([a, b]), one)
      assert.strictEqual(yield* printed([b, a]), one)
      // the merge matters here: the two files one after the other replay otherwise
      const other = yield* loadOther(config)
      const concatenated = [...byReplica.A, ...byReplica.B].map((text) =>
        Schema.decodeUnknownSync(Schema.parseJson(RoutingLog.Line))(text)
      )
      const [report] = yield* PolicyReplay.replay(concatenated, PolicyReplay.replayersOf(other))
      assert.notStrictEqual(JSON.stringify([report]), one)
    }))
})

const loadOther = (file: string) => Effect.orDie(Cli.loadDeployment(file))
