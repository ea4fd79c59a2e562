/**
 * fast-check arbitraries of OpenAI Responses requests and responses, restricted to the normalised
 * form `TranslateResponses` writes back (see its module notes), plus the checks and aggregations
 * of Responses event streams used by the properties.
 */
import type * as N from "@switchyard-ts/protocol/Neutral"
import type * as R from "@switchyard-ts/protocol/OpenAiResponses"
import * as TR from "@switchyard-ts/protocol/TranslateResponses"
import * as FastCheck from "effect/FastCheck"
import * as Arb from "./arbitraries.js"

type A<T> = FastCheck.Arbitrary<T>

const opt = <T>(arb: A<T>): A<T | undefined> => FastCheck.option(arb, { nil: undefined })
const fraction: A<number> = FastCheck.integer({ min: 0, max: 100 }).map((n) => n / 100)
const inputText: A<R.InputText> = Arb.text.map((text) => ({ type: "input_text", text }))
const inputImage: A<R.InputImage> = FastCheck.record({
  url: FastCheck.oneof(
    Arb.identifier.map((s) => `https://example.com/${s}.png`),
    FastCheck.base64String({ minLength: 4, maxLength: 16 }).map((d) => `data:image/png;base64,${d}`)
  ),
  detail: opt(FastCheck.constantFrom("low", "high", "auto"))
}).map(({ detail, url }) => ({ type: "input_image", image_url: url, ...(detail !== undefined ? { detail } : {}) }))

/**
 * `portable`: only what Chat and Messages carry too (no reasoning, hosted tools, custom tools or
 * Responses-only fields, no images in tool outputs, no output format, no parallel flag without a
 * tool choice), so the request survives a trip through both.
 */
export interface RequestOptions {
  readonly portable: boolean
}

const functionName = Arb.identifier.map((s) => `f_${s}`)
const customName = Arb.identifier.map((s) => `c_${s}`)
const namespaceName = Arb.identifier.map((s) => `ns_${s}`)
const parameters = Arb.jsonObject.map((properties) => ({ type: "object", properties }))

const functionTool: A<R.FunctionTool> = FastCheck.record({
  name: functionName,
  description: opt(Arb.text),
  parameters,
  strict: opt(FastCheck.boolean())
}).map(({ description, name, parameters, strict }) => ({
  type: "function",
  name,
  ...(description !== undefined ? { description } : {}),
  parameters,
  ...(strict !== undefined ? { strict } : {})
}))
const customTool: A<R.CustomTool> = FastCheck.record({
  name: customName,
  description: opt(Arb.text),
  grammar: FastCheck.boolean()
}).map(({ description, grammar, name }) => ({
  type: "custom",
  name,
  ...(description !== undefined ? { description } : {}),
  ...(grammar ? { format: { type: "grammar", syntax: "lark", definition: "start: /.+/" } } : {})
}))
const namespaceTool = (options: RequestOptions): A<R.NamespaceTool> =>
  FastCheck.record({
    name: namespaceName,
    description: opt(Arb.text),
    tools: FastCheck.uniqueArray(options.portable ? functionTool : FastCheck.oneof(functionTool, customTool), {
      minLength: 1,
      maxLength: 3,
      selector: (t) => t.name
    })
  }).map(({ description, name, tools }) => ({
    type: "namespace",
    name,
    ...(description !== undefined ? { description } : {}),
    tools
  }))

/** Declared tools: functions, custom tools and namespaces (distinct names), then maybe `web_search`. */
const toolsArb = (options: RequestOptions): A<ReadonlyArray<R.Tool>> =>
  FastCheck.record({
    functions: FastCheck.uniqueArray(functionTool, { maxLength: 3, selector: (t) => t.name }),
    customs: options.portable
      ? FastCheck.constant([])
      : FastCheck.uniqueArray(customTool, { maxLength: 2, selector: (t) => t.name }),
    namespaces: FastCheck.uniqueArray(namespaceTool(options), { maxLength: 2, selector: (t) => t.name }),
    hosted: options.portable ? FastCheck.constant(false) : FastCheck.boolean()
  }).map(({ customs, functions, hosted, namespaces }) => [
    ...functions,
    ...customs,
    ...namespaces,
    ...(hosted ? [{ type: "web_search" }] : [])
  ])

