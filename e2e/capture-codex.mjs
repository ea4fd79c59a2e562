#!/usr/bin/env node
// Captures the first `POST /v1/responses` request the real Codex CLI (pinned in e2e/package.json)
// sends, for the protocol package's Responses codec tests:
//   packages/protocol/test/fixtures/codex-request.json          (the body)
//   packages/protocol/test/fixtures/codex-request.headers.json  (the headers, auth redacted)
//
// A 127.0.0.1 server answers `POST /v1/responses` with a minimal valid Responses SSE stream and
// every other request with 404 (each is logged). `codex exec` runs with a temporary HOME and
// CODEX_HOME whose config.toml names that server as a `wire_api = "responses"` model provider with
// a dummy key, so nothing leaves the machine. Usage: node e2e/capture-codex.mjs [prompt]
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as http from "node:http"
import * as os from "node:os"
import * as path from "node:path"

const here = path.dirname(new URL(import.meta.url).pathname)
const fixtures = path.join(here, "..", "packages", "protocol", "test", "fixtures")
const codexBin = path.join(here, "node_modules", "@openai", "codex", "bin", "codex.js")
const prompt = process.argv[2] ?? "Say hello in one word."

const sse = (events) =>
  events.map((event, i) => {
    const data = { ...event, sequence_number: i }
    return `event: ${data.type}\ndata: ${JSON.stringify(data)}\n\n`
  }).join("")

const answer = (model) => {
  const base = {
    id: "resp_capture",
    object: "response",
    created_at: Math.floor(Date.now() / 1000),
    model,
    output: [],
    parallel_tool_calls: true,
    tool_choice: "auto",
    tools: []
  }
  const message = {
    id: "msg_capture",
    type: "message",
    role: "assistant",
    status: "completed",
    content: [{ type: "output_text", text: "Hello", annotations: [] }]
  }
  const usage = {
    input_tokens: 10,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: 1,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: 11
  }
  return sse([
    { type: "response.created", response: { ...base, status: "in_progress" } },
    { type: "response.in_progress", response: { ...base, status: "in_progress" } },
    { type: "response.output_item.added", output_index: 0, item: { ...message, status: "in_progress", content: [] } },
    {
      type: "response.content_part.added",
      item_id: "msg_capture",
      output_index: 0,
      content_index: 0,
      part: { type: "output_text", text: "", annotations: [] }
    },
    {
      type: "response.output_text.delta",
      item_id: "msg_capture",
      output_index: 0,
      content_index: 0,
      delta: "Hello",
      logprobs: []
    },
    {
      type: "response.output_text.done",
      item_id: "msg_capture",
      output_index: 0,
      content_index: 0,
      text: "Hello",
      logprobs: []
    },
    {
      type: "response.content_part.done",
      item_id: "msg_capture",
      output_index: 0,
      content_index: 0,
      part: message.content[0]
    },
    { type: "response.output_item.done", output_index: 0, item: message },
    { type: "response.completed", response: { ...base, status: "completed", output: [message], usage } }
  ])
}

const redacted = new Set(["authorization", "cookie", "x-api-key", "chatgpt-account-id"])
let captured
const server = http.createServer((req, res) => {
  const chunks = []
  req.on("data", (c) => chunks.push(c))
  req.on("end", () => {
    const raw = Buffer.concat(chunks).toString("utf8")
    process.stderr.write(`capture: ${req.method} ${req.url} (${raw.length} bytes)\n`)
    if (req.method === "POST" && req.url?.split("?")[0]?.endsWith("/responses")) {
      const body = JSON.parse(raw)
      if (captured === undefined) {
        const headers = Object.fromEntries(
          Object.entries(req.headers).map(([k, v]) => [k, redacted.has(k) ? "<redacted>" : v])
        )
        captured = { body, headers }
      }
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" })
      res.end(answer(typeof body.model === "string" ? body.model : "unknown"))
      return
    }
    res.writeHead(404, { "content-type": "application/json" })
    res.end(JSON.stringify({ error: { message: "not found", type: "not_found", code: "not_found" } }))
  })
})

await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve))
const address = server.address()
const port = typeof address === "object" && address !== null ? address.port : 0

const home = fs.mkdtempSync(path.join(os.tmpdir(), "codex-capture-"))
const codexHome = path.join(home, ".codex")
const work = path.join(home, "work")
fs.mkdirSync(codexHome, { recursive: true })
fs.mkdirSync(work, { recursive: true })
fs.writeFileSync(
  path.join(codexHome, "config.toml"),
  [
    `model = "gpt-5.1-codex"`,
    `model_provider = "capture"`,
    `approval_policy = "never"`,
    `sandbox_mode = "read-only"`,
    `check_for_update_on_startup = false`,
    ``,
    `[analytics]`,
    `enabled = false`,
    ``,
    `[otel]`,
    `exporter = "none"`,
    ``,
    `[model_providers.capture]`,
    `name = "capture"`,
    `base_url = "http://127.0.0.1:${port}/v1"`,
    `wire_api = "responses"`,
    `env_key = "CAPTURE_API_KEY"`,
    `request_max_retries = 0`,
    `stream_max_retries = 0`,
    ``
  ].join("\n")
)

const env = {
  PATH: process.env.PATH ?? "/usr/bin:/bin",
  HOME: home,
  CODEX_HOME: codexHome,
  TMPDIR: home,
  CAPTURE_API_KEY: "sk-dummy-capture",
  NO_COLOR: "1",
  // no proxy: every request must reach 127.0.0.1 or fail
  NO_PROXY: "*"
}
const child = spawn(process.execPath, [codexBin, "exec", "--skip-git-repo-check", "--color", "never", prompt], {
  cwd: work,
  env,
  stdio: ["ignore", "pipe", "pipe"]
})
child.stdout.on("data", (d) => process.stderr.write(`codex stdout: ${d}`))
child.stderr.on("data", (d) => process.stderr.write(`codex stderr: ${d}`))
const timer = setTimeout(() => child.kill("SIGTERM"), 120_000)
const code = await new Promise((resolve) => child.on("close", resolve))
clearTimeout(timer)
server.close()
const version = fs.readFileSync(path.join(here, "node_modules", "@openai", "codex", "package.json"), "utf8")
fs.rmSync(home, { recursive: true, force: true })

if (captured === undefined) {
  process.stderr.write(`capture: codex exited with ${code} and sent no POST /v1/responses\n`)
  process.exit(1)
}
fs.mkdirSync(fixtures, { recursive: true })
fs.writeFileSync(path.join(fixtures, "codex-request.json"), `${JSON.stringify(captured.body, null, 2)}\n`)
fs.writeFileSync(path.join(fixtures, "codex-request.headers.json"), `${JSON.stringify(captured.headers, null, 2)}\n`)
process.stderr.write(
  `capture: codex ${JSON.parse(version).version} exited with ${code}; fixture written to ${fixtures}\n`
)
