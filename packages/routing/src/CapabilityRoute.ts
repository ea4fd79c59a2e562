/**
 * The `llm_classifier` route in `capability` mode: a judge estimates whether the weak target can
 * solve the task; the threshold policy picks weak or strong. The route's `judge_failure` posture
 * decides what a judge failure does; `classify_trigger` decides when the judge is consulted and
 * when a session keeps its stored decision (README.md, the judge failure posture; docs/routes.md).
 *
 * Its decision rules are {@link rules}: the threshold policy over the classifier cascade's rules
 * (`ClassifierCascade`), a pure function of the route's settings that policy replay runs too. The
 * judge is consulted through `Consultation.run` with the route's posture, which gives a verdict,
 * "without a verdict" with its reason — an invalid verdict, a call failure under `fail_open`, or a
 * call refused by the judge client's open breaker under `fail_open` (`circuit-open`) — or fails the
 * request (`JudgeUnavailable`: 502 / 504, 503 for the breaker) under `error`. Sessions, locks and
 * late verdicts are the shell every classifier mode shares (`internal/classifierRoute.ts`).
 */
import type { Target } from "@switchyard-ts/client/Target"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import type * as ClassifierCascade from "./ClassifierCascade.js"
import * as Consultation from "./Consultation.js"
import * as Decision from "./Decision.js"
import type * as Evidence from "./Evidence.js"
import * as ClassifierRoute from "./internal/classifierRoute.js"
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

/** The settings the decision rules read (a route's options, or a deployment's route spec). */
export type Settings = Pick<Options, "baseThreshold" | "thresholdStep" | "classifyTrigger">

/** What the rules read of a verdict. */
export type Judgement = Pick<Verdict, "p_solve" | "capability_boundary">

/** The bounded reason label of a judge failure: {@link Consultation.reasonOf}, kept under its old name. */
export const reasonOf: (error: JudgeError) => Evidence.Reason = Consultation.reasonOf

/**
 * The capability route's decision rules: a verdict's tier by the threshold policy (evidence
 * `llm-classifier` with its score, threshold and boundary); strong by default; a session's stored
 * tier retained without a verdict.
 */
export const rules = (settings: Settings, judgeModel: string): ClassifierCascade.Rules<Judgement, Policy.Tier> => ({
  trigger: settings.classifyTrigger,
  retainWithoutVerdict: true,
  judgeModel,
  judged: (verdict) => {
    const chosen = Policy.choose(verdict, settings.baseThreshold, settings.thresholdStep)
    return {
      selection: chosen.tier,
      evidence: {
        source: "llm-classifier",
        score: verdict.p_solve,
        threshold: chosen.threshold,
        boundary: verdict.capability_boundary
      }
    }
  },
  fallback: "strong"
})

/**
 * Build a capability route over the `Judge` and `SessionStore` services; its late judge calls
 * (`lateVerdictMs`) run in `Scope`.
 */
export const make = (options: Options): Effect.Effect<Route, never, Judge | SessionStore | Scope.Scope> =>
  Effect.gen(function*() {
    const judge = yield* Judge
    const info = { id: options.id, name: options.name, algorithm: "llm_task_classifier" } as const
    const targetOf = (tier: Policy.Tier) => (tier === "weak" ? options.weak : options.strong)

    const classify = yield* ClassifierRoute.make<Judgement, Policy.Tier>({
      routeId: options.id,
      rules: rules(options, options.judge.id),
      messageHashFallback: options.messageHashFallback,
      posture: options.judgeFailure,
      late: options,
      consult: (request, judgeTimeoutMs) =>
        judge.consult({
          options: { ...options, judgeTimeoutMs },
          messages: request.body.messages,
          headers: request.headers
        }),
      toStored: (tier) => ({ target: targetOf(tier).name, tier }),
      // A decision stored without a tier (written by another mode under this route id) is read by its target.
      fromStored: (stored) => Option.some(stored.tier ?? (stored.target === options.weak.name ? "weak" : "strong")),
      tierOf: Option.some
    })

    const route: Route = {
      id: options.id,
      name: options.name,
      algorithm: "llm_task_classifier",
      targets: distinctTargets([options.weak, options.strong]),
      contextWindow: options.contextWindow ?? Option.none(),
      toolCalling: options.toolCalling ?? Option.none(),
      decide: (request) =>
        Effect.map(classify(request), ({ evidence, selection }) => {
          const selected = targetOf(selection)
          return Decision.routed({
            route: info,
            selected,
            fallbacks: [options.weak, options.strong].filter((target) => target.name !== selected.name),
            evidence
          })
        })
    }
    return route
  })
