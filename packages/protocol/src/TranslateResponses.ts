/**
 * Pure translations between the OpenAI Responses API ({@link module:OpenAiResponses}) and the
 * neutral form of {@link module:Neutral}: requests both ways, buffered responses both ways, and two
 * stateful stream translators (OpenAI Chat chunks → Responses events, Responses events → Chat
 * chunks; Anthropic streams go through {@link module:Translate}'s translators first / after).
 *
 * Requests from Responses (`fromResponsesRequest`):
 * - `instructions` (when not `""`) and the system / developer message items before the first
 *   other item are `instructions`, in order (their layout is remembered in `responses` so a
 *   Responses upstream gets the same items back); a later system / developer item is a positioned
 *   system message. `input` as a string is one user message.
 * - user message items → user messages (`input_text` → Text, `input_image` with a URL or `data:`
 *   URL → Image, other parts → opaque); assistant message items, `function_call`,
 *   `custom_tool_call` and `reasoning` items (and hosted tool call items) that follow each other are
 *   ONE assistant message, in order (`output_text` / `refusal` → Text, reasoning → {@link N.Reasoning});
 *   consecutive `function_call_output` / `custom_tool_call_output` items are one user message of
 *   ToolResults.
 * - tools: `function` → a tool; `custom` (free-form) → a tool with {@link customToolParameters}
 *   and `custom` set, its calls a ToolUse whose `input` is `{"input": <text>}`; each tool of a
 *   `namespace` → a tool named {@link flatToolName}`(namespace, name)` with `namespaced` set (calls
 *   likewise); hosted tools (`web_search`, …) → opaque tools. Fails when two tools end up with one
 *   name.
 * - `text.format` → response format, `text.verbosity` → `extra.verbosity` and `reasoning.effort`
 *   → `extra.reasoning_effort` (Chat's names); `max_output_tokens`, `temperature`, `top_p`,
 *   `parallel_tool_calls`, `tool_choice`, `stream`, `user` → their neutral slots; the fields in
 *   {@link responsesOnlyFields} (and the rest of `text` / `reasoning`) → `responses.fields`;
 *   anything else (`store`, `metadata`, `prompt_cache_key`, `service_tier`, vendor fields) →
 *   `extra`, forwarded as is.
 *
 * Requests to Responses (`toResponsesRequest`) write the above back; a Responses request read and
 * written again is equal to the input but for these normalisations: message items get `type:
 * "message"` and lose `id` / `status` / `phase`; string `content` becomes `input_text` parts;
 * consecutive assistant message items of one turn become one; a tool output of exactly one text
 * part becomes a string; function tools without `parameters` get `{"type": "object",
 * "properties": {}}`; hosted tools come after the others; `null` optional fields are left out.
 * From other formats: instructions become ONE leading `developer` item (one `input_text` per
 * text), positioned system messages `developer` items in place; thinking (Chat reasoning,
 * Anthropic thinking, signed or redacted) is DROPPED (it is not OpenAI's encrypted reasoning);
 * `stop` is DROPPED (Responses has no stop sequences); a `user` longer than
 * `Translate.maxOpenAiUserLength` characters (Claude Code's JSON id) is DROPPED, as for Chat; Anthropic server tools are DROPPED (as
 * hosted tools are for Chat / Messages); an Anthropic tool result's `is_error` is dropped; the
 * Chat-only fields in {@link chatOnlyFields} and Anthropic-only fields are dropped; a Chat custom
 * tool becomes a Responses custom tool. It FAILS (TranslationError, 400) for `n` > 1, a content
 * part or block only another format understands (audio, file, document, a Chat custom tool call)
 * and a tool choice only another format understands (`allowed_tools`).
 *
 * Requests from Responses to Chat / Messages go through {@link toChatRequest} /
 * {@link toMessagesRequest} (which check with {@link portable}, then call `Translate`):
 * - DROPPED by design: hosted tools (`web_search`, …) and hosted tool call items in the history;
 *   reasoning items (encrypted reasoning only OpenAI can read; summaries are not the reasoning,
 *   so no lossless thinking exists); `responses.fields` (`include`, `client_metadata`,
 *   `reasoning.summary`, …); namespace / custom markers (the upstream sees flat function tools);
 *   item ids; an assistant turn left empty by these drops;
 * - FAIL (TranslationError, 400): `previous_response_id`, `conversation` and `prompt` (server-side
 *   state Chat and Messages cannot see), `background: true`, an `item_reference` or other unknown
 *   item (`compaction`…), an opaque content part (`input_file`, `input_audio`, an image by
 *   `file_id`), a hosted or `allowed_tools` tool choice; plus whatever `Translate` refuses.
 * - `developer` messages are system content (instructions or positioned system messages).
 *
 * Responses (buffered): `fromResponsesResponse` reads message text (and refusals) as Text,
 * function / custom tool calls as ToolUse (flattened names, custom input as `{"input"}`), reasoning
 * items as Reasoning; hosted tool items are DROPPED; `incomplete` with `max_output_tokens` →
 * `max_tokens`, with `content_filter` → `refusal`; `completed` → `tool_use` when a call is
 * present, else `end_turn`. `toResponsesResponse` writes Reasoning back exactly, Thinking as a
 * reasoning item whose summary is its text (signatures and redacted thinking DROPPED), texts as one
 * message item, calls as `function_call` / `custom_tool_call` with their namespace restored (from
 * the ToolUse, else from the request's {@link ToolMap}).
 *
 * Streams: see {@link chatToResponsesStream} and {@link responsesToChatStream}; a stream that fails
 * after its headers ends with {@link streamErrorEvents}.
 */
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"
import type * as Anthropic from "./AnthropicMessages.js"
import { TranslationError } from "./Errors.js"
import { clip } from "./Excerpt.js"
import type * as N from "./Neutral.js"
import type * as OpenAi from "./OpenAiChat.js"
import * as R from "./OpenAiResponses.js"
import * as Translate from "./Translate.js"

type JsonObject = { readonly [key: string]: unknown }

// ---------------------------------------------------------------------------------------------
// helpers

const fail = (reason: string) => Either.left(new TranslationError({ reason }))

const emptyObjectSchema: JsonObject = { type: "object", properties: {} }

const present = <A>(value: A | null | undefined): value is A => value !== undefined && value !== null

const textBlocks = (content: string): ReadonlyArray<N.Text> => content === "" ? [] : [{ _tag: "Text", text: content }]

const parseJson = Schema.decodeEither(Schema.parseJson())

/** Tool-call arguments: `""` means no arguments; unparsable text gives `undefined`. */
const parseArguments = (args: string): unknown => args.trim() === "" ? {} : Either.getOrUndefined(parseJson(args))

const typeOf = (value: unknown): string => {
  const type = Predicate.isRecord(value) ? value["type"] : undefined
  return Predicate.isString(type) ? type : "unknown"
}

/** The fields of `body` not named in `skip`, verbatim. */
const fieldsExcept = (body: object, skip: ReadonlyArray<string>): Record<string, unknown> => {
  const out: Record<string, unknown> = {}
  const entries: ReadonlyArray<readonly [string, unknown]> = Object.entries(body)
  for (const [key, value] of entries) if (!skip.includes(key)) out[key] = value
  return out
}

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

const isFunctionTool = Schema.is(R.FunctionTool)
const isCustomTool = Schema.is(R.CustomTool)
const isNamespaceTool = Schema.is(R.NamespaceTool)
const isHostedTool = Schema.is(R.HostedTool)
const isResponsesContentPart = Schema.is(R.ContentPart)
const isResponsesInputItem = Schema.is(R.InputItem)
const isResponsesToolChoice = Schema.is(R.ToolChoice)
const isMessageItem = Schema.is(R.MessageItem)

/**
 * Narrows a wire union by its `type`. Exact because every "other" member rejects the known `type`
 * values in its schema filter.
 */
const ofType = <B extends { readonly type?: string | undefined }, T extends string>(
  value: B,
  type: T
): value is Extract<B, { readonly type: T }> => value.type === type

// ---------------------------------------------------------------------------------------------
// tool names

/** The longest tool name both Chat (`^[a-zA-Z0-9_-]{1,64}$`) and Messages (at most 128) accept. */
export const maxToolNameLength = 64

/** The tool names Chat and Messages both accept. */
export const portableToolName: RegExp = /^[a-zA-Z0-9_-]{1,64}$/

/** What joins a namespace and a tool name in a flattened name. */
export const namespaceSeparator = "__"

