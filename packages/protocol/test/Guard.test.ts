import { assert, describe, it } from "@effect/vitest"
import * as AnthropicMessages from "@switchyard-ts/protocol/AnthropicMessages"
import * as Gemini from "@switchyard-ts/protocol/Gemini"
import * as OpenAiChat from "@switchyard-ts/protocol/OpenAiChat"
import * as OpenAiResponses from "@switchyard-ts/protocol/OpenAiResponses"
import * as Arbitrary from "effect/Arbitrary"
import * as FastCheck from "effect/FastCheck"
import * as Schema from "effect/Schema"
import type * as AST from "effect/SchemaAST"
import { guardOf } from "../src/internal/guard.js"
import { mutated } from "./jsonMutations.js"

/** `Schema.is` of a schema, or `"thrown"` where Effect's union reading throws on the input. */
const effectIs = (ast: AST.AST, input: unknown): boolean | "thrown" => {
  try {
    return Schema.is(Schema.make(ast))(input)
  } catch (thrown) {
    if (thrown instanceof TypeError) return "thrown"
    throw thrown
  }
}

/** The compiled guard of a schema answers what `Schema.is` answers (where it answers). */
const agrees = (ast: AST.AST, input: unknown): void => {
  const expected = effectIs(ast, input)
  const got = guardOf(ast)(input)
  const shown = JSON.stringify(input, (_, value: unknown) => (typeof value === "bigint" ? `${value}n` : value))
  if (expected !== "thrown") assert.strictEqual(got, expected, shown)
}

/** Valid values of `schema` as JSON (a round trip), some mutated (see `mutated`). */
const valuesOf = <A, I>(schema: Schema.Schema<A, I>): FastCheck.Arbitrary<unknown> =>
  mutated(Arbitrary.make(schema).map((value): unknown => JSON.parse(JSON.stringify(value) ?? "null")))

const wireSchemas: ReadonlyArray<readonly [string, Schema.Schema.AnyNoContext]> = [
  ["Chat request", OpenAiChat.ChatCompletionRequest],
  ["Chat answer", OpenAiChat.ChatCompletion],
  ["Chat chunk", OpenAiChat.ChatCompletionChunk],
  ["Messages request", AnthropicMessages.MessagesRequest],
  ["Messages answer", AnthropicMessages.MessagesResponse],
  ["Messages event", AnthropicMessages.StreamEvent],
  ["Responses request", OpenAiResponses.ResponsesRequest],
  ["Responses event", OpenAiResponses.StreamEvent],
  ["Gemini request", Gemini.GenerateContentRequest],
  ["Gemini answer", Gemini.GenerateContentResponse]
]

describe("the compiled guard of a schema", () => {
  for (const [name, schema] of wireSchemas) {
    it(`answers what Schema.is answers: ${name}, valid or mutated`, () => {
      FastCheck.assert(FastCheck.property(valuesOf(schema), (input) => agrees(schema.ast, input)), { numRuns: 150 })
    })
  }

  it("answers what Schema.is answers on every kind of node it compiles, and on those it leaves to Effect", () => {
    class Point extends Schema.Class<Point>("Point")({ x: Schema.Number }) {}
    interface Tree {
      readonly label: string
      readonly children: ReadonlyArray<Tree>
    }
    const Tree: Schema.Schema<Tree> = Schema.Struct({
      label: Schema.String,
      children: Schema.Array(Schema.suspend((): Schema.Schema<Tree> => Tree))
    })
    enum Color {
      Red = "red",
      Blue = 2
    }
    const cases: ReadonlyArray<readonly [{ readonly ast: AST.AST }, ReadonlyArray<unknown>]> = [
      [Schema.Struct({}), [{}, 1, "s", [], null, undefined]],
      [Schema.Tuple(Schema.String, Schema.optionalElement(Schema.Number)), [["a"], ["a", 1], ["a", "b"], [], [
        "a",
        1,
        2
      ]]],
      [Schema.Tuple([Schema.String], Schema.Number), [["a"], ["a", 1, 2], ["a", "x"], [1]]],
      [Schema.Tuple([Schema.String], Schema.Number, Schema.Boolean), [["a", true], ["a", 1, true], ["a", 1], ["a"]]],
      [Schema.Record({ key: Schema.String, value: Schema.Number }), [{}, { a: 1 }, { a: "x" }, [], null]],
      [
        Schema.Struct({ n: Schema.Number }, { key: Schema.String, value: Schema.Union(Schema.Number, Schema.String) }),
        [{ n: 1, a: "x" }, { n: 1, a: true }, { a: 1 }, { n: "1" }]
      ],
      [Schema.Record({ key: Schema.String.pipe(Schema.minLength(2)), value: Schema.Number }), [{ a: "x" }, {
        ab: 1
      }, { ab: "x" }]],
      [Schema.Int, [1, 1.5, "1", Number.NaN]],
      [Schema.String.pipe(Schema.minLength(2)), ["ab", "a", 2]],
      [Schema.Enums(Color), ["red", 2, "Red", "blue", 0]],
      [Schema.TemplateLiteral("a", Schema.Number), ["a1", "ab", 1]],
      [Point, [new Point({ x: 1 }), { x: 1 }, null]],
      [Tree, [{ label: "a", children: [{ label: "b", children: [] }] }, { label: "a", children: [{ label: 1 }] }]],
      [Schema.Struct({ a: Schema.optional(Schema.String), b: Schema.UndefinedOr(Schema.Number) }), [
        { b: 1 },
        {},
        { a: undefined, b: undefined },
        { a: 1, b: 1 }
      ]],
      [Schema.Union(Schema.Literal("x", 1, null, true), Schema.BigIntFromSelf, Schema.SymbolFromSelf), [
        "x",
        1,
        null,
        true,
        false,
        2n,
        Symbol.iterator,
        "y"
      ]],
      [Schema.Object, [{}, [], () => 1, 1, null]],
      [Schema.Unknown, [undefined, null, 1]],
      [Schema.Never, [undefined, 1]]
    ]
    for (const [schema, inputs] of cases) {
      for (const input of inputs) agrees(schema.ast, input)
    }
  })

  it("keeps answering what Schema.is answers on arbitrary JSON values", () => {
    FastCheck.assert(
      FastCheck.property(FastCheck.jsonValue({ maxDepth: 3 }), (input) => {
        for (const [, schema] of wireSchemas) agrees(schema.ast, input)
      }),
      { numRuns: 200 }
    )
  })
})
