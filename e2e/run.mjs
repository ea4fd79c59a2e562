// `npm run e2e`: the real Claude Code and Codex CLIs against the real switchyard server, offline.
//
// 1. Installs this folder's dependencies (`npm ci` here, the pinned @anthropic-ai/claude-code and
//    @openai/codex) when they are missing or not the locked versions.
// 2. Starts a scripted upstream on 127.0.0.1 (./fake-upstream.mjs, in this process) speaking
//    OpenAI Chat, Anthropic Messages and OpenAI Responses, and the built switchyard CLI with a
//    deployment written here: `e2e-chat` (passthrough to an openai_chat target), `e2e-messages`
//    (passthrough to an anthropic_messages target), `e2e-responses` (passthrough to an
//    openai_responses target), `e2e-auto` (llm_classifier, classify_trigger = "user_turn",
//    judge_failure = "error", the judge an openai_chat target on the same fake upstream) and
//    `e2e-auto-responses` (the same with the judge and the weak target openai_responses), and
//    `gpt-5.5` (a passthrough; named after a model of Codex's catalog so Codex offers its freeform
//    apply_patch tool; the patch scenarios start one more server each with it on their target).
// 3. Claude Code scenarios run `claude -p ... --model <route>`, Codex scenarios `codex exec ...`
//    with `model = <route>` and a `wire_api = "responses"` model provider pointing at the server,
//    each with a temporary HOME (and CODEX_HOME) and working directory, and check the exit code,
//    the output, the file written by the tool, and what reached the upstream.
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
//   --only a,b                    run only these scenarios or groups: `claude` (chat-plain,
//                                 chat-tool, messages-plain, messages-tool, responses-plain,
//                                 responses-tool, auto-turns), `codex` (codex-chat-tool,
//                                 codex-messages-tool, codex-responses-tool, codex-chat-patch,
//                                 codex-messages-patch, codex-responses-patch, codex-auto-turns);
//                                 opt-in only: codex-catalog-plain (Codex on a route named
//                                 gpt-5.6-sol, a Chat target: its tools come in an
//                                 `additional_tools` item, offered flattened; see
//                                 docs/http-api.md "Codex")
//                                 `--only none --capture-fixtures` captures the fixtures alone
// Environment:
//   E2E_CLAUDE_EXTRA_ENV   JSON object of extra environment variables for every claude run
//   E2E_CODEX_EXTRA_ARGS   JSON array of extra `codex exec` arguments (e.g. ["-c", "key=value"])
//   E2E_TIMEOUT_S          bound on the whole run after installation (default 300)
//   E2E_CLAUDE_TIMEOUT_S   bound on one claude or codex run (default 90)
//   E2E_KEEP_TMP=1         keep the temporary HOMEs and working directories
//
// Artifacts of each run (server logs, upstream request log, claude / codex outputs, summary.json) go to
// e2e/runs/<timestamp>/ (git-ignored).
import { execFileSync, spawn } from "node:child_process"
import fs from "node:fs"
import os from "node:os"
import path from "node:path"
import { fileURLToPath } from "node:url"
import { CHAIN_DONE, PLAIN_TEXT, startFakeUpstream, TOOL_DONE_PREFIX } from "./fake-upstream.mjs"

const HERE = path.dirname(fileURLToPath(import.meta.url))
const ROOT = path.resolve(HERE, "..")
const BIN = path.join(ROOT, "packages/server/bin/switchyard.js")
const FIXTURES = path.join(ROOT, "packages/server/test/fixtures")
const HOST = "127.0.0.1"
const JUDGE_MODEL = "e2e-judge"
const RESPONSES_JUDGE_MODEL = "e2e-judge-responses"
const CHAT_MODEL = "e2e-chat-model"
const MESSAGES_MODEL = "e2e-messages-model"
const RESPONSES_MODEL = "e2e-responses-model"
const JUDGES = [JUDGE_MODEL, RESPONSES_JUDGE_MODEL]
// The one model of Codex 0.171.0's bundled catalog whose requests carry their tools in `tools`
// (apply_patch freeform); the newer ones put them in an `additional_tools` input item.
const CODEX_MODEL = "gpt-5.5"

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
const GROUPS = {
  claude: [
    "chat-plain",
    "chat-tool",
    "messages-plain",
    "messages-tool",
    "responses-plain",
    "responses-tool",
    "auto-turns"
  ],
  codex: [
    "codex-chat-tool",
    "codex-messages-tool",
    "codex-responses-tool",
    "codex-chat-patch",
    "codex-messages-patch",
    "codex-responses-patch",
    "codex-auto-turns"
  ]
}
const only = option("--only")?.split(",").flatMap((name) => GROUPS[name] ?? [name])
const codexExtraArgs = JSON.parse(process.env.E2E_CODEX_EXTRA_ARGS ?? "[]")
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

const CLIS = ["@anthropic-ai/claude-code", "@openai/codex"]

const lockedVersion = (pkg) =>
  JSON.parse(fs.readFileSync(path.join(HERE, "package-lock.json"), "utf8")).packages[`node_modules/${pkg}`].version

const installedVersion = (pkg) => {
  try {
    return JSON.parse(fs.readFileSync(path.join(HERE, "node_modules", pkg, "package.json"), "utf8")).version
  } catch {
    return undefined
  }
}

/** Installs the pinned CLIs when needed; resolves to `{ claude, codex }` versions. */
const ensureInstalled = () => {
  const stale = CLIS.filter((pkg) => installedVersion(pkg) !== lockedVersion(pkg))
  if (stale.length > 0) {
    console.log(`e2e: installing ${stale.map((pkg) => `${pkg}@${lockedVersion(pkg)}`).join(", ")} into e2e/ (npm ci)`)
    execFileSync("npm", ["ci", "--no-audit", "--no-fund"], { cwd: HERE, stdio: "inherit", timeout: 600_000 })
  }
  if (!fs.existsSync(path.join(ROOT, "packages/server/dist/Cli.js"))) {
    throw new Error("packages/server/dist is missing: run `npm ci` (or `npm run build`) at the repository root first")
  }
  return { claude: lockedVersion(CLIS[0]), codex: lockedVersion(CLIS[1]) }
}

