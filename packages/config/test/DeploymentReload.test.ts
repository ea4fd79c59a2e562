/**
 * `Deployment.Reloader`: replacing the deployment a `Router` serves. Unchanged routes are kept as
 * they run, changed ones rebuilt, removed ones let go; breakers keep their state unless their
 * settings change; sessions (in the `SessionStore`) outlive a route rebuilt under the same id; a
 * call started before a reload ends on the routes it started with.
 */
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientResponse from "@effect/platform/HttpClientResponse"
import { assert, describe, it } from "@effect/vitest"
import * as UpstreamClient from "@switchyard-ts/client/UpstreamClient"
import * as Deployment from "@switchyard-ts/config/Deployment"
import { SessionId } from "@switchyard-ts/protocol/Ids"
import * as Router from "@switchyard-ts/routing/Router"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import { document, hosted, load, route, secret, target } from "./support.js"

const verdict = JSON.stringify({ crux: "x", primary_rule: "SUP-1", capability_boundary: "supported", p_solve: 0.9 })

/** A fake upstream: the judge answers `verdict` (or 503 when `judgeDown`), any other model a completion. */
const fakeUpstream = () => {
  const calls: Array<string> = []
  const state = { judgeDown: false }
  const Body = Schema.parseJson(Schema.Struct({ model: Schema.String }))
  const http = HttpClient.make((request) =>
    Effect.gen(function*() {
      const bytes = request.body._tag === "Uint8Array" ? new TextDecoder().decode(request.body.body) : "{}"
      const { model } = yield* Effect.orDie(Schema.decodeUnknown(Body)(bytes))
      calls.push(model)
      if (model === "judge-model" && state.judgeDown) {
        return HttpClientResponse.fromWeb(request, new Response("{\"error\":{\"message\":\"down\"}}", { status: 503 }))
      }
      const content = model === "judge-model" ? verdict : `answer of ${model}`
      return HttpClientResponse.fromWeb(
        request,
        new Response(
          JSON.stringify({
            id: "c",
            object: "chat.completion",
            created: 0,
            model,
            choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: "stop" }]
          }),
          { status: 200, headers: { "content-type": "application/json" } }
        )
      )
    })
  )
  return { calls, state, layer: Layer.succeed(HttpClient.HttpClient, http) }
}

const toml = (routes: string, client = "") =>
  document(
    hosted("api_key_env = \"HOSTED_API_KEY\"", "max_retries = 0", client),
    target("weak", "weak-model", "hosted"),
    target("strong", "strong-model", "hosted"),
    target("judge", "judge-model", "hosted"),
    routes
  )

const passthrough = (id: string, to: string) => route(id, "passthrough", `target = "${to}"`)

const capability = (posture: "error" | "fail_open") =>
  route(
    "judged",
    "llm_classifier",
    "classifier_target = \"judge\"",
    "weak_target = \"weak\"",
    "strong_target = \"strong\"",
    "base_threshold = 0.5",
    "classify_trigger = \"user_turn\"",
    `judge_failure = "${posture}"`
  )

type Turn = { readonly role: "user" | "assistant"; readonly content: string }

const chat = (model: string, messages: ReadonlyArray<Turn>) => ({
  body: { model, messages },
  headers: {},
  sessionId: Option.some(SessionId.make("session-1")),
  inboundFormat: "openai_chat" as const
})

/** The model that served `messages` on route `model`. */
const served = (model: string, messages: ReadonlyArray<Turn> = [{ role: "user", content: "fix the test" }]) =>
  Effect.flatMap(Router.Router, (router) => router.complete(chat(model, messages))).pipe(
    Effect.map((completed) => Option.getOrUndefined(Option.map(completed.served, (target) => target.id)))
  )

const serving = (deployment: Deployment.Deployment, upstream: ReturnType<typeof fakeUpstream>) =>
  Deployment.layer(deployment).pipe(Layer.provideMerge(UpstreamClient.layer), Layer.provide(upstream.layer))

