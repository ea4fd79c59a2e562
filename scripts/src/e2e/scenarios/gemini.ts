// Gemini CLI scenarios (`gemini -p … -m <route> --approval-mode yolo`, throwaway HOME whose
// settings.json the harness writes, GOOGLE_GEMINI_BASE_URL at the tap in front of the server): a
// plain answer and a tool loop (write_file, then run_shell_command printing the file, then the
// answer) on the Chat passthrough route, and both as two user turns (`--resume latest`) on the
// `user_turn` classifier route keyed by message hash (the judge asked once per user turn). Every
// scenario checks what the server was sent (POST `…:streamGenerateContent?alt=sse` on the route,
// the CLI's key in `x-goog-api-key`) and that the key never reached the upstream.
import path from "node:path"
import { type CliRun, describeRun, GEMINI_KEY, mkdtemp } from "../clis.js"
import {
  type Ctx,
  fileProblem,
  kindsOf,
  logMark,
  modelOf,
  pathOf,
  type Scenario,
  serverLines,
  since
} from "../context.js"
import { CHAT_MODEL, JUDGE_MODEL, MESSAGES_MODEL } from "../deployment.js"
import { arr, get, last, str } from "../json.js"
import type { TapEntry } from "../tap.js"
import { PLAIN_TEXT, SHELL_DONE } from "../upstream/plan.js"
import type { RequestEntry } from "../upstream/server.js"
import { secondTurnProblems } from "./turns.js"

/** The prompt of the tool loop: write_file writes `file`, then run_shell_command prints it. */
const toolPrompt = (file: string, content: string) =>
  `Create the file ${file} containing exactly ${content}, then print it. [e2e:write ${file} ${content}] [e2e:then-shell]`

/** The text of the last tool message of a Chat request (what a tool's result became). */
const lastToolText = (q: RequestEntry | undefined): string => {
  const tool = last(arr(get(q?.body, "messages")).filter((m) => get(m, "role") === "tool"))
  return str(get(tool, "content")) ?? JSON.stringify(get(tool, "content"))
}

/**
 * The problems of a tool loop's answer calls: write_file, run_shell_command, the answer; the file
 * written; the shell's output (the file's content) returned to the model with the last call.
 */
const toolLoopProblems = (
  answers: ReadonlyArray<RequestEntry>,
  { content, file }: { readonly file: string; readonly content: string }
): Array<string> => {
  const problems: Array<string> = []
  const kinds = kindsOf(answers)
  if (kinds !== "tool-call,shell-call,tool-result") {
    problems.push(`upstream answer calls ${kinds || "none"}, expected tool-call,shell-call,tool-result`)
  }
  const calls = answers.flatMap((q) => (q.plan?.kind === "tool" ? [q.plan.name] : []))
  if (calls.join(",") !== "write_file,run_shell_command") problems.push(`tool calls ${calls.join(",") || "none"}`)
  problems.push(...fileProblem(file, content))
  const shellOutput = lastToolText(answers.find((q) => q.plan?.why === "tool-result"))
  if (!shellOutput.includes(content)) {
    problems.push(`the shell's result returned upstream is ${JSON.stringify(shellOutput.slice(0, 200))}`)
  }
  return problems
}

/** One gemini run (its working directory and HOME) and what it caused. */
interface GeminiRun {
  readonly r: CliRun
  readonly cwd: string
  readonly home: string
  /** What the upstream received during the run. */
  readonly seen: ReadonlyArray<RequestEntry>
  /** What the CLI sent the server during the run. */
  readonly calls: ReadonlyArray<TapEntry>
  /** The connections it made to its proxy (anything not to 127.0.0.1) during the run. */
  readonly proxied: number
}

