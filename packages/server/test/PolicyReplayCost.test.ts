/**
 * The cost of a policy (`switchyard replay --pricing-file`): each side of a route's report gives its
 * answer, routing and baseline cost and its savings; a replay under the deployment that wrote the
 * log reproduces the logged cost exactly (a property); a worked example in exact figures (a higher
 * threshold and `fail_open` instead of `error`), and the command's table and JSON with the flag.
 */
import { assert, describe, it, vi } from "@effect/vitest"
import * as Pricing from "@switchyard-ts/routing/Pricing"
import * as Cli from "@switchyard-ts/server/Cli"
import * as PolicyReplay from "@switchyard-ts/server/PolicyReplay"
import type * as RoutingLog from "@switchyard-ts/server/RoutingLog"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as FastCheck from "effect/FastCheck"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import * as path from "node:path"
import { femto, totals } from "./costs.js"
import * as ReplayLog from "./replayLog.js"

const prices = {
  "weak-model": { input: 1, output: 5, cache_read: 0, cache_write: 0 },
  "strong-model": { input: 10, output: 50, cache_read: 0, cache_write: 0 }
}
const table = Either.getOrThrow(Pricing.parse(JSON.stringify(prices), "prices.json"))

/** The pricing of route `auto`: weak and strong tiers, its strong target the baseline. */
const pricing: ReadonlyMap<string, PolicyReplay.RoutePricing> = new Map([["auto", {
  table,
  modelOf: (destination: string) =>
    destination === "weak" ? "weak-model" : destination === "strong" ? "strong-model" : undefined,
  baseline: "strong-model"
}]])

interface Step {
  readonly session: "a" | "b" | null
  readonly judge: ReplayLog.CapabilityJudge
  readonly tokens: number
}

const stepArbitrary: FastCheck.Arbitrary<Step> = FastCheck.record({
  session: FastCheck.constantFrom("a" as const, "b" as const, null),
  judge: ReplayLog.capabilityJudgeArbitrary,
  tokens: FastCheck.integer({ min: 0, max: 5000 })
})

/** Route `steps` through the real capability route under `settings`; its answers report `tokens` prompt tokens. */
const logOf = (steps: ReadonlyArray<Step>, settings: ReplayLog.CapabilitySettings) =>
  ReplayLog.logOf(
    ReplayLog.capabilityRoute(settings),
    steps,
    (step) => ({ session: step.session, messages: [{ role: "user", content: "fix the typo" }], tokens: step.tokens }),
    (step) => ReplayLog.capabilityJudgeReply(step.judge)
  )

/** A successful judge call's logged cost, as a server with a judge price writes it. */
const judgeUsd = 0.00002
const pricedJudges = (lines: ReadonlyArray<RoutingLog.Line>): ReadonlyArray<RoutingLog.Line> =>
  lines.map((line) =>
    line.kind === "judge" && line.outcome === "ok" ? { ...line, cost: { usd: judgeUsd, source: "estimated" } } : line
  )

const settings: ReplayLog.CapabilitySettings = {
  baseThreshold: 0.5,
  thresholdStep: 0,
  classifyTrigger: "every_request",
  judgeFailure: "error"
}

