/**
 * The Gemini API ingress: `POST /v1beta/models/{model}:generateContent`, `:streamGenerateContent`
 * (SSE with `alt=sse`, else one JSON array streamed) and `:countTokens`, whose `{model}` names the
 * route. A request is translated (`TranslateGemini`) into the chat request routing works on and
 * runs the one request pipeline with this format's codec; answers, streams and failures are
 * written back in Gemini's shapes (its error envelope for every failure). The caller's key may come
 * as `x-goog-api-key` or `?key=`; neither is ever forwarded upstream nor logged.
 *
 * @internal
 */
import * as Relay from "@switchyard-ts/client/Relay"
import type * as UpstreamClient from "@switchyard-ts/client/UpstreamClient"
import { ModelNotFound, type RequestFailure, toHttp } from "@switchyard-ts/protocol/Errors"
import type { UpstreamFailure } from "@switchyard-ts/protocol/Errors"
import * as Gemini from "@switchyard-ts/protocol/Gemini"
import type * as Neutral from "@switchyard-ts/protocol/Neutral"
import type { ChatCompletion, ChatCompletionRequest } from "@switchyard-ts/protocol/OpenAiChat"
import * as Plain from "@switchyard-ts/protocol/Plain"
import * as Translate from "@switchyard-ts/protocol/Translate"
import * as TranslateGemini from "@switchyard-ts/protocol/TranslateGemini"
import { forwardAuthMismatch } from "@switchyard-ts/routing/Route"
import type { Router } from "@switchyard-ts/routing/Router"
import type * as Stats from "@switchyard-ts/routing/Stats"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as RoutingLog from "../RoutingLog.js"
import * as Auth from "./auth.js"
import { decodeValue, parseBody, readBody, validateValue } from "./body.js"
import {
  type Codec,
  type Encoder,
  type ErrorResponse,
  nativeEvents,
  servedIn,
  sseData,
  translatedEvents
} from "./codecs.js"
import type * as Edge from "./edge.js"
import * as Messages from "./messages.js"
import * as Pipeline from "./pipeline.js"

/** The path every Gemini model endpoint starts with. */
export const modelsPath = "/v1beta/models"

const modelsPrefix = `${modelsPath}/`

/** The methods of a model the server answers. */
export type Method = "generateContent" | "streamGenerateContent" | "countTokens"

const methods: ReadonlySet<string> = new Set<Method>(["generateContent", "streamGenerateContent", "countTokens"])

const isMethod = (name: string): name is Method => methods.has(name)

/**
 * The route id and method of a model endpoint's path (`/v1beta/models/<model>:<method>`, the model
 * URL-decoded); none when the path is not one, its method is not served, or the model is empty or
 * not valid percent-encoding.
 */
export const parsePath = (path: string): { readonly model: string; readonly method: Method } | undefined => {
  if (!path.startsWith(modelsPrefix)) return undefined
  const rest = path.slice(modelsPrefix.length)
  const colon = rest.lastIndexOf(":")
  if (colon <= 0) return undefined
  const method = rest.slice(colon + 1)
  if (!isMethod(method)) return undefined
  const model = decodeModel(rest.slice(0, colon))
  return model === undefined ? undefined : { model, method }
}

/** A model as a path holds it, URL-decoded; none when empty or not valid percent-encoding. */
const decodeModel = (raw: string): string | undefined => {
  try {
    const model = decodeURIComponent(raw)
    return model === "" ? undefined : model
  } catch {
    return undefined
  }
}

/** The query parameters of a request target (empty without a query). */
const queryOf = (url: string | undefined): URLSearchParams => {
  const at = url?.indexOf("?") ?? -1
  return new URLSearchParams(url === undefined || at === -1 ? "" : url.slice(at + 1))
}

/** The status and Gemini envelope of a failure (the status mapping of every other endpoint). */
export const errorOf = (failure: RequestFailure): ErrorResponse => {
  const mapping = toHttp(failure)
  return { status: mapping.status, body: Gemini.envelope(mapping.status, mapping.message) }
}

/** A chat answer as a Gemini answer, its `modelVersion` the model that served it. */
const responseOf = (completion: ChatCompletion, model: string): Gemini.GenerateContentResponse => ({
  ...TranslateGemini.toGeminiResponse(Translate.fromOpenAiResponse(completion)),
  modelVersion: model
})

/** The JSON text of the error a stream that failed after its headers ends with. */
const streamErrorText = (failure: UpstreamFailure): string => {
  const mapping = toHttp(failure)
  return JSON.stringify(Gemini.envelope(mapping.status, mapping.message))
}

