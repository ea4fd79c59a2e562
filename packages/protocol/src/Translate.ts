/**
 * Pure translations between OpenAI Chat, Anthropic Messages and the neutral form of
 * {@link module:Neutral}: requests (inbound → neutral → outbound), buffered responses, and two
 * stateful stream translators (one instance per stream).
 *
 * Translations that can lose meaning return `Either<A, TranslationError>`; the others are total
 * and their lossy spots are listed below.
 *
 * Normalisations (a translation followed by its inverse gives the normalised form, not the input):
 * - the OpenAI `system` / `developer` messages before the first other message become
 *   `instructions` in order, and `toOpenAiRequest` writes `instructions` as ONE leading `system`
 *   message; a later one is a positioned `SystemMessage`, written back as a `system` message at the
 *   same place (either way `developer` becomes `system` and `name` is lost); an Anthropic request's
 *   positioned system messages at the start of `messages` therefore come back from OpenAI as
 *   `instructions`;
 * - `toOpenAiRequest` writes each system message's content as ONE string, its texts joined with
 *   {@link systemTextSeparator}, so several text parts or Anthropic system blocks read back as one
 *   text; texts starting with {@link billingHeaderPrefix} are left out (see there);
 * - string content becomes one text block, `""` becomes no block (and no block becomes `""`);
 *   a single text block without a cache marker is written as a plain string;
 * - consecutive OpenAI `tool` messages (and consecutive Anthropic user messages made only of
 *   `tool_result` blocks) become one user message of `ToolResult` blocks; a
 *   user message that mixes tool results with other blocks is written to OpenAI as the `tool`
 *   messages followed by a `user` message with the rest (and to Anthropic with the tool results
 *   first, as the API requires);
 * - an OpenAI assistant message is `[thinking…, Text…, ToolUse…]`, its thinking read from the
 *   `thinking_blocks` extension (LiteLLM convention) when it holds a thinking or redacted_thinking
 *   entry, else from `reasoning_content` (one unsigned Thinking); an Anthropic assistant message
 *   that interleaves thinking, text and tool use is written to OpenAI in that order;
 * - neutral thinking is written to OpenAI as `reasoning_content` (all thinking text joined) plus,
 *   when a block is signed or redacted, `thinking_blocks` with every thinking block in order
 *   (`{"type": "thinking", "thinking", "signature"}` — no `signature` key when unsigned — and
 *   `{"type": "redacted_thinking", "data"}`); unsigned thinking alone is `reasoning_content` only,
 *   so consecutive unsigned blocks come back as one;
 * - `data:…;base64,…` image URLs become base64 images; base64 images are written to OpenAI as
 *   `data:` URLs;
 * - tool-call arguments compare as parsed JSON (Anthropic re-serialises them);
 * - OpenAI `stop` as a string becomes a one-element list; `max_completion_tokens` wins over
 *   `max_tokens` and is what `toOpenAiRequest` writes;
 * - `parallel_tool_calls` without `tool_choice` becomes Anthropic `tool_choice: {"type": "auto",
 *   "disable_parallel_tool_use": …}` (when there are tools), i.e. an explicit `auto` on the way back.
 *
 * Lossy mappings (documented, not failures):
 * - to Anthropic: positioned system messages (which the Messages API does not take) are moved to
 *   the end of `system`, in order; the turns around them then become adjacent (consecutive
 *   tool-result-only user messages read back as one);
 * - to OpenAI: a `user` (Anthropic `metadata.user_id`) longer than {@link maxOpenAiUserLength}
 *   characters is dropped (Claude Code sends a long JSON string there);
 * - to OpenAI: a `tool_reference` item of a tool result (a tool loaded by tool search) becomes the
 *   text {@link toolReferenceText}; Anthropic-only blocks (documents, server tool blocks), server tools and the
 *   Anthropic-only top-level fields in {@link anthropicOnlyFields} are dropped; `is_error` of a
 *   tool result is dropped; images inside a tool result move to a user message right after the
 *   `tool` messages (OpenAI tool messages hold text only);
 * - to Anthropic: thinking without a non-empty signature is dropped (the API rejects it; a
 *   message left empty gets `content: ""`, docs/http-api.md); `response_format` `json_object` and
 *   `text` are dropped, `json_schema` loses `name`, `strict` and its `minimum` / `maximum` /
 *   `minLength` / `maxLength` keywords (docs/http-api.md); the OpenAI-only fields in
 *   {@link openAiOnlyFields} are dropped; `max_tokens` defaults to {@link defaultAnthropicMaxTokens};
 * - both ways: `service_tier` and unknown vendor fields in `extra` are forwarded as they are;
 * - from OpenAI: `thinking_blocks` entries of other types (and thinking entries with neither text
 *   nor signature) are dropped, and so is `reasoning_content` when `thinking_blocks` hold a known
 *   entry (they carry the same text);
 * - streams: an OpenAI stream cannot end an unsigned thinking block, so unsigned thinking and the
 *   thinking after it become one block (Anthropic always signs, so only non-Anthropic reasoning
 *   is concerned); a chunk's `reasoning_content` is ignored when its `thinking_blocks` hold a
 *   known entry;
 * - OpenAI Responses reasoning (neutral `Reasoning`) is unsigned thinking for OpenAI (its summary
 *   texts joined with {@link reasoningSummarySeparator}) and for Anthropic responses (`signature:
 *   ""`, none when the summary is empty), and dropped from Anthropic requests; opaque blocks and
 *   tools of another format than Anthropic's never reach an Anthropic body (blocks fail, tools are
 *   dropped); the Responses-specific rules are in {@link module:TranslateResponses};
 * - responses: adjacent text blocks are joined on the way to OpenAI; only choice 0 is read;
 *   server tool blocks are dropped; thinking is carried as in requests; stop reasons map as in
 *   {@link toFinishReason} / {@link fromFinishReason}; ids are re-prefixed.
 */
import * as Either from "effect/Either"
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"
import * as Anthropic from "./AnthropicMessages.js"
import { TranslationError } from "./Errors.js"
import { clip } from "./Excerpt.js"
import type * as N from "./Neutral.js"
import * as OpenAi from "./OpenAiChat.js"

/** `max_tokens` sent to an Anthropic upstream when the request names no output limit. */
export const defaultAnthropicMaxTokens = 4096

/** Top-level OpenAI Chat fields with no Anthropic meaning: `toAnthropicRequest` drops them from `extra`. */
export const openAiOnlyFields: ReadonlyArray<string> = [
  "n",
  "stream_options",
  "presence_penalty",
  "frequency_penalty",
  "logit_bias",
  "logprobs",
  "top_logprobs",
  "seed",
  "reasoning_effort",
  "store",
  "metadata",
  "modalities",
  "audio",
  "prediction",
  "web_search_options",
  "verbosity",
  "prompt_cache_key",
  "prompt_cache_retention",
  "safety_identifier",
  "functions",
  "function_call",
  // docs/http-api.md: removed from every Anthropic body
  "context_management"
]

/** Top-level Anthropic fields with no OpenAI Chat meaning: `toOpenAiRequest` drops them from `extra`. */
export const anthropicOnlyFields: ReadonlyArray<string> = [
  "top_k",
  "thinking",
  "container",
  "mcp_servers",
  "context_management",
  "output_config"
]

// ---------------------------------------------------------------------------------------------
// helpers

type JsonObject = { readonly [key: string]: unknown }

const emptyObjectSchema: JsonObject = { type: "object", properties: {} }

const fail = (reason: string) => Either.left(new TranslationError({ reason }))

/** The value of `key` on `o` when present (reads provider extension fields kept by `decodeOptions`). */
const field = (o: object, key: string): unknown => Predicate.hasProperty(o, key) ? o[key] : undefined

const stringField = (o: object, key: string): string | undefined => {
  const value = field(o, key)
  return Predicate.isString(value) ? value : undefined
}

/**
 * Narrows a wire union by its `type`. Exact because every "other" member of our unions rejects
 * the known `type` values in its schema filter.
 */
const ofType = <B extends { readonly type: string }, T extends string>(
  block: B,
  type: T
): block is Extract<B, { readonly type: T }> => block.type === type

/** The fields of `body` not named in `mapped`, verbatim. */
const extraFields = (body: object, mapped: ReadonlyArray<string>): JsonObject => {
  const out: Record<string, unknown> = {}
  const entries: ReadonlyArray<readonly [string, unknown]> = Object.entries(body)
  for (const [key, value] of entries) {
    if (!mapped.includes(key)) out[key] = value
  }
  return out
}

const withCache = (cacheControl: unknown): { readonly cacheControl?: unknown } =>
  cacheControl === undefined || cacheControl === null ? {} : { cacheControl }

const textBlocks = (content: string): ReadonlyArray<N.Text> => content === "" ? [] : [{ _tag: "Text", text: content }]

const parseJson = Schema.decodeEither(Schema.parseJson())

/** OpenAI tool-call arguments: `""` means no arguments; unparsable text gives `undefined`. */
const parseArguments = (args: string): unknown =>
  args.trim() === "" ? {} : Either.getOrUndefined(parseJson(args))

