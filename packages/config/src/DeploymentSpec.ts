/**
 * The validated deployment, as data: what a deployment TOML describes once `DeploymentToml`
 * checked it — LLM clients and targets (from `@switchyard-ts/client`), route specs and the
 * `[sessions]` and `[server]` tables. Every spec is the decoded type of its table's Schema (one
 * module per table: `CapabilityRouteTable`, `SubagentsTable`, ...), and a route spec is what the
 * route's `make` takes; the names here are those library users know. Nothing here does any work.
 */
import type { LlmClient, Target } from "@switchyard-ts/client/Target"
import type * as LateVerdict from "@switchyard-ts/routing/LateVerdict"
import type * as AdvisorRouteTable from "./AdvisorRouteTable.js"
import type * as AutoRouteTable from "./AutoRouteTable.js"
import type * as CapabilityRouteTable from "./CapabilityRouteTable.js"
import type * as CompositeRouteTable from "./CompositeRouteTable.js"
import type * as CustomRouteTable from "./CustomRouteTable.js"
import type * as EscalationRouteTable from "./EscalationRouteTable.js"
import type * as NoopRouteTable from "./NoopRouteTable.js"
import type * as PassthroughRouteTable from "./PassthroughRouteTable.js"
import type * as RandomRouteTable from "./RandomRouteTable.js"
import type * as ServerTable from "./ServerTable.js"
import type * as SessionsTable from "./SessionsTable.js"
import type * as StageRouteTable from "./StageRouteTable.js"

export type { ClassifyTrigger } from "@switchyard-ts/routing/CapabilityRoute"
export type { Posture as JudgeFailurePosture } from "@switchyard-ts/routing/Posture"
export type { HandoffNotes as HandoffNotesSpec } from "@switchyard-ts/routing/StageRoute"
export type { Spec as AdvisorRouteSpec } from "./AdvisorRouteTable.js"
export type { Spec as AutoRouteSpec } from "./AutoRouteTable.js"
export type { Spec as ClassifierRouteSpec } from "./CapabilityRouteTable.js"
export type { ClassifierSpec as CompositeClassifierSpec, Spec as CompositeRouteSpec } from "./CompositeRouteTable.js"
export type { Spec as CustomClassifierRouteSpec } from "./CustomRouteTable.js"
export type { Spec as EscalationClassifierRouteSpec } from "./EscalationRouteTable.js"
export type { CustomClassifierSettings } from "./internal/customClassifier.js"
export type { CapabilityJudgeSpec } from "./internal/judgeKeys.js"
export type { RouteCommon, RouteContext } from "./internal/routeKeys.js"
export type { Spec as NoopRouteSpec } from "./NoopRouteTable.js"
export type { Spec as PassthroughRouteSpec } from "./PassthroughRouteTable.js"
export type { Spec as RandomRouteSpec } from "./RandomRouteTable.js"
export type { Spec as ServerSpec } from "./ServerTable.js"
export type { SessionStoreKind, Spec as SessionsSpec } from "./SessionsTable.js"
export type { ClassifierSpec as StageClassifierSpec, Spec as StageRouterRouteSpec } from "./StageRouteTable.js"
export type {
  ClassifierSpec as CustomSubagentsSpec,
  PassthroughSpec as PassthroughSubagentsSpec,
  Spec as SubagentsSpec
} from "./SubagentsTable.js"

/** Late verdicts of a classifier (`late_verdict_ms`, `max_late_verdicts`), validated. */
export type LateVerdictSpec = Required<Omit<LateVerdict.Options, "judgeTimeoutMs">>

/** Any route table, validated: what `Deployment.routes` builds a route of. */
export type RouteSpec =
  | NoopRouteTable.Spec
  | PassthroughRouteTable.Spec
  | RandomRouteTable.Spec
  | CapabilityRouteTable.Spec
  | CustomRouteTable.Spec
  | EscalationRouteTable.Spec
  | StageRouteTable.Spec
  | AutoRouteTable.Spec
  | CompositeRouteTable.Spec
  | AdvisorRouteTable.Spec

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
