/**
 * The demo command (`npm start` without `--config`): the `switchyard` command line with the
 * demo's simulated upstream models launched beside the server.
 */
import * as ServerCli from "@switchyard-ts/server/Cli"
import * as Layer from "effect/Layer"
import * as Demo from "./Demo.js"

/**
 * Run the `switchyard` command with `argv`, plus the simulated upstreams of the deployment (a port
 * they cannot bind ends the command with the error printed, exit 1).
 */
export const main = (argv: ReadonlyArray<string>): void =>
  ServerCli.main(argv, { layer: (deployment, options) => Layer.orDie(Demo.layer(deployment, options)) })
