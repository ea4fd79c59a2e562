/**
 * The validated deployment, as data: what a deployment TOML describes once `DeploymentToml`
 * checked it — LLM clients and targets (from `@switchyard-ts/client`), route specs and the
 * `[sessions]` and `[server]` tables. Every spec is the decoded type of its table's Schema (one
 * module per table: `CapabilityRouteTable`, `SubagentsTable`, ...), and a route spec is what the
 * route's `make` takes; the names here are those library users know. Nothing here does any work.
 */
import type { LlmClient, Target } from "@switchyard-ts/client/Target"
import type * as CapabilityRoute from "@switchyard-ts/routing/CapabilityRoute"
import type * as LateVerdict from "@switchyard-ts/routing/LateVerdict"
import type * as Posture from "@switchyard-ts/routing/Posture"
import type * as StageRoute from "@switchyard-ts/routing/StageRoute"
import type * as AdvisorRouteTable from "./AdvisorRouteTable.js"
import type * as CapabilityRouteTable from "./CapabilityRouteTable.js"
import type * as CustomRouteTable from "./CustomRouteTable.js"
import type * as EscalationRouteTable from "./EscalationRouteTable.js"
import type * as NoopRouteTable from "./NoopRouteTable.js"
import type * as PassthroughRouteTable from "./PassthroughRouteTable.js"
import type * as RandomRouteTable from "./RandomRouteTable.js"
import type * as ServerTable from "./ServerTable.js"
import type * as SessionsTable from "./SessionsTable.js"
import type * as StageRouteTable from "./StageRouteTable.js"
import type * as SubagentsTable from "./SubagentsTable.js"

export type { CustomClassifierSettings } from "./internal/customClassifier.js"
export type { CapabilityJudgeSpec } from "./internal/judgeKeys.js"
export type { RouteCommon, RouteContext } from "./internal/routeKeys.js"
export type { SessionStoreKind } from "./SessionsTable.js"

/** `type = "noop"`: answers `OK` itself, without any upstream. */
export type NoopRouteSpec = NoopRouteTable.Spec

/** `type = "passthrough"`: always the one target, no fallbacks; delegated sub-agent work per `subagents`. */
export type PassthroughRouteSpec = PassthroughRouteTable.Spec

/** `subagents = { type = "passthrough", target = "<target>" }`: delegated work goes to one target. */
export type PassthroughSubagentsSpec = SubagentsTable.PassthroughSpec

/** `subagents` with `type = "llm_classifier"`, `mode = "custom"`: a custom classifier picks the sub-agent's target. */
export type CustomSubagentsSpec = SubagentsTable.ClassifierSpec

/** A route's `subagents` table. */
export type SubagentsSpec = SubagentsTable.Spec

/** `type = "random"`: a weighted pick among `targets`; the others are fallbacks in config order. */
export type RandomRouteSpec = RandomRouteTable.Spec

/** What a classifier route does when its judge cannot be reached (`judge_failure`): routing's posture. */
export type JudgeFailurePosture = Posture.Posture

/** When a classifier consults its judge (`classify_trigger`). */
export type ClassifyTrigger = CapabilityRoute.ClassifyTrigger

/** Late verdicts of a classifier (`late_verdict_ms`, `max_late_verdicts`), validated. */
export type LateVerdictSpec = Required<Omit<LateVerdict.Options, "judgeTimeoutMs">>

/** `type = "llm_classifier"`, `mode = "capability"`: a judge estimates p_solve; weak or strong by threshold. */
export type ClassifierRouteSpec = CapabilityRouteTable.Spec

/** `type = "llm_classifier"`, `mode = "escalation"`: the judge reads finished weak turns; a session latches to strong. */
export type EscalationClassifierRouteSpec = EscalationRouteTable.Spec

/** `type = "llm_classifier"`, `mode = "custom"`: the judge's JSON verdict names one of `targets`. */
export type CustomClassifierRouteSpec = CustomRouteTable.Spec

/** A stage router's `[classifier]` table: a capability judge for the turns its signals leave undecided. */
export type StageClassifierSpec = StageRouteTable.ClassifierSpec

/** A stage router's `[handoff_notes]` table. */
export type HandoffNotesSpec = StageRoute.HandoffNotes

/** `type = "stage_router"`: capable or efficient target by each turn's tool-result signals. */
export type StageRouterRouteSpec = StageRouteTable.Spec

/** `type = "advisor"`: the executor answers; the advisor reviews turns that would end the work. */
export type AdvisorRouteSpec = AdvisorRouteTable.Spec

/** Any route table, validated. */
export type RouteSpec =
  | NoopRouteSpec
  | PassthroughRouteSpec
  | RandomRouteSpec
  | ClassifierRouteSpec
  | CustomClassifierRouteSpec
  | EscalationClassifierRouteSpec
  | StageRouterRouteSpec
  | AdvisorRouteSpec

/** The optional `[sessions]` table, validated (defaults when absent). */
export type SessionsSpec = SessionsTable.Spec

/** The optional `[server]` table, validated: who may call the server. */
export type ServerSpec = ServerTable.Spec

/** A validated deployment. Every list is sorted by table name (routes by route id). */
export interface Deployment {
  readonly clients: ReadonlyArray<LlmClient>
  readonly targets: ReadonlyArray<Target>
  readonly routes: ReadonlyArray<RouteSpec>
  readonly sessions: SessionsSpec
  readonly server: ServerSpec
}
