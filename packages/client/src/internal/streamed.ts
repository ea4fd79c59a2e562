/**
 * Streamed replies: the piece relay of a 2xx SSE answer, fed by the exchange's body callbacks —
 * each network chunk decoded, split into SSE events and read by the target's format record in one
 * step (`UpstreamFormat.streamSteps`: chat chunks as they came, or a format's events translated
 * into chat chunks and, on a native replay, kept as sent) — with one idle watchdog per stream.
 *
 * @internal
 */
import type { UpstreamFailure } from "@switchyard-ts/protocol/Errors"
import * as Nesting from "@switchyard-ts/protocol/Nesting"
import type { ChatCompletionChunk } from "@switchyard-ts/protocol/OpenAiChat"
import type * as Clock from "effect/Clock"
import * as Option from "effect/Option"
import type * as Relay from "../Relay.js"
import type { StreamPiece } from "../UpstreamClient.js"
import type { CallContext } from "./call.js"
import * as Exchange from "./exchange.js"
import * as Failure from "./failure.js"
import * as Formats from "./formats.js"
import * as Sse from "./sse.js"

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
 * step (the steps of the target's format, made once per stream). A gap longer than the client's
 * `timeout_ms` while the consumer waits fails the stream with `DeadlineExceeded` (one watchdog per
 * stream). Ending at `[DONE]` or the last event lets the exchange finish its body (its connection
 * stays pooled; aborted if that takes longer than `Exchange.endGraceMs`); failing, timing out and
 * the consumer stopping early abort it. A stream cut before its last event still closes what the
 * translation had open.
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
  const steps = Formats.of(ctx.target.client.format).streamSteps(ctx)
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
