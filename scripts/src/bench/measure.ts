// How the bench measures: summary statistics, autocannon load rows (latencies from its `response`
// events, float ms), one timed request on a keep-alive agent, and sequential stream rows (time to
// the first and to the last body chunk). Every row may also report the CPU µs per request of the
// process it measures (utime + stime from /proc before and after).
import autocannon from "autocannon"
import http from "node:http"
import { performance } from "node:perf_hooks"
import { HOST } from "./options.js"
import { cpuS } from "./proc.js"

/** Summary of a sample of latencies (ms). */
export interface Stats {
  readonly n: number
  readonly mean: number
  readonly p50: number
  readonly p99: number
  readonly max: number
}

/** n, mean, p50, p99 and max of `values` (NaN figures for an empty sample). */
export const stats = (values: ReadonlyArray<number>): Stats => {
  if (values.length === 0) return { n: 0, mean: NaN, p50: NaN, p99: NaN, max: NaN }
  const sorted = Float64Array.from(values).sort()
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] ?? NaN
  let sum = 0
  for (const v of sorted) sum += v
  return {
    n: sorted.length,
    mean: sum / sorted.length,
    p50: at(0.5),
    p99: at(0.99),
    max: sorted[sorted.length - 1] ?? NaN
  }
}

export const JSON_HEADERS = { "content-type": "application/json" }

/** The chat request every row sends, on `model`. */
export const chatRequest = (model: string, extra: Readonly<Record<string, unknown>> = {}) => ({
  model,
  messages: [{ role: "user", content: "Write a function that reverses a string." }],
  ...extra
})

/** {@link chatRequest} as a JSON body. */
export const chatBody = (model: string, extra: Readonly<Record<string, unknown>> = {}): string =>
  JSON.stringify(chatRequest(model, extra))

export interface CannonOptions extends autocannon.Options {
  /** Hard bound of the run in seconds (default: `duration` + 5). */
  readonly maxSeconds?: number
}

export interface CannonRun {
  readonly result: autocannon.Result
  readonly latencies: Array<number>
  readonly non2xx: number
}

/** One autocannon run; latencies of 2xx responses from its `response` events (float ms). */
export const cannon = ({ maxSeconds, ...opts }: CannonOptions): Promise<CannonRun> =>
  new Promise((resolve, reject) => {
    const latencies: Array<number> = []
    let non2xx = 0
    const instance = autocannon(
      { method: "POST", headers: JSON_HEADERS, timeout: 10, ...opts },
      (err, result) => {
        clearTimeout(guard)
        if (err) return reject(err)
        resolve({ result, latencies, non2xx })
      }
    )
    // Hard bound in case `amount` is set and the server is slower than expected.
    const guard = setTimeout(
      () => instance.stop(),
      maxSeconds !== undefined ? maxSeconds * 1000 : ((opts.duration ?? 10) + 5) * 1000
    )
    instance.on("response", (_client, statusCode, _bytes, responseTime) => {
      if (statusCode >= 200 && statusCode < 300) latencies.push(responseTime)
      else non2xx++
    })
  })

export interface LoadRow {
  readonly name: string
  readonly kind: "load"
  readonly connections: number
  readonly durationS: number
  readonly count: number
  readonly rps: number
  readonly mean: number
  readonly p50: number
  readonly p99: number
  readonly max: number
  readonly errors: number
  readonly non2xx: number
  /** CPU µs per completed request of the measured process (utime + stime over the row). */
  readonly cpuUsPerReq: number
  readonly pid?: number
  added?: number
  addedVs?: string
  /**
   * When `added` is the median of alternating rounds against another row ({@link pairedRows}): each
   * round's difference.
   */
  addedRounds?: ReadonlyArray<number>
}

export interface LoadOptions {
  readonly url: string
  readonly body?: string
  readonly connections: number
  readonly headers?: Readonly<Record<string, string>>
  readonly requests?: ReadonlyArray<autocannon.Request>
  readonly pairs?: boolean
  /** The process whose CPU per request the row reports. */
  readonly pid?: number
}

/** CPU µs per request of `pid` between two `cpuS` readings. */
export const cpuPerRequest = (before: number, after: number, requests: number): number =>
  requests > 0 ? ((after - before) * 1e6) / requests : NaN

/** How long a load row runs, after how long a warm-up (seconds). */
export interface LoadTiming {
  readonly warmS: number
  readonly rowS: number
}

/** One measured autocannon run of a row: its samples, failures, length and the CPU it cost. */
export interface Run {
  /** Latencies of 2xx responses (ms), in order. */
  readonly latencies: ReadonlyArray<number>
  readonly non2xx: number
  readonly errors: number
  readonly durationS: number
  /** CPU seconds of the measured process over the run (NaN without a process). */
  readonly cpuS: number
}

