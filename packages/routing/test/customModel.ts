/**
 * An independent model of the posture table and the session rules for custom classifier routes
 * (labels `alpha`, `beta`, `gamma`, default `beta`, selector `/route`): a schema-valid verdict
 * naming a label selects it, one naming no label abstains to the default, an invalid verdict is
 * "no verdict"; only a valid verdict writes the stored decision; `fail_open` keeps the stored
 * target (`retained`) else the default, `error` fails exactly on transport/deadline/status.
 * `runCustomSchedule` drives a schedule through the real route (real `Judge.layer` over the real
 * `UpstreamClient.layer` over a scripted `HttpClient`) and checks every request against it —
 * optionally with the custom route as a passthrough route's `subagents` table (`subagent: true`):
 * then requests that are not delegated work go to the parent target without a judge call, and the
 * stored decisions are keyed by (session, agent), both required.
 */
import type * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import { assert } from "@effect/vitest"
import * as CustomRoute from "@switchyard-ts/routing/CustomRoute"
import * as Decision from "@switchyard-ts/routing/Decision"
import type * as Evidence from "@switchyard-ts/routing/Evidence"
import * as JsonPointer from "@switchyard-ts/routing/JsonPointer"
import * as JsonSchema from "@switchyard-ts/routing/JsonSchema"
import type * as Judge from "@switchyard-ts/routing/Judge"
import * as Passthrough from "@switchyard-ts/routing/Passthrough"
import type * as Posture from "@switchyard-ts/routing/Posture"
import type { Route, RoutedRequest } from "@switchyard-ts/routing/Route"
import * as RoutingFacts from "@switchyard-ts/routing/RoutingFacts"
import * as SessionStore from "@switchyard-ts/routing/SessionStore"
import * as Subagents from "@switchyard-ts/routing/Subagents"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as FastCheck from "effect/FastCheck"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import * as TestClock from "effect/TestClock"
import {
  assertJudgeUnavailable,
  conversation,
  failOpenCounts,
  type Kind,
  routed,
  uniqueJudgeModel
} from "./capabilityModel.js"
import { memoryStore, routeServices } from "./harness.js"
import { json, judgeCompletion, makeScriptedJudgeWith, type Outcome, respond, target } from "./scriptedJudge.js"

// ---------------------------------------------------------------------------------------------
// The route under test
// ---------------------------------------------------------------------------------------------

export const labels = ["alpha", "beta", "gamma"] as const
export const defaultLabel = "beta"

/** `route` is not required (a verdict without it abstains); any other member is schema-invalid. */
export const responseSchema = {
  type: "object",
  properties: {
    route: { type: "string" },
    confidence: { type: "number" }
  },
  required: [],
  additionalProperties: false
} as const

export const compiledSchema = Either.getOrThrow(JsonSchema.compile(responseSchema))
export const selector = Either.getOrThrow(JsonPointer.parse("/route"))

export const customOptions = (
  judge: ReturnType<typeof target>,
  overrides: Partial<CustomRoute.Options> = {}
): CustomRoute.Options => {
  const targets = labels.map((label) => target(label, `${label}-model`))
  return {
    id: "custom",
    name: "custom",
    judge,
    prompt: "Name the target for this conversation.",
    responseSchema,
    compiledSchema,
    maxOutputTokens: 256,
    recentTurnWindow: Option.none(),
    targets,
    defaultTarget: targets[1] ?? assert.fail("no default"),
    selector,
    classifyTrigger: "every_request",
    messageHashFallback: false,
    judgeFailure: "error",
    ...overrides
  }
}

// ---------------------------------------------------------------------------------------------
// Outcomes of the judge upstream
// ---------------------------------------------------------------------------------------------

/** The judge upstream answers `text` as its reply, or fails as a capability outcome does. */
export type CustomOutcome = { readonly _tag: "reply"; readonly text: string } | Exclude<Outcome, { _tag: "verdict" }>

export const respondCustom = (request: HttpClientRequest.HttpClientRequest, outcome: CustomOutcome) =>
  outcome._tag === "reply"
    ? Effect.succeed(json(request, 200, judgeCompletion("judge", outcome.text)))
    : respond(request, outcome)

export const makeCustomJudge = makeScriptedJudgeWith(respondCustom)

// ---------------------------------------------------------------------------------------------
// The model
// ---------------------------------------------------------------------------------------------

type CallFailureTag = "TransportError" | "DeadlineExceeded" | "UpstreamStatus"

