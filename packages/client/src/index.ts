/**
 * @switchyard-ts/client — the `UpstreamClient` service (HTTP calls, deadlines, retries, circuit breakers), answer-call
 * candidate fallback, target descriptions and the upstream metrics.
 */
export * as Breaker from "./Breaker.js"
export * as ExpectedFailure from "./ExpectedFailure.js"
export * as Fallback from "./Fallback.js"
export * as Metrics from "./Metrics.js"
export * as Relay from "./Relay.js"
export * as TaggedMetric from "./TaggedMetric.js"
export * as Target from "./Target.js"
export * as UpstreamClient from "./UpstreamClient.js"
