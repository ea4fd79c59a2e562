/**
 * The cost of every call through the real server, with a pricing table: a scripted mix (cache
 * reads and writes with one-hour writes, a provider-reported cost and a zero one, an unpriced
 * model, a failed call, a streamed answer, a judge call, an escalated weak call; a fallback
 * candidate and an advisor REDO) gives exact totals
 * to the femto-dollar in the routing log, `/v1/session-stats`, `/v1/stats` and the metrics; the
 * session totals are the sums of their lines (a property over random lines); bad pricing files are
 * refused at start, by `--dry-run` and on SIGHUP (the running table kept).
 */
import type * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import { assert, describe, it } from "@effect/vitest"
import * as Pricing from "@switchyard-ts/routing/Pricing"
import * as Cli from "@switchyard-ts/server/Cli"
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
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import * as path from "node:path"
import { listening, printed, root, run, tomlFor, writeToml } from "./cliProcess.js"
import { femto, lineOf, totals } from "./costs.js"
import { capabilityRoute, startServer } from "./harness.js"

const prices = {
  "cost-weak": { input: 1, output: 5, cache_read: 0.1, cache_write: 2, cache_write_1h: 3 },
  "cost-strong": { input: 3, output: 15, cache_read: 0.3, cache_write: 3.75 },
  "cost-judge": { input: 0.5, output: 1.5, cache_read: 0, cache_write: 0 }
}

const table = Either.getOrThrow(Pricing.parse(JSON.stringify(prices), "prices.json"))

/** The simulated upstream and a dead one, without retries. */
const clients = (upstreamUrl: string) => ({
  sim: D.client("openai_chat", upstreamUrl, { max_retries: 0 }),
  dead: D.client("openai_chat", D.deadUrl, { max_retries: 0 })
})

const deployment = (upstreamUrl: string): D.Deployment => ({
  llm_clients: clients(upstreamUrl),
  targets: {
    weak: D.target("cost-weak", "sim"),
    strong: D.target("cost-strong", "sim"),
    judge: D.target("cost-judge", "sim"),
    router: D.target("cost-router", "sim"),
    mystery: D.target("cost-mystery", "sim"),
    gone: D.target("cost-gone", "dead")
  },
  routes: D.byId(
    D.passthrough("fast", "weak"),
    D.passthrough("reported", "router"),
    D.passthrough("unpriced", "mystery"),
    D.passthrough("down", "gone"),
    capabilityRoute("auto", "judge"),
    D.escalation("esc", {
      classifier_target: "judge",
      weak_target: "weak",
      strong_target: "strong",
      escalation: { confirmations: 1 }
    })
  )
})

const usage = (prompt: number, completion: number, extra: Record<string, unknown> = {}) => ({
  prompt_tokens: prompt,
  completion_tokens: completion,
  total_tokens: prompt + completion,
  ...extra
})

const post = (client: HttpClient.HttpClient, model: string, stream = false) =>
  Effect.flatMap(
    client.execute(
      HttpClientRequest.post("/v1/chat/completions").pipe(
        HttpClientRequest.setHeaders({ "x-switchyard-session-id": "sess-cost" }),
        HttpClientRequest.bodyUnsafeJson({
          model,
          messages: [{ role: "user", content: "fix the typo" }],
          ...(stream ? { stream: true, stream_options: { include_usage: true } } : {})
        })
      )
    ),
    (response) => Effect.map(response.text, (text) => ({ status: response.status, text }))
  )

const getText = (client: HttpClient.HttpClient, url: string) =>
  Effect.flatMap(client.execute(HttpClientRequest.get(url)), (response) => response.text)

const decodeLine = Schema.decodeUnknownSync(Schema.parseJson(RoutingLog.Line))
const decodeSession = Schema.decodeUnknownSync(Schema.parseJson(RoutingLog.SessionStats))
const CostOf = Schema.Struct({ cost: Pricing.TotalsJson })
const decodeStats = Schema.decodeUnknownSync(Schema.parseJson(Schema.Struct({
  cost: Pricing.TotalsJson,
  models: Schema.Record({ key: Schema.String, value: CostOf }),
  classifier: Schema.Struct({
    cost: Pricing.TotalsJson,
    models: Schema.Record({ key: Schema.String, value: CostOf })
  })
})))

