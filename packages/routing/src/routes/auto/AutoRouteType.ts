/**
 * The `auto` route type: a stage router with the compatible system's preset (see `AutoRouteTable`).
 */
import * as RouteKeys from "../../tables/RouteKeys.js"
import type { RouteType } from "../RouteType.js"
import * as StageRouteType from "../stage/StageRouteType.js"
import * as AutoRouteTable from "./AutoRouteTable.js"

/** The `auto` route type: a stage router's parts over its preset table. */
export const routeType = {
  table: AutoRouteTable.table,
  read: RouteKeys.reader(AutoRouteTable.table),
  ...StageRouteType.stageParts
} satisfies RouteType<
  typeof AutoRouteTable.table.keys.Type,
  typeof AutoRouteTable.table.keys.Encoded,
  AutoRouteTable.Spec
>
