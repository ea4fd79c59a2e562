import { assert, describe, it } from "@effect/vitest"
import * as Anthropic from "@switchyard-ts/protocol/AnthropicMessages"
import { TranslationError } from "@switchyard-ts/protocol/Errors"
import * as OpenAi from "@switchyard-ts/protocol/OpenAiChat"
import * as R from "@switchyard-ts/protocol/OpenAiResponses"
import * as Translate from "@switchyard-ts/protocol/Translate"
import * as TR from "@switchyard-ts/protocol/TranslateResponses"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as fs from "node:fs"
import * as path from "node:path"

const decodeRequest = Schema.decodeUnknownSync(R.ResponsesRequest, R.decodeOptions)
const decodeResponse = Schema.decodeUnknownSync(R.ResponseObject, R.decodeOptions)
const decodeEvent = Schema.decodeUnknownSync(R.StreamEvent, R.decodeOptions)
const isChatRequest = Schema.is(OpenAi.ChatCompletionRequest)
const isMessagesRequest = Schema.is(Anthropic.MessagesRequest)
const isResponsesRequest = Schema.is(R.ResponsesRequest)

const right = <A>(either: Either.Either<A, TranslationError>): A => {
  if (Either.isLeft(either)) assert.fail(`unexpected TranslationError: ${either.left.reason}`)
  return either.right
}
const leftReason = <A>(either: Either.Either<A, TranslationError>): string => {
  if (Either.isRight(either)) return assert.fail("expected a TranslationError")
  assert.instanceOf(either.left, TranslationError)
  return either.left.reason
}

const codexJson: unknown = JSON.parse(
  fs.readFileSync(path.join(import.meta.dirname, "fixtures", "codex-request.json"), "utf8")
)
const codex = decodeRequest(codexJson)

describe("Codex request (captured from codex-cli 0.171.0)", () => {
  it("decodes with every field kept", () => {
    assert.deepStrictEqual<unknown>(codex, codexJson)
    assert.deepStrictEqual(
      Object.keys(codex).sort(),
      [
        "client_metadata",
        "include",
        "input",
        "model",
        "parallel_tool_calls",
        "prompt_cache_key",
        "reasoning",
        "store",
        "stream",
        "tool_choice",
        "tools"
      ]
    )
  })

  const neutral = right(TR.fromResponsesRequest(codex))

  it("reads developer items as instructions, namespace tools flattened, web_search opaque", () => {
    assert.isTrue(neutral.instructions.length >= 2)
    assert.isTrue(neutral.instructions[0]?.text.startsWith("You are a coding agent running in the Codex CLI"))
    assert.deepStrictEqual(neutral.messages.map((m) => m.role), ["user", "user"])
    const names = neutral.tools.map((t) => t.name)
    for (const name of ["exec_command", "write_stdin", "multi_agent_v1__spawn_agent", "multi_agent_v1__wait_agent"]) {
      assert.include(names, name)
    }
    for (const name of names) assert.match(name, TR.portableToolName)
    assert.deepStrictEqual(neutral.opaqueTools.map((t) => [t.format, typeOfValue(t.value)]), [[
      "openai_responses",
      "web_search"
    ]])
    assert.deepStrictEqual(neutral.toolChoice, { _tag: "Auto" })
    assert.strictEqual(neutral.parallelToolCalls, true)
    assert.isTrue(neutral.stream)
    // Chat's names for what Chat understands; the rest stays Responses-only
    assert.deepStrictEqual(Object.keys(neutral.extra).sort(), ["prompt_cache_key", "store"])
    assert.deepStrictEqual(Object.keys(neutral.responses?.fields ?? {}).sort(), [
      "client_metadata",
      "include",
      "reasoning"
    ])
    assert.deepStrictEqual(Option.getOrUndefined(TR.originalToolName(codex, "multi_agent_v1__spawn_agent")), {
      namespace: "multi_agent_v1",
      name: "spawn_agent"
    })
    assert.isTrue(Option.isNone(TR.originalToolName(codex, "exec_command")))
  })

  it("translates to Chat: system messages, flat function tools, no web_search, no Responses-only fields", () => {
    const chat = right(TR.toChatRequest(neutral))
    assert.isTrue(isChatRequest(chat))
    assert.deepStrictEqual(chat.messages.map((m) => m.role), ["system", "user", "user"])
    assert.isTrue(chat.tools?.every((t) => t.type === "function"))
    assert.strictEqual(chat.tools?.length, neutral.tools.length)
    for (const key of ["include", "client_metadata", "reasoning", "input", "instructions"]) {
      assert.isFalse(key in chat, key)
    }
    assert.strictEqual("prompt_cache_key" in chat ? chat.prompt_cache_key : undefined, codex.prompt_cache_key)
    assert.strictEqual(chat.store, false)
    assert.strictEqual(chat.tool_choice, "auto")
  })

  it("translates to Messages: system blocks, flat tools, no web_search", () => {
    const messages = right(TR.toMessagesRequest(neutral))
    assert.isTrue(isMessagesRequest(messages))
    assert.isTrue(Array.isArray(messages.system))
    assert.deepStrictEqual(messages.messages.map((m) => m.role), ["user", "user"])
    assert.deepStrictEqual(messages.tools?.map((t) => t.name), neutral.tools.map((t) => t.name))
    for (const key of ["include", "client_metadata", "reasoning", "store", "prompt_cache_key"]) {
      assert.isFalse(key in messages, key)
    }
  })

  it("translates back to Responses unchanged but for the message items' ids", () => {
    const back = right(TR.toResponsesRequest(neutral))
    assert.isTrue(isResponsesRequest(back))
    const input = Array.isArray(codex.input) ? codex.input : []
    const withoutIds = input.map((item) => {
      if (!("role" in item)) return item
      const { id: _id, ...rest } = item
      return rest
    })
    assert.deepStrictEqual<unknown>(back, { ...codex, input: withoutIds })
  })
})

