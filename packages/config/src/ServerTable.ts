/**
 * The optional `[server]` table (docs/configuration.md): who may call the server (without it, or
 * without `api_keys_env`, every endpoint is open) and how long its connections may wait.
 */
import { integerOr, positive, readSecret } from "@switchyard-ts/routing/KeyRules"
import * as Table from "@switchyard-ts/routing/Table"
import { describeToml, failAt, keysOf, TomlBoolean, TomlInteger } from "@switchyard-ts/routing/Toml"
import * as Effect from "effect/Effect"
import type * as ParseResult from "effect/ParseResult"
import * as Predicate from "effect/Predicate"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"

/** How long the server's connections may wait, in milliseconds (each a positive integer). */
export interface Timeouts {
  /** `keep_alive_timeout_ms`: an idle keep-alive connection is closed after this long. */
  readonly keepAliveTimeoutMs: number
  /** `headers_timeout_ms`: a request whose head has not fully arrived after this long is answered 408 and closed. */
  readonly headersTimeoutMs: number
  /** `request_timeout_ms`: a request not fully received (head and body) after this long is answered 408 and closed. */
  readonly requestTimeoutMs: number
}

/** The defaults of {@link Timeouts}: Node's own (5 s idle keep-alive, 60 s for the head, 300 s for the request). */
export const defaultTimeouts: Timeouts = {
  keepAliveTimeoutMs: 5_000,
  headersTimeoutMs: 60_000,
  requestTimeoutMs: 300_000
}

/** The `[server]` table, validated. */
export interface Spec {
  /**
   * The inbound API keys: the values of the variables `api_keys_env` names (one name or an array),
   * each split on commas, read at load time. Empty: inbound auth is off.
   */
  readonly apiKeys: ReadonlyArray<Redacted.Redacted<string>>
  /** `metrics_auth` (default false): `/metrics` needs a key too. Only with `api_keys_env`. */
  readonly metricsAuth: boolean
  /** The connection timeouts ({@link defaultTimeouts} for the keys not set). */
  readonly timeouts: Timeouts
}

/** `api_keys_env`: one variable name or an array of them. */
const VariableNames = Schema.declare(
  (u): u is string | ReadonlyArray<string> =>
    Predicate.isString(u) || (Array.isArray(u) && u.every((item) => Predicate.isString(item))),
  { message: (issue) => `expected a string or an array of strings, got ${describeToml(issue.actual)}` }
)

const TimeoutKeys = Schema.Struct({
  keep_alive_timeout_ms: Schema.optional(TomlInteger),
  headers_timeout_ms: Schema.optional(TomlInteger),
  request_timeout_ms: Schema.optional(TomlInteger)
})

const keys = keysOf({
  api_keys_env: Schema.optional(VariableNames),
  metrics_auth: Schema.optional(TomlBoolean),
  ...TimeoutKeys.fields
})

/** The three timeouts, each positive; the head's must fit in the request's (Node refuses it otherwise). */
const timeoutsOf = (keys: typeof TimeoutKeys.Type): Effect.Effect<Timeouts, ParseResult.ParseIssue> =>
  Effect.gen(function*() {
    const timeouts: Timeouts = {
      keepAliveTimeoutMs: yield* integerOr(
        ["keep_alive_timeout_ms"],
        keys.keep_alive_timeout_ms,
        positive,
        defaultTimeouts.keepAliveTimeoutMs
      ),
      headersTimeoutMs: yield* integerOr(
        ["headers_timeout_ms"],
        keys.headers_timeout_ms,
        positive,
        defaultTimeouts.headersTimeoutMs
      ),
      requestTimeoutMs: yield* integerOr(
        ["request_timeout_ms"],
        keys.request_timeout_ms,
        positive,
        defaultTimeouts.requestTimeoutMs
      )
    }
    if (timeouts.headersTimeoutMs > timeouts.requestTimeoutMs) {
      return yield* failAt(
        ["headers_timeout_ms"],
        `headers_timeout_ms must not exceed request_timeout_ms (${timeouts.requestTimeoutMs}), got ${timeouts.headersTimeoutMs}`
      )
    }
    return timeouts
  })

/** The keys in one variable: its value split on commas, items trimmed, empty ones dropped; none left is an error. */
const keysOfVariable = (path: ReadonlyArray<string | number>, variable: string) =>
  Effect.flatMap(readSecret(path, "api_keys_env", variable), (value) => {
    const keys = Redacted.value(value).split(",").map((key) => key.trim()).filter((key) => key !== "")
    return keys.length === 0
      ? failAt(path, `api_keys_env ${variable} is empty`)
      : Effect.succeed(keys.map((key) => Redacted.make(key)))
  })

/**
 * The server table: every variable of `api_keys_env` read (at least one named), then
 * `metrics_auth`, which needs keys, then the connection timeouts.
 */
export const table = Table.make(
  keys,
  (keys, _context: void): Effect.Effect<Spec, ParseResult.ParseIssue> =>
    Effect.gen(function*() {
      const names = keys.api_keys_env
      const variables = names === undefined
        ? []
        : typeof names === "string"
        ? [{ path: ["api_keys_env"], variable: names }]
        : names.map((variable, i) => ({ path: ["api_keys_env", i], variable }))
      if (names !== undefined && variables.length === 0) {
        return yield* failAt(["api_keys_env"], "api_keys_env must name at least one variable")
      }
      const apiKeys = yield* Effect.forEach(variables, ({ path, variable }) => keysOfVariable(path, variable))
      const metricsAuth = keys.metrics_auth === true
      if (metricsAuth && apiKeys.length === 0) {
        return yield* failAt(["metrics_auth"], "metrics_auth needs api_keys_env")
      }
      return { apiKeys: apiKeys.flat(), metricsAuth, timeouts: yield* timeoutsOf(keys) }
    })
)

/** Decodes a `[server]` table (reading the variables through `Config`); fails at the key path of its first problem. */
export const schema: Schema.Schema<Spec, typeof keys.Encoded> = Table.schema(table, undefined)