const callItem = (options: RequestOptions): A<R.InputItem> =>
  FastCheck.oneof(
    FastCheck.record({
      callId: Arb.toolId,
      name: functionName,
      namespace: opt(namespaceName),
      args: Arb.jsonObject,
      id: opt(Arb.identifier.map((s) => `fc_${s}`))
    }).map(({ args, callId, id, name, namespace }): R.InputItem => ({
      type: "function_call",
      call_id: callId,
      name,
      arguments: JSON.stringify(args),
      ...(namespace !== undefined ? { namespace } : {}),
      ...(id !== undefined && !options.portable ? { id } : {})
    })),
    ...(options.portable ? [] : [
      FastCheck.record({ callId: Arb.toolId, name: customName, input: FastCheck.string({ maxLength: 20 }) }).map((
        { callId, input, name }
      ): R.InputItem => ({ type: "custom_tool_call", call_id: callId, name, input }))
    ])
  )

const reasoningItem: A<R.ReasoningItem> = FastCheck.record({
  id: Arb.identifier.map((s) => `rs_${s}`),
  summary: FastCheck.array(Arb.text, { maxLength: 2 }),
  encrypted: FastCheck.base64String({ minLength: 4, maxLength: 24 })
}).map(({ encrypted, id, summary }) => ({
  type: "reasoning",
  id,
  summary: summary.map((text) => ({ type: "summary_text", text })),
  encrypted_content: encrypted
}))

/** An assistant turn: reasoning?, one message?, calls — never empty, never two message items in a row. */
const assistantTurn = (options: RequestOptions): A<ReadonlyArray<R.InputItem>> =>
  FastCheck.record({
    reasoning: options.portable ? FastCheck.constant(undefined) : opt(reasoningItem),
    texts: FastCheck.array(Arb.text, { maxLength: 2 }),
    calls: FastCheck.array(callItem(options), { maxLength: 2 })
  }).map(({ calls, reasoning, texts }) => {
    const items: Array<R.InputItem> = [
      ...(reasoning !== undefined ? [reasoning] : []),
      ...(texts.length > 0
        ? [{
          type: "message" as const,
          role: "assistant" as const,
          content: texts.map((text) => ({ type: "output_text" as const, text }))
        }]
        : []),
      ...calls
    ]
    return items.length > 0
      ? items
      : [{ type: "message", role: "assistant", content: [{ type: "output_text", text: "ok" }] }]
  })

const toolOutput = (options: RequestOptions): A<R.ToolOutput> =>
  FastCheck.oneof(
    Arb.text,
    FastCheck.array(options.portable ? inputText : FastCheck.oneof(inputText, inputImage), {
      minLength: 2,
      maxLength: 3
    })
  )

/** One or more tool outputs. */
const outputsTurn = (options: RequestOptions): A<ReadonlyArray<R.InputItem>> =>
  FastCheck.array(
    FastCheck.record({
      callId: Arb.toolId,
      output: toolOutput(options),
      custom: options.portable ? FastCheck.constant(false) : FastCheck.boolean()
    })
      .map(({ callId, custom, output }): R.InputItem =>
        custom
          ? { type: "custom_tool_call_output", call_id: callId, output }
          : { type: "function_call_output", call_id: callId, output }
      ),
    { minLength: 1, maxLength: 3 }
  )

const userMessage: A<R.InputItem> = FastCheck.array(FastCheck.oneof(inputText, inputImage), {
  minLength: 1,
  maxLength: 3
})
  .map((content) => ({ type: "message", role: "user", content }))

const developerMessage: A<R.InputItem> = FastCheck.array(inputText, { minLength: 1, maxLength: 2 })
  .map((content) => ({ type: "message", role: "developer", content }))

/** The conversation after the leading instructions: user-side and assistant-side turns alternate. */
const conversation = (options: RequestOptions): A<ReadonlyArray<R.InputItem>> =>
  FastCheck.array(
    FastCheck.record({
      user: FastCheck.oneof(userMessage.map((m) => [m]), outputsTurn(options)),
      assistant: opt(assistantTurn(options)),
      developer: opt(developerMessage)
    }),
    { maxLength: 4 }
  ).map((turns) =>
    turns.flatMap((
      { assistant, developer, user }
    ) => [...user, ...(assistant ?? []), ...(developer !== undefined ? [developer] : [])])
  )

const textFormat: A<R.TextFormat> = FastCheck.oneof(
  FastCheck.constant({ type: "text" as const }),
  FastCheck.constant({ type: "json_object" as const }),
  FastCheck.record({
    name: Arb.identifier,
    schema: parameters,
    strict: opt(FastCheck.boolean()),
    description: opt(Arb.text)
  }).map((
    { description, name, schema, strict }
  ): R.TextFormat => ({
    type: "json_schema",
    name,
    schema,
    ...(strict !== undefined ? { strict } : {}),
    ...(description !== undefined ? { description } : {})
  }))
)

