/**
 * The circuit breaker state machine under the TestClock: properties over failure/success schedules
 * (against a reference model, and the documented rules one by one), and the breaker inside the real
 * `UpstreamClient` (logical failures after retries, no HTTP while open, one breaker per client).
 */
import { assert, describe, it } from "@effect/vitest"
import { CircuitOpen, TransportError, UpstreamStatus } from "@switchyard-ts/protocol/Errors"
import type { ClientFailure } from "@switchyard-ts/protocol/Errors"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as FastCheck from "effect/FastCheck"
import * as Fiber from "effect/Fiber"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import * as TestClock from "effect/TestClock"
import * as Breaker from "../src/Breaker.js"
import * as Metrics from "../src/Metrics.js"
import type { Target } from "../src/Target.js"
import { completion, makeFake, request, Step, target } from "./support.js"

let clientCounter = 0
/** A client name unique to one sample, so the process-global gauge registry does not mix samples. */
const uniqueClient = () => `breaker-${process.pid}-${++clientCounter}`

/** What one guarded call does when it runs: succeed, fail with a counted failure, or a neutral one (4xx). */
type Outcome = "success" | "failure" | "neutral"

const failureOf = (outcome: Outcome): Option.Option<ClientFailure> =>
  outcome === "failure"
    ? Option.some(new TransportError({ target: "t", reason: "connection failed" }))
    : outcome === "neutral"
    ? Option.some(new UpstreamStatus({ target: "t", status: 400 }))
    : Option.none()

/** A call that records that it ran, then ends with `outcome`. */
const callWith = (ran: Ref.Ref<number>, outcome: Outcome): Effect.Effect<string, ClientFailure> =>
  Effect.zipRight(
    Ref.update(ran, (n) => n + 1),
    Option.match(failureOf(outcome), { onNone: () => Effect.succeed("ok"), onSome: Effect.fail })
  )

const guard = (breaker: Breaker.Breaker, call: Effect.Effect<string, ClientFailure>) =>
  breaker.guard(call, { target: "t", isFailure: Breaker.isCountedFailure })

const settings = FastCheck.record({
  failureThreshold: FastCheck.integer({ min: 1, max: 6 }),
  cooldownMs: FastCheck.integer({ min: 1, max: 5000 })
})
const outcome = FastCheck.constantFrom<Outcome>("success", "failure", "neutral")

// ---------------------------------------------------------------------------------------------
// Reference model (sequential calls)
// ---------------------------------------------------------------------------------------------

type Model =
  | { readonly state: "closed"; readonly failures: number }
  | { readonly state: "open"; readonly until: number }

/** Whether a call at `now` runs, and the model after it ends with `outcome`. */
const modelStep = (model: Model, now: number, result: Outcome, s: Breaker.Settings): readonly [boolean, Model] => {
  if (model.state === "open") {
    if (now < model.until) return [false, model]
    // the one probe
    return [
      true,
      result === "failure" ? { state: "open", until: now + s.cooldownMs } : { state: "closed", failures: 0 }
    ]
  }
  if (result !== "failure") return [true, { state: "closed", failures: 0 }]
  const failures = model.failures + 1
  return [
    true,
    failures >= s.failureThreshold ? { state: "open", until: now + s.cooldownMs } : { state: "closed", failures }
  ]
}