describe("Deployment.Reloader", () => {
  it.scoped("keeps unchanged routes as they run, rebuilds changed ones, adds and removes", () =>
    Effect.gen(function*() {
      const first = yield* load(toml(passthrough("a", "weak") + passthrough("b", "weak") + passthrough("c", "weak")))
      const next = yield* load(toml(passthrough("a", "weak") + passthrough("b", "strong") + passthrough("d", "weak")))
      const upstream = fakeUpstream()
      yield* Effect.gen(function*() {
        const router = yield* Router.Router
        const reloader = yield* Deployment.Reloader
        const before = new Map(router.routes.map((route) => [route.id, route]))
        assert.strictEqual(yield* served("b"), "weak-model")
        const summary = yield* reloader.reload(next)
        assert.deepStrictEqual(summary, { added: ["d"], changed: ["b"], removed: ["c"], kept: ["a"] })
        assert.deepStrictEqual(router.routes.map((route) => route.id), ["a", "b", "d"])
        assert.strictEqual(router.routes.find((route) => route.id === "a"), before.get("a"))
        assert.notStrictEqual(router.routes.find((route) => route.id === "b"), before.get("b"))
        assert.strictEqual(yield* served("b"), "strong-model")
        assert.strictEqual(yield* served("d"), "weak-model")
        assert.strictEqual((yield* Effect.either(served("c")))._tag, "Left")
        assert.strictEqual(yield* reloader.current, next)
      }).pipe(Effect.provide(serving(first, upstream)))
    }))

  it.scoped("a rotated key is a change of every route that calls its client", () =>
    Effect.gen(function*() {
      const text = toml(passthrough("a", "weak") + route("n", "noop"))
      const first = yield* load(text)
      const rotated = yield* load(text, [["HOSTED_API_KEY", `${secret}-rotated`]])
      yield* Effect.gen(function*() {
        const summary = yield* (yield* Deployment.Reloader).reload(rotated)
        assert.deepStrictEqual(summary.changed, ["a"])
        assert.deepStrictEqual(summary.kept, ["n"])
      }).pipe(Effect.provide(serving(first, fakeUpstream())))
    }))

  it.scoped("sessions outlive a route rebuilt under its id: a posture flip keeps the session's tier", () =>
    Effect.gen(function*() {
      const first = yield* load(toml(capability("error")))
      const flipped = yield* load(toml(capability("fail_open")))
      const upstream = fakeUpstream()
      yield* Effect.gen(function*() {
        assert.strictEqual(yield* served("judged"), "weak-model")
        assert.deepStrictEqual(upstream.calls, ["judge-model", "weak-model"])
        upstream.state.judgeDown = true
        const summary = yield* (yield* Deployment.Reloader).reload(flipped)
        assert.deepStrictEqual(summary.changed, ["judged"])
        // a tool continuation of the same session: the stored tier, no judge call
        const continuation: ReadonlyArray<Turn> = [
          { role: "user", content: "fix the test" },
          { role: "assistant", content: "done" }
        ]
        assert.strictEqual(yield* served("judged", continuation), "weak-model")
        assert.deepStrictEqual(upstream.calls, ["judge-model", "weak-model", "weak-model"])
        // a new user turn: the judge is down, and the reloaded posture (fail_open) keeps the tier
        assert.strictEqual(
          yield* served("judged", [...continuation, { role: "user", content: "and the docs" }]),
          "weak-model"
        )
      }).pipe(Effect.provide(serving(first, upstream)))
    }))

  it.scoped("breakers keep their state across a reload unless their settings change", () =>
    Effect.gen(function*() {
      const breaker = (cooldown: number) => `breaker = { failure_threshold = 1, cooldown_ms = ${cooldown} }`
      const routes = capability("error")
      const first = yield* load(toml(routes, breaker(60_000)))
      const same = yield* load(toml(routes, breaker(60_000)))
      const other = yield* load(toml(routes, breaker(30_000)))
      const none = yield* load(toml(routes))
      const upstream = fakeUpstream()
      upstream.state.judgeDown = true
      yield* Effect.gen(function*() {
        const client = yield* UpstreamClient.UpstreamClient
        const reloader = yield* Deployment.Reloader
        const states = Effect.map(client.breakers, (all) => all.map((status) => status.state))
        assert.strictEqual((yield* Effect.either(served("judged")))._tag, "Left")
        assert.deepStrictEqual(yield* states, ["open"])
        yield* reloader.reload(same)
        assert.deepStrictEqual(yield* states, ["open"])
        yield* reloader.reload(other)
        assert.deepStrictEqual(yield* states, ["closed"])
        yield* reloader.reload(none)
        assert.deepStrictEqual(yield* states, [])
      }).pipe(Effect.provide(serving(first, upstream)))
    }))
})

describe("Deployment.sameSpec and lateWindowMs", () => {
  it("compares Options by content, secrets by value, arrays and records member by member", () => {
    assert.isTrue(Deployment.sameSpec({ a: Option.some([1, { b: "x" }]) }, { a: Option.some([1, { b: "x" }]) }))
    assert.isFalse(Deployment.sameSpec({ a: Option.some(1) }, { a: Option.none() }))
    assert.isFalse(Deployment.sameSpec({ a: [1, 2] }, { a: [1, 2, 3] }))
    assert.isFalse(Deployment.sameSpec({ a: 1 }, { a: 1, b: undefined }))
    assert.isTrue(Deployment.sameSpec(Redacted.make("k"), Redacted.make("k")))
    assert.isFalse(Deployment.sameSpec(Redacted.make("k"), Redacted.make("k2")))
    assert.isFalse(Deployment.sameSpec(() => 1, () => 1))
  })

  it("finds the longest judge_timeout_ms + late_verdict_ms anywhere in a table", () => {
    assert.strictEqual(Deployment.lateWindowMs({ lateVerdictMs: Option.none(), judgeTimeoutMs: Option.some(5) }), 0)
    assert.strictEqual(
      Deployment.lateWindowMs({
        lateVerdictMs: Option.some(100),
        judgeTimeoutMs: Option.some(50),
        classifier: Option.some({ lateVerdictMs: Option.some(1_000), judgeTimeoutMs: Option.some(200) })
      }),
      1_200
    )
  })
})
