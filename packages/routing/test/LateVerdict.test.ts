/**
 * Late verdicts (`late_verdict_ms`, `max_late_verdicts`) under the TestClock: no request waits past
 * the judge deadline; a call past it goes on in the background, bounded per route (extra ones are
 * aborted and counted `dropped`); a valid late verdict is stored once, marked late, and routes the
 * session's next request (`affinity`, `previous_source = "llm-classifier-late"`); an invalid,
 * failed or expired late call stores nothing; a newer stored verdict is never overwritten; closing
 * the scope the route was built in interrupts every background call.
 *
 * The judge here is a fake that honours the deadline it is given (`judgeTimeoutMs`, as the upstream
 * client does), so the tests also pin that the cascade gives the call `judge_timeout_ms +
 * late_verdict_ms` while the request waits `judge_timeout_ms` only.
 */
import { assert, describe, it } from "@effect/vitest"
import { DeadlineExceeded, UpstreamStatus } from "@switchyard-ts/protocol/Errors"
import { SessionId } from "@switchyard-ts/protocol/Ids"
import type { Message } from "@switchyard-ts/protocol/OpenAiChat"
import * as CapabilityRoute from "@switchyard-ts/routing/CapabilityRoute"
import type * as ClassifierCascade from "@switchyard-ts/routing/ClassifierCascade"
import * as CustomRoute from "@switchyard-ts/routing/CustomRoute"
import * as Decision from "@switchyard-ts/routing/Decision"
import * as JsonPointer from "@switchyard-ts/routing/JsonPointer"
import * as JsonSchema from "@switchyard-ts/routing/JsonSchema"
import * as Judge from "@switchyard-ts/routing/Judge"
import type * as LateVerdict from "@switchyard-ts/routing/LateVerdict"
import * as Metrics from "@switchyard-ts/routing/Metrics"
import type { Route, RoutedRequest } from "@switchyard-ts/routing/Route"
import * as RoutingFacts from "@switchyard-ts/routing/RoutingFacts"
import * as SessionStore from "@switchyard-ts/routing/SessionStore"
import * as Verdict from "@switchyard-ts/routing/Verdict"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as FastCheck from "effect/FastCheck"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as Scope from "effect/Scope"
import * as TestClock from "effect/TestClock"
import { routeServices } from "./harness.js"
import { routeOptions, strong, target, weak } from "./scriptedJudge.js"

// ---------------------------------------------------------------------------------------------
// A fake judge that honours its deadline, and a recording store
// ---------------------------------------------------------------------------------------------

type Result = "weak" | "strong" | "invalid" | "fail"

interface Script {
  readonly delayMs: number
  readonly result: Result
}

interface Call {
  readonly task: string
  readonly start: number
  readonly timeoutMs: Option.Option<number>
  end: Option.Option<number>
  interrupted: boolean
}

const verdictOf = (result: "weak" | "strong"): Verdict.Verdict =>
  result === "weak"
    ? { crux: "one edit", primary_rule: "SUP-1", capability_boundary: "supported", p_solve: 0.9 }
    : { crux: "new design", primary_rule: "LIM-1", capability_boundary: "unsupported", p_solve: 0.1 }

const taskOf = (messages: ReadonlyArray<Message>): string => {
  const first = messages.find((message) => message.role === "user")
  return typeof first?.content === "string" ? first.content : ""
}

