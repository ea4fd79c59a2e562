/**
 * The Gemini API endpoints: `POST /v1beta/models/{model}:generateContent`, `:streamGenerateContent`
 * (SSE with `alt=sse`, else one JSON array streamed) and `:countTokens`, whose `{model}` names the
 * route, and the models list. A generate request runs the one request pipeline with the Gemini
 * codec (`codecs/geminiGenerateContent.ts`: the translation, answers, streams and the Gemini error
 * envelope for every failure). The caller's key may come as `x-goog-api-key` or `?key=`; neither
 * is ever forwarded upstream nor logged.
 *
 * @internal
 */
import type * as UpstreamClient from "@switchyard-ts/client/UpstreamClient"
import { ModelNotFound, type RequestFailure } from "@switchyard-ts/protocol/Errors"
import * as Gemini from "@switchyard-ts/protocol/Gemini"
import type * as Neutral from "@switchyard-ts/protocol/Neutral"
import * as Translate from "@switchyard-ts/protocol/Translate"
import * as TranslateGemini from "@switchyard-ts/protocol/TranslateGemini"
import { forwardAuthMismatch } from "@switchyard-ts/routing/Route"
import type { Router } from "@switchyard-ts/routing/Router"
import type * as Stats from "@switchyard-ts/routing/Stats"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as RoutingLog from "../RoutingLog.js"
import * as Auth from "./auth.js"
import { decodeValue, parseBody, readBody } from "./body.js"
import * as Codecs from "./codecs.js"
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
    if (refused !== undefined) return Pipeline.refuse(Codecs.geminiPlain, refused)
    const routed = { ...request, headers: withoutKey(request.headers) }
    if (method === "countTokens") {
      return Pipeline.respond(Codecs.geminiPlain, countTokens(deps.router, deps.upstream, routed, model, deps.limit))
    }
    const stream = method === "streamGenerateContent"
    const sse = stream && queryOf(request.incoming.url).get("alt") === "sse"
    return Pipeline.handle(Codecs.gemini(model, stream, sse), deps.router, deps.stats, deps.limit, deps.log)(routed)
  }
}
