/**
 * The `noop` route type: it answers `OK` itself, calling no model (see `Noop`).
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as RouteKeys from "../../tables/RouteKeys.js"
import type { RouteType } from "../RouteType.js"
import * as Noop from "./Noop.js"
import * as NoopRouteTable from "./NoopRouteTable.js"

/** The `noop` route type: no target, no judge, its answer its own baseline. */
export const routeType = {
  table: NoopRouteTable.table,
  read: RouteKeys.reader(NoopRouteTable.table),
  make: (spec) => Effect.succeed(Noop.make(spec)),
  replayable: () => Option.none(),
  baseline: () => Option.none(),
  answerTargets: () => [],
  routingTargets: () => [],
  judges: () => [],
  routingAnswer: () => Option.none(),
  destinationModel: () => () => undefined,
  warnings: () => [],
  statsBlocks: []
} satisfies RouteType<
  typeof NoopRouteTable.table.keys.Type,
  typeof NoopRouteTable.table.keys.Encoded,
  NoopRouteTable.Spec
>
