/**
 * @switchyard-ts/config — deployment TOML → validated Deployment → Layers. One module per table
 * (`*Table`: its Schema and its validated spec), `DeploymentToml` for a whole file.
 */
export * as AdvisorRouteTable from "./AdvisorRouteTable.js"
export * as AutoRouteTable from "./AutoRouteTable.js"
export * as CapabilityRouteTable from "./CapabilityRouteTable.js"
export * as CompositeRouteTable from "./CompositeRouteTable.js"
export * as CustomRouteTable from "./CustomRouteTable.js"
export * as Deployment from "./Deployment.js"
export * as DeploymentSpec from "./DeploymentSpec.js"
export * as DeploymentToml from "./DeploymentToml.js"
export * as EscalationRouteTable from "./EscalationRouteTable.js"
export * as InvalidConfig from "./InvalidConfig.js"
export * as LlmClientTable from "./LlmClientTable.js"
export * as NoopRouteTable from "./NoopRouteTable.js"
export * as PassthroughRouteTable from "./PassthroughRouteTable.js"
export * as RandomRouteTable from "./RandomRouteTable.js"
export * as ServerTable from "./ServerTable.js"
export * as SessionsTable from "./SessionsTable.js"
export * as StageRouteTable from "./StageRouteTable.js"
export * as SubagentsTable from "./SubagentsTable.js"
export * as TargetTable from "./TargetTable.js"
