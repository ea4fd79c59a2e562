/**
 * fast-check arbitraries of OpenAI Chat and Anthropic Messages requests, responses and streams,
 * restricted to what survives a cross-format round trip (see the normalisations in Translate.ts).
 */
import type * as Anthropic from "@switchyard-ts/protocol/AnthropicMessages"
import type * as N from "@switchyard-ts/protocol/Neutral"
import type * as OpenAi from "@switchyard-ts/protocol/OpenAiChat"
import * as FastCheck from "effect/FastCheck"

type Arb<A> = FastCheck.Arbitrary<A>

export const text: Arb<string> = FastCheck.string({ minLength: 1, maxLength: 12 })
export const identifier: Arb<string> = FastCheck.stringMatching(/^[a-z][a-z0-9_]{0,7}$/)
export const toolId: Arb<string> = identifier.map((s) => `call_${s}`)
/**
 * A JSON object as it arrives on the wire: `jsonValue` may generate `-0`, which JSON text cannot
 * carry (it reads back as `0`), so each value is the one its JSON text parses to.
 */
export const jsonObject: Arb<{ readonly [key: string]: unknown }> = FastCheck.dictionary(
  identifier,
  FastCheck.jsonValue({ maxDepth: 2 }).map((value): unknown => JSON.parse(JSON.stringify(value))),
  { maxKeys: 3 }
)
const base64: Arb<string> = FastCheck.base64String({ minLength: 4, maxLength: 16 })
const mediaType: Arb<string> = FastCheck.constantFrom("image/png", "image/jpeg", "image/webp")
const httpUrl: Arb<string> = identifier.map((s) => `https://example.com/${s}.png`)
const fraction: Arb<number> = FastCheck.integer({ min: 0, max: 100 }).map((n) => n / 100)
const toolName: Arb<string> = identifier
/** A thinking signature (opaque base64 in practice; never empty). */
export const signature: Arb<string> = FastCheck.base64String({ minLength: 4, maxLength: 24 })
/** Thinking text of a signed block: may be empty (the signature alone is then the block). */
const signedThinkingText: Arb<string> = FastCheck.oneof(FastCheck.constant(""), text)

// ---------------------------------------------------------------------------------------------
// thinking

/**
 * A thinking block as the OpenAI `thinking_blocks` extension writes it, which is also how the
 * tests compare thinking across formats: `signature` absent when unsigned.
 */
export type ThinkingPiece =
  | { readonly type: "thinking"; readonly thinking: string; readonly signature?: string }
  | { readonly type: "redacted_thinking"; readonly data: string }

const signedThinking: Arb<ThinkingPiece> = FastCheck.record({ thinking: signedThinkingText, signature })
  .map(({ signature, thinking }) => ({ type: "thinking", thinking, signature }))
const redactedThinking: Arb<ThinkingPiece> = FastCheck.base64String({ minLength: 4, maxLength: 24 })
  .map((data) => ({ type: "redacted_thinking", data }))

/** Signed and redacted thinking, as Anthropic produces it (what survives every translation). */
export const anthropicThinking: Arb<ReadonlyArray<ThinkingPiece>> = FastCheck.array(
  FastCheck.oneof(signedThinking, redactedThinking),
  { maxLength: 3 }
)

/**
 * Thinking of an OpenAI completion: signed and redacted blocks, then possibly one unsigned block
 * (plain `reasoning_content` from a DeepSeek-style upstream). An unsigned block is only ever last:
 * an OpenAI stream has no way to end one, so unsigned text merges with the thinking after it.
 */
export const completionThinking: Arb<ReadonlyArray<ThinkingPiece>> = FastCheck.record({
  blocks: anthropicThinking,
  tail: FastCheck.option(text, { nil: undefined })
}).map((
  { blocks, tail }
) => [...blocks, ...(tail !== undefined ? [{ type: "thinking" as const, thinking: tail }] : [])])

/** The thinking text of `pieces`, joined (what `reasoning_content` carries). */
export const thinkingText = (pieces: ReadonlyArray<ThinkingPiece>): string =>
  pieces.flatMap((p) => p.type === "thinking" ? [p.thinking] : []).join("")

/**
 * The OpenAI assistant-message fields of `pieces`: `reasoning_content` (joined text, when not
 * empty) and `thinking_blocks` when a block is signed or redacted.
 */
export const openAiThinkingFields = (pieces: ReadonlyArray<ThinkingPiece>): {
  readonly reasoning_content?: string
  readonly thinking_blocks?: ReadonlyArray<OpenAi.ThinkingBlock>
} => {
  const joined = thinkingText(pieces)
  const lossless = pieces.some((p) => p.type === "redacted_thinking" || p.signature !== undefined)
  return {
    ...(joined !== "" ? { reasoning_content: joined } : {}),
    ...(lossless ? { thinking_blocks: pieces } : {})
  }
}

