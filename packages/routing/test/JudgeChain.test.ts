/**
 * A route's judge chain (`JudgeChain`): fallbacks in order, the whole chain's deadline, hedges on the
 * TestClock, the trail each answer or failure carries, and the posture's fold of an exhausted chain.
 */
import { assert, describe, it } from "@effect/vitest"
import { DeadlineExceeded, type JudgeCallFailure, TransportError } from "@switchyard-ts/protocol/Errors"
import * as Consultation from "@switchyard-ts/routing/Consultation"
import * as JudgeChain from "@switchyard-ts/routing/JudgeChain"
import * as Metrics from "@switchyard-ts/routing/Metrics"
import * as Posture from "@switchyard-ts/routing/Posture"
import { InvalidVerdict } from "@switchyard-ts/routing/Verdict"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Fiber from "effect/Fiber"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as TestClock from "effect/TestClock"
import { target } from "./scriptedJudge.js"

/** How one judge answers: after `afterMs`, a verdict or a failure. */
type Script = { readonly afterMs: number; readonly result: Either.Either<string, JudgeCallFailure | InvalidVerdict> }

const ok = (afterMs: number, verdict: string): Script => ({ afterMs, result: Either.right(verdict) })
const down = (afterMs: number): Script => ({
  afterMs,
  result: Either.left(new TransportError({ target: "", reason: "connection refused" }))
})
const unusable = (afterMs: number): Script => ({
  afterMs,
  result: Either.left(new InvalidVerdict({ reason: "parse_error", detail: "not JSON" }))
})

const a = target("a", "judge-a")
const b = target("b", "judge-b")
const c = target("c", "judge-c")

/** A chain over judges scripted by model id; records each ask (model, deadline given) and interruptions. */
const scripted = (scripts: Readonly<Record<string, Script>>) => {
  const asked: Array<{ readonly model: string; readonly timeoutMs: Option.Option<number> }> = []
  const interrupted: Array<string> = []
  const ask: JudgeChain.Ask<string, JudgeCallFailure | InvalidVerdict, never> = (judge, timeoutMs) =>
    Effect.suspend(() => {
      asked.push({ model: judge.id, timeoutMs })
      const script = scripts[judge.id] ?? down(0)
      // a deadline given to the call ends it there, as the client's would
      const deadline = Option.getOrElse(timeoutMs, () => Infinity)
      const answer = script.afterMs > deadline
        ? Effect.zipRight(
          Effect.sleep(deadline),
          Effect.fail(new DeadlineExceeded({ target: judge.id, afterMs: deadline }))
        )
        : Effect.zipRight(
          Effect.sleep(script.afterMs),
          Either.match(script.result, { onLeft: Effect.fail, onRight: Effect.succeed })
        )
      return answer.pipe(Effect.onInterrupt(() => Effect.sync(() => interrupted.push(judge.id))))
    })
  return { ask, asked, interrupted }
}

const settings = (
  judges: JudgeChain.Settings["judges"],
  options: { readonly deadlineMs?: number; readonly hedgeMs?: number } = {}
): JudgeChain.Settings => ({
  judges,
  deadlineMs: Option.fromNullable(options.deadlineMs),
  hedgeMs: Option.fromNullable(options.hedgeMs),
  route: "chain-test"
})

/** Run `effect` forked, move the clock by `ms`, and return its result and the clock then. */
const runFor = <A, E>(effect: Effect.Effect<A, E>, ms: number) =>
  Effect.gen(function*() {
    const fiber = yield* Effect.fork(Effect.either(effect))
    yield* TestClock.adjust(ms)
    return yield* Fiber.join(fiber)
  })

const fallbacksCounted = (model: string, reason: string) =>
  Effect.map(
    Metric.value(Metrics.classifierJudgeFallbacksTotal.pipe(
      Metric.tagged("route", "chain-test"),
      Metric.tagged("judge_model", model),
      Metric.tagged("reason", reason)
    )),
    (state) => state.count
  )

