/**
 * The stateful OpenAI Chat chunk stream → Gemini stream translator ({@link chatToGeminiStream}),
 * one instance per stream.
 */
import * as Predicate from "effect/Predicate"
import type * as G from "../../Gemini.js"
import type * as OpenAi from "../../OpenAiChat.js"
import { isOpenAiRedactedThinking, isOpenAiThinkingText } from "./chatAssistant.js"
import { type PendingToolCall, pushToolCallFragment } from "./chatChunks.js"
import { fromFinishReason, fromOpenAiUsage } from "./chatMeta.js"
import { toGeminiFinishReason, toGeminiUsage } from "./geminiParts.js"
import { parseArguments, present } from "./shared.js"

/** Translates one Chat chunk stream into Gemini stream events; see {@link chatToGeminiStream}. */
export interface ChatToGeminiStream {
  readonly push: (chunk: OpenAi.ChatCompletionChunk) => ReadonlyArray<G.StreamEvent>
  /** Completes the stream: the last event, when not sent yet (idempotent). */
  readonly end: () => ReadonlyArray<G.StreamEvent>
}

/**
 * A stateful translator of one OpenAI Chat chunk stream (what every route answers with) into
 * Gemini `streamGenerateContent` events for a Gemini client, one instance per stream; only choice
 * 0 is read. Every event is a `GenerateContentResponse` with one candidate (index 0, role `model`)
 * holding the parts new in that chunk, `responseId` the chunk id and `modelVersion`
 * `options.model`, else the chunk's model.
 *
 * - `content` → a text part; `reasoning_content` (or a `thinking_blocks` thinking entry's text) →
 *   a thought part (`thought: true`);
 * - a thinking signature after thought text → a thought part `{"text": "", "thought": true,
 *   "thoughtSignature"}` (a Gemini client reading the parts joins it to the thought before it); a
 *   signature with no thought text before it is held and put on the next text part or function
 *   call, else sent as such a part; redacted thinking is dropped (as in `toGeminiResponse`);
 * - tool calls are assembled from their fragments and sent whole, in `index` order, as
 *   `functionCall` parts (`{id, name, args}`, arguments that are not a JSON object as `{}`) in the
 *   last event;
 * - the last event — sent once the finish chunk and the usage have both come, else by `end()` —
 *   carries the calls, the `finishReason` (`toGeminiFinishReason` of the chunk's finish reason;
 *   `STOP` for tool calls) and `usageMetadata` (zeros when the upstream reported none).
 *
 * Concatenating the events' parts gives the parts of `toGeminiResponse` of the buffered answer,
 * once adjacent text parts are joined (see the module notes of {@link module:TranslateGemini}).
 */
export const chatToGeminiStream = (options: { readonly model?: string } = {}): ChatToGeminiStream => {
  let id = ""
  let model = options.model ?? ""
  let started = false
  let done = false
  let finishReason: string | null | undefined
  let usage: OpenAi.Usage | undefined
  const thinking = thoughtParts()
  const calls = new Map<number, PendingToolCall>()

  const event = (parts: ReadonlyArray<G.Part>, last?: LastFields): G.StreamEvent => ({
    candidates: [{
      content: { role: "model", parts },
      ...(last?.finishReason !== undefined ? { finishReason: last.finishReason } : {}),
      index: 0
    }],
    ...(last !== undefined ? { usageMetadata: last.usageMetadata } : {}),
    modelVersion: model,
    responseId: id
  })

  const final = (): ReadonlyArray<G.StreamEvent> => {
    done = true
    const parts: Array<G.Part> = []
    const [first, ...rest] = callParts(calls)
    if (first !== undefined) parts.push({ ...first, ...thinking.take() }, ...rest)
    else thinking.flush(parts)
    return [event(parts, {
      finishReason: toGeminiFinishReason(fromFinishReason(finishReason ?? (calls.size > 0 ? "tool_calls" : "stop"))),
      usageMetadata: toGeminiUsage(fromOpenAiUsage(usage))
    })]
  }

  const push = (chunk: OpenAi.ChatCompletionChunk): ReadonlyArray<G.StreamEvent> => {
    if (done) return []
    if (!started) {
      started = true
      id = chunk.id
      if (options.model === undefined) model = chunk.model
    }
    if (present(chunk.usage)) usage = chunk.usage
    const parts: Array<G.Part> = []
    const choice = chunk.choices.find((c) => c.index === 0)
    if (choice !== undefined) {
      const delta = choice.delta
      deltaThinking(delta, parts, thinking)
      for (const text of [delta.content ?? "", delta.refusal ?? ""]) {
        if (text !== "") parts.push({ text, ...thinking.take() })
      }
      for (const fragment of delta.tool_calls ?? []) pushCallFragment(calls, fragment)
      if (present(choice.finish_reason)) finishReason = choice.finish_reason
    }
    const out: Array<G.StreamEvent> = parts.length > 0 ? [event(parts)] : []
    if (present(finishReason) && usage !== undefined) out.push(...final())
    return out
  }
  const end = (): ReadonlyArray<G.StreamEvent> => done || !started ? [] : final()
  return { push, end }
}

