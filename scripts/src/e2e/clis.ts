// Running the real CLIs: `claude -p … --model <route>`, `codex exec` (or `codex exec resume
// --last`) and `gemini -p … -m <route>` (or with `--resume latest`), each with a throwaway HOME (and
// CODEX_HOME) and TMPDIR, in a process group of its own, bounded in time (killed by its group id),
// never rejecting.
import { spawn } from "node:child_process"
import fs from "node:fs"
import os from "node:os"
import path from "node:path"
import { killGroup, tmpDirs, trackGroup } from "./children.js"
import { CODEX_JS, GEMINI_JS } from "./install.js"

/** How a CLI run ended, and what it printed. */
export interface CliRun {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
  readonly stdout: string
  readonly stderr: string
  readonly ms: number
  readonly timedOut: boolean
}

/** A temporary folder, removed at the end of the run unless kept. */
export const mkdtemp = (prefix: string): string => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix))
  tmpDirs.push(dir)
  return dir
}

/** Runs `command argv` detached in `cwd` with exactly `env`, killed (its group) after `boundMs`. */
const runBounded = (
  command: string,
  argv: ReadonlyArray<string>,
  { boundMs, cwd, env }: {
    readonly cwd: string
    readonly env: Readonly<Record<string, string>>
    readonly boundMs: number
  }
): Promise<CliRun> =>
  new Promise((resolve) => {
    const started = Date.now()
    const child = trackGroup(spawn(command, [...argv], { cwd, env, stdio: ["ignore", "pipe", "pipe"], detached: true }))
    let stdout = ""
    let stderr = ""
    let timedOut = false
    child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d))
    child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d))
    const timer = setTimeout(() => {
      timedOut = true
      killGroup(child, "SIGKILL")
    }, boundMs)
    child.once("close", (code, signal) => {
      clearTimeout(timer)
      resolve({ code, signal, stdout, stderr, ms: Date.now() - started, timedOut })
    })
  })

/** What every CLI run is given. */
export interface CliCall {
  readonly prompt: string
  readonly model: string
  readonly cwd: string
  readonly home: string
  readonly baseUrl: string
  /** The bound of this run, ms. */
  readonly boundMs: number
}

/**
 * `claude -p prompt --model model` against `baseUrl` (ANTHROPIC_BASE_URL), with a dummy key and the
 * nonessential traffic, autoupdater, telemetry and error reporting off.
 */
export const runClaude = (
  binary: string,
  call: CliCall & { readonly extraArgs?: ReadonlyArray<string>; readonly extraEnv: Readonly<Record<string, string>> }
): Promise<CliRun> => {
  const env = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: call.home,
    // Claude Code leaves /tmp/claude-<uid>/fswatch-probe-* behind: give it a TMPDIR of ours.
    TMPDIR: mkdtemp("sy-e2e-tmp-"),
    LANG: "C.UTF-8",
    ANTHROPIC_BASE_URL: call.baseUrl,
    ANTHROPIC_API_KEY: "sk-ant-e2e-dummy-not-a-key",
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
    DISABLE_AUTOUPDATER: "1",
    DISABLE_TELEMETRY: "1",
    DISABLE_ERROR_REPORTING: "1",
    ...call.extraEnv
  }
  // --allowedTools instead of --dangerously-skip-permissions: the latter is refused under root.
  const argv = ["-p", call.prompt, "--model", call.model, "--allowedTools", "Write,Bash", ...(call.extraArgs ?? [])]
  return runBounded(binary, argv, { cwd: call.cwd, env, boundMs: call.boundMs })
}

const CODEX_KEY_ENV = "SWITCHYARD_E2E_KEY"