export interface Step {
  readonly session: string | null
  readonly kind: Kind
  readonly outcome: CustomOutcome
  /** Who sends it, when the custom route is a passthrough route's `subagents` table (default: a root agent). */
  readonly caller?: Caller
}

/**
 * The sender of a request to a passthrough route whose `subagents` table is the custom route:
 * a root agent; a harness maintenance turn of a sub-agent (Codex `subagent_kind = "compact"`: not
 * delegated work); or delegated work — a Claude child with its agent id, or (no agent id) the
 * explicit `x-switchyard-is-subagent` flag, which has no affinity key.
 */
export type Caller =
  | { readonly _tag: "root" }
  | { readonly _tag: "maintenance"; readonly agent: string }
  | { readonly _tag: "delegated"; readonly agent: string | null }

/** The headers a caller sends (its session id travels in the request's `sessionId`). */
const headersOf = (caller: Caller, session: string | null): Readonly<Record<string, string>> => {
  const claudeSession: Record<string, string> = session === null ? {} : { "x-claude-code-session-id": session }
  switch (caller._tag) {
    case "root":
      return claudeSession
    case "maintenance":
      return {
        "x-codex-turn-metadata": JSON.stringify({
          session_id: session,
          thread_id: caller.agent,
          subagent_kind: "compact"
        })
      }
    case "delegated":
      return caller.agent === null
        ? { ...claudeSession, "x-switchyard-is-subagent": "true" }
        : { ...claudeSession, "x-claude-code-agent-id": caller.agent }
  }
}

/** The parent target of the passthrough route in `subagent` mode. */
export const parentTarget = target("parent", "parent-model")

type Judged =
  | { readonly _tag: "Verdict"; readonly route: Option.Option<unknown> }
  | { readonly _tag: "NoVerdict"; readonly reason: Evidence.Reason }
  | {
    readonly _tag: "CallFailed"
    readonly failure: CallFailureTag
    readonly status: Option.Option<number>
    readonly reason: Evidence.Reason
  }

/** The model's own reading of a reply: fences, JSON, and the schema's rules written out by hand. */
const readReply = (text: string): Judged => {
  let body = text.trim()
  if (body.startsWith("```json\n") && body.endsWith("```")) body = body.slice(8, -3).trim()
  let value: unknown
  try {
    value = JSON.parse(body)
  } catch {
    return { _tag: "NoVerdict", reason: "parse_error" }
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return { _tag: "NoVerdict", reason: "parse_error" }
  }
  const entries = Object.entries(value)
  const valid = entries.every(([key, member]) =>
    (key === "route" && typeof member === "string") ||
    (key === "confidence" && typeof member === "number")
  )
  if (!valid) return { _tag: "NoVerdict", reason: "parse_error" }
  return { _tag: "Verdict", route: Option.fromNullable(entries.find(([key]) => key === "route")?.[1]) }
}

const judgedOf = (outcome: CustomOutcome): Judged => {
  switch (outcome._tag) {
    case "reply":
      return readReply(outcome.text)
    case "garbage":
      return { _tag: "NoVerdict", reason: "parse_error" }
    case "invalid_body":
      return { _tag: "NoVerdict", reason: "invalid_response" }
    case "stall":
      return { _tag: "CallFailed", failure: "DeadlineExceeded", status: Option.none(), reason: "timeout" }
    case "refuse":
      return { _tag: "CallFailed", failure: "TransportError", status: Option.none(), reason: "transport" }
    case "5xx":
      return { _tag: "CallFailed", failure: "UpstreamStatus", status: Option.some(503), reason: "upstream_5xx" }
    case "4xx":
      return {
        _tag: "CallFailed",
        failure: "UpstreamStatus",
        status: Option.some(outcome.status),
        reason: "upstream_non_5xx"
      }
  }
}

type Expected =
  | {
    readonly _tag: "Fails"
    readonly failure: CallFailureTag
    readonly status: Option.Option<number>
    readonly httpStatus: 502 | 504
  }
  | {
    readonly _tag: "Routes"
    readonly label: string
    readonly evidence: Evidence.Evidence
    readonly withoutVerdict: Option.Option<Evidence.Reason>
    /** The stored decision this request writes (only a valid verdict writes one). */
    readonly writes: Option.Option<string>
  }

