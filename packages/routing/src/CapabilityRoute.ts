/**
 * The `llm_classifier` route in `capability` mode: a judge estimates whether the weak target can
 * solve the task; the threshold policy picks weak or strong. The route's `judge_failure` posture
 * decides what a judge failure does; `classify_trigger` decides when the judge is consulted and
 * when a session keeps its stored decision (README.md, the judge failure posture; docs/routes.md).
 *
 * The judge is consulted through `Consultation.run` with the route's posture combinator, which
 * returns the outcome as a value: a verdict, "without a verdict" with its reason, or refused.
 *
 * Circuit breakers: a consultation refused by the judge client's open breaker fails with
 * `CircuitOpen`, which is not a judge call failure (the posture table pins the posture's input and output
 * unions to `TransportError | DeadlineExceeded | UpstreamStatus`), so the posture never sees it:
 * it comes back `Refused`, and the route applies the posture's meaning itself — `fail_open`
 * routes without a verdict (evidence `circuit-open`, reason `circuit_open`, counted in the
 * fail-open metric), `error` fails with `JudgeUnavailable` (503).
 */
import type { Target } from "@switchyard-ts/client/Target"
import { JudgeUnavailable } from "@switchyard-ts/protocol/Errors"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as Consultation from "./Consultation.js"
import * as Conversation from "./Conversation.js"
import * as Decision from "./Decision.js"
import type * as Evidence from "./Evidence.js"
import { Judge, type JudgeError, type JudgeOptions } from "./Judge.js"
import * as Metrics from "./Metrics.js"
import * as Policy from "./Policy.js"
import * as Posture from "./Posture.js"
import type { Route, RoutedRequest } from "./Route.js"
import { SessionStore } from "./SessionStore.js"

/** When the judge is consulted. */
export type ClassifyTrigger = "every_request" | "user_turn" | "new_session"

/** Options of a capability route (its TOML keys, validated). */
export interface Options extends JudgeOptions {
  readonly id: string
  readonly name: string
  readonly weak: Target
  readonly strong: Target
  readonly baseThreshold: number
  readonly thresholdStep: number
  readonly classifyTrigger: ClassifyTrigger
  /** Under `new_session`, a request without a session id is identified by its first user message. */
  readonly messageHashFallback: boolean
  readonly judgeFailure: Posture.Posture
  readonly contextWindow?: Option.Option<number>
  readonly toolCalling?: Option.Option<boolean>
}

/** The bounded reason label of a judge failure: {@link Consultation.reasonOf}, kept under its old name. */
export const reasonOf: (error: JudgeError) => Evidence.Reason = Consultation.reasonOf

