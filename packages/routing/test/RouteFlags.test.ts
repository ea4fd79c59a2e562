/**
 * `RouteFlags.firstUnsupported`: which disabled capability a body uses — reasoning controls, tool
 * offers and tool history, images (inside tool results too) — in each inbound format, in the order
 * reasoning → tool_calling → vision; unset or `true` never restricts. Examples per format, and a
 * property against a model of the rule over every combination of flags and uses.
 */
import { assert, describe, it } from "@effect/vitest"
import * as FastCheck from "effect/FastCheck"
import * as Option from "effect/Option"
import * as RouteFlags from "../src/RouteFlags.js"

const none: RouteFlags.Flags = { reasoning: Option.none(), toolCalling: Option.none(), vision: Option.none() }
const off = (capability: "reasoning" | "toolCalling" | "vision"): RouteFlags.Flags => ({
  ...none,
  [capability]: Option.some(false)
})
const allOn: RouteFlags.Flags = {
  reasoning: Option.some(true),
  toolCalling: Option.some(true),
  vision: Option.some(true)
}
const allOff: RouteFlags.Flags = {
  reasoning: Option.some(false),
  toolCalling: Option.some(false),
  vision: Option.some(false)
}

const first = (flags: RouteFlags.Flags, body: Record<string, unknown>) =>
  Option.getOrUndefined(RouteFlags.firstUnsupported(flags, body))

/** `body` is refused for `capability` under `flags`, and never with no flag, nor with every flag `true`. */
const refused = (flags: RouteFlags.Flags, body: Record<string, unknown>, capability: string) => {
  assert.strictEqual(first(flags, body), capability, JSON.stringify(body))
  assert.isUndefined(first(none, body))
  assert.isUndefined(first(allOn, body))
}

const user = (content: unknown) => ({ role: "user", content })

