/**
 * What the agent rows send where: the request paths measured (endpoint, wire format, route, the
 * upstream format the mock answers in, whether the floor and the peer gateway can carry it) and
 * the bodies, built once per size before anything is measured.
 */
import { performance } from "node:perf_hooks"
import { AGENT_ROUTES } from "../deployment.js"
import { HOST } from "../options.js"
import { AGENT_MODEL_PREFIX } from "../shared.js"
import { agentSource } from "./conversation.js"
import { type AgentBody, agentBody, type Format } from "./wire.js"

/** The model the mock sees on every agent path (the agent targets' id). */
export const AGENT_MODEL = AGENT_MODEL_PREFIX

/** The wire format the mock answers in. */
export type Upstream = "chat" | "messages"

/** Headers Claude Code sends with every request (the version, its betas, a key). */
export const ANTHROPIC_HEADERS: Readonly<Record<string, string>> = {
  "anthropic-version": "2023-06-01",
  "anthropic-beta": "claude-code-20250219,interleaved-thinking-2025-05-14,context-management-2025-06-27",
  "x-api-key": "bench"
}

/** An endpoint of one wire format: its path, the headers its clients send, the end of its stream. */
export interface Endpoint {
  readonly endpoint: string
  readonly headers: Readonly<Record<string, string>>
  /** Text only a complete stream of this format contains. */
  readonly done: string
}

/** The endpoint of each format, as a coding agent calls it. */
export const ENDPOINTS: Readonly<Record<Format, Endpoint>> = {
  chat: { endpoint: "/v1/chat/completions", headers: {}, done: "data: [DONE]" },
  messages: { endpoint: "/v1/messages?beta=true", headers: ANTHROPIC_HEADERS, done: "event: message_stop" },
  responses: { endpoint: "/v1/responses", headers: {}, done: "event: response.completed" }
}

/** The peer gateway's provider for a path it can carry. */
export type PeerProvider = "openai" | "anthropic"

/** One request path through the server. */
export interface AgentPath {
  readonly key: "chat" | "messages" | "messages-chat" | "responses-chat"
  /** How the rows name it. */
  readonly label: string
  /** The caller's wire format (the body's). */
  readonly format: Format
  readonly route: string
  /** The route of the same path whose target the mock holds (the in-flight memory row). */
  readonly holdRoute: string
  readonly upstream: Upstream
  /** The floor forwards the caller's bytes with only `model` rewritten: same format in and out only. */
  readonly floor: boolean
  /** The peer gateway's provider for this path, or why it has no row. */
  readonly peer: PeerProvider | { readonly skipped: string }
}

/** The four request paths of the agent rows. */
export const AGENT_PATHS: ReadonlyArray<AgentPath> = [
  {
    key: "chat",
    label: "/v1/chat/completions → chat (passthrough)",
    format: "chat",
    route: AGENT_ROUTES.chat,
    holdRoute: AGENT_ROUTES.hold,
    upstream: "chat",
    floor: true,
    peer: "openai"
  },
  {
    key: "messages",
    label: "/v1/messages → anthropic_messages (native)",
    format: "messages",
    route: AGENT_ROUTES.anthropic,
    holdRoute: AGENT_ROUTES.holdAnthropic,
    upstream: "messages",
    floor: true,
    peer: "anthropic"
  },
  {
    key: "messages-chat",
    label: "/v1/messages → chat (translated)",
    format: "messages",
    route: AGENT_ROUTES.chat,
    holdRoute: AGENT_ROUTES.hold,
    upstream: "chat",
    floor: false,
    peer: { skipped: "its openai provider refuses /v1/messages (\"messages is not supported by openai\")" }
  },
  {
    key: "responses-chat",
    label: "/v1/responses → chat (translated)",
    format: "responses",
    route: AGENT_ROUTES.chat,
    holdRoute: AGENT_ROUTES.hold,
    upstream: "chat",
    floor: false,
    peer: {
      skipped:
        "it does not translate Responses to Chat (its openai provider forwards them to the upstream's /responses)"
    }
  }
]

/** What the peer gateway needs to reach the mock as `provider`. */
export const peerHeaders = (provider: PeerProvider, mockPort: number): Readonly<Record<string, string>> => ({
  "x-portkey-provider": provider,
  "x-portkey-custom-host": `http://${HOST}:${mockPort}/v1`,
  ...(provider === "openai" ? { authorization: "Bearer bench" } : ANTHROPIC_HEADERS)
})

/** The agent bodies of one size: a continuation in each format, and a Chat user turn (the judge rows). */
export interface SizedBodies {
  readonly kb: number
  readonly continuation: Readonly<Record<Format, AgentBody>>
  readonly userTurn: AgentBody
}

/** The bodies of every size (seed 1), built before any row and described on one line each. */
export const agentBodies = (sizesKb: ReadonlyArray<number>): ReadonlyArray<SizedBodies> => {
  const started = performance.now()
  const source = agentSource(1)
  const sized = sizesKb.map((kb) => {
    const targetBytes = kb * 1024
    const body = (format: Format) => agentBody({ format, kind: "continuation", targetBytes, source })
    return {
      kb,
      continuation: { chat: body("chat"), messages: body("messages"), responses: body("responses") },
      userTurn: agentBody({ format: "chat", kind: "user-turn", targetBytes, source })
    }
  })
  for (const { continuation, kb, userTurn } of sized) {
    const line = [continuation.chat, continuation.messages, continuation.responses, userTurn].map((b) =>
      `${b.format} ${b.kind} ${b.bytes.toLocaleString("en-US")} B (${b.toolCalls} tool calls)`
    )
    console.log(`agent bodies, ${kb} KB: ${line.join("; ")}`)
  }
  console.log(`agent bodies built in ${((performance.now() - started) / 1000).toFixed(1)} s`)
  return sized
}
