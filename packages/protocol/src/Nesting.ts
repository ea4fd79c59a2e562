/**
 * How deeply JSON may nest, in one place: the bound ({@link maxDepth}) on every JSON value
 * switchyard reads — a request body, JSON carried inside one of its strings (tool-call arguments),
 * an upstream's answer, stream event, or the tool-call arguments inside them — and the walks of such
 * values, none of which recurses.
 *
 * Why: `JSON.parse` builds a value of any depth without recursing, but `JSON.stringify` and every
 * recursive walk do recurse, and a value a few thousand levels deep exhausts the stack there (a
 * `RangeError`, i.e. a defect, long after the value was read). So a value is held to the bound where
 * it is read, and whoever reads it answers for a deeper one: a caller's input is refused (400, the
 * message of {@link tooDeep} naming its field), an upstream's is an invalid response.
 *
 * - {@link parse}: `JSON.parse`, then the depth of what it built ({@link deeperThan}), walked only
 *   when the text is long enough to nest deeper (`2 × (maxDepth + 1)` characters): no second pass
 *   over the text, and none at all for a short one.
 * - {@link textDeeperThan} / {@link scanner}: the depth of JSON text without parsing it (one pass,
 *   strings skipped by native searches), whole or fed in pieces (a tool call's streamed arguments).
 * - {@link deeperThan}, {@link find}, {@link count}, {@link rebuild}: walks of a value with an explicit
 *   stack, so any depth is safe to walk.
 * - {@link completionArguments} / {@link chunkArguments}: the tool-call arguments of a chat answer or
 *   chunk stream, held to the bound (the answer is translated into a caller's format, which parses
 *   them).
 */
import type { ChatCompletion, ChatCompletionChunk } from "./OpenAiChat.js"

/**
 * The deepest arrays and objects may nest in any JSON value switchyard reads: deeper than any real
 * tool schema or tool arguments, and far within what the recursive steps after a read (decoding,
 * translation, `JSON.stringify`) can take.
 */
export const maxDepth = 512

/** What a bounded parse of JSON text gave. */
export type Parsed =
  | { readonly _tag: "Json"; readonly value: unknown }
  | { readonly _tag: "NotJson" }
  | { readonly _tag: "TooDeep" }

const notJson: Parsed = { _tag: "NotJson" }
const tooDeepParse: Parsed = { _tag: "TooDeep" }

/**
 * The message of a value nested deeper than the bound: `<what> nests arrays and objects deeper than
 * the limit of 512 levels` (`what` a field path, or `Request body`).
 */
export const tooDeep = (what: string): string =>
  `${what} nests arrays and objects deeper than the limit of ${maxDepth} levels`

/**
 * The value of JSON text, held to `max` levels (default {@link maxDepth}): `NotJson` when
 * `JSON.parse` refuses it, `TooDeep` when what it built nests deeper. The depth is walked only for
 * a text of at least `2 × (max + 1)` characters (a shorter one cannot nest deeper). Never throws.
 */
export const parse = (text: string, max: number = maxDepth): Parsed => {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    return notJson
  }
  return text.length >= 2 * (max + 1) && deeperThan(value, max) ? tooDeepParse : { _tag: "Json", value }
}

/**
 * Whether `value` nests arrays and objects deeper than `max` levels (an array or object is one
 * level, a scalar none): a walk with an explicit stack, stopping at the first node past `max`.
 */
export const deeperThan = (value: unknown, max: number = maxDepth): boolean => {
  if (typeof value !== "object" || value === null) return false
  if (max < 1) return true
  const nodes: Array<object> = [value]
  const depths: Array<number> = [1]
  while (nodes.length > 0) {
    const node = nodes.pop()
    const depth = depths.pop() ?? 0
    if (node === undefined) break
    if (Array.isArray(node)) {
      for (let i = 0; i < node.length; i++) {
        const child: unknown = node[i]
        if (typeof child !== "object" || child === null) continue
        if (depth >= max) return true
        nodes.push(child)
        depths.push(depth + 1)
      }
    } else {
      for (const key in node) {
        const child: unknown = Reflect.get(node, key)
        if (typeof child !== "object" || child === null) continue
        if (depth >= max) return true
        nodes.push(child)
        depths.push(depth + 1)
      }
    }
  }
  return false
}

const QUOTE = 34
const BACKSLASH = 92
const OPEN_OBJECT = 123
const CLOSE_OBJECT = 125
const OPEN_ARRAY = 91
const CLOSE_ARRAY = 93

