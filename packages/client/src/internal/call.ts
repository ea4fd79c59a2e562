/**
 * The logical call: HTTP attempts over the `UpstreamTransport` (one `Effect.async` exchange each,
 * `exchange.ts`) with retries, under one deadline, inside the `libsy.client_call` span. What a 2xx
 * reply becomes is the caller's (`buffered.ts`, `streamed.ts`).
 *
 * @internal
 */
import type { UpstreamFailure } from "@switchyard-ts/protocol/Errors"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as Random from "effect/Random"
import * as Metrics from "../Metrics.js"
import * as Spans from "../Spans.js"
import type { Target } from "../Target.js"
import type { CallOptions } from "../UpstreamClient.js"
import type * as UpstreamTransport from "../UpstreamTransport.js"
import * as Exchange from "./exchange.js"
import * as Failure from "./failure.js"
import * as Formats from "./formats.js"
import * as Headers from "./headers.js"
import * as Prepare from "./prepare.js"
import * as Wire from "./wire.js"

/** Facts about one logical call that its attempts share. */
export interface CallContext {
  readonly target: Target
  /** Values redacted from any upstream text kept on an error (the API key). */
  readonly secrets: ReadonlyArray<string>
  /** The caller's own body was sent to a target of its format: keep the target's own answer. */
  readonly nativeReplay: boolean
  /**
   * The caller reads the answer in another format than chat (it sent its own body of that format,
   * not replayed here): the answer is translated for it, which parses tool-call arguments, so they
   * are held to `Nesting.maxDepth` here (a deeper one is an `InvalidResponse`).
   */
  readonly translatedAnswer: boolean
}

/** What a 2xx reply becomes (a decoded answer, an opened stream). */
export type OnOk<A, S> = (reply: Exchange.Reply<S>, ctx: CallContext) => Effect.Effect<A, UpstreamFailure>

/** How a call opens the stream of a 2xx SSE answer (`None`: a buffered call opens none). */
export type Opener<S> = (ctx: CallContext, clock: Clock.Clock) => Option.Option<Exchange.OpenStream<S>>

/** A buffered call opens no stream. */
export const noStream = (): Option.Option<Exchange.OpenStream<never>> => Option.none()

type Request = Option.Option<Omit<UpstreamTransport.TransportRequest, "fiberRefs">>

const isSuccess = (status: number): boolean => status >= 200 && status <= 299

/**
 * One HTTP attempt (`Exchange.exchange`: one `Effect.async` with the deadline's timer), then
 * either the 2xx reply to `onOk` or the non-2xx answer mapped to `UpstreamStatus` (its body read
 * for `error.message`, up to 64 KiB, with the error vocabulary of the target's format).
 */
const attempt = <A, S>(
  transport: UpstreamTransport.UpstreamTransport["Type"],
  request: Request,
  ctx: CallContext,
  deadline: Option.Option<Exchange.Deadline>,
  open: Option.Option<Exchange.OpenStream<S>>,
  onOk: OnOk<A, S>
): Effect.Effect<A, UpstreamFailure> =>
  Option.match(request, {
    onNone: () =>
      Effect.zipRight(
        Metrics.recordAttempt(Option.none()),
        Effect.fail(Failure.transport(ctx.target.id, "invalid upstream URL"))
      ),
    onSome: (req) =>
      Effect.flatMap(
        Exchange.exchange(transport, req, { target: ctx.target.id, deadline, open }),
        (reply): Effect.Effect<A, UpstreamFailure> =>
          reply._tag === "Stream" || isSuccess(reply.status)
            ? onOk(reply, ctx)
            : Effect.flatMap(Clock.currentTimeMillis, (now) =>
              Effect.fail(Failure.upstreamStatus({
                target: ctx.target.id,
                status: reply.status,
                body: Option.some(reply.body),
                retryAfterMs: Failure.parseRetryAfter(reply.headers["retry-after"], now),
                secrets: ctx.secrets,
                errors: Formats.of(ctx.target.client.format).errors
              })))
      )
  })

/** The delay before retry `retry` (0-based): `Retry-After` when the failure had one, else jittered backoff. */
const retryDelay = (retry: number, failure: UpstreamFailure): Effect.Effect<number> =>
  failure._tag === "UpstreamStatus" && failure.retryAfterMs !== undefined
    ? Effect.succeed(failure.retryAfterMs)
    : Effect.map(Random.next, (r) => Math.round(Failure.backoffBaseMs(retry) * Failure.jitterFactor(r)))

/**
 * What failed attempt `retry` of a call leads to: its failure, or after the retry's delay `next`
 * (the next attempt). One generator for every call, not one made per failure.
 */
