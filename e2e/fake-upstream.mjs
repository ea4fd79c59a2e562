// A scripted upstream for the end-to-end runs (plain node:http, 127.0.0.1 only). It speaks the
// three wire formats the server calls (OpenAI Chat, Anthropic Messages, OpenAI Responses),
// buffered and streamed, and logs every request it receives (method, path with query, headers,
// parsed body) so the run can assert on them.
//
// What a chat request gets is decided from its content, not from the order of requests, so side
// requests an agent makes on its own do not shift a script:
//
//   model = the judge's model id      -> a valid capability verdict (JSON text as the answer)
//   last message carries a tool result -> a final text: `E2E-TOOL-DONE <tool name>`
//   (a tool message, a tool_result block,
//   a function_call_output item)
//   the request offers tools and the
//   last user text has a marker
//   `[e2e:write <abs path> <content>]` -> one tool call, the first offered of: Write {file_path,
//                                         content} (Claude Code), Bash {command: printf ... > path},
//                                         exec_command {cmd: printf ... > path && cat path} (Codex),
//                                         shell {command: [bash, -lc, ...]}
//   the last user text also has
//   `[e2e:then-namespace]` and the last
//   result is exec_command's           -> (Codex) a second call: close_agent of the multi_agent_v1
//                                         namespace (a function_call with `namespace` on Responses,
//                                         `multi_agent_v1__close_agent` on Chat / Messages) for a
//                                         made-up agent; once its result is back, the final text
//                                         `E2E-TOOLS-DONE exec_command multi_agent_v1.close_agent`
//   `[e2e:patch <abs path> <content>]` -> (Codex with its freeform apply_patch tool) apply_patch adding
//                                         the file (a custom_tool_call on Responses, a function
//                                         with one string argument `input` on Chat / Messages)
//   anything else                      -> a plain text: `E2E-PLAIN-OK`
//
// A Responses answer to a tool call starts with a reasoning item (summary + encrypted_content
// `e2e-opaque-<seq>`), as reasoning models answer, so a run can check it is replayed.
//
//   POST /v1/chat/completions (also /chat/completions)      OpenAI Chat Completions
//   POST /v1/messages (also /messages, any query string)     Anthropic Messages
//   POST /v1/responses (also /responses)                     OpenAI Responses (events with
//                                                            sequence_number, usage)
//   POST /v1/messages/count_tokens                           {"input_tokens": body bytes / 4}
//   GET  /v1/models                                          an empty list
//   anything else                                            404
import http from "node:http"

export const PLAIN_TEXT = "E2E-PLAIN-OK"
export const TOOL_DONE_PREFIX = "E2E-TOOL-DONE"
export const VERDICT = {
  crux: "Writing one small file is a routine, directly visible change.",
  primary_rule: "SUP-1",
  capability_boundary: "supported",
  p_solve: 0.9
}
const MARKER = /\[e2e:write (\S+) (\S+)\]/
const PATCH_MARKER = /\[e2e:patch (\S+) (\S+)\]/
const NAMESPACE_MARKER = "[e2e:then-namespace]"
export const CHAIN_DONE = "E2E-TOOLS-DONE exec_command multi_agent_v1.close_agent"
export const NO_SUCH_AGENT = "e2e-no-such-agent"

const textOf = (content) => {
  if (typeof content === "string") return content
  if (!Array.isArray(content)) return ""
  return content
    .filter((part) =>
      part !== null && typeof part === "object" && part.type === "text" && typeof part.text === "string"
    )
    .map((part) => part.text)
    .join("\n")
}

const hasToolResult = (api, message) => {
  if (message === undefined || message === null) return false
  if (api === "openai") return message.role === "tool"
  if (api === "responses") return message.type === "function_call_output" || message.type === "custom_tool_call_output"
  return message.role === "user" && Array.isArray(message.content) &&
    message.content.some((p) => p?.type === "tool_result")
}

