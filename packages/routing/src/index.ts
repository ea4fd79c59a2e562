/**
 * @switchyard-ts/routing — judge, posture, route algorithms, sessions, decisions, evidence and the Router.
 */
export * as CapabilityRoute from "./CapabilityRoute.js"
export * as Conversation from "./Conversation.js"
export * as Decision from "./Decision.js"
export * as Evidence from "./Evidence.js"
export * as Judge from "./Judge.js"
export * as JudgePrompt from "./JudgePrompt.js"
export * as Metrics from "./Metrics.js"
export * as Noop from "./Noop.js"
export * as Passthrough from "./Passthrough.js"
export * as Policy from "./Policy.js"
export * as Posture from "./Posture.js"
export * as RandomRoute from "./RandomRoute.js"
export * as Route from "./Route.js"
export * as Router from "./Router.js"
export * as SessionStore from "./SessionStore.js"
export * as Verdict from "./Verdict.js"
