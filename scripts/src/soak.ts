// `npm run soak`: the soak test of the switchyard server.
//
// Starts the testkit's fault-injecting upstream (@switchyard-ts/testkit/FakeUpstream, in this
// process: a judge instance and an answer instance, see ./soak/upstreams.ts) and the real server from
// its CLI (`node packages/server/bin/switchyard.js --config <generated toml> --port 0`), both on
// 127.0.0.1. Two capability routes ask the same judge (timeout_ms 500, max_retries 0): `soak-fo`
// (judge_failure = "fail_open", judge client without a breaker, so every judged request meets the
// fault) and `soak-err` (judge_failure = "error", judge client with a circuit breaker), each with
// its own judge target id, so the fail-open counter of `soak-fo` is a series of its own. The
// answer client (weak and strong models) has max_retries 2.
//
// Bounded-concurrency workers drive agent-like sessions (x-switchyard-session-id, user turns and
// tool continuations, buffered and streamed) while a fault schedule flips the judge every
// --phase-seconds between up, stalled, refused, 5xx and garbage, and the answer upstream answers
// 429/500/503 to a fraction of calls. Every response is validated: a 2xx well-formed completion or
// SSE stream ending in `data: [DONE]` (or the documented mid-stream error event), or a documented
// error envelope (README, "Errors"); a fail_open request that fails because of the judge, a
// transport error or a timeout is a violation. The run exits 1 when there is any violation.
//
//   node scripts/dist/soak.js [--minutes 2] [--concurrency 16] [--phase-seconds 10]
//                             [--answer-fault-rate 0.1] [--judge-timeout-ms 500]
//                             [--routing-log-file PATH] [--write-config PATH]
//
// --routing-log-file PATH is passed to the server (its JSONL routing log; PATH must not exist yet,
// so the file holds this run only; its folder is created). --write-config PATH writes the generated
// deployment TOML there too (it is otherwise deleted with the run's temporary folder), so that
// `switchyard replay --log PATH --config ...` can be run against it and against a variant of it
// (scripts/src/replay-example.ts does both).
//
// Reports requests, outcomes by kind, violations, the server's RSS (VmRSS from /proc) at start,
// after warm-up (one full cycle of the fault schedule, at most half the run; levels are medians of
// the 2 s samples over 10 s windows), in the middle and at the end (growth > 20% after warm-up is
// flagged; the least-squares slope after warm-up is reported too), and the
// fail-open counter scraped from /metrics against the fault schedule, phase by phase. Writes
// bench-results/soak-<timestamp>.json. Needs `npm run build` first (it compiles this script too).
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { type ChildProcess, spawn } from "node:child_process"
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import http from "node:http"
import os from "node:os"
import path from "node:path"
import { performance } from "node:perf_hooks"
import { fileURLToPath } from "node:url"
import { parseArgs } from "node:util"
import { header, killAll, pidOf, requireBuild, sleep, track, withTimeout } from "./lib/processes.js"
import { type JudgeMode, MODES, startUpstreams } from "./soak/upstreams.js"

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..")
const BIN = path.join(ROOT, "packages/server/bin/switchyard.js")
const HOST = "127.0.0.1"
const JUDGE_FO = "soak-judge-fo"
const JUDGE_ERR = "soak-judge-err"
const WEAK = "soak-weak"
const STRONG = "soak-strong"
const REQUEST_TIMEOUT_MS = 30_000
const SESSION_TURNS_MAX = 8

const { values: args } = parseArgs({
  options: {
    minutes: { type: "string", default: "2" },
    concurrency: { type: "string", default: "16" },
    "phase-seconds": { type: "string", default: "10" },
    "answer-fault-rate": { type: "string", default: "0.1" },
    "judge-timeout-ms": { type: "string", default: "500" },
    "routing-log-file": { type: "string" },
    "write-config": { type: "string" }
  },
  strict: true
})
const number = (
  name: "minutes" | "concurrency" | "phase-seconds" | "answer-fault-rate" | "judge-timeout-ms",
  min: number,
  max: number
): number => {
  const value = Number(args[name])
  if (!Number.isFinite(value) || value < min || value > max) {
    console.error(`--${name} must be a number in [${min}, ${max}], got ${args[name]}`)
    process.exit(2)
  }
  return value
}
const MINUTES = number("minutes", 0.05, 24 * 60)
const CONCURRENCY = Math.round(number("concurrency", 1, 256))
const PHASE_S = number("phase-seconds", 1, 3600)
const ANSWER_FAULT_RATE = number("answer-fault-rate", 0, 0.9)
const JUDGE_TIMEOUT_MS = Math.round(number("judge-timeout-ms", 50, 60_000))
const DURATION_MS = MINUTES * 60_000
// Warm-up: one full cycle of the fault schedule (every code path has run), at most half the run.
const WARMUP_MS = Math.min(MODES.length * PHASE_S * 1000, DURATION_MS / 2)
const RSS_WINDOW_S = 10
const ROUTING_LOG = args["routing-log-file"] === undefined ? undefined : path.resolve(args["routing-log-file"])
const WRITE_CONFIG = args["write-config"] === undefined ? undefined : path.resolve(args["write-config"])
if (ROUTING_LOG !== undefined && existsSync(ROUTING_LOG)) {
  console.error(
    `--routing-log-file ${ROUTING_LOG} exists: give a new path (the server appends; the log must hold this run only)`
  )
  process.exit(2)
}

requireBuild(ROOT)

