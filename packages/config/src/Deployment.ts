/**
 * A validated deployment as Layers: the route algorithms of its route specs (each handed to its
 * route's `make` as it is) and the `Router` over them (its data types are in `DeploymentSpec`,
 * re-exported here).
 */
import type * as HttpClient from "@effect/platform/HttpClient"
import type { Target } from "@switchyard-ts/client/Target"
import * as UpstreamClient from "@switchyard-ts/client/UpstreamClient"
import * as Judge from "@switchyard-ts/routing/Judge"
import type * as LiveHost from "@switchyard-ts/routing/LiveHost"
import type { Route } from "@switchyard-ts/routing/Route"
import * as Router from "@switchyard-ts/routing/Router"
import * as RouteTypes from "@switchyard-ts/routing/RouteTypes"
import * as SessionStore from "@switchyard-ts/routing/SessionStore"
import * as Stats from "@switchyard-ts/routing/Stats"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as ExecutionStrategy from "effect/ExecutionStrategy"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Scope from "effect/Scope"
import type { Deployment, RouteSpec } from "./DeploymentSpec.js"
import * as DeploymentToml from "./DeploymentToml.js"
import { type InvalidConfig } from "./InvalidConfig.js"

export type * from "./DeploymentSpec.js"
export { InvalidConfig } from "./InvalidConfig.js"

/**
 * The target a route's savings are measured against: its `baseline_target` when set, else the route
 * type's default (`RouteType.baseline`: the strong target of a capability or escalation classifier,
 * the capable target of a stage router, `auto` or composite route, the advisor of an advisor route,
 * the `default_target` of a custom classifier, the first of a random route's `targets`, a passthrough
 * route's own target; none for noop: its answer is its own baseline).
 */
export const baselineTarget = (spec: RouteSpec): Option.Option<Target> =>
  spec.baselineTarget !== undefined ? Option.some(spec.baselineTarget) : RouteTypes.of(spec).baseline

/** What a route of a deployment is built with. */
type RouteServices = LiveHost.Services

/**
 * The route algorithm of one route spec, with its `request_timeout_ms` and the caller credential
 * family it forwards (`DeploymentToml.forwardAuthFamily`, computed here once: the `Router` refuses a
 * request from an endpoint of the other family). Late judge calls of a classifier route with
 * `late_verdict_ms` run in `Scope`: closing it interrupts them.
 */
export const route = (spec: RouteSpec): Effect.Effect<Route, never, RouteServices> => {
  const forwardAuth = DeploymentToml.forwardAuthFamily(spec)
  /**
   * The route with the spec's `request_timeout_ms`, the caller credential family it forwards and
   * its `reasoning` / `vision` flags.
   */
  const bounded = (route: Route): Route => ({
    ...route,
    requestTimeoutMs: spec.requestTimeoutMs,
    forwardAuth,
    reasoning: spec.reasoning ?? Option.none(),
    vision: spec.vision ?? Option.none(),
    baseline: baselineTarget(spec)
  })
  return Effect.map(RouteTypes.of(spec).make, bounded)
}

/** The route algorithms of a deployment, in route-id order (each as {@link route} builds it). */
export const routes = (deployment: Deployment): Effect.Effect<ReadonlyArray<Route>, never, RouteServices> =>
  Effect.forEach(deployment.routes, route)

/** What a reload changed, by route id (each list in route-id order). */
export interface ReloadSummary {
  /** Routes new in the reloaded deployment. */
  readonly added: ReadonlyArray<string>
  /** Routes whose table changed (rebuilt; their type may have changed too). */
  readonly changed: ReadonlyArray<string>
  /** Routes the reloaded deployment no longer has. */
  readonly removed: ReadonlyArray<string>
  /** Routes whose table is unchanged: the running route goes on serving, its state and all. */
  readonly kept: ReadonlyArray<string>
}

/**
 * Replaces the deployment a `Router` built by {@link layerWith} serves, while it serves (the
 * server's `SIGHUP`). A request runs to its end on the routes it started with; the next one uses
 * the reloaded ones.
 */