/** Runs gemini in `dirs` (a fresh working directory and HOME by default). */
const runGemini = async (
  ctx: Ctx,
  call: { readonly name: string; readonly prompt: string; readonly model: string; readonly resume?: boolean },
  dirs: { readonly cwd: string; readonly home: string } = {
    cwd: mkdtemp("sy-e2e-work-"),
    home: mkdtemp("sy-e2e-home-")
  }
): Promise<GeminiRun> => {
  const before = ctx.upstream.requests.length
  const tapped = ctx.tap.requests.length
  const proxied = ctx.sink.connections()
  const r = await ctx.gemini({ ...call, ...dirs })
  const calls = ctx.tap.requests.slice(tapped)
  return { r, ...dirs, seen: since(ctx, before), calls, proxied: ctx.sink.connections() - proxied }
}

/**
 * The problems with what the CLI sent the server (anything but POST
 * `/v1beta/models/<route>:streamGenerateContent?alt=sse` carrying its key in `x-goog-api-key`), with
 * its key reaching the upstream, and with anything it sent elsewhere (through its proxy).
 */
const wireProblems = (runs: ReadonlyArray<GeminiRun>, route: string): Array<string> => {
  const calls = runs.flatMap((run) => run.calls)
  const endpoint = `/v1beta/models/${route}:streamGenerateContent?alt=sse`
  const problems: Array<string> = []
  const other = calls.filter((q) => q.method !== "POST" || q.path !== endpoint)
  if (other.length > 0) problems.push(`server sent ${other.map((q) => `${q.method} ${q.path}`).join(", ")}`)
  if (calls.length === 0) problems.push("no request reached the server")
  if (!calls.every((q) => q.headers["x-goog-api-key"] === GEMINI_KEY)) problems.push("a request without the CLI's key")
  if (runs.some((run) => run.seen.some((q) => JSON.stringify([q.path, q.headers, q.body]).includes(GEMINI_KEY)))) {
    problems.push("the CLI's Google key reached the upstream")
  }
  const proxied = runs.reduce((n, run) => n + run.proxied, 0)
  if (proxied > 0) problems.push(`${proxied} connection(s) to the proxy: traffic not to 127.0.0.1`)
  return problems
}

/** How many `alt=sse` calls the runs made, for a detail line. */
const sseCalls = (runs: ReadonlyArray<GeminiRun>): string =>
  `${runs.reduce((n, run) => n + run.calls.length, 0)} streamGenerateContent?alt=sse call(s)`

/** The problem of a run's answers not all on the Chat target's path. */
const chatPathProblems = (answers: ReadonlyArray<RequestEntry>): ReadonlyArray<string> =>
  answers.every((q) => pathOf(q) === "/v1/chat/completions") ? [] : [`upstream paths ${answers.map((q) => q.path)}`]

/** A plain answer on `route`, answered by the Chat target. */
export const geminiPlainScenario = (name: string, route: string): Scenario => async (ctx) => {
  const run = await runGemini(ctx, { name, prompt: "Reply with a short greeting.", model: route })
  const { r, seen } = run
  const problems: Array<string> = []
  if (r.code !== 0) problems.push(describeRun(r, "gemini"))
  else if (r.stdout.trim() !== PLAIN_TEXT) problems.push(`stdout ${JSON.stringify(r.stdout.trim())}`)
  const answers = seen.filter((q) => modelOf(q) === CHAT_MODEL)
  if (r.code === 0 && kindsOf(answers) !== "plain") problems.push(`upstream answer calls ${kindsOf(answers) || "none"}`)
  problems.push(...chatPathProblems(answers), ...wireProblems([run], route))
  return { problems, detail: `${sseCalls([run])}, ${answers.length} upstream Chat call(s)`, seen, run: r }
}

/** The write_file + run_shell_command loop on `route`, answered by the Chat target. */
export const geminiToolScenario = (name: string, route: string): Scenario => async (ctx) => {
  const cwd = mkdtemp("sy-e2e-work-")
  const file = path.join(cwd, "e2e-out.txt")
  const content = `written-by-${name}`
  const run = await runGemini(ctx, { name, prompt: toolPrompt(file, content), model: route }, {
    cwd,
    home: mkdtemp("sy-e2e-home-")
  })
  const { r, seen } = run
  const problems: Array<string> = []
  const answers = seen.filter((q) => modelOf(q) === CHAT_MODEL)
  if (r.code !== 0) problems.push(describeRun(r, "gemini"))
  else {
    if (r.stdout.trim() !== SHELL_DONE) problems.push(`stdout ${JSON.stringify(r.stdout.trim())}`)
    problems.push(...toolLoopProblems(answers, { file, content }))
  }
  problems.push(...chatPathProblems(answers), ...wireProblems([run], route))
  return { problems, detail: `upstream answer calls: ${kindsOf(answers) || "none"}; ${sseCalls([run])}`, seen, run: r }
}

