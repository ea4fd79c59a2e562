// A minimal, fast OpenAI-compatible and Anthropic-compatible upstream for `npm run bench` (plain
// node:http, keep-alive, 127.0.0.1 only): the baseline of the measurement, so deliberately cheap.
// Run as a child of scripts/dist/bench.js (fork, IPC): it reports its port over IPC and exits when
// the parent goes away.
//
//   POST /v1/chat/completions
//     model = JUDGE_MODEL         -> a completion whose content is a valid capability verdict
//     model = SLOW_JUDGE_MODEL    -> the judge's verdict after SLOW_JUDGE_MS (the hedge row)
//     model = STALL_MODEL         -> never answers (the socket is dropped when the caller closes it,
//                                    or after 60 s at the latest)
//     any other model             -> a buffered completion, or SSE (`stream: true`): a role chunk,
//                                    three content chunks, a finish chunk and `data: [DONE]`,
//                                    written STREAM_GAP_MS apart
//     model = bench-drip-<N>x<MS>  -> SSE (`stream: true`): N content chunks MS ms apart (the first
//                                    right away, the last with finish_reason), then `data: [DONE]`
//                                    (the many-streams row: long-held streams)
//   POST /v1/messages (any query string)
//     any model                   -> a buffered message, or the Messages SSE sequence (message_start,
//                                    content_block_start, three text deltas, content_block_stop,
//                                    message_delta, message_stop), written STREAM_GAP_MS apart
//   either, model = HOLD_MODEL     -> held unanswered until POST /_bench/release, then answered as above
//                                    (the in-flight memory row)
//   GET /_bench/last?model=ID     -> the last request body received for that model (verbatim): the
//                                    judge's, and those of the agent rows' models (bench-agent…), so the
//                                    bench can replay what the server sent and check what it forwarded
//   GET /_bench/held              -> {"held": N}, the requests held now
//   POST /_bench/release          -> answers every held request
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as http from "node:http"
import type { Socket } from "node:net"
import {
  AGENT_MODEL_PREFIX,
  HOLD_MODEL,
  JUDGE_MODEL,
  type Ready,
  SLOW_JUDGE_MODEL,
  SLOW_JUDGE_MS,
  STALL_MODEL
} from "./shared.js"

/** What the mock reads from a request body. */
const Peek = Schema.Struct({ model: Schema.optional(Schema.Unknown), stream: Schema.optional(Schema.Unknown) })
const decodePeek = Schema.decodeUnknownOption(Schema.parseJson(Peek))

const STREAM_GAP_MS = Number(process.env.BENCH_STREAM_GAP_MS ?? "2")
const VERDICT = JSON.stringify({ crux: "x", primary_rule: "SUP-1", capability_boundary: "supported", p_solve: 0.9 })

const completion = (model: string, content: string): string =>
  JSON.stringify({
    id: "chatcmpl-bench",
    object: "chat.completion",
    created: 1700000000,
    model,
    choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: "stop" }],
    usage: { prompt_tokens: 12, completion_tokens: 7, total_tokens: 19 }
  })

const buffered = new Map<string, Buffer>() // model -> the whole response body
const bufferedFor = (model: string): Buffer => {
  let body = buffered.get(model)
  if (body === undefined) {
    body = Buffer.from(
      completion(model, model === JUDGE_MODEL || model === SLOW_JUDGE_MODEL ? VERDICT : "Hello from the bench mock.")
    )
    if (buffered.size < 64) buffered.set(model, body)
  }
  return body
}

const chunk = (model: string, delta: Record<string, string>, finish: string | null): string =>
  `data: ${
    JSON.stringify({
      id: "chatcmpl-bench",
      object: "chat.completion.chunk",
      created: 1700000000,
      model,
      choices: [{ index: 0, delta, finish_reason: finish }]
    })
  }\n\n`

const streamEvents = (model: string): ReadonlyArray<string> => [
  chunk(model, { role: "assistant", content: "" }, null),
  chunk(model, { content: "Hello " }, null),
  chunk(model, { content: "from the " }, null),
  chunk(model, { content: "bench mock." }, null),
  chunk(model, {}, "stop"),
  "data: [DONE]\n\n"
]

/** Writes `events` STREAM_GAP_MS apart after the SSE headers, then ends the response. */
const writeSpaced = (res: http.ServerResponse, events: ReadonlyArray<string>): void => {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" })
  let i = 0
  const next = (): void => {
    if (res.destroyed) return
    const event = events[i++]
    if (event !== undefined) res.write(event)
    if (i < events.length) setTimeout(next, STREAM_GAP_MS)
    else res.end()
  }
  next()
}

const MESSAGE_USAGE = { input_tokens: 12, output_tokens: 7, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 }

const anthropicBuffered = (model: string): Buffer =>
  Buffer.from(JSON.stringify({
    id: "msg_bench",
    type: "message",
    role: "assistant",
    model,
    content: [{ type: "text", text: "Hello from the bench mock." }],
    stop_reason: "end_turn",
    stop_sequence: null,
    usage: MESSAGE_USAGE
  }))

const anthropicEvent = (type: string, data: Readonly<Record<string, unknown>>): string =>
  `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`