const runOnce = async (
  { body, connections, headers, pid, requests, url }: LoadOptions,
  durationS: number
): Promise<Run> => {
  const cpuBefore = pid === undefined ? NaN : cpuS(pid)
  const { latencies, non2xx, result } = await cannon({
    url,
    connections,
    headers: { ...JSON_HEADERS, ...headers },
    body,
    requests,
    duration: durationS
  })
  const cpuAfter = pid === undefined ? NaN : cpuS(pid)
  return {
    latencies,
    non2xx,
    errors: result.errors + result.timeouts,
    durationS: result.duration,
    cpuS: cpuAfter - cpuBefore
  }
}

/** A warm-up run: the load without the process whose CPU a measured run reads. */
const warmUp = ({ pid: _pid, ...options }: LoadOptions, warmS: number, run = runOnce) => run(options, warmS)

/** The samples of a run: its latencies, or with `pairs` (a two-request sequence at c=1) each pair's sum. */
const samplesOf = (run: Run, pairs: boolean): Array<number> => {
  if (!pairs) return [...run.latencies]
  // responses alternate judge, answer; a pair is one "turn"
  const samples: Array<number> = []
  for (let i = 0; i + 1 < run.latencies.length; i += 2) {
    samples.push((run.latencies[i] ?? NaN) + (run.latencies[i + 1] ?? NaN))
  }
  return samples
}

/** The row of one or more measured runs of the same load, their samples and time taken together. */
export const rowOf = (
  name: string,
  { connections, pairs = false, pid }: Pick<LoadOptions, "connections" | "pairs" | "pid">,
  runs: ReadonlyArray<Run>
): LoadRow => {
  const s = stats(runs.flatMap((run) => samplesOf(run, pairs)))
  let durationS = 0
  let errors = 0
  let non2xx = 0
  let cpu = 0
  let responses = 0
  for (const run of runs) {
    durationS += run.durationS
    errors += run.errors
    non2xx += run.non2xx
    cpu += run.cpuS
    responses += run.latencies.length + run.non2xx
  }
  return {
    name,
    kind: "load",
    connections,
    durationS,
    count: s.n,
    rps: s.n / durationS,
    mean: s.mean,
    p50: s.p50,
    p99: s.p99,
    max: s.max,
    errors,
    non2xx,
    cpuUsPerReq: cpuPerRequest(0, cpu, responses),
    ...(pid === undefined ? {} : { pid })
  }
}

/** A warm-up run, then a measured autocannon run of `timing.rowS` seconds. */
export const loadRow = async (name: string, options: LoadOptions, timing: LoadTiming): Promise<LoadRow> => {
  await warmUp(options, timing.warmS)
  return rowOf(name, options, [await runOnce(options, timing.rowS)])
}

/** The middle value of `values` (the mean of the two middle ones for an even count; NaN when empty). */
export const median = (values: ReadonlyArray<number>): number => {
  const sorted = Float64Array.from(values).sort()
  const mid = sorted.length >> 1
  if (sorted.length === 0) return NaN
  return sorted.length % 2 === 1 ? sorted[mid] ?? NaN : ((sorted[mid - 1] ?? NaN) + (sorted[mid] ?? NaN)) / 2
}

/** Which of two rows runs first in each round of {@link pairedRows}: A B, then B A, then A B, … */
const roundOrder = (round: number): readonly ["a", "b"] | readonly ["b", "a"] =>
  round % 2 === 0 ? ["a", "b"] : ["b", "a"]

/**
 * How a paired row's `added` was found, for a report: "median of 3 alternating rounds: +a, +b, +c";
 * empty for a row measured alone.
 */
export const roundsNote = (row: LoadRow, digits = 2): string =>
  row.addedRounds === undefined
    ? ""
    : `median of ${row.addedRounds.length} alternating rounds: ${
      row.addedRounds.map((d) => `${d >= 0 ? "+" : ""}${d.toFixed(digits)}`).join(", ")
    }`

/** One side of {@link pairedRows}. */
export interface Side {
  readonly name: string
  readonly options: LoadOptions
}

/**
 * Two rows measured in alternation; B's `added` is what it adds over A (the median of the rounds),
 * its `addedRounds` each round's B mean minus A mean (ms), in round order.
 */
export interface PairedRows {
  readonly a: LoadRow
  readonly b: LoadRow
}

/**
 * Two rows whose difference is the figure (a route against another on the same body): each warmed
 * up, then measured in `rounds` alternating rounds of `timing.rowS / rounds` seconds (A B, B A, A B),
 * so a drift of the machine during the pair weighs on both alike. Each row merges its rounds; B's
 * `added` is the median of the rounds' differences of the means, vs `vs`. `run` measures one run
 * (autocannon; the warm-ups are runs without the process's CPU).
 */
