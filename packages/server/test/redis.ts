/**
 * The test Redis of the server tests (`SWITCHYARD_TEST_REDIS_URL`), shared by the Redis session
 * store and session totals tests: when to skip, a raw client, per-run key names and their clean-up,
 * a redis-server of a test's own (to stop it mid-test), a closed port, the store's error counts and
 * a capturing logger.
 */
import * as RedisSessionStore from "@switchyard-ts/server/RedisSessionStore"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Logger from "effect/Logger"
import * as Metric from "effect/Metric"
import { Redis } from "ioredis"
import { type ChildProcess, spawn } from "node:child_process"
import { createServer } from "node:net"

export const envUrl = process.env["SWITCHYARD_TEST_REDIS_URL"] ?? ""
/** No Redis here and none required: skip (with one visible line) rather than fail. */
export const skipWithoutRedis = envUrl === "" && process.env["SWITCHYARD_REQUIRE_REDIS"] !== "1"
if (skipWithoutRedis) {
  console.warn(
    "skipping the Redis session store tests: no redis-server on the PATH and SWITCHYARD_TEST_REDIS_URL is unset " +
      "(install redis-server, or run `bash .ci/run`, which provides one and makes this skip a failure)"
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
