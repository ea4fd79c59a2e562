import { assert, describe, it } from "@effect/vitest"
import * as Anthropic from "@switchyard-ts/protocol/AnthropicMessages"
import type { TranslationError } from "@switchyard-ts/protocol/Errors"
import * as G from "@switchyard-ts/protocol/Gemini"
import { isUserTurn } from "@switchyard-ts/protocol/Neutral"
import type * as N from "@switchyard-ts/protocol/Neutral"
import * as OpenAi from "@switchyard-ts/protocol/OpenAiChat"
import * as Translate from "@switchyard-ts/protocol/Translate"
import * as TG from "@switchyard-ts/protocol/TranslateGemini"
import * as Either from "effect/Either"
import * as FastCheck from "effect/FastCheck"
import * as Schema from "effect/Schema"
import * as Arb from "./arbitraries.js"
import * as GArb from "./geminiArbitraries.js"
import { geminiCliToolLoop } from "./geminiCli.js"

const isGeminiRequest = Schema.is(G.GenerateContentRequest)
const isGeminiResponse = Schema.is(G.GenerateContentResponse)
const isChunk = Schema.is(OpenAi.ChatCompletionChunk)
const decodeRequest = Schema.decodeUnknownSync(G.GenerateContentRequest)

const right = <A>(either: Either.Either<A, TranslationError>): A => {
  if (Either.isLeft(either)) assert.fail(`unexpected TranslationError: ${either.left.reason}`)
  return either.right
}

const read = (body: unknown, stream = true) =>
  TG.fromGeminiRequest(decodeRequest(body, G.decodeOptions), { model: "gemini-route", stream })

