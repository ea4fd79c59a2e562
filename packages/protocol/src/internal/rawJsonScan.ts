/**
 * The byte scan behind `RawJson.scan`: one `Scanner` record per scan holds the state, and each kind
 * of byte outside strings has a step of its own. Internal: the module doc of `RawJson.ts` says what
 * the scan records and why.
 */
import type { Member, RawJson, ScanFailure, Span } from "../RawJson.js"

export const QUOTE = 34
export const BACKSLASH = 92
export const COLON = 58
export const COMMA = 44
export const OPEN_OBJECT = 123
export const CLOSE_OBJECT = 125
export const OPEN_ARRAY = 91
export const CLOSE_ARRAY = 93

export const isSpace = (c: number): boolean => c === 32 || c === 10 || c === 13 || c === 9

/** FNV-1a step. */
const mix = (hash: number, byte: number): number => Math.imul(hash ^ byte, 16777619)
const fnvOffset = 2166136261

/**
 * The bytes `[start, end)` of the chunks as one array: a view of the chunk that holds them all, a
 * copy (allocated only then) when they span chunks.
 */
export const bytesOf = (chunks: ReadonlyArray<Uint8Array>, start: number, end: number): Uint8Array => {
  let out: Uint8Array | undefined = undefined
  let offset = 0
  for (const chunk of chunks) {
    const from = Math.max(start, offset)
    const to = Math.min(end, offset + chunk.length)
    if (from < to) {
      if (from === start && to === end) return chunk.subarray(from - offset, to - offset)
      out ??= new Uint8Array(end - start)
      out.set(chunk.subarray(from - offset, to - offset), from - start)
    }
    offset += chunk.length
    if (offset >= end) break
  }
  return out ?? new Uint8Array(0)
}

const decoder = new TextDecoder("utf-8", { ignoreBOM: true })

/** `RawJson.scan` (see there). */
export const scan = (
  chunks: ReadonlyArray<Uint8Array>,
  maxDepth: number
): { readonly _tag: "Scanned"; readonly raw: RawJson } | { readonly _tag: "Refused"; readonly reason: ScanFailure } => {
  const s = scanner(maxDepth)
  for (const chunk of chunks) {
    s.nextBackslash = -2
    for (let i = 0; i < chunk.length; i++) {
      if (s.inString) {
        i = s.isKey ? readKey(s, chunk, i) : skipValueString(s, chunk, i)
        continue
      }
      const c = chunk[i] ?? 0
      if (!isSpace(c) && !token(s, chunks, c, s.offset + i)) return { _tag: "Refused", reason: "too_deep" }
    }
    s.offset += chunk.length
  }
  const root = s.rootStart >= 0 && s.rootEnd > s.rootStart
    ? { start: s.rootStart, end: s.rootEnd }
    : { start: 0, end: 0 }
  return {
    _tag: "Scanned",
    raw: { chunks, size: s.offset, root, members: root.end > 0 ? s.members : [], exact: s.exact }
  }
}

/** The state of one scan: a record per scan, read and written by its steps. */
interface Scanner {
  readonly maxDepth: number
  /** Container kinds by depth (1: object, 2: array). */
  readonly kinds: Uint8Array
  /** The key hashes of each open object, by depth. */
  readonly keys: Array<Array<number>>
  /** The top-level object's members read so far. */
  readonly members: Array<Member>
  /** How many arrays and objects are open. */
  depth: number
  /** Inside a string: a key's when `isKey`, else a value's. */
  inString: boolean
  isKey: boolean
  /** The next byte is escaped by a backslash (one that ended the previous chunk, for a value string). */
  escaped: boolean
  /** The next string of the open object is a key. */
  expectKey: boolean
  /** The hash of the key being read (FNV-1a of its bytes). */
  keyHash: number
  /** See {@link RawJson.exact} (the UTF-8 part aside). */
  exact: boolean
  /** The top-level member being read: its key's start and end, its value's start (-1: not yet). */
  memberKeyStart: number
  memberKeyEnd: number
  memberValueStart: number
  /** Where the last byte that is not whitespace, a colon or a comma ends. */
  lastSignificantEnd: number
  /** The elements of the top-level member's array value being read. */
  elements: Array<Span> | undefined
  elementStart: number
  rootStart: number
  rootEnd: number
  /** Where the current chunk starts in the body. */
  offset: number
  /**
   * Where the next backslash of the current chunk is (-1: none left; -2: not searched yet), found
   * lazily: a value string is skipped to its closing quote by native searches, not byte by byte.
   */
  nextBackslash: number
}

