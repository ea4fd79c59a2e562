/**
 * The nesting bound on JSON switchyard reads (`Nesting`), at every place it is read: the bounded
 * parse, the text scanner (whole and in pieces) and the walks without recursion, each at depths
 * around the bound (511, 512, 513) and far past it (10^4, 10^5), against plain reference
 * implementations on random values; then every translation that parses JSON out of a string or
 * walks a caller's tree, at the same depths.
 */
import { assert, describe, it } from "@effect/vitest"
import * as AnthropicMessages from "@switchyard-ts/protocol/AnthropicMessages"
import * as Gemini from "@switchyard-ts/protocol/Gemini"
import * as Nesting from "@switchyard-ts/protocol/Nesting"
import { ChatCompletion, ChatCompletionChunk, ChatCompletionRequest } from "@switchyard-ts/protocol/OpenAiChat"
import * as OpenAiResponses from "@switchyard-ts/protocol/OpenAiResponses"
import * as Plain from "@switchyard-ts/protocol/Plain"
import * as Translate from "@switchyard-ts/protocol/Translate"
import * as TranslateGemini from "@switchyard-ts/protocol/TranslateGemini"
import * as TranslateResponses from "@switchyard-ts/protocol/TranslateResponses"
import * as Either from "effect/Either"
import * as FastCheck from "effect/FastCheck"
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"

const bound = Nesting.maxDepth

/** The depths every place is tried at: around the bound and far past it. */
const depths: ReadonlyArray<number> = [bound - 1, bound, bound + 1, 10_000, 100_000]

type Kind = "array" | "object"

/**
 * JSON text nesting exactly `depth` levels: a chain of arrays and objects (`kinds`, cycled), every
 * seventh level with a sibling string holding brackets and an escaped quote when `noise` is set.
 */
const deepText = (depth: number, kinds: ReadonlyArray<Kind> = ["object"], noise = false): string => {
  const open: Array<string> = []
  const close: Array<string> = []
  for (let i = 0; i < depth; i++) {
    const sibling = noise && i % 7 === 0
    if (kinds[i % kinds.length] === "array") {
      open.push(sibling ? "[\"[{\\\"]\", " : "[")
      close.push("]")
    } else {
      open.push(sibling ? "{\"s\": \"}]\\\\\", \"k\":" : "{\"k\":")
      close.push("}")
    }
  }
  return `${open.join("")}1${close.reverse().join("")}`
}

/** The depth of a JSON value, recursively (the reference; small values only). */
const depthOf = (value: unknown): number => {
  if (Array.isArray(value)) return 1 + Math.max(0, ...value.map(depthOf))
  if (Predicate.isRecord(value)) return 1 + Math.max(0, ...Object.values(value).map(depthOf))
  return 0
}

/** Depth arbitrary: small, around the bound, or far past it. */
const anyDepth = FastCheck.oneof(
  FastCheck.integer({ min: 0, max: 30 }),
  FastCheck.integer({ min: bound - 8, max: bound + 8 }),
  FastCheck.constantFrom(10_000, 100_000)
)

const deepValue = FastCheck.record({
  depth: anyDepth,
  kinds: FastCheck.array(FastCheck.constantFrom<Kind>("array", "object"), { minLength: 1, maxLength: 4 }),
  noise: FastCheck.boolean()
})

/** `value` serializes: `JSON.stringify` of a value nested a few thousand levels deep throws. */
const assertSerializes = (value: unknown, label: string): void => {
  let text: string | undefined
  try {
    text = JSON.stringify(value)
  } catch (error) {
    assert.fail(`${label}: ${String(error)}`)
  }
  assert.isString(text, label)
}

/** `text` cut into pieces at `cuts`. */
const piecesOf = (text: string, cuts: ReadonlyArray<number>): ReadonlyArray<string> => {
  const at = [...new Set(cuts.map((c) => c % (text.length + 1)))].sort((a, b) => a - b)
  const out: Array<string> = []
  let from = 0
  for (const position of at) {
    out.push(text.slice(from, position))
    from = position
  }
  out.push(text.slice(from))
  return out
}

