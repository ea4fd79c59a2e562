/**
 * Reloading the served deployment on `SIGHUP` (the CLI's `serve`): the deployment is read and
 * validated again; a bad one keeps the running deployment and logs why; a good one replaces it
 * through the `Reloader` (requests in flight finish on the routes they started with). With a pricing
 * file, it is read again too and the two are applied together or not at all: one reload, one
 * outcome. Counted in `switchyard_config_reloads_total{outcome}`.
 *
 * @internal
 */
import * as Deployment from "@switchyard-ts/config/Deployment"
import * as DeploymentToml from "@switchyard-ts/config/DeploymentToml"
import * as Pricing from "@switchyard-ts/routing/Pricing"
import * as Router from "@switchyard-ts/routing/Router"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as Runtime from "effect/Runtime"
import * as ServerMetrics from "../Metrics.js"
import * as Telemetry from "../Telemetry.js"

/** The tables a reload cannot apply to a running server: they take effect at the next start. */
const restartOnly = (running: Deployment.Deployment, next: Deployment.Deployment): ReadonlyArray<string> => [
  ...(Deployment.sameSpec(running.server, next.server) ? [] : ["[server]"]),
  ...(Deployment.sameSpec(running.sessions, next.sessions) ? [] : ["[sessions]"]),
  ...(Deployment.sameSpec(running.fallbackClient, next.fallbackClient) ? [] : ["fallback_client"])
]

const counted = (outcome: "success" | "error") =>
  Metric.update(ServerMetrics.configReloadsTotal.pipe(Metric.tagged("outcome", outcome)), 1)

/**
 * Read the deployment with `read` (and the pricing table with `readPrices`) and serve it: on
 * failure, an ERROR line with the reason (the file and key path, never a secret) per file that
 * failed, and the running deployment and prices stay; on success, an INFO line naming the routes
 * added, changed, removed and kept, a WARN line for `[server]` or `[sessions]` changes (applied at
 * the next start), the new routes' series seeded, and the new prices in the provided
 * `Pricing.Prices`.
 */
export const reload = <E extends { readonly message: string }, E2 extends { readonly message: string } = never>(
  read: Effect.Effect<Deployment.Deployment, E>,
  readPrices?: Effect.Effect<Pricing.Table, E2>
): Effect.Effect<void, never, Deployment.Reloader | Router.Router> =>
  Effect.gen(function*() {
    const reloader = yield* Deployment.Reloader
    const next = yield* Effect.either(read)
    const nextPrices = readPrices === undefined ? undefined : yield* Effect.either(readPrices)
    if (next._tag === "Left") {
      yield* Effect.logError("config reload failed; the running deployment is kept").pipe(
        Effect.annotateLogs("reason", next.left.message)
      )
    }
    if (nextPrices?._tag === "Left") {
      yield* Effect.logError("pricing reload failed; the running deployment and prices are kept").pipe(
        Effect.annotateLogs("reason", nextPrices.left.message)
      )
    }
    if (next._tag === "Left" || nextPrices?._tag === "Left") return yield* counted("error")
    const running = yield* reloader.current
    for (const warning of DeploymentToml.warnings(next.right)) yield* Effect.logWarning(warning)
    const pending = restartOnly(running, next.right)
    if (pending.length > 0) {
      yield* Effect.logWarning(`config reload: ${pending.join(" and ")} changes take effect at the next start`)
    }
    const summary = yield* reloader.reload(next.right)
    if (nextPrices !== undefined) {
      const prices = yield* Effect.serviceOption(Pricing.Prices)
      if (Option.isSome(prices)) yield* prices.value.replace(nextPrices.right)
    }
    // series at 0 for the models of new routes (those of kept routes exist and stay as they are)
    yield* Telemetry.seed((yield* Router.Router).routes)
    yield* Effect.logInfo("config reloaded").pipe(
      Effect.annotateLogs({
        added: summary.added.join(","),
        changed: summary.changed.join(","),
        removed: summary.removed.join(","),
        kept: summary.kept.length
      })
    )
    yield* counted("success")
  })

/**
 * {@link reload} on every `SIGHUP` while the layer lives (one at a time, in order). The listener
 * also keeps Node's default action (ending the process) from applying.
 */
export const onHangup = <E extends { readonly message: string }, E2 extends { readonly message: string } = never>(
  read: Effect.Effect<Deployment.Deployment, E>,
  readPrices?: Effect.Effect<Pricing.Table, E2>
): Layer.Layer<never, never, Deployment.Reloader | Router.Router> =>
  Layer.scopedDiscard(Effect.gen(function*() {
    const runFork = Runtime.runFork(yield* Effect.runtime<Deployment.Reloader | Router.Router>())
    const lock = yield* Effect.makeSemaphore(1)
    for (const outcome of ["success", "error"] as const) {
      yield* Metric.update(ServerMetrics.configReloadsTotal.pipe(Metric.tagged("outcome", outcome)), 0)
    }
    const onSignal = () => {
      runFork(lock.withPermits(1)(reload(read, readPrices)))
    }
    yield* Effect.acquireRelease(
      Effect.sync(() => process.on("SIGHUP", onSignal)),
      () => Effect.sync(() => process.off("SIGHUP", onSignal))
    )
  }))
