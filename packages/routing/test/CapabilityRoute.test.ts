import { assert, describe, it } from "@effect/vitest"
import { toHttp } from "@switchyard-ts/protocol/Errors"
import type { Message } from "@switchyard-ts/protocol/OpenAiChat"
import type * as CapabilityRoute from "@switchyard-ts/routing/CapabilityRoute"
import * as Decision from "@switchyard-ts/routing/Decision"
import * as JudgePrompt from "@switchyard-ts/routing/JudgePrompt"
import type { RouteFailure } from "@switchyard-ts/routing/Route"
import * as RoutingFacts from "@switchyard-ts/routing/RoutingFacts"
import * as Verdict from "@switchyard-ts/routing/Verdict"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FastCheck from "effect/FastCheck"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import * as TestClock from "effect/TestClock"
import {
  buildRoute,
  conversation,
  decideOnce,
  failOpenCounts,
  postures,
  routed,
  runSchedule,
  schedule,
  triggers,
  uniqueJudgeModel
} from "./capabilityModel.js"
import { makeScriptedJudge, Outcome, routeOptions, target } from "./scriptedJudge.js"

// ---------------------------------------------------------------------------------------------
// Properties (the retrying-client variant is in CapabilityRoute.retries.test.ts)
// ---------------------------------------------------------------------------------------------

describe.concurrent("CapabilityRoute: failure schedules against the posture-table model", () => {
  for (const trigger of triggers) {
    for (const posture of postures) {
      it.effect.prop(
        `${trigger} × ${posture} × maxRetries 0`,
        { steps: schedule },
        ({ steps }) => runSchedule({ trigger, posture, maxRetries: 0 }, steps),
        { fastCheck: { numRuns: 100 }, timeout: 120_000 }
      )
    }
  }

  it.effect.prop(
    "fail_open never fails a request, whatever the schedule and trigger",
    { steps: schedule, trigger: FastCheck.constantFrom(...triggers) },
    ({ steps, trigger }) =>
      Effect.gen(function*() {
        const judge = yield* makeScriptedJudge
        const route = yield* buildRoute(
          routeOptions(target("judge", yield* uniqueJudgeModel), {
            classifyTrigger: trigger,
            judgeFailure: "fail_open"
          }),
          judge.layer
        )
        for (const step of steps) {
          yield* judge.script([step.outcome])
          const request = routed(conversation(step.kind, "task"), Option.fromNullable(step.session))
          const exit = yield* decideOnce(route, request, step.outcome, 0)
          if (Exit.isFailure(exit)) return false
        }
        return true
      }),
    { fastCheck: { numRuns: 100 }, timeout: 120_000 }
  )
})

// ---------------------------------------------------------------------------------------------
// Examples
// ---------------------------------------------------------------------------------------------

const user = (content: string): Message => ({ role: "user", content })
const assistant = (content: string): Message => ({ role: "assistant", content })

const weakVerdict = Outcome.verdict(0.9, "supported", "SUP-1")
const strongVerdict = Outcome.verdict(0.1, "unsupported", "LIM-2")

const decisionOf = (exit: Exit.Exit<Decision.Decision, RouteFailure>): Decision.Decision =>
  Exit.isSuccess(exit) ? exit.value : assert.fail(`expected a decision, got ${String(exit)}`)

const summary = (decision: Decision.Decision) => ({
  target: Option.match(Decision.selected(decision), { onNone: () => "none", onSome: (t) => t.name }),
  source: decision.evidence.source
})

/** A route over a fresh scripted judge; `run` decides one request with the given judge script. */
const harness = (overrides: Partial<CapabilityRoute.Options>, judgeOptions: { readonly maxRetries?: number } = {}) =>
  Effect.gen(function*() {
    const judgeModel = yield* uniqueJudgeModel
    const judge = yield* makeScriptedJudge
    const judgeTarget = target("judge", judgeModel, {
      maxRetries: judgeOptions.maxRetries ?? 0,
      timeoutMs: Option.some(3000)
    })
    const route = yield* buildRoute(routeOptions(judgeTarget, overrides), judge.layer)
    const run = (
      messages: ReadonlyArray<Message>,
      outcomes: ReadonlyArray<Outcome>,
      session: Option.Option<string> = Option.none()
    ) =>
      Effect.gen(function*() {
        yield* judge.script(outcomes)
        const fiber = yield* Effect.fork(
          RoutingFacts.observe(route.decide(routed(messages, session)), RoutingFacts.ignored)
        )
        // The route may first wait on real async work (the message hash is a WebCrypto digest), and
        // arm the judge's deadline only then: move the test clock until the decision is made, letting
        // the event loop turn in between (one adjustment is a race under load).
        while (Option.isNone(yield* Fiber.poll(fiber))) {
          yield* TestClock.adjust("3 seconds")
          yield* Effect.promise(() => new Promise<void>((resolve) => setImmediate(resolve)))
        }
        return yield* Fiber.await(fiber)
      })
    return { judge, judgeModel, run }
  })

