// Before anything is measured: every route answers as configured (status 200, the expected
// evidence source).
import type http from "node:http"
import { header } from "../lib/processes.js"
import { chatBody, timedRequest } from "./measure.js"

/** One route's sanity answer. */
export interface Sanity {
  readonly model: string
  readonly status: number
  readonly selected: string | undefined
  readonly source: string | undefined
  readonly reason: string | undefined
  readonly ms: number
}

/** One chat request on route `model`; throws unless it is a 200 with evidence source `expectSource`. */
export const checkRoute = async (
  agent: http.Agent,
  port: number,
  model: string,
  expectSource: string,
  headers: Readonly<Record<string, string>> = {},
  timeoutMs = 10_000
): Promise<Sanity> => {
  const r = await timedRequest(agent, port, "/v1/chat/completions", chatBody(model), headers, timeoutMs)
  const source = header(r.headers, "x-switchyard-evidence-source")
  const reason = header(r.headers, "x-switchyard-evidence-reason")
  const ok = r.status === 200 && source === expectSource
  if (!ok) {
    throw new Error(
      `sanity check ${model}: HTTP ${r.status}, evidence ${source}/${reason} (expected ${expectSource}): ${
        r.text.slice(0, 300)
      }`
    )
  }
  return {
    model,
    status: r.status,
    selected: header(r.headers, "x-switchyard-selected-model"),
    source,
    reason,
    ms: r.total
  }
}

/** Every route of the bench deployment, checked in turn on one keep-alive socket. */
export const checkEveryRoute = async (agent: http.Agent, port: number): Promise<ReadonlyArray<Sanity>> => [
  await checkRoute(agent, port, "pass", "passthrough"),
  await checkRoute(agent, port, "cap", "llm-classifier"),
  await checkRoute(agent, port, "cap-dead", "fail-open"),
  await checkRoute(agent, port, "sess", "llm-classifier", { "x-switchyard-session-id": "sanity" }),
  await checkRoute(agent, port, "sess", "affinity", { "x-switchyard-session-id": "sanity" })
]