/**
 * A Responses request in the normalised form: `instructions`, leading system / developer items,
 * then alternating user messages or tool outputs and assistant turns (reasoning with encrypted
 * content, one message, function / custom / namespaced calls), positioned developer items; function,
 * custom, namespace and hosted tools; tool choice, output format, reasoning, sampling and the
 * Codex-style top-level fields.
 */
export const responsesRequest = (options: RequestOptions): A<R.ResponsesRequest> =>
  FastCheck.record({
    model: Arb.identifier,
    instructions: opt(Arb.text),
    leading: FastCheck.array(
      FastCheck.record({
        role: FastCheck.constantFrom("system" as const, "developer" as const),
        content: FastCheck.array(inputText, { minLength: 1, maxLength: 2 })
      }),
      { maxLength: 2 }
    ),
    conversation: conversation(options),
    tools: toolsArb(options),
    toolChoice: opt(FastCheck.oneof(
      FastCheck.constantFrom("auto" as const, "required" as const, "none" as const),
      Arb.identifier.map((s) => ({ type: "function" as const, name: `fn_${s}` }))
    )),
    parallel: opt(FastCheck.boolean()),
    maxOutputTokens: opt(FastCheck.integer({ min: 1, max: 10_000 })),
    temperature: opt(fraction),
    topP: opt(fraction),
    stream: FastCheck.boolean(),
    format: options.portable ? FastCheck.constant(undefined) : opt(textFormat),
    verbosity: options.portable ? FastCheck.constant(undefined) : opt(FastCheck.constantFrom("low", "high", null)),
    effort: opt(FastCheck.constantFrom("low", "medium", "high", null)),
    summary: options.portable ? FastCheck.constant(undefined) : opt(FastCheck.constantFrom("auto", "detailed")),
    codex: options.portable ? FastCheck.constant(false) : FastCheck.boolean(),
    store: opt(FastCheck.boolean()),
    cacheKey: opt(Arb.identifier),
    user: opt(Arb.identifier),
    vendor: opt(Arb.jsonObject)
  }).map((r) => {
    const reasoning = r.effort !== undefined || r.summary !== undefined
      ? {
        reasoning: {
          ...(r.effort !== undefined ? { effort: r.effort } : {}),
          ...(r.summary !== undefined ? { summary: r.summary } : {})
        }
      }
      : {}
    const text = r.format !== undefined || r.verbosity !== undefined
      ? {
        text: {
          ...(r.format !== undefined ? { format: r.format } : {}),
          ...(r.verbosity !== undefined ? { verbosity: r.verbosity } : {})
        }
      }
      : {}
    const request: R.ResponsesRequest = {
      model: r.model,
      ...(r.instructions !== undefined ? { instructions: r.instructions } : {}),
      input: [...r.leading.map((m): R.InputItem => ({ type: "message", ...m })), ...r.conversation],
      ...(r.tools.length > 0 ? { tools: r.tools } : {}),
      ...(r.toolChoice !== undefined ? { tool_choice: r.toolChoice } : {}),
      // Anthropic carries the parallel flag on tool_choice, and not on "none".
      ...(r.parallel !== undefined && (!options.portable || (r.toolChoice !== undefined && r.toolChoice !== "none"))
        ? { parallel_tool_calls: r.parallel }
        : {}),
      ...(r.maxOutputTokens !== undefined ? { max_output_tokens: r.maxOutputTokens } : {}),
      ...(r.temperature !== undefined ? { temperature: r.temperature } : {}),
      ...(r.topP !== undefined ? { top_p: r.topP } : {}),
      ...(r.stream ? { stream: true } : {}),
      ...reasoning,
      ...text,
      ...(r.codex
        ? {
          include: ["reasoning.encrypted_content"],
          client_metadata: { session_id: r.model },
          previous_response_id: `resp_${r.model}`
        }
        : {}),
      ...(r.store !== undefined ? { store: r.store } : {}),
      ...(r.cacheKey !== undefined ? { prompt_cache_key: r.cacheKey } : {}),
      ...(r.user !== undefined ? { user: r.user } : {}),
      ...(r.vendor !== undefined ? { vendor_extension: r.vendor } : {})
    }
    return request
  })

/**
 * Codex's `additional_tools` item: namespaces (`ans_` names), functions (`af_` names) and, unless
 * `portable`, custom tools and `web_search`; names apart from those of {@link responsesRequest}.
 */
