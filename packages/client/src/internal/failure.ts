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

/** Longest upstream `error.message` kept on an `UpstreamStatus` (a cut text ends with `…`). */
export const maxMessageLength = 2000
/** Longest upstream `error.code` / `error.type` kept. */
export const maxCodeLength = 200
/** Largest `Retry-After` honoured, in milliseconds. */
export const maxRetryAfterMs = 60_000

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
 * How a format's error bodies are read: which field is the upstream code, which codes and phrases
 * mean the context window was exceeded, and a retry delay the body itself may name. Each format's
 * record holds one (`UpstreamFormat.errors`).
 */
export interface ErrorVocabulary {
  /** The upstream code of an error body (`json`: the body parsed, `error`: its `error` object decoded). */
  readonly codeOf: (
    json: Option.Option<unknown>,
    error: Option.Option<UpstreamErrorBody["error"]>
  ) => Option.Option<string>
  /** Upstream codes that mean the context window was exceeded. */
  readonly contextWindowCodes: ReadonlyArray<string>
  /** Phrases (lower case) of an error message or body that mean the context window was exceeded. */
  readonly contextWindowPhrases: ReadonlyArray<string>
  /** The retry delay a body names (ms, capped at {@link maxRetryAfterMs}) when no `Retry-After` header gave one. */
  readonly retryAfterOf: (json: unknown) => Option.Option<number>
}

/** The `error.code` (as text) of an error object, else its `error.type`. */
export const codeOrTypeOf = (
  _json: Option.Option<unknown>,
  error: Option.Option<UpstreamErrorBody["error"]>
): Option.Option<string> =>
  Option.flatMap(error, (e) =>
    Option.orElse(
      Option.fromNullable(e.code).pipe(Option.map(String)),
      () => Option.fromNullable(e.type)
    ))

/** A body names no retry delay. */
export const noRetryAfter = (_json: unknown): Option.Option<number> => Option.none()

/**
 * Whether a 400 body says the context window was exceeded (docs/operations.md): its upstream code
 * is one of the format's `contextWindowCodes`, or one of its phrases is in `error.message` or the
 * raw body, case-insensitively.
 */
export const isContextWindowExceeded = (
  status: number,
  code: Option.Option<string>,
  message: Option.Option<string>,
  rawBody: string,
  errors: ErrorVocabulary
): boolean => {
  if (status !== 400) return false
  if (Option.isSome(code) && errors.contextWindowCodes.includes(code.value)) return true
  const haystacks = [Option.getOrElse(message, () => ""), rawBody].map((s) => s.toLowerCase())
  return errors.contextWindowPhrases.some((phrase) => haystacks.some((h) => h.includes(phrase)))
}

/**
 * An `UpstreamStatus` from a non-2xx answer (or an in-band error) read with the target format's
 * vocabulary (`errors`): the body's `error.message` (bounded, secrets redacted), its upstream code
 * ({@link ErrorVocabulary.codeOf}), the `Retry-After` delay (without the header, the delay the body
 * names, when the format has one) and the context-window flag.
 */
export const upstreamStatus = (options: {
  readonly target: string
  readonly status: number
  readonly body: Option.Option<string>
  readonly retryAfterMs: Option.Option<number>
  readonly secrets: ReadonlyArray<string>
  /** The target format's error vocabulary (`UpstreamFormat.errors`). */
  readonly errors: ErrorVocabulary
}): UpstreamStatus => {
  const raw = Option.getOrElse(options.body, () => "")
  const json = Option.flatMap(options.body, jsonOf)
  const error = Option.flatMap(json, errorBodyOf)
  const message = Option.flatMap(error, (e) => Option.fromNullable(e.message))
  const code = options.errors.codeOf(json, error)
  const contextWindowExceeded = isContextWindowExceeded(options.status, code, message, raw, options.errors)
  const retryAfterMs = Option.isNone(options.retryAfterMs)
    ? Option.flatMap(json, options.errors.retryAfterOf)
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
