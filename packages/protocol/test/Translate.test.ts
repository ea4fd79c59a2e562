import { assert, describe, it } from "@effect/vitest"
import * as Anthropic from "@switchyard-ts/protocol/AnthropicMessages"
import { toHttp, TranslationError } from "@switchyard-ts/protocol/Errors"
import type * as N from "@switchyard-ts/protocol/Neutral"
import { isUserTurn } from "@switchyard-ts/protocol/Neutral"
import * as OpenAi from "@switchyard-ts/protocol/OpenAiChat"
import * as Translate from "@switchyard-ts/protocol/Translate"
import * as Either from "effect/Either"
import * as FastCheck from "effect/FastCheck"
import * as Schema from "effect/Schema"
import * as Arb from "./arbitraries.js"
import * as ClaudeCode from "./claudeCode.js"

const decodeOpenAi = Schema.decodeUnknownSync(OpenAi.ChatCompletionRequest, OpenAi.decodeOptions)
const decodeAnthropic = Schema.decodeUnknownSync(Anthropic.MessagesRequest, Anthropic.decodeOptions)
const decodeCompletion = Schema.decodeUnknownSync(OpenAi.ChatCompletion, OpenAi.decodeOptions)
const decodeMessage = Schema.decodeUnknownSync(Anthropic.MessagesResponse, Anthropic.decodeOptions)
const isOpenAiRequest = Schema.is(OpenAi.ChatCompletionRequest)
const isAnthropicRequest = Schema.is(Anthropic.MessagesRequest)

const right = <A>(either: Either.Either<A, TranslationError>): A => {
  if (Either.isLeft(either)) assert.fail(`unexpected TranslationError: ${either.left.reason}`)
  return either.right
}
const leftReason = <A>(either: Either.Either<A, TranslationError>): string => {
  if (Either.isRight(either)) return assert.fail("expected a TranslationError")
  assert.instanceOf(either.left, TranslationError)
  return either.left.reason
}

describe("request round trips (properties)", () => {
  // System / developer messages anywhere in `messages`: the leading ones are instructions, the
  // others stay positioned system messages, and both come back in place, each system message's
  // texts joined into one (after which the trip is the identity).
  it("OpenAI → neutral → OpenAI → neutral keeps the neutral form, system texts joined", () => {
    FastCheck.assert(
      FastCheck.property(Arb.openAiRequest, (req) => {
        const first = right(Translate.fromOpenAiRequest(req))
        const openAi = Translate.toOpenAiRequest(first)
        assert.isTrue(isOpenAiRequest(openAi))
        const second = right(Translate.fromOpenAiRequest(openAi))
        assert.deepStrictEqual(second, Arb.systemTextsJoined(first))
        assert.deepStrictEqual(right(Translate.fromOpenAiRequest(Translate.toOpenAiRequest(second))), second)
      }),
      { numRuns: 300 }
    )
  })

  /*
   * Expected normalisations through Anthropic: the verbatim OpenAI `arguments` string is gone
   * (arguments compare as parsed JSON), a missing output limit becomes
   * `defaultAnthropicMaxTokens`, positioned system messages move to the end of the
   * instructions (the tool results they separated then read back as one message), and the way
   * back through OpenAI joins the instructions' texts into one. Everything
   * else — instructions, message order and roles, text, images (URL and base64), tool calls (ids,
   * names, input), tool results (ids, order, merged per run of tool messages), tools, tool
   * choice, parallel flag, sampling fields, stop, stream, user, vendor fields — is equal.
   */
  it("OpenAI → neutral → Anthropic → neutral → OpenAI → neutral keeps the neutral request", () => {
    FastCheck.assert(
      FastCheck.property(Arb.openAiRequest, (req) => {
        const first = right(Translate.fromOpenAiRequest(req))
        const anthropic = right(Translate.toAnthropicRequest(first))
        assert.isTrue(isAnthropicRequest(anthropic))
        const second = right(Translate.fromAnthropicRequest(anthropic))
        const openAi = Translate.toOpenAiRequest(second)
        assert.isTrue(isOpenAiRequest(openAi))
        const third = right(Translate.fromOpenAiRequest(openAi))
        const expected: N.NeutralRequest = {
          ...Arb.systemMessagesMoved(Arb.withoutRawArguments(first)),
          maxOutputTokens: first.maxOutputTokens ?? Translate.defaultAnthropicMaxTokens
        }
        assert.deepStrictEqual(Arb.withoutRawArguments(second), expected)
        assert.deepStrictEqual(Arb.withoutRawArguments(third), Arb.systemTextsJoined(expected))
      }),
      { numRuns: 300 }
    )
  })

  /*
   * Expected normalisations through OpenAI: for this subset (no cache markers, no thinking, no
   * images inside tool results, no user message mixing tool results with other blocks, no
   * `is_error`, which OpenAI cannot carry) the system texts: each system message's texts (the
   * instructions', each positioned one's) read back joined into one, and positioned system
   * messages at the start of `messages` read back as instructions; consecutive tool-result-only
   * user messages are already one message in the first neutral form, and a system message between
   * two runs of tool results stays between them.
   */
  it("Anthropic → neutral → OpenAI → neutral → Anthropic keeps the neutral request and the canonical body", () => {
    FastCheck.assert(
      FastCheck.property(Arb.anthropicRequest({ anthropicOnly: false }), (req) => {
        const first = right(Translate.fromAnthropicRequest(req))
        const openAi = Translate.toOpenAiRequest(first)
        assert.isTrue(isOpenAiRequest(openAi))
        const second = right(Translate.fromOpenAiRequest(openAi))
        const expected = Arb.leadingSystemMessagesAsInstructions(Arb.systemTextsJoined(first))
        assert.deepStrictEqual(Arb.withoutRawArguments(second), expected)
        const anthropic = right(Translate.toAnthropicRequest(second))
        assert.deepStrictEqual(anthropic, right(Translate.toAnthropicRequest(expected)))
        assert.isTrue(isAnthropicRequest(anthropic))
      }),
      { numRuns: 300 }
    )
  })

  // Identity but for positioned system messages, which the Messages API does not take inside
  // `messages`: they move to the end of `system`.
  it("Anthropic → neutral → Anthropic → neutral is the identity (is_error and tool_reference included)", () => {
    FastCheck.assert(
      FastCheck.property(Arb.anthropicRequest({ anthropicOnly: true }), (req) => {
        const first = right(Translate.fromAnthropicRequest(req))
        assert.deepStrictEqual(
          right(Translate.fromAnthropicRequest(right(Translate.toAnthropicRequest(first)))),
          Arb.systemMessagesMoved(first)
        )
      }),
      { numRuns: 300 }
    )
  })
})

