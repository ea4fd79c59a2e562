// The fault-injecting mock upstream of `npm run soak` (scripts/soak.mjs). Plain node:http,
// keep-alive, 127.0.0.1 only; run as a forked child and controlled over IPC (it exits when the
// parent goes away). Two listeners, so the judge can be "refused" while the answer models serve:
//
//   judge listener   POST /v1/chat/completions, any model: the judge. Its mode is switched at run
//                    time with {type: "judge", mode}:
//                      up       a completion whose content is a valid capability verdict
//                               (p_solve 0.9 or 0.3 at random, so sessions land on both tiers)
//                      stalled  never answers (the socket is dropped when the caller closes it,
//                               or after 30 s at the latest)
//                      refused  the listener is closed and its connections destroyed; switching to
//                               another mode listens again on the same port
//                      5xx      500 or 503 with an OpenAI error envelope
//                      garbage  200 with a body that is not JSON, or a completion whose content is
//                               not a verdict (alternating)
//   answer listener  POST /v1/chat/completions, any model: a buffered completion, or SSE for
//                    `stream: true` (role chunk, three content chunks, stop chunk, a usage chunk
//                    when `stream_options.include_usage`, `data: [DONE]`, 2 ms apart). A fraction
//                    of requests ({type: "answer-faults", rate}) get 429 (half with
//                    `retry-after: 0`), 500 or 503 instead, before any byte of an answer.
//
// IPC: the child sends {type: "ready", judgePort, answerPort}; every control message carrying a
// `seq` is acknowledged with {type: "ack", seq, ...}; {type: "stats", seq} answers the counters.
import http from "node:http"

const VERDICT = (p) => JSON.stringify({ crux: "soak", primary_rule: "SUP-1", capability_boundary: "supported", p_solve: p })
const STREAM_GAP_MS = 2
const STALL_BACKSTOP_MS = 30_000

const stats = {
  judge: { up: 0, stalled: 0, "5xx": 0, garbage: 0, refusedSwitches: 0 },
  answer: { ok: 0, stream: 0, 429: 0, 500: 0, 503: 0 }
}
let judgeMode = "up"
let answerFaultRate = 0
let garbageFlip = 0

const completion = (model, content) =>
  JSON.stringify({
    id: `chatcmpl-soak-${Math.floor(Math.random() * 1e9)}`,
    object: "chat.completion",
    created: 1700000000,
    model,
    choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: "stop" }],
    usage: { prompt_tokens: 40, completion_tokens: 9, total_tokens: 49 }
  })

const sendJson = (res, status, body, headers = {}) => {
  const buffer = Buffer.from(body)
  res.writeHead(status, { "content-type": "application/json", "content-length": buffer.length, ...headers })
  res.end(buffer)
}

const envelope = (message, type) => JSON.stringify({ error: { message, type, code: null } })

const chunk = (model, delta, finish) =>
  `data: ${JSON.stringify({
    id: "chatcmpl-soak-stream",
    object: "chat.completion.chunk",
    created: 1700000000,
    model,
    choices: [{ index: 0, delta, finish_reason: finish }]
  })}\n\n`

const usageChunk = (model) =>
  `data: ${JSON.stringify({
    id: "chatcmpl-soak-stream",
    object: "chat.completion.chunk",
    created: 1700000000,
    model,
    choices: [],
    usage: { prompt_tokens: 40, completion_tokens: 9, total_tokens: 49 }
  })}\n\n`

/** Read the JSON body, then call `handle(parsed)`; a body that is not JSON is a 400. */
const withBody = (req, res, handle) => {
  const parts = []
  req.on("data", (part) => parts.push(part))
  req.on("end", () => {
    let parsed
    try {
      parsed = JSON.parse(Buffer.concat(parts).toString("utf8"))
    } catch {
      sendJson(res, 400, envelope("bad json", "invalid_request_error"))
      return
    }
    handle(parsed)
  })
}

const stalled = new Set()

const judgeHandler = (req, res) => {
  if (req.method !== "POST" || !req.url.startsWith("/v1/chat/completions")) {
    sendJson(res, 404, envelope("not found", "invalid_request_error"))
    return
  }
  withBody(req, res, (body) => {
    const model = typeof body.model === "string" ? body.model : "judge"
    switch (judgeMode) {
      case "stalled": {
        stats.judge.stalled++
        const socket = req.socket
        const backstop = setTimeout(() => socket.destroy(), STALL_BACKSTOP_MS)
        stalled.add(socket)
        socket.once("close", () => {
          clearTimeout(backstop)
          stalled.delete(socket)
        })
        return
      }
      case "5xx": {
        stats.judge["5xx"]++
        const status = Math.random() < 0.5 ? 500 : 503
        sendJson(res, status, envelope(`judge overloaded (${status})`, "server_error"))
        return
      }
      case "garbage":
        stats.judge.garbage++
        if (garbageFlip++ % 2 === 0) sendJson(res, 200, "<html><body>502 Bad Gateway</body></html>")
        else sendJson(res, 200, completion(model, "I think the small model can probably do this one."))
        return
      default:
        stats.judge.up++
        sendJson(res, 200, completion(model, VERDICT(Math.random() < 0.5 ? 0.9 : 0.3)))
    }
  })
}

