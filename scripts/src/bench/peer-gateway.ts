// Starts the peer gateway of the side-by-side rows (bench/peer, installed with
// `npm ci --prefix bench/peer`) bound to 127.0.0.1 only. The gateway's own start script listens on
// every interface, so this launcher makes a `listen(port)` without a host listen on 127.0.0.1, then
// loads that script unchanged:
//
//   node scripts/dist/bench/peer-gateway.js <path of the gateway's build/start-server.js> <port>
import net from "node:net"
import { pathToFileURL } from "node:url"

const [entry, port] = process.argv.slice(2)
if (entry === undefined || port === undefined) {
  console.error("usage: peer-gateway.js <start-server.js> <port>")
  process.exit(2)
}

type Listen = (this: net.Server, ...args: Array<unknown>) => net.Server
const listen = net.Server.prototype.listen as unknown as Listen
const loopbackListen: Listen = function(this: net.Server, ...args: Array<unknown>) {
  if (typeof args[0] === "number") {
    if (args.length === 1 || typeof args[1] === "function") args.splice(1, 0, "127.0.0.1")
    else if (args[1] === undefined || args[1] === "0.0.0.0" || args[1] === "::") args[1] = "127.0.0.1"
  }
  return listen.apply(this, args)
}
net.Server.prototype.listen = loopbackListen as unknown as typeof net.Server.prototype.listen

// The start script reads `--port=N` and `--headless` from argv.
process.argv = [process.argv[0] ?? "node", entry, `--port=${port}`, "--headless"]
await import(pathToFileURL(entry).href)