describe("the cost of a policy", () => {
  it.effect.prop(
    "replay under the logging configuration reproduces the logged cost exactly",
    { steps: FastCheck.array(stepArbitrary, { maxLength: 12 }), own: ReplayLog.capabilitySettingsArbitrary },
    ({ own, steps }) =>
      Effect.gen(function*() {
        const lines = pricedJudges(yield* logOf(steps, own))
        const [report] = yield* PolicyReplay.replay(
          lines,
          new Map([["auto", ReplayLog.capabilityReplayer(own)]]),
          undefined,
          pricing
        )
        if (steps.length === 0) return report === undefined
        assert.strictEqual(report?.changed, 0)
        assert.deepStrictEqual(report?.replayed.cost, report?.logged.cost)
        // the logged answers: each answered line's tokens at its model, independently of the replay
        const answered = lines.filter((line): line is RoutingLog.ResponseLine =>
          line.kind === "response" && line.model !== ""
        )
        const answers = answered.reduce(
          (sum, line) =>
            Pricing.add(
              sum,
              line.total_tokens === 0 ? undefined : Pricing.costOf(table, line.model, {
                input: line.prompt_tokens,
                output: line.completion_tokens
              })
            ),
          Pricing.noTotals
        )
        assert.deepStrictEqual(report?.logged.cost?.answer_cost, Pricing.totalsJson(answers))
        const judges = lines.filter((line) => line.kind === "judge" && line.outcome === "ok").length
        assert.deepStrictEqual(
          report?.logged.cost?.routing_cost,
          Pricing.totalsJson({
            ...Pricing.noTotals,
            knownFemto: BigInt(judges) * femto("0.00002"),
            estimatedCalls: judges
          })
        )
        return true
      }),
    { fastCheck: { numRuns: 100 }, timeout: 120_000 }
  )

  it.effect("worked example: a higher threshold and fail_open fail nothing and cost more", () =>
    Effect.gen(function*() {
      const lines = pricedJudges(
        yield* logOf([
          { session: "a", judge: { _tag: "verdict", p: 0.6, boundary: "supported" }, tokens: 1000 },
          { session: "a", judge: { _tag: "transport" }, tokens: 1000 },
          { session: "b", judge: { _tag: "verdict", p: 0.9, boundary: "supported" }, tokens: 1000 },
          { session: "b", judge: { _tag: "garbage" }, tokens: 1000 }
        ], settings)
      )
      const other = { ...settings, baseThreshold: 0.7, judgeFailure: "fail_open" as const }
      const [report] = yield* PolicyReplay.replay(
        lines,
        new Map([["auto", ReplayLog.capabilityReplayer(other)]]),
        undefined,
        pricing
      )
      // 1000 prompt tokens: 0.001 USD on weak-model, 0.01 on strong-model; two successful judge calls
      const weak = femto("0.001")
      const strong = femto("0.01")
      const judges = 2n * femto("0.00002")
      // logged: weak, failed (error posture: no answer), weak, strong (unusable verdict)
      assert.strictEqual(report?.logged.failed, 1)
      assert.deepStrictEqual(report?.logged.cost, {
        answer_cost: totals(2n * weak + strong, { estimated: 3 }),
        routing_cost: totals(judges, { estimated: 2 }),
        cost: totals(2n * weak + strong + judges, { estimated: 5 }),
        baseline_cost: totals(3n * strong, { estimated: 3 }),
        savings: { total_usd: Pricing.usd(3n * strong - 2n * weak - strong - judges), unknown_calls: 0 }
      })
      // replayed: strong (0.6 < 0.7), strong (fail-open), weak, strong; the same judge calls. The
      // request the log failed has no token counts: answered in the replay, its cost is unknown.
      assert.strictEqual(report?.replayed.failed, 0)
      assert.deepStrictEqual(report?.replayed.cost, {
        answer_cost: totals(weak + 2n * strong, { estimated: 3, unknown: 1 }),
        routing_cost: totals(judges, { estimated: 2 }),
        cost: totals(weak + 2n * strong + judges, { estimated: 5, unknown: 1 }),
        baseline_cost: totals(3n * strong, { estimated: 3, unknown: 1 }),
        savings: { total_usd: null, unknown_calls: 2 }
      })
      assert.strictEqual(report?.logged.cost?.savings.total_usd, 0.01796)

      // The other way: a log written under fail_open, replayed under error. The request the judge's
      // transport failure sent strong would fail: its answer (and its baseline) are gone.
      const failOpen = pricedJudges(
        yield* logOf([
          { session: "a", judge: { _tag: "verdict", p: 0.6, boundary: "supported" }, tokens: 1000 },
          { session: "a", judge: { _tag: "transport" }, tokens: 1000 }
        ], { ...settings, judgeFailure: "fail_open" })
      )
      const [back] = yield* PolicyReplay.replay(
        failOpen,
        new Map([["auto", ReplayLog.capabilityReplayer(settings)]]),
        undefined,
        pricing
      )
      assert.deepStrictEqual([back?.logged.failed, back?.replayed.failed], [0, 1])
      assert.deepStrictEqual(back?.logged.cost?.cost, totals(weak + strong + judges / 2n, { estimated: 3 }))
      assert.deepStrictEqual(back?.replayed.cost?.cost, totals(weak + judges / 2n, { estimated: 2 }))
      assert.deepStrictEqual(back?.replayed.cost?.savings, back?.logged.cost?.savings)
    }))

  it.effect("a request failed or routed without a verdict made no judge call that counts, on either side", () =>
    Effect.gen(function*() {
      // under error: a verdict, a judge refused by its breaker (no request made), a transport failure
      const lines = pricedJudges(
        yield* logOf([
          { session: "a", judge: { _tag: "verdict", p: 0.9, boundary: "supported" }, tokens: 1000 },
          { session: "b", judge: { _tag: "refused" }, tokens: 1000 },
          { session: null, judge: { _tag: "transport" }, tokens: 1000 }
        ], settings)
      )
      const [report] = yield* PolicyReplay.replay(
        lines,
        new Map([["auto", ReplayLog.capabilityReplayer({ ...settings, judgeFailure: "fail_open" })]]),
        undefined,
        pricing
      )
      assert.deepStrictEqual([report?.logged.failed, report?.replayed.failed], [2, 0])
      // fail_open answers both without a verdict: the one successful judge call stays the only one
      const judges = totals(femto("0.00002"), { estimated: 1 })
      assert.deepStrictEqual(report?.logged.cost?.routing_cost, judges)
      assert.deepStrictEqual(report?.replayed.cost?.routing_cost, judges)
    }))

  it.effect("the command prices both sides with --pricing-file: table rows and JSON", () =>
    Effect.gen(function*() {
      const lines = pricedJudges(
        yield* logOf([
          { session: "a", judge: { _tag: "verdict", p: 0.6, boundary: "supported" }, tokens: 1000 },
          { session: "a", judge: { _tag: "transport" }, tokens: 1000 }
        ], settings)
      )
      const dir = mkdtempSync(path.join(tmpdir(), "switchyard-replay-cost-"))
      const log = path.join(dir, "routing.jsonl")
      writeFileSync(log, `${lines.map((line) => JSON.stringify(line)).join("\n")}\n`)
      const config = path.join(dir, "other.toml")
      writeFileSync(config, ReplayLog.otherToml("fail_open"))
      const pricingFile = path.join(dir, "prices.json")
      writeFileSync(pricingFile, JSON.stringify(prices))
      const printed = (json: boolean) =>
        Effect.gen(function*() {
          const logged = vi.spyOn(console, "log").mockImplementation(() => {})
          try {
            yield* Effect.orDie(Cli.replayProgram({ log, config, json, pricingFile }))
            return logged.mock.calls.map((call) => call.join(" ")).join("")
          } finally {
            logged.mockRestore()
          }
        })
      const text = yield* printed(false)
      const row = (label: string) => text.split("\n").find((line) => line.trimStart().startsWith(label))?.trim()
      // logged: weak 0.001 + one judge call, one request failed; replayed (fail_open, 0.7): strong
      // 0.01, and the formerly failed request answered at an unknown cost (the log has no tokens of it)
      assert.match(row("answer cost") ?? "", /^answer cost\s+\$0\.001\s+\$0\.01\+ \(1 unpriced\)$/)
      assert.match(row("routing cost") ?? "", /^routing cost\s+\$0\.00002\s+\$0\.00002$/)
      assert.match(row("baseline cost") ?? "", /^baseline cost\s+\$0\.01\s+\$0\.01\+ \(1 unpriced\)$/)
      assert.match(row("savings") ?? "", /^savings\s+\$0\.00898\s+unknown \(2 unpriced\)$/)
      assert.match(row("failed (error posture)") ?? "", /^failed \(error posture\)\s+1 \(50%\)\s+0 \(0%\)$/)
      const deployment = yield* Effect.orDie(Cli.loadDeployment(config))
      const replayers = PolicyReplay.replayersOf(deployment)
      const [report] = yield* PolicyReplay.replay(
        lines,
        replayers,
        undefined,
        PolicyReplay.pricingOf(deployment, table)
      )
      assert.strictEqual(yield* printed(true), JSON.stringify([report]))
      // without a pricing table, no cost
      const [plain] = yield* PolicyReplay.replay(lines, replayers)
      assert.isUndefined(plain?.logged.cost)
      assert.isDefined(report?.logged.cost)
      // a bad pricing file is the server's load error, exit 1
      writeFileSync(pricingFile, "{\"weak-model\": {\"input\": 1}}")
      assert.strictEqual(
        yield* Cli.run(["replay", "--log", log, "--config", config, "--pricing-file", pricingFile]),
        1
      )
    }))
})