const typeOfValue = (value: unknown): string =>
  typeof value === "object" && value !== null && "type" in value && typeof value.type === "string" ? value.type : "?"

describe("Responses request rules (examples)", () => {
  const base = { model: "route" }

  it("a conversation with reasoning, calls of namespaced and custom tools and their outputs", () => {
    const req = decodeRequest({
      ...base,
      instructions: "Be brief.",
      input: [
        { type: "message", role: "developer", content: [{ type: "input_text", text: "dev" }] },
        {
          type: "message",
          role: "user",
          content: [{ type: "input_text", text: "hi" }, {
            type: "input_image",
            image_url: "data:image/png;base64,AAAA",
            detail: "low"
          }]
        },
        {
          type: "reasoning",
          id: "rs_1",
          summary: [{ type: "summary_text", text: "thinking" }],
          encrypted_content: "ENC"
        },
        {
          type: "function_call",
          id: "fc_1",
          call_id: "call_1",
          name: "spawn_agent",
          namespace: "multi_agent_v1",
          arguments: "{\"task\":\"x\"}"
        },
        { type: "custom_tool_call", id: "ctc_1", call_id: "call_2", name: "apply_patch", input: "*** Begin Patch" },
        { type: "function_call_output", call_id: "call_1", output: "spawned" },
        { type: "custom_tool_call_output", call_id: "call_2", output: "done" },
        { type: "message", role: "developer", content: [{ type: "input_text", text: "later" }] }
      ],
      tools: [
        {
          type: "namespace",
          name: "multi_agent_v1",
          description: "agents",
          tools: [{ type: "function", name: "spawn_agent", parameters: { type: "object", properties: {} } }]
        },
        {
          type: "custom",
          name: "apply_patch",
          description: "patch",
          format: { type: "grammar", syntax: "lark", definition: "start: x" }
        },
        { type: "web_search" }
      ],
      reasoning: { effort: "high", summary: "auto" },
      text: { format: { type: "json_object" }, verbosity: "low" },
      max_output_tokens: 100
    })
    const n = right(TR.fromResponsesRequest(req))
    assert.deepStrictEqual(n.instructions.map((t) => t.text), ["Be brief.", "dev"])
    assert.deepStrictEqual(n.messages.map((m) => [m.role, m.blocks.map((b) => b._tag)]), [
      ["user", ["Text", "Image"]],
      ["assistant", ["Reasoning", "ToolUse", "ToolUse"]],
      ["user", ["ToolResult", "ToolResult"]],
      ["system", ["Text"]]
    ])
    assert.deepStrictEqual(n.messages[1]?.blocks[1], {
      _tag: "ToolUse",
      id: "call_1",
      name: "multi_agent_v1__spawn_agent",
      input: { task: "x" },
      arguments: "{\"task\":\"x\"}",
      namespaced: { namespace: "multi_agent_v1", name: "spawn_agent" },
      itemId: "fc_1"
    })
    assert.deepStrictEqual(n.extra, { reasoning_effort: "high", verbosity: "low" })
    assert.deepStrictEqual(n.responseFormat, { type: "json_object" })

    // Responses: exact but for the string tool outputs (kept) — nothing to normalise here
    assert.deepStrictEqual<unknown>(right(TR.toResponsesRequest(n)), req)

    const chat = right(TR.toChatRequest(n))
    assert.deepStrictEqual<unknown>(chat.messages.map((m) => m.role), [
      "system",
      "user",
      "assistant",
      "tool",
      "tool",
      "system"
    ])
    const assistant = chat.messages[2]
    assert.deepStrictEqual<unknown>(assistant, {
      role: "assistant",
      content: null,
      tool_calls: [
        {
          id: "call_1",
          type: "function",
          function: { name: "multi_agent_v1__spawn_agent", arguments: "{\"task\":\"x\"}" }
        },
        {
          id: "call_2",
          type: "function",
          function: { name: "apply_patch", arguments: JSON.stringify({ input: "*** Begin Patch" }) }
        }
      ]
    })
    assert.deepStrictEqual<unknown>(
      chat.tools?.map((t) => t.type === "function" ? [t.function.name, t.function.parameters] : []),
      [
        ["multi_agent_v1__spawn_agent", { type: "object", properties: {} }],
        ["apply_patch", TR.customToolParameters]
      ]
    )
    assert.strictEqual(chat.reasoning_effort, "high")
    assert.deepStrictEqual(chat.response_format, { type: "json_object" })

    const messages = right(TR.toMessagesRequest(n))
    assert.deepStrictEqual<unknown>(messages.messages[1], {
      role: "assistant",
      content: [
        { type: "tool_use", id: "call_1", name: "multi_agent_v1__spawn_agent", input: { task: "x" } },
        { type: "tool_use", id: "call_2", name: "apply_patch", input: { input: "*** Begin Patch" } }
      ]
    })
    assert.deepStrictEqual<unknown>(messages.system, [
      { type: "text", text: "Be brief." },
      { type: "text", text: "dev" },
      { type: "text", text: "later" }
    ])
  })

  it("previous_response_id and other server state fail for Chat and Messages, not for Responses", () => {
    for (
      const extra of [
        { previous_response_id: "resp_1" },
        { conversation: "conv_1" },
        { prompt: { id: "pmpt_1" } },
        { background: true }
      ]
    ) {
      const n = right(TR.fromResponsesRequest(decodeRequest({ ...base, input: "hi", ...extra })))
      assert.match(leftReason(TR.toChatRequest(n)), /openai_chat/)
      assert.match(leftReason(TR.toMessagesRequest(n)), /anthropic_messages/)
      assert.deepStrictEqual<unknown>(right(TR.toResponsesRequest(n)), {
        ...base,
        ...extra,
        input: [{ type: "message", role: "user", content: [{ type: "input_text", text: "hi" }] }]
      })
    }
  })

  it("hosted call items are dropped for Chat / Messages; item_reference and input_file fail", () => {
    const hosted = right(TR.fromResponsesRequest(decodeRequest({
      ...base,
      input: [
        { type: "message", role: "user", content: "search" },
        { type: "web_search_call", id: "ws_1", status: "completed", action: { type: "search", query: "q" } },
        { type: "reasoning", id: "rs_1", summary: [] },
        { type: "message", role: "assistant", content: [{ type: "output_text", text: "found" }] }
      ]
    })))
    const chat = right(TR.toChatRequest(hosted))
    assert.deepStrictEqual<unknown>(chat.messages, [{ role: "user", content: "search" }, {
      role: "assistant",
      content: "found"
    }])
    right(TR.toMessagesRequest(hosted))
    for (
      const input of [
        [{ type: "item_reference", id: "msg_1" }],
        [{ type: "message", role: "user", content: [{ type: "input_file", file_id: "file_1" }] }]
      ]
    ) {
      const n = right(TR.fromResponsesRequest(decodeRequest({ ...base, input })))
      leftReason(TR.toChatRequest(n))
      leftReason(TR.toMessagesRequest(n))
    }
    const choice = right(
      TR.fromResponsesRequest(decodeRequest({ ...base, input: "x", tool_choice: { type: "web_search" } }))
    )
    leftReason(TR.toChatRequest(choice))
  })

  it("flattened names fit the portable tool-name rule and clashes fail", () => {
    assert.strictEqual(TR.flatToolName("mcp__docs", "search"), "mcp__docs__search")
    const long = TR.flatToolName("mcp__a_server_with_a_really_long_name", "and_a_tool_with_an_even_longer_name")
    assert.match(long, TR.portableToolName)
    assert.strictEqual(long.length, TR.maxToolNameLength)
    assert.notStrictEqual(
      long,
      TR.flatToolName("mcp__a_server_with_a_really_long_name", "and_a_tool_with_an_even_longer_name2")
    )
    assert.match(TR.flatToolName("docs.v2", "search/all"), TR.portableToolName)
    const clash = decodeRequest({
      ...base,
      input: "x",
      tools: [
        { type: "function", name: "ns__t" },
        { type: "namespace", name: "ns", description: "", tools: [{ type: "function", name: "t" }] }
      ]
    })
    assert.match(leftReason(TR.fromResponsesRequest(clash)), /ns__t/)
  })

  it("an additional_tools item (Codex): its tools join the tools, no message; a Responses upstream gets it back in place", () => {
    const grammar = { type: "grammar", syntax: "lark", definition: "start: /.+/" }
    const additional = {
      type: "additional_tools",
      role: "developer",
      tools: [
        {
          type: "namespace",
          name: "functions",
          description: "Functions",
          tools: [
            { type: "custom", name: "exec", description: "Run JavaScript", format: grammar },
            { type: "function", name: "wait", parameters: { type: "object", properties: { ms: { type: "number" } } } }
          ]
        },
        {
          type: "namespace",
          name: "collaboration",
          tools: [{ type: "function", name: "spawn_agent", parameters: { type: "object", properties: {} } }]
        },
        { type: "function", name: "plain", parameters: { type: "object", properties: {} } },
        { type: "web_search" }
      ]
    }
    const developer = { type: "message", role: "developer", content: [{ type: "input_text", text: "rules" }] }
    const user = { type: "message", role: "user", content: [{ type: "input_text", text: "hi" }] }
    const req = decodeRequest({ ...base, input: [developer, additional, user], tools: [] })
    const n = right(TR.fromResponsesRequest(req))
    const names = ["functions__exec", "functions__wait", "collaboration__spawn_agent", "plain"]
    assert.deepStrictEqual(n.tools.map((tool) => tool.name), names)
    assert.deepStrictEqual(n.tools[0]?.custom, { format: grammar })
    assert.deepStrictEqual(n.opaqueTools, [])
    assert.deepStrictEqual(n.messages, [{ role: "user", blocks: [{ _tag: "Text", text: "hi" }] }])
    assert.deepStrictEqual(n.instructions, [{ _tag: "Text", text: "rules" }])
    const chat = right(TR.toChatRequest(n))
    assert.isTrue(isChatRequest(chat))
    assert.deepStrictEqual(chat.tools?.map((tool) => tool.type === "function" ? tool.function.name : ""), names)
    assert.deepStrictEqual<unknown>(chat.messages, [{ role: "system", content: "rules" }, {
      role: "user",
      content: "hi"
    }])
    const messages = right(TR.toMessagesRequest(n))
    assert.isTrue(isMessagesRequest(messages))
    assert.deepStrictEqual(messages.tools?.map((tool) => "name" in tool ? tool.name : ""), names)
    // Back to Responses: the item in place, verbatim (its hosted tool too), not in `tools`.
    assert.deepStrictEqual<unknown>(right(TR.toResponsesRequest(n)), { ...base, input: [developer, additional, user] })
    assert.deepStrictEqual(Option.getOrUndefined(TR.originalToolName(req, "functions__wait")), {
      namespace: "functions",
      name: "wait"
    })
    // An answer's calls come back under their namespace (the custom one as a custom call).
    const completion = Translate.fromOpenAiResponse({
      id: "chatcmpl-1",
      model: "up",
      choices: [{
        index: 0,
        finish_reason: "tool_calls",
        message: {
          role: "assistant",
          content: null,
          tool_calls: [
            { id: "c1", type: "function", function: { name: "functions__exec", arguments: "{\"input\":\"1+1\"}" } },
            { id: "c2", type: "function", function: { name: "collaboration__spawn_agent", arguments: "{}" } }
          ]
        }
      }]
    })
    assert.deepStrictEqual<unknown>(TR.toResponsesResponse(completion, { tools: TR.toolMap(n) }).output, [
      {
        type: "custom_tool_call",
        id: "ctc_switchyard_0",
        call_id: "c1",
        name: "exec",
        namespace: "functions",
        input: "1+1"
      },
      {
        type: "function_call",
        id: "fc_switchyard_1",
        call_id: "c2",
        name: "spawn_agent",
        namespace: "collaboration",
        arguments: "{}",
        status: "completed"
      }
    ])
    // Placed anywhere, items come back where they stood; a clash with `tools` fails; a malformed one stays opaque.
    const later = [user, additional, { ...developer, content: [{ type: "input_text", text: "later" }] }]
    const moved = right(TR.fromResponsesRequest(decodeRequest({ ...base, input: [additional, ...later] })))
    assert.deepStrictEqual(moved.tools.map((tool) => tool.name), names)
    assert.deepStrictEqual<unknown>(right(TR.toResponsesRequest(moved)).input, [additional, ...later])
    assert.match(
      leftReason(TR.fromResponsesRequest(decodeRequest({
        ...base,
        input: [additional],
        tools: [{ type: "function", name: "plain" }]
      }))),
      /plain/
    )
    const malformed = right(TR.fromResponsesRequest(decodeRequest({
      ...base,
      input: [{ type: "additional_tools", tools: "none" }, user]
    })))
    assert.strictEqual(
      leftReason(TR.toChatRequest(malformed)),
      "a Responses additional_tools item cannot be sent to an openai_chat upstream"
    )
  })

  it("from Chat: instructions as one developer item, thinking and stop dropped, reasoning_effort in reasoning", () => {
    const chat = Schema.decodeUnknownSync(OpenAi.ChatCompletionRequest, OpenAi.decodeOptions)({
      model: "m",
      messages: [
        { role: "system", content: "sys" },
        { role: "user", content: "q" },
        {
          role: "assistant",
          content: "a",
          reasoning_content: "hmm",
          tool_calls: [{ id: "c1", type: "function", function: { name: "f", arguments: "{}" } }]
        },
        { role: "tool", tool_call_id: "c1", content: "r" }
      ],
      stop: ["x"],
      reasoning_effort: "low",
      seed: 1,
      store: true
    })
    const body = right(TR.toResponsesRequest(right(Translate.fromOpenAiRequest(chat))))
    assert.deepStrictEqual<unknown>(body, {
      model: "m",
      store: true,
      input: [
        { type: "message", role: "developer", content: [{ type: "input_text", text: "sys" }] },
        { type: "message", role: "user", content: [{ type: "input_text", text: "q" }] },
        { type: "message", role: "assistant", content: [{ type: "output_text", text: "a" }] },
        { type: "function_call", call_id: "c1", name: "f", arguments: "{}" },
        { type: "function_call_output", call_id: "c1", output: "r" }
      ],
      reasoning: { effort: "low" }
    })
  })
})

