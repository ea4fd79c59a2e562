/**
 * Call preparation: what one logical call sends — the URL, the prepared body, the span's operation
 * name — by the target's format record (`formats.ts`), and the bytes of that body. The headers are
 * in `headers.ts`.
 *
 * @internal
 */
import type { TranslationError } from "@switchyard-ts/protocol/Errors"
import * as RawJson from "@switchyard-ts/protocol/RawJson"
import * as Either from "effect/Either"
import type { Target } from "../Target.js"
import type { CallOptions } from "../UpstreamClient.js"
import type { ResponsesAuxiliary, Wire } from "./format.js"
import * as Formats from "./formats.js"

export type { ResponsesAuxiliary, Wire } from "./format.js"

/** `target` without its `system_prompt`: what a routing-only call (judge, reviewer) is prepared for. */
const withoutSystemPrompt = (target: Target): Target => {
  if (target.systemPrompt === undefined) return target
  const { systemPrompt: _prompt, ...rest } = target
  return rest
}

/**
 * The URL and body of a chat call to `options.target` (its `system_prompt` applied only when
 * `options.completion` is set), by the client's format (`UpstreamFormat.chatWire`): a chat request
 * prepared for a chat target, or a body of the target's format, which fails with
 * `TranslationError` when the request cannot be expressed in that API (or when the caller's own
 * body, of another format, cannot be sent to another format: `UpstreamFormat.untranslatable`).
 */
export const chatWire = (options: CallOptions, streaming: boolean): Either.Either<Wire, TranslationError> => {
  const target = options.completion === true ? options.target : withoutSystemPrompt(options.target)
  const format = Formats.of(target.client.format)
  const untranslatable = options.native?.untranslatable
  if (untranslatable !== undefined && options.native !== undefined && options.native.format !== format.format) {
    return Either.left(format.untranslatable(options.native, untranslatable))
  }
  return format.chatWire(target, options, streaming)
}

/**
 * The bytes a call sends: the caller's own bytes with what the prepared body changed spliced in
 * (`RawJson.encode`), when the server kept them for the body it was prepared from; else the
 * prepared body serialized.
 */
export const encodedBody = (wire: Wire): string | ReadonlyArray<Uint8Array> => {
  const raw = wire.source === undefined ? undefined : RawJson.of(wire.source)
  const spliced = raw === undefined || wire.source === undefined
    ? undefined
    : RawJson.encode(raw, wire.source, wire.body)
  return spliced ?? JSON.stringify(wire.body)
}

/**
 * `POST …/count_tokens` of the target's format with the caller's body, `model` set to the target's
 * id; `undefined` when the format counts no tokens (`UpstreamFormat.countTokensUrl`).
 */
export const countTokensWire = (options: CallOptions): Wire | undefined => {
  const url = Formats.of(options.target.client.format).countTokensUrl
  return url === undefined ? undefined : {
    url: url(options.target.client.baseUrl),
    body: { ...options.body, model: options.target.id },
    source: options.body,
    operation: "count_tokens",
    nativeReplay: true
  }
}

/**
 * `POST …/responses/<operation>` with the caller's body, `model` set to the target's id;
 * `undefined` when the target's format has no such operation (`UpstreamFormat.auxiliaryUrl`).
 */
export const responsesAuxiliaryWire = (options: CallOptions, operation: ResponsesAuxiliary): Wire | undefined => {
  const url = Formats.of(options.target.client.format).auxiliaryUrl
  return url === undefined ? undefined : {
    url: url(options.target.client.baseUrl, operation),
    body: { ...options.body, model: options.target.id },
    source: options.body,
    operation,
    nativeReplay: true
  }
}

/** `gen_ai.request.*` sampling attributes present in a request body (numbers only, no content). */
export const requestAttributes = (body: Readonly<Record<string, unknown>>): Record<string, number> => {
  const attributes: Record<string, number> = {}
  const copy = (field: string, attribute: string) => {
    const value = body[field]
    if (typeof value === "number") attributes[attribute] = value
  }
  copy("temperature", "gen_ai.request.temperature")
  copy("top_p", "gen_ai.request.top_p")
  copy("max_tokens", "gen_ai.request.max_tokens")
  copy("max_completion_tokens", "gen_ai.request.max_tokens")
  return attributes
}
