// The soak's traffic: bounded-concurrency workers, each driving agent-like sessions
// (x-switchyard-session-id, user turns and tool continuations, buffered and streamed) until the
// state's `stopAt`, every answer validated and counted.
import { performance } from "node:perf_hooks"
import type { Client } from "./client.js"
import { type Route, SESSION_TURNS_MAX } from "./options.js"
import { record, type SoakState } from "./results.js"
import { validate } from "./validate.js"

const TOOLS = [{
  type: "function",
  function: {
    name: "read_file",
    description: "Read a file",
    parameters: { type: "object", properties: { path: { type: "string" } } }
  }
}]

/** A chat message as sent (built here, never read back). */
type Message = Readonly<Record<string, unknown>>

interface Session {
  readonly id: string
  readonly route: Route
  turns: number
  readonly messages: Array<Message>
}

const newSession = (worker: number, n: number): Session => ({
  id: `soak-${worker}-${n}`,
  route: Math.random() < 0.5 ? "soak-fo" : "soak-err",
  turns: 0,
  messages: [{ role: "system", content: "You are a coding agent." }]
})

/** The messages of the next turn: a new user message, or a tool call and its result. */
const nextTurn = (session: Session, worker: number, sessions: number): Array<Message> => {
  if (session.turns === 0 || Math.random() < 0.5) {
    return [{
      role: "user",
      content: `Task ${session.turns}: change function f${Math.floor(Math.random() * 1000)} to handle empty input.`
    }]
  }
  const callId = `call_${worker}_${sessions}_${session.turns}`
  return [
    {
      role: "assistant",
      content: null,
      tool_calls: [{
        id: callId,
        type: "function",
        function: { name: "read_file", arguments: "{\"path\":\"src/f.ts\"}" }
      }]
    },
    { role: "tool", tool_call_id: callId, content: "export const f = (xs: string[]) => xs[0]" }
  ]
}

/** One worker: sessions of 1 to SESSION_TURNS_MAX turns, one request at a time, until `state.stopAt`. */
export const worker = async (index: number, client: Client, state: SoakState): Promise<void> => {
  let sessions = 0
  let session = newSession(index, sessions++)
  while (performance.now() < state.stopAt) {
    if (session.turns >= 1 + Math.floor(Math.random() * SESSION_TURNS_MAX)) session = newSession(index, sessions++)
    const added = nextTurn(session, index, sessions)
    const streaming = Math.random() < 0.5
    const body = JSON.stringify({
      model: session.route,
      messages: [...session.messages, ...added],
      tools: TOOLS,
      ...(streaming ? { stream: true } : {})
    })
    const phase = state.phase
    const mode = state.mode
    const response = await client.send("POST", "/v1/chat/completions", body, { "x-switchyard-session-id": session.id })
    const outcome = validate(response, { route: session.route, streaming })
    record(state.results, { route: session.route, streaming, phase, mode, response, outcome })
    if (session.turns === 0) state.results.sessions[session.route]++
    session.turns++
    if (outcome.kind === "answer") {
      session.messages.push(...added, { role: "assistant", content: "Here is the soak answer." })
    }
  }
}
