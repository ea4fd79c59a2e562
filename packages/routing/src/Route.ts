/**
 * The contract of a route algorithm, and the request it routes.
 */
import type { NativeBody, Target } from "@switchyard-ts/client/Target"
import type { AdvisorUnavailable, ClientFailure, JudgeUnavailable } from "@switchyard-ts/protocol/Errors"
import type { SessionId } from "@switchyard-ts/protocol/Ids"
import type { ChatCompletionRequest } from "@switchyard-ts/protocol/OpenAiChat"
import type * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import type { Algorithm, Decision } from "./Decision.js"

/** A request as a route sees it. */
export interface RoutedRequest {
  /** The decoded chat request (unknown fields preserved). */
  readonly body: ChatCompletionRequest
  /** The caller's headers, lower-case names. */
  readonly headers: Readonly<Record<string, string>>
  /** The session identity, when the request carries one. */
  readonly sessionId: Option.Option<SessionId>
  /**
   * The caller's body in its own wire format when it was not a chat request (e.g. an Anthropic
   * Messages request, translated into `body`): the answer call sends it untranslated to a target
   * of that format. Routing itself reads `body` only.
   */
  readonly native?: NativeBody | undefined
}

/**
 * Why routing itself failed: a judge under the `error` posture, an advisor under
 * `fail_open = false`, or — for a route that produces the answer while routing (the advisor gate)
 * — the failure of its own executor call (`ClientFailure`).
 */
export type RouteFailure = JudgeUnavailable | AdvisorUnavailable | ClientFailure

/** One configured route. */
export interface Route {
  readonly id: string
  readonly name: string
  readonly algorithm: Algorithm
  /** The targets answers may go to, in route order. */
  readonly targets: ReadonlyArray<Target>
  /** Advertised by `/v1/models`. */
  readonly contextWindow: Option.Option<number>
  /** Advertised by `/v1/models`. */
  readonly toolCalling: Option.Option<boolean>
  /**
   * `request_timeout_ms`: the `Router` bounds each request of this route (routing, judge and
   * answer call, retries included; a stream until its headers) and fails it with
   * `RequestDeadlineExceeded` when it passes. None (or absent): no bound beyond the calls' own.
   */
  readonly requestTimeoutMs?: Option.Option<number>
  /** Choose the target for one request (`Routed`), or produce its answer while routing (`Answered`). */
  readonly decide: (request: RoutedRequest) => Effect.Effect<Decision, RouteFailure>
}

/** `targets` without repeats (by target name), in their order: a route's `targets` when two of its roles may name one target. */
export const distinctTargets = (targets: ReadonlyArray<Target>): ReadonlyArray<Target> =>
  targets.filter((target, i) => targets.findIndex((t) => t.name === target.name) === i)
