/**
 * Streamed replies: the piece relay of a 2xx SSE answer, fed by the exchange's body callbacks —
 * each network chunk decoded, split into SSE events and read by the target's format in one step
 * (`openai_chat` chunks with `[DONE]` and in-band errors; Messages, Responses and Gemini events translated
 * into chat chunks and, on a native replay, kept as sent) — with one idle watchdog per stream.
 *
 * @internal
 */
import type { UpstreamFailure } from "@switchyard-ts/protocol/Errors"
import * as Nesting from "@switchyard-ts/protocol/Nesting"
import { ChatCompletionChunk, decodeOptions } from "@switchyard-ts/protocol/OpenAiChat"
import * as Plain from "@switchyard-ts/protocol/Plain"
import type * as Clock from "effect/Clock"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import type * as Relay from "../Relay.js"
import type { StreamPiece } from "../UpstreamClient.js"
import * as Anthropic from "./anthropic.js"
import type { CallContext } from "./call.js"
import * as Exchange from "./exchange.js"
import * as Failure from "./failure.js"
import * as Gemini from "./gemini.js"
import * as Responses from "./responses.js"
import * as Sse from "./sse.js"

/** An SSE item's `data` when it can be written back as one `data:` line (no line break in it). */
const oneLineData = (item: Sse.SseItem): string | undefined =>
  item._tag === "Data" && !item.data.includes("\n") && !item.data.includes("\r") ? item.data : undefined

const textField = (text: string | undefined): { readonly text?: string } => (text === undefined ? {} : { text })

const decodeChunkJson = Plain.decoder(ChatCompletionChunk, decodeOptions)

/** Decodes one SSE `data` payload: a chunk, an in-band error (→ 502), or an `InvalidResponse`. */
const decodeSseItem =
  (ctx: CallContext) => (item: Sse.SseItem): Either.Either<ChatCompletionChunk, UpstreamFailure> => {
    const target = ctx.target.id
    if (item._tag === "Overflow") {
      return Either.left(Failure.invalidResponse(target, `stream event larger than ${item.maxEventSize} characters`))
    }
    // plain branches, not `Option.match`/`Either.match`: this runs for every chunk of every stream
    const json = Failure.jsonOrInvalid(target, "stream chunk", item.data)
    if (Either.isLeft(json)) return Either.left(json.left)
    if (Option.isSome(Failure.errorBodyOf(json.right))) {
      return Either.left(
        Failure.upstreamStatus({
          target,
          status: 502,
          body: Option.some(item.data),
          retryAfterMs: Option.none(),
          secrets: ctx.secrets
        })
      )
    }
    const decoded = decodeChunkJson(json.right)
    return Either.isRight(decoded)
      ? Either.right(decoded.right)
      : Either.left(Failure.schemaMismatch(target, "stream chunk", decoded.left))
  }

const isDone = (item: Sse.SseItem): boolean => item._tag === "Data" && item.data.trim() === "[DONE]"
const isBlank = (item: Sse.SseItem): boolean => item._tag === "Data" && item.data.trim().length === 0

/** The per-stream translator of each format whose events are not chat chunks. */
const translators = {
  anthropic_messages: Anthropic.streamTranslator,
  openai_responses: Responses.streamTranslator,
  gemini_generate_content: Gemini.streamTranslator
} as const

/** What one SSE item does to a piece stream. */
type ItemStep =
  | { readonly _tag: "Piece"; readonly piece: StreamPiece; readonly last: boolean }
  | { readonly _tag: "Skip" }
  | { readonly _tag: "Done" }
  | { readonly _tag: "Fail"; readonly failure: UpstreamFailure }

const skip: ItemStep = { _tag: "Skip" }
const done: ItemStep = { _tag: "Done" }

const overflow = (target: string, item: { readonly maxEventSize: number }): ItemStep => ({
  _tag: "Fail",
  failure: Failure.invalidResponse(target, `stream event larger than ${item.maxEventSize} characters`)
})

/**
 * The per-item step of a format: `openai_chat` — `[DONE]` ends, each `data` is a chunk (or an
 * in-band error, or `InvalidResponse`); Messages, Responses and Gemini — each event translated into
 * chat chunks (`internal/anthropic.ts`, `internal/responses.ts`, `internal/gemini.ts`) and, on a
 * native replay, kept as it was sent; the stream ends after its last event (Gemini's with the
 * body); `end` closes what the translation had open.
 */
