/**
 * The `stage_router` route type (see `StageRoute`), and what the `auto` route type shares of it.
 */
import type { Target } from "@switchyard-ts/client/Target"
import * as Option from "effect/Option"
import * as JudgeChain from "../../judge/JudgeChain.js"
import * as JudgeKeys from "../../tables/JudgeKeys.js"
import * as RouteKeys from "../../tables/RouteKeys.js"
import type { RouteType } from "../RouteType.js"
import * as SubagentsRoute from "../subagents/SubagentsRoute.js"
import * as StageRoute from "./StageRoute.js"
import * as StageRouteTable from "./StageRouteTable.js"

/** What a stage router (or `auto`) route's parts read of its spec. */
type Stage = Omit<StageRouteTable.Spec, "type">

/** A stage route's destinations: its two tiers. */
export const tierModel = (spec: Pick<Stage, "capable" | "efficient">) => (destination: string) =>
  destination === "capable" ? spec.capable.id : destination === "efficient" ? spec.efficient.id : undefined

/** The judge of a stage route's `[classifier]`, if it has one. */
const classifierJudge = (spec: Stage): ReadonlyArray<Target> =>
  Option.match(spec.classifier, { onNone: () => [], onSome: JudgeChain.judgesOf })

/** The parts a stage router and an `auto` route share (all but the table). */
export const stageParts = {
  make: (spec: Stage) => SubagentsRoute.make(spec, StageRoute.make(spec)),
  replayable: (spec: Stage) => Option.some(StageRoute.replayable(spec)),
  baseline: (spec: Stage) => Option.some(spec.capable),
  answerTargets: (spec: Stage) => [spec.capable, spec.efficient],
  routingTargets: (spec: Stage) => [...classifierJudge(spec), ...SubagentsRoute.targets(spec)],
  judges: (spec: Stage) => [
    ...Option.match(spec.classifier, { onNone: () => [], onSome: (classifier) => [JudgeChain.useOf(classifier)] }),
    ...SubagentsRoute.judges(spec)
  ],
  routingAnswer: () => Option.none(),
  destinationModel: tierModel,
  warnings: (spec: Stage) => [
    ...(spec.picker === "capable_first"
      ? [
        `route ${spec.name}: picker "capable_first" is experimental: the compatible system's published ` +
        "thresholds and results all come from \"efficient_first\", so no confidence_threshold is calibrated for it"
      ]
      : []),
    ...Option.match(spec.classifier, {
      onNone: () => [],
      onSome: (classifier) => JudgeKeys.unboundedJudge(spec, classifier)
    }),
    ...SubagentsRoute.warnings(spec)
  ],
  statsBlocks: ["stage_router"]
} as const

/** The stage router route type: its capable target is its baseline. */
export const routeType = {
  table: StageRouteTable.table,
  read: RouteKeys.reader(StageRouteTable.table),
  ...stageParts
} satisfies RouteType<
  typeof StageRouteTable.table.keys.Type,
  typeof StageRouteTable.table.keys.Encoded,
  StageRouteTable.Spec
>