// ---------------------------------------------------------------------------------------------
// The real server from its CLI.
const toml = ({ judgePort, answerPort }: { readonly judgePort: number; readonly answerPort: number }): string =>
  `# generated by scripts/src/soak.ts
schema_version = 1

# Two clients on the same judge listener: without a breaker, so every soak-fo request pays the
# judge's fault (timeout, transport, 5xx, garbage); with one for soak-err (503 while it is open).
[llm_clients.judge]
format = "openai_chat"
base_url = "http://${HOST}:${judgePort}/v1"
max_retries = 0
timeout_ms = ${JUDGE_TIMEOUT_MS}

[llm_clients.judge_breaker]
format = "openai_chat"
base_url = "http://${HOST}:${judgePort}/v1"
max_retries = 0
timeout_ms = ${JUDGE_TIMEOUT_MS}
breaker = { failure_threshold = 5, cooldown_ms = 2000 }

[llm_clients.answers]
format = "openai_chat"
base_url = "http://${HOST}:${answerPort}/v1"
max_retries = 2
timeout_ms = 10000

[targets.judge_fo]
id = "${JUDGE_FO}"
llm_client = "judge"
extra_body = { temperature = 0 }

[targets.judge_err]
id = "${JUDGE_ERR}"
llm_client = "judge_breaker"
extra_body = { temperature = 0 }

[targets.weak]
id = "${WEAK}"
llm_client = "answers"

[targets.strong]
id = "${STRONG}"
llm_client = "answers"

[routes.fo]
id = "soak-fo"
type = "llm_classifier"
classifier_target = "judge_fo"
weak_target = "weak"
strong_target = "strong"
base_threshold = 0.7
classify_trigger = "user_turn"
judge_failure = "fail_open"

[routes.err]
id = "soak-err"
type = "llm_classifier"
classifier_target = "judge_err"
weak_target = "weak"
strong_target = "strong"
base_threshold = 0.7
classify_trigger = "user_turn"
judge_failure = "error"

[sessions]
max_entries = 20000
ttl_ms = 600000
`

interface Server {
  readonly child: ChildProcess
  readonly pid: number
  readonly url: string
  readonly port: number
  /** Log lines on stdout by `level=`. */
  readonly logLevels: Record<string, number>
  readonly stderrTail: () => string
}

const startServer = async (tomlPath: string): Promise<Server> => {
  const child = track(
    spawn(
      process.execPath,
      [
        BIN,
        "--config",
        tomlPath,
        "--host",
        HOST,
        "--port",
        "0",
        "--shutdown-timeout",
        "10",
        ...(ROUTING_LOG === undefined ? [] : ["--routing-log-file", ROUTING_LOG])
      ],
      { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] }
    )
  )
  const logLevels: Record<string, number> = {}
  let partial = ""
  let head = ""
  let stderrTail = ""
  let resolveUrl: (url: string) => void = () => {}
  const urlPromise = new Promise<string>((resolve) => (resolveUrl = resolve))
  child.stdout.setEncoding("utf8").on("data", (data: string) => {
    if (head.length < 4096) {
      head += data
      const match = /listening on (http:\/\/[^\s]+)/.exec(head)
      if (match?.[1] !== undefined) resolveUrl(match[1])
    }
    const lines = (partial + data).split("\n")
    partial = lines.pop() ?? ""
    for (const line of lines) {
      const level = /level=(\w+)/.exec(line)?.[1]
      if (level) logLevels[level] = (logLevels[level] ?? 0) + 1
    }
  })
  child.stderr.setEncoding("utf8").on("data", (data: string) => (stderrTail = (stderrTail + data).slice(-8192)))
  const url = await withTimeout(
    Promise.race([
      urlPromise,
      new Promise<never>((_, reject) =>
        child.once("exit", (code) => reject(new Error(`server exited with ${code}: ${stderrTail}`)))
      )
    ]),
    30_000,
    "server start"
  )
  return { child, pid: pidOf(child), url, port: Number(new URL(url).port), logLevels, stderrTail: () => stderrTail }
}

interface Stopped {
  readonly code: number | null | "killed"
  readonly ms: number
}

const stopServer = async (server: Server): Promise<Stopped> => {
  if (server.child.exitCode !== null || server.child.signalCode !== null) return { code: server.child.exitCode, ms: 0 }
  const started = performance.now()
  const exited = new Promise<number | null>((resolve) => server.child.once("exit", (code) => resolve(code)))
  process.kill(server.pid, "SIGTERM")
  try {
    const code = await withTimeout(exited, 15_000, "server stop")
    return { code, ms: performance.now() - started }
  } catch {
    process.kill(server.pid, "SIGKILL")
    return { code: "killed", ms: performance.now() - started }
  }
}

interface Rss {
  readonly rssMb: number
  readonly hwmMb: number
}

const rssMb = (pid: number): Rss => {
  try {
    const text = readFileSync(`/proc/${pid}/status`, "utf8")
    const kb = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, "m").exec(text)?.[1] ?? NaN)
    return { rssMb: kb("VmRSS") / 1024, hwmMb: kb("VmHWM") / 1024 }
  } catch {
    return { rssMb: NaN, hwmMb: NaN }
  }
}

// ---------------------------------------------------------------------------------------------
// HTTP to the server: keep-alive, bounded by REQUEST_TIMEOUT_MS.
const agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY + 4 })
let staleSocketRetries = 0

type Reply =
  | { readonly ok: true; readonly status: number; readonly headers: http.IncomingHttpHeaders; readonly text: string }
  | { readonly ok: false; readonly error: string; readonly gotResponse: boolean; readonly reusedSocket?: boolean }

