/**
 * A `SessionStore` kept in Redis, so several server processes behind one load balancer share
 * session decisions and one session stays on one tier across all of them (README.md, the judge failure posture; docs/routes.md). It uses the
 * Node-only `ioredis` client, hence it lives in the server package; `[sessions] store = "redis"`
 * selects it (see `Server.sessionStoreLayer`).
 *
 * - Keys are `<keyPrefix><store key>` (prefix `switchyard:session:` by default); the value is the
 *   JSON of the `SessionDecision` (target, tier, escalation streak, its category, cooldown and strong
 *   phase, late mark), encoded and decoded with Schema: an undecodable value reads as absent; a value
 *   written before a field existed decodes without it. `remove` deletes the key (`DEL`).
 * - `ttlMs` is each key's expiry, refreshed on every read (`GETEX … PX`, Redis >= 6.2) and write
 *   (`SET … PX`): the same idle TTL as the in-memory store. Redis bounds the number of keys itself
 *   (`maxmemory`); there is no `max_entries` here.
 * - A Redis outage never fails a request. Every command has a short timeout (`commandTimeoutMs`,
 *   200 ms by default) and is never queued while the connection is down. A failed `get` reads as
 *   "no stored decision" (the route then judges the request, or routes it fail-open), a failed
 *   `put` or `remove` is dropped (a state not removed expires after `ttlMs`); each failure logs a
 *   warning (`session store unavailable`, with the Redis host but never the URL's credentials)
 *   and increments `switchyard_session_store_errors_total{operation}`.
 * - Start: the connection is tried for `connectTimeoutMs`; when Redis cannot be reached the store
 *   starts anyway (a warning is logged) and the client keeps reconnecting in the background.
 *   Release: `QUIT`, bounded by one second, then the socket is closed.
 * - `size` counts this store's keys with `SCAN MATCH <prefix>* COUNT 1000` (deduplicated, expired
 *   keys excluded): its cost grows with the whole database, so it is for tests and the benchmark,
 *   never for request paths. It reads 0 when Redis cannot be reached.
 * - One {@link Connection} (client, bounded commands, these failure rules) can serve the store, the
 *   session totals of `RedisSessionTotals` and the shared circuit breakers of `RedisBreakerStore`
 *   ({@link layerConnection}, {@link layerOver}).
 */
import * as Spans from "@switchyard-ts/client/Spans"
import * as Evidence from "@switchyard-ts/routing/Evidence"
import { type SessionDecision, SessionStore } from "@switchyard-ts/routing/SessionStore"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import { Redis } from "ioredis"

/** Options of the Redis store: its connection's and its own. */
export interface Options extends ConnectionOptions, StoreOptions {}

/** Keys are namespaced `switchyard:session:<route id>\0<identity>`. */
export const defaultKeyPrefix = "switchyard:session:"
/** A hung Redis delays a routed request by at most about this much. */
export const defaultCommandTimeoutMs = 200
/** How long the store waits for Redis at start before starting without it. */
export const defaultConnectTimeoutMs = 2_000

/** Session store commands that failed; the request went on as if the store held nothing. */
export const errorsTotal = Metric.counter("switchyard_session_store_errors_total", {
  incremental: true,
  description: "Session store operations that failed (the request went on without the store)"
})

/** The operations counted by {@link errorsTotal}. */
export type Operation = "get" | "put" | "remove" | "size" | "totals_add" | "totals_get" | "breaker"

const StoredDecision: Schema.Schema<SessionDecision> = Schema.Struct({
  target: Schema.String,
  tier: Schema.optionalWith(Schema.Literal("weak", "strong"), { exact: true }),
  streak: Schema.optionalWith(Schema.NonNegativeInt, { exact: true }),
  category: Schema.optionalWith(Evidence.EscalationCategory, { exact: true }),
  cooldown: Schema.optionalWith(Schema.NonNegativeInt, { exact: true }),
  strongCalls: Schema.optionalWith(Schema.NonNegativeInt, { exact: true }),
  releaseStreak: Schema.optionalWith(Schema.NonNegativeInt, { exact: true }),
  late: Schema.optionalWith(Schema.Literal(true), { exact: true })
})
const encodeStored = Schema.encodeSync(Schema.parseJson(StoredDecision))
const decodeStored = Schema.decodeUnknownOption(Schema.parseJson(StoredDecision))

/** `redis://host:port/db` without user name or password, for log lines. */
const describeUrl = (url: string): string => {
  try {
    const parsed = new URL(url)
    return `${parsed.protocol}//${parsed.hostname}${parsed.port === "" ? "" : `:${parsed.port}`}${parsed.pathname}`
  } catch {
    return "redis"
  }
}