/** FNV-1a (32 bit) of `text`, 7 base-36 digits. */
const shortHash = (text: string): string => {
  let hash = 0x811c9dc5
  for (const char of text) {
    hash ^= char.codePointAt(0) ?? 0
    hash = Math.imul(hash, 0x01000193) >>> 0
  }
  return hash.toString(36).padStart(7, "0")
}

/**
 * The name a tool of a Responses `namespace` gets for Chat and Messages upstreams (and in the
 * neutral form): `<namespace>__<name>` when that matches {@link portableToolName}, otherwise that
 * text with every other character replaced by `_`, cut so that `_` and a 7-character hash of the
 * pair fit in {@link maxToolNameLength}. Pure, so a response can be mapped back with the request
 * alone ({@link originalToolName}); `fromResponsesRequest` fails if a flattened name collides with
 * another tool's name.
 */
export const flatToolName = (namespace: string, name: string): string => {
  const plain = `${namespace}${namespaceSeparator}${name}`
  if (portableToolName.test(plain)) return plain
  const hash = shortHash(`${namespace}\u0000${name}`)
  const safe = plain.replace(/[^a-zA-Z0-9_-]/g, "_")
  return `${safe.slice(0, maxToolNameLength - hash.length - 1)}_${hash}`
}

/**
 * The namespace and name a flattened tool name stands for in the Responses request `request`
 * (none for a name no namespace tool of `request` produced).
 */
export const originalToolName = (request: R.ResponsesRequest, flatName: string): Option.Option<N.NamespacedName> => {
  for (const tool of request.tools ?? []) {
    if (!isNamespaceTool(tool)) continue
    for (const child of tool.tools) {
      if (flatToolName(tool.name, child.name) === flatName) return Option.some({ namespace: tool.name, name: child.name })
    }
  }
  return Option.none()
}

/**
 * What a Responses client needs to read a call of another format's upstream: the flattened names
 * of its namespace tools and the names of its custom tools (names as the upstream sees them).
 */
export interface ToolMap {
  readonly namespaced: ReadonlyMap<string, N.NamespacedName>
  readonly custom: ReadonlySet<string>
}

/** The {@link ToolMap} of a neutral request (empty unless it came from Responses). */
export const toolMap = (request: N.NeutralRequest): ToolMap => {
  const namespaced = new Map<string, N.NamespacedName>()
  const custom = new Set<string>()
  for (const tool of request.tools) {
    if (tool.namespaced !== undefined) namespaced.set(tool.name, { namespace: tool.namespaced.namespace, name: tool.namespaced.name })
    if (tool.custom !== undefined) custom.add(tool.name)
  }
  return { namespaced, custom }
}

const emptyToolMap: ToolMap = { namespaced: new Map(), custom: new Set() }

/** The JSON Schema a custom (free-form) tool is offered with to Chat and Messages: one string `input`. */
export const customToolParameters: JsonObject = {
  type: "object",
  properties: { input: { type: "string", description: "The complete tool input, verbatim." } },
  required: ["input"],
  additionalProperties: false
}

/** The free-form input of a custom tool call from its neutral `input` (or, failing that, its arguments text). */
const customInput = (input: unknown, args: string | undefined): string => {
  if (Predicate.isRecord(input)) {
    const value = input["input"]
    if (Predicate.isString(value)) return value
    const values = Object.values(input)
    const only = values[0]
    if (values.length === 1 && Predicate.isString(only)) return only
  }
  if (Predicate.isString(input)) return input
  return args ?? JSON.stringify(input ?? {})
}

const customToolUse = (
  callId: string,
  name: string,
  input: string,
  extra: { readonly namespaced?: N.NamespacedName; readonly itemId?: string }
): N.ToolUse => ({
  _tag: "ToolUse",
  id: callId,
  name,
  input: { input },
  arguments: JSON.stringify({ input }),
  custom: true,
  ...extra
})

// ---------------------------------------------------------------------------------------------
// Responses request → neutral

/**
 * Top-level Responses fields only a Responses upstream understands: kept in `responses.fields`
 * (never forwarded to Chat or Messages), written back by {@link toResponsesRequest}.
 */
export const responsesOnlyFields: ReadonlyArray<string> = [
  "include",
  "client_metadata",
  "previous_response_id",
  "conversation",
  "prompt",
  "background",
  "truncation",
  "max_tool_calls",
  "top_logprobs",
  "context_management",
  "prompt_cache_options",
  "moderation"
]

/** Chat Completions fields with no Responses meaning: `toResponsesRequest` drops them from `extra`. */
export const chatOnlyFields: ReadonlyArray<string> = [
  "n",
  "presence_penalty",
  "frequency_penalty",
  "logit_bias",
  "logprobs",
  "top_logprobs",
  "seed",
  "modalities",
  "audio",
  "prediction",
  "web_search_options",
  "functions",
  "function_call",
  "reasoning_effort",
  "verbosity"
]

const mappedFields: ReadonlyArray<string> = [
  "model",
  "input",
  "instructions",
  "tools",
  "tool_choice",
  "parallel_tool_calls",
  "text",
  "max_output_tokens",
  "reasoning",
  "temperature",
  "top_p",
  "stream",
  "user"
]

const partBlock = (part: R.ContentPart): N.Text | N.Image | N.Opaque => {
  if (ofType(part, "input_text") || ofType(part, "output_text")) return { _tag: "Text", text: part.text }
  if (ofType(part, "refusal")) return { _tag: "Text", text: part.refusal }
  if (ofType(part, "input_image") && present(part.image_url) && !present(part.file_id)) {
    const url = part.image_url
    return { _tag: "Image", source: parseDataUrl(url) ?? { kind: "url", url }, ...(part.detail !== undefined ? { detail: part.detail } : {}) }
  }
  return { _tag: "Opaque", format: "openai_responses", value: part }
}

const contentBlocks = (content: string | ReadonlyArray<R.ContentPart>): ReadonlyArray<N.Text | N.Image | N.Opaque> =>
  Predicate.isString(content) ? textBlocks(content) : content.map(partBlock)

const systemTexts = (item: R.MessageItem): Either.Either<ReadonlyArray<N.Text>, TranslationError> => {
  const blocks = contentBlocks(item.content)
  const texts: Array<N.Text> = []
  for (const block of blocks) {
    if (block._tag !== "Text") return fail(`a ${item.role} message with a non-text part cannot be translated`)
    texts.push(block)
  }
  return Either.right(texts)
}

const isToolResults = (message: N.ConversationEntry | undefined): message is N.NeutralMessage =>
  message !== undefined && message.role === "user" && message.blocks.length > 0 &&
  message.blocks.every((b) => b._tag === "ToolResult")

const toolChoiceOf = (choice: R.ToolChoice): N.NeutralToolChoice => {
  if (choice === "auto") return { _tag: "Auto" }
  if (choice === "required") return { _tag: "Required" }
  if (choice === "none") return { _tag: "None" }
  if (ofType(choice, "function") || ofType(choice, "custom")) return { _tag: "Tool", name: choice.name }
  return { _tag: "Opaque", format: "openai_responses", value: choice }
}

const neutralFunctionTool = (tool: R.FunctionTool, name: string): N.NeutralTool => ({
  name,
  parameters: tool.parameters ?? emptyObjectSchema,
  ...(present(tool.description) ? { description: tool.description } : {}),
  ...(present(tool.strict) ? { strict: tool.strict } : {})
})

const neutralCustomTool = (tool: R.CustomTool, name: string): N.NeutralTool => ({
  name,
  parameters: customToolParameters,
  custom: tool.format !== undefined ? { format: tool.format } : {},
  ...(tool.description !== undefined ? { description: tool.description } : {})
})

const neutralTools = (
  tools: ReadonlyArray<R.Tool>
): Either.Either<{ readonly tools: ReadonlyArray<N.NeutralTool>; readonly opaque: ReadonlyArray<N.OpaqueTool> }, TranslationError> => {
  const out: Array<N.NeutralTool> = []
  const opaque: Array<N.OpaqueTool> = []
  for (const tool of tools) {
    if (isFunctionTool(tool)) out.push(neutralFunctionTool(tool, tool.name))
    else if (isCustomTool(tool)) out.push(neutralCustomTool(tool, tool.name))
    else if (isNamespaceTool(tool)) {
      for (const child of tool.tools) {
        const namespaced = {
          namespace: tool.name,
          name: child.name,
          ...(tool.description !== undefined ? { namespaceDescription: tool.description } : {})
        }
        const flat = flatToolName(tool.name, child.name)
        const base = isCustomTool(child) ? neutralCustomTool(child, flat) : neutralFunctionTool(child, flat)
        out.push({ ...base, namespaced })
      }
    } else opaque.push({ format: "openai_responses", value: tool })
  }
  const seen = new Set<string>()
  for (const tool of out) {
    if (seen.has(tool.name)) return fail(`two tools are named ${clip(tool.name)} once namespaces are flattened`)
    seen.add(tool.name)
  }
  return Either.right({ tools: out, opaque })
}

