// Claude Code scenarios (`claude -p … --model <route>`, throwaway HOME, ANTHROPIC_BASE_URL at the
// server): a plain answer and a Write tool loop on each passthrough route, and two user turns on
// the classifier route (the judge asked once per user turn, not on the tool-result continuation).
import fs from "node:fs"
import path from "node:path"
import { describeRun, mkdtemp } from "../clis.js"
import { fileProblem, kindsOf, logMark, modelOf, pathOf, type Scenario, serverLines, since } from "../context.js"
import { CHAT_MODEL, JUDGE_MODEL, MESSAGES_MODEL } from "../deployment.js"
import { PLAIN_TEXT, TOOL_DONE_PREFIX } from "../upstream/plan.js"
import { firstTurnProblems, secondTurnProblems } from "./turns.js"

/** The prompt of a tool loop: the marker makes the upstream ask for one tool call writing `file`. */
export const toolPrompt = (file: string, content: string) =>
  `Create the file ${file} containing exactly ${content}. [e2e:write ${file} ${content}]`

/** A plain answer on `route`, answered by `expectModel` on `expectPath`. */
export const plainScenario =
  (name: string, route: string, expectPath: string, expectModel: string): Scenario => async (ctx) => {
    const home = mkdtemp("sy-e2e-home-")
    const cwd = mkdtemp("sy-e2e-work-")
    const before = ctx.upstream.requests.length
    const r = await ctx.claude({ name, prompt: "Reply with a short greeting.", model: route, cwd, home })
    const seen = since(ctx, before)
    const problems: Array<string> = []
    if (r.code !== 0) problems.push(describeRun(r))
    else if (r.stdout.trim() !== PLAIN_TEXT) {
      problems.push(`stdout ${JSON.stringify(r.stdout.trim())}, expected ${PLAIN_TEXT}`)
    }
    const answers = seen.filter((q) => modelOf(q) === expectModel)
    if (!answers.every((q) => pathOf(q) === expectPath)) problems.push(`upstream paths ${answers.map((q) => q.path)}`)
    if (r.code === 0 && answers.length < 1) problems.push("no answer request reached the upstream")
    return { problems, detail: `${answers.length} upstream call(s) on ${expectPath}`, seen, run: r }
  }

/** A Write tool loop on `route`: the file written, the upstream's calls tool-call then tool-result. */
export const toolScenario =
  (name: string, route: string, expectPath: string, expectModel: string): Scenario => async (ctx) => {
    const home = mkdtemp("sy-e2e-home-")
    const cwd = mkdtemp("sy-e2e-work-")
    const file = path.join(cwd, "e2e-out.txt")
    const content = `written-by-${name}`
    const before = ctx.upstream.requests.length
    const r = await ctx.claude({ name, prompt: toolPrompt(file, content), model: route, cwd, home })
    const seen = since(ctx, before)
    const problems: Array<string> = []
    if (r.code !== 0) problems.push(describeRun(r))
    const answers = seen.filter((q) => modelOf(q) === expectModel)
    const kinds = kindsOf(answers)
    if (r.code === 0) {
      const call = answers.find((q) => q.plan?.why === "tool-call")?.plan
      const tool = call?.kind === "tool" ? call.name : "?"
      if (r.stdout.trim() !== `${TOOL_DONE_PREFIX} ${tool}`) problems.push(`stdout ${JSON.stringify(r.stdout.trim())}`)
      if (kinds !== "tool-call,tool-result") {
        problems.push(`upstream answer calls ${kinds || "none"}, expected tool-call,tool-result`)
      }
      problems.push(...fileProblem(file, content))
    }
    if (!answers.every((q) => pathOf(q) === expectPath)) problems.push(`upstream paths ${answers.map((q) => q.path)}`)
    return { problems, detail: `upstream answer calls: ${kinds || "none"}`, seen, run: r }
  }

