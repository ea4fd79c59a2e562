/**
 * @switchyard-ts/protocol — wire schemas and typed errors.
 */
export * as AnthropicMessages from "./AnthropicMessages.js"
export * as Errors from "./Errors.js"
export * as Excerpt from "./Excerpt.js"
export * as Gemini from "./Gemini.js"
export * as Ids from "./Ids.js"
export * as Nesting from "./Nesting.js"
export * as Neutral from "./Neutral.js"
export * as OpenAiChat from "./OpenAiChat.js"
export * as OpenAiResponses from "./OpenAiResponses.js"
export * as Plain from "./Plain.js"
export * as RawJson from "./RawJson.js"
export * as Translate from "./Translate.js"
export * as TranslateGemini from "./TranslateGemini.js"
export * as TranslateResponses from "./TranslateResponses.js"