describe("Gemini requests (examples)", () => {
  it("a Gemini CLI tool loop: calls get a derived id, the response pairs by name, the signature rides before the call", () => {
    const n = read(geminiCliToolLoop)
    assert.strictEqual(n.model, "gemini-route")
    assert.isTrue(n.stream)
    assert.deepStrictEqual(n.instructions, [{
      _tag: "Text",
      text: "You are an interactive CLI agent specializing in software engineering tasks."
    }])
    assert.deepStrictEqual(n.messages.map((m) => m.role), ["user", "assistant", "user", "assistant", "user"])
    assert.deepStrictEqual(n.messages[3]?.blocks, [
      { _tag: "Thinking", text: "I will write the file." },
      { _tag: "Thinking", text: "", signature: "CiQBjz1rX3Nl" },
      {
        _tag: "ToolUse",
        id: TG.requestCallId(3, 1),
        name: "write_file",
        input: { file_path: "/tmp/work/hello.txt", content: "hi" },
        gemini: {}
      }
    ])
    assert.deepStrictEqual(n.messages[4]?.blocks, [{
      _tag: "ToolResult",
      toolUseId: "gemini_call_3_1",
      content: [{ _tag: "Text", text: "Successfully created and wrote to new file: /tmp/work/hello.txt." }],
      isError: false,
      gemini: { name: "write_file", id: "write_file-1764650000000-5f2a1c" }
    }])
    assert.deepStrictEqual(n.tools.map((t) => [t.name, t.parameters]), [
      ["write_file", geminiCliToolLoop.tools[0]?.functionDeclarations[0]?.parametersJsonSchema ?? {}],
      ["run_shell_command", {
        type: "object",
        properties: {
          command: { type: "string", description: "Exact bash command to execute." },
          directory: { type: "string" }
        },
        required: ["command"]
      }]
    ])
    assert.deepStrictEqual(n.extra, {})
    assert.deepStrictEqual(n.gemini?.fields, {
      generationConfig: { thinkingConfig: { includeThoughts: true, thinkingBudget: -1 } }
    })
    assert.strictEqual(n.temperature, 0)
    assert.strictEqual(n.topP, 1)
    assert.isFalse(isUserTurn(n))
  })

  it("a Gemini CLI tool loop reaches a Chat upstream as a paired tool call and result, with no Gemini field", () => {
    const chat = Translate.toOpenAiRequest(read(geminiCliToolLoop))
    assert.isTrue(Schema.is(OpenAi.ChatCompletionRequest)(chat))
    assert.deepStrictEqual<unknown>(chat.messages.slice(4), [
      {
        role: "assistant",
        content: null,
        tool_calls: [{
          id: "gemini_call_3_1",
          type: "function",
          function: { name: "write_file", arguments: "{\"file_path\":\"/tmp/work/hello.txt\",\"content\":\"hi\"}" }
        }],
        reasoning_content: "I will write the file.",
        thinking_blocks: [
          { type: "thinking", thinking: "I will write the file." },
          { type: "thinking", thinking: "", signature: "CiQBjz1rX3Nl" }
        ]
      },
      {
        role: "tool",
        tool_call_id: "gemini_call_3_1",
        content: "Successfully created and wrote to new file: /tmp/work/hello.txt."
      }
    ])
    assert.deepStrictEqual(Object.keys(chat).sort(), ["messages", "model", "stream", "temperature", "tools", "top_p"])
  })

  it("a Gemini CLI tool loop reaches a Messages upstream with the tool result paired", () => {
    const messages = right(Translate.toAnthropicRequest(read(geminiCliToolLoop)))
    assert.isTrue(Schema.is(Anthropic.MessagesRequest)(messages))
    const last = messages.messages[messages.messages.length - 1]
    assert.deepStrictEqual(last?.content, [{
      type: "tool_result",
      tool_use_id: "gemini_call_3_1",
      content: "Successfully created and wrote to new file: /tmp/work/hello.txt."
    }])
  })

  it("a Gemini CLI tool loop goes back to a Gemini upstream as it came (ids, signature, declarations, config)", () => {
    const back = right(TG.toGeminiRequest(read(geminiCliToolLoop)))
    const { systemInstruction: { role: _role, ...system }, ...rest } = geminiCliToolLoop
    assert.deepStrictEqual<unknown>(back, { ...rest, systemInstruction: system })
  })

  it("a Chat conversation with a tool loop reaches Gemini named, paired and with ids", () => {
    const n = right(Translate.fromOpenAiRequest({
      model: "r",
      messages: [
        { role: "system", content: "Be brief." },
        { role: "user", content: "Weather in Paris?" },
        {
          role: "assistant",
          content: null,
          tool_calls: [{
            id: "call_1",
            type: "function",
            function: { name: "weather", arguments: "{\"city\":\"Paris\"}" }
          }]
        },
        { role: "tool", tool_call_id: "call_1", content: "{\"celsius\":21}" },
        { role: "tool", tool_call_id: "call_1", content: "sunny" }
      ],
      tools: [{ type: "function", function: { name: "weather", parameters: { type: "object" } } }],
      tool_choice: { type: "function", function: { name: "weather" } },
      max_completion_tokens: 100,
      seed: 7,
      logprobs: true,
      user: "u1"
    }))
    const g = right(TG.toGeminiRequest(n))
    assert.isTrue(isGeminiRequest(g))
    assert.deepStrictEqual<unknown>(g, {
      contents: [
        { role: "user", parts: [{ text: "Weather in Paris?" }] },
        { role: "model", parts: [{ functionCall: { id: "call_1", name: "weather", args: { city: "Paris" } } }] },
        {
          role: "user",
          parts: [
            { functionResponse: { id: "call_1", name: "weather", response: { celsius: 21 } } },
            { functionResponse: { id: "call_1", name: "weather", response: { output: "sunny" } } }
          ]
        }
      ],
      systemInstruction: { parts: [{ text: "Be brief." }] },
      tools: [{ functionDeclarations: [{ name: "weather", parametersJsonSchema: { type: "object" } }] }],
      toolConfig: { functionCallingConfig: { mode: "ANY", allowedFunctionNames: ["weather"] } },
      generationConfig: { maxOutputTokens: 100, seed: 7 }
    })
  })

  it("fails for another format's opaque block, arguments that are not an object and an orphan tool result", () => {
    const base: N.NeutralRequest = {
      model: "m",
      instructions: [],
      messages: [],
      tools: [],
      opaqueTools: [],
      stop: [],
      stream: false,
      extra: {}
    }
    const audio: N.NeutralRequest = {
      ...base,
      messages: [{ role: "user", blocks: [{ _tag: "Opaque", format: "openai_chat", value: { type: "input_audio" } }] }]
    }
    const badArgs: N.NeutralRequest = {
      ...base,
      messages: [{ role: "assistant", blocks: [{ _tag: "ToolUse", id: "c", name: "f", input: [1] }] }]
    }
    const orphan: N.NeutralRequest = {
      ...base,
      messages: [{ role: "user", blocks: [{ _tag: "ToolResult", toolUseId: "x", content: [], isError: false }] }]
    }
    for (const request of [audio, badArgs, orphan]) assert.isTrue(Either.isLeft(TG.toGeminiRequest(request)))
    const left = TG.toGeminiRequest(audio)
    assert.strictEqual(
      Either.isLeft(left) ? left.left.reason : "",
      "an OpenAI Chat input_audio block cannot be sent to a gemini_generate_content upstream"
    )
  })

  it("countTokens: either body shape reads as the request it counts, and is written for a Gemini upstream", () => {
    const body = decodeRequest(geminiCliToolLoop, G.decodeOptions)
    assert.deepStrictEqual(TG.countTokensBody({ contents: body.contents }), { contents: body.contents })
    assert.deepStrictEqual(TG.countTokensBody({ generateContentRequest: { ...body, model: "models/x" } }), body)
    const n = TG.fromGeminiRequest(TG.countTokensBody({ generateContentRequest: body }), {
      model: "gemini-2.5-pro",
      stream: false
    })
    const count = right(TG.toCountTokensRequest(n))
    assert.isTrue(Schema.is(G.CountTokensRequest)(count))
    assert.strictEqual(count.generateContentRequest?.model, "models/gemini-2.5-pro")
    assert.deepStrictEqual(count.generateContentRequest?.contents, body.contents)
  })

  it("function responses: output, error and any object", () => {
    assert.deepStrictEqual(TG.toolResultContent({ output: "ok" }), { text: "ok", isError: false })
    assert.deepStrictEqual(TG.toolResultContent({ error: "boom" }), { text: "boom", isError: true })
    assert.deepStrictEqual(TG.toolResultContent({ output: "{\"a\":1}" }), {
      text: "{\"output\":\"{\\\"a\\\":1}\"}",
      isError: false
    })
    assert.deepStrictEqual(TG.toolResultContent({ result: 3 }), { text: "{\"result\":3}", isError: false })
    assert.deepStrictEqual(TG.functionResponseBody("{\"result\":3}", false), { result: 3 })
    assert.deepStrictEqual(TG.functionResponseBody("boom", true), { error: "boom" })
  })
})

