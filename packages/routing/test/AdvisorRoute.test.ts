import { assert, describe, it } from "@effect/vitest"
import * as UpstreamClient from "@switchyard-ts/client/UpstreamClient"
import { toHttp } from "@switchyard-ts/protocol/Errors"
import type { Message } from "@switchyard-ts/protocol/OpenAiChat"
import * as AdvisorPrompt from "@switchyard-ts/routing/AdvisorPrompt"
import * as AdvisorRoute from "@switchyard-ts/routing/AdvisorRoute"
import * as Decision from "@switchyard-ts/routing/Decision"
import * as Cause from "effect/Cause"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import * as Stream from "effect/Stream"
import {
  advisor,
  finalText,
  makeGate,
  maxReviewsArb,
  routed,
  runSchedule,
  runUnderClock,
  schedule,
  target,
  task
} from "./advisorModel.js"

// ---------------------------------------------------------------------------------------------
// Properties over failure schedules (sequential: they compare deltas of process-global metrics)
// ---------------------------------------------------------------------------------------------

describe("AdvisorRoute: failure schedules against the gate model", () => {
  it.effect.prop(
    "fail_open = true: never fails a request because of the advisor; budgets, the 3-failure cap and metrics follow the model",
    { steps: schedule, maxReviews: maxReviewsArb },
    ({ maxReviews, steps }) => runSchedule({ maxReviews, failOpen: true }, steps),
    { fastCheck: { numRuns: 60 }, timeout: 60_000 }
  )

  it.effect.prop(
    "fail_open = false: fails exactly the requests whose consult failed (transport/deadline/status → 502/504)",
    { steps: schedule, maxReviews: maxReviewsArb },
    ({ maxReviews, steps }) => runSchedule({ maxReviews, failOpen: false }, steps),
    { fastCheck: { numRuns: 60 }, timeout: 60_000 }
  )
})

// ---------------------------------------------------------------------------------------------
// Examples
// ---------------------------------------------------------------------------------------------

const asRecord = (value: unknown): Readonly<Record<string, unknown>> =>
  Predicate.isRecord(value) ? value : assert.fail(`expected an object, got ${JSON.stringify(value)}`)

const messagesOf = (body: Readonly<Record<string, unknown>>) => {
  const messages = body["messages"]
  return Array.isArray(messages) ? messages.map(asRecord) : assert.fail("no messages")
}

const stringOf = (
  value: unknown
): string => (typeof value === "string" ? value : assert.fail(`expected a string, got ${JSON.stringify(value)}`))

const complete = (
  gate: Effect.Effect.Success<ReturnType<typeof makeGate>>,
  messages: ReadonlyArray<Message> = task,
  session = Option.none<string>(),
  stalls = false
) =>
  Effect.flatMap(
    runUnderClock(gate.router.complete(routed(messages, session)), stalls),
    (exit) =>
      Exit.isSuccess(exit)
        ? Effect.succeed(exit.value)
        : Effect.fail(Option.getOrThrow(Cause.failureOption(exit.cause)))
  )

const advisorCalls = (gate: Effect.Effect.Success<ReturnType<typeof makeGate>>) =>
  Effect.map(gate.seen, (seen) => seen.filter((s) => s.host === "advisor.test"))

