/**
 * How the fake upstream's `node:http` handler reads a request and picks its answer: the body and
 * headers, the peeked `model` / `stream` flags, which API a path speaks, the dispatch of a behaviour
 * to that API's encoder, and the answers of the routes that serve no behaviour
 * (`count_tokens`, `GET /v1/models`, unknown routes, chat bodies that are not JSON).
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type * as Http from "node:http"
import * as AnthropicMessages from "./anthropicMessages.js"
import * as AnthropicWire from "./anthropicWire.js"
import type { Behaviour } from "./behaviour.js"
import { type Api, errorEnvelope, type Exchange, sendJson } from "./exchange.js"
import * as Gemini from "./gemini.js"
import * as OpenAiChat from "./openAiChat.js"
import * as OpenAiResponses from "./openAiResponses.js"

const Peek = Schema.Struct({
  model: Schema.optional(Schema.String),
  stream: Schema.optional(Schema.NullOr(Schema.Boolean)),
  stream_options: Schema.optional(Schema.NullOr(Schema.Struct({
    include_usage: Schema.optional(Schema.NullOr(Schema.Boolean))
  })))
})
/** The fields of a request body the server looks at; `None` for a body of another shape. */
export const decodePeek = Schema.decodeUnknownOption(Peek)

/** The whole request body as text; `None` when the request failed while being read. */
export const readBody = (req: Http.IncomingMessage): Effect.Effect<Option.Option<string>> =>
  Effect.async<Option.Option<string>>((resume) => {
    const parts: Array<Buffer> = []
    req.on("data", (chunk: Buffer) => parts.push(chunk))
    req.on("end", () => resume(Effect.succeed(Option.some(Buffer.concat(parts).toString("utf8")))))
    req.on("error", () => resume(Effect.succeed(Option.none())))
  })

/** Request headers, names lower-case, repeated values joined with `", "`. */
export const lowerCaseHeaders = (req: Http.IncomingMessage): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const [name, value] of Object.entries(req.headers)) {
    if (value !== undefined) out[name.toLowerCase()] = Array.isArray(value) ? value.join(", ") : value
  }
  return out
}

/**
 * The API a chat route speaks (with or without the `/v1` prefix; Gemini's `…/models/{model}:
 * generateContent` and `:streamGenerateContent` under any version prefix); `undefined` for other
 * routes.
 */
export const apiOf = (method: string, path: string): Api | undefined => {
  if (method !== "POST") return undefined
  const gemini = Gemini.parseModelPath(path)
  if (gemini !== undefined) return gemini.method === "countTokens" ? undefined : "gemini"
  switch (path) {
    case "/v1/chat/completions":
    case "/chat/completions":
      return "openai"
    case "/v1/messages":
    case "/messages":
      return "anthropic"
    case "/v1/responses":
    case "/responses":
      return "responses"
    default:
      return undefined
  }
}

/** Answer `behaviour` in the format of the exchange's API. */
export const perform = (behaviour: Behaviour, ex: Exchange): Effect.Effect<void> => {
  switch (ex.api) {
    case "openai":
      return OpenAiChat.perform(behaviour, ex)
    case "anthropic":
      return AnthropicMessages.perform(behaviour, ex)
    case "responses":
      return OpenAiResponses.perform(behaviour, ex)
    case "gemini":
      return Gemini.perform(behaviour, ex)
  }
}

/**
 * The answer of a request that gets no behaviour: a chat route whose body is not JSON (400 in its
 * API's envelope), `count_tokens` (`{"input_tokens"}` estimated from the body size; 400 when not
 * JSON), the Responses auxiliary calls (`/v1/responses/input_tokens`: `{"object":
 * "response.input_tokens","input_tokens"}` estimated alike; `/v1/responses/compact`: a
 * `response.compaction` object with one `compaction` item; 400 when not JSON), Gemini's
 * `…/models/{model}:countTokens` (`{"totalTokens"}` estimated alike; 400 in Gemini's envelope when
 * not JSON), `GET /v1/models`
 * (`models`, listed in the OpenAI format), anything else 404.
 */
export const answerOther = (
  request: {
    readonly res: Http.ServerResponse
    readonly method: string
    readonly path: string
    readonly api: Api | undefined
    readonly bodyText: string
    readonly isJson: boolean
  },
  models: Effect.Effect<ReadonlyArray<string>>
): Effect.Effect<void> => {
  const { api, bodyText, method, path, res } = request
  const isCountTokens = method === "POST" &&
    (path === "/v1/messages/count_tokens" || path === "/messages/count_tokens")
  if (api === "gemini") return sendJson(res, 400, Gemini.errorBody(400, "request body is not JSON"))
  if (method === "POST" && Gemini.parseModelPath(path)?.method === "countTokens") {
    return request.isJson
      ? sendJson(res, 200, Gemini.countTokensBody(bodyText))
      : sendJson(res, 400, Gemini.errorBody(400, "request body is not JSON"))
  }
  if (api === "anthropic" || (isCountTokens && !request.isJson)) {
    return sendJson(
      res,
      400,
      JSON.stringify(AnthropicWire.errorEnvelope("invalid_request_error", "request body is not JSON"))
    )
  }
  if (api !== undefined) {
    return sendJson(res, 400, errorEnvelope("request body is not JSON", "invalid_request_error", "invalid_json"))
  }
  if (isCountTokens) {
    return sendJson(res, 200, JSON.stringify({ input_tokens: Math.ceil(bodyText.length / 4) }))
  }
  const auxiliary = method === "POST" ? responsesAuxiliaryOf(path) : undefined
  if (auxiliary !== undefined) return answerResponsesAuxiliary(res, auxiliary, request.isJson, bodyText)
  if (method === "GET" && (path === "/v1/models" || path === "/models")) {
    return Effect.flatMap(models, (ids) =>
      sendJson(
        res,
        200,
        JSON.stringify({
          object: "list",
          data: ids.map((id) => ({ id, object: "model", created: 0, owned_by: "fake-upstream" }))
        })
      ))
  }
  return sendJson(res, 404, errorEnvelope(`no route for ${method} ${path}`, "invalid_request_error", "not_found"))
}

/** The Responses auxiliary operation a path names (with or without the `/v1` prefix). */
const responsesAuxiliaryOf = (path: string): "input_tokens" | "compact" | undefined => {
  const operation = path.replace(/^\/v1/, "")
  return operation === "/responses/input_tokens"
    ? "input_tokens"
    : operation === "/responses/compact"
    ? "compact"
    : undefined
}

/** The fake's answer to a Responses auxiliary call (see {@link answerOther}). */
const answerResponsesAuxiliary = (
  res: Http.ServerResponse,
  operation: "input_tokens" | "compact",
  isJson: boolean,
  bodyText: string
): Effect.Effect<void> => {
  if (!isJson) {
    return sendJson(res, 400, errorEnvelope("request body is not JSON", "invalid_request_error", "invalid_json"))
  }
  const inputTokens = Math.ceil(bodyText.length / 4)
  if (operation === "input_tokens") {
    return sendJson(res, 200, JSON.stringify({ object: "response.input_tokens", input_tokens: inputTokens }))
  }
  return sendJson(
    res,
    200,
    JSON.stringify({
      id: "resp_compact_fake",
      object: "response.compaction",
      created_at: 0,
      output: [{ type: "compaction", id: "cmp_fake", encrypted_content: `compacted:${inputTokens}` }],
      usage: { input_tokens: inputTokens, output_tokens: 0, total_tokens: inputTokens }
    })
  )
}
