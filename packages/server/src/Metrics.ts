/**
 * Server-level metrics: the final status of chat requests, inbound auth checks and the build info.
 */
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import * as Schema from "effect/Schema"
import { readFileSync } from "node:fs"

/** Final responses of the chat endpoint, labelled `outcome` (`success` / `retryable_error` / `other_error`). */
export const clientResponsesTotal = Metric.counter("switchyard_client_responses_total", {
  incremental: true,
  description: "Final responses of the LLM endpoints by outcome"
})

/**
 * Inbound auth checks (`[server] api_keys_env`), labelled `outcome`: `ok`, `missing` (no key in
 * `Authorization: Bearer` nor `x-api-key`), `invalid` (a key that is not one of the server's).
 * Present only when inbound auth is on.
 */
export const authRequestsTotal = Metric.counter("switchyard_auth_requests_total", {
  incremental: true,
  description: "Inbound auth checks by outcome"
})

/**
 * Reloads of the deployment (`SIGHUP`), labelled `outcome`: `success` (the reloaded deployment is
 * served) or `error` (it did not load; the running one is kept).
 */
export const configReloadsTotal = Metric.counter("switchyard_config_reloads_total", {
  incremental: true,
  description: "Reloads of the deployment file by outcome"
})

/** Constant 1, labelled `version`. */
export const buildInfo = Metric.gauge("switchyard_build_info", { description: "Build information" })

const PackageJson = Schema.Struct({ version: Schema.String })

/** The server package's version (from its package.json). */
export const version: string = (() => {
  try {
    return Schema.decodeUnknownSync(Schema.parseJson(PackageJson))(
      readFileSync(new URL("../package.json", import.meta.url), "utf8")
    ).version
  } catch {
    return "unknown"
  }
})()

/** Create the server series at start-up: build info 1, client responses at 0 for every outcome. */
export const seed: Effect.Effect<void> = Effect.zipRight(
  Metric.set(buildInfo.pipe(Metric.tagged("version", version)), 1),
  Effect.forEach(
    ["success", "retryable_error", "other_error"],
    (outcome) => Metric.update(clientResponsesTotal.pipe(Metric.tagged("outcome", outcome)), 0),
    { discard: true }
  )
)
