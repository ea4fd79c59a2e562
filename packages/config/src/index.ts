/**
 * @switchyard-ts/config — deployment TOML → validated Deployment → Layers. One module per table
 * (`*Table`: its Schema and its validated spec), `DeploymentToml` for a whole file.
 */
export * as AdvisorRouteTable from "@switchyard-ts/routing/AdvisorRouteTable"
export * as AutoRouteTable from "@switchyard-ts/routing/AutoRouteTable"
export * as CapabilityRouteTable from "@switchyard-ts/routing/CapabilityRouteTable"
export * as CompositeRouteTable from "@switchyard-ts/routing/CompositeRouteTable"
export * as CustomRouteTable from "@switchyard-ts/routing/CustomRouteTable"
export * as EscalationRouteTable from "@switchyard-ts/routing/EscalationRouteTable"
export * as NoopRouteTable from "@switchyard-ts/routing/NoopRouteTable"
export * as PassthroughRouteTable from "@switchyard-ts/routing/PassthroughRouteTable"
export * as RandomRouteTable from "@switchyard-ts/routing/RandomRouteTable"
export * as StageRouteTable from "@switchyard-ts/routing/StageRouteTable"
export * as SubagentsTable from "@switchyard-ts/routing/SubagentsTable"
export * as Deployment from "./Deployment.js"
export * as DeploymentSpec from "./DeploymentSpec.js"
export * as DeploymentToml from "./DeploymentToml.js"
export * as InvalidConfig from "./InvalidConfig.js"
export * as LlmClientTable from "./LlmClientTable.js"
export * as ServerTable from "./ServerTable.js"
export * as SessionsTable from "./SessionsTable.js"
export * as TargetTable from "./TargetTable.js"
