/**
 * Vitest global setup of the server project: the Redis session store tests need a real
 * redis-server. When `SWITCHYARD_TEST_REDIS_URL` is already set (`.ci/run` sets it) nothing
 * happens; otherwise, if `redis-server` is on the PATH, one is started on a free loopback port for
 * this run and stopped by its PID afterwards. Without either, those tests fail with instructions.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { createConnection, createServer } from "node:net"
import { tmpdir } from "node:os"
import * as path from "node:path"

const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const server = createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      server.close(() => resolve(port))
    })
  })

const ping = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = createConnection({ host: "127.0.0.1", port })
    socket.setTimeout(200)
    socket.once("connect", () => socket.write("PING\r\n"))
    socket.once("data", (data) => {
      socket.destroy()
      resolve(data.toString().startsWith("+PONG"))
    })
    socket.once("error", () => resolve(false))
    socket.once("timeout", () => {
      socket.destroy()
      resolve(false)
    })
  })

let child: ChildProcess | undefined
let dir: string | undefined

export async function setup(): Promise<void> {
  if ((process.env["SWITCHYARD_TEST_REDIS_URL"] ?? "") !== "") return
  if (spawnSync("redis-server", ["--version"]).status !== 0) return
  const port = await freePort()
  dir = mkdtempSync(path.join(tmpdir(), "switchyard-redis-"))
  child = spawn("redis-server", [
    "--bind",
    "127.0.0.1",
    "--port",
    String(port),
    "--save",
    "",
    "--appendonly",
    "no",
    "--dir",
    dir
  ], {
    stdio: "ignore"
  })
  for (let i = 0; i < 100; i++) {
    if (await ping(port)) {
      process.env["SWITCHYARD_TEST_REDIS_URL"] = `redis://127.0.0.1:${port}`
      return
    }
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

export async function teardown(): Promise<void> {
  if (child?.pid !== undefined && child.exitCode === null) {
    const exited = new Promise((resolve) => child?.once("exit", resolve))
    process.kill(child.pid, "SIGTERM")
    await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 2000))])
  }
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true })
}
