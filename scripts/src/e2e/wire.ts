// Reading what reached the upstream, in its own format: the tool calls of the assistant turns and
// the tool results of a request, the tools it offered, the checks of a Codex tool loop, and the
// items Codex recorded in its session file.
import fs from "node:fs"
import path from "node:path"
import { arr, get, isObject, last, parseJson, show, str } from "./json.js"
import type { Api } from "./upstream/plan.js"
import type { RequestEntry } from "./upstream/server.js"

/** What a tool result carried, as text. */
export const resultText = (content: unknown): string =>
  typeof content === "string"
    ? content
    : arr(content).map((p) => str(get(p, "text")) ?? "").join("")

/** The tools a request offers, by name. */
export const offeredTools = (api: Api, body: unknown): ReadonlyArray<string> =>
  arr(get(body, "tools")).flatMap((t) => {
    const name = str(api === "openai" ? get(get(t, "function"), "name") : get(t, "name"))
    return name === undefined ? [] : [name]
  })

const assistantParts = (body: unknown, key: "tool_calls" | "content"): ReadonlyArray<unknown> =>
  arr(get(body, "messages")).flatMap((m) => get(m, "role") === "assistant" ? arr(get(m, key)) : [])

/**
 * The assistant's tool calls in a request, by call id: `{ name, input }` (Chat / Messages; Chat
 * arguments parsed) or the Responses item itself.
 */
export const upstreamCalls = (api: Api, body: unknown): Map<string, unknown> => {
  const out = new Map<string, unknown>()
  if (api === "openai") {
    for (const c of assistantParts(body, "tool_calls")) {
      const args = get(get(c, "function"), "arguments")
      const parsed = typeof args === "string" ? parseJson(args) : undefined
      out.set(str(get(c, "id")) ?? "", { name: get(get(c, "function"), "name"), input: parsed ?? args })
    }
  }
  if (api === "anthropic") {
    for (const b of assistantParts(body, "content")) {
      if (get(b, "type") === "tool_use") {
        out.set(str(get(b, "id")) ?? "", { name: get(b, "name"), input: get(b, "input") })
      }
    }
  }
  if (api === "responses") {
    for (const i of arr(get(body, "input"))) {
      const type = get(i, "type")
      if (type === "function_call" || type === "custom_tool_call") out.set(str(get(i, "call_id")) ?? "", i)
    }
  }
  return out
}

/** Tool results in a request, by call id, as text (Chat tool messages, tool_result blocks, *_output items). */
export const toolResults = (api: Api, body: unknown): Map<string, string> => {
  const out = new Map<string, string>()
  const messages = arr(get(body, "messages"))
  if (api === "openai") {
    for (const m of messages) {
      if (get(m, "role") === "tool") out.set(str(get(m, "tool_call_id")) ?? "", resultText(get(m, "content")))
    }
  }
  if (api === "anthropic") {
    for (const m of messages) {
      if (get(m, "role") !== "user") continue
      for (const b of arr(get(m, "content"))) {
        if (get(b, "type") === "tool_result") out.set(str(get(b, "tool_use_id")) ?? "", resultText(get(b, "content")))
      }
    }
  }
  if (api === "responses") {
    for (const i of arr(get(body, "input"))) {
      const type = get(i, "type")
      if (type === "function_call_output" || type === "custom_tool_call_output") {
        out.set(str(get(i, "call_id")) ?? "", resultText(get(i, "output")))
      }
    }
  }
  return out
}

/**
 * The problems with a continuation: the call `id` must be named exec_command, and the last item must
 * be its result (`result`, `undefined` when it is not), whose text includes `content`.
 */
const continuationProblems = (
  { callName, content, kind, lastItem, result }: {
    readonly callName: unknown
    readonly kind: string
    readonly lastItem: unknown
    /** The result's raw content, when the last item is the call's result. */
    readonly result: { readonly raw: unknown } | undefined
    readonly content: string
  },
  id: string,
  expect: { readonly call: string; readonly result: string }
): Array<string> => {
  const problems: Array<string> = []
  if (callName !== "exec_command") problems.push(`no ${expect.call} ${id} named exec_command in the continuation`)
  if (result === undefined) {
    problems.push(`continuation ends with ${show(lastItem)}, not ${expect.result} for ${id}`)
  } else if (!resultText(result.raw).includes(content)) {
    problems.push(`${kind} lacks the command output: ${show(result.raw)}`)
  }
  return problems
}

