/**
 * The `passthrough` route type: one target, and its `subagents` table (see `Passthrough`).
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as RouteKeys from "../../tables/RouteKeys.js"
import type { RouteType } from "../RouteType.js"
import * as SubagentsRoute from "../subagents/SubagentsRoute.js"
import * as Passthrough from "./Passthrough.js"
import * as PassthroughRouteTable from "./PassthroughRouteTable.js"

/** The `passthrough` route type: its target is its baseline. */
export const routeType = {
  table: PassthroughRouteTable.table,
  read: RouteKeys.reader(PassthroughRouteTable.table),
  make: (spec) => SubagentsRoute.make(spec, Effect.succeed(Passthrough.make(spec))),
  replayable: () => Option.none(),
  baseline: (spec) => Option.some(spec.target),
  answerTargets: (spec) => [spec.target],
  routingTargets: SubagentsRoute.targets,
  judges: SubagentsRoute.judges,
  routingAnswer: () => Option.none(),
  destinationModel: () => () => undefined,
  warnings: SubagentsRoute.warnings,
  statsBlocks: []
} satisfies RouteType<
  typeof PassthroughRouteTable.table.keys.Type,
  typeof PassthroughRouteTable.table.keys.Encoded,
  PassthroughRouteTable.Spec
>
