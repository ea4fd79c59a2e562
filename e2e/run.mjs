// `npm run e2e`: the real Claude Code CLI against the real switchyard server, offline.
//
// 1. Installs this folder's dependencies (`npm ci` here, the pinned @anthropic-ai/claude-code)
//    when they are missing or not the locked version.
// 2. Starts a scripted upstream on 127.0.0.1 (./fake-upstream.mjs, in this process) speaking
//    OpenAI Chat and Anthropic Messages, and the built switchyard CLI with a deployment written
//    here: `e2e-chat` (passthrough to an openai_chat target), `e2e-messages` (passthrough to an
//    anthropic_messages target), `e2e-auto` (llm_classifier, classify_trigger = "user_turn",
//    judge_failure = "error", the judge on the same fake upstream).
// 3. Runs `claude -p ... --model <route>` for each scenario with a temporary HOME and working
//    directory, ANTHROPIC_BASE_URL pointing at the server, and checks the exit code, the output,
//    the file written by the tool, and what reached the upstream.
// 4. Prints one PASS/FAIL line per scenario; exits 1 when any failed. Everything it started is
//    stopped by PID (a CLI run is its own process group, killed by that group id on a timeout).
//
// Options:
//   --workaround-mid-conv-system  run claude with CLAUDE_CODE_MODEL_CAPABILITIES=-mid_conv_system
//                                 (no `role: "system"` messages inside `messages`)
//   --capture-fixtures            also run one Messages tool loop with claude pointed straight at
//                                 the fake upstream (no switchyard in between), default settings,
//                                 and write the two request bodies and the headers to
//                                 packages/server/test/fixtures/claude-code-*.json
//   --only a,b                    run only these scenarios (chat-plain, chat-tool, messages-plain,
//                                 messages-tool, auto-turns); `--only none --capture-fixtures`
//                                 captures the fixtures alone
// Environment:
//   E2E_CLAUDE_EXTRA_ENV   JSON object of extra environment variables for every claude run
//   E2E_TIMEOUT_S          bound on the whole run after installation (default 300)
//   E2E_CLAUDE_TIMEOUT_S   bound on one claude run (default 90)
//   E2E_KEEP_TMP=1         keep the temporary HOMEs and working directories
//
// Artifacts of each run (server log, upstream request log, claude outputs, summary.json) go to
// e2e/runs/<timestamp>/ (git-ignored).
import { execFileSync, spawn } from "node:child_process"
import fs from "node:fs"
import os from "node:os"
import path from "node:path"
import { fileURLToPath } from "node:url"
import { PLAIN_TEXT, TOOL_DONE_PREFIX, startFakeUpstream } from "./fake-upstream.mjs"

const HERE = path.dirname(fileURLToPath(import.meta.url))
const ROOT = path.resolve(HERE, "..")
const BIN = path.join(ROOT, "packages/server/bin/switchyard.js")
const FIXTURES = path.join(ROOT, "packages/server/test/fixtures")
const HOST = "127.0.0.1"
const JUDGE_MODEL = "e2e-judge"
const CHAT_MODEL = "e2e-chat-model"
const MESSAGES_MODEL = "e2e-messages-model"

const args = process.argv.slice(2)
const flag = (name) => args.includes(name)
const option = (name) => {
  const i = args.indexOf(name)
  return i >= 0 ? args[i + 1] : undefined
}
const KNOWN = new Set(["--workaround-mid-conv-system", "--capture-fixtures", "--only"])
for (const [i, a] of args.entries()) {
  if (!KNOWN.has(a) && args[i - 1] !== "--only") {
    console.error(`e2e: unknown argument ${a}; options: --workaround-mid-conv-system, --capture-fixtures, --only a,b`)
    process.exit(2)
  }
}
const workaround = flag("--workaround-mid-conv-system")
const captureFixtures = flag("--capture-fixtures")
const only = option("--only")?.split(",")
const runTimeoutMs = Number(process.env.E2E_TIMEOUT_S ?? "300") * 1000
const claudeTimeoutMs = Number(process.env.E2E_CLAUDE_TIMEOUT_S ?? "90") * 1000
const extraEnv = {
  ...JSON.parse(process.env.E2E_CLAUDE_EXTRA_ENV ?? "{}"),
  ...(workaround ? { CLAUDE_CODE_MODEL_CAPABILITIES: "-mid_conv_system" } : {})
}

