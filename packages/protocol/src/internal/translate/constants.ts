/**
 * The named constants of the Chat ⇄ Messages rules ({@link module:Translate}): field lists dropped
 * per direction, the default output limit, separators, the user id limit and the texts that stand
 * in for what Chat cannot carry, and the user-id cut built on that limit ({@link openAiUser}).
 * {@link module:TranslateResponses} reads several of them too.
 */

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

/**
 * `{user}` when `user` has at most {@link maxOpenAiUserLength} characters (code points), else
 * nothing: the `user` field of a request to an OpenAI-compatible upstream (Chat or Responses).
 */
export const openAiUser = (user: string | undefined): { readonly user?: string } =>
  user !== undefined && Array.from(user).length <= maxOpenAiUserLength ? { user } : {}

/** What `toOpenAiRequest` puts between the texts of one system message (a blank line). */
export const systemTextSeparator = "\n\n"

/**
 * What joins the summary texts of an OpenAI Responses reasoning item when Chat or Messages read it
 * as thinking (a blank line).
 */
export const reasoningSummarySeparator = "\n\n"
