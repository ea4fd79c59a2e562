/**
 * Demo mode (`npm start`): simulated upstream models, served in the same process by the testkit's
 * fake upstream on every loopback port the deployment's clients point at, so the demo deployment
 * needs no API key and no network. Production deployments never use this.
 */
import type { Deployment } from "@switchyard-ts/config/Deployment"
import * as RouteTypes from "@switchyard-ts/routing/RouteTypes"
import * as FakeUpstream from "@switchyard-ts/testkit/FakeUpstream"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"

/** Loopback ports of the deployment's clients, each with the model ids served there. */
export const simulatedPorts = (deployment: Deployment): ReadonlyMap<number, ReadonlyArray<string>> => {
  const ports = new Map<number, Array<string>>()
  for (const target of deployment.targets) {
    const url = new URL(target.client.baseUrl)
    if (url.hostname !== "127.0.0.1" && url.hostname !== "localhost") continue
    const port = Number(url.port === "" ? (url.protocol === "https:" ? 443 : 80) : url.port)
    ports.set(port, [...(ports.get(port) ?? []), target.id])
  }
  return ports
}

/** What a simulated judge answers: a supported task the weak model can probably solve. */
const simulatedVerdict = FakeUpstream.ok(
  JSON.stringify({
    crux: "a routine change with tests to check it",
    primary_rule: "SUP-2",
    capability_boundary: "supported",
    p_solve: 0.8
  })
)

/** Start the simulated upstreams and print a `curl` line to try against the server. */
export const layer = (deployment: Deployment, server: { readonly host: string; readonly port: number }) =>
  Layer.scopedDiscard(Effect.gen(function*() {
    const judges = new Set(
      deployment.routes.flatMap((route) => RouteTypes.of(route).judges.map((judge) => judge.id))
    )
    for (const [port, models] of simulatedPorts(deployment)) {
      const behaviours = Object.fromEntries(
        models.map((
          model
        ) => [model, judges.has(model) ? simulatedVerdict : FakeUpstream.ok(`Hello from ${model}, a simulated model.`)])
      )
      yield* FakeUpstream.make({ port, models: behaviours })
      yield* Console.log(`simulated upstream models on http://127.0.0.1:${port}/v1: ${models.join(", ")}`)
    }
    const route = deployment.routes[0]?.id ?? "MODEL"
    const base = `http://${server.host}:${server.port}`
    yield* Console.log(
      `try: curl -s ${base}/v1/chat/completions -H 'content-type: application/json' ` +
        `-d '{"model":"${route}","messages":[{"role":"user","content":"hello"}]}'`
    )
  }))