describe("JudgeChain.run", () => {
  it.effect("one judge is one consultation: its answer or its failure, a trail of itself", () =>
    Effect.gen(function*() {
      const good = scripted({ "judge-a": ok(10, "v") })
      const answered = yield* runFor(JudgeChain.run(settings([a], { deadlineMs: 500 }), good.ask), 10)
      assert.deepStrictEqual(answered, Either.right({ answer: "v", trail: JudgeChain.single("judge-a") }))
      assert.deepStrictEqual(good.asked, [{ model: "judge-a", timeoutMs: Option.some(500) }])
      const bad = scripted({ "judge-a": down(10) })
      const failed = yield* runFor(JudgeChain.run(settings([a]), bad.ask), 10)
      assert.isTrue(Either.isLeft(failed) && failed.left.failure._tag === "TransportError")
    }))

  it.effect("a failed or unusable judge hands over to the next, in order; the trail names them", () =>
    Effect.gen(function*() {
      const before = yield* fallbacksCounted("judge-a", "transport")
      const chain = scripted({ "judge-a": down(5), "judge-b": unusable(5), "judge-c": ok(5, "from c") })
      const result = yield* runFor(JudgeChain.run(settings([a, b, c]), chain.ask), 15)
      assert.deepStrictEqual(
        result,
        Either.right({
          answer: "from c",
          trail: {
            judgeModel: "judge-c",
            fallbacks: [{ model: "judge-a", reason: "transport" }, { model: "judge-b", reason: "parse_error" }],
            hedged: false
          }
        })
      )
      assert.deepStrictEqual(chain.asked.map((x) => x.model), ["judge-a", "judge-b", "judge-c"])
      assert.strictEqual((yield* fallbacksCounted("judge-a", "transport")) - before, 1)
    }))

  it.effect("an exhausted chain fails with the last judge's failure; the posture folds that one", () =>
    Effect.gen(function*() {
      const chain = scripted({ "judge-a": unusable(5), "judge-b": down(5) })
      const exhausted = yield* runFor(JudgeChain.run(settings([a, b]), chain.ask), 10)
      assert.isTrue(Either.isLeft(exhausted))
      if (Either.isLeft(exhausted)) {
        assert.strictEqual(exhausted.left.failure._tag, "TransportError")
        assert.deepStrictEqual(exhausted.left.trail, {
          judgeModel: "judge-b",
          fallbacks: [{ model: "judge-a", reason: "parse_error" }],
          hedged: false
        })
      }
      const open = yield* runFor(
        Consultation.runChained(JudgeChain.run(settings([a, b]), chain.ask), Posture.failOpen),
        10
      )
      assert.deepStrictEqual(
        open,
        Either.right(Consultation.WithoutVerdict({
          reason: "transport",
          trail: { judgeModel: "judge-b", fallbacks: [{ model: "judge-a", reason: "parse_error" }], hedged: false }
        }))
      )
      const strict = yield* runFor(
        Consultation.runChained(JudgeChain.run(settings([a, b]), chain.ask), Posture.error),
        10
      )
      assert.isTrue(Either.isLeft(strict) && strict.left._tag === "TransportError")
    }))

  it.effect("judge_timeout_ms bounds the whole chain: each judge gets what is left, none is asked after it", () =>
    Effect.gen(function*() {
      const chain = scripted({ "judge-a": down(400), "judge-b": ok(5_000, "late"), "judge-c": ok(1, "never") })
      const result = yield* runFor(JudgeChain.run(settings([a, b, c], { deadlineMs: 1_000 }), chain.ask), 1_000)
      assert.deepStrictEqual(chain.asked, [
        { model: "judge-a", timeoutMs: Option.some(1_000) },
        { model: "judge-b", timeoutMs: Option.some(600) }
      ])
      assert.isTrue(Either.isLeft(result))
      if (Either.isLeft(result)) {
        assert.strictEqual(result.left.failure._tag, "DeadlineExceeded")
        assert.strictEqual(result.left.trail.judgeModel, "judge-b")
      }
    }))
})

describe("JudgeChain.run with classifier_hedge_ms", () => {
  it.effect("a slow judge has the next one asked as well; the first usable verdict wins, the other is interrupted", () =>
    Effect.gen(function*() {
      const chain = scripted({ "judge-a": ok(2_000, "slow"), "judge-b": ok(50, "hedge") })
      const fiber = yield* Effect.fork(Effect.either(JudgeChain.run(settings([a, b], { hedgeMs: 100 }), chain.ask)))
      yield* TestClock.adjust(99)
      assert.deepStrictEqual(chain.asked.map((x) => x.model), ["judge-a"])
      yield* TestClock.adjust(51)
      const result = yield* Fiber.join(fiber)
      assert.deepStrictEqual(
        result,
        Either.right({
          answer: "hedge",
          trail: { judgeModel: "judge-b", fallbacks: [], hedged: true }
        })
      )
      assert.deepStrictEqual(chain.interrupted, ["judge-a"])
    }))

  it.effect("a judge that answers before its hedge time asks no other", () =>
    Effect.gen(function*() {
      const chain = scripted({ "judge-a": ok(80, "quick"), "judge-b": ok(1, "unused") })
      const result = yield* runFor(JudgeChain.run(settings([a, b], { hedgeMs: 100 }), chain.ask), 500)
      assert.deepStrictEqual(result, Either.right({ answer: "quick", trail: JudgeChain.single("judge-a") }))
      assert.deepStrictEqual(chain.asked.map((x) => x.model), ["judge-a"])
    }))

  it.effect("the slow judge's failure after the hedge started is listed before the hedge's verdict", () =>
    Effect.gen(function*() {
      const chain = scripted({ "judge-a": down(300), "judge-b": ok(400, "hedge") })
      const result = yield* runFor(JudgeChain.run(settings([a, b], { hedgeMs: 100 }), chain.ask), 500)
      assert.deepStrictEqual(
        result,
        Either.right({
          answer: "hedge",
          trail: { judgeModel: "judge-b", fallbacks: [{ model: "judge-a", reason: "transport" }], hedged: true }
        })
      )
    }))

  it.effect("both failing: the last judge's failure, the slow one listed before it", () =>
    Effect.gen(function*() {
      const chain = scripted({ "judge-a": down(300), "judge-b": unusable(400) })
      const result = yield* runFor(JudgeChain.run(settings([a, b], { hedgeMs: 100 }), chain.ask), 500)
      assert.isTrue(Either.isLeft(result))
      if (Either.isLeft(result)) {
        assert.strictEqual(result.left.failure._tag, "InvalidVerdict")
        assert.deepStrictEqual(result.left.trail.fallbacks, [{ model: "judge-a", reason: "transport" }])
        assert.strictEqual(result.left.trail.judgeModel, "judge-b")
      }
    }))
})
