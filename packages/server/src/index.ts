/**
 * @switchyard-ts/server — HTTP endpoints, telemetry and the `switchyard` CLI.
 */
export * as Api from "./Api.js"
export * as Cli from "./Cli.js"
export * as Metrics from "./Metrics.js"
export * as PolicyReplay from "./PolicyReplay.js"
export * as RoutingLog from "./RoutingLog.js"
export * as Server from "./Server.js"
export * as SessionTotals from "./SessionTotals.js"
export * as Telemetry from "./Telemetry.js"
