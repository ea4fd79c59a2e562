/**
 * Responses-origin requests made ready for Chat and Messages upstreams ({@link portable}: what
 * fails, what is dropped) and the two translations built on it ({@link toChatRequest},
 * {@link toMessagesRequest}); the rules are in the module notes of
 * {@link module:TranslateResponses}.
 */
import * as Either from "effect/Either"
import type * as Anthropic from "../../AnthropicMessages.js"
import type { TranslationError } from "../../Errors.js"
import { clip } from "../../Excerpt.js"
import type * as N from "../../Neutral.js"
import type * as OpenAi from "../../OpenAiChat.js"
import * as Translate from "../../Translate.js"
import { fail, present, typeOf } from "./shared.js"

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
): Either.Either<N.NeutralRequest, TranslationError> => Either.gen(() => portableSteps(n, target))

/** The steps of {@link portable}: a generator made once (docs/architecture.md). */
const portableSteps = function*(n: N.NeutralRequest, target: "openai_chat" | "anthropic_messages") {
  const to = `an ${target} upstream`
  const fields = n.responses?.fields ?? {}
  for (const key of ["previous_response_id", "conversation", "prompt"]) {
    if (present(fields[key])) {
      return yield* fail(`${key} (state kept by an OpenAI Responses server) cannot be sent to ${to}`)
    }
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
        return yield* fail(
          `a Responses ${clip(type)} ${message.role === "assistant" ? "item" : "content part"} cannot be sent to ${to}`
        )
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
}

/** `n` as a Chat request: {@link portable}, then `Translate.toOpenAiRequest`. */
export const toChatRequest = (n: N.NeutralRequest): Either.Either<OpenAi.ChatCompletionRequest, TranslationError> =>
  Either.map(portable(n, "openai_chat"), Translate.toOpenAiRequest)

/** `n` as a Messages request: {@link portable}, then `Translate.toAnthropicRequest`. */
export const toMessagesRequest = (n: N.NeutralRequest): Either.Either<Anthropic.MessagesRequest, TranslationError> =>
  Either.flatMap(portable(n, "anthropic_messages"), Translate.toAnthropicRequest)