describe("OpenAI request → Anthropic (examples)", () => {
  const agentTurn = decodeOpenAi({
    model: "auto",
    messages: [
      { role: "system", content: "You are a coding agent." },
      { role: "developer", content: [{ type: "text", text: "Prefer small diffs." }] },
      { role: "user", content: "Read a.ts and b.ts" },
      {
        role: "assistant",
        content: "Reading both.",
        tool_calls: [
          { id: "call_1", type: "function", function: { name: "read_file", arguments: "{\"path\":\"a.ts\"}" } },
          { id: "call_2", type: "function", function: { name: "read_file", arguments: "{\"path\": \"b.ts\"}" } }
        ]
      },
      { role: "tool", tool_call_id: "call_1", content: "export const a = 1" },
      { role: "tool", tool_call_id: "call_2", content: [{ type: "text", text: "export const b = 2" }] },
      {
        role: "user",
        content: [{ type: "text", text: "Now the image" }, {
          type: "image_url",
          image_url: { url: "data:image/png;base64,iVBORw0KGgo=", detail: "high" }
        }]
      }
    ],
    tools: [{
      type: "function",
      function: {
        name: "read_file",
        description: "Read a file",
        parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
        strict: true
      }
    }],
    tool_choice: "required",
    parallel_tool_calls: false,
    max_completion_tokens: 512,
    temperature: 0.2,
    stop: "\n\nHuman:",
    stream: true,
    stream_options: { include_usage: true },
    seed: 7,
    reasoning_effort: "low",
    user: "u-1",
    chat_template_kwargs: { enable_thinking: false }
  })

  it("translates a tool-using conversation field by field", () => {
    const neutral = right(Translate.fromOpenAiRequest(agentTurn))
    assert.deepStrictEqual(neutral.instructions, [
      { _tag: "Text", text: "You are a coding agent." },
      { _tag: "Text", text: "Prefer small diffs." }
    ])
    // the two tool messages are ONE user message of tool results
    assert.deepStrictEqual(neutral.messages.map((m) => [m.role, m.blocks.map((b) => b._tag)]), [
      ["user", ["Text"]],
      ["assistant", ["Text", "ToolUse", "ToolUse"]],
      ["user", ["ToolResult", "ToolResult"]],
      ["user", ["Text", "Image"]]
    ])
    assert.isTrue(isUserTurn(neutral))

    const body = right(Translate.toAnthropicRequest(neutral))
    assert.deepStrictEqual<unknown>(body, {
      model: "auto",
      chat_template_kwargs: { enable_thinking: false },
      system: [{ type: "text", text: "You are a coding agent." }, { type: "text", text: "Prefer small diffs." }],
      messages: [
        { role: "user", content: [{ type: "text", text: "Read a.ts and b.ts" }] },
        {
          role: "assistant",
          content: [
            { type: "text", text: "Reading both." },
            { type: "tool_use", id: "call_1", name: "read_file", input: { path: "a.ts" } },
            { type: "tool_use", id: "call_2", name: "read_file", input: { path: "b.ts" } }
          ]
        },
        {
          role: "user",
          content: [
            { type: "tool_result", tool_use_id: "call_1", content: "export const a = 1" },
            { type: "tool_result", tool_use_id: "call_2", content: "export const b = 2" }
          ]
        },
        {
          role: "user",
          content: [
            { type: "text", text: "Now the image" },
            { type: "image", source: { type: "base64", media_type: "image/png", data: "iVBORw0KGgo=" } }
          ]
        }
      ],
      max_tokens: 512,
      tools: [{
        name: "read_file",
        description: "Read a file",
        input_schema: { type: "object", properties: { path: { type: "string" } }, required: ["path"] }
      }],
      tool_choice: { type: "any", disable_parallel_tool_use: true },
      temperature: 0.2,
      stop_sequences: ["\n\nHuman:"],
      stream: true,
      metadata: { user_id: "u-1" }
    })
    assert.isTrue(isAnthropicRequest(body))
  })

  it("maps every tool_choice and defaults max_tokens", () => {
    const choose = (tool_choice: unknown, extra: object = {}) =>
      right(Translate.toAnthropicRequest(right(Translate.fromOpenAiRequest(decodeOpenAi({
        model: "m",
        messages: [{ role: "user", content: "hi" }],
        tools: [{ type: "function", function: { name: "f", parameters: { type: "object" } } }],
        tool_choice,
        ...extra
      })))))
    assert.deepStrictEqual(choose("auto").tool_choice, { type: "auto" })
    assert.deepStrictEqual(choose("required").tool_choice, { type: "any" })
    assert.deepStrictEqual(choose("none").tool_choice, { type: "none" })
    assert.deepStrictEqual(choose({ type: "function", function: { name: "f" } }).tool_choice, {
      type: "tool",
      name: "f"
    })
    assert.deepStrictEqual(choose("auto", { parallel_tool_calls: true }).tool_choice, {
      type: "auto",
      disable_parallel_tool_use: false
    })
    assert.strictEqual(choose("auto").max_tokens, Translate.defaultAnthropicMaxTokens)
    assert.strictEqual(choose("auto", { max_tokens: 99 }).max_tokens, 99)
    assert.strictEqual(choose("auto", { max_tokens: 99, max_completion_tokens: 77 }).max_tokens, 77)
  })

  it("maps a json_schema response_format to output_config without the unsupported keywords", () => {
    const neutral = right(Translate.fromOpenAiRequest(decodeOpenAi({
      model: "m",
      messages: [{ role: "user", content: "rate it" }],
      response_format: {
        type: "json_schema",
        json_schema: {
          name: "verdict",
          strict: true,
          schema: {
            type: "object",
            properties: {
              p_solve: { type: "number", minimum: 0, maximum: 1 },
              crux: { type: "string", minLength: 1, maxLength: 200 },
              minimum: { type: "integer", enum: [{ minimum: 1 }] }
            },
            required: ["p_solve", "crux"]
          }
        }
      }
    })))
    assert.deepStrictEqual(right(Translate.toAnthropicRequest(neutral)).output_config, {
      format: {
        type: "json_schema",
        schema: {
          type: "object",
          properties: {
            p_solve: { type: "number" },
            crux: { type: "string" },
            // a property NAMED minimum and enum data are not keywords: kept
            minimum: { type: "integer", enum: [{ minimum: 1 }] }
          },
          required: ["p_solve", "crux"]
        }
      }
    })
    const jsonObject = right(Translate.fromOpenAiRequest(decodeOpenAi({
      model: "m",
      messages: [{ role: "user", content: "x" }],
      response_format: { type: "json_object" }
    })))
    assert.isFalse("output_config" in right(Translate.toAnthropicRequest(jsonObject)))
  })

  it("drops unsigned thinking for Anthropic and leaves an emptied message as \"\"", () => {
    const neutral = right(Translate.fromOpenAiRequest(decodeOpenAi({
      model: "m",
      messages: [
        { role: "user", content: "think" },
        { role: "assistant", content: null, reasoning_content: "hmm" },
        { role: "user", content: "go on" }
      ]
    })))
    assert.deepStrictEqual(neutral.messages[1], { role: "assistant", blocks: [{ _tag: "Thinking", text: "hmm" }] })
    assert.deepStrictEqual(right(Translate.toAnthropicRequest(neutral)).messages[1], { role: "assistant", content: "" })
    // and back to OpenAI as the reasoning_content extension
    assert.deepStrictEqual<unknown>(Translate.toOpenAiRequest(neutral).messages[1], {
      role: "assistant",
      content: "",
      reasoning_content: "hmm"
    })
  })

  it("keeps invalid tool-call arguments verbatim for OpenAI but refuses them for Anthropic", () => {
    const neutral = right(Translate.fromOpenAiRequest(decodeOpenAi({
      model: "m",
      messages: [
        { role: "user", content: "x" },
        {
          role: "assistant",
          tool_calls: [{ id: "call_9", type: "function", function: { name: "f", arguments: "{\"a\": 1" } }]
        }
      ]
    })))
    assert.strictEqual(
      leftReason(Translate.toAnthropicRequest(neutral)),
      "the arguments of tool call call_9 are not a JSON object"
    )
    const openAi = Translate.toOpenAiRequest(neutral)
    assert.deepStrictEqual<unknown>(openAi.messages[1], {
      role: "assistant",
      content: null,
      tool_calls: [{ id: "call_9", type: "function", function: { name: "f", arguments: "{\"a\": 1" } }]
    })
    // a JSON array is valid JSON but not an Anthropic tool input either
    const array = right(Translate.fromOpenAiRequest(decodeOpenAi({
      model: "m",
      messages: [{
        role: "assistant",
        tool_calls: [{ id: "c", type: "function", function: { name: "f", arguments: "[1]" } }]
      }]
    })))
    assert.include(leftReason(Translate.toAnthropicRequest(array)), "not a JSON object")
    // "" means no arguments
    const empty = right(Translate.fromOpenAiRequest(decodeOpenAi({
      model: "m",
      messages: [{
        role: "assistant",
        tool_calls: [{ id: "c", type: "function", function: { name: "f", arguments: "" } }]
      }]
    })))
    assert.deepStrictEqual<unknown>(right(Translate.toAnthropicRequest(empty)).messages[0], {
      role: "assistant",
      content: [{ type: "tool_use", id: "c", name: "f", input: {} }]
    })
  })

  it("refuses what Anthropic cannot take: audio, file, n > 1, custom tools, non-base64 data URLs", () => {
    const toAnthropic = (body: object) =>
      Translate.fromOpenAiRequest(decodeOpenAi(body)).pipe(Either.flatMap(Translate.toAnthropicRequest))
    assert.strictEqual(
      leftReason(toAnthropic({
        model: "m",
        messages: [{ role: "user", content: [{ type: "input_audio", input_audio: { data: "UklGR", format: "wav" } }] }]
      })),
      "an audio content part cannot be sent to an anthropic_messages upstream"
    )
    assert.strictEqual(
      leftReason(toAnthropic({
        model: "m",
        messages: [{ role: "user", content: [{ type: "file", file: { file_id: "file-1" } }] }]
      })),
      "a file content part cannot be sent to an anthropic_messages upstream"
    )
    assert.strictEqual(
      leftReason(toAnthropic({ model: "m", n: 2, messages: [{ role: "user", content: "x" }] })),
      "n > 1 (several choices) cannot be sent to an anthropic_messages upstream"
    )
    assert.isTrue(Either.isRight(toAnthropic({ model: "m", n: 1, messages: [{ role: "user", content: "x" }] })))
    assert.include(
      leftReason(toAnthropic({
        model: "m",
        messages: [{ role: "user", content: "x" }],
        tools: [{ type: "custom", custom: { name: "grammar" } }]
      })),
      "custom tool"
    )
    assert.include(
      leftReason(toAnthropic({
        model: "m",
        messages: [{
          role: "user",
          content: [{ type: "image_url", image_url: { url: "data:image/svg+xml,%3Csvg%3E" } }]
        }]
      })),
      "not base64"
    )
    assert.include(
      leftReason(toAnthropic({ model: "m", messages: [{ role: "function", name: "f", content: "x" }] })),
      "deprecated"
    )
  })

  it("drops OpenAI-only fields for Anthropic but keeps them for OpenAI", () => {
    const neutral = right(Translate.fromOpenAiRequest(agentTurn))
    const body = right(Translate.toAnthropicRequest(neutral))
    for (const key of ["seed", "reasoning_effort", "stream_options"]) assert.isFalse(key in body, key)
    const openAi = Translate.toOpenAiRequest(neutral)
    assert.deepStrictEqual<unknown>(
      [openAi.seed, openAi.reasoning_effort, openAi.stream_options, openAi.max_completion_tokens, openAi.stop],
      [7, "low", { include_usage: true }, 512, ["\n\nHuman:"]]
    )
  })

  it("maps TranslationError to a 400 invalid_request_error", () => {
    assert.deepStrictEqual(toHttp(new TranslationError({ reason: "an audio content part cannot be sent" })), {
      status: 400,
      type: "invalid_request_error",
      code: "invalid_request_error",
      message: "an audio content part cannot be sent"
    })
  })
})

