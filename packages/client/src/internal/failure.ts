/**
 * Mapping of upstream answers and platform errors into the protocol's `UpstreamFailure` family,
 * plus the retry rules (which failures are retryable, the backoff, `Retry-After`). Every text put
 * into an error is bounded and secret-free: platform error messages (which carry URLs and causes)
 * and raw upstream bodies are never copied. Every failure is made without a stack trace
 * (`ExpectedFailure`): each is an expected outcome of a call, shown by its fields and message only.
 *
 * @internal
 */
import type * as HttpClientError from "@effect/platform/HttpClientError"
import { DeadlineExceeded, InvalidResponse, TransportError, UpstreamStatus } from "@switchyard-ts/protocol/Errors"
import type { UpstreamFailure } from "@switchyard-ts/protocol/Errors"
import * as Nesting from "@switchyard-ts/protocol/Nesting"
import { decodeOptions, UpstreamErrorBody } from "@switchyard-ts/protocol/OpenAiChat"
import * as Plain from "@switchyard-ts/protocol/Plain"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Predicate from "effect/Predicate"
import type * as Schema from "effect/Schema"
import * as ExpectedFailure from "../ExpectedFailure.js"
import type { Format } from "../Target.js"

/** Longest upstream `error.message` kept on an `UpstreamStatus` (a cut text ends with `…`). */
export const maxMessageLength = 2000
/** Longest upstream `error.code` / `error.type` kept. */
export const maxCodeLength = 200
/** Largest `Retry-After` honoured, in milliseconds. */
export const maxRetryAfterMs = 60_000

const contextWindowPhrases: ReadonlyArray<string> = [
  "maximum context length",
  "context length exceeded",
  "context window",
  "context length is only",
  "please reduce the length of the input",
  "exceeds the maximum allowed input length",
  "exceeds the maximum allowed length",
  "is longer than the model's context length"
]

/** The phrases of an Anthropic 400 that mean the prompt does not fit (docs/operations.md). */
const anthropicContextWindowPhrases: ReadonlyArray<string> = [
  "prompt is too long",
  "maximum number of tokens",
  "context window",
  "context length"
]

/**
 * The phrases of a Gemini 400 that mean the prompt does not fit ("The input token count (…)
 * exceeds the maximum number of tokens allowed (…)").
 */
const geminiContextWindowPhrases: ReadonlyArray<string> = [
  "exceeds the maximum number of tokens",
  "input token count",
  "context window"
]

/** A `TransportError` (no stack trace). */
export const transport = (target: string, reason: string): TransportError =>
  ExpectedFailure.make(() => new TransportError({ target, reason }))

/** A `DeadlineExceeded` (no stack trace). */
export const deadline = (target: string, afterMs: number): DeadlineExceeded =>
  ExpectedFailure.make(() => new DeadlineExceeded({ target, afterMs }))

/** An `InvalidResponse` (no stack trace). */
export const invalidResponse = (target: string, reason: string): InvalidResponse =>
  ExpectedFailure.make(() => new InvalidResponse({ target, reason }))

const truncate = (text: string, max: number): string => (text.length > max ? `${text.slice(0, max - 1)}…` : text)

/** Replaces every occurrence of a secret in a text (upstreams sometimes echo a key back). */
export const redact = (text: string, secrets: ReadonlyArray<string>): string =>
  secrets.reduce((acc, secret) => (secret.length >= 4 ? acc.split(secret).join("[REDACTED]") : acc), text)

const decodeErrorBody = Plain.decoder(UpstreamErrorBody, decodeOptions)

/**
 * The JSON value of a text, if it is JSON within the nesting bound (`Nesting.parse`: `JSON.parse`
 * itself, the depth walked only for a long text; this runs on every streamed chunk).
 */
export const jsonOf = (text: string): Option.Option<unknown> => {
  const parsed = Nesting.parse(text)
  return parsed._tag === "Json" ? Option.some(parsed.value) : Option.none()
}

/**
 * The JSON value of an upstream's text (`what`: `response body`, `stream event`, …), or an
 * `InvalidResponse` saying why not: not JSON, or nested deeper than `Nesting.maxDepth`.
 */
export const jsonOrInvalid = (target: string, what: string, text: string): Either.Either<unknown, InvalidResponse> => {
  const parsed = Nesting.parse(text)
  switch (parsed._tag) {
    case "Json":
      return Either.right(parsed.value)
    case "NotJson":
      return Either.left(invalidResponse(target, `${what} is not valid JSON`))
    case "TooDeep":
      return Either.left(invalidResponse(target, Nesting.tooDeep(what)))
  }
}

/**
 * An `InvalidResponse` for tool-call arguments nesting deeper than `Nesting.maxDepth`, naming them
 * by their path in the answer as chat shape (`answer choices[0].message.tool_calls[1].function.arguments`,
 * `stream choices[0].delta.tool_calls[0].function.arguments`).
 */
