import { assert, describe, it } from "@effect/vitest"
import * as CustomRoute from "@switchyard-ts/routing/CustomRoute"
import * as Decision from "@switchyard-ts/routing/Decision"
import * as JsonPointer from "@switchyard-ts/routing/JsonPointer"
import * as JsonSchema from "@switchyard-ts/routing/JsonSchema"
import * as Judge from "@switchyard-ts/routing/Judge"
import * as RoutingFacts from "@switchyard-ts/routing/RoutingFacts"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import { conversation, routed, uniqueJudgeModel } from "./capabilityModel.js"
import {
  buildCustomRoute,
  customOptions,
  customSchedule,
  decideCustom,
  makeCustomJudge,
  responseSchema,
  runCustomSchedule
} from "./customModel.js"
import { target } from "./scriptedJudge.js"

const triggers = ["every_request", "user_turn", "new_session"] as const
const postures = ["error", "fail_open"] as const

describe.concurrent("CustomRoute: failure schedules against the posture-table model", () => {
  for (const trigger of triggers) {
    for (const posture of postures) {
      for (const maxRetries of [0, 2]) {
        it.effect.prop(
          `${trigger} × ${posture} × maxRetries ${maxRetries}`,
          { steps: customSchedule },
          ({ steps }) => runCustomSchedule({ trigger, posture, maxRetries }, steps),
          { fastCheck: { numRuns: 60 }, timeout: 120_000 }
        )
      }
    }
  }
})

describe("CustomRoute: one consultation", () => {
  it.effect("asks the judge with the route's prompt and its schema as structured output", () =>
    Effect.gen(function*() {
      const judge = yield* makeCustomJudge
      const judgeModel = yield* uniqueJudgeModel
      const route = yield* buildCustomRoute(customOptions(target("judge", judgeModel)), judge.layer)
      yield* judge.script([{ _tag: "reply", text: "{\"route\":\"gamma\"}" }])
      const exit = yield* decideCustom(route, routed(conversation("user_turn", "fix the test")), {
        _tag: "reply",
        text: ""
      }, 0)
      assert.isTrue(Exit.isSuccess(exit))
      const [seen] = yield* judge.requests
      const body = seen?.body
      assert.isTrue(Predicate.isRecord(body))
      if (Predicate.isRecord(body)) {
        assert.strictEqual(body.model, judgeModel)
        assert.deepStrictEqual(
          Array.isArray(body.messages) ? body.messages[0] : undefined,
          { role: "system", content: "Name the target for this conversation." }
        )
        assert.deepStrictEqual(body.response_format, {
          type: "json_schema",
          json_schema: { name: "switchyard_classifier_response", strict: true, schema: responseSchema }
        })
        assert.strictEqual(body.max_completion_tokens, 256)
      }
    }))

  it.effect("a verdict naming a label selects it; the others are fallbacks in route order", () =>
    Effect.gen(function*() {
      const judge = yield* makeCustomJudge
      const route = yield* buildCustomRoute(customOptions(target("judge", yield* uniqueJudgeModel)), judge.layer)
      yield* judge.script([{ _tag: "reply", text: "```json\n{\"route\":\"gamma\",\"confidence\":0.9}\n```" }])
      const decision = yield* RoutingFacts.observe(
        route.decide(routed(conversation("user_turn", "task"))),
        RoutingFacts.ignored
      )
      assert.strictEqual(Option.getOrThrow(Decision.selected(decision)).name, "gamma")
      assert.deepStrictEqual(Decision.fallbacks(decision).map((t) => t.name), ["alpha", "beta"])
      assert.deepStrictEqual(decision.evidence, { source: "llm-classifier", label: "gamma" })
    }))

  it.effect("a verdict naming no configured label abstains to default_target", () =>
    Effect.gen(function*() {
      const judge = yield* makeCustomJudge
      const judgeModel = yield* uniqueJudgeModel
      const route = yield* buildCustomRoute(customOptions(target("judge", judgeModel)), judge.layer)
      yield* judge.script([{ _tag: "reply", text: "{\"route\":\"delta\"}" }])
      const decision = yield* RoutingFacts.observe(
        route.decide(routed(conversation("user_turn", "task"))),
        RoutingFacts.ignored
      )
      assert.strictEqual(Option.getOrThrow(Decision.selected(decision)).name, "beta")
      assert.deepStrictEqual(decision.evidence, { source: "abstained", selector: "/route", judge_model: judgeModel })
    }))

  it.effect("a schema-invalid verdict is no verdict under error too", () =>
    Effect.gen(function*() {
      const judge = yield* makeCustomJudge
      const judgeModel = yield* uniqueJudgeModel
      const route = yield* buildCustomRoute(customOptions(target("judge", judgeModel)), judge.layer)
      yield* judge.script([{ _tag: "reply", text: "{\"route\":7}" }])
      const decision = yield* RoutingFacts.observe(
        route.decide(routed(conversation("user_turn", "task"))),
        RoutingFacts.ignored
      )
      assert.deepStrictEqual(decision.evidence, { source: "fail-open", reason: "parse_error", judge_model: judgeModel })
      assert.strictEqual(Option.getOrThrow(Decision.selected(decision)).name, "beta")
    }))
})