const responseFormatOf = (format: R.TextFormat): N.NeutralResponseFormat =>
  ofType(format, "json_schema")
    ? {
      type: "json_schema",
      name: format.name,
      schema: format.schema,
      ...(format.description !== undefined ? { description: format.description } : {}),
      ...(present(format.strict) ? { strict: format.strict } : {})
    }
    : { type: format.type }

const namespacedOf = (namespace: string | undefined, name: string) =>
  namespace !== undefined ? { name: flatToolName(namespace, name), namespaced: { namespace, name } } : { name }

const itemIdOf = (id: string | null | undefined): { readonly itemId?: string } => present(id) ? { itemId: id } : {}

/**
 * A Responses request in neutral form (rules in the module notes). Fails with a
 * {@link TranslationError} when a system / developer message holds a non-text part, or when two
 * tools have the same name once namespaces are flattened. Never fails for what only some targets
 * cannot take (`previous_response_id`, hosted tools…): {@link portable} decides that per target.
 */
export const fromResponsesRequest = (req: R.ResponsesRequest): Either.Either<N.NeutralRequest, TranslationError> =>
  Either.gen(function*() {
    const items: ReadonlyArray<R.InputItem> = req.input === undefined
      ? []
      : Predicate.isString(req.input)
      ? [{ role: "user", content: req.input }]
      : req.input
    const instructions: Array<N.Text> = []
    const field = present(req.instructions) && req.instructions !== ""
    if (field && present(req.instructions)) instructions.push({ _tag: "Text", text: req.instructions })
    const layoutItems: Array<{ readonly role: "system" | "developer"; readonly texts: number }> = []
    const messages: Array<N.ConversationEntry> = []
    const toAssistant = (block: N.Block) => {
      const last = messages[messages.length - 1]
      if (last !== undefined && last.role === "assistant") messages[messages.length - 1] = { role: "assistant", blocks: [...last.blocks, block] }
      else messages.push({ role: "assistant", blocks: [block] })
    }
    const toResults = (result: N.ToolResult) => {
      const last = messages[messages.length - 1]
      if (isToolResults(last)) messages[messages.length - 1] = { role: "user", blocks: [...last.blocks, result] }
      else messages.push({ role: "user", blocks: [result] })
    }
    for (const item of items) {
      if (isMessageItem(item)) {
        switch (item.role) {
          case "system":
          case "developer": {
            const texts = yield* systemTexts(item)
            if (messages.length === 0) {
              instructions.push(...texts)
              layoutItems.push({ role: item.role, texts: texts.length })
            } else messages.push({ role: "system", blocks: texts })
            break
          }
          case "user":
            messages.push({ role: "user", blocks: contentBlocks(item.content) })
            break
          case "assistant":
            for (const block of contentBlocks(item.content)) toAssistant(block)
            break
        }
      } else if (ofType(item, "function_call")) {
        toAssistant({
          _tag: "ToolUse",
          id: item.call_id,
          input: parseArguments(item.arguments),
          arguments: item.arguments,
          ...namespacedOf(item.namespace, item.name),
          ...itemIdOf(item.id)
        })
      } else if (ofType(item, "custom_tool_call")) {
        const { name, ...namespaced } = namespacedOf(item.namespace, item.name)
        toAssistant(customToolUse(item.call_id, name, item.input, { ...namespaced, ...itemIdOf(item.id) }))
      } else if (ofType(item, "reasoning")) {
        toAssistant({
          _tag: "Reasoning",
          summary: item.summary.map((part) => part.text),
          ...(item.id !== undefined ? { id: item.id } : {}),
          ...(present(item.encrypted_content) ? { encryptedContent: item.encrypted_content } : {})
        })
      } else if (ofType(item, "function_call_output") || ofType(item, "custom_tool_call_output")) {
        toResults({
          _tag: "ToolResult",
          toolUseId: item.call_id,
          content: contentBlocks(item.output),
          isError: false,
          ...(item.type === "custom_tool_call_output" ? { custom: true } : {})
        })
      } else toAssistant({ _tag: "Opaque", format: "openai_responses", value: item })
    }
    const { opaque, tools } = yield* neutralTools(req.tools ?? [])
    const extra: Record<string, unknown> = {}
    const fields: Record<string, unknown> = {}
    const entries: ReadonlyArray<readonly [string, unknown]> = Object.entries(req)
    for (const [key, value] of entries) {
      if (mappedFields.includes(key)) continue
      if (responsesOnlyFields.includes(key)) fields[key] = value
      else extra[key] = value
    }
    if (req.reasoning === null) fields["reasoning"] = null
    else if (req.reasoning !== undefined) {
      const { effort, ...rest } = req.reasoning
      if (present(effort)) extra["reasoning_effort"] = effort
      const kept = effort === null ? { ...rest, effort: null } : rest
      if (Object.keys(kept).length > 0 || effort === undefined) fields["reasoning"] = kept
    }
    let responseFormat: N.NeutralResponseFormat | undefined
    if (req.text === null) fields["text"] = null
    else if (req.text !== undefined) {
      const { format, verbosity, ...rest } = req.text
      if (format !== undefined) responseFormat = responseFormatOf(format)
      if (present(verbosity)) extra["verbosity"] = verbosity
      const kept = verbosity === null ? { ...rest, verbosity: null } : rest
      if (Object.keys(kept).length > 0 || (format === undefined && verbosity === undefined)) fields["text"] = kept
    }
    const request: N.NeutralRequest = {
      model: req.model,
      instructions,
      messages,
      tools,
      opaqueTools: opaque,
      stop: [],
      stream: req.stream === true,
      extra,
      responses: { fields, instructionLayout: { field, items: layoutItems } },
      ...(req.tool_choice !== undefined ? { toolChoice: toolChoiceOf(req.tool_choice) } : {}),
      ...(present(req.parallel_tool_calls) ? { parallelToolCalls: req.parallel_tool_calls } : {}),
      ...(present(req.max_output_tokens) ? { maxOutputTokens: req.max_output_tokens } : {}),
      ...(present(req.temperature) ? { temperature: req.temperature } : {}),
      ...(present(req.top_p) ? { topP: req.top_p } : {}),
      ...(responseFormat !== undefined ? { responseFormat } : {}),
      ...(req.user !== undefined ? { user: req.user } : {})
    }
    return request
  })

// ---------------------------------------------------------------------------------------------
// neutral → Responses request

/**
 * The id prefix of reasoning items switchyard makes from Chat / Anthropic thinking
 * (`rs_switchyard_…`): no OpenAI upstream issued them, so `toResponsesRequest` drops such items
 * when they carry no encrypted content.
 */
export const syntheticReasoningPrefix = "rs_switchyard_"

const describeForeign = (format: N.WireFormat, value: unknown): string =>
  `${format === "openai_chat" ? "an OpenAI Chat" : format === "anthropic_messages" ? "an Anthropic" : "a Responses"} ${
    clip(typeOf(value))
  } block`

const inputText = (text: string): R.InputText => ({ type: "input_text", text })

const systemItem = (role: "system" | "developer", texts: ReadonlyArray<N.Text>): R.InputItem => ({
  type: "message",
  role,
  content: texts.map((t) => inputText(t.text))
})

const responsesPart = (block: N.Text | N.Image | N.Opaque, to: string): Either.Either<R.ContentPart, TranslationError> => {
  switch (block._tag) {
    case "Text":
      return Either.right(inputText(block.text))
    case "Image":
      return Either.right({
        type: "input_image",
        image_url: imageUrl(block.source),
        ...(block.detail !== undefined ? { detail: block.detail } : {})
      })
    case "Opaque":
      return block.format === "openai_responses" && isResponsesContentPart(block.value)
        ? Either.right(block.value)
        : fail(`${describeForeign(block.format, block.value)} cannot be sent to ${to}`)
  }
}