const once = (
  method: string,
  port: number,
  reqPath: string,
  body: string | undefined,
  headers: Readonly<Record<string, string>>
): Promise<Reply> =>
  new Promise((resolve) => {
    const payload = body === undefined ? undefined : Buffer.from(body)
    let settled = false
    const done = (result: Reply): void => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      resolve(result)
    }
    const req = http.request(
      {
        agent,
        host: HOST,
        port,
        path: reqPath,
        method,
        headers: payload === undefined
          ? headers
          : { "content-type": "application/json", "content-length": payload.length, ...headers }
      },
      (res) => {
        const parts: Array<Buffer> = []
        res.on("data", (part: Buffer) => parts.push(part))
        res.on("end", () =>
          done({
            ok: true,
            status: res.statusCode ?? 0,
            headers: res.headers,
            text: Buffer.concat(parts).toString("utf8")
          }))
        res.on("error", (error: NodeJS.ErrnoException) =>
          done({ ok: false, error: `response: ${error.code ?? error.message}`, gotResponse: true }))
      }
    )
    const timer = setTimeout(() => {
      req.destroy()
      done({ ok: false, error: `no answer within ${REQUEST_TIMEOUT_MS} ms`, gotResponse: false })
    }, REQUEST_TIMEOUT_MS)
    req.on("error", (error: NodeJS.ErrnoException) =>
      done({ ok: false, error: error.code ?? error.message, gotResponse: false, reusedSocket: req.reusedSocket }))
    req.end(payload)
  })

/**
 * One request; a reset on a reused keep-alive socket before any response byte (the server closed
 * an idle socket as it was being reused) is retried once, and counted.
 */
const send = async (
  method: string,
  port: number,
  reqPath: string,
  body?: string,
  headers: Readonly<Record<string, string>> = {}
): Promise<Reply> => {
  const first = await once(method, port, reqPath, body, headers)
  if (
    !first.ok && first.reusedSocket === true && !first.gotResponse &&
    ["ECONNRESET", "EPIPE", "socket hang up"].includes(first.error)
  ) {
    staleSocketRetries++
    return once(method, port, reqPath, body, headers)
  }
  return first
}

// ---------------------------------------------------------------------------------------------
// Validation against the README's error table and stream format.
const EVIDENCE = new Set(["llm-classifier", "affinity", "retained", "fail-open", "circuit-open"])
const WITHOUT_VERDICT = new Set(["retained", "fail-open", "circuit-open"])

/** The documented (status, type, code) combinations an upstream or judge failure may produce. */
const documentedUpstreamError = (status: number, type: string, code: string): boolean =>
  type === "upstream_error" && (
    (code === "upstream_timeout" && status === 504) ||
    (code === "upstream_unavailable" && status === 503) ||
    (code === "upstream_error" &&
      (status === 502 || status === 429 || status === 408 || status === 403 || (status >= 500 && status <= 599)))
  )

/** What the soak requires of the server's answers (the rest of each body is not looked at). */
const decodeJson = <A, I>(schema: Schema.Schema<A, I>) => Schema.decodeUnknownOption(Schema.parseJson(schema))
/** A buffered answer: its first choice is an assistant message with text content. */
const decodeCompletion = decodeJson(Schema.Struct({
  object: Schema.Literal("chat.completion"),
  choices: Schema.Tuple([
    Schema.Struct({ message: Schema.Struct({ role: Schema.Literal("assistant"), content: Schema.String }) })
  ], Schema.Unknown)
}))
const decodeChunk = decodeJson(Schema.Struct({ object: Schema.Literal("chat.completion.chunk") }))
/** The documented mid-stream error event. */
const decodeStreamError = decodeJson(
  Schema.Struct({ error: Schema.Struct({ type: Schema.Literal("SwitchyardError"), code: Schema.String }) })
)
/** The documented error envelope. */
const decodeEnvelope = decodeJson(
  Schema.Struct({ error: Schema.Struct({ message: Schema.String, type: Schema.String, code: Schema.String }) })
)
const decodeHealth = decodeJson(Schema.Struct({ status: Schema.Literal("ok") }))

type Route = "soak-fo" | "soak-err"

type Outcome =
  | { readonly kind: "answer"; readonly evidence: string; readonly reason: string; readonly model: string }
  | {
    readonly kind: "stream-error"
    readonly code: string
    readonly evidence: string
    readonly reason: string
    readonly model: string
  }
  | { readonly kind: "error"; readonly code: string; readonly judge: boolean }
  | { readonly kind: "violation"; readonly why: string }

/**
 * Classify one response: `{ kind: "answer" | "error" | "stream-error", ... }` or
 * `{ kind: "violation", why }`.
 */
