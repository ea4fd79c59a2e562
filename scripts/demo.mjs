// `npm run demo`: a scripted tour of the demo deployment. Starts the server in demo mode
// (simulated upstream models, no API key), sends a few requests, prints what came back, and
// stops the server. Every request goes to 127.0.0.1.
import { spawn } from "node:child_process"
import { fileURLToPath } from "node:url"
import * as path from "node:path"

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..")
const bin = path.join(root, "packages/server/bin/switchyard.js")
const child = spawn(process.execPath, [bin, "--config", "examples/demo.toml", "--demo", "--port", "0"], {
  cwd: root,
  stdio: ["ignore", "pipe", "inherit"]
})

let out = ""
const base = await new Promise((resolve, reject) => {
  const timer = setTimeout(() => reject(new Error("the server did not start within 20 s")), 20_000)
  child.stdout.on("data", (data) => {
    out += data.toString()
    const match = /listening on (http:\/\/\S+)/.exec(out)
    if (match) {
      clearTimeout(timer)
      resolve(match[1])
    }
  })
  child.on("exit", (code) => reject(new Error(`the server exited with ${code}`)))
})

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

try {
  await show("the routes, as models", "GET", "/v1/models")
  await show("passthrough: always the weak model", "POST", "/v1/chat/completions", user("fast"))
  await show("streamed", "POST", "/v1/chat/completions", user("fast", { stream: true }))
  await show("random route: the decision only (no answer call)", "POST", "/v1/decision", {
    input_format: "openai_chat",
    request: user("mix")
  })
  await show("noop: answered by the router itself", "POST", "/v1/chat/completions", user("ping"))
  await show("an unknown model", "POST", "/v1/chat/completions", user("nope"))
  const metrics = await (await fetch(`${base}/metrics`)).text()
  console.log("\n## /metrics (switchyard series)")
  console.log(metrics.split("\n").filter((line) => line.startsWith("switchyard_requests_total")).join("\n"))
} finally {
  child.kill("SIGTERM")
}