const responsesToolOutput = (
  content: ReadonlyArray<N.Text | N.Image | N.Opaque>
): Either.Either<R.ToolOutput, TranslationError> =>
  Either.gen(function*() {
    const only = content[0]
    if (content.length === 0) return ""
    if (content.length === 1 && only !== undefined && only._tag === "Text") return only.text
    const parts: Array<R.ContentPart> = []
    for (const item of content) {
      // An Anthropic tool_reference (a tool loaded by tool search) reads as text, as for Chat.
      if (item._tag === "Opaque" && item.format === "anthropic_messages" && typeOf(item.value) === "tool_reference") {
        parts.push(inputText(Translate.toolReferenceText(toolNameOf(item.value))))
      } else parts.push(yield* responsesPart(item, "an openai_responses upstream"))
    }
    return parts
  })

const toolNameOf = (value: unknown): string => {
  const name = Predicate.isRecord(value) ? value["tool_name"] : undefined
  return Predicate.isString(name) ? name : ""
}

const callItem = (block: N.ToolUse, tools: ToolMap): R.FunctionCallItem | R.CustomToolCallItem => {
  const origin = block.namespaced ?? tools.namespaced.get(block.name)
  const name = origin?.name ?? block.name
  const namespace = origin !== undefined ? { namespace: origin.namespace } : {}
  const id = block.itemId !== undefined ? { id: block.itemId } : {}
  if (block.custom === true || tools.custom.has(block.name)) {
    return { type: "custom_tool_call", call_id: block.id, name, input: customInput(block.input, block.arguments), ...namespace, ...id }
  }
  return {
    type: "function_call",
    call_id: block.id,
    name,
    arguments: block.arguments ?? JSON.stringify(block.input ?? {}),
    ...namespace,
    ...id
  }
}

const reasoningItem = (block: N.Reasoning): R.ReasoningItem => ({
  type: "reasoning",
  ...(block.id !== undefined ? { id: block.id } : {}),
  summary: block.summary.map((text) => ({ type: "summary_text", text })),
  ...(block.encryptedContent !== undefined ? { encrypted_content: block.encryptedContent } : {})
})

const isSyntheticReasoning = (block: N.Reasoning): boolean =>
  block.encryptedContent === undefined && (block.id === undefined || block.id.startsWith(syntheticReasoningPrefix))

const assistantItems = (
  blocks: ReadonlyArray<N.Block>,
  tools: ToolMap
): Either.Either<ReadonlyArray<R.InputItem>, TranslationError> =>
  Either.gen(function*() {
    const out: Array<R.InputItem> = []
    let texts: Array<R.OutputText> = []
    const flush = () => {
      if (texts.length > 0) out.push({ type: "message", role: "assistant", content: texts })
      texts = []
    }
    for (const block of blocks) {
      switch (block._tag) {
        case "Text":
          texts.push({ type: "output_text", text: block.text })
          continue
        case "ToolUse":
          flush()
          out.push(callItem(block, tools))
          continue
        case "Reasoning":
          flush()
          if (!isSyntheticReasoning(block)) out.push(reasoningItem(block))
          continue
        case "Opaque":
          flush()
          if (block.format === "openai_responses" && isResponsesInputItem(block.value)) out.push(block.value)
          else return yield* fail(`${describeForeign(block.format, block.value)} cannot be sent to an openai_responses upstream`)
          continue
        case "Thinking":
        case "RedactedThinking":
        case "Image":
        case "ToolResult":
          continue
      }
    }
    flush()
    return out
  })

const userItems = (blocks: ReadonlyArray<N.Block>): Either.Either<ReadonlyArray<R.InputItem>, TranslationError> =>
  Either.gen(function*() {
    const out: Array<R.InputItem> = []
    let parts: Array<R.ContentPart> = []
    let wrote = false
    const flush = () => {
      if (parts.length > 0) out.push({ type: "message", role: "user", content: parts })
      if (parts.length > 0) wrote = true
      parts = []
    }
    for (const block of blocks) {
      switch (block._tag) {
        case "ToolResult": {
          flush()
          const output = yield* responsesToolOutput(block.content)
          out.push(
            block.custom === true
              ? { type: "custom_tool_call_output", call_id: block.toolUseId, output }
              : { type: "function_call_output", call_id: block.toolUseId, output }
          )
          wrote = true
          continue
        }
        case "Text":
        case "Image":
        case "Opaque":
          parts.push(yield* responsesPart(block, "an openai_responses upstream"))
          continue
        case "ToolUse":
        case "Thinking":
        case "RedactedThinking":
        case "Reasoning":
          continue
      }
    }
    flush()
    if (!wrote) out.push({ type: "message", role: "user", content: [] })
    return out
  })

const toResponsesTools = (n: N.NeutralRequest): ReadonlyArray<R.Tool> => {
  const out: Array<R.Tool> = []
  const single = (tool: N.NeutralTool, name: string): R.FunctionTool | R.CustomTool =>
    tool.custom !== undefined
      ? {
        type: "custom",
        name,
        ...(tool.description !== undefined ? { description: tool.description } : {}),
        ...(tool.custom.format !== undefined ? { format: tool.custom.format } : {})
      }
      : {
        type: "function",
        name,
        ...(tool.description !== undefined ? { description: tool.description } : {}),
        parameters: tool.parameters,
        ...(tool.strict !== undefined ? { strict: tool.strict } : {})
      }
  for (const tool of n.tools) {
    const ns = tool.namespaced
    if (ns === undefined) {
      out.push(single(tool, tool.name))
      continue
    }
    const last = out[out.length - 1]
    const child = single(tool, ns.name)
    if (last !== undefined && isNamespaceTool(last) && last.name === ns.namespace) {
      out[out.length - 1] = { ...last, tools: [...last.tools, child] }
    } else {
      out.push({
        type: "namespace",
        name: ns.namespace,
        ...(ns.namespaceDescription !== undefined ? { description: ns.namespaceDescription } : {}),
        tools: [child]
      })
    }
  }
  for (const tool of n.opaqueTools) {
    if (tool.format === "openai_responses" && isHostedTool(tool.value)) out.push(tool.value)
    else if (tool.format === "openai_chat" && Predicate.isRecord(tool.value) && tool.value["type"] === "custom") {
      // A Chat custom tool is `{"type": "custom", "custom": {name, description?, format?}}`.
      const custom = tool.value["custom"]
      if (Predicate.isRecord(custom) && Predicate.isString(custom["name"])) {
        const description = custom["description"]
        out.push({
          type: "custom",
          name: custom["name"],
          ...(Predicate.isString(description) ? { description } : {}),
          ...(custom["format"] !== undefined ? { format: custom["format"] } : {})
        })
      }
    }
  }
  return out
}

const toResponsesToolChoice = (n: N.NeutralRequest): Either.Either<R.ToolChoice | undefined, TranslationError> => {
  const choice = n.toolChoice
  if (choice === undefined) return Either.right(undefined)
  switch (choice._tag) {
    case "Auto":
      return Either.right("auto")
    case "Required":
      return Either.right("required")
    case "None":
      return Either.right("none")
    case "Tool": {
      const tool = n.tools.find((t) => t.name === choice.name)
      return Either.right({ type: tool?.custom !== undefined ? "custom" : "function", name: choice.name })
    }
    case "Opaque":
      return choice.format === "openai_responses" && isResponsesToolChoice(choice.value)
        ? Either.right(choice.value)
        : fail("this tool_choice cannot be sent to an openai_responses upstream")
  }
}

const toTextFormat = (format: N.NeutralResponseFormat): R.TextFormat =>
  format.type === "json_schema"
    ? {
      type: "json_schema",
      name: format.name,
      schema: format.schema,
      ...(format.description !== undefined ? { description: format.description } : {}),
      ...(format.strict !== undefined ? { strict: format.strict } : {})
    }
    : { type: format.type }

const instructionItems = (n: N.NeutralRequest): { readonly field?: string; readonly items: ReadonlyArray<R.InputItem> } => {
  const layout = n.responses?.instructionLayout
  const total = layout === undefined ? -1 : (layout.field ? 1 : 0) + layout.items.reduce((sum, item) => sum + item.texts, 0)
  if (layout !== undefined && total === n.instructions.length) {
    let at = layout.field ? 1 : 0
    const items = layout.items.map((item) => {
      const texts = n.instructions.slice(at, at + item.texts)
      at += item.texts
      return systemItem(item.role, texts)
    })
    const first = n.instructions[0]
    return { ...(layout.field && first !== undefined ? { field: first.text } : {}), items }
  }
  return { items: n.instructions.length > 0 ? [systemItem("developer", n.instructions)] : [] }
}

/**
 * A neutral request as a Responses request (rules and failures in the module notes): `input` is
 * always a list of items, `stream: true` only when streaming.
 */