const additionalToolsItem = (options: RequestOptions): A<R.InputItem> =>
  FastCheck.record({
    namespaces: FastCheck.uniqueArray(namespaceTool(options).map((t) => ({ ...t, name: `a${t.name}` })), {
      maxLength: 2,
      selector: (t) => t.name
    }),
    functions: FastCheck.uniqueArray(functionTool.map((t) => ({ ...t, name: `a${t.name}` })), {
      maxLength: 2,
      selector: (t) => t.name
    }),
    customs: options.portable
      ? FastCheck.constant([])
      : FastCheck.uniqueArray(customTool.map((t) => ({ ...t, name: `a${t.name}` })), {
        maxLength: 1,
        selector: (t) => t.name
      }),
    hosted: options.portable ? FastCheck.constant(false) : FastCheck.boolean()
  }).map(({ customs, functions, hosted, namespaces }) => ({
    type: "additional_tools",
    role: "developer",
    tools: [...namespaces, ...functions, ...customs, ...(hosted ? [{ type: "web_search" }] : [])]
  }))

const isLeadingItem = (item: R.InputItem): boolean =>
  item.type === "additional_tools" ||
  ((item.type === "message" || item.type === undefined) && "role" in item &&
    (item.role === "system" || item.role === "developer"))

/**
 * Where an `additional_tools` item can stand in `input` and come back in place: among the leading
 * system / developer items, at the end, or before a user / developer message item or another
 * such item (never inside the run of items that is one neutral message).
 */
const placesOf = (input: ReadonlyArray<R.InputItem>): ReadonlyArray<number> => {
  const leading = input.findIndex((item) => !isLeadingItem(item))
  return Array.from({ length: input.length + 1 }, (_, i) => i).filter((i) => {
    const item = input[i]
    return leading < 0 || i <= leading || item === undefined || item.type === "additional_tools" ||
      ("role" in item && (item.role === "user" || item.role === "developer"))
  })
}

/**
 * {@link responsesRequest} with one to three `additional_tools` items (the same item maybe twice, as
 * in a conversation's history) at places where they come back as they were.
 */
export const withAdditionalTools = (options: RequestOptions): A<R.ResponsesRequest> =>
  FastCheck.record({
    request: responsesRequest(options),
    items: FastCheck.array(additionalToolsItem(options), { minLength: 1, maxLength: 2 }),
    places: FastCheck.array(FastCheck.nat(), { minLength: 1, maxLength: 3 })
  }).map(({ items, places, request }) => {
    const input: Array<R.InputItem> = typeof request.input === "string" || request.input === undefined
      ? []
      : [...request.input]
    for (const [i, at] of places.entries()) {
      const valid = placesOf(input)
      const item = items[i % items.length]
      const place = valid[at % valid.length]
      if (item !== undefined && place !== undefined) input.splice(place, 0, item)
    }
    return { ...request, input }
  })

// ---------------------------------------------------------------------------------------------
// neutral normalisations

/** The neutral form without the Responses-only markers (what Chat and Messages keep). */
export const withoutResponsesMarkers = (request: N.NeutralRequest): N.NeutralRequest => {
  const { responses: _responses, ...rest } = request
  return {
    ...rest,
    tools: request.tools.map(({ custom: _custom, namespaced: _namespaced, ...tool }) => tool),
    messages: request.messages.map((message): N.ConversationEntry =>
      message.role === "system" ? message : {
        role: message.role,
        blocks: message.blocks.map((block) => {
          if (block._tag === "ToolUse") {
            const { custom: _custom, itemId: _itemId, namespaced: _namespaced, ...use } = block
            return use
          }
          if (block._tag === "ToolResult") {
            const { custom: _custom, ...result } = block
            return result
          }
          return block
        })
      }
    )
  }
}

const isToolResults = (message: N.ConversationEntry | undefined): message is N.NeutralMessage =>
  message !== undefined && message.role === "user" && message.blocks.length > 0 &&
  message.blocks.every((b) => b._tag === "ToolResult")

/**
 * The neutral form of a Chat / Messages request after a trip through Responses: thinking and stop
 * sequences dropped, assistant messages left empty dropped, then consecutive assistant messages
 * (and consecutive tool-result-only user messages) as one, leading system messages as
 * instructions, the Chat-only and Anthropic-only fields gone from `extra`, `is_error` false.
 */
