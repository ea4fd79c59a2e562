/**
 * The registry of route types: each `[routes.<name>]` table's kind (its `type`, and an
 * `llm_classifier`'s mode) and its `RouteType`. Every question about a route spec that depends on
 * its type is asked here ({@link of}): nothing else switches on a route's type.
 *
 * Adding a route type: a folder under `routes/` with its table, its route and its `RouteType`, and a
 * line here (the compiler then asks for its case in {@link of}).
 */
import type { Target } from "@switchyard-ts/client/Target"
import type * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import type * as ParseResult from "effect/ParseResult"
import type * as LiveHost from "../host/LiveHost.js"
import type * as ReplayHost from "../host/ReplayHost.js"
import type * as JudgeChain from "../judge/JudgeChain.js"
import type { Route } from "../Route.js"
import type * as RouteKeys from "../tables/RouteKeys.js"
import * as AdvisorRouteType from "./advisor/AdvisorRouteType.js"
import * as AutoRouteType from "./auto/AutoRouteType.js"
import * as CapabilityRouteType from "./capability/CapabilityRouteType.js"
import type * as ClassifierMode from "./classifier/ClassifierMode.js"
import * as CompositeRouteType from "./composite/CompositeRouteType.js"
import * as CustomRouteType from "./custom/CustomRouteType.js"
import * as EscalationRouteType from "./escalation/EscalationRouteType.js"
import * as NoopRouteType from "./noop/NoopRouteType.js"
import * as PassthroughRouteType from "./passthrough/PassthroughRouteType.js"
import * as RandomRouteType from "./random/RandomRouteType.js"
import type { RouteType, RoutingAnswer, SpecOf, StatsBlock } from "./RouteType.js"
import * as StageRouteType from "./stage/StageRouteType.js"

/** The route types, by kind: a table's `type`, an `llm_classifier`'s `mode`. */
export const routeTypes = {
  noop: NoopRouteType.routeType,
  passthrough: PassthroughRouteType.routeType,
  random: RandomRouteType.routeType,
  capability: CapabilityRouteType.routeType,
  custom: CustomRouteType.routeType,
  escalation: EscalationRouteType.routeType,
  stage_router: StageRouteType.routeType,
  auto: AutoRouteType.routeType,
  composite: CompositeRouteType.routeType,
  advisor: AdvisorRouteType.routeType
} as const

/** A route type's kind. */
export type Kind = keyof typeof routeTypes

/**
 * The `type` values of route tables, in the order load errors list them (the compatible system's,
 * then this system's own): every kind but the classifier modes, whose table says `llm_classifier`.
 */
export const tableTypes = [
  "noop",
  "passthrough",
  "random",
  "llm_classifier",
  "stage_router",
  "advisor",
  "auto",
  "composite"
] as const satisfies ReadonlyArray<Exclude<Kind, ClassifierMode.Mode> | "llm_classifier">

/** The `type` of a route table. */
export type TableType = (typeof tableTypes)[number]

/** A kind that has no table type: none, or the compiler says which below. */
type Untyped = Exclude<Exclude<Kind, ClassifierMode.Mode>, TableType>
// Every kind has its table type: a kind missing from `tableTypes` makes this `true` a type error naming it.
export const everyKindHasATableType: [Untyped] extends [never] ? true : Untyped = true

/** Every route kind, in the registry's order. */
export const kinds: ReadonlyArray<Kind> = Object.keys(routeTypes).filter((key): key is Kind => key in routeTypes)

/** Any validated route table (what `Deployment.routes` builds routes of). */
export type RouteSpec = { readonly [K in Kind]: SpecOf<(typeof routeTypes)[K]> }[Kind]

/** A route type's parts applied to one spec. */
export interface Bound {
  readonly kind: Kind
  readonly make: Effect.Effect<Route, never, LiveHost.Services>
  readonly replayable: Option.Option<ReplayHost.Replayable>
  readonly baseline: Option.Option<Target>
  readonly answerTargets: ReadonlyArray<Target>
  readonly routingTargets: ReadonlyArray<Target>
  /** Its judges, each chain's in order. */
  readonly judges: ReadonlyArray<Target>
  /** Its judge chains with their postures. */
  readonly judgeChains: ReadonlyArray<JudgeChain.Use>
  readonly routingAnswer: Option.Option<RoutingAnswer>
  readonly destinationModel: (destination: string) => string | undefined
  readonly warnings: ReadonlyArray<string>
  readonly statsBlocks: ReadonlyArray<StatsBlock>
}

const bind = <K, I, Spec extends RouteKeys.RouteCommon>(
  kind: Kind,
  type: RouteType<K & { readonly id: string }, I, Spec>,
  spec: Spec
): Bound => ({
  kind,
  make: type.make(spec),
  replayable: type.replayable(spec),
  baseline: type.baseline(spec),
  answerTargets: type.answerTargets(spec),
  routingTargets: type.routingTargets(spec),
  judges: type.judges(spec).flatMap((use) => use.judges),
  judgeChains: type.judges(spec),
  routingAnswer: type.routingAnswer(spec),
  destinationModel: type.destinationModel(spec),
  warnings: type.warnings(spec),
  statsBlocks: type.statsBlocks
})

/** An `llm_classifier` spec's route type, by its mode. */
const classifier = (spec: Extract<RouteSpec, { readonly type: "llm_classifier" }>): Bound => {
  switch (spec.mode) {
    case "capability":
      return bind("capability", routeTypes.capability, spec)
    case "custom":
      return bind("custom", routeTypes.custom, spec)
    case "escalation":
      return bind("escalation", routeTypes.escalation, spec)
  }
}

/** The route type of `spec`, applied to it: the one place a route's type is looked at. */
export const of = (spec: RouteSpec): Bound => {
  switch (spec.type) {
    case "noop":
      return bind("noop", routeTypes.noop, spec)
    case "passthrough":
      return bind("passthrough", routeTypes.passthrough, spec)
    case "random":
      return bind("random", routeTypes.random, spec)
    case "llm_classifier":
      return classifier(spec)
    case "stage_router":
      return bind("stage_router", routeTypes.stage_router, spec)
    case "auto":
      return bind("auto", routeTypes.auto, spec)
    case "composite":
      return bind("composite", routeTypes.composite, spec)
    case "advisor":
      return bind("advisor", routeTypes.advisor, spec)
  }
}

/**
 * Every target a route's requests may call: its answer targets, then its judges, advisor and
 * sub-agent targets.
 */
export const callableTargets = (spec: RouteSpec): ReadonlyArray<Target> => {
  const bound = of(spec)
  return [...bound.answerTargets, ...bound.routingTargets]
}

/** Read a route table of `kind` (its keys now, its rules later: `RouteKeys.reader`). */
export const read = (
  kind: Kind,
  input: unknown
): Effect.Effect<RouteKeys.Read<RouteSpec>, ParseResult.ParseIssue> => {
  const readTable: (input: unknown) => Effect.Effect<RouteKeys.Read<RouteSpec>, ParseResult.ParseIssue> =
    routeTypes[kind].read
  return readTable(input)
}