export const toResponsesRequest = (n: N.NeutralRequest): Either.Either<R.ResponsesRequest, TranslationError> =>
  Either.gen(function*() {
    const choices = n.extra["n"]
    if (Predicate.isNumber(choices) && choices > 1) {
      return yield* fail("n > 1 (several choices) cannot be sent to an openai_responses upstream")
    }
    const tools = toolMap(n)
    const { field, items } = instructionItems(n)
    const input: Array<R.InputItem> = [...items]
    for (const message of n.messages) {
      switch (message.role) {
        case "system":
          input.push(systemItem("developer", message.blocks))
          break
        case "user":
          input.push(...yield* userItems(message.blocks))
          break
        case "assistant":
          input.push(...yield* assistantItems(message.blocks, tools))
          break
      }
    }
    const toolList = toResponsesTools(n)
    const toolChoice = yield* toResponsesToolChoice(n)
    const responsesFields = n.responses?.fields ?? {}
    const reasoningRest = responsesFields["reasoning"]
    const effort = n.extra["reasoning_effort"]
    const reasoning = reasoningRest === null && effort === undefined
      ? { reasoning: null }
      : Predicate.isRecord(reasoningRest) || effort !== undefined
      ? { reasoning: { ...(Predicate.isRecord(reasoningRest) ? reasoningRest : {}), ...(Predicate.isString(effort) ? { effort } : {}) } }
      : {}
    const textRest = responsesFields["text"]
    const verbosity = n.extra["verbosity"]
    const text = textRest === null && verbosity === undefined && n.responseFormat === undefined
      ? { text: null }
      : Predicate.isRecord(textRest) || verbosity !== undefined || n.responseFormat !== undefined
      ? {
        text: {
          ...(Predicate.isRecord(textRest) ? textRest : {}),
          ...(n.responseFormat !== undefined ? { format: toTextFormat(n.responseFormat) } : {}),
          ...(Predicate.isString(verbosity) ? { verbosity } : {})
        }
      }
      : {}
    const extra = fieldsExcept(n.extra, [...chatOnlyFields, ...Translate.anthropicOnlyFields])
    const streamOptions = extra["stream_options"]
    if (streamOptions !== undefined) {
      const obfuscation = Predicate.isRecord(streamOptions) ? streamOptions["include_obfuscation"] : undefined
      if (Predicate.isBoolean(obfuscation)) extra["stream_options"] = { include_obfuscation: obfuscation }
      else delete extra["stream_options"]
    }
    const request: R.ResponsesRequest = {
      ...extra,
      ...fieldsExcept(responsesFields, ["reasoning", "text"]),
      model: n.model,
      ...(field !== undefined ? { instructions: field } : {}),
      input,
      ...(toolList.length > 0 ? { tools: toolList } : {}),
      ...(toolChoice !== undefined ? { tool_choice: toolChoice } : {}),
      ...(n.parallelToolCalls !== undefined ? { parallel_tool_calls: n.parallelToolCalls } : {}),
      ...text,
      ...(n.maxOutputTokens !== undefined ? { max_output_tokens: n.maxOutputTokens } : {}),
      ...reasoning,
      ...(n.temperature !== undefined ? { temperature: n.temperature } : {}),
      ...(n.topP !== undefined ? { top_p: n.topP } : {}),
      ...(n.stream ? { stream: true } : {}),
      ...(n.user !== undefined && Array.from(n.user).length <= Translate.maxOpenAiUserLength ? { user: n.user } : {})
    }
    return request
  })

// ---------------------------------------------------------------------------------------------
// Responses-origin requests → Chat / Messages

/** Item types of hosted tool calls and their outputs, dropped on the way to Chat / Messages. */
const isHostedItemType = (type: string): boolean =>
  type.endsWith("_call") || type.endsWith("_call_output") ||
  ["mcp_list_tools", "mcp_approval_request", "mcp_approval_response", "tool_search_output"].includes(type)

/**
 * `n` made ready for a Chat (`openai_chat`) or Messages (`anthropic_messages`) upstream: fails for
 * what those cannot express and drops what has no meaning there (module notes). A request that did
 * not come from Responses is returned unchanged.
 */
export const portable = (
  n: N.NeutralRequest,
  target: "openai_chat" | "anthropic_messages"
): Either.Either<N.NeutralRequest, TranslationError> =>
  Either.gen(function*() {
    const to = `an ${target} upstream`
    const fields = n.responses?.fields ?? {}
    for (const key of ["previous_response_id", "conversation", "prompt"]) {
      if (present(fields[key])) return yield* fail(`${key} (state kept by an OpenAI Responses server) cannot be sent to ${to}`)
    }
    if (fields["background"] === true) return yield* fail(`background mode cannot be sent to ${to}`)
    const messages: Array<N.ConversationEntry> = []
    for (const message of n.messages) {
      if (message.role === "system") {
        messages.push(message)
        continue
      }
      const blocks: Array<N.Block> = []
      for (const block of message.blocks) {
        if (block._tag === "Reasoning") continue
        if (block._tag === "Opaque" && block.format === "openai_responses") {
          const type = typeOf(block.value)
          if (message.role === "assistant" && isHostedItemType(type)) continue
          return yield* fail(`a Responses ${clip(type)} ${message.role === "assistant" ? "item" : "content part"} cannot be sent to ${to}`)
        }
        if (block._tag === "ToolResult") {
          for (const item of block.content) {
            if (item._tag === "Opaque" && item.format === "openai_responses") {
              return yield* fail(`a Responses ${clip(typeOf(item.value))} tool output part cannot be sent to ${to}`)
            }
          }
        }
        blocks.push(block)
      }
      if (blocks.length > 0 || message.blocks.length === 0) messages.push({ role: message.role, blocks })
    }
    const choice = n.toolChoice
    if (choice?._tag === "Opaque" && choice.format === "openai_responses") {
      return yield* fail(`a Responses tool_choice of type ${clip(typeOf(choice.value))} cannot be sent to ${to}`)
    }
    const { responses: _responses, ...rest } = n
    return { ...rest, messages, opaqueTools: n.opaqueTools.filter((tool) => tool.format !== "openai_responses") }
  })

/** `n` as a Chat request: {@link portable}, then `Translate.toOpenAiRequest`. */
export const toChatRequest = (n: N.NeutralRequest): Either.Either<OpenAi.ChatCompletionRequest, TranslationError> =>
  Either.map(portable(n, "openai_chat"), Translate.toOpenAiRequest)

/** `n` as a Messages request: {@link portable}, then `Translate.toAnthropicRequest`. */
export const toMessagesRequest = (n: N.NeutralRequest): Either.Either<Anthropic.MessagesRequest, TranslationError> =>
  Either.flatMap(portable(n, "anthropic_messages"), Translate.toAnthropicRequest)

// ---------------------------------------------------------------------------------------------
// usage, ids, stop reasons

/** Neutral usage of Responses usage (`input_tokens` already counts cached tokens). */
export const fromResponsesUsage = (usage: R.Usage | null | undefined): N.NeutralUsage => {
  if (!present(usage)) return { inputTokens: 0, outputTokens: 0 }
  const cached = usage.input_tokens_details?.cached_tokens
  const written = usage.input_tokens_details?.cache_write_tokens
  const reasoning = usage.output_tokens_details?.reasoning_tokens
  return {
    inputTokens: usage.input_tokens,
    outputTokens: usage.output_tokens,
    ...(present(cached) ? { cacheReadTokens: cached } : {}),
    ...(present(written) ? { cacheCreationTokens: written } : {}),
    ...(present(reasoning) ? { reasoningTokens: reasoning } : {})
  }
}

/** Responses usage of neutral usage; the details objects only when they have a count. */
export const toResponsesUsage = (usage: N.NeutralUsage): R.Usage => ({
  input_tokens: usage.inputTokens,
  output_tokens: usage.outputTokens,
  total_tokens: usage.inputTokens + usage.outputTokens,
  ...(usage.cacheReadTokens !== undefined || usage.cacheCreationTokens !== undefined
    ? {
      input_tokens_details: {
        ...(usage.cacheReadTokens !== undefined ? { cached_tokens: usage.cacheReadTokens } : {}),
        ...(usage.cacheCreationTokens !== undefined ? { cache_write_tokens: usage.cacheCreationTokens } : {})
      }
    }
    : {}),
  ...(usage.reasoningTokens !== undefined ? { output_tokens_details: { reasoning_tokens: usage.reasoningTokens } } : {})
})

/**
 * `resp_…` ids stay; a `chatcmpl` / `msg_` prefix is replaced by `resp_`; any other id gets the
 * `resp_` prefix; an empty id becomes `resp_switchyard`.
 */