/** A SCAN pattern matching keys that start with `prefix` literally. */
const globPrefix = (prefix: string): string => `${prefix.replace(/[*?[\]\\]/g, (c) => `\\${c}`)}*`

const scanCount = 1_000
const maxScanCalls = 100_000

/** Options of a Redis connection ({@link connect}). */
export interface ConnectionOptions {
  /** A `redis://` or `rediss://` URL (it may carry a password, hence Redacted). */
  readonly url: Redacted.Redacted<string>
  /** Bound of each Redis command (default {@link defaultCommandTimeoutMs}). */
  readonly commandTimeoutMs?: number
  /** Bound of the first connection attempt at start (default {@link defaultConnectTimeoutMs}). */
  readonly connectTimeoutMs?: number
}

/**
 * One Redis connection with the store's failure rules, shared by the session store and the session
 * totals (`RedisSessionTotals`) of one server.
 */
export class Connection extends Context.Tag("@switchyard-ts/server/RedisSessionStore/Connection")<Connection, {
  readonly client: Redis
  /** The Redis URL without its credentials, for log lines. */
  readonly where: string
  /**
   * One command, bounded by the command timeout; a failure is counted in {@link errorsTotal} under
   * `operation` and fails with its reason, not logged (for a caller that logs outages itself).
   */
  readonly attempt: <A>(operation: Operation, run: () => Promise<A>) => Effect.Effect<A, string>
  /**
   * One command, bounded by the command timeout; a failure is counted in {@link errorsTotal} under
   * `operation`, logged as a warning (the Redis host, never the URL's credentials), and fails with
   * its reason.
   */
  readonly command: <A>(operation: Operation, run: () => Promise<A>) => Effect.Effect<A, string>
}>() {}

const degraded: Record<Operation, string> = {
  get: "session store unavailable; routing as if the session had no stored decision",
  put: "session store unavailable; the session decision was not stored",
  remove: "session store unavailable; the session's state was not removed (it expires after ttl_ms)",
  size: "session store unavailable; size reads 0",
  totals_add: "session store unavailable; a line was not added to its session's totals",
  totals_get: "session store unavailable; the session's totals were not read",
  breaker: "session store unavailable; circuit breaker state was not shared"
}

/** Connect (see the module doc); the connection lives as long as the `Scope`. Never fails. */
export const connect = (options: ConnectionOptions) =>
  Effect.gen(function*() {
    const url = Redacted.value(options.url)
    const where = describeUrl(url)
    const secrets = (() => {
      try {
        const parsed = new URL(url)
        return [parsed.password, decodeURIComponent(parsed.password)].filter((s) => s !== "")
      } catch {
        return []
      }
    })()
    /** An error's message, without the URL's password should a message ever contain it. */
    const describeError = (error: unknown): string => {
      const text = error instanceof Error ? error.message : "unknown error"
      return secrets.reduce((acc, secret) => acc.split(secret).join("<redacted>"), text)
    }
    const commandTimeoutMs = options.commandTimeoutMs ?? defaultCommandTimeoutMs
    const connectTimeoutMs = options.connectTimeoutMs ?? defaultConnectTimeoutMs

    const client = yield* Effect.acquireRelease(
      Effect.sync(() => {
        const redis = new Redis(url, {
          lazyConnect: true,
          connectTimeout: connectTimeoutMs,
          commandTimeout: commandTimeoutMs,
          // Fail at once while disconnected instead of queueing behind a reconnect.
          enableOfflineQueue: false,
          maxRetriesPerRequest: 0,
          retryStrategy: (times: number) => Math.min(100 * times, 2_000)
        })
        // Failures are reported per operation; without a listener ioredis prints every reconnect error.
        redis.on("error", () => {})
        return redis
      }),
      (redis) =>
        Effect.tryPromise(() => redis.quit()).pipe(
          Effect.timeoutOption(Duration.seconds(1)),
          Effect.ignore,
          Effect.ensuring(Effect.sync(() => redis.disconnect()))
        )
    )

    const connected = yield* Effect.tryPromise({ try: () => client.connect(), catch: describeError }).pipe(
      Effect.timeoutFail({ duration: Duration.millis(connectTimeoutMs), onTimeout: () => "connect timed out" }),
      Effect.either
    )
    if (Either.isLeft(connected)) {
      yield* Effect.logWarning("session store: Redis not reachable at start; sessions are not shared until it is").pipe(
        Effect.annotateLogs({ session_store: "redis", redis: where, error: connected.left })
      )
    }

    const attempt = <A>(operation: Operation, run: () => Promise<A>): Effect.Effect<A, string> =>
      Effect.tryPromise({ try: run, catch: describeError }).pipe(
        // ioredis bounds the command too; this bound also holds should a promise never settle.
        Effect.timeoutFail({ duration: Duration.millis(commandTimeoutMs + 50), onTimeout: () => "Command timed out" }),
        Effect.tapError(() => Metric.update(errorsTotal.pipe(Metric.tagged("operation", operation)), 1))
      )

    const command = <A>(operation: Operation, run: () => Promise<A>): Effect.Effect<A, string> =>
      attempt(operation, run).pipe(
        Effect.tapError((error) =>
          Effect.logWarning(degraded[operation]).pipe(
            Effect.annotateLogs({ session_store: "redis", operation, redis: where, error })
          )
        )
      )

    return Connection.of({ client, where, attempt, command })
  })

