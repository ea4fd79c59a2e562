// The peer gateway (bench/peer, a TypeScript LLM gateway): installed on demand with
// `npm ci --prefix bench/peer`, started bound to 127.0.0.1 by ./peer-gateway.ts.
import * as Schema from "effect/Schema"
import { type ChildProcess, execFileSync, spawn } from "node:child_process"
import { existsSync, readFileSync } from "node:fs"
import http from "node:http"
import path from "node:path"
import { performance } from "node:perf_hooks"
import { pidOf, sleep, track } from "../lib/processes.js"
import { closedPort, HERE, ROOT } from "./children.js"
import { HOST } from "./options.js"

const PEER_LAUNCHER = path.join(HERE, "peer-gateway.js")
const PEER_DIR = path.join(ROOT, "bench/peer")
const PEER_ENTRY = path.join(PEER_DIR, "node_modules/@portkey-ai/gateway/build/start-server.js")

/** A running peer gateway. */
export interface Peer {
  readonly child: ChildProcess
  readonly pid: number
  readonly port: number
  readonly version: string
}

/** Install bench/peer when its node_modules is missing; the reason it cannot be run, or `undefined`. */
export const installPeer = (): string | undefined => {
  if (existsSync(PEER_ENTRY)) return undefined
  console.log("installing the peer gateway: npm ci --prefix bench/peer")
  try {
    execFileSync("npm", ["ci", "--prefix", PEER_DIR, "--no-audit", "--no-fund"], {
      cwd: ROOT,
      stdio: ["ignore", "ignore", "pipe"],
      timeout: 300_000
    })
  } catch (error) {
    const stderr = typeof error === "object" && error !== null && "stderr" in error ? String(error.stderr) : ""
    const line = stderr.split("\n").find((l) => /err/i.test(l)) ?? (error instanceof Error ? error.message : "")
    return `\`npm ci --prefix bench/peer\` failed (${line.trim().slice(0, 160) || "no output"})`
  }
  return existsSync(PEER_ENTRY) ? undefined : `bench/peer installed, but ${path.relative(ROOT, PEER_ENTRY)} is missing`
}

/** Resolves once a GET on `port` answers at all (any status). */
const waitForHttp = async (port: number, ms: number, what: string): Promise<void> => {
  const deadline = performance.now() + ms
  while (performance.now() < deadline) {
    const up = await new Promise<boolean>((resolve) => {
      const req = http.get({ host: HOST, port, path: "/", agent: false }, (res) => {
        res.resume()
        resolve(true)
      })
      req.setTimeout(1000, () => req.destroy())
      req.on("error", () => resolve(false))
    })
    if (up) return
    await sleep(100)
  }
  throw new Error(`${what}: nothing answered on ${HOST}:${port} within ${ms} ms`)
}

/** Starts the installed peer gateway on a free loopback port; rejects when it exits or never answers. */
export const startPeer = async (): Promise<Peer> => {
  const port = await closedPort()
  const child = track(
    spawn(process.execPath, [PEER_LAUNCHER, PEER_ENTRY, String(port)], {
      cwd: PEER_DIR,
      stdio: ["ignore", "pipe", "pipe"]
    })
  )
  let output = ""
  const keep = (d: string) => (output = (output + d).slice(-4000))
  child.stdout.setEncoding("utf8").on("data", keep)
  child.stderr.setEncoding("utf8").on("data", keep)
  const exited = new Promise<never>((_, reject) =>
    child.once("exit", (code) => reject(new Error(`peer gateway exited with ${code}: ${output.slice(-500)}`)))
  )
  exited.catch(() => {})
  await Promise.race([waitForHttp(port, 30_000, "peer gateway"), exited])
  const version = Schema.decodeUnknownSync(Schema.parseJson(Schema.Struct({ version: Schema.String })))(
    readFileSync(path.join(PEER_DIR, "node_modules/@portkey-ai/gateway/package.json"), "utf8")
  ).version
  return { child, pid: pidOf(child), port, version }
}
