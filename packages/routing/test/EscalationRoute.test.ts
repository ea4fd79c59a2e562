import * as HttpClient from "@effect/platform/HttpClient"
import { assert, describe, it } from "@effect/vitest"
import * as UpstreamClient from "@switchyard-ts/client/UpstreamClient"
import { CircuitOpen, toHttp } from "@switchyard-ts/protocol/Errors"
import type { ChatCompletion } from "@switchyard-ts/protocol/OpenAiChat"
import * as Decision from "@switchyard-ts/routing/Decision"
import * as EscalationJudge from "@switchyard-ts/routing/EscalationJudge"
import * as Judge from "@switchyard-ts/routing/Judge"
import * as RoutingFacts from "@switchyard-ts/routing/RoutingFacts"
import * as SessionStore from "@switchyard-ts/routing/SessionStore"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as Option from "effect/Option"
import { conversation, routed, uniqueJudgeModel } from "./capabilityModel.js"
import {
  buildEscalationRoute,
  deescalationSchedule,
  deescalationTable,
  escalationOptions,
  type EscalationOutcome,
  escalationSchedule,
  makeEscalationJudge,
  makeTieredUpstream,
  makeWeakUpstream,
  runEscalationSchedule
} from "./escalationModel.js"
import { json, target } from "./scriptedJudge.js"

describe.concurrent("EscalationRoute: failure schedules against the model", () => {
  for (const posture of ["error", "fail_open"] as const) {
    for (const confirmations of [1, 2, 3]) {
      it.effect.prop(
        `${posture} × confirmations ${confirmations}`,
        { steps: escalationSchedule },
        ({ steps }) => runEscalationSchedule({ posture, confirmations }, steps),
        { fastCheck: { numRuns: 60 }, timeout: 120_000 }
      )
    }
  }
})

describe.concurrent("EscalationRoute with a deescalation table: failure schedules against the model", () => {
  for (const posture of ["error", "fail_open"] as const) {
    for (const confirmations of [1, 2]) {
      it.effect.prop(
        `${posture} × confirmations ${confirmations}`,
        { steps: deescalationSchedule, table: deescalationTable },
        ({ steps, table }) => runEscalationSchedule({ posture, confirmations, deescalation: table }, steps),
        { fastCheck: { numRuns: 60 }, timeout: 120_000 }
      )
    }
  }
})

const verdict = (escalate: boolean, category = "drift", fresh = true): EscalationOutcome => ({
  _tag: "reply",
  text: JSON.stringify({ escalate, category, new_evidence: fresh, reason: "r" })
})

describe("EscalationRoute with a deescalation table: schedules against the model", () => {
  const table = { strongMinCalls: 2, confirmations: 2, strongMaxCalls: 4, weakCooldownCalls: 1 }
  const s1 = (outcome: EscalationOutcome, strongFails = false) => ({ session: "s1", outcome, strongFails })
  for (const posture of ["error", "fail_open"] as const) {
    it.effect(`${posture}: a failed strong-turn judge breaks the release streak; the hard limit returns to weak with a cooldown`, () =>
      runEscalationSchedule({ posture, confirmations: 1, deescalation: table }, [
        s1(verdict(true)), // escalates: strong turn 1
        s1(verdict(true)), // strong turn 2, unjudged (strong_min_calls 2)
        s1(verdict(false)), // strong turn 3: decline, pending
        s1({ _tag: "garbage" }), // strong turn 4: no verdict, strong stays, streak reset
        s1(verdict(true)), // the hard limit: weak again, cooldown turn (unjudged)
        s1(verdict(true)), // weak turn judged: escalates
        s1(verdict(false)), // strong turn 2, unjudged
        s1(verdict(false)), // strong turn 3: decline
        s1(verdict(false), true), // the strong target fails: weak answers, unjudged, streak reset
        s1(verdict(false)), // strong turn 4: decline, pending
        s1({ _tag: "refuse" }) // the hard limit again
      ]))
    it.effect(`${posture}: two declines release the session from its next request`, () =>
      runEscalationSchedule({ posture, confirmations: 2, deescalation: { ...table, strongMaxCalls: undefined } }, [
        s1(verdict(true)),
        s1(verdict(true, "repetition")), // another category: restarts at 1
        s1(verdict(true, "repetition", false)), // stale evidence: 0
        s1(verdict(true, "repetition")),
        s1(verdict(true, "repetition")), // latches
        s1(verdict(true)),
        s1(verdict(false)),
        s1({ _tag: "stall" }), // a stalled judge on a strong turn: strong stays, never 504
        s1(verdict(false)),
        s1(verdict(false)), // released
        s1(verdict(false)) // a weak turn again
      ]))
  }
})