const tempFile = () => path.join(mkdtempSync(path.join(tmpdir(), "switchyard-cost-")), "routing.jsonl")

/** The value of the series of `name` with exactly `labels`, from a Prometheus exposition. */
const sample = (text: string, name: string, labels: string): number | undefined => {
  const line = text.split("\n").find((l) => l.startsWith(`${name}{`) && l.includes(labels))
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(" ") + 1))
}

const hasPromtool = spawnSync("promtool", ["--version"], { stdio: "ignore" }).status === 0

describe("the cost of every call", () => {
  it.scopedLive("a scripted mix gives exact totals in the log, session-stats, /v1/stats and the metrics", () =>
    Effect.gen(function*() {
      const file = tempFile()
      const { client, upstream } = yield* startServer(deployment, { routingLog: { path: file }, prices: table })
      yield* upstream.script("cost-weak", [
        // 50 uncached in, 10 out, 20 read, 30 written (10 of them for an hour): 0.000172
        FakeUpstream.ok("cached answer", {
          usage: usage(100, 10, {
            prompt_tokens_details: { cached_tokens: 20, cache_write_tokens: 30, cache_write_1h_tokens: 10 }
          })
        }),
        // streamed: 10 × 1 + 4 × 5 = 0.00003
        FakeUpstream.ok("streamed answer", { usage: usage(10, 4) }),
        // the auto route's weak answer: 7 + 2 × 5 = 0.000017
        FakeUpstream.ok("weak answer", { usage: usage(7, 2) }),
        // the escalation route's weak turn, escalated: 8 + 2 × 5 = 0.000018 (routing)
        FakeUpstream.ok("weak try", { usage: usage(8, 2) })
      ])
      yield* upstream.script("cost-judge", [
        // 20 × 0.5 + 5 × 1.5 = 0.0000175
        FakeUpstream.ok(
          JSON.stringify({ crux: "a typo", primary_rule: "SUP-1", capability_boundary: "supported", p_solve: 0.9 }),
          { usage: usage(20, 5) }
        ),
        // 30 × 0.5 + 3 × 1.5 = 0.0000195
        FakeUpstream.ok("{\"escalate\": true, \"reason\": \"out of its depth\"}", { usage: usage(30, 3) })
      ])
      // 4 × 3 + 1 × 15 = 0.000027
      yield* upstream.script("cost-strong", [FakeUpstream.ok("strong answer", { usage: usage(4, 1) })])
      yield* upstream.script("cost-router", [
        FakeUpstream.ok("reported", { usage: usage(1000, 1000, { cost: 0.0123 }) }),
        FakeUpstream.ok("free", { usage: usage(1000, 1000, { cost: 0 }) })
      ])
      yield* upstream.script("cost-mystery", [FakeUpstream.ok("unpriced", { usage: usage(5, 5) })])

      assert.strictEqual((yield* post(client, "fast")).status, 200)
      assert.include((yield* post(client, "fast", true)).text, "[DONE]")
      assert.strictEqual((yield* post(client, "reported")).status, 200)
      assert.strictEqual((yield* post(client, "reported")).status, 200)
      assert.strictEqual((yield* post(client, "unpriced")).status, 200)
      assert.strictEqual((yield* post(client, "down")).status, 502)
      assert.include((yield* post(client, "auto")).text, "weak answer")
      assert.include((yield* post(client, "esc")).text, "strong answer")

      const answers = femto("0.000172") + femto("0.00003") + femto("0.0123") + femto("0.000017") + femto("0.000027")
      const judges = femto("0.0000175") + femto("0.0000195")
      // routing: both judge calls and the escalation's weak turn it escalated (not served)
      const routing = judges + femto("0.000018")
      const session = decodeSession(yield* getText(client, "/v1/session-stats?session_id=sess-cost"))
      assert.deepStrictEqual(session.answer_cost, totals(answers, { unknown: 2, estimated: 4, reported: 2 }))
      assert.deepStrictEqual(session.routing_cost, totals(routing, { estimated: 3 }))
      assert.deepStrictEqual(session.cost, totals(answers + routing, { unknown: 2, estimated: 7, reported: 2 }))
      assert.strictEqual(Pricing.femtoOfUsd(session.cost.known_usd), femto("0.012601"))
      assert.deepStrictEqual(
        session.models["cost-weak"]?.cost,
        totals(femto("0.000172") + femto("0.00003") + femto("0.000017") + femto("0.000018"), { estimated: 4 })
      )
      assert.deepStrictEqual(session.models["cost-router"]?.cost, totals(femto("0.0123"), { reported: 2 }))
      assert.deepStrictEqual(session.models["cost-mystery"]?.cost, totals(0n, { unknown: 1 }))

      const stats = decodeStats(yield* getText(client, "/v1/stats"))
      assert.deepStrictEqual(
        stats.models["cost-weak"]?.cost,
        totals(femto("0.000172") + femto("0.00003") + femto("0.000017"), { estimated: 3 })
      )
      assert.deepStrictEqual(stats.models["cost-strong"]?.cost, totals(femto("0.000027"), { estimated: 1 }))
      assert.deepStrictEqual(stats.models["cost-router"]?.cost, totals(femto("0.0123"), { reported: 2 }))
      assert.deepStrictEqual(stats.models["cost-mystery"]?.cost, totals(0n, { unknown: 1 }))
      assert.deepStrictEqual(stats.models["cost-gone"]?.cost, totals(0n, { unknown: 1 }))
      assert.deepStrictEqual(stats.cost, totals(answers, { unknown: 2, estimated: 4, reported: 2 }))
      // the routing-time calls: both judge calls and the escalated weak turn
      assert.deepStrictEqual(stats.classifier.models["cost-judge"]?.cost, totals(judges, { estimated: 2 }))
      assert.deepStrictEqual(stats.classifier.models["cost-weak"]?.cost, totals(femto("0.000018"), { estimated: 1 }))
      assert.deepStrictEqual(stats.classifier.cost, totals(judges + femto("0.000018"), { estimated: 3 }))

      const metrics = yield* getText(client, "/metrics")
      assert.closeTo(
        sample(metrics, "switchyard_cost_usd_total", "model=\"cost-weak\",kind=\"answer\"") ?? -1,
        0.000219,
        1e-12
      )
      assert.closeTo(
        sample(metrics, "switchyard_cost_usd_total", "model=\"cost-weak\",kind=\"routing\"") ?? -1,
        0.000018,
        1e-12
      )
      assert.closeTo(
        sample(metrics, "switchyard_cost_usd_total", "model=\"cost-judge\",kind=\"routing\"") ?? -1,
        0.000037,
        1e-12
      )
      assert.strictEqual(
        sample(metrics, "switchyard_unpriced_calls_total", "model=\"cost-mystery\",kind=\"answer\""),
        1
      )
      assert.strictEqual(sample(metrics, "switchyard_unpriced_calls_total", "model=\"cost-gone\",kind=\"answer\""), 1)
      assert.include(metrics, "# TYPE switchyard_cost_usd_total counter")
      assert.include(metrics, "# TYPE switchyard_unpriced_calls_total counter")
      if (hasPromtool) {
        const checked = spawnSync("promtool", ["check", "metrics"], { input: metrics, encoding: "utf8" })
        const problems = `${checked.stdout}${checked.stderr}`.split("\n").filter((l) =>
          l.includes("switchyard_cost") || l.includes("switchyard_unpriced")
        )
        assert.deepStrictEqual(problems, [])
      } else {
        process.stderr.write("skipping promtool check metrics of the cost metrics: no promtool on the PATH" + "\n")
      }

      // Each line says its own cost; the session's totals are their sum.
      const lines = yield* Effect.suspend(() => {
        const text = readFileSync(file, "utf8")
        const decoded = text.split("\n").filter((l) => l !== "").map((l) => decodeLine(l))
        return decoded.length >= 11 ? Effect.succeed(decoded) : Effect.fail("not yet")
      }).pipe(Effect.retry(Schedule.spaced("20 millis").pipe(Schedule.upTo(Duration.seconds(5)))))
      const first = lines.find((l) => l.kind === "response" && l.route === "fast" && !l.streaming)
      assert.deepStrictEqual(first?.cost, { usd: 0.000172, source: "estimated" })
      assert.strictEqual(first?.cache_creation_tokens, 30)
      const reported = lines.filter((l) => l.route === "reported").map((l) => l.cost)
      assert.deepStrictEqual(reported, [{ usd: 0.0123, source: "provider_reported" }, {
        usd: 0,
        source: "provider_reported"
      }])
      const failed = lines.find((l) => l.route === "down")
      assert.strictEqual(failed?.cost, null)
      const judgeLines = lines.filter((l) => l.kind === "judge")
      assert.deepStrictEqual(judgeLines.map((l) => l.cost), [
        { usd: 0.0000175, source: "estimated" },
        { usd: 0.0000195, source: "estimated" }
      ])
      // the escalation request: its judge line (written as the call ended), its escalated weak
      // turn's line (written with its response line, once it is known not to be the answer), its
      // response (the strong answer)
      assert.deepStrictEqual(
        lines.filter((l) => l.route === "esc").map((l) => [l.kind, l.model, l.cost]),
        [
          ["judge", "cost-judge", { usd: 0.0000195, source: "estimated" }],
          ["weak_turn", "cost-weak", { usd: 0.000018, source: "estimated" }],
          ["response", "cost-strong", { usd: 0.000027, source: "estimated" }]
        ]
      )
      const summed = lines.reduce(
        (sum, line) =>
          Pricing.add(
            sum,
            line.cost === null ? undefined : { femto: Pricing.femtoOfUsd(line.cost.usd), source: line.cost.source }
          ),
        Pricing.noTotals
      )
      assert.deepStrictEqual(Pricing.totalsJson(summed), session.cost)
    }))

  it.scopedLive("a fallback candidate and an advisor REDO: the failed candidate unpriced, the discarded turn and the review routing-time", () =>
    Effect.gen(function*() {
      const file = tempFile()
      const { client, upstream } = yield* startServer(
        (upstreamUrl) => ({
          llm_clients: clients(upstreamUrl),
          targets: {
            weak: D.target("cost-weak", "sim"),
            gone: D.target("cost-gone", "dead"),
            reviewer: D.target("cost-judge", "sim")
          },
          routes: D.byId(
            // always the dead target first, then the weak one as its fallback
            D.random("fb", ["gone", "weak"], { weights: [1, 0] }),
            D.advisor("gate", { executor_target: "weak", advisor_target: "reviewer", fail_open: true })
          )
        }),
        { routingLog: { path: file }, prices: table }
      )
      yield* upstream.script("cost-weak", [
        // the fallback candidate's answer: 6 + 1 × 5 = 0.000011
        FakeUpstream.ok("fallback answer", { usage: usage(6, 1) }),
        // the executor's first turn, discarded by the REDO: 10 + 2 × 5 = 0.00002 (routing)
        FakeUpstream.ok("first try", { usage: usage(10, 2) }),
        // its second turn, the answer: 12 + 3 × 5 = 0.000027
        FakeUpstream.ok("second try", { usage: usage(12, 3) })
      ])
      // the advisor's review: 40 × 0.5 + 4 × 1.5 = 0.000026 (routing)
      yield* upstream.setBehaviour("cost-judge", FakeUpstream.ok("REDO: add a test", { usage: usage(40, 4) }))

      const before = yield* getText(client, "/metrics")
      assert.include((yield* post(client, "fb")).text, "fallback answer")
      assert.include((yield* post(client, "gate")).text, "second try")
      const reviews = (yield* upstream.requests).filter((r) => r.model === "cost-judge").length
      assert.strictEqual(reviews, 1)

      const answers = femto("0.000011") + femto("0.000027")
      const session = decodeSession(yield* getText(client, "/v1/session-stats?session_id=sess-cost"))
      // every call is a line: the REDO's discarded executor turn and the review are routing's
      assert.deepStrictEqual(session.answer_cost, totals(answers, { estimated: 2 }))
      assert.deepStrictEqual(session.routing_cost, totals(femto("0.000046"), { estimated: 2 }))
      const lines = yield* Effect.suspend(() => {
        const decoded = readFileSync(file, "utf8").split("\n").filter((l) => l !== "").map((l) => decodeLine(l))
        return decoded.length >= 4 ? Effect.succeed(decoded) : Effect.fail("not yet")
      }).pipe(Effect.retry(Schedule.spaced("20 millis").pipe(Schedule.upTo(Duration.seconds(5)))))
      // three calls, three lines, whose costs add up to what the providers bill the request
      assert.deepStrictEqual(
        lines.filter((l) => l.route === "gate").map((l) => [l.kind, l.model, l.cost]),
        [
          ["executor_turn", "cost-weak", { usd: 0.00002, source: "estimated" }],
          ["advisor_review", "cost-judge", { usd: 0.000026, source: "estimated" }],
          ["response", "cost-weak", { usd: 0.000027, source: "estimated" }]
        ]
      )

      const stats = decodeStats(yield* getText(client, "/v1/stats"))
      assert.deepStrictEqual(stats.models["cost-gone"]?.cost, totals(0n, { unknown: 1 }))
      assert.deepStrictEqual(stats.models["cost-weak"]?.cost, totals(answers, { estimated: 2 }))
      assert.deepStrictEqual(stats.cost, totals(answers, { unknown: 1, estimated: 2 }))
      assert.deepStrictEqual(stats.classifier.models["cost-weak"]?.cost, totals(femto("0.00002"), { estimated: 1 }))
      assert.deepStrictEqual(stats.classifier.models["cost-judge"]?.cost, totals(femto("0.000026"), { estimated: 1 }))
      assert.deepStrictEqual(stats.classifier.cost, totals(femto("0.000046"), { estimated: 2 }))

      // the metrics are the process's: the change since before the two requests
      const after = yield* getText(client, "/metrics")
      const grown = (name: string, labels: string) =>
        (sample(after, name, labels) ?? 0) - (sample(before, name, labels) ?? 0)
      assert.strictEqual(grown("switchyard_unpriced_calls_total", "model=\"cost-gone\",kind=\"answer\""), 1)
      assert.closeTo(grown("switchyard_cost_usd_total", "model=\"cost-weak\",kind=\"answer\""), 0.000038, 1e-12)
      assert.closeTo(grown("switchyard_cost_usd_total", "model=\"cost-weak\",kind=\"routing\""), 0.00002, 1e-12)
      assert.closeTo(grown("switchyard_cost_usd_total", "model=\"cost-judge\",kind=\"routing\""), 0.000026, 1e-12)
    }))

  it.scoped("a line of an older version, without cost, decodes with cost null and counts as unknown", () =>
    Effect.gen(function*() {
      const log = yield* RoutingLog.make({ path: tempFile() })
      const old = decodeLine(JSON.stringify({
        kind: "judge",
        ts: "2026-01-01T00:00:00.000Z",
        task: null,
        trial_id: null,
        session_id: "old",
        agent_id: null,
        request_id: null,
        route: "auto",
        model: "cost-judge",
        tier: "classifier",
        outcome: "ok",
        latency_ms: 3,
        prompt_tokens: 1,
        cached_tokens: 0,
        cache_creation_tokens: 0,
        completion_tokens: 1,
        reasoning_tokens: 0,
        total_tokens: 2
      }))
      assert.isNull(old.cost)
      yield* Effect.sync(() => log.unsafeAppend(old))
      const stats = Option.getOrThrow(yield* log.sessionStats("old"))
      assert.deepStrictEqual(stats.routing_cost, totals(0n, { unknown: 1 }))
      assert.deepStrictEqual(stats.answer_cost, totals(0n, {}))
    }))
})