const parseDataUrl = (url: string): N.ImageSource | undefined => {
  if (!url.startsWith("data:")) return undefined
  const comma = url.indexOf(",")
  if (comma < 0) return undefined
  const meta = url.slice(5, comma)
  if (!meta.endsWith(";base64")) return undefined
  const mediaType = meta.split(";")[0] ?? ""
  return mediaType === "" ? undefined : { kind: "base64", mediaType, data: url.slice(comma + 1) }
}

const imageUrl = (source: N.ImageSource): string =>
  source.kind === "url" ? source.url : `data:${source.mediaType};base64,${source.data}`

/** A neutral thinking block; an absent, `null` or empty signature is no signature. */
const neutralThinking = (text: string, signature: string | null | undefined): N.Thinking => ({
  _tag: "Thinking",
  text,
  ...(signature !== undefined && signature !== null && signature !== "" ? { signature } : {})
})

const isSigned = (block: N.Thinking): block is N.Thinking & { readonly signature: string } =>
  block.signature !== undefined && block.signature !== ""

const isOpenAiThinkingText = Schema.is(OpenAi.ThinkingTextBlock)
const isOpenAiRedactedThinking = Schema.is(OpenAi.RedactedThinkingBlock)

/**
 * Neutral thinking of an OpenAI assistant message or delta: its `thinking_blocks` when they hold
 * a thinking (with text or a signature) or redacted_thinking entry, else `reasoning_content` as one
 * unsigned block (none when empty).
 */
const openAiThinking = (
  blocks: ReadonlyArray<OpenAi.ThinkingBlock> | null | undefined,
  reasoning: string | null | undefined
): ReadonlyArray<N.Thinking | N.RedactedThinking> => {
  const out: Array<N.Thinking | N.RedactedThinking> = []
  for (const block of blocks ?? []) {
    if (isOpenAiThinkingText(block)) {
      const thinking = neutralThinking(block.thinking, block.signature)
      if (thinking.text !== "" || isSigned(thinking)) out.push(thinking)
    } else if (isOpenAiRedactedThinking(block)) out.push({ _tag: "RedactedThinking", data: block.data })
  }
  if (out.length > 0) return out
  return reasoning !== undefined && reasoning !== null && reasoning !== "" ? [{ _tag: "Thinking", text: reasoning }] : []
}

/**
 * The OpenAI fields of neutral thinking: `reasoning_content` (the thinking text joined, when not
 * empty) and, when a block is signed or redacted, `thinking_blocks` with every block in order.
 */
const toOpenAiThinking = (blocks: ReadonlyArray<N.Thinking | N.RedactedThinking>): {
  readonly reasoning_content?: string
  readonly thinking_blocks?: ReadonlyArray<OpenAi.ThinkingBlock>
} => {
  const text = blocks.flatMap((b) => b._tag === "Thinking" ? [b.text] : []).join("")
  const lossless = blocks.some((b) => b._tag === "RedactedThinking" || isSigned(b))
  return {
    ...(text !== "" ? { reasoning_content: text } : {}),
    ...(lossless
      ? {
        thinking_blocks: blocks.map((b): OpenAi.ThinkingBlock =>
          b._tag === "RedactedThinking"
            ? { type: "redacted_thinking", data: b.data }
            : { type: "thinking", thinking: b.text, ...(isSigned(b) ? { signature: b.signature } : {}) }
        )
      }
      : {})
  }
}

const isToolReference = Schema.is(Anthropic.ToolReferenceBlock)

/**
 * The text a Chat upstream reads in place of an Anthropic `tool_reference` (a deferred tool that a
 * tool search loaded): `Tool loaded: <tool name>`. The tool itself is among the request's tools.
 */
export const toolReferenceText = (toolName: string): string => `Tool loaded: ${toolName}`

/**
 * The start of the per-session text block Claude Code puts first in `system`
 * (`x-anthropic-billing-header: cc_version=…; cch=…;`). It is meant for Anthropic, and since it
 * changes with every session it would make every session's prompt differ from its first bytes and
 * defeat a Chat upstream's prefix cache: `toOpenAiRequest` leaves such texts out of system messages.
 */
export const billingHeaderPrefix = "x-anthropic-billing-header:"

/**
 * The longest `user` `toOpenAiRequest` writes, in characters (Unicode code points): OpenAI-compatible
 * providers cap end-user ids at 64 characters and reject longer ones; the anchor has no rule.
 */
export const maxOpenAiUserLength = 64

/** What `toOpenAiRequest` puts between the texts of one system message (a blank line). */
export const systemTextSeparator = "\n\n"

/**
 * The content of a system message written to OpenAI: its texts, minus the billing header ones,
 * joined with {@link systemTextSeparator}; `undefined` when every text was a billing header.
 */
const openAiSystemContent = (texts: ReadonlyArray<N.Text>): string | undefined => {
  const kept = texts.filter((t) => !t.text.startsWith(billingHeaderPrefix))
  return kept.length === 0 && texts.length > 0 ? undefined : kept.map((t) => t.text).join(systemTextSeparator)
}

/**
 * What joins the summary texts of an OpenAI Responses reasoning item when Chat or Messages read it
 * as thinking (a blank line).
 */
export const reasoningSummarySeparator = "\n\n"

/** `msg_…` ids stay; any other id gets the `msg_` prefix. */
export const anthropicMessageId = (id: string): string => id.startsWith("msg_") ? id : `msg_${id}`

/**
 * `chatcmpl…` ids stay; a `msg_` / `resp_` prefix is replaced by `chatcmpl_` (or just removed
 * when a `chatcmpl…` id follows it); any other id gets the `chatcmpl_` prefix; an empty id becomes
 * `chatcmpl_switchyard` (docs/http-api.md).
 */
export const openAiCompletionId = (id: string): string => {
  if (id === "") return "chatcmpl_switchyard"
  if (id.startsWith("chatcmpl")) return id
  for (const prefix of ["msg_", "resp_"]) {
    if (id.startsWith(prefix)) {
      const rest = id.slice(prefix.length)
      // undo anthropicMessageId: msg_chatcmpl-1 → chatcmpl-1
      return rest.startsWith("chatcmpl") ? rest : `chatcmpl_${rest}`
    }
  }
  return `chatcmpl_${id}`
}

// ---------------------------------------------------------------------------------------------
// OpenAI request → neutral

const openAiMappedFields: ReadonlyArray<string> = [
  "model",
  "messages",
  "tools",
  "tool_choice",
  "parallel_tool_calls",
  "response_format",
  "max_tokens",
  "max_completion_tokens",
  "temperature",
  "top_p",
  "stop",
  "stream",
  "user"
]

const openAiTextContent = (content: string | ReadonlyArray<typeof OpenAi.TextPart.Type>): ReadonlyArray<N.Text> =>
  Predicate.isString(content) ? textBlocks(content) : content.map((part) => ({ _tag: "Text", text: part.text }))

const openAiImage = (part: typeof OpenAi.ImagePart.Type): N.Image => ({
  _tag: "Image",
  source: parseDataUrl(part.image_url.url) ?? { kind: "url", url: part.image_url.url },
  ...(part.image_url.detail !== undefined ? { detail: part.image_url.detail } : {})
})

const openAiUserBlocks = (content: string | ReadonlyArray<OpenAi.ContentPart>): ReadonlyArray<N.Block> =>
  Predicate.isString(content) ? textBlocks(content) : content.map((part): N.Block => {
    if (ofType(part, "text")) return { _tag: "Text", text: part.text }
    if (ofType(part, "image_url")) return openAiImage(part)
    return { _tag: "Opaque", format: "openai_chat", value: part }
  })

const openAiAssistantBlocks = (
  message: typeof OpenAi.AssistantMessage.Type
): Either.Either<ReadonlyArray<N.Block>, TranslationError> => {
  if (message.function_call !== undefined && message.function_call !== null) {
    return fail("a deprecated assistant function_call cannot be translated; use tool_calls")
  }
  const blocks: Array<N.Block> = [...openAiThinking(message.thinking_blocks, stringField(message, "reasoning_content"))]
  const content = message.content
  if (Predicate.isString(content)) blocks.push(...textBlocks(content))
  else if (content !== undefined && content !== null) {
    for (const part of content) blocks.push({ _tag: "Text", text: part.type === "text" ? part.text : part.refusal })
  }
  if (message.refusal !== undefined && message.refusal !== null && message.refusal !== "") {
    blocks.push({ _tag: "Text", text: message.refusal })
  }
  for (const call of message.tool_calls ?? []) {
    if (call.type === "function") {
      blocks.push({
        _tag: "ToolUse",
        id: call.id,
        name: call.function.name,
        input: parseArguments(call.function.arguments),
        arguments: call.function.arguments
      })
    } else {
      blocks.push({ _tag: "Opaque", format: "openai_chat", value: call })
    }
  }
  return Either.right(blocks)
}

const isToolResultMessage = (message: N.ConversationEntry | undefined): message is N.NeutralMessage =>
  message !== undefined && message.role === "user" && message.blocks.length > 0 &&
  message.blocks.every((b) => b._tag === "ToolResult")

const openAiToolChoice = (choice: typeof OpenAi.ToolChoice.Type): N.NeutralToolChoice => {
  if (choice === "auto") return { _tag: "Auto" }
  if (choice === "required") return { _tag: "Required" }
  if (choice === "none") return { _tag: "None" }
  if (choice.type === "function") return { _tag: "Tool", name: choice.function.name }
  return { _tag: "Opaque", format: "openai_chat", value: choice }
}