// The native binary of the platform package, run directly: the wrapper's bin/claude.exe is only
// replaced by it when npm runs the wrapper's postinstall, which npm may skip for unapproved scripts.
const claudeBinary = () => {
  const libc = process.platform === "linux" && process.report?.getReport?.().header?.glibcVersionRuntime === undefined
    ? "-musl"
    : ""
  const dir = path.join(HERE, "node_modules/@anthropic-ai", `claude-code-${process.platform}-${process.arch}${libc}`)
  const native = path.join(dir, process.platform === "win32" ? "claude.exe" : "claude")
  if (fs.existsSync(native)) return native
  return path.join(HERE, "node_modules/.bin/claude")
}

// ---------------------------------------------------------------------------------------------
// The server
// ---------------------------------------------------------------------------------------------

const deploymentToml = (upstream, codexModelTarget = "chat", codexModel = CODEX_MODEL) =>
  `# Written by e2e/run.mjs for one run.
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

[llm_clients.fake_responses]
format = "openai_responses"
base_url = "${upstream}/v1"
max_retries = 0
timeout_ms = 30000

[llm_clients.fake_judge]
format = "openai_chat"
base_url = "${upstream}/v1"
max_retries = 0
timeout_ms = 5000

[llm_clients.fake_judge_responses]
format = "openai_responses"
base_url = "${upstream}/v1"
max_retries = 0
timeout_ms = 5000

[targets.chat]
id = "${CHAT_MODEL}"
llm_client = "fake_chat"

[targets.messages]
id = "${MESSAGES_MODEL}"
llm_client = "fake_messages"

[targets.responses]
id = "${RESPONSES_MODEL}"
llm_client = "fake_responses"

[targets.judge]
id = "${JUDGE_MODEL}"
llm_client = "fake_judge"

[targets.judge_responses]
id = "${RESPONSES_JUDGE_MODEL}"
llm_client = "fake_judge_responses"

[routes.chat]
id = "e2e-chat"
type = "passthrough"
target = "chat"

[routes.messages]
id = "e2e-messages"
type = "passthrough"
target = "messages"

[routes.responses]
id = "e2e-responses"
type = "passthrough"
target = "responses"

# A route named after a model in Codex's bundled catalog: Codex then uses that model's metadata and
# offers apply_patch as a freeform (custom) tool. (The patch scenarios start a server of their own
# with this route on the target they test.)
[routes.codex_model]
id = "${codexModel}"
type = "passthrough"
target = "${codexModelTarget}"

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

# The same over Responses: the judge (asked buffered) and the weak target are openai_responses.
[routes.auto_responses]
id = "e2e-auto-responses"
type = "llm_classifier"
classifier_target = "judge_responses"
weak_target = "responses"
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
    const timer = setTimeout(
      () => reject(new Error(`server did not print its listening line within 20 s (log: ${logPath})`)),
      20_000
    )
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
// Codex
// ---------------------------------------------------------------------------------------------

const CODEX_JS = path.join(HERE, "node_modules/@openai/codex/bin/codex.js")
const CODEX_KEY_ENV = "SWITCHYARD_E2E_KEY"

// Default settings apart from the model provider (the server, `wire_api = "responses"`, a dummy
// key, no retries so a failure shows at once) and what would reach the network: no update check,
// no analytics, no OpenTelemetry export.
const codexConfig = (baseUrl, model) =>
  `# Written by e2e/run.mjs for one run.
model = "${model}"
model_provider = "switchyard"
check_for_update_on_startup = false

[analytics]
enabled = false

[otel]
exporter = "none"

