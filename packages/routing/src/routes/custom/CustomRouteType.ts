/**
 * The `llm_classifier` route type in `custom` mode (see `CustomRoute`).
 */
import * as Option from "effect/Option"
import * as JudgeChain from "../../judge/JudgeChain.js"
import * as JudgeKeys from "../../tables/JudgeKeys.js"
import * as RouteKeys from "../../tables/RouteKeys.js"
import type { RouteType } from "../RouteType.js"
import * as CustomRoute from "./CustomRoute.js"
import * as CustomRouteTable from "./CustomRouteTable.js"

/** The custom route type: its `default_target` is its baseline; its replay destinations are model ids. */
export const routeType = {
  table: CustomRouteTable.table,
  read: RouteKeys.reader(CustomRouteTable.table),
  make: CustomRoute.make,
  replayable: (spec) => Option.some(CustomRoute.replayable(spec)),
  baseline: (spec) => Option.some(spec.defaultTarget),
  answerTargets: (spec) => [...spec.targets, spec.defaultTarget],
  routingTargets: (spec) => JudgeChain.judgesOf(spec),
  judges: (spec) => [JudgeChain.useOf(spec)],
  routingAnswer: () => Option.none(),
  destinationModel: () => (destination) => destination,
  warnings: (spec) => JudgeKeys.unboundedJudge(spec, spec),
  statsBlocks: []
} satisfies RouteType<
  typeof CustomRouteTable.table.keys.Type,
  typeof CustomRouteTable.table.keys.Encoded,
  CustomRouteTable.Spec
>
