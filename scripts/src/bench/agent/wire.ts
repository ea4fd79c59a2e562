/**
 * A conversation in each wire format a coding agent speaks, shaped like the captured requests
 * (packages/server/test/fixtures/ for Claude Code, packages/protocol/test/fixtures/ for Codex), and
 * grown to a byte size: OpenAI Chat (tool_calls / tool messages), Anthropic Messages (a `system`
 * block list, a mid-conversation `system` message with the environment, thinking + tool_use
 * blocks, tool_result blocks) and OpenAI Responses (developer and environment items, reasoning,
 * function_call and function_call_output items).
 */
import { type AgentSource, agentSource, type Conversation, conversation, type Kind, type Turn } from "./conversation.js"

/** The wire formats of the agent bodies. */
export type Format = "chat" | "messages" | "responses"

/** What varies between two requests of the same conversation. */
export interface Envelope {
  readonly model: string
  readonly stream: boolean
}

type Json = Readonly<Record<string, unknown>>

const EPHEMERAL = { type: "ephemeral" } as const

const chatMessages = (c: Conversation): Array<Json> => {
  const out: Array<Json> = [{ role: "system", content: `${c.system}\n\n${c.environment}` }]
  for (const turn of c.turns) {
    if (turn.kind === "user") out.push({ role: "user", content: `${turn.reminder}${turn.text}` })
    else if (turn.kind === "assistant") out.push({ role: "assistant", content: turn.text })
    else {
      const { round } = turn
      out.push({
        role: "assistant",
        content: round.preface ?? null,
        tool_calls: [{
          id: `call_${round.callId}`,
          type: "function",
          function: { name: round.name, arguments: JSON.stringify(round.input) }
        }]
      }, { role: "tool", tool_call_id: `call_${round.callId}`, content: round.result })
    }
  }
  return out
}

/** OpenAI Chat Completions, as an OpenAI-compatible coding agent sends it. */
const chat = (c: Conversation, { model, stream }: Envelope): Json => ({
  model,
  messages: chatMessages(c),
  tools: c.tools.map((t) => ({
    type: "function",
    function: { name: t.name, description: t.description, parameters: t.parameters }
  })),
  tool_choice: "auto",
  max_tokens: 32000,
  stream,
  ...(stream ? { stream_options: { include_usage: true } } : {})
})

const anthropicUser = (turn: Extract<Turn, { kind: "user" }>): Json => ({
  role: "user",
  content: [{ type: "text", text: turn.reminder }, { type: "text", text: turn.text }]
})

const anthropicMessages = (c: Conversation): Array<Json> => {
  const out: Array<Json> = []
  for (const turn of c.turns) {
    if (turn.kind === "user") {
      out.push(anthropicUser(turn))
      // Claude Code sends its environment block as a system message after the first user message.
      if (out.length === 1) {
        out.push({ role: "system", content: [{ type: "text", text: c.environment, cache_control: EPHEMERAL }] })
      }
    } else if (turn.kind === "assistant") {
      out.push({ role: "assistant", content: [{ type: "text", text: turn.text }] })
    } else {
      const { round } = turn
      const toolUseId = `toolu_01${round.callId.slice(0, 22)}`
      out.push({
        role: "assistant",
        content: [
          { type: "thinking", thinking: round.thinking, signature: round.signature },
          ...(round.preface === undefined ? [] : [{ type: "text", text: round.preface }]),
          { type: "tool_use", id: toolUseId, name: round.name, input: round.input }
        ]
      }, { role: "user", content: [{ type: "tool_result", tool_use_id: toolUseId, content: round.result }] })
    }
  }
  return out
}

/** Marks the last content block of the last message for the prompt cache, as Claude Code does. */
const withCacheMark = (messages: Array<Json>): Array<Json> => {
  const last = messages[messages.length - 1]
  const content = last?.content
  if (last === undefined || !Array.isArray(content) || content.length === 0) return messages
  const blocks: Array<unknown> = [...content]
  const tail: unknown = blocks[blocks.length - 1]
  if (typeof tail === "object" && tail !== null) blocks[blocks.length - 1] = { ...tail, cache_control: EPHEMERAL }
  return [...messages.slice(0, -1), { ...last, content: blocks }]
}

