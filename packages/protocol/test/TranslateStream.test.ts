import { assert, describe, it } from "@effect/vitest"
import * as Anthropic from "@switchyard-ts/protocol/AnthropicMessages"
import * as OpenAi from "@switchyard-ts/protocol/OpenAiChat"
import * as Translate from "@switchyard-ts/protocol/Translate"
import * as FastCheck from "effect/FastCheck"
import * as Schema from "effect/Schema"
import * as Arb from "./arbitraries.js"

const decodeEvent = Schema.decodeUnknownSync(Anthropic.StreamEvent, Anthropic.decodeOptions)
const decodeChunk = Schema.decodeUnknownSync(OpenAi.ChatCompletionChunk, OpenAi.decodeOptions)
const isEvent = Schema.is(Anthropic.StreamEvent)
const isChunk = Schema.is(OpenAi.ChatCompletionChunk)

const zeroUsage: OpenAi.Usage = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 }

/** Problems of an OpenAI chunk stream as produced for a client with include_usage. */
const openAiStreamProblems = (chunks: ReadonlyArray<OpenAi.ChatCompletionChunk>): ReadonlyArray<string> => {
  const problems: Array<string> = []
  if (chunks[0]?.choices[0]?.delta.role !== "assistant") problems.push("first chunk is not the role chunk")
  const finishes = chunks.flatMap((c, i) =>
    c.choices.some((ch) => ch.finish_reason !== null && ch.finish_reason !== undefined) ? [i] : []
  )
  if (finishes.length !== 1 || finishes[0] !== chunks.length - 2) {
    problems.push(`finish chunks at ${finishes.join(",")}`)
  }
  const last = chunks[chunks.length - 1]
  if (last === undefined || last.choices.length !== 0 || last.usage === undefined || last.usage === null) {
    problems.push("last chunk is not the usage chunk")
  }
  if (new Set(chunks.map((c) => c.id)).size !== 1) problems.push("ids differ")
  return problems
}

const runOpenAiToAnthropic = (chunks: ReadonlyArray<OpenAi.ChatCompletionChunk>, model = "claude-route") => {
  const translator = Translate.openAiToAnthropicStream({ model })
  const events = [...chunks.flatMap((c) => translator.push(c)), ...translator.end()]
  assert.deepStrictEqual(translator.end(), [], "end() is idempotent")
  return events
}

const runAnthropicToOpenAi = (events: ReadonlyArray<Anthropic.StreamEvent>) => {
  const translator = Translate.anthropicToOpenAiStream()
  const chunks = [...events.flatMap((e) => translator.push(e)), ...translator.end()]
  assert.deepStrictEqual(translator.end(), [], "end() is idempotent")
  return chunks
}

describe("OpenAI → Anthropic → OpenAI streams (property)", () => {
  it("keeps thinking (text, signatures, redacted), text, tool calls, finish_reason and usage, with well-formed event and chunk sequences", () => {
    const arb = Arb.completion.chain((c) => Arb.openAiChunks(c).map((chunks) => ({ c, chunks })))
    FastCheck.assert(
      FastCheck.property(arb, ({ c, chunks }) => {
        const input = Arb.aggregate(chunks)
        // the generator itself is faithful
        assert.deepStrictEqual([input.reasoning, input.thinking, input.text, input.toolCalls, input.finishReason], [
          Arb.thinkingText(c.thinking),
          c.thinking,
          c.text,
          c.toolCalls,
          c.finishReason
        ])

        const events = runOpenAiToAnthropic(chunks)
        assert.deepStrictEqual(Arb.anthropicStreamProblems(events), [])
        for (const event of events) assert.isTrue(isEvent(event))
        const starts = events.flatMap((e) => e.type === "content_block_start" ? [e.content_block.type] : [])
        assert.deepStrictEqual(starts, [
          ...c.thinking.map((p) => p.type),
          ...(c.text !== "" ? ["text"] : []),
          ...c.toolCalls.map(() => "tool_use")
        ])
        // the Anthropic stream carries each thinking block with its signature (signature_delta), as
        // the buffered translation of the same completion does
        const buffered = Translate.toAnthropicResponse(Translate.fromOpenAiResponse({
          id: "chatcmpl-1",
          model: "up",
          choices: [{
            index: 0,
            message: { role: "assistant", content: c.text, ...Arb.openAiThinkingFields(c.thinking) }
          }]
        }))
        const streamedThinking = Arb.anthropicContent(events).filter((b) =>
          b.type === "thinking" || b.type === "redacted_thinking"
        )
        assert.deepStrictEqual(streamedThinking, Arb.anthropicThinkingBlocks(c.thinking))
        assert.deepStrictEqual<unknown>(
          streamedThinking,
          buffered.content.filter((b) => b.type === "thinking" || b.type === "redacted_thinking")
        )

        const output = runAnthropicToOpenAi(events)
        assert.deepStrictEqual(openAiStreamProblems(output), [])
        for (const chunk of output) assert.isTrue(isChunk(chunk))
        assert.deepStrictEqual(Arb.aggregate(output), { ...input, usage: input.usage ?? zeroUsage })
        assert.strictEqual(output[0]?.id, "chatcmpl-1")
        assert.strictEqual(output[0]?.model, "claude-route")
      }),
      { numRuns: 500 }
    )
  })
})

