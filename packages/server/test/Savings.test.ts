/**
 * What routing saves, through the real server with a pricing table: a judge route whose weak
 * answers save the strong model's price and whose strong answers cost the judge; a judge that costs
 * more than it saves (negative savings); a passthrough route (its own baseline: nothing saved); an
 * explicit `baseline_target`. Exact to the femto-dollar in the routing log, `/v1/session-stats`,
 * `/v1/stats` and the metrics; a property: session savings = baseline − cost for any lines.
 */
import type * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import { assert, describe, it } from "@effect/vitest"
import * as Pricing from "@switchyard-ts/routing/Pricing"
import * as RoutingLog from "@switchyard-ts/server/RoutingLog"
import * as D from "@switchyard-ts/testkit/DeploymentBuilder"
import * as FakeUpstream from "@switchyard-ts/testkit/FakeUpstream"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as FastCheck from "effect/FastCheck"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import { spawnSync } from "node:child_process"
import { mkdtempSync, readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import * as path from "node:path"
import { femto, lineOf, totals } from "./costs.js"
import { capabilityRoute, startServer } from "./harness.js"

const prices = {
  "save-weak": { input: 1, output: 5, cache_read: 0.1, cache_write: 2 },
  "save-strong": { input: 10, output: 50, cache_read: 1, cache_write: 20 },
  "save-judge": { input: 0.5, output: 1.5, cache_read: 0, cache_write: 0 },
  "save-pricey-judge": { input: 100, output: 100, cache_read: 0, cache_write: 0 }
}

const table = Either.getOrThrow(Pricing.parse(JSON.stringify(prices), "prices.json"))

const deployment = (upstreamUrl: string): D.Deployment => ({
  llm_clients: { sim: D.client("openai_chat", upstreamUrl, { max_retries: 0 }) },
  targets: {
    weak: D.target("save-weak", "sim"),
    strong: D.target("save-strong", "sim"),
    judge: D.target("save-judge", "sim"),
    pricey: D.target("save-pricey-judge", "sim")
  },
  routes: D.byId(
    capabilityRoute("judged", "judge", { classify_trigger: "every_request" }),
    capabilityRoute("wasteful", "pricey", { classify_trigger: "every_request" }),
    D.passthrough("pass", "strong"),
    D.passthrough("pass-ref", "strong", { baseline_target: "weak" })
  )
})

const usage = (prompt: number, completion: number, extra: Record<string, unknown> = {}) => ({
  prompt_tokens: prompt,
  completion_tokens: completion,
  total_tokens: prompt + completion,
  ...extra
})

const verdict = (pSolve: number) =>
  FakeUpstream.ok(
    JSON.stringify({ crux: "a typo", primary_rule: "SUP-1", capability_boundary: "supported", p_solve: pSolve }),
    { usage: usage(20, 5) }
  )

const post = (client: HttpClient.HttpClient, model: string, session: string) =>
  Effect.flatMap(
    client.execute(
      HttpClientRequest.post("/v1/chat/completions").pipe(
        HttpClientRequest.setHeaders({ "x-switchyard-session-id": session }),
        HttpClientRequest.bodyUnsafeJson({ model, messages: [{ role: "user", content: "fix the typo" }] })
      )
    ),
    (response) => Effect.map(response.text, (text) => ({ status: response.status, text }))
  )

const getText = (client: HttpClient.HttpClient, url: string) =>
  Effect.flatMap(client.execute(HttpClientRequest.get(url)), (response) => response.text)

const decodeLine = Schema.decodeUnknownSync(Schema.parseJson(RoutingLog.Line))
const decodeSession = Schema.decodeUnknownSync(Schema.parseJson(RoutingLog.SessionStats))
const RouteEntry = Schema.Struct({
  requests: Schema.Number,
  cost: Pricing.TotalsJson,
  answer_cost: Pricing.TotalsJson,
  routing_cost: Pricing.TotalsJson,
  baseline_cost: Pricing.TotalsJson,
  savings: Pricing.SavingsJson
})
const decodeStats = Schema.decodeUnknownSync(Schema.parseJson(Schema.Struct({
  routes: Schema.Record({ key: Schema.String, value: RouteEntry })
})))

const tempFile = () => path.join(mkdtempSync(path.join(tmpdir(), "switchyard-savings-")), "routing.jsonl")

/** The value of the series `name` whose labels include every one of `labels`, from a Prometheus exposition. */
const sample = (text: string, name: string, labels: ReadonlyArray<string>): number | undefined => {
  const line = text.split("\n").find((l) => l.startsWith(`${name}{`) && labels.every((label) => l.includes(label)))
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(" ") + 1))
}

const hasPromtool = spawnSync("promtool", ["--version"], { stdio: "ignore" }).status === 0

