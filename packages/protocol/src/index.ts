/**
 * @switchyard-ts/protocol — wire schemas and typed errors.
 */
export * as Errors from "./Errors.js"
export * as Ids from "./Ids.js"
export * as OpenAiChat from "./OpenAiChat.js"
