/**
 * Reading and decoding request bodies: the size limit, JSON, and Schema errors rendered with
 * their field paths.
 */
import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import type * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as Effect from "effect/Effect"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import type { ParseOptions } from "effect/SchemaAST"
import { InvalidRequest, RequestTooLarge } from "@switchyard-ts/protocol/Errors"
import { decodeOptions } from "@switchyard-ts/protocol/OpenAiChat"

/** Default request body limit: 16 MiB. */
export const defaultBodyLimit = 16 * 1024 * 1024

/**
 * The raw body text, failing with `RequestTooLarge` past `limit` bytes (declared or streamed).
 * Past the limit the rest of the body is discarded unread, so the 413 can still be answered on
 * the same connection.
 */
export const readText = (request: HttpServerRequest.HttpServerRequest, limit: number) =>
  Effect.suspend(() => {
    const declared = Number(request.headers["content-length"] ?? "0")
    if (Number.isFinite(declared) && declared > limit) return Effect.fail(new RequestTooLarge({ limitBytes: limit }))
    const incoming = NodeHttpServerRequest.toIncomingMessage(request)
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
    (acc, key) => (typeof key === "number" ? `${acc}[${key}]` : acc === "" ? String(key) : `${acc}.${String(key)}`),
    ""
  )

/** A message naming the field paths of (at most three of) a parse error's issues. */
export const formatParseError = (error: ParseResult.ParseError): string => {
  const issues = ParseResult.ArrayFormatter.formatErrorSync(error)
  const shown = issues.slice(0, 3).map((issue) => {
    const path = formatPath(issue.path)
    return path === "" ? issue.message : `${path}: ${issue.message}`
  })
  const more = issues.length > 3 ? ` (and ${issues.length - 3} more)` : ""
  return `Invalid request: ${shown.join("; ")}${more}`
}

/** Parse `text` as JSON and decode it with `schema`; any problem is an `InvalidRequest`. */
export const decodeJson = <A, I>(
  schema: Schema.Schema<A, I, never>,
  text: string,
  options: ParseOptions = decodeOptions
) =>
  Effect.gen(function*() {
    const json = yield* Effect.try({
      try: (): unknown => JSON.parse(text),
      catch: (error) =>
        new InvalidRequest({
          message: `Request body must be valid JSON: ${error instanceof Error ? error.message : "parse error"}`
        })
    })
    if (typeof json !== "object" || json === null || Array.isArray(json)) {
      return yield* new InvalidRequest({ message: "Request body must be a JSON object" })
    }
    return yield* decodeValue(schema, json, options)
  })

/** Decode an already-parsed value; a violation is an `InvalidRequest` naming the field path. */
export const decodeValue = <A, I>(
  schema: Schema.Schema<A, I, never>,
  value: unknown,
  options: ParseOptions = decodeOptions
) =>
  Schema.decodeUnknown(schema, options)(value).pipe(
    Effect.mapError((error) => new InvalidRequest({ message: formatParseError(error) }))
  )
