/**
 * The `advisor` route type (see `AdvisorRoute`).
 */
import * as Option from "effect/Option"
import * as RouteKeys from "../../tables/RouteKeys.js"
import type { RouteType } from "../RouteType.js"
import * as AdvisorRoute from "./AdvisorRoute.js"
import * as AdvisorRouteTable from "./AdvisorRouteTable.js"

/** The advisor route type: its advisor is its baseline; its executor's turn may answer (beside its advisor). */
export const routeType = {
  table: AdvisorRouteTable.table,
  read: RouteKeys.reader(AdvisorRouteTable.table),
  make: AdvisorRoute.make,
  replayable: (spec) => Option.some(AdvisorRoute.replayable(spec)),
  baseline: (spec) => Option.some(spec.advisor),
  answerTargets: (spec) => [spec.executor],
  routingTargets: (spec) => [spec.advisor],
  judges: () => [],
  routingAnswer: (spec) => Option.some({ response: spec.executor, dependency: spec.advisor }),
  destinationModel: (spec) => () => spec.executor.id,
  warnings: (spec) =>
    Option.isNone(spec.advisor.client.timeoutMs) && Option.isNone(spec.requestTimeoutMs)
      ? [
        `route ${spec.name}: advisor client ${spec.advisor.client.name} has no timeout_ms; ` +
        "a stalled advisor holds requests until the peer closes the connection"
      ]
      : [],
  statsBlocks: ["advisor_gate"]
} satisfies RouteType<
  typeof AdvisorRouteTable.table.keys.Type,
  typeof AdvisorRouteTable.table.keys.Encoded,
  AdvisorRouteTable.Spec
>
