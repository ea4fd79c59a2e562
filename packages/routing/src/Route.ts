/**
 * The contract of a route algorithm, and the request it routes.
 */
import { credentialFamily, type NativeBody, type Target } from "@switchyard-ts/client/Target"
import {
  type AdvisorUnavailable,
  type ClientFailure,
  type CredentialFamily,
  ForwardAuthMismatch,
  type JudgeUnavailable
} from "@switchyard-ts/protocol/Errors"
import type { SessionId } from "@switchyard-ts/protocol/Ids"
import type { WireFormat } from "@switchyard-ts/protocol/Neutral"
import type { ChatCompletionRequest } from "@switchyard-ts/protocol/OpenAiChat"
import type * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { Algorithm, Decision } from "./Decision.js"
import type * as RoutingFacts from "./host/RoutingFacts.js"

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
  /**
   * The wire format of the endpoint the request came in on (`/v1/decision`: its `input_format`):
   * the `Router` refuses a route that forwards caller credentials of the other family
   * ({@link forwardAuthMismatch}). Absent (a library caller with no endpoint): not checked.
   */
  readonly inboundFormat?: WireFormat | undefined
  /**
   * The request continues a Responses answer this route recorded (`ResponseState`): the `Router`
   * sends it back to that answer's target without running the route (`Continuation.decide`).
   */
  readonly continuation?: ContinuationPin | undefined
}

/** The target (table name) a continued Responses answer came from. */
export interface ContinuationPin {
  readonly target: string
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
  /**
   * Advertised by `/v1/models`; `false` also refuses requests offering tools or carrying tool
   * history (`RouteFlags.refusal`).
   */
  readonly toolCalling: Option.Option<boolean>
  /**
   * `reasoning`: `false` refuses requests carrying reasoning controls (`RouteFlags.refusal`). None
   * (or absent): never restricts. Not advertised.
   */
  readonly reasoning?: Option.Option<boolean>
  /**
   * `vision`: advertised by `/v1/models` (`capabilities.vision`); `false` refuses requests with
   * images (`RouteFlags.refusal`). None (or absent): never restricts.
   */
  readonly vision?: Option.Option<boolean>
  /**
   * `request_timeout_ms`: the `Router` bounds each request of this route (routing, judge and
   * answer call, retries included; a stream until its headers) and fails it with
   * `RequestDeadlineExceeded` when it passes. None (or absent): no bound beyond the calls' own.
   */
  readonly requestTimeoutMs?: Option.Option<number>
  /**
   * The family of caller credential this route forwards: that of its callable targets' (answer
   * targets, judges, advisor, sub-agent targets) `forward_auth` clients, computed once when the
   * route is built (a valid deployment forwards one family at most). None (or absent): the route
   * forwards no caller credential and any endpoint may call it.
   */
  readonly forwardAuth?: Option.Option<CredentialFamily>
  /**
   * The target whose price the route's savings are measured against (`baseline_target`, else the
   * route type's default): each answered request is priced again at its model with the answer's
   * token counts. None (or absent): the answer is its own baseline (nothing saved but the routing).
   */
  readonly baseline?: Option.Option<Target>
  /**
   * Choose the target for one request (`Routed`), or produce its answer while routing (`Answered`),
   * telling the request's `RoutingFacts.Reporter` what the routing did.
   */
  readonly decide: (request: RoutedRequest) => Effect.Effect<Decision, RouteFailure, RoutingFacts.Reporter>
}

/** `targets` without repeats (by target name), in their order: a route's `targets` when two of its roles may name one target. */
export const distinctTargets = (targets: ReadonlyArray<Target>): ReadonlyArray<Target> =>
  targets.filter((target, i) => targets.findIndex((t) => t.name === target.name) === i)

/**
 * Why `route` refuses a request that came in on an endpoint of format `inbound` (anchor §2.1
 * step 7): a route that forwards Anthropic caller credentials is called on `/v1/messages`, one that
 * forwards OpenAI ones on `/v1/chat/completions` or `/v1/responses`; a Gemini caller's key is of
 * neither family, so every route that forwards a credential refuses it. None when the route
 * forwards no credential, when the families agree, or when `inbound` is unknown (no endpoint).
 * Field reads only: the route's family was computed when it was built.
 */
export const forwardAuthMismatch = (
  route: Route,
  inbound: WireFormat | undefined
): Option.Option<ForwardAuthMismatch> => {
  const family = route.forwardAuth
  if (family === undefined || Option.isNone(family) || inbound === undefined) return Option.none()
  return inbound !== "gemini_generate_content" && family.value === credentialFamily(inbound)
    ? Option.none()
    : Option.some(new ForwardAuthMismatch({ route: route.id, family: family.value }))
}
