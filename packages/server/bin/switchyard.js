#!/usr/bin/env node
// The switchyard command: runs the compiled CLI (built by `npm run build`, which `npm ci` runs).
import { main } from "../dist/Cli.js"

main(process.argv.slice(2))
