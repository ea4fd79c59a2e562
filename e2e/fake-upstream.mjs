// A scripted upstream for the Claude Code end-to-end run (plain node:http, 127.0.0.1 only). It
// speaks both wire formats the server calls, buffered and streamed, and logs every request it
// receives (method, path with query, headers, parsed body) so the run can assert on them.
//
// What a chat request gets is decided from its content, not from the order of requests, so side
// requests an agent makes on its own do not shift a script:
//
//   model = the judge's model id      -> a valid capability verdict (JSON text as the answer)
//   last message carries a tool result -> a final text: `E2E-TOOL-DONE <tool name>`
//   the request offers tools and the
//   last user text has a marker
//   `[e2e:write <abs path> <content>]` -> one tool call: Write {file_path, content} when the
//                                         request offers Write, else Bash {command: printf ... > path}
//   anything else                      -> a plain text: `E2E-PLAIN-OK`
//
//   POST /v1/chat/completions (also /chat/completions)      OpenAI Chat Completions
//   POST /v1/messages (also /messages, any query string)     Anthropic Messages
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

const textOf = (content) => {
  if (typeof content === "string") return content
  if (!Array.isArray(content)) return ""
  return content
    .filter((part) => part !== null && typeof part === "object" && part.type === "text" && typeof part.text === "string")
    .map((part) => part.text)
    .join("\n")
}

const hasToolResult = (api, message) => {
  if (message === undefined) return false
  if (api === "openai") return message.role === "tool"
  return message.role === "user" && Array.isArray(message.content) && message.content.some((p) => p?.type === "tool_result")
}

const toolNames = (api, body) =>
  Array.isArray(body.tools)
    ? body.tools.map((t) => (api === "openai" ? t?.function?.name : t?.name)).filter((n) => typeof n === "string")
    : []

const lastUserText = (messages) => {
  for (let i = messages.length - 1; i >= 0; i--) {
    if (messages[i]?.role === "user") return textOf(messages[i].content)
  }
  return ""
}

/** The answer planned for one chat request: `{ kind: "text", text }` or `{ kind: "tool", name, input }`. */
export const plan = (api, body, judgeModel) => {
  if (body.model === judgeModel) return { kind: "text", text: JSON.stringify(VERDICT), why: "judge" }
  const messages = Array.isArray(body.messages) ? body.messages : []
  const last = messages[messages.length - 1]
  if (hasToolResult(api, last)) return { kind: "text", text: `${TOOL_DONE_PREFIX} ${lastToolName(api, messages)}`, why: "tool-result" }
  const tools = toolNames(api, body)
  const marker = MARKER.exec(lastUserText(messages))
  if (marker !== null && tools.length > 0) {
    const [, filePath, content] = marker
    if (tools.includes("Write")) return { kind: "tool", name: "Write", input: { file_path: filePath, content }, why: "tool-call" }
    if (tools.includes("Bash")) {
      return { kind: "tool", name: "Bash", input: { command: `printf %s '${content}' > '${filePath}'`, description: "Write the file" }, why: "tool-call" }
    }
  }
  return { kind: "text", text: PLAIN_TEXT, why: "plain" }
}

const lastToolName = (api, messages) => {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]
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
    ? { id: `call_e2e_${seq}`, type: "function", function: { name: answer.name, arguments: JSON.stringify(answer.input) } }
    : undefined
  const finish = answer.kind === "tool" ? "tool_calls" : "stop"
  const u = { prompt_tokens: usage.input, completion_tokens: usage.output, total_tokens: usage.input + usage.output }
  if (body.stream !== true) {
    const message = answer.kind === "tool"
      ? { role: "assistant", content: null, tool_calls: [toolCall] }
      : { role: "assistant", content: answer.text }
    return json(res, 200, { id, object: "chat.completion", created, model, choices: [{ index: 0, message, finish_reason: finish }], usage: u })
  }
  sse(res)
  const chunk = (delta, finishReason, extra = {}) =>
    res.write(`data: ${JSON.stringify({ id, object: "chat.completion.chunk", created, model, choices: [{ index: 0, delta, finish_reason: finishReason }], ...extra })}\n\n`)
  chunk({ role: "assistant", content: "" }, null)
  if (answer.kind === "tool") {
    chunk({ tool_calls: [{ index: 0, id: toolCall.id, type: "function", function: { name: answer.name, arguments: "" } }] }, null)
    const args = toolCall.function.arguments
    const half = Math.floor(args.length / 2)
    chunk({ tool_calls: [{ index: 0, function: { arguments: args.slice(0, half) } }] }, null)
    chunk({ tool_calls: [{ index: 0, function: { arguments: args.slice(half) } }] }, null)
  } else {
    chunk({ content: answer.text }, null)
  }
  chunk({}, finish)
  if (body.stream_options?.include_usage === true) {
    res.write(`data: ${JSON.stringify({ id, object: "chat.completion.chunk", created, model, choices: [], usage: u })}\n\n`)
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
  const u = { input_tokens: usage.input, output_tokens: usage.output, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 }
  if (body.stream !== true) {
    return json(res, 200, { id, type: "message", role: "assistant", model, content: [block], stop_reason: stopReason, stop_sequence: null, usage: u })
  }
  sse(res)
  const event = (type, data) => res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`)
  event("message_start", { message: { id, type: "message", role: "assistant", model, content: [], stop_reason: null, stop_sequence: null, usage: { ...u, output_tokens: 1 } } })
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
  event("message_delta", { delta: { stop_reason: stopReason, stop_sequence: null }, usage: { output_tokens: usage.output } })
  event("message_stop", {})
  res.end()
}

/**
 * Start the fake upstream on 127.0.0.1 (a free port). `judgeModel` is the model id the judge
 * target sends. Resolves to `{ port, url, requests, close }`; `requests` is the live log, each
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
        const api = path.endsWith("/chat/completions") ? "openai" : path.endsWith("/messages") ? "anthropic" : undefined
        if (req.method !== "POST" || api === undefined || !isObject) {
          return json(res, 404, { error: { message: `no route ${req.method} ${req.url}`, type: "not_found", code: null } })
        }
        const answer = plan(api, body, judgeModel)
        entry.plan = { api, ...answer }
        if (api === "openai") answerOpenAi(res, body, answer, entry.seq)
        else answerAnthropic(res, body, answer, entry.seq)
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
