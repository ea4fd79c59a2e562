/**
 * The `llm_classifier` route in `capability` mode: a judge estimates whether the weak target can
 * solve the task; the threshold policy picks weak or strong. The route's `judge_failure` posture
 * decides what a judge failure does; `classify_trigger` decides when the judge is consulted and
 * when a session keeps its stored decision (SPEC §7).
 *
 * Circuit breakers: a consultation refused by the judge client's open breaker fails with
 * `CircuitOpen`, which is not a judge call failure (the SPEC pins the posture's input and output
 * unions to `TransportError | DeadlineExceeded | UpstreamStatus`). The route settles it *around*
 * the posture: before the combinator, `CircuitOpen` moves into the success channel (`Either.left`),
 * so the posture neither sees nor changes it; after it, the route applies the posture's meaning
 * itself — `fail_open` routes without a verdict (evidence `circuit-open`, reason `circuit_open`,
 * counted in the fail-open metric), `error` fails with `JudgeUnavailable` (503).
 */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import type { Target } from "@switchyard-ts/client/Target"
import { type CircuitOpen, JudgeUnavailable } from "@switchyard-ts/protocol/Errors"
import * as Conversation from "./Conversation.js"
import type { Decision } from "./Decision.js"
import type * as Evidence from "./Evidence.js"
import { Judge, type JudgeError, type JudgeOptions } from "./Judge.js"
import * as Metrics from "./Metrics.js"
import * as Policy from "./Policy.js"
import * as Posture from "./Posture.js"
import type { Verdict } from "./Verdict.js"
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

/** The bounded reason label of a judge failure. */
export const reasonOf = (error: JudgeError): Evidence.Reason => {
  switch (error._tag) {
    case "DeadlineExceeded":
      return "timeout"
    case "TransportError":
      return "transport"
    case "UpstreamStatus":
      return error.status >= 500 && error.status <= 599 ? "upstream_5xx" : "upstream_non_5xx"
    case "InvalidVerdict":
      return error.reason
    case "CircuitOpen":
      return "circuit_open"
  }
}

/** Build a capability route over the `Judge` and `SessionStore` services. */
export const make = (options: Options): Effect.Effect<Route, never, Judge | SessionStore> =>
  Effect.gen(function*() {
    const judge = yield* Judge
    const store = yield* SessionStore
    const info = { id: options.id, name: options.name, algorithm: "llm_task_classifier" } as const
    const judgeModel = options.judge.id
    const targetOf = (tier: Policy.Tier) => (tier === "weak" ? options.weak : options.strong)

    const decision = (tier: Policy.Tier, evidence: Evidence.Evidence): Decision => {
      const selected = targetOf(tier)
      return {
        route: info,
        selected: Option.some(selected),
        fallbacks: [options.weak, options.strong].filter((target) => target.name !== selected.name),
        evidence
      }
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

        const failure = yield* Ref.make<Evidence.Reason>("parse_error")
        const consulted = yield* judge.consult({ options, messages: request.body.messages, headers: request.headers }).pipe(
          Effect.tapError((error) => Ref.set(failure, reasonOf(error))),
          Effect.map((verdict): Either.Either<Verdict, CircuitOpen> => Either.right(verdict)),
          Effect.catchTag("CircuitOpen", (open) => Effect.succeed(Either.left(open))),
          Posture.fromConfig(options.judgeFailure),
          Effect.mapError((error) => new JudgeUnavailable({ judgeModel, failure: error }))
        )
        const refused = Option.flatMap(consulted, Either.getLeft)
        if (Option.isSome(refused) && options.judgeFailure === "error") {
          return yield* new JudgeUnavailable({ judgeModel, failure: refused.value })
        }
        const verdict = Option.flatMap(consulted, Either.getRight)

        if (Option.isSome(verdict)) {
          const chosen = Policy.choose(verdict.value, options.baseThreshold, options.thresholdStep)
          if (Option.isSome(key)) yield* store.put(key.value, { target: targetOf(chosen.tier).name, tier: chosen.tier })
          return decision(chosen.tier, {
            source: "llm-classifier",
            score: verdict.value.p_solve,
            threshold: chosen.threshold,
            boundary: verdict.value.capability_boundary
          })
        }

        // Routed without a verdict: a stored decision is kept, else the strong target.
        const reason = yield* Ref.get(failure)
        yield* Metric.update(
          Metrics.classifierFailOpenTotal.pipe(Metric.tagged("judge_model", judgeModel), Metric.tagged("reason", reason)),
          1
        )
        yield* Effect.logWarning("routing without a judge verdict").pipe(
          Effect.annotateLogs({ route: options.id, judge_model: judgeModel, reason })
        )
        if (Option.isSome(refused)) {
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
      targets: [options.weak, options.strong].filter((target, i, all) => all.findIndex((t) => t.name === target.name) === i),
      contextWindow: options.contextWindow ?? Option.none(),
      toolCalling: options.toolCalling ?? Option.none(),
      decide
    }
    return route
  })
