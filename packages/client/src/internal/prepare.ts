/**
 * Outbound request preparation for one target (docs/http-api.md): the URL, the body and the
 * headers. Pure functions; the caller's objects are never mutated.
 *
 * @internal
 */
import { TranslationError } from "@switchyard-ts/protocol/Errors"
import * as Nesting from "@switchyard-ts/protocol/Nesting"
import type { NeutralRequest } from "@switchyard-ts/protocol/Neutral"
import { ChatCompletionRequest, decodeOptions } from "@switchyard-ts/protocol/OpenAiChat"
import * as Translate from "@switchyard-ts/protocol/Translate"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import type { Format, LlmClient, NativeBody, Target } from "../Target.js"
import { reservedHeaders } from "../Target.js"

/**
 * The Chat Completions URL of an `openai_chat` client: `base_url` trimmed, trailing `/` removed,
 * a trailing `/chat/completions` or `/responses` stripped, then `/chat/completions` appended.
 */
export const chatCompletionsUrl = (baseUrl: string): string => `${openAiBase(baseUrl)}/chat/completions`

/** The Responses URL of an `openai_responses` client: the same stripping, then `/responses`. */
export const responsesUrl = (baseUrl: string): string => `${openAiBase(baseUrl)}/responses`

/** `base_url` trimmed, trailing `/` removed, a trailing `/chat/completions` or `/responses` stripped. */
const openAiBase = (baseUrl: string): string => {
  let base = baseUrl.trim()
  while (base.endsWith("/")) base = base.slice(0, -1)
  for (const suffix of ["/chat/completions", "/responses"]) {
    if (base.endsWith(suffix)) {
      base = base.slice(0, -suffix.length)
      break
    }
  }
  while (base.endsWith("/")) base = base.slice(0, -1)
  return base
}

/**
 * The Messages URL of an `anthropic_messages` client: `base_url` trimmed, trailing `/` removed;
 * kept as-is when it ends with `/v1/messages`, `+/messages` when it ends with `/v1`, else
 * `+/v1/messages`.
 */
export const messagesUrl = (baseUrl: string): string => {
  let base = baseUrl.trim()
  while (base.endsWith("/")) base = base.slice(0, -1)
  if (base.endsWith("/v1/messages")) return base
  if (base.endsWith("/v1")) return `${base}/messages`
  return `${base}/v1/messages`
}

/** The token-counting URL of an `anthropic_messages` client: the Messages URL + `/count_tokens`. */
export const countTokensUrl = (baseUrl: string): string => `${messagesUrl(baseUrl)}/count_tokens`

/** The `anthropic-version` every `anthropic_messages` request carries. */
export const anthropicVersion = "2023-06-01"

const decodeChatRequest = Schema.decodeUnknownEither(ChatCompletionRequest, decodeOptions)

/**
 * The neutral request of a call's chat body, for a target of another format: `TranslationError`
 * when the body is not a valid chat request or says something the neutral request cannot hold.
 */
export const neutralOfChat = (
  body: Readonly<Record<string, unknown>>
): Either.Either<NeutralRequest, TranslationError> =>
  decodeChatRequest(body).pipe(
    Either.mapLeft(() => new TranslationError({ reason: "the request is not a valid chat completions request" })),
    Either.flatMap(Translate.fromOpenAiRequest)
  )

/**
 * The body of a call to a target of `format` other than chat: the caller's own body when it came in
 * that format (`native`), else the chat request translated through the neutral request
 * (`translate`, which fails with `TranslationError` for what that format cannot express); then the
 * format's preparation (`prepare`).
 */
export const nativeOrTranslated = (
  format: Format,
  body: Readonly<Record<string, unknown>>,
  native: NativeBody | undefined,
  translate: (request: NeutralRequest) => Either.Either<Readonly<Record<string, unknown>>, TranslationError>,
  prepare: (body: Readonly<Record<string, unknown>>) => Record<string, unknown>
): Either.Either<Record<string, unknown>, TranslationError> =>
  native !== undefined && native.format === format
    ? Either.right(prepare(native.body))
    : neutralOfChat(body).pipe(Either.flatMap(translate), Either.map(prepare))

