/**
 * What a call's cost is read from survives every format's decode and every translation: the
 * provider's `usage.cost` (also zero), Anthropic's one-hour cache writes
 * (`cache_creation.ephemeral_1h_input_tokens`) kept apart from the other writes, and Chat cache
 * writes under OpenRouter's `cache_write_tokens` as well as `cache_creation_tokens`.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Anthropic from "@switchyard-ts/protocol/AnthropicMessages"
import * as OpenAi from "@switchyard-ts/protocol/OpenAiChat"
import * as Responses from "@switchyard-ts/protocol/OpenAiResponses"
import * as Translate from "@switchyard-ts/protocol/Translate"
import * as TranslateResponses from "@switchyard-ts/protocol/TranslateResponses"
import * as Schema from "effect/Schema"

const anthropicUsage = Schema.decodeUnknownSync(Anthropic.Usage)({
  input_tokens: 50,
  output_tokens: 10,
  cache_read_input_tokens: 20,
  cache_creation_input_tokens: 30,
  cache_creation: { ephemeral_5m_input_tokens: 20, ephemeral_1h_input_tokens: 10 },
  cost: 0
})

describe("usage cost and cache writes through translation", () => {
  it("Anthropic → neutral → Chat keeps the charge (zero included) and the one-hour writes", () => {
    const neutral = Translate.fromAnthropicUsage(anthropicUsage)
    assert.deepStrictEqual(neutral, {
      inputTokens: 100,
      outputTokens: 10,
      cacheReadTokens: 20,
      cacheCreationTokens: 30,
      cacheCreation1hTokens: 10,
      costUsd: 0
    })
    const chat = Translate.toOpenAiUsage(neutral)
    assert.deepStrictEqual(chat, {
      prompt_tokens: 100,
      completion_tokens: 10,
      total_tokens: 110,
      prompt_tokens_details: { cached_tokens: 20, cache_creation_tokens: 30, cache_write_1h_tokens: 10 },
      cost: 0
    })
    assert.deepStrictEqual(OpenAi.tokenCounts(chat), {
      prompt: 100,
      completion: 10,
      cached: 20,
      cacheCreation: 30,
      cacheCreation1h: 10,
      reasoning: 0
    })
    // and back to an Anthropic client, split by duration again
    assert.deepStrictEqual(Translate.toAnthropicUsage(Translate.fromOpenAiUsage(chat)), {
      input_tokens: 50,
      output_tokens: 10,
      cache_creation_input_tokens: 30,
      cache_read_input_tokens: 20,
      cache_creation: { ephemeral_5m_input_tokens: 20, ephemeral_1h_input_tokens: 10 },
      cost: 0
    })
  })

  it("Chat cache writes are read from cache_write_tokens when cache_creation_tokens is absent", () => {
    const usage = Schema.decodeUnknownSync(OpenAi.Usage)({
      prompt_tokens: 40,
      completion_tokens: 2,
      total_tokens: 42,
      prompt_tokens_details: { cached_tokens: 10, cache_write_tokens: 5 },
      cost: 0.0042
    })
    assert.strictEqual(OpenAi.tokenCounts(usage).cacheCreation, 5)
    assert.deepStrictEqual(Translate.fromOpenAiUsage(usage), {
      inputTokens: 40,
      outputTokens: 2,
      cacheReadTokens: 10,
      cacheCreationTokens: 5,
      costUsd: 0.0042
    })
  })

  it("Responses usage keeps its charge and one-hour writes both ways", () => {
    const usage = Schema.decodeUnknownSync(Responses.Usage)({
      input_tokens: 100,
      output_tokens: 10,
      total_tokens: 110,
      input_tokens_details: { cached_tokens: 20, cache_write_tokens: 30, cache_write_1h_tokens: 10 },
      cost: 0.5
    })
    const neutral = TranslateResponses.fromResponsesUsage(usage)
    assert.strictEqual(neutral.costUsd, 0.5)
    assert.strictEqual(neutral.cacheCreation1hTokens, 10)
    assert.deepStrictEqual(TranslateResponses.toResponsesUsage(neutral), usage)
  })

  it("an Anthropic stream's usage chunk carries the charge and the one-hour writes of message_delta", () => {
    const stream = Translate.anthropicToOpenAiStream()
    const decode = Schema.decodeUnknownSync(Anthropic.StreamEvent)
    const start = decode({
      type: "message_start",
      message: {
        id: "msg_1",
        type: "message",
        role: "assistant",
        model: "m",
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: 50, output_tokens: 1 }
      }
    })
    const delta = decode({
      type: "message_delta",
      delta: { stop_reason: "end_turn", stop_sequence: null },
      usage: {
        output_tokens: 10,
        cache_read_input_tokens: 20,
        cache_creation_input_tokens: 30,
        cache_creation: { ephemeral_5m_input_tokens: 20, ephemeral_1h_input_tokens: 10 },
        cost: 0.01
      }
    })
    const chunks = [...stream.push(start), ...stream.push(delta)]
    const usage = chunks.map((c) => c.usage).find((u) => u !== undefined && u !== null)
    assert.strictEqual(usage?.cost, 0.01)
    assert.strictEqual(usage?.prompt_tokens_details?.cache_write_1h_tokens, 10)
    assert.strictEqual(usage?.prompt_tokens, 100)
  })
})
