/**
 * The `random` route type: a weighted draw over its targets (see `RandomRoute`).
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as RouteKeys from "../../tables/RouteKeys.js"
import type { RouteType } from "../RouteType.js"
import * as RandomRoute from "./RandomRoute.js"
import * as RandomRouteTable from "./RandomRouteTable.js"

/** The `random` route type: the first of its `targets` is its baseline. */
export const routeType = {
  table: RandomRouteTable.table,
  read: RouteKeys.reader(RandomRouteTable.table),
  make: (spec) => Effect.succeed(RandomRoute.make(spec)),
  replayable: () => Option.none(),
  baseline: (spec) => Option.some(spec.targets[0]),
  answerTargets: (spec) => spec.targets,
  routingTargets: () => [],
  judges: () => [],
  routingAnswer: () => Option.none(),
  destinationModel: () => () => undefined,
  warnings: () => [],
  statsBlocks: []
} satisfies RouteType<
  typeof RandomRouteTable.table.keys.Type,
  typeof RandomRouteTable.table.keys.Encoded,
  RandomRouteTable.Spec
>
