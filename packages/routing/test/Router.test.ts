import { assert, describe, it } from "@effect/vitest"
import * as Relay from "@switchyard-ts/client/Relay"
import * as UpstreamClient from "@switchyard-ts/client/UpstreamClient"
import type { StreamPiece } from "@switchyard-ts/client/UpstreamClient"
import { ForwardAuthMismatch, ModelNotFound, UpstreamStatus } from "@switchyard-ts/protocol/Errors"
import * as Metrics from "@switchyard-ts/routing/Metrics"
import * as Noop from "@switchyard-ts/routing/Noop"
import * as Passthrough from "@switchyard-ts/routing/Passthrough"
import * as RandomRoute from "@switchyard-ts/routing/RandomRoute"
import type { Route, RoutedRequest } from "@switchyard-ts/routing/Route"
import * as Router from "@switchyard-ts/routing/Router"
import * as Stats from "@switchyard-ts/routing/Stats"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import { scriptedUpstream, target } from "./fixtures.js"

/** A router over `routes` that keeps no stats. */
const routerLayer = (routes: ReadonlyArray<Route>) => Router.layer(routes).pipe(Layer.provide(Stats.layerDisabled))

const request = (model: string) => ({
  body: { model, messages: [{ role: "user" as const, content: "hi" }] },
  headers: {},
  sessionId: Option.none()
})

const counterValue = (counter: typeof Metrics.requestsTotal, model: string) =>
  Effect.map(Metric.value(counter.pipe(Metric.tagged("model", model))), (state) => state.count)

