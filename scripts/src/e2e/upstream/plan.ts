// What the scripted upstream answers a chat request, decided from its content (not from the order
// of requests, so side requests an agent makes on its own do not shift a script):
//
//   model = a judge's model id         -> a valid capability verdict (JSON text as the answer)
//   last message carries a tool result -> a final text: `E2E-TOOL-DONE <tool name>`
//   (a tool message, a tool_result block,
//   a function_call_output item)
//   the request offers tools and the
//   last user text has a marker
//   `[e2e:write <abs path> <content>]` -> one tool call, the first offered of: Write {file_path,
//                                         content} (Claude Code), write_file {file_path, content}
//                                         (Gemini CLI), Bash {command: printf ... > path},
//                                         exec_command {cmd: printf ... > path && cat path} (Codex),
//                                         shell {command: [bash, -lc, ...]}
//   the last user text also has
//   `[e2e:then-namespace]` and the last
//   result is exec_command's           -> (Codex) a second call: close_agent of the multi_agent_v1
//                                         namespace (a function_call with `namespace` on Responses,
//                                         `multi_agent_v1__close_agent` on Chat / Messages) for a
//                                         made-up agent; once its result is back, the final text
//                                         `E2E-TOOLS-DONE exec_command multi_agent_v1.close_agent`
//   the last user text also has
//   `[e2e:then-shell]` and the last
//   result is write_file's             -> (Gemini CLI) a second call: run_shell_command {command: cat
//                                         path}; once its result is back, the final text
//                                         `E2E-TOOLS-DONE write_file run_shell_command`
//   `[e2e:patch <abs path> <content>]` -> (Codex with its freeform apply_patch tool) apply_patch adding
//                                         the file (a custom_tool_call on Responses, a function
//                                         with one string argument `input` on Chat / Messages)
//   anything else                      -> a plain text: `E2E-PLAIN-OK`
import { arr, get, isObject, str } from "../json.js"

export const PLAIN_TEXT = "E2E-PLAIN-OK"
export const TOOL_DONE_PREFIX = "E2E-TOOL-DONE"
export const CHAIN_DONE = "E2E-TOOLS-DONE exec_command multi_agent_v1.close_agent"
export const SHELL_DONE = "E2E-TOOLS-DONE write_file run_shell_command"
export const NO_SUCH_AGENT = "e2e-no-such-agent"
export const VERDICT = {
  crux: "Writing one small file is a routine, directly visible change.",
  primary_rule: "SUP-1",
  capability_boundary: "supported",
  p_solve: 0.9
}
const MARKER = /\[e2e:write (\S+) (\S+)\]/
const PATCH_MARKER = /\[e2e:patch (\S+) (\S+)\]/
const NAMESPACE_MARKER = "[e2e:then-namespace]"
const SHELL_MARKER = "[e2e:then-shell]"

/** The upstream API a request came on. */
export type Api = "openai" | "anthropic" | "responses"

/** Why an answer was chosen (what the scenarios check, in order). */
export type Why = "judge" | "tool-result" | "tool-call" | "patch-call" | "namespace-call" | "shell-call" | "plain"

/** The answer planned for one chat request. */
export type Answer =
  | { readonly kind: "text"; readonly text: string; readonly why: Why }
  | {
    readonly kind: "tool"
    readonly name: string
    /** The arguments; the raw patch text for a custom (freeform) tool. */
    readonly input: unknown
    readonly why: Why
    readonly custom?: true
    readonly namespace?: string
  }

/** The text of a Chat / Messages content (a string, or its text parts). */
const textOf = (content: unknown): string =>
  typeof content === "string"
    ? content
    : arr(content).flatMap((part) => get(part, "type") === "text" ? [str(get(part, "text")) ?? ""] : []).join("\n")