const CostArb = FastCheck.option(
  FastCheck.record({
    femto: FastCheck.bigInt({ min: 0n, max: 4n * 10n ** 15n - 1n }),
    source: FastCheck.constantFrom("estimated" as const, "provider_reported" as const)
  }),
  { nil: undefined }
)

describe("session totals", () => {
  it.effect.prop(
    "session cost = the sum of its lines' costs, answer + routing = cost",
    [FastCheck.array(FastCheck.tuple(FastCheck.constantFrom("judge" as const, "response" as const), CostArb))],
    ([calls]) =>
      Effect.scoped(Effect.gen(function*() {
        const log = yield* RoutingLog.make({ path: tempFile() })
        // half the lines handed over with their exact cost, half read back from the line
        yield* Effect.sync(() =>
          calls.forEach(([kind, cost], i) =>
            i % 2 === 0 ? log.unsafeAppend(lineOf(kind, cost), cost) : log.unsafeAppend(lineOf(kind, cost))
          )
        )
        const stats = yield* log.sessionStats("prop")
        if (calls.length === 0) return Option.isNone(stats)
        const s = Option.getOrThrow(stats)
        const of = (kind: "judge" | "response") =>
          calls.filter(([k]) => k === kind).reduce((sum, [, cost]) => Pricing.add(sum, cost), Pricing.noTotals)
        const answer = of("response")
        const routing = of("judge")
        assert.deepStrictEqual(s.answer_cost, Pricing.totalsJson(answer))
        assert.deepStrictEqual(s.routing_cost, Pricing.totalsJson(routing))
        assert.deepStrictEqual(s.cost, Pricing.totalsJson(Pricing.sum(answer, routing)))
        assert.strictEqual(
          s.cost.unknown_calls + s.cost.estimated_calls + s.cost.provider_reported_calls,
          calls.length
        )
        return true
      })),
    { fastCheck: { numRuns: 30 } }
  )
})

