/**
 * The validated deployment, as data: what a deployment TOML describes once `DeploymentToml`
 * checked it — LLM clients and targets (from `@switchyard-ts/client`), route specs and the
 * `[sessions]` and `[server]` tables. Every spec is the decoded type of its table's Schema (one
 * module per table: `CapabilityRouteTable`, `SubagentsTable`, ...), and a route spec is what the
 * route's `make` takes; the names here are those library users know. Nothing here does any work.
 */
import type { LlmClient, Target } from "@switchyard-ts/client/Target"
import type * as LateVerdict from "@switchyard-ts/routing/LateVerdict"
import type * as RouteTypes from "@switchyard-ts/routing/RouteTypes"
import type * as ServerTable from "./ServerTable.js"
import type * as SessionsTable from "./SessionsTable.js"

export type { Spec as AdvisorRouteSpec } from "@switchyard-ts/routing/AdvisorRouteTable"
export type { Spec as AutoRouteSpec } from "@switchyard-ts/routing/AutoRouteTable"
export type { Spec as ClassifierRouteSpec } from "@switchyard-ts/routing/CapabilityRouteTable"
export type { ClassifyTrigger } from "@switchyard-ts/routing/ClassifierCascade"
export type {
  ClassifierSpec as CompositeClassifierSpec,
  Spec as CompositeRouteSpec
} from "@switchyard-ts/routing/CompositeRouteTable"
export type { CustomClassifierSettings } from "@switchyard-ts/routing/CustomClassifierKeys"
export type { Spec as CustomClassifierRouteSpec } from "@switchyard-ts/routing/CustomRouteTable"
export type { Spec as EscalationClassifierRouteSpec } from "@switchyard-ts/routing/EscalationRouteTable"
export type { CapabilityJudgeSpec } from "@switchyard-ts/routing/JudgeKeys"
export type { Spec as NoopRouteSpec } from "@switchyard-ts/routing/NoopRouteTable"
export type { Spec as PassthroughRouteSpec } from "@switchyard-ts/routing/PassthroughRouteTable"
export type { Posture as JudgeFailurePosture } from "@switchyard-ts/routing/Posture"
export type { Spec as RandomRouteSpec } from "@switchyard-ts/routing/RandomRouteTable"
export type { RouteCommon, RouteContext } from "@switchyard-ts/routing/RouteKeys"
export type { HandoffNotes as HandoffNotesSpec } from "@switchyard-ts/routing/StageRoute"
export type {
  ClassifierSpec as StageClassifierSpec,
  Spec as StageRouterRouteSpec
} from "@switchyard-ts/routing/StageRouteTable"
export type {
  ClassifierSpec as CustomSubagentsSpec,
  PassthroughSpec as PassthroughSubagentsSpec,
  Spec as SubagentsSpec
} from "@switchyard-ts/routing/SubagentsTable"
export type { Spec as ServerSpec } from "./ServerTable.js"
export type { SessionStoreKind, Spec as SessionsSpec } from "./SessionsTable.js"

/** Late verdicts of a classifier (`late_verdict_ms`, `max_late_verdicts`), validated. */
export type LateVerdictSpec = Required<Omit<LateVerdict.Options, "judgeTimeoutMs">>

/** Any route table, validated: what `Deployment.routes` builds a route of (one per route type of `RouteTypes`). */
export type RouteSpec = RouteTypes.RouteSpec

/** A validated deployment. Every list is sorted by table name (routes by route id). */
export interface Deployment {
  readonly clients: ReadonlyArray<LlmClient>
  readonly targets: ReadonlyArray<Target>
  readonly routes: ReadonlyArray<RouteSpec>
  readonly sessions: SessionsTable.Spec
  readonly server: ServerTable.Spec
  /**
   * `fallback_client`: the LLM client every request matching no endpoint is forwarded to as it
   * came (only its `base_url` is used). Absent: such requests get the 404.
   */
  readonly fallbackClient?: LlmClient
}
