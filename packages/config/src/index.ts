/**
 * @switchyard-ts/config — deployment TOML → validated Deployment → Layers.
 */
export * as Deployment from "./Deployment.js"
export * as DeploymentSpec from "./DeploymentSpec.js"
export * as DeploymentToml from "./DeploymentToml.js"
export * as InvalidConfig from "./InvalidConfig.js"