const answerHandler = (req, res) => {
  if (req.method !== "POST" || !req.url.startsWith("/v1/chat/completions")) {
    sendJson(res, 404, envelope("not found", "invalid_request_error"))
    return
  }
  withBody(req, res, (body) => {
    const model = typeof body.model === "string" ? body.model : "answer"
    if (Math.random() < answerFaultRate) {
      const roll = Math.random()
      if (roll < 1 / 3) {
        stats.answer[429]++
        sendJson(res, 429, envelope("rate limited", "rate_limit_error"), Math.random() < 0.5 ? { "retry-after": "0" } : {})
      } else {
        const status = roll < 2 / 3 ? 500 : 503
        stats.answer[status]++
        sendJson(res, status, envelope(`answer upstream failed (${status})`, "server_error"))
      }
      return
    }
    if (body.stream === true) {
      stats.answer.stream++
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" })
      const events = [
        chunk(model, { role: "assistant", content: "" }, null),
        chunk(model, { content: "Here is " }, null),
        chunk(model, { content: "the soak " }, null),
        chunk(model, { content: "answer." }, null),
        chunk(model, {}, "stop"),
        ...(body.stream_options?.include_usage === true ? [usageChunk(model)] : []),
        "data: [DONE]\n\n"
      ]
      let i = 0
      const next = () => {
        if (res.destroyed) return
        res.write(events[i++])
        if (i < events.length) setTimeout(next, STREAM_GAP_MS)
        else res.end()
      }
      next()
      return
    }
    stats.answer.ok++
    sendJson(res, 200, completion(model, "Here is the soak answer."))
  })
}

const options = { keepAliveTimeout: 60_000, noDelay: true }
const answerServer = http.createServer(options, answerHandler)
let judgeServer = http.createServer(options, judgeHandler)
let judgePort = 0
let judgeListening = false

const listen = (server, port) =>
  new Promise((resolve, reject) => {
    server.once("error", reject)
    server.listen(port, "127.0.0.1", () => {
      server.off("error", reject)
      resolve(server.address().port)
    })
  })

const closeJudge = () =>
  new Promise((resolve) => {
    if (!judgeListening) return resolve()
    judgeListening = false
    for (const socket of stalled) socket.destroy()
    judgeServer.close(() => resolve())
    judgeServer.closeAllConnections()
  })

/** Listen again on the judge's port (bounded retries: the port was just released). */
const openJudge = async () => {
  if (judgeListening) return
  judgeServer = http.createServer(options, judgeHandler)
  for (let attempt = 0; attempt < 50; attempt++) {
    try {
      await listen(judgeServer, judgePort)
      judgeListening = true
      return
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
  }
  throw new Error(`judge listener could not listen again on port ${judgePort}`)
}

const setJudgeMode = async (mode) => {
  if (!["up", "stalled", "refused", "5xx", "garbage"].includes(mode)) throw new Error(`unknown judge mode ${mode}`)
  if (mode === "refused") {
    stats.judge.refusedSwitches++
    judgeMode = mode
    await closeJudge()
    return
  }
  if (judgeMode === "stalled") for (const socket of stalled) socket.destroy()
  judgeMode = mode
  await openJudge()
}

process.on("message", (message) => {
  const reply = (extra) => message.seq !== undefined && process.send?.({ type: "ack", seq: message.seq, ...extra })
  if (message.type === "judge") {
    setJudgeMode(message.mode).then(
      () => reply({ mode: judgeMode }),
      (error) => reply({ error: String(error) })
    )
  } else if (message.type === "answer-faults") {
    answerFaultRate = Math.min(1, Math.max(0, Number(message.rate) || 0))
    reply({ rate: answerFaultRate })
  } else if (message.type === "stats") {
    reply({ stats })
  }
})

const stop = () => {
  for (const socket of stalled) socket.destroy()
  answerServer.closeAllConnections?.()
  judgeServer.closeAllConnections?.()
  process.exit(0)
}
process.on("disconnect", stop)
process.on("SIGTERM", stop)
process.on("SIGINT", stop)

const main = async () => {
  const answerPort = await listen(answerServer, 0)
  judgePort = await listen(judgeServer, 0)
  judgeListening = true
  if (process.send) process.send({ type: "ready", judgePort, answerPort })
  else console.log(`judge on http://127.0.0.1:${judgePort}, answers on http://127.0.0.1:${answerPort}`)
}
main().catch((error) => {
  console.error(`soak mock failed: ${error}`)
  process.exit(1)
})
