// `npm start`: serve the demo deployment with simulated upstreams (the demo command), or
// `npm start -- --config FILE` to serve a real deployment (the same compiled CLI as `npx switchyard`).
const args = process.argv.slice(2)
if (args.includes("--config")) {
  const { main } = await import("../packages/server/dist/Cli.js")
  main(args)
} else {
  const { main } = await import("../packages/demo/dist/Cli.js")
  main(["--config", "examples/demo.toml", ...args])
}