const pricingFile = (content: string) => {
  const file = path.join(mkdtempSync(path.join(tmpdir(), "switchyard-prices-")), "prices.json")
  writeFileSync(file, content)
  return file
}

/** The line refusing model `model`'s entry for `problem` (the model and the key, then the compatible system's sentence). */
const entryRefused = (model: string, problem: string) =>
  `invalid pricing for model ${
    JSON.stringify(model)
  }: ${problem}; use a nonempty model ID and rates from 0 to 10000 USD per million tokens`

/**
 * Each rule of the pricing file and the one line it is refused with (in turn at start, by
 * --dry-run and by check: the entries naming a key are one of each).
 */
const badFiles: ReadonlyArray<readonly [string, string]> = [
  ["{\"m\": {\"input\": 1}", "invalid pricing file"],
  ["[]", "invalid pricing file"],
  [
    "{\"m\": {\"input\": 1, \"output\": 1, \"cache_read\": 1, \"cache_write\": 1}, \"m\": {\"input\": 2, \"output\": 1, \"cache_read\": 1, \"cache_write\": 1}}",
    "duplicate pricing model \"m\""
  ],
  [
    "{\" m\": {\"input\": 1, \"output\": 1, \"cache_read\": 1, \"cache_write\": 1}}",
    entryRefused(" m", "the model ID has leading or trailing whitespace")
  ],
  ["{\"m\": {\"input\": 1, \"cache_read\": 1, \"cache_write\": 1}}", entryRefused("m", "missing \"output\"")],
  [
    "{\"m\": {\"input\": 10001, \"output\": 1, \"cache_read\": 1, \"cache_write\": 1}}",
    entryRefused("m", "\"input\" must be from 0 to 10000")
  ],
  [
    "{\"m\": {\"input\": 1, \"output\": 1, \"cache_read\": 1, \"cache_write\": 1, \"discount\": 1}}",
    entryRefused("m", "unknown field \"discount\"")
  ]
]

