/**
 * Answer-call candidate fallback (docs/operations.md): the selected target first, then the
 * decision's fallbacks, advancing only on failures that say "this target cannot serve now". Each
 * candidate runs its own retries and deadline inside `UpstreamClient`; a deadline is terminal. A
 * candidate whose LLM client's circuit breaker is open (`CircuitOpen`, no HTTP request made) is
 * skipped to the next one. Routing-time (judge) calls never use this module.
 */
import type { ClientFailure, UpstreamFailure } from "@switchyard-ts/protocol/Errors"
import type { ChatCompletion } from "@switchyard-ts/protocol/OpenAiChat"
import type * as Array from "effect/Array"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as Stream from "effect/Stream"
import * as Spans from "./Spans.js"
import type { NativeBody, Target } from "./Target.js"
import { type StreamPiece, UpstreamClient } from "./UpstreamClient.js"

/** Why a candidate was left (the `reason` of the "trying next candidate" log). */
export type FallbackReason = "context_window" | "unavailable" | "circuit_open"

/**
 * The reason to try the next candidate after `failure`, or `None` when the failure is final:
 * `TransportError` and `UpstreamStatus` 403, 408, 429 or 5xx → `unavailable`; `UpstreamStatus`
 * 400 with `contextWindowExceeded` → `context_window`; `CircuitOpen` → `circuit_open`.
 * `DeadlineExceeded` is terminal and every other failure stops the answer call.
 */
export const fallbackReason = (failure: ClientFailure): Option.Option<FallbackReason> => {
  switch (failure._tag) {
    case "CircuitOpen":
      return Option.some("circuit_open")
    case "TransportError":
      return Option.some("unavailable")
    case "UpstreamStatus": {
      const s = failure.status
      if (s === 400 && failure.contextWindowExceeded === true) return Option.some("context_window")
      return s === 403 || s === 408 || s === 429 || (s >= 500 && s <= 599) ? Option.some("unavailable") : Option.none()
    }
    case "DeadlineExceeded":
    case "InvalidResponse":
    case "TranslationError":
      return Option.none()
  }
}

/** Whether a failure moves an answer call to the next candidate (see {@link fallbackReason}). */
export const isFallbackWorthy = (failure: ClientFailure): boolean => Option.isSome(fallbackReason(failure))

/** A buffered answer and who served it. */
export interface Completed {
  /** The target that answered. */
  readonly target: Target
  /** Its 1-based position among the candidates. */
  readonly candidate: number
  readonly completion: ChatCompletion
  /** The target's own answer body, when the caller's native body was replayed to it. */
  readonly native: Option.Option<NativeBody>
}

/** A streamed answer (headers received) and who serves it. */
export interface Streamed {
  /** The target whose stream this is. */
  readonly target: Target
  /** Its 1-based position among the candidates. */
  readonly candidate: number
  /**
   * The pieces (chat chunks, and the upstream's own events on a native replay), as the client's
   * `answerStream` gave them: run once; never retried nor failed over.
   */
  readonly stream: Stream.Stream<StreamPiece, UpstreamFailure>
}

/**
 * Told about each candidate call that reached its upstream once it ends: the target, whether it
 * succeeded (for a stream: its headers arrived) and how long it took in milliseconds. Not told
 * about a candidate its open breaker refused (no request made) nor about an interrupted call.
 * Called synchronously; it must not throw.
 */
export type CandidateObserver = (target: Target, ok: boolean, durationMs: number) => void

/** `call` timed for `observe` (see {@link CandidateObserver}). */
const observed = <A>(
  call: Effect.Effect<A, ClientFailure>,
  target: Target,
  observe: CandidateObserver
): Effect.Effect<A, ClientFailure> =>
  Effect.clockWith((clock) => {
    const start = clock.unsafeCurrentTimeNanos()
    const elapsedMs = () => Number(clock.unsafeCurrentTimeNanos() - start) / 1e6
    // a defect or an interruption is not the candidate's answer: not observed
    return Spans.tapOutcome<A, ClientFailure>(() => observe(target, true, elapsedMs()), (_, failure) => {
      if (failure._tag !== "CircuitOpen") observe(target, false, elapsedMs())
    })(call)
  })