export const throughResponses = (request: N.NeutralRequest, dropExtra: ReadonlyArray<string>): N.NeutralRequest => {
  const messages: Array<N.ConversationEntry> = []
  for (const message of request.messages) {
    if (message.role === "system") {
      messages.push(message)
      continue
    }
    const blocks = message.blocks.flatMap((block): ReadonlyArray<N.Block> => {
      if (block._tag === "Thinking" || block._tag === "RedactedThinking") return []
      if (block._tag === "ToolResult") return [{ ...block, isError: false }]
      return [block]
    })
    if (message.role === "assistant" && blocks.length === 0) continue
    const last = messages[messages.length - 1]
    const next: N.NeutralMessage = { role: message.role, blocks }
    if (last !== undefined && last.role === "assistant" && next.role === "assistant") {
      messages[messages.length - 1] = { role: "assistant", blocks: [...last.blocks, ...blocks] }
    } else if (isToolResults(last) && isToolResults(next)) {
      messages[messages.length - 1] = { role: "user", blocks: [...last.blocks, ...blocks] }
    } else messages.push(next)
  }
  const first = messages.findIndex((m) => m.role !== "system")
  const leading = first < 0 ? messages : messages.slice(0, first)
  const extra: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(request.extra)) if (!dropExtra.includes(key)) extra[key] = value
  return {
    ...request,
    instructions: [...request.instructions, ...leading.flatMap((m) => m.role === "system" ? m.blocks : [])],
    messages: messages.slice(leading.length),
    stop: [],
    extra
  }
}

// ---------------------------------------------------------------------------------------------
// responses and streams

/**
 * A Responses response object as `toResponsesResponse` writes one: reasoning (encrypted), one
 * message (id by output index), function calls (with namespace, `status: "completed"`) and custom
 * calls, in that order; completed or incomplete; usage with optional details.
 */
export const responsesResponse: A<R.ResponseObject> = FastCheck.record({
  id: Arb.identifier.map((s) => `resp_${s}`),
  created: FastCheck.nat(2_000_000_000),
  reasoning: opt(reasoningItem),
  texts: FastCheck.array(Arb.text, { maxLength: 2 }),
  calls: FastCheck.array(
    FastCheck.oneof(
      FastCheck.record({
        id: Arb.identifier,
        callId: Arb.toolId,
        name: functionName,
        namespace: opt(namespaceName),
        args: Arb.jsonObject
      }).map((
        c
      ): R.OutputItem => ({
        type: "function_call",
        id: `fc_${c.id}`,
        call_id: c.callId,
        name: c.name,
        arguments: JSON.stringify(c.args),
        ...(c.namespace !== undefined ? { namespace: c.namespace } : {}),
        status: "completed"
      })),
      FastCheck.record({
        id: Arb.identifier,
        callId: Arb.toolId,
        name: customName,
        input: FastCheck.string({ maxLength: 20 })
      }).map((
        c
      ): R.OutputItem => ({
        type: "custom_tool_call",
        id: `ctc_${c.id}`,
        call_id: c.callId,
        name: c.name,
        input: c.input
      }))
    ),
    { maxLength: 2 }
  ),
  incomplete: opt(FastCheck.constantFrom("max_output_tokens" as const, "content_filter" as const)),
  usage: Arb.counts,
  reasoningTokens: opt(FastCheck.nat(100))
}).map((r) => {
  const output: Array<R.OutputItem> = []
  if (r.reasoning !== undefined) output.push(r.reasoning)
  if (r.texts.length > 0) {
    output.push({
      type: "message",
      id: `msg_switchyard_${output.length}`,
      role: "assistant",
      status: "completed",
      content: r.texts.map((text) => ({ type: "output_text", text, annotations: [] }))
    })
  }
  output.push(...r.calls)
  const c = r.usage
  const input = c.input + (c.cacheRead ?? 0) + (c.cacheCreation ?? 0)
  const response: R.ResponseObject = {
    id: r.id,
    object: "response",
    created_at: r.created,
    status: r.incomplete !== undefined ? "incomplete" : "completed",
    model: "up",
    output,
    usage: {
      input_tokens: input,
      output_tokens: c.output,
      total_tokens: input + c.output,
      ...(c.cacheRead !== undefined || c.cacheCreation !== undefined
        ? {
          input_tokens_details: {
            ...(c.cacheRead !== undefined ? { cached_tokens: c.cacheRead } : {}),
            ...(c.cacheCreation !== undefined ? { cache_write_tokens: c.cacheCreation } : {})
          }
        }
        : {}),
      ...(r.reasoningTokens !== undefined ? { output_tokens_details: { reasoning_tokens: r.reasoningTokens } } : {})
    },
    error: null,
    incomplete_details: r.incomplete !== undefined ? { reason: r.incomplete } : null
  }
  return response
})

/** What a Responses client reads from a stream's events (not from the final response object). */
export interface ResponsesAggregate {
  readonly text: string
  /** Each reasoning item's summary text deltas, joined. */
  readonly reasoning: ReadonlyArray<string>
  readonly calls: ReadonlyArray<{
    readonly type: string
    readonly callId: string
    readonly name: string
    readonly namespace: string | undefined
    readonly input: string
  }>
  readonly status: string | undefined
  readonly usage: R.Usage | null | undefined
  readonly output: ReadonlyArray<R.OutputItem>
}