/** The text of a Responses content (a string, or its input/output text parts). */
const responsesText = (content: unknown): string =>
  typeof content === "string"
    ? content
    : arr(content).flatMap((part) => {
      const type = get(part, "type")
      const text = str(get(part, "text"))
      return text !== undefined && (type === "input_text" || type === "output_text" || type === "text") ? [text] : []
    }).join("\n")

const hasToolResult = (api: Api, message: unknown): boolean => {
  if (!isObject(message)) return false
  if (api === "openai") return message["role"] === "tool"
  if (api === "responses") {
    return message["type"] === "function_call_output" || message["type"] === "custom_tool_call_output"
  }
  return message["role"] === "user" && arr(message["content"]).some((p) => get(p, "type") === "tool_result")
}

/** The names of the tools a request offers. */
export const toolNames = (api: Api, body: unknown): ReadonlyArray<string> =>
  arr(get(body, "tools")).flatMap((t) => {
    const name = str(api === "openai" ? get(get(t, "function"), "name") : get(t, "name"))
    return name === undefined ? [] : [name]
  })

/** A Responses `input` as a list of items (a string is one user message). */
const responsesItems = (body: unknown): ReadonlyArray<unknown> => {
  const input = get(body, "input")
  return typeof input === "string" ? [{ type: "message", role: "user", content: input }] : arr(input)
}

/** The last user message with text (an Anthropic tool_result message has none). */
const lastUserText = (messages: ReadonlyArray<unknown>): string => {
  for (let i = messages.length - 1; i >= 0; i--) {
    if (get(messages[i], "role") !== "user") continue
    const text = textOf(get(messages[i], "content"))
    if (text !== "") return text
  }
  return ""
}

const lastResponsesUserText = (items: ReadonlyArray<unknown>): string => {
  for (let i = items.length - 1; i >= 0; i--) {
    const item = items[i]
    const type = get(item, "type")
    if (get(item, "role") === "user" && (type === undefined || type === "message")) {
      return responsesText(get(item, "content"))
    }
  }
  return ""
}

const lastToolName = (api: Api, messages: ReadonlyArray<unknown>): string => {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]
    const type = get(m, "type")
    if (api === "responses" && (type === "function_call" || type === "custom_tool_call")) {
      return str(get(m, "name")) ?? "?"
    }
    if (get(m, "role") !== "assistant") continue
    const calls = arr(get(m, "tool_calls"))
    if (api === "openai" && calls[0]) return str(get(get(calls[0], "function"), "name")) ?? "?"
    if (api === "anthropic") {
      const use = arr(get(m, "content")).find((p) => get(p, "type") === "tool_use")
      if (use) return str(get(use, "name")) ?? "?"
    }
  }
  return "?"
}

/** The Gemini CLI shell step after write_file (`[e2e:then-shell]`); undefined: not this step. */
const shellStep = (api: Api, body: unknown, userText: string, lastTool: string | undefined): Answer | undefined => {
  const marker = MARKER.exec(userText)
  if (marker === null || !userText.includes(SHELL_MARKER)) return undefined
  if (lastTool === "write_file" && toolNames(api, body).includes("run_shell_command")) {
    const command = `cat '${marker[1] ?? ""}'`
    return {
      kind: "tool",
      name: "run_shell_command",
      input: { command, description: "Print the file" },
      why: "shell-call"
    }
  }
  return lastTool === "run_shell_command" ? { kind: "text", text: SHELL_DONE, why: "tool-result" } : undefined
}

