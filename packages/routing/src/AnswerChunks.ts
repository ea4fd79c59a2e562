/**
 * A buffered answer as stream chunks: the chunks a streaming caller receives when the route
 * produced the answer while routing (noop's `OK`, a turn released by the advisor gate), so no
 * upstream stream exists to forward.
 */
import type { ChatCompletion, ChatCompletionChunk } from "@switchyard-ts/protocol/OpenAiChat"

type Choice = ChatCompletion["choices"][number]
type Delta = ChatCompletionChunk["choices"][number]["delta"]

const deltaOf = (message: Choice["message"]): Delta => ({
  role: "assistant",
  ...(message.content === undefined || message.content === null ? {} : { content: message.content }),
  ...(message.refusal === undefined || message.refusal === null ? {} : { refusal: message.refusal }),
  ...(message.tool_calls === undefined || message.tool_calls === null || message.tool_calls.length === 0 ? {} : {
    // A custom tool call has no `function`; its name and input travel in the same fields.
    tool_calls: message.tool_calls.map((call, index) =>
      call.type === "function"
        ? {
          index,
          id: call.id,
          type: "function",
          function: { name: call.function.name, arguments: call.function.arguments }
        }
        : { index, id: call.id, type: "custom", function: { name: call.custom.name, arguments: call.custom.input } }
    )
  })
})

/**
 * The chunks of `completion`: per choice one chunk carrying the whole message (role, content,
 * refusal, tool calls; `finish_reason: null`), then per choice a chunk with an empty delta and the
 * choice's `finish_reason` (`stop` when it had none), then — with `includeUsage` and a usage
 * record — one chunk with empty `choices` and the usage, as OpenAI sends it. The caller appends
 * `data: [DONE]`.
 */
export const chunks = (
  completion: ChatCompletion,
  options: { readonly includeUsage: boolean }
): ReadonlyArray<ChatCompletionChunk> => {
  const base = {
    id: completion.id,
    object: "chat.completion.chunk",
    created: completion.created ?? 0,
    model: completion.model
  } as const
  const content: Array<ChatCompletionChunk> = completion.choices.map((choice) => ({
    ...base,
    choices: [{ index: choice.index, delta: deltaOf(choice.message), finish_reason: null }]
  }))
  const finish: Array<ChatCompletionChunk> = completion.choices.map((choice) => ({
    ...base,
    choices: [{ index: choice.index, delta: {}, finish_reason: choice.finish_reason ?? "stop" }]
  }))
  const usage = completion.usage
  const tail: Array<ChatCompletionChunk> = options.includeUsage && usage !== undefined && usage !== null
    ? [{ ...base, choices: [], usage }]
    : []
  return [...content, ...finish, ...tail]
}
