/**
 * `[routes.<n>]` with `type = "auto"` (docs/configuration.md): the compatible system's recommended
 * preset of the stage router. Only `capable_target` and `efficient_target` (beside the keys every
 * route has); any other key is `unknown field`. The route is a stage router with `picker =
 * "efficient_first"`, `confidence_threshold = 0.5` and every other setting at its default
 * (`recent_turn_window = 3`, `capable_hold_turns = 2`, no `tool_semantics`, system prompts, handoff
 * notes, `[classifier]` or `subagents`).
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as ParseResult from "effect/ParseResult"
import type * as Schema from "effect/Schema"
import type * as Types from "effect/Types"
import { lookupTarget } from "../../tables/KeyRules.js"
import { type RouteContext, routeKeyFields, routeTable } from "../../tables/RouteKeys.js"
import * as Table from "../../tables/Table.js"
import { keysOf, TomlString } from "../../tables/Toml.js"
import type * as StageRouteTable from "../stage/StageRouteTable.js"
import * as StageSignals from "../stage/StageSignals.js"

/** An `auto` route, validated: a stage router's spec (`StageRoute.make` takes it as it is), `type` aside. */
export type Spec = Types.Simplify<Omit<StageRouteTable.Spec, "type"> & { readonly type: "auto" }>

/** The `confidence_threshold` of an `auto` route. */
export const confidenceThreshold = 0.5

const keys = keysOf({
  ...routeKeyFields("auto"),
  capable_target: TomlString,
  efficient_target: TomlString
})

/** The auto route table: the common keys → `capable_target` → `efficient_target`; the rest is the preset. */
export const table = routeTable(
  keys,
  (keys, context, common): Effect.Effect<Spec, ParseResult.ParseIssue> =>
    Effect.gen(function*() {
      const capable = yield* lookupTarget(context.targets, ["capable_target"], keys.capable_target)
      const efficient = yield* lookupTarget(context.targets, ["efficient_target"], keys.efficient_target)
      return {
        ...common,
        type: "auto",
        capable,
        efficient,
        picker: "efficient_first",
        confidenceThreshold,
        recentTurnWindow: StageSignals.defaultRecentTurnWindow,
        capableHoldTurns: StageSignals.defaultCapableHoldTurns,
        toolSemantics: StageSignals.emptyToolSemantics,
        capableSystemPrompt: Option.none(),
        efficientSystemPrompt: Option.none(),
        handoffNotes: Option.none(),
        classifier: Option.none(),
        subagents: Option.none()
      }
    })
)

/** Decodes the auto route table named `context.name`; fails at the key path of its first problem. */
export const schema = (context: RouteContext): Schema.Schema<Spec, typeof keys.Encoded> => Table.schema(table, context)