/** Anthropic Messages, as Claude Code 2.1 sends it for a model id it does not know. */
const messages = (c: Conversation, { model, stream }: Envelope): Json => ({
  model,
  messages: withCacheMark(anthropicMessages(c)),
  system: [
    { type: "text", text: "x-anthropic-billing-header: cc_version=2.1.332.a89; cc_entrypoint=sdk-cli;" },
    { type: "text", text: "You are a Claude agent, built on Anthropic's Claude Agent SDK.", cache_control: EPHEMERAL },
    { type: "text", text: c.system, cache_control: EPHEMERAL }
  ],
  tools: c.tools.map((t) => ({ name: t.name, description: t.description, input_schema: t.parameters })),
  metadata: {
    user_id: JSON.stringify({ device_id: c.deviceId, account_uuid: "", session_id: c.sessionId })
  },
  max_tokens: 32000,
  thinking: { type: "adaptive", display: "omitted" },
  context_management: { edits: [{ type: "clear_thinking_20251015", keep: "all" }] },
  output_config: { effort: "high" },
  stream
})

const inputText = (role: string, text: string): Json => ({
  type: "message",
  role,
  content: [{ type: "input_text", text }]
})

const responsesInput = (c: Conversation): Array<Json> => {
  const out: Array<Json> = [
    inputText("developer", c.system),
    inputText("user", `<environment_context>\n${c.environment}\n</environment_context>`)
  ]
  for (const turn of c.turns) {
    if (turn.kind === "user") out.push(inputText("user", `${turn.reminder}${turn.text}`))
    else if (turn.kind === "assistant") {
      out.push({ type: "message", role: "assistant", content: [{ type: "output_text", text: turn.text }] })
    } else {
      const { round } = turn
      const callId = `call_${round.callId}`
      out.push({
        type: "reasoning",
        summary: [{ type: "summary_text", text: round.thinking }],
        encrypted_content: round.signature
      })
      if (round.preface !== undefined) {
        out.push({ type: "message", role: "assistant", content: [{ type: "output_text", text: round.preface }] })
      }
      out.push(
        { type: "function_call", name: round.name, arguments: JSON.stringify(round.input), call_id: callId },
        { type: "function_call_output", call_id: callId, output: round.result }
      )
    }
  }
  return out
}

/** OpenAI Responses, as Codex sends it (the system prompt as a developer item, reasoning replayed). */
const responses = (c: Conversation, { model, stream }: Envelope): Json => ({
  model,
  stream,
  input: responsesInput(c),
  tools: c.tools.map((t) => ({
    type: "function",
    name: t.name,
    description: t.description,
    strict: false,
    parameters: t.parameters
  })),
  tool_choice: "auto",
  parallel_tool_calls: true,
  reasoning: { effort: "medium", summary: "auto" },
  store: false,
  include: ["reasoning.encrypted_content"],
  prompt_cache_key: c.sessionId
})

/** The request document of `c` in `format`. */
export const encode = (format: Format, c: Conversation, envelope: Envelope): Json =>
  format === "chat" ? chat(c, envelope) : format === "messages" ? messages(c, envelope) : responses(c, envelope)

/** An agent request body of a given size, in one format, ready to be sent under any model. */
export interface AgentBody {
  readonly format: Format
  readonly kind: Kind
  readonly targetBytes: number
  /** The size of `text({ model: SIZING_MODEL, stream: false })`. */
  readonly bytes: number
  readonly toolCalls: number
  readonly conversation: Conversation
  /** The body as JSON text. */
  readonly text: (envelope: Envelope) => string
}

/** The model the sizes are measured with (a route id of the bench's length). */
export const SIZING_MODEL = "agent-chat"

const sizeOf = (format: Format, c: Conversation): number =>
  Buffer.byteLength(JSON.stringify(encode(format, c, { model: SIZING_MODEL, stream: false })))

/**
 * The conversation of `seed` in `format`, ending as `kind` says, with as many tool calls as it
 * takes to reach `targetBytes`, the last tool result sized so the body is as close to
 * `targetBytes` as it can be without exceeding it.
 */
export const agentBody = (
  { format, kind, seed = 1, source = agentSource(seed), targetBytes }: {
    readonly format: Format
    readonly kind: Kind
    readonly targetBytes: number
    readonly seed?: number
    readonly source?: AgentSource
  }
): AgentBody => {
  let rounds = 1
  while (sizeOf(format, conversation(source, rounds, kind)) < targetBytes) rounds++
  // When the last call would overshoot even with an empty result, one call fewer with a longer result.
  if (rounds > 1 && sizeOf(format, conversation(source, rounds, kind, 0)) > targetBytes) rounds--
  // The longest last result that keeps the body within the target.
  let lo = 0
  let hi = source.longResult(rounds - 1).length
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2)
    if (sizeOf(format, conversation(source, rounds, kind, mid)) <= targetBytes) lo = mid
    else hi = mid - 1
  }
  const c = conversation(source, rounds, kind, lo)
  return {
    format,
    kind,
    targetBytes,
    bytes: sizeOf(format, c),
    toolCalls: rounds,
    conversation: c,
    text: (envelope) => JSON.stringify(encode(format, c, envelope))
  }
}
