/**
 * `[routes.<n>]` with `type = "composite"` (docs/configuration.md): a capability classifier
 * (`[classifier]`) sets the tier a stage router (`[stage]`) falls open to when its signals are not
 * confident, kept per session by `classify_trigger`. Delegated sub-agent work goes per `subagents`.
 *
 * `[classifier]` takes a stage router classifier's keys with `classify_trigger` required and
 * `user_turn` or `new_session` (`every_request` is refused); `judge_failure` may also be set on the
 * route itself (not both). `[stage]` takes a stage router's turn keys: no `picker` (the classifier
 * does its job) and no nested `classifier`. The rules' own messages start `composite route <name>: `.
 */
import * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import type * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { capabilityJudge, capabilityJudgeFields, chain, ClassifyTrigger } from "../../tables/JudgeKeys.js"
import { lookupTarget } from "../../tables/KeyRules.js"
import { type RouteContext, routeKeyFields, type RouteSpecOf, routeTable } from "../../tables/RouteKeys.js"
import * as Table from "../../tables/Table.js"
import { failAt, keysOf, subtable, TomlString, TomlVariant } from "../../tables/Toml.js"
import * as StageRouteTable from "../stage/StageRouteTable.js"
import * as SubagentsTable from "../subagents/SubagentsTable.js"
import type * as CompositeRoute from "./CompositeRoute.js"

/** A composite route's `[classifier]`, validated (the judge included). */
export type ClassifierSpec = Required<CompositeRoute.ClassifierOptions>

/**
 * A composite route, validated: `CompositeRoute.make` takes it as it is (the `subagents` table
 * aside); the `[stage]` table's keys are the route's own.
 */
export type Spec = RouteSpecOf<
  Omit<CompositeRoute.Options, "classifier">,
  {
    readonly type: "composite"
    readonly classifier: ClassifierSpec
    /** The `subagents` table, unset by default: how delegated sub-agent work is routed instead. */
    readonly subagents: Option.Option<SubagentsTable.Spec>
  }
>

/** `[routes.<n>.classifier]`: a capability judge's keys, `target` naming the judge, `classify_trigger` required. */
const ClassifierKeys = subtable({ target: TomlString, ...capabilityJudgeFields, classify_trigger: ClassifyTrigger })

/** `[routes.<n>.stage]`: a stage router's turn keys. */
const StageKeys = subtable(StageRouteTable.turnFields)

const keys = keysOf({
  ...routeKeyFields("composite"),
  judge_failure: Schema.optional(TomlVariant("error", "fail_open")),
  classifier: ClassifierKeys,
  stage: StageKeys,
  subagents: Schema.optional(SubagentsTable.table.keys)
})

/** `[classifier]`: `classify_trigger` (not `every_request`), `target`, a capability judge's rules, the route's `judge_failure`. */
const classifier = (
  table: typeof ClassifierKeys.Type,
  routeJudgeFailure: "error" | "fail_open" | undefined,
  context: RouteContext,
  label: string
) =>
  Effect.gen(function*() {
    const trigger = table.classify_trigger
    if (trigger === "every_request") {
      return yield* failAt(
        ["classify_trigger"],
        `${label}classify_trigger must be user_turn or new_session, got every_request`
      )
    }
    if (routeJudgeFailure !== undefined && table.judge_failure !== undefined) {
      return yield* failAt(
        ["judge_failure"],
        `${label}judge_failure is set both on the route and in [classifier]; set it in one place`
      )
    }
    const judge = yield* lookupTarget(context.targets, ["target"], table.target)
    const settings = yield* capabilityJudge({ ...table, judge_failure: table.judge_failure ?? routeJudgeFailure })
    const spec: Omit<ClassifierSpec, "fallbacks" | "hedgeMs"> = { judge, ...settings, classifyTrigger: trigger }
    return spec
  })

/**
 * The composite route table, in order: the common keys → `[classifier]` → `[stage]` (a stage
 * router's turn keys, `StageRouteTable.turn`) → `subagents`.
 */
export const table = routeTable(
  keys,
  (keys, context, common): Effect.Effect<Spec, ParseResult.ParseIssue> =>
    Effect.gen(function*() {
      const label = `composite route ${context.name}: `
      const judge = yield* Table.nested(
        ["classifier"],
        classifier(keys.classifier, keys.judge_failure, context, label)
      )
      const stage = yield* Table.nested(["stage"], StageRouteTable.turn(keys.stage, context.targets, label))
      const judges = yield* Table.nested(
        ["classifier"],
        chain(keys.classifier, context.targets, {
          judge: judge.judge,
          destinations: [stage.capable, stage.efficient],
          lateVerdictMs: judge.lateVerdictMs
        })
      )
      const subagents = yield* SubagentsTable.optional(keys.subagents, context.targets)
      return { ...common, type: "composite", ...stage, classifier: { ...judge, ...judges }, subagents }
    })
)

/** Decodes the composite route table named `context.name`; fails at the key path of its first problem. */
export const schema = (context: RouteContext): Schema.Schema<Spec, typeof keys.Encoded> => Table.schema(table, context)
