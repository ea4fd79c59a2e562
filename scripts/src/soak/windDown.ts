// After the traffic: the judge is up again, the server must answer /health and stop cleanly on
// SIGTERM; the final /metrics and the upstreams' counters are taken for the report.
import * as Option from "effect/Option"
import type { Client, Reply } from "./client.js"
import { scrape, type Series } from "./metrics.js"
import { type SoakServer, type Stopped, stopSoakServer } from "./server.js"
import type { Upstreams, UpstreamStats } from "./upstreams.js"
import { decodeHealth } from "./validate.js"

export interface WindDown {
  readonly health: Reply
  readonly healthOk: boolean
  /** /metrics after the traffic. */
  readonly final: ReadonlyArray<Series>
  readonly stopped: Stopped
  readonly mockStats: UpstreamStats
}

export const windDown = async (
  { client, server, upstreams }: { readonly server: SoakServer; readonly client: Client; readonly upstreams: Upstreams }
): Promise<WindDown> => {
  await upstreams.setJudgeMode("up")
  const health = await client.send("GET", "/health")
  const healthOk = health.ok && health.status === 200 && Option.isSome(decodeHealth(health.text))
  const final = await scrape(client)
  const stopped = await stopSoakServer(server)
  const mockStats = await upstreams.stats()
  await upstreams.close()
  client.close()
  return { health, healthOk, final, stopped, mockStats }
}
