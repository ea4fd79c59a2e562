import { assert, describe, it } from "@effect/vitest"
import * as Anthropic from "@switchyard-ts/protocol/AnthropicMessages"
import type { TranslationError } from "@switchyard-ts/protocol/Errors"
import type * as N from "@switchyard-ts/protocol/Neutral"
import * as OpenAi from "@switchyard-ts/protocol/OpenAiChat"
import * as R from "@switchyard-ts/protocol/OpenAiResponses"
import * as Translate from "@switchyard-ts/protocol/Translate"
import * as TR from "@switchyard-ts/protocol/TranslateResponses"
import * as Either from "effect/Either"
import * as FastCheck from "effect/FastCheck"
import * as Schema from "effect/Schema"
import * as Arb from "./arbitraries.js"
import * as RArb from "./responsesArbitraries.js"

const isResponsesRequest = Schema.is(R.ResponsesRequest)
const isResponseObject = Schema.is(R.ResponseObject)
const isStreamEvent = Schema.is(R.StreamEvent)
const isChatRequest = Schema.is(OpenAi.ChatCompletionRequest)
const isMessagesRequest = Schema.is(Anthropic.MessagesRequest)
const isChunk = Schema.is(OpenAi.ChatCompletionChunk)

const right = <A>(either: Either.Either<A, TranslationError>): A => {
  if (Either.isLeft(either)) assert.fail(`unexpected TranslationError: ${either.left.reason}`)
  return either.right
}

/** `request` without OpenAI's image `detail`, which Anthropic has no slot for. */
const withoutImageDetail = (request: N.NeutralRequest): N.NeutralRequest => ({
  ...request,
  messages: request.messages.map((message): N.ConversationEntry =>
    message.role === "system" ? message : {
      role: message.role,
      blocks: message.blocks.map((block) => {
        if (block._tag !== "Image") return block
        const { detail: _detail, ...image } = block
        return image
      })
    }
  )
})

/** The neutral form a Chat or Messages upstream receives from a Responses request. */
const portableForm = (n: N.NeutralRequest): N.NeutralRequest =>
  RArb.withoutResponsesMarkers(right(TR.portable(n, "openai_chat")))

