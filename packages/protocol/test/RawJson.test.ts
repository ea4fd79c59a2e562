/**
 * RawJson: one scan of a body's bytes (the nesting bound, the top-level members, whether the bytes
 * mean exactly their parse), and bodies written from the caller's bytes with what changed spliced
 * in — always the same JSON as serializing the changed body, however the bytes are cut into chunks.
 */
import { assert, describe, it } from "@effect/vitest"
import * as RawJson from "@switchyard-ts/protocol/RawJson"
import * as FastCheck from "effect/FastCheck"
import { Buffer, isUtf8 } from "node:buffer"

const encoder = new TextEncoder()

/** `text`'s bytes cut at `cuts` (positions, any order, duplicates and out-of-range ignored). */
const chunked = (text: string, cuts: ReadonlyArray<number> = []): ReadonlyArray<Uint8Array> =>
  cut(encoder.encode(text), cuts)

/** `bytes` cut at `cuts`, as {@link chunked} cuts a text's. */
const cut = (bytes: Uint8Array, cuts: ReadonlyArray<number>): ReadonlyArray<Uint8Array> => {
  const at = [...new Set(cuts.filter((position) => position > 0 && position < bytes.length))].sort((a, b) => a - b)
  const out: Array<Uint8Array> = []
  let from = 0
  for (const position of at) {
    out.push(bytes.slice(from, position))
    from = position
  }
  out.push(bytes.slice(from))
  return out
}

/** The scan of `chunks` (as cut) and the text of its bytes. */
const scanned = (chunks: ReadonlyArray<Uint8Array>, maxDepth = 512) => {
  const result = RawJson.scan(chunks, maxDepth)
  if (result._tag === "Refused") return assert.fail(`refused: ${result.reason}`)
  const decoded = RawJson.text(result.raw)
  return { raw: decoded.raw.exact ? result.raw : decoded.raw, text: decoded.text }
}

/** `JSON.parse` of `text`, or `undefined` when it throws. */
const parsedOrNot = (text: string): { readonly value: unknown } | undefined => {
  try {
    return { value: JSON.parse(text) }
  } catch {
    return undefined
  }
}

/** Equal as JSON, key order included. */
const sameJson = (actual: unknown, expected: unknown): void => {
  assert.deepStrictEqual(actual, expected)
  assert.strictEqual(JSON.stringify(actual), JSON.stringify(expected))
}

const joined = (pieces: ReadonlyArray<Uint8Array>): string => {
  const decoder = new TextDecoder()
  return pieces.map((piece) => decoder.decode(piece, { stream: true })).join("") + decoder.decode()
}

/** A change of a parsed body: some top-level keys set, removed or added, some array elements replaced. */
const change = (
  original: Readonly<Record<string, unknown>>,
  picks: ReadonlyArray<number>,
  value: unknown
): Record<string, unknown> => {
  const out: Record<string, unknown> = { ...original }
  const keys = Object.keys(original)
  picks.forEach((pick, i) => {
    const key = keys[pick % Math.max(1, keys.length)]
    switch (i % 4) {
      case 0:
        if (key !== undefined) out[key] = value
        break
      case 1:
        if (key !== undefined) delete out[key]
        break
      case 2:
        out[`added_${pick}`] = value
        break
      case 3: {
        const current = key === undefined ? undefined : out[key]
        if (key !== undefined && Array.isArray(current) && current.length > 0) {
          out[key] = current.map((element, j) => (j === pick % current.length ? value : element))
        }
      }
    }
  })
  return out
}

/** Whether some key anywhere in `value` is written with an escape (the bytes then are not exact). */
const hasEscapedKey = (value: unknown): boolean =>
  Array.isArray(value)
    ? value.some(hasEscapedKey)
    : typeof value === "object" && value !== null
    ? Object.entries(value).some(([key, inner]) => JSON.stringify(key) !== `"${key}"` || hasEscapedKey(inner))
    : false

const bodyArbitrary = FastCheck.dictionary(
  FastCheck.string({ maxLength: 8 }),
  FastCheck.jsonValue({ maxDepth: 4 })
)

