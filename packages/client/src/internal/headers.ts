/**
 * The headers of a call's requests (docs/http-api.md): the caller's kept ones, the client's
 * `extra_headers`, what the target's format carries over of the caller's (`carryHeaders`), the
 * caller's credentials for a `forward_auth` client, the client's auth, and the trace context of
 * the call's span; and what is redacted from upstream text kept on an error of the call.
 *
 * @internal
 */
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpTraceContext from "@effect/platform/HttpTraceContext"
import type * as Fiber from "effect/Fiber"
import * as FiberRef from "effect/FiberRef"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import type { LlmClient } from "../Target.js"
import { reservedHeaders } from "../Target.js"
import type { Wire } from "./format.js"
import * as Formats from "./formats.js"
import { headerValue } from "./prepare.js"

/**
 * The caller's credential headers that `client` receives: none unless it has `forward_auth`; then
 * those of its format's `forwardedHeaders` the caller sent (lower-case names): OpenAI formats
 * `authorization`, `chatgpt-account-id`, `x-openai-fedramp`; Anthropic `authorization` and
 * `x-api-key`; Gemini none (the deployment refuses `forward_auth` on such a client).
 */
export const forwardedCredentials = (
  client: LlmClient,
  callerHeaders: Readonly<Record<string, string>>
): Record<string, string> => {
  const out: Record<string, string> = {}
  if (client.forwardAuth !== true) return out
  for (const name of Formats.of(client.format).forwardedHeaders) {
    const value = headerValue(callerHeaders, name)
    if (value !== undefined) out[name] = value
  }
  return out
}

/**
 * What is redacted from upstream text kept on an error of a call to `client`: its configured key,
 * or — for a `forward_auth` client — the caller's forwarded credentials (whole values, and the
 * token of a `Bearer` value).
 */
export const secretsOf = (
  client: LlmClient,
  callerHeaders: Readonly<Record<string, string>>
): ReadonlyArray<string> => {
  if (client.forwardAuth !== true) {
    return Option.match(client.apiKey, { onNone: () => [], onSome: (key) => [Redacted.value(key)] })
  }
  return Object.values(forwardedCredentials(client, callerHeaders)).flatMap((value) => {
    const bearer = /^bearer\s+(.+)$/i.exec(value.trim())
    return bearer?.[1] === undefined ? [value] : [value, bearer[1]]
  })
}

/**
 * The header names a caller's `Connection` header lists (RFC 9110 §7.6.1): they are meant for the
 * hop to us only and are not forwarded.
 */
const connectionOptions = (callerHeaders: Readonly<Record<string, string>>): ReadonlySet<string> => {
  const names = new Set<string>()
  for (const [name, value] of Object.entries(callerHeaders)) {
    if (name.toLowerCase() !== "connection") continue
    for (const option of value.split(",")) {
      const trimmed = option.trim().toLowerCase()
      if (trimmed !== "") names.add(trimmed)
    }
  }
  return names
}

/**
 * The forwarded and static headers, in order: the caller's headers minus the reserved set
 * (case-insensitive) and minus those its `Connection` header names, then the client's
 * `extra_headers` (later entries win), then what the client's format carries over of the caller's
 * (`UpstreamFormat.carryHeaders`: the `anthropic-beta` of a native replay, see `formats/anthropicBeta.ts`),
 * then — for a `forward_auth` client — the caller's credentials ({@link forwardedCredentials}).
 * Auth, `accept` and `content-type` are added by {@link requestHeaders} after these.
 *
 * `nativeReplay`: the caller's own body goes to a client of its format.
 */
export const prepareHeaders = (
  client: LlmClient,
  callerHeaders: Readonly<Record<string, string>>,
  options: { readonly nativeReplay: boolean } = { nativeReplay: false }
): Record<string, string> => {
  const out: Record<string, string> = {}
  const connectionScoped = connectionOptions(callerHeaders)
  for (const [name, value] of Object.entries(callerHeaders)) {
    const lower = name.toLowerCase()
    if (!reservedHeaders.has(lower) && !connectionScoped.has(lower)) out[lower] = value
  }
  for (const [name, value] of Object.entries(client.extraHeaders)) {
    out[name.toLowerCase()] = value
  }
  Formats.of(client.format).carryHeaders(out, client, callerHeaders, options.nativeReplay)
  return Object.assign(out, forwardedCredentials(client, callerHeaders))
}

/**
 * The trace context (`traceparent`, `b3`) of the span a request is made in (`libsy.client_call`),
 * unless tracing or `HttpClient.currentTracerPropagation` is off or the span is not one of ours:
 * then a caller's own `traceparent`, forwarded as a caller header, stays as it came.
 */
const traceHeaders = (fiber: Fiber.RuntimeFiber<unknown, unknown>): Readonly<Record<string, string>> => {
  if (!fiber.getFiberRef(FiberRef.currentTracerEnabled) || !fiber.getFiberRef(HttpClient.currentTracerPropagation)) {
    return {}
  }
  const span = fiber.currentSpan
  return span !== undefined && span._tag === "Span" ? HttpTraceContext.toHeaders(span) : {}
}

/**
 * The headers of every request of a call: the caller's minus the reserved ones, then the client's
 * `extra_headers` ({@link prepareHeaders}), then its auth (`UpstreamFormat.authHeaders`: never a
 * key in the URL, which ends up in logs and spans), `accept`, `content-type`, and the trace
 * context of the calling `fiber`'s span.
 */
export const requestHeaders = (
  client: LlmClient,
  callerHeaders: Readonly<Record<string, string>>,
  wire: Wire,
  streaming: boolean,
  fiber: Fiber.RuntimeFiber<unknown, unknown>
): Record<string, string> => ({
  ...prepareHeaders(client, callerHeaders, { nativeReplay: wire.nativeReplay }),
  ...Formats.of(client.format).authHeaders(Option.map(client.apiKey, Redacted.value)),
  accept: streaming ? "text/event-stream" : "application/json",
  "content-type": "application/json",
  ...traceHeaders(fiber)
})