const itemSteps = (ctx: CallContext): {
  readonly step: (item: Sse.SseItem) => ItemStep
  readonly end: () => ReadonlyArray<ChatCompletionChunk>
} => {
  const target = ctx.target.id
  const format = ctx.target.client.format
  if (format === "openai_chat") {
    const decode = decodeSseItem(ctx)
    return {
      step: (item) => {
        if (isDone(item)) return done
        if (isBlank(item)) return skip
        const decoded = decode(item)
        if (Either.isLeft(decoded)) return { _tag: "Fail", failure: decoded.left }
        const sse = oneLineData(item)
        const chunks = [decoded.right]
        return {
          _tag: "Piece",
          piece: sse === undefined ? { chunks, native: Option.none() } : { chunks, native: Option.none(), sse },
          last: false
        }
      },
      end: () => []
    }
  }
  const translator = translators[format]({ target, secrets: ctx.secrets })
  return {
    step: (item) => {
      if (item._tag === "Overflow") return overflow(target, item)
      if (isBlank(item)) return skip
      const step = translator.push(item.data)
      if (step._tag === "Failed") return { _tag: "Fail", failure: step.failure }
      return {
        _tag: "Piece",
        piece: {
          chunks: step.chunks,
          native: ctx.nativeReplay && step.event !== undefined
            ? Option.some({
              format,
              event: step.event.type,
              data: step.event.data,
              ...textField(oneLineData(item))
            })
            : Option.none()
        },
        last: step.last
      }
    },
    end: translator.end
  }
}

/** The path of the first tool call of `chunks` whose arguments so far nest deeper than the bound. */
const deepestOf = (held: Nesting.ChunkArguments, chunks: ReadonlyArray<ChatCompletionChunk>): string | undefined => {
  for (const chunk of chunks) {
    const path = held.push(chunk)
    if (path !== undefined) return path
  }
  return undefined
}

/**
 * Opens the piece stream of a 2xx SSE answer at its headers: one push-fed source (no Stream stage
 * per concern); each network chunk is decoded, split into SSE events, parsed and translated in one
 * step. A gap longer than the client's `timeout_ms` while the consumer waits fails the stream with
 * `DeadlineExceeded` (one watchdog per stream). Ending at `[DONE]` or the last event lets the
 * exchange finish its body (its connection stays pooled; aborted if that takes longer than
 * `Exchange.endGraceMs`); failing, timing out and the consumer stopping early abort it. A stream
 * cut before its last event still closes what the translation had open.
 */
export const openPieces = (
  ctx: CallContext,
  clock: Clock.Clock
): Exchange.OpenStream<Relay.Relay<StreamPiece, UpstreamFailure>> =>
(control) => {
  const target = ctx.target.id
  const idleMs = ctx.target.client.timeoutMs
  const source = new Exchange.PushSource<StreamPiece, UpstreamFailure>(
    control,
    clock,
    idleMs,
    () => Failure.deadline(target, Option.getOrElse(idleMs, () => 0))
  )
  const steps = itemSteps(ctx)
  // an answer translated for its caller: its tool-call arguments are parsed there, so held to the bound here
  const held = ctx.translatedAnswer ? Nesting.chunkArguments() : undefined
  const decoder = new TextDecoder()
  let sse = Sse.initial
  let over = false
  const finish = () => {
    over = true
    const chunks = steps.end()
    if (chunks.length > 0) source.offer({ chunks, native: Option.none() })
    source.finish()
  }
  const sink: Exchange.BodySink = {
    onData: (bytes) => {
      if (over) return
      source.touch()
      const [next, items] = Sse.feed(sse, decoder.decode(bytes, { stream: true }))
      sse = next
      for (const item of items) {
        const step = steps.step(item)
        switch (step._tag) {
          case "Skip":
            continue
          case "Done":
            return finish()
          case "Fail":
            over = true
            return source.fail(step.failure)
          case "Piece": {
            const deep = held === undefined ? undefined : deepestOf(held, step.piece.chunks)
            if (deep !== undefined) {
              over = true
              return source.fail(Failure.deepArguments(target, `stream ${deep}`))
            }
            source.offer(step.piece)
            if (step.last) return finish()
          }
        }
      }
      source.flush()
    },
    onComplete: () => {
      source.exchangeDone()
      if (!over) finish()
    },
    onError: (reason) => {
      source.exchangeDone()
      if (over) return
      over = true
      source.fail(Failure.transport(target, reason))
    }
  }
  return { sink, stream: source }
}
