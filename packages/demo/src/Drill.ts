/**
 * The judge drill behind `npm run demo`: one deployment with a pair of capability routes, a pair of
 * custom-mode routes, a pair of escalation-mode routes and a pair of stage routers with a
 * `[classifier]`, each pair differing only in `judge_failure`, simulated upstreams, and the judge
 * conditions an operator meets (good verdicts, stalled past timeout_ms, stopped, HTTP 500,
 * garbage), each sent to both routes of a pair through a real server on loopback.
 */
import * as HttpServer from "@effect/platform/HttpServer"
import * as DeploymentToml from "@switchyard-ts/config/DeploymentToml"
import * as Server from "@switchyard-ts/server/Server"
import * as DeploymentBuilder from "@switchyard-ts/testkit/DeploymentBuilder"
import * as FakeUpstream from "@switchyard-ts/testkit/FakeUpstream"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Scope from "effect/Scope"

/** Options of the drill. */
export interface Options {
  /** The judge client's `timeout_ms` (the stalled row waits this long). */
  readonly judgeTimeoutMs: number
}

/** One cell of the drill table. */
export interface Outcome {
  readonly status: number
  /** `weak`, `strong`, or `-` when the request failed. */
  readonly tier: string
  readonly latencyMs: number
  /** Evidence source (or the error code when the request failed). */
  readonly source: string
  readonly reason: string
}

/** One row: a judge condition and what each posture made of it. */
export interface Row {
  readonly judge: string
  readonly error: Outcome
  readonly failOpen: Outcome
}

const judgeModel = "sim-judge"

type Posture = DeploymentBuilder.JudgeFailure

/** A custom-mode route on the drill's judge: the judge names `weak` or `strong`; default strong. */
const customRoute = (id: string, judge_failure: Posture) =>
  DeploymentBuilder.custom(id, {
    classifier_target: "judge",
    targets: ["weak", "strong"],
    default_target: "strong",
    prompt: "Name the cheapest target that can do this task: weak or strong.",
    response_schema: `{"type":"object","properties":{"target":{"type":"string"}},"required":["target"]}`,
    policy: { type: "target_selector", selector: "/target" },
    judge_failure
  })

/**
 * An escalation-mode route on the drill's judge: weak answers, the judge reads the finished turn;
 * one escalate verdict is enough (`confirmations = 1`, as the drill's requests carry no session).
 */
const escalationRoute = (id: string, judge_failure: Posture) =>
  DeploymentBuilder.escalation(id, {
    mode: "escalation",
    classifier_target: "judge",
    weak_target: "weak",
    strong_target: "strong",
    escalation: { confirmations: 1 },
    judge_failure
  })

/**
 * A stage router on the drill's judge: capable strong, efficient weak, `picker = "efficient_first"`.
 * The drill's requests carry no tool history, so the signals leave every turn to the classifier.
 */
const stageRoute = (id: string, judge_failure: Posture) =>
  DeploymentBuilder.stageRouter(id, {
    capable_target: "strong",
    efficient_target: "weak",
    picker: "efficient_first",
    confidence_threshold: 0.5,
    classifier: { target: "judge", base_threshold: 0.5, judge_failure }
  })

/** A capability route on the drill's judge: p_solve at or above 0.5 routes weak. */
const capabilityRoute = (id: string, judge_failure: Posture) =>
  DeploymentBuilder.capability(id, {
    classifier_target: "judge",
    weak_target: "weak",
    strong_target: "strong",
    base_threshold: 0.5,
    judge_failure
  })

const deploymentToml = (upstream: string, judge: string, options: Options) =>
  DeploymentBuilder.toToml({
    llm_clients: {
      sim: DeploymentBuilder.client("openai_chat", upstream, { max_retries: 0 }),
      judge: DeploymentBuilder.client("openai_chat", judge, { max_retries: 0, timeout_ms: options.judgeTimeoutMs })
    },
    targets: {
      judge: DeploymentBuilder.target(judgeModel, "judge"),
      weak: DeploymentBuilder.target("sim-small-coder", "sim"),
      strong: DeploymentBuilder.target("sim-frontier-coder", "sim")
    },
    routes: DeploymentBuilder.byId(
      capabilityRoute("auto", "error"),
      capabilityRoute("auto-open", "fail_open"),
      customRoute("pick", "error"),
      customRoute("pick-open", "fail_open"),
      escalationRoute("esc", "error"),
      escalationRoute("esc-open", "fail_open"),
      stageRoute("stage", "error"),
      stageRoute("stage-open", "fail_open")
    )
  })

const verdict = (p: number) =>
  FakeUpstream.ok(
    JSON.stringify({
      crux: "a small, testable change",
      primary_rule: "SUP-2",
      capability_boundary: "supported",
      p_solve: p
    })
  )

/** An escalation verdict on the weak model's finished turn. */
const escalate = (value: boolean) =>
  FakeUpstream.ok(JSON.stringify({ escalate: value, reason: value ? "the reply misses the task" : "adequate" }))

/** A custom-mode verdict naming `target` at the route's selector. */
const pick = (target: string) => FakeUpstream.ok(JSON.stringify({ target }))

