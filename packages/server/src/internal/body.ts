/**
 * Reading and decoding request bodies: the size limit, JSON, and Schema errors rendered with
 * their field paths.
 */
import { InvalidRequest, RequestTooLarge } from "@switchyard-ts/protocol/Errors"
import { clip, excerpt } from "@switchyard-ts/protocol/Excerpt"
import * as Nesting from "@switchyard-ts/protocol/Nesting"
import { decodeOptions } from "@switchyard-ts/protocol/OpenAiChat"
import * as Plain from "@switchyard-ts/protocol/Plain"
import * as RawJson from "@switchyard-ts/protocol/RawJson"
import * as Arr from "effect/Array"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import type * as Schema from "effect/Schema"
import type { ParseOptions } from "effect/SchemaAST"
import { Buffer, isUtf8 } from "node:buffer"
import type { IncomingMessage } from "node:http"

/** Default request body limit: 16 MiB. */
export const defaultBodyLimit = 16 * 1024 * 1024

/**
 * How long a connection closing after a 413 keeps reading what the caller still sends (at most).
 */
const lingerMs = 5_000

/**
 * Past the limit: the rest of the body is read and dropped, so the caller still sending gets the
 * 413 on a connection that stays usable. When Node closes the connection after the answer (the
 * caller sent `connection: close`), it half-closes instead and keeps reading until the caller stops
 * sending (at most {@link lingerMs}): closing a socket with unread bytes would reset it, and a
 * reset can discard the 413 before the caller read it.
 */
const discardRest = (incoming: IncomingMessage): void => {
  incoming.resume()
  const socket = incoming.socket
  // Node ends a `connection: close` exchange with `destroySoon()` (end, then destroy): replaced on this socket only.
  socket.destroySoon = () => {
    socket.end()
    const timer = setTimeout(() => socket.destroy(), lingerMs).unref()
    socket.once("end", () => socket.destroy())
    socket.once("close", () => clearTimeout(timer))
  }
}

/**
 * The raw body as it arrived (the chunks; `parseBody` joins them once), failing with
 * `RequestTooLarge` past `limit` bytes (declared or streamed). Past the limit the rest of the body
 * is read and dropped ({@link discardRest}): every endpoint answers the 413 alike, and a caller
 * still sending reads it whole.
 */
export const readBody = (incoming: IncomingMessage, limit: number) =>
  Effect.suspend(() => {
    const declared = Number(incoming.headers["content-length"] ?? "0")
    if (Number.isFinite(declared) && declared > limit) {
      discardRest(incoming)
      return Effect.fail(new RequestTooLarge({ limitBytes: limit }))
    }
    return Effect.async<ReadonlyArray<Buffer>, RequestTooLarge | InvalidRequest>((resume) => {
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
          discardRest(incoming)
          resume(Effect.fail(new RequestTooLarge({ limitBytes: limit })))
          return
        }
        chunks.push(chunk)
      }
      const onEnd = () => {
        cleanup()
        resume(Effect.succeed(chunks))
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

/** The raw body text ({@link readBody} joined and decoded as UTF-8), for the small admin bodies. */
export const readText = (incoming: IncomingMessage, limit: number) =>
  Effect.map(readBody(incoming, limit), (chunks) => Buffer.concat(chunks).toString("utf8"))

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

const tooDeep = () => new InvalidRequest({ message: Nesting.tooDeep("Request body") })

/** `JSON.parse` of `text` as an object (already bounded in depth): not JSON, or not an object, is refused. */
const parseObject = (text: string): Effect.Effect<object, InvalidRequest> => {
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch (error) {
    return Effect.fail(
      new InvalidRequest({
        message: `Request body must be valid JSON: ${error instanceof Error ? clip(error.message, 120) : "parse error"}`
      })
    )
  }
  if (typeof json !== "object" || json === null || Array.isArray(json)) {
    return Effect.fail(new InvalidRequest({ message: "Request body must be a JSON object" }))
  }
  return Effect.succeed(json)
}

/**
 * Parse `text` as a JSON object: refused (`InvalidRequest`) when it nests deeper than
 * `Nesting.maxDepth` (checked before parsing, `Nesting.textDeeperThan`), is not JSON, or is not an
 * object. No recursive step (decoding, translation, re-encoding) then meets an unbounded depth.
 */
export const parseJsonObject = (text: string): Effect.Effect<object, InvalidRequest> =>
  Effect.suspend(() => Nesting.textDeeperThan(text) ? Effect.fail(tooDeep()) : parseObject(text))

/**
 * UTF-8 decoding for bodies: Node's, which gives a one-byte string for ASCII text (the standard
 * `TextDecoder` gives a two-byte one: twice the memory, for the text and for every string
 * `JSON.parse` cuts from it).
 */
const nodeUtf8: RawJson.Utf8 = {
  decode: (bytes) =>
    isUtf8(bytes) ? Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length).toString("utf8") : undefined
}

/**
 * Parse a body's bytes as a JSON object, as {@link parseJsonObject} does, reading the bytes once
 * for the nesting bound and the positions of the top-level members (`RawJson.scan`): the object,
 * and its bytes (remembered for it when they mean exactly it, so a target of the caller's format
 * can be sent them with only what changes spliced in). The object is parsed value by value
 * (`RawJson.parse`); a body that is not an exact JSON object is parsed whole, so a bad one is
 * refused in `JSON.parse`'s words.
 */
export const parseBody = (
  chunks: ReadonlyArray<Uint8Array>
): Effect.Effect<{ readonly json: object; readonly raw: RawJson.RawJson }, InvalidRequest> =>
  Effect.suspend(() => {
    const scanned = RawJson.scan(chunks, Nesting.maxDepth)
    if (scanned._tag === "Refused") return Effect.fail(tooDeep())
    const parsed = RawJson.parse(scanned.raw, nodeUtf8)
    if (parsed !== undefined) return Effect.succeed({ json: parsed, raw: scanned.raw })
    const { raw, text } = RawJson.text(scanned.raw, nodeUtf8)
    return Effect.map(parseObject(text), (json) => ({ json, raw }))
  })

/** Parse `text` as a JSON object ({@link parseJsonObject}) and decode it with `schema`. */
export const decodeJson = <A, I>(
  schema: Schema.Schema<A, I, never>,
  text: string,
  options: ParseOptions = decodeOptions
) => Effect.flatMap(parseJsonObject(text), (json) => decodeValue(schema, json, options))

/**
 * An already-parsed value checked by `decode` (a `Plain.decoder`: the value itself when the schema
 * holds, without a copy), a violation an `InvalidRequest` naming the field paths.
 */
export const validateValue = <A>(
  decode: (value: unknown) => Either.Either<A, ParseResult.ParseError>,
  value: unknown
): Effect.Effect<A, InvalidRequest> =>
  Either.match(decode(value), {
    onLeft: (error) => Effect.fail(new InvalidRequest({ message: formatParseError(error) })),
    onRight: Effect.succeed
  })

/** Decode an already-parsed value; a violation is an `InvalidRequest` naming the field path. */
export const decodeValue = <A, I>(
  schema: Schema.Schema<A, I, never>,
  value: unknown,
  options: ParseOptions = decodeOptions
) => validateValue(Plain.decoder(schema, options), value)