const validate = (
  response: Reply,
  { route, streaming }: { readonly route: Route; readonly streaming: boolean }
): Outcome => {
  if (!response.ok) return { kind: "violation", why: `no answer: ${response.error}` }
  const { status, headers, text } = response
  if (status >= 200 && status < 300) {
    const model = header(headers, "x-switchyard-selected-model")
    const evidence = header(headers, "x-switchyard-evidence-source")
    const reason = header(headers, "x-switchyard-evidence-reason") ?? ""
    if (model !== WEAK && model !== STRONG) return { kind: "violation", why: `2xx with selected model ${model}` }
    if (evidence === undefined || !EVIDENCE.has(evidence)) {
      return { kind: "violation", why: `2xx with evidence source ${evidence}` }
    }
    if (!streaming) {
      if (Option.isNone(decodeCompletion(text))) {
        return { kind: "violation", why: `2xx buffered body is not a chat completion: ${text.slice(0, 120)}` }
      }
      return { kind: "answer", evidence, reason, model }
    }
    if (!String(headers["content-type"] ?? "").startsWith("text/event-stream")) {
      return { kind: "violation", why: `2xx stream with content-type ${headers["content-type"]}` }
    }
    const events = text.split("\n\n").filter((e) => e.length > 0)
    const lastEvent = events[events.length - 1]
    if (lastEvent === undefined || events.some((e) => !e.startsWith("data: "))) {
      return { kind: "violation", why: `malformed SSE: ${text.slice(0, 120)}` }
    }
    const last = lastEvent.slice(6)
    const chunks = events.slice(0, -1)
    for (const event of chunks) {
      if (Option.isNone(decodeChunk(event.slice(6)))) {
        return { kind: "violation", why: `SSE event is not a chunk: ${event.slice(0, 120)}` }
      }
    }
    if (last === "[DONE]") {
      if (!chunks.some((e) => e.includes("\"content\""))) {
        return { kind: "violation", why: "stream ended without content" }
      }
      return { kind: "answer", evidence, reason, model }
    }
    const error = decodeStreamError(last)
    if (Option.isSome(error)) {
      return { kind: "stream-error", code: error.value.error.code, evidence, reason, model }
    }
    return { kind: "violation", why: `stream ended without [DONE] or error event: ${text.slice(-120)}` }
  }
  const envelope = decodeEnvelope(text)
  if (Option.isNone(envelope)) {
    return { kind: "violation", why: `${status} without the error envelope: ${text.slice(0, 120)}` }
  }
  const error = envelope.value.error
  if (!documentedUpstreamError(status, error.type, error.code)) {
    return {
      kind: "violation",
      why: `${status} ${error.type}/${error.code} is not a documented outcome of a valid request: ${
        error.message.slice(0, 120)
      }`
    }
  }
  if (route === "soak-fo" && error.message.startsWith("judge ")) {
    return {
      kind: "violation",
      why: `fail_open route failed because of the judge: ${status} ${error.message.slice(0, 120)}`
    }
  }
  return { kind: "error", code: error.code, judge: error.message.startsWith("judge ") }
}

// ---------------------------------------------------------------------------------------------
// Report state.
interface PhaseStats {
  readonly phase: number
  readonly mode: JudgeMode
  startS: number
  readonly fo: { sent: number; judged: number; withoutVerdict: number; errors: number }
  readonly err: { sent: number; ok: number; errors: number; judgeErrors: number; withoutVerdict: number }
  failOpenCounterDelta: number
  failOpenCounterDeltaErr: number
  judgeBreaker: string
}

interface ViolationExample {
  readonly route: Route
  readonly streaming: boolean
  readonly judgeMode: JudgeMode
  readonly why: string
}

interface Results {
  requests: number
  /** "status route buffered|stream [code]" -> n */
  readonly outcomes: Record<string, number>
  /** "route evidence[/reason]" -> n */
  readonly evidence: Record<string, number>
  violations: number
  readonly violationExamples: Array<ViolationExample>
  /** Per phase, indexed by phase number. */
  readonly byPhase: Array<PhaseStats>
  /** Sessions that sent at least one request, by route. */
  readonly sessions: Record<Route, number>
}

const results: Results = {
  requests: 0,
  outcomes: {},
  evidence: {},
  violations: 0,
  violationExamples: [],
  byPhase: [],
  sessions: { "soak-fo": 0, "soak-err": 0 }
}
const bump = (map: Record<string, number>, key: string, n = 1) => (map[key] = (map[key] ?? 0) + n)

let currentPhase = 0
let currentMode: JudgeMode = "up"
let stopAt = Infinity

const phaseStats = (index: number, mode: JudgeMode): PhaseStats => {
  const existing = results.byPhase[index]
  if (existing !== undefined) return existing
  const created: PhaseStats = {
    phase: index,
    mode,
    startS: NaN,
    fo: { sent: 0, judged: 0, withoutVerdict: 0, errors: 0 },
    err: { sent: 0, ok: 0, errors: 0, judgeErrors: 0, withoutVerdict: 0 },
    failOpenCounterDelta: NaN,
    failOpenCounterDeltaErr: NaN,
    judgeBreaker: ""
  }
  results.byPhase[index] = created
  return created
}

const statusOf = (response: Reply): number | "none" => (response.ok ? response.status : "none")

const record = (
  route: Route,
  streaming: boolean,
  phase: number,
  mode: JudgeMode,
  response: Reply,
  outcome: Outcome
): void => {
  results.requests++
  const p = phaseStats(phase, mode)
  const side = route === "soak-fo" ? p.fo : p.err
  side.sent++
  const shape = streaming ? "stream" : "buffered"
  if (outcome.kind === "violation") {
    results.violations++
    bump(results.outcomes, `${statusOf(response)} ${route} ${shape} VIOLATION`)
    if (results.violationExamples.length < 20) {
      results.violationExamples.push({ route, streaming, judgeMode: mode, why: outcome.why })
    }
    return
  }
  if (outcome.kind === "error") {
    bump(results.outcomes, `${statusOf(response)} ${route} ${shape} ${outcome.code}${outcome.judge ? " (judge)" : ""}`)
    side.errors++
    if (route === "soak-err" && outcome.judge) p.err.judgeErrors++
    return
  }
  const key = outcome.kind === "stream-error"
    ? `${statusOf(response)} ${route} ${shape} mid-stream ${outcome.code}`
    : `${statusOf(response)} ${route} ${shape}`
  bump(results.outcomes, key)
  bump(results.evidence, `${route} ${outcome.evidence}${outcome.reason ? `/${outcome.reason}` : ""}`)
  if (route === "soak-fo") {
    if (outcome.evidence !== "affinity") p.fo.judged++
    if (WITHOUT_VERDICT.has(outcome.evidence)) p.fo.withoutVerdict++
  } else {
    p.err.ok++
    if (WITHOUT_VERDICT.has(outcome.evidence)) p.err.withoutVerdict++
  }
}

