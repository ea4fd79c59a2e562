/**
 * `[llm_clients.<name>]` (docs/configuration.md): where and how to call an upstream — `format`,
 * `base_url`, the credential (`api_key_env`, or `forward_auth`), `extra_headers`, `max_retries`,
 * `timeout_ms` and the circuit `breaker`. API keys are read through `Config` (the environment by
 * default) when the table is decoded, and stay `Redacted`; messages name variables, never values.
 */
import { credentialHeaders, type Format, type LlmClient } from "@switchyard-ts/client/Target"
import {
  integer,
  integerOr,
  isHeaderName,
  isHeaderValue,
  maxSafe,
  optionalInteger,
  positive,
  readHeaderSecret
} from "@switchyard-ts/routing/KeyRules"
import * as Table from "@switchyard-ts/routing/Table"
import {
  failAt,
  keysOf,
  subtable,
  tableOf,
  TomlBoolean,
  TomlInteger,
  TomlString,
  unknownVariant
} from "@switchyard-ts/routing/Toml"
import * as Arr from "effect/Array"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"

/** `breaker = { failure_threshold = N, cooldown_ms = M }`: both keys required. */
const BreakerKeys = subtable({ failure_threshold: TomlInteger, cooldown_ms: TomlInteger })

const formats = [
  "openai_chat",
  "openai_responses",
  "anthropic_messages",
  "gemini_generate_content"
] as const satisfies ReadonlyArray<Format>
const isFormat = (format: string): format is Format => Arr.contains(formats, format)
const unknownFormat = (format: string) => unknownVariant(format, formats)

/** The client's keys; `format` is checked once the other keys have their types. */
const keys = keysOf({
  format: TomlString,
  base_url: TomlString,
  api_key_env: Schema.optional(TomlString),
  forward_auth: Schema.optional(TomlBoolean),
  extra_headers: Schema.optional(tableOf(TomlString)),
  max_retries: Schema.optional(TomlInteger),
  timeout_ms: Schema.optional(TomlInteger),
  breaker: Schema.optional(BreakerKeys),
  failure_cooldown_ms: Schema.optional(TomlInteger)
}).pipe(
  Schema.filter((keys) => isFormat(keys.format) || { path: ["format"], message: unknownFormat(keys.format) })
)

/**
 * `base_url`, trimmed and parsed with `URL`, as `URL.href` without trailing `/`
 * (`https://api.example.com/` → `https://api.example.com`), so callers append
 * `/chat/completions`; a URL with a query or fragment keeps its href unchanged.
 */
const baseUrl = (input: string): Effect.Effect<string, ParseResult.ParseIssue> => {
  const path = ["base_url"]
  return Effect.try(() => new URL(input.trim())).pipe(
    Effect.orElse(() => failAt(path, "base_url must be an absolute HTTP(S) URL")),
    Effect.filterOrElse(
      (url) => (url.protocol === "http:" || url.protocol === "https:") && url.hostname !== "",
      () => failAt(path, "base_url must be an absolute HTTP(S) URL")
    ),
    Effect.map((url) => url.href.replace(/\/+$/, ""))
  )
}

/**
 * `extra_headers`: names and values that can be sent as HTTP headers (a message names the key,
 * never the value); never a credential header; an `anthropic_messages` client never
 * `anthropic-version` (it always sends its own), nor `anthropic-beta` when it forwards the caller's
 * credential (its oauth-* betas must not be replaced).
 */
const extraHeaders = (format: Format, forwardAuth: boolean, headers: Readonly<Record<string, string>>) =>
  Effect.gen(function*() {
    for (const [name, value] of Object.entries(headers)) {
      if (!isHeaderName(name)) {
        return yield* failAt(
          ["extra_headers", name],
          `extra_headers name ${JSON.stringify(name)} is not a valid HTTP header name`
        )
      }
      if (!isHeaderValue(value)) {
        return yield* failAt(
          ["extra_headers", name],
          `extra_headers value of ${JSON.stringify(name)} holds a character that cannot be sent in an HTTP header`
        )
      }
      const lower = name.toLowerCase()
      const anthropicOwn = format === "anthropic_messages" &&
        (lower === "anthropic-version" || (forwardAuth && lower === "anthropic-beta"))
      if (credentialHeaders.has(lower) || anthropicOwn) {
        return yield* failAt(["extra_headers", name], `extra_headers cannot set ${JSON.stringify(name)}`)
      }
    }
    return headers
  })