/** A Gemini answer object of a Gemini target, as sent, its `modelVersion` (when it has one) restamped. */
const restamped = (body: Readonly<Record<string, unknown>>, model: string): Readonly<Record<string, unknown>> =>
  body["modelVersion"] === undefined ? body : { ...body, modelVersion: model }

/**
 * The encoder of one request. A stream is `data: <GenerateContentResponse>` events (`sse`) or one
 * JSON array of them written as they come (`[`, events joined by `,`, `]`); a stream failing after
 * its headers ends with the error envelope as its last event (or array element, the array closed).
 * An answer of a `gemini_generate_content` target (the caller's body was replayed there) is written
 * as the upstream sent it — every event of a stream — only `modelVersion` restamped; any other is
 * translated from the chat shape.
 */
const encoder = (sse: boolean): Encoder => ({
  answer: (completed, model) =>
    Option.match(completed.native, {
      onNone: () => responseOf(completed.completion, model),
      onSome: (native) => restamped(native.body, model)
    }),
  decisionResponse: responseOf,
  stream: (streamed, model) => {
    const native = servedIn(streamed, "gemini_generate_content")
    const encoded = (encode: (text: string) => string) =>
      native
        ? nativeEvents(streamed, (event) => encode(JSON.stringify(restamped(event.data, model))))
        : translatedEvents(streamed, TranslateGemini.chatToGeminiStream({ model }), (event) =>
          encode(JSON.stringify(event)))
    if (sse) {
      return {
        events: encoded(sseData),
        streamError: (failure) => sseData(streamErrorText(failure))
      }
    }
    let opened = false
    const element = (text: string) => {
      const separator = opened ? "," : "["
      opened = true
      return separator + text
    }
    return {
      events: Relay.concat(
        encoded(element),
        Effect.sync(() => [opened ? "]" : "[]"])
      ),
      streamError: (failure) => `${element(streamErrorText(failure))}]`,
      contentType: "application/json"
    }
  }
})

const decodeGenerateContentRequest = Plain.decoder(Gemini.GenerateContentRequest, Gemini.decodeOptions)

/** The chat request of a neutral one, streamed with usage when the caller streams. */
const chatOf = (neutral: Neutral.NeutralRequest, stream: boolean): ChatCompletionRequest => {
  const chat = Translate.toOpenAiRequest(neutral)
  return stream ? { ...chat, stream: true, stream_options: { include_usage: true } } : chat
}

/**
 * The codec of one Gemini request: `model` (the route id) and streaming come from the URL, `sse`
 * from its `alt=sse`. The body is a `GenerateContentRequest`, kept as the native body: a
 * `gemini_generate_content` target receives it as it came (its Gemini-only fields included), any
 * other target the chat request translated from it.
 */
export const codec = (model: string, stream: boolean, sse: boolean): Codec => ({
  format: "gemini_generate_content",
  decode: (json, headers, sessionId) =>
    Effect.map(validateValue(decodeGenerateContentRequest, json), (body) => ({
      routed: {
        body: chatOf(TranslateGemini.fromGeminiRequest(body, { model, stream }), stream),
        headers,
        sessionId,
        native: { format: "gemini_generate_content", body },
        inboundFormat: "gemini_generate_content"
      },
      model,
      streaming: stream,
      encoder: encoder(sse)
    })),
  error: errorOf,
  internalError: { status: 500, body: Gemini.envelope(500, "internal error") }
})

/** The codec of Gemini endpoints that route nothing (token counting, refusals, the models list). */
export const plain: Codec = codec("", false, false)

/** The request of a `countTokens` body, as neutral. */
const countedRequest = (json: unknown, model: string) =>
  Effect.map(
    decodeValue(Gemini.CountTokensRequest, json, Gemini.decodeOptions),
    (body) => TranslateGemini.fromGeminiRequest(TranslateGemini.countTokensBody(body), { model, stream: false })
  )

/** The fields of a Messages request `count_tokens` takes. */
const countedFields = ["messages", "system", "tools", "tool_choice"] as const

/**
 * A rough count of a request no target can count: the characters of its chat messages and tools
 * over four, rounded up.
 */
const estimatedTokens = (neutral: Neutral.NeutralRequest): number => {
  const chat = Translate.toOpenAiRequest(neutral)
  return Math.ceil(JSON.stringify([chat.messages, chat.tools ?? []]).length / 4)
}

/**
 * `:countTokens`: the route's token-counting target (`Messages.countTokensTarget`, an
 * `anthropic_messages` target) counts the request translated to Messages; a route without one
 * answers {@link estimatedTokens}. A route forwarding caller credentials refuses (400).
 */
