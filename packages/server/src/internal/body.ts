/**
 * Reading and decoding request bodies: the size limit, JSON, and Schema errors rendered with
 * their field paths.
 */
import { InvalidRequest, RequestTooLarge } from "@switchyard-ts/protocol/Errors"
import { clip, excerpt } from "@switchyard-ts/protocol/Excerpt"
import { decodeOptions } from "@switchyard-ts/protocol/OpenAiChat"
import * as Arr from "effect/Array"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import type { ParseOptions } from "effect/SchemaAST"
import type { IncomingMessage } from "node:http"

/** Default request body limit: 16 MiB. */
export const defaultBodyLimit = 16 * 1024 * 1024

/**
 * The raw body text, failing with `RequestTooLarge` past `limit` bytes (declared or streamed).
 * Past the limit the rest of the body is discarded unread, so the 413 can still be answered on
 * the same connection.
 */
export const readText = (incoming: IncomingMessage, limit: number) =>
  Effect.suspend(() => {
    const declared = Number(incoming.headers["content-length"] ?? "0")
    if (Number.isFinite(declared) && declared > limit) return Effect.fail(new RequestTooLarge({ limitBytes: limit }))
    return Effect.async<string, RequestTooLarge | InvalidRequest>((resume) => {
      const chunks: Array<Buffer> = []
      let size = 0
      const cleanup = () => {
        incoming.off("data", onData)
        incoming.off("end", onEnd)
        incoming.off("error", onError)
      }
      const onData = (chunk: Buffer) => {
        size += chunk.length
        if (size > limit) {
          cleanup()
          chunks.length = 0
          incoming.resume()
          resume(Effect.fail(new RequestTooLarge({ limitBytes: limit })))
          return
        }
        chunks.push(chunk)
      }
      const onEnd = () => {
        cleanup()
        resume(Effect.succeed(Buffer.concat(chunks).toString("utf8")))
      }
      const onError = () => {
        cleanup()
        resume(Effect.fail(new InvalidRequest({ message: "could not read the request body" })))
      }
      incoming.on("data", onData)
      incoming.on("end", onEnd)
      incoming.on("error", onError)
      return Effect.sync(cleanup)
    })
  })

const formatPath = (path: ReadonlyArray<PropertyKey>): string =>
  path.reduce<string>(
    (acc, key) => {
      if (typeof key === "number") return `${acc}[${key}]`
      const name = clip(String(key))
      return acc === "" ? name : `${acc}.${name}`
    },
    ""
  )

/**
 * A stand-in for an offending value inside a parse issue: Effect's formatter renders a value with
 * a custom `toString` through it, so the message quotes {@link excerpt} instead of the value.
 */
class Quoted {
  constructor(private readonly value: unknown) {}
  toString(): string {
    return excerpt(this.value)
  }
}

const quoted = (actual: unknown): unknown => (actual instanceof Quoted ? actual : new Quoted(actual))

/** The same issue tree with every offending value replaced by its bounded quotation. */
const boundIssue = (issue: ParseResult.ParseIssue): ParseResult.ParseIssue => {
  switch (issue._tag) {
    case "Type":
      return new ParseResult.Type(issue.ast, quoted(issue.actual), issue.message)
    case "Missing":
      return issue
    case "Unexpected":
      return new ParseResult.Unexpected(quoted(issue.actual), issue.message)
    case "Forbidden":
      return new ParseResult.Forbidden(issue.ast, quoted(issue.actual), issue.message)
    case "Pointer":
      return new ParseResult.Pointer(issue.path, quoted(issue.actual), boundIssue(issue.issue))
    case "Refinement":
      return new ParseResult.Refinement(issue.ast, quoted(issue.actual), issue.kind, boundIssue(issue.issue))
    case "Transformation":
      return new ParseResult.Transformation(issue.ast, quoted(issue.actual), issue.kind, boundIssue(issue.issue))
    case "Composite":
      return new ParseResult.Composite(
        issue.ast,
        quoted(issue.actual),
        "_tag" in issue.issues ? boundIssue(issue.issues) : Arr.map(issue.issues, boundIssue),
        issue.output
      )
  }
}

