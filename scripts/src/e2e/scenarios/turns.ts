// The checks of the two user turns of an `auto` scenario (Claude Code or Codex on a classifier
// route): a tool loop writing a file, then a plain answer.
import fs from "node:fs"
import { type CliRun, describeRun } from "../clis.js"
import { PLAIN_TEXT } from "../upstream/plan.js"

/** The problems of turn 1: its exit, its output (`stdoutOk`), and the file it wrote. */
export const firstTurnProblems = (
  r: CliRun,
  cli: "claude" | "codex" | "gemini",
  stdoutOk: (stdout: string) => boolean,
  { content, file }: { readonly file: string; readonly content: string }
): Array<string> => {
  const problems: Array<string> = []
  if (r.code !== 0) problems.push(`turn 1: ${describeRun(r, cli)}`)
  else if (!stdoutOk(r.stdout.trim())) problems.push(`turn 1 stdout ${JSON.stringify(r.stdout.trim())}`)
  if (r.code === 0 && !(fs.existsSync(file) && fs.readFileSync(file, "utf8") === content)) {
    problems.push(`${file} not written as expected`)
  }
  return problems
}

/** The problems of turn 2, a plain answer (none when it did not run). */
export const secondTurnProblems = (r: CliRun | undefined, cli: "claude" | "codex" | "gemini"): Array<string> =>
  r === undefined
    ? []
    : r.code !== 0
    ? [`turn 2: ${describeRun(r, cli)}`]
    : r.stdout.trim() !== PLAIN_TEXT
    ? [`turn 2 stdout ${JSON.stringify(r.stdout.trim())}`]
    : []
