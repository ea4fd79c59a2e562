/**
 * The neutral request and response: one in-memory shape that every wire format (OpenAI Chat,
 * Anthropic Messages, OpenAI Responses, Gemini) translates into and out of (see {@link module:Translate}). Plain readonly data, no wire
 * quirks:
 *
 * - client system / developer content given before the conversation (Anthropic `system`, OpenAI
 *   system / developer messages before the first turn) is in `instructions`; a system message
 *   inside the conversation (OpenAI, or Claude Code's `role: "system"` Messages entries) is a
 *   {@link SystemMessage} at its place in `messages`;
 * - a tool result is a `User`-role message whose blocks are `ToolResult` (consecutive OpenAI
 *   `role: "tool"` messages become one such message), so "is the last message a tool result?" has
 *   one answer whatever the inbound format (docs/routes.md);
 * - tool-call input is parsed JSON, images are either a URL or base64 data (a `data:` URL is
 *   always split into base64 data);
 * - what only one format understands is carried as an {@link Opaque} block (or opaque tool /
 *   tool choice) holding that format's raw JSON, so a same-format round trip keeps it;
 * - Anthropic thinking is {@link Thinking} (text + signature) or {@link RedactedThinking} (encrypted
 *   data); both survive the OpenAI shape through the `thinking_blocks` extension, so neither is opaque;
 * - an OpenAI Responses reasoning item is {@link Reasoning} (summary + `encrypted_content`), written
 *   back as such only to a Responses upstream (see {@link module:TranslateResponses});
 * - a tool of a Responses `namespace` is a plain tool whose `name` is flattened to fit Chat's and
 *   Messages' tool-name rules; `namespaced` keeps the original pair, and Responses `custom`
 *   (free-form) tools and calls are function tools and calls of one string property `input`,
 *   marked `custom` (see {@link module:TranslateResponses} for both rules);
 * - a Gemini thought is {@link Thinking} (its `thoughtSignature` the signature), and a signature
 *   Gemini puts on a text or function call part is a signature-only Thinking right before it; the
 *   Gemini-only parts of a request are in {@link GeminiOnly} and the `gemini` markers of tools,
 *   tool calls and tool results (see {@link module:TranslateGemini}).
 */

/** The wire format a raw JSON value came from. */
export type WireFormat = "openai_chat" | "anthropic_messages" | "openai_responses" | "gemini_generate_content"

/** Text. `cacheControl` is an Anthropic prompt-cache marker (raw JSON), kept for Anthropic only. */
export interface Text {
  readonly _tag: "Text"
  readonly text: string
  readonly cacheControl?: unknown
}

/** Where an image's bytes are. */
export type ImageSource =
  | { readonly kind: "url"; readonly url: string }
  | { readonly kind: "base64"; readonly mediaType: string; readonly data: string }

/** An image. `detail` is OpenAI's `image_url.detail` (OpenAI only). */
export interface Image {
  readonly _tag: "Image"
  readonly source: ImageSource
  readonly detail?: string
  readonly cacheControl?: unknown
}

/**
 * A tool call made by the assistant. `input` is the parsed JSON arguments (an object for any
 * well-formed call; anything else, `undefined` included, when the OpenAI arguments were not a JSON
 * object). `arguments` is the verbatim OpenAI arguments string when the call came from OpenAI;
 * `toOpenAiRequest` prefers it so an OpenAI round trip keeps the bytes.
 */
export interface ToolUse {
  readonly _tag: "ToolUse"
  readonly id: string
  readonly name: string
  readonly input: unknown
  readonly arguments?: string
  readonly cacheControl?: unknown
  /** A call of a tool of an OpenAI Responses `namespace`: the pair the client knows (`name` is flattened). */
  readonly namespaced?: NamespacedName
  /**
   * A call of an OpenAI Responses `custom` (free-form) tool: `input` is `{"input": <the free-form
   * text>}` (and `arguments` its JSON), so every other format sees a function call.
   */
  readonly custom?: boolean
  /** The OpenAI Responses item id of the call (`fc_…`, `ctc_…`), Responses only. */
  readonly itemId?: string
  /**
   * Set when the call came from a Gemini `functionCall` part (Gemini only): the `id` Gemini sent,
   * absent when it sent none (`id` is then derived, see {@link module:TranslateGemini}).
   */
  readonly gemini?: { readonly id?: string }
}

/** The namespace and tool name of a tool declared inside an OpenAI Responses `namespace` tool. */
export interface NamespacedName {
  readonly namespace: string
  readonly name: string
}

/**
 * The result of the tool call `toolUseId`. OpenAI has no error flag: `isError` is `false` there.
 * An {@link Opaque} item is an Anthropic `tool_reference` (a tool loaded by tool search).
 */
