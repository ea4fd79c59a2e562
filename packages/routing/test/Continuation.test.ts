/**
 * The continuation rule (`Continuation.decide`) as a property over routes and pins, the `Router`
 * applying it before any route algorithm, and the `ResponseState` store: records and transcripts,
 * conflicts, the per-route capacity, and the id → target records shared through a session store.
 */
import { assert, describe, it } from "@effect/vitest"
import type { Target } from "@switchyard-ts/client/Target"
import { ResponseStateConflict } from "@switchyard-ts/protocol/Errors"
import * as Continuation from "@switchyard-ts/routing/Continuation"
import * as ResponseState from "@switchyard-ts/routing/ResponseState"
import type { Route, RoutedRequest } from "@switchyard-ts/routing/Route"
import * as Router from "@switchyard-ts/routing/Router"
import * as SessionStore from "@switchyard-ts/routing/SessionStore"
import * as Stats from "@switchyard-ts/routing/Stats"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FastCheck from "effect/FastCheck"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as Option from "effect/Option"
import { client, scriptedUpstream } from "./fixtures.js"

const targetOn = (name: string, clientName: string): Target => ({
  name,
  id: `${name}-model`,
  client: { ...client, name: clientName },
  extraBody: {}
})

/** A route over `targets` whose own algorithm must never run. */
const routeOf = (targets: ReadonlyArray<Target>): Route => ({
  id: "r",
  name: "r",
  algorithm: "llm_task_classifier",
  targets,
  contextWindow: Option.none(),
  toolCalling: Option.none(),
  decide: () => Effect.dieMessage("the route's algorithm ran")
})

const request = (pin: string | undefined): RoutedRequest => ({
  body: { model: "r", messages: [{ role: "user", content: "hi" }] },
  headers: {},
  sessionId: Option.none(),
  ...(pin === undefined ? {} : { continuation: { target: pin } })
})

const names = ["a", "b", "c", "d"] as const
const clients = ["x", "y"] as const

describe("Continuation.decide", () => {
  it("goes to the pinned target, falling back only on its client; nothing without a pin of the route", () =>
    FastCheck.assert(
      FastCheck.property(
        FastCheck.uniqueArray(FastCheck.constantFrom(...names)).chain((chosen) =>
          FastCheck.tuple(
            FastCheck.constant(chosen),
            FastCheck.array(FastCheck.constantFrom(...clients), { minLength: chosen.length, maxLength: chosen.length }),
            FastCheck.option(FastCheck.constantFrom(...names), { nil: undefined })
          )
        ),
        ([chosen, onClients, pin]) => {
          const targets = chosen.map((name, i) => targetOn(name, onClients[i] ?? "x"))
          const decided = Continuation.decide(routeOf(targets), request(pin))
          const pinned = targets.find((target) => target.name === pin)
          if (pinned === undefined) return Option.isNone(decided)
          if (Option.isNone(decided)) return false
          const { evidence, fallbacks, selected } = decided.value
          const expected = targets.filter((t) => t.name !== pinned.name && t.client.name === pinned.client.name)
          return selected.name === pinned.name && evidence.source === "continuation" &&
            fallbacks.map((t) => t.name).join() === expected.map((t) => t.name).join()
        }
      ),
      { numRuns: 300 }
    ))

  it.effect("the Router applies it before the route: a pinned request never runs the algorithm, answer or decision", () =>
    Effect.gen(function*() {
      const upstream = yield* scriptedUpstream(new Map())
      const route = routeOf([targetOn("a", "x"), targetOn("b", "y"), targetOn("c", "x")])
      const layer = Router.layer([route]).pipe(Layer.provide(Stats.layerDisabled), Layer.provide(upstream.layer))
      const decided = yield* Router.decide(request("b")).pipe(Effect.provide(layer))
      assert.strictEqual(decided._tag === "Routed" ? decided.selected.name : undefined, "b")
      assert.deepStrictEqual(decided.evidence, { source: "continuation" })
      const completed = yield* Router.complete(request("a")).pipe(Effect.provide(layer))
      assert.strictEqual(Option.getOrUndefined(completed.served)?.name, "a")
      // Not a target of the route (any more): the route decides, here by dying.
      const exit = yield* Router.decide(request("gone")).pipe(Effect.provide(layer), Effect.exit)
      assert.isTrue(Exit.isFailure(exit))
    }))
})

