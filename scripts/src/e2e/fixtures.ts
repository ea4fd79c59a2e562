// --capture-fixtures: Claude Code straight at the fake upstream (no switchyard in between), default
// settings, one Messages tool loop; its first request, the tool continuation and the headers are
// written to packages/server/test/fixtures/claude-code-*.json.
import fs from "node:fs"
import path from "node:path"
import { describeRun, mkdtemp } from "./clis.js"
import type { Ctx, ScenarioResult } from "./context.js"
import { FIXTURES, ROOT } from "./paths.js"
import { toolPrompt } from "./scenarios/claude.js"

export const captureRequestFixtures = async (ctx: Ctx, version: string): Promise<ScenarioResult> => {
  const home = mkdtemp("sy-e2e-home-")
  const cwd = mkdtemp("sy-e2e-work-")
  const file = path.join(cwd, "e2e-out.txt")
  const before = ctx.upstream.requests.length
  const r = await ctx.claude({
    name: "capture",
    prompt: toolPrompt(file, "captured"),
    model: "e2e-messages",
    cwd,
    home,
    baseUrl: ctx.upstream.url,
    extraEnv: {}
  })
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
  const write = (name: string, value: unknown) =>
    fs.writeFileSync(path.join(FIXTURES, name), `${JSON.stringify(value, null, 2)}\n`)
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
