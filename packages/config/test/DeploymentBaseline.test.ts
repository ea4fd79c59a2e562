/**
 * `baseline_target`, the key every route table has: a target of the deployment (a load error at
 * its key path otherwise), the default of each route type when unset (`Deployment.baselineTarget`),
 * carried onto the built route (`Route.baseline`) and replaced with it by a reload.
 */
import * as HttpClient from "@effect/platform/HttpClient"
import { assert, describe, it } from "@effect/vitest"
import * as UpstreamClient from "@switchyard-ts/client/UpstreamClient"
import * as Deployment from "@switchyard-ts/config/Deployment"
import * as Router from "@switchyard-ts/routing/Router"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Rejections from "./rejections.js"
import { doc, fixture as fixtureText, load, route, target } from "./support.js"

/** An HTTP client no test here calls. */
const noHttp = Layer.succeed(HttpClient.HttpClient, HttpClient.make(() => Effect.die("no upstream call expected")))

/** A fixture of the compatible system's deployments, loaded with the keys it names set. */
const fixture = (name: string) =>
  load(fixtureText(name), ["API_KEY", "NVIDIA_API_KEY", "OPENROUTER_API_KEY"].map((key) => [key, "k"] as const))

/** The table name of the baseline target of every route of `deployment`, by route id ("" when none). */
const baselines = (deployment: Deployment.Deployment) =>
  Object.fromEntries(deployment.routes.map((spec) => [
    spec.id,
    Option.match(Deployment.baselineTarget(spec), { onNone: () => "", onSome: (target) => target.name })
  ]))

const withStrong = doc({
  more: target("strong", "big-coder", "hosted") +
    route("p", "passthrough", "target = \"weak\"", "baseline_target = \"strong\"")
})

describe("baseline_target", () => {
  it.effect("defaults: strong, capable, advisor, default_target, first random target, a passthrough's own, none for noop", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(baselines(yield* fixture("dev-server-config.toml")), {
        "switchyard/advisor": "capable",
        "switchyard/classifier": "capable",
        "switchyard/noop": "",
        "switchyard/passthrough": "efficient",
        "switchyard/random": "capable",
        "switchyard/stage": "capable"
      })
      assert.deepStrictEqual(baselines(yield* fixture("server-readme-routes.toml")), {
        "switchyard/general": "model_a",
        "switchyard/classified": "model_a",
        "switchyard/passthrough": "model_a",
        "switchyard/stage": "model_a"
      })
      const one = (name: string) => Effect.map(fixture(name), (d) => Object.values(baselines(d)))
      assert.deepStrictEqual(yield* one("auto-minimal.toml"), ["strong"])
      assert.deepStrictEqual(yield* one("stage-router-routing-example.toml"), ["strong"])
      assert.deepStrictEqual(yield* one("composite-routing-doc.toml"), ["strong"])
      assert.deepStrictEqual(yield* one("escalation-router-routing-example.toml"), ["strong"])
      assert.deepStrictEqual(yield* one("llm-classifier-custom-groups.toml"), ["premium"])
    }))

  it.effect("a target of the deployment replaces the default, on any route type (noop too)", () =>
    Effect.gen(function*() {
      const deployment = yield* load(
        withStrong.replace("type = \"noop\"", "type = \"noop\"\nbaseline_target = \"weak\"")
      )
      assert.deepStrictEqual(baselines(deployment), { p: "strong", r: "weak" })
      const p = deployment.routes.find((spec) => spec.id === "p")
      assert.strictEqual(p?.baselineTarget?.id, "big-coder")
    }))

  it.effect("unset: absent from the spec", () =>
    Effect.gen(function*() {
      const deployment = yield* load(doc())
      assert.isFalse(deployment.routes.some((spec) => "baselineTarget" in spec))
    }))

  Rejections.lines("routes.r", (line) => doc({ route: line }))([
    ["baseline_target = \"nowhere\"", "references unknown target \"nowhere\""],
    ["baseline_target = 3", ""]
  ])

  it.scoped("the built route carries it, and a reload replaces it with the route", () =>
    Effect.gen(function*() {
      const first = yield* load(withStrong)
      const next = yield* load(withStrong.replace("baseline_target = \"strong\"", "baseline_target = \"weak\""))
      const baselineOf = (router: Router.Router["Type"], id: string) =>
        Option.getOrUndefined(
          Option.map(
            router.routes.find((route) => route.id === id)?.baseline ?? Option.none(),
            (target) => target.id
          )
        )
      yield* Effect.gen(function*() {
        const router = yield* Router.Router
        assert.strictEqual(baselineOf(router, "p"), "big-coder")
        assert.strictEqual(baselineOf(router, "r"), undefined)
        const summary = yield* (yield* Deployment.Reloader).reload(next)
        assert.deepStrictEqual(summary.changed, ["p"])
        assert.strictEqual(baselineOf(router, "p"), "small-coder")
      }).pipe(Effect.provide(Deployment.layer(first).pipe(Layer.provide(UpstreamClient.layer), Layer.provide(noHttp))))
    }))
})
