/**
 * Ids, stop reasons and usage between OpenAI Chat, Anthropic Messages and the neutral form: the
 * re-prefixing of message / completion ids, `finish_reason` ⇄ neutral stop reason, and token
 * usage both ways for both formats. Shared by buffered responses and stream translators.
 */
import type * as Anthropic from "../../AnthropicMessages.js"
import type * as N from "../../Neutral.js"
import * as OpenAi from "../../OpenAiChat.js"
import { present } from "./shared.js"

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

/** Neutral usage of OpenAI usage (`prompt_tokens` already counts cached tokens). */
export const fromOpenAiUsage = (usage: OpenAi.Usage | null | undefined): N.NeutralUsage => {
  if (usage === undefined || usage === null) return { inputTokens: 0, outputTokens: 0 }
  const cached = usage.prompt_tokens_details?.cached_tokens
  const creation = OpenAi.cacheWrites(usage)
  const long = usage.prompt_tokens_details?.cache_write_1h_tokens
  const reasoning = usage.completion_tokens_details?.reasoning_tokens
  return {
    inputTokens: usage.prompt_tokens,
    outputTokens: usage.completion_tokens,
    ...(present(cached) ? { cacheReadTokens: cached } : {}),
    ...(present(creation) ? { cacheCreationTokens: creation } : {}),
    ...(present(long) ? { cacheCreation1hTokens: long } : {}),
    ...(present(reasoning) ? { reasoningTokens: reasoning } : {}),
    ...costOf(usage.cost)
  }
}

/** The neutral `costUsd` of a wire `cost` (absent when not reported). */
export const costOf = (cost: number | null | undefined): { readonly costUsd?: number } =>
  present(cost) ? { costUsd: cost } : {}

/** The one-hour cache writes of a neutral usage, when it reported any. */
export const longWrites = (usage: N.NeutralUsage): number | undefined =>
  usage.cacheCreation1hTokens !== undefined && usage.cacheCreation1hTokens > 0 ? usage.cacheCreation1hTokens : undefined

/**
 * OpenAI usage of neutral usage: `prompt_tokens` = all input tokens,
 * `prompt_tokens_details.cached_tokens` = cache reads, `.cache_creation_tokens` = cache writes
 * (`.cache_write_1h_tokens` those kept for an hour, when there are any), `cost` the provider's charge.
 */
export const toOpenAiUsage = (usage: N.NeutralUsage): OpenAi.Usage => {
  const long = longWrites(usage)
  return {
    prompt_tokens: usage.inputTokens,
    completion_tokens: usage.outputTokens,
    total_tokens: usage.inputTokens + usage.outputTokens,
    ...(usage.cacheReadTokens !== undefined || usage.cacheCreationTokens !== undefined
      ? {
        prompt_tokens_details: {
          ...(usage.cacheReadTokens !== undefined ? { cached_tokens: usage.cacheReadTokens } : {}),
          ...(usage.cacheCreationTokens !== undefined ? { cache_creation_tokens: usage.cacheCreationTokens } : {}),
          ...(long !== undefined ? { cache_write_1h_tokens: long } : {})
        }
      }
      : {}),
    ...(usage.reasoningTokens !== undefined
      ? { completion_tokens_details: { reasoning_tokens: usage.reasoningTokens } }
      : {}),
    ...(usage.costUsd !== undefined ? { cost: usage.costUsd } : {})
  }
}

/** Neutral usage of Anthropic usage: `inputTokens` = `input_tokens` + cache reads + cache writes. */
export const fromAnthropicUsage = (usage: {
  readonly input_tokens?: number | null | undefined
  readonly output_tokens: number
  readonly cache_read_input_tokens?: number | null | undefined
  readonly cache_creation_input_tokens?: number | null | undefined
  readonly cache_creation?: Anthropic.Usage["cache_creation"]
  readonly cost?: number | null | undefined
}): N.NeutralUsage => {
  const read = usage.cache_read_input_tokens
  const creation = usage.cache_creation_input_tokens
  const long = usage.cache_creation?.ephemeral_1h_input_tokens
  return {
    inputTokens: (usage.input_tokens ?? 0) + (read ?? 0) + (creation ?? 0),
    outputTokens: usage.output_tokens,
    ...(present(read) ? { cacheReadTokens: read } : {}),
    ...(present(creation) ? { cacheCreationTokens: creation } : {}),
    ...(present(long) ? { cacheCreation1hTokens: long } : {}),
    ...costOf(usage.cost)
  }
}

/** Anthropic usage of neutral usage: `input_tokens` = all input − cache reads − cache writes, floored at 0. */
export const toAnthropicUsage = (usage: N.NeutralUsage): Anthropic.Usage => {
  const long = longWrites(usage)
  return {
    input_tokens: Math.max(0, usage.inputTokens - (usage.cacheReadTokens ?? 0) - (usage.cacheCreationTokens ?? 0)),
    output_tokens: usage.outputTokens,
    ...(usage.cacheCreationTokens !== undefined ? { cache_creation_input_tokens: usage.cacheCreationTokens } : {}),
    ...(usage.cacheReadTokens !== undefined ? { cache_read_input_tokens: usage.cacheReadTokens } : {}),
    ...(long !== undefined
      ? {
        cache_creation: {
          ephemeral_5m_input_tokens: Math.max(0, (usage.cacheCreationTokens ?? 0) - long),
          ephemeral_1h_input_tokens: long
        }
      }
      : {}),
    ...(usage.costUsd !== undefined ? { cost: usage.costUsd } : {})
  }
}
