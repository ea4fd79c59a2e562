// What a forwarder's answers show before it is measured: the mock reached, the model answered, and
// whether its SSE events are relayed as they come.
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import http from "node:http"
import { header } from "../lib/processes.js"
import { chatBody, timedRequest } from "./measure.js"

/** What a forwarder's answer shows: the upstream reached, the model answered, whether SSE streams. */
export interface Reach {
  readonly bufferedStatus: number
  readonly model: string | undefined
  readonly content: string | undefined
  readonly streamStatus: number
  readonly streamContentType: string | undefined
  readonly streamEvents: number
  readonly streamDone: boolean
  /** The model of the streamed check (the mock's timing depends on it). */
  readonly streamModel: string
  /** ms to the first body chunk of the streamed check. */
  readonly streamFirstMs: number
  /** ms between the first and the last body chunk. */
  readonly streamSpreadMs: number
  /** The least spread that shows the events were relayed as they came. */
  readonly streamMinSpreadMs: number
  readonly ok: boolean
  readonly streams: boolean
}

const ChatAnswer = Schema.parseJson(Schema.Struct({
  model: Schema.optional(Schema.String),
  choices: Schema.optional(Schema.Array(Schema.Struct({
    message: Schema.optional(Schema.Struct({ content: Schema.optional(Schema.NullOr(Schema.String)) }))
  })))
}))
const decodeChatAnswer = Schema.decodeUnknownOption(ChatAnswer)

/**
 * One buffered and one streamed request through a forwarder, checked against the mock's answers.
 * The streamed one asks `streamModel`: a forwarder that holds SSE events back shows a spread between
 * its first and last body chunk well under the mock's (`minSpreadMs`).
 */
export const checkReach = async (
  port: number,
  model: string,
  headers: Readonly<Record<string, string>>,
  { minSpreadMs, streamModel }: { readonly streamModel: string; readonly minSpreadMs: number }
): Promise<Reach> => {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
  try {
    // A first round warms the process and its upstream connection; the second is the one checked.
    await timedRequest(agent, port, "/v1/chat/completions", chatBody(model), headers)
    await timedRequest(agent, port, "/v1/chat/completions", chatBody(streamModel, { stream: true }), headers)
    const b = await timedRequest(agent, port, "/v1/chat/completions", chatBody(model), headers)
    const answer = decodeChatAnswer(b.text)
    const s = await timedRequest(agent, port, "/v1/chat/completions", chatBody(streamModel, { stream: true }), headers)
    const bodyModel = Option.isSome(answer) ? answer.value.model : undefined
    const content = Option.isSome(answer) ? answer.value.choices?.[0]?.message?.content ?? undefined : undefined
    const streamContentType = header(s.headers, "content-type")
    const streamEvents = s.text.split("\n\n").filter((e) => e.startsWith("data: ")).length
    const streamDone = s.text.includes("data: [DONE]")
    const streamSpreadMs = s.total - s.first
    const ok = b.status === 200 && bodyModel === "bench-weak" && content === "Hello from the bench mock." &&
      s.status === 200 && s.text.includes("\"content\":\"") && streamDone
    return {
      bufferedStatus: b.status,
      model: bodyModel,
      content,
      streamStatus: s.status,
      streamContentType,
      streamEvents,
      streamDone,
      streamModel,
      streamFirstMs: s.first,
      streamSpreadMs,
      streamMinSpreadMs: minSpreadMs,
      ok,
      streams: ok && (streamContentType ?? "").startsWith("text/event-stream") && streamSpreadMs >= minSpreadMs
    }
  } finally {
    agent.destroy()
  }
}

/** The report line of one forwarder's reach check. */
export const reachLine = (r: Reach): string =>
  `buffered answer model ${r.model}; ${r.streamModel} streamed: ${r.streamEvents} SSE events${
    r.streamDone ? " ending [DONE]" : ""
  } (${r.streamContentType}), first chunk at ${r.streamFirstMs.toFixed(1)} ms, spread over ${
    r.streamSpreadMs.toFixed(1)
  } ms (≥ ${r.streamMinSpreadMs} when relayed as they come): ${r.streams ? "streams" : "does NOT stream"}`
