/**
 * A coding agent's conversation, independent of any wire format: a system prompt (~12 KB), an
 * environment block, twenty tools with JSON-schema parameters, and a history of tasks — a user
 * prompt, then tool calls (read, shell, grep, edit, glob) each with a file-sized result, then the
 * assistant's summary. Every piece is a function of the seed and its index only, so a longer
 * conversation extends a shorter one (as a real session grows) and a body is the same on every run.
 */
import {
  filePath,
  grepOutput,
  id,
  int,
  markdown,
  numberedFile,
  opaque,
  pick,
  prose,
  type Rng,
  rng,
  sentence,
  shellOutput,
  subSeed
} from "./text.js"

/** A tool a coding agent offers its model: name, description, JSON-schema parameters. */
export interface ToolSpec {
  readonly name: string
  readonly description: string
  readonly parameters: Readonly<Record<string, unknown>>
}

/** One tool call of the model and its result, with the model's reasoning before it. */
export interface ToolRound {
  /** The reasoning summary (Anthropic thinking text, a Responses reasoning summary). */
  readonly thinking: string
  /** The opaque reasoning payload (a thinking signature, encrypted reasoning content). */
  readonly signature: string
  /** What the model says before the call, when it says anything. */
  readonly preface: string | undefined
  /** 24 alphanumerics; each wire format adds its own prefix. */
  readonly callId: string
  readonly name: string
  readonly input: Readonly<Record<string, unknown>>
  readonly result: string
}

/** One entry of the history. */
export type Turn =
  | { readonly kind: "user"; readonly reminder: string; readonly text: string }
  | { readonly kind: "assistant"; readonly text: string }
  | { readonly kind: "tool"; readonly round: ToolRound }

/**
 * `user-turn`: the last entry is a user message (a new user turn, which a `user_turn` classifier
 * judges); `continuation`: the last entry is a tool result (the agent's loop going on).
 */
export type Kind = "user-turn" | "continuation"

/** A conversation, ready for a wire format. */
export interface Conversation {
  readonly system: string
  readonly environment: string
  readonly tools: ReadonlyArray<ToolSpec>
  readonly turns: ReadonlyArray<Turn>
  /** Tool calls in the history (each with its result). */
  readonly toolCalls: number
  /** Ids that stay the same through one session. */
  readonly sessionId: string
  readonly deviceId: string
}

/** Tool calls per task: after this many, the assistant sums up and the user asks for the next thing. */
export const ROUNDS_PER_TASK = 8

type Param = readonly [name: string, type: "string" | "number" | "boolean" | "array" | "enum", required: boolean]