/** Add the target's `extra_body` keys that `body` lacks (the body is a fresh copy of the caller's). */
export const addExtraBody = (body: Record<string, unknown>, target: Target): void => {
  for (const [key, value] of Object.entries(target.extraBody)) {
    if (body[key] === undefined) body[key] = value
  }
}

/**
 * The target's `reasoning_effort`, when it has one, in place of the caller's: a Chat body's
 * `reasoning_effort`, a Responses body's `reasoning.effort` (its other `reasoning` fields kept).
 */
export const forceReasoningEffort = (
  body: Record<string, unknown>,
  target: Target,
  format: "chat" | "responses"
): void => {
  const effort = target.reasoningEffort
  if (effort === undefined) return
  if (format === "chat") {
    body["reasoning_effort"] = effort
  } else {
    const reasoning = body["reasoning"]
    body["reasoning"] = Predicate.isRecord(reasoning) ? { ...reasoning, effort } : { effort }
  }
}

/**
 * The target's `system_prompt`, when it has one, before the caller's own instructions, by the
 * body's format: Chat — a `system` message first in `messages`; Messages — `system` becomes the
 * prompt when absent, else a text block of the prompt followed by the caller's system (a string
 * becoming one text block, blocks kept as they are); Responses — `instructions` becomes the prompt
 * when absent, else the prompt, a blank line and the caller's instructions. Only answer calls are
 * given a target with a prompt (see `Wire.chatWire`).
 */
export const prependSystemPrompt = (
  body: Record<string, unknown>,
  target: Target,
  format: "chat" | "messages" | "responses"
): void => {
  const prompt = target.systemPrompt
  if (prompt === undefined) return
  switch (format) {
    case "chat": {
      const messages = body["messages"]
      body["messages"] = [{ role: "system", content: prompt }, ...(Array.isArray(messages) ? messages : [])]
      return
    }
    case "messages": {
      const system = body["system"]
      const block = { type: "text", text: prompt }
      if (system === undefined || system === null) body["system"] = prompt
      else if (typeof system === "string") body["system"] = [block, { type: "text", text: system }]
      else if (Array.isArray(system)) body["system"] = [block, ...system]
      return
    }
    case "responses": {
      const instructions = body["instructions"]
      body["instructions"] = typeof instructions === "string" && instructions !== ""
        ? `${prompt}\n\n${instructions}`
        : prompt
      return
    }
  }
}

/**
 * The body sent upstream: a shallow copy of the caller's body with `model` = the target's id,
 * the target's `extra_body` keys added where the body lacks them, and the stream flags set:
 * streamed calls get `stream: true` and `stream_options.include_usage = true` unless the caller
 * set `include_usage`; buffered calls drop `stream` and `stream_options`.
 */
export const prepareBody = (
  target: Target,
  body: Readonly<Record<string, unknown>>,
  streaming: boolean
): Record<string, unknown> => {
  const out: Record<string, unknown> = { ...body, model: target.id }
  addExtraBody(out, target)
  forceReasoningEffort(out, target, "chat")
  prependSystemPrompt(out, target, "chat")
  if (streaming) {
    out["stream"] = true
    const options = out["stream_options"]
    if (Predicate.isRecord(options)) {
      if (typeof options["include_usage"] !== "boolean") out["stream_options"] = { ...options, include_usage: true }
    } else {
      out["stream_options"] = { include_usage: true }
    }
  } else {
    delete out["stream"]
    delete out["stream_options"]
  }
  return out
}

/** Most `cache_control` markers a Messages body may carry; a body at the limit gets no extra one. */
const maxCacheMarkers = 4

/** The `cache_control` markers anywhere in a body (`Nesting.count`: no recursion over the caller's data). */
const countCacheMarkers = (value: unknown): number =>
  Nesting.count(value, (node) => Object.prototype.hasOwnProperty.call(node, "cache_control"))

const ephemeral = { type: "ephemeral" }

/**
 * The last message with its last content block marked `cache_control: {"type":"ephemeral"}`
 * (string content becomes one text block); `undefined` when there is nothing to mark.
 */