export const responseId = (id: string): string => {
  if (id === "") return "resp_switchyard"
  if (id.startsWith("resp_")) return id
  for (const prefix of ["chatcmpl-", "chatcmpl_", "msg_"]) {
    if (id.startsWith(prefix)) return `resp_${id.slice(prefix.length)}`
  }
  return `resp_${id}`
}

/**
 * The status of a response ending with `stopReason`: `max_tokens` / `model_context_window_exceeded`
 * → `incomplete` (`max_output_tokens`), `refusal` → `incomplete` (`content_filter`), otherwise
 * `completed`.
 */
export const responseStatus = (
  stopReason: N.StopReason | null
): { readonly status: "completed" | "incomplete"; readonly reason?: "max_output_tokens" | "content_filter" } => {
  switch (stopReason) {
    case "max_tokens":
    case "model_context_window_exceeded":
      return { status: "incomplete", reason: "max_output_tokens" }
    case "refusal":
      return { status: "incomplete", reason: "content_filter" }
    default:
      return { status: "completed" }
  }
}

const stopReasonOf = (response: R.ResponseObject, hasCall: boolean): N.StopReason | null => {
  switch (response.status) {
    case "incomplete":
      return response.incomplete_details?.reason === "content_filter" ? "refusal" : "max_tokens"
    case "completed":
    case undefined:
      return hasCall ? "tool_use" : "end_turn"
    default:
      return null
  }
}

// ---------------------------------------------------------------------------------------------
// buffered responses

const outputBlocks = (item: R.OutputItem): ReadonlyArray<N.ResponseBlock> => {
  if (isMessageItem(item)) {
    return contentBlocks(item.content).flatMap((block) => block._tag === "Text" ? [block] : [])
  }
  if (ofType(item, "function_call")) {
    return [{
      _tag: "ToolUse",
      id: item.call_id,
      input: parseArguments(item.arguments),
      arguments: item.arguments,
      ...namespacedOf(item.namespace, item.name),
      ...itemIdOf(item.id)
    }]
  }
  if (ofType(item, "custom_tool_call")) {
    const { name, ...namespaced } = namespacedOf(item.namespace, item.name)
    return [customToolUse(item.call_id, name, item.input, { ...namespaced, ...itemIdOf(item.id) })]
  }
  if (ofType(item, "reasoning")) {
    return [{
      _tag: "Reasoning",
      summary: item.summary.map((part) => part.text),
      ...(item.id !== undefined ? { id: item.id } : {}),
      ...(present(item.encrypted_content) ? { encryptedContent: item.encrypted_content } : {})
    }]
  }
  return []
}

/** A Responses response object in neutral form (module notes); no usage gives zeros. */
export const fromResponsesResponse = (r: R.ResponseObject): N.NeutralResponse => {
  const content = r.output.flatMap(outputBlocks)
  return {
    id: r.id,
    model: r.model,
    created: r.created_at,
    content,
    stopReason: stopReasonOf(r, content.some((b) => b._tag === "ToolUse")),
    usage: fromResponsesUsage(r.usage)
  }
}

/** Options of the neutral → Responses translations. */
export interface ToResponsesOptions {
  /** The request's tools (see {@link toolMap}), to restore namespaces and custom calls. */
  readonly tools?: ToolMap
}

const messageOutput = (id: string, texts: ReadonlyArray<string>, status: string): R.MessageItem => ({
  type: "message",
  id,
  role: "assistant",
  status,
  content: texts.map((text): R.OutputText => ({ type: "output_text", text, annotations: [] }))
})

const thinkingReasoning = (id: string, text: string): R.ReasoningItem => ({
  type: "reasoning",
  id,
  summary: text === "" ? [] : [{ type: "summary_text", text }]
})

const withStatus = (item: R.FunctionCallItem | R.CustomToolCallItem): R.OutputItem =>
  ofType(item, "function_call") ? { ...item, status: "completed" } : item

/** The output items of neutral response content (item ids `<prefix>_switchyard_<output index>` when new). */
const outputItems = (content: ReadonlyArray<N.ResponseBlock>, tools: ToolMap): ReadonlyArray<R.OutputItem> => {
  const out: Array<R.OutputItem> = []
  let texts: Array<string> = []
  const flush = () => {
    if (texts.length > 0) out.push(messageOutput(`msg_switchyard_${out.length}`, texts, "completed"))
    texts = []
  }
  for (const block of content) {
    switch (block._tag) {
      case "Text":
        texts.push(block.text)
        break
      case "Thinking":
        if (block.text === "") break
        flush()
        out.push(thinkingReasoning(`${syntheticReasoningPrefix}${out.length}`, block.text))
        break
      case "RedactedThinking":
        break
      case "Reasoning":
        flush()
        out.push(reasoningItem(block))
        break
      case "ToolUse": {
        flush()
        const item = callItem(block, tools)
        const prefix = item.type === "custom_tool_call" ? "ctc" : "fc"
        out.push(withStatus({ ...item, id: item.id ?? `${prefix}_switchyard_${out.length}` }))
        break
      }
    }
  }
  flush()
  return out
}

/** A neutral response as a Responses response object (module notes); `created_at` defaults to 0. */
export const toResponsesResponse = (n: N.NeutralResponse, options: ToResponsesOptions = {}): R.ResponseObject => {
  const { reason, status } = responseStatus(n.stopReason)
  return {
    id: responseId(n.id),
    object: "response",
    created_at: n.created ?? 0,
    status,
    model: n.model,
    output: outputItems(n.content, options.tools ?? emptyToolMap),
    usage: toResponsesUsage(n.usage),
    error: null,
    incomplete_details: reason !== undefined ? { reason } : null
  }
}

// ---------------------------------------------------------------------------------------------
// streams: Chat chunks → Responses events

/** Translates one Chat chunk stream into Responses events; see {@link chatToResponsesStream}. */
export interface ChatToResponsesStream {
  readonly push: (chunk: OpenAi.ChatCompletionChunk) => ReadonlyArray<R.StreamEvent>
  /** Completes the stream (idempotent; nothing after a clean end). */
  readonly end: () => ReadonlyArray<R.StreamEvent>
  /** The terminal error sequence of a stream that failed after its headers ({@link streamErrorEvents}). */
  readonly fail: (message: string) => ReadonlyArray<R.StreamEvent>
}

type OpenItem =
  | { readonly kind: "message"; readonly index: number; readonly id: string; text: string }
  | { readonly kind: "reasoning"; readonly index: number; readonly id: string; text: string }
  | {
    readonly kind: "call"
    readonly index: number
    readonly key: number
    readonly item: R.FunctionCallItem | R.CustomToolCallItem
    args: string
  }

interface PendingCall {
  id: string | undefined
  name: string | undefined
  pending: string
  started: boolean
}

/**
 * The terminal events of a Responses stream that failed after its headers (anchor §6.4): an
 * `error` event (OpenAI's `code` / `message` / `param`, plus the anchor's `error: {"message",
 * "type": "SwitchyardError"}`), then `response.failed` with `status: "failed"`, the same error and
 * the output completed so far. No `response.completed` follows.
 */
export const streamErrorEvents = (options: {
  readonly message: string
  readonly sequenceNumber: number
  readonly response: R.ResponseObject
}): ReadonlyArray<R.StreamEvent> => [
  {
    type: "error",
    sequence_number: options.sequenceNumber,
    code: "SwitchyardError",
    message: options.message,
    param: null,
    error: { message: options.message, type: "SwitchyardError" }
  },
  {
    type: "response.failed",
    sequence_number: options.sequenceNumber + 1,
    response: {
      ...options.response,
      status: "failed",
      error: { code: "server_error", message: options.message },
      incomplete_details: null
    }
  }
]