const openAiResponseFormat = (format: typeof OpenAi.ResponseFormat.Type): N.NeutralResponseFormat => {
  switch (format.type) {
    case "text":
    case "json_object":
      return { type: format.type }
    case "json_schema": {
      const js = format.json_schema
      return {
        type: "json_schema",
        name: js.name,
        schema: js.schema ?? {},
        ...(js.description !== undefined ? { description: js.description } : {}),
        ...(js.strict !== undefined && js.strict !== null ? { strict: js.strict } : {})
      }
    }
  }
}

/**
 * An OpenAI Chat request in neutral form. System / developer messages before the first other
 * message are `instructions`; later ones stay in place as positioned system messages. Fails only
 * for the deprecated `function_call` / `role: "function"` messages (no tool-call id to pair them
 * by). Tool-call arguments that are not a JSON object are kept (`input` is then not an object) and
 * fail later, in `toAnthropicRequest`.
 */
export const fromOpenAiRequest = (
  req: OpenAi.ChatCompletionRequest
): Either.Either<N.NeutralRequest, TranslationError> =>
  Either.gen(function*() {
    const instructions: Array<N.Text> = []
    const messages: Array<N.ConversationEntry> = []
    for (const message of req.messages) {
      switch (message.role) {
        case "system":
        case "developer":
          if (messages.length === 0) instructions.push(...openAiTextContent(message.content))
          else messages.push({ role: "system", blocks: openAiTextContent(message.content) })
          break
        case "user":
          messages.push({ role: "user", blocks: openAiUserBlocks(message.content) })
          break
        case "assistant":
          messages.push({ role: "assistant", blocks: yield* openAiAssistantBlocks(message) })
          break
        case "tool": {
          const result: N.ToolResult = {
            _tag: "ToolResult",
            toolUseId: message.tool_call_id,
            content: openAiTextContent(message.content),
            isError: false
          }
          const last = messages[messages.length - 1]
          if (isToolResultMessage(last)) messages[messages.length - 1] = { role: "user", blocks: [...last.blocks, result] }
          else messages.push({ role: "user", blocks: [result] })
          break
        }
        case "function":
          return yield* fail("a deprecated role \"function\" message cannot be translated; use role \"tool\"")
      }
    }
    const tools: Array<N.NeutralTool> = []
    const opaqueTools: Array<N.OpaqueTool> = []
    for (const tool of req.tools ?? []) {
      if (tool.type === "function") {
        const f = tool.function
        tools.push({
          name: f.name,
          parameters: f.parameters ?? emptyObjectSchema,
          ...(f.description !== undefined ? { description: f.description } : {}),
          ...(f.strict !== undefined && f.strict !== null ? { strict: f.strict } : {})
        })
      } else {
        opaqueTools.push({ format: "openai_chat", value: tool })
      }
    }
    const maxOutputTokens = req.max_completion_tokens ?? req.max_tokens
    const stop = req.stop === undefined || req.stop === null ? [] : Predicate.isString(req.stop) ? [req.stop] : req.stop
    const request: N.NeutralRequest = {
      model: req.model,
      instructions,
      messages,
      tools,
      opaqueTools,
      stop,
      stream: req.stream === true,
      extra: extraFields(req, openAiMappedFields),
      ...(req.tool_choice !== undefined ? { toolChoice: openAiToolChoice(req.tool_choice) } : {}),
      ...(req.parallel_tool_calls !== undefined ? { parallelToolCalls: req.parallel_tool_calls } : {}),
      ...(maxOutputTokens !== undefined && maxOutputTokens !== null ? { maxOutputTokens } : {}),
      ...(req.temperature !== undefined && req.temperature !== null ? { temperature: req.temperature } : {}),
      ...(req.top_p !== undefined && req.top_p !== null ? { topP: req.top_p } : {}),
      ...(req.response_format !== undefined ? { responseFormat: openAiResponseFormat(req.response_format) } : {}),
      ...(req.user !== undefined ? { user: req.user } : {})
    }
    return request
  })

// ---------------------------------------------------------------------------------------------
// neutral → OpenAI request

type OpenAiTextPart = typeof OpenAi.TextPart.Type
const isOpenAiContentPart = Schema.is(OpenAi.ContentPart)
const isOpenAiToolCall = Schema.is(OpenAi.ToolCall)
const isOpenAiTool = Schema.is(OpenAi.Tool)
const isOpenAiToolChoice = Schema.is(OpenAi.ToolChoice)

const textPart = (text: string): OpenAiTextPart => ({ type: "text", text })

/** One text → a string; no text → `""`; otherwise text parts. */
const openAiText = (texts: ReadonlyArray<string>): string | ReadonlyArray<OpenAiTextPart> =>
  texts.length === 0 ? "" : texts.length === 1 ? (texts[0] ?? "") : texts.map(textPart)

const openAiImagePart = (image: N.Image): OpenAi.ContentPart => ({
  type: "image_url",
  image_url: { url: imageUrl(image.source), ...(image.detail !== undefined ? { detail: image.detail } : {}) }
})

const openAiUserContent = (parts: ReadonlyArray<OpenAi.ContentPart>): string | ReadonlyArray<OpenAi.ContentPart> => {
  if (parts.length === 0) return ""
  const only = parts[0]
  return parts.length === 1 && only !== undefined && ofType(only, "text") ? only.text : parts
}

const openAiUserMessages = (blocks: ReadonlyArray<N.Block>): ReadonlyArray<OpenAi.Message> => {
  const out: Array<OpenAi.Message> = []
  const parts: Array<OpenAi.ContentPart> = []
  let results = 0
  for (const block of blocks) {
    switch (block._tag) {
      case "ToolResult": {
        results++
        const texts: Array<string> = []
        for (const item of block.content) {
          if (item._tag === "Text") texts.push(item.text)
          else if (item._tag === "Image") parts.push(openAiImagePart(item))
          else if (isToolReference(item.value)) texts.push(toolReferenceText(item.value.tool_name))
        }
        out.push({ role: "tool", tool_call_id: block.toolUseId, content: openAiText(texts) })
        break
      }
      case "Text":
        parts.push(textPart(block.text))
        break
      case "Image":
        parts.push(openAiImagePart(block))
        break
      case "Opaque":
        if (block.format === "openai_chat" && isOpenAiContentPart(block.value)) parts.push(block.value)
        break
      case "ToolUse":
      case "Thinking":
      case "RedactedThinking":
      case "Reasoning":
        break
    }
  }
  if (parts.length > 0 || results === 0) out.push({ role: "user", content: openAiUserContent(parts) })
  return out
}

/**
 * The parts of an assistant turn as the chat shape holds them: its texts, its thinking blocks (for
 * `reasoning_content` / `thinking_blocks`) and its tool uses as function tool calls (plus OpenAI
 * tool calls kept opaque); images and tool results have no place there.
 */
const assistantParts = (blocks: ReadonlyArray<N.Block>) => {
  const texts: Array<string> = []
  const thinking: Array<N.Thinking | N.RedactedThinking> = []
  const calls: Array<OpenAi.ToolCall> = []
  for (const block of blocks) {
    switch (block._tag) {
      case "Text":
        texts.push(block.text)
        break
      case "Thinking":
      case "RedactedThinking":
        thinking.push(block)
        break
      case "Reasoning":
        thinking.push({ _tag: "Thinking", text: block.summary.join(reasoningSummarySeparator) })
        break
      case "ToolUse":
        calls.push({
          id: block.id,
          type: "function",
          function: { name: block.name, arguments: block.arguments ?? JSON.stringify(block.input ?? {}) }
        })
        break
      case "Opaque":
        if (block.format === "openai_chat" && isOpenAiToolCall(block.value)) calls.push(block.value)
        break
      case "Image":
      case "ToolResult":
        break
    }
  }
  return { texts, thinking, calls }
}

const openAiAssistantMessage = (blocks: ReadonlyArray<N.Block>): OpenAi.Message => {
  const { calls, texts, thinking } = assistantParts(blocks)
  return {
    role: "assistant",
    content: texts.length === 0 && calls.length > 0 ? null : openAiText(texts),
    ...(calls.length > 0 ? { tool_calls: calls } : {}),
    ...toOpenAiThinking(thinking)
  }
}

const toOpenAiToolChoice = (choice: N.NeutralToolChoice): typeof OpenAi.ToolChoice.Type | undefined => {
  switch (choice._tag) {
    case "Auto":
      return "auto"
    case "Required":
      return "required"
    case "None":
      return "none"
    case "Tool":
      return { type: "function", function: { name: choice.name } }
    case "Opaque":
      return choice.format === "openai_chat" && isOpenAiToolChoice(choice.value) ? choice.value : undefined
  }
}

const toOpenAiResponseFormat = (format: N.NeutralResponseFormat): typeof OpenAi.ResponseFormat.Type =>
  format.type === "json_schema"
    ? {
      type: "json_schema",
      json_schema: {
        name: format.name,
        schema: format.schema,
        ...(format.description !== undefined ? { description: format.description } : {}),
        ...(format.strict !== undefined ? { strict: format.strict } : {})
      }
    }
    : { type: format.type }