/** `pieces` as Anthropic content blocks (an unsigned block gets `signature: ""`, as in responses). */
export const anthropicThinkingBlocks = (
  pieces: ReadonlyArray<ThinkingPiece>
): ReadonlyArray<typeof Anthropic.ResponseThinkingBlock.Type | typeof Anthropic.RedactedThinkingBlock.Type> =>
  pieces.map((p) =>
    p.type === "thinking"
      ? { type: "thinking", thinking: p.thinking, signature: p.signature ?? "" }
      : { type: "redacted_thinking", data: p.data }
  )

/**
 * The thinking of an OpenAI assistant message as a client reads it: the thinking and
 * redacted_thinking entries of `thinking_blocks` when there are any, else `reasoning_content`.
 */
export const messageThinking = (message: object): ReadonlyArray<ThinkingPiece> => {
  const blocks: unknown = "thinking_blocks" in message ? message.thinking_blocks : undefined
  const out: Array<ThinkingPiece> = []
  for (const block of Array.isArray(blocks) ? blocks : []) {
    const piece = thinkingPieceOf(block)
    if (piece !== undefined) out.push(piece)
  }
  if (out.length > 0) return out
  const reasoning: unknown = "reasoning_content" in message ? message.reasoning_content : undefined
  return typeof reasoning === "string" && reasoning !== "" ? [{ type: "thinking", thinking: reasoning }] : []
}

const thinkingPieceOf = (block: unknown): ThinkingPiece | undefined => {
  if (typeof block !== "object" || block === null || !("type" in block)) return undefined
  if (block.type === "redacted_thinking" && "data" in block && typeof block.data === "string") {
    return { type: "redacted_thinking", data: block.data }
  }
  if (block.type === "thinking" && "thinking" in block && typeof block.thinking === "string") {
    const sig: unknown = "signature" in block ? block.signature : undefined
    return {
      type: "thinking",
      thinking: block.thinking,
      ...(typeof sig === "string" && sig !== "" ? { signature: sig } : {})
    }
  }
  return undefined
}

// ---------------------------------------------------------------------------------------------
// OpenAI requests

const openAiTextPart: Arb<typeof OpenAi.TextPart.Type> = text.map((t) => ({ type: "text", text: t }))
const openAiTextContent: Arb<string | ReadonlyArray<typeof OpenAi.TextPart.Type>> = FastCheck.oneof(
  text,
  FastCheck.array(openAiTextPart, { minLength: 1, maxLength: 3 })
)
const openAiUserPart: Arb<OpenAi.ContentPart> = FastCheck.oneof(
  openAiTextPart,
  httpUrl.map((url) => ({ type: "image_url", image_url: { url } })),
  FastCheck.tuple(mediaType, base64).map(([mt, data]) => ({
    type: "image_url",
    image_url: { url: `data:${mt};base64,${data}` }
  }))
)
const openAiToolCall: Arb<OpenAi.ToolCall> = FastCheck.record({ id: toolId, name: toolName, args: jsonObject }).map((
  { args, id, name }
) => ({ id, type: "function", function: { name, arguments: JSON.stringify(args) } }))

const openAiMessage: Arb<OpenAi.Message> = FastCheck.oneof(
  openAiTextContent.map((content): OpenAi.Message => ({ role: "system", content })),
  openAiTextContent.map((content): OpenAi.Message => ({ role: "developer", content })),
  FastCheck.oneof(text, FastCheck.array(openAiUserPart, { minLength: 1, maxLength: 3 })).map((
    content
  ): OpenAi.Message => ({
    role: "user",
    content
  })),
  FastCheck.record({
    content: FastCheck.option(openAiTextContent, { nil: null }),
    calls: FastCheck.array(openAiToolCall, { maxLength: 3 }),
    thinking: anthropicThinking,
    // thinking_blocks win over reasoning_content: it may be the joined text, absent or unrelated
    reasoning: FastCheck.oneof(FastCheck.constant("joined" as const), FastCheck.constant(undefined), text)
  }).map(({ calls, content, reasoning, thinking }): OpenAi.Message => ({
    role: "assistant",
    content: content === null && calls.length === 0 ? "" : content,
    ...(calls.length > 0 ? { tool_calls: calls } : {}),
    ...(thinking.length > 0 ? { thinking_blocks: thinking } : {}),
    ...(thinking.length === 0 || reasoning === undefined
      ? {}
      : { reasoning_content: reasoning === "joined" ? thinkingText(thinking) : reasoning })
  })),
  FastCheck.record({ id: toolId, content: openAiTextContent }).map(({ content, id }): OpenAi.Message => ({
    role: "tool",
    tool_call_id: id,
    content
  }))
)