/** `breaker`, or `failure_cooldown_ms` as a breaker that opens on the first failed call. */
const breakerOf = (
  keys: { readonly breaker?: typeof BreakerKeys.Type | undefined; readonly failure_cooldown_ms?: bigint | undefined }
) =>
  Effect.gen(function*() {
    if (keys.breaker !== undefined && keys.failure_cooldown_ms !== undefined) {
      return yield* failAt(
        ["failure_cooldown_ms"],
        "failure_cooldown_ms and breaker are two ways to write one circuit breaker: give one of them"
      )
    }
    if (keys.failure_cooldown_ms !== undefined) {
      const cooldownMs = yield* integer(["failure_cooldown_ms"], keys.failure_cooldown_ms, { min: 0n, max: maxSafe })
      return cooldownMs === 0 ? Option.none() : Option.some({ failureThreshold: 1, cooldownMs })
    }
    if (keys.breaker === undefined) return Option.none()
    return Option.some({
      failureThreshold: yield* integer(["breaker", "failure_threshold"], keys.breaker.failure_threshold, positive),
      cooldownMs: yield* integer(["breaker", "cooldown_ms"], keys.breaker.cooldown_ms, positive)
    })
  })

/**
 * The client table, in order: `base_url` → `max_retries` (0..10, default 2) → `timeout_ms`
 * (positive, unset by default) → `forward_auth` (not with `api_key_env`, not on a
 * `gemini_generate_content` client) → `api_key_env` →
 * `extra_headers` → `breaker` (both keys positive) or `failure_cooldown_ms` (the compatible
 * system's form: `M` is `breaker = { failure_threshold = 1, cooldown_ms = M }`, `0` no breaker;
 * not both).
 */
export const table = Table.make(
  keys,
  (keys, context: { readonly name: string }): Effect.Effect<LlmClient, ParseResult.ParseIssue> =>
    Effect.gen(function*() {
      const format = keys.format
      // the keys' filter rejected any other format already; this narrows its type
      if (!isFormat(format)) return yield* failAt(["format"], unknownFormat(format))
      const url = yield* baseUrl(keys.base_url)
      const maxRetries = yield* integerOr(["max_retries"], keys.max_retries, { min: 0n, max: 10n }, 2)
      const timeoutMs = yield* optionalInteger(["timeout_ms"], keys.timeout_ms, positive)
      const forwardAuth = keys.forward_auth === true
      if (forwardAuth && keys.api_key_env !== undefined) {
        return yield* failAt(["forward_auth"], "cannot set both forward_auth and api_key_env")
      }
      if (forwardAuth && format === "gemini_generate_content") {
        return yield* failAt(
          ["forward_auth"],
          "is not supported on gemini_generate_content clients (a caller's Google key is never forwarded): set api_key_env"
        )
      }
      const apiKey = keys.api_key_env === undefined
        ? Option.none()
        : Option.some(yield* readHeaderSecret(["api_key_env"], "api_key_env", keys.api_key_env))
      const headers = yield* extraHeaders(format, forwardAuth, keys.extra_headers ?? {})
      const breaker = yield* breakerOf(keys)
      return {
        name: context.name,
        format,
        baseUrl: url,
        apiKey,
        forwardAuth,
        extraHeaders: headers,
        maxRetries,
        timeoutMs,
        breaker
      }
    })
)

/** Decodes the client table named `context.name`; fails at the key path of its first problem. */
export const schema = (context: { readonly name: string }): Schema.Schema<LlmClient, typeof keys.Encoded> =>
  Table.schema(table, context)
