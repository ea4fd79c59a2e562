/**
 * @switchyard-ts/testkit — a fault-injecting upstream (OpenAI Chat, Anthropic Messages, OpenAI Responses) and failure-schedule
 * arbitraries for tests, the demo and benchmarks.
 */
export * as Arbitraries from "./Arbitraries.js"
export * as FakeUpstream from "./FakeUpstream.js"
