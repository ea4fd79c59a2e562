/**
 * What an operator looks at (deploy/): the Grafana dashboard and the Prometheus alert rules only
 * query what /metrics really exposes. The real server (with a judge route, a stage router, breakers,
 * the Redis session store and inbound auth) serves some traffic; then every metric name and label
 * in the dashboard's PromQL, its variables and the alert expressions is looked up in the scraped
 * exposition. The dashboard's structure is checked (unique panel ids, `${datasource}` everywhere,
 * a query per panel). With `promtool` on the PATH the rules also go through `promtool check rules`
 * and `promtool test rules` (deploy/prometheus/alerts.test.yml); without it those tests are skipped
 * with one line saying so, unless `SWITCHYARD_REQUIRE_PROMTOOL=1` (`.ci/run` sets it): then they
 * run and fail with instructions.
 */
import type * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import { assert, describe, it } from "@effect/vitest"
import * as Pricing from "@switchyard-ts/routing/Pricing"
import * as D from "@switchyard-ts/testkit/DeploymentBuilder"
import * as FakeUpstream from "@switchyard-ts/testkit/FakeUpstream"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Logger from "effect/Logger"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { spawnSync } from "node:child_process"
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import * as path from "node:path"
import { capabilityRoute, startServer } from "./harness.js"

const root = path.resolve(import.meta.dirname, "../../..")
const deployFile = (...parts: ReadonlyArray<string>) => path.join(root, "deploy", ...parts)

const hasPromtool = spawnSync("promtool", ["--version"], { stdio: "ignore" }).status === 0
/** No promtool here and none required: skip (with one visible line) rather than fail. */
const skipWithoutPromtool = !hasPromtool && process.env["SWITCHYARD_REQUIRE_PROMTOOL"] !== "1"
if (skipWithoutPromtool) {
  process.stderr.write(
    "skipping the promtool checks of deploy/prometheus: no promtool on the PATH " +
      "(install Debian's prometheus package or extract its /usr/bin/promtool, or run `bash .ci/run`, " +
      "which provides it and makes this skip a failure)" + "\n"
  )
}

// ---------------------------------------------------------------------------------------------
// The exposition: family → type and label names
// ---------------------------------------------------------------------------------------------

interface Family {
  readonly type: string
  readonly labels: ReadonlySet<string>
}

/** Family name → type and the label names its samples carry (`le` of histogram buckets included). */
const families = (text: string): ReadonlyMap<string, Family> => {
  const types = new Map<string, string>()
  const labels = new Map<string, Set<string>>()
  for (const line of text.split("\n")) {
    if (line.startsWith("# TYPE ")) {
      const [name = "", type = ""] = line.slice(7).split(" ")
      types.set(name, type)
      labels.set(name, new Set())
      continue
    }
    if (line === "" || line.startsWith("#")) continue
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? /.exec(line)
    const name = match?.[1] ?? ""
    const family = types.has(name) ? name : name.replace(/_(bucket|sum|count)$/, "")
    const set = labels.get(family)
    if (set === undefined) continue
    for (const [, key = ""] of (match?.[2] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="(?:[^"\\]|\\.)*"/g)) set.add(key)
  }
  return new Map([...types].map(([name, type]) => [name, { type, labels: labels.get(name) ?? new Set() }]))
}

// ---------------------------------------------------------------------------------------------
// A narrow PromQL reader: metric names, selector labels, `by (...)` lists
// ---------------------------------------------------------------------------------------------

/** Labels Prometheus adds at scrape time: never in the exposition, always on a scraped series. */
const targetLabels: ReadonlySet<string> = new Set(["job", "instance"])

interface MetricRef {
  readonly name: string
  readonly selectorLabels: ReadonlyArray<string>
}

