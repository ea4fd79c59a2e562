/**
 * Test support for advisor routes: a scripted upstream with two hosts (`executor.test`,
 * `advisor.test`) behind the REAL `UpstreamClient.layer`, an advisor route and a `Router` over it,
 * an independent model of the gate (scopes, budgets, the 3-failure cap, the posture), generators
 * of failure schedules, and `runSchedule`, which drives a schedule through `Router.complete` under
 * `TestClock` and checks every request against the model.
 */
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientError from "@effect/platform/HttpClientError"
import type * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as HttpClientResponse from "@effect/platform/HttpClientResponse"
import { assert } from "@effect/vitest"
import type { Target } from "@switchyard-ts/client/Target"
import * as UpstreamClient from "@switchyard-ts/client/UpstreamClient"
import { toHttp } from "@switchyard-ts/protocol/Errors"
import { SessionId } from "@switchyard-ts/protocol/Ids"
import type { Message } from "@switchyard-ts/protocol/OpenAiChat"
import * as AdvisorPrompt from "@switchyard-ts/routing/AdvisorPrompt"
import * as AdvisorRoute from "@switchyard-ts/routing/AdvisorRoute"
import * as Decision from "@switchyard-ts/routing/Decision"
import type * as Evidence from "@switchyard-ts/routing/Evidence"
import * as Metrics from "@switchyard-ts/routing/Metrics"
import type { RoutedRequest } from "@switchyard-ts/routing/Route"
import * as Router from "@switchyard-ts/routing/Router"
import * as Stats from "@switchyard-ts/routing/Stats"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FastCheck from "effect/FastCheck"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import * as Ref from "effect/Ref"
import * as TestClock from "effect/TestClock"
import { memoryStore, routeServices, unusedJudge } from "./harness.js"

// ---------------------------------------------------------------------------------------------
// The scripted upstream
// ---------------------------------------------------------------------------------------------

/** What the executor answers: a final text turn, a tool-call turn, or a text turn with a custom text. */
export type ExecutorTurn =
  | { readonly _tag: "final" }
  | { readonly _tag: "tool" }
  | { readonly _tag: "text"; readonly content: string }
  | { readonly _tag: "overflow" }

/** What the advisor upstream does with one consultation. */
export type AdvisorOutcome =
  | { readonly _tag: "approve" }
  /** `REDO: <reply>`; `plan` is what the executor should receive. */
  | { readonly _tag: "redo"; readonly reply: string; readonly plan: string }
  | { readonly _tag: "reply"; readonly content: string }
  | { readonly _tag: "garbage" }
  | { readonly _tag: "invalid_body" }
  | { readonly _tag: "stall" }
  | { readonly _tag: "refuse" }
  | { readonly _tag: "5xx" }
  | { readonly _tag: "4xx" }

export const finalText = "All done: the parser now handles empty input, and the tests pass."
export const revisedText = "Revised: I added the missing regression test and re-ran the suite."

/** A request the scripted upstream saw. */
export interface Seen {
  readonly host: string
  readonly body: Readonly<Record<string, unknown>>
}

const decoder = new TextDecoder()

const json = (request: HttpClientRequest.HttpClientRequest, status: number, body: unknown) =>
  HttpClientResponse.fromWeb(
    request,
    new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } })
  )

const completion = (model: string, message: Readonly<Record<string, unknown>>, finish: string) => ({
  id: `chatcmpl-${model}`,
  object: "chat.completion",
  created: 1,
  model,
  choices: [{ index: 0, message: { role: "assistant", ...message }, finish_reason: finish }],
  usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 }
})

const executorResponse = (request: HttpClientRequest.HttpClientRequest, turn: ExecutorTurn | "revised") => {
  if (turn === "revised") return json(request, 200, completion("executor-model", { content: revisedText }, "stop"))
  switch (turn._tag) {
    case "final":
      return json(request, 200, completion("executor-model", { content: finalText }, "stop"))
    case "text":
      return json(request, 200, completion("executor-model", { content: turn.content }, "stop"))
    case "overflow":
      return json(request, 400, {
        error: {
          message: "This model's maximum context length is 8192 tokens.",
          type: "invalid_request_error",
          code: "context_length_exceeded"
        }
      })
    case "tool":
      return json(
        request,
        200,
        completion("executor-model", {
          content: null,
          tool_calls: [{ id: "call-9", type: "function", function: { name: "run_tests", arguments: "{}" } }]
        }, "tool_calls")
      )
  }
}

