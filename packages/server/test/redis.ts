/**
 * The test Redis of the server tests (`SWITCHYARD_TEST_REDIS_URL`), shared by the Redis session
 * store, session totals and shared circuit breaker tests: when to skip, a raw client, per-run key names and their clean-up,
 * a redis-server of a test's own (to stop it mid-test), a closed port, a Redis that hangs after its
 * handshake, the store's error counts and a capturing logger.
 */
import * as RedisSessionStore from "@switchyard-ts/server/RedisSessionStore"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Logger from "effect/Logger"
import * as Metric from "effect/Metric"
import * as Queue from "effect/Queue"
import { Redis } from "ioredis"
import { type ChildProcess, spawn } from "node:child_process"
import { createServer, type Server, type Socket } from "node:net"

export const envUrl = process.env["SWITCHYARD_TEST_REDIS_URL"] ?? ""
/** No Redis here and none required: skip (with one visible line) rather than fail. */
export const skipWithoutRedis = envUrl === "" && process.env["SWITCHYARD_REQUIRE_REDIS"] !== "1"
if (skipWithoutRedis) {
  process.stderr.write(
    "skipping the Redis tests (session store, session totals, shared circuit breakers): no redis-server on the PATH and SWITCHYARD_TEST_REDIS_URL is unset " +
      "(install redis-server, or run `bash .ci/run`, which provides one and makes this skip a failure)" + "\n"
  )
}

/** The test Redis; dies with instructions when `SWITCHYARD_TEST_REDIS_URL` is unset. */
export const redisUrl: Effect.Effect<string> = envUrl === ""
  ? Effect.dieMessage(
    "SWITCHYARD_TEST_REDIS_URL is not set: these tests need a real redis-server. Run `bash .ci/run` " +
      "(it starts one), or start redis-server yourself and export SWITCHYARD_TEST_REDIS_URL=redis://127.0.0.1:PORT"
  )
  : Effect.succeed(envUrl)

/** Unique to this test run, so runs sharing one Redis never see each other's keys. */
export const runId = `${process.pid}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`
let counter = 0
export const unique = (label: string) => `${label}-${runId}-${++counter}`

/** A plain ioredis connection for inspecting and planting keys; closed with the scope. */
export const rawClient = Effect.flatMap(redisUrl, (url) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 })
      await client.connect()
      return client
    }),
    (client) => Effect.promise(() => client.quit().catch(() => "closed"))
  ))

/** Delete `keys` when the scope closes (the test's own keys only). */
export const cleanUp = (client: Redis, keys: () => ReadonlyArray<string>) =>
  Effect.addFinalizer(() =>
    Effect.promise(() => (keys().length === 0 ? Promise.resolve(0) : client.del(...keys()).catch(() => 0)))
  )

export const errorCount = (operation: RedisSessionStore.Operation) =>
  Effect.map(
    Metric.value(RedisSessionStore.errorsTotal.pipe(Metric.tagged("operation", operation))),
    (state) => state.count
  )

/** A port on 127.0.0.1 with nothing listening (bound, then closed). */
export const closedPort = Effect.async<number>((resume) => {
  const server = createServer()
  server.listen(0, "127.0.0.1", () => {
    const address = server.address()
    const port = typeof address === "object" && address !== null ? address.port : 1
    server.close(() => resume(Effect.succeed(port)))
  })
})

/** A redis-server of the test's own on `port`; `stop` kills it, as closing the scope does. */
export const ownRedis = (port: number, dir: string) =>
  Effect.gen(function*() {
    const exited = yield* Deferred.make<void>()
    const kill = (child: ChildProcess) =>
      Effect.zipRight(
        Effect.sync(() => child.exitCode === null && child.signalCode === null && child.kill("SIGKILL")),
        Deferred.await(exited).pipe(Effect.timeout("5 seconds"), Effect.ignore)
      )
    const child = yield* Effect.acquireRelease(
      Effect.sync(() => {
        const args = ["--bind", "127.0.0.1", "--port", String(port), "--save", "", "--appendonly", "no", "--dir", dir]
        const child = spawn("redis-server", args, { stdio: "ignore" })
        child.on("exit", () => Deferred.unsafeDone(exited, Effect.void))
        child.on("error", () => Deferred.unsafeDone(exited, Effect.void))
        return child
      }),
      kill
    )
    return { stop: kill(child) }
  })

