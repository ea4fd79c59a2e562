/**
 * A small, pure server-sent-events line parser (WHATWG "event stream interpretation", `data`
 * fields only): text arrives in arbitrary network-sized pieces, complete events come out as their
 * joined `data` payloads. Kept pure (state in, state out) so it runs inside `Stream.mapAccum`.
 *
 * @internal
 */

/** Parser state carried between network reads. */
export interface SseState {
  /** Text after the last line terminator (an incomplete line). */
  readonly partial: string
  /** The `data` lines of the event being assembled, joined by `\n`; `undefined` when none yet. */
  readonly data: string | undefined
  /** The previous piece ended with `\r`, so a `\n` starting the next piece belongs to it. */
  readonly skipLeadingLf: boolean
}

/** What one piece of text produced. */
export type SseItem =
  | { readonly _tag: "Data"; readonly data: string }
  | { readonly _tag: "Overflow"; readonly maxEventSize: number }

/** The state before the first byte. */
export const initial: SseState = { partial: "", data: undefined, skipLeadingLf: false }

/** Largest event (pending line plus pending data) the parser holds, in UTF-16 code units. */
export const defaultMaxEventSize = 16 * 1024 * 1024

const LF = 10
const CR = 13

/**
 * Feeds one piece of decoded text. Returns the next state and the `data` payload of every event
 * completed by this piece (an event completes at a blank line; events without `data` are
 * skipped). Comments (`:` lines) and the `event`, `id` and `retry` fields are ignored. When the
 * pending event grows past `maxEventSize` an `Overflow` item is emitted and the state is reset.
 */
export const feed = (
  state: SseState,
  text: string,
  maxEventSize: number = defaultMaxEventSize
): readonly [SseState, ReadonlyArray<SseItem>] => {
  const items: Array<SseItem> = []
  const input = state.skipLeadingLf && text.charCodeAt(0) === LF ? text.slice(1) : text
  const buffer = state.partial + input
  let data = state.data
  let skipLeadingLf = false
  let start = 0
  // `partial` holds no terminator, so scanning can start after it.
  for (let i = state.partial.length; i < buffer.length; i++) {
    const c = buffer.charCodeAt(i)
    if (c !== LF && c !== CR) continue
    const line = buffer.slice(start, i)
    if (line.length === 0) {
      if (data !== undefined) items.push({ _tag: "Data", data })
      data = undefined
    } else if (line.charCodeAt(0) !== 58 /* ':' comment */) {
      const colon = line.indexOf(":")
      const field = colon === -1 ? line : line.slice(0, colon)
      if (field === "data") {
        const raw = colon === -1 ? "" : line.slice(colon + 1)
        const value = raw.charCodeAt(0) === 32 ? raw.slice(1) : raw
        data = data === undefined ? value : `${data}\n${value}`
      }
    }
    if (c === CR) {
      if (i + 1 < buffer.length) {
        if (buffer.charCodeAt(i + 1) === LF) i++
      } else {
        skipLeadingLf = true
      }
    }
    start = i + 1
  }
  const partial = buffer.slice(start)
  if (partial.length + (data?.length ?? 0) > maxEventSize) {
    items.push({ _tag: "Overflow", maxEventSize })
    return [initial, items]
  }
  return [{ partial, data, skipLeadingLf }, items]
}