const advisorResponse = (
  request: HttpClientRequest.HttpClientRequest,
  outcome: AdvisorOutcome
): Effect.Effect<HttpClientResponse.HttpClientResponse, HttpClientError.HttpClientError> => {
  const reply = (content: string) =>
    Effect.succeed(json(request, 200, completion("advisor-model", { content }, "stop")))
  switch (outcome._tag) {
    case "approve":
      return reply("APPROVE")
    case "redo":
      return reply(`REDO: ${outcome.reply}`)
    case "reply":
      return reply(outcome.content)
    case "garbage":
      return reply("Looks fine to me, mostly.")
    case "invalid_body":
      return Effect.succeed(
        HttpClientResponse.fromWeb(request, new Response("<html>proxy error</html>", { status: 200 }))
      )
    case "stall":
      return Effect.never
    case "refuse":
      return Effect.fail(
        new HttpClientError.RequestError({
          request,
          reason: "Transport",
          cause: Object.assign(new Error("connect ECONNREFUSED 10.0.0.2:443"), { code: "ECONNREFUSED" })
        })
      )
    case "5xx":
      return Effect.succeed(
        json(request, 503, { error: { message: "the user asked: SECRET TASK", type: "server_error" } })
      )
    case "4xx":
      return Effect.succeed(json(request, 401, { error: { message: "bad key", type: "invalid_request_error" } }))
  }
}

/** A target on host `<name>.test`; `timeoutMs` none by default (no deadline). */
export const target = (name: string, id: string, timeoutMs: Option.Option<number> = Option.none()): Target => ({
  name,
  id,
  client: {
    name: `${name}-client`,
    format: "openai_chat",
    baseUrl: `http://${name}.test/v1`,
    apiKey: Option.none(),
    extraHeaders: {},
    maxRetries: 0,
    timeoutMs
  },
  extraBody: {}
})

export const executor = target("executor", "executor-model")
/** The advisor's client has a 3 s deadline, so a stalled advisor fails with `DeadlineExceeded`. */
export const advisor = target("advisor", "advisor-model", Option.some(3000))

/** Route options with the defaults the tests share. */
export const routeOptions = (overrides: Partial<AdvisorRoute.Options> = {}): AdvisorRoute.Options => ({
  id: "gate",
  name: "gate",
  executor,
  advisor,
  gateTrigger: "no_tool_call",
  gateTriggerPattern: Option.none(),
  maxReviews: 1,
  gateStallTurns: 0,
  gateMinToolResults: 0,
  advisorMaxTokens: 2048,
  advisorTemperature: Option.none(),
  transcriptMaxChars: 200_000,
  failOpen: true,
  reviewerSystemPrompt: Option.none(),
  redoFeedbackPrefix: Option.none(),
  ...overrides
})

/**
 * An advisor route and a `Router` over it, on the real `UpstreamClient` over a scripted
 * `HttpClient`: the executor answers the next turn of its script (the last one repeats; a REDO's
 * second call gets {@link revisedText}), the advisor the next outcome of its script.
 */