export interface ToolResult {
  readonly _tag: "ToolResult"
  readonly toolUseId: string
  readonly content: ReadonlyArray<Text | Image | Opaque>
  readonly isError: boolean
  readonly cacheControl?: unknown
  /** The result of an OpenAI Responses custom tool call (`custom_tool_call_output`), Responses only. */
  readonly custom?: boolean
  /**
   * Set when the result came from a Gemini `functionResponse` part (Gemini only): its `name` and
   * the `id` it carried, if any (`toolUseId` is the id of the call it pairs with).
   */
  readonly gemini?: { readonly id?: string; readonly name: string }
}

/**
 * Model reasoning. `signature` is Anthropic's (never `""`: an empty signature is no signature); an
 * unsigned block cannot be sent to Anthropic and is dropped there.
 */
export interface Thinking {
  readonly _tag: "Thinking"
  readonly text: string
  readonly signature?: string
}

/**
 * Anthropic `redacted_thinking`: reasoning the API encrypted, to be passed back verbatim. OpenAI
 * carries it only in the `thinking_blocks` extension (`{"type": "redacted_thinking", "data"}`).
 */
export interface RedactedThinking {
  readonly _tag: "RedactedThinking"
  readonly data: string
}

/**
 * An OpenAI Responses reasoning item: its `summary` texts and, when the client asked for
 * `include: ["reasoning.encrypted_content"]`, the encrypted reasoning to pass back verbatim (the
 * only way to carry reasoning across turns with `store: false`). Written as a reasoning item only
 * to a Responses upstream; Chat and Messages clients read the summary as unsigned thinking.
 */
export interface Reasoning {
  readonly _tag: "Reasoning"
  /** The item id (`rs_…`); absent when the client sent none. */
  readonly id?: string
  readonly summary: ReadonlyArray<string>
  readonly encryptedContent?: string
}

/**
 * A block only `format` understands (an OpenAI audio or file part, an Anthropic document or
 * server tool block, …), carried as that format's raw JSON.
 */
export interface Opaque {
  readonly _tag: "Opaque"
  readonly format: WireFormat
  readonly value: unknown
}

/** Any block of a neutral message. */
export type Block = Text | Image | ToolUse | ToolResult | Thinking | RedactedThinking | Reasoning | Opaque

/** One conversation turn. */
export interface NeutralMessage {
  readonly role: "user" | "assistant"
  readonly blocks: ReadonlyArray<Block>
}

/**
 * A system message at its place in the conversation: an OpenAI `system` / `developer` message that
 * follows a user, assistant or tool message, or an Anthropic `{"role": "system"}` entry of
 * `messages` (Claude Code sends these for model ids it does not recognise). Text only.
 */
export interface SystemMessage {
  readonly role: "system"
  readonly blocks: ReadonlyArray<Text>
}

/** An entry of a neutral conversation: a turn or a positioned system message. */
export type ConversationEntry = NeutralMessage | SystemMessage

/** A function tool the model may call; `parameters` is its JSON Schema. */
export interface NeutralTool {
  readonly name: string
  readonly description?: string
  readonly parameters: { readonly [key: string]: unknown }
  /** OpenAI's `function.strict` (OpenAI only). */
  readonly strict?: boolean
  /** Anthropic prompt-cache marker (Anthropic only). */
  readonly cacheControl?: unknown
  /**
   * A tool of an OpenAI Responses `namespace` tool: the original pair and the namespace's
   * description (`name` is the flattened name every other format sees).
   */
  readonly namespaced?: NamespacedName & { readonly namespaceDescription?: string }
  /**
   * An OpenAI Responses `custom` (free-form input) tool, offered to other formats as a function of
   * one string property `input`; `format` is its input format (raw JSON), when given.
   */
  readonly custom?: { readonly format?: unknown }
  /** The Gemini function declaration as sent (Gemini only), written back verbatim to Gemini. */
  readonly gemini?: unknown
}

/** A tool definition only `format` understands (OpenAI custom tool, Anthropic server tool), as raw JSON. */
export interface OpaqueTool {
  readonly format: WireFormat
  readonly value: unknown
}

/**
 * How the model may use tools. `Required` is OpenAI's `"required"` and Anthropic's `"any"`;
 * `Opaque` is a choice only one format understands (OpenAI `allowed_tools` / `custom`).
 */
export type NeutralToolChoice =
  | { readonly _tag: "Auto" }
  | { readonly _tag: "Required" }
  | { readonly _tag: "None" }
  | { readonly _tag: "Tool"; readonly name: string }
  | { readonly _tag: "Opaque"; readonly format: WireFormat; readonly value: unknown }

/** The requested output format (OpenAI `response_format`, Anthropic `output_config.format`). */
export type NeutralResponseFormat =
  | { readonly type: "text" }
  | { readonly type: "json_object" }
  | {
    readonly type: "json_schema"
    readonly name: string
    readonly description?: string
    readonly schema: { readonly [key: string]: unknown }
    readonly strict?: boolean
  }