const markLastBlock = (message: unknown): Record<string, unknown> | undefined => {
  if (!Predicate.isRecord(message)) return undefined
  const content = message["content"]
  if (typeof content === "string") {
    if (content.length === 0) return undefined
    return { ...message, content: [{ type: "text", text: content, cache_control: ephemeral }] }
  }
  if (!Array.isArray(content) || content.length === 0) return undefined
  const last: unknown = content[content.length - 1]
  if (!Predicate.isRecord(last) || last["type"] === "thinking" || last["type"] === "redacted_thinking") return undefined
  if (Object.prototype.hasOwnProperty.call(last, "cache_control")) return undefined
  return { ...message, content: [...content.slice(0, -1), { ...last, cache_control: ephemeral }] }
}

/** A thinking block that can be replayed: it has a non-empty signature. */
const keepsBlock = (block: unknown): boolean =>
  !(Predicate.isRecord(block) && block["type"] === "thinking" &&
    !(typeof block["signature"] === "string" && block["signature"].length > 0))

/**
 * The body sent to an `anthropic_messages` target (docs/http-api.md), from a Messages request body:
 * a shallow copy with `model` = the target's id; `reasoning_effort` and `context_management`
 * removed; `thinking` blocks without a non-empty `signature` dropped (a message left empty gets
 * `content: ""`); missing `extra_body` keys added; the last content block of the last message
 * marked `cache_control: {"type":"ephemeral"}` unless the body already has 4 markers; `stream`
 * set for streamed calls and removed for buffered ones.
 */
export const prepareAnthropicBody = (
  target: Target,
  body: Readonly<Record<string, unknown>>,
  streaming: boolean
): Record<string, unknown> => {
  const out: Record<string, unknown> = { ...body, model: target.id }
  delete out["reasoning_effort"]
  delete out["context_management"]
  const messages = out["messages"]
  if (Array.isArray(messages)) {
    out["messages"] = messages.map((message: unknown) => {
      if (!Predicate.isRecord(message) || !Array.isArray(message["content"])) return message
      const content: ReadonlyArray<unknown> = message["content"]
      const kept = content.filter(keepsBlock)
      if (kept.length === content.length) return message
      return { ...message, content: kept.length === 0 ? "" : kept }
    })
  }
  addExtraBody(out, target)
  prependSystemPrompt(out, target, "messages")
  const marked = out["messages"]
  if (Array.isArray(marked) && marked.length > 0 && countCacheMarkers(out) < maxCacheMarkers) {
    const last = markLastBlock(marked[marked.length - 1])
    if (last !== undefined) out["messages"] = [...marked.slice(0, -1), last]
  }
  if (streaming) out["stream"] = true
  else delete out["stream"]
  return out
}

/** The `anthropic-beta` header. */
export const anthropicBetaHeader = "anthropic-beta"

/**
 * Comma-separated `anthropic-beta` values merged into one: items trimmed, empty ones dropped, the
 * first occurrence of each kept, in order. `undefined` when no item is left.
 */
export const mergeBetas = (values: ReadonlyArray<string | undefined>): string | undefined => {
  const items: Array<string> = []
  for (const value of values) {
    for (const raw of (value ?? "").split(",")) {
      const item = raw.trim()
      if (item !== "" && !items.includes(item)) items.push(item)
    }
  }
  return items.length === 0 ? undefined : items.join(",")
}

const headerValue = (headers: Readonly<Record<string, string>>, name: string): string | undefined => {
  for (const [key, value] of Object.entries(headers)) {
    if (key.toLowerCase() === name) return value
  }
  return undefined
}

/**
 * The caller's `anthropic-beta` without its `oauth-*` items: those go with the caller's own OAuth
 * credential, which is never forwarded (the client's API key is sent instead).
 */
export const withoutOauthBetas = (value: string | undefined): string | undefined =>
  value?.split(",").filter((item) => !item.trim().toLowerCase().startsWith("oauth-")).join(",")

/** The caller's `anthropic-beta` reduced to its `oauth-*` items (those that go with its OAuth credential). */
const onlyOauthBetas = (value: string | undefined): string | undefined =>
  value?.split(",").filter((item) => item.trim().toLowerCase().startsWith("oauth-")).join(",")