export class Reloader extends Context.Tag("@switchyard-ts/config/Reloader")<Reloader, {
  /** The deployment being served. */
  readonly current: Effect.Effect<Deployment>
  /**
   * Serve `next` (validated, e.g. by `DeploymentToml.parse`) from now on: its clients are
   * registered (a client whose `breaker` settings changed gets a new, closed breaker; the others
   * keep theirs and its state), a route whose table is unchanged is kept as it runs, the others
   * are built anew, and the removed or replaced ones are let go: their background judge calls
   * (`late_verdict_ms`) may still land for as long as their `judge_timeout_ms + late_verdict_ms`
   * allows and are then interrupted. Sessions live in the `SessionStore`, keyed by route id, so a
   * route rebuilt under the same id keeps them. Reloads run one at a time.
   */
  readonly reload: (next: Deployment) => Effect.Effect<ReloadSummary>
}>() {}

/** One built route: its spec, the route, and the scope its background work runs in. */
interface Built {
  readonly spec: RouteSpec
  readonly route: Route
  readonly scope: Scope.CloseableScope
}

const isPlain = (value: unknown): value is Readonly<Record<string, unknown>> =>
  typeof value === "object" && value !== null && Object.getPrototypeOf(value) === Object.prototype

/**
 * Whether two validated specs say the same: plain data compared member by member, `Option`s by
 * content, redacted secrets by their value (a rotated key is a change). Anything else (a function)
 * is the same only if it is the same object.
 */
export const sameSpec = (a: unknown, b: unknown): boolean => {
  if (Object.is(a, b)) return true
  if (Redacted.isRedacted(a) || Redacted.isRedacted(b)) {
    return Redacted.isRedacted(a) && Redacted.isRedacted(b) && sameSpec(Redacted.value(a), Redacted.value(b))
  }
  if (Option.isOption(a) || Option.isOption(b)) {
    return Option.isOption(a) && Option.isOption(b) &&
      (Option.isNone(a) ? Option.isNone(b) : Option.isSome(b) && sameSpec(a.value, b.value))
  }
  if (Array.isArray(a) || Array.isArray(b)) {
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((x, i) => sameSpec(x, b[i]))
  }
  if (!isPlain(a) || !isPlain(b)) return false
  const keys = Object.keys(a)
  return keys.length === Object.keys(b).length && keys.every((key) => key in b && sameSpec(a[key], b[key]))
}

const someNumber = (value: unknown): number | undefined =>
  Option.isOption(value) && Option.isSome(value) && typeof value.value === "number" ? value.value : undefined

/**
 * How long a let-go route's background judge calls may still run: the longest
 * `judge_timeout_ms + late_verdict_ms` anywhere in its table (its classifier's, its sub-agents'),
 * 0 without late verdicts.
 */
export const lateWindowMs = (spec: unknown): number => {
  if (Array.isArray(spec)) return spec.reduce((max: number, x: unknown) => Math.max(max, lateWindowMs(x)), 0)
  if (Option.isOption(spec)) return Option.isSome(spec) ? lateWindowMs(spec.value) : 0
  if (!isPlain(spec)) return 0
  const late = someNumber(spec["lateVerdictMs"])
  const own = late === undefined ? 0 : late + (someNumber(spec["judgeTimeoutMs"]) ?? 0)
  return Object.values(spec).reduce((max: number, x) => Math.max(max, lateWindowMs(x)), own)
}

/** Which routes a reload added, changed, removed and kept. */
const summarize = (before: ReadonlyMap<string, Built>, after: ReadonlyMap<string, Built>): ReloadSummary => {
  const ids = [...new Set([...before.keys(), ...after.keys()])].sort()
  const having = (test: (was: Built | undefined, now: Built | undefined) => boolean) =>
    ids.filter((id) => test(before.get(id), after.get(id)))
  return {
    added: having((was, now) => was === undefined && now !== undefined),
    changed: having((was, now) => was !== undefined && now !== undefined && was !== now),
    removed: having((was, now) => was !== undefined && now === undefined),
    kept: having((was, now) => was !== undefined && was === now)
  }
}

