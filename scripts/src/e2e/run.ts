// `npm run e2e`: the real Claude Code, Codex and Gemini CLIs against the real switchyard server,
// offline.
//
// 1. Installs e2e/'s dependencies (`npm ci` there, the pinned @anthropic-ai/claude-code,
//    @openai/codex and @google/gemini-cli) when they are missing or not the locked versions
//    (./install.ts).
// 2. Starts a scripted upstream on 127.0.0.1 (./upstream/, in this process) speaking OpenAI Chat,
//    Anthropic Messages and OpenAI Responses, and the built switchyard CLI with the deployment of
//    ./deployment.ts: `e2e-chat`, `e2e-messages`, `e2e-responses` (passthrough to an openai_chat,
//    an anthropic_messages and an openai_responses target), `e2e-auto` (llm_classifier,
//    classify_trigger = "user_turn", judge_failure = "error", the judge an openai_chat target on the
//    same fake upstream), `e2e-auto-responses` (the same with the judge and the weak target
//    openai_responses), `e2e-auto-gemini` (the Chat judge with message_hash_fallback, for Gemini
//    CLI, which sends no session header) and `gpt-5.5` (a passthrough named after a model of Codex's catalog so Codex
//    offers its freeform apply_patch tool; the patch scenarios start one more server each with it on
//    their target).
// 3. Claude Code scenarios run `claude -p ... --model <route>`, Codex scenarios `codex exec ...`
//    with `model = <route>` and a `wire_api = "responses"` model provider pointing at the server,
//    Gemini CLI scenarios `gemini -p ... -m <route>` with GOOGLE_GEMINI_BASE_URL at a recording
//    pass-through in front of the server (./tap.ts) (./clis.ts), each with a temporary HOME (and
//    CODEX_HOME) and working directory, and check the exit code, the output, the file written by
//    the tool, what the server was sent and what reached the upstream (./scenarios/).
// 4. Prints one PASS/FAIL line per scenario; exits 1 when any failed. Everything it started is
//    stopped by PID (a CLI run is its own process group, killed by that group id on a timeout).
//
// Flags and environment: ./options.ts. Artifacts of each run (server logs, upstream request log,
// what the gemini runs sent the server, claude / codex / gemini outputs, summary.json) go to
// e2e/runs/<timestamp>/ (git-ignored).
import fs from "node:fs"
import path from "node:path"
import { tmpDirs } from "./children.js"
import { type CliRun, runClaude, runCodex, runGemini } from "./clis.js"
import type { Ctx, Scenario, ScenarioResult } from "./context.js"
import { CODEX_MODEL, e2eToml, JUDGES } from "./deployment.js"
import { captureRequestFixtures } from "./fixtures.js"
import { claudeBinary, ensureInstalled, type Versions } from "./install.js"
import { arr, get } from "./json.js"
import { parseE2eOptions } from "./options.js"
import { E2E_DIR, ROOT } from "./paths.js"
import { OPT_IN, SCENARIOS } from "./scenarios/index.js"
import { startE2eServer } from "./server.js"
import { type Sink, startSink, startTap, type Tap } from "./tap.js"
import { type FakeUpstream, type RequestEntry, startFakeUpstream } from "./upstream/server.js"

const options = parseE2eOptions(process.argv.slice(2))
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.on(signal, () => {
    console.log(`e2e: ${signal}, stopping`)
    process.exit(130)
  })
}

const deadline = Date.now() + options.runTimeoutMs
const remaining = () => deadline - Date.now()
/** The bound of one CLI run: the per-run bound, within what is left of the whole run. */
const boundMs = () => Math.max(1_000, Math.min(options.claudeTimeoutMs, remaining()))

const summarizeRequests = (requests: ReadonlyArray<RequestEntry>) =>
  requests.map((q) => ({
    seq: q.seq,
    method: q.method,
    path: q.path,
    model: get(q.body, "model"),
    plan: q.plan?.why,
    roles: Array.isArray(get(q.body, "messages")) ? arr(get(q.body, "messages")).map((m) => get(m, "role")) : undefined,
    items: Array.isArray(get(q.body, "input"))
      ? arr(get(q.body, "input")).map((i) => get(i, "type") ?? get(i, "role"))
      : undefined,
    session: q.headers["x-claude-code-session-id"] ?? q.headers["session-id"],
    beta: q.headers["anthropic-beta"]
  }))

/** Writes a CLI run's output into the run folder. */
const keepRun = (runDir: string, file: string, r: CliRun): CliRun => {
  fs.writeFileSync(
    path.join(runDir, file),
    `exit ${r.code ?? r.signal} in ${r.ms} ms${
      r.timedOut ? " (timed out)" : ""
    }\n--- stdout\n${r.stdout}\n--- stderr\n${r.stderr}`
  )
  return r
}

interface Outcome {
  readonly name: string
  readonly ok: boolean
  readonly ms: number
  readonly problems: ReadonlyArray<string>
  readonly detail: string
  readonly requests: ReturnType<typeof summarizeRequests>
}

/** Runs one scenario (skipped once the run's bound has passed) and prints its PASS/FAIL line. */
const runOne = async (ctx: Ctx, name: string, scenario: Scenario): Promise<Outcome> => {
  const t0 = Date.now()
  let result: ScenarioResult
  if (remaining() <= 0) {
    result = { problems: [`skipped: the run's ${options.runTimeoutMs / 1000} s bound passed`], detail: "" }
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
    `${ok ? "PASS" : "FAIL"} ${name} (${(ms / 1000).toFixed(1)} s): ${ok ? result.detail : result.problems.join("; ")}`
  )
  return {
    name,
    ok,
    ms,
    problems: result.problems,
    detail: result.detail,
    requests: summarizeRequests(result.seen ?? [])
  }
}