const completion = (content: string): ChatCompletion => ({
  id: "c",
  object: "chat.completion",
  created: 0,
  model: "weak-model",
  choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: "stop" }]
})

describe("EscalationRoute", () => {
  it.effect("the judge reads the condensed transcript ending with the weak reply; the verdict format is EscalationVerdict", () =>
    Effect.gen(function*() {
      const judge = yield* makeEscalationJudge
      const upstream = yield* makeWeakUpstream
      const route = yield* buildEscalationRoute(
        escalationOptions(target("judge", yield* uniqueJudgeModel)),
        judge.layer,
        upstream.layer
      )
      yield* judge.script([{ _tag: "reply", text: "{\"escalate\":false,\"reason\":\"fine\"}" }])
      const decision = yield* RoutingFacts.observe(
        route.decide(routed(conversation("user_turn", "the task"))),
        RoutingFacts.ignored
      )
      assert.strictEqual(decision._tag, "Answered")
      const [seen] = yield* judge.requests
      const body = seen?.body
      assert.isTrue(typeof body === "object" && body !== null)
      const text = JSON.stringify(body)
      assert.include(text, "EscalationVerdict")
      assert.include(text, "[first user message] the task")
      assert.include(text, "the weak target's answer")
      // without a deescalation table: no phase marker, no phase contract
      assert.notInclude(text, "EFFICIENT_EVALUATION")
      assert.notInclude(text, "STRONG_EVALUATION")
    }))

  it.effect("a weak context overflow routes to strong without consulting the judge; other weak failures fail", () =>
    Effect.gen(function*() {
      const judge = yield* makeEscalationJudge
      const statusFor = (status: number, code: string) =>
        Layer.fresh(UpstreamClient.layer).pipe(Layer.provide(Layer.succeed(
          HttpClient.HttpClient,
          HttpClient.make((request) =>
            Effect.succeed(
              json(request, status, { error: { message: "too long", type: "invalid_request_error", code } })
            )
          )
        )))
      const judgeTarget = target("judge", yield* uniqueJudgeModel)
      const overflow = yield* buildEscalationRoute(
        escalationOptions(judgeTarget),
        judge.layer,
        statusFor(400, "context_length_exceeded")
      )
      const decision = yield* RoutingFacts.observe(
        overflow.decide(routed(conversation("user_turn", "t"))),
        RoutingFacts.ignored
      )
      assert.strictEqual(decision._tag, "Routed")
      assert.strictEqual(Option.getOrThrow(Decision.selected(decision)).name, "strong")
      assert.deepStrictEqual(decision.evidence, {
        source: "escalation",
        verdict: "weak_failed",
        streak: 0,
        confirmations: 2
      })
      assert.strictEqual(yield* judge.calls, 0)

      const denied = yield* buildEscalationRoute(escalationOptions(judgeTarget), judge.layer, statusFor(401, "auth"))
      const exit = yield* Effect.exit(
        RoutingFacts.observe(denied.decide(routed(conversation("user_turn", "t"))), RoutingFacts.ignored)
      )
      assert.isTrue(Exit.isFailure(exit))
      assert.strictEqual(yield* judge.calls, 0)
    }))

  it.effect("an open breaker under error is JudgeUnavailable (503); under fail_open the weak reply, circuit-open", () =>
    Effect.gen(function*() {
      const upstream = yield* makeWeakUpstream
      const judgeModel = yield* uniqueJudgeModel
      const open = Judge.layerTest(
        () => Effect.dieMessage("unused"),
        undefined,
        () => Effect.fail(new CircuitOpen({ target: judgeModel, client: "judge-client" }))
      )
      const strict = yield* buildEscalationRoute(escalationOptions(target("judge", judgeModel)), open, upstream.layer)
      const failed = yield* Effect.flip(
        RoutingFacts.observe(strict.decide(routed(conversation("user_turn", "t"))), RoutingFacts.ignored)
      )
      assert.strictEqual(failed._tag, "JudgeUnavailable")
      assert.strictEqual(toHttp(failed).status, 503)
      const lenient = yield* buildEscalationRoute(
        escalationOptions(target("judge", judgeModel), { judgeFailure: "fail_open" }),
        open,
        upstream.layer
      )
      const served = yield* RoutingFacts.observe(
        lenient.decide(routed(conversation("user_turn", "t"))),
        RoutingFacts.ignored
      )
      assert.strictEqual(served._tag, "Answered")
      assert.deepStrictEqual(served.evidence, { source: "circuit-open", judge_model: judgeModel })
    }))
})

