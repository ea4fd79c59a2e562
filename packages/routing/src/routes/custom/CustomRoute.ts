/**
 * The `llm_classifier` route in `custom` mode: the judge answers the route's own `prompt` with a
 * JSON value matching the route's `response_schema` (sent as structured output and validated
 * locally), and `policy.selector` — a JSON Pointer into that value — names one of the route's
 * target labels (target table names). A selector that names no configured label abstains: the
 * route chooses its `default_target` (evidence `abstained`).
 *
 * Its decision rules are {@link rules} over the classifier cascade's (`ClassifierCascade`), a pure
 * function of its settings that policy replay runs too: without a verdict, `fail_open` keeps the
 * session's stored target (`retained`), else `default_target` (`fail-open` / `circuit-open`);
 * `error` fails with `JudgeUnavailable` (502 / 504 / 503). An invalid verdict (not JSON, not
 * matching the schema, truncated) is "no verdict" under both. Sessions, locks, breakers, the
 * fail-open counter and late verdicts are the shell every classifier mode shares
 * (`internal/classifierRoute.ts`).
 */
import type { Target } from "@switchyard-ts/client/Target"
import type * as Arr from "effect/Array"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import * as Decision from "../../Decision.js"
import * as LiveHost from "../../host/LiveHost.js"
import * as ReplayHost from "../../host/ReplayHost.js"
import type * as RouteHost from "../../host/RouteHost.js"
import * as JsonPointer from "../../judge/JsonPointer.js"
import type { CustomJudgeOptions } from "../../judge/Judge.js"
import type * as LateVerdict from "../../judge/LateVerdict.js"
import type * as Posture from "../../judge/Posture.js"
import type { Route } from "../../Route.js"
import type * as ClassifierCascade from "../classifier/ClassifierCascade.js"
import * as ClassifierProgram from "../classifier/ClassifierProgram.js"

/** One group of the group form: its name (the label a verdict names) and its targets in serving order. */
export interface Group {
  readonly label: string
  /** The group's own targets, then the `any` group's other targets: the answer call's candidates. */
  readonly candidates: Arr.NonEmptyReadonlyArray<Target>
}

/** The group form of a custom route (`[routes.<n>.models]`, every group but `judge`). */
export interface Groups {
  /** In label order. */
  readonly groups: ReadonlyArray<Group>
  /** `default_target`: the label of a non-empty group. */
  readonly defaultLabel: string
}

/** Options of a custom classifier route (its TOML keys, validated). */
export interface Options extends CustomJudgeOptions, LateVerdict.Options {
  readonly id: string
  readonly name: string
  /**
   * `targets`: at least two, unique; each label is the target's table name. Route order. In the
   * group form: every routing target of the groups (`any`'s first), which are not labels.
   */
  readonly targets: ReadonlyArray<Target>
  /** `default_target`: one of `targets` (in the group form: the default group's first target). */
  readonly defaultTarget: Target
  /** The group form: labels are group names (default: each of `targets` is its own label). */
  readonly groups?: Groups
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
  readonly affinity?: ClassifierProgram.Affinity
  readonly contextWindow?: Option.Option<number>
  readonly toolCalling?: Option.Option<boolean>
}

/** The settings the decision rules read (a route's options, or a deployment's route spec). */
export interface Settings {
  /** `targets`, by label (target table name). */
  readonly targets: ReadonlyArray<Pick<Target, "name">>
  readonly defaultTarget: Pick<Target, "name">
  /** The group form: the labels are these groups' (see {@link Options.groups}). */
  readonly groups?: {
    readonly groups: ReadonlyArray<{ readonly label: string }>
    readonly defaultLabel: string
  }
  readonly selector: Pick<JsonPointer.JsonPointer, "text">
  readonly classifyTrigger: ClassifierCascade.ClassifyTrigger
}

/**
 * The string a verdict names at the selector, if any: what the rules read of a verdict (they
 * abstain when it is not one of the route's labels).
 */
export const namedLabel = (selector: JsonPointer.JsonPointer, verdict: unknown): Option.Option<string> =>
  JsonPointer.resolve(selector, verdict).pipe(Option.filter(Predicate.isString))

/**
 * The label a verdict selects: the string at the selector when it names a configured target;
 * none (the route abstains) when the selector names nothing, a non-string, or an unknown label.
 */
export const selectLabel = (
  selector: JsonPointer.JsonPointer,
  labels: ReadonlyArray<string>,
  verdict: unknown
): Option.Option<string> => namedLabel(selector, verdict).pipe(Option.filter((label) => labels.includes(label)))

