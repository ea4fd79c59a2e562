// What a scenario gets (the fake upstream, the server's log, the recording pass-through in front of
// the server, a way to start another server, the three CLIs with the run's settings) and gives back (its problems, a detail line, what the upstream saw).
import fs from "node:fs"
import type { CliRun } from "./clis.js"
import type { E2eTarget } from "./deployment.js"
import type { E2eServer } from "./server.js"
import type { Sink, Tap } from "./tap.js"
import type { FakeUpstream, RequestEntry } from "./upstream/server.js"

/** One CLI run of a scenario; `name` names its output file in the run folder. */
export interface Call {
  readonly name: string
  readonly prompt: string
  readonly model: string
  readonly cwd: string
  readonly home: string
  /** The server by default. */
  readonly baseUrl?: string
}

export interface Ctx {
  readonly upstream: FakeUpstream
  readonly serverLogPath: string
  /** The pass-through in front of the server, what the gemini runs call. */
  readonly tap: Tap
  /** The gemini runs' proxy: what they would send anywhere but 127.0.0.1 connects to it. */
  readonly sink: Sink
  /** A second server whose Codex catalog route (`model`, gpt-5.5 by default) goes to `target`. */
  readonly serverFor: (target: E2eTarget, model?: string) => Promise<E2eServer>
  readonly claude: (
    call: Call & { readonly extraArgs?: ReadonlyArray<string>; readonly extraEnv?: Readonly<Record<string, string>> }
  ) => Promise<CliRun>
  readonly codex: (
    call: Call & { readonly resume?: boolean; readonly extraArgs?: ReadonlyArray<string> }
  ) => Promise<CliRun>
  /** `gemini -p` against the tap by default. */
  readonly gemini: (call: Call & { readonly resume?: boolean }) => Promise<CliRun>
}

export interface ScenarioResult {
  readonly problems: Array<string>
  readonly detail: string
  readonly seen?: ReadonlyArray<RequestEntry>
  readonly run?: CliRun
}

export type Scenario = (ctx: Ctx) => Promise<ScenarioResult>

/** A byte offset of the server log: its lines from here on are a scenario's. */
export const logMark = (logPath: string): number => fs.statSync(logPath).size

/** The server's request lines for `route` written since `mark` (a byte offset of its log). */
export const serverLines = async (logPath: string, route: string, mark: number): Promise<ReadonlyArray<string>> => {
  await new Promise((resolve) => setTimeout(resolve, 100)) // request lines are written in 20 ms batches
  return fs.readFileSync(logPath, "utf8").slice(mark).split("\n").filter((line) => line.includes(` route=${route} `))
}

/** The requests the upstream received since `before` (an index of its log). */
export const since = (ctx: Ctx, before: number): ReadonlyArray<RequestEntry> => ctx.upstream.requests.slice(before)

/** The body's `model` of a request. */
export const modelOf = (q: RequestEntry): unknown =>
  typeof q.body === "object" && q.body !== null && "model" in q.body ? q.body.model : undefined

/** The path of a request without its query string. */
export const pathOf = (q: RequestEntry): string => q.path.split("?")[0] ?? ""

/** The answer kinds (`plan.why`) of `requests`, comma-separated. */
export const kindsOf = (requests: ReadonlyArray<RequestEntry>): string => requests.map((q) => q.plan?.why).join(",")

/** Whether `file` holds exactly `content`. */
export const holds = (file: string, content: string): boolean =>
  fs.existsSync(file) && fs.readFileSync(file, "utf8") === content

/** The problem with `file` not holding `content`, if any. */
export const fileProblem = (file: string, content: string): ReadonlyArray<string> =>
  !fs.existsSync(file)
    ? [`${file} was not written`]
    : fs.readFileSync(file, "utf8") !== content
    ? [`${file} holds ${JSON.stringify(fs.readFileSync(file, "utf8"))}`]
    : []