/** The depth of JSON text fed in pieces (see {@link scanner}). */
export interface Scanner {
  /** Reads the next piece of the text; `true` once the text so far nests deeper than the bound. */
  readonly push: (piece: string) => boolean
}

/**
 * A reader of the depth of JSON text given in pieces (a tool call's arguments as they stream): one
 * pass over each piece, brackets inside strings not counted, an escape or a string split across
 * pieces followed. Says nothing about validity; once past `max` it stays past.
 */
export const scanner = (max: number = maxDepth): Scanner => {
  let depth = 0
  let inString = false
  let escaped = false
  let over = false
  const push = (piece: string): boolean => {
    if (over) return true
    const n = piece.length
    let i = 0
    while (i < n) {
      if (inString) {
        if (escaped) {
          escaped = false
          i++
          continue
        }
        const quote = piece.indexOf("\"", i)
        if (quote === -1) {
          // an odd run of backslashes at the end escapes the next piece's first character
          escaped = backslashesBefore(piece, n, i) % 2 === 1
          return false
        }
        if (backslashesBefore(piece, quote, i) % 2 === 0) inString = false
        i = quote + 1
        continue
      }
      const c = piece.charCodeAt(i++)
      if (c === QUOTE) inString = true
      else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
        if (++depth > max) return (over = true)
      } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) depth--
    }
    return false
  }
  return { push }
}

/** The number of backslashes right before `at` in `text`, not looking before `from`. */
const backslashesBefore = (text: string, at: number, from: number): number => {
  let i = at - 1
  while (i >= from && text.charCodeAt(i) === BACKSLASH) i--
  return at - 1 - i
}

/**
 * Whether JSON text nests arrays and objects deeper than `max` levels, by one pass over it
 * ({@link scanner}): what a parse would build, without building it. Says nothing about validity.
 */
export const textDeeperThan = (text: string, max: number = maxDepth): boolean =>
  text.length >= 2 * (max + 1) && scanner(max).push(text)

/** One node of a walk: a value, the key it was found under, and the node it was found in. */
interface Visit {
  readonly value: unknown
  readonly key: string | number
  readonly parent: Visit | undefined
}

const pathOf = (visit: Visit): ReadonlyArray<string | number> => {
  const path: Array<string | number> = []
  for (let at: Visit | undefined = visit; at?.parent !== undefined; at = at.parent) path.push(at.key)
  return path.reverse()
}

/**
 * The path (keys and indices) of the first array or object of `value` — `value` itself, then its
 * elements and members depth first in order — that `found` picks; none when it picks none. No
 * recursion, whatever the depth.
 */
export const find = (value: unknown, found: (node: object) => boolean): ReadonlyArray<string | number> | undefined => {
  const stack: Array<Visit> = [{ value, key: "", parent: undefined }]
  for (let visit = stack.pop(); visit !== undefined; visit = stack.pop()) {
    const node = visit.value
    if (typeof node !== "object" || node === null) continue
    if (found(node)) return pathOf(visit)
    if (Array.isArray(node)) {
      for (let i = node.length - 1; i >= 0; i--) stack.push({ value: node[i], key: i, parent: visit })
    } else {
      const keys = Object.keys(node)
      for (let i = keys.length - 1; i >= 0; i--) {
        const key = keys[i] ?? ""
        stack.push({ value: Reflect.get(node, key), key, parent: visit })
      }
    }
  }
  return undefined
}

/** How many arrays and objects of `value` (itself included) `counted` picks. No recursion. */
export const count = (value: unknown, counted: (node: object) => boolean): number => {
  if (typeof value !== "object" || value === null) return 0
  let n = 0
  const stack: Array<object> = [value]
  while (stack.length > 0) {
    const node = stack.pop()
    if (node === undefined) break
    if (counted(node)) n++
    if (Array.isArray(node)) {
      for (let i = 0; i < node.length; i++) {
        const child: unknown = node[i]
        if (typeof child === "object" && child !== null) stack.push(child)
      }
    } else {
      for (const key in node) {
        const child: unknown = Reflect.get(node, key)
        if (typeof child === "object" && child !== null) stack.push(child)
      }
    }
  }
  return n
}

/** What {@link rebuild} does with one member of an object: copy it (its value walked in `mode`), keep it as is, or drop it. */
export type Member<M> =
  | { readonly _tag: "Copy"; readonly value: unknown; readonly mode: M }
  | { readonly _tag: "Keep"; readonly value: unknown }
  | { readonly _tag: "Drop" }