/**
 * A neutral request as an OpenAI Chat request. Total: what OpenAI cannot express is dropped (see
 * the module notes). Instructions become one leading `system` message and each positioned system
 * message a `system` message at its place, each a single string (texts joined with
 * {@link systemTextSeparator}, billing header texts left out, a message of billing header texts
 * only left out); `user` is written only up to {@link maxOpenAiUserLength} characters; tool results become
 * `role: "tool"` messages, one per block, in order; thinking becomes `reasoning_content` and, when
 * signed or redacted, `thinking_blocks`.
 * The output limit is written as `max_completion_tokens`.
 */
export const toOpenAiRequest = (n: N.NeutralRequest): OpenAi.ChatCompletionRequest => {
  const messages: Array<OpenAi.Message> = []
  const instructions = openAiSystemContent(n.instructions)
  if (n.instructions.length > 0 && instructions !== undefined) messages.push({ role: "system", content: instructions })
  for (const message of n.messages) {
    switch (message.role) {
      case "system": {
        const content = openAiSystemContent(message.blocks)
        if (content !== undefined) messages.push({ role: "system", content })
        break
      }
      case "user":
        messages.push(...openAiUserMessages(message.blocks))
        break
      case "assistant":
        messages.push(openAiAssistantMessage(message.blocks))
        break
    }
  }
  const tools: Array<typeof OpenAi.Tool.Type> = n.tools.map((tool) => ({
    type: "function",
    function: {
      name: tool.name,
      parameters: tool.parameters,
      ...(tool.description !== undefined ? { description: tool.description } : {}),
      ...(tool.strict !== undefined ? { strict: tool.strict } : {})
    }
  }))
  for (const tool of n.opaqueTools) {
    if (tool.format === "openai_chat" && isOpenAiTool(tool.value)) tools.push(tool.value)
  }
  const toolChoice = n.toolChoice === undefined ? undefined : toOpenAiToolChoice(n.toolChoice)
  return {
    ...extraFields(n.extra, anthropicOnlyFields),
    model: n.model,
    messages,
    ...(tools.length > 0 ? { tools } : {}),
    ...(toolChoice !== undefined ? { tool_choice: toolChoice } : {}),
    ...(n.parallelToolCalls !== undefined ? { parallel_tool_calls: n.parallelToolCalls } : {}),
    ...(n.responseFormat !== undefined ? { response_format: toOpenAiResponseFormat(n.responseFormat) } : {}),
    ...(n.maxOutputTokens !== undefined ? { max_completion_tokens: n.maxOutputTokens } : {}),
    ...(n.temperature !== undefined ? { temperature: n.temperature } : {}),
    ...(n.topP !== undefined ? { top_p: n.topP } : {}),
    ...(n.stop.length > 0 ? { stop: n.stop } : {}),
    ...(n.stream ? { stream: true } : {}),
    ...(n.user !== undefined && Array.from(n.user).length <= maxOpenAiUserLength ? { user: n.user } : {})
  }
}

// ---------------------------------------------------------------------------------------------
// Anthropic request → neutral

const anthropicMappedFields: ReadonlyArray<string> = [
  "model",
  "messages",
  "system",
  "max_tokens",
  "stream",
  "temperature",
  "top_p",
  "stop_sequences",
  "tools",
  "tool_choice",
  "metadata",
  "output_config"
]

const anthropicText = (block: Anthropic.TextBlock): N.Text => ({
  _tag: "Text",
  text: block.text,
  ...withCache(block.cache_control)
})

/** An Anthropic image with a base64 or URL source; `undefined` for other sources (files). */
const anthropicImage = (block: Anthropic.ImageBlock): N.Image | undefined => {
  const source = block.source
  const cache = withCache(block.cache_control)
  if (ofType(source, "base64")) {
    return { _tag: "Image", source: { kind: "base64", mediaType: source.media_type, data: source.data }, ...cache }
  }
  if (ofType(source, "url")) return { _tag: "Image", source: { kind: "url", url: source.url }, ...cache }
  return undefined
}

const anthropicToolResult = (block: Anthropic.ToolResultBlock): Either.Either<N.ToolResult, TranslationError> => {
  const content: Array<N.Text | N.Image | N.Opaque> = []
  const raw = block.content
  if (Predicate.isString(raw)) content.push(...textBlocks(raw))
  else {
    for (const item of raw ?? []) {
      if (ofType(item, "text")) content.push(anthropicText(item))
      else if (ofType(item, "image")) {
        const image = anthropicImage(item)
        if (image === undefined) return fail(`a tool_result image with a ${clip(item.source.type)} source cannot be translated`)
        content.push(image)
      } else if (ofType(item, "tool_reference")) content.push({ _tag: "Opaque", format: "anthropic_messages", value: item })
      else return fail(`a tool_result with ${clip(item.type)} content cannot be translated`)
    }
  }
  return Either.right({
    _tag: "ToolResult",
    toolUseId: block.tool_use_id,
    content,
    isError: block.is_error === true,
    ...withCache(block.cache_control)
  })
}

const anthropicBlocks = (
  content: string | ReadonlyArray<Anthropic.ContentBlock>
): Either.Either<ReadonlyArray<N.Block>, TranslationError> =>
  Either.gen(function*() {
    if (Predicate.isString(content)) return textBlocks(content)
    const blocks: Array<N.Block> = []
    for (const block of content) {
      if (ofType(block, "text")) blocks.push(anthropicText(block))
      else if (ofType(block, "image")) {
        blocks.push(anthropicImage(block) ?? { _tag: "Opaque", format: "anthropic_messages", value: block })
      } else if (ofType(block, "tool_use")) {
        blocks.push({ _tag: "ToolUse", id: block.id, name: block.name, input: block.input, ...withCache(block.cache_control) })
      } else if (ofType(block, "tool_result")) blocks.push(yield* anthropicToolResult(block))
      else if (ofType(block, "thinking")) blocks.push(neutralThinking(block.thinking, block.signature))
      else if (ofType(block, "redacted_thinking")) blocks.push({ _tag: "RedactedThinking", data: block.data })
      else blocks.push({ _tag: "Opaque", format: "anthropic_messages", value: block })
    }
    return blocks
  })

const anthropicToolChoice = (choice: Anthropic.ToolChoice): N.NeutralToolChoice => {
  switch (choice.type) {
    case "auto":
      return { _tag: "Auto" }
    case "any":
      return { _tag: "Required" }
    case "none":
      return { _tag: "None" }
    case "tool":
      return { _tag: "Tool", name: choice.name }
  }
}

const isAnthropicCustomTool = Schema.is(Anthropic.CustomTool)

/**
 * An Anthropic Messages request in neutral form; consecutive user messages made only of tool
 * results are merged into one, and a `{"role": "system"}` entry of `messages` is a positioned
 * system message. A `tool_reference` in a `tool_result` is kept as an opaque item. Fails when a
 * `tool_result` holds other content than text, images and tool references (documents, search
 * results) or an image from a file source, which no neutral block can carry. Other unknown
 * blocks, server tools and unknown fields are kept opaque.
 */
export const fromAnthropicRequest = (
  req: Anthropic.MessagesRequest
): Either.Either<N.NeutralRequest, TranslationError> =>
  Either.gen(function*() {
    const instructions = req.system === undefined
      ? []
      : Predicate.isString(req.system)
      ? textBlocks(req.system)
      : req.system.map(anthropicText)
    const messages: Array<N.ConversationEntry> = []
    for (const message of req.messages) {
      if (message.role === "system") {
        const content = message.content
        messages.push({ role: "system", blocks: Predicate.isString(content) ? textBlocks(content) : content.map(anthropicText) })
        continue
      }
      const next: N.NeutralMessage = { role: message.role, blocks: yield* anthropicBlocks(message.content) }
      const last = messages[messages.length - 1]
      // Consecutive tool-result-only user messages are one message, as consecutive OpenAI tool messages are.
      if (isToolResultMessage(next) && isToolResultMessage(last)) {
        messages[messages.length - 1] = { role: "user", blocks: [...last.blocks, ...next.blocks] }
      } else messages.push(next)
    }
    const tools: Array<N.NeutralTool> = []
    const opaqueTools: Array<N.OpaqueTool> = []
    for (const tool of req.tools ?? []) {
      if (isAnthropicCustomTool(tool)) {
        tools.push({
          name: tool.name,
          parameters: tool.input_schema,
          ...(tool.description !== undefined ? { description: tool.description } : {}),
          ...withCache(tool.cache_control)
        })
      } else opaqueTools.push({ format: "anthropic_messages", value: tool })
    }
    const extra: Record<string, unknown> = { ...extraFields(req, anthropicMappedFields) }
    let responseFormat: N.NeutralResponseFormat | undefined
    if (req.output_config !== undefined) {
      const { format, ...rest } = req.output_config
      if (format !== undefined && format !== null && format.type === "json_schema") {
        responseFormat = { type: "json_schema", name: "output", schema: format.schema ?? {} }
      }
      if (Object.keys(rest).length > 0) extra["output_config"] = rest
    }
    const disableParallel = req.tool_choice?.disable_parallel_tool_use
    const user = req.metadata?.user_id
    const request: N.NeutralRequest = {
      model: req.model,
      instructions,
      messages,
      tools,
      opaqueTools,
      stop: req.stop_sequences ?? [],
      stream: req.stream === true,
      maxOutputTokens: req.max_tokens,
      extra,
      ...(req.tool_choice !== undefined ? { toolChoice: anthropicToolChoice(req.tool_choice) } : {}),
      ...(disableParallel !== undefined ? { parallelToolCalls: !disableParallel } : {}),
      ...(req.temperature !== undefined ? { temperature: req.temperature } : {}),
      ...(req.top_p !== undefined ? { topP: req.top_p } : {}),
      ...(responseFormat !== undefined ? { responseFormat } : {}),
      ...(user !== undefined && user !== null ? { user } : {})
    }
    return request
  })