describe("CapabilityRoute: new_session with message_hash_fallback", () => {
  it.effect("requests without a session id share a decision when they open with the same text", () =>
    Effect.gen(function*() {
      const { judge, run } = yield* harness({ classifyTrigger: "new_session", messageHashFallback: true })
      const first = decisionOf(yield* run([user("rename the helper in utils.ts")], [weakVerdict]))
      assert.deepStrictEqual(summary(first), { target: "weak", source: "llm-classifier" })
      // Same opening text, a later turn: the stored decision holds, the judge is not called.
      const second = decisionOf(
        yield* run([user("rename the helper in utils.ts"), assistant("done"), user("now the tests")], [strongVerdict])
      )
      assert.deepStrictEqual(summary(second), { target: "weak", source: "affinity" })
      assert.strictEqual(yield* judge.calls, 1)
      // A different opening text is another session: judged, and its own decision is stored.
      const other = decisionOf(yield* run([user("port the build to bazel")], [strongVerdict]))
      assert.deepStrictEqual(summary(other), { target: "strong", source: "llm-classifier" })
      assert.strictEqual(yield* judge.calls, 2)
      const otherAgain = decisionOf(
        yield* run([user("port the build to bazel"), assistant("ok"), user("go")], [weakVerdict])
      )
      assert.deepStrictEqual(summary(otherAgain), { target: "strong", source: "affinity" })
      assert.strictEqual(yield* judge.calls, 2)
      // A caller session id takes precedence over the hash: nothing is stored for it yet.
      const explicit = decisionOf(
        yield* run([user("rename the helper in utils.ts")], [strongVerdict], Option.some("s-42"))
      )
      assert.deepStrictEqual(summary(explicit), { target: "strong", source: "llm-classifier" })
      assert.strictEqual(yield* judge.calls, 3)
    }))

  it.effect("without message_hash_fallback, requests without a session id are judged every time", () =>
    Effect.gen(function*() {
      const { judge, run } = yield* harness({ classifyTrigger: "new_session", messageHashFallback: false })
      const first = decisionOf(yield* run([user("rename the helper in utils.ts")], [weakVerdict]))
      const second = decisionOf(yield* run([user("rename the helper in utils.ts")], [strongVerdict]))
      assert.deepStrictEqual([summary(first), summary(second)], [
        { target: "weak", source: "llm-classifier" },
        { target: "strong", source: "llm-classifier" }
      ])
      assert.strictEqual(yield* judge.calls, 2)
    }))

  it.effect("under user_turn the hash keys the session too: a continuation keeps the tier, a new user turn is judged", () =>
    Effect.gen(function*() {
      const { judge, run } = yield* harness({ classifyTrigger: "user_turn", messageHashFallback: true })
      yield* run([user("rename the helper in utils.ts")], [weakVerdict])
      const continuation = decisionOf(
        yield* run(conversation("tool_continuation", "rename the helper in utils.ts"), [strongVerdict])
      )
      assert.deepStrictEqual(summary(continuation), { target: "weak", source: "affinity" })
      assert.strictEqual(yield* judge.calls, 1)
      const nextTurn = decisionOf(
        yield* run([user("rename the helper in utils.ts"), assistant("done"), user("now the tests")], [strongVerdict])
      )
      assert.deepStrictEqual(summary(nextTurn), { target: "strong", source: "llm-classifier" })
      assert.strictEqual(yield* judge.calls, 2)
    }))

  it.effect("a failed judgement under the hash identity stores nothing: the next request is judged again", () =>
    Effect.gen(function*() {
      const { judge, judgeModel, run } = yield* harness({
        classifyTrigger: "new_session",
        messageHashFallback: true,
        judgeFailure: "fail_open"
      })
      const failed = decisionOf(yield* run([user("fix the flaky test")], [Outcome.stall]))
      assert.deepStrictEqual(failed.evidence, { source: "fail-open", reason: "timeout", judge_model: judgeModel })
      const next = decisionOf(yield* run([user("fix the flaky test")], [weakVerdict]))
      assert.deepStrictEqual(summary(next), { target: "weak", source: "llm-classifier" })
      assert.strictEqual(yield* judge.calls, 2)
    }))
})