/** A scanner at the start of a body. */
const scanner = (maxDepth: number): Scanner => ({
  maxDepth,
  kinds: new Uint8Array(maxDepth + 2),
  keys: [],
  members: [],
  depth: 0,
  inString: false,
  escaped: false,
  isKey: false,
  expectKey: false,
  keyHash: fnvOffset,
  exact: true,
  memberKeyStart: -1,
  memberKeyEnd: -1,
  memberValueStart: -1,
  lastSignificantEnd: -1,
  elements: undefined,
  elementStart: -1,
  rootStart: -1,
  rootEnd: -1,
  offset: 0,
  nextBackslash: -2
})

/**
 * Inside a value string at `i` of `chunk`: skipped to its closing quote by native searches, escapes
 * and all; returns the index the scan goes on after (the loop then steps one past it): the closing
 * quote, or the chunk's end when the string goes on in the next chunk. A quote found is searched for
 * again only when an escape skips past it, so each escape costs a search to the next backslash, not
 * one to the string's end.
 */
const skipValueString = (s: Scanner, chunk: Uint8Array, i: number): number => {
  if (s.escaped) {
    // the byte escaped by a backslash that ended the previous chunk
    s.escaped = false
    return i
  }
  let at = i
  let quote = chunk.indexOf(QUOTE, at)
  let backslash = s.nextBackslash
  for (;;) {
    if (backslash !== -1 && backslash < at) backslash = chunk.indexOf(BACKSLASH, at)
    if (backslash === -1 || (quote !== -1 && quote < backslash)) break
    // an escape before the closing quote: skip it (it may end the chunk)
    at = backslash + 2
    if (at >= chunk.length) {
      s.nextBackslash = backslash
      if (at === chunk.length + 1) s.escaped = true
      return chunk.length
    }
    // the quote found stays the next one unless the escape was that quote's
    if (quote !== -1 && quote < at) quote = chunk.indexOf(QUOTE, at)
  }
  s.nextBackslash = backslash
  if (quote === -1) return chunk.length
  s.inString = false
  s.lastSignificantEnd = s.offset + quote + 1
  return quote
}

/**
 * Inside a key at `i` of `chunk`: hashed byte by byte (keys are short) up to its closing quote (the
 * index returned) or the chunk's end.
 */
const readKey = (s: Scanner, chunk: Uint8Array, i: number): number => {
  let hash = s.keyHash
  let escaped = s.escaped
  for (; i < chunk.length; i++) {
    const c = chunk[i] ?? 0
    if (escaped) {
      escaped = false
      hash = mix(hash, c)
    } else if (c === BACKSLASH) {
      escaped = true
      s.exact = false
    } else if (c === QUOTE) {
      s.escaped = false
      endKey(s, s.offset + i, hash)
      return i
    } else {
      hash = mix(hash, c)
    }
  }
  s.keyHash = hash
  s.escaped = escaped
  return i
}

/** A key's closing quote: a key its object already has makes the body inexact. */
const endKey = (s: Scanner, at: number, hash: number): void => {
  s.inString = false
  s.isKey = false
  s.lastSignificantEnd = at + 1
  const seen = s.keys[s.depth]
  if (seen !== undefined) {
    if (seen.includes(hash)) s.exact = false
    seen.push(hash)
  }
  if (s.depth === 1) s.memberKeyEnd = at + 1
}

