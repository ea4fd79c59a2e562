/**
 * The `UpstreamClient` service: one logical call to one target — request preparation (model
 * rewrite, `extra_body`, auth, header forwarding), retries, the `timeout_ms` deadline over the
 * whole call, and typed failures.
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type * as Stream from "effect/Stream"
import type { UpstreamFailure } from "@switchyard-ts/protocol/Errors"
import type { ChatCompletion, ChatCompletionChunk } from "@switchyard-ts/protocol/OpenAiChat"
import type { Target } from "./Target.js"

/** What to send to one target. */
export interface CallOptions {
  readonly target: Target
  /**
   * The caller's request body (a decoded chat request with its unknown fields preserved). The
   * client rewrites `model` to the target's id and merges the target's `extra_body`; it never
   * mutates this object.
   */
  readonly body: Readonly<Record<string, unknown>>
  /** The caller's headers (lower-case names); hop-by-hop and credential headers are dropped. */
  readonly headers: Readonly<Record<string, string>>
}

/**
 * One logical upstream call. Both methods fail with exactly the `UpstreamFailure` family:
 * `TransportError`, `DeadlineExceeded` (the client's `timeout_ms` passed, retries included),
 * `UpstreamStatus` (non-2xx after retries) and `InvalidResponse` (undecodable 2xx body).
 */
export class UpstreamClient extends Context.Tag("@switchyard-ts/client/UpstreamClient")<UpstreamClient, {
  /** A buffered call; the deadline covers every attempt until the whole body is read. */
  readonly complete: (options: CallOptions) => Effect.Effect<ChatCompletion, UpstreamFailure>
  /**
   * A streamed call (`stream: true` is set on the body). Succeeds once response headers arrive
   * (retries and the deadline apply until then); afterwards a gap between chunks longer than
   * `timeout_ms` fails the stream with `DeadlineExceeded`. Interrupting the consumer aborts the
   * upstream socket.
   */
  readonly stream: (options: CallOptions) => Effect.Effect<Stream.Stream<ChatCompletionChunk, UpstreamFailure>, UpstreamFailure>
}>() {}