// ---------------------------------------------------------------------------------------------
// Processes: every child is tracked and killed by PID (its process group for claude) on exit.
// ---------------------------------------------------------------------------------------------

const children = new Set()
const killChild = (child, signal) => {
  try {
    if (child.groupLeader) process.kill(-child.pid, signal)
    else process.kill(child.pid, signal)
  } catch {}
}
process.on("exit", () => {
  for (const child of children) killChild(child, "SIGKILL")
})
for (const signal of ["SIGINT", "SIGTERM"]) {
  process.on(signal, () => {
    console.log(`e2e: ${signal}, stopping`)
    process.exit(130)
  })
}
const track = (child, groupLeader = false) => {
  child.groupLeader = groupLeader
  children.add(child)
  child.once("exit", () => children.delete(child))
  return child
}

const deadline = Date.now() + runTimeoutMs
const remaining = () => deadline - Date.now()

// ---------------------------------------------------------------------------------------------
// Installation
// ---------------------------------------------------------------------------------------------

const lockedVersion = () =>
  JSON.parse(fs.readFileSync(path.join(HERE, "package-lock.json"), "utf8")).packages["node_modules/@anthropic-ai/claude-code"].version

const installedVersion = () => {
  try {
    return JSON.parse(fs.readFileSync(path.join(HERE, "node_modules/@anthropic-ai/claude-code/package.json"), "utf8")).version
  } catch {
    return undefined
  }
}

const ensureInstalled = () => {
  const locked = lockedVersion()
  if (installedVersion() !== locked) {
    console.log(`e2e: installing @anthropic-ai/claude-code@${locked} into e2e/ (npm ci)`)
    execFileSync("npm", ["ci", "--no-audit", "--no-fund"], { cwd: HERE, stdio: "inherit", timeout: 600_000 })
  }
  if (!fs.existsSync(path.join(ROOT, "packages/server/dist/Cli.js"))) {
    throw new Error("packages/server/dist is missing: run `npm ci` (or `npm run build`) at the repository root first")
  }
  return locked
}

// The native binary of the platform package, run directly: the wrapper's bin/claude.exe is only
// replaced by it when npm runs the wrapper's postinstall, which npm may skip for unapproved scripts.
const claudeBinary = () => {
  const libc = process.platform === "linux" && process.report?.getReport?.().header?.glibcVersionRuntime === undefined ? "-musl" : ""
  const dir = path.join(HERE, "node_modules/@anthropic-ai", `claude-code-${process.platform}-${process.arch}${libc}`)
  const native = path.join(dir, process.platform === "win32" ? "claude.exe" : "claude")
  if (fs.existsSync(native)) return native
  return path.join(HERE, "node_modules/.bin/claude")
}

// ---------------------------------------------------------------------------------------------
// The server
// ---------------------------------------------------------------------------------------------

const deploymentToml = (upstream) => `# Written by e2e/run.mjs for one run.
schema_version = 1

[llm_clients.fake_chat]
format = "openai_chat"
base_url = "${upstream}/v1"
max_retries = 0
timeout_ms = 30000

[llm_clients.fake_messages]
format = "anthropic_messages"
base_url = "${upstream}"
max_retries = 0
timeout_ms = 30000

[llm_clients.fake_judge]
format = "openai_chat"
base_url = "${upstream}/v1"
max_retries = 0
timeout_ms = 5000

[targets.chat]
id = "${CHAT_MODEL}"
llm_client = "fake_chat"

[targets.messages]
id = "${MESSAGES_MODEL}"
llm_client = "fake_messages"

[targets.judge]
id = "${JUDGE_MODEL}"
llm_client = "fake_judge"

[routes.chat]
id = "e2e-chat"
type = "passthrough"
target = "chat"

[routes.messages]
id = "e2e-messages"
type = "passthrough"
target = "messages"

# weak = the Chat target, strong = the Messages target; the fake judge answers p_solve 0.9 (weak).
# judge_failure = "error": a judge that cannot be consulted fails the turn instead of hiding.
[routes.auto]
id = "e2e-auto"
type = "llm_classifier"
classifier_target = "judge"
weak_target = "chat"
strong_target = "messages"
base_threshold = 0.7
classify_trigger = "user_turn"
judge_failure = "error"
`