describe("AdvisorRoute: the consultation", () => {
  it.effect("the advisor gets our reviewer prompt, the client's instructions, the conversation and the turn", () =>
    Effect.gen(function*() {
      const gate = yield* makeGate({ advisorMaxTokens: 321 })
      yield* gate.script({ _tag: "final" }, { _tag: "approve" })
      yield* complete(gate)
      const [consult] = yield* advisorCalls(gate)
      const body = consult?.body ?? assert.fail("no consultation")
      assert.deepStrictEqual(Object.keys(body).sort(), ["max_completion_tokens", "messages", "model"])
      assert.strictEqual(body["model"], "advisor-model")
      assert.strictEqual(body["max_completion_tokens"], 321)
      const messages = messagesOf(body)
      assert.deepStrictEqual(messages.map((m) => m["role"]), ["system", "user"])
      assert.strictEqual(messages[0]?.["content"], AdvisorPrompt.reviewerSystemPrompt)
      const transcript = stringOf(messages[1]?.["content"])
      assert.include(transcript, "CLIENT-SYSTEM-PROMPT: you are a coding agent")
      assert.include(transcript, "TASK: make the parser accept empty input")
      assert.include(transcript, "export const parse = ...")
      assert.isTrue(transcript.endsWith(`## Proposed turn (under review)\n${finalText}`))
    }))

  it.effect("advisor_temperature and a custom reviewer prompt are sent when set", () =>
    Effect.gen(function*() {
      const gate = yield* makeGate({
        advisorTemperature: Option.some(0),
        reviewerSystemPrompt: Option.some("CUSTOM REVIEWER")
      })
      yield* complete(gate)
      const [consult] = yield* advisorCalls(gate)
      const body = consult?.body ?? assert.fail("no consultation")
      assert.strictEqual(body["temperature"], 0)
      assert.strictEqual(messagesOf(body)[0]?.["content"], "CUSTOM REVIEWER")
    }))

  it.effect("a long conversation is cut in the middle to transcript_max_chars, keeping the task and the latest work", () =>
    Effect.gen(function*() {
      const gate = yield* makeGate({ transcriptMaxChars: 600 })
      const long: ReadonlyArray<Message> = [
        ...task,
        ...Array.from(
          { length: 40 },
          (_, i): Message => ({ role: "tool", tool_call_id: "c1", content: `filler ${i} ${"x".repeat(50)}` })
        ),
        { role: "assistant", content: "LATEST-WORK: ran the tests" }
      ]
      yield* complete(gate, long)
      const [consult] = yield* advisorCalls(gate)
      const transcript = stringOf(messagesOf(consult?.body ?? {})[1]?.["content"])
      const [history = ""] = transcript.split("\n\n## Proposed turn (under review)\n")
      assert.isAtMost(history.length, 600)
      assert.include(history, "CLIENT-SYSTEM-PROMPT")
      assert.include(history, "LATEST-WORK: ran the tests")
      assert.match(history, /characters omitted from the middle of the transcript/)
      assert.notInclude(history, "filler 10 ")
    }))

  it.effect("a REDO with a custom prefix sends the prefix and the plan; the second answer is released unreviewed", () =>
    Effect.gen(function*() {
      const gate = yield* makeGate({ redoFeedbackPrefix: Option.some("REVIEW: "), maxReviews: 5 })
      yield* gate.script({ _tag: "final" }, { _tag: "redo", reply: "run the tests first", plan: "run the tests first" })
      const completed = yield* complete(gate)
      assert.deepStrictEqual(completed.decision.evidence, {
        source: "advisor",
        verdict: "redo",
        trigger: "no_tool_call",
        advisor_model: "advisor-model"
      })
      const executorBodies = (yield* gate.seen).filter((s) => s.host === "executor.test").map((s) => s.body)
      assert.strictEqual(executorBodies.length, 2)
      assert.deepStrictEqual(messagesOf(executorBodies[1] ?? {}).slice(-2), [
        { role: "assistant", content: finalText },
        { role: "user", content: "REVIEW: run the tests first" }
      ])
      assert.strictEqual((yield* advisorCalls(gate)).length, 1)
      assert.deepStrictEqual(yield* gate.route.budget(Option.none()), { reviews: 1, failedConsults: 0 })
    }))

  it.effect("an executor failure fails the request as it is: a context overflow stays a 400", () =>
    Effect.gen(function*() {
      const gate = yield* makeGate()
      yield* gate.script({ _tag: "overflow" }, { _tag: "approve" })
      const error = yield* Effect.flip(complete(gate))
      assert.strictEqual(error._tag, "UpstreamStatus")
      assert.strictEqual(toHttp(error).status, 400)
      assert.strictEqual((yield* advisorCalls(gate)).length, 0)
      assert.deepStrictEqual(yield* gate.route.budget(Option.none()), { reviews: 0, failedConsults: 0 })
    }))
})

