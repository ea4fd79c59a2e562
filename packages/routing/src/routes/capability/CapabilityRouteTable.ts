/**
 * `[routes.<n>]` with `type = "llm_classifier"` and `mode = "capability"` (the default mode;
 * docs/configuration.md): a judge estimates p_solve and the request goes weak or strong by
 * threshold. `fail_open` (a boolean, the compatible system's key) is another way to write
 * `judge_failure`: `true` is `"fail_open"`, `false` is `"error"`; giving both is a load error.
 */
import * as Effect from "effect/Effect"
import type * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { capabilityJudge, capabilityJudgeFields, chain, weakStrong, weakStrongFields } from "../../tables/JudgeKeys.js"
import { type RouteContext, routeKeyFields, type RouteSpecOf, routeTable } from "../../tables/RouteKeys.js"
import * as Table from "../../tables/Table.js"
import { failAt, keysOf, TomlBoolean, TomlVariant } from "../../tables/Toml.js"
import type * as CapabilityRoute from "./CapabilityRoute.js"

/** A capability route, validated: `CapabilityRoute.make` takes it as it is. */
export type Spec = RouteSpecOf<
  CapabilityRoute.Options,
  { readonly type: "llm_classifier"; readonly mode: "capability" }
>

const keys = keysOf({
  ...routeKeyFields("llm_classifier"),
  mode: Schema.optional(TomlVariant("capability")),
  ...weakStrongFields,
  ...capabilityJudgeFields,
  fail_open: Schema.optional(TomlBoolean)
})

/** The capability route table: the common keys → the targets → the capability judge's keys. */
export const table = routeTable(
  keys,
  (keys, context, common): Effect.Effect<Spec, ParseResult.ParseIssue> =>
    Effect.gen(function*() {
      const targets = yield* weakStrong(keys, context.targets)
      if (keys.fail_open !== undefined && keys.judge_failure !== undefined) {
        return yield* failAt(["fail_open"], "fail_open and judge_failure are one setting: give one of them")
      }
      const judge = yield* capabilityJudge(
        keys.fail_open === undefined ? keys : { ...keys, judge_failure: keys.fail_open ? "fail_open" : "error" }
      )
      const judges = yield* chain(keys, context.targets, {
        judge: targets.judge,
        destinations: [targets.weak, targets.strong],
        lateVerdictMs: judge.lateVerdictMs
      })
      return { ...common, type: "llm_classifier", mode: "capability", ...targets, ...judge, ...judges }
    })
)

/** Decodes the capability route table named `context.name`; fails at the key path of its first problem. */
export const schema = (context: RouteContext): Schema.Schema<Spec, typeof keys.Encoded> => Table.schema(table, context)
