/**
 * The `llm_classifier` route type in `capability` mode (see `CapabilityRoute`).
 */
import * as Option from "effect/Option"
import * as JudgeChain from "../../judge/JudgeChain.js"
import * as JudgeKeys from "../../tables/JudgeKeys.js"
import * as RouteKeys from "../../tables/RouteKeys.js"
import type { RouteType } from "../RouteType.js"
import * as CapabilityRoute from "./CapabilityRoute.js"
import * as CapabilityRouteTable from "./CapabilityRouteTable.js"

/** The capability route type: its strong target is its baseline; its replay destinations are tiers. */
export const routeType = {
  table: CapabilityRouteTable.table,
  read: RouteKeys.reader(CapabilityRouteTable.table),
  make: CapabilityRoute.make,
  replayable: (spec) => Option.some(CapabilityRoute.replayable(spec)),
  baseline: (spec) => Option.some(spec.strong),
  answerTargets: (spec) => [spec.weak, spec.strong],
  routingTargets: (spec) => JudgeChain.judgesOf(spec),
  judges: (spec) => [JudgeChain.useOf(spec)],
  routingAnswer: () => Option.none(),
  destinationModel: (spec) => (destination) =>
    destination === "weak" ? spec.weak.id : destination === "strong" ? spec.strong.id : undefined,
  warnings: (spec) => JudgeKeys.unboundedJudge(spec, spec),
  statsBlocks: []
} satisfies RouteType<
  typeof CapabilityRouteTable.table.keys.Type,
  typeof CapabilityRouteTable.table.keys.Encoded,
  CapabilityRouteTable.Spec
>