/** Answers each task after its scripted delay, bounded by the deadline the consultation carries. */
const makeFakeJudge = (judgeModel: string) =>
  Effect.sync(() => {
    const scripts = new Map<string, Script>()
    const calls: Array<Call> = []
    const run = <A>(
      messages: ReadonlyArray<Message>,
      timeoutMs: Option.Option<number> | undefined,
      answer: (result: Result) => Effect.Effect<A, Judge.JudgeError>
    ): Effect.Effect<A, Judge.JudgeError> =>
      Effect.gen(function*() {
        const task = taskOf(messages)
        const script = scripts.get(task) ?? (yield* Effect.dieMessage(`no script for ${task}`))
        const call: Call = {
          task,
          start: yield* Clock.currentTimeMillis,
          timeoutMs: timeoutMs ?? Option.none(),
          end: Option.none(),
          interrupted: false
        }
        calls.push(call)
        const answered = Effect.zipRight(Effect.sleep(script.delayMs), answer(script.result))
        const bounded = Option.match(call.timeoutMs, {
          onNone: () => answered,
          onSome: (ms) =>
            Effect.timeoutFail(answered, {
              duration: ms,
              onTimeout: () => new DeadlineExceeded({ target: judgeModel, afterMs: ms })
            })
        })
        return yield* bounded.pipe(
          Effect.onInterrupt(() => Effect.sync(() => (call.interrupted = true))),
          Effect.ensuring(Effect.map(Clock.currentTimeMillis, (now) => (call.end = Option.some(now))))
        )
      })
    const failure = (result: Result) =>
      result === "invalid"
        ? Effect.fail(new Verdict.InvalidVerdict({ reason: "parse_error", detail: "scripted" }))
        : Effect.fail(new UpstreamStatus({ target: judgeModel, status: 503 }))
    const layer = Judge.layerTest(
      (consultation) =>
        run(
          consultation.messages,
          consultation.options.judgeTimeoutMs,
          (result) => result === "weak" || result === "strong" ? Effect.succeed(verdictOf(result)) : failure(result)
        ),
      (consultation) =>
        run(
          consultation.messages,
          consultation.options.judgeTimeoutMs,
          (result) => result === "weak" || result === "strong" ? Effect.succeed({ route: result }) : failure(result)
        )
    )
    return { scripts, calls, layer }
  })

interface Write {
  readonly key: string
  readonly decision: SessionStore.SessionDecision
}

const makeRecordingStore = Effect.sync(() => {
  const memory = SessionStore.makeMemory({ maxEntries: 100, ttlMs: 3_600_000 })
  const writes: Array<Write> = []
  const layer = Layer.succeed(
    SessionStore.SessionStore,
    SessionStore.SessionStore.of({
      ...memory,
      put: (key, decision) =>
        Effect.zipRight(Effect.sync(() => writes.push({ key, decision })), memory.put(key, decision))
    })
  )
  return { writes, layer }
})

const lateCount = (judgeModel: string, outcome: LateVerdict.Outcome) =>
  Effect.map(
    Metric.value(
      Metrics.classifierLateVerdictsTotal.pipe(
        Metric.tagged("judge_model", judgeModel),
        Metric.tagged("outcome", outcome)
      )
    ),
    (state) => state.count
  )

const outcomes: ReadonlyArray<LateVerdict.Outcome> = ["stored", "superseded", "invalid", "failed", "expired", "dropped"]

const lateCounts = (judgeModel: string) =>
  Effect.map(
    Effect.forEach(outcomes, (outcome) => lateCount(judgeModel, outcome)),
    (counts) => Object.fromEntries(outcomes.map((outcome, i) => [outcome, counts[i] ?? 0]))
  )

const uniqueJudgeModel = Effect.sync(() => `late-judge-${globalThis.crypto.randomUUID()}`)

const request = (
  session: string,
  task: string,
  kind: "user_turn" | "tool_continuation" = "user_turn"
): RoutedRequest => ({
  body: {
    model: "auto",
    messages: kind === "user_turn"
      ? [{ role: "user", content: task }]
      : [
        { role: "user", content: task },
        {
          role: "assistant",
          content: null,
          tool_calls: [{ id: "c1", type: "function", function: { name: "ls", arguments: "{}" } }]
        },
        { role: "tool", tool_call_id: "c1", content: "a.ts" }
      ]
  },
  headers: {},
  sessionId: Option.some(SessionId.make(session))
})

/** Let forked fibers run what the clock already allows. */
const settle = Effect.repeatN(Effect.yieldNow(), 20)

const tick = Effect.zipRight(TestClock.adjust(1), settle)

const tierOf = (decision: Decision.Decision): string => Option.getOrThrow(Decision.selected(decision)).name

/** A capability route under `fail_open` with late verdicts, over `judge` and `store`, built in the current scope. */
const lateRoute = (
  judgeModel: string,
  layers: { readonly judge: Layer.Layer<Judge.Judge>; readonly store: Layer.Layer<SessionStore.SessionStore> },
  late: {
    readonly trigger: ClassifierCascade.ClassifyTrigger
    readonly deadlineMs: number
    readonly lateMs: number
    readonly maxInFlight?: number
  }
) =>
  CapabilityRoute.make(routeOptions(target("judge", judgeModel), {
    classifyTrigger: late.trigger,
    judgeFailure: "fail_open",
    judgeTimeoutMs: Option.some(late.deadlineMs),
    lateVerdictMs: Option.some(late.lateMs),
    ...(late.maxInFlight === undefined ? {} : { maxLateVerdicts: late.maxInFlight })
  })).pipe(Effect.provide(routeServices(layers.judge, layers.store)))