const toolNames = (api, body) =>
  Array.isArray(body.tools)
    ? body.tools.map((t) => (api === "openai" ? t?.function?.name : t?.name)).filter((n) => typeof n === "string")
    : []

/** A Responses `input` as a list of items (a string is one user message). */
const responsesItems = (body) =>
  typeof body.input === "string"
    ? [{ type: "message", role: "user", content: body.input }]
    : Array.isArray(body.input)
    ? body.input
    : []

const responsesText = (content) => {
  if (typeof content === "string") return content
  if (!Array.isArray(content)) return ""
  return content
    .filter((part) =>
      part !== null && typeof part === "object" && typeof part.text === "string" &&
      (part.type === "input_text" || part.type === "output_text" || part.type === "text")
    )
    .map((part) => part.text)
    .join("\n")
}

// The last user message with text (an Anthropic tool_result message has none).
const lastUserText = (messages) => {
  for (let i = messages.length - 1; i >= 0; i--) {
    if (messages[i]?.role !== "user") continue
    const text = textOf(messages[i].content)
    if (text !== "") return text
  }
  return ""
}

/** The answer planned for one chat request: `{ kind: "text", text }` or `{ kind: "tool", name, input }`. */
export const plan = (api, body, judgeModel) => {
  if ((Array.isArray(judgeModel) ? judgeModel : [judgeModel]).includes(body.model)) {
    return { kind: "text", text: JSON.stringify(VERDICT), why: "judge" }
  }
  const messages = api === "responses" ? responsesItems(body) : Array.isArray(body.messages) ? body.messages : []
  const last = messages[messages.length - 1]
  const userText = api === "responses" ? lastResponsesUserText(messages) : lastUserText(messages)
  const step = chainStep(api, body, userText, hasToolResult(api, last) ? lastToolName(api, messages) : undefined)
  if (step !== undefined) return step
  if (hasToolResult(api, last)) {
    return { kind: "text", text: `${TOOL_DONE_PREFIX} ${lastToolName(api, messages)}`, why: "tool-result" }
  }
  const tools = toolNames(api, body)
  const marker = MARKER.exec(userText)
  if (marker !== null && tools.length > 0) {
    const [, filePath, content] = marker
    const write = `printf %s '${content}' > '${filePath}'`
    if (tools.includes("Write")) {
      return { kind: "tool", name: "Write", input: { file_path: filePath, content }, why: "tool-call" }
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
  }
  return { kind: "text", text: PLAIN_TEXT, why: "plain" }
}

// The Codex-only steps (`[e2e:patch ...]`, `[e2e:then-namespace]`); undefined: the generic rules.
const chainStep = (api, body, userText, lastTool) => {
  const tools = Array.isArray(body.tools) ? body.tools : []
  const patch = PATCH_MARKER.exec(userText)
  if (patch !== null && lastTool === undefined && toolNames(api, body).includes("apply_patch")) {
    const [, filePath, content] = patch
    const patchText = `*** Begin Patch\n*** Add File: ${filePath}\n+${content}\n*** End Patch\n`
    const custom = api === "responses" && tools.some((t) => t?.type === "custom" && t.name === "apply_patch")
    return custom
      ? { kind: "tool", name: "apply_patch", custom: true, input: patchText, why: "patch-call" }
      : { kind: "tool", name: "apply_patch", input: { input: patchText }, why: "patch-call" }
  }
  if (!userText.includes(NAMESPACE_MARKER)) return undefined
  if (lastTool === "exec_command") {
    const input = { target: NO_SUCH_AGENT }
    if (api === "responses") {
      const ns = tools.find((t) => t?.type === "namespace" && t.name === "multi_agent_v1")
      if (!ns?.tools?.some((t) => t?.name === "close_agent")) return undefined
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

const lastResponsesUserText = (items) => {
  for (let i = items.length - 1; i >= 0; i--) {
    const item = items[i]
    if (item?.role === "user" && (item.type === undefined || item.type === "message")) {
      return responsesText(item.content)
    }
  }
  return ""
}

const lastToolName = (api, messages) => {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]
    if (api === "responses" && (m?.type === "function_call" || m?.type === "custom_tool_call")) return m.name
    if (m?.role !== "assistant") continue
    if (api === "openai" && Array.isArray(m.tool_calls) && m.tool_calls[0]) return m.tool_calls[0].function?.name ?? "?"
    if (api === "anthropic" && Array.isArray(m.content)) {
      const use = m.content.find((p) => p?.type === "tool_use")
      if (use) return use.name
    }
  }
  return "?"
}

const sse = (res) => res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" })
const json = (res, status, value) => {
  const body = JSON.stringify(value)
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(body) })
  res.end(body)
}