describe("Anthropic → OpenAI streams (property)", () => {
  type Block =
    | { readonly kind: "text"; readonly text: string }
    | {
      readonly kind: "thinking"
      readonly text: string
      readonly signature: string
      readonly signatureAtStart: boolean
    }
    | { readonly kind: "redacted"; readonly data: string }
    | {
      readonly kind: "tool"
      readonly id: string
      readonly name: string
      readonly input: { readonly [key: string]: unknown }
    }
    | { readonly kind: "server"; readonly input: { readonly [key: string]: unknown } }
  const block: FastCheck.Arbitrary<Block> = FastCheck.oneof(
    Arb.text.map((text) => ({ kind: "text" as const, text })),
    // a provider may give the signature in content_block_start instead of a signature_delta
    FastCheck.record({
      text: FastCheck.oneof(FastCheck.constant(""), Arb.text),
      signature: Arb.signature,
      signatureAtStart: FastCheck.boolean()
    })
      .map((b) => ({ kind: "thinking" as const, ...b })),
    Arb.signature.map((data) => ({ kind: "redacted" as const, data })),
    FastCheck.record({ id: Arb.toolId, name: Arb.identifier, input: Arb.jsonObject }).map((b) => ({
      kind: "tool" as const,
      ...b
    })),
    Arb.jsonObject.map((input) => ({ kind: "server" as const, input }))
  )
  const fragments = (s: string) => Arb.pieces(s)
  const message = FastCheck.record({
    blocks: FastCheck.array(block, { maxLength: 5 }),
    stop: FastCheck.constantFrom("end_turn", "max_tokens", "tool_use", "stop_sequence", "refusal"),
    usage: Arb.counts,
    pings: FastCheck.array(FastCheck.boolean(), { minLength: 32, maxLength: 32 })
  }).chain((m) =>
    FastCheck.tuple(
      ...m.blocks.map((b) =>
        fragments(
          b.kind === "text" || b.kind === "thinking" ? b.text : b.kind === "redacted" ? "" : JSON.stringify(b.input)
        )
      )
    ).map((split) => ({ ...m, split }))
  )

  it("aggregates to the buffered translation of the same message (thinking blocks and signatures included), skipping server tool blocks", () => {
    FastCheck.assert(
      FastCheck.property(message, ({ blocks, pings, split, stop, usage }) => {
        const content: Array<Anthropic.ResponseContentBlock> = blocks.map((b): Anthropic.ResponseContentBlock => {
          switch (b.kind) {
            case "text":
              return { type: "text", text: b.text }
            case "thinking":
              return { type: "thinking", thinking: b.text, signature: b.signature }
            case "redacted":
              return { type: "redacted_thinking", data: b.data }
            case "tool":
              return { type: "tool_use", id: b.id, name: b.name, input: b.input }
            case "server": {
              // an "other" block: built apart, its extra fields are not part of the schema's type
              const server = { type: "server_tool_use", id: "srvtoolu_1", name: "web_search", input: b.input }
              return server
            }
          }
        })
        const full = Arb.anthropicUsage(usage)
        const buffered: Anthropic.MessagesResponse = {
          id: "msg_1",
          type: "message",
          role: "assistant",
          model: "claude",
          content,
          stop_reason: stop,
          stop_sequence: null,
          usage: full
        }
        const events: Array<Anthropic.StreamEvent> = [{
          type: "message_start",
          message: { ...buffered, content: [], stop_reason: null, usage: { ...full, output_tokens: 1 } }
        }]
        let ping = 0
        const maybePing = () => {
          if (pings[ping++ % pings.length] === true) events.push({ type: "ping" })
        }
        blocks.forEach((b, index) => {
          const pieces = split[index] ?? []
          maybePing()
          switch (b.kind) {
            case "text":
              events.push({ type: "content_block_start", index, content_block: { type: "text", text: "" } })
              for (const text of pieces) {
                events.push({ type: "content_block_delta", index, delta: { type: "text_delta", text } })
              }
              break
            case "thinking":
              events.push({
                type: "content_block_start",
                index,
                content_block: { type: "thinking", thinking: "", signature: b.signatureAtStart ? b.signature : "" }
              })
              for (const thinking of pieces) {
                events.push({ type: "content_block_delta", index, delta: { type: "thinking_delta", thinking } })
              }
              if (!b.signatureAtStart) {
                events.push({
                  type: "content_block_delta",
                  index,
                  delta: { type: "signature_delta", signature: b.signature }
                })
              }
              break
            case "redacted":
              events.push({
                type: "content_block_start",
                index,
                content_block: { type: "redacted_thinking", data: b.data }
              })
              break
            case "tool":
              events.push({
                type: "content_block_start",
                index,
                content_block: { type: "tool_use", id: b.id, name: b.name, input: {} }
              })
              for (const partial_json of pieces) {
                maybePing()
                events.push({ type: "content_block_delta", index, delta: { type: "input_json_delta", partial_json } })
              }
              break
            case "server": {
              const server = { type: "server_tool_use", id: "srvtoolu_1", name: "web_search", input: {} }
              events.push({ type: "content_block_start", index, content_block: server })
              for (const partial_json of pieces) {
                events.push({ type: "content_block_delta", index, delta: { type: "input_json_delta", partial_json } })
              }
              break
            }
          }
          events.push({ type: "content_block_stop", index })
        })
        events.push({
          type: "message_delta",
          delta: { stop_reason: stop, stop_sequence: null },
          usage: { output_tokens: full.output_tokens }
        })
        events.push({ type: "message_stop" })
        for (const event of events) assert.isTrue(isEvent(event))

        const chunks = runAnthropicToOpenAi(events)
        assert.deepStrictEqual(openAiStreamProblems(chunks), [])
        const expected = Translate.toOpenAiResponse(Translate.fromAnthropicResponse(buffered))
        const choice = expected.choices[0]
        const thinking = blocks.flatMap((b): ReadonlyArray<Arb.ThinkingPiece> =>
          b.kind === "thinking"
            ? [{ type: "thinking", thinking: b.text, signature: b.signature }]
            : b.kind === "redacted"
            ? [{ type: "redacted_thinking", data: b.data }]
            : []
        )
        // the buffered translation keeps every thinking block, signature included
        assert.deepStrictEqual(choice !== undefined ? Arb.messageThinking(choice.message) : [], thinking)
        assert.deepStrictEqual(Arb.aggregate(chunks), {
          reasoning: choice?.message.reasoning_content ?? "",
          thinking,
          text: choice?.message.content ?? "",
          toolCalls: (choice?.message.tool_calls ?? []).flatMap((call) =>
            call.type === "function"
              ? [{ id: call.id, name: call.function.name, arguments: call.function.arguments }]
              : []
          ),
          finishReason: choice?.finish_reason ?? null,
          usage: expected.usage ?? null
        })
      }),
      { numRuns: 500 }
    )
  })
})