describe("EscalationRoute: session_final", () => {
  const final = { "x-switchyard-session-final": "true" }
  const request = (session: string, headers: Readonly<Record<string, string>> = {}) =>
    routed(conversation("user_turn", "t"), Option.some(session), headers)
  const escalate = { _tag: "reply", text: "{\"escalate\":true,\"reason\":\"hard\"}" } as const
  /** An escalation route over a memory store the test reads. */
  const withStore = (confirmations: number) =>
    Effect.gen(function*() {
      const judge = yield* makeEscalationJudge
      const upstream = yield* makeWeakUpstream
      const store = SessionStore.makeMemory()
      const route = yield* buildEscalationRoute(
        escalationOptions(target("judge", yield* uniqueJudgeModel), { confirmations }),
        judge.layer,
        upstream.layer,
        Layer.succeed(SessionStore.SessionStore, store)
      )
      return { judge, route, store }
    })

  it.effect("a latched session's final request is served latched, then its state is removed; other sessions keep theirs", () =>
    Effect.gen(function*() {
      const { judge, route, store } = yield* withStore(1)
      yield* judge.script([escalate])
      const latching = yield* RoutingFacts.observe(route.decide(request("s1")), RoutingFacts.ignored)
      assert.strictEqual(latching.evidence.source === "escalation" ? latching.evidence.verdict : "", "escalate")
      yield* RoutingFacts.observe(route.decide(request("s2")), RoutingFacts.ignored)
      assert.strictEqual(yield* store.size, 2)

      const last = yield* RoutingFacts.observe(route.decide(request("s1", final)), RoutingFacts.ignored)
      assert.strictEqual(last.evidence.source === "escalation" ? last.evidence.verdict : "", "latched")
      assert.strictEqual(Option.getOrThrow(Decision.selected(last)).name, "strong")
      assert.isTrue(Option.isNone(yield* store.get("esc\u0000s:s1")))
      assert.isTrue(Option.isSome(yield* store.get("esc\u0000s:s2")))

      // s1 starts over: weak answers and the judge is consulted again
      yield* judge.script([{ _tag: "reply", text: "{\"escalate\":false,\"reason\":\"fine\"}" }])
      const callsBefore = yield* judge.calls
      const again = yield* RoutingFacts.observe(route.decide(request("s1")), RoutingFacts.ignored)
      assert.strictEqual(again._tag, "Answered")
      assert.strictEqual(again.evidence.source === "escalation" ? again.evidence.verdict : "", "decline")
      assert.strictEqual((yield* judge.calls) - callsBefore, 1)
    }))

  it.effect("an unlatched streak is reset by a final request (x-dynamo-session-final), even one that failed", () =>
    Effect.gen(function*() {
      const { judge, route, store } = yield* withStore(3)
      yield* judge.script([escalate])
      yield* RoutingFacts.observe(route.decide(request("s1")), RoutingFacts.ignored)
      assert.deepStrictEqual(
        yield* store.get("esc\u0000s:s1"),
        Option.some({ target: "weak", tier: "weak", streak: 1 })
      )
      // a final request whose judge fails under `error`: the request fails, the state is still removed
      yield* judge.script([{ _tag: "refuse" }])
      const failed = yield* Effect.exit(
        RoutingFacts.observe(route.decide(request("s1", { "x-dynamo-session-final": "yes" })), RoutingFacts.ignored)
      )
      assert.isTrue(Exit.isFailure(failed))
      assert.isTrue(Option.isNone(yield* store.get("esc\u0000s:s1")))
      // a request saying session_final = false removes nothing
      yield* judge.script([escalate])
      yield* RoutingFacts.observe(
        route.decide(request("s1", { "x-switchyard-session-final": "false", "x-dynamo-session-final": "true" })),
        RoutingFacts.ignored
      )
      assert.deepStrictEqual(
        yield* store.get("esc\u0000s:s1"),
        Option.some({ target: "weak", tier: "weak", streak: 1 })
      )
    }))
})