const usage = { input: 40, output: 12 }

const answerOpenAi = (res, body, answer, seq) => {
  const id = `chatcmpl-e2e-${seq}`
  const created = Math.floor(Date.now() / 1000)
  const model = body.model
  const toolCall = answer.kind === "tool"
    ? {
      id: `call_e2e_${seq}`,
      type: "function",
      function: { name: answer.name, arguments: JSON.stringify(answer.input) }
    }
    : undefined
  const finish = answer.kind === "tool" ? "tool_calls" : "stop"
  const u = { prompt_tokens: usage.input, completion_tokens: usage.output, total_tokens: usage.input + usage.output }
  if (body.stream !== true) {
    const message = answer.kind === "tool"
      ? { role: "assistant", content: null, tool_calls: [toolCall] }
      : { role: "assistant", content: answer.text }
    return json(res, 200, {
      id,
      object: "chat.completion",
      created,
      model,
      choices: [{ index: 0, message, finish_reason: finish }],
      usage: u
    })
  }
  sse(res)
  const chunk = (delta, finishReason, extra = {}) =>
    res.write(
      `data: ${
        JSON.stringify({
          id,
          object: "chat.completion.chunk",
          created,
          model,
          choices: [{ index: 0, delta, finish_reason: finishReason }],
          ...extra
        })
      }\n\n`
    )
  chunk({ role: "assistant", content: "" }, null)
  if (answer.kind === "tool") {
    chunk({
      tool_calls: [{ index: 0, id: toolCall.id, type: "function", function: { name: answer.name, arguments: "" } }]
    }, null)
    const args = toolCall.function.arguments
    const half = Math.floor(args.length / 2)
    chunk({ tool_calls: [{ index: 0, function: { arguments: args.slice(0, half) } }] }, null)
    chunk({ tool_calls: [{ index: 0, function: { arguments: args.slice(half) } }] }, null)
  } else {
    chunk({ content: answer.text }, null)
  }
  chunk({}, finish)
  if (body.stream_options?.include_usage === true) {
    res.write(
      `data: ${JSON.stringify({ id, object: "chat.completion.chunk", created, model, choices: [], usage: u })}\n\n`
    )
  }
  res.end("data: [DONE]\n\n")
}