describe("Router", () => {
  it.effect("an unknown model fails with ModelNotFound", () =>
    Effect.gen(function*() {
      const upstream = yield* scriptedUpstream(new Map())
      const exit = yield* Router.complete(request("nope")).pipe(
        Effect.provide(routerLayer([Noop.make({ id: "ping", name: "ping" })])),
        Effect.provide(upstream.layer),
        Effect.exit
      )
      assert.deepStrictEqual(exit, Exit.fail(new ModelNotFound({ model: "nope" })))
    }))

  it.effect("a route forwarding one credential family refuses requests from the other family's endpoints before any call", () =>
    Effect.gen(function*() {
      const upstream = yield* scriptedUpstream(new Map())
      const routes = [
        {
          ...Passthrough.make({ id: "claude", name: "claude", target: target("c", "router-test-c") }),
          forwardAuth: Option.some("anthropic" as const)
        },
        {
          ...Passthrough.make({ id: "codex", name: "codex", target: target("o", "router-test-o") }),
          forwardAuth: Option.some("openai" as const)
        },
        {
          ...Passthrough.make({ id: "plain", name: "plain", target: target("p", "router-test-p") }),
          forwardAuth: Option.none()
        }
      ]
      const from = (model: string, inboundFormat: RoutedRequest["inboundFormat"]): RoutedRequest => ({
        ...request(model),
        inboundFormat
      })
      const run = <A, E>(effect: Effect.Effect<A, E, Router.Router>) =>
        effect.pipe(Effect.provide(routerLayer(routes)), Effect.provide(upstream.layer), Effect.exit)
      const claudeRefused = new ForwardAuthMismatch({ route: "claude", family: "anthropic" })
      const codexRefused = new ForwardAuthMismatch({ route: "codex", family: "openai" })
      assert.deepStrictEqual(yield* run(Router.complete(from("claude", "openai_chat"))), Exit.fail(claudeRefused))
      assert.deepStrictEqual(yield* run(Router.stream(from("claude", "openai_responses"))), Exit.fail(claudeRefused))
      assert.deepStrictEqual(yield* run(Router.decide(from("claude", "openai_chat"))), Exit.fail(claudeRefused))
      assert.deepStrictEqual(yield* run(Router.complete(from("codex", "anthropic_messages"))), Exit.fail(codexRefused))
      assert.deepStrictEqual(yield* run(Router.decide(from("codex", "anthropic_messages"))), Exit.fail(codexRefused))
      // the lookup comes first: an unknown model is still a 404
      assert.deepStrictEqual(
        yield* run(Router.complete(from("nope", "openai_chat"))),
        Exit.fail(new ModelNotFound({ model: "nope" }))
      )
      assert.deepStrictEqual(yield* upstream.calls, [])

      assert.isTrue(Exit.isSuccess(yield* run(Router.complete(from("claude", "anthropic_messages")))))
      assert.isTrue(Exit.isSuccess(yield* run(Router.complete(from("codex", "openai_chat")))))
      assert.isTrue(Exit.isSuccess(yield* run(Router.complete(from("codex", "openai_responses")))))
      for (const format of ["openai_chat", "openai_responses", "anthropic_messages"] as const) {
        assert.isTrue(Exit.isSuccess(yield* run(Router.complete(from("plain", format)))))
      }
      // no endpoint (a library caller): not checked
      assert.isTrue(Exit.isSuccess(yield* run(Router.complete(request("claude")))))
      assert.deepStrictEqual(yield* upstream.calls, [
        "router-test-c",
        "router-test-o",
        "router-test-o",
        "router-test-p",
        "router-test-p",
        "router-test-p",
        "router-test-c"
      ])
    }))

  it.effect("noop answers OK without any upstream call", () =>
    Effect.gen(function*() {
      const upstream = yield* scriptedUpstream(new Map())
      const completed = yield* Router.complete(request("ping")).pipe(
        Effect.provide(routerLayer([Noop.make({ id: "ping", name: "ping" })])),
        Effect.provide(upstream.layer)
      )
      assert.strictEqual(completed.completion.choices[0]?.message.content, "OK")
      assert.strictEqual(completed.completion.model, "ping")
      assert.isTrue(Option.isNone(completed.served))
      assert.deepStrictEqual(yield* upstream.calls, [])
    }))

  it.effect("a passthrough answer counts one request for the selected model", () =>
    Effect.gen(function*() {
      const model = "router-test-passthrough-model"
      const upstream = yield* scriptedUpstream(new Map())
      const before = yield* counterValue(Metrics.requestsTotal, model)
      const completed = yield* Router.complete(request("fast")).pipe(
        Effect.provide(routerLayer([Passthrough.make({ id: "fast", name: "fast", target: target("weak", model) })])),
        Effect.provide(upstream.layer)
      )
      assert.strictEqual(completed.completion.model, model)
      assert.strictEqual(completed.decision.evidence.source, "passthrough")
      assert.strictEqual((yield* counterValue(Metrics.requestsTotal, model)) - before, 1)
    }))

  it.effect("a random route falls back to the other target on a 503 and counts no error", () =>
    Effect.gen(function*() {
      const upstream = yield* scriptedUpstream(
        new Map([["router-test-a", new UpstreamStatus({ target: "router-test-a", status: 503 })]])
      )
      const route = RandomRoute.make({
        id: "mix",
        name: "mix",
        targets: [target("a", "router-test-a"), target("b", "router-test-b")],
        weights: [1, 0]
      })
      const errorsBefore = yield* counterValue(Metrics.errorsTotal, "router-test-a")
      const completed = yield* Router.complete(request("mix")).pipe(
        Effect.provide(routerLayer([route])),
        Effect.provide(upstream.layer)
      )
      assert.strictEqual(Option.getOrThrow(completed.served).id, "router-test-b")
      assert.deepStrictEqual(yield* upstream.calls, ["router-test-a", "router-test-b"])
      assert.strictEqual((yield* counterValue(Metrics.errorsTotal, "router-test-a")) - errorsBefore, 0)
    }))

  it.effect("a failed answer call counts an error for the selected model", () =>
    Effect.gen(function*() {
      const model = "router-test-failing"
      const upstream = yield* scriptedUpstream(new Map([[model, new UpstreamStatus({ target: model, status: 400 })]]))
      const before = yield* counterValue(Metrics.errorsTotal, model)
      const exit = yield* Router.complete(request("fast")).pipe(
        Effect.provide(routerLayer([Passthrough.make({ id: "fast", name: "fast", target: target("t", model) })])),
        Effect.provide(upstream.layer),
        Effect.exit
      )
      assert.isTrue(Exit.isFailure(exit))
      assert.strictEqual((yield* counterValue(Metrics.errorsTotal, model)) - before, 1)
    }))

  it.effect("streamed pieces are a Stream over the router's own relay: the server's unwrap is the same relay every time, and Stream.take releases the answer call", () =>
    Effect.gen(function*() {
      let pulls = 0
      let releases = 0
      const piece = (content: string): StreamPiece => ({
        chunks: [{ id: "c", model: "m", choices: [{ index: 0, delta: { content }, finish_reason: null }] }],
        native: Option.none()
      })
      // an answer call whose pieces never end unless the consumer lets go
      const source: Relay.Relay<StreamPiece, never> = {
        pull: Effect.sync(() => [piece(`p${++pulls}`)]),
        release: Effect.sync(() => {
          releases++
        })
      }
      const client = UpstreamClient.UpstreamClient.of({
        answer: () => Effect.dieMessage("not used"),
        answerStream: () => Effect.succeed(Relay.toStream(source)),
        complete: () => Effect.dieMessage("not used"),
        stream: () => Effect.dieMessage("not used"),
        countTokens: () => Effect.dieMessage("not used"),
        responsesAuxiliary: () => Effect.dieMessage("not used"),
        register: () => Effect.void,
        breakers: Effect.succeed([])
      })
      const streamed = yield* Router.stream(request("fast")).pipe(
        Effect.provide(routerLayer([Passthrough.make({ id: "fast", name: "fast", target: target("f", "m") })])),
        Effect.provideService(UpstreamClient.UpstreamClient, client)
      )
      const relay = Relay.fromStream(streamed.pieces)
      assert.strictEqual(Relay.fromStream(streamed.pieces), relay)
      assert.notStrictEqual(relay, source)
      assert.strictEqual(pulls, 0)
      const contents = yield* streamed.pieces.pipe(
        Stream.mapConcat((p) => p.chunks),
        Stream.map((c) => c.choices[0]?.delta.content),
        Stream.take(2),
        Stream.runCollect
      )
      assert.deepStrictEqual(Chunk.toReadonlyArray(contents), ["p1", "p2"])
      assert.strictEqual(pulls, 2)
      assert.strictEqual(releases, 1)

      const noop = yield* Router.stream(request("ping")).pipe(
        Effect.provide(routerLayer([Noop.make({ id: "ping", name: "ping" })])),
        Effect.provideService(UpstreamClient.UpstreamClient, client)
      )
      assert.strictEqual(Relay.fromStream(noop.pieces), Relay.fromStream(noop.pieces))
    }))

  it.effect("a streamed noop answer is two chunks ending with stop", () =>
    Effect.gen(function*() {
      const upstream = yield* scriptedUpstream(new Map())
      const streamed = yield* Router.stream(request("ping")).pipe(
        Effect.provide(routerLayer([Noop.make({ id: "ping", name: "ping" })])),
        Effect.provide(upstream.layer)
      )
      const chunks = yield* Stream.runCollect(UpstreamClient.chunksOf(streamed.pieces))
      assert.strictEqual(chunks.length, 2)
      assert.strictEqual([...chunks][1]?.choices[0]?.finish_reason, "stop")
    }))
})