describe("CustomRoute.selectLabel", () => {
  const pointer = (text: string) => Either.getOrThrow(JsonPointer.parse(text))
  const labels = ["a/b", "x~y", "plain"]

  it("reads nested members and array elements with RFC 6901 escapes", () => {
    assert.deepStrictEqual(
      CustomRoute.selectLabel(pointer("/decision/0/target"), labels, {
        decision: [{ target: "plain" }]
      }),
      Option.some("plain")
    )
    assert.deepStrictEqual(CustomRoute.selectLabel(pointer("/a~1b"), labels, { "a/b": "x~y" }), Option.some("x~y"))
    assert.deepStrictEqual(CustomRoute.selectLabel(pointer("/x~0y"), labels, { "x~y": "a/b" }), Option.some("a/b"))
  })

  it("abstains on a missing member, a non-string, an unknown label, an index out of range", () => {
    assert.deepStrictEqual(CustomRoute.selectLabel(pointer("/route"), labels, {}), Option.none())
    assert.deepStrictEqual(CustomRoute.selectLabel(pointer("/route"), labels, { route: 1 }), Option.none())
    assert.deepStrictEqual(CustomRoute.selectLabel(pointer("/route"), labels, { route: "Plain" }), Option.none())
    assert.deepStrictEqual(CustomRoute.selectLabel(pointer("/1"), labels, ["plain"]), Option.none())
    assert.deepStrictEqual(CustomRoute.selectLabel(pointer("/01"), labels, ["plain", "plain"]), Option.none())
    assert.deepStrictEqual(CustomRoute.selectLabel(pointer("/-"), labels, ["plain"]), Option.none())
  })
})

describe("JsonPointer.parse", () => {
  it("accepts the root and escaped tokens, rejects what RFC 6901 does", () => {
    assert.deepStrictEqual(JsonPointer.parse(""), Either.right({ text: "", tokens: [] }))
    assert.deepStrictEqual(JsonPointer.parse("/a~1b/~0"), Either.right({ text: "/a~1b/~0", tokens: ["a/b", "~"] }))
    assert.deepStrictEqual(JsonPointer.parse("//"), Either.right({ text: "//", tokens: ["", ""] }))
    assert.isTrue(Either.isLeft(JsonPointer.parse("route")))
    assert.isTrue(Either.isLeft(JsonPointer.parse("/a~2")))
    assert.isTrue(Either.isLeft(JsonPointer.parse("/a~")))
  })
})

describe("JsonSchema", () => {
  const compile = (document: unknown) => JsonSchema.compile(document)

  it("compiles the supported subset and validates against it", () => {
    const schema = Either.getOrThrow(compile({
      type: "object",
      description: "a verdict",
      properties: {
        route: { type: "string", enum: ["weak", "strong"] },
        scores: { type: "array", items: { type: ["integer", "null"] } }
      },
      required: ["route"],
      additionalProperties: false
    }))
    assert.deepStrictEqual(JsonSchema.validate(schema, { route: "weak", scores: [1, null] }), Option.none())
    assert.deepStrictEqual(
      Option.map(JsonSchema.validate(schema, { route: "medium" }), (p) => p.at),
      Option.some("/route")
    )
    assert.deepStrictEqual(
      Option.map(JsonSchema.validate(schema, { route: "weak", scores: [1.5] }), (p) => p.at),
      Option.some("/scores/0")
    )
    assert.deepStrictEqual(
      Option.map(JsonSchema.validate(schema, {}), (p) => p.message),
      Option.some("missing required member route")
    )
    assert.deepStrictEqual(
      Option.map(JsonSchema.validate(schema, { route: "weak", why: "x" }), (p) => p.at),
      Option.some("/why")
    )
    assert.isTrue(Option.isSome(JsonSchema.validate(schema, ["weak"])))
  })

  it("rejects unsupported keywords and malformed values, naming where", () => {
    assert.deepStrictEqual(
      compile({ properties: { p: { type: "number", minimum: 0 } } }),
      Either.left({
        at: "/properties/p/minimum",
        message:
          "unsupported keyword \"minimum\" (supported: type, properties, required, enum, items, additionalProperties, title, description)"
      })
    )
    assert.deepStrictEqual(Either.map(Either.flip(compile({ type: "text" })), (p) => p.at), Either.right("/type"))
    assert.deepStrictEqual(
      Either.map(Either.flip(compile({ required: "route" })), (p) => p.at),
      Either.right("/required")
    )
    assert.deepStrictEqual(Either.map(Either.flip(compile({ enum: [] })), (p) => p.at), Either.right("/enum"))
    assert.deepStrictEqual(Either.map(Either.flip(compile({ items: 3 })), (p) => p.at), Either.right("/items"))
    assert.deepStrictEqual(Either.map(Either.flip(compile([])), (p) => p.at), Either.right(""))
  })
})

describe("Judge.layerTest", () => {
  it.effect("classify without a script is a defect, not a judge failure", () =>
    Effect.gen(function*() {
      const judge = yield* Judge.Judge
      const exit = yield* Effect.exit(RoutingFacts.observe(
        judge.classify({ options: customOptions(target("judge", "j")), messages: [], headers: {} }),
        RoutingFacts.ignored
      ))
      assert.isTrue(Exit.isFailure(exit) && Exit.causeOption(exit).pipe(Option.exists((c) => c._tag === "Die")))
    }).pipe(Effect.provide(Judge.layerTest(() => Effect.dieMessage("unused")))))
})