const send = (base: string, model: string) =>
  Effect.gen(function*() {
    const start = yield* Clock.currentTimeMillis
    const response = yield* Effect.promise(() =>
      fetch(`${base}/v1/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ model, messages: [{ role: "user", content: "rename the helper and run the tests" }] })
      }).then(async (r) => ({ status: r.status, headers: r.headers, text: await r.text() }))
    )
    const end = yield* Clock.currentTimeMillis
    const selected = response.headers.get("x-switchyard-selected-model")
    const code = /"code":"([a-z_]+)"/.exec(response.text)?.[1] ?? "error"
    const outcome: Outcome = {
      status: response.status,
      tier: selected === "sim-small-coder" ? "weak" : selected === "sim-frontier-coder" ? "strong" : "-",
      latencyMs: end - start,
      source: response.headers.get("x-switchyard-evidence-source") ?? code,
      reason: response.headers.get("x-switchyard-evidence-reason") ?? ""
    }
    return outcome
  })

/** Run the drill; every server and upstream lives in the current scope. */
export const run = (options: Options) =>
  Effect.gen(function*() {
    const upstream = yield* FakeUpstream.make({
      models: {
        "sim-small-coder": FakeUpstream.ok("answer from the weak model"),
        "sim-frontier-coder": FakeUpstream.ok("answer from the strong model")
      }
    })
    // The judge runs in its own scope so the "stopped" row can stop it and start it again.
    let judgeScope = yield* Scope.make()
    const firstJudge = yield* Scope.extend(FakeUpstream.make(), judgeScope)
    const judgePort = firstJudge.port
    let judge = firstJudge
    const deployment = yield* DeploymentToml.parse(deploymentToml(upstream.url, firstJudge.url, options))
    const context = yield* Layer.build(
      Server.layerApp(deployment)
    )
    const address = Context.get(context, HttpServer.HttpServer).address
    const base = address._tag === "TcpAddress" ? `http://127.0.0.1:${address.port}` : "http://invalid"

    const both = (routes: readonly [string, string], label: string) =>
      Effect.map(Effect.all([send(base, routes[0]), send(base, routes[1])]), ([error, failOpen]): Row => ({
        judge: label,
        error,
        failOpen
      }))

    /** The failure rows, the same for every mode: stalled, stopped, HTTP 500, garbage. */
    const failures = (routes: readonly [string, string], rows: Array<Row>) =>
      Effect.gen(function*() {
        yield* judge.setBehaviour(judgeModel, FakeUpstream.stall)
        rows.push(yield* both(routes, `stalled past timeout_ms = ${options.judgeTimeoutMs}`))
        yield* Scope.close(judgeScope, Exit.void)
        rows.push(yield* both(routes, "stopped (connection refused)"))
        judgeScope = yield* Scope.make()
        judge = yield* Scope.extend(FakeUpstream.make({ port: judgePort }), judgeScope)
        yield* judge.setBehaviour(judgeModel, FakeUpstream.status(500, { message: "judge crashed" }))
        rows.push(yield* both(routes, "answering HTTP 500"))
        yield* judge.setBehaviour(judgeModel, FakeUpstream.ok("Sure! The small model can probably handle this."))
        rows.push(yield* both(routes, "answering garbage"))
      })

    /** The rows of a capability judge (a capability route's, a stage router's classifier): two verdicts, then the failures. */
    const capabilityRows = (routes: readonly [string, string]) =>
      Effect.gen(function*() {
        const rows: Array<Row> = []
        yield* judge.setBehaviour(judgeModel, verdict(0.9))
        rows.push(yield* both(routes, "up, good verdict (p_solve 0.9)"))
        yield* judge.setBehaviour(judgeModel, verdict(0))
        rows.push(yield* both(routes, "up, p_solve = 0"))
        yield* failures(routes, rows)
        return rows
      })

    const rows = yield* capabilityRows(["auto", "auto-open"])

    const custom = ["pick", "pick-open"] as const
    const customRows: Array<Row> = []
    yield* judge.setBehaviour(judgeModel, pick("weak"))
    customRows.push(yield* both(custom, "up, names weak"))
    yield* judge.setBehaviour(judgeModel, pick("medium"))
    customRows.push(yield* both(custom, "up, names no configured target"))
    yield* failures(custom, customRows)

    const escalation = ["esc", "esc-open"] as const
    const escalationRows: Array<Row> = []
    yield* judge.setBehaviour(judgeModel, escalate(false))
    escalationRows.push(yield* both(escalation, "up, the weak reply will do"))
    yield* judge.setBehaviour(judgeModel, escalate(true))
    escalationRows.push(yield* both(escalation, "up, escalate"))
    yield* failures(escalation, escalationRows)
    const stageRows = yield* capabilityRows(["stage", "stage-open"])
    yield* Scope.close(judgeScope, Exit.void)

    const metrics = yield* Effect.promise(() => fetch(`${base}/metrics`).then((r) => r.text()))
    const failOpenSeries = metrics.split("\n").filter((line) =>
      line.startsWith("switchyard_classifier_fail_open_total{")
    )
    return { rows, customRows, escalationRows, stageRows, failOpenSeries }
  })

const cell = (outcome: Outcome) =>
  `${outcome.status} ${outcome.tier.padEnd(6)} ${`${outcome.latencyMs} ms`.padStart(8)}  ${outcome.source}${
    outcome.reason === "" ? "" : ` / ${outcome.reason}`
  }`

/** The drill as a Markdown table. */
export const format = (rows: ReadonlyArray<Row>): string => {
  const header = ["judge", "judge_failure = \"error\"", "judge_failure = \"fail_open\""]
  const body = rows.map((row) => [row.judge, cell(row.error), cell(row.failOpen)])
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((r) => (r[i] ?? "").length)))
  const line = (cells: ReadonlyArray<string>) => `| ${cells.map((c, i) => c.padEnd(widths[i] ?? 0)).join(" | ")} |`
  return [line(header), `|${widths.map((w) => "-".repeat(w + 2)).join("|")}|`, ...body.map(line)].join("\n")
}
