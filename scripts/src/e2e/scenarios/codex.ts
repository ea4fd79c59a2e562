// Codex scenarios (`codex exec`, throwaway HOME and CODEX_HOME naming the server as a `wire_api =
// "responses"` model provider): a three-turn tool loop on each passthrough route, a freeform
// apply_patch on each target (a server of its own per target), two user turns on the Responses
// classifier route, and the opt-in catalog scenario.
import path from "node:path"
import { describeRun, mkdtemp } from "../clis.js"
import {
  type Ctx,
  fileProblem,
  kindsOf,
  logMark,
  modelOf,
  pathOf,
  type Scenario,
  type ScenarioResult,
  serverLines,
  since
} from "../context.js"
import {
  CHAT_MODEL,
  CODEX_MODEL,
  type E2eTarget,
  MESSAGES_MODEL,
  RESPONSES_JUDGE_MODEL,
  RESPONSES_MODEL
} from "../deployment.js"
import { get, show, str } from "../json.js"
import type { E2eServer } from "../server.js"
import { type Api, CHAIN_DONE, PLAIN_TEXT, TOOL_DONE_PREFIX } from "../upstream/plan.js"
import type { RequestEntry } from "../upstream/server.js"
import { checkCodexLoop, codexRolloutItems, toolResults, upstreamCalls } from "../wire.js"
import { toolPrompt } from "./claude.js"
import { firstTurnProblems, secondTurnProblems } from "./turns.js"

/** One upstream format a Codex scenario runs against. */
export interface Format {
  readonly target: E2eTarget
  readonly api: Api
  readonly path: string
  readonly model: string
}

const statusProblems = (lines: ReadonlyArray<string>, bad: (line: string) => boolean): ReadonlyArray<string> => {
  const failing = lines.filter(bad)
  return failing.length > 0 ? [`server request lines: ${failing.map((l) => /status=\S*/.exec(l)?.[0]).join(",")}`] : []
}

/** The call id the upstream gave the answer to request `seq` in `api`'s format. */
const callId = (api: Api, seq: number) => `${api === "anthropic" ? "toolu" : "call"}_e2e_${seq}`

/**
 * The namespaced close_agent call as the upstream got it back (flattened on Chat / Messages) and
 * its result: the problems, and the result text.
 */
const namespaceProblems = (api: Api, second: RequestEntry, last: RequestEntry) => {
  const problems: Array<string> = []
  const id = callId(api, second.seq)
  const call = upstreamCalls(api, last.body).get(id)
  const flat = api === "responses"
    ? get(call, "name") === "close_agent" && get(call, "namespace") === "multi_agent_v1"
    : get(call, "name") === "multi_agent_v1__close_agent"
  if (!flat) problems.push(`the close_agent call came back to the upstream as ${show(call)}`)
  const output = toolResults(api, last.body).get(id) ?? ""
  if (output === "") problems.push("the close_agent result did not reach the upstream")
  else if (/unsupported call|unknown tool/i.test(output)) {
    problems.push(`close_agent answered ${JSON.stringify(output.slice(0, 200))}`)
  }
  return { problems, output }
}