describe("Responses request round trips (properties)", () => {
  it("Responses → neutral → Responses is the identity on the normalised form", () => {
    FastCheck.assert(
      FastCheck.property(RArb.responsesRequest({ portable: false }), (req) => {
        assert.isTrue(isResponsesRequest(req))
        const neutral = right(TR.fromResponsesRequest(req))
        const back = right(TR.toResponsesRequest(neutral))
        assert.isTrue(isResponsesRequest(back))
        assert.deepStrictEqual<unknown>(back, req)
      }),
      { seed: 16, numRuns: 300 }
    )
  })

  it("with additional_tools items: Responses → neutral → Responses is the identity, the items in place", () => {
    FastCheck.assert(
      FastCheck.property(RArb.withAdditionalTools({ portable: false }), (req) => {
        assert.isTrue(isResponsesRequest(req))
        const neutral = right(TR.fromResponsesRequest(req))
        assert.deepStrictEqual<unknown>(right(TR.toResponsesRequest(neutral)), req)
      }),
      { seed: 27, numRuns: 300 }
    )
  })

  it("with additional_tools items: Responses → neutral → Chat offers their tools and keeps the portable neutral request", () => {
    FastCheck.assert(
      FastCheck.property(RArb.withAdditionalTools({ portable: true }), (req) => {
        const first = right(TR.fromResponsesRequest(req))
        const chat = right(TR.toChatRequest(first))
        assert.isTrue(isChatRequest(chat))
        const declared = new Set(first.responses?.additionalTools?.toolNames)
        const offered = new Set(chat.tools?.map((tool) => tool.type === "function" ? tool.function.name : ""))
        for (const name of declared) assert.isTrue(offered.has(name))
        assert.deepStrictEqual(right(Translate.fromOpenAiRequest(chat)), Arb.systemTextsJoined(portableForm(first)))
        right(TR.toMessagesRequest(first))
      }),
      { seed: 28, numRuns: 300 }
    )
  })

  /*
   * Through Chat, the portable form is kept but for Chat's system normalisation (each system
   * message's texts joined into one).
   */
  it("Responses → neutral → Chat → neutral keeps the portable neutral request", () => {
    FastCheck.assert(
      FastCheck.property(RArb.responsesRequest({ portable: true }), (req) => {
        const first = right(TR.fromResponsesRequest(req))
        const chat = right(TR.toChatRequest(first))
        assert.isTrue(isChatRequest(chat))
        const second = right(Translate.fromOpenAiRequest(chat))
        assert.deepStrictEqual(second, Arb.systemTextsJoined(portableForm(first)))
      }),
      { seed: 17, numRuns: 300 }
    )
  })

  /*
   * Through Messages: positioned system messages move to the end of `system`, the raw arguments
   * text, tools' `strict` and images' `detail` are gone, the output limit defaults, and the OpenAI-only fields
   * (`store`, `prompt_cache_key`, `reasoning_effort`) are dropped.
   */
  it("Responses → neutral → Messages → neutral keeps the portable neutral request", () => {
    FastCheck.assert(
      FastCheck.property(RArb.responsesRequest({ portable: true }), (req) => {
        const first = right(TR.fromResponsesRequest(req))
        const messages = right(TR.toMessagesRequest(first))
        assert.isTrue(isMessagesRequest(messages))
        const second = right(Translate.fromAnthropicRequest(messages))
        const portable = withoutImageDetail(portableForm(first))
        const extra: Record<string, unknown> = {}
        for (const [key, value] of Object.entries(portable.extra)) {
          if (!Translate.openAiOnlyFields.includes(key)) extra[key] = value
        }
        assert.deepStrictEqual(Arb.withoutRawArguments(second), {
          ...Arb.systemMessagesMoved(Arb.withoutRawArguments(portable)),
          // Translate keeps OpenAI's `strict` for OpenAI only
          tools: portable.tools.map(({ strict: _strict, ...tool }) => tool),
          extra,
          maxOutputTokens: portable.maxOutputTokens ?? Translate.defaultAnthropicMaxTokens
        })
      }),
      { seed: 18, numRuns: 300 }
    )
  })

  /*
   * Into Responses and back, a Chat request keeps its neutral form but for what Responses cannot
   * carry (thinking, stop sequences, Chat-only fields) and how Responses groups items (consecutive
   * assistant turns are one, leading system messages are instructions).
   */
  it("Chat → neutral → Responses → neutral keeps the neutral request", () => {
    FastCheck.assert(
      FastCheck.property(Arb.openAiRequest, (req) => {
        const first = right(Translate.fromOpenAiRequest(req))
        const responses = right(TR.toResponsesRequest(first))
        assert.isTrue(isResponsesRequest(responses))
        const { responses: _layout, ...second } = right(TR.fromResponsesRequest(responses))
        assert.deepStrictEqual(second, RArb.throughResponses(first, TR.chatOnlyFields))
      }),
      { seed: 19, numRuns: 300 }
    )
  })

  it("Messages → neutral → Responses → neutral keeps the neutral request", () => {
    FastCheck.assert(
      FastCheck.property(Arb.anthropicRequest({ anthropicOnly: false }), (req) => {
        const first = right(Translate.fromAnthropicRequest(req))
        const responses = right(TR.toResponsesRequest(first))
        assert.isTrue(isResponsesRequest(responses))
        const { responses: _layout, ...second } = right(TR.fromResponsesRequest(responses))
        // Responses carries the arguments as text: compare them as parsed JSON, as Anthropic does
        assert.deepStrictEqual(
          Arb.withoutRawArguments(second),
          RArb.throughResponses(first, Translate.anthropicOnlyFields)
        )
      }),
      { seed: 20, numRuns: 300 }
    )
  })
})