/**
 * Checks the two answer requests of one Codex tool loop as the upstream received them: the first
 * offers exec_command; the continuation carries the call (same id, exec_command) and its result
 * (the command's output, which includes `content`) in the upstream's own shape, and on a Responses
 * upstream the reasoning item with its encrypted_content, replayed.
 */
export const checkCodexLoop = (
  api: Api,
  first: RequestEntry,
  cont: RequestEntry,
  content: string
): { readonly problems: Array<string>; readonly offered: ReadonlyArray<string> } => {
  const problems: Array<string> = []
  const offered = offeredTools(api, first.body)
  if (!offered.includes("exec_command")) problems.push(`first request offers ${offered.length} tools, not exec_command`)
  const messages = arr(get(cont.body, "messages"))
  const lastMessage = last(messages)
  if (api === "openai") {
    const callId = `call_e2e_${first.seq}`
    const call = assistantParts(cont.body, "tool_calls").find((c) => get(c, "id") === callId)
    const ok = get(lastMessage, "role") === "tool" && get(lastMessage, "tool_call_id") === callId
    problems.push(...continuationProblems(
      {
        callName: get(get(call, "function"), "name"),
        kind: "tool message",
        lastItem: lastMessage,
        result: ok ? { raw: get(lastMessage, "content") } : undefined,
        content
      },
      callId,
      { call: "assistant tool_call", result: "a tool message" }
    ))
  } else if (api === "anthropic") {
    const useId = `toolu_e2e_${first.seq}`
    const use = assistantParts(cont.body, "content").find((b) =>
      get(b, "type") === "tool_use" && get(b, "id") === useId
    )
    const result = get(lastMessage, "role") === "user"
      ? arr(get(lastMessage, "content")).find((b) => get(b, "type") === "tool_result")
      : undefined
    problems.push(...continuationProblems(
      {
        callName: get(use, "name"),
        kind: "tool_result",
        lastItem: lastMessage,
        result: get(result, "tool_use_id") === useId ? { raw: get(result, "content") } : undefined,
        content
      },
      useId,
      { call: "assistant tool_use", result: "a tool_result" }
    ))
  } else {
    const callId = `call_e2e_${first.seq}`
    const items = arr(get(cont.body, "input"))
    const lastItem = last(items)
    const call = items.find((i) => get(i, "type") === "function_call" && get(i, "call_id") === callId)
    const ok = get(lastItem, "type") === "function_call_output" && get(lastItem, "call_id") === callId
    problems.push(...continuationProblems(
      {
        callName: get(call, "name"),
        kind: "function_call_output",
        lastItem,
        result: ok ? { raw: get(lastItem, "output") } : undefined,
        content
      },
      callId,
      { call: "function_call", result: "a function_call_output" }
    ))
    const reasoning = items.find((i) => get(i, "type") === "reasoning")
    if (get(reasoning, "encrypted_content") !== `e2e-opaque-${first.seq}`) {
      problems.push(`reasoning item not replayed: ${show(reasoning)}`)
    }
  }
  return { problems, offered }
}

/**
 * The items Codex recorded in its session file (CODEX_HOME/sessions/**\/rollout-*.jsonl): what it
 * understood of the server's answers.
 */
export const codexRolloutItems = (home: string): ReadonlyArray<unknown> => {
  const files: Array<string> = []
  const walk = (dir: string, depth: number) => {
    if (depth > 5 || !fs.existsSync(dir)) return
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, entry.name)
      if (entry.isDirectory()) walk(p, depth + 1)
      else if (/^rollout-.*\.jsonl$/.test(entry.name)) files.push(p)
    }
  }
  walk(path.join(home, ".codex", "sessions"), 0)
  return files.flatMap((f) =>
    fs.readFileSync(f, "utf8").split("\n").filter((l) => l.trim() !== "").map((l) => parseJson(l) ?? {})
  ).filter((e) => isObject(e) && e["type"] === "response_item").map((e) => get(e, "payload"))
}
