/**
 * @switchyard-ts/testkit — a fault-injecting OpenAI-compatible upstream and failure-schedule
 * arbitraries for tests, the demo and benchmarks.
 */
export * as Arbitraries from "./Arbitraries.js"
export * as FakeUpstream from "./FakeUpstream.js"
