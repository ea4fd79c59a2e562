/**
 * The optional `[server]` table (docs/configuration.md): who may call the server. Without it (or
 * without `api_keys_env`) every endpoint is open.
 */
import * as Effect from "effect/Effect"
import type * as ParseResult from "effect/ParseResult"
import * as Predicate from "effect/Predicate"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import { readSecret } from "./internal/rules.js"
import * as Table from "./internal/table.js"
import { describeToml, failAt, keysOf, TomlBoolean } from "./internal/toml.js"

/** The `[server]` table, validated. */
export interface Spec {
  /**
   * The inbound API keys: the values of the variables `api_keys_env` names (one name or an array),
   * each split on commas, read at load time. Empty: inbound auth is off.
   */
  readonly apiKeys: ReadonlyArray<Redacted.Redacted<string>>
  /** `metrics_auth` (default false): `/metrics` needs a key too. Only with `api_keys_env`. */
  readonly metricsAuth: boolean
}

/** `api_keys_env`: one variable name or an array of them. */
const VariableNames = Schema.declare(
  (u): u is string | ReadonlyArray<string> =>
    Predicate.isString(u) || (Array.isArray(u) && u.every((item) => Predicate.isString(item))),
  { message: (issue) => `expected a string or an array of strings, got ${describeToml(issue.actual)}` }
)

const keys = keysOf({
  api_keys_env: Schema.optional(VariableNames),
  metrics_auth: Schema.optional(TomlBoolean)
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
 * `metrics_auth`, which needs keys.
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
      return { apiKeys: apiKeys.flat(), metricsAuth }
    })
)

/** Decodes a `[server]` table (reading the variables through `Config`); fails at the key path of its first problem. */
export const schema: Schema.Schema<Spec, typeof keys.Encoded> = Table.schema(table, undefined)