const TOOLS: ReadonlyArray<readonly [name: string, lead: string, params: ReadonlyArray<Param>]> = [
  ["Bash", "Executes a bash command and returns its output.", [
    ["command", "string", true],
    [
      "description",
      "string",
      false
    ],
    ["timeout", "number", false],
    ["run_in_background", "boolean", false]
  ]],
  ["Read", "Reads a file from the local filesystem.", [["file_path", "string", true], ["offset", "number", false], [
    "limit",
    "number",
    false
  ]]],
  ["Write", "Writes a file to the local filesystem.", [["file_path", "string", true], ["content", "string", true]]],
  ["Edit", "Performs exact string replacements in files.", [
    ["file_path", "string", true],
    [
      "old_string",
      "string",
      true
    ],
    ["new_string", "string", true],
    ["replace_all", "boolean", false]
  ]],
  ["MultiEdit", "Makes several edits to a single file in one operation.", [["file_path", "string", true], [
    "edits",
    "array",
    true
  ]]],
  ["Glob", "Fast file pattern matching that works with any codebase size.", [["pattern", "string", true], [
    "path",
    "string",
    false
  ]]],
  ["Grep", "A powerful search tool built on ripgrep.", [
    ["pattern", "string", true],
    ["path", "string", false],
    [
      "glob",
      "string",
      false
    ],
    ["output_mode", "enum", false],
    ["-n", "boolean", false],
    ["head_limit", "number", false]
  ]],
  ["LS", "Lists files and directories in a given path.", [["path", "string", true], ["ignore", "array", false]]],
  ["NotebookEdit", "Replaces the contents of a cell in a Jupyter notebook.", [
    ["notebook_path", "string", true],
    [
      "cell_id",
      "string",
      false
    ],
    ["new_source", "string", true],
    ["edit_mode", "enum", false]
  ]],
  ["WebFetch", "Fetches content from a URL and processes it with a prompt.", [["url", "string", true], [
    "prompt",
    "string",
    true
  ]]],
  ["WebSearch", "Searches the web and uses the results to inform responses.", [["query", "string", true], [
    "allowed_domains",
    "array",
    false
  ]]],
  ["TodoWrite", "Creates and manages a structured task list for the current session.", [["todos", "array", true]]],
  ["Task", "Launches a new agent to handle complex, multi-step tasks autonomously.", [["description", "string", true], [
    "prompt",
    "string",
    true
  ], ["subagent_type", "string", false]]],
  ["BashOutput", "Retrieves output from a running or completed background shell.", [["bash_id", "string", true], [
    "filter",
    "string",
    false
  ]]],
  ["KillShell", "Kills a running background bash shell by its id.", [["shell_id", "string", true]]],
  ["ExitPlanMode", "Prompts the user to exit plan mode and start coding.", [["plan", "string", true]]],
  ["ToolSearch", "Loads the full definition of deferred tools by name or keyword.", [["query", "string", true], [
    "max_results",
    "number",
    false
  ]]],
  ["Skill", "Executes a skill within the main conversation.", [["skill", "string", true]]],
  ["AskUserQuestion", "Asks the user questions during execution.", [["questions", "array", true]]],
  ["SlashCommand", "Executes a slash command within the main conversation.", [["command", "string", true]]]
]

const schemaOf = (r: Rng, params: ReadonlyArray<Param>): Readonly<Record<string, unknown>> => {
  const properties: Record<string, unknown> = {}
  for (const [name, type] of params) {
    const description = sentence(r)
    properties[name] = type === "array"
      ? { type: "array", description, items: { type: "string" } }
      : type === "enum"
      ? { type: "string", description, enum: ["content", "files_with_matches", "count"] }
      : { type, description }
  }
  return {
    $schema: "https://json-schema.org/draft/2020-12/schema",
    type: "object",
    properties,
    required: params.filter(([, , required]) => required).map(([name]) => name),
    additionalProperties: false
  }
}

/** The conversation's pieces, each generated once from its own seed. */
export interface AgentSource {
  readonly seed: number
  readonly system: string
  readonly environment: string
  readonly tools: ReadonlyArray<ToolSpec>
  readonly sessionId: string
  readonly deviceId: string
  /** The `i`th tool round of the session. */
  readonly round: (i: number) => ToolRound
  /** The `i`th round's result followed by ~12 KB more output: what a last result of any size is cut from. */
  readonly longResult: (i: number) => string
  /** The user message opening task `t`. */
  readonly task: (t: number) => Extract<Turn, { kind: "user" }>
  /** The assistant's summary closing task `t`. */
  readonly summary: (t: number) => string
}

const makeRound = (seed: number, i: number): ToolRound => {
  const r = rng(subSeed(seed, 1000 + i))
  const path = filePath(r)
  const tool = pick(r, ["Read", "Read", "Read", "Read", "Bash", "Bash", "Grep", "Grep", "Edit", "Glob"] as const)
  const size = int(r, 4500, 6500)
  const [input, result]: readonly [Readonly<Record<string, unknown>>, string] = tool === "Read"
    ? [{ file_path: path }, numberedFile(r, size)]
    : tool === "Bash"
    ? [{ command: `npm test -- ${path}`, description: sentence(r) }, shellOutput(r, size)]
    : tool === "Grep"
    ? [
      { pattern: `${pick(r, ["decode", "route", "session"])}[A-Z]\\w+`, path: "/work/project", output_mode: "content" },
      grepOutput(
        r,
        size
      )
    ]
    : tool === "Edit"
    ? [
      { file_path: path, old_string: numberedFile(r, 240).replace(/^ *\d+\t/gm, ""), new_string: prose(r, 260) },
      `The file ${path} has been updated. Here's the result of running \`cat -n\` on a snippet of the edited file:\n${
        numberedFile(r, size / 2, int(r, 10, 300))
      }`
    ]
    : [
      { pattern: "**/*.test.ts", path: "/work/project" },
      Array.from({ length: Math.round(size / 40) }, () => filePath(r)).join("\n")
    ]
  return {
    thinking: prose(r, int(r, 80, 240)),
    signature: opaque(r, int(r, 400, 900)),
    preface: r() < 0.5 ? sentence(r) : undefined,
    callId: id(r, "", 24),
    name: tool,
    input,
    result
  }
}