export interface ModelConfig {
  readonly trigger: CustomRoute.Options["classifyTrigger"]
  readonly posture: Posture.Posture
  readonly maxRetries: number
  readonly judgeModel: string
  /**
   * The custom route is the `subagents` table of a passthrough route (`Subagents.delegate`):
   * only delegated work reaches it, its stored decisions are keyed by (session, agent).
   */
  readonly subagent?: boolean
}

const modelStep = (
  config: ModelConfig,
  stored: Map<string, string>,
  step: Step
): { readonly expected: Expected; readonly calls: number } => {
  const caller = step.caller ?? { _tag: "root" }
  if (config.subagent === true && caller._tag !== "delegated") {
    return {
      expected: {
        _tag: "Routes",
        label: parentTarget.name,
        evidence: { source: "passthrough" },
        withoutVerdict: Option.none(),
        writes: Option.none()
      },
      calls: 0
    }
  }
  const identity = config.subagent === true && caller._tag === "delegated"
    ? (step.session === null || caller.agent === null ? null : JSON.stringify([step.session, caller.agent]))
    : step.session
  const key = config.trigger === "every_request" ? Option.none<string>() : Option.fromNullable(identity)
  const previous = Option.flatMap(key, (k) => Option.fromNullable(stored.get(k)))
  const reuse = config.trigger === "new_session" ||
    (config.trigger === "user_turn" && step.kind === "tool_continuation")
  if (reuse && Option.isSome(previous)) {
    return {
      expected: {
        _tag: "Routes",
        label: previous.value,
        evidence: { source: "affinity", previous_source: "llm-classifier" },
        withoutVerdict: Option.none(),
        writes: Option.none()
      },
      calls: 0
    }
  }
  const retryable = step.outcome._tag === "refuse" || step.outcome._tag === "5xx"
  const calls = retryable ? 1 + config.maxRetries : 1
  const judged = judgedOf(step.outcome)
  if (judged._tag === "Verdict") {
    const named = Option.filter(
      judged.route,
      (route): route is string => typeof route === "string" && labels.some((label) => label === route)
    )
    const label = Option.getOrElse(named, () => defaultLabel)
    if (Option.isSome(key)) stored.set(key.value, label)
    return {
      expected: {
        _tag: "Routes",
        label,
        evidence: Option.isSome(named)
          ? { source: "llm-classifier", label }
          : { source: "abstained", selector: "/route", judge_model: config.judgeModel },
        withoutVerdict: Option.none(),
        writes: Option.map(key, () => label)
      },
      calls
    }
  }
  if (judged._tag === "CallFailed" && config.posture === "error") {
    return {
      expected: {
        _tag: "Fails",
        failure: judged.failure,
        status: judged.status,
        httpStatus: judged.failure === "DeadlineExceeded" ? 504 : 502
      },
      calls
    }
  }
  const reason = judged.reason
  return {
    expected: Option.match(previous, {
      onNone: () => ({
        _tag: "Routes",
        label: defaultLabel,
        evidence: { source: "fail-open", reason, judge_model: config.judgeModel },
        withoutVerdict: Option.some(reason),
        writes: Option.none()
      }),
      onSome: (label) => ({
        _tag: "Routes",
        label,
        evidence: { source: "retained", reason, judge_model: config.judgeModel },
        withoutVerdict: Option.some(reason),
        writes: Option.none()
      })
    }),
    calls
  }
}

// ---------------------------------------------------------------------------------------------
// Running a schedule against the real route
// ---------------------------------------------------------------------------------------------

/** The memory store, recording every write. */
const recordingStore = Effect.gen(function*() {
  const writes = yield* Ref.make<ReadonlyArray<SessionStore.SessionDecision>>([])
  const memory = SessionStore.makeMemory({ maxEntries: 100, ttlMs: 3_600_000 })
  const layer = Layer.succeed(
    SessionStore.SessionStore,
    SessionStore.SessionStore.of({
      ...memory,
      put: (key, decision) =>
        Effect.zipRight(Ref.update(writes, (all) => [...all, decision]), memory.put(key, decision))
    })
  )
  return { writes: Ref.get(writes), layer }
})

/**
 * Routes built here configure no late verdicts: the scope their background judge calls would run in
 * is closed at once (LateVerdict.test.ts builds its routes in a scope of its own).
 */
export const buildCustomRoute = (
  options: CustomRoute.Options,
  judgeLayer: Layer.Layer<Judge.Judge>,
  storeLayer: Layer.Layer<SessionStore.SessionStore> = memoryStore()
) => CustomRoute.make(options).pipe(Effect.provide(routeServices(judgeLayer, storeLayer)), Effect.scoped)