describe("Nesting: the bound, the bounded parse, the scanner", () => {
  it("parse, deeperThan and textDeeperThan agree with the depth at 511, 512, 513, 10^4 and 10^5 levels", () => {
    for (const depth of depths) {
      for (const kinds of [["object"], ["array"], ["array", "object", "object"]] as const) {
        const text = deepText(depth, kinds, true)
        const over = depth > bound
        const parsed = Nesting.parse(text)
        assert.strictEqual(parsed._tag, over ? "TooDeep" : "Json", `${depth} ${kinds.join()}`)
        assert.strictEqual(Nesting.textDeeperThan(text), over)
        assert.strictEqual(Nesting.deeperThan(JSON.parse(text)), over)
        if (parsed._tag === "Json") assertSerializes(parsed.value, String(depth))
      }
    }
  })

  it("not JSON is NotJson; brackets in strings do not count; scalars nest no level", () => {
    assert.strictEqual(Nesting.parse("{")._tag, "NotJson")
    assert.strictEqual(Nesting.parse(`"${"[".repeat(10_000)}"`)._tag, "Json")
    assert.isFalse(Nesting.textDeeperThan(`["${"{".repeat(5_000)}\\"${"[".repeat(5_000)}"]`))
    assert.isFalse(Nesting.deeperThan(1, 0))
    assert.isTrue(Nesting.deeperThan([], 0))
    assert.isFalse(Nesting.deeperThan([[1]], 2))
    assert.isTrue(Nesting.deeperThan([[[]]], 2))
  })

  it.prop(
    "deeperThan and the scanner agree with the depth of any JSON value, the text cut anywhere",
    {
      value: FastCheck.jsonValue({ maxDepth: 12 }),
      max: FastCheck.integer({ min: 0, max: 12 }),
      cuts: FastCheck.array(FastCheck.nat(), { maxLength: 8 })
    },
    ({ cuts, max, value }) => {
      const depth = depthOf(value)
      const text = JSON.stringify(value, null, cuts.length % 2 === 0 ? undefined : 1)
      const scan = Nesting.scanner(max)
      const scanned = piecesOf(text, cuts).map(scan.push).some((over) => over)
      return Nesting.deeperThan(value, max) === depth > max && scanned === depth > max
    },
    { fastCheck: { numRuns: 1500, seed: 512 } }
  )

  it.prop(
    "the scanner on deep values cut into pieces (escapes and strings split included) answers what the depth says",
    { value: deepValue, cuts: FastCheck.array(FastCheck.nat(), { maxLength: 40 }) },
    ({ cuts, value }) => {
      const text = deepText(value.depth, value.kinds, value.noise)
      const scan = Nesting.scanner()
      const over = piecesOf(text, cuts).map(scan.push).some((x) => x)
      return over === value.depth > bound
    },
    { fastCheck: { numRuns: 120, seed: 7 } }
  )
})

