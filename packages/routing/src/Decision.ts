/**
 * A routing decision: the selected target, the ordered fallbacks, the evidence, and — for routes
 * that produce the answer while routing (noop, the advisor gate) — the answer itself.
 */
import type * as Option from "effect/Option"
import type { Target } from "@switchyard-ts/client/Target"
import type { ChatCompletion } from "@switchyard-ts/protocol/OpenAiChat"
import type { Evidence } from "./Evidence.js"

/** Metric/span label of a route algorithm (the anchor's names). */
export type Algorithm = "noop" | "passthrough" | "random" | "llm_task_classifier" | "advisor_gate"

/** Which route decided. */
export interface RouteInfo {
  /** Route id (the public model name). */
  readonly id: string
  /** The `[routes.<name>]` table name. */
  readonly name: string
  readonly algorithm: Algorithm
}

/** The outcome of routing one request. */
export interface Decision {
  readonly route: RouteInfo
  /**
   * The target the answer call goes to first — or, when the route produced the answer itself, the
   * target that served it (the advisor gate's executor); none when no target served (noop).
   */
  readonly selected: Option.Option<Target>
  /** Every other target of the route, in route order; tried only for fallback-worthy failures. */
  readonly fallbacks: ReadonlyArray<Target>
  readonly evidence: Evidence
  /**
   * The answer, when the route produced it while routing (noop's `OK`, a turn released by the
   * advisor gate): the `Router` makes no answer call, replays it to streaming callers, and
   * `/v1/decision` returns it as `response`. None (or absent): the answer call makes the answer.
   */
  readonly answer?: Option.Option<ChatCompletion>
}