const needsTime = (outcome: CustomOutcome, maxRetries: number): boolean =>
  outcome._tag === "stall" || (maxRetries > 0 && (outcome._tag === "refuse" || outcome._tag === "5xx"))

/** Fork one decide, advance the clock past the judge's 3 s timeout when the outcome needs it, await. */
export const decideCustom = (route: Route, request: RoutedRequest, outcome: CustomOutcome, maxRetries: number) =>
  Effect.gen(function*() {
    const fiber = yield* Effect.fork(
      RoutingFacts.observe(route.decide(request), RoutingFacts.ignored).pipe(Effect.withTracerEnabled(false))
    )
    if (needsTime(outcome, maxRetries)) yield* TestClock.adjust("3 seconds")
    return yield* Fiber.await(fiber)
  })

export const runCustomSchedule = (config: Omit<ModelConfig, "judgeModel">, steps: ReadonlyArray<Step>) =>
  Effect.gen(function*() {
    const judgeModel = yield* uniqueJudgeModel
    const model: ModelConfig = { ...config, judgeModel }
    const judge = yield* makeCustomJudge
    const store = yield* recordingStore
    const judgeTarget = target("judge", judgeModel, { maxRetries: config.maxRetries, timeoutMs: Option.some(3000) })
    const custom = yield* buildCustomRoute(
      customOptions(judgeTarget, {
        classifyTrigger: config.trigger,
        judgeFailure: config.posture,
        ...(config.subagent === true ? { affinity: "agent" } : {})
      }),
      judge.layer,
      store.layer
    )
    const route = config.subagent === true
      ? Subagents.delegate(Passthrough.make({ id: "custom", name: "custom", target: parentTarget }), custom)
      : custom
    const stored = new Map<string, string>()
    let withoutVerdict = 0
    const total = (counts: ReadonlyArray<readonly [Evidence.Reason, number]>) =>
      counts.reduce((sum, [, count]) => sum + count, 0)
    const countsAtStart = total(yield* failOpenCounts(judgeModel))

    for (const [i, step] of steps.entries()) {
      const where = `request ${i} (${JSON.stringify(step)})`
      const { calls: expectedCalls, expected } = modelStep(model, stored, step)
      yield* judge.script([step.outcome])
      const callsBefore = yield* judge.calls
      const writesBefore = (yield* store.writes).length
      const countsBefore = yield* failOpenCounts(judgeModel)

      const exit = yield* decideCustom(
        route,
        routed(
          conversation(step.kind, "task"),
          Option.fromNullable(step.session),
          headersOf(step.caller ?? { _tag: "root" }, step.session)
        ),
        step.outcome,
        config.maxRetries
      )

      assert.strictEqual((yield* judge.calls) - callsBefore, expectedCalls, `judge HTTP calls, ${where}`)
      const writes = (yield* store.writes).slice(writesBefore).map((decision) => decision.target)
      assert.deepStrictEqual(
        writes,
        expected._tag === "Routes" ? Option.toArray(expected.writes) : [],
        `stored decisions, ${where}`
      )
      const countsAfter = yield* failOpenCounts(judgeModel)
      const deltas = countsAfter.map(([reason, count], j) => [reason, count - (countsBefore[j]?.[1] ?? 0)] as const)
      assert.deepStrictEqual(
        deltas.filter(([, delta]) => delta !== 0),
        expected._tag === "Routes" && Option.isSome(expected.withoutVerdict)
          ? [[expected.withoutVerdict.value, 1] as const]
          : [],
        `fail-open metric, ${where}`
      )
      if (config.posture === "fail_open") assert.isTrue(Exit.isSuccess(exit), `fail_open never fails, ${where}`)

      if (expected._tag === "Fails") {
        assertJudgeUnavailable(exit, expected, where, judgeModel)
      } else {
        assert.isTrue(Exit.isSuccess(exit), `expected a decision, ${where}`)
        if (Exit.isSuccess(exit)) {
          const decision = exit.value
          const selected = Option.getOrThrow(Decision.selected(decision))
          const byParent = expected.label === parentTarget.name
          assert.strictEqual(selected.name, expected.label, `target, ${where}`)
          assert.deepStrictEqual(
            Decision.fallbacks(decision).map((t) => t.name),
            byParent ? [] : labels.filter((label) => label !== expected.label),
            where
          )
          assert.deepStrictEqual(
            decision.evidence,
            config.subagent === true && !byParent ? { ...expected.evidence, subagent: true } : expected.evidence,
            `evidence, ${where}`
          )
          assert.deepStrictEqual(decision.route, {
            id: "custom",
            name: "custom",
            algorithm: config.subagent === true ? "passthrough" : "llm_task_classifier"
          })
        }
        if (Option.isSome(expected.withoutVerdict)) withoutVerdict++
      }
    }

    // Over the whole schedule: the counter equals the number of requests routed without a verdict.
    assert.strictEqual(total(yield* failOpenCounts(judgeModel)) - countsAtStart, withoutVerdict, "fail-open total")
    return true
  })