describe("Gemini request round trips (properties)", () => {
  it("Gemini → neutral → Gemini is the identity on the normalised form", () => {
    FastCheck.assert(
      FastCheck.property(GArb.geminiRequest, (req) => {
        assert.isTrue(isGeminiRequest(req))
        const back = right(TG.toGeminiRequest(TG.fromGeminiRequest(req, { model: "m", stream: false })))
        assert.isTrue(isGeminiRequest(back))
        assert.deepStrictEqual<unknown>(back, req)
      }),
      { seed: 41, numRuns: 400 }
    )
  })

  it("neutral → Gemini → neutral is the identity on the portable subset", () => {
    FastCheck.assert(
      FastCheck.property(GArb.portableRequest, (n) => {
        const g = right(TG.toGeminiRequest(n))
        assert.isTrue(isGeminiRequest(g))
        const back = TG.fromGeminiRequest(g, { model: n.model, stream: n.stream })
        assert.deepStrictEqual(GArb.withoutGeminiMarkers(back), n)
      }),
      { seed: 42, numRuns: 400 }
    )
  })

  it("every Gemini request reaches Chat and Messages upstreams as valid bodies with its conversation", () => {
    FastCheck.assert(
      FastCheck.property(GArb.geminiRequest, (req) => {
        const n = TG.fromGeminiRequest(req, { model: "m", stream: true })
        const chat = Translate.toOpenAiRequest(n)
        assert.isTrue(Schema.is(OpenAi.ChatCompletionRequest)(chat))
        for (const key of ["safetySettings", "cachedContent", "generationConfig", "toolConfig"]) {
          assert.isFalse(key in chat, key)
        }
        const results = n.messages.flatMap((m) => m.blocks.filter((b) => b._tag === "ToolResult"))
        assert.strictEqual(chat.messages.filter((m) => m.role === "tool").length, results.length)
      }),
      { seed: 43, numRuns: 200 }
    )
  })
})

/** A tool result's texts as Gemini reads them back: joined with "\n", a JSON object's text re-serialised. */
const resultText = (block: N.ToolResult): string => {
  const text = block.content.flatMap((item) => item._tag === "Text" ? [item.text] : []).join("\n")
  return TG.toolResultContent(TG.functionResponseBody(text, false)).text
}

/** The conversation of `n` as every format carries it: roles, texts, calls and which call each result answers. */
const conversationOf = (n: N.NeutralRequest) =>
  n.messages.flatMap((message) =>
    message.role === "system" ? [] : [{
      role: message.role,
      blocks: message.blocks.flatMap((block) => {
        switch (block._tag) {
          case "Text":
            return [["text", block.text]]
          case "ToolUse":
            return [["call", block.id, block.name, block.input]]
          case "ToolResult":
            return [["result", block.toolUseId, block.isError, resultText(block)]]
          default:
            return []
        }
      })
    }]
  ).filter((message) => message.blocks.length > 0)