// ---------------------------------------------------------------------------------------------
// neutral → Anthropic request

const isAnthropicContentBlock = Schema.is(Anthropic.ContentBlock)
const isAnthropicToolResultContent = Schema.is(Anthropic.ToolResultContent)
const isAnthropicTool = Schema.is(Anthropic.Tool)

const cacheControlOf = (cacheControl: unknown): { readonly cache_control?: Anthropic.CacheControl } =>
  Schema.is(Anthropic.CacheControl)(cacheControl) ? { cache_control: cacheControl } : {}

const toAnthropicText = (block: N.Text): Anthropic.TextBlock => ({
  type: "text",
  text: block.text,
  ...cacheControlOf(block.cacheControl)
})

const toAnthropicImage = (block: N.Image): Either.Either<Anthropic.ImageBlock, TranslationError> => {
  const source = block.source
  if (source.kind === "url" && source.url.startsWith("data:")) {
    return fail("an image data: URL that is not base64 cannot be sent to an anthropic_messages upstream")
  }
  return Either.right({
    type: "image",
    source: source.kind === "url"
      ? { type: "url", url: source.url }
      : { type: "base64", media_type: source.mediaType, data: source.data },
    ...cacheControlOf(block.cacheControl)
  })
}

const describeOpenAiValue = (value: unknown): string => {
  const type = Predicate.isObject(value) ? field(value, "type") : undefined
  switch (type) {
    case "input_audio":
      return "an audio content part"
    case "file":
      return "a file content part"
    case "custom":
      return "a custom tool call"
    default:
      return `a content part of type ${Predicate.isString(type) ? clip(type) : "unknown"}`
  }
}

const toAnthropicBlock = (block: N.Block): Either.Either<Anthropic.ContentBlock | undefined, TranslationError> => {
  switch (block._tag) {
    case "Text":
      return Either.right(toAnthropicText(block))
    case "Image":
      return toAnthropicImage(block)
    case "ToolUse":
      return Predicate.isRecord(block.input)
        ? Either.right({
          type: "tool_use",
          id: block.id,
          name: block.name,
          input: block.input,
          ...cacheControlOf(block.cacheControl)
        })
        : fail(`the arguments of tool call ${clip(block.id)} are not a JSON object`)
    case "ToolResult":
      return Either.gen(function*() {
        const content: Array<Anthropic.ToolResultContent> = []
        for (const item of block.content) {
          if (item._tag === "Text") content.push(toAnthropicText(item))
          else if (item._tag === "Image") content.push(yield* toAnthropicImage(item))
          else if (item.format === "anthropic_messages" && isAnthropicToolResultContent(item.value)) content.push(item.value)
          else return yield* fail("an opaque tool_result item is not Anthropic tool_result content")
        }
        const only = content[0]
        const body = content.length === 0
          ? {}
          : content.length === 1 && only !== undefined && ofType(only, "text") && only.cache_control === undefined
          ? { content: only.text }
          : { content }
        const result: Anthropic.ContentBlock = {
          type: "tool_result",
          tool_use_id: block.toolUseId,
          ...body,
          ...(block.isError ? { is_error: true } : {}),
          ...cacheControlOf(block.cacheControl)
        }
        return result
      })
    case "Thinking":
      // The API rejects thinking without its signature (docs/http-api.md): drop it.
      return Either.right(isSigned(block) ? { type: "thinking", thinking: block.text, signature: block.signature } : undefined)
    case "RedactedThinking":
      return Either.right({ type: "redacted_thinking", data: block.data })
    case "Reasoning":
      // OpenAI's encrypted reasoning means nothing to Anthropic (see TranslateResponses).
      return Either.right(undefined)
    case "Opaque":
      if (block.format !== "anthropic_messages") {
        return fail(`${describeOpenAiValue(block.value)} cannot be sent to an anthropic_messages upstream`)
      }
      return isAnthropicContentBlock(block.value)
        ? Either.right(block.value)
        : fail("an opaque block is not an Anthropic content block")
  }
}

const toAnthropicToolChoice = (
  n: N.NeutralRequest
): Either.Either<Anthropic.ToolChoice | undefined, TranslationError> => {
  const disable = n.parallelToolCalls === undefined ? {} : { disable_parallel_tool_use: !n.parallelToolCalls }
  const choice = n.toolChoice
  if (choice === undefined) {
    return Either.right(
      n.parallelToolCalls !== undefined && (n.tools.length > 0 || n.opaqueTools.length > 0)
        ? { type: "auto", ...disable }
        : undefined
    )
  }
  switch (choice._tag) {
    case "Auto":
      return Either.right({ type: "auto", ...disable })
    case "Required":
      return Either.right({ type: "any", ...disable })
    case "None":
      return Either.right({ type: "none" })
    case "Tool":
      return Either.right({ type: "tool", name: choice.name, ...disable })
    case "Opaque":
      return choice.format === "anthropic_messages" && Schema.is(Anthropic.ToolChoice)(choice.value)
        ? Either.right(choice.value)
        : fail("this tool_choice cannot be sent to an anthropic_messages upstream")
  }
}

const constraintKeywords: ReadonlyArray<string> = ["minimum", "maximum", "minLength", "maxLength"]
/** Keywords whose value maps names to schemas (the names are not keywords). */
const schemaMapKeywords: ReadonlyArray<string> = ["properties", "patternProperties", "$defs", "definitions", "dependentSchemas"]
/** Keywords whose value is data, not a schema. */
const dataKeywords: ReadonlyArray<string> = ["enum", "const", "default", "examples"]

/**
 * `schema` without the `minimum` / `maximum` / `minLength` / `maxLength` keywords, at any depth,
 * which Anthropic structured output rejects (docs/http-api.md). Property names and data values are kept.
 */
export const stripUnsupportedConstraints = (schema: JsonObject): JsonObject => {
  const strip = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(strip)
    if (!Predicate.isRecord(node)) return node
    const out: Record<string, unknown> = {}
    for (const [key, value] of Object.entries(node)) {
      if (constraintKeywords.includes(key)) continue
      if (schemaMapKeywords.includes(key) && Predicate.isRecord(value)) {
        const map: Record<string, unknown> = {}
        for (const [name, sub] of Object.entries(value)) map[name] = strip(sub)
        out[key] = map
      } else out[key] = dataKeywords.includes(key) ? value : strip(value)
    }
    return out
  }
  const stripped = strip(schema)
  return Predicate.isRecord(stripped) ? stripped : {}
}

/**
 * A neutral request as an Anthropic Messages request. Fails with a {@link TranslationError} when
 * the request holds what Anthropic cannot take: `n` > 1, an OpenAI audio / file / unknown content
 * part or custom tool (call), tool-call arguments that are not a JSON object, a non-base64 `data:`
 * image URL, or an OpenAI-only tool choice. `max_tokens` is `maxOutputTokens`, else
 * {@link defaultAnthropicMaxTokens}. Within a user message, tool results are moved first.
 * Positioned system messages, which the Messages API does not take inside `messages`, are moved to
 * the end of `system`, in order.
 */