const startServer = (tomlPath, logPath) =>
  new Promise((resolve, reject) => {
    const log = fs.createWriteStream(logPath)
    const child = track(
      spawn(process.execPath, [BIN, "--config", tomlPath, "--host", HOST, "--port", "0", "--shutdown-timeout", "2"], {
        cwd: ROOT,
        stdio: ["ignore", "pipe", "pipe"]
      })
    )
    let stdout = ""
    const timer = setTimeout(() => reject(new Error(`server did not print its listening line within 20 s (log: ${logPath})`)), 20_000)
    child.stdout.on("data", (data) => {
      log.write(data)
      stdout += data
      const m = /listening on (http:\/\/\S+)/.exec(stdout)
      if (m !== null && stdout.length - data.length <= m.index + m[0].length) {
        clearTimeout(timer)
        resolve({ child, url: m[1], log })
      }
    })
    child.stderr.on("data", (data) => log.write(data))
    child.once("exit", (code) => {
      clearTimeout(timer)
      reject(new Error(`server exited with ${code} before listening (log: ${logPath})`))
    })
  })

const stopServer = async (server) => {
  if (server.child.exitCode !== null) return
  const exited = new Promise((resolve) => server.child.once("exit", resolve))
  killChild(server.child, "SIGTERM")
  const timer = setTimeout(() => killChild(server.child, "SIGKILL"), 5_000)
  await exited
  clearTimeout(timer)
}

// ---------------------------------------------------------------------------------------------
// Claude Code
// ---------------------------------------------------------------------------------------------

let BINARY = "" // resolved after the installation

/**
 * Run `claude -p prompt --model model` in `cwd` with `home` as HOME against `baseUrl`. Resolves to
 * `{ code, signal, stdout, stderr, ms, timedOut }`; never rejects.
 */
const runClaude = ({ prompt, model, cwd, home, baseUrl, extraArgs = [] }) =>
  new Promise((resolve) => {
    const started = Date.now()
    const env = {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      HOME: home,
      // Claude Code leaves /tmp/claude-<uid>/fswatch-probe-* behind: give it a TMPDIR of ours.
      TMPDIR: mkdtemp("sy-e2e-tmp-"),
      LANG: "C.UTF-8",
      ANTHROPIC_BASE_URL: baseUrl,
      ANTHROPIC_API_KEY: "sk-ant-e2e-dummy-not-a-key",
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
      DISABLE_AUTOUPDATER: "1",
      DISABLE_TELEMETRY: "1",
      DISABLE_ERROR_REPORTING: "1",
      ...extraEnv
    }
    // --allowedTools instead of --dangerously-skip-permissions: the latter is refused under root.
    const argv = ["-p", prompt, "--model", model, "--allowedTools", "Write,Bash", ...extraArgs]
    const child = track(spawn(BINARY, argv, { cwd, env, stdio: ["ignore", "pipe", "pipe"], detached: true }), true)
    let stdout = ""
    let stderr = ""
    let timedOut = false
    child.stdout.on("data", (d) => (stdout += d))
    child.stderr.on("data", (d) => (stderr += d))
    const bound = Math.max(1_000, Math.min(claudeTimeoutMs, remaining()))
    const timer = setTimeout(() => {
      timedOut = true
      killChild(child, "SIGKILL")
    }, bound)
    child.once("close", (code, signal) => {
      clearTimeout(timer)
      resolve({ code, signal, stdout, stderr, ms: Date.now() - started, timedOut })
    })
  })

// ---------------------------------------------------------------------------------------------
// Scenarios
// ---------------------------------------------------------------------------------------------

// Temporary HOMEs and working directories, removed at the end unless E2E_KEEP_TMP=1.
const tmpDirs = []
const mkdtemp = (prefix) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix))
  tmpDirs.push(dir)
  return dir
}

const describeRun = (r) =>
  r.timedOut
    ? `claude timed out after ${r.ms} ms`
    : `claude exit ${r.code ?? r.signal}, stdout ${JSON.stringify(r.stdout.trim().slice(0, 300))}`

const plainScenario = (name, route, expectPath, expectModel) => async (ctx) => {
  const home = mkdtemp("sy-e2e-home-")
  const cwd = mkdtemp("sy-e2e-work-")
  const before = ctx.upstream.requests.length
  const r = await ctx.claude({ name, prompt: "Reply with a short greeting.", model: route, cwd, home })
  const seen = ctx.upstream.requests.slice(before)
  const problems = []
  if (r.code !== 0) problems.push(describeRun(r))
  else if (r.stdout.trim() !== PLAIN_TEXT) problems.push(`stdout ${JSON.stringify(r.stdout.trim())}, expected ${PLAIN_TEXT}`)
  const answers = seen.filter((q) => q.body?.model === expectModel)
  if (!answers.every((q) => q.path.split("?")[0] === expectPath)) problems.push(`upstream paths ${answers.map((q) => q.path)}`)
  if (r.code === 0 && answers.length < 1) problems.push("no answer request reached the upstream")
  return { problems, detail: `${answers.length} upstream call(s) on ${expectPath}`, seen, run: r }
}