describe("Gemini upstreams (properties)", () => {
  it("Chat and Messages requests → Gemini → neutral keep the conversation: texts, calls and their results", () => {
    const requests = FastCheck.oneof(
      Arb.openAiRequest.map((req) => Translate.fromOpenAiRequest(req)),
      Arb.anthropicRequest({ anthropicOnly: false }).map((req) => Translate.fromAnthropicRequest(req))
    )
    let translated = 0
    FastCheck.assert(
      FastCheck.property(requests, (either) => {
        const n = right(either)
        const g = TG.toGeminiRequest(n)
        if (Either.isLeft(g)) return
        assert.isTrue(isGeminiRequest(g.right))
        const back = TG.fromGeminiRequest(g.right, { model: n.model, stream: n.stream })
        assert.deepStrictEqual(conversationOf(back), conversationOf(n))
        translated++
      }),
      { seed: 47, numRuns: 300 }
    )
    // most generated requests are Gemini-portable (the others carry another format's opaque parts)
    assert.isAbove(translated, 150)
  })
})

describe("Gemini answers", () => {
  it("a blocked prompt is a refusal: content_filter for Chat, refusal for Messages", () => {
    const n = TG.fromGeminiResponse({
      promptFeedback: { blockReason: "SAFETY" },
      usageMetadata: { promptTokenCount: 7, totalTokenCount: 7 },
      modelVersion: "gemini-2.5-flash",
      responseId: "r1"
    })
    assert.strictEqual(n.stopReason, "refusal")
    assert.deepStrictEqual(n.content, [])
    assert.strictEqual(Translate.toOpenAiResponse(n).choices[0]?.finish_reason, "content_filter")
    assert.strictEqual(Translate.toAnthropicResponse(n).stop_reason, "refusal")
  })

  it("a chat completion with a tool call becomes one candidate with the call, STOP and usage", () => {
    const g = TG.toGeminiResponse(Translate.fromOpenAiResponse({
      id: "chatcmpl-9",
      model: "gpt-x",
      choices: [{
        index: 0,
        finish_reason: "tool_calls",
        message: {
          role: "assistant",
          content: "Writing.",
          tool_calls: [{ id: "call_a", type: "function", function: { name: "write_file", arguments: "{\"p\":1}" } }]
        }
      }],
      usage: {
        prompt_tokens: 100,
        completion_tokens: 30,
        total_tokens: 130,
        prompt_tokens_details: { cached_tokens: 40 },
        completion_tokens_details: { reasoning_tokens: 10 }
      }
    }))
    assert.isTrue(isGeminiResponse(g))
    assert.deepStrictEqual<unknown>(g, {
      candidates: [{
        content: {
          role: "model",
          parts: [{ text: "Writing." }, { functionCall: { id: "call_a", name: "write_file", args: { p: 1 } } }]
        },
        finishReason: "STOP",
        index: 0
      }],
      usageMetadata: {
        promptTokenCount: 100,
        candidatesTokenCount: 20,
        totalTokenCount: 130,
        cachedContentTokenCount: 40,
        thoughtsTokenCount: 10
      },
      modelVersion: "gpt-x",
      responseId: "chatcmpl-9"
    })
  })

  it("a refusal is SAFETY, a length stop MAX_TOKENS", () => {
    assert.strictEqual(TG.toGeminiFinishReason("refusal"), "SAFETY")
    assert.strictEqual(TG.toGeminiFinishReason("max_tokens"), "MAX_TOKENS")
    assert.strictEqual(TG.toGeminiFinishReason("end_turn"), "STOP")
    assert.strictEqual(TG.toGeminiFinishReason("MALFORMED_FUNCTION_CALL"), "MALFORMED_FUNCTION_CALL")
    assert.strictEqual(TG.fromGeminiFinishReason("RECITATION", false), "refusal")
    assert.strictEqual(TG.fromGeminiFinishReason("STOP", true), "tool_use")
  })

  it("Gemini → neutral → Gemini keeps the parts (calls given ids), finish reason and usage (property)", () => {
    FastCheck.assert(
      FastCheck.property(GArb.geminiAnswer, (a) => {
        const response = GArb.geminiResponse(a)
        const back = TG.toGeminiResponse(TG.fromGeminiResponse(response))
        // the n-th call (derived ids count every call) gets its id
        let calls = 0
        const expected = a.parts.map((part): G.Part => {
          if (part.functionCall === undefined) return part
          const id = part.functionCall.id ?? TG.responseCallId(a.responseId, calls)
          calls++
          return { ...part, functionCall: { ...part.functionCall, id } }
        })
        assert.deepStrictEqual<unknown>(back.candidates?.[0]?.content?.parts, expected)
        // every content block reads as a refusal, which Gemini is told as SAFETY
        const finish = TG.refusalFinishReasons.includes(a.finishReason) ? "SAFETY" : a.finishReason
        assert.strictEqual(back.candidates?.[0]?.finishReason, finish)
        assert.deepStrictEqual(back.usageMetadata, a.usage)
        assert.strictEqual(back.responseId, a.responseId ?? "")
      }),
      { seed: 44, numRuns: 300 }
    )
  })
})