describe("Anthropic → OpenAI streams (examples)", () => {
  // The tool-use transcript of the Anthropic streaming documentation.
  const transcript = [
    {
      type: "message_start",
      message: {
        id: "msg_014p7gG3wDgGV9EUtLvnow3U",
        type: "message",
        role: "assistant",
        model: "claude-opus-4-1",
        stop_sequence: null,
        usage: { input_tokens: 472, output_tokens: 2, cache_read_input_tokens: 100 },
        content: [],
        stop_reason: null
      }
    },
    { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } },
    { type: "ping" },
    { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "Okay" } },
    { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: ", let me check." } },
    { type: "content_block_stop", index: 0 },
    {
      type: "content_block_start",
      index: 1,
      content_block: { type: "tool_use", id: "toolu_01T1x1fJ34qAmk2tNTrN7Up6", name: "get_weather", input: {} }
    },
    { type: "content_block_delta", index: 1, delta: { type: "input_json_delta", partial_json: "" } },
    { type: "content_block_delta", index: 1, delta: { type: "input_json_delta", partial_json: "{\"location\":" } },
    {
      type: "content_block_delta",
      index: 1,
      delta: { type: "input_json_delta", partial_json: " \"San Francisco, CA\"}" }
    },
    { type: "content_block_stop", index: 1 },
    { type: "message_delta", delta: { stop_reason: "tool_use", stop_sequence: null }, usage: { output_tokens: 89 } },
    { type: "message_stop" }
  ].map((event) => decodeEvent(event))

  it("translates the documented tool-use stream chunk by chunk", () => {
    const base = {
      id: "chatcmpl_014p7gG3wDgGV9EUtLvnow3U",
      object: "chat.completion.chunk",
      created: 0,
      model: "claude-opus-4-1"
    }
    const delta = (d: object, finish: string | null = null) => ({
      ...base,
      choices: [{ index: 0, delta: d, finish_reason: finish }]
    })
    assert.deepStrictEqual<unknown>(runAnthropicToOpenAi(transcript), [
      delta({ role: "assistant", content: "" }),
      delta({ content: "Okay" }),
      delta({ content: ", let me check." }),
      delta({
        tool_calls: [{
          index: 0,
          id: "toolu_01T1x1fJ34qAmk2tNTrN7Up6",
          type: "function",
          function: { name: "get_weather", arguments: "" }
        }]
      }),
      delta({ tool_calls: [{ index: 0, function: { arguments: "{\"location\":" } }] }),
      delta({ tool_calls: [{ index: 0, function: { arguments: " \"San Francisco, CA\"}" } }] }),
      delta({}, "tool_calls"),
      {
        ...base,
        choices: [],
        usage: {
          prompt_tokens: 572,
          completion_tokens: 89,
          total_tokens: 661,
          prompt_tokens_details: { cached_tokens: 100 }
        }
      }
    ])
  })

  it("produces nothing for error events and closes a cut stream in end()", () => {
    const translator = Translate.anthropicToOpenAiStream()
    assert.deepStrictEqual(translator.end(), [], "nothing arrived: nothing to close")
    const [start, ...rest] = transcript
    assert.isDefined(start)
    if (start === undefined) return
    assert.lengthOf(translator.push(start), 1)
    assert.lengthOf(translator.push(rest[0] ?? start), 0)
    assert.deepStrictEqual(
      translator.push(decodeEvent({ type: "error", error: { type: "overloaded_error", message: "Overloaded" } })),
      []
    )
    const closing = translator.end()
    assert.deepStrictEqual(closing.map((c) => [c.choices[0]?.finish_reason, c.usage?.prompt_tokens]), [[
      "stop",
      undefined
    ], [undefined, 572]])
    assert.deepStrictEqual(translator.end(), [])
    assert.deepStrictEqual(translator.push(decodeEvent({ type: "message_stop" })), [], "nothing after the end")
  })

  it("takes the cumulative input usage of message_delta when present and a tool input given whole at block start", () => {
    const chunks = runAnthropicToOpenAi([
      {
        type: "message_start",
        message: {
          id: "msg_2",
          type: "message",
          role: "assistant",
          model: "m",
          content: [],
          stop_reason: null,
          usage: { input_tokens: 0, output_tokens: 0 }
        }
      },
      {
        type: "content_block_start",
        index: 0,
        content_block: { type: "tool_use", id: "toolu_1", name: "f", input: { a: 1 } }
      },
      { type: "content_block_stop", index: 0 },
      {
        type: "message_delta",
        delta: { stop_reason: "tool_use" },
        usage: { output_tokens: 5, input_tokens: 30, cache_creation_input_tokens: 10 }
      },
      { type: "message_stop" }
    ].map((event) => decodeEvent(event)))
    const result = Arb.aggregate(chunks)
    assert.deepStrictEqual(result.toolCalls, [{ id: "toolu_1", name: "f", arguments: "{\"a\":1}" }])
    assert.deepStrictEqual(result.usage, {
      prompt_tokens: 40,
      completion_tokens: 5,
      total_tokens: 45,
      prompt_tokens_details: { cache_creation_tokens: 10 }
    })
  })
})