const toolScenario = (name, route, expectPath, expectModel) => async (ctx) => {
  const home = mkdtemp("sy-e2e-home-")
  const cwd = mkdtemp("sy-e2e-work-")
  const file = path.join(cwd, "e2e-out.txt")
  const content = `written-by-${name}`
  const before = ctx.upstream.requests.length
  const r = await ctx.claude({ name, prompt: toolPrompt(file, content), model: route, cwd, home })
  const seen = ctx.upstream.requests.slice(before)
  const problems = []
  if (r.code !== 0) problems.push(describeRun(r))
  const answers = seen.filter((q) => q.body?.model === expectModel)
  const kinds = answers.map((q) => q.plan?.why).join(",")
  if (r.code === 0) {
    const tool = answers.find((q) => q.plan?.why === "tool-call")?.plan?.name ?? "?"
    if (r.stdout.trim() !== `${TOOL_DONE_PREFIX} ${tool}`) problems.push(`stdout ${JSON.stringify(r.stdout.trim())}`)
    if (kinds !== "tool-call,tool-result") problems.push(`upstream answer calls ${kinds || "none"}, expected tool-call,tool-result`)
    if (!fs.existsSync(file)) problems.push(`${file} was not written`)
    else if (fs.readFileSync(file, "utf8") !== content) problems.push(`${file} holds ${JSON.stringify(fs.readFileSync(file, "utf8"))}`)
  }
  if (!answers.every((q) => q.path.split("?")[0] === expectPath)) problems.push(`upstream paths ${answers.map((q) => q.path)}`)
  return { problems, detail: `upstream answer calls: ${kinds || "none"}`, seen, run: r }
}

const toolPrompt = (file, content) =>
  `Create the file ${file} containing exactly ${content}. [e2e:write ${file} ${content}]`

// Two user turns in one Claude Code conversation on the classifier route: a tool loop (user turn,
// then its tool-result continuation), then `--continue` with a new user message. The judge must be
// asked once per user turn: 2 judge requests for 3 answer requests.
const autoScenario = async (ctx) => {
  const home = mkdtemp("sy-e2e-home-")
  const cwd = mkdtemp("sy-e2e-work-")
  const file = path.join(cwd, "e2e-out.txt")
  const content = "written-by-auto-turns"
  const before = ctx.upstream.requests.length
  const problems = []
  const r1 = await ctx.claude({ name: "auto-turns-1", prompt: toolPrompt(file, content), model: "e2e-auto", cwd, home })
  const afterFirst = ctx.upstream.requests.length
  if (r1.code !== 0) problems.push(`turn 1: ${describeRun(r1)}`)
  else if (!r1.stdout.trim().startsWith(TOOL_DONE_PREFIX)) problems.push(`turn 1 stdout ${JSON.stringify(r1.stdout.trim())}`)
  if (r1.code === 0 && !(fs.existsSync(file) && fs.readFileSync(file, "utf8") === content)) problems.push(`${file} not written as expected`)
  let r2
  if (r1.code === 0) {
    r2 = await ctx.claude({ name: "auto-turns-2", prompt: "Reply with a short greeting.", model: "e2e-auto", cwd, home, extraArgs: ["--continue"] })
    if (r2.code !== 0) problems.push(`turn 2: ${describeRun(r2)}`)
    else if (r2.stdout.trim() !== PLAIN_TEXT) problems.push(`turn 2 stdout ${JSON.stringify(r2.stdout.trim())}`)
  }
  const seen = ctx.upstream.requests.slice(before)
  const judge1 = ctx.upstream.requests.slice(before, afterFirst).filter((q) => q.body?.model === JUDGE_MODEL).length
  const judge = seen.filter((q) => q.body?.model === JUDGE_MODEL).length
  const answers = seen.filter((q) => q.body?.model === CHAT_MODEL || q.body?.model === MESSAGES_MODEL)
  const kinds = answers.map((q) => q.plan?.why).join(",")
  const turns = r2 === undefined ? 1 : 2
  if (r1.code === 0) {
    if (judge1 !== 1) problems.push(`turn 1 (user turn + tool-result continuation): ${judge1} judge requests, expected 1`)
    if (judge !== turns) problems.push(`${judge} judge requests for ${turns} user turns`)
    const expected = turns === 2 ? "tool-call,tool-result,plain" : "tool-call,tool-result"
    if (kinds !== expected) problems.push(`answer calls ${kinds || "none"}, expected ${expected}`)
    if (!answers.every((q) => q.body.model === CHAT_MODEL)) problems.push(`answers went to ${answers.map((q) => q.body.model)} (verdict says weak = ${CHAT_MODEL})`)
  }
  const sessions = [...new Set(seen.filter((q) => q.body?.model !== JUDGE_MODEL).map((q) => q.headers["x-claude-code-session-id"]))]
  // The server's request lines say how each answer was routed (written in 20 ms batches).
  await new Promise((resolve) => setTimeout(resolve, 100))
  const evidence = fs.readFileSync(ctx.serverLogPath, "utf8").split("\n")
    .filter((line) => / route=e2e-auto /.test(line))
    .map((line) => /evidence_source=(\S*)/.exec(line)?.[1] ?? "?")
    .join(",")
  if (r1.code === 0 && turns === 2 && evidence !== "llm-classifier,affinity,llm-classifier") {
    problems.push(`server evidence ${evidence || "none"}, expected llm-classifier,affinity,llm-classifier`)
  }
  return {
    problems,
    detail: `${judge} judge request(s) for ${turns} user turn(s); answer calls ${kinds || "none"}, evidence ${evidence || "none"}; ${sessions.length} Claude Code session id(s)`,
    seen,
    run: r2 ?? r1
  }
}

