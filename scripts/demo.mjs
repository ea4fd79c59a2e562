// `npm run demo`: first the judge drill — a pair of capability, custom-mode, escalation-mode and
// stage_router (with a [classifier]) routes, each pair differing only in judge_failure, against a simulated judge that is up (good verdicts),
// stalls past its 3000 ms timeout_ms, is stopped, answers 500, answers garbage — printed as one
// table per mode; then a scripted tour of the demo deployment (`npm start`). Every request goes to
// 127.0.0.1.
import { ServerProcess } from "@switchyard-ts/testkit"
import { Effect, Logger, LogLevel } from "effect"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { Drill } from "../packages/demo/dist/index.js"

const drill = await Effect.runPromise(
  Drill.run({ judgeTimeoutMs: 3000 }).pipe(Effect.scoped, Logger.withMinimumLogLevel(LogLevel.None))
)
console.log("## Judge drill: the same judge failures under both postures (status, tier, latency, evidence / reason)\n")
console.log("### capability mode (routes auto / auto-open)\n")
console.log(Drill.format(drill.rows))
console.log("\n### custom mode: the judge names a target; default_target = strong (routes pick / pick-open)\n")
console.log(Drill.format(drill.customRows))
console.log(
  "\n### escalation mode: weak answers, the judge reads the finished turn; confirmations = 1 (routes esc / esc-open)\n"
)
console.log(Drill.format(drill.escalationRows))
console.log(
  "\n### stage_router with a [classifier]: no tool history, so the judge decides; picker = efficient_first " +
    "(routes stage / stage-open)\n"
)
console.log(Drill.format(drill.stageRows))
console.log("\n" + drill.failOpenSeries.join("\n"))

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..")
const bin = path.join(root, "packages/demo/bin/switchyard-demo.js")
// Never leave the server behind, even when this script is cut short (e.g. piped into `head`):
// ServerProcess kills it when this process exits.
for (const signal of ["SIGINT", "SIGTERM", "SIGPIPE"]) process.on(signal, () => process.exit(1))

const server = await Effect.runPromise(ServerProcess.startUnscoped({
  bin,
  args: ["--config", "examples/demo.toml", "--port", "0"],
  cwd: root,
  readyTimeout: "20 seconds",
  onOutput: (stream, chunk) => stream === "stderr" && process.stderr.write(chunk)
}))
const base = server.url

const show = async (title, method, url, body) => {
  const response = await fetch(`${base}${url}`, {
    method,
    headers: body === undefined ? {} : { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body)
  })
  const text = await response.text()
  const routing = ["x-switchyard-selected-model", "x-switchyard-evidence-source"]
    .filter((h) => response.headers.has(h))
    .map((h) => `${h}: ${response.headers.get(h)}`)
  console.log(`\n## ${title}\n${method} ${url} -> ${response.status}${routing.length ? `\n${routing.join("\n")}` : ""}`)
  console.log(text.length > 1200 ? `${text.slice(0, 1200)}…` : text)
}

const user = (model, extra = {}) => ({ model, messages: [{ role: "user", content: "hello" }], ...extra })

console.log("\n## Tour of the demo deployment (npm start)")
try {
  await show("the routes, as models", "GET", "/v1/models")
  await show("passthrough: always the weak model", "POST", "/v1/chat/completions", user("fast"))
  await show("streamed", "POST", "/v1/chat/completions", user("fast", { stream: true }))
  await show("random route: the decision only (no answer call)", "POST", "/v1/decision", {
    input_format: "openai_chat",
    request: user("mix")
  })
  await show("noop: answered by the router itself", "POST", "/v1/chat/completions", user("ping"))
  await show("an Anthropic Messages client on an OpenAI-format model (translated both ways)", "POST", "/v1/messages", {
    ...user("fast"),
    max_tokens: 256
  })
  await show(
    "a chat client on the Anthropic Messages strong tier (translated both ways)",
    "POST",
    "/v1/chat/completions",
    user("frontier")
  )
  await show("an OpenAI Responses client (as Codex calls it) on the classifier route", "POST", "/v1/responses", {
    model: "auto",
    input: "hello"
  })
  await show("an unknown model", "POST", "/v1/chat/completions", user("nope"))
  const metrics = await (await fetch(`${base}/metrics`)).text()
  console.log("\n## /metrics (switchyard series)")
  console.log(metrics.split("\n").filter((line) => line.startsWith("switchyard_requests_total")).join("\n"))
} finally {
  await Effect.runPromise(server.process.stop)
}