const openAiTool: Arb<typeof OpenAi.Tool.Type> = FastCheck.record({
  name: toolName,
  description: FastCheck.option(text, { nil: undefined }),
  parameters: jsonObject.map((properties) => ({ type: "object", properties }))
}).map(({ description, name, parameters }) => ({
  type: "function",
  function: { name, parameters, ...(description !== undefined ? { description } : {}) }
}))

const openAiToolChoice: Arb<typeof OpenAi.ToolChoice.Type> = FastCheck.oneof(
  FastCheck.constantFrom("auto" as const, "required" as const, "none" as const),
  toolName.map((name) => ({ type: "function" as const, function: { name } }))
)

/**
 * An OpenAI Chat request with system / developer / user (text, URL and base64 `data:` images) /
 * assistant (signed and redacted `thinking_blocks` with or without a `reasoning_content`, text,
 * tool calls with JSON-object arguments) / tool messages, function tools, a tool
 * choice and the sampling fields that have a neutral slot, plus one vendor extension field.
 */
export const openAiRequest: Arb<OpenAi.ChatCompletionRequest> = FastCheck.record({
  model: identifier,
  messages: FastCheck.array(openAiMessage, { maxLength: 8 }),
  tools: FastCheck.array(openAiTool, { maxLength: 3 }),
  toolChoice: FastCheck.option(openAiToolChoice, { nil: undefined }),
  parallel: FastCheck.option(FastCheck.boolean(), { nil: undefined }),
  maxTokens: FastCheck.option(FastCheck.integer({ min: 1, max: 10_000 }), { nil: undefined }),
  temperature: FastCheck.option(fraction, { nil: undefined }),
  topP: FastCheck.option(fraction, { nil: undefined }),
  stop: FastCheck.option(FastCheck.oneof(text, FastCheck.array(text, { minLength: 1, maxLength: 3 })), {
    nil: undefined
  }),
  stream: FastCheck.boolean(),
  user: FastCheck.option(identifier, { nil: undefined }),
  vendor: FastCheck.option(jsonObject, { nil: undefined })
}).map((r) => ({
  model: r.model,
  messages: r.messages,
  stream: r.stream,
  ...(r.tools.length > 0 ? { tools: r.tools } : {}),
  ...(r.toolChoice !== undefined ? { tool_choice: r.toolChoice } : {}),
  // Anthropic carries the parallel flag on tool_choice, and not on "none".
  ...(r.parallel !== undefined && r.toolChoice !== undefined && r.toolChoice !== "none"
    ? { parallel_tool_calls: r.parallel }
    : {}),
  ...(r.maxTokens !== undefined ? { max_completion_tokens: r.maxTokens } : {}),
  ...(r.temperature !== undefined ? { temperature: r.temperature } : {}),
  ...(r.topP !== undefined ? { top_p: r.topP } : {}),
  ...(r.stop !== undefined ? { stop: r.stop } : {}),
  ...(r.user !== undefined ? { user: r.user } : {}),
  ...(r.vendor !== undefined ? { chat_template_kwargs: r.vendor } : {})
}))

// ---------------------------------------------------------------------------------------------
// Anthropic requests

const anthropicText: Arb<Anthropic.TextBlock> = text.map((t) => ({ type: "text", text: t }))
const anthropicImage: Arb<Anthropic.ImageBlock> = FastCheck.oneof(
  httpUrl.map((url): Anthropic.ImageBlock => ({ type: "image", source: { type: "url", url } })),
  FastCheck.tuple(mediaType, base64).map(([media_type, data]): Anthropic.ImageBlock => ({
    type: "image",
    source: { type: "base64", media_type, data }
  }))
)
const anthropicToolReference: Arb<Anthropic.ToolReferenceBlock> = toolName.map((name) => ({
  type: "tool_reference",
  tool_name: name
}))
/** A tool result; with `anthropicOnly`, possibly an error and possibly holding tool references. */
const anthropicToolResult = (options: AnthropicOptions): Arb<Anthropic.ToolResultBlock> =>
  FastCheck.record({
    id: toolId,
    content: FastCheck.option(
      FastCheck.oneof(
        text,
        FastCheck.array(
          options.anthropicOnly ? FastCheck.oneof(anthropicText, anthropicToolReference) : anthropicText,
          { minLength: 1, maxLength: 3 }
        )
      ),
      { nil: undefined }
    ),
    isError: options.anthropicOnly ? FastCheck.boolean() : FastCheck.constant(false)
  }).map(({ content, id, isError }): Anthropic.ToolResultBlock => ({
    type: "tool_result",
    tool_use_id: id,
    ...(content !== undefined ? { content } : {}),
    ...(isError ? { is_error: true } : {})
  }))
const anthropicToolUse: Arb<Anthropic.ContentBlock> = FastCheck.record({
  id: toolId,
  name: toolName,
  input: jsonObject
})
  .map(({ id, input, name }): Anthropic.ContentBlock => ({ type: "tool_use", id, name, input }))