const weakCost = (url: string) =>
  Effect.promise(() => fetch(`${url}/v1/stats`).then((response) => response.text())).pipe(
    Effect.map((text) => decodeStats(text).models["weak-model"]?.cost.known_usd)
  )

const postFast = (url: string) =>
  Effect.promise(() =>
    fetch(`${url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "fast", messages: [{ role: "user", content: "hello" }] })
    }).then((response) => response.status)
  )

const rates = (input: number) => JSON.stringify({ "weak-model": { input, output: 5, cache_read: 0, cache_write: 0 } })

describe("--pricing-file", () => {
  it.effect("the README tour's examples/demo-prices.json prices every model of examples/demo.toml", () =>
    Effect.gen(function*() {
      const table = yield* Cli.loadPricing(path.join(root, "examples/demo-prices.json"))
      const deployment = yield* Cli.loadDeployment(path.join(root, "examples/demo.toml"))
      const models = deployment.targets.map((target) => target.id)
      assert.isAbove(models.length, 0)
      for (const model of models) assert.isTrue(table.has(model), `${model} is priced`)
    }).pipe(Effect.orDie))

  it.scopedLive(
    "bad files are refused at start and by --dry-run and check, exit 1, with the rule's words",
    () =>
      Effect.gen(function*() {
        const config = writeToml(tomlFor("http://127.0.0.1:9"))
        const good = yield* run(["--config", config, "--pricing-file", pricingFile(rates(1)), "--dry-run"])
        assert.strictEqual(yield* good.exited, 0)
        assert.strictEqual(good.stdout(), "server OK: fast\n")
        const missing = yield* run(["check", "--config", config, "--pricing-file", "/nonexistent/prices.json"])
        assert.strictEqual(yield* missing.exited, 1)
        assert.include(missing.stderr(), "failed to read pricing file /nonexistent/prices.json")
        // each rule once, in turn at start, by --dry-run and by check
        const modes = [["--port", "0"], ["--dry-run"], []]
        for (const [i, [content, words]] of badFiles.entries()) {
          const file = pricingFile(content)
          const mode = modes[i % modes.length] ?? []
          const args = mode.length === 0
            ? ["check", "--config", config, "--pricing-file", file]
            : ["--config", config, "--pricing-file", file, ...mode]
          const cli = yield* run(args)
          assert.strictEqual(yield* cli.exited, 1, `${content} ${args.join(" ")}`)
          assert.include(cli.stderr(), words, content)
          assert.notInclude(cli.stdout(), "listening on")
        }
      }),
    { timeout: 120_000 }
  )

  it.scopedLive(
    "SIGHUP re-reads the file: a bad one keeps the running table, a good one replaces it",
    () =>
      Effect.gen(function*() {
        const upstream = yield* FakeUpstream.make()
        yield* upstream.setBehaviour("weak-model", FakeUpstream.ok("answer", { usage: usage(10, 4) }))
        const prices = pricingFile(rates(1))
        const cli = yield* run(["--config", writeToml(tomlFor(upstream.url)), "--port", "0", "--pricing-file", prices])
        const url = yield* listening(cli)
        assert.strictEqual(yield* postFast(url), 200)
        // 10 × 1 + 4 × 5
        assert.strictEqual(yield* weakCost(url), 0.00003)

        writeFileSync(prices, rates(20000))
        process.kill(cli.child.pid ?? 0, "SIGHUP")
        yield* printed(cli, "pricing reload failed")
        const failed = cli.stdout().split("\n").find((line) => line.includes("pricing reload failed")) ?? ""
        // the reason names the model and the key, as at start
        assert.include(
          failed,
          ` reason=${JSON.stringify(entryRefused("weak-model", "\"input\" must be from 0 to 10000"))}`
        )
        assert.strictEqual(yield* postFast(url), 200)
        assert.strictEqual(yield* weakCost(url), 0.00006)
        const metrics = yield* Effect.promise(() => fetch(`${url}/metrics`).then((r) => r.text()))
        assert.match(metrics, /switchyard_config_reloads_total\{outcome="error"[^}]*\} 1/)

        writeFileSync(prices, rates(2))
        process.kill(cli.child.pid ?? 0, "SIGHUP")
        yield* printed(cli, "config reloaded")
        assert.strictEqual(yield* postFast(url), 200)
        // + 10 × 2 + 4 × 5
        assert.strictEqual(yield* weakCost(url), 0.0001)
        cli.child.kill("SIGTERM")
        assert.strictEqual(yield* cli.exited, 0)
      }),
    { timeout: 60_000 }
  )
})
