// A scripted upstream for the end-to-end runs (plain node:http, 127.0.0.1 only). It speaks the
// three wire formats the server calls (OpenAI Chat, Anthropic Messages, OpenAI Responses),
// buffered and streamed (./answers.ts), answers as ./plan.ts decides, and logs every request it
// receives (method, path with query, headers, parsed body, the plan) so the run can assert on them.
//
//   POST /v1/chat/completions (also /chat/completions)      OpenAI Chat Completions
//   POST /v1/messages (also /messages, any query string)     Anthropic Messages
//   POST /v1/responses (also /responses)                     OpenAI Responses
//   POST /v1/messages/count_tokens                           {"input_tokens": body bytes / 4}
//   GET  /v1/models                                          an empty list
//   anything else                                            404
import http from "node:http"
import { isObject, parseJson } from "../json.js"
import { answerAnthropic, answerOpenAi, answerResponses, json } from "./answers.js"
import { type Answer, type Api, plan } from "./plan.js"

/** One request the upstream received. */
export interface RequestEntry {
  readonly seq: number
  readonly at: number
  readonly method: string
  /** With the query string. */
  readonly path: string
  readonly headers: http.IncomingHttpHeaders
  /** The parsed JSON body; the raw text when it is not JSON; `undefined` when empty. */
  readonly body: unknown
  /** What it was answered, for chat requests. */
  plan?: Answer & { readonly api: Api }
}

export interface FakeUpstream {
  readonly port: number
  /** `http://127.0.0.1:PORT` (no `/v1`). */
  readonly url: string
  /** The live log, in arrival order. */
  readonly requests: ReadonlyArray<RequestEntry>
  readonly close: () => Promise<void>
}

const apiOf = (path: string): Api | undefined =>
  path.endsWith("/chat/completions")
    ? "openai"
    : path.endsWith("/messages")
    ? "anthropic"
    : path.endsWith("/responses")
    ? "responses"
    : undefined

/** Starts the upstream on a free loopback port; `judgeModels` are the model ids the judge targets send. */
export const startFakeUpstream = ({ judgeModels }: { readonly judgeModels: ReadonlyArray<string> }) =>
  new Promise<FakeUpstream>((resolve, reject) => {
    const requests: Array<RequestEntry> = []
    let seq = 0
    const server = http.createServer((req, res) => {
      const parts: Array<Buffer> = []
      req.on("data", (part: Buffer) => parts.push(part))
      req.on("end", () => {
        const text = Buffer.concat(parts).toString("utf8")
        const parsed = text === "" ? undefined : parseJson(text)
        const body = parsed === undefined && text !== "" ? text : parsed
        const method = req.method ?? ""
        const url = req.url ?? ""
        const entry: RequestEntry = { seq: ++seq, at: Date.now(), method, path: url, headers: req.headers, body }
        requests.push(entry)
        const path = url.split("?")[0] ?? ""
        if (method === "GET" && path.endsWith("/models")) return json(res, 200, { object: "list", data: [] })
        if (method === "POST" && path.endsWith("/messages/count_tokens")) {
          return json(res, 200, { input_tokens: Math.ceil(text.length / 4) })
        }
        const api = apiOf(path)
        if (method !== "POST" || api === undefined || !isObject(body)) {
          return json(res, 404, { error: { message: `no route ${method} ${url}`, type: "not_found", code: null } })
        }
        const answer = plan(api, body, judgeModels)
        entry.plan = { api, ...answer }
        if (api === "openai") answerOpenAi(res, body, answer, entry.seq)
        else if (api === "anthropic") answerAnthropic(res, body, answer, entry.seq)
        else answerResponses(res, body, answer, entry.seq)
      })
    })
    listenOnLoopback(server).then((listening) => resolve({ ...listening, requests }), reject)
  })

/** A server of the run listening on a free loopback port: where, and how to close it (its connections too). */
export const listenOnLoopback = (server: http.Server) =>
  new Promise<{ readonly port: number; readonly url: string; readonly close: () => Promise<void> }>(
    (resolve, reject) => {
      server.once("error", reject)
      server.listen(0, "127.0.0.1", () => {
        const address = server.address()
        const port = typeof address === "object" && address !== null ? address.port : 0
        resolve({
          port,
          url: `http://127.0.0.1:${port}`,
          close: () =>
            new Promise<void>((done) => {
              server.closeAllConnections()
              server.close(() => done())
            })
        })
      })
    }
  )