/** A `{"role": "system"}` entry of `messages`, as Claude Code sends it: a string or text blocks. */
export const anthropicSystemMessage: Arb<Anthropic.SystemMessage> = FastCheck.oneof(
  text,
  FastCheck.array(anthropicText, { minLength: 1, maxLength: 2 })
).map((content) => ({ role: "system" as const, content }))

/**
 * `anthropicOnly`: the request may hold what only Anthropic carries (`is_error`, `tool_reference`
 * items), so it suits only the Anthropic-only round trip.
 */
export interface AnthropicOptions {
  readonly anthropicOnly: boolean
}

const anthropicMessage = (options: AnthropicOptions): Arb<Anthropic.RequestMessage> =>
  FastCheck.oneof(
    anthropicSystemMessage,
    FastCheck.oneof(
      text,
      FastCheck.array(FastCheck.oneof(anthropicText, anthropicImage), { minLength: 1, maxLength: 3 })
    )
      .map((content) => ({ role: "user" as const, content })),
    FastCheck.array(anthropicToolResult(options), { minLength: 1, maxLength: 3 }).map((content) => ({
      role: "user" as const,
      content
    })),
    FastCheck.record({
      thinking: anthropicThinking,
      texts: FastCheck.array(anthropicText, { maxLength: 2 }),
      uses: FastCheck.array(anthropicToolUse, { maxLength: 3 })
    }).map(({ texts, thinking, uses }) => ({
      role: "assistant" as const,
      content: [...anthropicThinkingBlocks(thinking), ...texts, ...uses]
    })),
    text.map((content) => ({ role: "assistant" as const, content }))
  )

const anthropicToolChoice: Arb<Anthropic.ToolChoice> = FastCheck.oneof(
  FastCheck.record({
    type: FastCheck.constantFrom("auto" as const, "any" as const),
    disable: FastCheck.option(FastCheck.boolean(), { nil: undefined })
  })
    .map(({ disable, type }) => ({ type, ...(disable !== undefined ? { disable_parallel_tool_use: disable } : {}) })),
  FastCheck.constant({ type: "none" as const }),
  toolName.map((name) => ({ type: "tool" as const, name }))
)

/**
 * An Anthropic Messages request: system as a string or text blocks, system messages anywhere in
 * `messages` (string or text blocks), user messages of text and
 * images (URL, base64) or of tool results only, assistant messages of signed / redacted thinking,
 * then text, then tool use, custom
 * tools, a tool choice, sampling fields and one vendor extension field.
 */
export const anthropicRequest = (options: AnthropicOptions): Arb<Anthropic.MessagesRequest> =>
  FastCheck.record({
    model: identifier,
    system: FastCheck.option(FastCheck.oneof(text, FastCheck.array(anthropicText, { minLength: 1, maxLength: 2 })), {
      nil: undefined
    }),
    messages: FastCheck.array(anthropicMessage(options), { maxLength: 8 }),
    maxTokens: FastCheck.integer({ min: 1, max: 10_000 }),
    tools: FastCheck.array(
      FastCheck.record({ name: toolName, description: FastCheck.option(text, { nil: undefined }), props: jsonObject }),
      { maxLength: 3 }
    ),
    toolChoice: FastCheck.option(anthropicToolChoice, { nil: undefined }),
    temperature: FastCheck.option(fraction, { nil: undefined }),
    topP: FastCheck.option(fraction, { nil: undefined }),
    stop: FastCheck.option(FastCheck.array(text, { minLength: 1, maxLength: 3 }), { nil: undefined }),
    stream: FastCheck.boolean(),
    user: FastCheck.option(identifier, { nil: undefined }),
    vendor: FastCheck.option(jsonObject, { nil: undefined })
  }).map((r) => ({
    model: r.model,
    messages: r.messages,
    max_tokens: r.maxTokens,
    ...(r.system !== undefined ? { system: r.system } : {}),
    ...(r.tools.length > 0
      ? {
        tools: r.tools.map((t) => ({
          name: t.name,
          input_schema: { type: "object", properties: t.props },
          ...(t.description !== undefined ? { description: t.description } : {})
        }))
      }
      : {}),
    ...(r.toolChoice !== undefined ? { tool_choice: r.toolChoice } : {}),
    ...(r.temperature !== undefined ? { temperature: r.temperature } : {}),
    ...(r.topP !== undefined ? { top_p: r.topP } : {}),
    ...(r.stop !== undefined ? { stop_sequences: r.stop } : {}),
    ...(r.stream ? { stream: true } : {}),
    ...(r.user !== undefined ? { metadata: { user_id: r.user } } : {}),
    ...(r.vendor !== undefined ? { vendor_extension: r.vendor } : {})
  }))

// ---------------------------------------------------------------------------------------------
// responses and streams

