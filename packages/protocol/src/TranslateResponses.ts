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
 * - an `additional_tools` item (`{"type": "additional_tools", "role": "developer", "tools": […]}`,
 *   Codex's tools for the newer models of its catalog; `AdditionalToolsItem` of
 *   {@link module:OpenAiResponses}) is no message: its function, custom and namespace tools join
 *   `tools` after the request's own, by the rules above (so they reach Chat and Messages
 *   flattened, and calls come back under their namespace); its hosted tools are not read (as for
 *   Chat / Messages, they are dropped). A tool a
 *   later such item declares again (a conversation's history) is that later declaration; a clash
 *   with `tools` fails as above. The item itself is kept verbatim in `responses.additionalTools`
 *   with its place (leading items and messages before it) and the names of the tools it gave, so
 *   `toResponsesRequest` writes it back in place and leaves those tools out of `tools`. An item
 *   whose `tools` is not a list of tools stays an unknown item (below).
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
 * "properties": {}}`; hosted tools come after the others; `null` optional fields are left out; an
 * `additional_tools` item inside the run of items that makes one neutral message (between two
 * calls of one turn, two tool outputs) comes back after that run.
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
 *
 * This module is the entry point; the code lives in `internal/translate/` (not importable on its
 * own): `fromResponsesRequest.ts`, `toResponsesRequest.ts` and `responsesPortable.ts` (requests),
 * `responsesResponse.ts` (buffered responses), `chatToResponsesStream.ts` and
 * `responsesToChatStream.ts` (streams, with `chatChunks.ts`), `responsesToolNames.ts` (tool-name
 * flattening and custom tools), `responsesItems.ts` (items ⇄ blocks), `responsesMeta.ts` (usage,
 * ids, statuses) and `shared.ts` (helpers every translation uses).
 */
export {
  type ChatToResponsesStream,
  chatToResponsesStream,
  streamErrorEvents
} from "./internal/translate/chatToResponsesStream.js"
export { fromResponsesRequest, responsesOnlyFields } from "./internal/translate/fromResponsesRequest.js"
export { syntheticReasoningPrefix } from "./internal/translate/responsesItems.js"
export { fromResponsesUsage, responseId, responseStatus, toResponsesUsage } from "./internal/translate/responsesMeta.js"
export { portable, toChatRequest, toMessagesRequest } from "./internal/translate/responsesPortable.js"
export {
  fromResponsesResponse,
  type ToResponsesOptions,
  toResponsesResponse
} from "./internal/translate/responsesResponse.js"
export { type ResponsesToChatStream, responsesToChatStream } from "./internal/translate/responsesToChatStream.js"
export {
  customToolParameters,
  flatToolName,
  maxToolNameLength,
  namespaceSeparator,
  originalToolName,
  portableToolName,
  type ToolMap,
  toolMap
} from "./internal/translate/responsesToolNames.js"
export { chatOnlyFields, toResponsesRequest } from "./internal/translate/toResponsesRequest.js"