describe("AdvisorRoute: triggers", () => {
  it.effect("no_tool_call waits for gate_min_tool_results tool results", () =>
    Effect.gen(function*() {
      const gate = yield* makeGate({ gateMinToolResults: 2, maxReviews: 5 })
      const skipped = yield* complete(gate)
      assert.deepStrictEqual(skipped.decision.evidence, {
        source: "advisor",
        verdict: "skipped",
        skipped: "no_trigger",
        advisor_model: "advisor-model"
      })
      const more: ReadonlyArray<Message> = [...task, { role: "tool", tool_call_id: "c1", content: "second result" }]
      const reviewed = yield* complete(gate, more)
      assert.strictEqual(
        reviewed.decision.evidence.source === "advisor" && "verdict" in reviewed.decision.evidence
          ? reviewed.decision.evidence.verdict
          : "",
        "approve"
      )
      assert.strictEqual((yield* advisorCalls(gate)).length, 1)
    }))

  it.effect("pattern reviews a turn whose visible text matches (searched, not anchored), whatever its tool calls", () =>
    Effect.gen(function*() {
      const gate = yield* makeGate({
        gateTrigger: "pattern",
        gateTriggerPattern: Option.some(/tests? pass/u),
        maxReviews: 5
      })
      yield* gate.script({ _tag: "text", content: "I think the work is complete." }, { _tag: "approve" })
      const plain = yield* complete(gate)
      assert.deepStrictEqual(plain.decision.evidence, {
        source: "advisor",
        verdict: "skipped",
        skipped: "no_trigger",
        advisor_model: "advisor-model"
      })
      yield* gate.script({ _tag: "final" }, { _tag: "approve" })
      const matched = yield* complete(gate)
      assert.deepStrictEqual(matched.decision.evidence, {
        source: "advisor",
        verdict: "approve",
        trigger: "pattern",
        advisor_model: "advisor-model"
      })
      assert.strictEqual((yield* advisorCalls(gate)).length, 1)
    }))

  it.effect("stall reviews a tool turn once per conversation after gate_stall_turns assistant turns", () =>
    Effect.gen(function*() {
      const gate = yield* makeGate({ gateStallTurns: 2, maxReviews: 5 })
      yield* gate.script({ _tag: "tool" }, { _tag: "approve" })
      const first = yield* complete(gate)
      assert.deepStrictEqual(first.decision.evidence, {
        source: "advisor",
        verdict: "approve",
        trigger: "stall",
        advisor_model: "advisor-model"
      })
      assert.deepStrictEqual(first.completion.choices[0]?.message.tool_calls?.map((c) => c.id), ["call-9"])
      yield* gate.script({ _tag: "tool" }, { _tag: "approve" })
      const again = yield* complete(gate)
      assert.deepStrictEqual(again.decision.evidence, {
        source: "advisor",
        verdict: "skipped",
        skipped: "no_trigger",
        advisor_model: "advisor-model"
      })
      // Another conversation (another opening task) stalls on its own.
      const other: ReadonlyArray<Message> = task.map((
        m
      ) => (m.role === "user" ? { role: "user", content: "TASK: another one" } : m))
      yield* gate.script({ _tag: "tool" }, { _tag: "approve" })
      const third = yield* complete(gate, other)
      assert.strictEqual("trigger" in third.decision.evidence ? third.decision.evidence.trigger : "", "stall")
      assert.strictEqual((yield* advisorCalls(gate)).length, 2)
    }))
})