describe("Gemini streams (properties)", () => {
  const runChatToGemini = (chunks: ReadonlyArray<OpenAi.ChatCompletionChunk>) => {
    const translator = TG.chatToGeminiStream()
    return [...chunks.flatMap((chunk) => translator.push(chunk)), ...translator.end(), ...translator.end()]
  }

  /*
   * Chat chunks split at random points → Gemini events: the parts joined as a client joins them
   * equal the parts of the buffered translation of the same completion; the last event (and only
   * it) has the finish reason and the usage.
   */
  it("Chat → Gemini: the joined events equal the buffered translation", () => {
    const arb = Arb.completion.chain((c) => Arb.openAiChunks(c).map((chunks) => ({ c, chunks })))
    FastCheck.assert(
      FastCheck.property(arb, ({ c, chunks }) => {
        const events = runChatToGemini(chunks)
        for (const event of events) assert.isTrue(isGeminiResponse(event))
        const usage = chunks.some((chunk) => chunk.usage !== undefined && chunk.usage !== null)
          ? Arb.openAiUsage(c.usage)
          : undefined
        const buffered = TG.toGeminiResponse(Translate.fromOpenAiResponse(Arb.chatCompletion(c, usage)))
        const parts = events.flatMap((event) => event.candidates?.[0]?.content?.parts ?? [])
        assert.deepStrictEqual(GArb.joinParts(parts), GArb.joinParts(buffered.candidates?.[0]?.content?.parts ?? []))
        const last = events[events.length - 1]
        assert.strictEqual(last?.candidates?.[0]?.finishReason, buffered.candidates?.[0]?.finishReason)
        assert.deepStrictEqual(last?.usageMetadata, buffered.usageMetadata)
        assert.strictEqual(events.filter((event) => event.candidates?.[0]?.finishReason !== undefined).length, 1)
        for (const event of events) {
          assert.strictEqual(event.responseId, "chatcmpl-1")
          assert.strictEqual(event.modelVersion, "up")
        }
      }),
      { seed: 45, numRuns: 500 }
    )
  })

  /*
   * A Gemini upstream's events → Chat chunks: what a Chat client aggregates equals the buffered
   * translation of the whole answer (text, reasoning, calls with their ids, finish, usage).
   */
  it("Gemini → Chat: the aggregated chunks equal the buffered translation", () => {
    FastCheck.assert(
      FastCheck.property(GArb.geminiAnswer, (a) => {
        const translator = TG.geminiToChatStream()
        const chunks = [...GArb.geminiEvents(a).flatMap((event) => translator.push(event)), ...translator.end()]
        for (const chunk of chunks) assert.isTrue(isChunk(chunk))
        const chat = Arb.aggregate(chunks)
        const buffered = Translate.toOpenAiResponse(TG.fromGeminiResponse(GArb.geminiResponse(a)))
        const message = buffered.choices[0]?.message
        assert.strictEqual(chat.text, message?.content ?? "")
        assert.strictEqual(chat.reasoning, message?.reasoning_content ?? "")
        assert.deepStrictEqual<unknown>(
          chat.toolCalls,
          (message?.tool_calls ?? []).map((call) =>
            call.type === "function"
              ? { id: call.id, name: call.function.name, arguments: call.function.arguments }
              : {}
          )
        )
        assert.strictEqual(chat.finishReason, buffered.choices[0]?.finish_reason)
        assert.deepStrictEqual(chat.usage, buffered.usage)
        assert.strictEqual(chunks[0]?.id, buffered.id)
      }),
      { seed: 46, numRuns: 500 }
    )
  })

  it("a Gemini stream blocked at the prompt ends with content_filter", () => {
    const translator = TG.geminiToChatStream()
    const chunks = [
      ...translator.push({ promptFeedback: { blockReason: "PROHIBITED_CONTENT" }, responseId: "r" }),
      ...translator.end()
    ]
    assert.deepStrictEqual(chunks.map((c) => c.choices[0]?.finish_reason ?? null), [null, "content_filter", null])
  })
})
