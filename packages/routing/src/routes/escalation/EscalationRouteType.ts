/**
 * The `llm_classifier` route type in `escalation` mode (see `EscalationRoute`).
 */
import * as Option from "effect/Option"
import * as JudgeChain from "../../judge/JudgeChain.js"
import * as JudgeKeys from "../../tables/JudgeKeys.js"
import * as RouteKeys from "../../tables/RouteKeys.js"
import type { RouteType } from "../RouteType.js"
import * as EscalationRoute from "./EscalationRoute.js"
import * as EscalationRouteTable from "./EscalationRouteTable.js"

/** The escalation route type: its strong target is its baseline; its weak turn may answer (beside its judge). */
export const routeType = {
  table: EscalationRouteTable.table,
  read: RouteKeys.reader(EscalationRouteTable.table),
  make: EscalationRoute.make,
  replayable: (spec) => Option.some(EscalationRoute.replayable(spec)),
  baseline: (spec) => Option.some(spec.strong),
  answerTargets: (spec) => [spec.weak, spec.strong],
  routingTargets: (spec) => JudgeChain.judgesOf(spec),
  judges: (spec) => [JudgeChain.useOf(spec)],
  routingAnswer: (spec) => Option.some({ response: spec.weak, dependency: spec.judge }),
  destinationModel: (spec) => (destination) =>
    destination === "weak" ? spec.weak.id : destination === "strong" ? spec.strong.id : undefined,
  warnings: (spec) => JudgeKeys.unboundedJudge(spec, spec),
  statsBlocks: []
} satisfies RouteType<
  typeof EscalationRouteTable.table.keys.Type,
  typeof EscalationRouteTable.table.keys.Encoded,
  EscalationRouteTable.Spec
>
