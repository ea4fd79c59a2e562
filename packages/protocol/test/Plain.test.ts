import { assert, describe, it } from "@effect/vitest"
import {
  ChatCompletion,
  ChatCompletionChunk,
  ChatCompletionRequest,
  decodeOptions
} from "@switchyard-ts/protocol/OpenAiChat"
import * as Plain from "@switchyard-ts/protocol/Plain"
import * as Either from "effect/Either"
import * as FastCheck from "effect/FastCheck"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import * as Arb from "./arbitraries.js"
import { mutated } from "./jsonMutations.js"

type Json = unknown

const message = (error: ParseResult.ParseError): string => ParseResult.TreeFormatter.formatErrorSync(error)

const decodeOrThrown = <A, I>(schema: Schema.Schema<A, I>, input: Json) => {
  try {
    return Schema.decodeUnknownEither(schema, decodeOptions)(input)
  } catch (thrown) {
    return thrown instanceof TypeError ? "thrown" : Either.right(thrown)
  }
}

/**
 * The decoder agrees with a decode on every input: the same value (its input itself), or the same
 * error; where the decode throws, it fails instead.
 */
const agrees = <A, I>(schema: Schema.Schema<A, I>, input: Json): void => {
  const plain = Plain.decoder(schema, decodeOptions)(input)
  const decoded = decodeOrThrown(schema, input)
  if (decoded === "thrown") {
    assert.isTrue(Either.isLeft(plain) && message(plain.left).includes("toString or valueOf"))
  } else if (Either.isRight(decoded)) {
    assert.isTrue(Either.isRight(plain), "the decode succeeded, the plain decoder failed")
    if (Either.isRight(plain)) {
      assert.strictEqual(plain.right, input)
      assert.deepStrictEqual(plain.right, decoded.right)
    }
  } else {
    assert.isTrue(Either.isLeft(plain), "the decode failed, the plain decoder succeeded")
    if (Either.isLeft(plain)) assert.strictEqual(message(plain.left), message(decoded.left))
  }
}

const completions: FastCheck.Arbitrary<Json> = FastCheck.tuple(Arb.completion, Arb.counts).map(([c, counts]) =>
  Arb.chatCompletion(c, Arb.openAiUsage(counts))
)
const chunks: FastCheck.Arbitrary<Json> = Arb.completion.chain((c) => Arb.openAiChunks(c)).chain((all) =>
  all.length === 0 ? FastCheck.constant<Json>({}) : FastCheck.constantFrom<Json>(...all)
)

describe("Plain.decoder", () => {
  it("the protocol's wire schemas have no transformation", () => {
    for (const schema of [ChatCompletion, ChatCompletionChunk, ChatCompletionRequest]) {
      assert.isTrue(Plain.isPlain(schema))
    }
  })

  it("agrees with a decode on answers, chunks and requests, valid or not, unknown fields kept", () => {
    FastCheck.assert(FastCheck.property(mutated(completions), (input) => agrees(ChatCompletion, input)), {
      numRuns: 300
    })
    FastCheck.assert(FastCheck.property(mutated(chunks), (input) => agrees(ChatCompletionChunk, input)), {
      numRuns: 300
    })
    FastCheck.assert(
      FastCheck.property(mutated(Arb.openAiRequest), (input) => agrees(ChatCompletionRequest, input)),
      { numRuns: 200 }
    )
  })

  it("fails, at its path, on an object a union cannot read, where a decode throws", () => {
    const input: Json = JSON.parse("{\"model\":\"m\",\"messages\":[{\"role\":{\"toString\":{}},\"content\":\"x\"}]}")
    assert.throws(() => Schema.decodeUnknownEither(ChatCompletionRequest, decodeOptions)(input))
    const result = Plain.decoder(ChatCompletionRequest, decodeOptions)(input)
    assert.isTrue(Either.isLeft(result))
    if (Either.isLeft(result)) {
      const [issue] = ParseResult.ArrayFormatter.formatErrorSync(result.left)
      assert.deepStrictEqual(issue?.path, ["messages", 0, "role"])
      assert.strictEqual(issue?.message, "an object with a field named toString or valueOf cannot be read here")
    }
  })

  it("decodes a schema with a transformation, and one that drops unknown fields", () => {
    const Transformed = Schema.Struct({ n: Schema.NumberFromString })
    assert.isFalse(Plain.isPlain(Transformed))
    assert.deepStrictEqual(Plain.decoder(Transformed, decodeOptions)({ n: "2" }), Either.right({ n: 2 }))
    const Simple = Schema.Struct({ a: Schema.String })
    const input = { a: "x", extra: 1 }
    const dropped = Plain.decoder(Simple, { onExcessProperty: "ignore" })(input)
    assert.deepStrictEqual(dropped, Either.right({ a: "x" }))
    const kept = Plain.decoder(Simple, decodeOptions)(input)
    assert.isTrue(Either.isRight(kept) && kept.right === input)
  })
})
