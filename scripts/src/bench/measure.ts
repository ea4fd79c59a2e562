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

/** A warm-up run, then a measured autocannon run of `timing.rowS` seconds. */
export const loadRow = async (
  name: string,
  { url, body, connections, headers, requests, pairs = false, pid }: LoadOptions,
  timing: LoadTiming
): Promise<LoadRow> => {
  const base = { url, connections, headers: { ...JSON_HEADERS, ...headers }, body, requests }
  await cannon({ ...base, duration: timing.warmS })
  const cpuBefore = pid === undefined ? NaN : cpuS(pid)
  const { result, latencies, non2xx } = await cannon({ ...base, duration: timing.rowS })
  const cpuAfter = pid === undefined ? NaN : cpuS(pid)
  let samples = latencies
  if (pairs) {
    // c=1 and a two-request sequence: responses alternate judge, answer; a pair is one "turn".
    samples = []
    for (let i = 0; i + 1 < latencies.length; i += 2) samples.push((latencies[i] ?? NaN) + (latencies[i + 1] ?? NaN))
  }
  const s = stats(samples)
  return {
    name,
    kind: "load",
    connections,
    durationS: result.duration,
    count: s.n,
    rps: s.n / result.duration,
    mean: s.mean,
    p50: s.p50,
    p99: s.p99,
    max: s.max,
    errors: result.errors + result.timeouts,
    non2xx,
    cpuUsPerReq: cpuPerRequest(cpuBefore, cpuAfter, latencies.length + non2xx),
    ...(pid === undefined ? {} : { pid })
  }
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