export const makeGate = (overrides: Partial<AdvisorRoute.Options> = {}) =>
  Effect.gen(function*() {
    const executorScript = yield* Ref.make<ReadonlyArray<ExecutorTurn | "revised">>([{ _tag: "final" }])
    const advisorScript = yield* Ref.make<ReadonlyArray<AdvisorOutcome>>([{ _tag: "approve" }])
    const seen = yield* Ref.make<ReadonlyArray<Seen>>([])
    const next = <A>(script: Ref.Ref<ReadonlyArray<A>>) =>
      Ref.modify(script, (queue): readonly [Option.Option<A>, ReadonlyArray<A>] => {
        const [first, ...rest] = queue
        return first === undefined ? [Option.none(), queue] : [Option.some(first), rest.length > 0 ? rest : queue]
      })
    const http = HttpClient.make((request, url) =>
      Effect.gen(function*() {
        const body: unknown = request.body._tag === "Uint8Array" ? JSON.parse(decoder.decode(request.body.body)) : {}
        yield* Ref.update(seen, (all) => [...all, { host: url.hostname, body: Predicate.isRecord(body) ? body : {} }])
        if (url.hostname === "executor.test") {
          const turn = yield* next(executorScript)
          return executorResponse(request, Option.getOrElse(turn, (): ExecutorTurn => ({ _tag: "final" })))
        }
        const outcome = yield* next(advisorScript)
        return yield* Option.match(outcome, {
          onNone: () => Effect.die("empty advisor script"),
          onSome: (o) => advisorResponse(request, o)
        })
      })
    )
    const upstream = UpstreamClient.layer.pipe(Layer.provide(Layer.succeed(HttpClient.HttpClient, http)))
    const { route, router } = yield* Effect.gen(function*() {
      const route = yield* AdvisorRoute.make(routeOptions(overrides))
      const router = yield* Effect.provideService(Router.make([route]), Stats.Stats, Stats.disabled)
      return { route, router }
    }).pipe(Effect.provide(routeServices(unusedJudge, memoryStore(), upstream)), Effect.scoped)
    return {
      route,
      router,
      /** Script one request: the executor's turn (then `revised` for a REDO) and the advisor's outcome. */
      script: (turn: ExecutorTurn, outcome: AdvisorOutcome) =>
        Effect.zipRight(Ref.set(executorScript, [turn, "revised"]), Ref.set(advisorScript, [outcome])),
      seen: Ref.get(seen)
    }
  })

export const task: ReadonlyArray<Message> = [
  { role: "system", content: "CLIENT-SYSTEM-PROMPT: you are a coding agent" },
  { role: "user", content: "TASK: make the parser accept empty input" },
  {
    role: "assistant",
    content: null,
    tool_calls: [{ id: "c1", type: "function", function: { name: "read", arguments: "{\"path\":\"parser.ts\"}" } }]
  },
  { role: "tool", tool_call_id: "c1", content: "export const parse = ..." }
]

export const routed = (
  messages: ReadonlyArray<Message> = task,
  session: Option.Option<string> = Option.none(),
  extra: Readonly<Record<string, unknown>> = {}
): RoutedRequest => ({
  body: { model: "gate", messages, ...extra },
  headers: {},
  sessionId: Option.map(session, SessionId.make)
})

/**
 * Run an effect that may wait on the advisor's deadline: fork it; when `stalls`, keep moving the
 * `TestClock` by 3 s until it is done (a move made before the deadline's timer exists is simply
 * followed by another).
 */
export const runUnderClock = <A, E>(effect: Effect.Effect<A, E>, stalls: boolean) =>
  Effect.gen(function*() {
    const fiber = yield* Effect.fork(effect.pipe(Effect.withTracerEnabled(false)))
    if (stalls) {
      for (let i = 0; i < 50; i++) {
        if (Option.isSome(yield* Fiber.poll(fiber))) break
        yield* TestClock.adjust("3 seconds")
      }
    }
    return yield* Fiber.await(fiber)
  })

// ---------------------------------------------------------------------------------------------
// The model
// ---------------------------------------------------------------------------------------------

export interface Step {
  readonly session: string | null
  readonly turn: ExecutorTurn
  readonly outcome: AdvisorOutcome
}

export interface ModelConfig {
  readonly maxReviews: number
  readonly failOpen: boolean
}

interface ScopeModel {
  reviews: number
  failed: number
}

type Expected =
  | {
    readonly _tag: "Fails"
    readonly failure: "TransportError" | "DeadlineExceeded" | "UpstreamStatus"
    readonly httpStatus: 502 | 504
  }
  | {
    readonly _tag: "Answers"
    readonly evidence: Evidence.Evidence
    readonly content: string | null
    readonly produced: boolean
  }

interface StepModel {
  readonly expected: Expected
  readonly executorCalls: number
  readonly advisorCalls: number
  readonly review: Option.Option<"approve" | "redo" | "unparseable">
  readonly consultFailure: Option.Option<Evidence.Reason>
}

interface CallFailure {
  readonly failure: "TransportError" | "DeadlineExceeded" | "UpstreamStatus"
  readonly httpStatus: 502 | 504
  readonly reason: Evidence.Reason
}

