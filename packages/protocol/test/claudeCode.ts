/**
 * Request bodies shaped like the ones stock Claude Code 2.1.x sends to `ANTHROPIC_BASE_URL` for a
 * model id it does not recognise: a `system` array opening with the per-session billing header
 * block, `{"role": "system"}` entries inside `messages`, tools with `defer_loading`, ToolSearch
 * results made of `tool_reference` blocks, and the beta fields (`thinking: {"type": "adaptive"}`,
 * `output_config.effort`, `context_management`), plus a long JSON `metadata.user_id`.
 * Plain JSON (not decoded), so each test decodes it as the server would.
 */

/** The first `system` block: per session, so two sessions of one project differ only here. */
export const billingBlock = (session: string) => ({
  type: "text",
  text: `x-anthropic-billing-header: cc_version=2.1.3.${session}; cc_entrypoint=cli; cch=${session};`
})

/** The rest of the system prompt: the same for every session of one project. */
export const systemPrompt = [
  {
    type: "text",
    text: "You are Claude Code, Anthropic's official CLI for Claude.",
    cache_control: { type: "ephemeral" }
  },
  {
    type: "text",
    text: "You are an interactive CLI tool that helps users with software engineering tasks.\n\n# Project\nUse npm.",
    cache_control: { type: "ephemeral" }
  }
]

/** Claude Code's `metadata.user_id`: a JSON string far longer than 64 characters. */
export const userId = JSON.stringify({
  device_id: "5f0c3c7e2b9a4d1e8f6a0b3c7d9e1f2a4b6c8d0e2f4a6b8c0d2e4f6a8b0c2d4e",
  account_uuid: "",
  session_id: "9a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
})

/** The opening user message: a reminder block and the task. */
export const task = {
  role: "user",
  content: [
    { type: "text", text: "<system-reminder>\nAs you answer, use the context below.\n</system-reminder>" },
    { type: "text", text: "Fix the failing test in src/sum.test.ts", cache_control: { type: "ephemeral" } }
  ]
}

/** A system message Claude Code appends inside `messages`. */
export const reminder = {
  role: "system",
  content: "<system-reminder>\nToday's date is 2026-01-15.\n</system-reminder>"
}

/** The assistant's ToolSearch call and the user message with its `tool_reference` results. */
export const toolSearchCall = {
  role: "assistant",
  content: [
    { type: "text", text: "I'll load the test runner tool." },
    { type: "tool_use", id: "toolu_01Search", name: "ToolSearch", input: { query: "select:mcp__tests__run" } }
  ]
}
export const toolSearchResult = {
  role: "user",
  content: [{
    type: "tool_result",
    tool_use_id: "toolu_01Search",
    content: [
      { type: "tool_reference", tool_name: "mcp__tests__run" },
      { type: "tool_reference", tool_name: "mcp__tests__list" }
    ]
  }]
}

const tools = [
  {
    name: "Bash",
    description: "Executes a bash command",
    input_schema: { type: "object", properties: { command: { type: "string" } }, required: ["command"] }
  },
  {
    name: "ToolSearch",
    description: "Loads deferred tools",
    input_schema: { type: "object", properties: { query: { type: "string" } }, required: ["query"] }
  },
  {
    name: "mcp__tests__run",
    description: "Runs the tests",
    input_schema: { type: "object", properties: {} },
    defer_loading: true
  }
]

/** A Claude Code request for `model` with `messages`, its session billing value `session`. */
export const request = (options: {
  readonly model: string
  readonly session: string
  readonly messages: ReadonlyArray<unknown>
  readonly stream?: boolean
}) => ({
  model: options.model,
  max_tokens: 32000,
  ...(options.stream === true ? { stream: true } : {}),
  system: [billingBlock(options.session), ...systemPrompt],
  messages: options.messages,
  tools,
  metadata: { user_id: userId },
  thinking: { type: "adaptive" },
  output_config: { effort: "high" },
  context_management: { edits: [{ type: "clear_thinking_20251015", keep: "all" }] }
})

/** The first request of a session: `[user, system]`. */
export const firstRequest = (model: string, session = "a1b2c") =>
  request({ model, session, messages: [task, reminder] })

/** A tool continuation: `[user, system, assistant(tool_use), user(tool_result of tool_reference blocks)]`. */
export const continuation = (model: string, session = "a1b2c") =>
  request({ model, session, messages: [task, reminder, toolSearchCall, toolSearchResult] })
