import { assert, describe, it } from "@effect/vitest"
import * as G from "@switchyard-ts/protocol/Gemini"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import { geminiCliToolLoop } from "./geminiCli.js"

const decode = <A, I>(schema: Schema.Schema<A, I>) => Schema.decodeUnknownEither(schema)

describe("Gemini schemas", () => {
  it("a Gemini CLI request decodes unchanged, unknown fields and part kinds kept", () => {
    const body = {
      ...geminiCliToolLoop,
      labels: { team: "a" },
      contents: [
        ...geminiCliToolLoop.contents,
        { role: "model", parts: [{ executableCode: { language: "PYTHON", code: "print(1)" } }] }
      ],
      tools: [...geminiCliToolLoop.tools, { googleSearch: {} }],
      toolConfig: { functionCallingConfig: { mode: "AUTO" }, retrievalConfig: { languageCode: "en" } },
      generationConfig: { ...geminiCliToolLoop.generationConfig, responseModalities: ["TEXT"] }
    }
    const decoded = decode(G.GenerateContentRequest)(body, G.decodeOptions)
    assert.deepStrictEqual<unknown>(Either.getOrUndefined(decoded), body)
  })

  it("rejects a content whose role is not user, model or function, and a part list that is not a list", () => {
    assert.isTrue(Either.isLeft(decode(G.GenerateContentRequest)({ contents: [{ role: "system", parts: [] }] })))
    assert.isTrue(Either.isLeft(decode(G.GenerateContentRequest)({ contents: [{ role: "user", parts: "hi" }] })))
  })

  it("a streamed event, a blocked prompt, a countTokens exchange and a models list decode", () => {
    const event = {
      candidates: [{
        content: { role: "model", parts: [{ text: "Hel" }] },
        index: 0,
        safetyRatings: [{ category: "HARM_CATEGORY_HARASSMENT", probability: "NEGLIGIBLE" }]
      }],
      usageMetadata: { promptTokenCount: 10, candidatesTokenCount: 1, totalTokenCount: 11, thoughtsTokenCount: 0 },
      modelVersion: "gemini-2.5-flash",
      responseId: "abc"
    }
    assert.deepStrictEqual<unknown>(Either.getOrUndefined(decode(G.StreamEvent)(event, G.decodeOptions)), event)
    const blocked = { promptFeedback: { blockReason: "SAFETY" }, usageMetadata: { promptTokenCount: 3 } }
    assert.isTrue(Either.isRight(decode(G.GenerateContentResponse)(blocked)))
    assert.isTrue(Either.isRight(decode(G.CountTokensRequest)({ contents: geminiCliToolLoop.contents })))
    assert.isTrue(
      Either.isRight(
        decode(G.CountTokensRequest)({
          generateContentRequest: { model: "models/x", contents: geminiCliToolLoop.contents }
        })
      )
    )
    assert.isTrue(Either.isRight(decode(G.CountTokensResponse)({ totalTokens: 12 })))
    assert.deepStrictEqual(G.modelEntry("auto"), {
      name: "models/auto",
      baseModelId: "auto",
      displayName: "auto",
      supportedGenerationMethods: ["generateContent", "streamGenerateContent", "countTokens"]
    })
    assert.isTrue(Schema.is(G.ListModelsResponse)({ models: [G.modelEntry("auto")] }))
  })

  it("the error envelope names Gemini's status for each HTTP status", () => {
    const statuses: ReadonlyArray<readonly [number, string]> = [
      [400, "INVALID_ARGUMENT"],
      [401, "UNAUTHENTICATED"],
      [403, "PERMISSION_DENIED"],
      [404, "NOT_FOUND"],
      [409, "ABORTED"],
      [413, "INVALID_ARGUMENT"],
      [422, "FAILED_PRECONDITION"],
      [429, "RESOURCE_EXHAUSTED"],
      [500, "INTERNAL"],
      [502, "UNAVAILABLE"],
      [503, "UNAVAILABLE"],
      [504, "DEADLINE_EXCEEDED"]
    ]
    for (const [status, name] of statuses) assert.strictEqual(G.errorStatusForHttp(status), name, String(status))
    const body = G.envelope(404, "No route registered for model x")
    assert.deepStrictEqual(body, {
      error: { code: 404, message: "No route registered for model x", status: "NOT_FOUND" }
    })
    assert.isTrue(Schema.is(G.ErrorBody)(body))
    assert.isTrue(Schema.is(G.UpstreamErrorBody)({ error: { code: 429, status: "RESOURCE_EXHAUSTED" } }))
  })
})