describe("RouteFlags.firstUnsupported", () => {
  it("reasoning: a non-null reasoning control of any format, decoded or raw-preserved", () => {
    const messages = [user("hi")]
    for (
      const body of [
        { messages, reasoning_effort: "low" },
        { messages, reasoning_effort: 123 },
        { messages, reasoning: { enabled: true } },
        { input: "hi", reasoning: { summary: "auto" } },
        { messages, thinking: { type: "enabled", budget_tokens: 1024 } },
        { messages, output_config: { effort: "high" } }
      ]
    ) refused(off("reasoning"), body, "reasoning")
    for (const body of [{ messages }, { messages, reasoning: null }, { messages, output_config: { effort: null } }]) {
      assert.isUndefined(first(off("reasoning"), body))
    }
  })

  it("tool_calling: tool offers and controls, empty tool lists excepted", () => {
    for (
      const body of [
        { input: "hello", tools: [{ type: "web_search" }] },
        { input: "hello", functions: [{ name: "lookup", parameters: { type: "object" } }] },
        { input: "hello", tool_choice: "none" },
        { input: "hello", tool_choice: { type: "web_search" } },
        { input: "hello", parallel_tool_calls: false },
        { messages: [user("hi")], function_call: "auto" }
      ]
    ) refused(off("toolCalling"), body, "tool_calling")
    assert.isUndefined(first(off("toolCalling"), { messages: [user("hello")], tools: [], functions: [] }))
  })

  it("tool_calling: tool history in Chat, Messages and Responses bodies, MCP items included", () => {
    for (
      const body of [
        { messages: [user("hi"), { role: "assistant", tool_calls: [{ id: "c", type: "function" }] }] },
        { messages: [user("hi"), { role: "tool", tool_call_id: "c", content: "done" }] },
        { messages: [{ role: "assistant", content: [{ type: "tool_use", id: "t", name: "read", input: {} }] }] },
        { messages: [user([{ type: "tool_result", tool_use_id: "t", content: "ok" }])] },
        { input: [{ type: "additional_tools", tools: [] }] },
        { input: [{ type: "shell_call", id: "s", call_id: "c", action: { commands: ["pwd"] } }] },
        { input: [{ type: "function_call_output", call_id: "c", output: "done" }] },
        { input: [{ type: "mcp_list_tools", server_label: "s", tools: [] }] },
        { input: [{ type: "mcp_approval_request", id: "a", name: "lookup", arguments: "{}", server_label: "s" }] },
        { input: [{ type: "mcp_approval_response", approval_request_id: "a", approve: false }] },
        { messages: [{ role: "assistant", content: [{ type: "server_tool_use", id: "s", name: "web_search" }] }] }
      ]
    ) refused(off("toolCalling"), body, "tool_calling")
  })

  it("vision: images anywhere in the content, inside tool results and call outputs included", () => {
    const image = { type: "image", source: { type: "url", url: "https://example.test/a.png" } }
    for (
      const body of [
        { messages: [user([{ type: "image_url", image_url: { url: "data:image/png;base64,AAAA" } }])] },
        { messages: [user([image])] },
        { messages: [user([{ type: "tool_result", tool_use_id: "t", content: [image] }])] },
        { messages: [{ role: "tool", tool_call_id: "c", content: [{ type: "image_url", image_url: { url: "u" } }] }] },
        { input: [user([{ type: "input_image", file_id: "file_1" }])] },
        {
          input: [{
            type: "computer_call_output",
            call_id: "c",
            output: { type: "computer_screenshot", image_url: "https://example.test/s.png" }
          }]
        },
        { system: [{ type: "text", text: "s" }], messages: [user([{ type: "text", text: "look" }, image])] }
      ]
    ) refused(off("vision"), body, "vision")
    assert.isUndefined(first(off("vision"), { messages: [user([{ type: "text", text: "image_url" }])] }))
    // tool arguments are never looked into
    assert.isUndefined(
      first(off("vision"), {
        messages: [{ role: "assistant", content: [{ type: "tool_use", id: "t", name: "x", input: { type: "image" } }] }]
      })
    )
  })

  it("an image inside a tool result is refused by vision = false even when tools are allowed", () => {
    const body = {
      messages: [user([{
        type: "tool_result",
        tool_use_id: "call_1",
        content: [{ type: "image", source: { type: "url", url: "https://example.test/image.png" } }]
      }])]
    }
    assert.strictEqual(first({ ...off("vision"), toolCalling: Option.some(true) }, body), "vision")
    assert.strictEqual(first(allOff, body), "tool_calling")
  })

  it("reads nothing when no flag is false", () => {
    const body = new Proxy({}, {
      get: () => assert.fail("the body was read")
    })
    assert.isUndefined(first(none, body))
    assert.isUndefined(first(allOn, body))
  })

  /** One capability's flag: unset, `true` or `false`. */
  const flag = FastCheck.constantFrom(Option.none<boolean>(), Option.some(true), Option.some(false))
  const shapes = {
    reasoning: [{ reasoning_effort: "high" }, { thinking: { type: "adaptive" } }, { reasoning: { effort: "low" } }],
    tools: [
      { tools: [{ type: "function", name: "f" }] },
      { tool_choice: "auto" },
      { messages: [user([{ type: "tool_result", tool_use_id: "t", content: "ok" }])] },
      { input: [{ type: "function_call", call_id: "c", name: "f", arguments: "{}" }] }
    ],
    images: [
      { messages: [user([{ type: "image_url", image_url: { url: "u" } }])] },
      { system: [{ type: "image", source: { type: "url", url: "u" } }] },
      { input: [user([{ type: "input_image", image_url: "u" }])] }
    ]
  } as const

  it.prop(
    "the first capability in the order reasoning, tool_calling, vision whose flag is false and that the body uses",
    {
      flags: FastCheck.record({ reasoning: flag, toolCalling: flag, vision: flag }),
      reasoning: FastCheck.option(FastCheck.constantFrom(...shapes.reasoning), { nil: undefined }),
      tools: FastCheck.option(FastCheck.constantFrom(...shapes.tools), { nil: undefined }),
      images: FastCheck.option(FastCheck.constantFrom(...shapes.images), { nil: undefined })
    },
    ({ flags, images, reasoning, tools }) => {
      // conversation parts of several shapes are concatenated, not overwritten
      const body: Record<string, unknown> = {}
      for (const part of [reasoning, tools, images]) {
        if (part === undefined) continue
        for (const [key, value] of Object.entries(part)) {
          const known = body[key]
          body[key] = Array.isArray(known) && Array.isArray(value) ? [...known, ...value] : value
        }
      }
      const isOff = (f: Option.Option<boolean>) => Option.isSome(f) && !f.value
      const expected = isOff(flags.reasoning) && reasoning !== undefined
        ? "reasoning"
        : isOff(flags.toolCalling) && tools !== undefined
        ? "tool_calling"
        : isOff(flags.vision) && images !== undefined
        ? "vision"
        : undefined
      assert.strictEqual(first(flags, body), expected, JSON.stringify({ flags, body }))
    },
    { fastCheck: { numRuns: 300 } }
  )
})