const recorded = (target: string | undefined, items: ReadonlyArray<string> = []): ResponseState.Recorded => ({
  target: Option.fromNullable(target),
  transcript: items.length === 0
    ? Option.none()
    : Option.some({ before: undefined, items: items.map((text) => ({ role: "user", content: text })) })
})

describe("ResponseState", () => {
  it.effect("records per route; a different target for a held id conflicts, the same one does not", () =>
    Effect.gen(function*() {
      const state = ResponseState.make()
      yield* state.record("r", "resp_1", recorded("a", ["hi"]))
      yield* state.record("r", "resp_1", recorded("a"))
      assert.isTrue(Option.isNone(yield* state.lookup("other", "resp_1")))
      const conflict = yield* Effect.exit(state.record("r", "resp_1", recorded("b")))
      assert.deepStrictEqual(conflict, Exit.fail(new ResponseStateConflict({ route: "r" })))
      const found = yield* state.lookup("r", "resp_1")
      assert.deepStrictEqual(Option.flatMap(found, (r) => r.target), Option.some("a"))
      // A route's own answer (no target) never conflicts; the first record stays.
      yield* state.record("r", "resp_1", recorded(undefined))
      const kept = yield* state.lookup("r", "resp_1")
      assert.deepStrictEqual(Option.flatMap(kept, (r) => r.target), Option.some("a"))
      assert.isTrue(Option.exists(kept, (r) => Option.isSome(r.transcript)))
    }))

  it.effect("at capacity nothing new is kept on that route (one warning); other routes and known ids are unaffected", () =>
    Effect.gen(function*() {
      const state = ResponseState.make({ capacity: 2 })
      const warnings: Array<string> = []
      const logger = Logger.make(({ logLevel, message }) => {
        warnings.push(`${logLevel.label} ${String(message)}`)
      })
      yield* Effect.forEach(["1", "2", "3", "4"], (id) => state.record("r", id, recorded("a"))).pipe(
        Effect.provide(Logger.replace(Logger.defaultLogger, logger))
      )
      assert.deepStrictEqual(warnings, ["WARN responses state at capacity: new continuations are not kept"])
      yield* state.record("s", "3", recorded("a"))
      assert.isTrue(Option.isNone(yield* state.lookup("r", "3")))
      assert.isTrue(Option.isSome(yield* state.lookup("s", "3")))
      assert.isTrue(Option.isSome(yield* state.lookup("r", "2")))
    }))

  it.effect("a shared store carries id → target records to another replica, without transcripts", () =>
    Effect.gen(function*() {
      const shared = SessionStore.makeMemory()
      const one = ResponseState.make({ shared })
      const two = ResponseState.make({ shared })
      yield* one.record("r", "resp_1", recorded("a", ["kept here"]))
      const seen = yield* two.lookup("r", "resp_1")
      assert.deepStrictEqual(seen, Option.some({ target: Option.some("a"), transcript: Option.none() }))
      const conflict = yield* Effect.exit(two.record("r", "resp_1", recorded("b")))
      assert.isTrue(Exit.isFailure(conflict))
    }))

  it("itemsOf: a chain of transcripts, oldest turn first", () => {
    const first: ResponseState.Transcript = { before: undefined, items: [{ role: "user", content: "1" }] }
    const second: ResponseState.Transcript = { before: first, items: [{ role: "assistant", content: "2" }] }
    const third: ResponseState.Transcript = { before: second, items: [{ role: "user", content: "3" }] }
    assert.deepStrictEqual(ResponseState.itemsOf(third).map((item) => "content" in item ? item.content : ""), [
      "1",
      "2",
      "3"
    ])
  })
})
