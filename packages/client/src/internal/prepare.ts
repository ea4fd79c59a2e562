/**
 * What the preparation of a call shares across formats (docs/http-api.md): the neutral request of a
 * chat body, the native-or-translated choice of a body, `extra_body`, a header's value, and the
 * origin and path of a URL. Pure functions; the caller's objects are never mutated. Each format's
 * own preparation is in its module (`internal/formats/`); headers in `headers.ts`.
 *
 * @internal
 */
import { TranslationError } from "@switchyard-ts/protocol/Errors"
import type { NeutralRequest } from "@switchyard-ts/protocol/Neutral"
import { ChatCompletionRequest, decodeOptions } from "@switchyard-ts/protocol/OpenAiChat"
import * as Translate from "@switchyard-ts/protocol/Translate"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type { Format, NativeBody, Target } from "../Target.js"

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

/** The value of the header `name` (lower case) in `headers`, whatever the case of its name there. */
export const headerValue = (headers: Readonly<Record<string, string>>, name: string): string | undefined => {
  for (const [key, value] of Object.entries(headers)) {
    if (key.toLowerCase() === name) return value
  }
  return undefined
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