/**
 * A copy of the JSON value `value`, made without recursion: arrays element by element (each in the
 * mode of the array), objects member by member as `member(key, value, mode)` says (keys in their
 * order), scalars as they are. The walk starts in `mode`.
 */
export const rebuild = <M>(
  value: unknown,
  mode: M,
  member: (key: string, value: unknown, mode: M) => Member<M>
): unknown => {
  const root: Array<unknown> = [undefined]
  const tasks: Array<
    { readonly value: unknown; readonly mode: M; readonly into: object; readonly key: string | number }
  > = [{ value, mode, into: root, key: 0 }]
  for (let task = tasks.pop(); task !== undefined; task = tasks.pop()) {
    const node = task.value
    if (Array.isArray(node)) {
      const out: Array<unknown> = new Array(node.length)
      Reflect.set(task.into, task.key, out)
      for (let i = node.length - 1; i >= 0; i--) tasks.push({ value: node[i], mode: task.mode, into: out, key: i })
    } else if (typeof node === "object" && node !== null) {
      const out: Record<string, unknown> = {}
      Reflect.set(task.into, task.key, out)
      const deferred: Array<
        { readonly value: unknown; readonly mode: M; readonly into: object; readonly key: string }
      > = []
      for (const key of Object.keys(node)) {
        const next = member(key, Reflect.get(node, key), task.mode)
        if (next._tag === "Drop") continue
        // the key is set now, so the copy keeps the original order of keys
        defineMember(out, key, next._tag === "Keep" ? next.value : undefined)
        if (next._tag === "Copy") deferred.push({ value: next.value, mode: next.mode, into: out, key })
      }
      for (let i = deferred.length - 1; i >= 0; i--) {
        const task = deferred[i]
        if (task !== undefined) tasks.push(task)
      }
    } else {
      Reflect.set(task.into, task.key, node)
    }
  }
  return root[0]
}

/** Sets an own, enumerable member (`__proto__` too, as `JSON.parse` makes it). */
const defineMember = (out: Record<string, unknown>, key: string, value: unknown): void => {
  if (key === "__proto__") {
    Object.defineProperty(out, key, { value, writable: true, enumerable: true, configurable: true })
  } else {
    out[key] = value
  }
}

/**
 * The path of the first tool call of a chat answer whose `arguments` nest deeper than
 * {@link maxDepth} (`choices[0].message.tool_calls[1].function.arguments`); none when every one is
 * within it. Only arguments of at least `2 × (maxDepth + 1)` characters are read.
 */
export const completionArguments = (completion: ChatCompletion): string | undefined => {
  for (let c = 0; c < completion.choices.length; c++) {
    const calls = completion.choices[c]?.message.tool_calls
    if (calls === undefined || calls === null) continue
    for (let t = 0; t < calls.length; t++) {
      const call = calls[t]
      if (call !== undefined && call.type === "function" && textDeeperThan(call.function.arguments)) {
        return `choices[${c}].message.tool_calls[${t}].function.arguments`
      }
    }
  }
  return undefined
}

/** The tool-call arguments of one chunk stream, held to the bound as they arrive (see {@link chunkArguments}). */
export interface ChunkArguments {
  /**
   * Reads a chunk's tool-call argument pieces: the path of the first call (by choice and call
   * `index`) whose arguments so far nest deeper than {@link maxDepth}, e.g.
   * `choices[0].delta.tool_calls[1].function.arguments`; none while every one is within it.
   */
  readonly push: (chunk: ChatCompletionChunk) => string | undefined
}

/**
 * A reader of the tool-call arguments of one chat chunk stream: each call's pieces are followed by
 * a {@link scanner} of its own (one pass over each piece, nothing kept of the text), so a call
 * whose arguments nest too deep is known by the chunk that takes them past the bound.
 */
export const chunkArguments = (): ChunkArguments => {
  const scanners = new Map<string, Scanner>()
  const push = (chunk: ChatCompletionChunk): string | undefined => {
    for (const choice of chunk.choices) {
      for (const call of choice.delta.tool_calls ?? []) {
        const piece = call.function?.arguments
        if (piece === undefined || piece === null || piece === "") continue
        const key = `${choice.index}:${call.index}`
        let scan = scanners.get(key)
        if (scan === undefined) {
          scan = scanner()
          scanners.set(key, scan)
        }
        if (scan.push(piece)) return `choices[${choice.index}].delta.tool_calls[${call.index}].function.arguments`
      }
    }
    return undefined
  }
  return { push }
}