describe("Responses buffered responses (properties)", () => {
  it("Responses → neutral → Responses is the identity; → Chat keeps text, calls, reasoning summary, finish and usage", () => {
    FastCheck.assert(
      FastCheck.property(RArb.responsesResponse, (response) => {
        const neutral = TR.fromResponsesResponse(response)
        const back = TR.toResponsesResponse(neutral)
        assert.isTrue(isResponseObject(back))
        assert.deepStrictEqual(back, response)

        const chat = Translate.toOpenAiResponse(neutral)
        const message = chat.choices[0]?.message
        const texts = response.output.flatMap((item) =>
          item.type === "message" && "content" in item && Array.isArray(item.content)
            ? item.content.flatMap((p) => "text" in p ? [p.text] : [])
            : []
        )
        assert.strictEqual(message?.content ?? "", texts.join(""))
        const calls = response.output.flatMap((item) =>
          item.type === "function_call" && "arguments" in item
            ? [{ id: item.call_id, name: RArb.flatName(item.name, item.namespace), arguments: item.arguments }]
            : item.type === "custom_tool_call" && "input" in item
            ? [{ id: item.call_id, name: item.name, arguments: JSON.stringify({ input: item.input }) }]
            : []
        )
        assert.deepStrictEqual(
          (message?.tool_calls ?? []).map((c) =>
            c.type === "function" ? { id: c.id, name: c.function.name, arguments: c.function.arguments } : {}
          ),
          calls
        )
        const summary = response.output.flatMap((item) =>
          item.type === "reasoning" && "summary" in item ? [item.summary.map((s) => s.text).join("\n\n")] : []
        )
          .join("")
        assert.strictEqual(message?.reasoning_content ?? "", summary)
        const expectedFinish = response.incomplete_details?.reason === "max_output_tokens"
          ? "length"
          : response.incomplete_details?.reason === "content_filter"
          ? "content_filter"
          : calls.length > 0
          ? "tool_calls"
          : "stop"
        assert.strictEqual(chat.choices[0]?.finish_reason, expectedFinish)
        assert.deepStrictEqual(TR.fromResponsesUsage(TR.toResponsesUsage(Translate.fromOpenAiUsage(chat.usage))), {
          ...TR.fromResponsesUsage(response.usage)
        })
      }),
      { seed: 21, numRuns: 300 }
    )
  })

  it("Chat completion → neutral → Responses → neutral keeps text, calls, thinking text (as summaries), stop reason and usage", () => {
    FastCheck.assert(
      FastCheck.property(Arb.completion, (c) => {
        const neutral = Translate.fromOpenAiResponse(Arb.chatCompletion(c, Arb.openAiUsage(c.usage)))
        const response = TR.toResponsesResponse(neutral)
        assert.isTrue(isResponseObject(response))
        const back = TR.fromResponsesResponse(response)
        assert.deepStrictEqual(back.content.flatMap((b) => b._tag === "Text" ? [b.text] : []).join(""), c.text)
        assert.deepStrictEqual<unknown>(
          back.content.flatMap((b) => b._tag === "ToolUse" ? [{ id: b.id, name: b.name, arguments: b.arguments }] : []),
          c.toolCalls
        )
        assert.deepStrictEqual(
          back.content.flatMap((b) => b._tag === "Reasoning" ? [b.summary.join("")] : []),
          c.thinking.flatMap((p) => p.type === "thinking" && p.thinking !== "" ? [p.thinking] : [])
        )
        const expected = c.finishReason === "length"
          ? "max_tokens"
          : c.finishReason === "content_filter"
          ? "refusal"
          : c.toolCalls.length > 0
          ? "tool_use"
          : "end_turn"
        assert.strictEqual(back.stopReason, expected)
        assert.deepStrictEqual(back.usage, neutral.usage)
      }),
      { seed: 22, numRuns: 300 }
    )
  })
})

const runChatToResponses = (chunks: ReadonlyArray<OpenAi.ChatCompletionChunk>, tools?: TR.ToolMap) => {
  const translator = TR.chatToResponsesStream({ model: "route", ...(tools !== undefined ? { tools } : {}) })
  const events = [...chunks.flatMap((chunk) => translator.push(chunk)), ...translator.end()]
  assert.deepStrictEqual(translator.end(), [], "end() is idempotent")
  return events
}

const runResponsesToChat = (events: ReadonlyArray<R.StreamEvent>) => {
  const translator = TR.responsesToChatStream()
  const chunks = [...events.flatMap((event) => translator.push(event)), ...translator.end()]
  assert.deepStrictEqual(translator.end(), [], "end() is idempotent")
  return chunks
}

