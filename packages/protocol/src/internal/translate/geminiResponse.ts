/**
 * Buffered Gemini responses ⇄ neutral responses ({@link fromGeminiResponse},
 * {@link toGeminiResponse}).
 */
import * as Either from "effect/Either"
import * as Predicate from "effect/Predicate"
import type * as G from "../../Gemini.js"
import type * as N from "../../Neutral.js"
import {
  fromGeminiFinishReason,
  fromGeminiUsage,
  modelPartBlocks,
  modelParts,
  responseCallId,
  toGeminiFinishReason,
  toGeminiUsage
} from "./geminiParts.js"

/** The candidate a translation reads: the one of index 0, else the first. */
export const firstCandidate = (r: G.GenerateContentResponse): G.Candidate | undefined =>
  r.candidates?.find((c) => (c.index ?? 0) === 0) ?? r.candidates?.[0]

const isResponseBlock = (block: N.Block): block is N.ResponseBlock =>
  block._tag === "Text" || block._tag === "ToolUse" || block._tag === "Thinking"

/**
 * A Gemini response in neutral form, from its first candidate: thoughts → Thinking, texts → Text,
 * function calls → ToolUse (ids from {@link responseCallId} when Gemini sent none), a thought
 * signature on a text or call part → a signature-only Thinking before it; other parts (images, code
 * execution) are dropped. A blocked prompt (`promptFeedback.blockReason`, no candidate) is an empty
 * answer with stop reason `refusal`, as is a candidate that finished for `SAFETY` and the like.
 * The id is `responseId` (`""` when absent), the model `modelVersion`.
 */
export const fromGeminiResponse = (r: G.GenerateContentResponse): N.NeutralResponse => {
  const candidate = firstCandidate(r)
  const content: Array<N.ResponseBlock> = []
  let calls = 0
  for (const part of candidate?.content?.parts ?? []) {
    for (const block of modelPartBlocks(part, () => responseCallId(r.responseId, calls))) {
      if (block._tag === "ToolUse") {
        calls++
        // An answer's call ids go to the client as they are, derived or not.
        const { gemini: _gemini, ...call } = block
        content.push(call)
      } else if (isResponseBlock(block)) content.push(block)
    }
  }
  const blocked = r.promptFeedback?.blockReason !== undefined && candidate === undefined
  return {
    id: r.responseId ?? "",
    model: r.modelVersion ?? "",
    content,
    stopReason: blocked ? "refusal" : fromGeminiFinishReason(candidate?.finishReason, calls > 0),
    usage: fromGeminiUsage(r.usageMetadata)
  }
}

/**
 * A neutral response as a Gemini response with one candidate (index 0, role `model`): parts as a
 * request's model turn writes them, but every function call with its neutral id; tool input that is
 * not a JSON object becomes `{}`. `finishReason` from `toGeminiFinishReason` (a refusal is
 * `SAFETY`, a tool-calling turn `STOP`), `usageMetadata` from `toGeminiUsage`, `responseId` the
 * neutral id, `modelVersion` the model.
 */
export const toGeminiResponse = (n: N.NeutralResponse): G.GenerateContentResponse => {
  const blocks = n.content.map((block): N.ResponseBlock =>
    block._tag === "ToolUse" && !Predicate.isRecord(block.input) ? { ...block, input: {} } : block
  )
  const parts = Either.getOrElse(modelParts(blocks, { alwaysId: true }), () => [])
  const finishReason = toGeminiFinishReason(n.stopReason)
  return {
    candidates: [{
      content: { role: "model", parts },
      ...(finishReason !== undefined ? { finishReason } : {}),
      index: 0
    }],
    usageMetadata: toGeminiUsage(n.usage),
    modelVersion: n.model,
    responseId: n.id
  }
}
