/**
 * The circuit breakers' shared store (`Breaker.SharedStore`) in the Redis of the session store, so
 * that a breaker open on one replica is open on every replica (docs/operations.md, circuit breakers
 * across replicas). `[sessions] store = "redis"` selects it, over the session store's connection
 * (`Server.sessionLayers`).
 *
 * - Keys: `<keyPrefix><client>` (prefix `switchyard:breaker:` by default, beside the session
 *   store's `switchyard:session:`) holds the client's `Breaker.SharedRecord` as JSON, without
 *   expiry (one key per client with a breaker); an undecodable value reads as absent. A write is one
 *   script that replaces the value only with a newer record (`opened_at` / `closed_at`), so
 *   transitions written out of order keep the newest.
 * - The probe lease of an opening is `<keyPrefix><client>\0probe\0<opened_at>`, taken with
 *   `SET … NX PX <ttl>` (its value names the holder, `host:pid`, for an operator's eyes only); it
 *   expires on its own.
 * - Every command is bounded by the connection's command timeout and never queued while Redis is
 *   down. A failed one is counted in `switchyard_session_store_errors_total{operation="breaker"}`
 *   and fails with `SharedStoreUnavailable` (the breakers then decide on their own). The outage is
 *   logged once: a WARN at the first failure, an INFO when Redis answers again — not a line per
 *   command (the breakers' sync asks four times a second).
 */
import * as Breaker from "@switchyard-ts/client/Breaker"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import * as Schema from "effect/Schema"
import { hostname } from "node:os"
import * as RedisSessionStore from "./RedisSessionStore.js"

/** Options of the store. */
export interface Options {
  /** Prefix of every key (default {@link defaultKeyPrefix}). */
  readonly keyPrefix?: string
}

/** Keys are namespaced `switchyard:breaker:<llm client>`. */
export const defaultKeyPrefix = "switchyard:breaker:"

/** The key of the probe lease of `client`'s opening at `openedAt`, under `prefix`. */
export const leaseKey = (prefix: string, client: string, openedAt: number): string =>
  `${prefix}${client}\u0000probe\u0000${openedAt}`

/** Set KEYS[1] to ARGV[1] unless it holds a record at least as new as ARGV[2]; 1 when set. */
const writeIfNewer = `
local stored = redis.call('GET', KEYS[1])
if stored then
  local ok, record = pcall(cjson.decode, stored)
  if ok and type(record) == 'table' then
    local at = tonumber(record['opened_at'] or record['closed_at'])
    if at and at >= tonumber(ARGV[2]) then return 0 end
  end
end
redis.call('SET', KEYS[1], ARGV[1])
return 1
`

const encodeRecord = Schema.encodeSync(Schema.parseJson(Breaker.SharedRecord))
const decodeRecord = Schema.decodeUnknownOption(Schema.parseJson(Breaker.SharedRecord))

/** The store over `connection` (see the module doc). */
export const make = (connection: RedisSessionStore.Connection["Type"], options: Options = {}) =>
  Effect.gen(function*() {
    const { client, where } = connection
    const prefix = options.keyPrefix ?? defaultKeyPrefix
    const holder = `${hostname()}:${process.pid}`
    const reachable = yield* Ref.make(true)
    yield* Metric.update(RedisSessionStore.errorsTotal.pipe(Metric.tagged("operation", "breaker")), 0)
    const annotations = { session_store: "redis", operation: "breaker", redis: where }

    /** One bounded command; the first failure of an outage and the first success after it are logged. */
    const command = <A>(operation: Breaker.SharedStoreUnavailable["operation"], run: () => Promise<A>) =>
      connection.attempt("breaker", run).pipe(
        Effect.tapBoth({
          onFailure: (error) =>
            Effect.flatMap(Ref.getAndSet(reachable, false), (was) =>
              was
                ? Effect.logWarning(
                  "circuit breakers: Redis unavailable; each replica's breakers decide on their own until it answers"
                ).pipe(Effect.annotateLogs({ ...annotations, error }))
                : Effect.void),
          onSuccess: () =>
            Effect.flatMap(Ref.getAndSet(reachable, true), (was) =>
              was
                ? Effect.void
                : Effect.logInfo("circuit breakers: Redis answers again; breaker state is shared").pipe(
                  Effect.annotateLogs(annotations)
                ))
        }),
        Effect.mapError(() => new Breaker.SharedStoreUnavailable({ operation }))
      )

    return Breaker.SharedStore.of({
      reachable: Ref.get(reachable),
      read: (clients) =>
        clients.length === 0
          ? Effect.succeed([])
          : Effect.map(
            command("read", () => client.mget(clients.map((name) => prefix + name))),
            (values) => clients.map((_, i) => Option.flatMap(Option.fromNullable(values[i]), decodeRecord))
          ),
      write: (name, record) =>
        Effect.asVoid(
          command(
            "write",
            () => client.eval(writeIfNewer, 1, prefix + name, encodeRecord(record), Breaker.recordTime(record))
          )
        ),
      lease: (name, openedAt, ttlMs) =>
        Effect.map(
          command("lease", () => client.set(leaseKey(prefix, name, openedAt), holder, "PX", ttlMs, "NX")),
          (reply) => reply === "OK"
        )
    })
  })

/** The store over the provided session store connection (one Redis client per server). */
export const layer = (options: Options = {}): Layer.Layer<Breaker.SharedStore, never, RedisSessionStore.Connection> =>
  Layer.effect(
    Breaker.SharedStore,
    Effect.flatMap(RedisSessionStore.Connection, (connection) => make(connection, options))
  )