const countTokens: (
  router: Router["Type"],
  upstream: UpstreamClient.UpstreamClient["Type"],
  request: Edge.EdgeRequest,
  model: string,
  limit: number
) => Effect.Effect<Edge.Reply, RequestFailure> = Effect.fnUntraced(function*(
  router: Router["Type"],
  upstream: UpstreamClient.UpstreamClient["Type"],
  request: Edge.EdgeRequest,
  model: string,
  limit: number
) {
  const { json } = yield* Effect.flatMap(readBody(request.incoming, limit), parseBody)
  const route = router.routes.find((candidate) => candidate.id === model)
  if (route === undefined) return yield* new ModelNotFound({ model })
  const mismatch = forwardAuthMismatch(route, "gemini_generate_content")
  if (Option.isSome(mismatch)) return yield* mismatch.value
  const neutral = yield* countedRequest(json, model)
  const target = Messages.countTokensTarget(route)
  if (target === undefined) return json200({ totalTokens: estimatedTokens(neutral) })
  const messages = yield* Translate.toAnthropicRequest(neutral)
  const body: Record<string, unknown> = {}
  for (const field of countedFields) if (messages[field] !== undefined) body[field] = messages[field]
  const counted = yield* upstream.countTokens({ target, body, headers: {} })
  const tokens = typeof counted === "object" && counted !== null && "input_tokens" in counted
    ? counted.input_tokens
    : undefined
  return json200({ totalTokens: typeof tokens === "number" ? tokens : estimatedTokens(neutral) })
})

const json200 = (body: Gemini.CountTokensResponse): Edge.Reply => ({ _tag: "Json", status: 200, headers: {}, body })

/** The `GET /v1beta/models` body: one entry per route. */
export const modelsList = (router: Router["Type"]): Gemini.ListModelsResponse => ({
  models: router.routes.map((route) => Gemini.modelEntry(route.id))
})

/**
 * `GET /v1beta/models/{model}`: the `Model` entry of the route `{model}` names — the rest of the
 * path (`/v1beta/models/<model>`, no query) URL-decoded, as the model endpoints read it, so
 * `team%2Ffast` and `team/fast` are the route `team/fast`. `ModelNotFound` (Gemini's 404) when no
 * route has that id, the model is empty, or it is not valid percent-encoding.
 */
export const modelGet = (router: Router["Type"], path: string): Effect.Effect<Gemini.Model, ModelNotFound> => {
  const raw = path.startsWith(modelsPrefix) ? path.slice(modelsPrefix.length) : ""
  const model = decodeModel(raw)
  return model !== undefined && router.routes.some((route) => route.id === model)
    ? Effect.succeed(Gemini.modelEntry(model))
    : Effect.fail(new ModelNotFound({ model: model ?? raw }))
}

/**
 * The caller's headers as inbound auth reads them: a `?key=` query parameter counts as an
 * `x-goog-api-key` header when the caller sent none.
 */
export const authHeaders = (
  headers: Readonly<Record<string, string>>,
  url: string | undefined
): Readonly<Record<string, string>> => {
  if (headers["x-goog-api-key"] !== undefined) return headers
  const key = queryOf(url).get("key")
  return key === null ? headers : { ...headers, "x-goog-api-key": key }
}

/** The caller's headers without its Google key: what routing (and so every upstream call) sees. */
const withoutKey = (headers: Readonly<Record<string, string>>): Readonly<Record<string, string>> => {
  if (headers["x-goog-api-key"] === undefined) return headers
  const { "x-goog-api-key": _key, ...rest } = headers
  return rest
}

/**
 * The endpoint of a Gemini model path, when `path` is one (see {@link parsePath}): inbound auth
 * first (`x-goog-api-key`, `?key=`, or the other endpoints' headers), then the request pipeline
 * (generate) or {@link countTokens}.
 */
export const endpoint = (
  path: string,
  deps: {
    readonly router: Router["Type"]
    readonly upstream: UpstreamClient.UpstreamClient["Type"]
    readonly stats: Stats.Recorder
    readonly limit: number
    readonly log: RoutingLog.RoutingLog["Type"]
    readonly guard: Auth.Guard | undefined
  }
): Edge.Endpoint | undefined => {
  const parsed = parsePath(path)
  if (parsed === undefined) return undefined
  const { method, model } = parsed
  return (request) => {
    const refused = Auth.refusal(deps.guard, authHeaders(request.headers, request.incoming.url), true)
    if (refused !== undefined) return Pipeline.refuse(plain, refused)
    const routed = { ...request, headers: withoutKey(request.headers) }
    if (method === "countTokens") {
      return Pipeline.respond(plain, countTokens(deps.router, deps.upstream, routed, model, deps.limit))
    }
    const stream = method === "streamGenerateContent"
    const sse = stream && queryOf(request.incoming.url).get("alt") === "sse"
    return Pipeline.handle(codec(model, stream, sse), deps.router, deps.stats, deps.limit, deps.log)(routed)
  }
}