const itemIdOf = (item: R.OutputItem): string => "id" in item && typeof item.id === "string" ? item.id : ""

export const aggregateResponses = (events: ReadonlyArray<R.StreamEvent>): ResponsesAggregate => {
  let text = ""
  const reasoning = new Map<string, string>()
  const calls = new Map<
    string,
    { type: string; callId: string; name: string; namespace: string | undefined; input: string }
  >()
  let status: string | undefined
  let usage: R.Usage | null | undefined
  let output: ReadonlyArray<R.OutputItem> = []
  for (const event of events) {
    switch (event.type) {
      case "response.output_text.delta":
        if ("delta" in event && typeof event.delta === "string") text += event.delta
        break
      case "response.output_item.added":
        if ("item" in event) {
          const item = event.item
          if (item.type === "reasoning") reasoning.set(itemIdOf(item), "")
          if ((item.type === "function_call" || item.type === "custom_tool_call") && "call_id" in item) {
            calls.set(itemIdOf(item), {
              type: item.type,
              callId: item.call_id,
              name: item.name,
              namespace: "namespace" in item ? item.namespace : undefined,
              input: ""
            })
          }
        }
        break
      case "response.reasoning_summary_text.delta":
        if ("delta" in event && "item_id" in event) {
          reasoning.set(event.item_id, (reasoning.get(event.item_id) ?? "") + event.delta)
        }
        break
      case "response.function_call_arguments.delta":
      case "response.custom_tool_call_input.delta":
        if ("delta" in event && "item_id" in event) {
          const call = calls.get(event.item_id)
          if (call !== undefined) call.input += event.delta
        }
        break
      case "response.completed":
      case "response.incomplete":
        if ("response" in event) {
          status = event.response.status
          usage = event.response.usage
          output = event.response.output
        }
        break
      default:
        break
    }
  }
  return { text, reasoning: [...reasoning.values()], calls: [...calls.values()], status, usage, output }
}

/**
 * Checks that `events` is a well-formed Responses stream and returns the problems: sequence
 * numbers 0, 1, 2… (events of unknown types included); `response.created` then
 * `response.in_progress` first; items added at output
 * indices 0, 1, 2…, each done once after all its deltas and `.done` events, deltas only for an
 * added and not yet done item; every `.done` text equal to its deltas; the terminal event
 * (`response.completed` / `response.incomplete`) last, listing every item as done.
 */
export const responsesStreamProblems = (events: ReadonlyArray<R.StreamEvent>): ReadonlyArray<string> => {
  const problems: Array<string> = []
  const open = new Map<string, number>()
  const closed = new Set<string>()
  const texts = new Map<string, string>()
  const done: Array<R.OutputItem> = []
  let added = 0
  events.forEach((event, i) => {
    if (event.sequence_number !== i) problems.push(`sequence_number ${String(event.sequence_number)} at ${i}`)
    if (i === 0 && event.type !== "response.created") problems.push("first event is not response.created")
    if (i === 1 && event.type !== "response.in_progress") problems.push("second event is not response.in_progress")
    const ref = "item_id" in event && typeof event.item_id === "string" ? event.item_id : undefined
    if (ref !== undefined && !open.has(ref)) problems.push(`${event.type} for ${ref}, which is not open`)
    // deltas accumulate per item and per summary part
    const key = ref === undefined ? undefined : `${ref}:${"summary_index" in event ? String(event.summary_index) : ""}`
    switch (event.type) {
      case "response.output_item.added":
        if ("item" in event) {
          if (event.output_index !== added) problems.push(`item added at ${event.output_index}, expected ${added}`)
          added++
          const id = itemIdOf(event.item)
          if (open.has(id) || closed.has(id)) problems.push(`item ${id} added twice`)
          open.set(id, event.output_index)
        }
        break
      case "response.output_item.done":
        if ("item" in event) {
          const id = itemIdOf(event.item)
          if (open.get(id) !== event.output_index) {
            problems.push(`item ${id} done but not open at ${event.output_index}`)
          }
          open.delete(id)
          closed.add(id)
          done.push(event.item)
        }
        break
      case "response.output_text.delta":
      case "response.reasoning_summary_text.delta":
      case "response.function_call_arguments.delta":
      case "response.custom_tool_call_input.delta":
        if (key !== undefined && "delta" in event) texts.set(key, (texts.get(key) ?? "") + event.delta)
        break
      case "response.output_text.done":
      case "response.reasoning_summary_text.done":
        if (key !== undefined && "text" in event && event.text !== (texts.get(key) ?? "")) {
          problems.push(`${event.type} text differs from its deltas`)
        }
        break
      case "response.function_call_arguments.done":
        if (key !== undefined && "arguments" in event && event.arguments !== (texts.get(key) ?? "")) {
          problems.push("arguments differ from their deltas")
        }
        break
      case "response.custom_tool_call_input.done":
        if (key !== undefined && "input" in event && event.input !== (texts.get(key) ?? "")) {
          problems.push("input differs from its deltas")
        }
        break
      case "response.completed":
      case "response.incomplete":
        if (i !== events.length - 1) problems.push(`${event.type} is not last`)
        if (open.size > 0) problems.push(`${event.type} while ${[...open.keys()].join(",")} open`)
        if ("response" in event && JSON.stringify(event.response.output) !== JSON.stringify(done)) {
          problems.push("the final output differs from the items done")
        }
        break
      default:
        break
    }
  })
  const last = events[events.length - 1]
  if (last?.type !== "response.completed" && last?.type !== "response.incomplete") {
    problems.push("the last event is not terminal")
  }
  return problems
}