/** Anthropic-style counters: `input` excludes the cache reads and writes. */
export interface Counts {
  readonly input: number
  readonly output: number
  readonly cacheRead: number | undefined
  readonly cacheCreation: number | undefined
}
export const counts: Arb<Counts> = FastCheck.record({
  input: FastCheck.nat(5000),
  output: FastCheck.nat(5000),
  cacheRead: FastCheck.option(FastCheck.nat(5000), { nil: undefined }),
  cacheCreation: FastCheck.option(FastCheck.nat(5000), { nil: undefined })
})

export const openAiUsage = (c: Counts): OpenAi.Usage => {
  const prompt = c.input + (c.cacheRead ?? 0) + (c.cacheCreation ?? 0)
  return {
    prompt_tokens: prompt,
    completion_tokens: c.output,
    total_tokens: prompt + c.output,
    ...(c.cacheRead !== undefined || c.cacheCreation !== undefined
      ? {
        prompt_tokens_details: {
          ...(c.cacheRead !== undefined ? { cached_tokens: c.cacheRead } : {}),
          ...(c.cacheCreation !== undefined ? { cache_creation_tokens: c.cacheCreation } : {})
        }
      }
      : {})
  }
}

export const anthropicUsage = (c: Counts): Anthropic.Usage => ({
  input_tokens: c.input,
  output_tokens: c.output,
  ...(c.cacheRead !== undefined ? { cache_read_input_tokens: c.cacheRead } : {}),
  ...(c.cacheCreation !== undefined ? { cache_creation_input_tokens: c.cacheCreation } : {})
})

/** The parts of a completion that a stream or a buffered response carries. */
export interface Completion {
  readonly thinking: ReadonlyArray<ThinkingPiece>
  readonly text: string
  readonly toolCalls: ReadonlyArray<{ readonly id: string; readonly name: string; readonly arguments: string }>
  readonly finishReason: "stop" | "length" | "tool_calls" | "content_filter"
  readonly usage: Counts
}

export const completion: Arb<Completion> = FastCheck.record({
  thinking: completionThinking,
  text: FastCheck.oneof(FastCheck.constant(""), FastCheck.string({ minLength: 1, maxLength: 40 })),
  toolCalls: FastCheck.uniqueArray(
    FastCheck.record({ id: toolId, name: toolName, input: jsonObject }).map(({ id, input, name }) => ({
      id,
      name,
      arguments: JSON.stringify(input)
    })),
    { maxLength: 3, selector: (call) => call.id }
  ),
  finishReason: FastCheck.constantFrom(
    "stop" as const,
    "length" as const,
    "tool_calls" as const,
    "content_filter" as const
  ),
  usage: counts
})

/** The buffered chat completion of `c` (id `chatcmpl-1`, model `up`), with `usage` when given. */
export const chatCompletion = (c: Completion, usage?: OpenAi.Usage): OpenAi.ChatCompletion => ({
  id: "chatcmpl-1",
  model: "up",
  choices: [{
    index: 0,
    finish_reason: c.finishReason,
    message: {
      role: "assistant",
      content: c.text,
      ...openAiThinkingFields(c.thinking),
      ...(c.toolCalls.length > 0
        ? {
          tool_calls: c.toolCalls.map((t) => ({
            id: t.id,
            type: "function" as const,
            function: { name: t.name, arguments: t.arguments }
          }))
        }
        : {})
    }
  }],
  ...(usage !== undefined ? { usage } : {})
})

/** Splits `s` into 1..4 consecutive non-empty pieces (or none for `""`). */
export const pieces = (s: string): Arb<ReadonlyArray<string>> =>
  s.length === 0
    ? FastCheck.constant([])
    : FastCheck.uniqueArray(FastCheck.integer({ min: 1, max: Math.max(1, s.length - 1) }), { maxLength: 3 }).map(
      (cuts) => {
        const points = [0, ...cuts.filter((c) => c < s.length).sort((a, b) => a - b), s.length]
        const out: Array<string> = []
        for (let i = 1; i < points.length; i++) out.push(s.slice(points[i - 1] ?? 0, points[i] ?? s.length))
        return out
      }
    )

/** One piece of an OpenAI delta, in the order a provider emits them. */
export type DeltaPiece =
  | { readonly kind: "reasoning"; readonly text: string }
  | { readonly kind: "thinking_block"; readonly block: OpenAi.ThinkingBlock }
  | { readonly kind: "content"; readonly text: string }
  | { readonly kind: "tool"; readonly fragment: typeof OpenAi.ToolCallDelta.Type }

/** How the stream ends: usage in its own last chunk (include_usage), in the finish chunk, or never. */
export type UsagePlacement = "own-chunk" | "finish-chunk" | "absent"