const anthropicEvents = (model: string): ReadonlyArray<string> => [
  anthropicEvent("message_start", {
    message: {
      id: "msg_bench",
      type: "message",
      role: "assistant",
      model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { ...MESSAGE_USAGE, output_tokens: 1 }
    }
  }),
  anthropicEvent("content_block_start", { index: 0, content_block: { type: "text", text: "" } }),
  anthropicEvent("content_block_delta", { index: 0, delta: { type: "text_delta", text: "Hello " } }),
  anthropicEvent("content_block_delta", { index: 0, delta: { type: "text_delta", text: "from the " } }),
  anthropicEvent("content_block_delta", { index: 0, delta: { type: "text_delta", text: "bench mock." } }),
  anthropicEvent("content_block_stop", { index: 0 }),
  anthropicEvent("message_delta", {
    delta: { stop_reason: "end_turn", stop_sequence: null },
    usage: { output_tokens: 7 }
  }),
  anthropicEvent("message_stop", {})
]

type Api = "chat" | "messages"

/** The answer to one request of `api` on `model`, buffered or streamed. */
const answer = (res: http.ServerResponse, api: Api, model: string, stream: boolean): void => {
  if (stream) return writeSpaced(res, api === "chat" ? streamEvents(model) : anthropicEvents(model))
  const body = api === "chat" ? bufferedFor(model) : anthropicBuffered(model)
  res.writeHead(200, { "content-type": "application/json", "content-length": body.length })
  res.end(body)
}

/** Requests held unanswered (HOLD_MODEL) until the bench releases them. */
const held: Array<() => void> = []

const DRIP = /^bench-drip-(\d{1,4})x(\d{1,5})$/
const drip = (res: http.ServerResponse, model: string, n: number, gapMs: number): void => {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" })
  let i = 0
  const next = (): void => {
    if (res.destroyed) return
    i++
    res.write(
      chunk(model, i === 1 ? { role: "assistant", content: "tok " } : { content: "tok " }, i >= n ? "stop" : null)
    )
    if (i < n) setTimeout(next, gapMs)
    else res.end("data: [DONE]\n\n")
  }
  next()
}

const lastBody = new Map<string, string>() // model -> request body
const stalled = new Set<Socket>()

const server = http.createServer({ keepAliveTimeout: 120_000, noDelay: true }, (req, res) => {
  const url = req.url ?? "/"
  if (req.method === "GET" && url.startsWith("/_bench/last")) {
    const model = new URL(url, "http://x").searchParams.get("model") ?? ""
    const body = lastBody.get(model)
    res.writeHead(body === undefined ? 404 : 200, { "content-type": "application/json" })
    res.end(body ?? "{}")
    return
  }
  if (req.method === "GET" && url === "/_bench/held") {
    res.writeHead(200, { "content-type": "application/json" })
    res.end(JSON.stringify({ held: held.length }))
    return
  }
  if (req.method === "POST" && url === "/_bench/release") {
    const released = held.splice(0, held.length)
    for (const release of released) release()
    res.writeHead(200, { "content-type": "application/json" })
    res.end(JSON.stringify({ released: released.length }))
    return
  }
  const api: Api | undefined = url.startsWith("/v1/chat/completions")
    ? "chat"
    : url.startsWith("/v1/messages")
    ? "messages"
    : undefined
  if (req.method !== "POST" || api === undefined) {
    res.writeHead(404, { "content-type": "application/json" })
    res.end("{\"error\":{\"message\":\"not found\",\"type\":\"not_found\",\"code\":\"not_found\"}}")
    return
  }
  const parts: Array<Buffer> = []
  req.on("data", (part: Buffer) => parts.push(part))
  req.on("end", () => {
    const text = Buffer.concat(parts).toString("utf8")
    const parsed = decodePeek(text)
    if (Option.isNone(parsed)) {
      res.writeHead(400, { "content-type": "application/json" })
      res.end(
        "{\"error\":{\"message\":\"bad json\",\"type\":\"invalid_request_error\",\"code\":\"invalid_request_error\"}}"
      )
      return
    }
    const model = typeof parsed.value.model === "string" ? parsed.value.model : "unknown"
    if (model === JUDGE_MODEL || model === STALL_MODEL || model.startsWith(AGENT_MODEL_PREFIX)) {
      lastBody.set(model, text)
    }
    if (model === STALL_MODEL) {
      // Never answer; forget the request when the caller gives up (bounded by a 60 s backstop).
      const socket = req.socket
      const backstop = setTimeout(() => socket.destroy(), 60_000)
      stalled.add(socket)
      socket.once("close", () => {
        clearTimeout(backstop)
        stalled.delete(socket)
      })
      return
    }
    const stream = parsed.value.stream === true
    if (model === HOLD_MODEL) return void held.push(() => answer(res, api, model, stream))
    if (model === SLOW_JUDGE_MODEL) {
      const timer = setTimeout(() => answer(res, api, model, stream), SLOW_JUDGE_MS)
      req.socket.once("close", () => clearTimeout(timer))
      return
    }
    const dripping = stream && api === "chat" ? DRIP.exec(model) : null
    if (dripping !== null) return drip(res, model, Number(dripping[1]), Number(dripping[2]))
    answer(res, api, model, stream)
  })
})

server.listen(0, "127.0.0.1", () => {
  const address = server.address()
  const port = typeof address === "object" && address !== null ? address.port : 0
  const ready: typeof Ready.Type = { port }
  if (process.send) process.send(ready)
  else console.log(`mock listening on http://127.0.0.1:${port}`)
})

const stop = (): void => {
  for (const socket of stalled) socket.destroy()
  server.closeAllConnections()
  server.close()
  process.exit(0)
}
process.on("disconnect", stop)
process.on("SIGTERM", stop)
process.on("SIGINT", stop)