/** The scenarios' context: the upstream, the server's log, the tap, more servers, the three CLIs writing their output into `runDir`. */
const makeCtx = (
  { binary, runDir, serverLogPath, serverUrl, sink, tap, upstream }: {
    readonly runDir: string
    readonly binary: string
    readonly upstream: FakeUpstream
    readonly serverLogPath: string
    readonly serverUrl: string
    readonly tap: Tap
    readonly sink: Sink
  }
): Ctx => ({
  upstream,
  serverLogPath,
  tap,
  sink,
  serverFor: (target, model = CODEX_MODEL) => {
    const toml = path.join(runDir, `deployment-${model}-${target}.toml`)
    fs.writeFileSync(toml, e2eToml(upstream.url, target, model))
    return startE2eServer(toml, path.join(runDir, `server-${model}-${target}.log`))
  },
  claude: async ({ baseUrl = serverUrl, extraArgs, extraEnv = options.extraEnv, name, ...call }) =>
    keepRun(
      runDir,
      `claude-${name}.txt`,
      await runClaude(binary, { ...call, baseUrl, boundMs: boundMs(), extraEnv, ...(extraArgs ? { extraArgs } : {}) })
    ),
  codex: async ({ baseUrl = serverUrl, extraArgs = [], name, ...call }) =>
    keepRun(
      runDir,
      `codex-${name}.txt`,
      await runCodex({ ...call, baseUrl, boundMs: boundMs(), extraArgs: [...options.codexExtraArgs, ...extraArgs] })
    ),
  gemini: async ({ baseUrl = tap.url, name, ...call }) =>
    keepRun(
      runDir,
      `gemini-${name}.txt`,
      await runGemini({ ...call, baseUrl, boundMs: boundMs(), extraArgs: [], proxy: sink.url })
    )
})

/** The summary.json of the run, and the server's complaints when something failed. */
const writeSummary = (
  runDir: string,
  { results, totalMs, versions }: {
    readonly results: ReadonlyArray<Outcome>
    readonly totalMs: number
    readonly versions: Versions
  }
): number => {
  const failed = results.filter((r) => !r.ok).length
  fs.writeFileSync(
    path.join(runDir, "summary.json"),
    `${
      JSON.stringify(
        {
          version: versions.claude,
          codexVersion: versions.codex,
          geminiVersion: versions.gemini,
          codexExtraArgs: options.codexExtraArgs,
          workaround: options.workaround,
          extraEnv: options.extraEnv,
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

const main = async (): Promise<number> => {
  const versions = ensureInstalled()
  const version = versions.claude
  const binary = claudeBinary()
  const stamp = new Date().toISOString().replace(/[:.]/g, "-")
  const runDir = path.join(E2E_DIR, "runs", stamp)
  fs.mkdirSync(runDir, { recursive: true })
  const { codexExtraArgs, extraEnv, workaround } = options
  console.log(
    `e2e: Claude Code ${version} (${
      path.relative(ROOT, binary)
    }), Codex ${versions.codex}, Gemini CLI ${versions.gemini}${
      codexExtraArgs.length > 0 ? ` (extra args ${JSON.stringify(codexExtraArgs)})` : ""
    }, mode ${workaround ? "workaround (-mid_conv_system)" : "default settings"}${
      Object.keys(extraEnv).length > 0 ? `, extra env ${JSON.stringify(extraEnv)}` : ""
    }`
  )
  console.log(`e2e: artifacts in ${path.relative(ROOT, runDir)}`)
  const started = Date.now()
  const upstream = await startFakeUpstream({ judgeModels: JUDGES })
  const tomlPath = path.join(runDir, "deployment.toml")
  fs.writeFileSync(tomlPath, e2eToml(upstream.url))
  const serverLogPath = path.join(runDir, "server.log")
  const server = await startE2eServer(tomlPath, serverLogPath)
  const tap = await startTap(server.url)
  const sink = await startSink()
  const ctx = makeCtx({ runDir, binary, upstream, serverLogPath, serverUrl: server.url, tap, sink })
  const results: Array<Outcome> = []
  try {
    for (const [name, scenario] of SCENARIOS) {
      if (options.only === undefined ? !OPT_IN.has(name) : options.only.includes(name)) {
        results.push(await runOne(ctx, name, scenario))
      }
    }
    if (options.captureFixtures) {
      results.push(await runOne(ctx, "capture-fixtures", (c) => captureRequestFixtures(c, version)))
    }
  } finally {
    await tap.close()
    await sink.close()
    await server.stop()
    await upstream.close()
    fs.writeFileSync(path.join(runDir, "upstream-requests.json"), `${JSON.stringify(upstream.requests, null, 1)}\n`)
    fs.writeFileSync(path.join(runDir, "server-requests.json"), `${JSON.stringify(tap.requests, null, 1)}\n`)
    if (!options.keepTmp) {
      for (const dir of tmpDirs) fs.rmSync(dir, { recursive: true, force: true })
    }
  }
  return writeSummary(runDir, { results, totalMs: Date.now() - started, versions })
}

main().then(
  (code) => process.exit(code),
  (e: unknown) => {
    console.error(`e2e: ${e instanceof Error ? e.message : String(e)}`)
    process.exit(1)
  }
)