/**
 * An OpenAI chunk stream of `c`: a role chunk, thinking (each block's text as `reasoning_content`
 * pieces, then its signature as a `thinking_blocks` entry; a redacted block as one entry) /
 * content / tool-call pieces grouped into chunks at random boundaries, a finish chunk and the
 * usage as `placement` says. A `thinking_blocks` entry never shares a chunk with
 * `reasoning_content` (the translator then reads only the entries).
 */
export const openAiChunks = (c: Completion): Arb<ReadonlyArray<OpenAi.ChatCompletionChunk>> =>
  FastCheck.record({
    reasoning: FastCheck.tuple(...c.thinking.map((p) => pieces(p.type === "thinking" ? p.thinking : ""))),
    text: pieces(c.text),
    args: FastCheck.tuple(...c.toolCalls.map((call) => pieces(call.arguments))),
    placement: FastCheck.constantFrom<UsagePlacement>("own-chunk", "finish-chunk", "absent"),
    finishWithContent: FastCheck.boolean(),
    seed: FastCheck.array(FastCheck.boolean(), { minLength: 64, maxLength: 64 })
  }).map(({ args, finishWithContent, placement, reasoning, seed, text }) => {
    const all: Array<DeltaPiece> = []
    c.thinking.forEach((p, index) => {
      if (p.type === "redacted_thinking") {
        all.push({ kind: "thinking_block", block: p })
        return
      }
      for (const t of reasoning[index] ?? []) all.push({ kind: "reasoning", text: t })
      if (p.signature !== undefined) {
        all.push({ kind: "thinking_block", block: { type: "thinking", thinking: "", signature: p.signature } })
      }
    })
    for (const t of text) all.push({ kind: "content", text: t })
    c.toolCalls.forEach((call, index) => {
      all.push({
        kind: "tool",
        fragment: { index, id: call.id, type: "function", function: { name: call.name, arguments: "" } }
      })
      for (const piece of args[index] ?? []) {
        all.push({ kind: "tool", fragment: { index, function: { arguments: piece } } })
      }
    })
    // Group consecutive pieces: seed[i] says whether piece i starts a new chunk.
    const groups: Array<Array<DeltaPiece>> = []
    const clash = (group: ReadonlyArray<DeltaPiece>, piece: DeltaPiece) =>
      (piece.kind === "reasoning" && group.some((p) => p.kind === "thinking_block")) ||
      (piece.kind === "thinking_block" && group.some((p) => p.kind === "reasoning"))
    all.forEach((piece, i) => {
      const current = groups[groups.length - 1]
      if (current === undefined || seed[i % seed.length] === true || clash(current, piece)) groups.push([piece])
      else current.push(piece)
    })
    const usage = openAiUsage(c.usage)
    const base = { id: "chatcmpl-1", object: "chat.completion.chunk" as const, created: 1, model: "up" }
    const chunk = (
      delta: OpenAi.ChatCompletionChunk["choices"][number]["delta"],
      finish: string | null
    ): OpenAi.ChatCompletionChunk => ({ ...base, choices: [{ index: 0, delta, finish_reason: finish }] })
    const chunks: Array<OpenAi.ChatCompletionChunk> = [chunk({ role: "assistant", content: "" }, null)]
    groups.forEach((group, i) => {
      const reasoningText = group.flatMap((p) => p.kind === "reasoning" ? [p.text] : []).join("")
      const thinkingBlocks = group.flatMap((p) => p.kind === "thinking_block" ? [p.block] : [])
      const contentText = group.flatMap((p) => p.kind === "content" ? [p.text] : []).join("")
      const toolCalls = group.flatMap((p) => p.kind === "tool" ? [p.fragment] : [])
      const last = i === groups.length - 1
      chunks.push(chunk({
        ...(reasoningText !== "" ? { reasoning_content: reasoningText } : {}),
        ...(thinkingBlocks.length > 0 ? { thinking_blocks: thinkingBlocks } : {}),
        ...(contentText !== "" ? { content: contentText } : {}),
        ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {})
      }, last && finishWithContent ? c.finishReason : null))
    })
    const finishedAlready = finishWithContent && groups.length > 0
    if (!finishedAlready) chunks.push(chunk({}, c.finishReason))
    if (placement === "finish-chunk") {
      const finish = chunks.pop()
      if (finish !== undefined) chunks.push({ ...finish, usage })
    }
    if (placement === "own-chunk") chunks.push({ ...base, choices: [], usage })
    return chunks
  })

/** Aggregates OpenAI chunks the way a client does. */
export interface Aggregate {
  /** The `reasoning_content` deltas joined. */
  readonly reasoning: string
  /**
   * The thinking blocks: `reasoning_content` text (or a `thinking_blocks` thinking entry) extends
   * the last thinking block while it is unsigned, else starts one; a signature completes it; a
   * redacted entry is a block of its own. A delta with thinking or redacted entries is read from
   * them alone.
   */
  readonly thinking: ReadonlyArray<ThinkingPiece>
  readonly text: string
  readonly toolCalls: ReadonlyArray<{ readonly id: string; readonly name: string; readonly arguments: string }>
  readonly finishReason: string | null
  readonly usage: OpenAi.Usage | null
}