describe("OpenAI → Anthropic streams (examples)", () => {
  // A gpt-4o style stream with include_usage: two parallel tool calls, usage after finish_reason.
  const base = {
    id: "chatcmpl-BN",
    object: "chat.completion.chunk",
    created: 1,
    model: "gpt-4o",
    system_fingerprint: "fp"
  }
  const chunk = (delta: object, finish: string | null = null) =>
    decodeChunk({ ...base, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] })
  const transcript = [
    chunk({ role: "assistant", content: null, refusal: null }),
    chunk({
      tool_calls: [{ index: 0, id: "call_a", type: "function", function: { name: "get_weather", arguments: "" } }]
    }),
    chunk({ tool_calls: [{ index: 0, function: { arguments: "{\"location\"" } }] }),
    chunk({ tool_calls: [{ index: 0, function: { arguments: ": \"Paris\"}" } }] }),
    chunk({
      tool_calls: [{ index: 1, id: "call_b", type: "function", function: { name: "get_time", arguments: "{}" } }]
    }),
    chunk({}, "tool_calls"),
    decodeChunk({
      ...base,
      choices: [],
      usage: {
        prompt_tokens: 80,
        completion_tokens: 30,
        total_tokens: 110,
        prompt_tokens_details: { cached_tokens: 64 }
      }
    })
  ]

  it("translates parallel tool calls with usage after the finish chunk", () => {
    const translator = Translate.openAiToAnthropicStream({ model: "route-a" })
    const perChunk = transcript.map((c) => translator.push(c).map((e) => e.type))
    assert.deepStrictEqual(perChunk, [
      ["message_start"],
      ["content_block_start"],
      ["content_block_delta"],
      ["content_block_delta"],
      ["content_block_stop", "content_block_start", "content_block_delta"],
      ["content_block_stop"],
      ["message_delta", "message_stop"]
    ])
    assert.deepStrictEqual(translator.end(), [])
    const events = runOpenAiToAnthropic(transcript, "route-a")
    assert.deepStrictEqual<unknown>(events[0], {
      type: "message_start",
      message: {
        id: "msg_chatcmpl-BN",
        type: "message",
        role: "assistant",
        model: "route-a",
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: 0, output_tokens: 0 }
      }
    })
    assert.deepStrictEqual<unknown>(events[events.length - 2], {
      type: "message_delta",
      delta: { stop_reason: "tool_use", stop_sequence: null },
      usage: { output_tokens: 30, input_tokens: 16, cache_read_input_tokens: 64 }
    })
  })

  it("buffers a tool call until its name arrives and drops fragments of an already closed call", () => {
    const events = runOpenAiToAnthropic([
      chunk({ tool_calls: [{ index: 0, id: "call_a", type: "function", function: { arguments: "{\"x\":" } }] }),
      chunk({ tool_calls: [{ index: 0, function: { name: "f", arguments: "1}" } }] }),
      chunk({ content: "then text" }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: "late" } }] }),
      chunk({}, "stop")
    ])
    assert.deepStrictEqual(Arb.anthropicStreamProblems(events), [])
    assert.deepStrictEqual<unknown>(events.slice(1, -2), [
      {
        type: "content_block_start",
        index: 0,
        content_block: { type: "tool_use", id: "call_a", name: "f", input: {} }
      },
      { type: "content_block_delta", index: 0, delta: { type: "input_json_delta", partial_json: "{\"x\":1}" } },
      { type: "content_block_stop", index: 0 },
      { type: "content_block_start", index: 1, content_block: { type: "text", text: "" } },
      { type: "content_block_delta", index: 1, delta: { type: "text_delta", text: "then text" } },
      { type: "content_block_stop", index: 1 }
    ])
    // no usage chunk ever came: message_delta comes from end() with zero usage
    assert.deepStrictEqual<unknown>(events[events.length - 2], {
      type: "message_delta",
      delta: { stop_reason: "end_turn", stop_sequence: null },
      usage: { output_tokens: 0, input_tokens: 0 }
    })
  })

  it("closes a stream cut mid-block, and an empty stream, into well-formed sequences", () => {
    const cut = runOpenAiToAnthropic([chunk({ role: "assistant", content: "partial" })])
    assert.deepStrictEqual(Arb.anthropicStreamProblems(cut), [])
    assert.deepStrictEqual(cut.map((e) => e.type), [
      "message_start",
      "content_block_start",
      "content_block_delta",
      "content_block_stop",
      "message_delta",
      "message_stop"
    ])
    const empty = runOpenAiToAnthropic([])
    assert.deepStrictEqual(empty.map((e) => e.type), ["message_start", "message_delta", "message_stop"])
    const translator = Translate.openAiToAnthropicStream({ model: "m", id: "msg_fixed" })
    const first = translator.push(chunk({ content: "a" }))[0]
    assert.strictEqual(first?.type === "message_start" ? first.message.id : undefined, "msg_fixed")
  })

  it("reads reasoning_content into a thinking block before the text", () => {
    const events = runOpenAiToAnthropic([
      chunk({ role: "assistant", reasoning_content: "let me" }),
      chunk({ reasoning_content: " think" }),
      chunk({ content: "answer" }),
      chunk({}, "length")
    ])
    assert.deepStrictEqual(Arb.anthropicStreamProblems(events), [])
    assert.deepStrictEqual(
      events.flatMap((e) => e.type === "content_block_delta" ? [e.delta] : []),
      [
        { type: "thinking_delta", thinking: "let me" },
        { type: "thinking_delta", thinking: " think" },
        { type: "text_delta", text: "answer" }
      ]
    )
    const delta = events[events.length - 2]
    assert.strictEqual(delta?.type === "message_delta" ? delta.delta.stop_reason : undefined, "max_tokens")
  })
})

