/**
 * The optional `[sessions]` table (docs/configuration.md): where session decisions live — in this
 * process, or in a Redis shared by several replicas — and their bounds. This package only describes
 * the store; the server builds it (`Deployment.layer` always uses the memory store).
 */
import { integerOr, maxSafe } from "@switchyard-ts/routing/KeyRules"
import * as SessionStore from "@switchyard-ts/routing/SessionStore"
import * as Table from "@switchyard-ts/routing/Table"
import { failAt, keysOf, TomlInteger, TomlString, TomlVariant } from "@switchyard-ts/routing/Toml"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as ParseResult from "effect/ParseResult"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import type * as Types from "effect/Types"

/** Where session decisions live: in this process, or in a Redis shared by several replicas. */
export type SessionStoreKind = "memory" | "redis"

/**
 * The `[sessions]` table, validated: `store` (default `memory`); `url`, a `redis://` or
 * `rediss://` URL, required for (and only for) `redis`, and redacted since it may carry a password;
 * `max_entries` >= 1 (default 100000; least recently used sessions are evicted beyond it; memory
 * store only, Redis is bounded by its own `maxmemory`); `ttl_ms` >= 1 (default 3600000: a session
 * idle for longer is forgotten, in Redis the key's expiry refreshed on every read and write).
 */
export type Spec = Types.Simplify<
  {
    readonly store: SessionStoreKind
    readonly url: Option.Option<Redacted.Redacted<string>>
  } & SessionStore.MemoryOptions
>

const keys = keysOf({
  store: Schema.optional(TomlVariant("memory", "redis") satisfies Schema.Schema<SessionStoreKind>),
  url: Schema.optional(TomlString),
  max_entries: Schema.optional(TomlInteger),
  ttl_ms: Schema.optional(TomlInteger)
})

/** A `redis://` or `rediss://` URL with a host; the message never repeats the URL (it may hold a password). */
const redisUrl = (input: string): Effect.Effect<Redacted.Redacted<string>, ParseResult.ParseIssue> => {
  const invalid = failAt(["url"], "url must be a redis:// or rediss:// URL")
  return Effect.try(() => new URL(input.trim())).pipe(
    Effect.orElse(() => invalid),
    Effect.filterOrElse(
      (url) => (url.protocol === "redis:" || url.protocol === "rediss:") && url.hostname !== "",
      () => invalid
    ),
    Effect.as(Redacted.make(input.trim()))
  )
}

/**
 * The sessions table, in order: `url` required with `store = "redis"` and rejected with `memory`,
 * `max_entries` rejected with `redis`, then the URL and the bounds.
 */
export const table = Table.make(
  keys,
  (keys, _context: void): Effect.Effect<Spec, ParseResult.ParseIssue> =>
    Effect.gen(function*() {
      const store = keys.store ?? "memory"
      if (store === "redis" && keys.url === undefined) {
        return yield* failAt(["url"], "url is required when store = \"redis\"")
      }
      if (store === "memory" && keys.url !== undefined) {
        return yield* failAt(["url"], "url applies to store = \"redis\" only")
      }
      if (store === "redis" && keys.max_entries !== undefined) {
        return yield* failAt(
          ["max_entries"],
          "max_entries applies to store = \"memory\" only (bound Redis with its maxmemory setting)"
        )
      }
      const url = keys.url === undefined ? Option.none() : Option.some(yield* redisUrl(keys.url))
      const maxEntries = yield* integerOr(
        ["max_entries"],
        keys.max_entries,
        { min: 1n, max: maxSafe },
        SessionStore.defaults.maxEntries
      )
      const ttlMs = yield* integerOr(["ttl_ms"], keys.ttl_ms, { min: 1n, max: maxSafe }, SessionStore.defaults.ttlMs)
      return { store, url, maxEntries, ttlMs }
    })
)

/** Decodes a `[sessions]` table; fails at the key path of its first problem. */
export const schema: Schema.Schema<Spec, typeof keys.Encoded> = Table.schema(table, undefined)