const afterFailure = Effect.fnUntraced(function*<A>(
  failure: UpstreamFailure,
  retry: number,
  target: Target,
  deadline: Option.Option<Exchange.Deadline>,
  next: Effect.Effect<A, UpstreamFailure>
) {
  if (retry >= target.client.maxRetries || !Failure.isRetryable(failure)) return yield* Effect.fail(failure)
  const delayMs = yield* retryDelay(retry, failure)
  const now = yield* Clock.currentTimeMillis
  const annotations = {
    target: target.id,
    retry: retry + 1,
    delay_ms: delayMs,
    error: Failure.errorType(failure)
  }
  if (Option.isSome(deadline) && now + delayMs >= deadline.value.at) {
    yield* Effect.logDebug("upstream retry would cross the deadline; giving up").pipe(
      Effect.annotateLogs(annotations)
    )
    return yield* Effect.fail(failure)
  }
  yield* Effect.logDebug("retrying upstream call").pipe(Effect.annotateLogs(annotations))
  yield* Effect.sleep(Duration.millis(delayMs))
  return yield* next
})

/**
 * `once` (one attempt) until it succeeds, with up to `maxRetries` retries of a retryable failure,
 * never sleeping into `deadline`: a retry whose delay would reach it is not attempted, and the
 * call fails at once with the last attempt's error.
 */
const retrying = <A>(
  once: Effect.Effect<A, UpstreamFailure>,
  target: Target,
  deadline: Option.Option<Exchange.Deadline>
): Effect.Effect<A, UpstreamFailure> => {
  const loop = (retry: number): Effect.Effect<A, UpstreamFailure> =>
    once.pipe(
      Effect.tap(() => (retry > 0 ? Metric.increment(Metrics.retryRecovered) : Effect.void)),
      Effect.catchAll((failure) =>
        afterFailure(failure, retry, target, deadline, Effect.suspend(() => loop(retry + 1)))
      )
    )
  return loop(0)
}

/** The tighter of the client's `timeout_ms` and this call's own deadline. */
const callTimeoutMs = (options: CallOptions): Option.Option<number> =>
  Option.match(options.timeoutMs ?? Option.none(), {
    onNone: () => options.target.client.timeoutMs,
    onSome: (ms) =>
      Option.some(
        Option.match(options.target.client.timeoutMs, { onNone: () => ms, onSome: (own) => Math.min(own, ms) })
      )
  })

/**
 * The logical call: attempts with retries under one deadline, inside the `libsy.client_call` span
 * (its `outcome` and `error.type` annotated). `open` opens the stream of a 2xx SSE answer; `onOk`
 * makes the call's result of a 2xx reply.
 */
export const logicalCall = <A, S>(
  transport: UpstreamTransport.UpstreamTransport["Type"],
  options: CallOptions,
  wire: Wire.Wire,
  streaming: boolean,
  open: Opener<S>,
  onOk: OnOk<A, S>
): Effect.Effect<A, UpstreamFailure> => {
  const { target } = options
  const client = target.client
  const ctx: CallContext = {
    target,
    secrets: Headers.secretsOf(client, options.headers),
    nativeReplay: wire.nativeReplay,
    translatedAnswer: options.native !== undefined && !wire.nativeReplay
  }
  const timeoutMs = callTimeoutMs(options)
  const run = Effect.clockWith((clock) =>
    Effect.withFiberRuntime<A, UpstreamFailure>((fiber) => {
      const headers = Headers.requestHeaders(client, options.headers, wire, streaming, fiber)
      const request: Request = Option.map(Prepare.originAndPath(wire.url), ({ origin, path }) => ({
        origin,
        path,
        method: "POST",
        headers,
        // Bodies come from decoded JSON: a body that JSON cannot encode is a programmer error.
        body: Wire.encodedBody(wire)
      }))
      const deadline = Option.map(timeoutMs, (ms): Exchange.Deadline => ({
        at: clock.unsafeCurrentTimeMillis() + ms,
        afterMs: ms
      }))
      return retrying(attempt(transport, request, ctx, deadline, open(ctx, clock), onOk), target, deadline)
    })
  )
  return run.pipe(
    Spans.annotateOutcome(
      () => ({ outcome: "ok" }),
      (failure) => ({ outcome: "error", "error.type": Failure.errorType(failure) })
    ),
    Spans.withSpan("libsy.client_call", () => ({
      captureStackTrace: false,
      kind: "client",
      attributes: {
        "gen_ai.operation.name": wire.operation,
        "gen_ai.request.model": target.id,
        "gen_ai.request.stream": streaming,
        ...Wire.requestAttributes(wire.body),
        ...Option.match(Prepare.serverOf(wire.url), {
          onNone: () => ({}),
          onSome: (s) => ({ "server.address": s.address, "server.port": s.port })
        })
      }
    }))
  )
}