/**
 * A stateful translator of one OpenAI Chat chunk stream (from a Chat upstream, or an Anthropic
 * one through `Translate.anthropicToOpenAiStream`) into Responses events, one instance per stream;
 * only choice 0 is read. Every event has a `sequence_number` one above the previous, from 0.
 *
 * - The first chunk emits `response.created` and `response.in_progress` (id `options.id`, else
 *   {@link responseId} of the chunk id; model `options.model`; `created_at` `options.createdAt` or 0).
 * - `reasoning_content` (and the text of `thinking_blocks` entries) → a reasoning item
 *   (`rs_switchyard_<n>`) with one summary part, streamed as `reasoning_summary_text.delta`s; a
 *   thinking signature ends that item (the next thinking opens another); signatures and redacted
 *   thinking are not carried. `content` / `refusal` → a message item with one `output_text` part.
 *   Each tool call → a `function_call` item opened once its name is known (earlier fragments are
 *   buffered), its argument fragments as `function_call_arguments.delta`s; a call of a
 *   namespaced tool of `options.tools` gets its namespace and original name back, and a call of a
 *   custom tool becomes a `custom_tool_call` whose input (read from the `{"input"}` arguments) is
 *   sent whole when the call ends. A new kind of content closes the open item first (`…done`
 *   events, then `output_item.done`), so items never overlap; fragments of an already closed call
 *   are dropped.
 * - Completion (when a usage chunk arrives with or after the finish reason, else in `end()`):
 *   `response.completed`, or `response.incomplete` for `length` / `content_filter`, with every
 *   output item and the usage.
 *
 * `fail(message)` emits {@link streamErrorEvents} (nothing if the stream already ended); later
 * calls return nothing.
 */
export const chatToResponsesStream = (options: {
  readonly model: string
  readonly id?: string
  readonly createdAt?: number
  readonly tools?: ToolMap
}): ChatToResponsesStream => {
  const tools = options.tools ?? emptyToolMap
  let id = options.id ?? "resp_switchyard"
  let sequence = 0
  let started = false
  let finished = false
  let finishReason: string | null = null
  let usage: OpenAi.Usage | undefined
  let open: OpenItem | undefined
  const output: Array<R.OutputItem> = []
  const calls = new Map<number, PendingCall>()

  const emit = (out: Array<R.StreamEvent>, event: R.StreamEvent) => {
    out.push({ ...event, sequence_number: sequence++ })
  }
  const response = (status: string, extra: Partial<R.ResponseObject> = {}): R.ResponseObject => ({
    id,
    object: "response",
    created_at: options.createdAt ?? 0,
    status,
    model: options.model,
    output: [...output],
    ...extra
  })
  const start = (out: Array<R.StreamEvent>) => {
    if (started) return
    started = true
    emit(out, { type: "response.created", sequence_number: 0, response: response("in_progress") })
    emit(out, { type: "response.in_progress", sequence_number: 0, response: response("in_progress") })
  }
  const close = (out: Array<R.StreamEvent>) => {
    const item = open
    if (item === undefined) return
    open = undefined
    const ref = { item_id: item.kind === "call" ? item.item.id ?? "" : item.id, output_index: item.index }
    let done: R.OutputItem
    switch (item.kind) {
      case "message": {
        const part: R.OutputText = { type: "output_text", text: item.text, annotations: [] }
        emit(out, { type: "response.output_text.done", sequence_number: 0, ...ref, content_index: 0, text: item.text, logprobs: [] })
        emit(out, { type: "response.content_part.done", sequence_number: 0, ...ref, content_index: 0, part })
        done = messageOutput(item.id, [item.text], "completed")
        break
      }
      case "reasoning": {
        const part: R.SummaryText = { type: "summary_text", text: item.text }
        emit(out, { type: "response.reasoning_summary_text.done", sequence_number: 0, ...ref, summary_index: 0, text: item.text })
        emit(out, { type: "response.reasoning_summary_part.done", sequence_number: 0, ...ref, summary_index: 0, part })
        done = thinkingReasoning(item.id, item.text)
        break
      }
      case "call": {
        if (item.item.type === "custom_tool_call") {
          const input = customInput(parseArguments(item.args), item.args)
          if (input !== "") emit(out, { type: "response.custom_tool_call_input.delta", sequence_number: 0, ...ref, delta: input })
          emit(out, { type: "response.custom_tool_call_input.done", sequence_number: 0, ...ref, input })
          done = { ...item.item, input }
        } else {
          emit(out, {
            type: "response.function_call_arguments.done",
            sequence_number: 0,
            ...ref,
            arguments: item.args,
            name: item.item.name
          })
          done = { ...item.item, arguments: item.args, status: "completed" }
        }
        break
      }
    }
    output.push(done)
    emit(out, { type: "response.output_item.done", sequence_number: 0, output_index: item.index, item: done })
  }
  const openText = (out: Array<R.StreamEvent>, kind: "message" | "reasoning"): OpenItem & { kind: "message" | "reasoning" } => {
    if (open !== undefined && open.kind === kind) return open
    close(out)
    const index = output.length
    if (kind === "message") {
      const next = { kind, index, id: `msg_switchyard_${index}`, text: "" }
      open = next
      emit(out, { type: "response.output_item.added", sequence_number: 0, output_index: index, item: messageOutput(next.id, [], "in_progress") })
      emit(out, {
        type: "response.content_part.added",
        sequence_number: 0,
        item_id: next.id,
        output_index: index,
        content_index: 0,
        part: { type: "output_text", text: "", annotations: [] }
      })
      return next
    }
    const next = { kind, index, id: `${syntheticReasoningPrefix}${index}`, text: "" }
    open = next
    emit(out, { type: "response.output_item.added", sequence_number: 0, output_index: index, item: thinkingReasoning(next.id, "") })
    emit(out, {
      type: "response.reasoning_summary_part.added",
      sequence_number: 0,
      item_id: next.id,
      output_index: index,
      summary_index: 0,
      part: { type: "summary_text", text: "" }
    })
    return next
  }
  const reasoning = (out: Array<R.StreamEvent>, text: string, signed: boolean) => {
    if (text !== "") {
      const item = openText(out, "reasoning")
      item.text += text
      emit(out, { type: "response.reasoning_summary_text.delta", sequence_number: 0, item_id: item.id, output_index: item.index, summary_index: 0, delta: text })
    }
    if (signed && open?.kind === "reasoning") close(out)
  }
  const startCall = (out: Array<R.StreamEvent>, key: number, state: PendingCall) => {
    close(out)
    state.started = true
    const index = output.length
    const flat = state.name ?? ""
    const origin = tools.namespaced.get(flat)
    const name = origin?.name ?? flat
    const namespace = origin !== undefined ? { namespace: origin.namespace } : {}
    const callId = state.id ?? `call_switchyard_${index}`
    const item: R.FunctionCallItem | R.CustomToolCallItem = tools.custom.has(flat)
      ? { type: "custom_tool_call", id: `ctc_switchyard_${index}`, call_id: callId, name, input: "", ...namespace }
      : { type: "function_call", id: `fc_switchyard_${index}`, call_id: callId, name, arguments: "", status: "in_progress", ...namespace }
    open = { kind: "call", index, key, item, args: "" }
    emit(out, { type: "response.output_item.added", sequence_number: 0, output_index: index, item })
    if (state.pending !== "") callArgs(out, state.pending)
    state.pending = ""
  }
  const callArgs = (out: Array<R.StreamEvent>, args: string) => {
    if (open?.kind !== "call" || args === "") return
    open.args += args
    if (open.item.type === "function_call") {
      emit(out, {
        type: "response.function_call_arguments.delta",
        sequence_number: 0,
        item_id: open.item.id ?? "",
        output_index: open.index,
        delta: args
      })
    }
  }
  const complete = (out: Array<R.StreamEvent>) => {
    close(out)
    for (const [key, state] of [...calls.entries()].sort(([a], [b]) => a - b)) {
      if (!state.started) {
        startCall(out, key, state)
        close(out)
      }
    }
    const { reason, status } = responseStatus(Translate.fromFinishReason(finishReason))
    const final = response(status, {
      usage: toResponsesUsage(Translate.fromOpenAiUsage(usage)),
      error: null,
      incomplete_details: reason !== undefined ? { reason } : null
    })
    emit(out, { type: status === "completed" ? "response.completed" : "response.incomplete", sequence_number: 0, response: final })
    finished = true
  }

  const push = (chunk: OpenAi.ChatCompletionChunk): ReadonlyArray<R.StreamEvent> => {
    if (finished) return []
    const out: Array<R.StreamEvent> = []
    if (!started) id = options.id ?? responseId(chunk.id)
    start(out)
    const choice = chunk.choices.find((c) => c.index === 0)
    if (choice !== undefined) {
      const delta = choice.delta
      const entries = delta.thinking_blocks ?? []
      let known = false
      for (const entry of entries) {
        if (entry.type === "thinking" && "thinking" in entry && Predicate.isString(entry.thinking)) {
          known = true
          const signature = "signature" in entry ? entry.signature : undefined
          reasoning(out, entry.thinking, Predicate.isString(signature) && signature !== "")
        } else if (entry.type === "redacted_thinking") known = true
      }
      if (!known) reasoning(out, delta.reasoning_content ?? "", false)
      for (const text of [delta.content, delta.refusal]) {
        if (present(text) && text !== "") {
          const item = openText(out, "message")
          item.text += text
          emit(out, {
            type: "response.output_text.delta",
            sequence_number: 0,
            item_id: item.id,
            output_index: item.index,
            content_index: 0,
            delta: text,
            logprobs: []
          })
        }
      }
      for (const fragment of delta.tool_calls ?? []) {
        const key = fragment.index
        const state = calls.get(key) ?? { id: undefined, name: undefined, pending: "", started: false }
        calls.set(key, state)
        if (fragment.id !== undefined && state.id === undefined) state.id = fragment.id
        if (fragment.function?.name !== undefined && state.name === undefined) state.name = fragment.function.name
        const args = fragment.function?.arguments ?? ""
        if (!state.started) {
          state.pending += args
          if (state.name !== undefined) startCall(out, key, state)
        } else if (open?.kind === "call" && open.key === key) callArgs(out, args)
      }
      if (present(choice.finish_reason)) {
        finishReason = choice.finish_reason
        close(out)
      }
    }
    if (present(chunk.usage)) {
      usage = chunk.usage
      if (finishReason !== null) complete(out)
    }
    return out
  }
  const end = (): ReadonlyArray<R.StreamEvent> => {
    if (finished) return []
    const out: Array<R.StreamEvent> = []
    start(out)
    complete(out)
    return out
  }
  const failStream = (message: string): ReadonlyArray<R.StreamEvent> => {
    if (finished) return []
    const out: Array<R.StreamEvent> = []
    start(out)
    finished = true
    out.push(...streamErrorEvents({ message, sequenceNumber: sequence, response: response("failed") }))
    sequence += 2
    return out
  }
  return { push, end, fail: failStream }
}