const answerAnthropic = (res, body, answer, seq) => {
  const id = `msg_e2e_${seq}`
  const model = body.model
  const block = answer.kind === "tool"
    ? { type: "tool_use", id: `toolu_e2e_${seq}`, name: answer.name, input: answer.input }
    : { type: "text", text: answer.text }
  const stopReason = answer.kind === "tool" ? "tool_use" : "end_turn"
  const u = {
    input_tokens: usage.input,
    output_tokens: usage.output,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: 0
  }
  if (body.stream !== true) {
    return json(res, 200, {
      id,
      type: "message",
      role: "assistant",
      model,
      content: [block],
      stop_reason: stopReason,
      stop_sequence: null,
      usage: u
    })
  }
  sse(res)
  const event = (type, data) => res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`)
  event("message_start", {
    message: {
      id,
      type: "message",
      role: "assistant",
      model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { ...u, output_tokens: 1 }
    }
  })
  if (answer.kind === "tool") {
    event("content_block_start", { index: 0, content_block: { ...block, input: {} } })
    event("ping", {})
    const args = JSON.stringify(answer.input)
    const half = Math.floor(args.length / 2)
    event("content_block_delta", { index: 0, delta: { type: "input_json_delta", partial_json: args.slice(0, half) } })
    event("content_block_delta", { index: 0, delta: { type: "input_json_delta", partial_json: args.slice(half) } })
  } else {
    event("content_block_start", { index: 0, content_block: { type: "text", text: "" } })
    event("ping", {})
    event("content_block_delta", { index: 0, delta: { type: "text_delta", text: answer.text } })
  }
  event("content_block_stop", { index: 0 })
  event("message_delta", {
    delta: { stop_reason: stopReason, stop_sequence: null },
    usage: { output_tokens: usage.output }
  })
  event("message_stop", {})
  res.end()
}

const answerResponses = (res, body, answer, seq) => {
  const id = `resp_e2e_${seq}`
  const model = body.model
  const base = {
    id,
    object: "response",
    created_at: Math.floor(Date.now() / 1000),
    model,
    output: [],
    parallel_tool_calls: body.parallel_tool_calls ?? true,
    tool_choice: body.tool_choice ?? "auto",
    tools: [],
    usage: null,
    error: null,
    incomplete_details: null
  }
  const summary = "Writing the file with one shell command."
  const reasoning = {
    id: `rs_e2e_${seq}`,
    type: "reasoning",
    summary: [{ type: "summary_text", text: summary }],
    encrypted_content: `e2e-opaque-${seq}`
  }
  const item = answer.kind === "tool" && answer.custom === true
    ? {
      id: `ctc_e2e_${seq}`,
      type: "custom_tool_call",
      status: "completed",
      call_id: `call_e2e_${seq}`,
      name: answer.name,
      input: answer.input
    }
    : answer.kind === "tool"
    ? {
      id: `fc_e2e_${seq}`,
      type: "function_call",
      status: "completed",
      call_id: `call_e2e_${seq}`,
      name: answer.name,
      ...(answer.namespace === undefined ? {} : { namespace: answer.namespace }),
      arguments: JSON.stringify(answer.input)
    }
    : {
      id: `msg_e2e_${seq}`,
      type: "message",
      role: "assistant",
      status: "completed",
      content: [{ type: "output_text", text: answer.text, annotations: [] }]
    }
  const output = answer.kind === "tool" ? [reasoning, item] : [item]
  const u = {
    input_tokens: usage.input,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: usage.output,
    output_tokens_details: { reasoning_tokens: answer.kind === "tool" ? 5 : 0 },
    total_tokens: usage.input + usage.output
  }
  if (body.stream !== true) return json(res, 200, { ...base, status: "completed", output, usage: u })
  sse(res)
  let n = 0
  const event = (type, data) =>
    res.write(`event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: n++, ...data })}\n\n`)
  event("response.created", { response: { ...base, status: "in_progress" } })
  event("response.in_progress", { response: { ...base, status: "in_progress" } })
  for (const [index, it] of output.entries()) {
    const o = { output_index: index }
    if (it.type === "reasoning") {
      event("response.output_item.added", { ...o, item: { ...it, summary: [] } })
      const part = { item_id: it.id, ...o, summary_index: 0 }
      event("response.reasoning_summary_part.added", { ...part, part: { type: "summary_text", text: "" } })
      event("response.reasoning_summary_text.delta", { ...part, delta: summary })
      event("response.reasoning_summary_text.done", { ...part, text: summary })
      event("response.reasoning_summary_part.done", { ...part, part: { type: "summary_text", text: summary } })
    } else if (it.type === "function_call") {
      event("response.output_item.added", { ...o, item: { ...it, status: "in_progress", arguments: "" } })
      const half = Math.floor(it.arguments.length / 2)
      event("response.function_call_arguments.delta", { item_id: it.id, ...o, delta: it.arguments.slice(0, half) })
      event("response.function_call_arguments.delta", { item_id: it.id, ...o, delta: it.arguments.slice(half) })
      event("response.function_call_arguments.done", { item_id: it.id, ...o, arguments: it.arguments })
    } else if (it.type === "custom_tool_call") {
      event("response.output_item.added", { ...o, item: { ...it, status: "in_progress", input: "" } })
      const half = Math.floor(it.input.length / 2)
      event("response.custom_tool_call_input.delta", { item_id: it.id, ...o, delta: it.input.slice(0, half) })
      event("response.custom_tool_call_input.delta", { item_id: it.id, ...o, delta: it.input.slice(half) })
      event("response.custom_tool_call_input.done", { item_id: it.id, ...o, input: it.input })
    } else {
      const text = it.content[0].text
      const c = { item_id: it.id, ...o, content_index: 0 }
      event("response.output_item.added", { ...o, item: { ...it, status: "in_progress", content: [] } })
      event("response.content_part.added", { ...c, part: { type: "output_text", text: "", annotations: [] } })
      event("response.output_text.delta", { ...c, delta: text, logprobs: [] })
      event("response.output_text.done", { ...c, text, logprobs: [] })
      event("response.content_part.done", { ...c, part: it.content[0] })
    }
    event("response.output_item.done", { ...o, item: it })
  }
  event("response.completed", { response: { ...base, status: "completed", output, usage: u } })
  res.end()
}

/**
 * Start the fake upstream on 127.0.0.1 (a free port). `judgeModel` is the model id (or a list of
 * ids) the judge targets send. Resolves to `{ port, url, requests, close }`; `requests` is the live log, each
 * entry `{ seq, at, method, path, headers, body, plan }`.
 */
export const startFakeUpstream = ({ judgeModel }) =>
  new Promise((resolve, reject) => {
    const requests = []
    let seq = 0
    const server = http.createServer((req, res) => {
      const parts = []
      req.on("data", (part) => parts.push(part))
      req.on("end", () => {
        const text = Buffer.concat(parts).toString("utf8")
        let body
        try {
          body = text === "" ? undefined : JSON.parse(text)
        } catch {
          body = text
        }
        const entry = { seq: ++seq, at: Date.now(), method: req.method, path: req.url, headers: req.headers, body }
        requests.push(entry)
        const path = req.url.split("?")[0]
        const isObject = body !== null && typeof body === "object"
        if (req.method === "GET" && path.endsWith("/models")) return json(res, 200, { object: "list", data: [] })
        if (req.method === "POST" && path.endsWith("/messages/count_tokens")) {
          return json(res, 200, { input_tokens: Math.ceil(text.length / 4) })
        }
        const api = path.endsWith("/chat/completions")
          ? "openai"
          : path.endsWith("/messages")
          ? "anthropic"
          : path.endsWith("/responses")
          ? "responses"
          : undefined
        if (req.method !== "POST" || api === undefined || !isObject) {
          return json(res, 404, {
            error: { message: `no route ${req.method} ${req.url}`, type: "not_found", code: null }
          })
        }
        const answer = plan(api, body, judgeModel)
        entry.plan = { api, ...answer }
        if (api === "openai") answerOpenAi(res, body, answer, entry.seq)
        else if (api === "anthropic") answerAnthropic(res, body, answer, entry.seq)
        else answerResponses(res, body, answer, entry.seq)
      })
    })
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address()
      resolve({
        port,
        url: `http://127.0.0.1:${port}`,
        requests,
        close: () =>
          new Promise((done) => {
            server.closeAllConnections()
            server.close(() => done())
          })
      })
    })
  })