const asRecord = (value: unknown): Readonly<Record<string, unknown>> =>
  Predicate.isRecord(value) ? value : assert.fail(`expected an object, got ${JSON.stringify(value)}`)

const messagesOf = (body: Readonly<Record<string, unknown>>): ReadonlyArray<Readonly<Record<string, unknown>>> => {
  const messages = body["messages"]
  return Array.isArray(messages) ? messages.map(asRecord) : assert.fail("the judge body has no messages")
}

const stringOf = (
  value: unknown
): string => (typeof value === "string" ? value : assert.fail(`expected a string, got ${JSON.stringify(value)}`))

describe("CapabilityRoute: the judge request", () => {
  const clientConversation: ReadonlyArray<Message> = [
    { role: "system", content: "CLIENT-SYSTEM-PROMPT: you are a helpful agent" },
    user("TASK: add a --dry-run flag to the deploy script"),
    assistant("I added the flag."),
    { role: "developer", content: "DEVELOPER-NOTE" },
    user("LATEST: also document it in the README")
  ]

  const sentBody = (overrides: Partial<CapabilityRoute.Options>) =>
    Effect.gen(function*() {
      const { judge, judgeModel, run } = yield* harness(overrides)
      decisionOf(yield* run(clientConversation, [weakVerdict]))
      const requests = yield* judge.requests
      assert.strictEqual(requests.length, 1)
      const [request] = requests
      if (request === undefined) return assert.fail("no judge request")
      assert.strictEqual(request.url, "http://judge.test/v1/chat/completions")
      return { body: asRecord(request.body), judgeModel }
    })

  it.effect("json_schema with the packaged rubric: model, messages, response_format, max_completion_tokens", () =>
    Effect.gen(function*() {
      const { body, judgeModel } = yield* sentBody({ responseFormatType: "json_schema", maxOutputTokens: 321 })
      assert.deepStrictEqual(Object.keys(body).sort(), [
        "max_completion_tokens",
        "messages",
        "model",
        "response_format"
      ])
      assert.strictEqual(body["model"], judgeModel)
      assert.strictEqual(body["max_completion_tokens"], 321)
      assert.deepStrictEqual(body["response_format"], {
        type: "json_schema",
        json_schema: {
          name: "CapabilityClassifierDecision",
          strict: true,
          schema: {
            type: "object",
            additionalProperties: false,
            required: ["crux", "primary_rule", "capability_boundary", "p_solve"],
            properties: {
              crux: { type: "string", minLength: 1 },
              primary_rule: {
                type: "string",
                enum: ["SUP-1", "SUP-2", "SUP-3", "SUP-4", "SUP-5", "UNC-1", "UNC-2", "LIM-1", "LIM-2", "none"]
              },
              capability_boundary: { type: "string", enum: ["supported", "uncertain", "unmatched", "unsupported"] },
              p_solve: { type: "number", minimum: 0, maximum: 1 }
            }
          }
        }
      })
      const messages = messagesOf(body)
      assert.deepStrictEqual(messages.map((m) => m["role"]), ["system", "user"])
      assert.strictEqual(messages[0]?.["content"], JudgePrompt.capabilityRubric)
      const view = stringOf(messages[1]?.["content"])
      assert.include(view, "TASK: add a --dry-run flag to the deploy script")
      assert.include(view, "LATEST: also document it in the README")
      for (const hidden of ["CLIENT-SYSTEM-PROMPT", "DEVELOPER-NOTE"]) {
        assert.notInclude(JSON.stringify(body), hidden)
      }
    }))

  it.effect("a custom prompt replaces the rubric", () =>
    Effect.gen(function*() {
      const { body } = yield* sentBody({ prompt: Option.some("CUSTOM RUBRIC: judge carefully") })
      const system = stringOf(messagesOf(body)[0]?.["content"])
      assert.strictEqual(system, "CUSTOM RUBRIC: judge carefully")
      assert.deepStrictEqual(body["response_format"], Verdict.responseFormatJsonSchema)
    }))

  it.effect("json_object sends json_object mode and appends the verdict schema to the prompt", () =>
    Effect.gen(function*() {
      for (const prompt of [Option.some("CUSTOM RUBRIC"), Option.none<string>()]) {
        const { body } = yield* sentBody({ responseFormatType: "json_object", prompt, maxOutputTokens: 64 })
        assert.deepStrictEqual(body["response_format"], { type: "json_object" })
        assert.strictEqual(body["max_completion_tokens"], 64)
        const system = stringOf(messagesOf(body)[0]?.["content"])
        const base = Option.getOrElse(prompt, () => JudgePrompt.capabilityRubric)
        assert.isTrue(system.startsWith(base), "the prompt comes first")
        const rest = system.slice(base.length)
        assert.include(rest, JudgePrompt.jsonObjectInstruction)
        const schemaText = rest.slice(rest.indexOf("{"))
        const schema: unknown = JSON.parse(schemaText)
        assert.deepStrictEqual(schema, asRecord(JSON.parse(JSON.stringify(Verdict.jsonSchema))))
        assert.notInclude(system, "CLIENT-SYSTEM-PROMPT")
      }
    }))

  it.effect("a trailing window shows recent messages, still without client instructions", () =>
    Effect.gen(function*() {
      const { body } = yield* sentBody({ recentTurnWindow: Option.some(2) })
      const view = stringOf(messagesOf(body)[1]?.["content"])
      assert.include(view, "TASK: add a --dry-run flag")
      assert.include(view, "I added the flag.")
      assert.include(view, "LATEST: also document it")
      assert.notInclude(view, "DEVELOPER-NOTE")
      assert.notInclude(view, "CLIENT-SYSTEM-PROMPT")
    }))
})