describe("AdvisorRoute: budgets and scopes", () => {
  it.effect("max_reviews per session scope; without a session id one instance-wide scope", () =>
    Effect.gen(function*() {
      const gate = yield* makeGate({ maxReviews: 1 })
      const s1 = yield* complete(gate, task, Option.some("s1"))
      assert.strictEqual("verdict" in s1.decision.evidence ? s1.decision.evidence.verdict : "", "approve")
      const s1Again = yield* complete(gate, task, Option.some("s1"))
      assert.deepStrictEqual(s1Again.decision.evidence, {
        source: "advisor",
        verdict: "skipped",
        skipped: "budget_exhausted",
        advisor_model: "advisor-model"
      })
      // An exhausted scope is a passthrough: the Router made the answer call, nothing was produced.
      assert.isTrue(Option.isNone(Decision.answerOf(s1Again.decision)))
      const s2 = yield* complete(gate, task, Option.some("s2"))
      assert.strictEqual("verdict" in s2.decision.evidence ? s2.decision.evidence.verdict : "", "approve")
      yield* complete(gate)
      const instanceAgain = yield* complete(gate)
      assert.strictEqual(
        "skipped" in instanceAgain.decision.evidence ? instanceAgain.decision.evidence.skipped : "",
        "budget_exhausted"
      )
      assert.strictEqual((yield* advisorCalls(gate)).length, 3)
    }))

  it.effect("a session's final request (session_final) drops its scope once routed: the next session of that id starts fresh", () =>
    Effect.gen(function*() {
      const gate = yield* makeGate({ maxReviews: 1 })
      const asFinal = (request: ReturnType<typeof routed>, value: string) => ({
        ...request,
        headers: { "x-switchyard-session-final": value }
      })
      yield* complete(gate, task, Option.some("s1"))
      assert.deepStrictEqual(yield* gate.route.budget(Option.some("s1")), { reviews: 1, failedConsults: 0 })
      // "false" keeps the scope; a final request is routed with the scope as it is (exhausted), then drops it
      const kept = yield* runUnderClock(gate.router.complete(asFinal(routed(task, Option.some("s1")), "false")), false)
      assert.isTrue(Exit.isSuccess(kept))
      assert.deepStrictEqual(yield* gate.route.budget(Option.some("s1")), { reviews: 1, failedConsults: 0 })
      const last = yield* runUnderClock(gate.router.complete(asFinal(routed(task, Option.some("s1")), "TRUE")), false)
      assert.isTrue(
        Exit.isSuccess(last) && "skipped" in last.value.decision.evidence &&
          last.value.decision.evidence.skipped === "budget_exhausted"
      )
      assert.deepStrictEqual(yield* gate.route.budget(Option.some("s1")), { reviews: 0, failedConsults: 0 })
      const fresh = yield* complete(gate, task, Option.some("s1"))
      assert.strictEqual("verdict" in fresh.decision.evidence ? fresh.decision.evidence.verdict : "", "approve")
      // the instance-wide scope is never dropped
      yield* complete(gate)
      yield* runUnderClock(gate.router.complete(asFinal(routed(task), "true")), false)
      assert.deepStrictEqual(yield* gate.route.budget(Option.none()), { reviews: 1, failedConsults: 0 })
    }))

  it.effect("after 3 failed consults a scope is no longer consulted; other scopes still are", () =>
    Effect.gen(function*() {
      const gate = yield* makeGate({ maxReviews: 10 })
      yield* gate.script({ _tag: "final" }, { _tag: "5xx" })
      for (let i = 0; i < 3; i++) {
        const released = yield* complete(gate, task, Option.some("s1"))
        assert.deepStrictEqual(released.decision.evidence, {
          source: "advisor",
          reason: "upstream_5xx",
          trigger: "no_tool_call",
          advisor_model: "advisor-model"
        })
      }
      assert.deepStrictEqual(yield* gate.route.budget(Option.some("s1")), { reviews: 0, failedConsults: 3 })
      yield* gate.script({ _tag: "final" }, { _tag: "approve" })
      const capped = yield* complete(gate, task, Option.some("s1"))
      assert.deepStrictEqual(capped.decision.evidence, {
        source: "advisor",
        verdict: "skipped",
        skipped: "consult_failures",
        advisor_model: "advisor-model"
      })
      assert.strictEqual((yield* advisorCalls(gate)).length, 3)
      yield* complete(gate, task, Option.some("s2"))
      assert.strictEqual((yield* advisorCalls(gate)).length, 4)
    }))

  it.effect("an open advisor breaker: fail_open releases (circuit_open), fail_open = false is a 503", () =>
    Effect.gen(function*() {
      const breakerAdvisor = {
        ...advisor,
        client: { ...advisor.client, breaker: Option.some({ failureThreshold: 1, cooldownMs: 60_000 }) }
      }
      for (const failOpen of [true, false]) {
        const gate = yield* makeGate({ advisor: breakerAdvisor, failOpen, maxReviews: 5 })
        yield* gate.script({ _tag: "final" }, { _tag: "5xx" })
        yield* Effect.exit(complete(gate))
        const refused = yield* Effect.exit(complete(gate))
        if (failOpen) {
          const completed = Exit.isSuccess(refused) ? refused.value : assert.fail("expected an answer")
          assert.deepStrictEqual(completed.decision.evidence, {
            source: "advisor",
            reason: "circuit_open",
            trigger: "no_tool_call",
            advisor_model: "advisor-model"
          })
        } else {
          const error = Exit.isFailure(refused)
            ? Option.getOrThrow(Cause.failureOption(refused.cause))
            : assert.fail("expected a failure")
          assert.strictEqual(error._tag, "AdvisorUnavailable")
          assert.strictEqual(toHttp(error).status, 503)
        }
        assert.strictEqual((yield* advisorCalls(gate)).length, 1)
        assert.deepStrictEqual(yield* gate.route.budget(Option.none()), { reviews: 0, failedConsults: 2 })
      }
    }))

  it.effect("a stalled advisor under fail_open = false is a 504 naming the advisor; the review is refunded", () =>
    Effect.gen(function*() {
      const gate = yield* makeGate({ failOpen: false })
      yield* gate.script({ _tag: "final" }, { _tag: "stall" })
      const error = yield* Effect.flip(complete(gate, task, Option.none(), true))
      assert.strictEqual(error._tag, "AdvisorUnavailable")
      const mapping = toHttp(error)
      assert.deepStrictEqual([mapping.status, mapping.code], [504, "upstream_timeout"])
      assert.strictEqual(mapping.message, "advisor advisor-model did not finish within 3000 ms, retries included")
      assert.deepStrictEqual(yield* gate.route.budget(Option.none()), { reviews: 0, failedConsults: 1 })
    }))

  it.effect("a route's budget view does not create scopes", () =>
    Effect.gen(function*() {
      const gate = yield* makeGate()
      assert.deepStrictEqual(yield* gate.route.budget(Option.some("never-seen")), { reviews: 0, failedConsults: 0 })
      assert.strictEqual(AdvisorRoute.maxFailedConsults, 3)
    }))
})