/** Wait (bounded, 5 s) until a Redis on `port` answers PING. */
export const pingUntilUp = (port: number) =>
  Effect.gen(function*() {
    for (let i = 0; i < 100; i++) {
      const up = yield* Effect.promise(() => {
        const probe = new Redis(port, "127.0.0.1", {
          lazyConnect: true,
          retryStrategy: () => null,
          maxRetriesPerRequest: 0
        })
        probe.on("error", () => {})
        return probe.connect().then(() => probe.ping()).then(() => true, () => false).finally(() => probe.disconnect())
      })
      if (up) return
      yield* Effect.sleep("50 millis")
    }
    return yield* Effect.dieMessage(`redis-server on 127.0.0.1:${port} did not answer PING (is redis-server on PATH?)`)
  })

/** Run `effect` with a logger that records each line (message and annotations) in `lines`. */
export const capturingLogs = (lines: Array<string>) =>
  Effect.provide(
    Logger.replace(
      Logger.defaultLogger,
      Logger.make(({ annotations, message }) => {
        lines.push(JSON.stringify({ message, annotations: Object.fromEntries(annotations) }))
      })
    )
  )

/**
 * The client commands (RESP arrays of bulk strings) at the start of `buffer` (latin1, one char per
 * byte), and what is left of an incomplete one.
 */
export const parseCommands = (
  buffer: string
): { readonly commands: ReadonlyArray<ReadonlyArray<string>>; readonly rest: string } => {
  const commands: Array<ReadonlyArray<string>> = []
  let pos = 0
  for (;;) {
    const header = buffer.indexOf("\r\n", pos)
    if (buffer[pos] !== "*" || header < 0) break
    const args: Array<string> = []
    let at = header + 2
    for (let i = Number(buffer.slice(pos + 1, header)); i > 0; i--) {
      const lengthEnd = buffer.indexOf("\r\n", at)
      if (buffer[at] !== "$" || lengthEnd < 0) break
      const length = Number(buffer.slice(at + 1, lengthEnd))
      if (buffer.length < lengthEnd + 2 + length + 2) break
      args.push(buffer.slice(lengthEnd + 2, lengthEnd + 2 + length))
      at = lengthEnd + 2 + length + 2
    }
    if (args.length !== Number(buffer.slice(pos + 1, header))) break
    commands.push(args)
    pos = at
  }
  return { commands, rest: buffer.slice(pos) }
}

/**
 * A TCP server speaking just enough Redis for ioredis to become ready (CLIENT, INFO, SELECT, PING),
 * then never answering any other command: a Redis that hangs mid-life. Each unanswered command's
 * name goes to `unanswered` as it arrives (an event a test can wait for); QUIT closes the socket.
 */
export const handshakeThenHang = Effect.acquireRelease(
  Effect.gen(function*() {
    const unanswered = yield* Queue.unbounded<string>()
    const sockets: Array<Socket> = []
    const info = "# Server\r\nredis_version:7.2.0\r\nloading:0\r\n"
    const server = createServer((socket) => {
      sockets.push(socket)
      let pending = ""
      socket.on("error", () => {})
      socket.on("data", (data) => {
        const { commands, rest } = parseCommands(pending + data.toString("latin1"))
        pending = rest
        for (const [name = "", ...args] of commands) {
          const command = name.toUpperCase()
          if (command === "CLIENT" || command === "SELECT") socket.write("+OK\r\n")
          else if (command === "PING") socket.write("+PONG\r\n")
          else if (command === "INFO") socket.write(`$${Buffer.byteLength(info)}\r\n${info}\r\n`)
          else if (command === "QUIT") socket.destroy()
          else Queue.unsafeOffer(unanswered, [command, ...args].join(" "))
        }
      })
    })
    yield* Effect.async<void>((resume) => {
      server.listen(0, "127.0.0.1", () => resume(Effect.void))
    })
    return { server, sockets, unanswered }
  }),
  ({ server, sockets }) =>
    Effect.async<void>((resume) => {
      for (const socket of sockets) socket.destroy()
      server.close(() => resume(Effect.void))
    })
)

export const portOf = (server: Server) => {
  const address = server.address()
  return typeof address === "object" && address !== null ? address.port : 0
}
