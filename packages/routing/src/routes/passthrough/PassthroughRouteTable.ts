/**
 * `[routes.<n>]` with `type = "passthrough"` (docs/configuration.md): always the one `target`, no
 * fallbacks; delegated sub-agent work per the optional `subagents` table.
 */
import * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import type * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { lookupTarget } from "../../tables/KeyRules.js"
import { type RouteContext, routeKeyFields, type RouteSpecOf, routeTable } from "../../tables/RouteKeys.js"
import * as Table from "../../tables/Table.js"
import { keysOf, TomlString } from "../../tables/Toml.js"
import * as SubagentsTable from "../subagents/SubagentsTable.js"
import type * as Passthrough from "./Passthrough.js"

/** A passthrough route, validated: `Passthrough.make` takes it as it is (the `subagents` table aside). */
export type Spec = RouteSpecOf<
  Passthrough.Options,
  {
    readonly type: "passthrough"
    /** The `subagents` table, unset by default: how delegated sub-agent work is routed instead. */
    readonly subagents: Option.Option<SubagentsTable.Spec>
  }
>

const keys = keysOf({
  ...routeKeyFields("passthrough"),
  target: TomlString,
  subagents: Schema.optional(SubagentsTable.table.keys)
})

/** The passthrough route table: the common keys → `target` → `subagents`. */
export const table = routeTable(
  keys,
  (keys, context, common): Effect.Effect<Spec, ParseResult.ParseIssue> =>
    Effect.gen(function*() {
      const target = yield* lookupTarget(context.targets, ["target"], keys.target)
      const subagents = yield* SubagentsTable.optional(keys.subagents, context.targets)
      return { ...common, type: "passthrough", target, subagents }
    })
)

/** Decodes the passthrough route table named `context.name`; fails at the key path of its first problem. */
export const schema = (context: RouteContext): Schema.Schema<Spec, typeof keys.Encoded> => Table.schema(table, context)