describe("AdvisorRoute through the Router", () => {
  it.effect("a streaming caller gets the released turn replayed, with usage when asked", () =>
    Effect.gen(function*() {
      const gate = yield* makeGate()
      const streamed = yield* gate.router.stream(
        routed(task, Option.none(), { stream: true, stream_options: { include_usage: true } })
      )
      assert.deepStrictEqual(Option.map(streamed.served, (t) => t.name), Option.some("executor"))
      const chunks = Chunk.toReadonlyArray(
        yield* Stream.runCollect(UpstreamClient.chunksOf(streamed.pieces))
      )
      assert.strictEqual(chunks.map((c) => c.choices[0]?.delta.content ?? "").join(""), finalText)
      assert.strictEqual(chunks[1]?.choices[0]?.finish_reason, "stop")
      assert.deepStrictEqual(chunks[2]?.usage, { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 })
      assert.strictEqual(chunks.length, 3)
    }))

  it.effect("decide runs the gate and carries the released answer", () =>
    Effect.gen(function*() {
      const gate = yield* makeGate()
      const decision = yield* gate.router.decide(routed())
      assert.deepStrictEqual(decision.route, { id: "gate", name: "gate", algorithm: "advisor_gate" })
      assert.deepStrictEqual(Option.map(Decision.selected(decision), (t) => t.name), Option.some("executor"))
      assert.strictEqual(Option.getOrThrow(Decision.answerOf(decision)).choices[0]?.message.content, finalText)
    }))

  it.effect("targets are the executor only; the advisor is never an answer target", () =>
    Effect.gen(function*() {
      const gate = yield* makeGate({ executor: target("executor", "executor-model") })
      assert.deepStrictEqual(gate.route.targets.map((t) => t.name), ["executor"])
      assert.strictEqual(gate.route.algorithm, "advisor_gate")
    }))
})