const runCandidates = <A>(
  candidates: Array.NonEmptyReadonlyArray<Target>,
  call: (target: Target) => Effect.Effect<A, ClientFailure>,
  observe: CandidateObserver | undefined
): Effect.Effect<{ readonly target: Target; readonly candidate: number; readonly value: A }, ClientFailure> => {
  const count = candidates.length
  const from = (
    index: number,
    target: Target
  ): Effect.Effect<{ readonly target: Target; readonly candidate: number; readonly value: A }, ClientFailure> =>
    (observe === undefined ? call(target) : observed(call(target), target, observe)).pipe(
      Effect.map((value) => ({ target, candidate: index + 1, value })),
      Spans.annotateSpans({ "switchyard.candidate": index + 1, "switchyard.candidate_count": count }),
      Effect.catchAll((failure) => {
        const next = candidates[index + 1]
        const reason = fallbackReason(failure)
        if (next === undefined || Option.isNone(reason)) return Effect.fail(failure)
        return Effect.logInfo("trying next candidate").pipe(
          Effect.annotateLogs({
            from: target.name,
            from_model: target.id,
            to: next.name,
            to_model: next.id,
            reason: reason.value,
            error: failure._tag === "UpstreamStatus" ? String(failure.status) : failure._tag
          }),
          Effect.zipRight(from(index + 1, next))
        )
      })
    )
  return from(0, candidates[0])
}

/**
 * A buffered answer call over `candidates` (`[selected, ...fallbacks]`) by `client`. Succeeds with
 * the first candidate that answers; moves on only when {@link isFallbackWorthy}; fails at once on
 * `DeadlineExceeded` or any other final failure; when every candidate failed, fails with the last
 * candidate's error (`CircuitOpen` when the last candidate's breaker is open). `observe` is told
 * about every candidate call (see {@link CandidateObserver}).
 */
export const completeWith = (
  client: UpstreamClient["Type"],
  candidates: Array.NonEmptyReadonlyArray<Target>,
  body: Readonly<Record<string, unknown>>,
  headers: Readonly<Record<string, string>>,
  native?: NativeBody,
  observe?: CandidateObserver
): Effect.Effect<Completed, ClientFailure> =>
  Effect.map(
    runCandidates(candidates, (target) => client.answer({ target, body, headers, native, completion: true }), observe),
    ({ candidate, target, value }): Completed => ({
      target,
      candidate,
      completion: value.completion,
      native: value.native
    })
  )

/** {@link completeWith} by the `UpstreamClient` of the context. */
export const complete = (
  candidates: Array.NonEmptyReadonlyArray<Target>,
  body: Readonly<Record<string, unknown>>,
  headers: Readonly<Record<string, string>>,
  native?: NativeBody,
  observe?: CandidateObserver
): Effect.Effect<Completed, ClientFailure, UpstreamClient> =>
  Effect.flatMap(UpstreamClient, (client) => completeWith(client, candidates, body, headers, native, observe))

/**
 * A streamed answer call over `candidates` by `client`, with the rules of {@link completeWith}
 * applied until a candidate's response headers arrive; from then on candidate selection is over
 * and the returned stream's failures are the caller's to handle. `observe` is told about every
 * candidate call, a stream's once its headers arrived.
 */
export const streamWith = (
  client: UpstreamClient["Type"],
  candidates: Array.NonEmptyReadonlyArray<Target>,
  body: Readonly<Record<string, unknown>>,
  headers: Readonly<Record<string, string>>,
  native?: NativeBody,
  observe?: CandidateObserver
): Effect.Effect<Streamed, ClientFailure> =>
  Effect.map(
    runCandidates(candidates, (target) =>
      client.answerStream({ target, body, headers, native, completion: true }), observe),
    ({ candidate, target, value }): Streamed => ({ target, candidate, stream: value })
  )

/** {@link streamWith} by the `UpstreamClient` of the context. */
export const stream = (
  candidates: Array.NonEmptyReadonlyArray<Target>,
  body: Readonly<Record<string, unknown>>,
  headers: Readonly<Record<string, string>>,
  native?: NativeBody,
  observe?: CandidateObserver
): Effect.Effect<Streamed, ClientFailure, UpstreamClient> =>
  Effect.flatMap(UpstreamClient, (client) => streamWith(client, candidates, body, headers, native, observe))