/** {@link connect} as a scoped layer (connected while the layer lives). */
export const layerConnection = (options: ConnectionOptions): Layer.Layer<Connection> =>
  Layer.scoped(Connection, connect(options))

/** Options of the store over a connection ({@link makeStore}). */
export interface StoreOptions {
  /** Idle TTL of a session, refreshed on every read and write. */
  readonly ttlMs: number
  /** Prefix of every key (default {@link defaultKeyPrefix}). */
  readonly keyPrefix?: string
}

/** The store over `connection` (see the module doc). */
export const makeStore = (connection: Connection["Type"], options: StoreOptions) =>
  Effect.gen(function*() {
    const { client } = connection
    const prefix = options.keyPrefix ?? defaultKeyPrefix
    yield* Effect.forEach(
      ["get", "put", "remove"] as const,
      (operation) => Metric.update(errorsTotal.pipe(Metric.tagged("operation", operation)), 0),
      { discard: true }
    )

    /** One bounded command; a failure (logged and counted) reads as `None`. */
    const command = <A>(operation: Operation, run: () => Promise<A>): Effect.Effect<Option.Option<A>> =>
      Effect.option(connection.command(operation, run))

    const get = (key: string): Effect.Effect<Option.Option<SessionDecision>> =>
      command("get", () => client.getex(prefix + key, "PX", options.ttlMs)).pipe(
        Effect.map((reply) => Option.flatMap(reply, (text) => (text === null ? Option.none() : decodeStored(text)))),
        Spans.withSpan("SessionStore.get", () => ({ attributes: { "switchyard.session_store": "redis" } }))
      )

    const put = (key: string, decision: SessionDecision): Effect.Effect<void> =>
      command("put", () => client.set(prefix + key, encodeStored(decision), "PX", options.ttlMs))
        .pipe(
          Effect.asVoid,
          Spans.withSpan("SessionStore.put", () => ({ attributes: { "switchyard.session_store": "redis" } }))
        )

    const remove = (key: string): Effect.Effect<void> =>
      command("remove", () => client.del(prefix + key)).pipe(
        Effect.asVoid,
        Spans.withSpan("SessionStore.remove", () => ({ attributes: { "switchyard.session_store": "redis" } }))
      )

    const pattern = globPrefix(prefix)
    const size: Effect.Effect<number> = Effect.gen(function*() {
      const seen = new Set<string>()
      let cursor = "0"
      for (let calls = 0; calls < maxScanCalls; calls++) {
        const page = yield* command("size", () => client.scan(cursor, "MATCH", pattern, "COUNT", scanCount))
        if (Option.isNone(page)) {
          return 0
        }
        const [next, keys] = page.value
        for (const key of keys) {
          seen.add(key)
        }
        cursor = next
        if (cursor === "0") {
          break
        }
      }
      return seen.size
    })

    return SessionStore.of({ get, put, remove, size })
  })

/** Build the store; the connection lives as long as the `Scope`. Never fails (see the module doc). */
export const make = (options: Options) =>
  Effect.flatMap(connect(options), (connection) => makeStore(connection, options))

/** The Redis store as a scoped layer (connected while the layer lives). */
export const layer = (options: Options): Layer.Layer<SessionStore> => Layer.scoped(SessionStore, make(options))

/** The store over the provided {@link Connection} (one connection for the store and the session totals). */
export const layerOver = (options: StoreOptions): Layer.Layer<SessionStore, never, Connection> =>
  Layer.effect(SessionStore, Effect.flatMap(Connection, (connection) => makeStore(connection, options)))