describe("Nesting: walks without recursion", () => {
  /** A node picked by a test: an object with a `pick` key. */
  const picked = (node: object): boolean => Object.hasOwn(node, "pick")

  /** The reference: the first picked node's path, recursively. */
  const findReference = (
    value: unknown,
    at: ReadonlyArray<string | number> = []
  ): ReadonlyArray<string | number> | undefined => {
    if (typeof value !== "object" || value === null) return undefined
    if (picked(value)) return at
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) {
        const found = findReference(value[i], [...at, i])
        if (found !== undefined) return found
      }
      return undefined
    }
    for (const key of Object.keys(value)) {
      const found = findReference(Reflect.get(value, key), [...at, key])
      if (found !== undefined) return found
    }
    return undefined
  }

  const withPicks = FastCheck.letrec((tie) => ({
    value: FastCheck.oneof(
      { depthSize: "small", withCrossShrink: true },
      FastCheck.jsonValue({ maxDepth: 1 }),
      FastCheck.array(tie("value"), { maxLength: 4 }),
      FastCheck.dictionary(FastCheck.constantFrom("a", "b", "pick", "__proto__", "type", "minimum"), tie("value"), {
        maxKeys: 4
      })
    )
  })).value

  it.prop("find and count agree with recursive references on any value", { value: withPicks }, ({ value }) => {
    const countReference = (node: unknown): number => {
      if (typeof node !== "object" || node === null) return 0
      const own = picked(node) ? 1 : 0
      return own +
        (Array.isArray(node) ? node : Object.values(node)).reduce((n: number, child) => n + countReference(child), 0)
    }
    assert.deepStrictEqual(Nesting.find(value, picked), findReference(value))
    assert.strictEqual(Nesting.count(value, picked), countReference(value))
  }, { fastCheck: { numRuns: 500, seed: 3 } })

  it.prop(
    "rebuild copies any value, key order, `__proto__` members and dropped members as told",
    { value: withPicks },
    ({ value }) => {
      const copy = Nesting.rebuild(value, "any", (key, member) =>
        key === "pick"
          ? { _tag: "Drop" }
          : key === "type"
          ? { _tag: "Keep", value: "kept" }
          : { _tag: "Copy", value: member, mode: "any" })
      const reference = JSON.parse(
        JSON.stringify(value),
        (key, member: unknown) => key === "pick" ? undefined : key === "type" ? "kept" : member
      )
      assert.strictEqual(JSON.stringify(copy), JSON.stringify(reference))
    },
    { fastCheck: { numRuns: 500, seed: 4 } }
  )

  it("find, count and rebuild walk 10^5 levels", () => {
    const value: unknown = JSON.parse(deepText(100_000, ["array", "object"]))
    assert.strictEqual(Nesting.find(value, picked), undefined)
    assert.strictEqual(Nesting.count(value, () => true), 100_000)
    const copy = Nesting.rebuild(value, "any", (_, member) => ({ _tag: "Copy", value: member, mode: "any" }))
    assert.isTrue(Nesting.deeperThan(copy, 99_999))
    assert.isFalse(Nesting.deeperThan(copy, 100_000))
  })
})

// ---------------------------------------------------------------------------------------------
// The places: every translation that parses JSON out of a string or walks a caller's tree

const decodeChat = Schema.decodeUnknownSync(ChatCompletionRequest)
const decodeResponses = Schema.decodeUnknownSync(OpenAiResponses.ResponsesRequest)
const decodeCompletion = Schema.decodeUnknownSync(ChatCompletion)
const decodeChunk = Schema.decodeUnknownSync(ChatCompletionChunk)
const decodeResponse = Schema.decodeUnknownSync(OpenAiResponses.ResponseObject)
const decodeMessages = Schema.decodeUnknownSync(AnthropicMessages.MessagesRequest)
const decodeGemini = Schema.decodeUnknownSync(Gemini.GenerateContentRequest)

/** A chat request whose assistant message (at `messages[2]`) calls `f` with `args`, then the tool's `output`. */
const chatWithCall = (args: string, output = "done") =>
  decodeChat({
    model: "m",
    messages: [
      { role: "system", content: "be brief" },
      { role: "user", content: "go" },
      {
        role: "assistant",
        content: null,
        tool_calls: [
          { id: "c0", type: "function", function: { name: "f", arguments: "{}" } },
          { id: "c1", type: "function", function: { name: "f", arguments: args } }
        ]
      },
      { role: "tool", tool_call_id: "c0", content: "ok" },
      { role: "tool", tool_call_id: "c1", content: output }
    ]
  })

const tooDeepAt = (path: string) => Nesting.tooDeep(path)

/** A translation's result (of any output). */
type Translated = Either.Either<unknown, { readonly reason: string }>

/** The reason of a failed translation, or `undefined` when it succeeded (its output serialized). */
const outcome = <A>(result: Either.Either<A, { readonly reason: string }>): string | undefined =>
  Either.match(result, {
    onLeft: (error) => error.reason,
    onRight: (value) => {
      JSON.stringify(value)
      return undefined
    }
  })