describe("thinking signatures through the OpenAI chunk shape (examples)", () => {
  const start = decodeEvent({
    type: "message_start",
    message: {
      id: "msg_01T",
      type: "message",
      role: "assistant",
      model: "claude-sonnet-4-5",
      content: [],
      stop_reason: null,
      usage: { input_tokens: 10, output_tokens: 1 }
    }
  })
  // an extended-thinking tool-use stream: signed thinking, redacted thinking, text, tool use
  const content = [
    { type: "content_block_start", index: 0, content_block: { type: "thinking", thinking: "", signature: "" } },
    { type: "content_block_delta", index: 0, delta: { type: "thinking_delta", thinking: "Let me" } },
    { type: "content_block_delta", index: 0, delta: { type: "thinking_delta", thinking: " check." } },
    { type: "content_block_delta", index: 0, delta: { type: "signature_delta", signature: "EqQBCkYIBxgC" } },
    { type: "content_block_stop", index: 0 },
    { type: "content_block_start", index: 1, content_block: { type: "redacted_thinking", data: "EmwKAhgB" } },
    { type: "content_block_stop", index: 1 },
    { type: "content_block_start", index: 2, content_block: { type: "text", text: "" } },
    { type: "content_block_delta", index: 2, delta: { type: "text_delta", text: "Checking." } },
    { type: "content_block_stop", index: 2 },
    {
      type: "content_block_start",
      index: 3,
      content_block: { type: "tool_use", id: "toolu_1", name: "get_weather", input: {} }
    },
    {
      type: "content_block_delta",
      index: 3,
      delta: { type: "input_json_delta", partial_json: "{\"location\":\"Paris\"}" }
    },
    { type: "content_block_stop", index: 3 }
  ].map((event) => decodeEvent(event))
  const end = [
    { type: "message_delta", delta: { stop_reason: "tool_use", stop_sequence: null }, usage: { output_tokens: 20 } },
    { type: "message_stop" }
  ].map((event) => decodeEvent(event))

  it("signature_delta → a thinking_blocks delta → signature_delta: the content events come back unchanged", () => {
    const chunks = runAnthropicToOpenAi([start, ...content, ...end])
    const base = { id: "chatcmpl_01T", object: "chat.completion.chunk", created: 0, model: "claude-sonnet-4-5" }
    const delta = (d: object, finish: string | null = null) => ({
      ...base,
      choices: [{ index: 0, delta: d, finish_reason: finish }]
    })
    assert.deepStrictEqual<unknown>(chunks.slice(0, -1), [
      delta({ role: "assistant", content: "" }),
      delta({ reasoning_content: "Let me" }),
      delta({ reasoning_content: " check." }),
      delta({ thinking_blocks: [{ type: "thinking", thinking: "", signature: "EqQBCkYIBxgC" }] }),
      delta({ thinking_blocks: [{ type: "redacted_thinking", data: "EmwKAhgB" }] }),
      delta({ content: "Checking." }),
      delta({
        tool_calls: [{ index: 0, id: "toolu_1", type: "function", function: { name: "get_weather", arguments: "" } }]
      }),
      delta({ tool_calls: [{ index: 0, function: { arguments: "{\"location\":\"Paris\"}" } }] }),
      delta({}, "tool_calls")
    ])
    // over SSE JSON to the server, then back to an Anthropic client
    const events = runOpenAiToAnthropic(
      chunks.map((c) => decodeChunk(JSON.parse(JSON.stringify(c)))),
      "claude-sonnet-4-5"
    )
    assert.deepStrictEqual(Arb.anthropicStreamProblems(events), [])
    assert.deepStrictEqual(events.slice(1, -2), content)
  })

  it("reads a LiteLLM-style stream (thinking text in both fields, signature: null) without doubling the text", () => {
    const base = { id: "chatcmpl-L", object: "chat.completion.chunk", created: 1, model: "litellm" }
    const chunk = (delta: object, finish: string | null = null) =>
      decodeChunk({ ...base, choices: [{ index: 0, delta, finish_reason: finish }] })
    const events = runOpenAiToAnthropic([
      chunk({
        role: "assistant",
        content: "",
        reasoning_content: "Hm",
        thinking_blocks: [{ type: "thinking", thinking: "Hm", signature: null }]
      }),
      chunk({ reasoning_content: "m.", thinking_blocks: [{ type: "thinking", thinking: "m." }] }),
      chunk({ reasoning_content: "", thinking_blocks: [{ type: "thinking", thinking: "", signature: "SIG" }] }),
      // an unsigned reasoning_content after a signature starts a new thinking block
      chunk({ reasoning_content: "More." }),
      chunk({ content: "Answer." }),
      chunk({}, "stop")
    ])
    assert.deepStrictEqual(Arb.anthropicStreamProblems(events), [])
    assert.deepStrictEqual<unknown>(Arb.anthropicContent(events), [
      { type: "thinking", thinking: "Hmm.", signature: "SIG" },
      { type: "thinking", thinking: "More.", signature: "" },
      { type: "text", text: "Answer." }
    ])
  })
})
