/**
 * What a route type with a `subagents` table (passthrough, stage router, `auto`, composite) shares of
 * it: the sub-agent route its table describes (a fixed target, or a custom classifier whose stored
 * selections are keyed by (session id, agent id)), wrapped around the parent route
 * (`Subagents.delegate`), and the targets, judges and warnings it adds to the parent's.
 */
import type { Target } from "@switchyard-ts/client/Target"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as LiveHost from "../../host/LiveHost.js"
import * as JudgeChain from "../../judge/JudgeChain.js"
import type { Route } from "../../Route.js"
import * as JudgeKeys from "../../tables/JudgeKeys.js"
import type * as RouteKeys from "../../tables/RouteKeys.js"
import * as CustomRoute from "../custom/CustomRoute.js"
import * as Passthrough from "../passthrough/Passthrough.js"
import * as Subagents from "./Subagents.js"
import type * as SubagentsTable from "./SubagentsTable.js"

/** A parent route's spec with its optional `subagents` table. */
export type WithSubagents = RouteKeys.RouteCommon & { readonly subagents: Option.Option<SubagentsTable.Spec> }

/** The route a `subagents` table describes, over the parent route's id and name. */
const subagentRoute = (
  parent: RouteKeys.RouteCommon,
  spec: SubagentsTable.Spec
): Effect.Effect<Route, never, LiveHost.Services> =>
  spec.type === "passthrough"
    ? Effect.succeed(Passthrough.make({ id: parent.id, name: parent.name, target: spec.target }))
    : CustomRoute.make({
      ...spec,
      id: parent.id,
      name: parent.name,
      messageHashFallback: false,
      affinity: "agent"
    })

/** `parent` with its `subagents` table, if any, routing delegated sub-agent work. */
export const make = (
  spec: WithSubagents,
  parent: Effect.Effect<Route, never, LiveHost.Services>
): Effect.Effect<Route, never, LiveHost.Services> =>
  Option.match(spec.subagents, {
    onNone: () => parent,
    onSome: (table) => Effect.zipWith(parent, subagentRoute(spec, table), Subagents.delegate)
  })

/** The targets a `subagents` table may call. */
export const targets = (spec: WithSubagents): ReadonlyArray<Target> =>
  Option.match(spec.subagents, {
    onNone: () => [],
    onSome: (table) =>
      table.type === "passthrough"
        ? [table.target]
        : [...JudgeChain.judgesOf(table), ...table.targets, table.defaultTarget]
  })

/** The judge of a `subagents` classifier. */
export const judges = (spec: WithSubagents): ReadonlyArray<JudgeChain.Use> =>
  Option.match(spec.subagents, {
    onNone: () => [],
    onSome: (table) => table.type === "passthrough" ? [] : [JudgeChain.useOf(table)]
  })

/** The warning of a `subagents` classifier's unbounded judge (`route <n>: subagents judge client ...`). */
export const warnings = (spec: WithSubagents): ReadonlyArray<string> =>
  Option.match(spec.subagents, {
    onNone: () => [],
    onSome: (table) => table.type === "llm_classifier" ? JudgeKeys.unboundedJudge(spec, table, "subagents ") : []
  })
