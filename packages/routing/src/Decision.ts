/**
 * A routing decision, one of two shapes: `Routed` — the target the answer call goes to first and
 * its ordered fallbacks — or `Answered` — the route produced the answer itself while routing
 * (noop's `OK`, a turn released by the advisor gate). Both carry the route and the evidence. A
 * decision that selected nothing and produced nothing cannot be written.
 */
import type { Target } from "@switchyard-ts/client/Target"
import type { ChatCompletion, ChatCompletionRequest } from "@switchyard-ts/protocol/OpenAiChat"
import * as Option from "effect/Option"
import type { Evidence } from "./Evidence.js"

/** Metric/span label of a route algorithm (the anchor's names). */
export type Algorithm =
  | "noop"
  | "passthrough"
  | "random"
  | "llm_task_classifier"
  | "stage_router"
  | "composite"
  | "advisor_gate"

/** Which route decided. */
export interface RouteInfo {
  /** Route id (the public model name). */
  readonly id: string
  /** The `[routes.<name>]` table name. */
  readonly name: string
  readonly algorithm: Algorithm
}

/** The answer call goes to `selected`, then to `fallbacks` on fallback-worthy failures. */
export interface Routed {
  readonly _tag: "Routed"
  readonly route: RouteInfo
  readonly selected: Target
  /** Every other target of the route, in route order; tried only for fallback-worthy failures. */
  readonly fallbacks: ReadonlyArray<Target>
  readonly evidence: Evidence
  /**
   * The request as the route amended it for its answer call (a stage router's per-tier system
   * prompt or handoff note); absent when the caller's request goes out as it came. An amended
   * request is never replayed in the caller's native wire format (the native body lacks the
   * amendment): it is translated from this chat request.
   */
  readonly body?: ChatCompletionRequest
}

/**
 * The route produced the answer while routing: the `Router` makes no answer call, replays it to
 * streaming callers, and `/v1/decision` returns it as `response`.
 */
export interface Answered {
  readonly _tag: "Answered"
  readonly route: RouteInfo
  readonly answer: ChatCompletion
  /** The target that produced it (the advisor gate's executor); none for noop. */
  readonly servedBy: Option.Option<Target>
  readonly evidence: Evidence
}

/** The outcome of routing one request. */
export type Decision = Routed | Answered

/** A decision whose answer call goes to `selected` first. */
export const routed = (fields: Omit<Routed, "_tag">): Routed => ({ _tag: "Routed", ...fields })

/** A decision that carries the route's own answer. */
export const answered = (fields: Omit<Answered, "_tag">): Answered => ({ _tag: "Answered", ...fields })

/** The target a decision names: the one the answer call goes to first, or the one that answered. */
export const selected = (decision: Decision): Option.Option<Target> =>
  decision._tag === "Routed" ? Option.some(decision.selected) : decision.servedBy

/** The fallbacks of a decision (none when the route answered). */
export const fallbacks = (decision: Decision): ReadonlyArray<Target> =>
  decision._tag === "Routed" ? decision.fallbacks : []

/** The route's own answer, when it produced one while routing. */
export const answerOf = (decision: Decision): Option.Option<ChatCompletion> =>
  decision._tag === "Answered" ? Option.some(decision.answer) : Option.none()
