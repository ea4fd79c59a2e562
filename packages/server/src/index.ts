/**
 * @switchyard-ts/server — HTTP endpoints, telemetry and the `switchyard` CLI.
 */
export * as Api from "./Api.js"
export * as Cli from "./Cli.js"
export * as Demo from "./Demo.js"
export * as Drill from "./Drill.js"
export * as Metrics from "./Metrics.js"
export * as Server from "./Server.js"
export * as Telemetry from "./Telemetry.js"
