/**
 * A routing decision: the selected target, the ordered fallbacks, and the evidence.
 */
import type * as Option from "effect/Option"
import type { Target } from "@switchyard-ts/client/Target"
import type { Evidence } from "./Evidence.js"

/** Metric/span label of a route algorithm (the anchor's names). */
export type Algorithm = "noop" | "passthrough" | "random" | "llm_task_classifier"

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
  /** The target the answer call goes to first; none when the route answers by itself (noop). */
  readonly selected: Option.Option<Target>
  /** Every other target of the route, in route order; tried only for fallback-worthy failures. */
  readonly fallbacks: ReadonlyArray<Target>
  readonly evidence: Evidence
}
