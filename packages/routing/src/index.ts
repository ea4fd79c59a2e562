/**
 * @switchyard-ts/routing — route algorithms, decisions, evidence and the Router.
 */
export * as Decision from "./Decision.js"
export * as Evidence from "./Evidence.js"
export * as Metrics from "./Metrics.js"
export * as Noop from "./Noop.js"
export * as Passthrough from "./Passthrough.js"
export * as RandomRoute from "./RandomRoute.js"
export * as Route from "./Route.js"
export * as Router from "./Router.js"
