// The e2e run's command line and environment:
//
//   --workaround-mid-conv-system  run claude with CLAUDE_CODE_MODEL_CAPABILITIES=-mid_conv_system
//                                 (no `role: "system"` messages inside `messages`)
//   --capture-fixtures            also run one Messages tool loop with claude pointed straight at
//                                 the fake upstream (no switchyard in between), default settings,
//                                 and write the two request bodies and the headers to
//                                 packages/server/test/fixtures/claude-code-*.json
//   --only a,b                    run only these scenarios or groups: `claude` (chat-plain,
//                                 chat-tool, messages-plain, messages-tool, responses-plain,
//                                 responses-tool, auto-turns, composite-tool), `codex` (codex-chat-tool,
//                                 codex-messages-tool, codex-responses-tool, codex-chat-patch,
//                                 codex-messages-patch, codex-responses-patch, codex-auto-turns,
//                                 codex-compact), `gemini` (gemini-chat-plain, gemini-chat-tool,
//                                 gemini-auto-turns);
//                                 opt-in only: codex-catalog-plain (Codex on a route named
//                                 gpt-5.6-sol, a Chat target: its tools come in an
//                                 `additional_tools` item, offered flattened; see
//                                 docs/http-api.md "Codex")
//                                 `--only none --capture-fixtures` captures the fixtures alone
//
//   E2E_CLAUDE_EXTRA_ENV   JSON object of extra environment variables for every claude run
//   E2E_CODEX_EXTRA_ARGS   JSON array of extra `codex exec` arguments (e.g. ["-c", "key=value"])
//   E2E_TIMEOUT_S          bound on the whole run after installation (default 300)
//   E2E_CLAUDE_TIMEOUT_S   bound on one claude, codex or gemini run (default 90)
//   E2E_KEEP_TMP=1         keep the temporary HOMEs and working directories
import * as Schema from "effect/Schema"

export interface E2eOptions {
  readonly workaround: boolean
  readonly captureFixtures: boolean
  /** The scenarios named by `--only` (groups expanded), or `undefined` for the default set. */
  readonly only: ReadonlyArray<string> | undefined
  readonly codexExtraArgs: ReadonlyArray<string>
  readonly runTimeoutMs: number
  readonly claudeTimeoutMs: number
  /** Extra variables of every claude run (the workaround's included). */
  readonly extraEnv: Readonly<Record<string, string>>
  readonly keepTmp: boolean
}

/** The scenario groups of `--only`. */
export const GROUPS: Readonly<Record<string, ReadonlyArray<string>>> = {
  claude: [
    "chat-plain",
    "chat-tool",
    "messages-plain",
    "messages-tool",
    "responses-plain",
    "responses-tool",
    "auto-turns",
    "composite-tool"
  ],
  codex: [
    "codex-chat-tool",
    "codex-messages-tool",
    "codex-responses-tool",
    "codex-chat-patch",
    "codex-messages-patch",
    "codex-responses-patch",
    "codex-auto-turns",
    "codex-compact"
  ],
  gemini: ["gemini-chat-plain", "gemini-chat-tool", "gemini-auto-turns"]
}

const KNOWN = new Set(["--workaround-mid-conv-system", "--capture-fixtures", "--only"])

const decodeEnvJson = <A, I>(schema: Schema.Schema<A, I>, name: string, fallback: string): A =>
  Schema.decodeUnknownSync(Schema.parseJson(schema), { errors: "first" })(process.env[name] ?? fallback)

/** Parses the flags (exit 2 on an unknown one) and the environment. */
export const parseE2eOptions = (args: ReadonlyArray<string>): E2eOptions => {
  for (const [i, a] of args.entries()) {
    if (!KNOWN.has(a) && args[i - 1] !== "--only") {
      console.error(`e2e: unknown argument ${a}; options: --workaround-mid-conv-system, --capture-fixtures, --only a,b`)
      process.exit(2)
    }
  }
  const flag = (name: string) => args.includes(name)
  const onlyAt = args.indexOf("--only")
  const extraEnv = decodeEnvJson(
    Schema.Record({ key: Schema.String, value: Schema.Union(Schema.String, Schema.Number, Schema.Boolean) }),
    "E2E_CLAUDE_EXTRA_ENV",
    "{}"
  )
  const workaround = flag("--workaround-mid-conv-system")
  return {
    workaround,
    captureFixtures: flag("--capture-fixtures"),
    only: onlyAt < 0 ? undefined : args[onlyAt + 1]?.split(",").flatMap((name) => GROUPS[name] ?? [name]),
    codexExtraArgs: decodeEnvJson(Schema.Array(Schema.String), "E2E_CODEX_EXTRA_ARGS", "[]"),
    runTimeoutMs: Number(process.env.E2E_TIMEOUT_S ?? "300") * 1000,
    claudeTimeoutMs: Number(process.env.E2E_CLAUDE_TIMEOUT_S ?? "90") * 1000,
    extraEnv: {
      ...Object.fromEntries(Object.entries(extraEnv).map(([k, v]) => [k, String(v)])),
      ...(workaround ? { CLAUDE_CODE_MODEL_CAPABILITIES: "-mid_conv_system" } : {})
    },
    keepTmp: process.env.E2E_KEEP_TMP === "1"
  }
}