/** Build a capability route over the `Judge` and `SessionStore` services. */
export const make = (options: Options): Effect.Effect<Route, never, Judge | SessionStore> =>
  Effect.gen(function*() {
    const judge = yield* Judge
    const store = yield* SessionStore
    const info = { id: options.id, name: options.name, algorithm: "llm_task_classifier" } as const
    const judgeModel = options.judge.id
    const targetOf = (tier: Policy.Tier) => (tier === "weak" ? options.weak : options.strong)

    const decision = (tier: Policy.Tier, evidence: Evidence.Evidence): Decision.Decision => {
      const selected = targetOf(tier)
      return Decision.routed({
        route: info,
        selected,
        fallbacks: [options.weak, options.strong].filter((target) => target.name !== selected.name),
        evidence
      })
    }

    /** The session identity: the caller's session id, or (new_session + message_hash_fallback) a hash. */
    const identity = (request: RoutedRequest): Effect.Effect<Option.Option<string>> => {
      if (Option.isSome(request.sessionId)) return Effect.succeed(Option.some(`s:${request.sessionId.value}`))
      if (options.classifyTrigger === "new_session" && options.messageHashFallback) {
        return Effect.map(Conversation.messageHash(request.body.messages), Option.map((hash) => `h:${hash}`))
      }
      return Effect.succeedNone
    }

    // Requests of one session are routed one at a time (judge call included), so a second request
    // sees the first one's stored decision instead of consulting the judge again.
    const locks = new Map<string, { readonly semaphore: Effect.Semaphore; users: number }>()
    const withSessionLock = <A, E>(key: Option.Option<string>, effect: Effect.Effect<A, E>): Effect.Effect<A, E> => {
      if (Option.isNone(key)) return effect
      return Effect.acquireUseRelease(
        Effect.sync(() => {
          const lock = locks.get(key.value) ?? { semaphore: Effect.unsafeMakeSemaphore(1), users: 0 }
          lock.users++
          locks.set(key.value, lock)
          return lock
        }),
        (lock) => lock.semaphore.withPermits(1)(effect),
        (lock) =>
          Effect.sync(() => {
            lock.users--
            if (lock.users === 0) locks.delete(key.value)
          })
      )
    }

    const decide = (request: RoutedRequest) =>
      Effect.flatMap(
        options.classifyTrigger === "every_request"
          ? Effect.succeedNone
          : Effect.map(identity(request), Option.map((id) => `${options.id}\u0000${id}`)),
        (key) => withSessionLock(key, decideFor(request, key))
      )

    const decideFor = (request: RoutedRequest, key: Option.Option<string>) =>
      Effect.gen(function*() {
        const stored = Option.isSome(key) ? yield* store.get(key.value) : Option.none()

        const reuse = Option.isSome(stored) &&
          (options.classifyTrigger === "new_session" ||
            (options.classifyTrigger === "user_turn" && !Conversation.isUserTurn(request.body.messages)))
        if (reuse && Option.isSome(stored)) {
          return decision(stored.value.tier, { source: "affinity", previous_source: "llm-classifier" })
        }

        const outcome = yield* judge.consult({ options, messages: request.body.messages, headers: request.headers })
          .pipe(
            Consultation.run(Posture.fromConfig(options.judgeFailure)),
            Effect.mapError((error) => new JudgeUnavailable({ judgeModel, failure: error }))
          )

        if (outcome._tag === "Verdict") {
          const verdict = outcome.verdict
          const chosen = Policy.choose(verdict, options.baseThreshold, options.thresholdStep)
          if (Option.isSome(key)) yield* store.put(key.value, { target: targetOf(chosen.tier).name, tier: chosen.tier })
          return decision(chosen.tier, {
            source: "llm-classifier",
            score: verdict.p_solve,
            threshold: chosen.threshold,
            boundary: verdict.capability_boundary
          })
        }
        if (outcome._tag === "Refused" && options.judgeFailure === "error") {
          return yield* new JudgeUnavailable({ judgeModel, failure: outcome.circuitOpen })
        }

        // Routed without a verdict: a stored decision is kept, else the strong target.
        const reason = outcome._tag === "Refused" ? "circuit_open" : outcome.reason
        yield* Metric.update(
          Metrics.classifierFailOpenTotal.pipe(
            Metric.tagged("judge_model", judgeModel),
            Metric.tagged("reason", reason)
          ),
          1
        )
        yield* Effect.logWarning("routing without a judge verdict").pipe(
          Effect.annotateLogs({ route: options.id, judge_model: judgeModel, reason })
        )
        if (outcome._tag === "Refused") {
          return decision(Option.match(stored, { onNone: () => "strong", onSome: (previous) => previous.tier }), {
            source: "circuit-open",
            judge_model: judgeModel
          })
        }
        return Option.match(stored, {
          onNone: () => decision("strong", { source: "fail-open", reason, judge_model: judgeModel }),
          onSome: (previous) => decision(previous.tier, { source: "retained", reason, judge_model: judgeModel })
        })
      })

    const route: Route = {
      id: options.id,
      name: options.name,
      algorithm: "llm_task_classifier",
      targets: [options.weak, options.strong].filter((target, i, all) =>
        all.findIndex((t) => t.name === target.name) === i
      ),
      contextWindow: options.contextWindow ?? Option.none(),
      toolCalling: options.toolCalling ?? Option.none(),
      decide
    }
    return route
  })
