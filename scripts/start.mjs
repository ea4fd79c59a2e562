// `npm start`: serve the demo deployment with simulated upstreams, or `npm start -- --config FILE`
// to serve a real deployment. Runs the same compiled CLI as `npx switchyard`.
import { main } from "../packages/server/dist/Cli.js"

const args = process.argv.slice(2)
main(args.includes("--config") ? args : ["--config", "examples/demo.toml", "--demo", ...args])
