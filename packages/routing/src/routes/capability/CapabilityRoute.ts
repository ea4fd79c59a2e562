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
import * as Decision from "../../Decision.js"
import * as LiveHost from "../../host/LiveHost.js"
import * as ReplayHost from "../../host/ReplayHost.js"
import type * as RouteHost from "../../host/RouteHost.js"
import type { JudgeOptions } from "../../judge/Judge.js"
import type * as LateVerdict from "../../judge/LateVerdict.js"
import type * as Posture from "../../judge/Posture.js"
import type { Verdict } from "../../judge/Verdict.js"
import { distinctTargets, type Route } from "../../Route.js"
import type * as ClassifierCascade from "../classifier/ClassifierCascade.js"
import * as ClassifierProgram from "../classifier/ClassifierProgram.js"
import * as ThresholdPolicy from "./ThresholdPolicy.js"

/** Options of a capability route (its TOML keys, validated). */
export interface Options extends JudgeOptions, LateVerdict.Options {
  readonly id: string
  readonly name: string
  readonly weak: Target
  readonly strong: Target
  readonly baseThreshold: number
  readonly thresholdStep: number
  readonly classifyTrigger: ClassifierCascade.ClassifyTrigger
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

/**
 * The capability route's decision rules: a verdict's tier by the threshold policy (evidence
 * `llm-classifier` with its score, threshold and boundary); strong by default; a session's stored
 * tier retained without a verdict.
 */
export const rules = (
  settings: Settings,
  judgeModel: string
): ClassifierCascade.Rules<Judgement, ThresholdPolicy.Tier> => ({
  trigger: settings.classifyTrigger,
  retainWithoutVerdict: true,
  judgeModel,
  judged: (verdict) => {
    const chosen = ThresholdPolicy.choose(verdict, settings.baseThreshold, settings.thresholdStep)
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
 * The capability route's program: the classifier program (`internal/classifierRoute.ts`) under
 * {@link rules}, its tier's target selected, the other one its fallback.
 */
export const program = (options: Options): RouteHost.Program => {
  const info = { id: options.id, name: options.name, algorithm: "llm_task_classifier" } as const
  const targetOf = (tier: ThresholdPolicy.Tier) => (tier === "weak" ? options.weak : options.strong)
  const classify = ClassifierProgram.program<"Capability", ThresholdPolicy.Tier>({
    routeId: options.id,
    kind: "Capability",
    rules: rules(options, options.judge.id),
    messageHashFallback: options.messageHashFallback,
    posture: options.judgeFailure,
    question: (request, late) => ({ _tag: "Capability", options, request, late }),
    toStored: (tier) => ({ target: targetOf(tier).name, tier }),
    // A decision stored without a tier (written by another mode under this route id) is read by its target.
    fromStored: (stored) => Option.some(stored.tier ?? (stored.target === options.weak.name ? "weak" : "strong")),
    tierOf: Option.some
  })
  return (request) =>
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

/**
 * Build a capability route: its {@link program} on a live host (`LiveHost`: the `Judge`, the
 * `SessionStore`); its late judge calls (`lateVerdictMs`) run in `Scope`.
 */
export const make = (options: Options): Effect.Effect<Route, never, LiveHost.Services> =>
  LiveHost.route(
    {
      algorithm: "llm_task_classifier",
      late: LiveHost.lateOf(options, options.judgeFailure, options.judge.id)
    },
    {
      id: options.id,
      name: options.name,
      algorithm: "llm_task_classifier",
      targets: distinctTargets([options.weak, options.strong]),
      contextWindow: options.contextWindow ?? Option.none(),
      toolCalling: options.toolCalling ?? Option.none()
    },
    program(options)
  )

/** A capability route's replay: its {@link program} on the log's facts; the log's tier is its destination. */
export const replayable = (options: Options): ReplayHost.Replayable => ({
  kind: "capability",
  algorithm: "llm_task_classifier",
  destinations: ["weak", "strong"],
  logged: (record) =>
    ReplayHost.loggedTier(record, (r) => (r.tier === "weak" || r.tier === "strong" ? r.tier : undefined)),
  program: () => program(options)
})