export const aggregate = (chunks: ReadonlyArray<OpenAi.ChatCompletionChunk>): Aggregate => {
  let reasoning = ""
  const thinking: Array<ThinkingPiece> = []
  const addThinking = (t: string, sig: string | undefined) => {
    if (t === "" && sig === undefined) return
    const last = thinking[thinking.length - 1]
    if (last !== undefined && last.type === "thinking" && last.signature === undefined) {
      thinking[thinking.length - 1] = {
        type: "thinking",
        thinking: last.thinking + t,
        ...(sig !== undefined ? { signature: sig } : {})
      }
    } else thinking.push({ type: "thinking", thinking: t, ...(sig !== undefined ? { signature: sig } : {}) })
  }
  let content = ""
  let finishReason: string | null = null
  let usage: OpenAi.Usage | null = null
  const calls = new Map<number, { id: string; name: string; arguments: string }>()
  for (const chunk of chunks) {
    if (chunk.usage !== undefined && chunk.usage !== null) usage = chunk.usage
    for (const choice of chunk.choices) {
      const r = choice.delta.reasoning_content
      if (typeof r === "string") reasoning += r
      const entries = (choice.delta.thinking_blocks ?? []).flatMap((b) => {
        const piece = thinkingPieceOf(b)
        return piece !== undefined ? [piece] : []
      })
      for (const entry of entries) {
        if (entry.type === "redacted_thinking") thinking.push(entry)
        else addThinking(entry.thinking, entry.signature)
      }
      if (entries.length === 0 && typeof r === "string") addThinking(r, undefined)
      content += choice.delta.content ?? ""
      for (const fragment of choice.delta.tool_calls ?? []) {
        const call = calls.get(fragment.index) ?? { id: "", name: "", arguments: "" }
        calls.set(fragment.index, {
          id: call.id + (fragment.id ?? ""),
          name: call.name + (fragment.function?.name ?? ""),
          arguments: call.arguments + (fragment.function?.arguments ?? "")
        })
      }
      if (choice.finish_reason !== undefined && choice.finish_reason !== null) finishReason = choice.finish_reason
    }
  }
  return {
    reasoning,
    thinking,
    text: content,
    toolCalls: [...calls.entries()].sort(([a], [b]) => a - b).map(([, call]) => call),
    finishReason,
    usage
  }
}

/**
 * Checks that `events` is a well-formed Anthropic stream and returns the problems found: one
 * `message_start` first; content blocks started at indices 0, 1, 2…, each stopped before the next
 * starts, deltas only for the open block; `message_delta` after every block is closed, then
 * `message_stop` last.
 */
export const anthropicStreamProblems = (events: ReadonlyArray<Anthropic.StreamEvent>): ReadonlyArray<string> => {
  const problems: Array<string> = []
  let open: number | undefined
  let next = 0
  let sawDelta = false
  events.forEach((event, i) => {
    if (i === 0 && event.type !== "message_start") problems.push("first event is not message_start")
    if (i > 0 && event.type === "message_start") problems.push(`message_start at ${i}`)
    if (sawDelta && event.type !== "message_stop") problems.push(`${event.type} after message_delta`)
    switch (event.type) {
      case "content_block_start":
        if (open !== undefined) problems.push(`block ${event.index} starts while ${open} is open`)
        if (event.index !== next) problems.push(`block index ${event.index}, expected ${next}`)
        open = event.index
        next = event.index + 1
        break
      case "content_block_delta":
        if (open !== event.index) problems.push(`delta for ${event.index} while ${String(open)} is open`)
        break
      case "content_block_stop":
        if (open !== event.index) problems.push(`stop for ${event.index} while ${String(open)} is open`)
        open = undefined
        break
      case "message_delta":
        if (open !== undefined) problems.push(`message_delta while ${open} is open`)
        if (sawDelta) problems.push("second message_delta")
        sawDelta = true
        break
      case "message_stop":
        if (!sawDelta) problems.push("message_stop without message_delta")
        if (i !== events.length - 1) problems.push("message_stop is not last")
        break
      default:
        break
    }
  })
  if (events[events.length - 1]?.type !== "message_stop") problems.push("last event is not message_stop")
  return problems
}

/** Removes the verbatim OpenAI `arguments` of every ToolUse (they compare as parsed `input`). */
export const withoutRawArguments = (request: N.NeutralRequest): N.NeutralRequest => ({
  ...request,
  messages: request.messages.map((message): N.ConversationEntry =>
    message.role === "system" ? message : {
      ...message,
      blocks: message.blocks.map((block) => {
        if (block._tag !== "ToolUse") return block
        const { arguments: _arguments, ...rest } = block
        return rest
      })
    }
  )
})

