/**
 * What every route test builds a route over: the services of a route's live host (`LiveHost`) —
 * a `Judge`, a `SessionStore` and an `UpstreamClient`. A route type that makes no routing-time model
 * call gets {@link unusedUpstream}, whose every call fails (a call it makes is a test failure).
 */
import { ofChat, UpstreamClient } from "@switchyard-ts/client/UpstreamClient"
import { TransportError } from "@switchyard-ts/protocol/Errors"
import * as Judge from "@switchyard-ts/routing/Judge"
import * as SessionStore from "@switchyard-ts/routing/SessionStore"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"

const unused = (target: string) =>
  Effect.fail(new TransportError({ target, reason: "no upstream call is expected in this test" }))

/** An upstream client no call may reach: each fails with a `TransportError` saying so. */
export const unusedUpstream: Layer.Layer<UpstreamClient> = Layer.succeed(
  UpstreamClient,
  ofChat({
    complete: ({ target }) => unused(target.id),
    stream: ({ target }) => unused(target.id),
    countTokens: ({ target }) => unused(target.id),
    responsesAuxiliary: ({ target }) => unused(target.id),
    register: () => Effect.void,
    breakers: Effect.succeed([])
  })
)

/**
 * A judge no question may reach: each one dies saying so (for a route type whose decision asks no
 * `Judge`, e.g. an advisor route, which calls its advisor through the upstream).
 */
export const unusedJudge: Layer.Layer<Judge.Judge> = Judge.layerTest(
  () => Effect.dieMessage("no judge call expected"),
  () => Effect.dieMessage("no judge call expected"),
  () => Effect.dieMessage("no judge call expected")
)

/** A memory session store of 100 sessions, one hour idle. */
export const memoryStore = (): Layer.Layer<SessionStore.SessionStore> =>
  SessionStore.layerMemory({ maxEntries: 100, ttlMs: 3_600_000 })

/** The services a route is built over: `judge`, `store` (default: a fresh memory store) and `upstream` (default: unused). */
export const routeServices = (
  judge: Layer.Layer<Judge.Judge>,
  store: Layer.Layer<SessionStore.SessionStore> = memoryStore(),
  upstream: Layer.Layer<UpstreamClient> = unusedUpstream
): Layer.Layer<Judge.Judge | SessionStore.SessionStore | UpstreamClient> => Layer.mergeAll(judge, store, upstream)
