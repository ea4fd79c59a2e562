/**
 * @switchyard-ts/demo — the demo deployment's simulated upstreams (`npm start`) and the judge drill
 * (`npm run demo`). Private: the published server never depends on the testkit.
 */
export * as Cli from "./Cli.js"
export * as Demo from "./Demo.js"
export * as Drill from "./Drill.js"