const AUTO_ROUTE = "e2e-auto-gemini"

/** The judge's requests among `requests`. */
const judged = (requests: ReadonlyArray<RequestEntry>): number =>
  requests.filter((q) => modelOf(q) === JUDGE_MODEL).length

// Two user turns of one Gemini CLI session on the `user_turn` classifier route keyed by message hash:
// the tool loop (a user turn and its two tool-result continuations), then `--resume latest` with a
// plain prompt. The judge must be asked once per user turn: 2 judge requests for 4 answer requests,
// the continuations routed by the stored tier (`affinity`).
export const geminiAutoScenario: Scenario = async (ctx) => {
  const cwd = mkdtemp("sy-e2e-work-")
  const dirs = { cwd, home: mkdtemp("sy-e2e-home-") }
  const file = path.join(cwd, "e2e-out.txt")
  const content = "written-by-gemini-auto-turns"
  const mark = logMark(ctx.serverLogPath)
  const problems: Array<string> = []
  const first = await runGemini(
    ctx,
    { name: "auto-turns-1", prompt: toolPrompt(file, content), model: AUTO_ROUTE },
    dirs
  )
  const ok = first.r.code === 0
  if (!ok) problems.push(`turn 1: ${describeRun(first.r, "gemini")}`)
  else if (first.r.stdout.trim() !== SHELL_DONE) problems.push(`turn 1 stdout ${JSON.stringify(first.r.stdout.trim())}`)
  const second = ok
    ? await runGemini(ctx, {
      name: "auto-turns-2",
      prompt: "Reply with a short greeting.",
      model: AUTO_ROUTE,
      resume: true
    }, dirs)
    : undefined
  problems.push(...secondTurnProblems(second?.r, "gemini"))
  const runs = second === undefined ? [first] : [first, second]
  const seen = runs.flatMap((run) => run.seen)
  const judge = judged(seen)
  const answers = seen.filter((q) => modelOf(q) === CHAT_MODEL || modelOf(q) === MESSAGES_MODEL)
  if (ok) {
    problems.push(...toolLoopProblems(first.seen.filter((q) => modelOf(q) !== JUDGE_MODEL), { file, content }))
    if (judged(first.seen) !== 1) {
      problems.push(
        `turn 1 (user turn + 2 tool-result continuations): ${judged(first.seen)} judge requests, expected 1`
      )
    }
    if (judge !== runs.length) problems.push(`${judge} judge requests for ${runs.length} user turns`)
    if (!answers.every((q) => modelOf(q) === CHAT_MODEL)) {
      problems.push(`answers went to ${answers.map(modelOf)} (verdict says weak = ${CHAT_MODEL})`)
    }
  }
  const lines = await serverLines(ctx.serverLogPath, AUTO_ROUTE, mark)
  const evidence = lines.map((line) => /evidence_source=(\S*)/.exec(line)?.[1] ?? "?").join(",")
  const expected = ["llm-classifier,affinity,affinity", "llm-classifier"].slice(0, runs.length).join(",")
  if (ok && evidence !== expected) problems.push(`server evidence ${evidence || "none"}, expected ${expected}`)
  problems.push(...wireProblems(runs, AUTO_ROUTE))
  return {
    problems,
    detail: `${judge} judge request(s) for ${runs.length} user turn(s); answer calls ${
      kindsOf(answers) || "none"
    }, evidence ${evidence || "none"}; ${sseCalls(runs)}`,
    seen,
    run: (second ?? first).r
  }
}