describe("each place that parses JSON out of a caller's string", () => {
  it("Chat messages[i].tool_calls[j].function.arguments: a TranslationError naming the path past the bound", () => {
    for (const depth of depths) {
      const request = chatWithCall(deepText(depth, ["object", "array"]))
      const neutral = Translate.fromOpenAiRequest(request)
      const path = "messages[2].tool_calls[1].function.arguments"
      if (depth > bound) {
        assert.strictEqual(outcome(neutral), tooDeepAt(path), String(depth))
        continue
      }
      const n = Either.getOrThrow(neutral)
      const outs: ReadonlyArray<Translated> = [
        Translate.toAnthropicRequest(n),
        TranslateGemini.toGeminiRequest(n),
        TranslateResponses.toResponsesRequest(n)
      ]
      for (const out of outs) assert.isUndefined(outcome(out), String(depth))
    }
  })

  it("Responses input[i].arguments: a TranslationError naming the path past the bound", () => {
    for (const depth of depths) {
      const request = decodeResponses({
        model: "m",
        input: [
          { role: "user", content: "go" },
          { type: "function_call", call_id: "c1", name: "f", arguments: deepText(depth, ["object", "array"]) },
          { type: "function_call_output", call_id: "c1", output: "done" }
        ]
      })
      const neutral = TranslateResponses.fromResponsesRequest(request)
      if (depth > bound) {
        assert.strictEqual(outcome(neutral), tooDeepAt("input[1].arguments"), String(depth))
        continue
      }
      const n = Either.getOrThrow(neutral)
      assert.isUndefined(outcome(TranslateResponses.toMessagesRequest(n)))
      assert.isUndefined(outcome(TranslateGemini.toGeminiRequest(n)))
      assert.isUndefined(outcome(TranslateResponses.toChatRequest(n)))
    }
  })

  it("a tool result's text for a Gemini upstream: an object within the bound, text past it", () => {
    for (const depth of depths) {
      const text = deepText(depth)
      const request = Either.getOrThrow(Translate.fromOpenAiRequest(chatWithCall("{}", text)))
      const gemini = Either.getOrThrow(TranslateGemini.toGeminiRequest(request))
      const response = gemini.contents.flatMap((content) =>
        content.parts
      ).flatMap((part) => part.functionResponse?.id === "c1" ? [part.functionResponse.response] : [])[0]
      assert.deepStrictEqual(response, depth > bound ? { output: text } : JSON.parse(text), String(depth))
      assertSerializes(gemini, String(depth))
      // and read back from a Gemini caller: the same text
      assert.strictEqual(
        TranslateGemini.toolResultContent(TranslateGemini.functionResponseBody(text, false)).text,
        text
      )
      assert.strictEqual(
        TranslateGemini.toolResultContent({ output: text }).text,
        depth > bound ? text : JSON.stringify({ output: text })
      )
    }
  })
})

describe("each walk of a caller's tree", () => {
  it("a response_format schema 10^5 levels deep is stripped for Anthropic without recursion", () => {
    for (const depth of depths) {
      const levels = Math.ceil(depth / 2)
      const text = `${"{\"type\":\"object\",\"minimum\":1,\"properties\":{\"p\":".repeat(levels)}` +
        `{"type":"string","maxLength":3,"enum":[{"minimum":2}]}${"}}".repeat(levels)}`
      const stripped = Translate.stripUnsupportedConstraints(JSON.parse(text))
      const constrained = (node: object) => Object.hasOwn(node, "minimum") || Object.hasOwn(node, "maxLength")
      // the data of `enum` is kept as it is; no schema keeps a constraint
      assert.deepStrictEqual(Nesting.find(stripped, constrained), [
        ...Array.from({ length: levels }, () => ["properties", "p"]).flat(),
        "enum",
        0
      ])
      assert.isTrue(Nesting.deeperThan(stripped, 2 * levels + 2), String(depth))
    }
  })

  it("a Gemini `parameters` schema 10^5 levels deep is converted to JSON Schema without recursion", () => {
    for (const depth of depths) {
      const schema = JSON.parse(deepText(depth, ["object"]).replaceAll("{\"k\":", "{\"type\":\"OBJECT\",\"k\":"))
      const converted = TranslateGemini.openApiToJsonSchema(schema)
      assert.strictEqual(Nesting.find(converted, (node) => Reflect.get(node, "type") === "OBJECT"), undefined)
      assert.deepStrictEqual(Nesting.find(converted, (node) => Reflect.get(node, "type") === "object"), [])
    }
  })

  it("a wire value 10^5 levels deep with an unreadable object (`toString: {}`) past it is a ParseError, never a throw", () => {
    const decode = Plain.decoder(ChatCompletionRequest, { onExcessProperty: "preserve" })
    for (const depth of depths) {
      const body: unknown = JSON.parse(
        `{"model":"m","x":${deepText(depth)},"messages":[{"role":{"toString":{}},"content":"x"}]}`
      )
      const result = decode(body)
      assert.isTrue(Either.isLeft(result), String(depth))
    }
  })
})