const SCENARIOS = [
  ["chat-plain", plainScenario("chat-plain", "e2e-chat", "/v1/chat/completions", CHAT_MODEL)],
  ["chat-tool", toolScenario("chat-tool", "e2e-chat", "/v1/chat/completions", CHAT_MODEL)],
  ["messages-plain", plainScenario("messages-plain", "e2e-messages", "/v1/messages", MESSAGES_MODEL)],
  ["messages-tool", toolScenario("messages-tool", "e2e-messages", "/v1/messages", MESSAGES_MODEL)],
  ["auto-turns", autoScenario]
]

// ---------------------------------------------------------------------------------------------
// Fixtures: Claude Code straight at the fake upstream, default settings, a Messages tool loop.
// ---------------------------------------------------------------------------------------------

const captureRequestFixtures = async (ctx, version) => {
  const home = mkdtemp("sy-e2e-home-")
  const cwd = mkdtemp("sy-e2e-work-")
  const file = path.join(cwd, "e2e-out.txt")
  const before = ctx.upstream.requests.length
  const saved = { ...extraEnv }
  for (const k of Object.keys(extraEnv)) delete extraEnv[k]
  const r = await ctx.claude({ name: "capture", prompt: toolPrompt(file, "captured"), model: "e2e-messages", cwd, home, baseUrl: ctx.upstream.url })
  Object.assign(extraEnv, saved)
  const seen = ctx.upstream.requests.slice(before).filter((q) => q.path.startsWith("/v1/messages"))
  const first = seen.find((q) => q.plan?.why === "tool-call")
  const continuation = seen.find((q) => q.plan?.why === "tool-result")
  if (r.code !== 0 || first === undefined || continuation === undefined) {
    return { problems: [`capture run failed: ${describeRun(r)}; ${seen.length} request(s) seen`], detail: "", seen, run: r }
  }
  fs.mkdirSync(FIXTURES, { recursive: true })
  const write = (name, value) => fs.writeFileSync(path.join(FIXTURES, name), `${JSON.stringify(value, null, 2)}\n`)
  write("claude-code-first-request.json", first.body)
  write("claude-code-tool-continuation.json", continuation.body)
  write("claude-code-request-headers.json", { method: first.method, path: first.path, headers: first.headers })
  return {
    problems: [],
    detail: `Claude Code ${version}: wrote claude-code-{first-request,tool-continuation,request-headers}.json to ${path.relative(ROOT, FIXTURES)}`,
    seen,
    run: r
  }
}

// ---------------------------------------------------------------------------------------------
// Main
// ---------------------------------------------------------------------------------------------