describe("RawJson", () => {
  it.prop(
    "a changed body written from the caller's bytes is the JSON of the changed body, however the bytes are cut",
    {
      body: bodyArbitrary,
      pretty: FastCheck.boolean(),
      cuts: FastCheck.array(FastCheck.nat({ max: 4000 }), { maxLength: 6 }),
      picks: FastCheck.array(FastCheck.nat({ max: 50 }), { maxLength: 6 }),
      value: FastCheck.jsonValue({ maxDepth: 2 })
    },
    ({ body, cuts, picks, pretty, value }) => {
      const text = pretty ? JSON.stringify(body, null, 2) : JSON.stringify(body)
      const { raw, text: decoded } = scanned(chunked(text, cuts))
      assert.strictEqual(decoded, text)
      const original: Record<string, unknown> = JSON.parse(decoded)
      const changed = change(original, picks, value)
      const pieces = RawJson.encode(raw, original, changed)
      assert.strictEqual(raw.exact, !hasEscapedKey(body))
      if (Object.keys(original).length === 0 || !raw.exact) {
        assert.isUndefined(pieces)
        return
      }
      assert.isDefined(pieces)
      assert.deepStrictEqual(JSON.parse(joined(pieces ?? [])), JSON.parse(JSON.stringify(changed)))
    },
    { fastCheck: { numRuns: 300 } }
  )

  it("an unchanged body is the caller's bytes as they came, in as few pieces as the chunks allow", () => {
    const text = `{ "model" : "a",\n  "messages": [ {"role":"user","content":"hi \\" there"} ],\t"n": 1.50 }`
    const { raw } = scanned(chunked(text, [10, 40]))
    const original: Record<string, unknown> = JSON.parse(text)
    const pieces = RawJson.encode(raw, original, { ...original }) ?? []
    assert.strictEqual(joined(pieces), text)
    assert.strictEqual(pieces.length, 3)
    // the text of a body in chunks joins them once; its body is then that one array, whole
    const decoded = RawJson.text(raw)
    assert.strictEqual(decoded.raw.chunks.length, 1)
    assert.strictEqual(joined(RawJson.encode(decoded.raw, original, { ...original }) ?? []), text)
  })

  it.prop(
    "a body parsed value by value is what JSON.parse of its whole text gives, key order and __proto__ included",
    {
      body: bodyArbitrary,
      proto: FastCheck.option(FastCheck.jsonValue({ maxDepth: 1 }), { nil: undefined }),
      spacing: FastCheck.constantFrom(undefined, 2, "\t", " \r\n "),
      cuts: FastCheck.array(FastCheck.nat({ max: 4000 }), { maxLength: 6 })
    },
    ({ body, cuts, proto, spacing }) => {
      const members = Object.entries(body).map(([key, value]) =>
        `${JSON.stringify(key)}:${JSON.stringify(value, null, spacing)}`
      )
      if (proto !== undefined) members.splice(members.length >> 1, 0, `"__proto__":${JSON.stringify(proto)}`)
      const text = ` {${
        members.join(spacing === undefined ? "," : `,${typeof spacing === "string" ? spacing : "\n"}`)
      }} `
      const { raw } = scanned(chunked(text, cuts))
      const expected: unknown = JSON.parse(text)
      const parsed = RawJson.parse(raw)
      if (!raw.exact) return assert.isUndefined(parsed)
      assert.isDefined(parsed)
      sameJson(parsed, expected)
      assert.strictEqual(Object.getPrototypeOf(parsed), Object.prototype)
      assert.strictEqual(Object.prototype.hasOwnProperty.call(parsed, "__proto__"), proto !== undefined)
    },
    { fastCheck: { numRuns: 400 } }
  )

  it.prop(
    "a body that is not valid JSON is never parsed value by value: the whole parse judges it",
    {
      body: bodyArbitrary,
      edits: FastCheck.array(
        FastCheck.tuple(
          FastCheck.nat(),
          FastCheck.constantFrom("insert", "delete", "replace"),
          FastCheck.constantFrom("{", "}", "[", "]", ",", ":", "\"", " ", "\n", "0", "a", "\\", "\u0001", "é")
        ),
        { minLength: 1, maxLength: 3 }
      ),
      cuts: FastCheck.array(FastCheck.nat({ max: 4000 }), { maxLength: 4 })
    },
    ({ body, cuts, edits }) => {
      let text = JSON.stringify({ model: "m", messages: [body, 1, "two"], ...body })
      for (const [at, edit, char] of edits) {
        const i = at % (text.length + 1)
        text = edit === "insert"
          ? text.slice(0, i) + char + text.slice(i)
          : edit === "delete"
          ? text.slice(0, i) + text.slice(i + 1)
          : text.slice(0, i) + char + text.slice(i + 1)
      }
      const result = RawJson.scan(chunked(text, cuts), 512)
      if (result._tag === "Refused") return
      const parsed = RawJson.parse(result.raw)
      if (parsed === undefined) return
      const whole = parsedOrNot(text)
      assert.isDefined(whole, `parsed value by value, but JSON.parse refuses: ${text}`)
      sameJson(parsed, whole?.value)
    },
    { fastCheck: { numRuns: 1500 } }
  )

  it("only the changed members and elements are written anew", () => {
    const text = `{"model":"route","messages":[{"a":1},{"b":2},{"c":3}],"stream":true,"x":1.50}`
    const { raw } = scanned(chunked(text))
    const original: Record<string, unknown> = JSON.parse(text)
    const messages = original["messages"]
    assert.isTrue(Array.isArray(messages))
    const changed: Record<string, unknown> = {
      ...original,
      model: "target",
      messages: Array.isArray(messages) ? messages.map((m, i) => (i === 1 ? { b: 3 } : m)) : [],
      extra: { y: true }
    }
    delete changed["stream"]
    assert.strictEqual(
      joined(RawJson.encode(raw, original, changed) ?? []),
      `{"model":"target","messages":[{"a":1},{"b":3},{"c":3}],"x":1.50,"extra":{"y":true}}`
    )
  })

  it("members, their values and a top-level array's elements are found, strings with brackets and escapes included", () => {
    const text = `{"k\\u0020":1,"a":[ "[{", {"x":"}"} ,3 ],"b":"\\\\"}`
    const { raw } = scanned(chunked(text, [3, 11, 20]))
    const slice = (span: RawJson.Span) => text.slice(span.start, span.end)
    assert.deepStrictEqual(raw.members.map((m) => slice(m.value)), ["1", `[ "[{", {"x":"}"} ,3 ]`, `"\\\\"`])
    assert.deepStrictEqual(raw.members[1]?.elements?.map(slice), [`"[{"`, `{"x":"}"}`, "3"])
    assert.deepStrictEqual(slice(raw.root), text)
  })

  it.prop(
    "a value string dense in escapes (escaped quotes and backslashes among them), however cut, ends at its own closing quote",
    {
      strings: FastCheck.array(
        FastCheck.array(FastCheck.constantFrom("\"", "\\", "\n", "x", "é", "{", "]"), { maxLength: 40 })
          .map((characters) => characters.join("")),
        { minLength: 1, maxLength: 4 }
      ),
      cuts: FastCheck.array(FastCheck.nat({ max: 600 }), { maxLength: 8 })
    },
    ({ cuts, strings }) => {
      const text = JSON.stringify({ a: strings[0], b: strings, c: 1 })
      const bytes = encoder.encode(text)
      const { raw } = scanned(cut(bytes, cuts))
      const slice = (span: RawJson.Span) => new TextDecoder().decode(bytes.subarray(span.start, span.end))
      assert.deepStrictEqual(raw.members.map((m) => slice(m.value)), [
        JSON.stringify(strings[0]),
        JSON.stringify(strings),
        "1"
      ])
      assert.deepStrictEqual(raw.members[1]?.elements?.map(slice), strings.map((s) => JSON.stringify(s)))
    },
    { fastCheck: { numRuns: 300 } }
  )

  it("the nesting bound: deeper than the limit is refused, brackets inside strings do not count", () => {
    const nested = (depth: number) => `{"a":${"[".repeat(depth - 1)}${"]".repeat(depth - 1)}}`
    assert.strictEqual(RawJson.scan(chunked(nested(5)), 5)._tag, "Scanned")
    assert.deepStrictEqual(RawJson.scan(chunked(nested(6)), 5), { _tag: "Refused", reason: "too_deep" })
    assert.strictEqual(RawJson.scan(chunked(`{"a":"${"[".repeat(100)}"}`), 5)._tag, "Scanned")
    assert.strictEqual(RawJson.scan(chunked(`{"a":"\\"${"[".repeat(100)}"}`, [6, 7]), 5)._tag, "Scanned")
  })

  it("bytes that do not mean exactly their parse are never written from: duplicate or escaped keys, bad UTF-8", () => {
    const inexact = [
      `{"model":"a","model":"b"}`,
      `{"messages":[{"role":"user","role":"system"}]}`,
      `{"mod\\u0065l":"a"}`
    ]
    for (const text of inexact) {
      const { raw } = scanned(chunked(text, [5]))
      assert.isFalse(raw.exact, text)
      assert.isUndefined(RawJson.encode(raw, JSON.parse(text), { model: "x" }))
    }
    const bad = Uint8Array.from([...encoder.encode(`{"a":"`), 0xff, ...encoder.encode(`"}`)])
    const decoded = scanned([bad])
    assert.isFalse(decoded.raw.exact)
    assert.strictEqual(decoded.text, `{"a":"\uFFFD"}`)
    assert.isTrue(scanned(chunked(`{"a":{"b":1},"c":{"b":2}}`)).raw.exact)
  })

  it("a multi-byte character cut by a chunk boundary decodes whole; a byte-order mark is kept", () => {
    const text = `{"a":"é€😀"}`
    const bytes = encoder.encode(text)
    for (let cut = 1; cut < bytes.length; cut++) {
      assert.strictEqual(scanned([bytes.slice(0, cut), bytes.slice(cut)]).text, text)
    }
    assert.strictEqual(scanned([Uint8Array.from([0xef, 0xbb, 0xbf, ...encoder.encode("{}")])]).text, "\uFEFF{}")
  })

  it("any bytes, cut anywhere, decode as the standard decoder decodes them whole, with either UTF-8 primitive", () => {
    const node: RawJson.Utf8 = {
      decode: (bytes) =>
        isUtf8(bytes) ? Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length).toString("utf8") : undefined
    }
    const texts = FastCheck.string({ unit: "binary", maxLength: 40 }).map((text) => Array.from(encoder.encode(text)))
    // Valid text with some bytes overwritten: lone continuations, cut and overlong sequences.
    const bytes = FastCheck.oneof(
      texts,
      FastCheck.tuple(texts, FastCheck.array(FastCheck.tuple(FastCheck.nat(), FastCheck.integer({ min: 0, max: 255 }))))
        .map(
          ([valid, patches]) => {
            const out = [...valid]
            for (const [at, byte] of patches) if (out.length > 0) out[at % out.length] = byte
            return out
          }
        )
    )
    FastCheck.assert(
      FastCheck.property(bytes, FastCheck.array(FastCheck.nat({ max: 200 })), (values, cuts) => {
        const whole = Uint8Array.from(values)
        const chunks = cut(whole, cuts)
        const expected = new TextDecoder("utf-8", { ignoreBOM: true }).decode(whole)
        const raw: RawJson.RawJson = {
          chunks,
          size: whole.length,
          root: { start: 0, end: 0 },
          members: [],
          exact: true
        }
        for (const utf8 of [RawJson.standardUtf8, node]) {
          const decoded = RawJson.text(raw, utf8)
          assert.strictEqual(decoded.text, expected)
          assert.strictEqual(decoded.raw.exact, isUtf8(whole))
        }
      }),
      { numRuns: 2000 }
    )
  })

  it("remembers bytes only for the very object they were parsed into, and only exact ones", () => {
    const text = `{"a":1}`
    const { raw } = scanned(chunked(text))
    const parsed = JSON.parse(text)
    RawJson.remember(parsed, raw)
    assert.strictEqual(RawJson.of(parsed), raw)
    assert.isUndefined(RawJson.of({ ...parsed }))
    const duplicate = scanned(chunked(`{"a":1,"a":2}`)).raw
    const other = { a: 2 }
    RawJson.remember(other, duplicate)
    assert.isUndefined(RawJson.of(other))
  })
})