describe("Responses streams (properties)", () => {
  /*
   * Chat chunks split at random points → Responses events: well formed, and what a Responses
   * client aggregates equals the completion and the buffered translation of the same completion;
   * those events → Chat chunks aggregate to the original text, tool calls, reasoning and usage
   * (the finish reason as a Responses status can say: `tool_calls` exactly when a call is present).
   */
  it("Chat → Responses → Chat keeps text, tool calls, reasoning, finish and usage, with well-formed sequences", () => {
    const arb = Arb.completion.chain((c) => Arb.openAiChunks(c).map((chunks) => ({ c, chunks })))
    FastCheck.assert(
      FastCheck.property(arb, ({ c, chunks }) => {
        const events = runChatToResponses(chunks)
        assert.deepStrictEqual(RArb.responsesStreamProblems(events), [])
        for (const event of events) assert.isTrue(isStreamEvent(event), event.type)
        const agg = RArb.aggregateResponses(events)
        assert.strictEqual(agg.text, c.text)
        assert.deepStrictEqual(
          agg.calls,
          c.toolCalls.map((t) => ({
            type: "function_call",
            callId: t.id,
            name: t.name,
            namespace: undefined,
            input: t.arguments
          }))
        )
        const thinkingTexts = c.thinking.flatMap((p) => p.type === "thinking" && p.thinking !== "" ? [p.thinking] : [])
        assert.deepStrictEqual(agg.reasoning, thinkingTexts)
        const placement = chunks.some((chunk) => chunk.usage !== undefined && chunk.usage !== null)
        const usage = Translate.fromOpenAiUsage(placement ? Arb.openAiUsage(c.usage) : undefined)
        assert.deepStrictEqual(agg.usage, TR.toResponsesUsage(usage))
        const incomplete = c.finishReason === "length" || c.finishReason === "content_filter"
        assert.strictEqual(agg.status, incomplete ? "incomplete" : "completed")

        // the stream carries what the buffered translation of the same completion does
        const buffered = TR.toResponsesResponse(Translate.fromOpenAiResponse(Arb.chatCompletion(c)))
        assert.deepStrictEqual(agg.output, buffered.output)

        const back = runResponsesToChat(events)
        for (const chunk of back) assert.isTrue(isChunk(chunk))
        const chat = Arb.aggregate(back)
        assert.strictEqual(chat.text, c.text)
        assert.deepStrictEqual(chat.toolCalls, c.toolCalls)
        assert.strictEqual(chat.reasoning, thinkingTexts.join(""))
        assert.strictEqual(
          chat.finishReason,
          incomplete ? c.finishReason : c.toolCalls.length > 0 ? "tool_calls" : "stop"
        )
        assert.deepStrictEqual(chat.usage, Translate.toOpenAiUsage(usage))
        assert.strictEqual(new Set(back.map((chunk) => chunk.id)).size, 1)
      }),
      { seed: 23, numRuns: 500 }
    )
  })

  /*
   * A Responses client whose request declared namespaced and custom tools, served by a Chat
   * upstream: the calls come back as they were declared (namespace and original name, custom
   * calls with their free-form input), and a Responses → Chat translation of that stream gives
   * the upstream's flat calls again.
   */
  it("calls of flattened namespaced tools and custom tools stream back as declared", () => {
    const arb = FastCheck.record({
      calls: FastCheck.uniqueArray(
        FastCheck.record({
          id: Arb.toolId,
          namespace: FastCheck.option(Arb.identifier.map((s) => `ns_${s}`), { nil: undefined }),
          name: Arb.identifier,
          custom: FastCheck.boolean(),
          input: FastCheck.string({ maxLength: 30 })
        }),
        { minLength: 1, maxLength: 3, selector: (c) => c.id }
      ),
      usage: Arb.counts
    }).chain(({ calls, usage }) => {
      const toolCalls = calls.map((call) => ({
        id: call.id,
        name: RArb.flatName(`${call.custom ? "c" : "f"}_${call.name}`, call.namespace),
        arguments: call.custom ? JSON.stringify({ input: call.input }) : JSON.stringify({ value: call.input })
      }))
      const c: Arb.Completion = { thinking: [], text: "", toolCalls, finishReason: "tool_calls", usage }
      return Arb.openAiChunks(c).map((chunks) => ({ calls, chunks, toolCalls }))
    })
    FastCheck.assert(
      FastCheck.property(arb, ({ calls, chunks, toolCalls }) => {
        const namespaced = new Map<string, N.NamespacedName>()
        const custom = new Set<string>()
        calls.forEach((call, i) => {
          const name = `${call.custom ? "c" : "f"}_${call.name}`
          const flat = toolCalls[i]?.name ?? ""
          if (call.namespace !== undefined) namespaced.set(flat, { namespace: call.namespace, name })
          if (call.custom) custom.add(flat)
        })
        const events = runChatToResponses(chunks, { namespaced, custom })
        assert.deepStrictEqual(RArb.responsesStreamProblems(events), [])
        const agg = RArb.aggregateResponses(events)
        assert.deepStrictEqual(
          agg.calls,
          calls.map((call) => ({
            type: call.custom ? "custom_tool_call" : "function_call",
            callId: call.id,
            name: `${call.custom ? "c" : "f"}_${call.name}`,
            namespace: call.namespace,
            input: call.custom ? call.input : JSON.stringify({ value: call.input })
          }))
        )
        assert.deepStrictEqual(Arb.aggregate(runResponsesToChat(events)).toolCalls, toolCalls)
      }),
      { seed: 24, numRuns: 300 }
    )
  })
})