const failureOf = (outcome: AdvisorOutcome): Option.Option<CallFailure> => {
  switch (outcome._tag) {
    case "stall":
      return Option.some({ failure: "DeadlineExceeded", httpStatus: 504, reason: "timeout" } as const)
    case "refuse":
      return Option.some({ failure: "TransportError", httpStatus: 502, reason: "transport" } as const)
    case "5xx":
      return Option.some({ failure: "UpstreamStatus", httpStatus: 502, reason: "upstream_5xx" } as const)
    case "4xx":
      return Option.some({ failure: "UpstreamStatus", httpStatus: 502, reason: "upstream_non_5xx" } as const)
    default:
      return Option.none()
  }
}

const contentOf = (turn: ExecutorTurn): string | null =>
  turn._tag === "final" ? finalText : turn._tag === "text" ? turn.content : null

const modelStep = (config: ModelConfig, scopes: Map<string, ScopeModel>, step: Step): StepModel => {
  const key = step.session ?? "\u0000instance"
  const scope = scopes.get(key) ?? { reviews: 0, failed: 0 }
  scopes.set(key, scope)
  const none = { review: Option.none(), consultFailure: Option.none() }
  const skip = scope.failed >= 3
    ? Option.some("consult_failures" as const)
    : scope.reviews >= config.maxReviews
    ? Option.some("budget_exhausted" as const)
    : Option.none()
  if (Option.isSome(skip)) {
    return {
      expected: {
        _tag: "Answers",
        evidence: { source: "advisor", verdict: "skipped", skipped: skip.value, advisor_model: "advisor-model" },
        content: contentOf(step.turn),
        produced: false
      },
      executorCalls: 1,
      advisorCalls: 0,
      ...none
    }
  }
  if (step.turn._tag === "tool") {
    return {
      expected: {
        _tag: "Answers",
        evidence: { source: "advisor", verdict: "skipped", skipped: "no_trigger", advisor_model: "advisor-model" },
        content: null,
        produced: true
      },
      executorCalls: 1,
      advisorCalls: 0,
      ...none
    }
  }
  const released = (evidence: Evidence.Evidence): Expected => ({
    _tag: "Answers",
    evidence,
    content: contentOf(step.turn),
    produced: true
  })
  const reviewed = { source: "advisor", trigger: "no_tool_call", advisor_model: "advisor-model" } as const
  const outcome = step.outcome
  switch (outcome._tag) {
    case "approve":
      scope.reviews++
      return {
        expected: released({ ...reviewed, verdict: "approve" }),
        executorCalls: 1,
        advisorCalls: 1,
        review: Option.some("approve"),
        consultFailure: Option.none()
      }
    case "redo":
      scope.reviews++
      return {
        expected: { _tag: "Answers", evidence: { ...reviewed, verdict: "redo" }, content: revisedText, produced: true },
        executorCalls: 2,
        advisorCalls: 1,
        review: Option.some("redo"),
        consultFailure: Option.none()
      }
    case "garbage":
    case "reply":
      scope.failed++
      return {
        expected: released({ ...reviewed, verdict: "unparseable" }),
        executorCalls: 1,
        advisorCalls: 1,
        review: Option.some("unparseable"),
        consultFailure: Option.none()
      }
    case "invalid_body":
      scope.failed++
      return {
        expected: released({
          source: "advisor",
          reason: "invalid_response",
          trigger: "no_tool_call",
          advisor_model: "advisor-model"
        }),
        executorCalls: 1,
        advisorCalls: 1,
        review: Option.none(),
        consultFailure: Option.some("invalid_response")
      }
    default: {
      const failed = Option.getOrThrow(failureOf(outcome))
      scope.failed++
      return {
        expected: config.failOpen
          ? released({
            source: "advisor",
            reason: failed.reason,
            trigger: "no_tool_call",
            advisor_model: "advisor-model"
          })
          : { _tag: "Fails", failure: failed.failure, httpStatus: failed.httpStatus },
        executorCalls: 1,
        advisorCalls: 1,
        review: Option.none(),
        consultFailure: Option.some(failed.reason)
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Metrics (the registry is process-global: properties run sequentially and compare deltas)
// ---------------------------------------------------------------------------------------------

const reviewVerdicts = ["approve", "redo", "unparseable"] as const
const failureReasons: ReadonlyArray<Evidence.Reason> = [
  "timeout",
  "transport",
  "upstream_5xx",
  "upstream_non_5xx",
  "invalid_response",
  "circuit_open"
]

export const gateCounts = Effect.all({
  reviews: Effect.forEach(reviewVerdicts, (verdict) =>
    Effect.map(
      Metric.value(
        Metrics.advisorGateReviewsTotal.pipe(
          Metric.tagged("verdict", verdict),
          Metric.tagged("trigger", "no_tool_call")
        )
      ),
      (state) => state.count
    )),
  failures: Effect.forEach(
    failureReasons,
    (reason) =>
      Effect.map(
        Metric.value(Metrics.advisorGateConsultFailuresTotal.pipe(Metric.tagged("reason", reason))),
        (state) => state.count
      )
  ),
  discarded: Effect.map(Metric.value(Metrics.advisorGateDiscardedTurnsTotal), (state) => state.count)
})

interface Counts {
  readonly reviews: ReadonlyArray<number>
  readonly failures: ReadonlyArray<number>
  readonly discarded: number
}

const delta = (before: Counts, after: Counts): Counts => ({
  reviews: after.reviews.map((n, i) => n - (before.reviews[i] ?? 0)),
  failures: after.failures.map((n, i) => n - (before.failures[i] ?? 0)),
  discarded: after.discarded - before.discarded
})

// ---------------------------------------------------------------------------------------------
// Running a schedule
// ---------------------------------------------------------------------------------------------

const asRecord = (value: unknown): Readonly<Record<string, unknown>> =>
  Predicate.isRecord(value) ? value : assert.fail(`expected an object, got ${JSON.stringify(value)}`)

const messagesOf = (body: Readonly<Record<string, unknown>>): ReadonlyArray<Readonly<Record<string, unknown>>> => {
  const messages = body["messages"]
  return Array.isArray(messages) ? messages.map(asRecord) : assert.fail("no messages")
}

export const runSchedule = (config: ModelConfig, steps: ReadonlyArray<Step>) =>
  Effect.gen(function*() {
    const gate = yield* makeGate({ maxReviews: config.maxReviews, failOpen: config.failOpen })
    const scopes = new Map<string, ScopeModel>()
    for (const [i, step] of steps.entries()) {
      const where = `request ${i} (${JSON.stringify(step)})`
      const model = modelStep(config, scopes, step)
      yield* gate.script(step.turn, step.outcome)
      const seenBefore = (yield* gate.seen).length
      const countsBefore = yield* gateCounts
      const request = routed(task, Option.fromNullable(step.session))
      const exit = yield* runUnderClock(
        gate.router.complete(request),
        model.advisorCalls > 0 && step.outcome._tag === "stall"
      )

      const seen = (yield* gate.seen).slice(seenBefore)
      assert.strictEqual(
        seen.filter((s) => s.host === "executor.test").length,
        model.executorCalls,
        `executor calls, ${where}`
      )
      assert.strictEqual(
        seen.filter((s) => s.host === "advisor.test").length,
        model.advisorCalls,
        `advisor calls, ${where}`
      )

      const expected = model.expected
      if (expected._tag === "Fails") {
        const error = Exit.isFailure(exit)
          ? Option.getOrThrow(Cause.failureOption(exit.cause))
          : assert.fail(`expected a failure, ${where}`)
        assert.strictEqual(error._tag, "AdvisorUnavailable", where)
        if (error._tag === "AdvisorUnavailable") {
          assert.strictEqual(error.advisorModel, "advisor-model", where)
          assert.strictEqual(error.failure._tag, expected.failure, where)
          assert.strictEqual(toHttp(error).status, expected.httpStatus, where)
          assert.notInclude(error.message, "SECRET TASK", where)
        }
      } else {
        const completed = Exit.isSuccess(exit)
          ? exit.value
          : assert.fail(`expected an answer, ${where}: ${String(exit)}`)
        assert.deepStrictEqual(completed.decision.evidence, expected.evidence, `evidence, ${where}`)
        assert.strictEqual(
          completed.completion.choices[0]?.message.content ?? null,
          expected.content,
          `content, ${where}`
        )
        assert.strictEqual(
          Option.isSome(Decision.answerOf(completed.decision)),
          expected.produced,
          `produced, ${where}`
        )
        assert.deepStrictEqual(Option.map(completed.served, (t) => t.name), Option.some("executor"), where)
        assert.deepStrictEqual(Decision.fallbacks(completed.decision), [], where)
      }
      if (model.executorCalls === 2) {
        // The REDO: the second executor request carries the discarded turn and the advisor's plan.
        const second = messagesOf(seen.filter((s) => s.host === "executor.test")[1]?.body ?? {})
        assert.deepStrictEqual(second.slice(0, task.length), JSON.parse(JSON.stringify(task)), where)
        assert.deepStrictEqual(second.slice(task.length), [
          { role: "assistant", content: contentOf(step.turn) },
          {
            role: "user",
            content: `${AdvisorPrompt.redoFeedbackPrefix}${step.outcome._tag === "redo" ? step.outcome.plan : ""}`
          }
        ], where)
      }

      // Budgets: within bounds, and as the model says.
      const budget = yield* gate.route.budget(Option.fromNullable(step.session))
      const scope = scopes.get(step.session ?? "\u0000instance")
      assert.isAtLeast(budget.reviews, 0, where)
      assert.isAtMost(budget.reviews, config.maxReviews, where)
      assert.isAtLeast(budget.failedConsults, 0, where)
      assert.isAtMost(budget.failedConsults, AdvisorRoute.maxFailedConsults, where)
      assert.deepStrictEqual(
        budget,
        { reviews: scope?.reviews ?? 0, failedConsults: scope?.failed ?? 0 },
        `budget, ${where}`
      )

      // Metrics: one review per reply, one failure per failed call, one discarded turn per REDO.
      const moved = delta(countsBefore, yield* gateCounts)
      assert.deepStrictEqual(moved, {
        reviews: reviewVerdicts.map((v) => (Option.contains(model.review, v) ? 1 : 0)),
        failures: failureReasons.map((r) => (Option.contains(model.consultFailure, r) ? 1 : 0)),
        discarded: Option.contains(model.review, "redo") ? 1 : 0
      }, `metrics, ${where}`)
    }
    return true
  })

// ---------------------------------------------------------------------------------------------
// Generators
// ---------------------------------------------------------------------------------------------

const outcomeArb: FastCheck.Arbitrary<AdvisorOutcome> = FastCheck.oneof(
  { arbitrary: FastCheck.constant<AdvisorOutcome>({ _tag: "approve" }), weight: 3 },
  {
    arbitrary: FastCheck.constantFrom<AdvisorOutcome>(
      { _tag: "redo", reply: "add the missing test", plan: "add the missing test" },
      { _tag: "redo", reply: "**check the empty case**\n", plan: "check the empty case" }
    ),
    weight: 3
  },
  { arbitrary: FastCheck.constant<AdvisorOutcome>({ _tag: "garbage" }), weight: 1 },
  { arbitrary: FastCheck.constant<AdvisorOutcome>({ _tag: "invalid_body" }), weight: 1 },
  { arbitrary: FastCheck.constant<AdvisorOutcome>({ _tag: "stall" }), weight: 1 },
  { arbitrary: FastCheck.constant<AdvisorOutcome>({ _tag: "refuse" }), weight: 1 },
  { arbitrary: FastCheck.constant<AdvisorOutcome>({ _tag: "5xx" }), weight: 1 },
  { arbitrary: FastCheck.constant<AdvisorOutcome>({ _tag: "4xx" }), weight: 1 }
)

const stepArb: FastCheck.Arbitrary<Step> = FastCheck.record({
  session: FastCheck.option(FastCheck.constantFrom("s1", "s2"), { freq: 4 }),
  turn: FastCheck.oneof(
    { arbitrary: FastCheck.constant<ExecutorTurn>({ _tag: "final" }), weight: 4 },
    { arbitrary: FastCheck.constant<ExecutorTurn>({ _tag: "tool" }), weight: 1 }
  ),
  outcome: outcomeArb
})

export const schedule = FastCheck.array(stepArb, { minLength: 1, maxLength: 12 })
export const maxReviewsArb = FastCheck.integer({ min: 1, max: 3 })