/** Flattened names as a Chat client sees calls of a Responses upstream. */
export const flatName = (name: string, namespace: string | undefined): string =>
  namespace !== undefined ? TR.flatToolName(namespace, name) : name

/** What a Responses upstream streams: reasoning items (summary parts), text, calls, an end and usage. */
export interface ResponsesCompletion {
  readonly reasoning: ReadonlyArray<ReadonlyArray<string>>
  readonly text: string
  readonly calls: ReadonlyArray<{
    readonly callId: string
    readonly name: string
    readonly namespace: string | undefined
    readonly custom: boolean
    /** The arguments JSON of a function call, the free-form input of a custom call. */
    readonly input: string
  }>
  readonly incomplete: "max_output_tokens" | "content_filter" | undefined
  readonly usage: Arb.Counts
}

export const responsesCompletion: A<ResponsesCompletion> = FastCheck.record({
  reasoning: FastCheck.array(FastCheck.array(Arb.text, { minLength: 1, maxLength: 3 }), { maxLength: 2 }),
  text: FastCheck.oneof(FastCheck.constant(""), FastCheck.string({ minLength: 1, maxLength: 40 })),
  calls: FastCheck.uniqueArray(
    FastCheck.record({
      callId: Arb.toolId,
      name: Arb.identifier,
      namespace: opt(namespaceName),
      custom: FastCheck.boolean(),
      args: Arb.jsonObject,
      free: FastCheck.string({ maxLength: 30 })
    }).map(({ args, callId, custom, free, name, namespace }) => ({
      callId,
      name,
      namespace,
      custom,
      input: custom ? free : JSON.stringify(args)
    })),
    { maxLength: 3, selector: (c) => c.callId }
  ),
  incomplete: opt(FastCheck.constantFrom("max_output_tokens" as const, "content_filter" as const)),
  usage: Arb.counts
})

const usageOf = (c: Arb.Counts): R.Usage => {
  const input = c.input + (c.cacheRead ?? 0) + (c.cacheCreation ?? 0)
  return {
    input_tokens: input,
    output_tokens: c.output,
    total_tokens: input + c.output,
    input_tokens_details: { cached_tokens: c.cacheRead ?? 0 }
  }
}

/**
 * A well-formed Responses event stream of `c` as an upstream sends it: every text, summary part,
 * argument string and custom input split into random pieces, an event of an unknown type after
 * `response.in_progress` (clients skip it), then the terminal event with every item.
 */