// One `codex exec` on a passthrough route: Codex calls exec_command (a shell command writing the
// file and printing it) and sends the output back, then close_agent of its multi_agent_v1
// namespace (for a made-up agent: Codex answers with an error text) and sends that back, then
// answers. Checked: exit 0, the final message, the file, the upstream's three answer requests
// (tool-call, namespace-call, tool-result) with the calls and results in its own format, the
// calls as Codex recorded them in its session file (close_agent under namespace multi_agent_v1:
// the server restored the namespace of a flat Chat / Messages function), and the server's request
// lines (all 200 on /v1/responses).
export const codexToolScenario =
  (name: string, route: string, format: Omit<Format, "target">): Scenario => async (ctx) => {
    const { api, model: expectModel, path: expectPath } = format
    const home = mkdtemp("sy-e2e-home-")
    const cwd = mkdtemp("sy-e2e-work-")
    const file = path.join(cwd, "e2e-out.txt")
    const content = `written-by-${name}`
    const before = ctx.upstream.requests.length
    const mark = logMark(ctx.serverLogPath)
    const r = await ctx.codex({
      name,
      prompt: `${toolPrompt(file, content)} [e2e:then-namespace]`,
      model: route,
      cwd,
      home
    })
    const seen = since(ctx, before)
    const problems: Array<string> = []
    if (r.code !== 0) problems.push(describeRun(r, "codex"))
    const answers = seen.filter((q) => modelOf(q) === expectModel)
    const kinds = kindsOf(answers)
    let offered: ReadonlyArray<string> = []
    let nsOutput = ""
    if (r.code === 0) {
      if (r.stdout.trim() !== CHAIN_DONE) problems.push(`stdout ${JSON.stringify(r.stdout.trim())}`)
      if (kinds !== "tool-call,namespace-call,tool-result") {
        problems.push(`upstream answer calls ${kinds || "none"}, expected tool-call,namespace-call,tool-result`)
      }
      problems.push(...fileProblem(file, content))
      const [first, second, last] = answers
      if (kinds === "tool-call,namespace-call,tool-result" && first && second && last) {
        const check = checkCodexLoop(api, first, second, content)
        problems.push(...check.problems)
        offered = check.offered
        const ns = namespaceProblems(api, second, last)
        problems.push(...ns.problems)
        nsOutput = ns.output
      }
      const nsCall = codexRolloutItems(home).find((i) =>
        get(i, "type") === "function_call" && /close_agent/.test(str(get(i, "name")) ?? "")
      )
      if (get(nsCall, "name") !== "close_agent" || get(nsCall, "namespace") !== "multi_agent_v1") {
        problems.push(`Codex recorded the close_agent call as ${show(nsCall)}`)
      }
    }
    if (!answers.every((q) => pathOf(q) === expectPath)) problems.push(`upstream paths ${answers.map((q) => q.path)}`)
    const lines = await serverLines(ctx.serverLogPath, route, mark)
    problems.push(
      ...statusProblems(lines, (line) => !/ status=200 /.test(line) || !/ wire_format=openai_responses /.test(line))
    )
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

/** The apply_patch call and its result as the upstream got them back: the problems, and the result text. */
const patchProblems = (api: Api, patchReq: RequestEntry, lastReq: RequestEntry) => {
  const problems: Array<string> = []
  const id = callId(api, patchReq.seq)
  const call = upstreamCalls(api, lastReq.body).get(id)
  const shaped = api === "responses"
    ? get(call, "type") === "custom_tool_call" && get(call, "name") === "apply_patch" &&
      typeof get(call, "input") === "string"
    : get(call, "name") === "apply_patch" && typeof get(get(call, "input"), "input") === "string"
  if (!shaped) problems.push(`the apply_patch call came back to the upstream as ${show(call)}`)
  const output = toolResults(api, lastReq.body).get(id) ?? ""
  if (output === "") problems.push("the apply_patch result did not reach the upstream")
  else if (/unsupported|unknown tool/i.test(output)) {
    problems.push(`apply_patch answered ${JSON.stringify(output.slice(0, 200))}`)
  }
  return { problems, output }
}

const codexPatchRun = async (ctx: Ctx, own: E2eServer, name: string, format: Format): Promise<ScenarioResult> => {
  const { api, model: expectModel, path: expectPath } = format
  const route = CODEX_MODEL
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
  const seen = since(ctx, before)
  const problems: Array<string> = []
  if (r.code !== 0) problems.push(describeRun(r, "codex"))
  const answers = seen.filter((q) => modelOf(q) === expectModel)
  const kinds = kindsOf(answers)
  let patchResult = ""
  if (r.code === 0) {
    if (r.stdout.trim() !== `${TOOL_DONE_PREFIX} apply_patch`) {
      problems.push(`stdout ${JSON.stringify(r.stdout.trim())}`)
    }
    if (kinds !== "patch-call,tool-result") {
      problems.push(`upstream answer calls ${kinds || "none"}, expected patch-call,tool-result`)
    }
    problems.push(...fileProblem(file, `${content}\n`))
    const [patchReq, lastReq] = answers
    if (kinds === "patch-call,tool-result" && patchReq && lastReq) {
      const patch = patchProblems(api, patchReq, lastReq)
      problems.push(...patch.problems)
      patchResult = patch.output
    }
    const patchCall = codexRolloutItems(home).find((i) => get(i, "name") === "apply_patch")
    if (get(patchCall, "type") !== "custom_tool_call") {
      problems.push(`Codex recorded apply_patch as ${show(patchCall)}`)
    }
  }
  if (!answers.every((q) => pathOf(q) === expectPath)) problems.push(`upstream paths ${answers.map((q) => q.path)}`)
  const lines = await serverLines(own.logPath, route, 0)
  problems.push(...statusProblems(lines, (line) => !/ status=200 /.test(line)))
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

// `codex exec` on a route named after a model of Codex's catalog (gpt-5.5), so Codex offers
// apply_patch as a freeform (custom) tool: the upstream calls apply_patch adding the file, Codex
// applies the patch and sends the result back, the upstream answers. Checked: exit 0, the final
// message, the file, the two upstream answer requests (patch-call, tool-result) with the call and
// its result in the upstream's format (a function with an `input` string on Chat / Messages, a
// custom_tool_call on Responses), and in Codex's session file a custom_tool_call apply_patch (the
// server turned the flat function call back into a custom tool call).
export const codexPatchScenario = (name: string, format: Format): Scenario => async (ctx) => {
  const own = await ctx.serverFor(format.target)
  try {
    return await codexPatchRun(ctx, own, name, format)
  } finally {
    await own.stop()
  }
}

// Opt-in (not in the `codex` group; see docs/http-api.md "Codex"): `codex exec` with a plain
// prompt on a route named after a newer model of Codex's catalog, so Codex sends its tools in an
// `additional_tools` input item, on a Chat target. Passes when the server serves it.
const CATALOG_MODEL = "gpt-5.6-sol"
export const codexCatalogScenario: Scenario = async (ctx) => {
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
    const seen = since(ctx, before)
    const problems: Array<string> = []
    if (r.code !== 0) problems.push(describeRun(r, "codex"))
    else if (r.stdout.trim() !== PLAIN_TEXT) problems.push(`stdout ${JSON.stringify(r.stdout.trim())}`)
    const lines = await serverLines(own.logPath, CATALOG_MODEL, 0)
    const statuses = lines.map((l) => /status=(\S*)/.exec(l)?.[1]).join(",")
    if (lines.some((l) => !/ status=200 /.test(l))) problems.push(`server statuses ${statuses}`)
    return { problems, detail: `${seen.length} upstream call(s); server statuses ${statuses}`, seen, run: r }
  } finally {
    await own.stop()
  }
}

// Two user turns of one Codex session on `e2e-auto-responses`: `codex exec` with the tool loop,
// then `codex exec resume --last` with a new prompt. The judge (an openai_responses target, asked
// buffered) must be consulted once per user turn: 2 judge requests for 3 answer requests, all to
// the weak target (the verdict says p_solve 0.9), the server's evidence classifier, affinity,
// classifier.
export const codexAutoScenario: Scenario = async (ctx) => {
  const route = "e2e-auto-responses"
  const home = mkdtemp("sy-e2e-home-")
  const cwd = mkdtemp("sy-e2e-work-")
  const file = path.join(cwd, "e2e-out.txt")
  const content = "written-by-codex-auto-turns"
  const before = ctx.upstream.requests.length
  const mark = logMark(ctx.serverLogPath)
  const problems: Array<string> = []
  const r1 = await ctx.codex({ name: "codex-auto-turns-1", prompt: toolPrompt(file, content), model: route, cwd, home })
  const afterFirst = ctx.upstream.requests.length
  problems.push(
    ...firstTurnProblems(r1, "codex", (stdout) => stdout === `${TOOL_DONE_PREFIX} exec_command`, { file, content })
  )
  const r2 = r1.code !== 0 ? undefined : await ctx.codex({
    name: "codex-auto-turns-2",
    prompt: "Reply with a short greeting.",
    model: route,
    cwd,
    home,
    resume: true
  })
  problems.push(...secondTurnProblems(r2, "codex"))
  const seen = since(ctx, before)
  const isJudge = (q: RequestEntry) => modelOf(q) === RESPONSES_JUDGE_MODEL
  const judge1 = ctx.upstream.requests.slice(before, afterFirst).filter(isJudge).length
  const judges = seen.filter(isJudge)
  const answerModels: ReadonlyArray<unknown> = [CHAT_MODEL, MESSAGES_MODEL, RESPONSES_MODEL]
  const answers = seen.filter((q) => answerModels.includes(modelOf(q)))
  const kinds = kindsOf(answers)
  const turns = r2 === undefined ? 1 : 2
  if (r1.code === 0) {
    if (judge1 !== 1) {
      problems.push(`turn 1 (user turn + tool-result continuation): ${judge1} judge requests, expected 1`)
    }
    if (judges.length !== turns) problems.push(`${judges.length} judge requests for ${turns} user turns`)
    if (!judges.every((q) => pathOf(q) === "/v1/responses" && get(q.body, "stream") !== true)) {
      problems.push("a judge request was not a buffered POST /v1/responses")
    }
    const expected = turns === 2 ? "tool-call,tool-result,plain" : "tool-call,tool-result"
    if (kinds !== expected) problems.push(`answer calls ${kinds || "none"}, expected ${expected}`)
    if (!answers.every((q) => modelOf(q) === RESPONSES_MODEL)) {
      problems.push(`answers went to ${answers.map(modelOf)} (verdict says weak = ${RESPONSES_MODEL})`)
    }
  }
  const lines = await serverLines(ctx.serverLogPath, route, mark)
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

/** The text of every message or input item of a Chat request body, joined. */
const chatText = (body: unknown): string => JSON.stringify(get(body, "messages") ?? "")

// Codex compacting its context through a Chat target: with a tiny auto-compaction limit, `codex
// exec` asks for a summary with an ordinary streamed request (its checkpoint prompt as the last user
// message; no /v1/responses/compact call and no previous_response_id on a custom provider) and
// continues with the summary handed over. Every request is served (status 200), the compaction
// request and the continuation reach the Chat target, and the run ends normally.
export const codexCompactScenario: Scenario = async (ctx) => {
  const home = mkdtemp("sy-e2e-home-")
  const cwd = mkdtemp("sy-e2e-work-")
  const file = path.join(cwd, "e2e-out.txt")
  const before = ctx.upstream.requests.length
  const mark = logMark(ctx.serverLogPath)
  const r = await ctx.codex({
    name: "codex-compact",
    prompt: toolPrompt(file, "written-by-codex-compact"),
    model: "e2e-chat",
    cwd,
    home,
    extraArgs: ["-c", "model_auto_compact_token_limit=50"]
  })
  const seen = since(ctx, before).filter((q) => modelOf(q) === CHAT_MODEL)
  const problems: Array<string> = []
  if (r.code !== 0) problems.push(describeRun(r))
  const compactAt = seen.findIndex((q) => chatText(q.body).includes("CONTEXT CHECKPOINT COMPACTION"))
  const handedOver = seen.findIndex((q, i) => i > compactAt && chatText(q.body).includes("produced a summary"))
  if (compactAt < 0) problems.push("no compaction request reached the Chat target")
  else if (handedOver < 0) problems.push("no request after the compaction carried its summary")
  if (!seen.every((q) => pathOf(q) === "/v1/chat/completions")) problems.push(`upstream paths ${seen.map(pathOf)}`)
  const lines = await serverLines(ctx.serverLogPath, "e2e-chat", mark)
  problems.push(...statusProblems(lines, (line) => !/ status=200 /.test(line)))
  if (lines.length !== seen.length) {
    problems.push(`${lines.length} server request lines for ${seen.length} upstream calls`)
  }
  return {
    problems,
    detail: `${seen.length} Chat call(s): compaction request #${compactAt + 1}, summary handed over in #${
      handedOver + 1
    }`,
    seen,
    run: r
  }
}