interface LastFields {
  readonly finishReason: string | undefined
  readonly usageMetadata: G.UsageMetadata
}

/**
 * The thought parts of a stream and the signature rule of {@link chatToGeminiStream}: a signature
 * after thought text is a signature-only thought part; one with no thought text before it is held
 * for the next text part or call (`take`), else sent as such a part (`flush`).
 */
const thoughtParts = () => {
  let open = false
  let held: string | undefined
  const flush = (parts: Array<G.Part>) => {
    if (held !== undefined) parts.push({ text: "", thought: true, thoughtSignature: held })
    held = undefined
  }
  return {
    flush: (parts: Array<G.Part>) => {
      flush(parts)
      open = false
    },
    take: (): { readonly thoughtSignature?: string } => {
      const signature = held
      held = undefined
      open = false
      return signature !== undefined ? { thoughtSignature: signature } : {}
    },
    text: (parts: Array<G.Part>, text: string) => {
      if (text === "") return
      flush(parts)
      parts.push({ text, thought: true })
      open = true
    },
    signature: (parts: Array<G.Part>, signature: string) => {
      flush(parts)
      if (open) parts.push({ text: "", thought: true, thoughtSignature: signature })
      else held = signature
      open = false
    }
  }
}

/** Thinking of a delta: its `thinking_blocks` when they hold a known entry, else `reasoning_content`. */
const deltaThinking = (
  delta: OpenAi.ChatCompletionChunk["choices"][number]["delta"],
  parts: Array<G.Part>,
  thinking: ReturnType<typeof thoughtParts>
): void => {
  const known = (delta.thinking_blocks ?? []).filter((b) => isOpenAiThinkingText(b) || isOpenAiRedactedThinking(b))
  for (const entry of known) {
    if (!isOpenAiThinkingText(entry)) {
      // redacted thinking has no Gemini part: it only ends the thought before it
      thinking.flush(parts)
      continue
    }
    thinking.text(parts, entry.thinking)
    if (present(entry.signature) && entry.signature !== "") thinking.signature(parts, entry.signature)
  }
  if (known.length === 0 && present(delta.reasoning_content)) thinking.text(parts, delta.reasoning_content)
}

/** Adds a tool-call fragment to `calls`; the arguments are read whole at the end. */
const pushCallFragment = (calls: Map<number, PendingToolCall>, fragment: typeof OpenAi.ToolCallDelta.Type) =>
  pushToolCallFragment(calls, fragment, {
    start: (_key, call) => {
      call.started = true
    },
    append: (key, args) => {
      const call = calls.get(key)
      if (call !== undefined) call.pending += args
    }
  })

/** The assembled calls as `functionCall` parts, in `index` order (arguments that are not an object as `{}`). */
const callParts = (calls: ReadonlyMap<number, PendingToolCall>): ReadonlyArray<G.Part> =>
  [...calls.entries()].sort(([a], [b]) => a - b).map(([, call]): G.Part => {
    const input = parseArguments(call.pending)
    return { functionCall: { id: call.id ?? "", name: call.name ?? "", args: Predicate.isRecord(input) ? input : {} } }
  })