const summarizeRequests = (requests) =>
  requests.map((q) => ({
    seq: q.seq,
    method: q.method,
    path: q.path,
    model: q.body?.model,
    plan: q.plan?.why,
    roles: Array.isArray(q.body?.messages) ? q.body.messages.map((m) => m.role) : undefined,
    session: q.headers["x-claude-code-session-id"],
    beta: q.headers["anthropic-beta"]
  }))

const main = async () => {
  const version = ensureInstalled()
  BINARY = claudeBinary()
  const stamp = new Date().toISOString().replace(/[:.]/g, "-")
  const runDir = path.join(HERE, "runs", stamp)
  fs.mkdirSync(runDir, { recursive: true })
  console.log(`e2e: Claude Code ${version} (${path.relative(ROOT, BINARY)}), mode ${workaround ? "workaround (-mid_conv_system)" : "default settings"}${Object.keys(extraEnv).length > 0 ? `, extra env ${JSON.stringify(extraEnv)}` : ""}`)
  console.log(`e2e: artifacts in ${path.relative(ROOT, runDir)}`)
  const started = Date.now()
  const upstream = await startFakeUpstream({ judgeModel: JUDGE_MODEL })
  const tomlPath = path.join(runDir, "deployment.toml")
  fs.writeFileSync(tomlPath, deploymentToml(upstream.url))
  const server = await startServer(tomlPath, path.join(runDir, "server.log"))
  const ctx = {
    upstream,
    serverLogPath: path.join(runDir, "server.log"),
    claude: async ({ name, baseUrl = server.url, ...rest }) => {
      const r = await runClaude({ ...rest, baseUrl })
      fs.writeFileSync(path.join(runDir, `claude-${name}.txt`), `exit ${r.code ?? r.signal} in ${r.ms} ms${r.timedOut ? " (timed out)" : ""}\n--- stdout\n${r.stdout}\n--- stderr\n${r.stderr}`)
      return r
    }
  }
  const results = []
  const runOne = async (name, scenario) => {
    const t0 = Date.now()
    let result
    if (remaining() <= 0) result = { problems: [`skipped: the run's ${runTimeoutMs / 1000} s bound passed`], detail: "" }
    else {
      try {
        result = await scenario(ctx)
      } catch (e) {
        result = { problems: [`error: ${e instanceof Error ? e.message : String(e)}`], detail: "" }
      }
    }
    const ok = result.problems.length === 0
    const ms = Date.now() - t0
    console.log(`${ok ? "PASS" : "FAIL"} ${name} (${(ms / 1000).toFixed(1)} s): ${ok ? result.detail : result.problems.join("; ")}`)
    results.push({ name, ok, ms, problems: result.problems, detail: result.detail, requests: summarizeRequests(result.seen ?? []) })
  }
  try {
    for (const [name, scenario] of SCENARIOS) {
      if (only === undefined || only.includes(name)) await runOne(name, scenario)
    }
    if (captureFixtures) await runOne("capture-fixtures", (c) => captureRequestFixtures(c, version))
  } finally {
    await stopServer(server)
    server.log.end()
    await upstream.close()
    fs.writeFileSync(path.join(runDir, "upstream-requests.json"), `${JSON.stringify(upstream.requests, null, 1)}\n`)
    if (process.env.E2E_KEEP_TMP !== "1") for (const dir of tmpDirs) fs.rmSync(dir, { recursive: true, force: true })
  }
  const failed = results.filter((r) => !r.ok).length
  const totalMs = Date.now() - started
  fs.writeFileSync(
    path.join(runDir, "summary.json"),
    `${JSON.stringify({ version, workaround, extraEnv, totalMs, passed: results.length - failed, failed, results }, null, 2)}\n`
  )
  if (failed > 0) {
    const errors = fs.readFileSync(path.join(runDir, "server.log"), "utf8").split("\n").filter((l) => /status=[45]\d\d|level=(WARN|ERROR)/.test(l))
    if (errors.length > 0) console.log(`e2e: server log, non-2xx and warnings (first 5):\n  ${errors.slice(0, 5).join("\n  ")}`)
  }
  console.log(`e2e: ${results.length - failed} passed, ${failed} failed in ${(totalMs / 1000).toFixed(1)} s`)
  return failed === 0 ? 0 : 1
}

main().then(
  (code) => process.exit(code),
  (e) => {
    console.error(`e2e: ${e instanceof Error ? e.message : String(e)}`)
    process.exit(1)
  }
)