[model_providers.switchyard]
name = "switchyard"
base_url = "${baseUrl}/v1"
wire_api = "responses"
env_key = "${CODEX_KEY_ENV}"
request_max_retries = 0
stream_max_retries = 0
`

/**
 * Run `codex exec` (or `codex exec resume --last` when `resume`) with `prompt` in `cwd`, `home` as
 * HOME and `home/.codex` as CODEX_HOME (its config.toml names `model` and the server). The sandbox
 * is `workspace-write` on a new session (the default, read-only, cannot write the file; exec never
 * asks for approval); a resumed session keeps its own. Any traffic not to 127.0.0.1 goes to a dead
 * proxy on 127.0.0.1:9. Resolves like `runClaude`; never rejects.
 */
const runCodex = ({ prompt, model, cwd, home, baseUrl, resume = false }) =>
  new Promise((resolve) => {
    const started = Date.now()
    const codexHome = path.join(home, ".codex")
    fs.mkdirSync(codexHome, { recursive: true })
    fs.writeFileSync(path.join(codexHome, "config.toml"), codexConfig(baseUrl, model))
    const deadProxy = "http://127.0.0.1:9"
    const env = {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      HOME: home,
      CODEX_HOME: codexHome,
      TMPDIR: mkdtemp("sy-e2e-tmp-"),
      LANG: "C.UTF-8",
      NO_COLOR: "1",
      [CODEX_KEY_ENV]: "sk-e2e-dummy-not-a-key",
      HTTP_PROXY: deadProxy,
      HTTPS_PROXY: deadProxy,
      ALL_PROXY: deadProxy,
      NO_PROXY: "127.0.0.1,localhost"
    }
    const argv = resume
      ? [CODEX_JS, "exec", "resume", "--last", "--skip-git-repo-check", ...codexExtraArgs, prompt]
      : [
        CODEX_JS,
        "exec",
        "--skip-git-repo-check",
        "--color",
        "never",
        "--sandbox",
        "workspace-write",
        ...codexExtraArgs,
        prompt
      ]
    const child = track(
      spawn(process.execPath, argv, { cwd, env, stdio: ["ignore", "pipe", "pipe"], detached: true }),
      true
    )
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

const describeRun = (r, cli = "claude") =>
  r.timedOut
    ? `${cli} timed out after ${r.ms} ms`
    : `${cli} exit ${r.code ?? r.signal}, stdout ${JSON.stringify(r.stdout.trim().slice(0, 300))}${
      r.code !== 0 && cli === "codex" ? `, stderr tail ${JSON.stringify(r.stderr.trim().slice(-400))}` : ""
    }`

/** The server's request lines for `route` written since `mark` (a byte offset of its log). */
const serverLines = async (ctx, route, mark) => {
  await new Promise((resolve) => setTimeout(resolve, 100)) // request lines are written in 20 ms batches
  return fs.readFileSync(ctx.serverLogPath, "utf8").slice(mark).split("\n").filter((line) =>
    line.includes(` route=${route} `)
  )
}
const logMark = (ctx) => fs.statSync(ctx.serverLogPath).size

const plainScenario = (name, route, expectPath, expectModel) => async (ctx) => {
  const home = mkdtemp("sy-e2e-home-")
  const cwd = mkdtemp("sy-e2e-work-")
  const before = ctx.upstream.requests.length
  const r = await ctx.claude({ name, prompt: "Reply with a short greeting.", model: route, cwd, home })
  const seen = ctx.upstream.requests.slice(before)
  const problems = []
  if (r.code !== 0) problems.push(describeRun(r))
  else if (r.stdout.trim() !== PLAIN_TEXT) {
    problems.push(`stdout ${JSON.stringify(r.stdout.trim())}, expected ${PLAIN_TEXT}`)
  }
  const answers = seen.filter((q) => q.body?.model === expectModel)
  if (!answers.every((q) => q.path.split("?")[0] === expectPath)) {
    problems.push(`upstream paths ${answers.map((q) => q.path)}`)
  }
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
    if (kinds !== "tool-call,tool-result") {
      problems.push(`upstream answer calls ${kinds || "none"}, expected tool-call,tool-result`)
    }
    if (!fs.existsSync(file)) problems.push(`${file} was not written`)
    else if (fs.readFileSync(file, "utf8") !== content) {
      problems.push(`${file} holds ${JSON.stringify(fs.readFileSync(file, "utf8"))}`)
    }
  }
  if (!answers.every((q) => q.path.split("?")[0] === expectPath)) {
    problems.push(`upstream paths ${answers.map((q) => q.path)}`)
  }
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
  else if (!r1.stdout.trim().startsWith(TOOL_DONE_PREFIX)) {
    problems.push(`turn 1 stdout ${JSON.stringify(r1.stdout.trim())}`)
  }
  if (r1.code === 0 && !(fs.existsSync(file) && fs.readFileSync(file, "utf8") === content)) {
    problems.push(`${file} not written as expected`)
  }
  let r2
  if (r1.code === 0) {
    r2 = await ctx.claude({
      name: "auto-turns-2",
      prompt: "Reply with a short greeting.",
      model: "e2e-auto",
      cwd,
      home,
      extraArgs: ["--continue"]
    })
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
    if (judge1 !== 1) {
      problems.push(`turn 1 (user turn + tool-result continuation): ${judge1} judge requests, expected 1`)
    }
    if (judge !== turns) problems.push(`${judge} judge requests for ${turns} user turns`)
    const expected = turns === 2 ? "tool-call,tool-result,plain" : "tool-call,tool-result"
    if (kinds !== expected) problems.push(`answer calls ${kinds || "none"}, expected ${expected}`)
    if (!answers.every((q) => q.body.model === CHAT_MODEL)) {
      problems.push(`answers went to ${answers.map((q) => q.body.model)} (verdict says weak = ${CHAT_MODEL})`)
    }
  }
  const sessions = [
    ...new Set(seen.filter((q) => q.body?.model !== JUDGE_MODEL).map((q) => q.headers["x-claude-code-session-id"]))
  ]
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
    detail: `${judge} judge request(s) for ${turns} user turn(s); answer calls ${kinds || "none"}, evidence ${
      evidence || "none"
    }; ${sessions.length} Claude Code session id(s)`,
    seen,
    run: r2 ?? r1
  }
}

// What a tool result carried, per upstream format.
const resultText = (content) =>
  typeof content === "string"
    ? content
    : Array.isArray(content)
    ? content.map((p) => (typeof p?.text === "string" ? p.text : "")).join("")
    : ""

const offeredTools = (api, body) =>
  (Array.isArray(body?.tools) ? body.tools : []).map((t) => (api === "openai" ? t?.function?.name : t?.name)).filter((
    n
  ) => typeof n === "string")

/**
 * Checks the two answer requests of one Codex tool loop as the upstream received them: the first
 * offers exec_command; the continuation carries the call (same id, exec_command) and its result
 * (the command's output, which includes `content`) in the upstream's own shape, and on a Responses
 * upstream the reasoning item with its encrypted_content, replayed.
 */
const checkCodexLoop = (api, first, cont, content) => {
  const problems = []
  const offered = offeredTools(api, first.body)
  if (!offered.includes("exec_command")) problems.push(`first request offers ${offered.length} tools, not exec_command`)
  if (api === "openai") {
    const callId = `call_e2e_${first.seq}`
    const messages = cont.body.messages ?? []
    const last = messages[messages.length - 1]
    const call = messages.flatMap((m) => (m.role === "assistant" && Array.isArray(m.tool_calls) ? m.tool_calls : []))
      .find((c) => c.id === callId)
    if (call?.function?.name !== "exec_command") {
      problems.push(`no assistant tool_call ${callId} named exec_command in the continuation`)
    }
    if (last?.role !== "tool" || last.tool_call_id !== callId) {
      problems.push(
        `continuation ends with ${String(JSON.stringify(last)).slice(0, 200)}, not a tool message for ${callId}`
      )
    } else if (!resultText(last.content).includes(content)) {
      problems.push(`tool message lacks the command output: ${JSON.stringify(last.content).slice(0, 200)}`)
    }
  } else if (api === "anthropic") {
    const useId = `toolu_e2e_${first.seq}`
    const messages = cont.body.messages ?? []
    const last = messages[messages.length - 1]
    const use = messages.flatMap((m) => (m.role === "assistant" && Array.isArray(m.content) ? m.content : [])).find((
      b
    ) => b?.type === "tool_use" && b.id === useId)
    if (use?.name !== "exec_command") {
      problems.push(`no assistant tool_use ${useId} named exec_command in the continuation`)
    }
    const result = last?.role === "user" && Array.isArray(last.content)
      ? last.content.find((b) => b?.type === "tool_result")
      : undefined
    if (result?.tool_use_id !== useId) {
      problems.push(
        `continuation ends with ${String(JSON.stringify(last)).slice(0, 200)}, not a tool_result for ${useId}`
      )
    } else if (!resultText(result.content).includes(content)) {
      problems.push(`tool_result lacks the command output: ${JSON.stringify(result.content).slice(0, 200)}`)
    }
  } else {
    const callId = `call_e2e_${first.seq}`
    const items = Array.isArray(cont.body.input) ? cont.body.input : []
    const last = items[items.length - 1]
    const call = items.find((i) => i?.type === "function_call" && i.call_id === callId)
    if (call?.name !== "exec_command") {
      problems.push(`no function_call ${callId} named exec_command in the continuation`)
    }
    if (last?.type !== "function_call_output" || last.call_id !== callId) {
      problems.push(
        `continuation ends with ${String(JSON.stringify(last)).slice(0, 200)}, not a function_call_output for ${callId}`
      )
    } else if (!resultText(last.output).includes(content)) {
      problems.push(`function_call_output lacks the command output: ${JSON.stringify(last.output).slice(0, 200)}`)
    }
    const reasoning = items.find((i) => i?.type === "reasoning")
    if (reasoning?.encrypted_content !== `e2e-opaque-${first.seq}`) {
      problems.push(`reasoning item not replayed: ${String(JSON.stringify(reasoning)).slice(0, 200)}`)
    }
  }
  return { problems, offered }
}

// One `codex exec` on a passthrough route: Codex calls exec_command (a shell command writing the
// file and printing it) and sends the output back, then close_agent of its multi_agent_v1
// namespace (for a made-up agent: Codex answers with an error text) and sends that back, then
// answers. Checked: exit 0, the final message, the file, the upstream's three answer requests
// (tool-call, namespace-call, tool-result) with the calls and results in its own format, the
// calls as Codex recorded them in its session file (close_agent under namespace multi_agent_v1:
// the server restored the namespace of a flat Chat / Messages function), and the server's request
// lines (all 200 on /v1/responses).
const codexToolScenario = (name, route, api, expectPath, expectModel) => async (ctx) => {
  const home = mkdtemp("sy-e2e-home-")
  const cwd = mkdtemp("sy-e2e-work-")
  const file = path.join(cwd, "e2e-out.txt")
  const content = `written-by-${name}`
  const before = ctx.upstream.requests.length
  const mark = logMark(ctx)
  const r = await ctx.codex({
    name,
    prompt: `${toolPrompt(file, content)} [e2e:then-namespace]`,
    model: route,
    cwd,
    home
  })
  const seen = ctx.upstream.requests.slice(before)
  const problems = []
  if (r.code !== 0) problems.push(describeRun(r, "codex"))
  const answers = seen.filter((q) => q.body?.model === expectModel)
  const kinds = answers.map((q) => q.plan?.why).join(",")
  let offered = []
  let nsOutput = ""
  if (r.code === 0) {
    if (r.stdout.trim() !== CHAIN_DONE) problems.push(`stdout ${JSON.stringify(r.stdout.trim())}`)
    if (kinds !== "tool-call,namespace-call,tool-result") {
      problems.push(`upstream answer calls ${kinds || "none"}, expected tool-call,namespace-call,tool-result`)
    }
    if (!fs.existsSync(file)) problems.push(`${file} was not written`)
    else if (fs.readFileSync(file, "utf8") !== content) {
      problems.push(`${file} holds ${JSON.stringify(fs.readFileSync(file, "utf8"))}`)
    }
    const [first, second, last] = answers
    if (kinds === "tool-call,namespace-call,tool-result") {
      const check = checkCodexLoop(api, first, second, content)
      problems.push(...check.problems)
      offered = check.offered
      // The namespaced call as the upstream got it back, and its result.
      const id = `${api === "anthropic" ? "toolu" : "call"}_e2e_${second.seq}`
      const call = upstreamCalls(api, last.body).get(id)
      const flat = api === "responses"
        ? call?.name === "close_agent" && call.namespace === "multi_agent_v1"
        : call?.name === "multi_agent_v1__close_agent"
      if (!flat) {
        problems.push(`the close_agent call came back to the upstream as ${String(JSON.stringify(call)).slice(0, 200)}`)
      }
      nsOutput = toolResults(api, last.body).get(id) ?? ""
      if (nsOutput === "") problems.push("the close_agent result did not reach the upstream")
      else if (/unsupported call|unknown tool/i.test(nsOutput)) {
        problems.push(`close_agent answered ${JSON.stringify(nsOutput.slice(0, 200))}`)
      }
    }
    const nsCall = codexRolloutItems(home).find((i) => i?.type === "function_call" && /close_agent/.test(i.name ?? ""))
    if (nsCall?.name !== "close_agent" || nsCall.namespace !== "multi_agent_v1") {
      problems.push(`Codex recorded the close_agent call as ${String(JSON.stringify(nsCall)).slice(0, 200)}`)
    }
  }
  if (!answers.every((q) => q.path.split("?")[0] === expectPath)) {
    problems.push(`upstream paths ${answers.map((q) => q.path)}`)
  }
  const lines = await serverLines(ctx, route, mark)
  const bad = lines.filter((line) => !/ status=200 /.test(line) || !/ wire_format=openai_responses /.test(line))
  if (bad.length > 0) problems.push(`server request lines: ${bad.map((l) => /status=\S*/.exec(l)?.[0]).join(",")}`)
  const namespaced = offered.filter((n) => n.includes("__")).length
  return {
    problems,
    detail: `upstream answer calls: ${kinds || "none"} on ${expectPath}; ${offered.length} tools offered upstream${
      api === "responses" ? "" : ` (${namespaced} flattened from namespaces)`
    }; Codex recorded close_agent under multi_agent_v1 (result ${
      JSON.stringify(nsOutput.slice(0, 60))
    }); ${lines.length} server request(s), all 200`,
    seen,
    run: r
  }
}

// The items Codex recorded in its session file (CODEX_HOME/sessions/**/rollout-*.jsonl): what it
// understood of the server's answers.
const codexRolloutItems = (home) => {
  const files = []
  const walk = (dir, depth) => {
    if (depth > 5 || !fs.existsSync(dir)) return
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, entry.name)
      if (entry.isDirectory()) walk(p, depth + 1)
      else if (/^rollout-.*\.jsonl$/.test(entry.name)) files.push(p)
    }
  }
  walk(path.join(home, ".codex", "sessions"), 0)
  return files.flatMap((f) =>
    fs.readFileSync(f, "utf8").split("\n").filter((l) => l.trim() !== "").map((l) => {
      try {
        return JSON.parse(l)
      } catch {
        return {}
      }
    })
  ).filter((e) => e.type === "response_item").map((e) => e.payload)
}

// `codex exec` on a route named after a model of Codex's catalog (gpt-5.5), so Codex offers
// apply_patch as a freeform (custom) tool: the upstream calls apply_patch adding the file, Codex
// applies the patch and sends the result back, the upstream answers. Checked: exit 0, the final
// message, the file, the two upstream answer requests (patch-call, tool-result) with the call and
// its result in the upstream's format (a function with an `input` string on Chat / Messages, a
// custom_tool_call on Responses), and in Codex's session file a custom_tool_call apply_patch (the
// server turned the flat function call back into a custom tool call).
const codexPatchScenario = (name, format) => async (ctx) => {
  const { target, api, path: expectPath, model: expectModel } = format
  const route = CODEX_MODEL
  const own = await ctx.serverFor(target)
  try {
    return await codexPatchRun(ctx, own, name, route, api, expectPath, expectModel)
  } finally {
    await own.stop()
  }
}

const codexPatchRun = async (ctx, own, name, route, api, expectPath, expectModel) => {
  const home = mkdtemp("sy-e2e-home-")
  const cwd = mkdtemp("sy-e2e-work-")
  const file = path.join(cwd, "e2e-patch.txt")
  const content = `patched-by-${name}`
  const before = ctx.upstream.requests.length
  const r = await ctx.codex({
    name,
    prompt: `Add the file ${file} containing ${content}. [e2e:patch ${file} ${content}]`,
    model: route,
    cwd,
    home,
    baseUrl: own.url
  })
  const seen = ctx.upstream.requests.slice(before)
  const problems = []
  if (r.code !== 0) problems.push(describeRun(r, "codex"))
  const answers = seen.filter((q) => q.body?.model === expectModel)
  const kinds = answers.map((q) => q.plan?.why).join(",")
  let patchResult = ""
  if (r.code === 0) {
    if (r.stdout.trim() !== `${TOOL_DONE_PREFIX} apply_patch`) {
      problems.push(`stdout ${JSON.stringify(r.stdout.trim())}`)
    }
    if (kinds !== "patch-call,tool-result") {
      problems.push(`upstream answer calls ${kinds || "none"}, expected patch-call,tool-result`)
    }
    if (!fs.existsSync(file)) problems.push(`${file} was not written`)
    else if (fs.readFileSync(file, "utf8") !== `${content}\n`) {
      problems.push(`${file} holds ${JSON.stringify(fs.readFileSync(file, "utf8"))}`)
    }
    const [patchReq, lastReq] = answers
    if (kinds === "patch-call,tool-result") {
      const id = `${api === "anthropic" ? "toolu" : "call"}_e2e_${patchReq.seq}`
      const call = upstreamCalls(api, lastReq.body).get(id)
      const shaped = api === "responses"
        ? call?.type === "custom_tool_call" && call.name === "apply_patch" && typeof call.input === "string"
        : call?.name === "apply_patch" && typeof call.input?.input === "string"
      if (!shaped) {
        problems.push(`the apply_patch call came back to the upstream as ${String(JSON.stringify(call)).slice(0, 200)}`)
      }
      patchResult = toolResults(api, lastReq.body).get(id) ?? ""
      if (patchResult === "") problems.push("the apply_patch result did not reach the upstream")
      else if (/unsupported|unknown tool/i.test(patchResult)) {
        problems.push(`apply_patch answered ${JSON.stringify(patchResult.slice(0, 200))}`)
      }
    }
    const patchCall = codexRolloutItems(home).find((i) => i?.name === "apply_patch")
    if (patchCall?.type !== "custom_tool_call") {
      problems.push(`Codex recorded apply_patch as ${String(JSON.stringify(patchCall)).slice(0, 200)}`)
    }
  }
  if (!answers.every((q) => q.path.split("?")[0] === expectPath)) {
    problems.push(`upstream paths ${answers.map((q) => q.path)}`)
  }
  const lines = await serverLines({ serverLogPath: own.logPath }, route, 0)
  const bad = lines.filter((line) => !/ status=200 /.test(line))
  if (bad.length > 0) problems.push(`server request lines: ${bad.map((l) => /status=\S*/.exec(l)?.[0]).join(",")}`)
  return {
    problems,
    detail: `upstream answer calls: ${
      kinds || "none"
    } on ${expectPath}; Codex recorded a custom_tool_call apply_patch (result ${
      JSON.stringify(patchResult.slice(0, 40))
    }); ${lines.length} server request(s), all 200`,
    seen,
    run: r
  }
}

// Opt-in (not in the `codex` group; see docs/http-api.md "Codex"): `codex exec` with a plain
// prompt on a route named after a newer model of Codex's catalog, so Codex sends its tools in an
// `additional_tools` input item, on a Chat target. Passes when the server serves it.
const CATALOG_MODEL = "gpt-5.6-sol"
const codexCatalogScenario = async (ctx) => {
  const own = await ctx.serverFor("chat", CATALOG_MODEL)
  try {
    const home = mkdtemp("sy-e2e-home-")
    const cwd = mkdtemp("sy-e2e-work-")
    const before = ctx.upstream.requests.length
    const r = await ctx.codex({
      name: "codex-catalog-plain",
      prompt: "Reply with a short greeting.",
      model: CATALOG_MODEL,
      cwd,
      home,
      baseUrl: own.url
    })
    const seen = ctx.upstream.requests.slice(before)
    const problems = []
    if (r.code !== 0) problems.push(describeRun(r, "codex"))
    else if (r.stdout.trim() !== PLAIN_TEXT) problems.push(`stdout ${JSON.stringify(r.stdout.trim())}`)
    const lines = await serverLines({ serverLogPath: own.logPath }, CATALOG_MODEL, 0)
    const statuses = lines.map((l) => /status=(\S*)/.exec(l)?.[1]).join(",")
    if (lines.some((l) => !/ status=200 /.test(l))) problems.push(`server statuses ${statuses}`)
    return { problems, detail: `${seen.length} upstream call(s); server statuses ${statuses}`, seen, run: r }
  } finally {
    await own.stop()
  }
}

/**
 * The assistant's tool calls in a request, by call id: `{ name, input }` (Chat / Messages; Chat
 * arguments parsed) or the Responses item itself.
 */
const upstreamCalls = (api, body) => {
  const out = new Map()
  if (api === "openai") {
    for (const m of body.messages ?? []) {
      for (const c of m?.role === "assistant" && Array.isArray(m.tool_calls) ? m.tool_calls : []) {
        let input
        try {
          input = JSON.parse(c.function?.arguments ?? "")
        } catch {
          input = c.function?.arguments
        }
        out.set(c.id, { name: c.function?.name, input })
      }
    }
  }
  if (api === "anthropic") {
    for (const m of body.messages ?? []) {
      for (const b of m?.role === "assistant" && Array.isArray(m.content) ? m.content : []) {
        if (b?.type === "tool_use") out.set(b.id, { name: b.name, input: b.input })
      }
    }
  }
  if (api === "responses") {
    for (const i of Array.isArray(body.input) ? body.input : []) {
      if (i?.type === "function_call" || i?.type === "custom_tool_call") out.set(i.call_id, i)
    }
  }
  return out
}

/** Tool results in a request, by call id, as text (Chat tool messages, tool_result blocks, *_output items). */
const toolResults = (api, body) => {
  const out = new Map()
  if (api === "openai") {
    for (const m of body.messages ?? []) if (m?.role === "tool") out.set(m.tool_call_id, resultText(m.content))
  }
  if (api === "anthropic") {
    for (const m of body.messages ?? []) {
      if (m?.role !== "user" || !Array.isArray(m.content)) continue
      for (const b of m.content) if (b?.type === "tool_result") out.set(b.tool_use_id, resultText(b.content))
    }
  }
  if (api === "responses") {
    for (const i of Array.isArray(body.input) ? body.input : []) {
      if (i?.type === "function_call_output" || i?.type === "custom_tool_call_output") {
        out.set(i.call_id, resultText(i.output))
      }
    }
  }
  return out
}

// Two user turns of one Codex session on `e2e-auto-responses`: `codex exec` with the tool loop,
// then `codex exec resume --last` with a new prompt. The judge (an openai_responses target, asked
// buffered) must be consulted once per user turn: 2 judge requests for 3 answer requests, all to
// the weak target (the verdict says p_solve 0.9), the server's evidence classifier, affinity,
// classifier.
const codexAutoScenario = async (ctx) => {
  const route = "e2e-auto-responses"
  const home = mkdtemp("sy-e2e-home-")
  const cwd = mkdtemp("sy-e2e-work-")
  const file = path.join(cwd, "e2e-out.txt")
  const content = "written-by-codex-auto-turns"
  const before = ctx.upstream.requests.length
  const mark = logMark(ctx)
  const problems = []
  const r1 = await ctx.codex({ name: "codex-auto-turns-1", prompt: toolPrompt(file, content), model: route, cwd, home })
  const afterFirst = ctx.upstream.requests.length
  if (r1.code !== 0) problems.push(`turn 1: ${describeRun(r1, "codex")}`)
  else if (r1.stdout.trim() !== `${TOOL_DONE_PREFIX} exec_command`) {
    problems.push(`turn 1 stdout ${JSON.stringify(r1.stdout.trim())}`)
  }
  if (r1.code === 0 && !(fs.existsSync(file) && fs.readFileSync(file, "utf8") === content)) {
    problems.push(`${file} not written as expected`)
  }
  let r2
  if (r1.code === 0) {
    r2 = await ctx.codex({
      name: "codex-auto-turns-2",
      prompt: "Reply with a short greeting.",
      model: route,
      cwd,
      home,
      resume: true
    })
    if (r2.code !== 0) problems.push(`turn 2: ${describeRun(r2, "codex")}`)
    else if (r2.stdout.trim() !== PLAIN_TEXT) problems.push(`turn 2 stdout ${JSON.stringify(r2.stdout.trim())}`)
  }
  const seen = ctx.upstream.requests.slice(before)
  const isJudge = (q) => q.body?.model === RESPONSES_JUDGE_MODEL
  const judge1 = ctx.upstream.requests.slice(before, afterFirst).filter(isJudge).length
  const judges = seen.filter(isJudge)
  const answers = seen.filter((q) => [CHAT_MODEL, MESSAGES_MODEL, RESPONSES_MODEL].includes(q.body?.model))
  const kinds = answers.map((q) => q.plan?.why).join(",")
  const turns = r2 === undefined ? 1 : 2
  if (r1.code === 0) {
    if (judge1 !== 1) {
      problems.push(`turn 1 (user turn + tool-result continuation): ${judge1} judge requests, expected 1`)
    }
    if (judges.length !== turns) problems.push(`${judges.length} judge requests for ${turns} user turns`)
    if (!judges.every((q) => q.path.split("?")[0] === "/v1/responses" && q.body.stream !== true)) {
      problems.push("a judge request was not a buffered POST /v1/responses")
    }
    const expected = turns === 2 ? "tool-call,tool-result,plain" : "tool-call,tool-result"
    if (kinds !== expected) problems.push(`answer calls ${kinds || "none"}, expected ${expected}`)
    if (!answers.every((q) => q.body.model === RESPONSES_MODEL)) {
      problems.push(`answers went to ${answers.map((q) => q.body.model)} (verdict says weak = ${RESPONSES_MODEL})`)
    }
  }
  const lines = await serverLines(ctx, route, mark)
  const evidence = lines.map((line) => /evidence_source=(\S*)/.exec(line)?.[1] ?? "?").join(",")
  if (r1.code === 0 && turns === 2 && evidence !== "llm-classifier,affinity,llm-classifier") {
    problems.push(`server evidence ${evidence || "none"}, expected llm-classifier,affinity,llm-classifier`)
  }
  if (lines.some((line) => !/ status=200 /.test(line))) {
    problems.push(`server statuses ${lines.map((l) => /status=\S*/.exec(l)?.[0]).join(",")}`)
  }
  const sessions = [...new Set(answers.map((q) => q.headers["session-id"]))]
  return {
    problems,
    detail: `${judges.length} judge request(s) for ${turns} user turn(s); answer calls ${kinds || "none"}, evidence ${
      evidence || "none"
    }; ${sessions.length} Codex session id(s) upstream`,
    seen,
    run: r2 ?? r1
  }
}

const SCENARIOS = [
  ["chat-plain", plainScenario("chat-plain", "e2e-chat", "/v1/chat/completions", CHAT_MODEL)],
  ["chat-tool", toolScenario("chat-tool", "e2e-chat", "/v1/chat/completions", CHAT_MODEL)],
  ["messages-plain", plainScenario("messages-plain", "e2e-messages", "/v1/messages", MESSAGES_MODEL)],
  ["messages-tool", toolScenario("messages-tool", "e2e-messages", "/v1/messages", MESSAGES_MODEL)],
  ["responses-plain", plainScenario("responses-plain", "e2e-responses", "/v1/responses", RESPONSES_MODEL)],
  ["responses-tool", toolScenario("responses-tool", "e2e-responses", "/v1/responses", RESPONSES_MODEL)],
  ["auto-turns", autoScenario],
  ["codex-chat-tool", codexToolScenario("codex-chat-tool", "e2e-chat", "openai", "/v1/chat/completions", CHAT_MODEL)],
  [
    "codex-messages-tool",
    codexToolScenario("codex-messages-tool", "e2e-messages", "anthropic", "/v1/messages", MESSAGES_MODEL)
  ],
  [
    "codex-responses-tool",
    codexToolScenario("codex-responses-tool", "e2e-responses", "responses", "/v1/responses", RESPONSES_MODEL)
  ],
  [
    "codex-chat-patch",
    codexPatchScenario("codex-chat-patch", {
      target: "chat",
      api: "openai",
      path: "/v1/chat/completions",
      model: CHAT_MODEL
    })
  ],
  [
    "codex-messages-patch",
    codexPatchScenario("codex-messages-patch", {
      target: "messages",
      api: "anthropic",
      path: "/v1/messages",
      model: MESSAGES_MODEL
    })
  ],
  [
    "codex-responses-patch",
    codexPatchScenario("codex-responses-patch", {
      target: "responses",
      api: "responses",
      path: "/v1/responses",
      model: RESPONSES_MODEL
    })
  ],
  ["codex-auto-turns", codexAutoScenario],
  ["codex-catalog-plain", codexCatalogScenario]
]
// Run only when named in --only.
const OPT_IN = new Set(["codex-catalog-plain"])

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
  const r = await ctx.claude({
    name: "capture",
    prompt: toolPrompt(file, "captured"),
    model: "e2e-messages",
    cwd,
    home,
    baseUrl: ctx.upstream.url
  })
  Object.assign(extraEnv, saved)
  const seen = ctx.upstream.requests.slice(before).filter((q) => q.path.startsWith("/v1/messages"))
  const first = seen.find((q) => q.plan?.why === "tool-call")
  const continuation = seen.find((q) => q.plan?.why === "tool-result")
  if (r.code !== 0 || first === undefined || continuation === undefined) {
    return {
      problems: [`capture run failed: ${describeRun(r)}; ${seen.length} request(s) seen`],
      detail: "",
      seen,
      run: r
    }
  }
  fs.mkdirSync(FIXTURES, { recursive: true })
  const write = (name, value) => fs.writeFileSync(path.join(FIXTURES, name), `${JSON.stringify(value, null, 2)}\n`)
  write("claude-code-first-request.json", first.body)
  write("claude-code-tool-continuation.json", continuation.body)
  write("claude-code-request-headers.json", { method: first.method, path: first.path, headers: first.headers })
  return {
    problems: [],
    detail: `Claude Code ${version}: wrote claude-code-{first-request,tool-continuation,request-headers}.json to ${
      path.relative(ROOT, FIXTURES)
    }`,
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
    items: Array.isArray(q.body?.input) ? q.body.input.map((i) => i?.type ?? i?.role) : undefined,
    session: q.headers["x-claude-code-session-id"] ?? q.headers["session-id"],
    beta: q.headers["anthropic-beta"]
  }))

const main = async () => {
  const versions = ensureInstalled()
  const version = versions.claude
  BINARY = claudeBinary()
  const stamp = new Date().toISOString().replace(/[:.]/g, "-")
  const runDir = path.join(HERE, "runs", stamp)
  fs.mkdirSync(runDir, { recursive: true })
  console.log(
    `e2e: Claude Code ${version} (${path.relative(ROOT, BINARY)}), Codex ${versions.codex}${
      codexExtraArgs.length > 0 ? ` (extra args ${JSON.stringify(codexExtraArgs)})` : ""
    }, mode ${workaround ? "workaround (-mid_conv_system)" : "default settings"}${
      Object.keys(extraEnv).length > 0 ? `, extra env ${JSON.stringify(extraEnv)}` : ""
    }`
  )
  console.log(`e2e: artifacts in ${path.relative(ROOT, runDir)}`)
  const started = Date.now()
  const upstream = await startFakeUpstream({ judgeModel: JUDGES })
  const tomlPath = path.join(runDir, "deployment.toml")
  fs.writeFileSync(tomlPath, deploymentToml(upstream.url))
  const server = await startServer(tomlPath, path.join(runDir, "server.log"))
  const ctx = {
    upstream,
    serverLogPath: path.join(runDir, "server.log"),
    // A second server whose `model` route (gpt-5.5) goes to `target`: resolves to { url, logPath, stop }.
    serverFor: async (target, model = CODEX_MODEL) => {
      const toml = path.join(runDir, `deployment-${model}-${target}.toml`)
      fs.writeFileSync(toml, deploymentToml(upstream.url, target, model))
      const logPath = path.join(runDir, `server-${model}-${target}.log`)
      const own = await startServer(toml, logPath)
      return {
        url: own.url,
        logPath,
        stop: async () => {
          await stopServer(own)
          own.log.end()
        }
      }
    },
    claude: async ({ name, baseUrl = server.url, ...rest }) => {
      const r = await runClaude({ ...rest, baseUrl })
      fs.writeFileSync(
        path.join(runDir, `claude-${name}.txt`),
        `exit ${r.code ?? r.signal} in ${r.ms} ms${
          r.timedOut ? " (timed out)" : ""
        }\n--- stdout\n${r.stdout}\n--- stderr\n${r.stderr}`
      )
      return r
    },
    codex: async ({ name, baseUrl = server.url, ...rest }) => {
      const r = await runCodex({ ...rest, baseUrl })
      fs.writeFileSync(
        path.join(runDir, `codex-${name}.txt`),
        `exit ${r.code ?? r.signal} in ${r.ms} ms${
          r.timedOut ? " (timed out)" : ""
        }\n--- stdout\n${r.stdout}\n--- stderr\n${r.stderr}`
      )
      return r
    }
  }
  const results = []
  const runOne = async (name, scenario) => {
    const t0 = Date.now()
    let result
    if (remaining() <= 0) {
      result = { problems: [`skipped: the run's ${runTimeoutMs / 1000} s bound passed`], detail: "" }
    } else {
      try {
        result = await scenario(ctx)
      } catch (e) {
        result = { problems: [`error: ${e instanceof Error ? e.message : String(e)}`], detail: "" }
      }
    }
    const ok = result.problems.length === 0
    const ms = Date.now() - t0
    console.log(
      `${ok ? "PASS" : "FAIL"} ${name} (${(ms / 1000).toFixed(1)} s): ${
        ok ? result.detail : result.problems.join("; ")
      }`
    )
    results.push({
      name,
      ok,
      ms,
      problems: result.problems,
      detail: result.detail,
      requests: summarizeRequests(result.seen ?? [])
    })
  }
  try {
    for (const [name, scenario] of SCENARIOS) {
      if (only === undefined ? !OPT_IN.has(name) : only.includes(name)) await runOne(name, scenario)
    }
    if (captureFixtures) await runOne("capture-fixtures", (c) => captureRequestFixtures(c, version))
  } finally {
    await stopServer(server)
    server.log.end()
    await upstream.close()
    fs.writeFileSync(path.join(runDir, "upstream-requests.json"), `${JSON.stringify(upstream.requests, null, 1)}\n`)
    if (process.env.E2E_KEEP_TMP !== "1") {
      for (const dir of tmpDirs) fs.rmSync(dir, { recursive: true, force: true })
    }
  }
  const failed = results.filter((r) => !r.ok).length
  const totalMs = Date.now() - started
  fs.writeFileSync(
    path.join(runDir, "summary.json"),
    `${
      JSON.stringify(
        {
          version,
          codexVersion: versions.codex,
          codexExtraArgs,
          workaround,
          extraEnv,
          totalMs,
          passed: results.length - failed,
          failed,
          results
        },
        null,
        2
      )
    }\n`
  )
  if (failed > 0) {
    const errors = fs.readFileSync(path.join(runDir, "server.log"), "utf8").split("\n").filter((l) =>
      /status=[45]\d\d|level=(WARN|ERROR)/.test(l)
    )
    if (errors.length > 0) {
      console.log(`e2e: server log, non-2xx and warnings (first 5):\n  ${errors.slice(0, 5).join("\n  ")}`)
    }
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