const isToolResults = (message: N.ConversationEntry | undefined): message is N.NeutralMessage =>
  message !== undefined && message.role === "user" && message.blocks.length > 0 &&
  message.blocks.every((block) => block._tag === "ToolResult")

/**
 * The neutral form after a trip through Anthropic: positioned system messages moved to the end of
 * the instructions, and the tool-result-only user messages they separated merged.
 */
export const systemMessagesMoved = (request: N.NeutralRequest): N.NeutralRequest => {
  const moved: Array<N.Text> = []
  const messages: Array<N.NeutralMessage> = []
  for (const message of request.messages) {
    if (message.role === "system") {
      moved.push(...message.blocks)
      continue
    }
    const last = messages[messages.length - 1]
    if (isToolResults(message) && isToolResults(last)) {
      messages[messages.length - 1] = { role: "user", blocks: [...last.blocks, ...message.blocks] }
    } else messages.push(message)
  }
  return { ...request, instructions: [...request.instructions, ...moved], messages }
}

const joinedText = (texts: ReadonlyArray<N.Text>): ReadonlyArray<N.Text> => {
  const joined = texts.map((t) => t.text).join("\n\n")
  return joined === "" ? [] : [{ _tag: "Text", text: joined }]
}

/**
 * The neutral form after `toOpenAiRequest` and back, for texts without billing headers: the
 * instructions as one text (their texts joined by a blank line), each positioned system message's
 * texts likewise.
 */
export const systemTextsJoined = (request: N.NeutralRequest): N.NeutralRequest => ({
  ...request,
  instructions: joinedText(request.instructions),
  messages: request.messages.map((message): N.ConversationEntry =>
    message.role === "system" ? { role: "system", blocks: joinedText(message.blocks) } : message
  )
})

/**
 * The neutral form after a trip through OpenAI: positioned system messages before the first turn
 * read back as instructions.
 */
export const leadingSystemMessagesAsInstructions = (request: N.NeutralRequest): N.NeutralRequest => {
  const first = request.messages.findIndex((message) => message.role !== "system")
  const leading = first < 0 ? request.messages : request.messages.slice(0, first)
  const texts = leading.flatMap((message) => message.role === "system" ? message.blocks : [])
  return {
    ...request,
    instructions: [...request.instructions, ...texts],
    messages: request.messages.slice(leading.length)
  }
}

/** A content block of an aggregated Anthropic stream (tool input left as the joined JSON text). */
export type AnthropicStreamBlock =
  | { readonly type: "text"; readonly text: string }
  | { readonly type: "thinking"; readonly thinking: string; readonly signature: string }
  | { readonly type: "redacted_thinking"; readonly data: string }
  | { readonly type: "tool_use"; readonly id: string; readonly name: string; readonly json: string }
  | { readonly type: "other" }

/** Aggregates Anthropic stream events the way a client does: block starts, then their deltas. */
export const anthropicContent = (events: ReadonlyArray<Anthropic.StreamEvent>): ReadonlyArray<AnthropicStreamBlock> => {
  const blocks = new Map<number, AnthropicStreamBlock>()
  for (const event of events) {
    if (event.type === "content_block_start") {
      const b = event.content_block
      blocks.set(
        event.index,
        b.type === "text" && "text" in b
          ? { type: "text", text: b.text }
          : b.type === "thinking" && "thinking" in b
          ? { type: "thinking", thinking: b.thinking, signature: b.signature ?? "" }
          : b.type === "redacted_thinking" && "data" in b
          ? { type: "redacted_thinking", data: b.data }
          : b.type === "tool_use" && "id" in b
          ? { type: "tool_use", id: b.id, name: b.name, json: "" }
          : { type: "other" }
      )
    } else if (event.type === "content_block_delta") {
      const b = blocks.get(event.index)
      const d = event.delta
      if (b?.type === "text" && d.type === "text_delta" && "text" in d) {
        blocks.set(event.index, { ...b, text: b.text + d.text })
      }
      if (b?.type === "thinking" && d.type === "thinking_delta" && "thinking" in d) {
        blocks.set(event.index, { ...b, thinking: b.thinking + d.thinking })
      }
      if (b?.type === "thinking" && d.type === "signature_delta" && "signature" in d) {
        blocks.set(event.index, { ...b, signature: b.signature + d.signature })
      }
      if (b?.type === "tool_use" && d.type === "input_json_delta" && "partial_json" in d) {
        blocks.set(event.index, { ...b, json: b.json + d.partial_json })
      }
    }
  }
  return [...blocks.entries()].sort(([a], [b]) => a - b).map(([, block]) => block)
}