// ---------------------------------------------------------------------------------------------
// Traffic: agent-like sessions.
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

const worker = async (index: number, port: number): Promise<void> => {
  let sessions = 0
  let session = newSession(index, sessions++)
  while (performance.now() < stopAt) {
    if (session.turns >= 1 + Math.floor(Math.random() * SESSION_TURNS_MAX)) session = newSession(index, sessions++)
    const added: Array<Message> = []
    if (session.turns === 0 || Math.random() < 0.5) {
      added.push({
        role: "user",
        content: `Task ${session.turns}: change function f${Math.floor(Math.random() * 1000)} to handle empty input.`
      })
    } else {
      const callId = `call_${index}_${sessions}_${session.turns}`
      added.push(
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
      )
    }
    const streaming = Math.random() < 0.5
    const body = JSON.stringify({
      model: session.route,
      messages: [...session.messages, ...added],
      tools: TOOLS,
      ...(streaming ? { stream: true } : {})
    })
    const phase = currentPhase
    const mode = currentMode
    const response = await send("POST", port, "/v1/chat/completions", body, { "x-switchyard-session-id": session.id })
    const outcome = validate(response, { route: session.route, streaming })
    record(session.route, streaming, phase, mode, response, outcome)
    if (session.turns === 0) results.sessions[session.route]++
    session.turns++
    if (outcome.kind === "answer") {
      session.messages.push(...added, { role: "assistant", content: "Here is the soak answer." })
    }
  }
}

// ---------------------------------------------------------------------------------------------
// /metrics
interface Series {
  readonly name: string
  readonly labels: Readonly<Record<string, string>>
  readonly value: number
}