describe("Breaker properties (TestClock)", () => {
  it.effect.prop(
    "follows the reference model over arbitrary schedules of waits and outcomes",
    {
      settings,
      steps: FastCheck.array(FastCheck.record({ waitMs: FastCheck.integer({ min: 0, max: 3000 }), outcome }), {
        maxLength: 40
      })
    },
    ({ settings, steps }) =>
      Effect.gen(function*() {
        const breaker = yield* Breaker.make(uniqueClient(), settings)
        const ran = yield* Ref.make(0)
        let model: Model = { state: "closed", failures: 0 }
        for (const step of steps) {
          yield* TestClock.adjust(step.waitMs)
          const before = yield* Ref.get(ran)
          const now = yield* TestClock.currentTimeMillis
          const [expectRun, next] = modelStep(model, now, step.outcome, settings)
          const result = yield* Effect.either(guard(breaker, callWith(ran, step.outcome)))
          const didRun = (yield* Ref.get(ran)) > before
          if (didRun !== expectRun) return false
          // A refused call fails with CircuitOpen and never runs; a call that ran ends with its own outcome.
          if (!didRun && !(Either.isLeft(result) && result.left._tag === "CircuitOpen")) return false
          if (didRun && Either.isLeft(result) && result.left._tag === "CircuitOpen") return false
          model = next
          if ((yield* breaker.state) !== model.state) return false
        }
        return true
      }),
    { fastCheck: { numRuns: 100 }, timeout: 60_000 }
  )

  it.effect.prop(
    "never opens before the threshold: the first refusal comes right after the threshold-th consecutive failure",
    { settings, outcomes: FastCheck.array(outcome, { maxLength: 30 }) },
    ({ outcomes, settings }) =>
      Effect.gen(function*() {
        const breaker = yield* Breaker.make(uniqueClient(), settings)
        const ran = yield* Ref.make(0)
        let consecutive = 0
        for (const result of outcomes) {
          const exit = yield* Effect.exit(guard(breaker, callWith(ran, result)))
          const refused = Exit.isFailure(exit) && Exit.causeOption(exit).pipe(
            Option.flatMap((cause) => Option.fromNullable(cause._tag === "Fail" ? cause.error : undefined)),
            Option.exists((error) => error._tag === "CircuitOpen")
          )
          // No time passes, so once open the breaker stays open.
          if (refused) return consecutive >= settings.failureThreshold
          consecutive = result === "failure" ? consecutive + 1 : 0
          const state = yield* breaker.state
          if ((state === "open") !== (consecutive >= settings.failureThreshold)) return false
        }
        return true
      }),
    { fastCheck: { numRuns: 200 }, timeout: 60_000 }
  )

  it.effect.prop(
    "after the cooldown exactly one probe runs, concurrent calls fail fast; probe success closes, probe failure re-opens",
    {
      settings,
      concurrent: FastCheck.integer({ min: 1, max: 8 }),
      probe: outcome,
      extraWait: FastCheck.integer({ min: 0, max: 10_000 })
    },
    ({ concurrent, extraWait, probe, settings }) =>
      Effect.gen(function*() {
        const breaker = yield* Breaker.make(uniqueClient(), settings)
        const ran = yield* Ref.make(0)
        for (let i = 0; i < settings.failureThreshold; i++) {
          yield* Effect.either(guard(breaker, callWith(ran, "failure")))
        }
        assert.strictEqual(yield* breaker.state, "open")
        // One ms before the cooldown ends: still refused, no call runs.
        yield* TestClock.adjust(settings.cooldownMs - 1)
        const early = yield* Effect.either(guard(breaker, callWith(ran, "success")))
        assert.isTrue(Either.isLeft(early) && early.left._tag === "CircuitOpen")
        assert.strictEqual(yield* Ref.get(ran), settings.failureThreshold)

        yield* TestClock.adjust(1 + extraWait)
        const gate = yield* Deferred.make<void>()
        const gated = Effect.zipRight(Deferred.await(gate), callWith(ran, probe))
        const fibers = yield* Effect.forEach(
          Array.from({ length: concurrent }, () => gated),
          (call) => Effect.fork(Effect.either(guard(breaker, call)))
        )
        yield* TestClock.adjust(0)
        // Every call but the probe has already been refused; the probe waits at the gate.
        const polled = yield* Effect.forEach(fibers, Fiber.poll)
        const waiting = polled.filter(Option.isNone).length
        assert.strictEqual(waiting, 1)
        assert.strictEqual(yield* breaker.state, "half_open")
        yield* Deferred.succeed(gate, undefined)
        const results = yield* Effect.forEach(fibers, Fiber.join)
        assert.strictEqual(
          results.filter((r) => Either.isLeft(r) && r.left._tag === "CircuitOpen").length,
          concurrent - 1
        )
        assert.strictEqual(yield* Ref.get(ran), settings.failureThreshold + 1)

        if (probe === "failure") {
          assert.strictEqual(yield* breaker.state, "open")
          yield* TestClock.adjust(settings.cooldownMs - 1)
          assert.isTrue(Either.isLeft(yield* Effect.either(guard(breaker, callWith(ran, "success")))))
          assert.strictEqual(yield* Ref.get(ran), settings.failureThreshold + 1)
          yield* TestClock.adjust(1)
          // the next probe
          assert.isTrue(Either.isRight(yield* Effect.either(guard(breaker, callWith(ran, "success")))))
          assert.strictEqual(yield* breaker.state, "closed")
        } else {
          assert.strictEqual(yield* breaker.state, "closed")
          // Closed with a fresh count: threshold - 1 failures do not open it.
          for (let i = 0; i < settings.failureThreshold - 1; i++) {
            yield* Effect.either(guard(breaker, callWith(ran, "failure")))
          }
          assert.strictEqual(yield* breaker.state, "closed")
        }
      }),
    { fastCheck: { numRuns: 100 }, timeout: 60_000 }
  )
})