/** The pieces of the session seeded by `seed` (rounds, tasks and summaries made on demand, then kept). */
export const agentSource = (seed: number): AgentSource => {
  const r = rng(subSeed(seed, 1))
  const system = markdown(
    r,
    "You are an agent working with the user toward their goals, using your own judgment along the way.",
    12_000
  )
  const environment = [
    "# Environment",
    "You have been invoked in the following environment: ",
    " - Primary working directory: /work/project",
    " - Is a git repository: true",
    " - Platform: linux",
    " - Shell: bash",
    " - OS Version: Linux 6.18.44",
    ` - Today's date: 2026-12-01`,
    "",
    prose(r, 700)
  ].join("\n")
  const tools = TOOLS.map(([name, lead, params], index) => {
    const t = rng(subSeed(seed, 100 + index))
    const usage = Array.from({ length: int(t, 2, 4) }, () => ` - ${prose(t, int(t, 50, 130))}`).join("\n")
    return { name, description: `${lead}\n\nUsage:\n${usage}`, parameters: schemaOf(t, params) }
  })
  const rounds = new Map<number, ToolRound>()
  const round = (i: number): ToolRound => {
    let made = rounds.get(i)
    if (made === undefined) rounds.set(i, made = makeRound(seed, i))
    return made
  }
  const tasks = new Map<number, Extract<Turn, { kind: "user" }>>()
  return {
    seed,
    system,
    environment,
    tools,
    sessionId: `${id(r, "", 8)}-${id(r, "", 4)}-${id(r, "", 4)}-${id(r, "", 4)}-${id(r, "", 12)}`.toLowerCase(),
    deviceId: opaque(r, 64).replace(/[^a-zA-Z0-9]/g, "0").toLowerCase(),
    round,
    longResult: (i) => `${round(i).result}\n${numberedFile(rng(subSeed(seed, 300_000 + i)), 12_000, 400)}`,
    task: (t) => {
      let task = tasks.get(t)
      if (task === undefined) {
        const tr = rng(subSeed(seed, 500_000 + t))
        task = {
          kind: "user",
          reminder: `<system-reminder>\n${prose(tr, 500)}\n</system-reminder>\n`,
          text: `${pick(tr, ["Fix", "Refactor", "Add a test for", "Explain and then fix"])} ${filePath(tr)}: ${
            prose(tr, 220)
          }`
        }
        tasks.set(t, task)
      }
      return task
    },
    summary: (t) => prose(rng(subSeed(seed, 900_000 + t)), 420)
  }
}

/**
 * The conversation of `source` with `rounds` tool calls, ending as `kind` says. With
 * `lastResultChars`, the last tool result is that many characters of the round's long result
 * ({@link AgentSource.longResult}): how a body is brought to an exact size.
 */
export const conversation = (
  source: AgentSource,
  rounds: number,
  kind: Kind,
  lastResultChars?: number
): Conversation => {
  const turns: Array<Turn> = [source.task(0)]
  let task = 0
  for (let i = 0; i < rounds; i++) {
    if (i > 0 && i % ROUNDS_PER_TASK === 0) {
      turns.push({ kind: "assistant", text: source.summary(task) }, source.task(++task))
    }
    const round = source.round(i)
    turns.push({
      kind: "tool",
      round: i === rounds - 1 && lastResultChars !== undefined
        ? { ...round, result: source.longResult(i).slice(0, lastResultChars) }
        : round
    })
  }
  if (kind === "user-turn") turns.push({ kind: "assistant", text: source.summary(task) }, source.task(task + 1))
  return {
    system: source.system,
    environment: source.environment,
    tools: source.tools,
    turns,
    toolCalls: rounds,
    sessionId: source.sessionId,
    deviceId: source.deviceId
  }
}