/** Every `switchyard_*` metric named in `expr`, with the label names of its selector. */
const metricRefs = (expr: string): ReadonlyArray<MetricRef> =>
  [...expr.matchAll(/\b(switchyard_[a-z0-9_]+)\b(\{([^}]*)\})?/g)].map((m) => ({
    name: m[1] ?? "",
    selectorLabels: [...(m[3] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)\s*"/g)].map((l) => l[1] ?? "")
  }))

/** The text between the parenthesis at `open` and its partner. */
const group = (expr: string, open: number): string => {
  let depth = 0
  for (let i = open; i < expr.length; i++) {
    if (expr[i] === "(") depth++
    if (expr[i] === ")") depth--
    if (depth === 0) return expr.slice(open + 1, i)
  }
  return expr.slice(open + 1)
}

interface Grouping {
  readonly labels: ReadonlyArray<string>
  readonly argument: string
}

/** Each `by (labels) (argument)` of `expr` (the prefix form; the postfix form is reported by {@link problems}). */
const groupings = (expr: string): ReadonlyArray<Grouping> =>
  [...expr.matchAll(/\bby\s*\(([^)]*)\)\s*\(/g)].map((m) => ({
    labels: (m[1] ?? "").split(",").map((l) => l.trim()).filter((l) => l !== ""),
    argument: group(expr, (m.index ?? 0) + m[0].length - 1)
  }))

/** The family a queried name belongs to: itself, or a histogram's `_bucket` / `_sum` / `_count`. */
const familyOf = (name: string, exposed: ReadonlyMap<string, Family>): Option.Option<readonly [string, Family]> => {
  const exact = exposed.get(name)
  if (exact !== undefined) return Option.some([name, exact] as const)
  const base = name.replace(/_(bucket|sum|count)$/, "")
  const histogram = exposed.get(base)
  return base !== name && histogram?.type === "histogram" ? Option.some([base, histogram] as const) : Option.none()
}

const hasLabel = (name: string, family: Family, label: string): boolean =>
  targetLabels.has(label) || (label === "le" ? name.endsWith("_bucket") : family.labels.has(label))

/**
 * What `expr` asks for that the exposition does not have: an unknown metric, a selector label the
 * metric never carries, a `by` label missing on a metric it aggregates. Constructs this reader does
 * not follow (`without`, `on`, `ignoring`, a postfix `by`) are reported rather than skipped.
 */
const problems = (expr: string, exposed: ReadonlyMap<string, Family>): ReadonlyArray<string> => {
  const found: Array<string> = []
  if (/\b(without|on|ignoring|group_left|group_right)\s*\(/.test(expr) || /\)\s*by\s*\(/.test(expr)) {
    found.push(`unsupported construct (use prefix "by (...)" only): ${expr}`)
  }
  const refs = metricRefs(expr)
  if (refs.length === 0) found.push(`no switchyard metric in: ${expr}`)
  for (const ref of refs) {
    Option.match(familyOf(ref.name, exposed), {
      onNone: () => found.push(`${ref.name} is not in the exposition`),
      onSome: ([, family]) => {
        for (const label of ref.selectorLabels) {
          if (!hasLabel(ref.name, family, label)) found.push(`${ref.name} has no label ${label}`)
        }
      }
    })
  }
  for (const { argument, labels } of groupings(expr)) {
    for (const ref of metricRefs(argument)) {
      Option.map(familyOf(ref.name, exposed), ([, family]) => {
        for (const label of labels) {
          if (!hasLabel(ref.name, family, label)) found.push(`by (${label}) over ${ref.name}, which has no ${label}`)
        }
      })
    }
  }
  return found
}

/** The labels a query's result can carry: its outermost `by` lists, else its metrics' labels. */
const resultLabels = (expr: string, exposed: ReadonlyMap<string, Family>): ReadonlySet<string> => {
  const lists = groupings(expr)
  if (lists.length > 0) return new Set(lists.flatMap((g) => g.labels).filter((l) => l !== "le"))
  return new Set([
    ...targetLabels,
    ...metricRefs(expr).flatMap((ref) =>
      Option.match(familyOf(ref.name, exposed), { onNone: () => [], onSome: ([, f]) => [...f.labels] })
    )
  ])
}

/** `label_values(metric{...}, label)`: the metric and label must exist. */
const labelValuesProblems = (query: string, exposed: ReadonlyMap<string, Family>): ReadonlyArray<string> => {
  const match = /^label_values\((.*),\s*([a-zA-Z_][a-zA-Z0-9_]*)\)$/.exec(query.trim())
  if (match === null) return [`not a label_values query: ${query}`]
  const [, selector = "", label = ""] = match
  const [ref] = metricRefs(selector)
  const family = ref === undefined ? Option.none() : familyOf(ref.name, exposed)
  return [
    ...problems(selector, exposed),
    ...Option.match(family, {
      onNone: () => [],
      onSome: ([name, f]) => hasLabel(name, f, label) ? [] : [`label_values: ${name} has no label ${label}`]
    })
  ]
}

// ---------------------------------------------------------------------------------------------
// The deploy files
// ---------------------------------------------------------------------------------------------

const DataSourceRef = Schema.Struct({ type: Schema.String, uid: Schema.String })
const Target = Schema.Struct({
  expr: Schema.String,
  refId: Schema.String,
  legendFormat: Schema.optional(Schema.String),
  datasource: DataSourceRef
})
const GridPos = Schema.Struct({ h: Schema.Int, w: Schema.Int, x: Schema.Int, y: Schema.Int })
const Panel = Schema.Struct({
  id: Schema.Int,
  type: Schema.String,
  title: Schema.String,
  gridPos: GridPos,
  datasource: Schema.optional(DataSourceRef),
  targets: Schema.optional(Schema.Array(Target)),
  collapsed: Schema.optional(Schema.Boolean)
})
const Variable = Schema.Struct({
  name: Schema.String,
  type: Schema.String,
  query: Schema.Union(Schema.String, Schema.Struct({ query: Schema.String })),
  datasource: Schema.optional(DataSourceRef)
})
const Dashboard = Schema.Struct({
  uid: Schema.String,
  title: Schema.String,
  panels: Schema.Array(Panel),
  templating: Schema.Struct({ list: Schema.Array(Variable) })
})

const dashboardText = readFileSync(deployFile("grafana", "switchyard.json"), "utf8")
const dashboard = Schema.decodeUnknownSync(Schema.parseJson(Dashboard))(dashboardText)
const queryPanels = dashboard.panels.filter((p) => p.type !== "row")
const variableQuery = (v: typeof Variable.Type) => typeof v.query === "string" ? v.query : v.query.query

interface Rule {
  readonly fields: ReadonlyMap<string, string>
  readonly labels: ReadonlyMap<string, string>
  readonly annotations: ReadonlyMap<string, string>
}

const indentOf = (line: string) => line.length - line.trimStart().length
const unquote = (value: string) => value.replace(/^"(.*)"$/, "$1")

/**
 * The rules of deploy/prometheus/alerts.yml, read with just enough YAML for that file: one rule per
 * `- alert:` item, `key: value` scalars (quoted or plain), `|` / `>-` block scalars, and the
 * `labels` / `annotations` maps. promtool (when present) checks the file as real YAML.
 */
const readRules = (text: string): ReadonlyArray<Rule> => {
  const lines = text.split("\n").filter((l) => l.trim() !== "" && !l.trim().startsWith("#"))
  const rules: Array<Rule> = []
  let i = 0
  while (i < lines.length) {
    const start = lines[i] ?? ""
    if (!/^\s*- alert: /.test(start)) {
      i++
      continue
    }
    const itemIndent = indentOf(start) + 2
    const fields = new Map<string, string>([["alert", start.trim().slice("- alert: ".length)]])
    const maps = { labels: new Map<string, string>(), annotations: new Map<string, string>() }
    let target: Map<string, string> = fields
    i++
    while (i < lines.length && indentOf(lines[i] ?? "") >= itemIndent && !/^\s*- /.test(lines[i] ?? "")) {
      const line = lines[i] ?? ""
      const indent = indentOf(line)
      const match = /^([a-zA-Z_]+):\s*(.*)$/.exec(line.trim())
      i++
      if (match === null) continue
      const [, key = "", value = ""] = match
      if (indent === itemIndent) target = fields
      if (indent === itemIndent && (key === "labels" || key === "annotations") && value === "") {
        target = maps[key]
        continue
      }
      if (value === "|" || value === ">-" || value === ">") {
        const block: Array<string> = []
        while (i < lines.length && indentOf(lines[i] ?? "") > indent) block.push((lines[i++] ?? "").trim())
        target.set(key, block.join(value === "|" ? "\n" : " "))
      } else {
        target.set(key, unquote(value))
      }
    }
    rules.push({ fields, labels: maps.labels, annotations: maps.annotations })
  }
  return rules
}

const alertsText = readFileSync(deployFile("prometheus", "alerts.yml"), "utf8")
const rules = readRules(alertsText)

// ---------------------------------------------------------------------------------------------
// Traffic through the real server
// ---------------------------------------------------------------------------------------------

const inboundKey = "sk-deploy-test-0123456789"
const withKey = Effect.withConfigProvider(ConfigProvider.fromMap(new Map([["SWITCHYARD_DEPLOY_KEY", inboundKey]])))

let counter = 0
const unique = (prefix: string) => `${prefix}-${process.pid}-${++counter}`

interface Ids {
  readonly judge: string
  readonly deadJudge: string
  readonly slowJudge: string
  readonly weak: string
  readonly strong: string
}

/** Auth on, a breaker on every client, the Redis store (on a closed port: it starts without Redis), a judge route, a stage router. */
const deployment = (ids: Ids) => (upstreamUrl: string): D.Deployment => {
  const breaker = { failure_threshold: 5, cooldown_ms: 30000 }
  return {
    server: { api_keys_env: "SWITCHYARD_DEPLOY_KEY" },
    sessions: { store: "redis", url: "redis://127.0.0.1:9/0", ttl_ms: 60000 },
    llm_clients: {
      sim: D.client("openai_chat", upstreamUrl, { max_retries: 0, breaker }),
      judge: D.client("openai_chat", upstreamUrl, { max_retries: 0, timeout_ms: 3000, breaker })
    },
    targets: {
      judge: D.target(ids.judge, "judge"),
      dead_judge: D.target(ids.deadJudge, "judge"),
      slow_judge: D.target(ids.slowJudge, "judge"),
      weak: D.target(ids.weak, "sim"),
      strong: D.target(ids.strong, "sim")
    },
    routes: D.byId(
      capabilityRoute("auto", "judge"),
      capabilityRoute("open", "dead_judge", { judge_failure: "fail_open" }),
      // a dead first judge hands over to its fallback; a slow one has its fallback asked as a hedge
      capabilityRoute("chain", "dead_judge", { classifier_fallback: ["judge"] }),
      capabilityRoute("hedged", "slow_judge", { classifier_fallback: ["judge"], classifier_hedge_ms: 1 }),
      D.stageRouter("stage", {
        capable_target: "strong",
        efficient_target: "weak",
        picker: "efficient_first",
        confidence_threshold: 0.5
      })
    )
  }
}

/** A tool continuation whose last result reports a critical failure: the stage router goes capable. */
const critical = [
  { role: "user", content: "fix the build" },
  {
    role: "assistant",
    content: null,
    tool_calls: [{ id: "c1", type: "function", function: { name: "Bash", arguments: "{\"command\":\"cargo test\"}" } }]
  },
  { role: "tool", tool_call_id: "c1", content: "fatal runtime error: out of memory" }
]

const post = (client: HttpClient.HttpClient, model: string, messages: ReadonlyArray<unknown>, key = inboundKey) =>
  Effect.map(
    client.execute(
      HttpClientRequest.post("/v1/chat/completions").pipe(
        key === "" ? (r: HttpClientRequest.HttpClientRequest) => r : HttpClientRequest.bearerToken(key),
        HttpClientRequest.bodyUnsafeJson({ model, messages })
      )
    ),
    (response) => response.status
  )

const usage = {
  prompt_tokens: 40,
  completion_tokens: 12,
  total_tokens: 52,
  prompt_tokens_details: { cached_tokens: 8 },
  completion_tokens_details: { reasoning_tokens: 5 }
}

/** The real exposition after a verdict, a fail-open, a stage decision and an auth refusal. */
const scrapeAfterTraffic = Effect.gen(function*() {
  const ids = {
    judge: unique("judge"),
    deadJudge: unique("dead-judge"),
    slowJudge: unique("slow-judge"),
    weak: unique("weak"),
    strong: unique("strong")
  }
  // the answer models priced, the judges not: both cost families appear
  const rate = { input: 1, output: 2, cache_read: 0, cache_write: 0 }
  const prices = Either.getOrThrow(
    Pricing.parse(JSON.stringify({ [ids.weak]: rate, [ids.strong]: rate }), "prices.json")
  )
  const { client, upstream } = yield* withKey(startServer(deployment(ids), { prices }, Option.some(Logger.none)))
  yield* upstream.setBehaviour(
    ids.judge,
    FakeUpstream.ok(
      JSON.stringify({ crux: "small fix", primary_rule: "SUP-1", capability_boundary: "supported", p_solve: 0.9 })
    )
  )
  yield* upstream.setBehaviour(ids.deadJudge, FakeUpstream.status(503))
  yield* upstream.setBehaviour(
    ids.slowJudge,
    FakeUpstream.ok(
      JSON.stringify({ crux: "small fix", primary_rule: "SUP-1", capability_boundary: "supported", p_solve: 0.9 }),
      { delayMs: 200 }
    )
  )
  yield* upstream.setBehaviour(ids.weak, FakeUpstream.ok("weak answer", { usage }))
  yield* upstream.setBehaviour(ids.strong, FakeUpstream.ok("strong answer", { usage }))
  const question = [{ role: "user", content: "fix it" }]
  assert.deepStrictEqual(
    [
      yield* post(client, "auto", question),
      yield* post(client, "open", question),
      yield* post(client, "stage", critical),
      yield* post(client, "chain", question),
      yield* post(client, "hedged", question),
      yield* post(client, "auto", question, "")
    ],
    [200, 200, 200, 200, 200, 401]
  )
  return yield* Effect.flatMap(
    client.execute(HttpClientRequest.get("/metrics")),
    (response) => response.text
  )
})

// ---------------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------------

describe("the PromQL reader", () => {
  const exposed: ReadonlyMap<string, Family> = new Map([
    ["switchyard_requests_total", { type: "counter", labels: new Set(["model"]) }],
    ["switchyard_routing_overhead_ms", { type: "histogram", labels: new Set(["algorithm", "le"]) }]
  ])

  it("accepts real names and labels, and finds every kind of mismatch", () => {
    assert.deepStrictEqual(
      problems(
        "histogram_quantile(0.9, sum by (le, algorithm) (rate(switchyard_routing_overhead_ms_bucket{job=~\"$job\"}[5m])))",
        exposed
      ),
      []
    )
    assert.deepStrictEqual(problems("sum by (model) (rate(switchyard_requests_total[5m]))", exposed), [])
    assert.deepStrictEqual(problems("rate(switchyard_request_total[5m])", exposed), [
      "switchyard_request_total is not in the exposition"
    ])
    assert.deepStrictEqual(problems("rate(switchyard_requests_total{tier=\"weak\"}[5m])", exposed), [
      "switchyard_requests_total has no label tier"
    ])
    assert.deepStrictEqual(problems("sum by (route) (rate(switchyard_requests_total[5m]))", exposed), [
      "by (route) over switchyard_requests_total, which has no route"
    ])
    // `_bucket` is a histogram's series only, and `le` is on buckets only.
    assert.deepStrictEqual(problems("sum by (le) (rate(switchyard_requests_total_bucket[5m]))", exposed), [
      "switchyard_requests_total_bucket is not in the exposition"
    ])
    assert.deepStrictEqual(problems("sum by (le) (rate(switchyard_routing_overhead_ms_sum[5m]))", exposed), [
      "by (le) over switchyard_routing_overhead_ms_sum, which has no le"
    ])
    assert.strictEqual(problems("sum(rate(switchyard_requests_total[5m])) by (model)", exposed).length, 1)
    assert.deepStrictEqual(labelValuesProblems("label_values(switchyard_requests_total, model)", exposed), [])
    assert.deepStrictEqual(labelValuesProblems("label_values(switchyard_requests_total, algorithm)", exposed), [
      "label_values: switchyard_requests_total has no label algorithm"
    ])
  })

  it("reads the alert rules of deploy/prometheus/alerts.yml", () => {
    assert.deepStrictEqual(rules.map((r) => r.fields.get("alert")), [
      "SwitchyardJudgeDegraded",
      "SwitchyardCircuitBreakerOpen",
      "SwitchyardErrorRatioHigh",
      "SwitchyardSessionStoreErrors"
    ])
    assert.include(rules[2]?.fields.get("expr") ?? "", "\n", "a `|` block keeps its lines")
  })
})

describe("deploy/ against the real exposition", () => {
  it.scopedLive("every metric and label the dashboard and the alert rules query is exposed", () =>
    Effect.gen(function*() {
      const exposed = families(yield* scrapeAfterTraffic)
      // The exposition really is the one the queries need: these families only appear after traffic.
      for (
        const name of [
          "switchyard_classifier_fail_open_total",
          "switchyard_stage_router_routing_decisions_total",
          "switchyard_cost_usd_total",
          "switchyard_unpriced_calls_total",
          "switchyard_route_cost_usd_total",
          "switchyard_baseline_cost_usd_total"
        ]
      ) {
        assert.isTrue(exposed.has(name), `${name} is exposed`)
      }
      const found: Array<string> = []
      for (const panel of queryPanels) {
        for (const target of panel.targets ?? []) {
          found.push(...problems(target.expr, exposed).map((p) => `panel "${panel.title}": ${p}`))
          const legendLabels = [...(target.legendFormat ?? "").matchAll(/\{\{\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}/g)]
          const available = resultLabels(target.expr, exposed)
          for (const [, label = ""] of legendLabels) {
            if (!available.has(label)) found.push(`panel "${panel.title}": legend {{${label}}} is not in the result`)
          }
        }
      }
      for (const variable of dashboard.templating.list.filter((v) => v.type === "query")) {
        found.push(
          ...labelValuesProblems(variableQuery(variable), exposed).map((p) => `variable ${variable.name}: ${p}`)
        )
      }
      for (const rule of rules) {
        const name = rule.fields.get("alert") ?? ""
        const expr = rule.fields.get("expr") ?? ""
        found.push(...problems(expr, exposed).map((p) => `alert ${name}: ${p}`))
        const available = resultLabels(expr, exposed)
        for (const text of rule.annotations.values()) {
          for (const [, label = ""] of text.matchAll(/\$labels\.([a-zA-Z_][a-zA-Z0-9_]*)/g)) {
            if (!available.has(label)) found.push(`alert ${name}: $labels.${label} is not in the result`)
          }
        }
      }
      assert.deepStrictEqual(found, [])
    }))
})

describe("the Grafana dashboard", () => {
  it("has unique panel ids, `${datasource}` on every panel and query, and a query per panel", () => {
    const ids = dashboard.panels.map((p) => p.id)
    assert.strictEqual(new Set(ids).size, ids.length, "unique panel ids")
    assert.isAbove(queryPanels.length, 10)
    for (const panel of queryPanels) {
      assert.deepStrictEqual(panel.datasource, { type: "prometheus", uid: "${datasource}" }, panel.title)
      const targets = panel.targets ?? []
      assert.isAtLeast(targets.length, 1, `${panel.title} has a query`)
      assert.strictEqual(new Set(targets.map((t) => t.refId)).size, targets.length, `${panel.title}: unique refIds`)
      for (const target of targets) {
        assert.deepStrictEqual(target.datasource, { type: "prometheus", uid: "${datasource}" }, panel.title)
      }
    }
    // Rows only group panels: no queries, and not collapsed (a collapsed row would hide its panels' ids).
    for (const row of dashboard.panels.filter((p) => p.type === "row")) {
      assert.isUndefined(row.targets, row.title)
      assert.strictEqual(row.collapsed, false, row.title)
    }
  })

  it("shows savings per route in its Cost row: baseline − cost, by route and over all routes", () => {
    const rows = dashboard.panels.filter((p) => p.type === "row")
    const costRow = rows.find((row) => row.title === "Cost")
    const savings = dashboard.panels.find((p) => p.title === "Savings per hour by route")
    assert.isDefined(costRow)
    assert.isDefined(savings)
    // below the Cost row header and above any later row
    const below = rows.filter((row) => row.gridPos.y > (costRow?.gridPos.y ?? 0))
    assert.isAbove(savings?.gridPos.y ?? 0, costRow?.gridPos.y ?? 0)
    for (const row of below) assert.isBelow(savings?.gridPos.y ?? 0, row.gridPos.y)
    const exprs = (savings?.targets ?? []).map((t) => t.expr)
    assert.strictEqual(exprs.length, 2)
    for (const expr of exprs) {
      assert.match(expr, /switchyard_baseline_cost_usd_total.*\) - .*switchyard_route_cost_usd_total/)
    }
    assert.include(exprs[0] ?? "", "sum by (route)")
  })

  it("takes its data source from a prometheus `datasource` variable and hard-codes no uid", () => {
    const [first] = dashboard.templating.list
    assert.strictEqual(first?.name, "datasource")
    assert.strictEqual(first?.type, "datasource")
    assert.strictEqual(first?.query, "prometheus")
    for (const variable of dashboard.templating.list.filter((v) => v.type === "query")) {
      assert.deepStrictEqual(variable.datasource, { type: "prometheus", uid: "${datasource}" }, variable.name)
    }
    const uids = [...dashboardText.matchAll(/"uid":\s*"([^"]*)"/g)].map((m) => m[1])
    assert.deepStrictEqual([...new Set(uids)].sort(), ["${datasource}", dashboard.uid].sort())
    assert.notInclude(dashboardText, "__inputs", "no import-only inputs: the same file is provisionable")
  })

  it("lays panels out on the 24-column grid without overlaps", () => {
    const cells = new Set<string>()
    for (const { gridPos, title } of dashboard.panels) {
      assert.isAtMost(gridPos.x + gridPos.w, 24, title)
      for (let x = gridPos.x; x < gridPos.x + gridPos.w; x++) {
        for (let y = gridPos.y; y < gridPos.y + gridPos.h; y++) {
          assert.isFalse(cells.has(`${x},${y}`), `${title} overlaps another panel at ${x},${y}`)
          cells.add(`${x},${y}`)
        }
      }
    }
  })

  it("the provisioning examples name the dashboard folder and a prometheus data source", () => {
    const dashboards = readFileSync(deployFile("grafana", "provisioning", "dashboards.yml"), "utf8")
    const datasources = readFileSync(deployFile("grafana", "provisioning", "datasources.yml"), "utf8")
    assert.match(dashboards, /^apiVersion: 1$/m)
    assert.match(dashboards, /^\s+type: file$/m)
    assert.match(dashboards, /^\s+path: \S+$/m)
    assert.match(datasources, /^apiVersion: 1$/m)
    assert.match(datasources, /^\s+type: prometheus$/m)
  })
})

describe("the alert rules", () => {
  it("each has an expression, a `for`, a severity and a summary and description", () => {
    for (const rule of rules) {
      const name = rule.fields.get("alert") ?? ""
      assert.notStrictEqual(rule.fields.get("expr") ?? "", "", name)
      assert.match(rule.fields.get("for") ?? "", /^\d+m$/, name)
      assert.include(["warning", "critical"], rule.labels.get("severity") ?? "", name)
      assert.notStrictEqual(rule.annotations.get("summary") ?? "", "", name)
      assert.notStrictEqual(rule.annotations.get("description") ?? "", "", name)
    }
  })
})

/** Run promtool; dies with instructions when it is not on the PATH (only reached with the skip off). */
const promtool = (args: ReadonlyArray<string>, cwd = deployFile("prometheus")) => {
  assert.isTrue(
    hasPromtool,
    "promtool is not on the PATH but SWITCHYARD_REQUIRE_PROMTOOL=1: install it (Debian's prometheus package " +
      "ships /usr/bin/promtool; `bash .ci/run` extracts it) or unset SWITCHYARD_REQUIRE_PROMTOOL"
  )
  const result = spawnSync("promtool", args, { cwd, encoding: "utf8" })
  return { status: result.status, output: `${result.stdout}${result.stderr}` }
}

describe.skipIf(skipWithoutPromtool)("promtool", () => {
  it("check rules: alerts.yml is valid", () => {
    const { output, status } = promtool(["check", "rules", "alerts.yml"])
    assert.strictEqual(status, 0, output)
    assert.include(output, `SUCCESS: ${rules.length} rules found`)
  })

  it("check config: the example prometheus.yml (and the rules it loads) is valid", () => {
    const { output, status } = promtool(["check", "config", "prometheus.yml"])
    assert.strictEqual(status, 0, output)
  })

  it("test rules: judge degraded, breaker open, error ratio and session store alerts fire on synthetic series", () => {
    const { output, status } = promtool(["test", "rules", "alerts.test.yml"])
    assert.strictEqual(status, 0, output)
    assert.include(output, "SUCCESS")
  })

  it("test rules tells a wrong rule apart: a judge alert on `>= 0` and a breaker alert on `>= 0` fail it", () => {
    const dir = mkdtempSync(path.join(tmpdir(), "switchyard-alerts-"))
    try {
      copyFileSync(deployFile("prometheus", "alerts.test.yml"), path.join(dir, "alerts.test.yml"))
      const wrong = alertsText
        .replace(
          "(rate(switchyard_classifier_fail_open_total[5m])) > 0",
          "(rate(switchyard_classifier_fail_open_total[5m])) >= 0"
        )
        .replace("(switchyard_circuit_breaker_state) > 0", "(switchyard_circuit_breaker_state) >= 0")
      assert.notStrictEqual(wrong, alertsText)
      writeFileSync(path.join(dir, "alerts.yml"), wrong)
      const { output, status } = promtool(["test", "rules", "alerts.test.yml"], dir)
      assert.notStrictEqual(status, 0, output)
      assert.include(output, "SwitchyardJudgeDegraded")
      assert.include(output, "SwitchyardCircuitBreakerOpen")
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
