/**
 * The stateful Gemini stream → OpenAI Chat chunk translator ({@link geminiToChatStream}), one
 * instance per stream.
 */
import type * as G from "../../Gemini.js"
import type * as N from "../../Neutral.js"
import type * as OpenAi from "../../OpenAiChat.js"
import { chatChunk, type ChunkDelta, toolDelta, usageChunk } from "./chatChunks.js"
import { openAiCompletionId, toFinishReason, toOpenAiUsage } from "./chatMeta.js"
import { fromGeminiFinishReason, fromGeminiUsage, modelPartBlocks, responseCallId } from "./geminiParts.js"
import { firstCandidate } from "./geminiResponse.js"

/** Translates one Gemini event stream into Chat chunks; see {@link geminiToChatStream}. */
export interface GeminiToChatStream {
  readonly push: (event: G.StreamEvent) => ReadonlyArray<OpenAi.ChatCompletionChunk>
  /** Closes a stream that stopped without a `finishReason` (idempotent). */
  readonly end: () => ReadonlyArray<OpenAi.ChatCompletionChunk>
}

const signatureDelta = (signature: string): ChunkDelta => ({
  thinking_blocks: [{ type: "thinking", thinking: "", signature }]
})

/**
 * A stateful translator of one Gemini `streamGenerateContent` stream (from a Gemini upstream) into
 * OpenAI Chat chunks, one instance per stream, reading candidate 0 of each event:
 *
 * - the first event → a role chunk (id `Translate.openAiCompletionId` of its `responseId`, model its
 *   `modelVersion`);
 * - thought text → `reasoning_content`, a thought's signature then `{thinking_blocks: [{type:
 *   "thinking", thinking: "", signature}]}`; a signature on a text or call part → that signature
 *   delta before the part (as the buffered translation's signature-only Thinking);
 * - text → `content`; a function call (Gemini sends each whole) → one `tool_calls` delta with its
 *   id (Gemini's, else the buffered rule's `gemini_call_<responseId>_<n>`), name and arguments;
 * - the event with a `finishReason` (or a `promptFeedback.blockReason`) → a finish chunk (as
 *   `Translate.toFinishReason` of the buffered rule's stop reason), then a usage chunk (`choices:
 *   []`) from the last `usageMetadata` seen; nothing is emitted after it.
 *
 * Other parts (images, code execution) are skipped. `end()` closes a stream that stopped without a
 * finish (`tool_calls` when a call was seen, else `stop`; usage so far).
 */
export const geminiToChatStream = (): GeminiToChatStream => {
  let id = openAiCompletionId("")
  let model = ""
  let responseId: string | undefined
  let started = false
  let finished = false
  let calls = 0
  let usage: N.NeutralUsage = { inputTokens: 0, outputTokens: 0 }

  const chunk = (delta: ChunkDelta, finishReason: string | null = null) => chatChunk(id, model, delta, finishReason)
  const finish = (reason: string): ReadonlyArray<OpenAi.ChatCompletionChunk> => {
    finished = true
    return [chunk({}, reason), usageChunk(id, model, toOpenAiUsage(usage))]
  }

  const partChunks = (part: G.Part): ReadonlyArray<OpenAi.ChatCompletionChunk> =>
    modelPartBlocks(part, () => responseCallId(responseId, calls)).flatMap((block) => {
      switch (block._tag) {
        case "Thinking":
          return [
            ...(block.text !== "" ? [chunk({ reasoning_content: block.text })] : []),
            ...(block.signature !== undefined ? [chunk(signatureDelta(block.signature))] : [])
          ]
        case "Text":
          return [chunk({ content: block.text })]
        case "ToolUse": {
          const index = calls++
          return [chunk(toolDelta({
            index,
            id: block.id,
            type: "function",
            function: { name: block.name, arguments: JSON.stringify(block.input) }
          }))]
        }
        default:
          return []
      }
    })

  const push = (event: G.StreamEvent): ReadonlyArray<OpenAi.ChatCompletionChunk> => {
    if (finished) return []
    const out: Array<OpenAi.ChatCompletionChunk> = []
    if (!started) {
      started = true
      responseId = event.responseId
      id = openAiCompletionId(event.responseId ?? "")
      model = event.modelVersion ?? ""
      out.push(chunk({ role: "assistant", content: "" }))
    }
    if (event.usageMetadata !== undefined) usage = fromGeminiUsage(event.usageMetadata)
    const candidate = firstCandidate(event)
    for (const part of candidate?.content?.parts ?? []) out.push(...partChunks(part))
    const blocked = event.promptFeedback?.blockReason !== undefined && candidate === undefined
    const stop = blocked ? "refusal" : fromGeminiFinishReason(candidate?.finishReason, calls > 0)
    if (stop !== null) out.push(...finish(toFinishReason(stop) ?? "stop"))
    return out
  }
  const end = (): ReadonlyArray<OpenAi.ChatCompletionChunk> =>
    finished || !started ? [] : finish(calls > 0 ? "tool_calls" : "stop")
  return { push, end }
}