describe("CapabilityRoute: retries inside the judge deadline", () => {
  it.effect("a 503 then a valid verdict with maxRetries 1 gives llm-classifier evidence", () =>
    Effect.gen(function*() {
      const { judge, judgeModel, run } = yield* harness({ judgeFailure: "error" }, { maxRetries: 1 })
      const before = yield* failOpenCounts(judgeModel)
      const decision = decisionOf(yield* run([user("fix the typo")], [Outcome.status5xx, weakVerdict]))
      assert.deepStrictEqual(decision.evidence, {
        source: "llm-classifier",
        score: 0.9,
        threshold: 0.5,
        boundary: "supported"
      })
      assert.deepStrictEqual(summary(decision), { target: "weak", source: "llm-classifier" })
      assert.strictEqual(yield* judge.calls, 2)
      assert.deepStrictEqual(yield* failOpenCounts(judgeModel), before)
    }))

  it.effect("the same 503 with maxRetries 0 fails the request under error and fails open under fail_open", () =>
    Effect.gen(function*() {
      const failing = yield* harness({ judgeFailure: "error" })
      const exit = yield* failing.run([user("fix the typo")], [Outcome.status5xx, weakVerdict])
      const error = Exit.isFailure(exit)
        ? Option.getOrThrow(Cause.failureOption(exit.cause))
        : assert.fail("expected a failure")
      assert.strictEqual(error._tag, "JudgeUnavailable")
      assert.strictEqual(toHttp(error).status, 502)
      assert.strictEqual(yield* failing.judge.calls, 1)
      const open = yield* harness({ judgeFailure: "fail_open" })
      const decision = decisionOf(yield* open.run([user("fix the typo")], [Outcome.status5xx, weakVerdict]))
      assert.deepStrictEqual(decision.evidence, {
        source: "fail-open",
        reason: "upstream_5xx",
        judge_model: open.judgeModel
      })
    }))

  it.effect("a stalled first attempt is not retried past the deadline: 504-class failure under error", () =>
    Effect.gen(function*() {
      const { judge, run } = yield* harness({ judgeFailure: "error" }, { maxRetries: 3 })
      const exit = yield* run([user("fix the typo")], [Outcome.stall, weakVerdict])
      const error = Exit.isFailure(exit)
        ? Option.getOrThrow(Cause.failureOption(exit.cause))
        : assert.fail("expected a failure")
      assert.strictEqual(error._tag, "JudgeUnavailable")
      if (error._tag === "JudgeUnavailable") {
        assert.strictEqual(error.failure._tag, "DeadlineExceeded")
        assert.strictEqual(toHttp(error).status, 504)
      }
      assert.strictEqual(yield* judge.calls, 1)
    }))
})