export const deepArguments = (target: string, path: string): InvalidResponse =>
  invalidResponse(target, Nesting.tooDeep(path))

/** The `error` object of an upstream error body, if the value has one. */
export const errorBodyOf = (json: unknown): Option.Option<UpstreamErrorBody["error"]> =>
  Predicate.hasProperty(json, "error")
    ? Option.map(Option.getRight(decodeErrorBody(json)), (body) => body.error)
    : Option.none()

/**
 * The `retryDelay` of a Gemini error body's `google.rpc.RetryInfo` detail (`"30s"`, `"1.5s"`) in
 * milliseconds, capped like `Retry-After`: Gemini's 429 says when to come back there, not in a header.
 */
const geminiRetryDelayOf = (json: unknown): Option.Option<number> => {
  const details = Predicate.hasProperty(json, "error") && Predicate.hasProperty(json.error, "details") &&
      Array.isArray(json.error.details)
    ? json.error.details
    : []
  for (const detail of details) {
    const delay = Predicate.hasProperty(detail, "retryDelay") ? detail.retryDelay : undefined
    const seconds = Predicate.isString(delay) ? /^(\d+(?:\.\d+)?)s$/.exec(delay.trim())?.[1] : undefined
    if (seconds !== undefined) return Option.some(Math.min(Math.round(Number(seconds) * 1000), maxRetryAfterMs))
  }
  return Option.none()
}

/** The `error.status` of a Gemini error body (`{"error": {"code", "message", "status"}}`). */
const geminiStatusOf = (json: unknown): Option.Option<string> =>
  Predicate.hasProperty(json, "error") && Predicate.hasProperty(json.error, "status") &&
    Predicate.isString(json.error.status)
    ? Option.some(json.error.status)
    : Option.none()

/**
 * `Retry-After` in milliseconds: integer seconds or an HTTP-date (relative to `nowMs`; past dates
 * give 0), capped at 60 s. `None` when the header is absent or unparsable.
 */
export const parseRetryAfter = (value: string | undefined, nowMs: number): Option.Option<number> => {
  if (value === undefined) return Option.none()
  const trimmed = value.trim()
  if (/^\d+$/.test(trimmed)) return Option.some(Math.min(Number(trimmed) * 1000, maxRetryAfterMs))
  const date = Date.parse(trimmed)
  if (Number.isNaN(date)) return Option.none()
  return Option.some(Math.min(Math.max(0, date - nowMs), maxRetryAfterMs))
}

/**
 * Whether a 400 body says the context window was exceeded (docs/operations.md): for OpenAI formats
 * `error.code == "context_length_exceeded"` or one of their phrases; for `anthropic_messages` and
 * `gemini_generate_content` one of that provider's phrases; in `error.message` or the raw body,
 * case-insensitively.
 */
export const isContextWindowExceeded = (
  status: number,
  code: Option.Option<string>,
  message: Option.Option<string>,
  rawBody: string,
  format: Format = "openai_chat"
): boolean => {
  if (status !== 400) return false
  const openAi = format === "openai_chat" || format === "openai_responses"
  if (openAi && Option.contains(code, "context_length_exceeded")) return true
  const haystacks = [Option.getOrElse(message, () => ""), rawBody].map((s) => s.toLowerCase())
  const phrases = format === "anthropic_messages"
    ? anthropicContextWindowPhrases
    : format === "gemini_generate_content"
    ? geminiContextWindowPhrases
    : contextWindowPhrases
  return phrases.some((phrase) => haystacks.some((h) => h.includes(phrase)))
}

/**
 * An `UpstreamStatus` from a non-2xx answer: the body's `error.message` (bounded, secrets
 * redacted), `error.code` or `error.type` (for `gemini_generate_content`, whose `error.code` is the
 * HTTP status again, `error.status`: `RESOURCE_EXHAUSTED`, `INVALID_ARGUMENT`, …), the
 * `Retry-After` delay (for Gemini, without the header, its `RetryInfo` detail's `retryDelay`) and
 * the context-window flag.
 */
