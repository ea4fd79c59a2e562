/**
 * A JSON request body as the caller sent it: its bytes, kept so that a body forwarded to a target
 * of its own format is the caller's bytes with only what changes spliced in, instead of the whole
 * document serialized again (an agent's conversation is hundreds of kilobytes; the changes are a
 * few fields).
 *
 * {@link scan} reads the bytes once: it bounds the nesting depth (a deeper body is refused before
 * any recursive step meets it), and records where the top-level object's members are (and, for a
 * member whose value is an array, where its elements are). It also says whether the bytes mean
 * exactly what `JSON.parse` of their text gives ({@link RawJson.exact}): valid UTF-8, no key written
 * with an escape, no key twice in one object (the parser keeps the last of duplicates; an upstream
 * parser may keep the first, or refuse the body). Only an exact body is ever forwarded as bytes.
 *
 * {@link parse} parses the body value by value from those positions, which is what `JSON.parse` of
 * the whole text gives without a string of the whole text; {@link text} is that string, for a body
 * `parse` leaves whole (not an exact object, or not JSON).
 *
 * {@link encode} writes a body that differs from the caller's parsed object only in some top-level
 * members (or some elements of a top-level array): the caller's bytes for what is unchanged (by
 * reference), `JSON.stringify` of what changed. Its result means the same JSON as
 * `JSON.stringify(changed)`.
 *
 * Where the bytes travel: the server {@link remember}s them for the very object it parsed them into,
 * and the upstream client finds them with {@link of} for the body it sends — so only that object,
 * never a copy or an amended body (another object), is ever written from them.
 */
import * as Scan from "./internal/rawJsonScan.js"
import { CLOSE_ARRAY, CLOSE_OBJECT, COLON, COMMA } from "./internal/rawJsonScan.js"

/** A byte range `[start, end)` of the body. */
export interface Span {
  readonly start: number
  readonly end: number
}

/** One member of the top-level object. */
export interface Member {
  /** Its key, as `JSON.parse` reads it. */
  readonly key: string
  /** From the key's opening quote to the end of the value. */
  readonly span: Span
  /** Where the key's closing quote ends. */
  readonly keyEnd: number
  /** The value. */
  readonly value: Span
  /** When the value is an array: its elements. */
  readonly elements: ReadonlyArray<Span> | undefined
}

/** A body's bytes and the positions of its top-level members. */
export interface RawJson {
  readonly chunks: ReadonlyArray<Uint8Array>
  readonly size: number
  /** The top-level object, from its `{` to its `}`; empty when the body is not an object. */
  readonly root: Span
  /** The top-level object's members in document order; empty when the body is not an object. */
  readonly members: ReadonlyArray<Member>
  /**
   * The bytes mean exactly `JSON.parse` of their text: valid UTF-8, no escaped key, no duplicate
   * key in any object. Set by {@link text}'s decoding for the UTF-8 part.
   */
  readonly exact: boolean
}

/** Why a scan refused a body. */
export type ScanFailure = "too_deep"

/**
 * Scan a body's bytes (see the module doc). Fails with `too_deep` when arrays and objects nest
 * deeper than `maxDepth` (brackets inside strings do not count). Says nothing about validity:
 * `JSON.parse` of its {@link text} judges that; the positions are meaningful only for a body it
 * accepts.
 */
export const scan = (
  chunks: ReadonlyArray<Uint8Array>,
  maxDepth: number
): { readonly _tag: "Scanned"; readonly raw: RawJson } | { readonly _tag: "Refused"; readonly reason: ScanFailure } =>
  Scan.scan(chunks, maxDepth)

/**
 * Decoding of whole UTF-8 sequences: the text of `bytes`, or `undefined` when they are not valid
 * UTF-8. The platform's fastest decoder fits here (on Node, `buffer.isUtf8` and
 * `Buffer#toString`, which gives one-byte strings for ASCII text: half the memory of a two-byte
 * one, for the string and for everything `JSON.parse` cuts from it).
 */
export interface Utf8 {
  readonly decode: (bytes: Uint8Array) => string | undefined
}

/** {@link Utf8} of the standard `TextDecoder` (any runtime). */
export const standardUtf8: Utf8 = (() => {
  const strict = new TextDecoder("utf-8", { ignoreBOM: true, fatal: true })
  return {
    decode: (bytes) => {
      try {
        return strict.decode(bytes)
      } catch {
        return undefined
      }
    }
  }
})()

/** The chunks as one array (the only chunk itself, not a copy). */
const joined = (chunks: ReadonlyArray<Uint8Array>, size: number): Uint8Array => {
  const only = chunks.length === 1 ? chunks[0] : undefined
  if (only !== undefined) return only
  const out = new Uint8Array(size)
  let offset = 0
  for (const chunk of chunks) {
    out.set(chunk, offset)
    offset += chunk.length
  }
  return out
}

