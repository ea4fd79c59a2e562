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
 *
 * This module is the entry point; the code lives in `internal/translate/` (not importable on its
 * own): `fromOpenAiRequest.ts`, `toOpenAiRequest.ts`, `fromAnthropicRequest.ts` and
 * `toAnthropicRequest.ts` (requests), `openAiResponse.ts` and `anthropicResponse.ts` (buffered
 * responses), `anthropicToOpenAiStream.ts` and `openAiToAnthropicStream.ts` (streams, with
 * `chatChunks.ts`: Chat chunks and streamed tool calls), `chatMeta.ts` (ids, stop reasons, usage),
 * `chatAssistant.ts` (thinking and assistant turns in the Chat shape), `constants.ts` and
 * `shared.ts` (helpers every translation uses).
 */
export { fromAnthropicResponse, toAnthropicResponse } from "./internal/translate/anthropicResponse.js"
export { type AnthropicToOpenAiStream, anthropicToOpenAiStream } from "./internal/translate/anthropicToOpenAiStream.js"
export {
  anthropicMessageId,
  fromAnthropicUsage,
  fromFinishReason,
  fromOpenAiUsage,
  openAiCompletionId,
  toAnthropicUsage,
  toFinishReason,
  toOpenAiUsage
} from "./internal/translate/chatMeta.js"
export {
  anthropicOnlyFields,
  billingHeaderPrefix,
  defaultAnthropicMaxTokens,
  maxOpenAiUserLength,
  openAiOnlyFields,
  reasoningSummarySeparator,
  systemTextSeparator,
  toolReferenceText
} from "./internal/translate/constants.js"
export { fromAnthropicRequest } from "./internal/translate/fromAnthropicRequest.js"
export { fromOpenAiRequest } from "./internal/translate/fromOpenAiRequest.js"
export { fromOpenAiResponse, toOpenAiResponse } from "./internal/translate/openAiResponse.js"
export { type OpenAiToAnthropicStream, openAiToAnthropicStream } from "./internal/translate/openAiToAnthropicStream.js"
export { stripUnsupportedConstraints, toAnthropicRequest } from "./internal/translate/toAnthropicRequest.js"
export { toOpenAiRequest } from "./internal/translate/toOpenAiRequest.js"