describe("Responses request rules (Claude Code ids)", () => {
  it("a user id longer than Chat's limit is dropped toward Responses, as toward Chat", () => {
    const long = JSON.stringify({ device_id: "d".repeat(64), session_id: "s" })
    const n = right(Translate.fromAnthropicRequest(
      Schema.decodeUnknownSync(Anthropic.MessagesRequest)({
        model: "m",
        max_tokens: 10,
        messages: [{ role: "user", content: "hi" }],
        metadata: { user_id: long }
      })
    ))
    assert.isFalse("user" in right(TR.toResponsesRequest(n)))
    assert.strictEqual(right(TR.toResponsesRequest({ ...n, user: "u-1" })).user, "u-1")
  })
})

describe("Responses responses (examples)", () => {
  const response = decodeResponse({
    id: "resp_1",
    object: "response",
    created_at: 5,
    status: "completed",
    model: "gpt",
    output: [
      {
        type: "reasoning",
        id: "rs_1",
        summary: [{ type: "summary_text", text: "a" }, { type: "summary_text", text: "b" }],
        encrypted_content: "E"
      },
      { type: "web_search_call", id: "ws_1", status: "completed" },
      {
        type: "message",
        id: "msg_1",
        role: "assistant",
        status: "completed",
        content: [{ type: "output_text", text: "hi", annotations: [] }]
      },
      {
        type: "function_call",
        id: "fc_1",
        call_id: "c1",
        name: "spawn_agent",
        namespace: "multi_agent_v1",
        arguments: "{}",
        status: "completed"
      }
    ],
    usage: {
      input_tokens: 10,
      input_tokens_details: { cached_tokens: 4 },
      output_tokens: 3,
      output_tokens_details: { reasoning_tokens: 2 },
      total_tokens: 13
    }
  })

  it("to neutral, Chat and Messages", () => {
    const n = TR.fromResponsesResponse(response)
    assert.deepStrictEqual(n.content.map((b) => b._tag), ["Reasoning", "Text", "ToolUse"])
    assert.strictEqual(n.stopReason, "tool_use")
    assert.deepStrictEqual(n.usage, { inputTokens: 10, outputTokens: 3, cacheReadTokens: 4, reasoningTokens: 2 })
    const chat = Translate.toOpenAiResponse(n)
    assert.deepStrictEqual<unknown>(chat.choices[0]?.message, {
      role: "assistant",
      content: "hi",
      tool_calls: [{ id: "c1", type: "function", function: { name: "multi_agent_v1__spawn_agent", arguments: "{}" } }],
      reasoning_content: "a\n\nb"
    })
    assert.strictEqual(chat.choices[0]?.finish_reason, "tool_calls")
    const messages = Translate.toAnthropicResponse(n)
    assert.deepStrictEqual<unknown>(messages.content[0], { type: "thinking", thinking: "a\n\nb", signature: "" })
  })

  it("back to Responses keeps reasoning, namespace and ids (hosted items are dropped)", () => {
    const back = TR.toResponsesResponse(TR.fromResponsesResponse(response))
    assert.deepStrictEqual<unknown>(back.output, [
      response.output[0],
      {
        type: "message",
        id: "msg_switchyard_1",
        role: "assistant",
        status: "completed",
        content: [{ type: "output_text", text: "hi", annotations: [] }]
      },
      response.output[3]
    ])
    assert.deepStrictEqual(back.usage, response.usage)
    assert.strictEqual(back.status, "completed")
  })

  it("a Chat answer calling a flattened namespaced tool and a custom tool reaches a Responses client as they were declared", () => {
    const n = right(TR.fromResponsesRequest(decodeRequest({
      model: "route",
      input: "x",
      tools: [
        {
          type: "namespace",
          name: "multi_agent_v1",
          description: "",
          tools: [{ type: "function", name: "spawn_agent" }]
        },
        { type: "custom", name: "apply_patch" }
      ]
    })))
    const completion = Translate.fromOpenAiResponse({
      id: "chatcmpl-9",
      model: "up",
      choices: [{
        index: 0,
        finish_reason: "length",
        message: {
          role: "assistant",
          content: null,
          tool_calls: [
            { id: "c1", type: "function", function: { name: "multi_agent_v1__spawn_agent", arguments: "{}" } },
            { id: "c2", type: "function", function: { name: "apply_patch", arguments: "{\"input\":\"PATCH\"}" } }
          ]
        }
      }]
    })
    const out = TR.toResponsesResponse(completion, { tools: TR.toolMap(n) })
    assert.strictEqual(out.id, "resp_9")
    assert.deepStrictEqual<unknown>(out.output, [
      {
        type: "function_call",
        id: "fc_switchyard_0",
        call_id: "c1",
        name: "spawn_agent",
        namespace: "multi_agent_v1",
        arguments: "{}",
        status: "completed"
      },
      { type: "custom_tool_call", id: "ctc_switchyard_1", call_id: "c2", name: "apply_patch", input: "PATCH" }
    ])
    assert.deepStrictEqual<unknown>([out.status, out.incomplete_details], ["incomplete", {
      reason: "max_output_tokens"
    }])
  })
})