describe("Breaker examples", () => {
  it.effect("an interrupted probe leaves the breaker open with its cooldown over: the next call probes", () =>
    Effect.gen(function*() {
      const breaker = yield* Breaker.make(uniqueClient(), { failureThreshold: 1, cooldownMs: 1000 })
      const ran = yield* Ref.make(0)
      yield* Effect.either(guard(breaker, callWith(ran, "failure")))
      yield* TestClock.adjust(1000)
      const probe = yield* Effect.fork(guard(breaker, Effect.zipRight(Effect.never, callWith(ran, "success"))))
      yield* TestClock.adjust(0)
      assert.strictEqual(yield* breaker.state, "half_open")
      yield* Fiber.interrupt(probe)
      assert.strictEqual(yield* breaker.state, "open")
      assert.isTrue(Either.isRight(yield* Effect.either(guard(breaker, callWith(ran, "success")))))
      assert.strictEqual(yield* breaker.state, "closed")
    }))

  it.effect("the gauge follows the state: 0 closed, 1 open, 2 half-open", () =>
    Effect.gen(function*() {
      const client = uniqueClient()
      const gauge = Metrics.circuitBreakerState.pipe(Metric.tagged("llm_client", client))
      const value = Effect.map(Metric.value(gauge), (state) => state.value)
      const breaker = yield* Breaker.make(client, { failureThreshold: 2, cooldownMs: 500 })
      const ran = yield* Ref.make(0)
      assert.strictEqual(yield* value, 0)
      yield* Effect.either(guard(breaker, callWith(ran, "failure")))
      assert.strictEqual(yield* value, 0)
      yield* Effect.either(guard(breaker, callWith(ran, "failure")))
      assert.strictEqual(yield* value, 1)
      yield* TestClock.adjust(500)
      const gate = yield* Deferred.make<void>()
      const probe = yield* Effect.fork(guard(breaker, Effect.zipRight(Deferred.await(gate), callWith(ran, "success"))))
      yield* TestClock.adjust(0)
      assert.strictEqual(yield* value, 2)
      yield* Deferred.succeed(gate, undefined)
      yield* Fiber.join(probe)
      assert.strictEqual(yield* value, 0)
    }))

  it("counts transport, deadline, 5xx and 429; not 4xx, undecodable bodies or CircuitOpen", () => {
    assert.isTrue(Breaker.isCountedFailure(new TransportError({ target: "t", reason: "x" })))
    assert.isTrue(Breaker.isCountedFailure(new UpstreamStatus({ target: "t", status: 429 })))
    assert.isTrue(Breaker.isCountedFailure(new UpstreamStatus({ target: "t", status: 503 })))
    assert.isFalse(Breaker.isCountedFailure(new UpstreamStatus({ target: "t", status: 400 })))
    assert.isFalse(Breaker.isCountedFailure(new UpstreamStatus({ target: "t", status: 408 })))
  })
})

// ---------------------------------------------------------------------------------------------
// Inside the UpstreamClient
// ---------------------------------------------------------------------------------------------

/** A target with a breaker on its client. */
const guarded = (
  name: string,
  s: Breaker.Settings,
  options: { readonly maxRetries?: number; readonly client?: string } = {}
): Target => {
  const t = target(name, { maxRetries: options.maxRetries ?? 0 })
  return { ...t, client: { ...t.client, name: options.client ?? t.client.name, breaker: Option.some(s) } }
}

/** A 503 that asks for an immediate retry, so retries need no clock. */
const unavailable = Step.status(503, { error: { message: "down" } }, { "retry-after": "0" })