export const responsesEvents = (c: ResponsesCompletion): A<ReadonlyArray<R.StreamEvent>> =>
  FastCheck.record({
    summaries: FastCheck.tuple(...c.reasoning.map((parts) => FastCheck.tuple(...parts.map(Arb.pieces)))),
    text: Arb.pieces(c.text),
    inputs: FastCheck.tuple(...c.calls.map((call) => Arb.pieces(call.input)))
  }).map(({ inputs, summaries, text }) => {
    const events: Array<R.StreamEvent> = []
    const add = (event: R.StreamEvent) => events.push({ ...event, sequence_number: events.length })
    const base = { id: "resp_up", object: "response" as const, created_at: 1, model: "up" }
    const output: Array<R.OutputItem> = []
    add({ type: "response.created", sequence_number: 0, response: { ...base, status: "in_progress", output: [] } })
    add({ type: "response.in_progress", sequence_number: 0, response: { ...base, status: "in_progress", output: [] } })
    add({ type: "response.queued_extension", sequence_number: 0 })
    c.reasoning.forEach((parts, r) => {
      const id = `rs_${r}`
      const output_index = output.length
      add({
        type: "response.output_item.added",
        sequence_number: 0,
        output_index,
        item: { type: "reasoning", id, summary: [] }
      })
      parts.forEach((part, summary_index) => {
        const ref = { item_id: id, output_index, summary_index }
        add({
          type: "response.reasoning_summary_part.added",
          sequence_number: 0,
          ...ref,
          part: { type: "summary_text", text: "" }
        })
        for (const delta of summaries[r]?.[summary_index] ?? []) {
          add({ type: "response.reasoning_summary_text.delta", sequence_number: 0, ...ref, delta })
        }
        add({ type: "response.reasoning_summary_text.done", sequence_number: 0, ...ref, text: part })
        add({
          type: "response.reasoning_summary_part.done",
          sequence_number: 0,
          ...ref,
          part: { type: "summary_text", text: part }
        })
      })
      const item: R.OutputItem = {
        type: "reasoning",
        id,
        summary: parts.map((part) => ({ type: "summary_text", text: part })),
        encrypted_content: `ENC${r}`
      }
      output.push(item)
      add({ type: "response.output_item.done", sequence_number: 0, output_index, item })
    })
    if (c.text !== "") {
      const id = "msg_up"
      const output_index = output.length
      const ref = { item_id: id, output_index, content_index: 0 }
      add({
        type: "response.output_item.added",
        sequence_number: 0,
        output_index,
        item: { type: "message", id, role: "assistant", status: "in_progress", content: [] }
      })
      add({
        type: "response.content_part.added",
        sequence_number: 0,
        ...ref,
        part: { type: "output_text", text: "", annotations: [] }
      })
      for (const delta of text) {
        add({ type: "response.output_text.delta", sequence_number: 0, ...ref, delta, logprobs: [] })
      }
      add({ type: "response.output_text.done", sequence_number: 0, ...ref, text: c.text, logprobs: [] })
      const part: R.OutputText = { type: "output_text", text: c.text, annotations: [] }
      add({ type: "response.content_part.done", sequence_number: 0, ...ref, part })
      const item: R.OutputItem = { type: "message", id, role: "assistant", status: "completed", content: [part] }
      output.push(item)
      add({ type: "response.output_item.done", sequence_number: 0, output_index, item })
    }
    c.calls.forEach((call, k) => {
      const id = `${call.custom ? "ctc" : "fc"}_${k}`
      const output_index = output.length
      const ref = { item_id: id, output_index }
      const namespace = call.namespace !== undefined ? { namespace: call.namespace } : {}
      const started: R.OutputItem = call.custom
        ? { type: "custom_tool_call", id, call_id: call.callId, name: call.name, input: "", ...namespace }
        : {
          type: "function_call",
          id,
          call_id: call.callId,
          name: call.name,
          arguments: "",
          status: "in_progress",
          ...namespace
        }
      add({ type: "response.output_item.added", sequence_number: 0, output_index, item: started })
      for (const delta of inputs[k] ?? []) {
        add(
          call.custom
            ? { type: "response.custom_tool_call_input.delta", sequence_number: 0, ...ref, delta }
            : { type: "response.function_call_arguments.delta", sequence_number: 0, ...ref, delta }
        )
      }
      add(
        call.custom
          ? { type: "response.custom_tool_call_input.done", sequence_number: 0, ...ref, input: call.input }
          : {
            type: "response.function_call_arguments.done",
            sequence_number: 0,
            ...ref,
            arguments: call.input,
            name: call.name
          }
      )
      const item: R.OutputItem = call.custom
        ? { type: "custom_tool_call", id, call_id: call.callId, name: call.name, input: call.input, ...namespace }
        : {
          type: "function_call",
          id,
          call_id: call.callId,
          name: call.name,
          arguments: call.input,
          status: "completed",
          ...namespace
        }
      output.push(item)
      add({ type: "response.output_item.done", sequence_number: 0, output_index, item })
    })
    const response: R.ResponseObject = {
      ...base,
      status: c.incomplete !== undefined ? "incomplete" : "completed",
      output,
      usage: usageOf(c.usage),
      incomplete_details: c.incomplete !== undefined ? { reason: c.incomplete } : null
    }
    add(
      c.incomplete !== undefined
        ? { type: "response.incomplete", sequence_number: 0, response }
        : { type: "response.completed", sequence_number: 0, response }
    )
    return events
  })