// Two user turns in one Claude Code conversation on the classifier route: a tool loop (user turn,
// then its tool-result continuation), then `--continue` with a new user message. The judge must be
// asked once per user turn: 2 judge requests for 3 answer requests.
export const autoScenario: Scenario = async (ctx) => {
  const home = mkdtemp("sy-e2e-home-")
  const cwd = mkdtemp("sy-e2e-work-")
  const file = path.join(cwd, "e2e-out.txt")
  const content = "written-by-auto-turns"
  const before = ctx.upstream.requests.length
  const problems: Array<string> = []
  const r1 = await ctx.claude({ name: "auto-turns-1", prompt: toolPrompt(file, content), model: "e2e-auto", cwd, home })
  const afterFirst = ctx.upstream.requests.length
  problems.push(...firstTurnProblems(r1, "claude", (stdout) => stdout.startsWith(TOOL_DONE_PREFIX), { file, content }))
  const r2 = r1.code !== 0 ? undefined : await ctx.claude({
    name: "auto-turns-2",
    prompt: "Reply with a short greeting.",
    model: "e2e-auto",
    cwd,
    home,
    extraArgs: ["--continue"]
  })
  problems.push(...secondTurnProblems(r2, "claude"))
  const seen = since(ctx, before)
  const judge1 = ctx.upstream.requests.slice(before, afterFirst).filter((q) => modelOf(q) === JUDGE_MODEL).length
  const judge = seen.filter((q) => modelOf(q) === JUDGE_MODEL).length
  const answers = seen.filter((q) => modelOf(q) === CHAT_MODEL || modelOf(q) === MESSAGES_MODEL)
  const kinds = kindsOf(answers)
  const turns = r2 === undefined ? 1 : 2
  if (r1.code === 0) {
    if (judge1 !== 1) {
      problems.push(`turn 1 (user turn + tool-result continuation): ${judge1} judge requests, expected 1`)
    }
    if (judge !== turns) problems.push(`${judge} judge requests for ${turns} user turns`)
    const expected = turns === 2 ? "tool-call,tool-result,plain" : "tool-call,tool-result"
    if (kinds !== expected) problems.push(`answer calls ${kinds || "none"}, expected ${expected}`)
    if (!answers.every((q) => modelOf(q) === CHAT_MODEL)) {
      problems.push(`answers went to ${answers.map(modelOf)} (verdict says weak = ${CHAT_MODEL})`)
    }
  }
  const sessions = [
    ...new Set(seen.filter((q) => modelOf(q) !== JUDGE_MODEL).map((q) => q.headers["x-claude-code-session-id"]))
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

// A Write tool loop on the composite route: its classifier (the chat judge, `user_turn`) is asked
// once for the user turn, not again on the tool-result continuation; the stage router serves both
// answer calls (the verdict, weak, makes the efficient tier its fall-open tier); the server's request
// lines carry the stage router's decision sources.
export const compositeScenario: Scenario = async (ctx) => {
  const home = mkdtemp("sy-e2e-home-")
  const cwd = mkdtemp("sy-e2e-work-")
  const file = path.join(cwd, "e2e-out.txt")
  const content = "written-by-composite"
  const before = ctx.upstream.requests.length
  const mark = logMark(ctx.serverLogPath)
  const r = await ctx.claude({
    name: "composite-tool",
    prompt: toolPrompt(file, content),
    model: "e2e-composite",
    cwd,
    home
  })
  const seen = since(ctx, before)
  const problems: Array<string> = []
  const judge = seen.filter((q) => modelOf(q) === JUDGE_MODEL).length
  const answers = seen.filter((q) => modelOf(q) === CHAT_MODEL || modelOf(q) === MESSAGES_MODEL)
  const kinds = kindsOf(answers)
  if (r.code !== 0) problems.push(describeRun(r))
  else {
    problems.push(...fileProblem(file, content))
    if (kinds !== "tool-call,tool-result") {
      problems.push(`answer calls ${kinds || "none"}, expected tool-call,tool-result`)
    }
    if (judge !== 1) problems.push(`${judge} judge requests for one user turn and its continuation, expected 1`)
  }
  const lines = await serverLines(ctx.serverLogPath, "e2e-composite", mark)
  const sources = lines.map((line) => /evidence_source=(\S*)/.exec(line)?.[1] ?? "?").join(",")
  if (r.code === 0 && lines.length !== answers.length) {
    problems.push(`${lines.length} server request lines for ${answers.length} answer calls`)
  }
  return {
    problems,
    detail: `${judge} judge request(s); answer calls ${kinds || "none"} on ${
      answers.map(modelOf).join(",")
    }; evidence ${sources || "none"}`,
    seen,
    run: r
  }
}
