/**
 * Pure translations between the Gemini API ({@link module:Gemini}) and the neutral form of
 * {@link module:Neutral}: requests both ways, buffered responses both ways, and two stateful stream
 * translators (OpenAI Chat chunks → Gemini events for a Gemini client, Gemini events → Chat chunks
 * from a Gemini upstream; Anthropic and Responses streams go through {@link module:Translate} /
 * {@link module:TranslateResponses} first / after).
 *
 * Requests from Gemini (`fromGeminiRequest`; `model` and `stream` come from the URL):
 * - `systemInstruction` text parts → `instructions` (its other parts and `role` are dropped);
 *   `contents` → messages, `model` → assistant, `user` (or no role, or the older `function`) → user.
 * - user parts: text → Text (`""` → none), `functionResponse` → ToolResult, image `inlineData` →
 *   Image (base64); anything else (`fileData`, other `inlineData`, unknown parts) → opaque.
 *   model parts: a thought (`thought: true`) → Thinking with its `thoughtSignature` as signature;
 *   text → Text; `functionCall` → ToolUse (`args` as input, `{}` when absent); image `inlineData` →
 *   Image; anything else → opaque (keeping its own signature). A `thoughtSignature` on a text,
 *   function call or image part (Gemini signs text and function calls too) → a signature-only
 *   Thinking (`text: ""`) right before that part's block, so the signature crosses Chat
 *   (`thinking_blocks`) and Anthropic (signed thinking) and comes back onto the part.
 * - **Function-call ids.** A `functionCall` without `id` gets {@link requestCallId}
 *   `gemini_call_<content index>_<part index>`: derived from its position, so every later request
 *   of the conversation (which repeats the history) derives the same id. A `functionResponse` pairs
 *   with a call of the latest model turn: the one with its `id` when that names a call, else the
 *   first not yet answered call of its `name` (so responses pair by name and order; Gemini CLI sends
 *   its own ids, which name no call, on responses to calls that had none); the ToolResult's
 *   `toolUseId` is that call's id (the response's own id, else its position's id, when none pairs).
 *   The ids and names Gemini sent are kept in the blocks' `gemini` markers, so a Gemini upstream
 *   gets them back exactly (no id where there was none).
 * - `functionResponse.response` → the ToolResult's text: `{"output": s}` → `s`, `{"error": s}` →
 *   `s` with `isError` (when the only key, and `s` not itself a JSON object's text); any other
 *   object → its JSON text ({@link toolResultContent}; {@link functionResponseBody} is the inverse).
 * - tools: each function declaration → a tool (`parametersJsonSchema` as the JSON Schema, else
 *   `parameters` with its upper-case OpenAPI `type` values lower-cased ({@link openApiToJsonSchema}),
 *   else an empty object schema), the declaration kept verbatim for Gemini; built-in tools
 *   (`googleSearch`, `codeExecution`, …) → opaque tools.
 * - `toolConfig.functionCallingConfig`: `AUTO` / `ANY` / `NONE` → auto / required / none, `ANY` with
 *   one allowed name → that tool; anything else (several names, `VALIDATED`) → opaque.
 * - `generationConfig`: `temperature`, `topP`, `maxOutputTokens`, `stopSequences` → their neutral
 *   slots; `topK`, `seed`, `presencePenalty`, `frequencyPenalty`, `candidateCount` → `extra.top_k`,
 *   `seed`, `presence_penalty`, `frequency_penalty`, `n` (the names the other formats' rules know:
 *   Anthropic gets `top_k`, Chat the others, and `n` > 1 fails for Anthropic and Responses);
 *   `responseMimeType` `application/json` with `responseJsonSchema` → a `json_schema` response
 *   format named {@link geminiSchemaName}, without a schema → `json_object`, `text/plain` →
 *   `text`. Everything else (`thinkingConfig`, `responseSchema`, `responseModalities`, …), the rest
 *   of `toolConfig`, `safetySettings`, `cachedContent` and unknown fields → `gemini.fields`, for a
 *   Gemini upstream only: DROPPED for the other formats.
 *
 * Requests to Gemini (`toGeminiRequest`) write the above back; a Gemini request read and written
 * again is equal to the input but for these normalisations: `systemInstruction` loses its `role`
 * and non-text parts; contents get an explicit role (`function` → `user`); all function
 * declarations are one `tools` entry, before the built-in tools; an empty text part and a content
 * left without parts are left out; a function call without `args` gets `args: {}`, a function
 * response without `response` `{"output": ""}`; a `responseJsonSchema` without
 * `responseMimeType: "application/json"` stays Gemini's; an empty signed thought right before a
 * text or call part without a signature becomes that part's signature.
 * From other formats: instructions and positioned system messages (moved to the end, in order) are
 * `systemInstruction`; tool results are `functionResponse` parts named after their call (looked up
 * by id in the conversation; a result whose call is not there FAILS) with the body above (texts
 * joined with `"\n"`, an Anthropic tool reference as `Translate.toolReferenceText`), images in a
 * result follow it as parts; base64 images → `inlineData`, URL images → `fileData` (mime type from
 * the extension, else `image/jpeg`); thinking → thought parts (signature → `thoughtSignature`);
 * Responses reasoning → a thought part of its summary; tools → declarations with
 * `parametersJsonSchema`; `json_schema` → `responseJsonSchema` (its name, description and strict
 * flag DROPPED). DROPPED: redacted thinking (Gemini has no slot), image `detail`,
 * `parallelToolCalls`, `user`, and every `extra` field besides the five above (the Gemini API
 * rejects unknown fields). FAILS (TranslationError, 400): an opaque block or part of another format,
 * tool-call arguments that are not a JSON object.
 *
 * Responses (buffered): `fromGeminiResponse` reads candidate 0 (thoughts, texts, calls with ids
 * {@link responseCallId} `gemini_call_<responseId>_<n>` when Gemini sent none; other parts and
 * safety ratings DROPPED); finish reasons map by {@link fromGeminiFinishReason} (`SAFETY` and the
 * other content blocks are a refusal), a blocked prompt (`promptFeedback.blockReason`, no
 * candidate) is an empty answer with stop reason `refusal` — a Chat client sees `finish_reason:
 * "content_filter"`, a Messages client `stop_reason: "refusal"`; usage by {@link fromGeminiUsage}.
 * `toGeminiResponse` writes one candidate: parts as in requests (every call with its id), finish
 * reason by {@link toGeminiFinishReason} (a refusal is `SAFETY`, tool calls end with `STOP` as
 * Gemini does), usage by {@link toGeminiUsage} (thoughts and cache reads included).
 *
 * Token counting: {@link countTokensBody} is the request a `countTokens` body counts (read it with
 * `fromGeminiRequest`); {@link toCountTokensRequest} writes a neutral request as one for a Gemini
 * upstream.
 *
 * Streams: see {@link chatToGeminiStream} and {@link geminiToChatStream}.
 *
 * This module is the entry point; the code lives in `internal/translate/` (not importable on its
 * own): `geminiFromRequest.ts`, `geminiToRequest.ts` (requests), `geminiResponse.ts` (buffered
 * responses), `geminiFromChatStream.ts`, `geminiToChatStream.ts` (streams), `geminiParts.ts`
 * (parts ⇄ blocks, ids, finish reasons, usage).
 */
export { type ChatToGeminiStream, chatToGeminiStream } from "./internal/translate/geminiFromChatStream.js"
export {
  countTokensBody,
  fromGeminiRequest,
  geminiSchemaName,
  openApiToJsonSchema
} from "./internal/translate/geminiFromRequest.js"
export {
  fromGeminiFinishReason,
  fromGeminiUsage,
  functionResponseBody,
  geminiFormat,
  refusalFinishReasons,
  requestCallId,
  responseCallId,
  toGeminiFinishReason,
  toGeminiUsage,
  toolResultContent
} from "./internal/translate/geminiParts.js"
export { firstCandidate, fromGeminiResponse, toGeminiResponse } from "./internal/translate/geminiResponse.js"
export { type GeminiToChatStream, geminiToChatStream } from "./internal/translate/geminiToChatStream.js"
export { toCountTokensRequest, toGeminiRequest } from "./internal/translate/geminiToRequest.js"