// Prices of the script below, in USD:
// a judge call (20 in, 5 out): 20 × 0.5 + 5 × 1.5 = 17.5 µ$; a pricey one: 20 × 100 + 5 × 100 = 2500 µ$
// an answer of 100 in, 10 out: weak 100 × 1 + 10 × 5 = 150 µ$, strong 100 × 10 + 10 × 50 = 1500 µ$
const judgeCall = femto("0.0000175")
const priceyCall = femto("0.0025")
const weakAnswer = femto("0.00015")
const strongAnswer = femto("0.0015")
const reported = femto("0.002")

describe("savings against the baseline", () => {
  it.scopedLive("weak answers save, strong ones cost the judge, a pricey judge loses money: exact everywhere", () =>
    Effect.gen(function*() {
      const file = tempFile()
      const { client, upstream } = yield* startServer(deployment, { routingLog: { path: file }, prices: table })
      yield* upstream.script("save-judge", [verdict(0.9), verdict(0.1)])
      yield* upstream.script("save-pricey-judge", [verdict(0.9)])
      yield* upstream.script("save-weak", [
        FakeUpstream.ok("weak answer", { usage: usage(100, 10) }),
        FakeUpstream.ok("weak answer", { usage: usage(100, 10) })
      ])
      yield* upstream.script("save-strong", [
        FakeUpstream.ok("strong answer", { usage: usage(100, 10) }),
        // the provider's own charge: the baseline of an answer its baseline model served is that charge
        FakeUpstream.ok("reported", { usage: usage(100, 10, { cost: 0.002 }) }),
        FakeUpstream.ok("strong answer", { usage: usage(100, 10) })
      ])

      assert.include((yield* post(client, "judged", "save")).text, "weak answer")
      assert.include((yield* post(client, "judged", "save")).text, "strong answer")
      assert.include((yield* post(client, "pass", "save")).text, "reported")
      assert.include((yield* post(client, "wasteful", "waste")).text, "weak answer")
      assert.include((yield* post(client, "pass-ref", "ref")).text, "strong answer")

      // session "save": answers 150 + 1500 + 2000 µ$, two judge calls, baselines 1500 + 1500 + 2000 µ$
      const save = decodeSession(yield* getText(client, "/v1/session-stats?session_id=save"))
      const answers = weakAnswer + strongAnswer + reported
      assert.deepStrictEqual(save.answer_cost, totals(answers, { estimated: 2, reported: 1 }))
      assert.deepStrictEqual(save.routing_cost, totals(2n * judgeCall, { estimated: 2 }))
      assert.deepStrictEqual(save.cost, totals(answers + 2n * judgeCall, { estimated: 4, reported: 1 }))
      assert.deepStrictEqual(save.baseline_cost, totals(2n * strongAnswer + reported, { estimated: 2, reported: 1 }))
      // (1500 − 150 − 17.5) + (1500 − 1500 − 17.5) + (2000 − 2000) = 1315 µ$
      assert.deepStrictEqual(save.savings, { total_usd: 0.001315, unknown_calls: 0 })
      assert.strictEqual(
        Pricing.femtoOfUsd(save.savings.total_usd ?? 0),
        2n * strongAnswer + reported - answers - 2n * judgeCall
      )
      // the pricey judge: 1500 − 150 − 2500 = −1150 µ$
      const waste = decodeSession(yield* getText(client, "/v1/session-stats?session_id=waste"))
      assert.deepStrictEqual(waste.savings, { total_usd: -0.00115, unknown_calls: 0 })
      assert.deepStrictEqual(waste.routing_cost, totals(priceyCall, { estimated: 1 }))
      // baseline_target = "weak" on a passthrough to strong: 150 − 1500 = −1350 µ$
      const ref = decodeSession(yield* getText(client, "/v1/session-stats?session_id=ref"))
      assert.deepStrictEqual(ref.baseline_cost, totals(weakAnswer, { estimated: 1 }))
      assert.deepStrictEqual(ref.savings, { total_usd: -0.00135, unknown_calls: 0 })

      const routes = decodeStats(yield* getText(client, "/v1/stats")).routes
      assert.deepStrictEqual(routes["judged"], {
        requests: 2,
        cost: totals(weakAnswer + strongAnswer + 2n * judgeCall, { estimated: 4 }),
        answer_cost: totals(weakAnswer + strongAnswer, { estimated: 2 }),
        routing_cost: totals(2n * judgeCall, { estimated: 2 }),
        baseline_cost: totals(2n * strongAnswer, { estimated: 2 }),
        savings: { total_usd: Pricing.usd(strongAnswer - weakAnswer - 2n * judgeCall), unknown_calls: 0 }
      })
      assert.deepStrictEqual(routes["pass"]?.savings, { total_usd: 0, unknown_calls: 0 })
      assert.deepStrictEqual(routes["pass"]?.baseline_cost, totals(reported, { reported: 1 }))
      assert.deepStrictEqual(routes["wasteful"]?.savings, { total_usd: -0.00115, unknown_calls: 0 })
      assert.deepStrictEqual(routes["pass-ref"]?.savings, { total_usd: -0.00135, unknown_calls: 0 })

      const metrics = yield* getText(client, "/metrics")
      const metric = (name: string, ...labels: ReadonlyArray<string>) => sample(metrics, name, labels) ?? -1
      assert.closeTo(metric("switchyard_baseline_cost_usd_total", "route=\"judged\""), 0.003, 1e-12)
      assert.closeTo(
        metric("switchyard_route_cost_usd_total", "route=\"judged\"", "kind=\"answer\""),
        0.00165,
        1e-12
      )
      assert.closeTo(
        metric("switchyard_route_cost_usd_total", "route=\"judged\"", "kind=\"routing\""),
        0.000035,
        1e-12
      )
      assert.closeTo(
        metric("switchyard_route_cost_usd_total", "route=\"wasteful\"", "kind=\"routing\""),
        0.0025,
        1e-12
      )
      assert.include(metrics, "# TYPE switchyard_baseline_cost_usd_total counter")
      assert.include(metrics, "# TYPE switchyard_route_cost_usd_total counter")
      if (hasPromtool) {
        const checked = spawnSync("promtool", ["check", "metrics"], { input: metrics, encoding: "utf8" })
        const problems = `${checked.stdout}${checked.stderr}`.split("\n").filter((l) =>
          l.includes("switchyard_route_cost") || l.includes("switchyard_baseline_cost")
        )
        assert.deepStrictEqual(problems, [])
      } else {
        process.stderr.write("skipping promtool check metrics of the savings metrics: no promtool on the PATH" + "\n")
      }
      // the existing cost series keep their labels
      assert.closeTo(
        metric("switchyard_cost_usd_total", "model=\"save-judge\"", "kind=\"routing\""),
        0.000035,
        1e-12
      )

      // Each response line names its baseline model and cost; the session's baseline is their sum.
      const lines = yield* Effect.suspend(() => {
        const decoded = readFileSync(file, "utf8").split("\n").filter((l) => l !== "").map((l) => decodeLine(l))
        return decoded.length >= 8 ? Effect.succeed(decoded) : Effect.fail("not yet")
      }).pipe(Effect.retry(Schedule.spaced("20 millis").pipe(Schedule.upTo(Duration.seconds(5)))))
      const responses = lines.filter((l) => l.kind === "response")
      assert.deepStrictEqual(
        responses.map((l) => [l.route, l.model, l.baseline_model, l.baseline_cost]),
        [
          ["judged", "save-weak", "save-strong", { usd: 0.0015, source: "estimated" }],
          ["judged", "save-strong", "save-strong", { usd: 0.0015, source: "estimated" }],
          ["pass", "save-strong", "save-strong", { usd: 0.002, source: "provider_reported" }],
          ["wasteful", "save-weak", "save-strong", { usd: 0.0015, source: "estimated" }],
          ["pass-ref", "save-strong", "save-weak", { usd: 0.00015, source: "estimated" }]
        ]
      )
    }))
})

