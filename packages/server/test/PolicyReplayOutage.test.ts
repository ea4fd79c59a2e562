/**
 * `switchyard replay --judge-outage`: the log replayed as if every judge were unreachable, under
 * each route's posture (fallback judges included), in a window or over the whole log; its flags'
 * usage errors.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Cli from "@switchyard-ts/server/Cli"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import { spawnSync } from "node:child_process"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import * as path from "node:path"
import { root } from "./cliProcess.js"
import * as ReplayLog from "./replayLog.js"

type Step = { readonly session: string; readonly p: number }

/** A log of capability requests with good verdicts (threshold 0.5: `p` above goes weak), one request per 10 s. */
const logOf = (steps: ReadonlyArray<Step>) =>
  ReplayLog.logOf(
    ReplayLog.capabilityRoute({
      baseThreshold: 0.5,
      thresholdStep: 0,
      classifyTrigger: "every_request",
      judgeFailure: "error"
    }),
    steps,
    (step) => ({ session: step.session, messages: [{ role: "user", content: "fix the typo" }] }),
    (step) => ReplayLog.capabilityJudgeReply({ _tag: "verdict", p: step.p, boundary: "supported" }),
    { judgeDelayMs: () => 0, gapMs: () => 10_000 }
  )

const files = (lines: ReadonlyArray<unknown>, toml: string) => {
  const dir = mkdtempSync(path.join(tmpdir(), "switchyard-outage-"))
  const log = path.join(dir, "routing.jsonl")
  writeFileSync(log, `${lines.map((line) => JSON.stringify(line)).join("\n")}\n`)
  const config = path.join(dir, "other.toml")
  writeFileSync(config, toml)
  return { config, log }
}

const replay = (args: ReadonlyArray<string>) =>
  spawnSync(process.execPath, [path.join(root, "packages/server/bin/switchyard.js"), "replay", ...args], {
    encoding: "utf8"
  })

const Counts = Schema.Record({ key: Schema.String, value: Schema.Number })
const SideSchema = Schema.Struct({
  routed: Counts,
  failed: Schema.Number,
  failed_by_status: Counts,
  without_verdict: Counts,
  without_verdict_routed: Counts
})
const Report = Schema.Struct({ logged: SideSchema, replayed: SideSchema, changed: Schema.Number })

const reportOf = (stdout: string): typeof Report.Type => {
  const [report] = Schema.decodeUnknownSync(Schema.parseJson(Schema.Array(Report)))(stdout)
  return report ?? assert.fail("no report")
}

describe("switchyard replay --judge-outage", () => {
  it.effect("under fail_open every judged request goes strong without a verdict; under error each fails 502", () =>
    Effect.gen(function*() {
      const lines = yield* logOf([{ session: "a", p: 0.9 }, { session: "b", p: 0.9 }, { session: "a", p: 0.1 }])
      const open = files(lines, ReplayLog.otherToml("fail_open"))
      const opened = replay(["--log", open.log, "--config", open.config, "--judge-outage", "--json"])
      assert.strictEqual(opened.status, 0, opened.stderr)
      const report = reportOf(opened.stdout)
      assert.deepStrictEqual(report.logged.routed, { weak: 2, strong: 1 })
      assert.deepStrictEqual(report.replayed.routed, { weak: 0, strong: 3 })
      assert.deepStrictEqual(report.replayed.without_verdict, { transport: 3 })
      assert.deepStrictEqual(report.replayed.without_verdict_routed, { strong: 3 })
      assert.strictEqual(report.replayed.failed, 0)

      const strict = files(lines, ReplayLog.otherToml("error"))
      const failed = reportOf(
        replay(["--log", strict.log, "--config", strict.config, "--judge-outage", "--json"]).stdout
      )
      assert.strictEqual(failed.replayed.failed, 3)
      assert.deepStrictEqual(failed.replayed.failed_by_status, { "502": 3 })
      // the table says it too
      const table = replay(["--log", strict.log, "--config", strict.config, "--judge-outage"])
      assert.include(table.stdout, "failed 502")
    }))

  it.effect("a window: only the records in it meet the outage; fallback judges are down too", () =>
    Effect.gen(function*() {
      const lines = yield* logOf([{ session: "a", p: 0.9 }, { session: "b", p: 0.9 }, { session: "c", p: 0.9 }])
      // requests answered at 10 s, 20 s and 30 s after the epoch: a window from 15 s to 25 s holds the second
      const chain = files(
        lines,
        ReplayLog.otherToml(
          "fail_open",
          "classifier_fallback = [\"backup\"]\n[targets.backup]\nid = \"backup-model\"\nllm_client = \"sim\""
        )
      )
      const from = new Date(15_000).toISOString()
      const until = new Date(25_000).toISOString()
      const windowed = replay([
        "--log",
        chain.log,
        "--config",
        chain.config,
        "--judge-outage",
        "--judge-outage-from",
        from,
        "--judge-outage-until",
        until,
        "--json"
      ])
      assert.strictEqual(windowed.status, 0, windowed.stderr)
      const report = reportOf(windowed.stdout)
      assert.deepStrictEqual(report.replayed.routed, { weak: 2, strong: 1 })
      assert.deepStrictEqual(report.replayed.without_verdict, { transport: 1 })
      assert.strictEqual(report.changed, 1)
    }))

  it.effect("its flags: a window needs --judge-outage, ISO times, and an end after its start", () =>
    Effect.gen(function*() {
      const base = ["--log", "x.jsonl", "--config", "x.toml"]
      const refused = (args: ReadonlyArray<string>) =>
        Effect.map(
          Effect.either(Cli.parseReplay([...base, ...args])),
          (parsed) => Either.isLeft(parsed) ? parsed.left.message : "accepted"
        )
      assert.include(yield* refused(["--judge-outage-from", "2026-12-07T10:00:00Z"]), "go with --judge-outage")
      assert.include(yield* refused(["--judge-outage", "--judge-outage-until", "yesterday"]), "is not an ISO 8601 time")
      assert.include(
        yield* refused([
          "--judge-outage",
          "--judge-outage-from",
          "2026-12-07T10:00:00Z",
          "--judge-outage-until",
          "2026-12-07T09:00:00Z"
        ]),
        "must be after --judge-outage-from"
      )
      const accepted = yield* Cli.parseReplay([
        ...base,
        "--judge-outage",
        "--judge-outage-from",
        "2026-12-07T10:00:00Z"
      ])
      assert.deepStrictEqual(accepted.outage, { from: Date.parse("2026-12-07T10:00:00Z"), until: undefined })
    }))
})
