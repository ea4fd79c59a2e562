/**
 * The `llm_classifier` route in `custom` mode: the judge answers the route's own `prompt` with a
 * JSON value matching the route's `response_schema` (sent as structured output and validated
 * locally), and `policy.selector` — a JSON Pointer into that value — names one of the route's
 * target labels (target table names). A selector that names no configured label abstains: the
 * route chooses its `default_target` (evidence `abstained`).
 *
 * Triggers, sessions, the `judge_failure` posture, breakers and the fail-open counter are the
 * classifier cascade shared with capability mode (`internal/classifierCascade.ts`): without a
 * verdict, `fail_open` keeps the session's stored target (`retained`), else `default_target`
 * (`fail-open` / `circuit-open`); `error` fails with `JudgeUnavailable` (502 / 504 / 503). An
 * invalid verdict (not JSON, not matching the schema, truncated) is "no verdict" under both.
 */
import type { Target } from "@switchyard-ts/client/Target"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import type * as Scope from "effect/Scope"
import * as Decision from "./Decision.js"
import type * as Evidence from "./Evidence.js"
import * as ClassifierCascade from "./internal/classifierCascade.js"
import * as JsonPointer from "./JsonPointer.js"
import { type CustomJudgeOptions, Judge } from "./Judge.js"
import type * as LateVerdict from "./LateVerdict.js"
import type * as Posture from "./Posture.js"
import type { Route } from "./Route.js"
import type { SessionStore } from "./SessionStore.js"

/** Options of a custom classifier route (its TOML keys, validated). */
export interface Options extends CustomJudgeOptions, LateVerdict.Options {
  readonly id: string
  readonly name: string
  /** `targets`: at least two, unique; each label is the target's table name. Route order. */
  readonly targets: ReadonlyArray<Target>
  /** `default_target`: one of `targets`. */
  readonly defaultTarget: Target
  /** `policy.selector`: a JSON Pointer other than the root. */
  readonly selector: JsonPointer.JsonPointer
  readonly classifyTrigger: ClassifierCascade.ClassifyTrigger
  /** Under `new_session`, a request without a session id is identified by its first user message. */
  readonly messageHashFallback: boolean
  readonly judgeFailure: Posture.Posture
  /**
   * Whose selection a session stores (default `session`): `agent` keys it by (session id, agent
   * id), both required — a route's `subagents` table (`Subagents.delegate`); `messageHashFallback`
   * is then unused.
   */
  readonly affinity?: ClassifierCascade.Affinity
  readonly contextWindow?: Option.Option<number>
  readonly toolCalling?: Option.Option<boolean>
}

/**
 * The label a verdict selects: the string at the selector when it names a configured target;
 * none (the route abstains) when the selector names nothing, a non-string, or an unknown label.
 */
export const selectLabel = (
  selector: JsonPointer.JsonPointer,
  labels: ReadonlyArray<string>,
  verdict: unknown
): Option.Option<string> =>
  JsonPointer.resolve(selector, verdict).pipe(
    Option.filter(Predicate.isString),
    Option.filter((label) => labels.includes(label))
  )

/**
 * Build a custom classifier route over the `Judge` and `SessionStore` services; its late judge
 * calls (`lateVerdictMs`) run in `Scope`.
 */
export const make = (options: Options): Effect.Effect<Route, never, Judge | SessionStore | Scope.Scope> =>
  Effect.gen(function*() {
    const judge = yield* Judge
    const info = { id: options.id, name: options.name, algorithm: "llm_task_classifier" } as const
    const labels = options.targets.map((target) => target.name)
    const byLabel = (label: string) => Option.fromNullable(options.targets.find((target) => target.name === label))

    const decision = (selected: Target, evidence: Evidence.Evidence): Decision.Decision =>
      Decision.routed({
        route: info,
        selected,
        fallbacks: options.targets.filter((target) => target.name !== selected.name),
        evidence
      })

    const decide = yield* ClassifierCascade.make<unknown>({
      routeId: options.id,
      classifyTrigger: options.classifyTrigger,
      messageHashFallback: options.messageHashFallback,
      ...(options.affinity === undefined ? {} : { affinity: options.affinity }),
      judgeFailure: options.judgeFailure,
      late: options,
      judgeModel: options.judge.id,
      consult: (request, judgeTimeoutMs) =>
        judge.classify({
          options: { ...options, judgeTimeoutMs },
          messages: request.body.messages,
          headers: request.headers
        }),
      judged: (verdict) =>
        Option.match(Option.flatMap(selectLabel(options.selector, labels, verdict), byLabel), {
          onNone: () => ({
            stored: { target: options.defaultTarget.name },
            decision: decision(options.defaultTarget, {
              source: "abstained",
              selector: options.selector.text,
              judge_model: options.judge.id
            })
          }),
          onSome: (selected) => ({
            stored: { target: selected.name },
            decision: decision(selected, { source: "llm-classifier", label: selected.name })
          })
        }),
      fromStored: (stored, evidence) => Option.map(byLabel(stored.target), (target) => decision(target, evidence)),
      fallback: (evidence) => decision(options.defaultTarget, evidence)
    })

    const route: Route = {
      id: options.id,
      name: options.name,
      algorithm: "llm_task_classifier",
      targets: options.targets,
      contextWindow: options.contextWindow ?? Option.none(),
      toolCalling: options.toolCalling ?? Option.none(),
      decide
    }
    return route
  })
