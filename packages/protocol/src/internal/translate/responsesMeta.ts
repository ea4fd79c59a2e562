/**
 * Usage, ids, statuses and stop reasons between Responses and the neutral form, shared by
 * buffered responses and stream translators.
 */
import type * as N from "../../Neutral.js"
import type * as R from "../../OpenAiResponses.js"
import { costOf, longWrites } from "./chatMeta.js"
import { present } from "./shared.js"

/** Neutral usage of Responses usage (`input_tokens` already counts cached tokens). */
export const fromResponsesUsage = (usage: R.Usage | null | undefined): N.NeutralUsage => {
  if (!present(usage)) return { inputTokens: 0, outputTokens: 0 }
  const cached = usage.input_tokens_details?.cached_tokens
  const written = usage.input_tokens_details?.cache_write_tokens
  const long = usage.input_tokens_details?.cache_write_1h_tokens
  const reasoning = usage.output_tokens_details?.reasoning_tokens
  return {
    inputTokens: usage.input_tokens,
    outputTokens: usage.output_tokens,
    ...(present(cached) ? { cacheReadTokens: cached } : {}),
    ...(present(written) ? { cacheCreationTokens: written } : {}),
    ...(present(long) ? { cacheCreation1hTokens: long } : {}),
    ...(present(reasoning) ? { reasoningTokens: reasoning } : {}),
    ...costOf(usage.cost)
  }
}

/** Responses usage of neutral usage; the details objects only when they have a count. */
export const toResponsesUsage = (usage: N.NeutralUsage): R.Usage => {
  const long = longWrites(usage)
  return {
    input_tokens: usage.inputTokens,
    output_tokens: usage.outputTokens,
    total_tokens: usage.inputTokens + usage.outputTokens,
    ...(usage.cacheReadTokens !== undefined || usage.cacheCreationTokens !== undefined
      ? {
        input_tokens_details: {
          ...(usage.cacheReadTokens !== undefined ? { cached_tokens: usage.cacheReadTokens } : {}),
          ...(usage.cacheCreationTokens !== undefined ? { cache_write_tokens: usage.cacheCreationTokens } : {}),
          ...(long !== undefined ? { cache_write_1h_tokens: long } : {})
        }
      }
      : {}),
    ...(usage.reasoningTokens !== undefined
      ? { output_tokens_details: { reasoning_tokens: usage.reasoningTokens } }
      : {}),
    ...(usage.costUsd !== undefined ? { cost: usage.costUsd } : {})
  }
}

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

/** The neutral stop reason of a response: from its status, `tool_use` when `hasCall` and it completed. */
export const stopReasonOf = (response: R.ResponseObject, hasCall: boolean): N.StopReason | null => {
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