// Default settings apart from the model provider (the server, `wire_api = "responses"`, a dummy
// key, no retries so a failure shows at once) and what would reach the network: no update check,
// no analytics, no OpenTelemetry export.
const codexConfig = (baseUrl: string, model: string) =>
  `# Written by scripts/src/e2e/clis.ts for one run.
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
 * `codex exec` (or `codex exec resume --last` when `resume`) with `prompt` in `cwd`, `home` as HOME
 * and `home/.codex` as CODEX_HOME (its config.toml names `model` and the server). The sandbox is
 * `workspace-write` on a new session (the default, read-only, cannot write the file; exec never asks
 * for approval); a resumed session keeps its own. Any traffic not to 127.0.0.1 goes to a dead proxy
 * on 127.0.0.1:9.
 */
export const runCodex = (
  call: CliCall & { readonly resume?: boolean; readonly extraArgs: ReadonlyArray<string> }
): Promise<CliRun> => {
  const codexHome = path.join(call.home, ".codex")
  fs.mkdirSync(codexHome, { recursive: true })
  fs.writeFileSync(path.join(codexHome, "config.toml"), codexConfig(call.baseUrl, call.model))
  const deadProxy = "http://127.0.0.1:9"
  const env = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: call.home,
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
  const argv = call.resume === true
    ? [CODEX_JS, "exec", "resume", "--last", "--skip-git-repo-check", ...call.extraArgs, call.prompt]
    : [
      CODEX_JS,
      "exec",
      "--skip-git-repo-check",
      "--color",
      "never",
      "--sandbox",
      "workspace-write",
      ...call.extraArgs,
      call.prompt
    ]
  return runBounded(process.execPath, argv, { cwd: call.cwd, env, boundMs: call.boundMs })
}

/** The Google API key every gemini run sends (`GEMINI_API_KEY`): the server must never forward it. */
export const GEMINI_KEY = "AIza-e2e-dummy-not-a-key-7f3c"

// Gemini CLI's settings: the API-key auth, and nothing that would reach the network on its own — no
// usage statistics (with them on it posts to Google's Clearcut at every run), no telemetry, no
// update check or update notification.
const geminiSettings = {
  security: { auth: { selectedType: "gemini-api-key" } },
  privacy: { usageStatisticsEnabled: false },
  telemetry: { enabled: false },
  general: { enableAutoUpdate: false, enableAutoUpdateNotification: false }
}

/**
 * `gemini -p prompt -m model --approval-mode yolo` (with `--resume latest` when `resume`) in `cwd`,
 * with `home` as HOME, whose `.gemini/settings.json` this writes ({@link geminiSettings}), the server
 * as `GOOGLE_GEMINI_BASE_URL`, {@link GEMINI_KEY} as `GEMINI_API_KEY`, the workspace trusted
 * (`GEMINI_CLI_TRUST_WORKSPACE`). yolo: headless Gemini CLI offers no tool that needs an approval
 * otherwise (write_file, run_shell_command). Any traffic not to 127.0.0.1 goes to `proxy`.
 */
export const runGemini = (
  call: CliCall & { readonly resume?: boolean; readonly extraArgs: ReadonlyArray<string>; readonly proxy: string }
): Promise<CliRun> => {
  const settingsDir = path.join(call.home, ".gemini")
  fs.mkdirSync(settingsDir, { recursive: true })
  fs.writeFileSync(path.join(settingsDir, "settings.json"), `${JSON.stringify(geminiSettings, null, 2)}\n`)
  const env = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: call.home,
    TMPDIR: mkdtemp("sy-e2e-tmp-"),
    LANG: "C.UTF-8",
    NO_COLOR: "1",
    GOOGLE_GEMINI_BASE_URL: call.baseUrl,
    GEMINI_API_KEY: GEMINI_KEY,
    GEMINI_CLI_TRUST_WORKSPACE: "true",
    HTTP_PROXY: call.proxy,
    HTTPS_PROXY: call.proxy,
    ALL_PROXY: call.proxy,
    NO_PROXY: "127.0.0.1,localhost"
  }
  const argv = [
    GEMINI_JS,
    "-p",
    call.prompt,
    "-m",
    call.model,
    "--approval-mode",
    "yolo",
    ...(call.resume === true ? ["--resume", "latest"] : []),
    ...call.extraArgs
  ]
  return runBounded(process.execPath, argv, { cwd: call.cwd, env, boundMs: call.boundMs })
}

/** One line about a run that went wrong (with codex's and gemini's stderr tail on a non-zero exit). */
export const describeRun = (r: CliRun, cli: "claude" | "codex" | "gemini" = "claude"): string =>
  r.timedOut
    ? `${cli} timed out after ${r.ms} ms`
    : `${cli} exit ${r.code ?? r.signal}, stdout ${JSON.stringify(r.stdout.trim().slice(0, 300))}${
      r.code !== 0 && cli !== "claude" ? `, stderr tail ${JSON.stringify(r.stderr.trim().slice(-400))}` : ""
    }`