// ---------------------------------------------------------------------------------------------
// The property: concurrent sessions, judge delays around the deadline, a small bound
// ---------------------------------------------------------------------------------------------

/** Even deadline, odd late window and odd delays, starts 2 ms apart: no two events share a tick. */
const deadlineMs = 10
const lateMs = 7

const scriptArb: FastCheck.Arbitrary<Script> = FastCheck.record({
  delayMs: FastCheck.integer({ min: 0, max: 12 }).map((k) => 2 * k + 1).filter((d) => d !== deadlineMs + lateMs),
  result: FastCheck.constantFrom<Result>("weak", "strong", "invalid", "fail")
})

const sampleArb = FastCheck.record({
  scripts: FastCheck.array(scriptArb, { minLength: 1, maxLength: 6 }),
  maxInFlight: FastCheck.integer({ min: 1, max: 3 }),
  trigger: FastCheck.constantFrom<"user_turn" | "new_session">("user_turn", "new_session")
})

describe("late verdicts (TestClock)", () => {
  it.effect.prop(
    "no request waits past the deadline; the bound holds; valid late verdicts are stored once and route the next request",
    { sample: sampleArb },
    ({ sample }) =>
      Effect.gen(function*() {
        const judgeModel = yield* uniqueJudgeModel
        const judge = yield* makeFakeJudge(judgeModel)
        const store = yield* makeRecordingStore
        const scope = yield* Scope.make()
        const route: Route = yield* lateRoute(judgeModel, { judge: judge.layer, store: store.layer }, {
          trigger: sample.trigger,
          deadlineMs,
          lateMs,
          maxInFlight: sample.maxInFlight
        }).pipe(Scope.extend(scope))
        const before = yield* lateCounts(judgeModel)

        const n = sample.scripts.length
        sample.scripts.forEach((script, i) => judge.scripts.set(`task-${i}`, script))
        const fibers: Array<Fiber.RuntimeFiber<Decision.Decision, unknown>> = []
        const end = 2 * (n - 1) + deadlineMs + lateMs + 2
        for (let now = 0; now <= end; now++) {
          if (now % 2 === 0 && now / 2 < n) {
            const i = now / 2
            fibers.push(
              yield* Effect.fork(
                RoutingFacts.observe(route.decide(request(`s${i}`, `task-${i}`)), RoutingFacts.ignored)
              )
            )
            yield* settle
          }
          // No request outlives its deadline: each is answered by its start + min(delay, deadline).
          for (const [i, fiber] of fibers.entries()) {
            const script = sample.scripts[i] ?? assert.fail(`no script ${i}`)
            if (now >= 2 * i + Math.min(script.delayMs, deadlineMs)) {
              assert.isTrue(Option.isSome(yield* Fiber.poll(fiber)), `request ${i} still waiting at ${now}`)
            }
          }
          // The bound: never more background calls (past their request's deadline, unfinished) than allowed.
          const background = judge.calls.filter((call) => call.start + deadlineMs <= now && Option.isNone(call.end))
          assert.isAtMost(background.length, sample.maxInFlight, `background calls at ${now}`)
          yield* tick
        }

        // Every call was given the deadline plus the late window.
        for (const call of judge.calls) assert.deepStrictEqual(call.timeoutMs, Option.some(deadlineMs + lateMs))

        const expected = { stored: 0, superseded: 0, invalid: 0, failed: 0, expired: 0, dropped: 0 }
        const storedLate = new Map<string, string>()
        const storedOnTime = new Map<string, string>()
        for (const [i, script] of sample.scripts.entries()) {
          const decision = yield* Fiber.join(fibers[i] ?? assert.fail(`no request ${i}`))
          const call = judge.calls.find((c) => c.task === `task-${i}`) ?? assert.fail(`no judge call ${i}`)
          if (script.delayMs < deadlineMs) {
            // On time: exactly as without late verdicts.
            assert.isFalse(call.interrupted)
            if (script.result === "weak" || script.result === "strong") {
              assert.strictEqual(decision.evidence.source, "llm-classifier", `request ${i}`)
              assert.strictEqual(tierOf(decision), script.result)
              storedOnTime.set(`s${i}`, script.result)
            } else {
              assert.strictEqual(decision.evidence.source, "fail-open", `request ${i}`)
            }
            continue
          }
          // Late: routed at the deadline as a fail_open timeout.
          assert.deepStrictEqual(decision.evidence, { source: "fail-open", reason: "timeout", judge_model: judgeModel })
          assert.strictEqual(tierOf(decision), "strong")
          if (call.interrupted) {
            // Dropped: aborted at its deadline, only when the route was at its bound then.
            assert.deepStrictEqual(call.end, Option.some(2 * i + deadlineMs))
            const busy = judge.calls.filter((c) =>
              c !== call && c.start + deadlineMs <= 2 * i + deadlineMs &&
              Option.getOrElse(c.end, () => Infinity) > 2 * i + deadlineMs
            )
            assert.strictEqual(busy.length, sample.maxInFlight, `request ${i} dropped below the bound`)
            expected.dropped++
          } else if (script.delayMs > deadlineMs + lateMs) {
            assert.deepStrictEqual(call.end, Option.some(2 * i + deadlineMs + lateMs))
            expected.expired++
          } else if (script.result === "invalid") {
            expected.invalid++
          } else if (script.result === "fail") {
            expected.failed++
          } else {
            expected.stored++
            storedLate.set(`s${i}`, script.result)
          }
        }
        const after = yield* lateCounts(judgeModel)
        assert.deepStrictEqual(
          Object.fromEntries(outcomes.map((outcome) => [outcome, (after[outcome] ?? 0) - (before[outcome] ?? 0)])),
          expected
        )

        // Writes: one per on-time valid verdict, one marked late per stored late verdict; nothing else.
        const lateWrites = store.writes.filter((write) => write.decision.late === true)
        assert.strictEqual(lateWrites.length, storedLate.size)
        assert.strictEqual(store.writes.length - lateWrites.length, storedOnTime.size)
        for (const [session, tier] of storedLate) {
          const writes = lateWrites.filter((write) => write.key.endsWith(`s:${session}`))
          assert.strictEqual(writes.length, 1, `late writes of ${session}`)
          assert.strictEqual(writes[0]?.decision.tier, tier)
        }

        // The next request of each session: a continuation reuses what was stored (under both triggers).
        const callsBefore = judge.calls.length
        for (const [i] of sample.scripts.entries()) {
          const session = `s${i}`
          const late = storedLate.get(session)
          const onTime = storedOnTime.get(session)
          if (late === undefined && onTime === undefined) continue
          const next = yield* RoutingFacts.observe(
            route.decide(request(session, `task-${i}`, "tool_continuation")),
            RoutingFacts.ignored
          )
          assert.deepStrictEqual(next.evidence, {
            source: "affinity",
            previous_source: late === undefined ? "llm-classifier" : "llm-classifier-late"
          })
          assert.strictEqual(tierOf(next), late ?? onTime)
        }
        assert.strictEqual(judge.calls.length, callsBefore, "no judge call for a stored session")
        yield* Scope.close(scope, Exit.void)
        return true
      }),
    { fastCheck: { numRuns: 60 }, timeout: 120_000 }
  )

  it.effect("a late verdict never overwrites a newer request's stored verdict (superseded)", () =>
    Effect.gen(function*() {
      const judgeModel = yield* uniqueJudgeModel
      const judge = yield* makeFakeJudge(judgeModel)
      const store = yield* makeRecordingStore
      judge.scripts.set("first", { delayMs: 15, result: "weak" })
      judge.scripts.set("second", { delayMs: 2, result: "strong" })
      const route = yield* lateRoute(judgeModel, { judge: judge.layer, store: store.layer }, {
        trigger: "user_turn",
        deadlineMs: 10,
        lateMs: 10
      })
      const before = yield* lateCounts(judgeModel)

      const first = yield* Effect.fork(RoutingFacts.observe(route.decide(request("s", "first")), RoutingFacts.ignored))
      yield* TestClock.adjust(10)
      assert.strictEqual(tierOf(yield* Fiber.join(first)), "strong") // fail-open at the deadline
      yield* TestClock.adjust(1)
      // A new user turn of the same session is judged on time (t = 11..13) and stored.
      const second = yield* Effect.fork(
        RoutingFacts.observe(route.decide(request("s", "second")), RoutingFacts.ignored)
      )
      yield* TestClock.adjust(2)
      assert.strictEqual((yield* Fiber.join(second)).evidence.source, "llm-classifier")
      // The first call's valid verdict lands at t = 15: older, so it is not stored.
      yield* TestClock.adjust(5)
      yield* settle
      const after = yield* lateCounts(judgeModel)
      assert.strictEqual((after["superseded"] ?? 0) - (before["superseded"] ?? 0), 1)
      assert.strictEqual((after["stored"] ?? 0) - (before["stored"] ?? 0), 0)
      assert.deepStrictEqual(store.writes.map((write) => write.decision), [{ target: "strong", tier: "strong" }])
      const next = yield* RoutingFacts.observe(
        route.decide(request("s", "second", "tool_continuation")),
        RoutingFacts.ignored
      )
      assert.deepStrictEqual(next.evidence, { source: "affinity", previous_source: "llm-classifier" })
      assert.strictEqual(tierOf(next), "strong")
    }).pipe(Effect.scoped))

  it.effect("custom mode shares it: a late label becomes the session's stored target", () =>
    Effect.gen(function*() {
      const judgeModel = yield* uniqueJudgeModel
      const judge = yield* makeFakeJudge(judgeModel)
      judge.scripts.set("task", { delayMs: 30, result: "weak" })
      const schema = { type: "object", properties: { route: { type: "string" } }, required: ["route"] }
      const compiled = JsonSchema.compile(schema)
      const selector = JsonPointer.parse("/route")
      assert.isTrue(Either.isRight(compiled) && Either.isRight(selector))
      if (Either.isLeft(compiled) || Either.isLeft(selector)) return
      const options: CustomRoute.Options = {
        id: "auto",
        name: "auto",
        judge: target("judge", judgeModel),
        targets: [weak, strong],
        defaultTarget: strong,
        selector: selector.right,
        prompt: "pick",
        responseSchema: schema,
        compiledSchema: compiled.right,
        maxOutputTokens: 64,
        recentTurnWindow: Option.none(),
        classifyTrigger: "new_session",
        messageHashFallback: false,
        judgeFailure: "fail_open",
        judgeTimeoutMs: Option.some(20),
        lateVerdictMs: Option.some(20)
      }
      const route = yield* CustomRoute.make(options).pipe(
        Effect.provide(routeServices(judge.layer, SessionStore.layerTest))
      )
      const first = yield* Effect.fork(RoutingFacts.observe(route.decide(request("s", "task")), RoutingFacts.ignored))
      yield* TestClock.adjust(20)
      const routed = yield* Fiber.join(first)
      assert.deepStrictEqual(routed.evidence, { source: "fail-open", reason: "timeout", judge_model: judgeModel })
      assert.strictEqual(tierOf(routed), "strong")
      yield* TestClock.adjust(10)
      yield* settle
      assert.strictEqual(yield* lateCount(judgeModel, "stored"), 1)
      const next = yield* RoutingFacts.observe(route.decide(request("s", "task")), RoutingFacts.ignored)
      assert.deepStrictEqual(next.evidence, { source: "affinity", previous_source: "llm-classifier-late" })
      assert.strictEqual(tierOf(next), "weak")
    }).pipe(Effect.scoped))

  it.effect("without a session identity the call is aborted at the deadline (nothing could be stored)", () =>
    Effect.gen(function*() {
      const judgeModel = yield* uniqueJudgeModel
      const judge = yield* makeFakeJudge(judgeModel)
      judge.scripts.set("task", { delayMs: 15, result: "weak" })
      const route = yield* lateRoute(judgeModel, { judge: judge.layer, store: SessionStore.layerTest }, {
        trigger: "user_turn",
        deadlineMs: 10,
        lateMs: 10
      })
      const fiber = yield* Effect.fork(
        RoutingFacts.observe(route.decide({ ...request("s", "task"), sessionId: Option.none() }), RoutingFacts.ignored)
      )
      yield* TestClock.adjust(10)
      yield* settle
      assert.strictEqual((yield* Fiber.join(fiber)).evidence.source, "fail-open")
      assert.deepStrictEqual(judge.calls.map((call) => [call.timeoutMs, call.end]), [[
        Option.some(10),
        Option.some(10)
      ]])
    }).pipe(Effect.scoped))

  it.effect("closing the route's scope interrupts every background call (a judge that never answers)", () =>
    Effect.gen(function*() {
      const judgeModel = yield* uniqueJudgeModel
      const judge = yield* makeFakeJudge(judgeModel)
      const store = yield* makeRecordingStore
      judge.scripts.set("a", { delayMs: 1_000_001, result: "weak" })
      judge.scripts.set("b", { delayMs: 1_000_001, result: "strong" })
      const scope = yield* Scope.make()
      const route = yield* lateRoute(judgeModel, { judge: judge.layer, store: store.layer }, {
        trigger: "new_session",
        deadlineMs: 10,
        lateMs: 1_000_000
      }).pipe(Scope.extend(scope))
      const a = yield* Effect.fork(RoutingFacts.observe(route.decide(request("sa", "a")), RoutingFacts.ignored))
      const b = yield* Effect.fork(RoutingFacts.observe(route.decide(request("sb", "b")), RoutingFacts.ignored))
      yield* TestClock.adjust(10)
      yield* settle
      assert.strictEqual((yield* Fiber.join(a)).evidence.source, "fail-open")
      assert.strictEqual((yield* Fiber.join(b)).evidence.source, "fail-open")
      yield* TestClock.adjust(1000)
      assert.deepStrictEqual(judge.calls.map((call) => call.interrupted), [false, false])
      assert.isTrue(judge.calls.every((call) => Option.isNone(call.end)), "both still running in the background")

      yield* Scope.close(scope, Exit.void)
      assert.deepStrictEqual(judge.calls.map((call) => call.interrupted), [true, true])
      assert.deepStrictEqual(judge.calls.map((call) => call.end), [Option.some(1010), Option.some(1010)])
      assert.deepStrictEqual(store.writes, [])
      // Nothing is left to fire: the clock can run past every deadline without a write or a count.
      yield* TestClock.adjust(2_000_000)
      yield* settle
      assert.deepStrictEqual(store.writes, [])
      const counts = yield* lateCounts(judgeModel)
      assert.isTrue(outcomes.every((outcome) => counts[outcome] === 0), JSON.stringify(counts))
    }))

  it.effect("the request's observer hears the deadline, marked, and then what the late call came to", () =>
    Effect.gen(function*() {
      const judgeModel = yield* uniqueJudgeModel
      const judge = yield* makeFakeJudge(judgeModel)
      judge.scripts.set("stored", { delayMs: 15, result: "weak" })
      judge.scripts.set("invalid", { delayMs: 13, result: "invalid" })
      judge.scripts.set("failed", { delayMs: 13, result: "fail" })
      judge.scripts.set("expired", { delayMs: 30, result: "weak" })
      judge.scripts.set("dropped", { delayMs: 30, result: "weak" })
      const route = yield* lateRoute(judgeModel, { judge: judge.layer, store: SessionStore.layerTest }, {
        trigger: "user_turn",
        deadlineMs: 10,
        lateMs: 10,
        maxInFlight: 1
      })
      const heard: Array<{ readonly task: string; readonly call: RoutingFacts.JudgeCall }> = []
      const routed = (task: string) =>
        Effect.fork(
          RoutingFacts.observe(route.decide(request(task, task)), {
            ...RoutingFacts.ignored,
            judgeCall: (call) => heard.push({ task, call })
          })
        )
      const pastDeadline = (task: string) =>
        Effect.gen(function*() {
          const fiber = yield* routed(task)
          yield* TestClock.adjust(10)
          assert.strictEqual(tierOf(yield* Fiber.join(fiber)), "strong")
        })
      for (const task of ["stored", "invalid", "failed"]) {
        yield* pastDeadline(task)
        yield* TestClock.adjust(5)
        yield* settle
      }
      // `expired` takes the route's one background slot, so `dropped` is aborted at its deadline.
      yield* pastDeadline("expired")
      yield* pastDeadline("dropped")
      yield* tick
      const facts = heard.map(({ call, task }) => [task, call.outcome, call.latencyMs, call.late, call.verdict?.source])
      assert.deepStrictEqual(facts, [
        ["stored", "timeout", 10, "continues", undefined],
        ["stored", "ok", 15, "stored", "llm-classifier"],
        ["invalid", "timeout", 10, "continues", undefined],
        ["invalid", "parse_error", 13, "invalid", undefined],
        ["failed", "timeout", 10, "continues", undefined],
        ["failed", "upstream_5xx", 13, "failed", undefined],
        ["expired", "timeout", 10, "continues", undefined],
        ["dropped", "timeout", 10, "dropped", undefined],
        ["expired", "timeout", 20, "expired", undefined]
      ])
    }).pipe(Effect.scoped))
})