/** A request in neutral form. */
export interface NeutralRequest {
  readonly model: string
  /** System / developer content given before the conversation, in order. */
  readonly instructions: ReadonlyArray<Text>
  /** The conversation: turns and positioned system messages, in order. */
  readonly messages: ReadonlyArray<ConversationEntry>
  readonly tools: ReadonlyArray<NeutralTool>
  /** Tools only one format understands, sent after `tools` to an upstream of that format. */
  readonly opaqueTools: ReadonlyArray<OpaqueTool>
  readonly toolChoice?: NeutralToolChoice
  readonly parallelToolCalls?: boolean
  readonly maxOutputTokens?: number
  readonly temperature?: number
  readonly topP?: number
  readonly stop: ReadonlyArray<string>
  readonly stream: boolean
  readonly responseFormat?: NeutralResponseFormat
  /** OpenAI `user` / Anthropic `metadata.user_id`. */
  readonly user?: string
  /**
   * Top-level fields of the inbound body with no neutral slot, verbatim (vendor extensions, and
   * known fields of one format such as OpenAI `seed` or Anthropic `top_k`). Each outbound
   * translator forwards them, minus the fields known to belong only to the other format.
   */
  readonly extra: { readonly [key: string]: unknown }
  /** What only an OpenAI Responses upstream understands (set when the request came from Responses). */
  readonly responses?: ResponsesOnly
  /** What only a Gemini upstream understands (set when the request came from Gemini). */
  readonly gemini?: GeminiOnly
}

/**
 * The parts of a Gemini `generateContent` request with no neutral slot and no meaning for the other
 * formats; only `toGeminiRequest` writes them.
 */
export interface GeminiOnly {
  /**
   * Top-level Gemini fields verbatim (`safetySettings`, `cachedContent`, `labels`, …); a
   * `generationConfig` or `toolConfig` here holds only the keys with no neutral slot
   * (`thinkingConfig`, `responseModalities`, `retrievalConfig`, …).
   */
  readonly fields: { readonly [key: string]: unknown }
}

/**
 * The parts of an OpenAI Responses request with no neutral slot and no meaning for Chat or
 * Messages; only `toResponsesRequest` writes them.
 */
export interface ResponsesOnly {
  /** Top-level Responses-only fields (`include`, `client_metadata`, `reasoning.summary`, …), verbatim. */
  readonly fields: { readonly [key: string]: unknown }
  /**
   * How `instructions` were laid out: whether the first text was the top-level `instructions`
   * field, then the number of text parts of each leading system / developer message item.
   */
  readonly instructionLayout: {
    readonly field: boolean
    readonly items: ReadonlyArray<{ readonly role: "system" | "developer"; readonly texts: number }>
  }
  /**
   * The request's `additional_tools` input items (Codex's tools in the input), verbatim, each with
   * its place: the number of leading system / developer items (of `instructionLayout`) and of
   * `messages` before it; and the names of the neutral tools they declared (in `tools`, for every
   * upstream; a Responses upstream gets them back in these items, not in its `tools`).
   */
  readonly additionalTools?: {
    readonly items: ReadonlyArray<
      { readonly item: unknown; readonly leadingItems: number; readonly messages: number }
    >
    readonly toolNames: ReadonlyArray<string>
  }
}

/** Why generation stopped, in Anthropic's vocabulary; any other upstream value is kept as is. */
export type StopReason = "end_turn" | "max_tokens" | "tool_use" | "stop_sequence" | "refusal" | (string & {})

/** Token usage. `inputTokens` counts ALL prompt tokens, cached and cache-written included. */
export interface NeutralUsage {
  readonly inputTokens: number
  readonly outputTokens: number
  readonly cacheReadTokens?: number
  /** Every cache write (those kept for an hour included). */
  readonly cacheCreationTokens?: number
  /** The cache writes kept for an hour (Anthropic's `ephemeral_1h_input_tokens`). */
  readonly cacheCreation1hTokens?: number
  readonly reasoningTokens?: number
  /** The provider's own charge for the call in USD (`usage.cost`), when it reported one. */
  readonly costUsd?: number
}

/** A block of a buffered response. */
export type ResponseBlock = Text | ToolUse | Thinking | RedactedThinking | Reasoning

/** A buffered response in neutral form. */
export interface NeutralResponse {
  readonly id: string
  readonly model: string
  /** OpenAI `created` (seconds) when known. */
  readonly created?: number
  readonly content: ReadonlyArray<ResponseBlock>
  readonly stopReason: StopReason | null
  readonly stopSequence?: string
  /** Zeros when the upstream reported none. */
  readonly usage: NeutralUsage
}

/** A text block. */
export const text = (value: string): Text => ({ _tag: "Text", text: value })

/**
 * True when the request is a new user turn (docs/routes.md): its last message that is not a
 * system message is a user message and not every block is a `ToolResult` (an empty user message
 * counts as a continuation). Positioned system messages are skipped, so `[user, system]` is a user
 * turn and `[…, user(tool results), system]` a continuation.
 */
export const isUserTurn = (request: NeutralRequest): boolean => {
  for (let i = request.messages.length - 1; i >= 0; i--) {
    const message = request.messages[i]
    if (message === undefined || message.role === "system") continue
    return message.role === "user" && !message.blocks.every((b) => b._tag === "ToolResult")
  }
  return false
}