export const toAnthropicRequest = (n: N.NeutralRequest): Either.Either<Anthropic.MessagesRequest, TranslationError> =>
  Either.gen(function*() {
    const choices = n.extra["n"]
    if (Predicate.isNumber(choices) && choices > 1) {
      return yield* fail("n > 1 (several choices) cannot be sent to an anthropic_messages upstream")
    }
    const messages: Array<Anthropic.Message> = []
    const moved: Array<N.Text> = []
    for (const message of n.messages) {
      if (message.role === "system") {
        moved.push(...message.blocks)
        continue
      }
      const ordered = message.role === "user"
        ? [...message.blocks.filter((b) => b._tag === "ToolResult"), ...message.blocks.filter((b) => b._tag !== "ToolResult")]
        : message.blocks
      const content: Array<Anthropic.ContentBlock> = []
      for (const block of ordered) {
        const out = yield* toAnthropicBlock(block)
        if (out !== undefined) content.push(out)
      }
      messages.push({ role: message.role, content: content.length === 0 ? "" : content })
    }
    const tools: Array<Anthropic.Tool> = n.tools.map((tool) => ({
      name: tool.name,
      input_schema: tool.parameters,
      ...(tool.description !== undefined ? { description: tool.description } : {}),
      ...cacheControlOf(tool.cacheControl)
    }))
    for (const tool of n.opaqueTools) {
      if (tool.format === "openai_chat") return yield* fail("a custom tool cannot be sent to an anthropic_messages upstream")
      if (tool.format === "anthropic_messages" && isAnthropicTool(tool.value)) tools.push(tool.value)
    }
    const toolChoice = yield* toAnthropicToolChoice(n)
    const systemTexts = [...n.instructions, ...moved]
    const firstInstruction = systemTexts[0]
    const system = systemTexts.length === 0
      ? undefined
      : systemTexts.length === 1 && firstInstruction !== undefined && !Schema.is(Anthropic.CacheControl)(firstInstruction.cacheControl)
      ? firstInstruction.text
      : systemTexts.map(toAnthropicText)
    const extraOutputConfig = n.extra["output_config"]
    const outputConfig = {
      ...(Predicate.isRecord(extraOutputConfig) ? extraOutputConfig : {}),
      ...(n.responseFormat?.type === "json_schema"
        ? { format: { type: "json_schema", schema: stripUnsupportedConstraints(n.responseFormat.schema) } }
        : {})
    }
    const request: Anthropic.MessagesRequest = {
      ...extraFields(n.extra, [...openAiOnlyFields, "output_config"]),
      model: n.model,
      messages,
      max_tokens: n.maxOutputTokens ?? defaultAnthropicMaxTokens,
      ...(system !== undefined ? { system } : {}),
      ...(tools.length > 0 ? { tools } : {}),
      ...(toolChoice !== undefined ? { tool_choice: toolChoice } : {}),
      ...(n.temperature !== undefined ? { temperature: n.temperature } : {}),
      ...(n.topP !== undefined ? { top_p: n.topP } : {}),
      ...(n.stop.length > 0 ? { stop_sequences: n.stop } : {}),
      ...(n.stream ? { stream: true } : {}),
      ...(n.user !== undefined ? { metadata: { user_id: n.user } } : {}),
      ...(Object.keys(outputConfig).length > 0 ? { output_config: outputConfig } : {})
    }
    return request
  })

// ---------------------------------------------------------------------------------------------
// stop reasons and usage

/**
 * The OpenAI `finish_reason` of a neutral stop reason: `end_turn` / `stop_sequence` /
 * `pause_turn` (and any unknown reason) → `stop`, `max_tokens` / `model_context_window_exceeded`
 * → `length`, `tool_use` → `tool_calls`, `refusal` → `content_filter`.
 */
export const toFinishReason = (reason: N.StopReason | null): string | null => {
  switch (reason) {
    case null:
      return null
    case "max_tokens":
    case "model_context_window_exceeded":
      return "length"
    case "tool_use":
      return "tool_calls"
    case "refusal":
      return "content_filter"
    default:
      return "stop"
  }
}

/**
 * The neutral stop reason of an OpenAI `finish_reason`: `stop` → `end_turn`, `length` →
 * `max_tokens`, `tool_calls` / `function_call` → `tool_use`, `content_filter` → `refusal`;
 * any other value is kept.
 */
export const fromFinishReason = (reason: string | null | undefined): N.StopReason | null => {
  switch (reason) {
    case undefined:
    case null:
      return null
    case "stop":
      return "end_turn"
    case "length":
      return "max_tokens"
    case "tool_calls":
    case "function_call":
      return "tool_use"
    case "content_filter":
      return "refusal"
    default:
      return reason
  }
}

const presentNumber = (value: number | null | undefined): value is number => value !== undefined && value !== null

/** Neutral usage of OpenAI usage (`prompt_tokens` already counts cached tokens). */
export const fromOpenAiUsage = (usage: OpenAi.Usage | null | undefined): N.NeutralUsage => {
  if (usage === undefined || usage === null) return { inputTokens: 0, outputTokens: 0 }
  const cached = usage.prompt_tokens_details?.cached_tokens
  const creation = usage.prompt_tokens_details?.cache_creation_tokens
  const reasoning = usage.completion_tokens_details?.reasoning_tokens
  return {
    inputTokens: usage.prompt_tokens,
    outputTokens: usage.completion_tokens,
    ...(presentNumber(cached) ? { cacheReadTokens: cached } : {}),
    ...(presentNumber(creation) ? { cacheCreationTokens: creation } : {}),
    ...(presentNumber(reasoning) ? { reasoningTokens: reasoning } : {})
  }
}

/**
 * OpenAI usage of neutral usage: `prompt_tokens` = all input tokens,
 * `prompt_tokens_details.cached_tokens` = cache reads, `.cache_creation_tokens` = cache writes.
 */
export const toOpenAiUsage = (usage: N.NeutralUsage): OpenAi.Usage => ({
  prompt_tokens: usage.inputTokens,
  completion_tokens: usage.outputTokens,
  total_tokens: usage.inputTokens + usage.outputTokens,
  ...(usage.cacheReadTokens !== undefined || usage.cacheCreationTokens !== undefined
    ? {
      prompt_tokens_details: {
        ...(usage.cacheReadTokens !== undefined ? { cached_tokens: usage.cacheReadTokens } : {}),
        ...(usage.cacheCreationTokens !== undefined ? { cache_creation_tokens: usage.cacheCreationTokens } : {})
      }
    }
    : {}),
  ...(usage.reasoningTokens !== undefined
    ? { completion_tokens_details: { reasoning_tokens: usage.reasoningTokens } }
    : {})
})

/** Neutral usage of Anthropic usage: `inputTokens` = `input_tokens` + cache reads + cache writes. */
export const fromAnthropicUsage = (usage: {
  readonly input_tokens?: number | null | undefined
  readonly output_tokens: number
  readonly cache_read_input_tokens?: number | null | undefined
  readonly cache_creation_input_tokens?: number | null | undefined
}): N.NeutralUsage => {
  const read = usage.cache_read_input_tokens
  const creation = usage.cache_creation_input_tokens
  return {
    inputTokens: (usage.input_tokens ?? 0) + (read ?? 0) + (creation ?? 0),
    outputTokens: usage.output_tokens,
    ...(presentNumber(read) ? { cacheReadTokens: read } : {}),
    ...(presentNumber(creation) ? { cacheCreationTokens: creation } : {})
  }
}

/** Anthropic usage of neutral usage: `input_tokens` = all input − cache reads − cache writes, floored at 0. */
export const toAnthropicUsage = (usage: N.NeutralUsage): Anthropic.Usage => ({
  input_tokens: Math.max(0, usage.inputTokens - (usage.cacheReadTokens ?? 0) - (usage.cacheCreationTokens ?? 0)),
  output_tokens: usage.outputTokens,
  ...(usage.cacheCreationTokens !== undefined ? { cache_creation_input_tokens: usage.cacheCreationTokens } : {}),
  ...(usage.cacheReadTokens !== undefined ? { cache_read_input_tokens: usage.cacheReadTokens } : {})
})

// ---------------------------------------------------------------------------------------------
// buffered responses

/**
 * A chat completion in neutral form, from its choice 0: `thinking_blocks` (else
 * `reasoning_content`) → Thinking / RedactedThinking, content and refusal → Text, function tool
 * calls → ToolUse (custom tool calls are dropped). No usage gives zeros.
 */
export const fromOpenAiResponse = (c: OpenAi.ChatCompletion): N.NeutralResponse => {
  const choice = c.choices.find((ch) => ch.index === 0) ?? c.choices[0]
  const content: Array<N.ResponseBlock> = []
  if (choice !== undefined) {
    const message = choice.message
    content.push(...openAiThinking(message.thinking_blocks, message.reasoning_content))
    if (message.content !== undefined && message.content !== null) content.push(...textBlocks(message.content))
    if (message.refusal !== undefined && message.refusal !== null) content.push(...textBlocks(message.refusal))
    for (const call of message.tool_calls ?? []) {
      if (call.type === "function") {
        content.push({
          _tag: "ToolUse",
          id: call.id,
          name: call.function.name,
          input: parseArguments(call.function.arguments),
          arguments: call.function.arguments
        })
      }
    }
  }
  return {
    id: c.id,
    model: c.model,
    content,
    stopReason: fromFinishReason(choice?.finish_reason),
    usage: fromOpenAiUsage(c.usage),
    ...(c.created !== undefined ? { created: c.created } : {})
  }
}

/**
 * A neutral response as a chat completion with one choice: text blocks joined, thinking as the
 * `reasoning_content` extension plus, when signed or redacted, `thinking_blocks`, tool uses as
 * function tool calls (`content: null` when there is only tool use). The id is re-prefixed by
 * {@link openAiCompletionId}; `created` defaults to 0.
 */
export const toOpenAiResponse = (n: N.NeutralResponse): OpenAi.ChatCompletion => {
  const { calls, texts, thinking } = assistantParts(n.content)
  return {
    id: openAiCompletionId(n.id),
    object: "chat.completion",
    created: n.created ?? 0,
    model: n.model,
    choices: [{
      index: 0,
      message: {
        role: "assistant",
        content: texts.length === 0 && calls.length > 0 ? null : texts.join(""),
        ...(calls.length > 0 ? { tool_calls: calls } : {}),
        ...toOpenAiThinking(thinking)
      },
      finish_reason: toFinishReason(n.stopReason)
    }],
    usage: toOpenAiUsage(n.usage)
  }
}