// ---------------------------------------------------------------------------------------------
// streams: Responses events → Chat chunks

/** Translates one Responses event stream into Chat chunks; see {@link responsesToChatStream}. */
export interface ResponsesToChatStream {
  readonly push: (event: R.StreamEvent) => ReadonlyArray<OpenAi.ChatCompletionChunk>
  readonly end: () => ReadonlyArray<OpenAi.ChatCompletionChunk>
}

type ChunkDelta = OpenAi.ChatCompletionChunk["choices"][number]["delta"]

interface StreamCall {
  readonly toolIndex: number
  readonly custom: boolean
  sawDelta: boolean
  input: string
}

/**
 * A stateful translator of one Responses event stream (from a Responses upstream) into OpenAI Chat
 * chunks, one instance per stream (Anthropic clients: then `Translate.openAiToAnthropicStream`):
 *
 * - `response.created` → a role chunk (id {@link Translate.openAiCompletionId} of the response id,
 *   the response's model);
 * - `output_text` / `refusal` deltas → `content` / `refusal`; reasoning summary deltas →
 *   `reasoning_content`, a summary part after the first of an item preceded by
 *   `Translate.reasoningSummarySeparator` (as the buffered translation joins them);
 * - a `function_call` item → a `tool_calls` delta `{index: <n-th call>, id: call_id, type:
 *   "function", function: {name: flatToolName(namespace, name) or name, arguments: ""}}`, then
 *   its argument deltas (or, when none came, the item's arguments at `output_item.done`); a
 *   `custom_tool_call` item likewise, its input sent at `output_item.done` as the arguments
 *   `{"input": <text>}`;
 * - `response.completed` / `response.incomplete` → a finish chunk (`tool_calls` when a call was
 *   seen, else `stop`; `length` for `max_output_tokens`, `content_filter`), then a usage chunk
 *   (`choices: []`); nothing is emitted after it.
 *
 * `error` and `response.failed` events produce nothing: the caller must check an event's `type`
 * first and report the failure its own way (anchor §6.4). Other events (hosted tools, annotations,
 * `reasoning_text`) are skipped. `end()` closes a stream that stopped without a terminal event
 * (`stop`, usage so far); it is idempotent.
 */
export const responsesToChatStream = (): ResponsesToChatStream => {
  let id = Translate.openAiCompletionId("")
  let model = ""
  let started = false
  let finished = false
  let toolCount = 0
  let usage: N.NeutralUsage = { inputTokens: 0, outputTokens: 0 }
  const items = new Map<string, StreamCall>()
  const summaries = new Set<string>()

  const chunk = (delta: ChunkDelta, finishReason: string | null = null): OpenAi.ChatCompletionChunk => ({
    id,
    object: "chat.completion.chunk",
    created: 0,
    model,
    choices: [{ index: 0, delta, finish_reason: finishReason }]
  })
  const start = (out: Array<OpenAi.ChatCompletionChunk>) => {
    if (started) return
    started = true
    out.push(chunk({ role: "assistant", content: "" }))
  }
  const finish = (reason: string): ReadonlyArray<OpenAi.ChatCompletionChunk> => {
    finished = true
    return [
      chunk({}, reason),
      { id, object: "chat.completion.chunk", created: 0, model, choices: [], usage: Translate.toOpenAiUsage(usage) }
    ]
  }
  const toolDelta = (fragment: typeof OpenAi.ToolCallDelta.Type): ChunkDelta => ({ tool_calls: [fragment] })

  const push = (event: R.StreamEvent): ReadonlyArray<OpenAi.ChatCompletionChunk> => {
    if (finished) return []
    const out: Array<OpenAi.ChatCompletionChunk> = []
    if (ofType(event, "response.created") || ofType(event, "response.in_progress")) {
      if (!started) {
        id = Translate.openAiCompletionId(event.response.id)
        model = event.response.model
      }
      start(out)
      return out
    }
    if (ofType(event, "error") || ofType(event, "response.failed")) return []
    start(out)
    if (ofType(event, "response.output_text.delta")) {
      if (event.delta !== "") out.push(chunk({ content: event.delta }))
    } else if (ofType(event, "response.refusal.delta")) {
      if (event.delta !== "") out.push(chunk({ refusal: event.delta }))
    } else if (ofType(event, "response.reasoning_summary_part.added")) {
      if (event.summary_index > 0 && summaries.has(event.item_id)) {
        out.push(chunk({ reasoning_content: Translate.reasoningSummarySeparator }))
      }
      summaries.add(event.item_id)
    } else if (ofType(event, "response.reasoning_summary_text.delta")) {
      if (event.delta !== "") out.push(chunk({ reasoning_content: event.delta }))
    } else if (ofType(event, "response.output_item.added")) {
      const item = event.item
      if (ofType(item, "function_call") || ofType(item, "custom_tool_call")) {
        const toolIndex = toolCount++
        const state: StreamCall = { toolIndex, custom: item.type === "custom_tool_call", sawDelta: false, input: "" }
        items.set(item.id ?? `output_${event.output_index}`, state)
        const name = item.namespace !== undefined ? flatToolName(item.namespace, item.name) : item.name
        out.push(chunk(toolDelta({ index: toolIndex, id: item.call_id, type: "function", function: { name, arguments: "" } })))
      }
    } else if (ofType(event, "response.function_call_arguments.delta")) {
      const state = items.get(event.item_id)
      if (state !== undefined && event.delta !== "") {
        state.sawDelta = true
        out.push(chunk(toolDelta({ index: state.toolIndex, function: { arguments: event.delta } })))
      }
    } else if (ofType(event, "response.custom_tool_call_input.delta")) {
      const state = items.get(event.item_id)
      if (state !== undefined) state.input += event.delta
    } else if (ofType(event, "response.output_item.done")) {
      const item = event.item
      const state = items.get(("id" in item && Predicate.isString(item.id) ? item.id : undefined) ?? `output_${event.output_index}`)
      if (state !== undefined && ofType(item, "function_call") && !state.sawDelta && item.arguments !== "") {
        out.push(chunk(toolDelta({ index: state.toolIndex, function: { arguments: item.arguments } })))
      } else if (state !== undefined && ofType(item, "custom_tool_call")) {
        const input = item.input !== "" ? item.input : state.input
        out.push(chunk(toolDelta({ index: state.toolIndex, function: { arguments: JSON.stringify({ input }) } })))
      }
    } else if (ofType(event, "response.completed") || ofType(event, "response.incomplete")) {
      usage = fromResponsesUsage(event.response.usage)
      const stop = stopReasonOf(event.response, toolCount > 0)
      out.push(...finish(Translate.toFinishReason(stop) ?? "stop"))
    }
    return out
  }
  const end = (): ReadonlyArray<OpenAi.ChatCompletionChunk> =>
    finished || !started ? [] : finish(toolCount > 0 ? "tool_calls" : "stop")
  return { push, end }
}