export const upstreamStatus = (options: {
  readonly target: string
  readonly status: number
  readonly body: Option.Option<string>
  readonly retryAfterMs: Option.Option<number>
  readonly secrets: ReadonlyArray<string>
  /** The target's wire format (which context-window phrases apply); `openai_chat` by default. */
  readonly format?: Format
}): UpstreamStatus => {
  const raw = Option.getOrElse(options.body, () => "")
  const error = Option.flatMap(options.body, jsonOf).pipe(Option.flatMap(errorBodyOf))
  const message = Option.flatMap(error, (e) => Option.fromNullable(e.message))
  const code = options.format === "gemini_generate_content"
    ? Option.flatMap(options.body, jsonOf).pipe(Option.flatMap(geminiStatusOf))
    : Option.flatMap(error, (e) =>
      Option.orElse(
        Option.fromNullable(e.code).pipe(Option.map(String)),
        () => Option.fromNullable(e.type)
      ))
  const contextWindowExceeded = isContextWindowExceeded(options.status, code, message, raw, options.format)
  const retryAfterMs = options.format === "gemini_generate_content" && Option.isNone(options.retryAfterMs)
    ? Option.flatMap(options.body, jsonOf).pipe(Option.flatMap(geminiRetryDelayOf))
    : options.retryAfterMs
  return ExpectedFailure.make(() =>
    new UpstreamStatus({
      target: options.target,
      status: options.status,
      ...Option.match(message, {
        onNone: () => ({}),
        onSome: (m) => ({ upstreamMessage: truncate(redact(m, options.secrets), maxMessageLength) })
      }),
      ...Option.match(code, {
        onNone: () => ({}),
        onSome: (c) => ({ upstreamCode: truncate(redact(c, options.secrets), maxCodeLength) })
      }),
      ...Option.match(retryAfterMs, { onNone: () => ({}), onSome: (ms) => ({ retryAfterMs: ms }) }),
      ...(contextWindowExceeded ? { contextWindowExceeded: true } : {})
    })
  )
}

const errorCodeOf = (cause: unknown, depth = 0): Option.Option<string> => {
  if (depth > 4 || !Predicate.isObject(cause)) return Option.none()
  if (
    Predicate.hasProperty(cause, "code") && typeof cause.code === "string" && /^[A-Z][A-Z0-9_]{1,40}$/.test(cause.code)
  ) {
    return Option.some(cause.code)
  }
  return Predicate.hasProperty(cause, "cause") ? errorCodeOf(cause.cause, depth + 1) : Option.none()
}

/** A short, secret-free reason for a platform request/response error (system error code only). */
export const transportReason = (error: HttpClientError.HttpClientError): string => {
  const code = Option.match(errorCodeOf(error.cause), { onNone: () => "", onSome: (c) => ` (${c})` })
  if (error._tag === "RequestError") {
    switch (error.reason) {
      case "Transport":
        return `connection failed${code}`
      case "Encode":
        return "request body could not be encoded"
      case "InvalidUrl":
        return "invalid upstream URL"
    }
  }
  switch (error.reason) {
    case "EmptyBody":
      return "response had no body"
    case "StatusCode":
    case "Decode":
      return `response body could not be read${code}`
  }
}

/** A `TransportError` for a platform error. */
export const transportError = (target: string, error: HttpClientError.HttpClientError): TransportError =>
  transport(target, transportReason(error))

/** A schema mismatch described by the failing paths only (values can quote the conversation). */
export const schemaMismatch = (target: string, what: string, error: ParseResult.ParseError): InvalidResponse => {
  const paths = ParseResult.ArrayFormatter.formatErrorSync(error)
    .slice(0, 3)
    .map((issue) => (issue.path.length === 0 ? "(root)" : issue.path.map(String).join(".")))
  const unique = [...new Set(paths)].map((p) => truncate(p, 100))
  return invalidResponse(target, `${what} does not match the expected schema at ${unique.join(", ")}`)
}

/**
 * A decoder of JSON text against a schema (unknown fields preserved), mapping a non-JSON text, one
 * nested deeper than `Nesting.maxDepth`, or a mismatch to `InvalidResponse` for the given target.
 */
export const decodeJsonText = <A, I>(schema: Schema.Schema<A, I>, what: string) => {
  const decode = Plain.decoder(schema, decodeOptions)
  return (target: string, text: string): Either.Either<A, InvalidResponse> =>
    Either.flatMap(
      jsonOrInvalid(target, what, text),
      (json) => Either.mapLeft(decode(json), (e) => schemaMismatch(target, what, e))
    )
}

/** Retryable: transport failures and 408, 429, 5xx. Never other statuses, never `InvalidResponse`. */
export const isRetryable = (failure: UpstreamFailure): boolean => {
  switch (failure._tag) {
    case "TransportError":
      return true
    case "UpstreamStatus":
      return failure.status === 408 || failure.status === 429 || (failure.status >= 500 && failure.status <= 599)
    case "InvalidResponse":
    case "DeadlineExceeded":
      return false
  }
}

/** Backoff base before retry `n` (0-based): 250 ms × 2^n, capped at 2 s. */
export const backoffBaseMs = (n: number): number => Math.min(250 * 2 ** Math.min(n, 3), 2000)

/** Jitter factor for a uniform `r` in [0, 1]: uniform in [0.8, 1.2], exactly 1 for `r = 0.5`. */
export const jitterFactor = (r: number): number => 1 + (r - 0.5) * 0.4

/** The `error.type` span attribute of a failure. */
export const errorType = (failure: UpstreamFailure): string => {
  switch (failure._tag) {
    case "TransportError":
      return "transport"
    case "DeadlineExceeded":
      return "timeout"
    case "InvalidResponse":
      return "invalid_response"
    case "UpstreamStatus":
      return String(failure.status)
  }
}