/**
 * A message in neutral form; server tool blocks are dropped, an empty thinking signature counts
 * as none.
 */
export const fromAnthropicResponse = (m: Anthropic.MessagesResponse): N.NeutralResponse => {
  const content: Array<N.ResponseBlock> = []
  for (const block of m.content) {
    if (ofType(block, "text")) content.push({ _tag: "Text", text: block.text })
    else if (ofType(block, "tool_use")) content.push({ _tag: "ToolUse", id: block.id, name: block.name, input: block.input })
    else if (ofType(block, "thinking")) content.push(neutralThinking(block.thinking, block.signature))
    else if (ofType(block, "redacted_thinking")) content.push({ _tag: "RedactedThinking", data: block.data })
  }
  return {
    id: m.id,
    model: m.model,
    content,
    stopReason: m.stop_reason,
    usage: fromAnthropicUsage(m.usage),
    ...(m.stop_sequence !== undefined && m.stop_sequence !== null ? { stopSequence: m.stop_sequence } : {})
  }
}

/**
 * A neutral response as an Anthropic message. The id keeps a `msg_` prefix or gets one; tool
 * input that is not a JSON object becomes `{}`; unsigned thinking gets `signature: ""`.
 */
export const toAnthropicResponse = (n: N.NeutralResponse): Anthropic.MessagesResponse => ({
  id: anthropicMessageId(n.id),
  type: "message",
  role: "assistant",
  model: n.model,
  content: n.content.flatMap((block): ReadonlyArray<Anthropic.ResponseContentBlock> => {
    switch (block._tag) {
      case "Text":
        return [{ type: "text", text: block.text }]
      case "ToolUse":
        return [{ type: "tool_use", id: block.id, name: block.name, input: Predicate.isRecord(block.input) ? block.input : {} }]
      case "Thinking":
        return [{ type: "thinking", thinking: block.text, signature: block.signature ?? "" }]
      case "RedactedThinking":
        return [{ type: "redacted_thinking", data: block.data }]
      case "Reasoning": {
        const text = block.summary.join(reasoningSummarySeparator)
        return text === "" ? [] : [{ type: "thinking", thinking: text, signature: "" }]
      }
    }
  }),
  stop_reason: n.stopReason,
  stop_sequence: n.stopSequence ?? null,
  usage: toAnthropicUsage(n.usage)
})

// ---------------------------------------------------------------------------------------------
// streams

/** Translates one Anthropic event stream into OpenAI chunks; see {@link anthropicToOpenAiStream}. */
export interface AnthropicToOpenAiStream {
  readonly push: (event: Anthropic.StreamEvent) => ReadonlyArray<OpenAi.ChatCompletionChunk>
  readonly end: () => ReadonlyArray<OpenAi.ChatCompletionChunk>
}

type ChunkDelta = OpenAi.ChatCompletionChunk["choices"][number]["delta"]

type OpenBlock =
  | { readonly kind: "text" | "ignored" }
  | { readonly kind: "thinking"; readonly startSignature: string; sawSignature: boolean }
  | { readonly kind: "tool"; readonly toolIndex: number; readonly startInput: JsonObject; sawDelta: boolean }

/**
 * A stateful translator of one Anthropic Messages event stream into OpenAI Chat chunks (one
 * instance per stream):
 *
 * - `message_start` → a role chunk (`delta: {role: "assistant", content: ""}`) whose id is the
 *   message id re-prefixed by {@link openAiCompletionId} and whose model is the message's;
 * - text → `content` deltas; thinking → `reasoning_content` deltas, then its signature (a
 *   `signature_delta`, else a non-empty signature given at block start, sent at block stop) as
 *   `{thinking_blocks: [{type: "thinking", thinking: "", signature}]}`; a `redacted_thinking` block
 *   → `{thinking_blocks: [{type: "redacted_thinking", data}]}` (LiteLLM convention);
 * - a `tool_use` block → a `tool_calls` delta `{index: <n-th tool call>, id, type: "function",
 *   function: {name, arguments: ""}}`, then its `input_json_delta`s as argument fragments;
 * - other blocks (server tools, citations) → nothing;
 * - `message_delta` → a `finish_reason` chunk, then a usage chunk (`choices: []`, `usage` as with
 *   `stream_options.include_usage`); nothing is emitted after it.
 *
 * `error` events produce nothing: the caller must check an event's `type` first and report the
 * error its own way. `end()` closes a stream that stopped without `message_delta` (a `stop`
 * finish and the usage seen so far); it is idempotent and returns nothing after a clean end or
 * when no event arrived.
 */
export const anthropicToOpenAiStream = (): AnthropicToOpenAiStream => {
  let id = openAiCompletionId("")
  let model = ""
  let started = false
  let finished = false
  let toolCount = 0
  let stopReason: string | null = null
  // Anthropic counters: message_start gives the input side, message_delta the (cumulative) rest.
  let usage: Anthropic.Usage = { input_tokens: 0, output_tokens: 0 }
  const blocks = new Map<number, OpenBlock>()

  const chunk = (delta: ChunkDelta, finishReason: string | null = null): OpenAi.ChatCompletionChunk => ({
    id,
    object: "chat.completion.chunk",
    created: 0,
    model,
    choices: [{ index: 0, delta, finish_reason: finishReason }]
  })
  const start = (): ReadonlyArray<OpenAi.ChatCompletionChunk> => {
    if (started) return []
    started = true
    return [chunk({ role: "assistant", content: "" })]
  }
  const finish = (): ReadonlyArray<OpenAi.ChatCompletionChunk> => {
    finished = true
    return [
      chunk({}, toFinishReason(stopReason ?? "end_turn")),
      { id, object: "chat.completion.chunk", created: 0, model, choices: [], usage: toOpenAiUsage(fromAnthropicUsage(usage)) }
    ]
  }
  const reasoningDelta = (text: string): ChunkDelta => ({ reasoning_content: text })
  const signatureDelta = (signature: string): ChunkDelta => ({
    thinking_blocks: [{ type: "thinking", thinking: "", signature }]
  })
  const toolDelta = (fragment: typeof OpenAi.ToolCallDelta.Type): ChunkDelta => ({ tool_calls: [fragment] })

  const push = (event: Anthropic.StreamEvent): ReadonlyArray<OpenAi.ChatCompletionChunk> => {
    if (finished) return []
    switch (event.type) {
      case "message_start": {
        id = openAiCompletionId(event.message.id)
        model = event.message.model
        usage = event.message.usage
        return start()
      }
      case "content_block_start": {
        const out = [...start()]
        const block = event.content_block
        if (ofType(block, "text")) {
          blocks.set(event.index, { kind: "text" })
          if (block.text !== "") out.push(chunk({ content: block.text }))
        } else if (ofType(block, "thinking")) {
          blocks.set(event.index, { kind: "thinking", startSignature: block.signature ?? "", sawSignature: false })
          if (block.thinking !== "") out.push(chunk(reasoningDelta(block.thinking)))
        } else if (ofType(block, "redacted_thinking")) {
          blocks.set(event.index, { kind: "ignored" })
          out.push(chunk({ thinking_blocks: [{ type: "redacted_thinking", data: block.data }] }))
        } else if (ofType(block, "tool_use")) {
          const toolIndex = toolCount++
          blocks.set(event.index, { kind: "tool", toolIndex, startInput: block.input, sawDelta: false })
          out.push(chunk(toolDelta({ index: toolIndex, id: block.id, type: "function", function: { name: block.name, arguments: "" } })))
        } else blocks.set(event.index, { kind: "ignored" })
        return out
      }
      case "content_block_delta": {
        const block = blocks.get(event.index)
        const delta = event.delta
        if (block === undefined) return []
        const out = [...start()]
        if (block.kind === "text" && ofType(delta, "text_delta")) {
          if (delta.text !== "") out.push(chunk({ content: delta.text }))
        } else if (block.kind === "thinking" && ofType(delta, "thinking_delta")) {
          if (delta.thinking !== "") out.push(chunk(reasoningDelta(delta.thinking)))
        } else if (block.kind === "thinking" && ofType(delta, "signature_delta")) {
          block.sawSignature = true
          if (delta.signature !== "") out.push(chunk(signatureDelta(delta.signature)))
        } else if (block.kind === "tool" && ofType(delta, "input_json_delta")) {
          block.sawDelta = true
          if (delta.partial_json !== "") {
            out.push(chunk(toolDelta({ index: block.toolIndex, function: { arguments: delta.partial_json } })))
          }
        }
        return out
      }
      case "content_block_stop": {
        const block = blocks.get(event.index)
        // A provider that sends the whole input in content_block_start and no deltas.
        if (block?.kind === "tool" && !block.sawDelta && Object.keys(block.startInput).length > 0) {
          return [chunk(toolDelta({ index: block.toolIndex, function: { arguments: JSON.stringify(block.startInput) } }))]
        }
        // A provider that sends the signature in content_block_start and no signature_delta.
        if (block?.kind === "thinking" && !block.sawSignature && block.startSignature !== "") {
          return [chunk(signatureDelta(block.startSignature))]
        }
        return []
      }
      case "message_delta": {
        stopReason = event.delta.stop_reason
        const u = event.usage
        usage = {
          input_tokens: u.input_tokens ?? usage.input_tokens,
          output_tokens: u.output_tokens,
          cache_read_input_tokens: u.cache_read_input_tokens ?? usage.cache_read_input_tokens,
          cache_creation_input_tokens: u.cache_creation_input_tokens ?? usage.cache_creation_input_tokens
        }
        return [...start(), ...finish()]
      }
      case "message_stop":
        return started ? finish() : []
      case "ping":
      case "error":
        return []
    }
  }
  const end = (): ReadonlyArray<OpenAi.ChatCompletionChunk> => finished || !started ? [] : finish()
  return { push, end }
}