/** A byte outside strings that is not whitespace; false when it opens a container deeper than allowed. */
const token = (s: Scanner, chunks: ReadonlyArray<Uint8Array>, c: number, at: number): boolean => {
  if (s.depth === 1 && s.memberKeyEnd >= 0 && s.memberValueStart < 0 && c !== COLON) s.memberValueStart = at
  if (s.depth === 2 && s.elements !== undefined && s.elementStart < 0 && c !== COMMA && c !== CLOSE_ARRAY) {
    s.elementStart = at
  }
  switch (c) {
    case QUOTE:
      openString(s, at)
      return true
    case OPEN_OBJECT:
    case OPEN_ARRAY:
      return openContainer(s, c, at)
    case CLOSE_OBJECT:
    case CLOSE_ARRAY:
    case COMMA:
      endValue(s, chunks, c, at)
      return true
    case COLON:
      return true
    default:
      s.lastSignificantEnd = at + 1
      return true
  }
}

/** An opening quote: a key's when an object expects one, else a value string's. */
const openString = (s: Scanner, at: number): void => {
  s.inString = true
  if (s.expectKey && s.kinds[s.depth] === 1) {
    s.isKey = true
    s.expectKey = false
    s.keyHash = fnvOffset
    if (s.depth === 1) s.memberKeyStart = at
  }
}

/** An opening bracket: one level deeper (false past `maxDepth`); a top-level member's array records its elements. */
const openContainer = (s: Scanner, c: number, at: number): boolean => {
  if (s.depth === 1 && c === OPEN_ARRAY && s.memberValueStart === at) s.elements = []
  s.depth++
  if (s.depth > s.maxDepth) return false
  s.kinds[s.depth] = c === OPEN_OBJECT ? 1 : 2
  if (s.depth === 1 && c === OPEN_OBJECT && s.rootStart < 0) s.rootStart = at
  if (c === OPEN_OBJECT) {
    const seen = s.keys[s.depth]
    if (seen === undefined) s.keys[s.depth] = []
    else seen.length = 0
    s.expectKey = true
  }
  s.lastSignificantEnd = at + 1
  return true
}

/**
 * A comma or a closing bracket: it ends the element or top-level member being read; a closing
 * bracket is then one level up (the root object's ends the root).
 */
const endValue = (s: Scanner, chunks: ReadonlyArray<Uint8Array>, c: number, at: number): void => {
  if (s.depth === 2 && s.elements !== undefined && s.elementStart >= 0) {
    s.elements.push({ start: s.elementStart, end: s.lastSignificantEnd })
    s.elementStart = -1
  }
  if (s.depth === 1 && s.memberValueStart >= 0) {
    s.members.push(
      memberOf(chunks, s.memberKeyStart, s.memberKeyEnd, s.memberValueStart, s.lastSignificantEnd, s.elements)
    )
    s.memberKeyStart = s.memberKeyEnd = s.memberValueStart = -1
    s.elements = undefined
  }
  if (c === COMMA) {
    s.expectKey = s.kinds[s.depth] === 1
    return
  }
  if (s.depth === 1 && s.kinds[1] === 1 && s.rootEnd < 0) s.rootEnd = at + 1
  s.depth--
  s.expectKey = false
  s.lastSignificantEnd = at + 1
}

/** The {@link Member} read from its key's and value's positions. */
const memberOf = (
  chunks: ReadonlyArray<Uint8Array>,
  keyStart: number,
  keyEnd: number,
  valueStart: number,
  valueEnd: number,
  elements: ReadonlyArray<Span> | undefined
): Member => {
  const keyText = decoder.decode(bytesOf(chunks, keyStart, keyEnd))
  return {
    // An escaped key makes the body inexact (never forwarded as bytes): its key is never used.
    key: keyText.slice(1, -1),
    span: { start: keyStart, end: valueEnd },
    keyEnd,
    value: { start: valueStart, end: valueEnd },
    elements
  }
}