/** The Codex-only steps (`[e2e:patch ...]`, `[e2e:then-namespace]`); undefined: the generic rules. */
const chainStep = (api: Api, body: unknown, userText: string, lastTool: string | undefined): Answer | undefined => {
  const shell = shellStep(api, body, userText, lastTool)
  if (shell !== undefined) return shell
  const tools = arr(get(body, "tools"))
  const patch = PATCH_MARKER.exec(userText)
  if (patch !== null && lastTool === undefined && toolNames(api, body).includes("apply_patch")) {
    const [, filePath, content] = patch
    const patchText = `*** Begin Patch\n*** Add File: ${filePath}\n+${content}\n*** End Patch\n`
    const custom = api === "responses" &&
      tools.some((t) => get(t, "type") === "custom" && get(t, "name") === "apply_patch")
    return custom
      ? { kind: "tool", name: "apply_patch", custom: true, input: patchText, why: "patch-call" }
      : { kind: "tool", name: "apply_patch", input: { input: patchText }, why: "patch-call" }
  }
  if (!userText.includes(NAMESPACE_MARKER)) return undefined
  if (lastTool === "exec_command") {
    const input = { target: NO_SUCH_AGENT }
    if (api === "responses") {
      const ns = tools.find((t) => get(t, "type") === "namespace" && get(t, "name") === "multi_agent_v1")
      if (!arr(get(ns, "tools")).some((t) => get(t, "name") === "close_agent")) return undefined
      return { kind: "tool", name: "close_agent", namespace: "multi_agent_v1", input, why: "namespace-call" }
    }
    if (!toolNames(api, body).includes("multi_agent_v1__close_agent")) return undefined
    return { kind: "tool", name: "multi_agent_v1__close_agent", input, why: "namespace-call" }
  }
  if (lastTool === "close_agent" || lastTool === "multi_agent_v1__close_agent") {
    return { kind: "text", text: CHAIN_DONE, why: "tool-result" }
  }
  return undefined
}

/** The one tool call that writes the file of a `[e2e:write]` marker, with the first tool offered that can. */
const writeCall = (tools: ReadonlyArray<string>, filePath: string, content: string): Answer | undefined => {
  const write = `printf %s '${content}' > '${filePath}'`
  if (tools.includes("Write")) {
    return { kind: "tool", name: "Write", input: { file_path: filePath, content }, why: "tool-call" }
  }
  if (tools.includes("write_file")) {
    return { kind: "tool", name: "write_file", input: { file_path: filePath, content }, why: "tool-call" }
  }
  if (tools.includes("Bash")) {
    return { kind: "tool", name: "Bash", input: { command: write, description: "Write the file" }, why: "tool-call" }
  }
  if (tools.includes("exec_command")) {
    return { kind: "tool", name: "exec_command", input: { cmd: `${write} && cat '${filePath}'` }, why: "tool-call" }
  }
  if (tools.includes("shell")) {
    return {
      kind: "tool",
      name: "shell",
      input: { command: ["bash", "-lc", `${write} && cat '${filePath}'`] },
      why: "tool-call"
    }
  }
  return undefined
}

/** The answer planned for one chat request on `api`; `judgeModels` are answered with a verdict. */
export const plan = (api: Api, body: unknown, judgeModels: ReadonlyArray<string>): Answer => {
  const model = get(body, "model")
  if (judgeModels.some((judge) => judge === model)) return { kind: "text", text: JSON.stringify(VERDICT), why: "judge" }
  const messages = api === "responses" ? responsesItems(body) : arr(get(body, "messages"))
  const lastMessage = messages[messages.length - 1]
  const userText = api === "responses" ? lastResponsesUserText(messages) : lastUserText(messages)
  const toolResult = hasToolResult(api, lastMessage)
  const step = chainStep(api, body, userText, toolResult ? lastToolName(api, messages) : undefined)
  if (step !== undefined) return step
  if (toolResult) {
    return { kind: "text", text: `${TOOL_DONE_PREFIX} ${lastToolName(api, messages)}`, why: "tool-result" }
  }
  const tools = toolNames(api, body)
  const marker = MARKER.exec(userText)
  if (marker !== null && tools.length > 0) {
    const [, filePath = "", content = ""] = marker
    const call = writeCall(tools, filePath, content)
    if (call !== undefined) return call
  }
  return { kind: "text", text: PLAIN_TEXT, why: "plain" }
}