// ---------------------------------------------------------------------------------------------
// Generators
// ---------------------------------------------------------------------------------------------

const routeValue = FastCheck.oneof(
  { arbitrary: FastCheck.constantFrom<unknown>("alpha", "beta", "gamma"), weight: 6 },
  { arbitrary: FastCheck.constantFrom<unknown>("delta", "ALPHA", " alpha"), weight: 2 },
  { arbitrary: FastCheck.constantFrom<unknown>(1, null, ["alpha"]), weight: 1 }
)

const replyText: FastCheck.Arbitrary<string> = FastCheck.record({
  route: FastCheck.option(routeValue, { freq: 6 }),
  confidence: FastCheck.option(
    FastCheck.oneof(FastCheck.double({ min: 0, max: 1, noNaN: true }), FastCheck.constant<unknown>("high")),
    { freq: 2 }
  ),
  // an undeclared member makes the verdict schema-invalid (additionalProperties: false)
  extra: FastCheck.integer({ min: 0, max: 5 }).map((n) => n === 0),
  fenced: FastCheck.boolean()
}).map(({ confidence, extra, fenced, route }) => {
  const value: Record<string, unknown> = {}
  if (route !== null) value.route = route
  if (confidence !== null) value.confidence = confidence
  if (extra) value.reasoning = "an undeclared member"
  const text = JSON.stringify(value)
  return fenced ? "```json\n" + text + "\n```" : text
})

const outcomeArb: FastCheck.Arbitrary<CustomOutcome> = FastCheck.oneof(
  { arbitrary: replyText.map((text): CustomOutcome => ({ _tag: "reply", text })), weight: 8 },
  { arbitrary: FastCheck.constant<CustomOutcome>({ _tag: "garbage" }), weight: 1 },
  { arbitrary: FastCheck.constant<CustomOutcome>({ _tag: "invalid_body" }), weight: 1 },
  { arbitrary: FastCheck.constant<CustomOutcome>({ _tag: "stall" }), weight: 1 },
  { arbitrary: FastCheck.constant<CustomOutcome>({ _tag: "refuse" }), weight: 1 },
  { arbitrary: FastCheck.constant<CustomOutcome>({ _tag: "5xx" }), weight: 1 },
  {
    arbitrary: FastCheck.constantFrom<400 | 401 | 404>(400, 401, 404).map((status): CustomOutcome => ({
      _tag: "4xx",
      status
    })),
    weight: 1
  }
)

const stepArb: FastCheck.Arbitrary<Step> = FastCheck.record({
  session: FastCheck.option(FastCheck.constantFrom("s1", "s2", "s3"), { freq: 4 }),
  kind: FastCheck.constantFrom<Kind>("user_turn", "tool_continuation"),
  outcome: outcomeArb
})

export const customSchedule = FastCheck.array(stepArb, { minLength: 1, maxLength: 8 })

const callerArb: FastCheck.Arbitrary<Caller> = FastCheck.oneof(
  { arbitrary: FastCheck.constant<Caller>({ _tag: "root" }), weight: 2 },
  {
    arbitrary: FastCheck.constantFrom("a1", "a2").map((agent): Caller => ({ _tag: "maintenance", agent })),
    weight: 1
  },
  {
    arbitrary: FastCheck.constantFrom("a1", "a2", null).map((agent): Caller => ({ _tag: "delegated", agent })),
    weight: 5
  }
)

/** Steps of a passthrough route's custom `subagents` table: root, maintenance and delegated callers mixed. */
export const subagentSchedule = FastCheck.array(
  FastCheck.record({
    session: FastCheck.option(FastCheck.constantFrom("s1", "s2"), { freq: 4 }),
    kind: FastCheck.constantFrom<Kind>("user_turn", "tool_continuation"),
    outcome: outcomeArb,
    caller: callerArb
  }),
  { minLength: 1, maxLength: 10 }
)