describe("each place that parses JSON out of an upstream's string", () => {
  const completion = (args: string) =>
    decodeCompletion({
      id: "c",
      model: "m",
      choices: [{
        index: 0,
        message: {
          role: "assistant",
          tool_calls: [{ id: "t", type: "function", function: { name: "f", arguments: args } }]
        },
        finish_reason: "tool_calls"
      }]
    })

  it("an answer's tool-call arguments (Chat, Responses): within the bound they are the input; past it the answer is held back (completionArguments) and never throws", () => {
    for (const depth of depths) {
      const args = deepText(depth, ["object", "array"])
      const answer = completion(args)
      const over = depth > bound
      assert.strictEqual(
        Nesting.completionArguments(answer),
        over ? "choices[0].message.tool_calls[0].function.arguments" : undefined
      )
      const neutral = Translate.fromOpenAiResponse(answer)
      const messages = Translate.toAnthropicResponse(neutral)
      const gemini = TranslateGemini.toGeminiResponse(neutral)
      const responses = TranslateResponses.toResponsesResponse(neutral)
      for (const out of [messages, gemini, responses]) assertSerializes(out, String(depth))
      const input = messages.content.flatMap((block) => "input" in block ? [block.input] : [])[0]
      assert.deepStrictEqual(input, over ? {} : JSON.parse(args))
      // a Responses answer's function_call arguments reach chat as they came
      const response = decodeResponse({
        id: "resp_1",
        object: "response",
        created_at: 1,
        model: "m",
        status: "completed",
        output: [{ type: "function_call", call_id: "t", name: "f", arguments: args }]
      })
      const chat = Translate.toOpenAiResponse(TranslateResponses.fromResponsesResponse(response))
      assert.strictEqual(Nesting.completionArguments(chat), Nesting.completionArguments(answer))
      assertSerializes(chat, String(depth))
    }
  })

  it("a chunk stream's tool-call arguments: followed piece by piece (chunkArguments); Gemini and Responses streams never throw", () => {
    for (const depth of depths) {
      const args = deepText(depth, ["object", "array"], true)
      const pieces = piecesOf(args, Array.from({ length: 12 }, (_, i) => Math.floor((args.length * i) / 12) + 1))
      const chunks = [
        decodeChunk({
          id: "c",
          model: "m",
          choices: [{
            index: 0,
            delta: { tool_calls: [{ index: 0, id: "t", type: "function", function: { name: "f" } }] }
          }]
        }),
        ...pieces.map((piece) =>
          decodeChunk({
            id: "c",
            model: "m",
            choices: [{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: piece } }] } }]
          })
        ),
        decodeChunk({ id: "c", model: "m", choices: [{ index: 0, delta: {}, finish_reason: "tool_calls" }] }),
        decodeChunk({
          id: "c",
          model: "m",
          choices: [],
          usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 }
        })
      ]
      const held = Nesting.chunkArguments()
      const found = chunks.map(held.push).find((path) => path !== undefined)
      assert.strictEqual(found, depth > bound ? "choices[0].delta.tool_calls[0].function.arguments" : undefined)
      const gemini = TranslateGemini.chatToGeminiStream({ model: "m" })
      const responses = TranslateResponses.chatToResponsesStream({
        model: "m",
        tools: TranslateResponses.toolMap({
          ...Either.getOrThrow(Translate.fromOpenAiRequest(decodeChat({ model: "m", messages: [] }))),
          tools: [{ name: "f", parameters: TranslateResponses.customToolParameters, custom: {} }]
        })
      })
      assertSerializes([...chunks.flatMap((chunk) => gemini.push(chunk)), ...gemini.end()], String(depth))
      assertSerializes([...chunks.flatMap((chunk) => responses.push(chunk)), ...responses.end()], String(depth))
    }
  })
})