/**
 * The caller headers a `forward_auth` client receives as they came, by format (anchor §5.3):
 * OpenAI formats `authorization`, `chatgpt-account-id`, `x-openai-fedramp`; Anthropic
 * `authorization` and `x-api-key` (and the `oauth-*` items of `anthropic-beta`, see
 * {@link prepareHeaders}); Gemini none (the deployment refuses `forward_auth` on such a client).
 */
const forwardedNames: Readonly<Record<Format, ReadonlyArray<string>>> = {
  openai_chat: ["authorization", "chatgpt-account-id", "x-openai-fedramp"],
  openai_responses: ["authorization", "chatgpt-account-id", "x-openai-fedramp"],
  anthropic_messages: ["authorization", "x-api-key"],
  gemini_generate_content: []
}

/**
 * The caller's credential headers that `client` receives: none unless it has `forward_auth`; then
 * those of {@link forwardedNames} the caller sent (lower-case names).
 */
export const forwardedCredentials = (
  client: LlmClient,
  callerHeaders: Readonly<Record<string, string>>
): Record<string, string> => {
  const out: Record<string, string> = {}
  if (client.forwardAuth !== true) return out
  for (const name of forwardedNames[client.format]) {
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
 * `extra_headers` (later entries win). Auth, `accept` and `content-type` are added by the request
 * builder after these.
 *
 * `nativeReplay` (the caller's own Messages body goes to an `anthropic_messages` client): the
 * caller's `anthropic-beta` is kept (less its `oauth-*` items, see {@link withoutOauthBetas}),
 * merged with the `anthropic-beta` of `extra_headers` by {@link mergeBetas}, the caller's items
 * first. Otherwise the caller's `anthropic-beta` is dropped
 * (a translated body may not hold what the betas announce) and `extra_headers` alone set it.
 *
 * A `forward_auth` client gets the caller's credentials last ({@link forwardedCredentials}); an
 * Anthropic one also the caller's `anthropic-beta`: whole on a native replay, else its `oauth-*`
 * items only (its `extra_headers` cannot set `anthropic-beta`).
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
  const forwardingAnthropic = client.forwardAuth === true && client.format === "anthropic_messages"
  if (options.nativeReplay || forwardingAnthropic) {
    const callerBetas = headerValue(callerHeaders, anthropicBetaHeader)
    const merged = mergeBetas([
      !forwardingAnthropic
        ? withoutOauthBetas(callerBetas)
        : options.nativeReplay
        ? callerBetas
        : onlyOauthBetas(callerBetas),
      headerValue(client.extraHeaders, anthropicBetaHeader)
    ])
    if (merged !== undefined) out[anthropicBetaHeader] = merged
  }
  return Object.assign(out, forwardedCredentials(client, callerHeaders))
}

/**
 * `f` memoized per URL. URLs come from the configuration (a base URL and a fixed suffix), so the
 * table stays small; past {@link maxMemoizedUrls} entries results are computed each time.
 */
const memoizedByUrl = <A>(f: (url: string) => A): (url: string) => A => {
  const table = new Map<string, A>()
  return (url) => {
    const known = table.get(url)
    if (known !== undefined) return known
    const made = f(url)
    if (table.size < maxMemoizedUrls) table.set(url, made)
    return made
  }
}

const maxMemoizedUrls = 1024

/** The origin (`https://host:port`) and path with query of an `http:` or `https:` URL, when it parses. */
export const originAndPath = memoizedByUrl((url): Option.Option<{ readonly origin: string; readonly path: string }> => {
  if (!URL.canParse(url)) return Option.none()
  const parsed = new URL(url)
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") return Option.none()
  return Option.some({ origin: parsed.origin, path: `${parsed.pathname}${parsed.search}` })
})

/** `server.address` / `server.port` of a URL, when it parses. */
export const serverOf = memoizedByUrl((url): Option.Option<{ readonly address: string; readonly port: number }> => {
  if (!URL.canParse(url)) return Option.none()
  const parsed = new URL(url)
  const port = parsed.port !== "" ? Number(parsed.port) : parsed.protocol === "https:" ? 443 : 80
  return Option.some({ address: parsed.hostname, port })
})