describe("Anthropic request → OpenAI (examples)", () => {
  const claudeCodeTurn = decodeAnthropic({
    model: "claude-sonnet-4-5",
    max_tokens: 32000,
    system: [
      { type: "text", text: "You are Claude Code." },
      { type: "text", text: "Project notes.", cache_control: { type: "ephemeral" } }
    ],
    messages: [
      { role: "user", content: [{ type: "text", text: "What is in shot.png?" }] },
      {
        role: "assistant",
        content: [
          { type: "thinking", thinking: "I should look.", signature: "EqQBCkYIBxgCKkB" },
          { type: "text", text: "Let me look." },
          { type: "tool_use", id: "toolu_01A", name: "Read", input: { file_path: "/x/shot.png" } },
          { type: "tool_use", id: "toolu_01B", name: "Bash", input: { command: "ls" } }
        ]
      },
      {
        role: "user",
        content: [
          {
            type: "tool_result",
            tool_use_id: "toolu_01A",
            content: [
              { type: "text", text: "image:" },
              { type: "image", source: { type: "base64", media_type: "image/png", data: "iVBORw0KGgo=" } }
            ]
          },
          { type: "tool_result", tool_use_id: "toolu_01B", content: "ls: permission denied", is_error: true },
          { type: "text", text: "<system-reminder>keep going</system-reminder>", cache_control: { type: "ephemeral" } }
        ]
      }
    ],
    tools: [
      {
        name: "Read",
        description: "Read a file",
        input_schema: { type: "object", properties: { file_path: { type: "string" } } }
      },
      { type: "web_search_20250305", name: "web_search", max_uses: 5 }
    ],
    tool_choice: { type: "auto", disable_parallel_tool_use: true },
    metadata: { user_id: "user_abc" },
    thinking: { type: "enabled", budget_tokens: 10000 },
    top_k: 40,
    stream: true
  })

  it("translates tool use, tool_result with is_error and images, thinking and server tools", () => {
    const neutral = right(Translate.fromAnthropicRequest(claudeCodeTurn))
    assert.deepStrictEqual(neutral.opaqueTools, [{
      format: "anthropic_messages",
      value: { type: "web_search_20250305", name: "web_search", max_uses: 5 }
    }])
    assert.deepStrictEqual(neutral.extra, { thinking: { type: "enabled", budget_tokens: 10000 }, top_k: 40 })
    const body = Translate.toOpenAiRequest(neutral)
    assert.deepStrictEqual<unknown>(body, {
      model: "claude-sonnet-4-5",
      messages: [
        { role: "system", content: "You are Claude Code.\n\nProject notes." },
        { role: "user", content: "What is in shot.png?" },
        {
          role: "assistant",
          content: "Let me look.",
          reasoning_content: "I should look.",
          thinking_blocks: [{ type: "thinking", thinking: "I should look.", signature: "EqQBCkYIBxgCKkB" }],
          tool_calls: [
            {
              id: "toolu_01A",
              type: "function",
              function: { name: "Read", arguments: "{\"file_path\":\"/x/shot.png\"}" }
            },
            { id: "toolu_01B", type: "function", function: { name: "Bash", arguments: "{\"command\":\"ls\"}" } }
          ]
        },
        { role: "tool", tool_call_id: "toolu_01A", content: "image:" },
        { role: "tool", tool_call_id: "toolu_01B", content: "ls: permission denied" },
        {
          role: "user",
          content: [
            { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=" } },
            { type: "text", text: "<system-reminder>keep going</system-reminder>" }
          ]
        }
      ],
      tools: [{
        type: "function",
        function: {
          name: "Read",
          description: "Read a file",
          parameters: { type: "object", properties: { file_path: { type: "string" } } }
        }
      }],
      tool_choice: "auto",
      parallel_tool_calls: false,
      max_completion_tokens: 32000,
      stream: true,
      user: "user_abc"
    })
    assert.isTrue(isOpenAiRequest(body))
  })

  it("round-trips Anthropic-only content (cache markers, signatures, documents, server tools) back to Anthropic", () => {
    const withDocument = decodeAnthropic({
      ...claudeCodeTurn,
      messages: [
        ...claudeCodeTurn.messages,
        { role: "assistant", content: [{ type: "redacted_thinking", data: "EmwKAhgB" }, { type: "text", text: "ok" }] },
        {
          role: "user",
          content: [
            {
              type: "document",
              source: { type: "base64", media_type: "application/pdf", data: "JVBERi0=" },
              title: "spec"
            },
            { type: "image", source: { type: "file", file_id: "file_011" } },
            { type: "text", text: "summarise" }
          ]
        }
      ],
      output_config: { format: { type: "json_schema", schema: { type: "object" } }, effort: "high" }
    })
    const neutral = right(Translate.fromAnthropicRequest(withDocument))
    const back = right(Translate.toAnthropicRequest(neutral))
    // content already in canonical form comes back identical: blocks, signatures, cache markers, is_error
    assert.deepStrictEqual(back.messages, withDocument.messages)
    assert.deepStrictEqual(back.system, withDocument.system)
    assert.deepStrictEqual(back.tools, withDocument.tools)
    assert.deepStrictEqual(back.tool_choice, withDocument.tool_choice)
    assert.deepStrictEqual<unknown>(back.output_config, withDocument.output_config)
    assert.deepStrictEqual<unknown>([back.thinking, back.top_k, back.metadata], [
      { type: "enabled", budget_tokens: 10000 },
      40,
      { user_id: "user_abc" }
    ])
    // the OpenAI form drops what it cannot express (the document, the file image) but keeps the
    // redacted thinking in thinking_blocks
    const openAi = Translate.toOpenAiRequest(neutral)
    assert.deepStrictEqual<unknown>(openAi.messages.slice(-2), [
      { role: "assistant", content: "ok", thinking_blocks: [{ type: "redacted_thinking", data: "EmwKAhgB" }] },
      { role: "user", content: "summarise" }
    ])
    assert.isFalse("thinking" in openAi || "top_k" in openAi || "output_config" in openAi)
    assert.deepStrictEqual(openAi.response_format, {
      type: "json_schema",
      json_schema: { name: "output", schema: { type: "object" } }
    })
  })

  it("merges consecutive tool-result-only user messages, as consecutive OpenAI tool messages are", () => {
    const req = decodeAnthropic({
      model: "m",
      max_tokens: 10,
      messages: [
        { role: "user", content: [{ type: "tool_result", tool_use_id: "a", content: "1" }] },
        { role: "user", content: [{ type: "tool_result", tool_use_id: "b" }] },
        { role: "user", content: "and text" }
      ]
    })
    const neutral = right(Translate.fromAnthropicRequest(req))
    assert.deepStrictEqual(neutral.messages, [
      {
        role: "user",
        blocks: [
          { _tag: "ToolResult", toolUseId: "a", content: [{ _tag: "Text", text: "1" }], isError: false },
          { _tag: "ToolResult", toolUseId: "b", content: [], isError: false }
        ]
      },
      { role: "user", blocks: [{ _tag: "Text", text: "and text" }] }
    ])
    assert.deepStrictEqual<unknown>(Translate.toOpenAiRequest(neutral).messages, [
      { role: "tool", tool_call_id: "a", content: "1" },
      { role: "tool", tool_call_id: "b", content: "" },
      { role: "user", content: "and text" }
    ])
  })

  it("refuses a tool_result holding content other than text and images", () => {
    const req = decodeAnthropic({
      model: "m",
      max_tokens: 10,
      messages: [{
        role: "user",
        content: [{
          type: "tool_result",
          tool_use_id: "t",
          content: [{ type: "search_result", source: "s", title: "t", content: [] }]
        }]
      }]
    })
    assert.strictEqual(
      leftReason(Translate.fromAnthropicRequest(req)),
      "a tool_result with search_result content cannot be translated"
    )
  })

  it("sends tool results first within an Anthropic user message", () => {
    const neutral: N.NeutralRequest = {
      model: "m",
      instructions: [],
      messages: [{
        role: "user",
        blocks: [
          { _tag: "Text", text: "also this" },
          { _tag: "ToolResult", toolUseId: "t1", content: [{ _tag: "Text", text: "r" }], isError: false }
        ]
      }],
      tools: [],
      opaqueTools: [],
      stop: [],
      stream: false,
      extra: {}
    }
    assert.deepStrictEqual<unknown>(right(Translate.toAnthropicRequest(neutral)).messages, [{
      role: "user",
      content: [{ type: "tool_result", tool_use_id: "t1", content: "r" }, { type: "text", text: "also this" }]
    }])
    assert.isTrue(isUserTurn(neutral))
    assert.isFalse(isUserTurn({ ...neutral, messages: [{ role: "user", blocks: [] }] }))
  })
})

describe("responses", () => {
  it("Anthropic → neutral → OpenAI → neutral → Anthropic keeps thinking (signatures, redacted), content, tool calls, stop reason and usage", () => {
    const arb = FastCheck.record({
      thinking: Arb.anthropicThinking,
      text: FastCheck.option(Arb.text, { nil: undefined }),
      uses: FastCheck.array(FastCheck.record({ id: Arb.toolId, name: Arb.identifier, input: Arb.jsonObject }), {
        maxLength: 3
      }),
      stop: FastCheck.constantFrom("end_turn", "max_tokens", "tool_use", "refusal", null),
      usage: Arb.counts
    })
    FastCheck.assert(
      FastCheck.property(arb, ({ stop, text, thinking, usage, uses }) => {
        const message: Anthropic.MessagesResponse = {
          id: "msg_01",
          type: "message",
          role: "assistant",
          model: "claude",
          content: [
            ...Arb.anthropicThinkingBlocks(thinking),
            ...(text !== undefined ? [{ type: "text" as const, text }] : []),
            ...uses.map((u) => ({ type: "tool_use" as const, ...u }))
          ],
          stop_reason: stop,
          stop_sequence: null,
          usage: Arb.anthropicUsage(usage)
        }
        const neutral = Translate.fromAnthropicResponse(message)
        const completion = Translate.toOpenAiResponse(neutral)
        assert.isTrue(Schema.is(OpenAi.ChatCompletion)(completion))
        // the wire shape: reasoning_content = the thinking text, thinking_blocks = every block when any
        const wire = completion.choices[0]?.message
        assert.deepStrictEqual(
          [wire?.reasoning_content, wire?.thinking_blocks],
          [Arb.openAiThinkingFields(thinking).reasoning_content, thinking.length > 0 ? thinking : undefined]
        )
        // through JSON, as between the client and the server
        const again = Translate.fromOpenAiResponse(decodeCompletion(JSON.parse(JSON.stringify(completion))))
        assert.deepStrictEqual(
          again.content.map((b) => b._tag === "ToolUse" ? { ...b, arguments: undefined } : b),
          neutral.content.map((b) => b._tag === "ToolUse" ? { ...b, arguments: undefined } : b)
        )
        assert.deepStrictEqual(again.usage, neutral.usage)
        assert.strictEqual(again.stopReason, neutral.stopReason)
        // ids are re-prefixed each way (msg_01 → chatcmpl_01 → msg_chatcmpl_01); all else is equal
        assert.deepStrictEqual(Translate.toAnthropicResponse(again), { ...message, id: "msg_chatcmpl_01" })
      }),
      { numRuns: 300 }
    )
  })

  it("OpenAI → neutral → Anthropic → neutral → OpenAI keeps content, reasoning, thinking_blocks, tool calls, finish_reason and usage", () => {
    FastCheck.assert(
      FastCheck.property(Arb.completion, (c) => {
        const completion: OpenAi.ChatCompletion = {
          id: "chatcmpl-1",
          object: "chat.completion",
          created: 0,
          model: "gpt",
          choices: [{
            index: 0,
            message: {
              role: "assistant",
              content: c.text === "" && c.toolCalls.length > 0 ? null : c.text,
              ...(c.toolCalls.length > 0
                ? {
                  tool_calls: c.toolCalls.map((t) => ({
                    id: t.id,
                    type: "function" as const,
                    function: { name: t.name, arguments: t.arguments }
                  }))
                }
                : {}),
              ...Arb.openAiThinkingFields(c.thinking)
            },
            finish_reason: c.finishReason
          }],
          usage: Arb.openAiUsage(c.usage)
        }
        const message = Translate.toAnthropicResponse(Translate.fromOpenAiResponse(decodeCompletion(completion)))
        assert.isTrue(Schema.is(Anthropic.MessagesResponse)(message))
        assert.deepStrictEqual<unknown>(
          Translate.toOpenAiResponse(Translate.fromAnthropicResponse(message)),
          completion
        )
      }),
      { numRuns: 300 }
    )
  })

  it("maps a real Anthropic tool-use message with cache usage to OpenAI", () => {
    const message = decodeMessage({
      id: "msg_01XFDUDYJgAACzvnptvVoYEL",
      type: "message",
      role: "assistant",
      model: "claude-sonnet-4-5-20250929",
      content: [
        { type: "thinking", thinking: "Weather needs a tool.", signature: "EqQBCg" },
        { type: "text", text: "I'll check." },
        { type: "tool_use", id: "toolu_01A09q90qw90lq917835lq9", name: "get_weather", input: { location: "Paris" } },
        { type: "server_tool_use", id: "srvtoolu_1", name: "web_search", input: { query: "x" } }
      ],
      stop_reason: "tool_use",
      stop_sequence: null,
      usage: {
        input_tokens: 12,
        cache_creation_input_tokens: 100,
        cache_read_input_tokens: 2000,
        output_tokens: 40,
        service_tier: "standard"
      }
    })
    assert.deepStrictEqual<unknown>(Translate.toOpenAiResponse(Translate.fromAnthropicResponse(message)), {
      id: "chatcmpl_01XFDUDYJgAACzvnptvVoYEL",
      object: "chat.completion",
      created: 0,
      model: "claude-sonnet-4-5-20250929",
      choices: [{
        index: 0,
        message: {
          role: "assistant",
          content: "I'll check.",
          reasoning_content: "Weather needs a tool.",
          thinking_blocks: [{ type: "thinking", thinking: "Weather needs a tool.", signature: "EqQBCg" }],
          tool_calls: [{
            id: "toolu_01A09q90qw90lq917835lq9",
            type: "function",
            function: { name: "get_weather", arguments: "{\"location\":\"Paris\"}" }
          }]
        },
        finish_reason: "tool_calls"
      }],
      usage: {
        prompt_tokens: 2112,
        completion_tokens: 40,
        total_tokens: 2152,
        prompt_tokens_details: { cached_tokens: 2000, cache_creation_tokens: 100 }
      }
    })
    // and back, as the server answers an Anthropic client: the signed thinking block is intact
    const back = Translate.toAnthropicResponse(
      Translate.fromOpenAiResponse(Translate.toOpenAiResponse(Translate.fromAnthropicResponse(message)))
    )
    assert.deepStrictEqual(back.content, message.content.slice(0, 3))
  })

  it("maps OpenAI finish reasons, ids and cached usage to Anthropic", () => {
    const completion = decodeCompletion({
      id: "chatcmpl-9",
      object: "chat.completion",
      created: 5,
      model: "gpt-4o",
      choices: [{ index: 0, message: { role: "assistant", content: "cut" }, finish_reason: "length" }],
      usage: { prompt_tokens: 50, completion_tokens: 7, total_tokens: 57, prompt_tokens_details: { cached_tokens: 60 } }
    })
    const message = Translate.toAnthropicResponse(Translate.fromOpenAiResponse(completion))
    assert.deepStrictEqual<unknown>(message, {
      id: "msg_chatcmpl-9",
      type: "message",
      role: "assistant",
      model: "gpt-4o",
      content: [{ type: "text", text: "cut" }],
      stop_reason: "max_tokens",
      stop_sequence: null,
      // input_tokens floored at 0 when the upstream reports more cached than prompt tokens
      usage: { input_tokens: 0, output_tokens: 7, cache_read_input_tokens: 60 }
    })
    assert.deepStrictEqual(
      ["end_turn", "stop_sequence", "pause_turn", "max_tokens", "tool_use", "refusal", null].map(
        Translate.toFinishReason
      ),
      ["stop", "stop", "stop", "length", "tool_calls", "content_filter", null]
    )
    assert.deepStrictEqual(
      ["stop", "length", "tool_calls", "content_filter", "weird", null].map(Translate.fromFinishReason),
      ["end_turn", "max_tokens", "tool_use", "refusal", "weird", null]
    )
    assert.strictEqual(Translate.anthropicMessageId("msg_1"), "msg_1")
    assert.strictEqual(Translate.openAiCompletionId("resp_1"), "chatcmpl_1")
    assert.strictEqual(Translate.openAiCompletionId(""), "chatcmpl_switchyard")
  })
})

describe("thinking through the OpenAI shape (examples)", () => {
  // A Claude Code turn with extended thinking and tool use: each assistant turn starts with a
  // signed thinking block, which Anthropic requires back verbatim while the tool loop runs.
  const toolLoop = decodeAnthropic({
    model: "claude-sonnet-4-5",
    max_tokens: 32000,
    thinking: { type: "enabled", budget_tokens: 10000 },
    tools: [{
      name: "Bash",
      description: "Run a command",
      input_schema: { type: "object", properties: { command: { type: "string" } } }
    }],
    messages: [
      // the canonical Messages form, as Claude Code sends it (a lone string would come back as a text block)
      { role: "user", content: [{ type: "text", text: "Which files are here?" }] },
      {
        role: "assistant",
        content: [
          { type: "thinking", thinking: "I should list the directory.", signature: "EqQBCkYIBxgCKkB3" },
          { type: "tool_use", id: "toolu_01A", name: "Bash", input: { command: "ls" } }
        ]
      },
      { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_01A", content: "a.ts\nb.ts" }] },
      {
        role: "assistant",
        content: [
          { type: "thinking", thinking: "Two files; check b.", signature: "EpYCCkYIBxgC" },
          { type: "redacted_thinking", data: "EmwKAhgBEgy3va3pzix" },
          { type: "text", text: "Two files. Reading b.ts." },
          { type: "tool_use", id: "toolu_01B", name: "Bash", input: { command: "cat b.ts" } }
        ]
      },
      { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_01B", content: "export const b = 2" }] }
    ]
  })

  it("a Claude Code tool-use turn with signed thinking round-trips through the OpenAI shape unchanged", () => {
    // as the server routes it: Anthropic → neutral → OpenAI, over JSON, then OpenAI → neutral → Anthropic
    const chat = Translate.toOpenAiRequest(right(Translate.fromAnthropicRequest(toolLoop)))
    const assistants = chat.messages.filter((m) => m.role === "assistant")
    assert.deepStrictEqual<unknown>(assistants, [
      {
        role: "assistant",
        content: null,
        reasoning_content: "I should list the directory.",
        thinking_blocks: [{
          type: "thinking",
          thinking: "I should list the directory.",
          signature: "EqQBCkYIBxgCKkB3"
        }],
        tool_calls: [{
          id: "toolu_01A",
          type: "function",
          function: { name: "Bash", arguments: "{\"command\":\"ls\"}" }
        }]
      },
      {
        role: "assistant",
        content: "Two files. Reading b.ts.",
        reasoning_content: "Two files; check b.",
        thinking_blocks: [
          { type: "thinking", thinking: "Two files; check b.", signature: "EpYCCkYIBxgC" },
          { type: "redacted_thinking", data: "EmwKAhgBEgy3va3pzix" }
        ],
        tool_calls: [{
          id: "toolu_01B",
          type: "function",
          function: { name: "Bash", arguments: "{\"command\":\"cat b.ts\"}" }
        }]
      }
    ])
    const overTheWire = decodeOpenAi(JSON.parse(JSON.stringify(chat)))
    const back = right(Translate.toAnthropicRequest(right(Translate.fromOpenAiRequest(overTheWire))))
    assert.deepStrictEqual(back.messages, toolLoop.messages)
    assert.isTrue(isAnthropicRequest(back))
  })

  it("reads thinking_blocks before reasoning_content, ignores unknown entries and keeps unsigned thinking out of Anthropic", () => {
    const assistant = (fields: object) =>
      right(
        Translate.fromOpenAiRequest(
          decodeOpenAi({ model: "m", messages: [{ role: "assistant", content: "ok", ...fields }] })
        )
      )
        .messages[0]?.blocks
    // both present: thinking_blocks win, even when reasoning_content disagrees
    assert.deepStrictEqual(
      assistant({
        reasoning_content: "stale",
        thinking_blocks: [{ type: "future_kind" }, { type: "thinking", thinking: "fresh", signature: "sig" }]
      }),
      [{ _tag: "Thinking", text: "fresh", signature: "sig" }, { _tag: "Text", text: "ok" }]
    )
    // no known entry (or null, or an empty unsigned entry): reasoning_content, unsigned
    for (
      const thinking_blocks of [[{ type: "future_kind" }], null, [], [{
        type: "thinking",
        thinking: "",
        signature: null
      }]]
    ) {
      assert.deepStrictEqual(assistant({ reasoning_content: "plain", thinking_blocks }), [
        { _tag: "Thinking", text: "plain" },
        { _tag: "Text", text: "ok" }
      ])
    }
    // an empty signature is no signature; unsigned thinking is dropped for Anthropic, signed kept in order
    const neutral = right(Translate.fromOpenAiRequest(decodeOpenAi({
      model: "m",
      messages: [{
        role: "assistant",
        content: "ok",
        thinking_blocks: [
          { type: "thinking", thinking: "unsigned", signature: "" },
          { type: "redacted_thinking", data: "R" },
          { type: "thinking", thinking: "signed", signature: "S" }
        ]
      }]
    })))
    assert.deepStrictEqual<unknown>(right(Translate.toAnthropicRequest(neutral)).messages[0], {
      role: "assistant",
      content: [
        { type: "redacted_thinking", data: "R" },
        { type: "thinking", thinking: "signed", signature: "S" },
        { type: "text", text: "ok" }
      ]
    })
    // and to OpenAI: every block in thinking_blocks, the unsigned one without a signature key
    assert.deepStrictEqual<unknown>(Translate.toOpenAiRequest(neutral).messages[0], {
      role: "assistant",
      content: "ok",
      reasoning_content: "unsignedsigned",
      thinking_blocks: [
        { type: "thinking", thinking: "unsigned" },
        { type: "redacted_thinking", data: "R" },
        { type: "thinking", thinking: "signed", signature: "S" }
      ]
    })
  })

  it("a buffered completion's thinking_blocks win over its reasoning_content", () => {
    const completion = decodeCompletion({
      id: "chatcmpl-7",
      model: "litellm",
      choices: [{
        index: 0,
        message: {
          role: "assistant",
          content: "done",
          reasoning_content: "stale",
          thinking_blocks: [{ type: "redacted_thinking", data: "R" }, {
            type: "thinking",
            thinking: "t",
            signature: "S"
          }]
        },
        finish_reason: "stop"
      }]
    })
    assert.deepStrictEqual<unknown>(Translate.toAnthropicResponse(Translate.fromOpenAiResponse(completion)).content, [
      { type: "redacted_thinking", data: "R" },
      { type: "thinking", thinking: "t", signature: "S" },
      { type: "text", text: "done" }
    ])
  })
})

describe("system messages inside the conversation (Claude Code's shape)", () => {
  const reminderText = "<system-reminder>\nToday's date is 2026-01-15.\n</system-reminder>"
  const plainResult = {
    role: "user",
    content: [{ type: "tool_result", tool_use_id: "toolu_01Search", content: "loaded" }]
  }
  const bashCall = {
    role: "assistant",
    content: [{ type: "tool_use", id: "toolu_01Search", name: "Bash", input: { command: "npm test" } }]
  }
  const roles = (body: OpenAi.ChatCompletionRequest) => body.messages.map((message) => message.role)

  it("a first request [user, system] decodes, is a user turn, and reaches OpenAI with the system message in place", () => {
    const req = decodeAnthropic(ClaudeCode.firstRequest("auto"))
    const neutral = right(Translate.fromAnthropicRequest(req))
    assert.deepStrictEqual(neutral.messages.map((message) => message.role), ["user", "system"])
    assert.deepStrictEqual(neutral.messages[1], { role: "system", blocks: [{ _tag: "Text", text: reminderText }] })
    assert.isTrue(isUserTurn(neutral))
    const body = Translate.toOpenAiRequest(neutral)
    assert.deepStrictEqual(roles(body), ["system", "user", "system"])
    assert.deepStrictEqual(body.messages[2], { role: "system", content: reminderText })
    assert.isTrue(isOpenAiRequest(body))
  })

  it("a tool continuation [user, system, assistant(tool_use), user(tool_result)] keeps every message in order", () => {
    const req = decodeAnthropic(ClaudeCode.request({
      model: "auto",
      session: "s",
      messages: [ClaudeCode.task, ClaudeCode.reminder, bashCall, plainResult]
    }))
    const neutral = right(Translate.fromAnthropicRequest(req))
    assert.isFalse(isUserTurn(neutral))
    const body = Translate.toOpenAiRequest(neutral)
    assert.deepStrictEqual(roles(body), ["system", "user", "system", "assistant", "tool"])
    assert.deepStrictEqual(body.messages[4], { role: "tool", tool_call_id: "toolu_01Search", content: "loaded" })
  })

  it("system messages do not decide user turn vs continuation, wherever they are", () => {
    const turn = (messages: ReadonlyArray<unknown>) =>
      isUserTurn(right(Translate.fromAnthropicRequest(decodeAnthropic({ model: "m", max_tokens: 1, messages }))))
    assert.isTrue(turn([ClaudeCode.task, ClaudeCode.reminder]))
    assert.isTrue(turn([ClaudeCode.reminder, ClaudeCode.task, ClaudeCode.reminder, ClaudeCode.reminder]))
    assert.isFalse(turn([ClaudeCode.task, bashCall, plainResult, ClaudeCode.reminder]))
    assert.isFalse(turn([ClaudeCode.task, bashCall, ClaudeCode.reminder]))
    assert.isFalse(turn([ClaudeCode.reminder]))
  })

  it("text-block system messages keep their text; cache markers reach Anthropic, not OpenAI", () => {
    const req = decodeAnthropic({
      model: "m",
      max_tokens: 1,
      messages: [
        { role: "user", content: "hi" },
        {
          role: "system",
          content: [{ type: "text", text: "one" }, { type: "text", text: "two", cache_control: { type: "ephemeral" } }]
        }
      ]
    })
    const neutral = right(Translate.fromAnthropicRequest(req))
    assert.deepStrictEqual(neutral.messages[1], {
      role: "system",
      blocks: [{ _tag: "Text", text: "one" }, { _tag: "Text", text: "two", cacheControl: { type: "ephemeral" } }]
    })
    assert.notInclude(JSON.stringify(Translate.toOpenAiRequest(neutral)), "cache_control")
    assert.deepStrictEqual(right(Translate.toAnthropicRequest(neutral)).system, [
      { type: "text", text: "one" },
      { type: "text", text: "two", cache_control: { type: "ephemeral" } }
    ])
  })

  it("an OpenAI system message mid-conversation stays in place through OpenAI and moves to system for Anthropic", () => {
    const req = decodeOpenAi({
      model: "m",
      messages: [
        { role: "system", content: "lead" },
        { role: "developer", content: "lead 2" },
        { role: "user", content: "hi" },
        {
          role: "assistant",
          content: null,
          tool_calls: [{ id: "c1", type: "function", function: { name: "f", arguments: "{}" } }]
        },
        { role: "tool", tool_call_id: "c1", content: "r" },
        { role: "system", content: "mid" }
      ]
    })
    const neutral = right(Translate.fromOpenAiRequest(req))
    assert.deepStrictEqual(neutral.instructions, [{ _tag: "Text", text: "lead" }, { _tag: "Text", text: "lead 2" }])
    assert.deepStrictEqual(neutral.messages[3], { role: "system", blocks: [{ _tag: "Text", text: "mid" }] })
    assert.isFalse(isUserTurn(neutral))
    const openAi = Translate.toOpenAiRequest(neutral)
    assert.deepStrictEqual(roles(openAi), ["system", "user", "assistant", "tool", "system"])
    assert.deepStrictEqual(openAi.messages[0], { role: "system", content: "lead\n\nlead 2" })
    assert.deepStrictEqual(right(Translate.fromOpenAiRequest(openAi)), {
      ...neutral,
      instructions: [{ _tag: "Text", text: "lead\n\nlead 2" }]
    })
    const anthropic = right(Translate.toAnthropicRequest(neutral))
    assert.deepStrictEqual(anthropic.system, [
      { type: "text", text: "lead" },
      { type: "text", text: "lead 2" },
      { type: "text", text: "mid" }
    ])
    assert.deepStrictEqual(anthropic.messages.map((message) => message.role), ["user", "assistant", "user"])
  })
})

describe("tool_reference results (Claude Code's ToolSearch)", () => {
  it("become \"Tool loaded: <name>\" texts in the tool message for OpenAI, and stay tool_reference blocks for Anthropic", () => {
    const req = decodeAnthropic(ClaudeCode.continuation("auto"))
    const neutral = right(Translate.fromAnthropicRequest(req))
    assert.isFalse(isUserTurn(neutral))
    const body = Translate.toOpenAiRequest(neutral)
    assert.deepStrictEqual(body.messages.map((message) => message.role), [
      "system",
      "user",
      "system",
      "assistant",
      "tool"
    ])
    assert.deepStrictEqual(body.messages[4], {
      role: "tool",
      tool_call_id: "toolu_01Search",
      content: [
        { type: "text", text: "Tool loaded: mcp__tests__run" },
        { type: "text", text: "Tool loaded: mcp__tests__list" }
      ]
    })
    assert.isTrue(isOpenAiRequest(body))
    // Every tool is offered to the Chat upstream, the deferred one included.
    assert.deepStrictEqual(body.tools?.map((tool) => tool.type === "function" ? tool.function.name : tool.type), [
      "Bash",
      "ToolSearch",
      "mcp__tests__run"
    ])
    const anthropic = right(Translate.toAnthropicRequest(neutral))
    assert.deepStrictEqual<unknown>(anthropic.messages[anthropic.messages.length - 1], ClaudeCode.toolSearchResult)
  })

  it("a single tool_reference next to text: the tool message holds both, in order", () => {
    const req = decodeAnthropic({
      model: "m",
      max_tokens: 1,
      messages: [
        { role: "assistant", content: [{ type: "tool_use", id: "t1", name: "ToolSearch", input: {} }] },
        {
          role: "user",
          content: [{
            type: "tool_result",
            tool_use_id: "t1",
            content: [{ type: "text", text: "found:" }, {
              type: "tool_reference",
              tool_name: "Grep",
              cache_control: { type: "ephemeral" }
            }]
          }]
        }
      ]
    })
    const neutral = right(Translate.fromAnthropicRequest(req))
    assert.deepStrictEqual(Translate.toOpenAiRequest(neutral).messages[1], {
      role: "tool",
      tool_call_id: "t1",
      content: [{ type: "text", text: "found:" }, { type: "text", text: "Tool loaded: Grep" }]
    })
    // The block's own fields (its cache marker) survive the way back to Anthropic.
    assert.deepStrictEqual(right(Translate.toAnthropicRequest(neutral)).messages[1], req.messages[1])
  })

  it("a tool_reference without tool_name does not decode; other unknown tool_result content still fails translation", () => {
    const result = (item: unknown) => ({
      model: "m",
      max_tokens: 1,
      messages: [{ role: "user", content: [{ type: "tool_result", tool_use_id: "t1", content: [item] }] }]
    })
    assert.isTrue(
      Either.isLeft(
        Schema.decodeUnknownEither(Anthropic.MessagesRequest, Anthropic.decodeOptions)(
          result({ type: "tool_reference" })
        )
      )
    )
    const searched = decodeAnthropic(result({ type: "search_result", source: "s", title: "t", content: [] }))
    assert.include(leftReason(Translate.fromAnthropicRequest(searched)), "search_result")
  })
})

describe("cache-friendly system prompts for Chat upstreams", () => {
  it("two sessions of one project (different billing headers) give byte-identical Chat system messages", () => {
    const chatOf = (session: string) =>
      Translate.toOpenAiRequest(
        right(Translate.fromAnthropicRequest(decodeAnthropic(ClaudeCode.firstRequest("auto", session))))
      )
    const a = chatOf("a1b2c")
    const b = chatOf("z9y8x")
    assert.notDeepEqual(
      ClaudeCode.firstRequest("auto", "a1b2c").system,
      ClaudeCode.firstRequest("auto", "z9y8x").system
    )
    assert.strictEqual(JSON.stringify(a.messages[0]), JSON.stringify(b.messages[0]))
    assert.strictEqual(JSON.stringify(a.messages), JSON.stringify(b.messages))
    assert.deepStrictEqual(a.messages[0], {
      role: "system",
      content: ClaudeCode.systemPrompt.map((block) => block.text).join(Translate.systemTextSeparator)
    })
    assert.notInclude(JSON.stringify(a), "x-anthropic-billing-header")
  })

  it("billing header texts are dropped from any system message; one made only of them is left out", () => {
    const billing = { type: "text", text: `${Translate.billingHeaderPrefix} cch=1;` }
    const req = decodeAnthropic({
      model: "m",
      max_tokens: 1,
      system: [billing],
      messages: [
        { role: "user", content: "hi" },
        { role: "system", content: [billing, { type: "text", text: "kept" }] },
        { role: "system", content: [billing] }
      ]
    })
    const neutral = right(Translate.fromAnthropicRequest(req))
    assert.deepStrictEqual(Translate.toOpenAiRequest(neutral).messages, [
      { role: "user", content: "hi" },
      { role: "system", content: "kept" }
    ])
    // The billing header is Anthropic's: an Anthropic body keeps it.
    assert.include(JSON.stringify(right(Translate.toAnthropicRequest(neutral)).system), Translate.billingHeaderPrefix)
  })

  it("a text merely mentioning the billing header (not starting with it) is kept", () => {
    const req = decodeAnthropic({
      model: "m",
      max_tokens: 1,
      system: [{ type: "text", text: `see ${Translate.billingHeaderPrefix}` }, { type: "text", text: "b" }],
      messages: [{ role: "user", content: "hi" }]
    })
    assert.deepStrictEqual(Translate.toOpenAiRequest(right(Translate.fromAnthropicRequest(req))).messages[0], {
      role: "system",
      content: `see ${Translate.billingHeaderPrefix}\n\nb`
    })
  })
})

describe("metadata.user_id to a Chat upstream", () => {
  const chatUser = (userId: string) =>
    Translate.toOpenAiRequest(right(Translate.fromAnthropicRequest(decodeAnthropic({
      model: "m",
      max_tokens: 1,
      metadata: { user_id: userId },
      messages: [{ role: "user", content: "hi" }]
    })))).user

  it("becomes user up to 64 characters and is dropped beyond", () => {
    assert.strictEqual(Translate.maxOpenAiUserLength, 64)
    assert.strictEqual(chatUser("u".repeat(64)), "u".repeat(64))
    assert.isUndefined(chatUser("u".repeat(65)))
    // characters, not UTF-16 units: 64 astral characters are 128 units
    assert.strictEqual(chatUser("😀".repeat(64)), "😀".repeat(64))
    assert.isUndefined(chatUser("😀".repeat(65)))
  })

  it("Claude Code's JSON user_id is dropped for OpenAI and kept for Anthropic", () => {
    const neutral = right(Translate.fromAnthropicRequest(decodeAnthropic(ClaudeCode.firstRequest("auto"))))
    assert.isAbove(ClaudeCode.userId.length, 64)
    assert.notProperty(Translate.toOpenAiRequest(neutral), "user")
    assert.deepStrictEqual(right(Translate.toAnthropicRequest(neutral)).metadata, { user_id: ClaudeCode.userId })
  })
})