describe("EscalationJudge.transcript", () => {
  const options = { recentTurnWindow: 28, windowMessageChars: 500 }
  it("caps anchors at 1,000, the first user message at 2,000, window lines at window_message_chars", () => {
    const text = EscalationJudge.transcript(
      [
        { role: "system", content: "s".repeat(5_000) },
        { role: "user", content: "u".repeat(5_000) },
        { role: "assistant", content: "a".repeat(5_000) }
      ],
      completion("r".repeat(5_000)),
      options
    )
    const lines = text.split("\n")
    assert.isAtMost(lines[0]?.length ?? Infinity, 1_000)
    assert.isAtMost(lines[1]?.length ?? Infinity, 2_000)
    for (const line of lines.slice(3)) assert.isAtMost(line.length, 500)
    assert.include(text, "[assistant (latest reply)] rrr")
  })

  it("keeps 2/3 of a capped text from the head and 1/3 from the tail", () => {
    const capped = EscalationJudge.middle("h".repeat(600) + "t".repeat(600), 305)
    assert.strictEqual(capped, "h".repeat(200) + " […] " + "t".repeat(100))
  })

  it("drops the oldest window lines first, then cuts with the truncation suffix", () => {
    const many = Array.from({ length: 60 }, (_, i) => ({ role: "user" as const, content: `${i}`.padEnd(480, "x") }))
    const text = EscalationJudge.transcript(many, completion("last"), { recentTurnWindow: 60, windowMessageChars: 500 })
    assert.isAtMost(text.length, 18_000)
    assert.include(text, "[assistant (latest reply)] last")
    assert.notInclude(text, "[user] 1xxx")
    const huge = EscalationJudge.transcript(
      Array.from({ length: 20 }, () => ({ role: "system" as const, content: "s".repeat(2_000) })),
      completion("last"),
      options
    )
    assert.strictEqual(huge.length, 18_000)
    assert.isTrue(huge.endsWith(EscalationJudge.truncationSuffix))
  })

  it("decodes exactly {escalate, reason}; anything else is parse_error", () => {
    assert.deepStrictEqual(
      EscalationJudge.decode("```json\n{\"escalate\":true,\"reason\":\"r\"}\n```"),
      Either.right({ escalate: true, reason: "r" })
    )
    for (
      const text of [
        "",
        "yes",
        "{\"escalate\":true}",
        "{\"escalate\":\"true\",\"reason\":\"r\"}",
        "{\"escalate\":true,\"reason\":\"r\",\"x\":1}"
      ]
    ) {
      const decoded = EscalationJudge.decode(text)
      assert.isTrue(Either.isLeft(decoded) && decoded.left.reason === "parse_error", text)
    }
  })

  it("decodes {escalate, category, new_evidence, reason}; an unknown category or a non-boolean new_evidence is parse_error", () => {
    assert.deepStrictEqual(
      EscalationJudge.decode("{\"escalate\":true,\"category\":\"drift\",\"new_evidence\":false,\"reason\":\"r\"}"),
      Either.right({ escalate: true, category: "drift", new_evidence: false, reason: "r" })
    )
    for (
      const text of [
        "{\"escalate\":true,\"category\":\"sideways\",\"new_evidence\":true,\"reason\":\"r\"}",
        "{\"escalate\":true,\"category\":\"drift\",\"new_evidence\":\"yes\",\"reason\":\"r\"}"
      ]
    ) {
      const decoded = EscalationJudge.decode(text)
      assert.isTrue(Either.isLeft(decoded) && decoded.left.reason === "parse_error", text)
    }
  })

  it("the streak rule: fresh evidence in the previous vote's category adds one, another category restarts at 1, stale evidence or a decline resets", () => {
    const step = (
      previous: EscalationJudge.Streak,
      escalate: boolean,
      fields: { readonly category?: EscalationJudge.Category; readonly new_evidence?: boolean } = {}
    ) => EscalationJudge.nextStreak(previous, { escalate, ...fields })
    assert.deepStrictEqual(step({ streak: 0 }, true, { category: "drift", new_evidence: true }), {
      streak: 1,
      category: "drift"
    })
    assert.deepStrictEqual(step({ streak: 1, category: "drift" }, true, { category: "drift", new_evidence: true }), {
      streak: 2,
      category: "drift"
    })
    assert.deepStrictEqual(
      step({ streak: 2, category: "drift" }, true, { category: "repetition", new_evidence: true }),
      { streak: 1, category: "repetition" }
    )
    assert.deepStrictEqual(step({ streak: 2, category: "drift" }, true, { category: "drift", new_evidence: false }), {
      streak: 0
    })
    assert.deepStrictEqual(step({ streak: 2, category: "drift" }, false, { category: "drift", new_evidence: true }), {
      streak: 0
    })
    // An older judge's verdict (no category, no new_evidence) counts as before: every escalate adds one.
    assert.deepStrictEqual(step({ streak: 2, category: "drift" }, true), { streak: 3, category: "drift" })
    assert.deepStrictEqual(step({ streak: 1 }, true, { category: "drift" }), { streak: 2, category: "drift" })
  })

  it.effect("with a deescalation table the judge's input is marked EFFICIENT_EVALUATION, then STRONG_EVALUATION, and its prompt carries the phase contract", () =>
    Effect.gen(function*() {
      const judge = yield* makeEscalationJudge
      const upstream = yield* makeTieredUpstream
      const route = yield* buildEscalationRoute(
        escalationOptions(target("judge", yield* uniqueJudgeModel), {
          confirmations: 1,
          deescalation: Option.some({
            strongMinCalls: 2,
            confirmations: 1,
            strongMaxCalls: Option.none(),
            weakCooldownCalls: 0
          })
        }),
        judge.layer,
        upstream.layer
      )
      const escalate = "{\"escalate\":true,\"category\":\"drift\",\"new_evidence\":true,\"reason\":\"r\"}"
      const decline = "{\"escalate\":false,\"category\":\"none\",\"new_evidence\":false,\"reason\":\"fixed\"}"
      yield* judge.script([{ _tag: "reply", text: escalate }, { _tag: "reply", text: decline }])
      const decide = () =>
        RoutingFacts.observe(
          route.decide(routed(conversation("user_turn", "the task"), Option.some("s"))),
          RoutingFacts.ignored
        )
      const first = yield* decide()
      assert.strictEqual(first._tag, "Routed")
      const second = yield* decide()
      assert.strictEqual(second._tag, "Answered")
      assert.deepStrictEqual(second.evidence, {
        source: "escalation",
        verdict: "release",
        streak: 1,
        confirmations: 1,
        category: "none",
        new_evidence: false,
        strong_calls: 2,
        release_streak: 1
      })
      const [weakTurn, strongTurn] = (yield* judge.requests).map((seen) => JSON.stringify(seen.body))
      assert.include(weakTurn, "EFFICIENT_EVALUATION\\n")
      assert.include(weakTurn, "STRONG_EVALUATION:")
      assert.include(weakTurn, "the weak target's answer")
      assert.include(strongTurn, "STRONG_EVALUATION\\n")
      assert.include(strongTurn, "the strong target's answer")
      assert.include(strongTurn, "new_evidence")
      // released: the next request is a weak turn again
      yield* judge.script([{ _tag: "reply", text: decline }])
      const third = yield* decide()
      assert.strictEqual(third._tag, "Answered")
      assert.strictEqual(third.evidence.source === "escalation" ? third.evidence.verdict : "", "decline")
    }))

  it.effect("a stateful route warns once about requests without a session id; a one-confirmation route never does", () =>
    Effect.gen(function*() {
      const warnings: Array<string> = []
      const logger = Logger.make(({ logLevel, message }) => {
        if (logLevel.label === "WARN") warnings.push(String(message))
      })
      const judge = yield* makeEscalationJudge
      const upstream = yield* makeWeakUpstream
      const judgeTarget = target("judge", yield* uniqueJudgeModel)
      const run = (confirmations: number) =>
        Effect.gen(function*() {
          const route = yield* buildEscalationRoute(
            escalationOptions(judgeTarget, { confirmations }),
            judge.layer,
            upstream.layer
          )
          yield* judge.script([
            { _tag: "reply", text: "{\"escalate\":false,\"reason\":\"fine\"}" },
            { _tag: "reply", text: "{\"escalate\":false,\"reason\":\"fine\"}" }
          ])
          for (let i = 0; i < 2; i++) {
            yield* RoutingFacts.observe(route.decide(routed(conversation("user_turn", "t"))), RoutingFacts.ignored)
          }
        }).pipe(Effect.provide(Logger.add(logger)))
      yield* run(1)
      assert.deepStrictEqual(warnings, [])
      yield* run(2)
      assert.deepStrictEqual(warnings, ["stateful escalation has no session ID; routing state will not persist"])
    }))
})
