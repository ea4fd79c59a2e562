/**
 * The `composite` route type (see `CompositeRoute`).
 */
import * as Option from "effect/Option"
import * as JudgeChain from "../../judge/JudgeChain.js"
import * as JudgeKeys from "../../tables/JudgeKeys.js"
import * as RouteKeys from "../../tables/RouteKeys.js"
import type { RouteType } from "../RouteType.js"
import * as StageRouteType from "../stage/StageRouteType.js"
import * as SubagentsRoute from "../subagents/SubagentsRoute.js"
import * as CompositeRoute from "./CompositeRoute.js"
import * as CompositeRouteTable from "./CompositeRouteTable.js"

/** The composite route type: its capable target is its baseline; its replay destinations are tiers. */
export const routeType = {
  table: CompositeRouteTable.table,
  read: RouteKeys.reader(CompositeRouteTable.table),
  make: (spec) => SubagentsRoute.make(spec, CompositeRoute.make(spec)),
  replayable: (spec) => Option.some(CompositeRoute.replayable(spec)),
  baseline: (spec) => Option.some(spec.capable),
  answerTargets: (spec) => [spec.capable, spec.efficient],
  routingTargets: (spec) => [...JudgeChain.judgesOf(spec.classifier), ...SubagentsRoute.targets(spec)],
  judges: (spec) => [JudgeChain.useOf(spec.classifier), ...SubagentsRoute.judges(spec)],
  routingAnswer: () => Option.none(),
  destinationModel: StageRouteType.tierModel,
  warnings: (spec) => [...JudgeKeys.unboundedJudge(spec, spec.classifier), ...SubagentsRoute.warnings(spec)],
  statsBlocks: ["stage_router"]
} satisfies RouteType<
  typeof CompositeRouteTable.table.keys.Type,
  typeof CompositeRouteTable.table.keys.Encoded,
  CompositeRouteTable.Spec
>