describe("Responses upstream streams (properties)", () => {
  /*
   * A Responses upstream's events, split at random points and with an unknown event inside,
   * serve a Chat client (text, flat tool calls, custom input as `{"input"}`, reasoning summaries,
   * finish, usage — as the buffered translation of the final response says) and, through
   * `Translate.openAiToAnthropicStream`, an Anthropic client with a well-formed event sequence.
   */
  it("Responses → Chat (→ Anthropic) keeps text, calls, reasoning, finish and usage, with well-formed sequences", () => {
    const arb = RArb.responsesCompletion.chain((c) => RArb.responsesEvents(c).map((events) => ({ c, events })))
    FastCheck.assert(
      FastCheck.property(arb, ({ c, events }) => {
        // the generator itself is well formed
        assert.deepStrictEqual(RArb.responsesStreamProblems(events), [])
        for (const event of events) assert.isTrue(isStreamEvent(event), event.type)

        const chunks = runResponsesToChat(events)
        for (const chunk of chunks) assert.isTrue(isChunk(chunk))
        const chat = Arb.aggregate(chunks)
        const toolCalls = c.calls.map((call) => ({
          id: call.callId,
          name: RArb.flatName(call.name, call.namespace),
          arguments: call.custom ? JSON.stringify({ input: call.input }) : call.input
        }))
        assert.strictEqual(chat.text, c.text)
        assert.deepStrictEqual(chat.toolCalls, toolCalls)
        assert.strictEqual(
          chat.reasoning,
          c.reasoning.map((parts) => parts.join(Translate.reasoningSummarySeparator)).join("")
        )
        assert.strictEqual(
          chat.finishReason,
          c.incomplete === "max_output_tokens"
            ? "length"
            : c.incomplete === "content_filter"
            ? "content_filter"
            : toolCalls.length > 0
            ? "tool_calls"
            : "stop"
        )
        const last = events[events.length - 1]
        const final = last !== undefined && "response" in last ? last.response : undefined
        assert.deepStrictEqual(chat.usage, Translate.toOpenAiUsage(TR.fromResponsesUsage(final?.usage)))

        // as the buffered translation of the final response object
        if (final !== undefined) {
          const buffered = Translate.toOpenAiResponse(TR.fromResponsesResponse(final)).choices[0]?.message
          assert.strictEqual(buffered?.content ?? "", chat.text)
          assert.strictEqual(buffered?.reasoning_content ?? "", chat.reasoning)
          assert.deepStrictEqual<unknown>(
            (buffered?.tool_calls ?? []).map((call) =>
              call.type === "function"
                ? { id: call.id, name: call.function.name, arguments: call.function.arguments }
                : {}
            ),
            chat.toolCalls
          )
        }

        const translator = Translate.openAiToAnthropicStream({ model: "claude-route" })
        const anthropic = [...chunks.flatMap((chunk) => translator.push(chunk)), ...translator.end()]
        assert.deepStrictEqual(Arb.anthropicStreamProblems(anthropic), [])
        const blocks = Arb.anthropicContent(anthropic)
        assert.deepStrictEqual(
          blocks.flatMap((b) => b.type === "tool_use" ? [{ id: b.id, name: b.name, arguments: b.json }] : []),
          toolCalls
        )
        assert.strictEqual(blocks.flatMap((b) => b.type === "text" ? [b.text] : []).join(""), c.text)
      }),
      { seed: 25, numRuns: 500 }
    )
  })

  /*
   * An Anthropic upstream serving a Responses client (Anthropic events → Chat chunks → Responses
   * events): well-formed, with each thinking block's text as one reasoning item.
   */
  it("Anthropic → Chat → Responses is well formed and keeps text, calls and thinking text", () => {
    const arb = Arb.completion.chain((c) => Arb.openAiChunks(c).map((chunks) => ({ c, chunks })))
    FastCheck.assert(
      FastCheck.property(arb, ({ c, chunks }) => {
        const toAnthropic = Translate.openAiToAnthropicStream({ model: "claude" })
        const anthropic = [...chunks.flatMap((chunk) => toAnthropic.push(chunk)), ...toAnthropic.end()]
        const toChat = Translate.anthropicToOpenAiStream()
        const chat = [...anthropic.flatMap((event) => toChat.push(event)), ...toChat.end()]
        const events = runChatToResponses(chat)
        assert.deepStrictEqual(RArb.responsesStreamProblems(events), [])
        const agg = RArb.aggregateResponses(events)
        assert.strictEqual(agg.text, c.text)
        assert.deepStrictEqual(
          agg.calls.map((call) => [call.callId, call.name, JSON.parse(call.input)]),
          c.toolCalls.map((t) => [t.id, t.name, JSON.parse(t.arguments)])
        )
        assert.deepStrictEqual(
          agg.reasoning,
          c.thinking.flatMap((p) => p.type === "thinking" && p.thinking !== "" ? [p.thinking] : [])
        )
      }),
      { seed: 26, numRuns: 300 }
    )
  })
})