/**
 * The `Router` of a validated deployment over the caller's `Judge`, `SessionStore`, `UpstreamClient`
 * and `Stats` recorder (replace any of them, e.g. a scripted judge in tests, a shared session store,
 * `Stats.layer` for `/v1/stats`), and the {@link Reloader} that replaces its deployment.
 * Building it registers the circuit breaker of every client with a `breaker` table on the
 * `UpstreamClient`, so breaker states are visible before the first call. The layer owns the
 * routes' background judge calls (`late_verdict_ms`): releasing it interrupts them.
 */
export const layerWith = (
  deployment: Deployment
): Layer.Layer<
  Router.Router | Reloader,
  never,
  UpstreamClient.UpstreamClient | Judge.Judge | SessionStore.SessionStore | Stats.Stats
> =>
  Layer.scopedContext(Effect.gen(function*() {
    const upstream = yield* UpstreamClient.UpstreamClient
    const layerScope = yield* Effect.scope
    const services = yield* Effect.context<
      UpstreamClient.UpstreamClient | Judge.Judge | SessionStore.SessionStore | Stats.Stats
    >()
    const build = (spec: RouteSpec) =>
      Effect.flatMap(Scope.fork(layerScope, ExecutionStrategy.sequential), (scope) =>
        Effect.map(Scope.extend(route(spec), scope), (built): Built => ({ spec, route: built, scope })))
    const serve = (next: Deployment, running: ReadonlyMap<string, Built>) =>
      Effect.gen(function*() {
        yield* Effect.forEach(next.clients, upstream.register, { discard: true })
        const built = new Map<string, Built>()
        for (const spec of next.routes) {
          const before = running.get(spec.id)
          built.set(spec.id, before !== undefined && sameSpec(before.spec, spec) ? before : yield* build(spec))
        }
        const router = yield* Router.make([...built.values()].map((b) =>
          b.route
        ))
        return { deployment: next, built, router }
      })
    let current = yield* serve(deployment, new Map())
    const lock = yield* Effect.makeSemaphore(1)
    const reload = (next: Deployment) =>
      lock.withPermits(1)(
        Effect.gen(function*() {
          const before = current
          current = yield* serve(next, before.built)
          for (const [id, was] of before.built) {
            if (current.built.get(id) === was) continue
            yield* Effect.forkIn(
              Effect.zipRight(Effect.sleep(lateWindowMs(was.spec)), Scope.close(was.scope, Exit.void)),
              layerScope
            )
          }
          return summarize(before.built, current.built)
        }).pipe(Effect.provide(services))
      )
    // Every call reads the deployment being served when it starts and runs to its end on it.
    const router = Router.Router.of({
      get routes() {
        return current.router.routes
      },
      decide: (request, observer) => Effect.suspend(() => current.router.decide(request, observer)),
      complete: (request, observer) => Effect.suspend(() => current.router.complete(request, observer)),
      stream: (request, observer) => Effect.suspend(() => current.router.stream(request, observer))
    })
    return Context.make(Router.Router, router).pipe(
      Context.add(Reloader, { current: Effect.sync(() => current.deployment), reload })
    )
  }))

/**
 * The `Router` of a validated deployment with the default judge (over the upstream client), an
 * in-memory session store bounded by the deployment's `[sessions]` table and no stats
 * (`Stats.layerDisabled`). It ignores
 * `store = "redis"` (this package stays runtime-neutral): use `layerWith` and a Redis-backed
 * `SessionStore`, as the server does.
 */
export const layer = (
  deployment: Deployment
): Layer.Layer<Router.Router | Reloader, never, UpstreamClient.UpstreamClient> =>
  layerWith(deployment).pipe(
    Layer.provide(Layer.mergeAll(Judge.layer, SessionStore.layerMemory(deployment.sessions), Stats.layerDisabled))
  )

/**
 * The `Router` of a deployment TOML text, with the `UpstreamClient` built on the caller's
 * `HttpClient` (e.g. `NodeHttpClient.layerUndici` or `FetchHttpClient.layer`). API keys named by
 * `api_key_env` are read through `Config` when the layer is built.
 */
export const layerFromToml = (
  text: string
): Layer.Layer<Router.Router | Reloader, InvalidConfig, HttpClient.HttpClient> =>
  Layer.unwrapEffect(Effect.map(DeploymentToml.parse(text), layer)).pipe(
    Layer.provide(UpstreamClient.layer)
  )
