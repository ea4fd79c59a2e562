#!/usr/bin/env node
// `switchyard` with the demo's simulated upstreams: runs the compiled demo CLI (built by `npm run build`).
import { main } from "../dist/Cli.js"

main(process.argv.slice(2))