/**
 * The body's text, for `JSON.parse`: the bytes joined (once) and decoded as UTF-8 with `utf8`, a
 * leading byte-order mark kept (`JSON.parse` refuses it, as it refuses any text before the value),
 * and the body with the joined bytes as its one chunk (the arrived chunks can then be let go).
 * Bytes that are not UTF-8 become U+FFFD (as the standard decoder replaces them); the body is then
 * not {@link RawJson.exact}. One string of the whole text, rather than one per chunk joined by
 * `JSON.parse`, is what costs least: a large string is allocated outside the young generation, so
 * the collector never copies it.
 */
export const text = (raw: RawJson, utf8: Utf8 = standardUtf8): { readonly text: string; readonly raw: RawJson } => {
  const whole = joined(raw.chunks, raw.size)
  const body = raw.chunks.length === 1 ? raw : { ...raw, chunks: [whole] }
  const decoded = utf8.decode(whole)
  if (decoded !== undefined) return { text: decoded, raw: body }
  return { text: new TextDecoder("utf-8", { ignoreBOM: true }).decode(whole), raw: { ...body, exact: false } }
}

/** A reader of single bytes of the chunks, fastest at rising positions (-1 past the end). */
const byteReader = (chunks: ReadonlyArray<Uint8Array>) => {
  let index = 0
  let offset = 0
  return (at: number): number => {
    if (at < offset) index = offset = 0
    let chunk = chunks[index]
    while (chunk !== undefined && at >= offset + chunk.length) {
      offset += chunk.length
      chunk = chunks[++index]
    }
    return chunk === undefined ? -1 : (chunk[at - offset] ?? -1)
  }
}

/**
 * The parsed top-level object, built value by value: each member's value (each element, for a
 * member whose value is an array) decoded and given to `JSON.parse` apart, the bytes between them
 * checked to be exactly JSON's punctuation and whitespace. The result is what `JSON.parse` of the
 * whole text gives; `undefined` when the body must be parsed whole instead — it is not an object,
 * not {@link RawJson.exact}, or not valid JSON (the whole parse then says why, in its own words).
 *
 * This is how a large body is parsed cheaply: no string of the whole text (one allocated outside
 * the collector's young generation, touched page by page) and no copy of its parts cut from it;
 * each part is a short string, one-byte when its text is ASCII.
 */
export const parse = (raw: RawJson, utf8: Utf8 = standardUtf8): Record<string, unknown> | undefined => {
  if (!raw.exact || raw.root.end === 0) return undefined
  const byteAt = byteReader(raw.chunks)
  /** `[start, end)` is whitespace, with exactly one `mark` among it when `mark` is given. */
  const gap = (start: number, end: number, mark?: number): boolean => {
    let marks = 0
    for (let at = start; at < end; at++) {
      const c = byteAt(at)
      if (c === mark) marks++
      else if (!Scan.isSpace(c)) return false
    }
    return marks === (mark === undefined ? 0 : 1)
  }
  const value = (span: Span): { readonly ok: unknown } | undefined => {
    if (span.end <= span.start) return undefined
    const text = utf8.decode(Scan.bytesOf(raw.chunks, span.start, span.end))
    if (text === undefined) return undefined
    try {
      return { ok: JSON.parse(text) }
    } catch {
      return undefined
    }
  }
  if (!gap(0, raw.root.start) || !gap(raw.root.end, raw.size) || byteAt(raw.root.end - 1) !== CLOSE_OBJECT) {
    return undefined
  }
  const out: Record<string, unknown> = {}
  let at = raw.root.start + 1
  for (let i = 0; i < raw.members.length; i++) {
    const member = raw.members[i]
    if (member === undefined || !gap(at, member.span.start, i === 0 ? undefined : COMMA)) return undefined
    const key = value({ start: member.span.start, end: member.keyEnd })
    if (key === undefined || typeof key.ok !== "string") return undefined
    if (!gap(member.keyEnd, member.value.start, COLON)) return undefined
    let parsed: unknown
    if (member.elements === undefined) {
      const whole = value(member.value)
      if (whole === undefined) return undefined
      parsed = whole.ok
    } else {
      const elements: Array<unknown> = []
      let from = member.value.start + 1
      for (let j = 0; j < member.elements.length; j++) {
        const span = member.elements[j]
        if (span === undefined || !gap(from, span.start, j === 0 ? undefined : COMMA)) return undefined
        const element = value(span)
        if (element === undefined) return undefined
        elements.push(element.ok)
        from = span.end
      }
      if (!gap(from, member.value.end - 1) || byteAt(member.value.end - 1) !== CLOSE_ARRAY) return undefined
      parsed = elements
    }
    // `JSON.parse` makes `__proto__` an own property; an assignment would set the prototype.
    if (key.ok === "__proto__") {
      Object.defineProperty(out, key.ok, { value: parsed, writable: true, enumerable: true, configurable: true })
    } else {
      out[key.ok] = parsed
    }
    at = member.span.end
  }
  return gap(at, raw.root.end - 1) ? out : undefined
}

const encoder = new TextEncoder()