const CostArb = FastCheck.option(
  FastCheck.record({
    femto: FastCheck.bigInt({ min: 0n, max: 4n * 10n ** 15n - 1n }),
    source: FastCheck.constantFrom("estimated" as const, "provider_reported" as const)
  }),
  { nil: undefined, freq: 8 }
)

describe("session savings", () => {
  it.effect.prop(
    "for any lines: savings = baseline − cost, answer + routing = cost, exactly",
    [FastCheck.array(FastCheck.tuple(FastCheck.constantFrom("judge" as const, "response" as const), CostArb, CostArb))],
    ([calls]) =>
      Effect.scoped(Effect.gen(function*() {
        const log = yield* RoutingLog.make({ path: tempFile() })
        // half the lines handed over with their exact costs, half read back from the line
        yield* Effect.sync(() =>
          calls.forEach(([kind, cost, baseline], i) =>
            i % 2 === 0
              ? log.unsafeAppend(lineOf(kind, cost, { cost: baseline }), cost, baseline)
              : log.unsafeAppend(lineOf(kind, cost, { cost: baseline }))
          )
        )
        const stats = yield* log.sessionStats("prop")
        if (calls.length === 0) return Option.isNone(stats)
        const s = Option.getOrThrow(stats)
        const sum = (costs: ReadonlyArray<Pricing.Cost | undefined>) => costs.reduce(Pricing.add, Pricing.noTotals)
        const responses = calls.filter(([kind]) => kind === "response")
        const answer = sum(responses.map(([, cost]) => cost))
        const routing = sum(calls.filter(([kind]) => kind === "judge").map(([, cost]) => cost))
        const baseline = sum(responses.map(([, , b]) => b))
        const cost = Pricing.sum(answer, routing)
        assert.deepStrictEqual(s.cost, Pricing.totalsJson(cost))
        assert.deepStrictEqual(s.baseline_cost, Pricing.totalsJson(baseline))
        const unknown = cost.unknownCalls + baseline.unknownCalls
        assert.deepStrictEqual(s.savings, {
          total_usd: unknown > 0 ? null : Pricing.usd(baseline.knownFemto - cost.knownFemto),
          unknown_calls: unknown
        })
        return true
      })),
    { fastCheck: { numRuns: 40 } }
  )
})