describe("Breaker inside the UpstreamClient (TestClock)", () => {
  it.effect.prop(
    "counts logical calls after retries, and while open makes no HTTP request at all",
    {
      settings,
      maxRetries: FastCheck.integer({ min: 0, max: 3 }),
      refused: FastCheck.array(FastCheck.integer({ min: 0, max: 999 }), { maxLength: 6 })
    },
    ({ maxRetries, refused, settings }) =>
      Effect.gen(function*() {
        const fake = yield* makeFake({ "a.test": [unavailable] })
        const t = guarded("a", settings, { maxRetries })
        for (let i = 0; i < settings.failureThreshold; i++) {
          const failure = yield* Effect.flip(fake.client.complete({ target: t, body: request, headers: {} }))
          assert.strictEqual(failure._tag, "UpstreamStatus")
        }
        const sent = (yield* fake.requests).length
        assert.strictEqual(sent, settings.failureThreshold * (maxRetries + 1))
        // Calls at arbitrary times inside the cooldown all fail at once with CircuitOpen.
        const offsets = refused.map((r) => Math.floor((r * (settings.cooldownMs - 1)) / 999)).sort((x, y) => x - y)
        let elapsed = 0
        for (const offset of offsets) {
          yield* TestClock.adjust(offset - elapsed)
          elapsed = offset
          const failure = yield* Effect.flip(
            offset % 2 === 0
              ? Effect.asVoid(fake.client.complete({ target: t, body: request, headers: {} }))
              : Effect.asVoid(fake.client.stream({ target: t, body: request, headers: {} }))
          )
          assert.deepStrictEqual(failure, new CircuitOpen({ target: "a-model", client: "a-client" }))
        }
        assert.strictEqual((yield* fake.requests).length, sent)
        // The probe after the cooldown goes out (with its retries) and re-opens on failure.
        yield* TestClock.adjust(settings.cooldownMs - elapsed)
        yield* Effect.flip(fake.client.complete({ target: t, body: request, headers: {} }))
        assert.strictEqual((yield* fake.requests).length, sent + maxRetries + 1)
        // re-opened by the probe, at the end of the cooldown
        assert.deepStrictEqual(yield* fake.client.breakers, [
          { client: "a-client", state: "open", opened_at: Option.some(settings.cooldownMs), shared: false }
        ])
      }),
    { fastCheck: { numRuns: 100 }, timeout: 60_000 }
  )

  it.effect("a failure recovered by a retry is a success; a 4xx resets the count", () =>
    Effect.gen(function*() {
      const fake = yield* makeFake({ "a.test": [unavailable, Step.ok(), unavailable, Step.status(404), unavailable] })
      const t = guarded("a", { failureThreshold: 2, cooldownMs: 1000 }, { maxRetries: 1 })
      // 503 then 200: one successful logical call
      yield* fake.client.complete({ target: t, body: request, headers: {} })
      // 503 then 404: the upstream answered; not counted, count stays 0
      yield* Effect.flip(fake.client.complete({ target: t, body: request, headers: {} }))
      // 503, 503: one counted failure, still closed
      yield* Effect.flip(fake.client.complete({ target: t, body: request, headers: {} }))
      assert.deepStrictEqual(yield* fake.client.breakers, [
        { client: "a-client", state: "closed", opened_at: Option.none(), shared: false }
      ])
      yield* Effect.flip(fake.client.complete({ target: t, body: request, headers: {} }))
      assert.deepStrictEqual(yield* fake.client.breakers, [
        { client: "a-client", state: "open", opened_at: Option.some(0), shared: false }
      ])
    }))

  it.effect("a deadline counts as a failure", () =>
    Effect.gen(function*() {
      const fake = yield* makeFake({ "a.test": [Step.stall] })
      const base = target("a", { maxRetries: 0, timeoutMs: 100 })
      const t: Target = {
        ...base,
        client: { ...base.client, breaker: Option.some({ failureThreshold: 1, cooldownMs: 1000 }) }
      }
      const fiber = yield* Effect.fork(Effect.flip(fake.client.complete({ target: t, body: request, headers: {} })))
      yield* TestClock.adjust(100)
      assert.strictEqual((yield* Fiber.join(fiber))._tag, "DeadlineExceeded")
      assert.strictEqual(
        (yield* Effect.flip(fake.client.complete({ target: t, body: request, headers: {} })))._tag,
        "CircuitOpen"
      )
      assert.strictEqual((yield* fake.requests).length, 1)
    }))

  it.effect("one breaker per client name, shared by its targets; other clients and clients without a breaker are untouched", () =>
    Effect.gen(function*() {
      const fake = yield* makeFake({
        "a.test": [unavailable],
        "b.test": [Step.ok(completion("b"))],
        "c.test": [Step.ok()]
      })
      const s = { failureThreshold: 1, cooldownMs: 1000 }
      const a = guarded("a", s, { client: "shared" })
      const b = guarded("b", s, { client: "shared" })
      const c = target("c", { maxRetries: 0 })
      yield* fake.client.register(c.client)
      yield* Effect.flip(fake.client.complete({ target: a, body: request, headers: {} }))
      const refused = yield* Effect.flip(fake.client.complete({ target: b, body: request, headers: {} }))
      assert.deepStrictEqual(refused, new CircuitOpen({ target: "b-model", client: "shared" }))
      assert.strictEqual((yield* fake.requestsTo("b.test")).length, 0)
      yield* fake.client.complete({ target: c, body: request, headers: {} })
      assert.deepStrictEqual(yield* fake.client.breakers, [
        { client: "shared", state: "open", opened_at: Option.some(0), shared: false }
      ])
    }))

  it.effect("register creates a client's breaker before any call", () =>
    Effect.gen(function*() {
      const fake = yield* makeFake({})
      const t = guarded("z", { failureThreshold: 3, cooldownMs: 10 })
      assert.deepStrictEqual(yield* fake.client.breakers, [])
      yield* fake.client.register(t.client)
      yield* fake.client.register(t.client)
      assert.deepStrictEqual(yield* fake.client.breakers, [
        { client: "z-client", state: "closed", opened_at: Option.none(), shared: false }
      ])
      assert.strictEqual((yield* fake.requests).length, 0)
    }))
})
