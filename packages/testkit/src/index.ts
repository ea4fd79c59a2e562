/**
 * @switchyard-ts/testkit — a fault-injecting upstream (OpenAI Chat, Anthropic Messages, OpenAI Responses), failure-schedule
 * arbitraries, the `switchyard` CLI as a child process and typed deployment files, for tests, the demo, benchmarks and scripts.
 */
export * as Arbitraries from "./Arbitraries.js"
export * as DeploymentBuilder from "./DeploymentBuilder.js"
export * as FakeUpstream from "./FakeUpstream.js"
export * as ServerProcess from "./ServerProcess.js"