/** Longest message shown for one issue (the expected type of a large union can be long). */
const maxIssueMessageChars = 300

/**
 * A message naming the field paths of (at most three of) a parse error's issues. Offending values
 * are quoted by {@link excerpt} (a short prefix and the length, never a whole structure), path
 * segments and each issue's message are bounded too, so the message never echoes the request.
 */
export const formatParseError = (error: ParseResult.ParseError): string => {
  const issues = ParseResult.ArrayFormatter.formatIssueSync(boundIssue(error.issue))
  const shown = issues.slice(0, 3).map((issue) => {
    const path = formatPath(issue.path)
    const message = clip(issue.message, maxIssueMessageChars)
    return path === "" ? message : `${path}: ${message}`
  })
  const more = issues.length > 3 ? ` (and ${issues.length - 3} more)` : ""
  return `Invalid request: ${shown.join("; ")}${more}`
}

/**
 * How deeply a request body may nest arrays and objects. Deeper than any real tool schema or tool
 * arguments; a deeper body is refused before it is parsed, so no recursive step (decoding,
 * translation, re-encoding) ever meets an unbounded depth.
 */
export const maxJsonDepth = 512

/**
 * Whether the JSON text nests arrays and objects deeper than `max`, by one pass over the text
 * (brackets inside strings do not count). Says nothing about validity: `JSON.parse` judges that.
 */
export const nestsDeeperThan = (text: string, max: number): boolean => {
  let depth = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (inString) {
      if (c === 92) i++ // backslash: skip the escaped character
      else if (c === 34) inString = false
    } else if (c === 34) {
      inString = true
    } else if (c === 123 || c === 91) {
      if (++depth > max) return true
    } else if (c === 125 || c === 93) {
      depth--
    }
  }
  return false
}

/**
 * Parse `text` as a JSON object: refused (`InvalidRequest`) when it nests deeper than
 * {@link maxJsonDepth} (checked before parsing), is not JSON, or is not an object.
 */
export const parseJsonObject = (text: string): Effect.Effect<object, InvalidRequest> =>
  Effect.suspend(() => {
    if (nestsDeeperThan(text, maxJsonDepth)) {
      return Effect.fail(
        new InvalidRequest({
          message: `Request body nests arrays and objects deeper than the limit of ${maxJsonDepth} levels`
        })
      )
    }
    let json: unknown
    try {
      json = JSON.parse(text)
    } catch (error) {
      return Effect.fail(
        new InvalidRequest({
          message: `Request body must be valid JSON: ${
            error instanceof Error ? clip(error.message, 120) : "parse error"
          }`
        })
      )
    }
    if (typeof json !== "object" || json === null || Array.isArray(json)) {
      return Effect.fail(new InvalidRequest({ message: "Request body must be a JSON object" }))
    }
    return Effect.succeed(json)
  })

/** Parse `text` as a JSON object ({@link parseJsonObject}) and decode it with `schema`. */
export const decodeJson = <A, I>(
  schema: Schema.Schema<A, I, never>,
  text: string,
  options: ParseOptions = decodeOptions
) => Effect.flatMap(parseJsonObject(text), (json) => decodeValue(schema, json, options))

/** Decode an already-parsed value; a violation is an `InvalidRequest` naming the field path. */
export const decodeValue = <A, I>(
  schema: Schema.Schema<A, I, never>,
  value: unknown,
  options: ParseOptions = decodeOptions
) =>
  Either.match(Schema.decodeUnknownEither(schema, options)(value), {
    onLeft: (error) => Effect.fail(new InvalidRequest({ message: formatParseError(error) })),
    onRight: Effect.succeed
  })