export const pairedRows = async (
  a: Side,
  b: Side,
  timing: LoadTiming,
  vs: string,
  rounds = 3,
  run: (options: LoadOptions, durationS: number) => Promise<Run> = runOnce
): Promise<PairedRows> => {
  const sides = { a, b }
  for (const side of [a, b]) await warmUp(side.options, timing.warmS, run)
  const runs = { a: [] as Array<Run>, b: [] as Array<Run> }
  const differences: Array<number> = []
  for (let round = 0; round < rounds; round++) {
    for (const side of roundOrder(round)) runs[side].push(await run(sides[side].options, timing.rowS / rounds))
    const meanOf = (side: "a" | "b") => rowOf("", sides[side].options, runs[side].slice(-1)).mean
    differences.push(meanOf("b") - meanOf("a"))
  }
  const rowB = rowOf(b.name, b.options, runs.b)
  rowB.added = median(differences)
  rowB.addedVs = vs
  rowB.addedRounds = differences
  return { a: rowOf(a.name, a.options, runs.a), b: rowB }
}

export interface Timed {
  readonly status: number
  readonly headers: http.IncomingHttpHeaders
  /** Milliseconds to the first body chunk. */
  readonly first: number
  /** Milliseconds to the end of the body. */
  readonly total: number
  readonly text: string
}

/** One request on a keep-alive agent: status, headers, time to first body chunk and to the end. */
export const timedRequest = (
  agent: http.Agent,
  port: number,
  reqPath: string,
  body: string,
  headers: Readonly<Record<string, string>> = {},
  timeoutMs = 10_000
): Promise<Timed> =>
  new Promise((resolve, reject) => {
    const payload = Buffer.from(body)
    const t0 = performance.now()
    let tFirst = NaN
    const req = http.request(
      {
        agent,
        host: HOST,
        port,
        path: reqPath,
        method: "POST",
        headers: { ...JSON_HEADERS, "content-length": payload.length, ...headers }
      },
      (res) => {
        const parts: Array<Buffer> = []
        res.on("data", (part: Buffer) => {
          if (parts.length === 0) tFirst = performance.now()
          parts.push(part)
        })
        res.on("end", () => {
          const tEnd = performance.now()
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            first: tFirst - t0,
            total: tEnd - t0,
            text: Buffer.concat(parts).toString("utf8")
          })
        })
        res.on("error", reject)
      }
    )
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`request timed out after ${timeoutMs} ms`)))
    req.on("error", reject)
    req.end(payload)
  })

/** One GET on a keep-alive agent: status and milliseconds to the end of the body. */
export const timedGet = (agent: http.Agent, port: number, reqPath: string): Promise<{ status: number; ms: number }> =>
  new Promise((resolve, reject) => {
    const t = performance.now()
    const req = http.get({ agent, host: HOST, port, path: reqPath }, (res) => {
      res.resume()
      res.on("end", () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - t }))
      res.on("error", reject)
    })
    req.setTimeout(10_000, () => req.destroy(new Error("GET timed out")))
    req.on("error", reject)
  })

export interface StreamRow {
  readonly name: string
  readonly kind: "stream"
  readonly count: number
  readonly first: Stats
  readonly last: Stats
  readonly errors: number
  /** CPU µs per streamed request of the measured process over the timed requests. */
  readonly cpuUsPerReq: number
  addedFirst?: number
  addedLast?: number
  /** What `addedFirst` and `addedLast` are measured against, when not the direct row. */
  addedVs?: string
}

/**
 * `n` sequential streamed requests (after 20 untimed ones) on one keep-alive socket to `path`
 * (default the chat endpoint); a request counts when it answers 200 with `done` in its body
 * (default the chat stream's `data: [DONE]`).
 */
export const streamRow = async (
  name: string,
  port: number,
  body: string,
  { done = "data: [DONE]", headers = {}, n, path = "/v1/chat/completions", pid }: {
    readonly n: number
    readonly pid?: number
    readonly headers?: Readonly<Record<string, string>>
    readonly path?: string
    readonly done?: string
  }
): Promise<StreamRow> => {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
  const firsts: Array<number> = []
  const lasts: Array<number> = []
  let errors = 0
  let cpuBefore = NaN
  try {
    for (let i = 0; i < n + 20; i++) {
      if (i === 20 && pid !== undefined) cpuBefore = cpuS(pid)
      try {
        const r = await timedRequest(agent, port, path, body, headers)
        if (r.status !== 200 || !r.text.includes(done)) {
          errors++
          continue
        }
        if (i >= 20) {
          firsts.push(r.first)
          lasts.push(r.total)
        }
      } catch {
        errors++
      }
    }
  } finally {
    agent.destroy()
  }
  const cpuUsPerReq = pid === undefined ? NaN : cpuPerRequest(cpuBefore, cpuS(pid), n)
  return { name, kind: "stream", count: firsts.length, first: stats(firsts), last: stats(lasts), errors, cpuUsPerReq }
}