/** The pieces of the body `[start, end)`, as views of the chunks (no copy). */
const viewsOf = (chunks: ReadonlyArray<Uint8Array>, start: number, end: number, into: Array<Uint8Array>): void => {
  let offset = 0
  for (const chunk of chunks) {
    const from = Math.max(start, offset)
    const to = Math.min(end, offset + chunk.length)
    if (from < to) into.push(chunk.subarray(from - offset, to - offset))
    offset += chunk.length
    if (offset >= end) break
  }
}

/** `pieces` with neighbouring views of the same memory joined (fewer, larger writes). */
const coalesce = (pieces: ReadonlyArray<Uint8Array>): ReadonlyArray<Uint8Array> => {
  const out: Array<Uint8Array> = []
  for (const piece of pieces) {
    if (piece.length === 0) continue
    const last = out[out.length - 1]
    if (last !== undefined && last.buffer === piece.buffer && last.byteOffset + last.length === piece.byteOffset) {
      out[out.length - 1] = new Uint8Array(last.buffer, last.byteOffset, last.length + piece.length)
    } else {
      out.push(piece)
    }
  }
  return out
}

const hasOwn = (value: object, key: string): boolean => Object.prototype.hasOwnProperty.call(value, key)

const json = (value: unknown): string => JSON.stringify(value) ?? "null"

/**
 * The bytes of `changed`, a body that differs from `original` — `JSON.parse` of `raw`'s text — only
 * in top-level members: unchanged members (the same value, by reference) are the caller's bytes;
 * an array member whose elements changed only in place keeps its unchanged elements' bytes; every
 * other changed member's value, and every added member, is `JSON.stringify`d; a member gone from
 * `changed` (or set to `undefined`) is left out. None when `raw` is not {@link RawJson.exact} or
 * not an object (the caller serializes `changed` itself).
 */
export const encode = (
  raw: RawJson,
  original: Readonly<Record<string, unknown>>,
  changed: Readonly<Record<string, unknown>>
): ReadonlyArray<Uint8Array> | undefined => {
  const members = raw.members
  const first = members[0]
  const last = members[members.length - 1]
  if (!raw.exact || first === undefined || last === undefined) return undefined
  const chunks = raw.chunks
  const pieces: Array<Uint8Array> = []
  const text = (value: string) => pieces.push(encoder.encode(value))
  viewsOf(chunks, raw.root.start, first.span.start, pieces)
  // the index of the last member written (-1: none yet)
  let written = -1
  for (let i = 0; i < members.length; i++) {
    const member = members[i]
    if (member === undefined) continue
    const now = hasOwn(changed, member.key) ? changed[member.key] : undefined
    if (now === undefined) continue
    // the separator before it: the caller's when the member before it was written, else a comma
    const before = members[i - 1]
    if (written >= 0) {
      if (written === i - 1 && before !== undefined) viewsOf(chunks, before.span.end, member.span.start, pieces)
      else text(",")
    }
    writeMember(chunks, member, original[member.key], now, pieces, text)
    written = i
  }
  let emitted = written >= 0
  for (const key of Object.keys(changed)) {
    const now = changed[key]
    if (now === undefined || hasOwn(original, key)) continue
    text(`${emitted ? "," : ""}${json(key)}:${json(now)}`)
    emitted = true
  }
  viewsOf(chunks, last.span.end, raw.root.end, pieces)
  return coalesce(pieces)
}

/** One member of {@link encode}: the caller's bytes when unchanged, else its key and the new value. */
const writeMember = (
  chunks: ReadonlyArray<Uint8Array>,
  member: Member,
  was: unknown,
  now: unknown,
  pieces: Array<Uint8Array>,
  text: (value: string) => void
): void => {
  if (now === was) return viewsOf(chunks, member.span.start, member.span.end, pieces)
  viewsOf(chunks, member.span.start, member.value.start, pieces)
  const elements = member.elements
  if (
    !Array.isArray(now) || !Array.isArray(was) || elements === undefined || elements.length !== now.length ||
    now.length !== was.length || now.length === 0
  ) {
    return void text(json(now))
  }
  let at = member.value.start
  for (let i = 0; i < now.length; i++) {
    const element = elements[i]
    if (element === undefined || now[i] === was[i]) continue
    viewsOf(chunks, at, element.start, pieces)
    text(json(now[i]))
    at = element.end
  }
  viewsOf(chunks, at, member.value.end, pieces)
}

const remembered = new WeakMap<object, RawJson>()

/**
 * Remember that `parsed` is `JSON.parse` of `raw`'s text (an exact body only; an inexact one is
 * not remembered), for {@link of}.
 */
export const remember = (parsed: object, raw: RawJson): void => {
  if (raw.exact) remembered.set(parsed, raw)
}

/** The bytes `parsed` was read from, when it is the very object {@link remember} was given. */
export const of = (parsed: object): RawJson | undefined => remembered.get(parsed)

/** The number of bytes of `pieces`. */
export const sizeOf = (pieces: ReadonlyArray<Uint8Array>): number => {
  let size = 0
  for (const piece of pieces) size += piece.length
  return size
}