// ---------------------------------------------------------------------------------------------
// Fuzz: random deep values in every parsed string field, through every translation

interface Placed {
  readonly args: { readonly depth: number; readonly kinds: ReadonlyArray<Kind>; readonly noise: boolean }
  readonly result: { readonly depth: number; readonly kinds: ReadonlyArray<Kind>; readonly noise: boolean }
}

const placed: FastCheck.Arbitrary<Placed> = FastCheck.record({ args: deepValue, result: deepValue })

describe("fuzz: random deep values in every string field that is parsed", () => {
  it.prop(
    "Chat and Responses requests: past the bound a 400 naming the field, else every target's body serializes",
    { value: placed },
    ({ value }) => {
      const args = deepText(value.args.depth, value.args.kinds, value.args.noise)
      const result = deepText(value.result.depth, value.result.kinds, value.result.noise)
      const over = value.args.depth > bound
      const chat = Translate.fromOpenAiRequest(chatWithCall(args, result))
      const responses = TranslateResponses.fromResponsesRequest(decodeResponses({
        model: "m",
        input: [
          { type: "function_call", call_id: "c1", name: "f", arguments: args },
          { type: "function_call_output", call_id: "c1", output: result }
        ]
      }))
      assert.strictEqual(outcome(chat), over ? tooDeepAt("messages[2].tool_calls[1].function.arguments") : undefined)
      assert.strictEqual(outcome(responses), over ? tooDeepAt("input[0].arguments") : undefined)
      // arguments that are an array or a scalar are no object: Anthropic and Gemini refuse them as ever
      const object = value.args.depth > 0 && value.args.kinds[0] === "object"
      const notObject = object ? undefined : "the arguments of tool call c1 are not a JSON object"
      for (const neutral of [chat, responses]) {
        if (Either.isLeft(neutral)) continue
        const n = neutral.right
        assert.strictEqual(outcome(Translate.toAnthropicRequest(n)), notObject)
        assert.strictEqual(outcome(TranslateGemini.toGeminiRequest(n)), notObject)
        assert.isUndefined(outcome(TranslateResponses.toResponsesRequest(n)))
        assert.isUndefined(outcome(Either.right(Translate.toOpenAiRequest(n))))
      }
    },
    { fastCheck: { numRuns: 60, seed: 2024 } }
  )

  it.prop(
    "Messages and Gemini requests: tool results of any depth reach every target as values or text, never a throw",
    { value: placed },
    ({ value }) => {
      const result = deepText(value.result.depth, value.result.kinds, value.result.noise)
      const messages = Either.getOrThrow(Translate.fromAnthropicRequest(decodeMessages({
        model: "m",
        max_tokens: 5,
        messages: [
          { role: "user", content: "go" },
          { role: "assistant", content: [{ type: "tool_use", id: "t", name: "f", input: {} }] },
          { role: "user", content: [{ type: "tool_result", tool_use_id: "t", content: result }] }
        ]
      })))
      const gemini = TranslateGemini.fromGeminiRequest(
        decodeGemini({
          contents: [
            { role: "user", parts: [{ text: "go" }] },
            { role: "model", parts: [{ functionCall: { name: "f", args: {} } }] },
            { role: "user", parts: [{ functionResponse: { name: "f", response: { output: result } } }] }
          ]
        }),
        { model: "m", stream: false }
      )
      for (const n of [messages, gemini]) {
        const outs: ReadonlyArray<Translated> = [
          Translate.toAnthropicRequest(n),
          TranslateGemini.toGeminiRequest(n),
          TranslateResponses.toResponsesRequest(n),
          Either.right(Translate.toOpenAiRequest(n))
        ]
        for (const out of outs) assert.isUndefined(outcome(out))
      }
    },
    { fastCheck: { numRuns: 60, seed: 2025 } }
  )
})
