/**
 * What a route type is, as one value: everything the rest of the system needs to know of a route
 * type, from the table that declares its keys to the labels it is counted under. Each route type's
 * folder (`routes/<type>/`) holds its table, its route (its program), and its `RouteType`; the
 * registry (`RouteTypes`) lists them. Nothing else looks at a route's `type`: the deployment loader,
 * the router's construction, policy replay, the system-prompt and forwarding rules, the startup
 * warnings, the stats and the demo all ask the registry, so a route type that lacks a part does not
 * compile.
 */
import type { Target } from "@switchyard-ts/client/Target"
import type * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import type * as ParseResult from "effect/ParseResult"
import type * as LiveHost from "../host/LiveHost.js"
import type * as ReplayHost from "../host/ReplayHost.js"
import type * as JudgeChain from "../judge/JudgeChain.js"
import type { Route } from "../Route.js"
import type * as RouteKeys from "../tables/RouteKeys.js"
import type * as Table from "../tables/Table.js"

/** The `/v1/stats` blocks of algorithm facts a route type contributes to (`Stats.layer`). */
export type StatsBlock = "advisor_gate" | "stage_router"

/**
 * A target whose routing-time call may become the request's answer (an escalation's weak target, an
 * advisor's executor) and the route's routing-only target it must not share a model id with (its
 * judge, its advisor): a `system_prompt` goes with a model.
 */
export interface RoutingAnswer {
  readonly response: Target
  readonly dependency: Target
}

/** One route type (see the module doc); `Spec` is its validated table. */
export interface RouteType<K extends { readonly id: string }, I, Spec extends RouteKeys.RouteCommon> {
  /** Its `[routes.<name>]` table: the keys it takes and their rules. */
  readonly table: Table.Table<K, I, Spec, RouteKeys.RouteContext>
  /** Its table as a deployment loader reads it (`RouteKeys.reader` of {@link table}). */
  readonly read: (input: unknown) => Effect.Effect<RouteKeys.Read<Spec>, ParseResult.ParseIssue>
  /** The live route of a spec (its `subagents` table included, when it has one). */
  readonly make: (spec: Spec) => Effect.Effect<Route, never, LiveHost.Services>
  /** Its replay from the routing log; none for a route type whose decisions need no judge. */
  readonly replayable: (spec: Spec) => Option.Option<ReplayHost.Replayable>
  /** The target its savings are measured against when `baseline_target` is unset; none: its answer is its own baseline. */
  readonly baseline: (spec: Spec) => Option.Option<Target>
  /** The targets its answers may go to (its own, not its `subagents` table's), in route order. */
  readonly answerTargets: (spec: Spec) => ReadonlyArray<Target>
  /** The targets its routing calls besides its answers: judges, an advisor, its `subagents` table's targets. */
  readonly routingTargets: (spec: Spec) => ReadonlyArray<Target>
  /**
   * The judge chains it consults (its classifier's, its `subagents` classifier's), each with its
   * posture: what an operator watches (`/v1/judges`).
   */
  readonly judges: (spec: Spec) => ReadonlyArray<JudgeChain.Use>
  /** Its target whose routing-time call may answer (see {@link RoutingAnswer}); none when it has none. */
  readonly routingAnswer: (spec: Spec) => Option.Option<RoutingAnswer>
  /** The model a destination of its replay answers with (none: unknown). */
  readonly destinationModel: (spec: Spec) => (destination: string) => string | undefined
  /** Non-fatal findings about a spec, one line each (`route <name>: ...`), for the startup log and `--dry-run`. */
  readonly warnings: (spec: Spec) => ReadonlyArray<string>
  /** The `/v1/stats` algorithm blocks it contributes to. */
  readonly statsBlocks: ReadonlyArray<StatsBlock>
}

/** What a route type of any keys is, for the registry. */
export type AnyRouteType<Spec extends RouteKeys.RouteCommon> = RouteType<{ readonly id: string }, unknown, Spec>

/** The validated table of a route type. */
export type SpecOf<T> = T extends RouteType<infer _K, infer _I, infer Spec> ? Spec : never