describe("stream error sequence (anchor §6.4)", () => {
  it("error then response.failed, numbered after the events so far, nothing after", () => {
    const translator = TR.chatToResponsesStream({ model: "route" })
    const events = [
      ...translator.push({
        id: "chatcmpl-1",
        model: "up",
        choices: [{ index: 0, delta: { role: "assistant", content: "par" } }]
      }),
      ...translator.fail("upstream connection reset")
    ]
    assert.deepStrictEqual(events.map((e) => e.type), [
      "response.created",
      "response.in_progress",
      "response.output_item.added",
      "response.content_part.added",
      "response.output_text.delta",
      "error",
      "response.failed"
    ])
    assert.deepStrictEqual(events.map((e) => e.sequence_number), [0, 1, 2, 3, 4, 5, 6])
    assert.deepStrictEqual<unknown>(events[5], {
      type: "error",
      sequence_number: 5,
      code: "SwitchyardError",
      message: "upstream connection reset",
      param: null,
      error: { message: "upstream connection reset", type: "SwitchyardError" }
    })
    const failed = Schema.decodeUnknownSync(R.FailedEvent)(events[6])
    assert.deepStrictEqual([failed.response.status, failed.response.error?.message], [
      "failed",
      "upstream connection reset"
    ])
    for (const event of events) decodeEvent(event)
    assert.deepStrictEqual(translator.end(), [])
    assert.deepStrictEqual(translator.fail("again"), [])
  })

  it("unknown events decode as others and are skipped", () => {
    const translator = TR.responsesToChatStream()
    const event = decodeEvent({ type: "response.output_text.annotation.added", sequence_number: 3, annotation: {} })
    assert.deepStrictEqual(translator.push(event), [{
      id: "chatcmpl_switchyard",
      object: "chat.completion.chunk",
      created: 0,
      model: "",
      choices: [{ index: 0, delta: { role: "assistant", content: "" }, finish_reason: null }]
    }])
    assert.isTrue(R.streamEventTypes.has("response.completed"))
    assert.isFalse(R.streamEventTypes.has("response.output_text.annotation.added"))
  })
})