/** The Prometheus text exposition, one entry per sample line. */
const scrape = async (port: number): Promise<ReadonlyArray<Series>> => {
  const response = await send("GET", port, "/metrics")
  if (!response.ok || response.status !== 200) {
    throw new Error(`/metrics answered ${response.ok ? response.status : response.error}`)
  }
  const series: Array<Series> = []
  for (const line of response.text.split("\n")) {
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)$/.exec(line)
    if (!match?.[1]) continue
    const labels: Record<string, string> = {}
    for (const [, k, v] of (match[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) {
      if (k !== undefined && v !== undefined) labels[k] = v
    }
    series.push({ name: match[1], labels, value: Number(match[3]) })
  }
  return series
}
const matches = (s: Series, name: string, filter: Readonly<Record<string, string>>): boolean =>
  s.name === name && Object.entries(filter).every(([k, v]) => s.labels[k] === v)
const sumOf = (series: ReadonlyArray<Series>, name: string, filter: Readonly<Record<string, string>> = {}): number =>
  series.filter((s) => matches(s, name, filter)).reduce((a, s) => a + s.value, 0)
const byLabel = (
  series: ReadonlyArray<Series>,
  name: string,
  label: string,
  filter: Readonly<Record<string, string>> = {}
): Record<string, number> => {
  const out: Record<string, number> = {}
  for (const s of series) {
    if (matches(s, name, filter)) {
      const key = String(s.labels[label])
      out[key] = (out[key] ?? 0) + s.value
    }
  }
  return out
}
const FAIL_OPEN = "switchyard_classifier_fail_open_total"
const BREAKER = "switchyard_circuit_breaker_state"
const breakerName = (value: number): string => ["closed", "open", "half_open"][value] ?? String(value)

// ---------------------------------------------------------------------------------------------
interface RssSample extends Rss {
  readonly tS: number
}

const main = async (): Promise<number> => {
  const started = performance.now()
  const tmp = mkdtempSync(path.join(os.tmpdir(), "switchyard-soak-"))
  const upstreams = await startUpstreams({
    judgeModels: [JUDGE_FO, JUDGE_ERR],
    answerModels: [WEAK, STRONG],
    answerFaultRate: ANSWER_FAULT_RATE
  })
  const tomlPath = path.join(tmp, "soak.toml")
  writeFileSync(tomlPath, toml(upstreams))
  if (WRITE_CONFIG !== undefined) {
    mkdirSync(path.dirname(WRITE_CONFIG), { recursive: true })
    writeFileSync(WRITE_CONFIG, toml(upstreams))
  }
  if (ROUTING_LOG !== undefined) mkdirSync(path.dirname(ROUTING_LOG), { recursive: true })
  const server = await startServer(tomlPath)
  console.log(
    `soak: server ${server.url} (pid ${server.pid}), mock judge :${upstreams.judgePort}, answers :${upstreams.answerPort}`
  )
  console.log(
    `soak: ${MINUTES} min, concurrency ${CONCURRENCY}, judge phase ${PHASE_S} s (${MODES.join(" → ")}), answer faults ${
      ANSWER_FAULT_RATE * 100
    }%, judge timeout_ms ${JUDGE_TIMEOUT_MS}`
  )
  if (ROUTING_LOG !== undefined) console.log(`soak: routing log ${ROUTING_LOG}`)
  if (WRITE_CONFIG !== undefined) console.log(`soak: deployment written to ${WRITE_CONFIG}`)

  const rss: { readonly start: RssSample; readonly samples: Array<RssSample> } = {
    start: { tS: 0, ...rssMb(server.pid) },
    samples: []
  }
  const baseline = await scrape(server.port)
  let lastFo = sumOf(baseline, FAIL_OPEN, { judge_model: JUDGE_FO })
  let lastErr = sumOf(baseline, FAIL_OPEN, { judge_model: JUDGE_ERR })

  const t0 = performance.now()
  stopAt = t0 + DURATION_MS
  const elapsedS = () => (performance.now() - t0) / 1000

  // RSS sampler, every 2 s until the traffic stops.
  const sampler = (async () => {
    while (performance.now() < stopAt) {
      await sleep(Math.min(2000, Math.max(0, stopAt - performance.now())))
      rss.samples.push({ tS: elapsedS(), ...rssMb(server.pid) })
    }
  })()

  // Fault schedule: phase i has mode MODES[i % 5]; the fail-open counter is scraped at each boundary.
  const phases = Math.ceil(DURATION_MS / (PHASE_S * 1000))
  const modeOf = (index: number): JudgeMode => MODES[index % MODES.length] ?? "up"
  const closePhase = async (index: number) => {
    const series = await scrape(server.port)
    const fo = sumOf(series, FAIL_OPEN, { judge_model: JUDGE_FO })
    const err = sumOf(series, FAIL_OPEN, { judge_model: JUDGE_ERR })
    const p = phaseStats(index, modeOf(index))
    p.failOpenCounterDelta = fo - lastFo
    p.failOpenCounterDeltaErr = err - lastErr
    p.judgeBreaker = breakerName(sumOf(series, BREAKER, { llm_client: "judge_breaker" }))
    lastFo = fo
    lastErr = err
  }
  const schedule = (async () => {
    for (let i = 0; i < phases; i++) {
      const mode = modeOf(i)
      await upstreams.setJudgeMode(mode)
      currentPhase = i
      currentMode = mode
      phaseStats(i, mode).startS = elapsedS()
      const phaseEnd = Math.min(stopAt, t0 + (i + 1) * PHASE_S * 1000)
      await sleep(Math.max(0, phaseEnd - performance.now()))
      if (i < phases - 1) await closePhase(i)
    }
  })()

  const workers = Array.from({ length: CONCURRENCY }, (_, i) => worker(i, server.port))
  // Progress line every 15 s.
  const progress = (async () => {
    while (performance.now() < stopAt) {
      await sleep(Math.min(15_000, Math.max(0, stopAt - performance.now())))
      const last = rss.samples[rss.samples.length - 1]
      console.log(
        `soak: ${
          elapsedS().toFixed(0)
        } s, ${results.requests} requests, ${results.violations} violations, judge ${currentMode}, RSS ${
          last ? last.rssMb.toFixed(1) : "?"
        } MB`
      )
    }
  })()
  await Promise.all([...workers, schedule, sampler, progress])
  await closePhase(phases - 1)
  const trafficS = elapsedS()
  const rssEnd: RssSample = { tS: trafficS, ...rssMb(server.pid) }

  // After the traffic: the judge is up again, the server is healthy and stops cleanly.
  await upstreams.setJudgeMode("up")
  const health = await send("GET", server.port, "/health")
  const healthOk = health.ok && health.status === 200 && Option.isSome(decodeHealth(health.text))
  const final = await scrape(server.port)
  const stopped = await stopServer(server)
  const mockStats = await upstreams.stats()
  await upstreams.close()
  agent.destroy()
  rmSync(tmp, { recursive: true, force: true })

  // -------------------------------------------------------------------------------------------
  // Report.
  const sample = (tS: number) =>
    rss.samples.reduce((best, s) => (Math.abs(s.tS - tS) < Math.abs(best.tS - tS) ? s : best), rss.samples[0] ?? rssEnd)
  const median = (values: ReadonlyArray<number>) => {
    const sorted = [...values].sort((a, b) => a - b)
    return sorted.length === 0 ? NaN : sorted[Math.floor((sorted.length - 1) / 2)] ?? NaN
  }
  const level = (fromS: number, toS: number) => {
    const inWindow = rss.samples.filter((s) => s.tS >= fromS && s.tS <= toS)
    return {
      fromS,
      toS,
      rssMb: median(inWindow.length > 0 ? inWindow.map((s) => s.rssMb) : [rssEnd.rssMb]),
      samples: inWindow.length
    }
  }
  const warmS = WARMUP_MS / 1000
  const warm = level(warmS, warmS + RSS_WINDOW_S)
  const endLevel = level(trafficS - RSS_WINDOW_S, trafficS + 1)
  const middle = sample(trafficS / 2)
  const afterWarm = rss.samples.filter((s) => s.tS >= warmS)
  // Least-squares slope of VmRSS after warm-up, MB per minute.
  const mx = afterWarm.reduce((a, s) => a + s.tS, 0) / Math.max(1, afterWarm.length)
  const my = afterWarm.reduce((a, s) => a + s.rssMb, 0) / Math.max(1, afterWarm.length)
  const slopeMbPerMin = (60 * afterWarm.reduce((a, s) => a + (s.tS - mx) * (s.rssMb - my), 0)) /
    Math.max(1e-9, afterWarm.reduce((a, s) => a + (s.tS - mx) ** 2, 0))
  const maxAfterWarm = Math.max(...afterWarm.map((s) => s.rssMb), rssEnd.rssMb)
  const growthPct = (100 * (endLevel.rssMb - warm.rssMb)) / warm.rssMb
  // Below one warm-up plus two windows there is no steady state to judge.
  const rssJudged = trafficS >= warmS + 2 * RSS_WINDOW_S
  const rssFlag = rssJudged && growthPct > 20

  const foTotalDelta = sumOf(final, FAIL_OPEN, { judge_model: JUDGE_FO }) -
    sumOf(baseline, FAIL_OPEN, { judge_model: JUDGE_FO })
  const errTotalDelta = sumOf(final, FAIL_OPEN, { judge_model: JUDGE_ERR }) -
    sumOf(baseline, FAIL_OPEN, { judge_model: JUDGE_ERR })
  const foReasons = byLabel(final, FAIL_OPEN, "reason", { judge_model: JUDGE_FO })
  const baseReasons = byLabel(baseline, FAIL_OPEN, "reason", { judge_model: JUDGE_FO })
  for (const [k, v] of Object.entries(foReasons)) foReasons[k] = v - (baseReasons[k] ?? 0)
  const phasesOut = results.byPhase.filter(Boolean)
  const foWithoutVerdict = phasesOut.reduce((a, p) => a + p.fo.withoutVerdict, 0)
  const faulty = phasesOut.filter((p) => p.mode !== "up")
  const foFaulty = {
    sent: faulty.reduce((a, p) => a + p.fo.sent, 0),
    judged: faulty.reduce((a, p) => a + p.fo.judged, 0),
    withoutVerdict: faulty.reduce((a, p) => a + p.fo.withoutVerdict, 0),
    counter: faulty.reduce((a, p) => a + p.failOpenCounterDelta, 0)
  }
  const routeTotals = (["soak-fo", "soak-err"] as const).map((route) => {
    const sides = phasesOut.map((p) => route === "soak-fo" ? { ...p.fo, judgeErrors: 0 } : p.err)
    return {
      route,
      requests: sides.reduce((a, s) => a + s.sent, 0),
      sessions: results.sessions[route],
      errors: sides.reduce((a, s) => a + s.errors, 0),
      judgeErrors: sides.reduce((a, s) => a + s.judgeErrors, 0),
      withoutVerdict: sides.reduce((a, s) => a + s.withoutVerdict, 0)
    }
  })
  const upPhases = phasesOut.filter((p) => p.mode === "up")
  const foUp = {
    sent: upPhases.reduce((a, p) => a + p.fo.sent, 0),
    judged: upPhases.reduce((a, p) => a + p.fo.judged, 0),
    withoutVerdict: upPhases.reduce((a, p) => a + p.fo.withoutVerdict, 0),
    counter: upPhases.reduce((a, p) => a + p.failOpenCounterDelta, 0)
  }
  const checks = {
    everyRequestAnsweredOrDocumentedError: results.violations === 0,
    healthAfterSoak: healthOk,
    cleanShutdown: stopped.code === 0,
    failOpenCounterMatchesResponses: foTotalDelta === foWithoutVerdict,
    rssFlat: !rssFlag
  }
  const failed = !checks.everyRequestAnsweredOrDocumentedError || !checks.healthAfterSoak || !checks.cleanShutdown

  const lines: Array<string> = []
  const out = (s = "") => lines.push(s)
  out(
    `\n## Soak results (${MINUTES} min, ${results.requests} requests, ${
      (results.requests / trafficS).toFixed(0)
    } req/s)\n`
  )
  out(
    `violations (no answer, or not a documented outcome): **${results.violations}**${
      results.violations > 0 ? "  <-- FAIL" : ""
    }`
  )
  for (const v of results.violationExamples) {
    out(`  - ${v.route} ${v.streaming ? "stream" : "buffered"} (judge ${v.judgeMode}): ${v.why}`)
  }
  out(`client retries after a stale keep-alive socket: ${staleSocketRetries}`)
  out(`\n| outcome (status route shape [code]) | requests |\n|---|---:|`)
  for (const [k, v] of Object.entries(results.outcomes).sort()) out(`| ${k} | ${v} |`)
  out(`\n| evidence of 2xx answers (route source[/reason]) | requests |\n|---|---:|`)
  for (const [k, v] of Object.entries(results.evidence).sort()) out(`| ${k} | ${v} |`)
  out(
    `\n| phase | judge | soak-fo sent / judged / without verdict | fail-open counter Δ (soak-fo) | soak-err 2xx / errors (judge) | soak-err judge breaker at end |`
  )
  out(`|---:|---|---|---:|---|---|`)
  for (const p of phasesOut) {
    out(
      `| ${p.phase} | ${p.mode} | ${p.fo.sent} / ${p.fo.judged} / ${p.fo.withoutVerdict} | ${p.failOpenCounterDelta} | ${p.err.ok} / ${p.err.errors} (${p.err.judgeErrors}) | ${p.judgeBreaker} |`
    )
  }
  out(
    `\nfail-open counter (switchyard_classifier_fail_open_total{judge_model="${JUDGE_FO}"}): +${foTotalDelta} over the run ` +
      `(${Object.entries(foReasons).filter(([, v]) => v > 0).map(([k, v]) => `${k} ${v}`).join(", ")}); ` +
      `soak-fo 2xx answers without a verdict seen by the client: ${foWithoutVerdict} → ${
        foTotalDelta === foWithoutVerdict ? "equal" : `differ by ${foTotalDelta - foWithoutVerdict}`
      }`
  )
  out(
    `while the judge was faulty: ${foFaulty.sent} soak-fo requests, ${foFaulty.judged} needed the judge, ${foFaulty.withoutVerdict} routed without a verdict, counter +${foFaulty.counter}`
  )
  out(
    `while the judge was up: ${foUp.sent} soak-fo requests, ${foUp.judged} needed the judge, ${foUp.withoutVerdict} routed without a verdict (requests sent just before a phase edge), counter +${foUp.counter}`
  )
  out(
    `soak-err (judge_failure = "error") routed without a verdict (garbage judge): ${errTotalDelta} by the counter{judge_model="${JUDGE_ERR}"}`
  )
  out(
    `per route: ${
      routeTotals.map((r) =>
        `${r.route} ${r.requests} requests in ${r.sessions} sessions, ${r.errors} error answers (${r.judgeErrors} because of the judge), ${r.withoutVerdict} 2xx without a verdict`
      ).join("; ")
    }`
  )
  out(
    `\nserver RSS (VmRSS): start ${rss.start.rssMb.toFixed(1)} MB; after warm-up (median ${warm.fromS.toFixed(0)}–${
      warm.toS.toFixed(0)
    } s) ${warm.rssMb.toFixed(1)} MB; ` +
      `middle (${middle.tS.toFixed(0)} s) ${middle.rssMb.toFixed(1)} MB; end (median of the last ${RSS_WINDOW_S} s) ${
        endLevel.rssMb.toFixed(1)
      } MB, last sample ${rssEnd.rssMb.toFixed(1)} MB; ` +
      `max after warm-up ${maxAfterWarm.toFixed(1)} MB; peak VmHWM ${rssEnd.hwmMb.toFixed(1)} MB; ` +
      `growth after warm-up ${growthPct >= 0 ? "+" : ""}${growthPct.toFixed(1)}%, slope ${
        slopeMbPerMin >= 0 ? "+" : ""
      }${slopeMbPerMin.toFixed(1)} MB/min` +
      (!rssJudged ? " (run too short to judge)" : rssFlag ? "  <-- FLAG: more than 20%" : " (flat: within 20%)")
  )
  out(
    `after the soak: /health ${
      healthOk ? "200 ok" : `FAILED (${health.ok ? health.status : health.error})`
    }; SIGTERM → exit ${stopped.code} in ${stopped.ms.toFixed(0)} ms`
  )
  out(`server log lines by level: ${Object.entries(server.logLevels).map(([k, v]) => `${k} ${v}`).join(", ")}`)
  out(`mock: judge ${JSON.stringify(mockStats.judge)}, answers ${JSON.stringify(mockStats.answer)}`)
  out(
    `upstream attempts by code: ${
      JSON.stringify(byLabel(final, "switchyard_upstream_attempts_total", "code"))
    }; retry-recovered calls ${sumOf(final, "switchyard_router_retry_recovered_total")}`
  )
  out(
    `\nresult: ${failed ? "FAIL" : "PASS"}${rssFlag ? " (RSS flagged)" : ""}; runtime ${
      ((performance.now() - started) / 1000).toFixed(1)
    } s`
  )
  console.log(lines.join("\n"))

  const outDir = path.join(ROOT, "bench-results")
  mkdirSync(outDir, { recursive: true })
  const stamp = new Date().toISOString().replace(/[:.]/g, "-")
  const outFile = path.join(outDir, `soak-${stamp}.json`)
  writeFileSync(
    outFile,
    JSON.stringify(
      {
        date: new Date().toISOString(),
        machine: {
          cpu: os.cpus()[0]?.model,
          cores: os.cpus().length,
          node: process.version,
          platform: `${os.platform()} ${os.release()}`
        },
        options: {
          minutes: MINUTES,
          concurrency: CONCURRENCY,
          phaseSeconds: PHASE_S,
          answerFaultRate: ANSWER_FAULT_RATE,
          judgeTimeoutMs: JUDGE_TIMEOUT_MS,
          warmupS: WARMUP_MS / 1000,
          routingLogFile: ROUTING_LOG ?? null,
          writeConfig: WRITE_CONFIG ?? null
        },
        requests: results.requests,
        requestsPerSecond: results.requests / trafficS,
        violations: results.violations,
        violationExamples: results.violationExamples,
        staleSocketRetries,
        outcomes: results.outcomes,
        evidence: results.evidence,
        phases: phasesOut,
        routes: routeTotals,
        failOpen: {
          counterDelta: foTotalDelta,
          byReason: foReasons,
          clientSeenWithoutVerdict: foWithoutVerdict,
          whileJudgeFaulty: foFaulty,
          whileJudgeUp: foUp,
          errorRouteWithoutVerdictCounter: errTotalDelta
        },
        rss: {
          start: rss.start,
          warm,
          middle,
          end: endLevel,
          last: rssEnd,
          maxAfterWarmMb: maxAfterWarm,
          growthAfterWarmPct: growthPct,
          judged: rssJudged,
          slopeAfterWarmMbPerMin: slopeMbPerMin,
          flagged: rssFlag,
          samples: rss.samples
        },
        health: healthOk,
        shutdown: stopped,
        serverLogLevels: server.logLevels,
        mock: mockStats,
        checks,
        result: failed ? "FAIL" : "PASS",
        report: lines.join("\n")
      },
      null,
      2
    )
  )
  console.log(`wrote ${path.relative(ROOT, outFile)}`)
  return failed ? 1 : 0
}

main().then(
  (code) => {
    killAll()
    process.exit(code)
  },
  (error: unknown) => {
    console.error(`soak failed: ${error instanceof Error ? error.stack : error}`)
    killAll()
    process.exit(1)
  }
)
