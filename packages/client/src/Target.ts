/**
 * The resolved, validated description of an upstream: an LLM client (where and how to call) and a
 * target (which model on that client). Built by `@switchyard-ts/config`, or by hand by a library
 * consumer.
 */
import type { CredentialFamily, TranslationError } from "@switchyard-ts/protocol/Errors"
import type * as Option from "effect/Option"
import type * as Redacted from "effect/Redacted"

/**
 * Wire format of an LLM client: `openai_chat` (`POST …/chat/completions`, `Authorization: Bearer`),
 * `openai_responses` (`POST …/responses`, `Authorization: Bearer`), `anthropic_messages`
 * (`POST …/v1/messages`, `x-api-key` and `anthropic-version`) or `gemini_generate_content`
 * (`POST …/models/{model}:generateContent`, `:streamGenerateContent?alt=sse`, `x-goog-api-key`).
 */
export type Format = "openai_chat" | "openai_responses" | "anthropic_messages" | "gemini_generate_content"

/**
 * The formats whose clients may forward a caller's credential (`forward_auth`): a Gemini caller's
 * key is never forwarded, so a `gemini_generate_content` client takes a configured key only.
 */
export type ForwardingFormat = Exclude<Format, "gemini_generate_content">

/**
 * The family of caller credential that goes with `format`, for a client (what a `forward_auth`
 * client of that format forwards) and for an inbound endpoint (what a caller of that format
 * carries): `anthropic` for `anthropic_messages`, `openai` for `openai_chat` and `openai_responses`.
 */
export const credentialFamily = (format: ForwardingFormat): CredentialFamily =>
  format === "anthropic_messages" ? "anthropic" : "openai"

/**
 * The caller's original body in its own wire format, kept beside the translated chat request so
 * that a target of the same format receives it untranslated ("same-format bodies are replayed"):
 * an Anthropic Messages caller answered by an `anthropic_messages` target keeps its thinking
 * blocks, `cache_control` markers and every other Messages field.
 */
export interface NativeBody {
  readonly format: Format
  readonly body: Readonly<Record<string, unknown>>
  /**
   * Why the body cannot be sent to a target of another format, when it cannot (e.g. a Responses
   * `previous_response_id`): routing went on with what could be translated, and a call to a
   * target of another format fails with this error (400) before any HTTP request.
   */
  readonly untranslatable?: TranslationError | undefined
}

/** The `breaker` table of an LLM client, validated (both integers >= 1); see `Breaker`. */
export interface BreakerSettings {
  /** Consecutive counted failures that open the breaker. */
  readonly failureThreshold: number
  /** How long the breaker stays open before one probe is let through, in milliseconds. */
  readonly cooldownMs: number
}

/** One `[llm_clients.<name>]` table, validated. */
export interface LlmClient {
  /** The TOML table name. */
  readonly name: string
  readonly format: Format
  /** Absolute http(s) URL in normalized form, e.g. `http://127.0.0.1:8001/v1`. */
  readonly baseUrl: string
  /**
   * The key read from `api_key_env` at load time; sent as `Authorization: Bearer` (`openai_chat`,
   * `openai_responses`), `x-api-key` (`anthropic_messages`) or `x-goog-api-key`
   * (`gemini_generate_content`; never as a `?key=` query parameter).
   */
  readonly apiKey: Option.Option<Redacted.Redacted<string>>
  /**
   * `forward_auth`: the caller's own credential goes to this client instead of a configured key
   * (bring your own key; see `forwardedCredentials`). Never set together with `apiKey`, never on a
   * `gemini_generate_content` client. Absent means false.
   */
  readonly forwardAuth?: boolean
  /** Static headers sent on every call (never credential headers). */
  readonly extraHeaders: Readonly<Record<string, string>>
  /** Retries after the first attempt, 0..10. */
  readonly maxRetries: number
  /** Deadline of one logical call, retries included; none when unset. */
  readonly timeoutMs: Option.Option<number>
  /** The client's circuit breaker (`breaker` table); none (or absent) when it has none. */
  readonly breaker?: Option.Option<BreakerSettings>
}

/** One `[targets.<name>]` table, validated and joined with its client. */
export interface Target {
  /** The TOML table name (reported as `target` by `/v1/decision`). */
  readonly name: string
  /** Model id sent upstream in place of the request's `model`. */
  readonly id: string
  readonly client: LlmClient
  /** Top-level body fields added where the request lacks them. */
  readonly extraBody: Readonly<Record<string, unknown>>
  /**
   * The reasoning effort every request to this target is sent with, replacing the caller's: Chat
   * `reasoning_effort`, Responses `reasoning.effort`. Never set on an `anthropic_messages` or a
   * `gemini_generate_content` client (the deployment refuses it); absent: the caller's value, if any, as it came.
   */
  readonly reasoningEffort?: string
  /**
   * `system_prompt`: prepended to the caller's instructions on every call that answers (or may
   * answer) through this target — answer calls, an escalation's weak call, an advisor's executor
   * call — never on judge, classifier or reviewer calls nor on token counting (see
   * `UpstreamClient.CallOptions.completion`). Absent: the caller's instructions as they came.
   */
  readonly systemPrompt?: string
}

/** Headers whose values are credentials; never forwarded, never accepted in `extra_headers`. */
export const credentialHeaders: ReadonlySet<string> = new Set([
  "authorization",
  "proxy-authorization",
  "proxy-authenticate",
  "cookie",
  "set-cookie",
  "x-api-key",
  "x-goog-api-key",
  "api-key",
  "chatgpt-account-id",
  "x-openai-fedramp",
  "openai-organization",
  "openai-project"
])

/**
 * Caller headers that are never forwarded upstream as they are: credentials; the
 * connection-specific and hop-by-hop fields of RFC 9110 §7.6.1 (`connection`, `proxy-connection`,
 * `keep-alive`, `te`, `transfer-encoding`, `upgrade`, plus `trailer` and HTTP/2's `http2-settings`)
 * — the caller's `Connection` header can name more, and those are dropped too (see
 * `prepareHeaders`); `expect`, which our server answers itself (`100 Continue`) and which would make
 * the upstream call fail; framing our request builder sets (`host`, `content-length`,
 * `content-type`, `accept-encoding`); and the Anthropic version and beta headers, which the client
 * sets. `anthropic-beta` is the one exception, and only when the caller's own Messages body is
 * replayed to an `anthropic_messages` client: it is then merged with the client's `extra_headers`
 * value (see `UpstreamClient`).
 */
export const reservedHeaders: ReadonlySet<string> = new Set([
  ...credentialHeaders,
  "host",
  "content-length",
  "connection",
  "keep-alive",
  "transfer-encoding",
  "te",
  "trailer",
  "upgrade",
  "proxy-connection",
  "http2-settings",
  "expect",
  "content-type",
  "accept-encoding",
  "anthropic-beta",
  "anthropic-version"
])