/**
 * A custom route's decision rules over the label a verdict names: a configured label selects its
 * target (evidence `llm-classifier` with the label); anything else abstains to `default_target`
 * (evidence `abstained`); `default_target` by default; a session's stored label retained without a
 * verdict.
 */
export const rules = (
  settings: Settings,
  judgeModel: string
): ClassifierCascade.Rules<Option.Option<string>, string> => ({
  trigger: settings.classifyTrigger,
  retainWithoutVerdict: true,
  judgeModel,
  judged: (label) =>
    Option.match(Option.filter(label, (named) => isLabel(settings, named)), {
      onNone: () => ({
        selection: defaultLabel(settings),
        evidence: { source: "abstained", selector: settings.selector.text, judge_model: judgeModel }
      }),
      onSome: (named) => ({ selection: named, evidence: { source: "llm-classifier", label: named } })
    }),
  fallback: defaultLabel(settings)
})

/** The label `default_target` names. */
export const defaultLabel = (settings: Pick<Settings, "defaultTarget" | "groups">): string =>
  settings.groups?.defaultLabel ?? settings.defaultTarget.name

/** Whether `label` names one of the route's targets (in the group form: one of its groups). */
export const isLabel = (settings: Pick<Settings, "targets" | "groups">, label: string): boolean =>
  settings.groups === undefined
    ? settings.targets.some((target) => target.name === label)
    : settings.groups.groups.some((group) => group.label === label)

/** What {@link candidatesOf} reads: a route's options, or a replay's settings (targets by name). */
export interface Candidates<T extends { readonly name: string }> {
  readonly targets: ReadonlyArray<T>
  readonly defaultTarget: T
  readonly groups?: {
    readonly groups: ReadonlyArray<{ readonly label: string; readonly candidates: Arr.NonEmptyReadonlyArray<T> }>
    readonly defaultLabel: string
  } | undefined
}

/**
 * The answer call's candidates for a selected label: its target, then the route's other targets in
 * route order; in the group form, the group's candidates. An unknown label is `default_target`'s.
 */
export const candidatesOf = <T extends { readonly name: string }>(
  options: Candidates<T>,
  label: string
): Arr.NonEmptyReadonlyArray<T> => {
  const groups = options.groups
  if (groups !== undefined) {
    const group = groups.groups.find((g) => g.label === label) ??
      groups.groups.find((g) => g.label === groups.defaultLabel)
    return group === undefined ? [options.defaultTarget] : group.candidates
  }
  const selected = options.targets.find((target) => target.name === label) ?? options.defaultTarget
  return [selected, ...options.targets.filter((target) => target.name !== selected.name)]
}

/**
 * The custom route's program: the classifier program (`internal/classifierRoute.ts`) under
 * {@link rules}, the selected label's candidates ({@link candidatesOf}).
 */
export const program = (options: Options): RouteHost.Program => {
  const info = { id: options.id, name: options.name, algorithm: "llm_task_classifier" } as const
  const classify = ClassifierProgram.program<"Custom", string>({
    routeId: options.id,
    kind: "Custom",
    rules: rules(options, options.judge.id),
    messageHashFallback: options.messageHashFallback,
    ...(options.affinity === undefined ? {} : { affinity: options.affinity }),
    posture: options.judgeFailure,
    question: (request, late) => ({ _tag: "Custom", options, selector: options.selector, request, late }),
    toStored: (label) => ({ target: label }),
    fromStored: (stored) => Option.liftPredicate(stored.target, (label) => isLabel(options, label))
  })
  return (request) =>
    Effect.map(classify(request), ({ evidence, selection }) => {
      const [selected, ...fallbacks] = candidatesOf(options, selection)
      return Decision.routed({ route: info, selected, fallbacks, evidence })
    })
}

/**
 * Build a custom classifier route: its {@link program} on a live host (`LiveHost`: the `Judge`, the
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
      targets: options.targets,
      contextWindow: options.contextWindow ?? Option.none(),
      toolCalling: options.toolCalling ?? Option.none()
    },
    program(options)
  )

/** A custom route's replay: its {@link program} on the log's facts; the selected model is its destination. */
export const replayable = (options: Options): ReplayHost.Replayable => ({
  kind: "custom",
  algorithm: "llm_task_classifier",
  destinations: [...new Set(options.targets.map((target) => target.id))],
  logged: (record) => ReplayHost.loggedTier(record, (r) => r.selected_model ?? undefined),
  program: () => program(options)
})
