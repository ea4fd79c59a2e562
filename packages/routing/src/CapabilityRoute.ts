/**
 * The `llm_classifier` route in `capability` mode: a judge estimates whether the weak target can
 * solve the task; the threshold policy picks weak or strong. The route's `judge_failure` posture
 * decides what a judge failure does; `classify_trigger` decides when the judge is consulted and
 * when a session keeps its stored decision (README.md, the judge failure posture; docs/routes.md).
 *
 * The judge is consulted through `Consultation.run` with the route's posture combinator, which
 * returns the outcome as a value: a verdict, "without a verdict" with its reason, or refused.
 * Triggers, sessions and the posture's meaning are the classifier cascade every mode shares
 * (`internal/classifierCascade.ts`, also behind `CustomRoute`); this module adds the threshold
 * policy and the weak/strong targets.
 *
 * Circuit breakers: a consultation refused by the judge client's open breaker fails with
 * `CircuitOpen`, which is not a judge call failure (the posture table pins the posture's input and output
 * unions to `TransportError | DeadlineExceeded | UpstreamStatus`), so the posture never sees it:
 * it comes back `Refused`, and the route applies the posture's meaning itself — `fail_open`
 * routes without a verdict (evidence `circuit-open`, reason `circuit_open`, counted in the
 * fail-open metric), `error` fails with `JudgeUnavailable` (503).
 */
import type { Target } from "@switchyard-ts/client/Target"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import * as Consultation from "./Consultation.js"
import * as Decision from "./Decision.js"
import type * as Evidence from "./Evidence.js"
import * as ClassifierCascade from "./internal/classifierCascade.js"
import { Judge, type JudgeError, type JudgeOptions } from "./Judge.js"
import type * as LateVerdict from "./LateVerdict.js"
import * as Policy from "./Policy.js"
import type * as Posture from "./Posture.js"
import { distinctTargets, type Route } from "./Route.js"
import type { SessionStore } from "./SessionStore.js"
import type { Verdict } from "./Verdict.js"

/** When the judge is consulted. */
export type ClassifyTrigger = ClassifierCascade.ClassifyTrigger

/** Options of a capability route (its TOML keys, validated). */
export interface Options extends JudgeOptions, LateVerdict.Options {
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

/**
 * Build a capability route over the `Judge` and `SessionStore` services; its late judge calls
 * (`lateVerdictMs`) run in `Scope`.
 */
export const make = (options: Options): Effect.Effect<Route, never, Judge | SessionStore | Scope.Scope> =>
  Effect.gen(function*() {
    const judge = yield* Judge
    const info = { id: options.id, name: options.name, algorithm: "llm_task_classifier" } as const
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

    const decide = yield* ClassifierCascade.make<Verdict>({
      routeId: options.id,
      classifyTrigger: options.classifyTrigger,
      messageHashFallback: options.messageHashFallback,
      judgeFailure: options.judgeFailure,
      late: options,
      judgeModel: options.judge.id,
      consult: (request, judgeTimeoutMs) =>
        judge.consult({
          options: { ...options, judgeTimeoutMs },
          messages: request.body.messages,
          headers: request.headers
        }),
      judged: (verdict) => {
        const chosen = Policy.choose(verdict, options.baseThreshold, options.thresholdStep)
        return {
          stored: { target: targetOf(chosen.tier).name, tier: chosen.tier },
          decision: decision(chosen.tier, {
            source: "llm-classifier",
            score: verdict.p_solve,
            threshold: chosen.threshold,
            boundary: verdict.capability_boundary
          })
        }
      },
      // A decision stored without a tier (written by another mode under this route id) is read by its target.
      fromStored: (stored, evidence) =>
        Option.some(decision(stored.tier ?? (stored.target === options.weak.name ? "weak" : "strong"), evidence)),
      fallback: (evidence) => decision("strong", evidence),
      tierOf: (decided) =>
        Option.map(
          Decision.selected(decided),
          (target): Policy.Tier => (target.name === options.weak.name ? "weak" : "strong")
        )
    })

    const route: Route = {
      id: options.id,
      name: options.name,
      algorithm: "llm_task_classifier",
      targets: distinctTargets([options.weak, options.strong]),
      contextWindow: options.contextWindow ?? Option.none(),
      toolCalling: options.toolCalling ?? Option.none(),
      decide
    }
    return route
  })