/** Translates one OpenAI chunk stream into Anthropic events; see {@link openAiToAnthropicStream}. */
export interface OpenAiToAnthropicStream {
  readonly push: (chunk: OpenAi.ChatCompletionChunk) => ReadonlyArray<Anthropic.StreamEvent>
  readonly end: () => ReadonlyArray<Anthropic.StreamEvent>
}

interface ToolState {
  id: string | undefined
  name: string | undefined
  pending: string
  started: boolean
}

/**
 * A stateful translator of one OpenAI Chat chunk stream into Anthropic Messages events (one
 * instance per stream). Only choice 0 is read.
 *
 * - The first chunk emits `message_start` (id `options.id`, else the chunk id with a `msg_`
 *   prefix; model `options.model`; zero usage).
 * - `reasoning_content` (extension) → a `thinking` block; a `thinking_blocks` (extension) thinking
 *   entry → its text as a `thinking_delta` and its signature as a `signature_delta` on the open
 *   thinking block (the next thinking then opens a new block); a `redacted_thinking` entry → a
 *   `redacted_thinking` block, started and stopped at once. A delta with known `thinking_blocks`
 *   entries ignores its `reasoning_content` (LiteLLM sends the same text in both);
 *   `content` / `refusal` → a `text` block;
 *   each tool call (fragments keyed by `index`) → a `tool_use` block opened once its name is known
 *   (earlier fragments are buffered), its argument fragments as `input_json_delta`s. A new kind
 *   of content closes the open block first, so blocks never overlap and indices count from 0.
 *   Argument fragments for a tool call whose block was already closed are dropped (no known
 *   provider interleaves tool calls).
 * - `finish_reason` closes the open block; `message_delta` (stop reason mapped by
 *   {@link fromFinishReason}, usage from the usage chunk) and `message_stop` follow as soon as a
 *   chunk with `usage` arrives with or after it (`include_usage` sends usage last), else in `end()`.
 *
 * `end()` closes whatever is open (emitting `message_start` first if nothing arrived, and
 * `end_turn` if no finish reason came) and is idempotent; chunks after the end are ignored.
 */
export const openAiToAnthropicStream = (options: { readonly model: string; readonly id?: string }): OpenAiToAnthropicStream => {
  let messageId = options.id ?? "msg_switchyard"
  let started = false
  let finished = false
  let nextIndex = 0
  let open:
    | { readonly kind: "text" | "thinking" | "tool"; readonly index: number; readonly toolKey?: number; signed: boolean }
    | undefined
  let finishReason: string | null = null
  let usage: OpenAi.Usage | undefined
  const tools = new Map<number, ToolState>()

  const startMessage = (out: Array<Anthropic.StreamEvent>) => {
    if (started) return
    started = true
    out.push({
      type: "message_start",
      message: {
        id: messageId,
        type: "message",
        role: "assistant",
        model: options.model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: 0, output_tokens: 0 }
      }
    })
  }
  const closeOpen = (out: Array<Anthropic.StreamEvent>) => {
    if (open === undefined) return
    out.push({ type: "content_block_stop", index: open.index })
    open = undefined
  }
  const openBlock = (
    out: Array<Anthropic.StreamEvent>,
    kind: "text" | "thinking",
    contentBlock: Anthropic.ResponseContentBlock
  ): number => {
    if (open !== undefined && open.kind === kind && !open.signed) return open.index
    closeOpen(out)
    const index = nextIndex++
    open = { kind, index, signed: false }
    out.push({ type: "content_block_start", index, content_block: contentBlock })
    return index
  }
  const startTool = (out: Array<Anthropic.StreamEvent>, key: number, state: ToolState) => {
    closeOpen(out)
    const index = nextIndex++
    open = { kind: "tool", index, toolKey: key, signed: false }
    state.started = true
    out.push({
      type: "content_block_start",
      index,
      content_block: { type: "tool_use", id: state.id ?? `toolu_${messageId}_${key}`, name: state.name ?? "", input: {} }
    })
    if (state.pending !== "") {
      out.push({ type: "content_block_delta", index, delta: { type: "input_json_delta", partial_json: state.pending } })
      state.pending = ""
    }
  }
  /** Opens the tool calls that never got a name, so their id and arguments are not lost. */
  const flushTools = (out: Array<Anthropic.StreamEvent>) => {
    for (const [key, state] of [...tools.entries()].sort(([a], [b]) => a - b)) {
      if (!state.started) {
        startTool(out, key, state)
        closeOpen(out)
      }
    }
  }
  /** Thinking text, then its signature, on the open unsigned thinking block (opened when needed). */
  const thinking = (out: Array<Anthropic.StreamEvent>, text: string, signature: string | null | undefined) => {
    const signed = signature !== undefined && signature !== null && signature !== ""
    if (text === "" && !signed) return
    const index = openBlock(out, "thinking", { type: "thinking", thinking: "", signature: "" })
    if (text !== "") out.push({ type: "content_block_delta", index, delta: { type: "thinking_delta", thinking: text } })
    if (signed && open !== undefined) {
      out.push({ type: "content_block_delta", index, delta: { type: "signature_delta", signature } })
      open.signed = true
    }
  }
  const redacted = (out: Array<Anthropic.StreamEvent>, data: string) => {
    closeOpen(out)
    const index = nextIndex++
    out.push({ type: "content_block_start", index, content_block: { type: "redacted_thinking", data } })
    out.push({ type: "content_block_stop", index })
  }
  const complete = (out: Array<Anthropic.StreamEvent>) => {
    closeOpen(out)
    flushTools(out)
    const neutral = fromOpenAiUsage(usage)
    out.push({
      type: "message_delta",
      delta: { stop_reason: fromFinishReason(finishReason) ?? "end_turn", stop_sequence: null },
      usage: {
        output_tokens: neutral.outputTokens,
        input_tokens: toAnthropicUsage(neutral).input_tokens,
        ...(neutral.cacheReadTokens !== undefined ? { cache_read_input_tokens: neutral.cacheReadTokens } : {}),
        ...(neutral.cacheCreationTokens !== undefined ? { cache_creation_input_tokens: neutral.cacheCreationTokens } : {})
      }
    })
    out.push({ type: "message_stop" })
    finished = true
  }

  const push = (chunk: OpenAi.ChatCompletionChunk): ReadonlyArray<Anthropic.StreamEvent> => {
    if (finished) return []
    const out: Array<Anthropic.StreamEvent> = []
    if (!started) messageId = options.id ?? anthropicMessageId(chunk.id === "" ? "switchyard" : chunk.id)
    startMessage(out)
    const choice = chunk.choices.find((c) => c.index === 0)
    if (choice !== undefined) {
      const delta = choice.delta
      const entries = (delta.thinking_blocks ?? []).filter((b) => isOpenAiThinkingText(b) || isOpenAiRedactedThinking(b))
      for (const entry of entries) {
        if (isOpenAiThinkingText(entry)) thinking(out, entry.thinking, entry.signature)
        else if (isOpenAiRedactedThinking(entry)) redacted(out, entry.data)
      }
      if (entries.length === 0) thinking(out, delta.reasoning_content ?? "", undefined)
      for (const text of [delta.content, delta.refusal]) {
        if (text !== undefined && text !== null && text !== "") {
          const index = openBlock(out, "text", { type: "text", text: "" })
          out.push({ type: "content_block_delta", index, delta: { type: "text_delta", text } })
        }
      }
      for (const fragment of delta.tool_calls ?? []) {
        const key = fragment.index
        const state = tools.get(key) ?? { id: undefined, name: undefined, pending: "", started: false }
        tools.set(key, state)
        if (fragment.id !== undefined && state.id === undefined) state.id = fragment.id
        if (fragment.function?.name !== undefined && state.name === undefined) state.name = fragment.function.name
        const args = fragment.function?.arguments ?? ""
        if (!state.started) {
          state.pending += args
          if (state.name !== undefined) startTool(out, key, state)
        } else if (open !== undefined && open.kind === "tool" && open.toolKey === key && args !== "") {
          out.push({ type: "content_block_delta", index: open.index, delta: { type: "input_json_delta", partial_json: args } })
        }
      }
      if (choice.finish_reason !== undefined && choice.finish_reason !== null) {
        finishReason = choice.finish_reason
        closeOpen(out)
      }
    }
    if (chunk.usage !== undefined && chunk.usage !== null) {
      usage = chunk.usage
      if (finishReason !== null) complete(out)
    }
    return out
  }
  const end = (): ReadonlyArray<Anthropic.StreamEvent> => {
    if (finished) return []
    const out: Array<Anthropic.StreamEvent> = []
    startMessage(out)
    complete(out)
    return out
  }
  return { push, end }
}
