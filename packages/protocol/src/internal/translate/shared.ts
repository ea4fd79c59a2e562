/**
 * Format-independent helpers of every translation ({@link module:Translate},
 * {@link module:TranslateResponses}): failing with a {@link TranslationError}, reading extension
 * fields, narrowing wire unions by `type`, copying unmapped fields, and the text, image and
 * tool-argument conversions that every wire format shares.
 */
import * as Either from "effect/Either"
import * as Predicate from "effect/Predicate"
import { TranslationError } from "../../Errors.js"
import * as Nesting from "../../Nesting.js"
import type * as N from "../../Neutral.js"

/** A JSON object as read from or written to a wire body. */
export type JsonObject = { readonly [key: string]: unknown }

/** The parameters of a tool that declares none: an object schema without properties. */
export const emptyObjectSchema: JsonObject = { type: "object", properties: {} }

/** A failed translation: `Either.left` of a {@link TranslationError} with `reason`. */
export const fail = (reason: string) => Either.left(new TranslationError({ reason }))

/** The value of `key` on `o` when present (reads provider extension fields kept by `decodeOptions`). */
export const field = (o: object, key: string): unknown => Predicate.hasProperty(o, key) ? o[key] : undefined

/** The value of `key` on `o` when it is a string. */
export const stringField = (o: object, key: string): string | undefined => {
  const value = field(o, key)
  return Predicate.isString(value) ? value : undefined
}

/**
 * Narrows a wire union by its `type`. Exact because every "other" member of our unions rejects
 * the known `type` values in its schema filter.
 */
export const ofType = <B extends { readonly type?: string | undefined }, T extends string>(
  value: B,
  type: T
): value is Extract<B, { readonly type: T }> => value.type === type

/** The `type` of a wire value, `"unknown"` when it has none (for error messages). */
export const typeOf = (value: unknown): string => {
  const type = Predicate.isRecord(value) ? value["type"] : undefined
  return Predicate.isString(type) ? type : "unknown"
}

/** How an error message names a wire format's block: `an OpenAI Chat`, `an Anthropic`, `a Responses`, `a Gemini`. */
export const formatLabel = (format: N.WireFormat): string => {
  switch (format) {
    case "openai_chat":
      return "an OpenAI Chat"
    case "anthropic_messages":
      return "an Anthropic"
    case "openai_responses":
      return "a Responses"
    case "gemini_generate_content":
      return "a Gemini"
  }
}

/** A value that is neither `undefined` nor `null`. */
export const present = <A>(value: A | null | undefined): value is A => value !== undefined && value !== null

/** The fields of `body` not named in `mapped`, verbatim (a fresh object the caller may change). */
export const extraFields = (body: object, mapped: ReadonlyArray<string>): Record<string, unknown> => {
  const out: Record<string, unknown> = {}
  const entries: ReadonlyArray<readonly [string, unknown]> = Object.entries(body)
  for (const [key, value] of entries) {
    if (!mapped.includes(key)) out[key] = value
  }
  return out
}

/** `""` → no block; any other string → one text block. */
export const textBlocks = (content: string): ReadonlyArray<N.Text> =>
  content === "" ? [] : [{ _tag: "Text", text: content }]

const noArguments: Nesting.Parsed = { _tag: "Json", value: {} }

/**
 * Tool-call arguments (Chat, Responses) read with the nesting bound (`Nesting.parse`): `""` means
 * no arguments (`{}`).
 */
export const readArguments = (args: string): Nesting.Parsed => args.trim() === "" ? noArguments : Nesting.parse(args)

/**
 * Tool-call arguments as a value: {@link readArguments}, `undefined` for text that is not JSON or
 * nests deeper than the bound (what the translations of answers do with arguments that are not a
 * JSON object then applies).
 */
export const parseArguments = (args: string): unknown => argumentsValue(readArguments(args))

/** The value of read arguments; `undefined` when they are not JSON or nest too deep. */
export const argumentsValue = (parsed: Nesting.Parsed): unknown => parsed._tag === "Json" ? parsed.value : undefined

/**
 * {@link readArguments}, failing with a {@link TranslationError} naming `path` when they nest
 * deeper than the bound (a request's arguments: the caller's input).
 */
export const requestArguments = (args: string, path: string): Either.Either<Nesting.Parsed, TranslationError> => {
  const parsed = readArguments(args)
  return parsed._tag === "TooDeep" ? fail(Nesting.tooDeep(path)) : Either.right(parsed)
}

/** The base64 image of a `data:<media type>;base64,…` URL; `undefined` for any other URL. */
export const parseDataUrl = (url: string): N.ImageSource | undefined => {
  if (!url.startsWith("data:")) return undefined
  const comma = url.indexOf(",")
  if (comma < 0) return undefined
  const meta = url.slice(5, comma)
  if (!meta.endsWith(";base64")) return undefined
  const mediaType = meta.split(";")[0] ?? ""
  return mediaType === "" ? undefined : { kind: "base64", mediaType, data: url.slice(comma + 1) }
}

/** The URL of an image source: the URL itself, or a base64 source as a `data:` URL. */
export const imageUrl = (source: N.ImageSource): string =>
  source.kind === "url" ? source.url : `data:${source.mediaType};base64,${source.data}`

/**
 * Fails when the request asks for several choices (Chat's `n` > 1, kept in `extra`), which an
 * upstream of `target` cannot give.
 */
export const singleChoice = (n: N.NeutralRequest, target: N.WireFormat): Either.Either<void, TranslationError> => {
  const choices = n.extra["n"]
  return Predicate.isNumber(choices) && choices > 1
    ? fail(`n > 1 (several choices) cannot be sent to an ${target} upstream`)
    : Either.void
}

/** A user message made only of tool results (and at least one). */
export const isToolResultMessage = (message: N.ConversationEntry | undefined): message is N.NeutralMessage =>
  message !== undefined && message.role === "user" && message.blocks.length > 0 &&
  message.blocks.every((b) => b._tag === "ToolResult")
